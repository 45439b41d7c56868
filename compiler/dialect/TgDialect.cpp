// TgDialect.cpp — registration, verifiers and folders of the `tg` dialect.
//
// Verifiers check every static-shape rule an op relies on, so that passes, the interpreter and
// codegen can assume well-formed IR and never index out of bounds.
#include "compiler/dialect/TgDialect.h"

#include "compiler/dialect/Shapes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace tgc::tg;

#include "compiler/dialect/TgOpsDialect.cpp.inc"

void TGDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "compiler/dialect/TgOps.cpp.inc"
      >();
}

Type TGDialect::parseType(DialectAsmParser &parser) const {
  StringRef name;
  const llvm::SMLoc loc = parser.getCurrentLocation();
  if (failed(parser.parseKeyword(&name)))
    return Type();
  for (int k = 17; k <= 20; ++k)
    if (auto t = float8Type(getContext(), k); t.cast<OpaqueType>().getTypeData() == name)
      return t;
  parser.emitError(loc, "unknown tg type '")
      << name << "' (f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz)";
  return Type();
}

void TGDialect::printType(Type type, DialectAsmPrinter &printer) const {
  // (The float8 types are opaque types, which MLIR prints itself: !tg.f8e4m3fn.)
  if (auto o = type.dyn_cast<OpaqueType>())
    printer << o.getTypeData();
}

Operation *TGDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                          Location loc) {
  auto elements = value.dyn_cast<ElementsAttr>();
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}

namespace {

tgc::Shape shapeOf(Value v) {
  auto t = v.getType().cast<RankedTensorType>();
  return tgc::Shape(t.getShape().begin(), t.getShape().end());
}

Type elemOf(Value v) { return v.getType().cast<RankedTensorType>().getElementType(); }

bool isStatic(Value v) { return v.getType().cast<RankedTensorType>().hasStaticShape(); }

std::vector<int64_t> ints(ArrayAttr a) {
  std::vector<int64_t> r;
  for (Attribute x : a)
    r.push_back(x.cast<IntegerAttr>().getInt());
  return r;
}

LogicalResult expectShape(Operation *op, Value result, const tgc::Shape &want) {
  if (shapeOf(result) != want)
    return op->emitOpError("result shape ")
           << tgc::shapeToString(shapeOf(result)) << " should be " << tgc::shapeToString(want);
  return success();
}

LogicalResult allStatic(Operation *op) {
  for (Value v : op->getOperands())
    if (!isStatic(v))
      return op->emitOpError("operands must have static shapes");
  for (Value v : op->getResults())
    if (!isStatic(v))
      return op->emitOpError("results must have static shapes");
  return success();
}

bool isBoolType(Type t) { return t.isInteger(1); }

/// Shared check of a broadcasting elementwise op: same element type in, broadcast shape out.
LogicalResult verifyBroadcast(Operation *op, ValueRange ins, Value out, bool boolResult) {
  if (failed(allStatic(op)))
    return failure();
  tgc::Shape shape = shapeOf(ins.front());
  for (Value v : ins.drop_front()) {
    auto b = tgc::broadcastShapes(shape, shapeOf(v));
    if (!b)
      return op->emitOpError("operand shapes ")
             << tgc::shapeToString(shape) << " and " << tgc::shapeToString(shapeOf(v))
             << " do not broadcast";
    shape = *b;
  }
  Type e = elemOf(ins.front());
  for (Value v : ins)
    if (elemOf(v) != e)
      return op->emitOpError("operands must share one element type");
  Type want = boolResult ? IntegerType::get(op->getContext(), 1) : e;
  if (elemOf(out) != want)
    return op->emitOpError("result element type must be ") << want;
  return expectShape(op, out, shape);
}

template <typename OpT> constexpr bool kIsCompare = false;
template <> constexpr bool kIsCompare<EqualOp> = true;
template <> constexpr bool kIsCompare<LessOp> = true;
template <> constexpr bool kIsCompare<LessEqualOp> = true;
template <> constexpr bool kIsCompare<GreaterOp> = true;
template <> constexpr bool kIsCompare<GreaterEqualOp> = true;
template <> constexpr bool kIsCompare<AndOp> = true;
template <> constexpr bool kIsCompare<OrOp> = true;
template <> constexpr bool kIsCompare<XorOp> = true;

template <typename OpT> LogicalResult verifyBinary(OpT op) {
  return verifyBroadcast(op, ValueRange{op.getLhs(), op.getRhs()}, op.getResult(),
                         kIsCompare<OpT>);
}

LogicalResult verifyReduce(Operation *op, Value in, Value out, ArrayAttr axesAttr, bool keep) {
  if (failed(allStatic(op)))
    return failure();
  tgc::Shape s = shapeOf(in);
  std::vector<bool> reduced(s.size(), false);
  for (int64_t a : ints(axesAttr)) {
    auto n = tgc::normalizeAxis(a, s.size());
    if (!n)
      return op->emitOpError("axis ") << a << " out of range for rank " << s.size();
    if (reduced[*n])
      return op->emitOpError("axis ") << a << " repeated";
    reduced[*n] = true;
  }
  tgc::Shape want;
  for (size_t i = 0; i < s.size(); ++i)
    if (!reduced[i])
      want.push_back(s[i]);
    else if (keep)
      want.push_back(1);
  if (elemOf(in) != elemOf(out))
    return op->emitOpError("result element type must match the input");
  return expectShape(op, out, want);
}

} // namespace

