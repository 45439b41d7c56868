// ImportQuantize.cpp — QuantizeLinear and DequantizeLinear as elementwise arithmetic, so they run
// and fuse on every backend like any pointwise chain:
//   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)   ([u]int4/8/16)
//                     y = float8(x / scale)       (float8: tg.cast, `saturate` as the node's)
//   DequantizeLinear: y = (x - zero_point) * scale        ([u]int4/8/16, int32; float8: x * scale)
// The scale (and zero point) is a scalar (per tensor), 1-D along `axis` (per axis) or, from opset
// 21, blocked along `axis` (`block_size` consecutive elements share one), read as the ONNX
// reference does. DynamicQuantizeLinear computes its uint8 scale and zero point from the tensor's
// range first. A float8 zero point must be zero (the reference ignores it; so does tgc).
// Also here: castOnnx, Cast's conversions to float8 (saturate) and int4/uint4 (clip, then round
// half to even, as onnx.subbyte.float32_to_4bit_unpacked).
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"
#include "frontends/onnx/ModelLoader.h"

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

/// `p` (a scale or zero point) shaped to broadcast against `x`: a scalar as is, 1-D [C] along
/// `axis`, or blocked (same rank as x, `axis` holding ceil(dim / block)) repeated block_size
/// times along `axis`.
llvm::Expected<Value> broadcastParam(ImportContext &c, const NodeView &n, Value p, Value x) {
  const Shape xs = c.shapeOf(x), ps = c.shapeOf(p);
  const int64_t r = (int64_t)xs.size();
  const int64_t block = n.attrInt("block_size", 0);
  if (ps.empty() || (ps.size() == 1 && ps[0] == 1 && block == 0))
    return c.reshape(n.loc, p, {}); // per tensor: axis is not read
  int64_t axis = n.attrInt("axis", 1);
  if (axis < -r || axis >= r)
    return c.error(n, "axis " + std::to_string(axis) + " is out of range for rank " +
                          std::to_string(r));
  axis = axis < 0 ? axis + r : axis;
  if (block == 0) {
    if (ps.size() != 1 || ps[0] != xs[axis])
      return c.error(n, "scale/zero point " + shapeToString(ps) + " is neither a scalar nor one "
                        "value per element of axis " + std::to_string(axis));
    Shape s(r, 1);
    s[axis] = ps[0];
    return c.reshape(n.loc, p, s);
  }
  if (block < 0 || (int64_t)ps.size() != r)
    return c.error(n, "blocked scale/zero point must have the input's rank and block_size > 0");
  for (int64_t d = 0; d < r; ++d)
    if (d == axis ? ps[d] != (xs[d] + block - 1) / block : ps[d] != xs[d])
      return c.error(n, "blocked scale/zero point " + shapeToString(ps) + " does not fit input " +
                            shapeToString(xs) + " with block_size " + std::to_string(block));
  std::vector<int64_t> idx(xs[axis]);
  for (int64_t i = 0; i < xs[axis]; ++i)
    idx[i] = i / block;
  Shape gs = ps;
  gs[axis] = xs[axis];
  return c.emit<tg::GatherOp>(n.loc, c.type(gs, c.elemOf(p)), p, c.constI64(n.loc, idx),
                              (uint64_t)axis);
}

/// [u]int4, [u]int8, [u]int16 or float8 (the quantized types handled here), else an error
/// naming the type.
llvm::Error checkQuantizedType(ImportContext &c, const NodeView &n, Type t, bool int32Ok) {
  if (t.isInteger(4) || t.isInteger(8) || t.isInteger(16) || tg::isFloat8(t) ||
      (int32Ok && t.isInteger(32) && t.isSignlessInteger()))
    return llvm::Error::success();
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return c.error(n, "quantized type " + os.str() +
                        " is not supported (int4, uint4, int8, uint8, int16, uint16, float8" +
                        (int32Ok ? ", int32)" : ")"));
}

Result importQuantize(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(scale, c.need(n, 1));
  Value zp = n.input(2);
  if (!c.isFloat(c.elemOf(x)) || !c.isFloat(c.elemOf(scale)))
    return c.error(n, "input and scale must be float tensors");
  // The output type is the zero point's, else output_dtype's, else uint8.
  Type qt = zp ? c.elemOf(zp) : c.b.getIntegerType(8, /*isSigned=*/false);
  if (!zp && n.attrInt("output_dtype", 0) != 0) {
    const int64_t od = n.attrInt("output_dtype", 0);
    // UINT8, INT8, UINT16, INT16, FLOAT8E4M3FN .. FLOAT8E5M2FNUZ, UINT4, INT4
    if (od < 2 || (od > 5 && od < 17) || od > 22)
      return c.error(n, "output_dtype " + std::to_string(od) +
                            " is not supported (int4, uint4, int8, uint8, int16, uint16, float8)");
    auto dt = dtypeFromOnnx((int32_t)od, n.label + ": output_dtype");
    if (!dt)
      return dt.takeError();
    qt = mlirElementType(*dt, c.ctx);
  }
  if (auto e = checkQuantizedType(c, n, qt, false))
    return std::move(e);
  const Type ft = c.elemOf(x);
  TGC_ASSIGN(s, broadcastParam(c, n, c.cast(n.loc, scale, ft), x));
  if (tg::isFloat8(qt)) { // x / scale to float8 (round to nearest even); the zero point is 0
    Value q = c.binary<tg::DivOp>(n.loc, x, s);
    return Values{castOnnx(c, n.loc, q, qt, n.attrInt("saturate", 1) != 0)};
  }
  Value q = c.unary<tg::RoundOp>(n.loc, c.binary<tg::DivOp>(n.loc, x, s));
  if (zp) {
    TGC_ASSIGN(z, broadcastParam(c, n, zp, x));
    q = c.binary<tg::AddOp>(n.loc, q, c.cast(n.loc, z, ft));
  }
  const bool isSigned = !qt.isUnsignedInteger();
  const double range = qt.isInteger(16) ? 65536 : qt.isInteger(4) ? 16 : 256;
  q = c.binary<tg::MaxOp>(n.loc, q, c.splat(n.loc, isSigned ? -range / 2 : 0, ft));
  q = c.binary<tg::MinOp>(n.loc, q, c.splat(n.loc, isSigned ? range / 2 - 1 : range - 1, ft));
  return Values{c.cast(n.loc, q, qt)};
}

