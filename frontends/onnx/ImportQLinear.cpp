// ImportQLinear.cpp — the integer GEMMs: MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
//
// Exact integer arithmetic by decomposition, so both backends run them with what they have: the
// [u]int8 operands widen to int32 (tg.cast), their zero points are subtracted in int32 (per
// tensor, per row of A / per column of B, per output channel of W), and tg.matmul / tg.conv run
// on int32 with an int32 result (the CPU's integer GEMM loops and CUDA's generated kernels
// accumulate in int64 and keep the low 32 bits, as int32 arithmetic wraps; never in float).
// QLinear* then requantize as ONNX Runtime does (MlasRequantizeOutput), in float:
//   y = saturate(round_half_even(float(acc) * (a_scale * b_scale / y_scale)) + y_zero_point),
// the scales (float or float16) widened to float first, so the scale product rounds once per
// op in float on every backend (a fused kernel keeps float between its ops anyway; ONNX's
// reference rounds float16 products to float16, an ulp of float16 apart at most).
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

/// "[2, 3]" ("[]" for a scalar).
std::string dims(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return os.str();
}

/// int8 or uint8, else an error naming the node, the operand and its type.
llvm::Error check8(ImportContext &c, const NodeView &n, Value v, const char *what) {
  Type t = c.elemOf(v);
  if (t.isInteger(8))
    return llvm::Error::success();
  return c.error(n, std::string(what) + " has type " + typeName(t) +
                        "; only int8 and uint8 are supported");
}

/// `v` widened to int32, minus zero point `zp` (of v's type) when present, `zp` already shaped
/// to broadcast against v.
Value minusZeroPoint(ImportContext &c, Location loc, Value v, Value zp) {
  Type i32 = c.b.getIntegerType(32);
  Value w = c.cast(loc, v, i32);
  return zp ? c.binary<tg::SubOp>(loc, w, c.cast(loc, zp, i32)) : w;
}

/// Per-tensor (scalar or [1]) or one value per element of dim `dim` of a rank-`rank` operand
/// with `count` elements there: returned shaped [count, 1...] with `rank - dim` dims (so it
/// broadcasts from the right), or the ONNX N-D form (rank `rank`, broadcasting to `full`) kept
/// as is. Anything else is refused naming `what`.
llvm::Expected<Value> shapeParam(ImportContext &c, const NodeView &n, Value p, const char *what,
                                 const Shape &full, int64_t dim, const char *unit) {
  const Shape ps = c.shapeOf(p);
  const int64_t rank = (int64_t)full.size();
  if (ps.empty() || (ps.size() == 1 && ps[0] == 1))
    return c.reshape(n.loc, p, {});
  if (ps.size() == 1 && ps[0] == full[dim]) {
    Shape s(rank - dim, 1);
    s[0] = ps[0];
    return c.reshape(n.loc, p, s);
  }
  if ((int64_t)ps.size() == rank) {
    auto b = broadcastShapes(ps, full);
    bool ok = b && *b == full;
    for (int64_t d = dim + 1; ok && d < rank; ++d)
      ok = ps[d] == 1; // one value per row (A) / column (B): 1 along the other matrix dim
    for (int64_t d = rank - 2; ok && d < dim; ++d)
      ok = ps[d] == 1;
    if (ok)
      return p;
  }
  return c.error(n, std::string(what) + " has shape " + dims(ps) + "; expected a scalar, [" +
                        std::to_string(full[dim]) + "] (one per " + unit +
                        ") or the input's rank with 1 in the other dims");
}

/// Zero point input `i` (absent: none) checked to have the operand's type, then shaped.
llvm::Expected<Value> zeroPoint(ImportContext &c, const NodeView &n, size_t i, Value of,
                                const char *what, const Shape &full, int64_t dim) {
  Value zp = n.input(i);
  if (!zp)
    return Value();
  if (c.elemOf(zp) != c.elemOf(of))
    return c.error(n, std::string(what) + " has type " + typeName(c.elemOf(zp)) +
                          "; it must have its operand's type " + typeName(c.elemOf(of)));
  return shapeParam(c, n, zp, what, full, dim, dim == (int64_t)full.size() - 1 ? "column" : "row");
}

