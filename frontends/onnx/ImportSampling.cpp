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
#include <limits>

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

/// Upsample (opsets 7-9, deprecated): Resize with asymmetric coordinates and floor rounding
/// (nearest: each input repeated `scale` times for integer scales; linear), through the Resize
/// importer on a Resize node built from this one. Output dims are floor(dim * scale) as in both.
Result importUpsample(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  if (n.opset < 7)
    return c.error(n, "Upsample before opset 7 is not supported");
  const int64_t r = c.rankOf(x);
  std::vector<double> scales;
  if (n.opset >= 9) {
    TGC_ASSIGN(sv, c.need(n, 1));
    auto v = c.constDoubles(sv);
    if (!v)
      return c.error(n, "scales input must be constant" + c.bindHint(sv));
    scales = *v;
  } else {
    auto v = n.attrFloats("scales");
    if (!v)
      return c.error(n, "the scales attribute is required");
    scales.assign(v->begin(), v->end());
  }
  if ((int64_t)scales.size() != r)
    return c.error(n, "scales has " + std::to_string(scales.size()) + " values for rank " +
                          std::to_string(r));
  for (double s : scales)
    if (!(s >= 1) || s > (double)(int64_t(1) << 31))
      return c.error(n, "scales must be >= 1");
  std::string mode = n.attrString("mode", "nearest");
  if (mode == "bilinear")
    mode = "linear";
  if (mode != "nearest" && mode != "linear")
    return c.error(n, "mode '" + n.attrString("mode", "") + "' is not supported (nearest, linear)");
  onnx::NodeProto resize;
  resize.set_op_type("Resize");
  resize.set_name(n.proto.name());
  auto addString = [&](const char *name, const std::string &v) {
    auto *a = resize.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  };
  addString("mode", mode);
  addString("coordinate_transformation_mode", "asymmetric");
  addString("nearest_mode", "floor");
  HostTensor st = HostTensor::zeros(DType::F32, {r});
  for (int64_t i = 0; i < r; ++i)
    st.as<float>()[i] = (float)scales[(size_t)i];
  NodeView v{resize, n.label, n.loc, {x, Value(), c.constant(n.loc, st)}, n.outputUsed, 13};
  static const OpTable resizeTable = [] {
    OpTable t;
    registerResizeOps(t);
    return t;
  }();
  return resizeTable.at("Resize")(c, v);
}

/// One RoiAlign axis of sample coordinates s [R, S] over an input dim D, as the reference: a
/// sample outside [-1, D] reads nothing (weights 0, index 0); else s = max(s, 0), taps floor(s)
/// and floor(s) + 1 with weights 1 - l, l, both at D - 1 (l = 0) past the last position.
struct RoiAxis {
  Value idx, weight, outside; ///< [R, 2, S] i64, [R, 2, S], [R, S] i1
};
RoiAxis roiAxis(ImportContext &c, Location loc, Value s, int64_t dim) {
  const Type ft = c.elemOf(s);
  const Shape ss = c.shapeOf(s);
  auto sc = [&](double v) { return c.splat(loc, v, ft); };
  RoiAxis a;
  a.outside = c.binary<tg::OrOp>(loc, c.binary<tg::LessOp>(loc, s, sc(-1), true),
                                 c.binary<tg::GreaterOp>(loc, s, sc((double)dim), true), true);
  Value y = c.binary<tg::MaxOp>(loc, s, sc(0));
  Value low = c.unary<tg::FloorOp>(loc, y);
  Value atEnd = c.binary<tg::GreaterEqualOp>(loc, low, sc((double)dim - 1), true);
  Value last = c.splat(loc, (double)dim - 1, ft, ss);
  low = c.emit<tg::WhereOp>(loc, low.getType(), atEnd, last, low);
  y = c.emit<tg::WhereOp>(loc, y.getType(), atEnd, last, y);
  Value high =
      c.emit<tg::WhereOp>(loc, low.getType(), atEnd, last, c.binary<tg::AddOp>(loc, low, sc(1)));
  Value l = c.binary<tg::SubOp>(loc, y, low);
  const Shape s1{ss[0], 1, ss[1]}, s2{ss[0], 2, ss[1]};
  auto pair = [&](Value p, Value q) {
    return c.emit<tg::ConcatOp>(
        loc, c.type(s2, ft), ValueRange{c.reshape(loc, p, s1), c.reshape(loc, q, s1)}, (uint64_t)1);
  };
  a.idx = c.cast(loc, clampTo(c, loc, pair(low, high), 0, (double)dim - 1), c.i64());
  a.weight = pair(c.binary<tg::SubOp>(loc, sc(1), l), l);
  return a;
}

