// PackageUtil.cpp — files, weight bytes, interface descriptors and the package directory.
#include "codegen/common/PackageUtil.h"

#include "codegen/common/EmitUtil.h"
#include "runtime/Text.h"
#include "runtime/schema/PlanUtil.h"
#include "compiler/dialect/DynamicOutputs.h"
#include "compiler/dialect/Shapes.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tgc::codegen {
namespace {

llvm::Error error(const char *backend, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::Twine(backend) + ": " + msg);
}

/// ONNX TensorProto.DataType number of an element type; -1 when the interface can't carry it.
int32_t onnxDType(mlir::Type t) {
  if (t.isF32()) return 1;
  if (t.isF64()) return 11;
  if (t.isF16()) return 10;
  if (t.isBF16()) return 16;
  if (t.isInteger(1)) return 9;
  if (auto i = t.dyn_cast<mlir::IntegerType>()) {
    if (i.getWidth() == 8) return i.isUnsigned() ? 2 : 3;
    if (i.getWidth() == 16) return i.isUnsigned() ? 4 : 5;
    if (i.getWidth() == 32) return i.isUnsigned() ? 12 : 6;
    if (i.getWidth() == 64) return i.isUnsigned() ? 13 : 7;
    if (i.getWidth() == 4) return i.isUnsigned() ? 21 : 22; // one a byte
  }
  if (int k = tg::float8Kind(t)) return k; // 17..20, one byte
  return -1;
}

} // namespace

bool writeFile(const std::string &path, const void *data, size_t n) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = std::fwrite(data, 1, n, f) == n;
  return std::fclose(f) == 0 && ok;
}

bool readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

std::string hex64(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

llvm::Error constantBytes(tg::ConstantOp c, std::string &blob, int64_t offset,
                          const char *backend) {
  auto dense = c.getValue().dyn_cast<mlir::DenseElementsAttr>();
  auto type = c.getType().cast<mlir::RankedTensorType>();
  int64_t n = type.getNumElements();
  if (!dense) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << c.getLoc();
    return error(backend, "constant at " + os.str() + " is not a dense elements attribute");
  }
  char *out = blob.data() + offset;
  mlir::Type e = type.getElementType();
  if (e.isInteger(1)) {
    int64_t i = 0;
    for (bool b : dense.getValues<bool>())
      out[i++] = b ? 1 : 0;
    return llvm::Error::success();
  }
  size_t esize = e.isInteger(4) ? 1 : e.getIntOrFloatBitWidth() / 8; // (i4: a byte each)
  llvm::ArrayRef<char> raw = dense.getRawData();
  if (dense.isSplat()) {
    if (raw.size() < esize)
      return error(backend, "malformed splat constant");
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(out + i * esize, raw.data(), esize);
  } else {
    if ((int64_t)raw.size() != n * (int64_t)esize)
      return error(backend, "constant data size does not match its type");
    std::memcpy(out, raw.data(), raw.size());
  }
  return llvm::Error::success();
}

llvm::Error fillDesc(plan::TensorDesc &d, const std::string &name, mlir::Type type,
                     const char *backend) {
  auto t = type.cast<mlir::RankedTensorType>();
  int32_t dt = onnxDType(t.getElementType());
  if (dt < 0) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << t.getElementType();
    return error(backend, "element type " + os.str() + " of graph input/output '" + escapeText(name) +
                              "' is not supported");
  }
  d.set_name(name);
  d.set_dtype(dt);
  for (int64_t s : t.getShape())
    d.add_shape(s);
  return llvm::Error::success();
}