/// The exact int32 product of A and B (zero points at inputs za, zb; index 0 when absent).
llvm::Expected<Value> integerMatMul(ImportContext &c, const NodeView &n, size_t ia, size_t iza,
                                    size_t ib, size_t izb) {
  TGC_ASSIGN(a, c.need(n, ia));
  TGC_ASSIGN(b, c.need(n, ib));
  if (auto e = check8(c, n, a, "A"))
    return std::move(e);
  if (auto e = check8(c, n, b, "B"))
    return std::move(e);
  const Shape as = c.shapeOf(a), bs = c.shapeOf(b);
  auto s = matmulShape(as, bs);
  if (!s || as.empty() || bs.empty())
    return c.error(n, "shapes " + shapeToString(as) + " and " + shapeToString(bs) +
                          " do not contract");
  // The zero points are read against A as [..., M, K] and B as [..., K, N] (a 1-D operand has
  // only K: then only a per-tensor zero point).
  const Shape af = as.size() == 1 ? Shape{1, as[0]} : as,
              bf = bs.size() == 1 ? Shape{bs[0], 1} : bs;
  TGC_ASSIGN(za, iza ? zeroPoint(c, n, iza, a, "a_zero_point", af, (int64_t)af.size() - 2)
                     : llvm::Expected<Value>(Value()));
  TGC_ASSIGN(zb, izb ? zeroPoint(c, n, izb, b, "b_zero_point", bf, (int64_t)bf.size() - 1)
                     : llvm::Expected<Value>(Value()));
  if ((za && as.size() == 1 && c.rankOf(za) > 0) || (zb && bs.size() == 1 && c.rankOf(zb) > 0))
    return c.error(n, "a 1-D operand takes a per-tensor zero point only");
  Value a32 = minusZeroPoint(c, n.loc, a, za), b32 = minusZeroPoint(c, n.loc, b, zb);
  return c.emit<tg::MatmulOp>(n.loc, c.type(*s, c.b.getIntegerType(32)), a32, b32);
}

Result importMatMulInteger(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(y, integerMatMul(c, n, 0, n.input(2) ? 2 : 0, 1, n.input(3) ? 3 : 0));
  return Values{y};
}

/// The Conv importer, run on the int32 operands (attributes are Conv's).
llvm::Expected<Value> integerConv(ImportContext &c, const NodeView &n, Value x, Value w,
                                  Value bias) {
  static const OpTable nn = [] {
    OpTable t;
    registerNNOps(t);
    return t;
  }();
  NodeView conv = n;
  conv.inputs = {x, w};
  if (bias)
    conv.inputs.push_back(bias);
  auto r = nn.at("Conv")(c, conv);
  if (!r)
    return r.takeError();
  return r->front();
}

/// x and w of a ConvInteger/QLinearConv widened to int32 minus their zero points: x's per
/// tensor, w's per tensor or one per output channel.
llvm::Expected<std::pair<Value, Value>> convOperands(ImportContext &c, const NodeView &n, size_t ix,
                                                     size_t izx, size_t iw, size_t izw) {
  TGC_ASSIGN(x, c.need(n, ix));
  TGC_ASSIGN(w, c.need(n, iw));
  if (auto e = check8(c, n, x, "x"))
    return std::move(e);
  if (auto e = check8(c, n, w, "w"))
    return std::move(e);
  const Shape ws = c.shapeOf(w);
  if (ws.size() < 3 || c.rankOf(x) != (int64_t)ws.size())
    return c.error(n, "input " + shapeToString(c.shapeOf(x)) + " and weight " + shapeToString(ws) +
                          " must have the same rank >= 3");
  Value zx, zw;
  if (Value z = izx ? n.input(izx) : Value()) {
    if (c.elemOf(z) != c.elemOf(x))
      return c.error(n, "x_zero_point has type " + typeName(c.elemOf(z)) +
                            "; it must have x's type " + typeName(c.elemOf(x)));
    const Shape zs = c.shapeOf(z);
    if (!(zs.empty() || (zs.size() == 1 && zs[0] == 1)))
      return c.error(n, "x_zero_point has shape " + dims(zs) +
                            "; only a per-tensor zero point (a scalar or [1]) is supported");
    zx = c.reshape(n.loc, z, {});
  }
  if (Value z = izw ? n.input(izw) : Value()) {
    if (c.elemOf(z) != c.elemOf(w))
      return c.error(n, "w_zero_point has type " + typeName(c.elemOf(z)) +
                            "; it must have w's type " + typeName(c.elemOf(w)));
    TGC_ASSIGN(p, shapeParam(c, n, z, "w_zero_point", ws, 0, "output channel"));
    zw = p;
  }
  return std::make_pair(minusZeroPoint(c, n.loc, x, zx), minusZeroPoint(c, n.loc, w, zw));
}

