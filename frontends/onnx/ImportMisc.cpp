// ImportMisc.cpp — ONNX DeformConv and Det by decomposition into ops tg already has, so both
// backends run them without a new op.
//
// DeformConv (2-D): every tap (kernel position k, output position p) of offset group g samples X
// at (p·stride - pad_begin + k·dilation + offset) bilinearly, zeros outside, as the reference's
// GridSample with align_corners does. The four corners' flat indices [N, G, 1, K·P] (clamped in
// range) read X as [N, G, C/G, H·W] through tg.gather_elements; tg.where zeroes the corners
// outside the input, the bilinear weights and the mask multiply in, and the sum is an im2col
// tensor [N, C·K, P] that one tg.matmul per group (broadcast over N) turns into the output.
//
// Det: LU with partial pivoting unrolled over the static n (n <= 16): per column the pivot row
// is tg.argmax of |A| below the diagonal, the two rows swap through tg.gather_elements and
// tg.where, the rows below are eliminated (a zero pivot column leaves them, det 0); det is the
// product of U's diagonal times the sign of the row swaps — the method LAPACK's getrf (numpy's
// det) uses.
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"

#include <cmath>

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

template <typename OpT>
Value reduce(ImportContext &c, Location loc, Value x, const std::vector<int64_t> &axes,
             bool keep) {
  Shape xs = c.shapeOf(x), out;
  for (int64_t i = 0; i < (int64_t)xs.size(); ++i) {
    bool red = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!red)
      out.push_back(xs[i]);
    else if (keep)
      out.push_back(1);
  }
  return c.emit<OpT>(loc, c.type(out, c.elemOf(x)), x, c.b.getI64ArrayAttr(axes), keep);
}

/// tg.slice of `x` from `starts` with unit steps, of shape `out`.
Value slice(ImportContext &c, Location loc, Value x, const std::vector<int64_t> &starts,
            const Shape &out) {
  return c.emit<tg::SliceOp>(loc, c.type(out, c.elemOf(x)), x, c.b.getI64ArrayAttr(starts),
                             c.b.getI64ArrayAttr(std::vector<int64_t>(starts.size(), 1)));
}