/// The range graph input `arg` must stay in because it indexes a Gather or GatherElements
/// (directly, or through reshapes, broadcasts and widening integer casts, which keep values):
/// [-s, s - 1] for an indexed axis of s elements, the tightest over all such uses. None when it
/// indexes nothing. The kernels clamp indices (never out of bounds); this turns a bad index in
/// the caller's input into an error that names it. Runs on the final IR: a cast or expand that
/// kernel formation put inside a tg.fused is not followed (no range: nothing valid is refused).
std::optional<plan::IndexBound> indexBoundOf(mlir::Value arg) {
  auto intWidth = [](mlir::Value x) {
    auto t = x.getType().cast<mlir::ShapedType>().getElementType();
    return t.isa<mlir::IntegerType>() ? (int)t.getIntOrFloatBitWidth() : 0;
  };
  std::optional<plan::IndexBound> best;
  llvm::SmallVector<mlir::Value> work{arg};
  while (!work.empty()) {
    mlir::Value v = work.pop_back_val();
    for (mlir::OpOperand &use : v.getUses()) {
      mlir::Operation *u = use.getOwner();
      if (llvm::isa<tg::ReshapeOp, tg::ExpandOp>(u) ||
          (llvm::isa<tg::CastOp>(u) && intWidth(v) > 1 &&
           intWidth(u->getResult(0)) >= intWidth(v))) {
        work.push_back(u->getResult(0));
        continue;
      }
      mlir::Value data;
      int64_t axis = 0;
      if (auto g = llvm::dyn_cast<tg::GatherOp>(u))
        data = g.getData(), axis = g.getAxis();
      else if (auto g = llvm::dyn_cast<tg::GatherElementsOp>(u))
        data = g.getData(), axis = g.getAxis();
      if (!data || use.getOperandNumber() != 1)
        continue;
      auto shape = data.getType().cast<mlir::ShapedType>().getShape();
      auto ax = normalizeAxis(axis, (int64_t)shape.size());
      if (!ax || mlir::ShapedType::isDynamic(shape[*ax]))
        continue;
      const int64_t s = shape[*ax];
      if (best && best->hi() <= s - 1)
        continue;
      best.emplace();
      best->set_lo(-s);
      best->set_hi(s - 1);
      const std::string names = locationNames(u->getLoc());
      best->set_node(std::string(llvm::isa<tg::GatherOp>(u) ? "Gather" : "GatherElements") +
                     (names.empty() ? std::string() : " '" + names + "'"));
    }
  }
  return best;
}

llvm::Error initPlan(plan::Plan &p, mlir::func::FuncOp fn, const PackageInfo &info,
                     const std::string &target, const char *kernelsFile, const char *backend) {
  p.set_magic(plan::kPlanMagic);
  p.set_format_version(plan::kPlanFormatVersion);
  p.set_target(target);
  p.set_tgc_version(info.tgcVersion);
  p.set_precision(info.precision);
  p.set_model_name(info.modelName);
  p.set_model_hash(info.modelHash);
  for (const auto &[rule, count] : info.ruleHits) {
    plan::RuleHit &h = *p.add_rule_hits();
    h.set_rule(rule);
    h.set_count(count);
  }
  p.set_alignment((int32_t)kBufferAlignment);
  p.set_end_marker(plan::kPlanMagic);
  p.set_weights_file("weights.bin");
  p.set_kernels_file(kernelsFile);
  for (mlir::BlockArgument a : fn.getBody().front().getArguments()) {
    auto name = fn.getArgAttrOfType<mlir::StringAttr>(a.getArgNumber(), "tg.name");
    if (auto k = fn.getArgAttrOfType<mlir::IntegerAttr>(a.getArgNumber(), "tg.state")) {
      // A decode package's state (passes/decode): no input; listed as states[k].
      while (p.states_size() <= k.getInt())
        p.add_states();
      plan::StateDesc &s = *p.mutable_states((int)k.getInt());
      plan::TensorDesc d;
      if (auto e = fillDesc(d, name ? name.str() : "state_" + std::to_string(k.getInt()),
                            a.getType(), backend))
        return e;
      s.set_name(d.name());
      s.set_dtype(d.dtype());
      *s.mutable_shape() = d.shape();
      continue;
    }
    plan::TensorDesc &d = *p.add_inputs();
    if (auto e = fillDesc(d, name ? name.str() : "input_" + std::to_string(a.getArgNumber()),
                          a.getType(), backend))
      return e;
    // The runtime checks i32 and i64 inputs (indices of any other type are clamped as before).
    const mlir::Type et = a.getType().cast<mlir::ShapedType>().getElementType();
    if (et.isSignlessInteger(32) || et.isSignlessInteger(64))
      if (auto b = indexBoundOf(a))
        *d.mutable_index_bound() = *b;
    // Bucketed packages: the symbol each axis carries, and the inputs the runtime fills itself.
    if (auto syms = fn.getArgAttrOfType<mlir::ArrayAttr>(a.getArgNumber(), "tg.dim_symbols"))
      for (mlir::Attribute s : syms)
        d.add_dim_symbols((int32_t)s.cast<mlir::IntegerAttr>().getInt());
    if (auto len = fn.getArgAttrOfType<mlir::IntegerAttr>(a.getArgNumber(), "tg.length_of"))
      d.set_length_of((int32_t)len.getInt());
  }
  return llvm::Error::success();
}