Result importConvInteger(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(xw, convOperands(c, n, 0, n.input(2) ? 2 : 0, 1, n.input(3) ? 3 : 0));
  TGC_ASSIGN(y, integerConv(c, n, xw.first, xw.second, Value()));
  return Values{y};
}

/// A float scale input: float32 or float16 (bfloat16 too), else refused.
llvm::Expected<Value> scaleInput(ImportContext &c, const NodeView &n, size_t i, const char *what) {
  TGC_ASSIGN(s, c.need(n, i));
  if (!c.isFloat(c.elemOf(s)) || c.elemOf(s).isF64())
    return c.error(n, std::string(what) + " has type " + typeName(c.elemOf(s)) +
                          "; expected float or float16");
  return s;
}

/// acc (int32) requantized: saturate(round(float(acc) * scale) + zp) in zp's type (`qt`).
Value requantize(ImportContext &c, Location loc, Value acc, Value scale, Value zp, Type qt) {
  Type f32 = c.b.getF32Type();
  Value y = c.unary<tg::RoundOp>(
      loc, c.binary<tg::MulOp>(loc, c.cast(loc, acc, f32), c.cast(loc, scale, f32)));
  if (zp)
    y = c.binary<tg::AddOp>(loc, y, c.cast(loc, zp, f32));
  const bool isSigned = !qt.isUnsignedInteger();
  y = c.binary<tg::MaxOp>(loc, y, c.splat(loc, isSigned ? -128 : 0, f32));
  y = c.binary<tg::MinOp>(loc, y, c.splat(loc, isSigned ? 127 : 255, f32));
  return c.cast(loc, y, qt);
}

/// y_zero_point (input i) when present: per tensor, of an 8-bit type; the output type is its
/// type, else `dflt`'s.
llvm::Expected<Value> outputZeroPoint(ImportContext &c, const NodeView &n, size_t i, Value dflt,
                                      Type &qt) {
  Value z = n.input(i);
  qt = c.elemOf(z ? z : dflt);
  if (!z)
    return Value();
  if (auto e = check8(c, n, z, "y_zero_point"))
    return std::move(e);
  return z;
}