/// RoiAlign (opsets 10, 16+): per roi, output bin and sample (sampling_ratio per bin axis), the
/// four bilinear taps as the reference computes them, read by one tg.gather over X as
/// [N * H * W, C] (row = batch_index * H * W + position) and averaged (or the max of the
/// weighted taps, as the reference's max mode). Cost: the gathered taps [R, 4, PH, g, PW, g, C]
/// are materialized unless fused; a native kernel belongs to the speed work.
Result importRoiAlign(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(rois, c.need(n, 1));
  TGC_ASSIGN(bidx, c.need(n, 2));
  const Shape xs = c.shapeOf(x), rs = c.shapeOf(rois), bs = c.shapeOf(bidx);
  if (xs.size() != 4)
    return c.error(n, "input " + shapeToString(xs) + " must be 4-D (N, C, H, W)");
  if (rs.size() != 2 || rs[1] != 4 || bs != Shape{rs[0]})
    return c.error(n, "rois " + shapeToString(rs) + " must be [R, 4] and batch_indices " +
                          shapeToString(bs) + " [R]");
  if (!c.isFloat(c.elemOf(x)) || c.elemOf(rois) != c.elemOf(x))
    return c.error(n, "input and rois must be float tensors of one type");
  if (!c.elemOf(bidx).isSignlessInteger() || c.elemOf(bidx).isInteger(1))
    return c.error(n, "batch_indices must be an integer tensor");
  const std::string mode = n.attrString("mode", "avg");
  if (mode != "avg" && mode != "max")
    return c.error(n, "mode '" + mode + "' is not supported (avg, max)");
  const std::string ctm = n.attrString("coordinate_transformation_mode",
                                       n.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return c.error(n, "coordinate_transformation_mode '" + ctm +
                          "' is not supported (half_pixel, output_half_pixel)");
  const int64_t ph = n.attrInt("output_height", 1), pw = n.attrInt("output_width", 1);
  const int64_t g = n.attrInt("sampling_ratio", 0);
  const double scale = n.attrFloat("spatial_scale", 1.0f);
  if (ph <= 0 || pw <= 0 || ph > 4096 || pw > 4096)
    return c.error(n, "output_height and output_width must lie in [1, 4096]");
  if (g <= 0 || g > 64)
    return c.error(n, "sampling_ratio " + std::to_string(g) +
                          " is not supported: give 1 to 64 (0, adaptive, makes the sample "
                          "count depend on the roi values)");
  for (int64_t d : xs)
    if (d <= 0)
      return c.error(n, "input " + shapeToString(xs) + " has an empty dim");
  const bool half = ctm == "half_pixel";
  const Location loc = n.loc;
  const Type ft = c.elemOf(x);
  const int64_t R = rs[0], N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  auto sc = [&](double v) { return c.splat(loc, v, ft); };
  auto col = [&](int64_t k) { // rois[:, k] * scale - offset, [R, 1]
    Value v = c.emit<tg::SliceOp>(loc, c.type({R, 1}, ft), rois, c.b.getI64ArrayAttr({0, k}),
                                  c.b.getI64ArrayAttr({1, 1}));
    v = c.binary<tg::MulOp>(loc, v, sc(scale));
    return half ? c.binary<tg::SubOp>(loc, v, sc(0.5)) : v;
  };
  // Sample coordinates [R, P * g]: start + p * bin + (i + 0.5) * bin / g.
  auto samples = [&](Value start, Value end, int64_t pooled) {
    Value size = c.binary<tg::SubOp>(loc, end, start);
    if (!half)
      size = c.binary<tg::MaxOp>(loc, size, sc(1));
    Value bin = c.binary<tg::DivOp>(loc, size, sc((double)pooled));
    HostTensor pos = HostTensor::zeros(DType::F64, {1, pooled * g});
    HostTensor sub = HostTensor::zeros(DType::F64, {1, pooled * g});
    for (int64_t p = 0; p < pooled; ++p)
      for (int64_t i = 0; i < g; ++i) {
        pos.as<double>()[p * g + i] = (double)p;
        sub.as<double>()[p * g + i] = (i + 0.5) / (double)g;
      }
    Value a = c.binary<tg::MulOp>(loc, c.cast(loc, c.constant(loc, pos), ft), bin);
    Value b = c.binary<tg::MulOp>(loc, c.cast(loc, c.constant(loc, sub), ft), bin);
    return c.binary<tg::AddOp>(loc, c.binary<tg::AddOp>(loc, start, a), b);
  };
  RoiAxis ay = roiAxis(c, loc, samples(col(1), col(3), ph), H);
  RoiAxis ax = roiAxis(c, loc, samples(col(0), col(2), pw), W);
  // [R, ty, tx, PH, g, PW, g]
  const Shape yShape{R, 2, 1, ph, g, 1, 1}, xShape{R, 1, 2, 1, 1, pw, g};
  const Shape full{R, 2, 2, ph, g, pw, g}, flat{R, 4, ph, g, pw, g};
  Value pos = c.binary<tg::AddOp>(
      loc,
      c.binary<tg::MulOp>(loc, c.reshape(loc, ay.idx, yShape), c.splat(loc, (double)W, c.i64())),
      c.reshape(loc, ax.idx, xShape));
  Value w = c.binary<tg::MulOp>(loc, c.reshape(loc, ay.weight, yShape),
                                c.reshape(loc, ax.weight, xShape));
  Value out = c.binary<tg::OrOp>(loc, c.reshape(loc, ay.outside, {R, 1, 1, ph, g, 1, 1}),
                                 c.reshape(loc, ax.outside, {R, 1, 1, 1, 1, pw, g}), true);
  pos = c.emit<tg::WhereOp>(loc, c.type(full, c.i64()), out, c.splat(loc, 0, c.i64()), pos);
  w = c.emit<tg::WhereOp>(loc, c.type(full, ft), out, sc(0), w);
  Value b = c.binary<tg::MaxOp>(
      loc,
      c.binary<tg::MinOp>(loc, c.cast(loc, bidx, c.i64()), c.splat(loc, (double)N - 1, c.i64())),
      c.splat(loc, 0, c.i64()));
  b = c.binary<tg::MulOp>(loc, c.reshape(loc, b, {R, 1, 1, 1, 1, 1}),
                          c.splat(loc, (double)(H * W), c.i64()));
  Value rows = c.binary<tg::AddOp>(loc, c.reshape(loc, pos, flat), b);
  Value table = c.reshape(loc, c.transpose(loc, x, {0, 2, 3, 1}), {N * H * W, C});
  Shape gs = flat;
  gs.push_back(C);
  Value v = c.emit<tg::GatherOp>(loc, c.type(gs, ft), table, rows, (uint64_t)0);
  Shape ws = flat;
  ws.push_back(1);
  v = c.binary<tg::MulOp>(loc, v, c.reshape(loc, w, ws));
  const Shape rshape{R, ph, pw, C};
  Value y;
  if (mode == "avg") {
    y = c.emit<tg::ReduceSumOp>(loc, c.type(rshape, ft), v, c.b.getI64ArrayAttr({1, 3, 5}), false);
    y = c.binary<tg::DivOp>(loc, y, sc((double)(g * g)));
  } else {
    y = c.emit<tg::ReduceMaxOp>(loc, c.type(rshape, ft), v, c.b.getI64ArrayAttr({1, 3, 5}), false);
  }
  return Values{c.transpose(loc, y, {0, 3, 1, 2})};
}

/// MaxUnpool: zeros of the unpooled shape (from kernel_shape/strides/pads) with X scattered to
/// the flat indices I (into that whole shape, N and C included, as MaxPool's Indices): one
/// tg.scatter_elements over it seen as [1, total]; an index outside writes nothing. A larger
/// constant output_shape pads the end with zeros, as the ONNX reference does.
Result importMaxUnpool(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(idx, c.need(n, 1));
  const Shape xs = c.shapeOf(x);
  if (xs.size() < 3)
    return c.error(n, "input " + shapeToString(xs) + " must have rank >= 3 (N, C, spatial...)");
  if (c.shapeOf(idx) != xs)
    return c.error(n, "indices " + shapeToString(c.shapeOf(idx)) + " must have the input's shape " +
                          shapeToString(xs));
  if (!c.elemOf(idx).isSignlessInteger() || c.elemOf(idx).isInteger(1))
    return c.error(n, "indices must be an integer tensor");
  const size_t sp = xs.size() - 2;
  auto kernel = n.attrInts("kernel_shape");
  const Shape strides = n.attrInts("strides").value_or(Shape(sp, 1));
  const Shape pads = n.attrInts("pads").value_or(Shape(2 * sp, 0));
  if (!kernel || kernel->size() != sp || strides.size() != sp || pads.size() != 2 * sp)
    return c.error(n, "kernel_shape and strides need one entry per spatial dim, pads two");
  const int64_t big = int64_t(1) << 31;
  Shape out{xs[0], xs[1]};
  for (size_t i = 0; i < sp; ++i) {
    if ((*kernel)[i] <= 0 || strides[i] <= 0 || pads[i] < 0 || pads[i + sp] < 0 ||
        (*kernel)[i] > big || strides[i] > big || pads[i] > big || pads[i + sp] > big ||
        xs[i + 2] > big)
      return c.error(n, "kernel_shape and strides must be positive, pads non-negative (and all "
                        "below 2^31)");
    out.push_back((xs[i + 2] - 1) * strides[i] + (*kernel)[i] - pads[i] - pads[i + sp]);
  }
  Shape full = out;
  if (n.input(2)) {
    TGC_ASSIGN(given, c.requireInts(n, 2, "output_shape"));
    if (given.size() != xs.size() || given[0] != xs[0] || given[1] != xs[1])
      return c.error(n, "output_shape " + shapeToString(given) +
                            " must be [N, C, spatial...] for input " + shapeToString(xs));
    for (size_t i = 0; i < sp; ++i)
      if (given[i + 2] < out[i + 2] || given[i + 2] > big)
        return c.error(n, "output_shape " + shapeToString(given) +
                              " is smaller than the unpooled shape " + shapeToString(out));
    full = given;
  }
  for (int64_t d : out)
    if (d <= 0)
      return c.error(n, "the output shape " + shapeToString(out) + " is empty");
  int64_t total = 1, m = 1;
  for (int64_t d : out)
    total *= d;
  for (int64_t d : xs)
    m *= d;
  if (total > (int64_t(1) << 40))
    return c.error(n, "the output shape " + shapeToString(out) + " is too large");
  const Location loc = n.loc;
  const Type elem = c.elemOf(x);
  // The zeros as a pad of X cropped to nothing: computed by a fill kernel, where a splat constant
  // would be materialized in the weights (the scatter is no elementwise reader).
  Value flatX = c.reshape(loc, x, {1, m});
  Value zeros = c.emit<tg::PadOp>(loc, c.type({1, total}, elem), flatX,
                                  c.b.getI64ArrayAttr({0, -m, 0, total}), c.b.getF64FloatAttr(0.0));
  Value y = c.emit<tg::ScatterElementsOp>(
      loc, zeros.getType(), zeros, c.reshape(loc, c.cast(loc, idx, c.i64()), {1, m}),
      c.reshape(loc, x, {1, m}), (uint64_t)1, c.b.getStringAttr("none"));
  y = c.reshape(loc, y, out);
  if (full == out)
    return Values{y};
  std::vector<int64_t> extra(2 * out.size(), 0);
  for (size_t i = 0; i < out.size(); ++i)
    extra[out.size() + i] = full[i] - out[i];
  return Values{c.emit<tg::PadOp>(loc, c.type(full, elem), y, c.b.getI64ArrayAttr(extra),
                                  c.b.getF64FloatAttr(0.0))};
}

/// MaxRoiPool (Fast R-CNN's RoI max pooling), as ONNX Runtime computes it (ONNX has no
/// reference): per roi [batch, x1, y1, x2, y2], corners scaled by spatial_scale and rounded
/// half away from zero, an extent of at least 1, bins of extent/pooled size, bin b covering
/// [floor(b*size), ceil((b+1)*size)) shifted by the roi's start and clamped to the input; the
/// max over each bin, 0 for an empty bin. The rois may be a graph input: bins become masks over
/// the input's rows and columns, reduced separably (over w per output column, then over h).
Result importMaxRoiPool(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(rois, c.need(n, 1));
  const Shape xs = c.shapeOf(x), rs = c.shapeOf(rois);
  const Type elem = c.elemOf(x);
  if (!c.isFloat(elem) || c.elemOf(rois) != elem)
    return c.error(n, "X and rois must be float tensors of one type");
  if (xs.size() != 4 || rs.size() != 2 || rs[1] != 5)
    return c.error(n, "X " + shapeToString(xs) + " must be [N, C, H, W] and rois " +
                          shapeToString(rs) + " [num_rois, 5]");
  auto pooled = n.attrInts("pooled_shape");
  if (!pooled || pooled->size() != 2 || (*pooled)[0] < 1 || (*pooled)[1] < 1)
    return c.error(n, "pooled_shape must be two positive ints");
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], R = rs[0];
  const int64_t PH = (*pooled)[0], PW = (*pooled)[1];
  const double scale = n.attrFloat("spatial_scale", 1.0f);
  constexpr int64_t kMaxElements = int64_t(1) << 28;
  if (R * C * H * PW * W > kMaxElements || R * C * PH * PW * H > kMaxElements)
    return c.error(n, "rois x channels x the input's area is too large for the masked max this "
                      "lowers to (more than 2^28 elements)");
  Location loc = n.loc;
  // Coordinates in float (f64 for f64 inputs), like the runtime it follows.
  const Type ct = elem.isF64() ? elem : c.b.getF32Type();
  auto k = [&](double v) { return c.splat(loc, v, ct); };
  auto col = [&](int64_t j) {
    Value v = c.emit<tg::SliceOp>(loc, c.type({R, 1}, elem), rois,
                                  c.b.getI64ArrayAttr({0, j}), c.b.getI64ArrayAttr({1, 1}));
    return c.cast(loc, v, ct);
  };
  auto roundAway = [&](Value v) { // std::round: half away from zero
    Value up = c.unary<tg::FloorOp>(loc, c.binary<tg::AddOp>(loc, v, k(0.5)));
    Value down = c.unary<tg::NegOp>(
        loc, c.unary<tg::FloorOp>(loc, c.binary<tg::AddOp>(loc, c.unary<tg::NegOp>(loc, v), k(0.5))));
    return c.emit<tg::WhereOp>(loc, v.getType(), c.binary<tg::LessOp>(loc, v, k(0), true), down, up);
  };
  auto scaled = [&](int64_t j) { return roundAway(c.binary<tg::MulOp>(loc, col(j), k(scale))); };
  Value sw = scaled(1), sh = scaled(2), ew = scaled(3), eh = scaled(4);
  auto extent = [&](Value start, Value end) {
    return c.binary<tg::MaxOp>(loc, c.binary<tg::AddOp>(loc, c.binary<tg::SubOp>(loc, end, start), k(1)),
                               k(1));
  };
  // Per roi and bin: [start, end) along one axis, clamped to [0, dim].
  auto bins = [&](Value start, Value size, int64_t count, int64_t dim) {
    HostTensor t = HostTensor::zeros(elem.isF64() ? DType::F64 : DType::F32, {1, count});
    for (int64_t b = 0; b < count; ++b)
      t.set(b, (double)b);
    Value b = c.constant(loc, t);
    auto clampDim = [&](Value v) {
      return c.binary<tg::MinOp>(loc, c.binary<tg::MaxOp>(loc, v, k(0)), k((double)dim));
    };
    Value lo = clampDim(c.binary<tg::AddOp>(
        loc, c.unary<tg::FloorOp>(loc, c.binary<tg::MulOp>(loc, b, size)), start));
    Value hi = clampDim(c.binary<tg::AddOp>(
        loc, c.unary<tg::CeilOp>(loc, c.binary<tg::MulOp>(loc, c.binary<tg::AddOp>(loc, b, k(1)), size)),
        start));
    return std::make_pair(lo, hi); // [R, count]
  };
  Value bh = c.binary<tg::DivOp>(loc, extent(sh, eh), k((double)PH));
  Value bw = c.binary<tg::DivOp>(loc, extent(sw, ew), k((double)PW));
  auto [hs, he] = bins(sh, bh, PH, H);
  auto [ws, we] = bins(sw, bw, PW, W);
  // Masks: position p lies in bin b when start <= p < end.
  auto inBin = [&](Value lo, Value hi, int64_t count, int64_t dim) {
    HostTensor t = HostTensor::zeros(elem.isF64() ? DType::F64 : DType::F32, {1, 1, dim});
    for (int64_t i = 0; i < dim; ++i)
      t.set(i, (double)i);
    Value p = c.constant(loc, t);
    Value l = c.reshape(loc, lo, {R, count, 1}), h = c.reshape(loc, hi, {R, count, 1});
    return c.binary<tg::AndOp>(loc, c.binary<tg::GreaterEqualOp>(loc, p, l, true),
                               c.binary<tg::LessOp>(loc, p, h, true)); // [R, count, dim]
  };
  Value inH = inBin(hs, he, PH, H), inW = inBin(ws, we, PW, W);
  // Each roi's image (its batch index clamped into [0, N-1]).
  Value bidx = c.cast(loc, c.reshape(loc, col(0), {R}), c.i64());
  bidx = c.binary<tg::MinOp>(loc, c.binary<tg::MaxOp>(loc, bidx, c.splat(loc, 0, c.i64())),
                             c.splat(loc, (double)(N - 1), c.i64()));
  Value xr = c.emit<tg::GatherOp>(loc, c.type({R, C, H, W}, elem), x, bidx, (uint64_t)0);
  Value lowest = c.splat(loc, -std::numeric_limits<double>::infinity(), elem);
  auto reduceMax = [&](Value v, int64_t axis) {
    Shape s = c.shapeOf(v);
    s.erase(s.begin() + axis);
    return c.emit<tg::ReduceMaxOp>(loc, c.type(s, elem), v, c.b.getI64ArrayAttr({axis}), false);
  };
  Value t = c.emit<tg::WhereOp>(loc, c.type({R, C, H, PW, W}, elem),
                                c.reshape(loc, inW, {R, 1, 1, PW, W}),
                                c.reshape(loc, xr, {R, C, H, 1, W}), lowest);
  Value mw = reduceMax(t, 4); // [R, C, H, PW]
  t = c.emit<tg::WhereOp>(loc, c.type({R, C, PH, H, PW}, elem),
                          c.reshape(loc, inH, {R, 1, PH, H, 1}),
                          c.reshape(loc, mw, {R, C, 1, H, PW}), lowest);
  Value m = reduceMax(t, 3); // [R, C, PH, PW]
  Value empty = c.binary<tg::OrOp>(
      loc, c.reshape(loc, c.binary<tg::LessEqualOp>(loc, he, hs, true), {R, 1, PH, 1}),
      c.reshape(loc, c.binary<tg::LessEqualOp>(loc, we, ws, true), {R, 1, 1, PW}));
  return Values{c.emit<tg::WhereOp>(loc, m.getType(), empty, c.splat(loc, 0, elem), m)};
}

} // namespace

void registerSamplingOps(OpTable &t) {
  t["GridSample"] = importGridSample;
  t["AffineGrid"] = importAffineGrid;
  t["Upsample"] = importUpsample;
  t["RoiAlign"] = importRoiAlign;
  t["MaxRoiPool"] = importMaxRoiPool;
  t["MaxUnpool"] = importMaxUnpool;
}

} // namespace tgc::onnx_import