Result importDequantize(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(scale, c.need(n, 1));
  Value zp = n.input(2);
  if (auto e = checkQuantizedType(c, n, c.elemOf(x), true))
    return std::move(e);
  if (!c.isFloat(c.elemOf(scale)))
    return c.error(n, "scale must be a float tensor");
  if (zp && c.elemOf(zp) != c.elemOf(x))
    return c.error(n, "zero point must have the input's type");
  const Type ft = c.elemOf(scale);
  Value y = c.cast(n.loc, x, ft);
  if (zp && !tg::isFloat8(c.elemOf(x))) { // (a float8 zero point must be 0)
    TGC_ASSIGN(z, broadcastParam(c, n, zp, x));
    y = c.binary<tg::SubOp>(n.loc, y, c.cast(n.loc, z, ft));
  }
  TGC_ASSIGN(s, broadcastParam(c, n, scale, x));
  return Values{c.binary<tg::MulOp>(n.loc, y, s)};
}

/// DynamicQuantizeLinear: uint8 with scale and zero point from the tensor's range (widened to
/// include 0): scale = (max - min) / 255, zero_point = saturate(round(-min / scale)).
Result importDynamicQuantize(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  const Type ft = c.elemOf(x);
  if (!ft.isF32())
    return c.error(n, "input must be a float32 tensor");
  std::vector<int64_t> all;
  for (int64_t d = 0; d < c.rankOf(x); ++d)
    all.push_back(d);
  auto reduce = [&](auto tag, Value v) {
    using OpT = decltype(tag);
    return c.emit<OpT>(n.loc, c.type({}, ft), v, c.b.getI64ArrayAttr(all), false);
  };
  Value zero = c.splat(n.loc, 0, ft);
  Value hi = c.binary<tg::MaxOp>(n.loc, reduce(tg::ReduceMaxOp(), x), zero);
  Value lo = c.binary<tg::MinOp>(n.loc, reduce(tg::ReduceMinOp(), x), zero);
  Value scale = c.binary<tg::DivOp>(n.loc, c.binary<tg::SubOp>(n.loc, hi, lo),
                                    c.splat(n.loc, 255, ft));
  auto saturate = [&](Value v) {
    v = c.binary<tg::MaxOp>(n.loc, v, zero);
    return c.binary<tg::MinOp>(n.loc, v, c.splat(n.loc, 255, ft));
  };
  Value zpf = saturate(c.unary<tg::RoundOp>(
      n.loc, c.binary<tg::DivOp>(n.loc, c.binary<tg::SubOp>(n.loc, zero, lo), scale)));
  Value q = c.unary<tg::RoundOp>(n.loc, c.binary<tg::DivOp>(n.loc, x, scale));
  q = saturate(c.binary<tg::AddOp>(n.loc, q, zpf));
  const Type u8 = c.b.getIntegerType(8, /*isSigned=*/false);
  return Values{c.cast(n.loc, q, u8), scale, c.cast(n.loc, zpf, u8)};
}

} // namespace

Value castOnnx(ImportContext &c, Location loc, Value x, Type to, bool saturate) {
  if (auto it = to.dyn_cast<IntegerType>(); it && it.getWidth() == 4) {
    // clip to the range, then round half to even (NaN stays NaN and converts as the cast does)
    const Type f32 = c.b.getF32Type();
    Value v = c.cast(loc, x, f32);
    const bool u = it.isUnsigned();
    v = c.binary<tg::MaxOp>(loc, v, c.splat(loc, u ? 0 : -8, f32));
    v = c.binary<tg::MinOp>(loc, v, c.splat(loc, u ? 15 : 7, f32));
    return c.cast(loc, c.unary<tg::RoundOp>(loc, v), to);
  }
  if (!tg::isFloat8(to) || saturate || c.elemOf(x) == to)
    return c.cast(loc, x, to);
  return c.emit<tg::CastOp>(loc, c.type(c.shapeOf(x), to), x, c.b.getBoolAttr(false));
}

void registerQuantizeOps(OpTable &t) {
  t["DynamicQuantizeLinear"] = importDynamicQuantize;
  t["QuantizeLinear"] = importQuantize;
  t["DequantizeLinear"] = importDequantize;
}

} // namespace tgc::onnx_import
