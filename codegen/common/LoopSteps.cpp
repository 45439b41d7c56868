// LoopSteps.cpp — see LoopSteps.h.
#include "codegen/common/LoopSteps.h"

#include "codegen/common/PackageUtil.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "runtime/Text.h"

#include <set>

using namespace mlir;

namespace tgc::codegen {

bool isLoop(Operation *op) { return isa<tg::LoopOp>(op); }

llvm::Error addLoopStep(Operation *op, const BufferPlan &buffers, plan::Plan &p,
                        const char *backend) {
  auto loop = cast<tg::LoopOp>(op);
  const int64_t lead = (loop.getHasTripCount() ? 1 : 0) + (loop.getHasCond() ? 1 : 0);
  plan::Step *s = p.add_steps();
  s->set_kind(plan::Step::LOOP);
  s->set_symbol(loop.getBody().str());
  std::string label = "loop";
  if (auto name = loop.getLoc().dyn_cast<NameLoc>())
    label = "Loop '" + escapeText(name.getName().str()) + "'";
  s->set_label(label);
  plan::LoopDesc &d = *s->mutable_loop();
  d.set_body(loop.getBody().str());
  d.set_has_trip_count(loop.getHasTripCount());
  d.set_has_cond(loop.getHasCond());
  d.set_carried((int32_t)loop.getNumCarried());
  d.set_captures((int32_t)(loop.getOperands().size() - lead - loop.getNumCarried()));
  auto add = [&](Value v) -> llvm::Error {
    auto it = buffers.locs.find(v);
    if (it == buffers.locs.end() || it->second.kind == BufferLoc::Inline)
      return backendError(backend, "loop '" + loop.getBody() + "': a value without a buffer");
    *s->add_args() = toArg(it->second);
    return llvm::Error::success();
  };
  for (Value v : loop.getOperands())
    if (auto e = add(v))
      return e;
  for (Value v : loop.getResults())
    if (auto e = add(v))
      return e;
  return llvm::Error::success();
}

llvm::Error writeLoopBodies(ModuleOp module, const std::string &dir, const PackageInfo &info,
                            const std::string &cacheDir, const PackageWriter &write,
                            PackageStats &stats, const char *backend) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  std::set<std::string> done;
  for (tg::LoopOp loop : main.getBody().front().getOps<tg::LoopOp>()) {
    const std::string name = loop.getBody().str();
    if (!done.insert(name).second)
      continue;
    // A copy of the module whose @main is the body, named for the package's interface.
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
    copy->lookupSymbol<func::FuncOp>("main").erase();
    auto fn = copy->lookupSymbol<func::FuncOp>(name);
    if (!fn)
      return backendError(backend, "loop body '" + name + "' is missing");
    const int64_t carried = loop.getNumCarried();
    Builder b(module.getContext());
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      std::string n = i == 0                     ? "iteration"
                      : i == 1                   ? "cond"
                      : (int64_t)i < 2 + carried ? "carried_" + std::to_string(i - 2)
                                                 : "capture_" + std::to_string(i - 2 - carried);
      fn.setArgAttr(i, "tg.name", b.getStringAttr(n));
    }
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      fn.setResultAttr(
          i, "tg.name",
          b.getStringAttr(i == 0 ? "cond_out" : "carried_" + std::to_string(i - 1) + "_out"));
    fn.setName("main");
    fn.setPublic();
    PackageInfo bodyInfo = info;
    bodyInfo.modelName = name;
    auto st = write(*copy, dir + "/" + name, bodyInfo, cacheDir);
    if (!st)
      return st.takeError();
    stats.kernels += st->kernels; // the body's own kernels, run by the LOOP step
  }
  return llvm::Error::success();
}

} // namespace tgc::codegen