#define TG_BINARY_VERIFIER(OP)                                                                     \
  LogicalResult OP::verify() { return verifyBinary(*this); }
TG_BINARY_VERIFIER(AddOp)
TG_BINARY_VERIFIER(SubOp)
TG_BINARY_VERIFIER(MulOp)
TG_BINARY_VERIFIER(DivOp)
TG_BINARY_VERIFIER(PowOp)
TG_BINARY_VERIFIER(MaxOp)
TG_BINARY_VERIFIER(MinOp)
TG_BINARY_VERIFIER(ModOp)
TG_BINARY_VERIFIER(EqualOp)
TG_BINARY_VERIFIER(LessOp)
TG_BINARY_VERIFIER(LessEqualOp)
TG_BINARY_VERIFIER(GreaterOp)
TG_BINARY_VERIFIER(GreaterEqualOp)
TG_BINARY_VERIFIER(AndOp)
TG_BINARY_VERIFIER(OrOp)
TG_BINARY_VERIFIER(XorOp)
#undef TG_BINARY_VERIFIER

#define TG_REDUCE_VERIFIER(OP)                                                                     \
  LogicalResult OP::verify() {                                                                     \
    return verifyReduce(*this, getInput(), getResult(), getAxes(), getKeepdims());                 \
  }
TG_REDUCE_VERIFIER(ReduceSumOp)
TG_REDUCE_VERIFIER(ReduceMeanOp)
TG_REDUCE_VERIFIER(ReduceMaxOp)
TG_REDUCE_VERIFIER(ReduceMinOp)
TG_REDUCE_VERIFIER(ReduceProdOp)
#undef TG_REDUCE_VERIFIER

LogicalResult ConstantOp::verify() {
  if (getValue().getType() != getResult().getType())
    return emitOpError("value type ") << getValue().getType() << " differs from result type";
  return allStatic(*this);
}

// `tg.constant dense<...> : tensor<...>` — the attribute carries the result type.
ParseResult ConstantOp::parse(OpAsmParser &parser, OperationState &result) {
  Attribute value;
  if (parser.parseOptionalAttrDict(result.attributes) || parser.parseAttribute(value))
    return failure();
  auto elements = value.dyn_cast<ElementsAttr>();
  if (!elements)
    return parser.emitError(parser.getCurrentLocation(), "expected a tensor constant");
  result.addAttribute("value", value);
  result.addTypes(elements.getType());
  return success();
}

void ConstantOp::print(OpAsmPrinter &p) {
  p.printOptionalAttrDict((*this)->getAttrs(), {"value"});
  p << ' ';
  p.printAttribute(getValue());
}