Result importQLinearMatMul(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(acc, integerMatMul(c, n, 0, n.input(2) ? 2 : 0, 3, n.input(5) ? 5 : 0));
  TGC_ASSIGN(sa, scaleInput(c, n, 1, "a_scale"));
  TGC_ASSIGN(sb, scaleInput(c, n, 4, "b_scale"));
  TGC_ASSIGN(sy, scaleInput(c, n, 6, "y_scale"));
  if (c.elemOf(sa) != c.elemOf(sb) || c.elemOf(sa) != c.elemOf(sy))
    return c.error(n, "a_scale, b_scale and y_scale must share one float type");
  const Shape as = c.shapeOf(n.input(0)), bs = c.shapeOf(n.input(3)), ys = c.shapeOf(acc);
  if (as.size() < 2 || bs.size() < 2)
    return c.error(n, "a and b must have rank >= 2");
  Type qt;
  TGC_ASSIGN(zy, outputZeroPoint(c, n, 7, n.input(0), qt));
  // a's and y's scale (and y's zero point) per tensor or per row, b's per tensor or per column.
  TGC_ASSIGN(pa, shapeParam(c, n, sa, "a_scale", as, (int64_t)as.size() - 2, "row"));
  TGC_ASSIGN(pb, shapeParam(c, n, sb, "b_scale", bs, (int64_t)bs.size() - 1, "column"));
  TGC_ASSIGN(py, shapeParam(c, n, sy, "y_scale", ys, (int64_t)ys.size() - 2, "row"));
  Value pz;
  if (zy) {
    TGC_ASSIGN(p, shapeParam(c, n, zy, "y_zero_point", ys, (int64_t)ys.size() - 2, "row"));
    pz = p;
  }
  const Type f32 = c.b.getF32Type();
  Value scale = c.binary<tg::DivOp>(
      n.loc, c.binary<tg::MulOp>(n.loc, c.cast(n.loc, pa, f32), c.cast(n.loc, pb, f32)),
      c.cast(n.loc, py, f32));
  return Values{requantize(c, n.loc, acc, scale, pz, qt)};
}

Result importQLinearConv(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(xw, convOperands(c, n, 0, 2, 3, 5));
  Value bias = n.input(8);
  if (bias && !(c.elemOf(bias).isInteger(32) && c.elemOf(bias).isSignlessInteger()))
    return c.error(n, "B has type " + typeName(c.elemOf(bias)) + "; it must be int32");
  TGC_ASSIGN(acc, integerConv(c, n, xw.first, xw.second, bias));
  TGC_ASSIGN(sx, scaleInput(c, n, 1, "x_scale"));
  TGC_ASSIGN(sw, scaleInput(c, n, 4, "w_scale"));
  TGC_ASSIGN(sy, scaleInput(c, n, 6, "y_scale"));
  if (c.elemOf(sx) != c.elemOf(sw) || c.elemOf(sx) != c.elemOf(sy))
    return c.error(n, "x_scale, w_scale and y_scale must share one float type");
  for (auto [v, what] : {std::pair<Value, const char *>{sx, "x_scale"}, {sy, "y_scale"}}) {
    const Shape s = c.shapeOf(v);
    if (!(s.empty() || (s.size() == 1 && s[0] == 1)))
      return c.error(n, std::string(what) + " has shape " + dims(s) +
                            "; only a per-tensor scale (a scalar or [1]) is supported");
  }
  Type qt;
  TGC_ASSIGN(zy, outputZeroPoint(c, n, 7, n.input(0), qt));
  if (zy) {
    const Shape s = c.shapeOf(zy);
    if (!(s.empty() || (s.size() == 1 && s[0] == 1)))
      return c.error(n, "y_zero_point has shape " + dims(s) +
                            "; only a per-tensor zero point (a scalar or [1]) is supported");
    zy = c.reshape(n.loc, zy, {});
  }
  // w's scale per tensor or per output channel: [M, 1, ...] against y [N, M, spatial...].
  const Shape ys = c.shapeOf(acc);
  TGC_ASSIGN(pw,
             shapeParam(c, n, sw, "w_scale", Shape(ys.begin() + 1, ys.end()), 0, "output channel"));
  const Type f32 = c.b.getF32Type();
  Value scale =
      c.binary<tg::DivOp>(n.loc,
                          c.binary<tg::MulOp>(n.loc, c.cast(n.loc, c.reshape(n.loc, sx, {}), f32),
                                              c.cast(n.loc, pw, f32)),
                          c.cast(n.loc, c.reshape(n.loc, sy, {}), f32));
  return Values{requantize(c, n.loc, acc, scale, zy, qt)};
}

} // namespace

void registerQLinearOps(OpTable &t) {
  t["MatMulInteger"] = importMatMulInteger;
  t["ConvInteger"] = importConvInteger;
  t["QLinearMatMul"] = importQLinearMatMul;
  t["QLinearConv"] = importQLinearConv;
}

} // namespace tgc::onnx_import
