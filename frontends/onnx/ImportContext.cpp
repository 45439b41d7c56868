// ImportContext.cpp — emission helpers of the ONNX importer: per-op verification, size checks,
// constant folding through the reference interpreter, and constant construction/reading.
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/Float8Types.h"
#include "compiler/interp/Interpreter.h"
#include "frontends/onnx/ModelLoader.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "runtime/Text.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>

namespace tgc::onnx_import {

using namespace mlir;

namespace {
/// Results larger than this (elements, all results together) are left unfolded.
constexpr int64_t kMaxFoldElements = int64_t(1) << 26;

const onnx::AttributeProto *findAttr(const onnx::NodeProto &p, const std::string &name) {
  for (const auto &a : p.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}
} // namespace

// --- NodeView ---

const onnx::AttributeProto *NodeView::attr(const std::string &name) const {
  return findAttr(proto, name);
}

int64_t NodeView::attrInt(const std::string &name, int64_t dflt) const {
  auto *a = attr(name);
  return a ? a->i() : dflt;
}

float NodeView::attrFloat(const std::string &name, float dflt) const {
  auto *a = attr(name);
  return a ? a->f() : dflt;
}

std::string NodeView::attrString(const std::string &name, const std::string &dflt) const {
  auto *a = attr(name);
  return a ? a->s() : dflt;
}

std::optional<std::vector<int64_t>> NodeView::attrInts(const std::string &name) const {
  auto *a = attr(name);
  if (!a)
    return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::vector<float>> NodeView::attrFloats(const std::string &name) const {
  auto *a = attr(name);
  if (!a)
    return std::nullopt;
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

// --- types ---

Type mlirElementType(DType t, MLIRContext *ctx) {
  switch (t) {
  case DType::F32:
    return Float32Type::get(ctx);
  case DType::F64:
    return Float64Type::get(ctx);
  case DType::F16:
    return Float16Type::get(ctx);
  case DType::BF16:
    return BFloat16Type::get(ctx);
  case DType::I64:
    return IntegerType::get(ctx, 64);
  case DType::I32:
    return IntegerType::get(ctx, 32);
  case DType::I8:
    return IntegerType::get(ctx, 8);
  case DType::U8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case DType::I16:
    return IntegerType::get(ctx, 16);
  case DType::U16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case DType::U32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case DType::U64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  case DType::Bool:
    return IntegerType::get(ctx, 1);
  case DType::I4:
    return IntegerType::get(ctx, 4);
  case DType::U4:
    return IntegerType::get(ctx, 4, IntegerType::Unsigned);
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
    return tg::float8Type(ctx, (int)t);
  }
  return Float32Type::get(ctx);
}

llvm::Expected<std::vector<int64_t>> ImportContext::axesAttr(const NodeView &n, int64_t rank) {
  std::vector<int64_t> axes;
  if (auto a = n.attrInts("axes")) {
    for (int64_t v : *a) {
      if (v < -rank || v >= rank)
        return error(n, "axis " + std::to_string(v) + " is out of range");
      axes.push_back(v < 0 ? v + rank : v);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  return axes;
}

/// The graph input named by a block argument of the main function, or null.
static StringAttr graphInputName(Value v) {
  auto arg = v ? v.dyn_cast<BlockArgument>() : BlockArgument();
  auto fn = arg ? dyn_cast_or_null<func::FuncOp>(arg.getOwner()->getParentOp()) : func::FuncOp();
  return fn ? fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tg.name") : StringAttr();
}

std::string ImportContext::bindHint(Value v) {
  if (StringAttr name = graphInputName(v)) {
    const std::string n = escapeText(name.getValue().str());
    return " (graph input '" + n + "': bind its value at compile time with --bind-input " + n +
           "=FILE.pb)";
  }
  // A value computed from graph inputs (shape arithmetic on a `shape` input, say): name the
  // inputs it depends on, found by walking its operands (bounded; the graph is acyclic).
  std::vector<std::string> inputs;
  llvm::SmallVector<Value, 16> work{v};
  llvm::SmallPtrSet<Operation *, 32> seen;
  while (!work.empty() && seen.size() < 512) {
    Value x = work.pop_back_val();
    if (!x)
      continue;
    if (StringAttr name = graphInputName(x)) {
      std::string n = escapeText(name.getValue().str());
      if (std::find(inputs.begin(), inputs.end(), n) == inputs.end())
        inputs.push_back(n);
    } else if (Operation *op = x.getDefiningOp(); op && seen.insert(op).second) {
      for (Value operand : op->getOperands())
        work.push_back(operand);
    }
  }
  if (inputs.empty())
    return "";
  std::sort(inputs.begin(), inputs.end());
  std::string names, flags;
  for (const auto &n : inputs) {
    names += (names.empty() ? "'" : ", '") + n + "'";
    flags += " --bind-input " + n + "=FILE.pb";
  }
  return " (it is computed from graph input" + std::string(inputs.size() > 1 ? "s " : " ") +
         names + ": bind " + (inputs.size() > 1 ? "their values" : "its value") +
         " at compile time with" + flags + ")";
}

llvm::Error ImportContext::error(const NodeView &n, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), n.label + ": " + msg.str());
}

llvm::Expected<Value> ImportContext::need(const NodeView &n, size_t i) {
  if (!n.input(i))
    return error(n, "input " + llvm::Twine(i) + " is required");
  return n.input(i);
}

Shape ImportContext::shapeOf(Value v) {
  auto t = v.getType().cast<RankedTensorType>();
  return Shape(t.getShape().begin(), t.getShape().end());
}

Type ImportContext::elemOf(Value v) {
  return v.getType().cast<RankedTensorType>().getElementType();
}

llvm::Expected<int64_t> checkAxis(const NodeView &n, int64_t axis, int64_t rank) {
  auto a = normalizeAxis(axis, rank);
  if (!a)
    return ImportContext::error(n, "axis " + llvm::Twine(axis) + " is out of range for rank " +
                                       llvm::Twine(rank));
  return *a;
}

// --- errors ---

void ImportContext::record(const std::string &msg) {
  if (!recorded)
    recorded = currentLabel + ": " + msg;
}

llvm::Error ImportContext::takeError() {
  if (!recorded)
    return llvm::Error::success();
  std::string m = *recorded;
  recorded.reset();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), m);
}

// --- emission ---

std::vector<Value> ImportContext::finish(Operation *op) {
  std::vector<Value> results(op->getResults().begin(), op->getResults().end());
  if (recorded)
    return results; // an earlier step failed: keep the IR, skip checks and folding
  diagnostics.clear();
  if (failed(mlir::verify(op, /*verifyRecursively=*/false))) {
    record("invalid " + op->getName().getStringRef().str() + ": " + diagnostics);
    return results;
  }
  int64_t total = 0;
  for (Value r : results) {
    if (shapeOf(r).size() > kMaxRank) {
      record("result rank " + std::to_string(shapeOf(r).size()) + " exceeds the limit of " +
             std::to_string(kMaxRank));
      return results;
    }
    auto n = numElements(shapeOf(r));
    if (!n || *n > INT64_MAX / 16 - total) {
      record("result shape " + shapeToString(shapeOf(r)) + " overflows");
      return results;
    }
    total += *n;
  }
  if (isa<tg::ConstantOp, tg::LoopOp>(op) || op->getNumOperands() == 0 ||
      total > kMaxFoldElements)
    return results;
  for (Value r : results)
    if (tg::isFloat8(elemOf(r))) // no constant holds float8 (Float8Types.h): left to run
      return results;
  std::vector<HostTensor> operands;
  for (Value v : op->getOperands()) {
    auto c = v.getDefiningOp<tg::ConstantOp>();
    if (!c)
      return results;
    operands.push_back(tensorFromAttr(c.getValue()));
  }
  auto folded = evaluateOp(op, operands);
  if (!folded) {
    record("cannot evaluate constant " + op->getName().getStringRef().str() + ": " +
           llvm::toString(folded.takeError()));
    return results;
  }
  if (folded->size() != results.size()) {
    record("constant evaluation returned the wrong number of results");
    return results;
  }
  std::vector<Value> out;
  for (size_t i = 0; i < results.size(); ++i) {
    auto t = results[i].getType().cast<RankedTensorType>();
    auto c = b.create<tg::ConstantOp>(op->getLoc(), t, attrFromTensor((*folded)[i], t));
    results[i].replaceAllUsesWith(c.getResult());
    out.push_back(c.getResult());
  }
  op->erase();
  return out;
}

Value ImportContext::reshape(Location loc, Value v, const Shape &s) {
  if (shapeOf(v) == s)
    return v;
  return emit<tg::ReshapeOp>(loc, type(s, elemOf(v)), v);
}

Value ImportContext::cast(Location loc, Value v, Type elem) {
  if (elemOf(v) == elem)
    return v;
  return emit<tg::CastOp>(loc, type(shapeOf(v), elem), v);
}

Value ImportContext::expand(Location loc, Value v, const Shape &s) {
  if (shapeOf(v) == s)
    return v;
  return emit<tg::ExpandOp>(loc, type(s, elemOf(v)), v);
}

Value ImportContext::transpose(Location loc, Value v, const std::vector<int64_t> &perm) {
  Shape in = shapeOf(v), out;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= (int64_t)in.size()) {
      record("transpose perm entry " + std::to_string(perm[i]) + " out of range");
      return v;
    }
    identity &= perm[i] == (int64_t)i;
    out.push_back(in[perm[i]]);
  }
  if (identity && perm.size() == in.size())
    return v;
  return emit<tg::TransposeOp>(loc, type(out, elemOf(v)), v, b.getI64ArrayAttr(perm));
}