OpFoldResult ConstantOp::fold(ArrayRef<Attribute>) { return getValue(); }

LogicalResult IsNanOp::verify() {
  if (!isBoolType(elemOf(getResult())) || shapeOf(getResult()) != shapeOf(getInput()))
    return emitOpError("result must be i1 of the input's shape");
  if (!elemOf(getInput()).isa<FloatType>())
    return emitOpError("input must be floating point");
  return success();
}

LogicalResult CastOp::verify() {
  if (shapeOf(getResult()) != shapeOf(getInput()))
    return emitOpError("cast must keep the shape");
  return allStatic(*this);
}

LogicalResult WhereOp::verify() {
  if (!isBoolType(elemOf(getCond())))
    return emitOpError("condition must be i1");
  if (elemOf(getLhs()) != elemOf(getRhs()) || elemOf(getLhs()) != elemOf(getResult()))
    return emitOpError("branches and result must share one element type");
  auto s = tgc::broadcastShapes(shapeOf(getCond()), shapeOf(getLhs()));
  if (s)
    s = tgc::broadcastShapes(*s, shapeOf(getRhs()));
  if (!s)
    return emitOpError("operand shapes do not broadcast");
  return expectShape(*this, getResult(), *s);
}

LogicalResult MatmulOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape rhs = shapeOf(getRhs());
  if (auto b = getWeightBlock()) {
    // Strips [ceil(N/b), K, b]: checked as the [K, N] it stands for.
    const tgc::Shape x = shapeOf(getLhs()), y = shapeOf(getResult());
    const int64_t blk = (int64_t)*b, N = y.empty() ? 0 : y.back();
    if (blk <= 0 || x.size() < 2 || rhs.size() != 3 || rhs[2] != blk ||
        rhs[0] != (N + blk - 1) / blk)
      return emitOpError("a weight in strips of ")
             << blk << " must be [ceil(N/" << blk << "), K, " << blk << "] with an lhs of rank "
             << ">= 2, got lhs " << tgc::shapeToString(x) << ", weight "
             << tgc::shapeToString(rhs);
    rhs = {rhs[1], N};
  }
  auto s = tgc::matmulShape(shapeOf(getLhs()), rhs);
  if (!s)
    return emitOpError("shapes ") << tgc::shapeToString(shapeOf(getLhs())) << " and "
                                  << tgc::shapeToString(rhs) << " do not contract";
  if (elemOf(getLhs()) != elemOf(getRhs()) || elemOf(getLhs()) != elemOf(getResult()))
    return emitOpError("operands and result must share one element type");
  return expectShape(*this, getResult(), *s);
}

LogicalResult LinearOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput()), w = shapeOf(getWeight());
  if (x.empty() || w.size() != 2 || w[1] != x.back())
    return emitOpError("weight must be [N, K] with K = input's last dim; got input ")
           << tgc::shapeToString(x) << ", weight " << tgc::shapeToString(w);
  if (getBias() && shapeOf(getBias()) != tgc::Shape{w[0]})
    return emitOpError("bias must be [N] = [") << w[0] << "]";
  tgc::Shape want = x;
  want.back() = w[0];
  return expectShape(*this, getResult(), want);
}

LogicalResult MathOp::verify() {
  static const char *const kFns[] = {"acos", "asin", "atan", "sinh", "cosh", "asinh", "acosh",
                                     "atanh"};
  if (std::find(std::begin(kFns), std::end(kFns), getFn()) == std::end(kFns))
    return emitOpError("unknown function '") << getFn() << "'";
  if (!getInput().getType().cast<RankedTensorType>().getElementType().isa<FloatType>())
    return emitOpError("needs a float tensor");
  return success();
}

