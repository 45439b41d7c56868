// ImportDeviceLoop.cpp — an ONNX Loop that cannot be unrolled, imported as tg.loop.
//
// When the trip count is known only at run time (or the loop runs more iterations than an
// unroll may take), the body is imported once into a private function of the module,
//   @loop_body_N(i: tensor<i64>, cond: tensor<i1>, carried..., captures...) -> (cond, carried...)
// and the node becomes `tg.loop @loop_body_N(M?, cond?, initial values..., captures...)`.
// The body reads names of the enclosing scopes; after its import every such value becomes a
// function argument (a capture) — except constants, which are copied in, so the body's own
// compile folds and fuses with them. The function then goes through the whole pipeline like
// @main, and the backends compile it into a package of its own that a LOOP step runs
// (docs/decisions.md, "A Loop run on the device").
//
// Scan outputs are refused: their length would be the run's iteration count.
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace tgc::onnx_import {

llvm::Expected<std::vector<Value>> importDeviceLoop(ImportContext &c, const NodeView &n,
                                                    const onnx::GraphProto &body, Value trip,
                                                    Value cond, const std::vector<Value> &initial) {
  const size_t carried = initial.size();
  const size_t scans = (size_t)body.output_size() - 1 - carried;
  for (size_t k = 0; k < scans; ++k)
    if (n.used(carried + k))
      return c.error(n, "has scan outputs and runs a number of iterations known only at run "
                        "time: the scan outputs' length would be decided at run time" +
                            (trip ? c.bindHint(trip) : std::string()));
  if (trip && (numElements(c.shapeOf(trip)).value_or(0) != 1 || !c.elemOf(trip).isInteger(64)))
    return c.error(n, "the trip count M must be one int64");
  if (cond && (numElements(c.shapeOf(cond)).value_or(0) != 1 || !c.elemOf(cond).isInteger(1)))
    return c.error(n, "the initial condition must be one bool");

  Block *outerBlock = c.b.getInsertionBlock();
  auto module = outerBlock->getParentOp()->getParentOfType<ModuleOp>();
  if (!module)
    return c.error(n, "internal error: no module to hold the loop body");
  int count = 0;
  for (auto f : module.getOps<func::FuncOp>())
    count += llvm::StringRef(f.getName()).startswith("loop_body_");
  const std::string name = "loop_body_" + std::to_string(count);

  // The body function, imported where the enclosing names are still visible.
  auto scalar = [&](Type elem) { return c.type({}, elem); };
  std::vector<Type> argTypes{scalar(c.i64()), scalar(c.i1())};
  for (Value v : initial)
    argTypes.push_back(v.getType());
  func::FuncOp fn;
  std::vector<Value> outs;
  {
    OpBuilder::InsertionGuard guard(c.b);
    c.b.setInsertionPointToEnd(module.getBody());
    fn = c.b.create<func::FuncOp>(n.loc, name, c.b.getFunctionType(argTypes, {}));
    fn.setPrivate();
    Block *entry = fn.addEntryBlock();
    c.b.setInsertionPointToStart(entry);
    std::vector<Value> args(entry->getArguments().begin(), entry->getArguments().end());
    auto imported = c.importSubgraph(body, args);
    if (!imported) {
      fn.erase();
      return imported.takeError();
    }
    outs = std::move(*imported);
    auto fail = [&](const std::string &msg) -> llvm::Error {
      fn.erase();
      return c.error(n, msg);
    };
    if (outs.size() != 1 + carried + scans)
      return fail("the body gives " + std::to_string(outs.size()) + " outputs, not " +
                  std::to_string(1 + carried + scans));
    if (numElements(c.shapeOf(outs[0])).value_or(0) != 1 || !c.elemOf(outs[0]).isInteger(1))
      return fail("the body's condition must be one bool, got " +
                  shapeToString(c.shapeOf(outs[0])));
    for (size_t i = 0; i < carried; ++i)
      if (outs[1 + i].getType() != initial[i].getType())
        return fail("loop-carried value " + std::to_string(i) +
                    " changes shape or type between "
                    "iterations (" +
                    shapeToString(c.shapeOf(initial[i])) + " then " +
                    shapeToString(c.shapeOf(outs[1 + i])) + ")");
    std::vector<Value> results{c.reshape(n.loc, outs[0], {})};
    results.insert(results.end(), outs.begin() + 1, outs.begin() + 1 + carried);
    c.b.create<func::ReturnOp>(n.loc, results);
  }

  // Values of the enclosing scopes the body reads: constants are copied in, the rest become
  // arguments (captures), in order of first use.
  std::vector<Value> captures;
  llvm::DenseMap<Value, Value> inner;
  Block &entry = fn.getBody().front();
  fn.walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      Region *home = v.getParentRegion();
      if (home == &fn.getBody() || fn->isProperAncestor(home->getParentOp()))
        continue;
      auto it = inner.find(v);
      if (it == inner.end()) {
        Value local;
        if (auto k = v.getDefiningOp<tg::ConstantOp>()) {
          OpBuilder ib = OpBuilder::atBlockBegin(&entry);
          local = ib.clone(*k)->getResult(0);
        } else {
          local = entry.addArgument(v.getType(), v.getLoc());
          captures.push_back(v);
        }
        it = inner.try_emplace(v, local).first;
      }
      use.set(it->second);
    }
  });
  fn.setType(
      FunctionType::get(c.ctx, entry.getArgumentTypes(), entry.getTerminator()->getOperandTypes()));

  std::vector<Value> operands;
  if (trip)
    operands.push_back(trip);
  if (cond)
    operands.push_back(cond);
  operands.insert(operands.end(), initial.begin(), initial.end());
  operands.insert(operands.end(), captures.begin(), captures.end());
  std::vector<Type> resultTypes;
  for (Value v : initial)
    resultTypes.push_back(v.getType());
  std::vector<Value> result = c.emitAll<tg::LoopOp>(
      n.loc, resultTypes, operands, SymbolRefAttr::get(c.ctx, name), c.b.getBoolAttr(!!trip),
      c.b.getBoolAttr(!!cond), c.b.getI64IntegerAttr((int64_t)carried));
  for (size_t k = 0; k < scans; ++k) // unused scan outputs (refused above when used)
    result.push_back(c.splat(n.loc, 0.0, c.i64(), {0}));
  return result;
}

} // namespace tgc::onnx_import
