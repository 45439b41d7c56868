// ImportResize.cpp — Resize (opset 11+) as separable interpolation: along each resized axis, the
// output is a weighted sum of n taps of the input (n = 1 nearest, 2 linear, 4 cubic), whose
// indices and weights the importer computes at compile time with the ONNX reference's arithmetic
// (onnx/reference/ops/op_resize.py: coordinate transformation, neighbours of an edge-padded
// input, coefficients, exclude_outside, tf_crop_and_resize's extrapolation). Each tap is a
// tg.gather with constant indices times a constant weight column, so Resize runs on every backend
// through ops that exist there; the reference interpolates axis by axis too (innermost first),
// which this reproduces exactly. Nearest (and any axis whose weights are one-hot) is one gather.
// Antialias (linear, cubic) widens the filter when downsampling: its support scaled by 1/scale
// and the weights normalized to sum 1, as the reference's *_coeffs_antialias; the taps are
// gathered the same way (more of them), so it needs no other op.
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;

/// What Resize's attributes ask for.
struct ResizeMode {
  std::string mode, ctm, nearest;
  double cubicA = -0.75, extrapolation = 0;
  bool excludeOutside = false, antialias = false;
};

/// One axis: for each output position, its taps (input indices, clamped) and their weights; an
/// output outside a tf_crop_and_resize ROI takes `extrapolation` and no taps.
struct AxisTable {
  std::vector<std::vector<int64_t>> taps;
  std::vector<std::vector<double>> weights;
  std::vector<bool> outside;
};

/// The reference's antialiased coefficients (downsampling: the filter stretched by 1/scale).
std::vector<double> antialiasCoefficients(const ResizeMode &m, double ratio, double scale) {
  scale = std::min(scale, 1.0);
  std::vector<double> w;
  if (m.mode == "linear") {
    const int64_t start = (int64_t)std::floor(-1 / scale) + 1, footprint = 2 - 2 * start;
    for (int64_t i = start; i < start + footprint; ++i)
      w.push_back(std::clamp(1 - std::fabs(((double)i - ratio) * scale), 0.0, 1.0));
  } else {
    const double A = m.cubicA;
    const int64_t start = (int64_t)std::floor(-2 / scale) + 1, end = 2 - start;
    for (int64_t i = start; i < end; ++i) {
      const double x = std::fabs(scale * ((double)i - ratio)), x2 = x * x, x3 = x * x2;
      w.push_back(x <= 1  ? (A + 2) * x3 - (A + 3) * x2 + 1
                  : x < 2 ? A * x3 - 5 * A * x2 + 8 * A * x - 4 * A
                          : 0.0);
    }
  }
  double sum = 0;
  for (double v : w)
    sum += v;
  for (double &v : w)
    v /= sum;
  return w;
}

/// The reference's coefficients for `ratio` in (0, 1].
std::vector<double> coefficients(const ResizeMode &m, double ratio, double scale) {
  if (m.antialias && m.mode != "nearest")
    return antialiasCoefficients(m, ratio, scale);
  if (m.mode == "nearest") {
    if (ratio == std::floor(ratio))
      return {0, 1};
    if (m.nearest == "round_prefer_ceil")
      return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (m.nearest == "floor")
      return {1, 0};
    if (m.nearest == "ceil")
      return {0, 1};
    return {double(ratio <= 0.5), double(ratio > 0.5)}; // round_prefer_floor
  }
  if (m.mode == "linear")
    return {1 - ratio, ratio};
  const double A = m.cubicA, r = ratio, s = 1 - ratio;
  return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
          ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * s - (A + 3)) * s * s + 1,
          ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
}