LogicalResult BitwiseOp::verify() {
  static const char *const kFns[] = {"and", "or", "xor", "shift_left", "shift_right"};
  if (std::find(std::begin(kFns), std::end(kFns), getFn()) == std::end(kFns))
    return emitOpError("unknown function '") << getFn() << "'";
  auto it = elemOf(getLhs()).dyn_cast<IntegerType>();
  if (!it || it.getWidth() == 1)
    return emitOpError("needs an integer element type (not i1)");
  if (getFn().startswith("shift_") && !it.isUnsigned())
    return emitOpError("shifts need an unsigned integer element type");
  return verifyBroadcast(*this, ValueRange{getLhs(), getRhs()}, getResult(), false);
}

LogicalResult BitwiseNotOp::verify() {
  auto it = elemOf(getInput()).dyn_cast<IntegerType>();
  if (!it || it.getWidth() == 1)
    return emitOpError("needs an integer element type (not i1)");
  return success();
}

LogicalResult PoolOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput()), y = shapeOf(getResult());
  if (getNhwc() && x.size() >= 3 && y.size() == x.size()) { // checked as the NC[D]HW it stands for
    std::rotate(x.begin() + 1, x.end() - 1, x.end());
    std::rotate(y.begin() + 1, y.end() - 1, y.end());
  }
  if (x.size() < 3 || y.size() != x.size() || y[0] != x[0] || y[1] != x[1])
    return emitOpError("input and result must be [N, C, spatial...] of one rank >= 3 with the "
                       "same N and C");
  size_t sp = x.size() - 2;
  auto k = ints(getKernel()), strides = ints(getStrides()), pads = ints(getPads()),
       dil = ints(getDilations());
  if (k.size() != sp || strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp)
    return emitOpError("kernel/strides/dilations need one entry per spatial dim, pads two");
  if (getKind() != "max" && getKind() != "avg")
    return emitOpError("kind must be \"max\" or \"avg\"");
  for (size_t i = 0; i < sp; ++i)
    if (k[i] <= 0 || strides[i] <= 0 || dil[i] <= 0 || pads[i] < 0 || pads[i + sp] < 0 ||
        y[i + 2] <= 0)
      return emitOpError("kernel, strides, dilations and result dims must be positive, pads "
                         "non-negative");
  return success();
}

LogicalResult ConvOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput()), w = shapeOf(getWeight());
  size_t sp = x.size() >= 2 ? x.size() - 2 : 0;
  if (getChannelsLast() && !getWeightBlock())
    return emitOpError("channels_last is the CPU lanes kernel's layout: it needs weight_block");
  if (getNhwc() && (getChannelsLast() || getWeightBlock()))
    return emitOpError("nhwc (every operand channels last) excludes weight_block and "
                       "channels_last");
  if (getNhwc() && x.size() >= 3 && w.size() == x.size()) { // checked as the NC[D]HW it stands for
    std::rotate(x.begin() + 1, x.end() - 1, x.end());
    std::rotate(w.begin() + 1, w.end() - 1, w.end());
  }
  if (auto b = getWeightBlock()) {
    // Blocked [ceil(M/b), C/group, k..., b]: checked as the [M, C/group, k...] it stands for.
    tgc::Shape y = shapeOf(getResult());
    const int64_t blk = (int64_t)*b;
    const int64_t M = y.size() < 2 ? 0 : getChannelsLast() ? y.back() : y[1];
    if (blk <= 0 || x.size() < 3 || y.size() < 2 || w.size() != x.size() + 1 ||
        w.back() != blk || w[0] != (M + blk - 1) / blk)
      return emitOpError("a weight blocked by ")
             << blk << " must be [ceil(M/" << blk << "), C/group, k..., " << blk << "], got "
             << tgc::shapeToString(w);
    w.pop_back();
    w[0] = M;
  }
  if (x.size() < 3 || w.size() != x.size())
    return emitOpError("input and weight must have the same rank >= 3");
  auto strides = ints(getStrides()), pads = ints(getPads()), dil = ints(getDilations());
  int64_t g = getGroup();
  if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp)
    return emitOpError("strides/dilations need one entry per spatial dim, pads two");
  if (g <= 0 || x[1] % g != 0 || w[0] % g != 0 || w[1] * g != x[1])
    return emitOpError("channels ") << x[1] << " do not match weight " << tgc::shapeToString(w)
                                    << " with group " << g;
  tgc::Shape want{x[0], w[0]};
  for (size_t i = 0; i < sp; ++i) {
    if (strides[i] <= 0 || dil[i] <= 0)
      return emitOpError("strides and dilations must be positive");
    int64_t eff = dil[i] * (w[i + 2] - 1) + 1;
    int64_t o = (x[i + 2] + pads[i] + pads[i + sp] - eff) / strides[i] + 1;
    if (o <= 0)
      return emitOpError("kernel larger than padded input");
    want.push_back(o);
  }
  if (getBias() && shapeOf(getBias()) != tgc::Shape{w[0]})
    return emitOpError("bias must be [M]");
  if (getChannelsLast() || getNhwc()) // [N, M, spatial...] stored as [N, spatial..., M]
    std::rotate(want.begin() + 1, want.begin() + 2, want.end());
  return expectShape(*this, getResult(), want);
}

