// ImportElementwise.cpp — ONNX elementwise ops → `tg` elementwise ops.
//
// Ops with a `tg` counterpart map one to one; activations without one (Clip, LeakyRelu, Elu,
// HardSigmoid, Softplus, ...) are written as short compositions of `tg` ops so that later
// passes see only ops they know. Scalars are rank-0 constants; broadcasting is native.
#include "frontends/onnx/ImportContext.h"

#include "frontends/onnx/ModelLoader.h"

#include <cmath>
#include <limits>

namespace tgc::onnx_import {

using namespace mlir;
using Values = std::vector<Value>;
using Result = llvm::Expected<Values>;

namespace {

template <typename OpT> OpHandler unaryOp() {
  return [](ImportContext &c, const NodeView &n) -> Result {
    TGC_ASSIGN(x, c.need(n, 0));
    return Values{c.unary<OpT>(n.loc, x)};
  };
}

template <typename OpT> OpHandler binaryOp(bool compare) {
  return [compare](ImportContext &c, const NodeView &n) -> Result {
    TGC_ASSIGN(a, c.need(n, 0));
    TGC_ASSIGN(b, c.need(n, 1));
    if (c.elemOf(a) != c.elemOf(b))
      return c.error(n, "operands have different element types");
    return Values{c.binary<OpT>(n.loc, a, b, compare)};
  };
}

/// Max/Min/Sum: a chain of binary ops over all inputs.
template <typename OpT> OpHandler variadicOp() {
  return [](ImportContext &c, const NodeView &n) -> Result {
    TGC_ASSIGN(acc, c.need(n, 0));
    for (size_t i = 1; i < n.inputs.size(); ++i) {
      TGC_ASSIGN(v, c.need(n, i));
      if (c.elemOf(v) != c.elemOf(acc))
        return c.error(n, "operands have different element types");
      acc = c.binary<OpT>(n.loc, acc, v);
    }
    return Values{acc};
  };
}

Value scalarLike(ImportContext &c, Location loc, Value x, double v) {
  return c.splat(loc, v, c.elemOf(x));
}

/// where(x < 0, neg, pos)
Value whereNegative(ImportContext &c, Location loc, Value x, Value neg, Value pos) {
  Value isNeg = c.binary<tg::LessOp>(loc, x, scalarLike(c, loc, x, 0.0), true);
  auto s = broadcastShapes(c.shapeOf(isNeg), c.shapeOf(neg));
  if (s)
    s = broadcastShapes(*s, c.shapeOf(pos));
  if (!s) {
    c.record("operand shapes do not broadcast");
    s = c.shapeOf(x);
  }
  return c.emit<tg::WhereOp>(loc, c.type(*s, c.elemOf(x)), isNeg, neg, pos);
}

Result importCast(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  auto *to = n.attr("to");
  if (!to)
    return c.error(n, "attribute 'to' is required");
  auto dtype = dtypeFromOnnx((int32_t)to->i(), n.label + ": cast target");
  if (!dtype)
    return dtype.takeError();
  const bool saturate = n.attrInt("saturate", 1) != 0; // (float8 targets only)
  return Values{castOnnx(c, n.loc, x, mlirElementType(*dtype, c.ctx), saturate)};
}

Result importCastLike(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(like, c.need(n, 1));
  return Values{castOnnx(c, n.loc, x, c.elemOf(like), n.attrInt("saturate", 1) != 0)};
}

Result importIsNaN(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  if (!c.isFloat(c.elemOf(x)))
    return c.error(n, "input must be floating point");
  return Values{c.emit<tg::IsNanOp>(n.loc, c.type(c.shapeOf(x), c.i1()), x)};
}

Result importIsInf(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  if (!c.isFloat(c.elemOf(x)))
    return c.error(n, "input must be floating point");
  bool pos = n.attrInt("detect_positive", 1) != 0, neg = n.attrInt("detect_negative", 1) != 0;
  double inf = std::numeric_limits<double>::infinity();
  Value p = c.binary<tg::EqualOp>(n.loc, x, scalarLike(c, n.loc, x, inf), true);
  Value m = c.binary<tg::EqualOp>(n.loc, x, scalarLike(c, n.loc, x, -inf), true);
  if (pos && neg)
    return Values{c.binary<tg::OrOp>(n.loc, p, m, true)};
  if (pos)
    return Values{p};
  if (neg)
    return Values{m};
  return Values{c.splat(n.loc, 0, c.i1(), c.shapeOf(x))};
}

Result importGelu(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  std::string approx = n.attrString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return c.error(n, "approximate='" + approx + "' is not supported (none or tanh)");
  return Values{c.emit<tg::GeluOp>(n.loc, x.getType(), x, approx == "tanh")};
}

Result importPow(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(a, c.need(n, 0));
  TGC_ASSIGN(e, c.need(n, 1));
  // ONNX allows a different exponent type; tg.pow wants one element type.
  e = c.cast(n.loc, e, c.elemOf(a));
  return Values{c.binary<tg::PowOp>(n.loc, a, e)};
}

Result importMod(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(a, c.need(n, 0));
  TGC_ASSIGN(b, c.need(n, 1));
  if (c.elemOf(a) != c.elemOf(b))
    return c.error(n, "operands have different element types");
  bool fmod = n.attrInt("fmod", 0) != 0;
  if (c.isFloat(c.elemOf(a))) {
    if (!fmod)
      return c.error(n, "fmod=0 is invalid for floating-point operands");
    return Values{c.binary<tg::ModOp>(n.loc, a, b)};
  }
  if (!fmod)
    return Values{c.binary<tg::ModOp>(n.loc, a, b)};
  // C fmod on integers: a - trunc(a / b) * b (tg.div truncates integers).
  Value q = c.binary<tg::DivOp>(n.loc, a, b);
  return Values{c.binary<tg::SubOp>(n.loc, a, c.binary<tg::MulOp>(n.loc, q, b))};
}

Result importMean(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(acc, c.need(n, 0));
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    TGC_ASSIGN(v, c.need(n, i));
    acc = c.binary<tg::AddOp>(n.loc, acc, v);
  }
  if (n.inputs.size() > 1)
    acc = c.binary<tg::DivOp>(n.loc, acc, scalarLike(c, n.loc, acc, (double)n.inputs.size()));
  return Values{acc};
}

Result importWhere(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(cond, c.need(n, 0));
  TGC_ASSIGN(a, c.need(n, 1));
  TGC_ASSIGN(b, c.need(n, 2));
  if (!c.elemOf(cond).isInteger(1))
    return c.error(n, "condition must be bool");
  if (c.elemOf(a) != c.elemOf(b))
    return c.error(n, "branches have different element types");
  auto s = broadcastShapes(c.shapeOf(cond), c.shapeOf(a));
  if (s)
    s = broadcastShapes(*s, c.shapeOf(b));
  if (!s)
    return c.error(n, "shapes " + shapeToString(c.shapeOf(cond)) + ", " +
                          shapeToString(c.shapeOf(a)) + " and " + shapeToString(c.shapeOf(b)) +
                          " do not broadcast");
  return Values{c.emit<tg::WhereOp>(n.loc, c.type(*s, c.elemOf(a)), cond, a, b)};
}

Result importClip(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  Value lo, hi;
  if (n.opset < 11) {
    if (n.attr("min"))
      lo = scalarLike(c, n.loc, x, n.attrFloat("min", 0));
    if (n.attr("max"))
      hi = scalarLike(c, n.loc, x, n.attrFloat("max", 0));
  } else {
    lo = n.input(1);
    hi = n.input(2);
  }
  for (Value bound : {lo, hi})
    if (bound && !c.shapeOf(bound).empty() && c.shapeOf(bound) != Shape{1})
      return c.error(n, "min and max must be scalars");
  if (lo)
    x = c.binary<tg::MaxOp>(n.loc, x, c.reshape(n.loc, c.cast(n.loc, lo, c.elemOf(x)), {}));
  if (hi)
    x = c.binary<tg::MinOp>(n.loc, x, c.reshape(n.loc, c.cast(n.loc, hi, c.elemOf(x)), {}));
  return Values{x};
}

Result importLeakyRelu(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  Value ax = c.binary<tg::MulOp>(n.loc, x, scalarLike(c, n.loc, x, n.attrFloat("alpha", 0.01f)));
  return Values{whereNegative(c, n.loc, x, ax, x)};
}

Result importPRelu(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(slope, c.need(n, 1));
  auto s = broadcastShapes(c.shapeOf(x), c.shapeOf(slope));
  if (!s || *s != c.shapeOf(x))
    return c.error(n, "slope " + shapeToString(c.shapeOf(slope)) + " does not broadcast to " +
                          shapeToString(c.shapeOf(x)));
  Value ax = c.binary<tg::MulOp>(n.loc, x, slope);
  return Values{whereNegative(c, n.loc, x, ax, x)};
}

Result importThresholdedRelu(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  Value gt =
      c.binary<tg::GreaterOp>(n.loc, x, scalarLike(c, n.loc, x, n.attrFloat("alpha", 1)), true);
  return Values{c.emit<tg::WhereOp>(n.loc, x.getType(), gt, x, scalarLike(c, n.loc, x, 0))};
}

/// max(0, min(1, alpha * x + beta))
Value hardSigmoid(ImportContext &c, Location loc, Value x, double alpha, double beta) {
  Value y = c.binary<tg::MulOp>(loc, x, scalarLike(c, loc, x, alpha));
  y = c.binary<tg::AddOp>(loc, y, scalarLike(c, loc, x, beta));
  y = c.binary<tg::MinOp>(loc, y, scalarLike(c, loc, x, 1.0));
  return c.binary<tg::MaxOp>(loc, y, scalarLike(c, loc, x, 0.0));
}

Result importHardSigmoid(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  return Values{hardSigmoid(c, n.loc, x, n.attrFloat("alpha", 0.2f), n.attrFloat("beta", 0.5f))};
}

Result importHardSwish(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  return Values{c.binary<tg::MulOp>(n.loc, x, hardSigmoid(c, n.loc, x, 1.0 / 6.0, 0.5))};
}

/// softplus(x) = max(x, 0) + log(1 + exp(-|x|)), stable for large |x|.
Value softplus(ImportContext &c, Location loc, Value x) {
  Value e = c.unary<tg::ExpOp>(loc, c.unary<tg::NegOp>(loc, c.unary<tg::AbsOp>(loc, x)));
  Value l = c.unary<tg::LogOp>(loc, c.binary<tg::AddOp>(loc, e, scalarLike(c, loc, x, 1.0)));
  return c.binary<tg::AddOp>(loc, c.unary<tg::ReluOp>(loc, x), l);
}

Result importSoftplus(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  return Values{softplus(c, n.loc, x)};
}

Result importSoftsign(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  Value d = c.binary<tg::AddOp>(n.loc, c.unary<tg::AbsOp>(n.loc, x), scalarLike(c, n.loc, x, 1));
  return Values{c.binary<tg::DivOp>(n.loc, x, d)};
}

Result importMish(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  return Values{c.binary<tg::MulOp>(n.loc, x, c.unary<tg::TanhOp>(n.loc, softplus(c, n.loc, x)))};
}

/// alpha * (exp(x) - 1)
Value expm1Scaled(ImportContext &c, Location loc, Value x, double alpha) {
  Value e = c.binary<tg::SubOp>(loc, c.unary<tg::ExpOp>(loc, x), scalarLike(c, loc, x, 1.0));
  return c.binary<tg::MulOp>(loc, e, scalarLike(c, loc, x, alpha));
}

Result importElu(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  return Values{whereNegative(c, n.loc, x, expm1Scaled(c, n.loc, x, n.attrFloat("alpha", 1)), x)};
}

Result importSelu(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  double alpha = n.attrFloat("alpha", 1.67326319217681884765625f);
  double gamma = n.attrFloat("gamma", 1.05070102214813232421875f);
  Value y = whereNegative(c, n.loc, x, expm1Scaled(c, n.loc, x, alpha), x);
  return Values{c.binary<tg::MulOp>(n.loc, y, scalarLike(c, n.loc, x, gamma))};
}

Result importCelu(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  double alpha = n.attrFloat("alpha", 1);
  Value xs = c.binary<tg::DivOp>(n.loc, x, scalarLike(c, n.loc, x, alpha));
  return Values{whereNegative(c, n.loc, x, expm1Scaled(c, n.loc, xs, alpha), x)};
}

Result importTan(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  return Values{
      c.binary<tg::DivOp>(n.loc, c.unary<tg::SinOp>(n.loc, x), c.unary<tg::CosOp>(n.loc, x))};
}

Result importIdentity(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  return Values{x};
}

Result importDropout(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  if (n.input(2) && !c.isConstant(n.input(2)))
    return c.error(n, "training_mode input must be constant" + c.bindHint(n.input(2)));
  if (auto training = c.constInts(n.input(2)); training && !training->empty() && (*training)[0]) {
    // Training: only ratio 0 is deterministic (y = x, an all-true mask). A ratio > 0 draws a
    // random mask, which no compiled model can reproduce (ONNX's reference seeds numpy's
    // generator), so it is refused.
    if (n.input(1) && !c.isConstant(n.input(1)))
      return c.error(n, "ratio input must be constant in training mode" + c.bindHint(n.input(1)));
    auto ratio = c.constDoubles(n.input(1));
    const double r = !n.input(1) ? 0.5 : (ratio && !ratio->empty() ? (*ratio)[0] : 0.5);
    if (r != 0)
      return c.error(n, "training_mode=true with ratio " + std::to_string(r) +
                            " draws a random mask, which is not supported (only ratio 0, the "
                            "identity, is)");
  }
  Values out{x};
  if (n.used(1))
    out.push_back(c.splat(n.loc, 1, c.i1(), c.shapeOf(x)));
  return out;
}

} // namespace