plan::BufferArg toArg(const BufferLoc &loc) {
  plan::BufferArg a;
  switch (loc.kind) {
  case BufferLoc::Input: a.set_kind(plan::INPUT); a.set_index((int32_t)loc.index); break;
  case BufferLoc::Arena: a.set_kind(plan::ARENA); break;
  case BufferLoc::Weight: a.set_kind(plan::WEIGHT); break;
  case BufferLoc::Inline: a.set_kind(plan::BUFFER_UNKNOWN); break;
  case BufferLoc::State: a.set_kind(plan::STATE); a.set_index((int32_t)loc.index); break;
  }
  a.set_offset(loc.offset);
  a.set_bytes(loc.bytes);
  return a;
}

llvm::Error preparePackageDir(const std::string &dir, const char *backend) {
  if (llvm::sys::fs::is_directory(dir)) {
    std::error_code ec;
    bool empty = llvm::sys::fs::directory_iterator(dir, ec) == llvm::sys::fs::directory_iterator();
    if (!empty && !llvm::sys::fs::exists(dir + "/plan.pb"))
      return error(backend, "'" + dir + "' exists and is not a tgc package; not replacing it");
    if (!empty)
      if (auto e2 = llvm::sys::fs::remove_directories(dir))
        return error(backend, "cannot replace '" + dir + "': " + e2.message());
  } else if (llvm::sys::fs::exists(dir)) {
    return error(backend, "'" + dir + "' exists and is not a directory");
  }
  if (auto ec = llvm::sys::fs::create_directories(dir))
    return error(backend, "cannot create '" + dir + "': " + ec.message());
  return llvm::Error::success();
}

llvm::Error backendError(const char *backend, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::Twine(backend) + ": " + msg);
}

llvm::Expected<PackageStart> startPackage(mlir::ModuleOp module, const PackageInfo &info,
                                          const std::string &target, const char *kernelsFile,
                                          const char *backend) {
  PackageStart start;
  start.fn = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!start.fn || start.fn.getBody().empty())
    return backendError(backend, "the module has no @main function");
  // CPU kernels take any byte offset: contiguous slices and splits are views there
  // (PlanBuffers.h).
  auto buffers = planBuffers(start.fn, /*cpuViews=*/target.rfind("cpu", 0) == 0);
  if (!buffers)
    return buffers.takeError();
  start.buffers = std::make_unique<BufferPlan>(std::move(*buffers));
  if (auto e = initPlan(start.plan, start.fn, info, target, kernelsFile, backend))
    return std::move(e);
  return start;
}