LogicalResult LayerNormOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput());
  auto axis = tgc::normalizeAxis(getAxis(), x.size());
  if (!axis)
    return emitOpError("axis out of range");
  tgc::Shape norm(x.begin() + *axis, x.end());
  for (Value p : {getScale(), getBias()})
    if (p && !tgc::broadcastShapes(norm, shapeOf(p)).has_value())
      return emitOpError("scale/bias shape ") << tgc::shapeToString(shapeOf(p))
                                               << " does not broadcast to the normalized dims";
  // Scale/bias with more dims than the normalized ones broadcast against the whole input
  // ([N, M] on [rows, N, M], axis -1) and must not grow it.
  for (Value p : {getScale(), getBias()})
    if (p && tgc::broadcastShapes(x, shapeOf(p)) != std::optional<tgc::Shape>(x))
      return emitOpError("scale/bias shape ") << tgc::shapeToString(shapeOf(p))
                                               << " does not broadcast to the input shape";
  // One element type (as ONNX's T): the backends read scale/bias as the input's type.
  for (Value p : {getScale(), getBias(), getResult()})
    if (p && elemOf(p) != elemOf(getInput()))
      return emitOpError("input, scale, bias and result must share one element type");
  return expectShape(*this, getResult(), x);
}

LogicalResult RmsNormOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput());
  auto axis = tgc::normalizeAxis(getAxisAttr().getInt(), x.size());
  if (!axis)
    return emitOpError("axis out of range");
  tgc::Shape norm(x.begin() + *axis, x.end());
  if (getScale()) {
    tgc::Shape s = shapeOf(getScale());
    while (s.size() > norm.size() && s.front() == 1)
      s.erase(s.begin());
    if (tgc::broadcastShapes(norm, s) != norm)
      return emitOpError("scale shape ") << tgc::shapeToString(shapeOf(getScale()))
                                         << " does not broadcast to the normalized dims";
  }
  if (elemOf(getInput()) != elemOf(getResult()) ||
      (getScale() && elemOf(getScale()) != elemOf(getInput())))
    return emitOpError("input, scale and result must share one element type");
  return expectShape(*this, getResult(), x);
}

LogicalResult RotaryOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput());
  if (x.empty() || x.back() % 2 != 0)
    return emitOpError("input's last dim must be even; got ") << tgc::shapeToString(x);
  Type e = elemOf(getInput());
  if (!e.isa<FloatType>())
    return emitOpError("input must be a float tensor");
  for (Value p : {getCos(), getSin()}) {
    if (elemOf(p) != e)
      return emitOpError("input, cos, sin and the result must share one element type");
    if (tgc::broadcastShapes(x, shapeOf(p)) != std::optional<tgc::Shape>(x))
      return emitOpError("cos/sin shape ") << tgc::shapeToString(shapeOf(p))
                                            << " does not broadcast to the input shape "
                                            << tgc::shapeToString(x);
  }
  if (elemOf(getResult()) != e)
    return emitOpError("input, cos, sin and the result must share one element type");
  return expectShape(*this, getResult(), x);
}