Result importDeformConv(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(w, c.need(n, 1));
  TGC_ASSIGN(offset, c.need(n, 2));
  Value bias = n.input(3), mask = n.input(4);
  const Shape xs = c.shapeOf(x), ws = c.shapeOf(w), os = c.shapeOf(offset);
  const Type ft = c.elemOf(x);
  if (xs.size() != 4 || ws.size() != 4 || os.size() != 4)
    return c.error(n, "only 2-D DeformConv is supported: X " + shapeToString(xs) + ", W " +
                          shapeToString(ws) + " and offset " + shapeToString(os) +
                          " must be 4-D");
  if (!c.isFloat(ft))
    return c.error(n, "X must be a float tensor");
  for (Value v : {w, offset, bias, mask})
    if (v && c.elemOf(v) != ft)
      return c.error(n, "W, offset, B and mask must have X's element type");
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], oC = ws[0], kH = ws[2], kW = ws[3];
  const int64_t group = n.attrInt("group", 1), G = n.attrInt("offset_group", 1);
  if (group <= 0 || ws[1] * group != C || oC % group != 0)
    return c.error(n, "X " + shapeToString(xs) + " and W " + shapeToString(ws) +
                          " do not match with group " + std::to_string(group));
  if (G <= 0 || C % G != 0)
    return c.error(n, "offset_group " + std::to_string(G) + " does not divide the " +
                          std::to_string(C) + " input channels");
  if (auto ks = n.attrInts("kernel_shape"); ks && *ks != Shape{kH, kW})
    return c.error(n, "kernel_shape differs from W's spatial dims " + shapeToString(ws));
  const Shape st = n.attrInts("strides").value_or(Shape{1, 1});
  const Shape dil = n.attrInts("dilations").value_or(Shape{1, 1});
  const Shape pads = n.attrInts("pads").value_or(Shape{0, 0, 0, 0});
  if (st.size() != 2 || dil.size() != 2 || pads.size() != 4 || st[0] <= 0 || st[1] <= 0 ||
      dil[0] <= 0 || dil[1] <= 0 || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0)
    return c.error(n, "strides/dilations need 2 positive entries, pads 4 non-negative ones");
  const int64_t big = int64_t(1) << 20;
  for (int64_t v : {st[0], st[1], dil[0], dil[1], pads[0], pads[1], pads[2], pads[3], kH, kW})
    if (v > big)
      return c.error(n, "strides, dilations, pads and kernel must be below 2^20");
  const int64_t oH = (H + pads[0] + pads[2] - (dil[0] * (kH - 1) + 1)) / st[0] + 1;
  const int64_t oW = (W + pads[1] + pads[3] - (dil[1] * (kW - 1) + 1)) / st[1] + 1;
  const int64_t K = kH * kW, P = oH * oW;
  if (oH <= 0 || oW <= 0)
    return c.error(n, "the kernel is larger than the padded input");
  if (os != Shape{N, G * K * 2, oH, oW})
    return c.error(n, "offset " + shapeToString(os) + " must be " +
                          shapeToString(Shape{N, G * K * 2, oH, oW}) +
                          " (N, offset_group * kH * kW * 2, output dims)");
  if (mask && c.shapeOf(mask) != Shape{N, G * K, oH, oW})
    return c.error(n, "mask " + shapeToString(c.shapeOf(mask)) + " must be " +
                          shapeToString(Shape{N, G * K, oH, oW}));
  if (bias && c.shapeOf(bias) != Shape{oC})
    return c.error(n, "B must be [" + std::to_string(oC) + "]");
  auto total = numElements(Shape{N, C, K, P});
  if (!total || *total > (int64_t(1) << 31))
    return c.error(n, "the sampled taps (N * C * kH * kW * output size) exceed 2^31 elements");
  const Location loc = n.loc;
  auto sc = [&](double v) { return c.splat(loc, v, ft); };

  // Sampling positions [N, G, K, P]: the offsets plus the regular grid.
  const Shape tap{N, G, K, P};
  auto halves = c.emitAll<tg::SplitOp>(
      loc, TypeRange{c.type({N, G, K, 1, P}, ft), c.type({N, G, K, 1, P}, ft)},
      c.reshape(loc, offset, {N, G, K, 2, P}), (uint64_t)3);
  HostTensor gy = HostTensor::zeros(DType::F64, {1, 1, K, P});
  HostTensor gx = HostTensor::zeros(DType::F64, {1, 1, K, P});
  for (int64_t i = 0; i < kH; ++i)
    for (int64_t j = 0; j < kW; ++j)
      for (int64_t a = 0; a < oH; ++a)
        for (int64_t b = 0; b < oW; ++b) {
          const int64_t e = (i * kW + j) * P + a * oW + b;
          gy.set(e, double(a * st[0] - pads[0] + i * dil[0]));
          gx.set(e, double(b * st[1] - pads[1] + j * dil[1]));
        }
  Value py = c.binary<tg::AddOp>(loc, c.reshape(loc, halves[0], tap),
                                 c.cast(loc, c.constant(loc, gy), ft));
  Value px = c.binary<tg::AddOp>(loc, c.reshape(loc, halves[1], tap),
                                 c.cast(loc, c.constant(loc, gx), ft));
  Value y0 = c.unary<tg::FloorOp>(loc, py), x0 = c.unary<tg::FloorOp>(loc, px);
  Value fy = c.binary<tg::SubOp>(loc, py, y0), fx = c.binary<tg::SubOp>(loc, px, x0);
  Value wy[2] = {c.binary<tg::SubOp>(loc, sc(1), fy), fy};
  Value wx[2] = {c.binary<tg::SubOp>(loc, sc(1), fx), fx};
  const Shape flat{N, G, 1, K * P}, gathered{N, G, C / G, K * P};
  Value xg = c.reshape(loc, x, {N, G, C / G, H * W});
  Value sum;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      Value yi = dy ? c.binary<tg::AddOp>(loc, y0, sc(1)) : y0;
      Value xi = dx ? c.binary<tg::AddOp>(loc, x0, sc(1)) : x0;
      auto inside = [&](Value v, int64_t hi) {
        return c.binary<tg::AndOp>(loc, c.binary<tg::GreaterEqualOp>(loc, v, sc(0), true),
                                   c.binary<tg::LessEqualOp>(loc, v, sc(double(hi - 1)), true),
                                   true);
      };
      Value valid = c.binary<tg::AndOp>(loc, inside(yi, H), inside(xi, W), true);
      auto clamp = [&](Value v, int64_t hi) {
        return c.binary<tg::MinOp>(loc, c.binary<tg::MaxOp>(loc, v, sc(0)), sc(double(hi - 1)));
      };
      Value idx = c.binary<tg::AddOp>(
          loc, c.binary<tg::MulOp>(loc, clamp(yi, H), sc(double(W))), clamp(xi, W));
      idx = c.expand(loc, c.reshape(loc, c.cast(loc, idx, c.i64()), flat), gathered);
      Value v = c.emit<tg::GatherElementsOp>(loc, c.type(gathered, ft), xg, idx, (uint64_t)3);
      v = c.emit<tg::WhereOp>(loc, v.getType(), c.reshape(loc, valid, flat), v,
                              c.splat(loc, 0, ft, gathered));
      v = c.binary<tg::MulOp>(
          loc, v, c.reshape(loc, c.binary<tg::MulOp>(loc, wy[dy], wx[dx]), flat));
      sum = sum ? c.binary<tg::AddOp>(loc, sum, v) : v;
    }
  if (mask)
    sum = c.binary<tg::MulOp>(loc, sum, c.reshape(loc, mask, flat));
  // im2col [N, group, C/group * K, P] times W as [group, oC/group, C/group * K].
  const int64_t cg = C / group, og = oC / group;
  Value col = c.reshape(loc, sum, {N, group, cg * K, P});
  Value wm = c.reshape(loc, w, {group, og, cg * K});
  Value y = c.emit<tg::MatmulOp>(loc, c.type({N, group, og, P}, ft), wm, col);
  y = c.reshape(loc, y, {N, oC, oH, oW});
  if (bias)
    y = c.binary<tg::AddOp>(loc, y, c.reshape(loc, bias, {1, oC, 1, 1}));
  return Values{y};
}