llvm::Error addOutputs(
    plan::Plan &p, mlir::func::FuncOp fn, const BufferPlan &buffers, const char *backend,
    const std::function<void(unsigned, plan::TensorDesc &, const BufferLoc &)> &source) {
  mlir::Operation *ret = fn.getBody().front().getTerminator();
  // Outputs with a data-dependent extent: their counts are the last results, not outputs.
  bool ok = true;
  const std::vector<DynamicOutput> dyn = dynamicOutputs(fn, ret->getNumOperands(), ok);
  if (!ok)
    return backendError(backend, "@main has a malformed " + llvm::Twine(kDynamicOutputsAttr));
  const unsigned numOutputs = ret->getNumOperands() - (unsigned)dyn.size();
  // Results with `tg.state` (a decode package's caches, passes/decode) are no outputs: a COPY
  // step at the end writes each into its state. The others are numbered in order.
  std::vector<int> outputOf(ret->getNumOperands(), -1);
  std::vector<std::pair<int64_t, BufferLoc>> stateWrites;
  for (unsigned i = 0; i < numOutputs; ++i) {
    mlir::Value v = ret->getOperand(i);
    auto it = buffers.locs.find(v);
    if (it == buffers.locs.end() || it->second.kind == BufferLoc::Inline)
      return backendError(backend, "output " + llvm::Twine(i) + " has no buffer");
    if (auto k = fn.getResultAttrOfType<mlir::IntegerAttr>(i, "tg.state")) {
      stateWrites.push_back({k.getInt(), it->second});
      continue;
    }
    auto name = fn.getResultAttrOfType<mlir::StringAttr>(i, "tg.name");
    outputOf[i] = p.outputs_size();
    plan::TensorDesc *d = p.add_outputs();
    if (auto e = fillDesc(*d, name ? name.str() : "output_" + std::to_string(i), v.getType(),
                          backend))
      return e;
    if (auto syms = fn.getResultAttrOfType<mlir::ArrayAttr>(i, "tg.dim_symbols"))
      for (mlir::Attribute s : syms)
        d->add_dim_symbols((int32_t)s.cast<mlir::IntegerAttr>().getInt());
    source((unsigned)outputOf[i], *d, it->second);
  }
  for (const auto &[k, loc] : stateWrites) {
    if (k < 0 || k >= p.states_size() || p.states((int)k).name().empty())
      return backendError(backend, "state " + llvm::Twine(k) + " is written but never read");
    if (loc.kind == BufferLoc::State && loc.index == k)
      continue; // written in place
    plan::Step *s = p.add_steps();
    s->set_kind(plan::Step::COPY);
    s->set_label("write state '" + escapeText(p.states((int)k).name()) + "'");
    plan::BufferArg dst;
    dst.set_kind(plan::STATE);
    dst.set_index((int32_t)k);
    dst.set_offset(0);
    dst.set_bytes(loc.bytes);
    *s->add_args() = dst;
    *s->add_args() = toArg(loc);
  }
  for (const DynamicOutput &o : dyn) {
    if (outputOf[(size_t)o.output] < 0)
      return backendError(backend, "a state has a data-dependent extent");
    plan::TensorDesc &d = *p.mutable_outputs(outputOf[(size_t)o.output]);
    auto it = buffers.locs.find(ret->getOperand((unsigned)o.countResult));
    if (o.axis >= d.shape_size() || it == buffers.locs.end() ||
        it->second.kind != BufferLoc::Arena || it->second.bytes != 8)
      return backendError(backend, "the count of output " + llvm::Twine(o.output) +
                                       " is not an i64 in the arena");
    d.set_dynamic_axis((int32_t)o.axis);
    plan::BufferArg &c = *d.mutable_count();
    c.set_kind(plan::ARENA);
    c.set_offset(it->second.offset);
    c.set_bytes(8);
  }
  return llvm::Error::success();
}

llvm::Error writeWeights(plan::Plan &p, const BufferPlan &buffers, const std::string &dir,
                         const char *backend) {
  std::string blob((size_t)buffers.weightBytes, '\0');
  for (mlir::Operation *w : buffers.weights) {
    auto c = mlir::cast<tg::ConstantOp>(w);
    if (auto e = constantBytes(c, blob, buffers.locs.find(c.getResult())->second.offset, backend))
      return e;
  }
  if (!writeFile(dir + "/weights.bin", blob.data(), blob.size()))
    return backendError(backend, "cannot write " + dir + "/weights.bin");
  p.set_weights_bytes(buffers.weightBytes);
  p.set_weights_xxh3(plan::xxh3(blob.data(), blob.size()));
  return llvm::Error::success();
}

llvm::Error writePlanFiles(const plan::Plan &p, const std::string &dir, const char *backend) {
  std::string bytes;
  if (!plan::serializePlan(p, bytes) || !writeFile(dir + "/plan.pb", bytes.data(), bytes.size()))
    return backendError(backend, "cannot write " + dir + "/plan.pb");
  std::string text = plan::formatPlan(p);
  if (!writeFile(dir + "/plan.txt", text.data(), text.size()))
    return backendError(backend, "cannot write " + dir + "/plan.txt");
  return llvm::Error::success();
}

} // namespace tgc::codegen