/// The input coordinate output position x maps to (the reference's x_ori); false when it lies
/// outside a tf_crop_and_resize ROI.
bool inputCoordinate(const ResizeMode &m, int64_t in, int64_t outInt, double scale, int64_t x,
                     double roiStart, double roiEnd, double &xo) {
  const double out = scale * (double)in;
  if (m.ctm == "align_corners") {
    xo = out == 1 ? 0.0 : x * (double)(in - 1) / (out - 1);
  } else if (m.ctm == "asymmetric") {
    xo = x / scale;
  } else if (m.ctm == "tf_crop_and_resize") {
    xo = out == 1 ? (roiEnd - roiStart) * (in - 1) / 2
                  : x * (roiEnd - roiStart) * (in - 1) / (out - 1);
    xo += roiStart * (in - 1);
    return !(xo < 0 || xo > in - 1);
  } else if (m.ctm == "pytorch_half_pixel") {
    xo = out == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  } else if (m.ctm == "half_pixel_symmetric") {
    const double offset = in / 2.0 * (1 - outInt / out);
    xo = offset + (x + 0.5) / scale - 0.5;
  } else { // half_pixel
    xo = (x + 0.5) / scale - 0.5;
  }
  return true;
}

AxisTable axisTable(const ResizeMode &m, int64_t in, int64_t outInt, double scale,
                    double roiStart, double roiEnd) {
  AxisTable t;
  for (int64_t x = 0; x < outInt; ++x) {
    double xo = 0;
    if (!inputCoordinate(m, in, outInt, scale, x, roiStart, roiEnd, xo)) {
      t.taps.push_back({});
      t.weights.push_back({});
      t.outside.push_back(true);
      continue;
    }
    const double ratio = xo == std::floor(xo) ? 1.0 : xo - std::floor(xo);
    std::vector<double> w = coefficients(m, ratio, scale);
    const int64_t n = (int64_t)w.size(), pad = (n + 1) / 2, limit = in + 2 * pad;
    // The n indices of the edge-padded input nearest to xo + pad, the smaller on ties.
    const double xp = xo + pad;
    const int64_t f = (int64_t)std::floor(xp);
    // They lie in a window around xp clamped to the padded input (far outside: its ends).
    const int64_t lo = std::clamp<int64_t>(f - n - 1, 0, std::max<int64_t>(0, limit - 2 * n - 3));
    std::vector<int64_t> cand;
    for (int64_t i = lo; i < std::min<int64_t>(limit, lo + 2 * n + 4); ++i)
      cand.push_back(i);
    std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t b) {
      const double da = std::fabs(xp - a), db = std::fabs(xp - b);
      return da != db ? da < db : a < b;
    });
    cand.resize(std::min<size_t>(cand.size(), (size_t)n));
    std::sort(cand.begin(), cand.end());
    std::vector<int64_t> taps;
    double sum = 0;
    for (size_t k = 0; k < cand.size(); ++k) {
      const int64_t orig = cand[k] - pad;
      if (m.excludeOutside && (orig < 0 || orig >= in))
        w[k] = 0;
      sum += w[k];
      taps.push_back(std::clamp<int64_t>(orig, 0, in - 1));
    }
    if (m.excludeOutside)
      for (double &v : w)
        v /= sum;
    t.taps.push_back(taps);
    t.weights.push_back(w);
    t.outside.push_back(false);
  }
  return t;
}

/// A constant of `elem` (f32 or f64) with `shape` holding `v`.
Value floatConstant(ImportContext &c, Location loc, const Shape &shape,
                    const std::vector<double> &v, Type elem) {
  auto ty = c.type(shape, elem.isF64() ? elem : c.b.getF32Type());
  DenseElementsAttr attr;
  if (elem.isF64()) {
    attr = DenseElementsAttr::get(ty, llvm::makeArrayRef(v));
  } else {
    std::vector<float> f(v.begin(), v.end());
    attr = DenseElementsAttr::get(ty, llvm::makeArrayRef(f));
  }
  Value k = c.b.create<tg::ConstantOp>(loc, ty, attr).getResult();
  return c.cast(loc, k, elem);
}