void registerElementwiseOps(OpTable &t) {
  t["Neg"] = unaryOp<tg::NegOp>();
  t["Abs"] = unaryOp<tg::AbsOp>();
  t["Sign"] = unaryOp<tg::SignOp>();
  t["Exp"] = unaryOp<tg::ExpOp>();
  t["Log"] = unaryOp<tg::LogOp>();
  t["Sqrt"] = unaryOp<tg::SqrtOp>();
  t["Reciprocal"] = unaryOp<tg::ReciprocalOp>();
  t["Tanh"] = unaryOp<tg::TanhOp>();
  t["Sigmoid"] = unaryOp<tg::SigmoidOp>();
  t["Erf"] = unaryOp<tg::ErfOp>();
  t["Relu"] = unaryOp<tg::ReluOp>();
  t["Sin"] = unaryOp<tg::SinOp>();
  // Shrink: x + bias below -lambd, x - bias above lambd, 0 between.
  t["Shrink"] = [](ImportContext &c, const NodeView &n) -> Result {
    TGC_ASSIGN(x, c.need(n, 0));
    const double lambd = n.attrFloat("lambd", 0.5f), bias = n.attrFloat("bias", 0.f);
    const Type e = c.elemOf(x);
    Value lo = c.binary<tg::LessOp>(n.loc, x, c.splat(n.loc, -lambd, e), true);
    Value hi = c.binary<tg::GreaterOp>(n.loc, x, c.splat(n.loc, lambd, e), true);
    Value zero = c.splat(n.loc, 0, e, c.shapeOf(x));
    Value up = c.binary<tg::AddOp>(n.loc, x, c.splat(n.loc, bias, e));
    Value down = c.binary<tg::SubOp>(n.loc, x, c.splat(n.loc, bias, e));
    Value y = c.emit<tg::WhereOp>(n.loc, x.getType(), hi, down, zero);
    return Values{c.emit<tg::WhereOp>(n.loc, x.getType(), lo, up, y)};
  };
  for (const char *fn : {"Acos", "Asin", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"})
    t[fn] = [fn](ImportContext &c, const NodeView &n) -> Result {
      TGC_ASSIGN(x, c.need(n, 0));
      if (!c.isFloat(c.elemOf(x)))
        return c.error(n, "input must be a float tensor");
      return Values{c.emit<tg::MathOp>(n.loc, x.getType(), x,
                                       c.b.getStringAttr(llvm::StringRef(fn).lower()))};
    };
  t["Cos"] = unaryOp<tg::CosOp>();
  t["Floor"] = unaryOp<tg::FloorOp>();
  t["Ceil"] = unaryOp<tg::CeilOp>();
  t["Round"] = unaryOp<tg::RoundOp>();
  t["Not"] = unaryOp<tg::NotOp>();
  t["Tan"] = importTan;
  t["IsNaN"] = importIsNaN;
  t["IsInf"] = importIsInf;
  t["Gelu"] = importGelu;
  t["Cast"] = importCast;
  t["CastLike"] = importCastLike;
  t["Identity"] = importIdentity;
  t["Dropout"] = importDropout;

  t["Add"] = binaryOp<tg::AddOp>(false);
  t["Sub"] = binaryOp<tg::SubOp>(false);
  t["Mul"] = binaryOp<tg::MulOp>(false);
  t["Div"] = binaryOp<tg::DivOp>(false);
  t["Pow"] = importPow;
  t["Mod"] = importMod;
  t["Equal"] = binaryOp<tg::EqualOp>(true);
  t["Less"] = binaryOp<tg::LessOp>(true);
  t["LessOrEqual"] = binaryOp<tg::LessEqualOp>(true);
  t["Greater"] = binaryOp<tg::GreaterOp>(true);
  t["GreaterOrEqual"] = binaryOp<tg::GreaterEqualOp>(true);
  t["And"] = binaryOp<tg::AndOp>(true);
  t["Or"] = binaryOp<tg::OrOp>(true);
  t["Xor"] = binaryOp<tg::XorOp>(true);
  t["Max"] = variadicOp<tg::MaxOp>();
  t["Min"] = variadicOp<tg::MinOp>();
  t["Sum"] = variadicOp<tg::AddOp>();
  t["Mean"] = importMean;
  t["Where"] = importWhere;

  t["Clip"] = importClip;
  t["LeakyRelu"] = importLeakyRelu;
  t["PRelu"] = importPRelu;
  t["ThresholdedRelu"] = importThresholdedRelu;
  t["HardSigmoid"] = importHardSigmoid;
  t["HardSwish"] = importHardSwish;
  t["Softplus"] = importSoftplus;
  t["Softsign"] = importSoftsign;
  t["Mish"] = importMish;
  t["Elu"] = importElu;
  t["Selu"] = importSelu;
  t["Celu"] = importCelu;
}

} // namespace tgc::onnx_import
