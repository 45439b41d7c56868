// ImportSampling.cpp — ONNX GridSample (opset 16: 4-D; opset 20+: N-D) and AffineGrid
// (opset 20, 2-D and 3-D) by decomposition into ops tg already has, so both backends run them
// without a new op.
//
// GridSample, per spatial axis k of X (grid component sp-1-k): the normalized coordinate is
// un-normalized (align_corners or not), rounded (nearest), clamped or reflected into the border
// (border/reflection padding, only when it lies outside it, as the reference does), then split
// into taps floor(x) + {0} / {0, 1} / {-1, 0, 1, 2} with their 1-D weights (linear; Keys cubic,
// a = -0.75). Each tap's index is clamped (border), reflected (reflection) or clamped with a
// validity mask (zeros). The taps of all axes broadcast into one flat index per output element
// and tap, [N, T, P]: one tg.gather_elements over X as [N, C, S] reads them all, tg.where zeroes
// the invalid ones (zeros padding: a where, not a multiply, so an inf elsewhere stays out), and
// the weighted taps are summed. The indices are always clamped in range before the gather.
//
// AffineGrid: a constant base grid [D*H*W, sp + 1] of normalized (x, y[, z], 1) times thetaᵀ.
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"

#include <cmath>

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

int64_t product(const Shape &s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= s[i];
  return p;
}

/// The reference's reflection of x into [lo, hi]: by the near border, over and over.
Value reflect(ImportContext &c, Location loc, Value x, double lo, double hi) {
  const Type ft = c.elemOf(x);
  const double rng = hi - lo;
  if (rng <= 0) // a single position (align_corners, size 1)
    return c.splat(loc, lo, ft, c.shapeOf(x));
  Value vlo = c.splat(loc, lo, ft), vhi = c.splat(loc, hi, ft);
  Value below = c.binary<tg::LessOp>(loc, x, vlo, true);
  Value above = c.binary<tg::GreaterOp>(loc, x, vhi, true);
  Value dx = c.emit<tg::WhereOp>(loc, x.getType(), below, c.binary<tg::SubOp>(loc, vlo, x),
                                 c.binary<tg::SubOp>(loc, x, vhi));
  Value vr = c.splat(loc, rng, ft);
  Value k = c.unary<tg::FloorOp>(loc, c.binary<tg::DivOp>(loc, dx, vr));
  Value r = c.binary<tg::SubOp>(loc, dx, c.binary<tg::MulOp>(loc, k, vr));
  Value odd = c.binary<tg::EqualOp>(loc, c.binary<tg::ModOp>(loc, k, c.splat(loc, 2, ft)),
                                    c.splat(loc, 1, ft), true);
  // below & even, above & odd: lo + r; otherwise hi - r.
  Value fromHi = c.binary<tg::XorOp>(loc, odd, above, true);
  Value refl = c.emit<tg::WhereOp>(loc, x.getType(), fromHi, c.binary<tg::SubOp>(loc, vhi, r),
                                   c.binary<tg::AddOp>(loc, vlo, r));
  Value out = c.binary<tg::OrOp>(loc, below, above, true);
  return c.emit<tg::WhereOp>(loc, x.getType(), out, refl, x);
}

Value clampTo(ImportContext &c, Location loc, Value x, double lo, double hi) {
  const Type ft = c.elemOf(x);
  return c.binary<tg::MinOp>(loc, c.binary<tg::MaxOp>(loc, x, c.splat(loc, lo, ft)),
                             c.splat(loc, hi, ft));
}

/// The taps of one axis: flat-index contribution (i64), weight (or null for nearest) and
/// validity (zeros padding; else null), each [N, T_k, P].
struct Taps {
  Value index, weight, valid;
  int64_t count = 1;
};