// --- constants ---

Value ImportContext::constant(Location loc, const HostTensor &t) {
  if (isFloat8DType(t.dtype)) {
    // No dense attribute holds a float8 element: its values (exact in f32) as an f32 constant,
    // cast back without saturation (inf stays inf; every other value encodes to itself).
    HostTensor f = HostTensor::zeros(DType::F32, t.shape, t.name);
    for (int64_t i = 0; i < t.numel(); ++i)
      f.set(i, t.get(i));
    auto ty = type(t.shape, mlirElementType(t.dtype, ctx));
    return emit<tg::CastOp>(loc, ty, constant(loc, f), b.getBoolAttr(false));
  }
  auto ty = type(t.shape, mlirElementType(t.dtype, ctx));
  DenseElementsAttr attr;
  if (t.dtype == DType::Bool) {
    llvm::SmallVector<bool> bits(t.data.size());
    for (size_t i = 0; i < t.data.size(); ++i)
      bits[i] = t.data[i] != 0;
    attr = DenseElementsAttr::get(ty, bits);
  } else {
    attr = DenseElementsAttr::getFromRawBuffer(
        ty, ArrayRef<char>(reinterpret_cast<const char *>(t.data.data()), t.data.size()));
  }
  return b.create<tg::ConstantOp>(loc, ty, attr).getResult();
}