constexpr int64_t kMaxDet = 16;

Result importDet(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  const Shape xs = c.shapeOf(x);
  const Type ft = c.elemOf(x);
  if (xs.size() < 2 || xs[xs.size() - 1] != xs[xs.size() - 2])
    return c.error(n, "input " + shapeToString(xs) + " must be [..., M, M] (square matrices)");
  if (!c.isFloat(ft))
    return c.error(n, "input must be a float tensor");
  const int64_t m = xs.back();
  if (m > kMaxDet)
    return c.error(n, "matrices of size " + std::to_string(m) + " are not supported (at most " +
                          std::to_string(kMaxDet) + ": the LU is unrolled)");
  const Shape batchShape(xs.begin(), xs.end() - 2);
  auto bn = numElements(batchShape);
  if (!bn)
    return c.error(n, "input is too large");
  const int64_t B = *bn;
  const Location loc = n.loc;
  if (m == 0)
    return Values{c.splat(loc, 1, ft, batchShape)};
  const Shape as{B, m, m};
  Value a = c.reshape(loc, x, as);
  Value sign = c.splat(loc, 1, ft, {B, 1, 1});
  HostTensor rows = HostTensor::zeros(DType::I64, {1, m, 1});
  for (int64_t i = 0; i < m; ++i)
    rows.as<int64_t>()[i] = i;
  Value rowIdx = c.constant(loc, rows);
  for (int64_t k = 0; k + 1 < m; ++k) {
    // Pivot: the row (>= k) of the largest |a[:, r, k]| (the first of equal ones).
    Value col = slice(c, loc, a, {0, 0, k}, {B, m, 1});
    HostTensor above = HostTensor::zeros(DType::Bool, {1, m, 1});
    HostTensor below = HostTensor::zeros(DType::F64, {1, m, 1});
    for (int64_t i = 0; i < m; ++i) {
      above.set(i, i < k ? 1 : 0);
      below.set(i, i > k ? 1 : 0);
    }
    Value cand = c.emit<tg::WhereOp>(loc, col.getType(), c.constant(loc, above),
                                     c.splat(loc, -1, ft), c.unary<tg::AbsOp>(loc, col));
    Value p = c.emit<tg::ArgMaxOp>(loc, c.type({B, 1, 1}, c.i64()), cand, (uint64_t)1, true,
                                   false);
    Value rowP = c.emit<tg::GatherElementsOp>(loc, c.type({B, 1, m}, ft), a,
                                              c.expand(loc, p, {B, 1, m}), (uint64_t)1);
    Value rowK = slice(c, loc, a, {0, k, 0}, {B, 1, m});
    Value isK = c.binary<tg::EqualOp>(loc, rowIdx, c.constI64(loc, {k}), true);
    Value isP = c.binary<tg::EqualOp>(loc, rowIdx, p, true);
    a = c.emit<tg::WhereOp>(loc, a.getType(), isP, rowK, a);
    a = c.emit<tg::WhereOp>(loc, a.getType(), isK, rowP, a);
    Value swapped = c.binary<tg::EqualOp>(loc, p, c.constI64(loc, {k}), true);
    sign = c.emit<tg::WhereOp>(loc, sign.getType(), swapped, sign,
                               c.unary<tg::NegOp>(loc, sign));
    // Eliminate below the pivot (a zero pivot means a zero column there: nothing to do).
    Value piv = slice(c, loc, a, {0, k, k}, {B, 1, 1});
    Value safe = c.emit<tg::WhereOp>(
        loc, piv.getType(), c.binary<tg::EqualOp>(loc, piv, c.splat(loc, 0, ft), true),
        c.splat(loc, 1, ft), piv);
    Value f = c.binary<tg::DivOp>(loc, slice(c, loc, a, {0, 0, k}, {B, m, 1}), safe);
    f = c.binary<tg::MulOp>(loc, f, c.cast(loc, c.constant(loc, below), ft));
    a = c.binary<tg::SubOp>(
        loc, a, c.binary<tg::MulOp>(loc, f, slice(c, loc, a, {0, k, 0}, {B, 1, m})));
  }
  Value diag = c.emit<tg::SliceOp>(loc, c.type({B, m}, ft), c.reshape(loc, a, {B, m * m}),
                                   c.b.getI64ArrayAttr({0, 0}), c.b.getI64ArrayAttr({1, m + 1}));
  Value det = reduce<tg::ReduceProdOp>(c, loc, diag, {1}, false);
  det = c.binary<tg::MulOp>(loc, det, c.reshape(loc, sign, {B}));
  return Values{c.reshape(loc, det, batchShape)};
}

} // namespace

void registerMiscOps(OpTable &t) {
  t["DeformConv"] = importDeformConv;
  t["Det"] = importDet;
}

} // namespace tgc::onnx_import