/// `x` interpolated along `axis` by `t` (innermost axes first: the reference's order).
llvm::Expected<Value> resizeAxis(ImportContext &c, const NodeView &n, Value x, int64_t axis,
                                 const AxisTable &t, double extrapolation) {
  Shape s = c.shapeOf(x);
  const int64_t out = (int64_t)t.taps.size();
  Shape os = s;
  os[axis] = out;
  size_t width = 0;
  bool oneHot = true, anyOutside = false;
  for (int64_t i = 0; i < out; ++i) {
    width = std::max(width, t.taps[i].size());
    anyOutside = anyOutside || t.outside[i];
    int ones = 0;
    for (double w : t.weights[i])
      ones += w == 1.0 ? 1 : (w == 0.0 ? 0 : 100);
    oneHot = oneHot && (t.outside[i] || ones == 1);
  }
  Type elem = c.elemOf(x);
  auto gather = [&](const std::vector<int64_t> &idx) {
    return c.emit<tg::GatherOp>(n.loc, c.type(os, elem), x, c.constI64(n.loc, idx),
                                (uint64_t)axis);
  };
  Shape col(s.size(), 1);
  col[axis] = out;
  if (oneHot && !anyOutside) {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < out; ++i)
      for (size_t k = 0; k < t.taps[i].size(); ++k)
        if (t.weights[i][k] == 1.0)
          idx.push_back(t.taps[i][k]);
    return gather(idx);
  }
  if (!ImportContext::isFloat(elem))
    return ImportContext::error(n, "linear and cubic resize need a float tensor");
  Value acc;
  for (size_t k = 0; k < width; ++k) {
    std::vector<int64_t> idx(out, 0);
    std::vector<double> w(out, 0.0);
    for (int64_t i = 0; i < out; ++i)
      if (k < t.taps[i].size())
        idx[i] = t.taps[i][k], w[i] = t.weights[i][k];
    Value term = c.binary<tg::MulOp>(n.loc, gather(idx), floatConstant(c, n.loc, col, w, elem));
    acc = acc ? c.binary<tg::AddOp>(n.loc, acc, term) : term;
  }
  if (anyOutside) {
    std::vector<double> e(out, 0.0);
    for (int64_t i = 0; i < out; ++i)
      e[i] = t.outside[i] ? extrapolation : 0.0;
    Value ev = floatConstant(c, n.loc, col, e, elem);
    acc = acc ? c.binary<tg::AddOp>(n.loc, acc, ev) : c.expand(n.loc, ev, os);
  }
  return acc;
}