LogicalResult SwigluOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput());
  if (x.empty() || x.back() % 2 != 0)
    return emitOpError("input's last dim must be even; got ") << tgc::shapeToString(x);
  if (!elemOf(getInput()).isa<FloatType>() || elemOf(getResult()) != elemOf(getInput()))
    return emitOpError("input and result must share one float element type");
  tgc::Shape want = x;
  want.back() /= 2;
  return expectShape(*this, getResult(), want);
}

LogicalResult SoftmaxOp::verify() {
  if (!tgc::normalizeAxis(getAxis(), shapeOf(getInput()).size()))
    return emitOpError("axis out of range");
  return allStatic(*this);
}

LogicalResult AttentionOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape q = shapeOf(getQ()), k = shapeOf(getK()), v = shapeOf(getV());
  StringRef layout = getLayout();
  if (layout != "bhsd" && layout != "bshd")
    return emitOpError("layout must be \"bhsd\" or \"bshd\"; got \"") << layout << "\"";
  const bool bshd = layout == "bshd";
  if (q.size() != 4 || k.size() != 4 || v.size() != 4)
    return emitOpError("q, k and v must be rank 4 (")
           << (bshd ? "[B, S, H, D]" : "[B, H, S, D]") << "); got " << tgc::shapeToString(q)
           << ", " << tgc::shapeToString(k) << ", " << tgc::shapeToString(v);
  Type e = elemOf(getQ());
  if (!e.isa<FloatType>())
    return emitOpError("q must be a float tensor");
  for (Value x : {getK(), getV(), getResult()})
    if (elemOf(x) != e)
      return emitOpError("q, k, v and the result must share one element type");
  // Positions of the head and sequence dims in this layout.
  const int hd = bshd ? 2 : 1, sd = bshd ? 1 : 2;
  const int64_t Hq = q[hd], S = q[sd], Hkv = k[hd], T = k[sd];
  if (k[0] != q[0] || v[0] != q[0])
    return emitOpError("batch dims of q, k, v differ");
  if (k[3] != q[3])
    return emitOpError("head dim of k (") << k[3] << ") differs from q's (" << q[3] << ")";
  if (v[hd] != Hkv || v[sd] != T)
    return emitOpError("k ") << tgc::shapeToString(k) << " and v " << tgc::shapeToString(v)
                             << " must agree on heads and length";
  if (Hkv <= 0 || Hq % Hkv != 0)
    return emitOpError("query heads (") << Hq << ") must be a multiple of key/value heads ("
                                        << Hkv << ")";
  if (Value m = getMask()) {
    if (elemOf(m) != e)
      return emitOpError("mask must have the element type of q");
    tgc::Shape scores{q[0], Hq, S, T};
    if (tgc::broadcastShapes(scores, shapeOf(m)) != std::optional<tgc::Shape>(scores))
      return emitOpError("mask shape ") << tgc::shapeToString(shapeOf(m))
                                         << " does not broadcast to " << tgc::shapeToString(scores);
  }
  if (getCausal() && S > T)
    return emitOpError("causal attention needs S <= T");
  if (bshd)
    return expectShape(*this, getResult(), {q[0], S, Hq, v[3]});
  return expectShape(*this, getResult(), {q[0], Hq, S, v[3]});
}

LogicalResult ReshapeOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  if (tgc::numElements(shapeOf(getInput())) != tgc::numElements(shapeOf(getResult())))
    return emitOpError("element count changes from ")
           << tgc::shapeToString(shapeOf(getInput())) << " to "
           << tgc::shapeToString(shapeOf(getResult()));
  if (elemOf(getInput()) != elemOf(getResult()))
    return emitOpError("element type changes");
  return success();
}

OpFoldResult ReshapeOp::fold(ArrayRef<Attribute> operands) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  if (auto c = operands[0].dyn_cast_or_null<DenseElementsAttr>())
    return c.reshape(getResult().getType().cast<ShapedType>());
  return {};
}