Taps axisTaps(ImportContext &c, Location loc, Value coord, int64_t dim, const std::string &mode,
              const std::string &padding, bool align) {
  const Type ft = c.elemOf(coord);
  Shape cs = c.shapeOf(coord); // [N, 1, P]
  auto sc = [&](double v) { return c.splat(loc, v, ft); };
  // Un-normalize as the reference does.
  Value one = sc(1);
  // align_corners: (g + 1) / 2 * (dim - 1); else ((g + 1) * dim - 1) / 2.
  Value g1 = c.binary<tg::AddOp>(loc, coord, one);
  Value x =
      align ? c.binary<tg::MulOp>(loc, c.binary<tg::DivOp>(loc, g1, sc(2)), sc((double)(dim - 1)))
            : c.binary<tg::DivOp>(
                  loc, c.binary<tg::SubOp>(loc, c.binary<tg::MulOp>(loc, g1, sc((double)dim)), one),
                  sc(2));
  if (mode == "nearest")
    x = c.unary<tg::RoundOp>(loc, x); // half to even, as np.rint
  const double lo = align ? 0 : -0.5, hi = align ? (double)dim - 1 : (double)dim - 0.5;
  if (padding == "border") {
    Value out = c.binary<tg::OrOp>(loc, c.binary<tg::LessOp>(loc, x, sc(lo), true),
                                   c.binary<tg::GreaterOp>(loc, x, sc(hi), true), true);
    x = c.emit<tg::WhereOp>(loc, x.getType(), out, clampTo(c, loc, x, 0, (double)dim - 1), x);
  } else if (padding == "reflection") {
    x = reflect(c, loc, x, lo, hi);
  }
  Taps t;
  Value base = x, frac;
  std::vector<double> offs{0};
  if (mode != "nearest") {
    base = c.unary<tg::FloorOp>(loc, x);
    frac = c.binary<tg::SubOp>(loc, x, base);
    offs = mode == "linear" ? std::vector<double>{0, 1} : std::vector<double>{-1, 0, 1, 2};
  }
  t.count = (int64_t)offs.size();
  Shape ts{cs[0], t.count, cs[2]};
  Value pos = base;
  if (t.count > 1) {
    HostTensor o = HostTensor::zeros(DType::F64, {1, t.count, 1});
    for (int64_t k = 0; k < t.count; ++k)
      o.as<double>()[k] = offs[k];
    pos = c.binary<tg::AddOp>(loc, base, c.cast(loc, c.constant(loc, o), ft));
  }
  Value idx = pos;
  if (padding == "zeros") {
    t.valid =
        c.binary<tg::AndOp>(loc, c.binary<tg::GreaterEqualOp>(loc, pos, sc(0), true),
                            c.binary<tg::LessEqualOp>(loc, pos, sc((double)dim - 1), true), true);
  } else if (padding == "reflection") {
    idx = reflect(c, loc, pos, lo, hi);
  }
  // Truncate toward zero (the reference's int()), then clamp: every index stays in range.
  idx = clampTo(c, loc, c.cast(loc, c.cast(loc, idx, c.i64()), ft), 0, (double)dim - 1);
  t.index = c.cast(loc, idx, c.i64());
  if (mode == "linear") {
    t.weight = c.emit<tg::ConcatOp>(
        loc, c.type(ts, ft), ValueRange{c.binary<tg::SubOp>(loc, one, frac), frac}, (uint64_t)1);
  } else if (mode == "cubic") {
    const double a = -0.75;
    // Keys' kernel: |s| <= 1: ((a+2)s - (a+3))s² + 1; 1 < |s| < 2: ((a s - 5a)s + 8a)s - 4a.
    auto outer = [&](Value s) {
      Value p = c.binary<tg::SubOp>(loc, c.binary<tg::MulOp>(loc, s, sc(a)), sc(5 * a));
      p = c.binary<tg::AddOp>(loc, c.binary<tg::MulOp>(loc, p, s), sc(8 * a));
      return c.binary<tg::SubOp>(loc, c.binary<tg::MulOp>(loc, p, s), sc(4 * a));
    };
    auto inner = [&](Value s) {
      Value p = c.binary<tg::SubOp>(loc, c.binary<tg::MulOp>(loc, s, sc(a + 2)), sc(a + 3));
      return c.binary<tg::AddOp>(loc, c.binary<tg::MulOp>(loc, c.binary<tg::MulOp>(loc, p, s), s),
                                 one);
    };
    Value w0 = outer(c.binary<tg::AddOp>(loc, frac, one));
    Value w1 = inner(frac);
    Value w2 = inner(c.binary<tg::SubOp>(loc, one, frac));
    Value w3 = outer(c.binary<tg::SubOp>(loc, sc(2), frac));
    t.weight = c.emit<tg::ConcatOp>(loc, c.type(ts, ft), ValueRange{w0, w1, w2, w3}, (uint64_t)1);
  }
  return t;
}