Value ImportContext::splat(Location loc, double v, Type elem, const Shape &shape) {
  auto ty = type(shape, elem);
  Attribute a;
  if (auto f = elem.dyn_cast<FloatType>()) {
    APFloat x(v);
    bool lost;
    x.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    a = FloatAttr::get(elem, x);
  } else {
    auto it = elem.cast<IntegerType>();
    const uint64_t bits = v >= 18446744073709551616.0 ? UINT64_MAX
                          : v >= 9223372036854775808.0 ? (uint64_t)v // a u64 above INT64_MAX
                                                       : (uint64_t)(int64_t)v;
    a = IntegerAttr::get(elem, APInt(it.getWidth(), bits, /*isSigned=*/true));
    if (it.getWidth() == 1)
      a = IntegerAttr::get(elem, APInt(1, v != 0 ? 1 : 0));
  }
  return b.create<tg::ConstantOp>(loc, ty, DenseElementsAttr::get(ty, a)).getResult();
}

Value ImportContext::constI64(Location loc, const std::vector<int64_t> &v) {
  auto ty = type({(int64_t)v.size()}, i64());
  return b.create<tg::ConstantOp>(loc, ty, DenseElementsAttr::get(ty, ArrayRef<int64_t>(v)))
      .getResult();
}

bool ImportContext::isConstant(Value v) { return v && v.getDefiningOp<tg::ConstantOp>(); }

std::optional<std::vector<int64_t>> ImportContext::constInts(Value v) {
  if (!isConstant(v))
    return std::nullopt;
  auto attr = v.getDefiningOp<tg::ConstantOp>().getValue().dyn_cast<DenseElementsAttr>();
  if (!attr)
    return std::nullopt;
  std::vector<int64_t> out;
  Type e = attr.getElementType();
  if (auto it = e.dyn_cast<IntegerType>()) {
    bool zext = it.isUnsigned() || it.getWidth() == 1;
    for (const APInt &x : attr.getValues<APInt>())
      out.push_back(zext ? (int64_t)x.getZExtValue() : x.getSExtValue());
  } else if (auto d = constDoubles(v)) {
    for (double x : *d)
      out.push_back((int64_t)x);
  } else {
    return std::nullopt;
  }
  return out;
}

std::optional<std::vector<double>> ImportContext::constDoubles(Value v) {
  if (!isConstant(v))
    return std::nullopt;
  auto attr = v.getDefiningOp<tg::ConstantOp>().getValue().dyn_cast<DenseElementsAttr>();
  if (!attr)
    return std::nullopt;
  std::vector<double> out;
  if (attr.getElementType().isa<FloatType>()) {
    for (APFloat x : attr.getValues<APFloat>()) {
      bool lost;
      x.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      out.push_back(x.convertToDouble());
    }
    return out;
  }
  auto ints = constInts(v);
  if (!ints)
    return std::nullopt;
  const bool u64 = attr.getElementType().isUnsignedInteger(64);
  for (int64_t x : *ints)
    out.push_back(u64 ? (double)(uint64_t)x : (double)x);
  return out;
}

llvm::Expected<std::vector<int64_t>> ImportContext::requireInts(const NodeView &n, size_t i,
                                                                const char *what) {
  Value v = n.input(i);
  if (!v)
    return error(n, llvm::Twine(what) + " input is missing");
  if (!isConstant(v))
    return error(n, llvm::Twine(what) + " input must be constant" + bindHint(v));
  auto ints = constInts(v);
  if (!ints || !elemOf(v).isa<IntegerType>())
    return error(n, llvm::Twine(what) + " input must be an integer tensor");
  return *ints;
}

} // namespace tgc::onnx_import