LogicalResult TransposeOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput());
  auto perm = ints(getPerm());
  if (perm.size() != x.size())
    return emitOpError("perm must have one entry per dim");
  std::vector<bool> seen(x.size(), false);
  tgc::Shape want;
  for (int64_t p : perm) {
    if (p < 0 || p >= (int64_t)x.size() || seen[p])
      return emitOpError("perm is not a permutation");
    seen[p] = true;
    want.push_back(x[p]);
  }
  return expectShape(*this, getResult(), want);
}

LogicalResult SliceOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput()), r = shapeOf(getResult());
  auto starts = ints(getStarts()), steps = ints(getSteps());
  if (starts.size() != x.size() || steps.size() != x.size() || r.size() != x.size())
    return emitOpError("starts/steps/result need one entry per dim");
  for (size_t i = 0; i < x.size(); ++i) {
    if (steps[i] == 0)
      return emitOpError("step must be non-zero");
    if (r[i] == 0)
      continue;
    int64_t last = starts[i] + (r[i] - 1) * steps[i];
    if (starts[i] < 0 || starts[i] >= x[i] || last < 0 || last >= x[i])
      return emitOpError("dim ") << i << " reads outside the input";
  }
  return success();
}

LogicalResult ConcatOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  tgc::Shape want = shapeOf(getInputs()[0]);
  auto axis = tgc::normalizeAxis(getAxis(), want.size());
  if (!axis)
    return emitOpError("axis out of range");
  want[*axis] = 0;
  for (Value v : getInputs()) {
    tgc::Shape s = shapeOf(v);
    if (s.size() != want.size() || elemOf(v) != elemOf(getResult()))
      return emitOpError("inputs must share rank and element type");
    for (size_t i = 0; i < s.size(); ++i)
      if (i != (size_t)*axis && s[i] != want[i])
        return emitOpError("input dims differ off the concat axis");
    want[*axis] += s[*axis];
  }
  return expectShape(*this, getResult(), want);
}

LogicalResult SplitOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput());
  auto axis = tgc::normalizeAxis(getAxis(), x.size());
  if (!axis)
    return emitOpError("axis out of range");
  int64_t total = 0;
  for (Value r : getResults()) {
    tgc::Shape s = shapeOf(r);
    if (s.size() != x.size())
      return emitOpError("results must keep the rank");
    for (size_t i = 0; i < s.size(); ++i)
      if (i != (size_t)*axis && s[i] != x[i])
        return emitOpError("results differ from the input off the split axis");
    total += s[*axis];
  }
  if (total != x[*axis])
    return emitOpError("result sizes sum to ") << total << ", input has " << x[*axis];
  return success();
}

LogicalResult GatherOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape d = shapeOf(getData()), idx = shapeOf(getIndices());
  auto axis = tgc::normalizeAxis(getAxis(), d.size());
  if (!axis)
    return emitOpError("axis out of range");
  if (!elemOf(getIndices()).isSignlessInteger() || elemOf(getIndices()).isInteger(1))
    return emitOpError("indices must be integers");
  tgc::Shape want(d.begin(), d.begin() + *axis);
  want.insert(want.end(), idx.begin(), idx.end());
  want.insert(want.end(), d.begin() + *axis + 1, d.end());
  return expectShape(*this, getResult(), want);
}

LogicalResult GatherElementsOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape d = shapeOf(getData()), idx = shapeOf(getIndices());
  if (d.size() != idx.size() || !tgc::normalizeAxis(getAxis(), d.size()))
    return emitOpError("indices must have the data's rank and axis must be in range");
  return expectShape(*this, getResult(), idx);
}