Result importResize(ImportContext &c, const NodeView &n) {
  if (n.opset < 11)
    return c.error(n, "Resize before opset 11 is not supported");
  TGC_ASSIGN(x, c.need(n, 0));
  const Shape s = c.shapeOf(x);
  const int64_t r = (int64_t)s.size();
  ResizeMode m;
  m.mode = n.attrString("mode", "nearest");
  m.ctm = n.attrString("coordinate_transformation_mode", "half_pixel");
  m.nearest = n.attrString("nearest_mode", "round_prefer_floor");
  m.cubicA = n.attrFloat("cubic_coeff_a", -0.75f);
  m.extrapolation = n.attrFloat("extrapolation_value", 0.f);
  m.excludeOutside = n.attrInt("exclude_outside", 0) != 0;
  const std::string policy = n.attrString("keep_aspect_ratio_policy", "stretch");
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic")
    return c.error(n, "mode '" + m.mode + "' is not nearest, linear or cubic");
  static const char *const kModes[] = {"half_pixel", "half_pixel_symmetric",
                                       "pytorch_half_pixel", "align_corners", "asymmetric",
                                       "tf_crop_and_resize"};
  if (std::find(std::begin(kModes), std::end(kModes), m.ctm) == std::end(kModes))
    return c.error(n, "coordinate_transformation_mode '" + m.ctm + "' is not supported");
  static const char *const kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                         "ceil"};
  if (std::find(std::begin(kNearest), std::end(kNearest), m.nearest) == std::end(kNearest))
    return c.error(n, "nearest_mode '" + m.nearest + "' is not supported");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return c.error(n, "keep_aspect_ratio_policy '" + policy + "' is not supported");
  m.antialias = n.attrInt("antialias", 0) != 0;
  if (m.antialias && m.mode == "nearest")
    return c.error(n, "antialias=1 needs mode linear or cubic, not nearest");

  // The resized axes (all by default) and their scales or sizes.
  TGC_ASSIGN(axes, c.axesAttr(n, r));
  std::vector<double> scale(r, 1.0);
  Shape out = s;
  Value scales = n.input(2), sizes = n.input(3);
  const bool haveScales = scales && c.shapeOf(scales) != Shape{0};
  const bool haveSizes = sizes && c.shapeOf(sizes) != Shape{0};
  if (haveScales == haveSizes)
    return c.error(n, "exactly one of scales and sizes must be given");
  if (haveScales) {
    auto v = c.constDoubles(scales);
    if (!v)
      return c.error(n, "scales input must be constant" + c.bindHint(scales));
    if (v->size() != axes.size())
      return c.error(n, "scales has " + std::to_string(v->size()) + " values for " +
                            std::to_string(axes.size()) + " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      if (!((*v)[i] > 0))
        return c.error(n, "scales must be positive");
      scale[axes[i]] = (*v)[i];
      out[axes[i]] = (int64_t)((*v)[i] * (double)s[axes[i]]);
    }
  } else {
    TGC_ASSIGN(v, c.requireInts(n, 3, "sizes"));
    if (v.size() != axes.size())
      return c.error(n, "sizes has " + std::to_string(v.size()) + " values for " +
                            std::to_string(axes.size()) + " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      if (v[i] < 0 || s[axes[i]] == 0)
        return c.error(n, "sizes must be non-negative, of a non-empty axis");
      scale[axes[i]] = (double)v[i] / (double)s[axes[i]];
      out[axes[i]] = v[i];
    }
    if (policy != "stretch") {
      double k = policy == "not_larger" ? 1e300 : 0;
      for (int64_t a : axes)
        k = policy == "not_larger" ? std::min(k, scale[a]) : std::max(k, scale[a]);
      for (int64_t a : axes) {
        scale[a] = k;
        out[a] = (int64_t)(k * (double)s[a] + 0.5);
      }
    }
  }
  // tf_crop_and_resize's ROI: starts then ends, one per resized axis.
  std::vector<double> roiStart(r, 0.0), roiEnd(r, 1.0);
  if (m.ctm == "tf_crop_and_resize") {
    auto roi = c.constDoubles(n.input(1));
    if (!roi)
      return c.error(n, "roi input must be constant" + c.bindHint(n.input(1)));
    if (roi->size() != 2 * axes.size())
      return c.error(n, "roi must hold a start and an end per resized axis");
    for (size_t i = 0; i < axes.size(); ++i)
      roiStart[axes[i]] = (*roi)[i], roiEnd[axes[i]] = (*roi)[axes.size() + i];
  }
  for (int64_t d = 0; d < r; ++d)
    if (out[d] > (int64_t(1) << 31))
      return c.error(n, "output dim " + std::to_string(d) + " is too large");

  Value y = x;
  for (int64_t d = r - 1; d >= 0; --d) {
    if (s[d] == 0 || out[d] == 0) {
      if (s[d] != out[d])
        return c.error(n, "cannot resize an empty axis to a non-empty one");
      continue;
    }
    const AxisTable t = axisTable(m, s[d], out[d], scale[d], roiStart[d], roiEnd[d]);
    // An axis that maps every output to its own input with weight 1 is left alone.
    bool identity = out[d] == s[d];
    for (int64_t i = 0; identity && i < out[d]; ++i) {
      identity = !t.outside[i];
      for (size_t k = 0; identity && k < t.taps[i].size(); ++k)
        identity = t.weights[i][k] == 0.0 || (t.weights[i][k] == 1.0 && t.taps[i][k] == i);
    }
    if (identity)
      continue;
    auto v = resizeAxis(c, n, y, d, t, m.extrapolation);
    if (!v)
      return v.takeError();
    y = *v;
  }
  return std::vector<Value>{y};
}

} // namespace

void registerResizeOps(OpTable &t) { t["Resize"] = importResize; }

} // namespace tgc::onnx_import