Result importGridSample(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(grid, c.need(n, 1));
  const Shape xs = c.shapeOf(x), gs = c.shapeOf(grid);
  const size_t r = xs.size();
  if (n.opset < 20 && r != 4)
    return c.error(n, "input " + shapeToString(xs) +
                          " must be 4-D (N, C, H, W) before opset 20 (the model imports opset " +
                          std::to_string(n.opset) + ")");
  if (r < 3 || r > 5)
    return c.error(n, "input " + shapeToString(xs) + " must have rank 3 to 5 (1-D to 3-D)");
  if (gs.size() != r || gs[0] != xs[0] || gs[r - 1] != (int64_t)r - 2)
    return c.error(n, "grid " + shapeToString(gs) + " must be [N, spatial..., " +
                          std::to_string(r - 2) + "] for input " + shapeToString(xs));
  if (!c.isFloat(c.elemOf(x)) || !c.isFloat(c.elemOf(grid)))
    return c.error(n, "input and grid must be float tensors");
  std::string mode = n.attrString("mode", n.opset >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear")
    mode = "linear";
  else if (mode == "bicubic")
    mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    return c.error(n, "mode '" + n.attrString("mode", "") +
                          "' is not supported (bilinear/linear, nearest, bicubic/cubic)");
  const std::string padding = n.attrString("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return c.error(n,
                   "padding_mode '" + padding + "' is not supported (zeros, border, reflection)");
  const bool align = n.attrInt("align_corners", 0) != 0;
  for (int64_t d : xs)
    if (d <= 0)
      return c.error(n, "input " + shapeToString(xs) + " has an empty dim");

  const Location loc = n.loc;
  const size_t sp = r - 2;
  const int64_t N = xs[0], C = xs[1], P = product(gs, 1, r - 1), S = product(xs, 2, r);
  const Type xt = c.elemOf(x), ft = c.elemOf(grid);
  Value g2 = c.reshape(loc, grid, {N, P, (int64_t)sp});
  std::vector<Taps> taps;
  int64_t T = 1;
  for (size_t k = 0; k < sp; ++k) {
    const int64_t comp = (int64_t)(sp - 1 - k);
    Value coord =
        c.emit<tg::SliceOp>(loc, c.type({N, P, 1}, ft), g2, c.b.getI64ArrayAttr({0, 0, comp}),
                            c.b.getI64ArrayAttr({1, 1, 1}));
    coord = c.reshape(loc, coord, {N, 1, P});
    taps.push_back(axisTaps(c, loc, coord, xs[k + 2], mode, padding, align));
    T *= taps.back().count;
  }
  // Broadcast the axes' taps into [N, T_0, ..., T_{sp-1}, P].
  Value lin, weight, valid;
  for (size_t k = 0; k < sp; ++k) {
    Shape bs(sp + 2, 1);
    bs[0] = N, bs[k + 1] = taps[k].count, bs[sp + 1] = P;
    const int64_t stride = product(xs, k + 3, r);
    Value idx = c.reshape(loc, taps[k].index, bs);
    if (stride != 1)
      idx = c.binary<tg::MulOp>(loc, idx, c.splat(loc, (double)stride, c.i64()));
    lin = lin ? c.binary<tg::AddOp>(loc, lin, idx) : idx;
    if (taps[k].weight) {
      Value w = c.reshape(loc, taps[k].weight, bs);
      weight = weight ? c.binary<tg::MulOp>(loc, weight, w) : w;
    }
    if (taps[k].valid) {
      Value v = c.reshape(loc, taps[k].valid, bs);
      valid = valid ? c.binary<tg::AndOp>(loc, valid, v, true) : v;
    }
  }
  Shape tapShape{N}; // [N, T_0, ..., T_{sp-1}, P]
  for (auto &t : taps)
    tapShape.push_back(t.count);
  tapShape.push_back(P);
  lin = c.expand(loc, c.reshape(loc, c.expand(loc, lin, tapShape), {N, 1, T * P}), {N, C, T * P});
  Value data = c.reshape(loc, x, {N, C, S});
  Value y = c.emit<tg::GatherElementsOp>(loc, c.type({N, C, T * P}, xt), data, lin, (uint64_t)2);
  y = c.reshape(loc, y, {N, C, T, P});
  if (valid) {
    valid = c.reshape(loc, c.expand(loc, valid, tapShape), {N, 1, T, P});
    y = c.emit<tg::WhereOp>(loc, y.getType(), valid, y, c.splat(loc, 0, xt));
  }
  if (weight) {
    weight = c.reshape(loc, c.expand(loc, weight, tapShape), {N, 1, T, P});
    y = c.binary<tg::MulOp>(loc, y, c.cast(loc, weight, xt));
  }
  y = c.emit<tg::ReduceSumOp>(loc, c.type({N, C, P}, xt), y, c.b.getI64ArrayAttr({2}), false);
  Shape os{N, C};
  os.insert(os.end(), gs.begin() + 1, gs.end() - 1);
  return Values{c.reshape(loc, y, os)};
}

Result importAffineGrid(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(theta, c.need(n, 0));
  TGC_ASSIGN(size, c.requireInts(n, 1, "size"));
  const Shape ts = c.shapeOf(theta);
  if (size.size() != 4 && size.size() != 5)
    return c.error(n, "size must hold 4 (N, C, H, W) or 5 (N, C, D, H, W) values; got " +
                          std::to_string(size.size()));
  const int64_t sp = (int64_t)size.size() - 2;
  if (ts.size() != 3 || ts[0] != size[0] || ts[1] != sp || ts[2] != sp + 1)
    return c.error(n, "theta " + shapeToString(ts) + " must be [N, " + std::to_string(sp) + ", " +
                          std::to_string(sp + 1) + "] for size " + shapeToString(size));
  if (!c.isFloat(c.elemOf(theta)))
    return c.error(n, "theta must be a float tensor");
  const int64_t big = int64_t(1) << 31;
  for (int64_t d : size)
    if (d <= 0 || d > big)
      return c.error(n, "size " + shapeToString(size) + " must be positive (and below 2^31)");
  const bool align = n.attrInt("align_corners", 0) != 0;
  const Shape dims(size.begin() + 2, size.end()); // [D,] H, W
  const int64_t P = product(dims, 0, dims.size());
  if (P * (sp + 1) > (int64_t(1) << 28))
    return c.error(n, "size " + shapeToString(size) + " is too large for a constant grid");
  // Base grid [P, sp + 1]: (x, y[, z], 1), x along the last dim.
  std::vector<std::vector<double>> axis(sp);
  for (int64_t k = 0; k < sp; ++k) {
    const int64_t d = dims[k];
    for (int64_t i = 0; i < d; ++i)
      axis[k].push_back(align ? (d == 1 ? -1.0 : -1.0 + i * (2.0 / (d - 1)))
                              : -1.0 + 1.0 / d + i * (2.0 / d));
  }
  HostTensor base = HostTensor::zeros(DType::F64, {P, sp + 1});
  for (int64_t p = 0; p < P; ++p) {
    int64_t rem = p;
    for (int64_t k = sp - 1; k >= 0; --k) {
      base.as<double>()[p * (sp + 1) + (sp - 1 - k)] = axis[k][rem % dims[k]];
      rem /= dims[k];
    }
    base.as<double>()[p * (sp + 1) + sp] = 1.0;
  }
  const Location loc = n.loc;
  const Type ft = c.elemOf(theta);
  Value b = c.cast(loc, c.constant(loc, base), ft);
  Value tt = c.transpose(loc, theta, {0, 2, 1}); // [N, sp + 1, sp]
  Value g = c.emit<tg::MatmulOp>(loc, c.type({ts[0], P, sp}, ft), b, tt);
  Shape os{ts[0]};
  os.insert(os.end(), dims.begin(), dims.end());
  os.push_back(sp);
  return Values{c.reshape(loc, g, os)};
}

} // namespace

void registerSamplingOps(OpTable &t) {
  t["GridSample"] = importGridSample;
  t["AffineGrid"] = importAffineGrid;
}

} // namespace tgc::onnx_import