LogicalResult CumsumOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  if (!tgc::normalizeAxis(getAxis(), shapeOf(getInput()).size()))
    return emitOpError("axis out of range");
  if (isBoolType(elemOf(getInput())))
    return emitOpError("input must be numeric, not bool");
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape d = shapeOf(getData()), idx = shapeOf(getIndices());
  auto axis = tgc::normalizeAxis(getAxis(), d.size());
  if (d.size() != idx.size() || !axis)
    return emitOpError("indices must have the data's rank and axis must be in range");
  if (shapeOf(getUpdates()) != idx)
    return emitOpError("updates must have the indices' shape");
  if (elemOf(getUpdates()) != elemOf(getData()) || getResult().getType() != getData().getType())
    return emitOpError("updates and result must have the data's type");
  Type it = elemOf(getIndices());
  if (!it.isSignlessInteger(32) && !it.isSignlessInteger(64))
    return emitOpError("indices must be i32 or i64");
  for (size_t k = 0; k < d.size(); ++k)
    if (k != (size_t)*axis && idx[k] > d[k])
      return emitOpError("indices dim ") << k << " exceeds the data's";
  StringRef r = getReduction();
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return emitOpError("reduction must be none, add, mul, max or min");
  if (r != "none" && isBoolType(elemOf(getData())))
    return emitOpError("a reduction needs numeric data");
  return success();
}

LogicalResult TopkOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput()), v = shapeOf(getValues());
  auto axis = tgc::normalizeAxis(getAxis(), x.size());
  if (!axis)
    return emitOpError("axis out of range");
  if (v.size() != x.size() || shapeOf(getIndices()) != v)
    return emitOpError("values and indices must have one shape of the input's rank");
  for (size_t k = 0; k < x.size(); ++k)
    if (k != (size_t)*axis && v[k] != x[k])
      return emitOpError("results differ from the input off the axis");
  if (v[*axis] > x[*axis])
    return emitOpError("k = ") << v[*axis] << " exceeds the axis's size " << x[*axis];
  if (elemOf(getValues()) != elemOf(getInput()) || !elemOf(getIndices()).isSignlessInteger(64))
    return emitOpError("values must have the input's type and indices i64");
  if (isBoolType(elemOf(getInput())))
    return emitOpError("input must be numeric, not bool");
  return success();
}

LogicalResult ExpandOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  auto b = tgc::broadcastShapes(shapeOf(getInput()), shapeOf(getResult()));
  if (!b || *b != shapeOf(getResult()))
    return emitOpError("input does not broadcast to the result shape");
  return success();
}

LogicalResult PadOp::verify() {
  if (failed(allStatic(*this)))
    return failure();
  tgc::Shape x = shapeOf(getInput());
  auto pads = ints(getPads());
  if (pads.size() != 2 * x.size())
    return emitOpError("pads need two entries per dim");
  tgc::Shape want;
  for (size_t i = 0; i < x.size(); ++i)
    want.push_back(x[i] + pads[i] + pads[i + x.size()]);
  return expectShape(*this, getResult(), want);
}

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("region needs one argument per input");
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError("region argument types must match the inputs");
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != 1 || yield.getValues()[0].getType() != getResult().getType())
    return emitOpError("region must yield one value of the result type");
  if (getKind() != "pointwise" && getKind() != "gemm" && getKind() != "conv")
    return emitOpError("kind must be \"pointwise\", \"gemm\" or \"conv\"");
  return success();
}

/// tg.layer_norm's optional scale and bias: `, %s`, `, %s, %b`, or `, bias %b` (named, so a bias
/// alone does not parse back as a scale).
static ParseResult parseNormParams(OpAsmParser &parser,
                                   Optional<OpAsmParser::UnresolvedOperand> &scale,
                                   Optional<OpAsmParser::UnresolvedOperand> &bias) {
  if (failed(parser.parseOptionalComma()))
    return success();
  OpAsmParser::UnresolvedOperand v;
  if (succeeded(parser.parseOptionalKeyword("bias"))) {
    if (parser.parseOperand(v))
      return failure();
    bias = v;
    return success();
  }
  if (parser.parseOperand(v))
    return failure();
  scale = v;
  if (failed(parser.parseOptionalComma()))
    return success();
  if (parser.parseOperand(v))
    return failure();
  bias = v;
  return success();
}

static void printNormParams(OpAsmPrinter &p, Operation *, Value scale, Value bias) {
  if (scale)
    p << ", " << scale;
  if (bias)
    p << (scale ? ", " : ", bias ") << bias;
}

#define GET_OP_CLASSES
#include "compiler/dialect/TgOps.cpp.inc"
