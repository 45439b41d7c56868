// ImportNN.cpp — ONNX contractions, normalizations and reductions → `tg`.
//
// Gemm becomes tg.linear when it is one (transA=0, alpha=beta=1, weight usable as [N, K]) so
// that GEMM epilogue fusion sees the common case directly; everything else is matmul + mul + add.
// Inference-only normalizations (BatchNormalization, InstanceNormalization) are rewritten to
// layer_norm / mul / add, and their constant parameters fold at import.
#include "frontends/onnx/ImportContext.h"

#include <algorithm>
#include <cmath>

namespace tgc::onnx_import {

using namespace mlir;
using Values = std::vector<Value>;
using Result = llvm::Expected<Values>;

namespace {

Value scalarLike(ImportContext &c, Location loc, Value x, double v) {
  return c.splat(loc, v, c.elemOf(x));
}

Result importMatMul(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(a, c.need(n, 0));
  TGC_ASSIGN(b, c.need(n, 1));
  if (c.elemOf(a) != c.elemOf(b))
    return c.error(n, "operands have different element types");
  auto s = matmulShape(c.shapeOf(a), c.shapeOf(b));
  if (!s)
    return c.error(n, "shapes " + shapeToString(c.shapeOf(a)) + " and " +
                          shapeToString(c.shapeOf(b)) + " do not contract");
  return Values{c.emit<tg::MatmulOp>(n.loc, c.type(*s, c.elemOf(a)), a, b)};
}

Result importGemm(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(a, c.need(n, 0));
  TGC_ASSIGN(b, c.need(n, 1));
  Value bias = n.input(2);
  double alpha = n.attrFloat("alpha", 1), beta = n.attrFloat("beta", 1);
  bool transA = n.attrInt("transA", 0) != 0, transB = n.attrInt("transB", 0) != 0;
  Shape as = c.shapeOf(a), bs = c.shapeOf(b);
  if (as.size() != 2 || bs.size() != 2)
    return c.error(n,
                   "A and B must be 2-D; got " + shapeToString(as) + " and " + shapeToString(bs));
  if (c.elemOf(a) != c.elemOf(b) || (bias && c.elemOf(bias) != c.elemOf(a)))
    return c.error(n, "operands have different element types");
  int64_t M = transA ? as[1] : as[0], K = transA ? as[0] : as[1];
  int64_t K2 = transB ? bs[1] : bs[0], N = transB ? bs[0] : bs[1];
  if (K != K2)
    return c.error(n, "A " + shapeToString(as) + " and B " + shapeToString(bs) +
                          " do not contract (transA=" + std::to_string(transA) +
                          ", transB=" + std::to_string(transB) + ")");
  Shape out{M, N};
  Type elem = c.elemOf(a);
  bool useBias = bias && beta != 0;
  if (useBias) {
    auto s = broadcastShapes(c.shapeOf(bias), out);
    if (!s || *s != out)
      return c.error(n, "C " + shapeToString(c.shapeOf(bias)) + " does not broadcast to " +
                            shapeToString(out));
  }
  if (!transA && alpha == 1 && (beta == 1 || !useBias) && (transB || c.isConstant(b))) {
    // y = A · Wᵀ (+ bias) with W = B as [N, K].
    Value w = transB ? b : c.transpose(n.loc, b, {1, 0});
    Shape cs = useBias ? c.shapeOf(bias) : Shape{};
    bool vectorBias =
        useBias && *numElements(cs) == N && (cs.size() == 1 || (cs.size() == 2 && cs[0] == 1));
    Value vec = vectorBias ? c.reshape(n.loc, bias, {N}) : Value();
    Value y = c.emit<tg::LinearOp>(n.loc, c.type(out, elem), a, w, vec);
    if (useBias && !vectorBias)
      y = c.binary<tg::AddOp>(n.loc, y, bias);
    return Values{y};
  }
  Value a2 = transA ? c.transpose(n.loc, a, {1, 0}) : a;
  Value b2 = transB ? c.transpose(n.loc, b, {1, 0}) : b;
  Value y = c.emit<tg::MatmulOp>(n.loc, c.type(out, elem), a2, b2);
  if (alpha != 1)
    y = c.binary<tg::MulOp>(n.loc, y, scalarLike(c, n.loc, y, alpha));
  if (useBias) {
    Value cb =
        beta != 1 ? c.binary<tg::MulOp>(n.loc, bias, scalarLike(c, n.loc, bias, beta)) : bias;
    y = c.binary<tg::AddOp>(n.loc, y, cb);
  }
  return Values{y};
}

/// The sliding-window attributes Conv and the pools share, checked: strides and dilations (1 by
/// default), explicit [begins..., ends...] pads with auto_pad resolved (SAME_*: the output is
/// ceil(in / stride) and the extra pad goes to the end for SAME_UPPER, the begin for SAME_LOWER;
/// VALID: none), and the output's spatial dims — in ceil mode (pools) the last window must still
/// start inside the input or its begin pad, as in PyTorch and ONNX's reference.
struct Window {
  Shape strides, dilations, pads, out;
};
std::string slidingWindow(const NodeView &n, const Shape &xs, const Shape &kernel, bool ceil,
                          Window &w) {
  const size_t sp = xs.size() - 2;
  w.strides = n.attrInts("strides").value_or(std::vector<int64_t>(sp, 1));
  w.dilations = n.attrInts("dilations").value_or(std::vector<int64_t>(sp, 1));
  w.pads = n.attrInts("pads").value_or(std::vector<int64_t>(2 * sp, 0));
  Shape &st = w.strides, &dil = w.dilations, &pads = w.pads;
  if (st.size() != sp || dil.size() != sp || pads.size() != 2 * sp)
    return "strides/dilations need one entry per spatial dim, pads two";
  const int64_t big = int64_t(1) << 31;
  for (size_t i = 0; i < sp; ++i)
    if (kernel[i] <= 0 || st[i] <= 0 || dil[i] <= 0 || pads[i] < 0 || pads[i + sp] < 0 ||
        kernel[i] > big || st[i] > big || dil[i] > big || pads[i] > big || pads[i + sp] > big ||
        xs[i + 2] > big)
      return "kernel, strides and dilations must be positive, pads non-negative (and all below "
             "2^31)";
  const std::string autoPad = n.attrString("auto_pad", "NOTSET");
  const bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (!same && autoPad != "VALID" && autoPad != "NOTSET")
    return "auto_pad '" + autoPad + "' is not supported";
  w.out.clear();
  for (size_t i = 0; i < sp; ++i) {
    const int64_t in = xs[i + 2], eff = dil[i] * (kernel[i] - 1) + 1;
    if (same) {
      const int64_t o = (in + st[i] - 1) / st[i];
      const int64_t total = std::max<int64_t>(0, (o - 1) * st[i] + eff - in);
      pads[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + sp] = total - pads[i];
    } else if (autoPad == "VALID") {
      pads[i] = pads[i + sp] = 0;
    }
    const int64_t span = in + pads[i] + pads[i + sp] - eff;
    if (span < 0)
      return "kernel " + shapeToString(kernel) + " is larger than the padded input " +
             shapeToString(xs);
    int64_t o = (ceil ? (span + st[i] - 1) / st[i] : span / st[i]) + 1;
    if (ceil && (o - 1) * st[i] >= in + pads[i])
      --o; // the last window would start in the end pad
    w.out.push_back(o);
  }
  return "";
}

Result importConv(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(w, c.need(n, 1));
  Value bias = n.input(2);
  Shape xs = c.shapeOf(x), ws = c.shapeOf(w);
  if (xs.size() < 3 || ws.size() != xs.size())
    return c.error(n, "input " + shapeToString(xs) + " and weight " + shapeToString(ws) +
                          " must have the same rank >= 3");
  int64_t group = n.attrInt("group", 1);
  if (group <= 0 || xs[1] % group != 0 || ws[0] % group != 0 || ws[1] * group != xs[1])
    return c.error(n, "input channels " + std::to_string(xs[1]) + " do not match weight " +
                          shapeToString(ws) + " with group " + std::to_string(group));
  if (auto ks = n.attrInts("kernel_shape"))
    if (*ks != Shape(ws.begin() + 2, ws.end()))
      return c.error(n, "kernel_shape differs from the weight's spatial dims");
  Window win;
  if (std::string e = slidingWindow(n, xs, Shape(ws.begin() + 2, ws.end()), false, win);
      !e.empty())
    return c.error(n, e);
  Shape out{xs[0], ws[0]};
  out.insert(out.end(), win.out.begin(), win.out.end());
  if (bias && c.shapeOf(bias) != Shape{ws[0]})
    return c.error(n, "bias must be [" + std::to_string(ws[0]) + "]");
  return Values{c.emit<tg::ConvOp>(n.loc, c.type(out, c.elemOf(x)), x, w, bias,
                                   c.b.getI64ArrayAttr(win.strides), c.b.getI64ArrayAttr(win.pads),
                                   c.b.getI64ArrayAttr(win.dilations), (uint64_t)group,
                                   /*weight_block=*/nullptr, /*channels_last=*/false, /*nhwc=*/false)};
}

/// MaxPool's Indices output by decomposition (no second result on tg.pool): X as [N*C, S] with
/// one more column holding the type's lowest value, a constant table [O, K] of each window's
/// flat tap positions (that column for a tap in the pads), one tg.gather of the windows, then
/// tg.argmax over the taps (the first maximum, as the reference's strict '>' scan keeps) and a
/// second tg.gather mapping (output, tap) to the input's flat index: row-major spatial
/// (storage_order 0) or column-major (1), plus (n * C + c) * S as ONNX counts it. A padded tap
/// maps to its window's first tap inside (it can win only by a tie at the lowest value, where
/// the reference, skipping pads, names that tap).
llvm::Expected<Value> maxPoolIndices(ImportContext &c, const NodeView &n, Value x,
                                     const Shape &kernel, const Window &win, int64_t storageOrder) {
  const Shape xs = c.shapeOf(x);
  const size_t sp = xs.size() - 2;
  const Shape in(xs.begin() + 2, xs.end());
  auto S = numElements(in), O = numElements(win.out), K = numElements(kernel);
  auto taps = numElements(Shape{xs[0], xs[1], O.value_or(0), K.value_or(0)});
  if (!S || !O || !K || !taps || *taps > (int64_t(1) << 31))
    return c.error(n, "the Indices output needs N*C*output*kernel gathered taps; more than 2^31");
  const Type elem = c.elemOf(x);
  double lowest = -INFINITY;
  if (auto it = elem.dyn_cast<IntegerType>())
    lowest = it.isUnsigned() || it.getWidth() == 1 ? 0.0 : -std::ldexp(1.0, it.getWidth() - 1);
  else if (!c.isFloat(elem))
    return c.error(n, "the Indices output needs a float or integer input");
  HostTensor table = HostTensor::zeros(DType::I64, {*O, *K});
  HostTensor index = HostTensor::zeros(DType::I64, {*O * *K});
  std::vector<int64_t> o(sp, 0), k(sp, 0);
  for (int64_t oi = 0; oi < *O; ++oi) {
    for (int64_t r = oi, d = (int64_t)sp - 1; d >= 0; --d) {
      o[d] = r % win.out[d];
      r /= win.out[d];
    }
    for (int64_t ki = 0; ki < *K; ++ki) {
      for (int64_t r = ki, d = (int64_t)sp - 1; d >= 0; --d) {
        k[d] = r % kernel[d];
        r /= kernel[d];
      }
      int64_t flat = 0, colMajor = 0, stride = 1;
      bool inside = true;
      for (size_t d = 0; d < sp; ++d) {
        const int64_t pos = o[d] * win.strides[d] - win.pads[d] + k[d] * win.dilations[d];
        inside = inside && pos >= 0 && pos < in[d];
        flat = flat * in[d] + pos;
        colMajor += pos * stride;
        stride *= in[d];
      }
      table.as<int64_t>()[oi * *K + ki] = inside ? flat : *S;
      index.as<int64_t>()[oi * *K + ki] = inside ? (storageOrder ? colMajor : flat) : -1;
    }
    // A padded tap wins only when every tap inside holds the lowest value and it comes first;
    // the reference then names the first tap inside, so the padded taps map to it.
    int64_t first = 0;
    for (int64_t ki = *K - 1; ki >= 0; --ki)
      if (index.as<int64_t>()[oi * *K + ki] >= 0)
        first = index.as<int64_t>()[oi * *K + ki];
    for (int64_t ki = 0; ki < *K; ++ki)
      if (index.as<int64_t>()[oi * *K + ki] < 0)
        index.as<int64_t>()[oi * *K + ki] = first;
  }
  const Location loc = n.loc;
  const int64_t NC = xs[0] * xs[1];
  Value xf = c.reshape(loc, x, {NC, *S});
  Value padded = c.emit<tg::ConcatOp>(loc, c.type({NC, *S + 1}, elem),
                                      ValueRange{xf, c.splat(loc, lowest, elem, {NC, 1})},
                                      (uint64_t)1);
  Value windows = c.emit<tg::GatherOp>(loc, c.type({NC, *O, *K}, elem), padded,
                                       c.constant(loc, table), (uint64_t)1);
  Value am = c.emit<tg::ArgMaxOp>(loc, c.type({NC, *O}, c.i64()), windows, (uint64_t)2, false,
                                  false);
  HostTensor rowBase = HostTensor::zeros(DType::I64, {1, *O});
  for (int64_t oi = 0; oi < *O; ++oi)
    rowBase.as<int64_t>()[oi] = oi * *K;
  Value sel = c.binary<tg::AddOp>(loc, am, c.constant(loc, rowBase));
  Value idx = c.emit<tg::GatherOp>(loc, c.type({NC, *O}, c.i64()), c.constant(loc, index), sel,
                                   (uint64_t)0);
  HostTensor chanBase = HostTensor::zeros(DType::I64, {NC, 1});
  for (int64_t i = 0; i < NC; ++i)
    chanBase.as<int64_t>()[i] = i * *S;
  idx = c.binary<tg::AddOp>(loc, idx, c.constant(loc, chanBase));
  Shape out{xs[0], xs[1]};
  out.insert(out.end(), win.out.begin(), win.out.end());
  return c.reshape(loc, idx, out);
}

/// MaxPool / AveragePool: kernel_shape, the window attributes (slidingWindow, with ceil_mode),
/// count_include_pad; MaxPool's Indices output (maxPoolIndices).
/// MaxPool, AveragePool, and LpPool as (avg pool of |x|^p with the pads counted × kernel
/// volume)^(1/p): the zeros of the pads add nothing to the sum, as in the reference.
Result importPool(ImportContext &c, const NodeView &n, bool max, bool lp = false) {
  TGC_ASSIGN(x, c.need(n, 0));
  Shape xs = c.shapeOf(x);
  if (xs.size() < 3)
    return c.error(n, "input " + shapeToString(xs) + " must have rank >= 3 (N, C, spatial...)");
  const int64_t storageOrder = n.attrInt("storage_order", 0);
  if (max && storageOrder != 0 && storageOrder != 1)
    return c.error(n, "storage_order " + std::to_string(storageOrder) + " is not 0 or 1");
  const size_t sp = xs.size() - 2;
  auto kernel = n.attrInts("kernel_shape");
  if (!kernel || kernel->size() != sp)
    return c.error(n, "kernel_shape needs one entry per spatial dim");
  Window win;
  if (std::string e = slidingWindow(n, xs, *kernel, n.attrInt("ceil_mode", 0) != 0, win);
      !e.empty())
    return c.error(n, e);
  Shape out{xs[0], xs[1]};
  out.insert(out.end(), win.out.begin(), win.out.end());
  const bool countPad = lp || (!max && n.attrInt("count_include_pad", 0) != 0);
  double p = 0;
  if (lp) {
    p = (double)n.attrInt("p", 2);
    if (p < 1)
      return c.error(n, "p must be >= 1");
    if (!c.isFloat(c.elemOf(x)))
      return c.error(n, "input must be a float tensor");
    x = p == 2 ? c.binary<tg::MulOp>(n.loc, x, x)
               : c.binary<tg::PowOp>(n.loc, c.unary<tg::AbsOp>(n.loc, x),
                                     c.splat(n.loc, p, c.elemOf(x)));
  }
  Value y = c.emit<tg::PoolOp>(n.loc, c.type(out, c.elemOf(x)), x,
                               c.b.getStringAttr(max ? "max" : "avg"),
                               c.b.getI64ArrayAttr(*kernel), c.b.getI64ArrayAttr(win.strides),
                               c.b.getI64ArrayAttr(win.pads), c.b.getI64ArrayAttr(win.dilations),
                               c.b.getBoolAttr(countPad), /*nhwc=*/nullptr);
  if (max && n.used(1)) {
    TGC_ASSIGN(idx, maxPoolIndices(c, n, x, *kernel, win, storageOrder));
    return Values{y, idx};
  }
  if (!lp)
    return Values{y};
  double volume = 1;
  for (int64_t k : *kernel)
    volume *= (double)k;
  y = c.binary<tg::MulOp>(n.loc, y, c.splat(n.loc, volume, c.elemOf(x)));
  return Values{p == 1 ? y
                       : c.binary<tg::PowOp>(n.loc, y, c.splat(n.loc, 1.0 / p, c.elemOf(x)))};
}

Value layerNorm(ImportContext &c, Location loc, Value x, Value scale, Value bias, int64_t axis,
                float eps) {
  return c.emit<tg::LayerNormOp>(loc, x.getType(), x, scale, bias, c.b.getI64IntegerAttr(axis),
                                 c.b.getF32FloatAttr(eps));
}

template <typename OpT>
Value reduceOp(ImportContext &c, Location loc, Value x, const std::vector<int64_t> &axes,
               bool keep);

/// MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x²] - E[x]²) + 1e-9) over `axes` (default
/// [0, 2, 3]), as the ONNX reference computes it.
Result importMvn(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  if (!c.isFloat(c.elemOf(x)))
    return c.error(n, "input must be a float tensor");
  const int64_t r = c.rankOf(x);
  std::vector<int64_t> axes = n.attrInts("axes").value_or(std::vector<int64_t>{0, 2, 3});
  for (int64_t &a : axes) {
    if (a < -r || a >= r)
      return c.error(n, "axis " + std::to_string(a) + " is out of range for rank " +
                            std::to_string(r));
    a = a < 0 ? a + r : a;
  }
  Value mean = reduceOp<tg::ReduceMeanOp>(c, n.loc, x, axes, true);
  Value sqMean = reduceOp<tg::ReduceMeanOp>(c, n.loc, c.binary<tg::MulOp>(n.loc, x, x), axes, true);
  Value var = c.binary<tg::SubOp>(n.loc, sqMean, c.binary<tg::MulOp>(n.loc, mean, mean));
  Value den = c.binary<tg::AddOp>(n.loc, c.unary<tg::SqrtOp>(n.loc, var),
                                  c.splat(n.loc, 1e-9, c.elemOf(x)));
  return Values{c.binary<tg::DivOp>(n.loc, c.binary<tg::SubOp>(n.loc, x, mean), den)};
}

/// LRN: y = x / (bias + alpha / size * Σ x²)^beta, the sum over a window of `size` channels
/// around each one (clipped at the ends). The window sum is an average pool with
/// count_include_pad (times size) over x² seen as [N, 1, C, rest].
Result importLrn(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  const Shape xs = c.shapeOf(x);
  if (xs.size() < 3)
    return c.error(n, "input must have rank >= 3 ([N, C, d...])");
  if (!c.isFloat(c.elemOf(x)))
    return c.error(n, "input must be a float tensor");
  const int64_t size = n.attrInt("size", 0);
  if (size < 1 || size > (int64_t(1) << 20))
    return c.error(n, "size must be a positive number of channels");
  const double alpha = n.attrFloat("alpha", 1e-4f), beta = n.attrFloat("beta", 0.75f),
               bias = n.attrFloat("bias", 1.0f);
  auto restN = numElements(Shape(xs.begin() + 2, xs.end()));
  if (!restN)
    return c.error(n, "input is too large");
  const int64_t C = xs[1], rest = *restN;
  const Shape viewShape{xs[0], 1, C, rest};
  Value sq = c.reshape(n.loc, c.binary<tg::MulOp>(n.loc, x, x), viewShape);
  const std::vector<int64_t> kernel{size, 1}, strides{1, 1}, dil{1, 1},
      pads{(size - 1) / 2, 0, size / 2, 0};
  Value avg = c.emit<tg::PoolOp>(n.loc, c.type(viewShape, c.elemOf(x)), sq,
                                 c.b.getStringAttr("avg"), c.b.getI64ArrayAttr(kernel),
                                 c.b.getI64ArrayAttr(strides), c.b.getI64ArrayAttr(pads),
                                 c.b.getI64ArrayAttr(dil), c.b.getBoolAttr(true),
                                 /*nhwc=*/nullptr);
  // bias + alpha / size * sum = bias + alpha * avg
  Value t = c.binary<tg::AddOp>(
      n.loc, c.splat(n.loc, bias, c.elemOf(x)),
      c.binary<tg::MulOp>(n.loc, c.splat(n.loc, alpha, c.elemOf(x)), avg));
  Value den = c.binary<tg::PowOp>(n.loc, t, c.splat(n.loc, beta, c.elemOf(x)));
  return Values{c.binary<tg::DivOp>(n.loc, x, c.reshape(n.loc, den, xs))};
}

Result importLayerNorm(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(scale, c.need(n, 1));
  TGC_ASSIGN(axis, checkAxis(n, n.attrInt("axis", -1), c.rankOf(x)));
  Shape xs = c.shapeOf(x), norm(xs.begin() + axis, xs.end());
  for (Value p : {scale, n.input(2)}) {
    if (!p)
      continue;
    if (c.elemOf(p) != c.elemOf(x))
      return c.error(n, "scale and bias must have the input's element type");
    if (!broadcastShapes(norm, c.shapeOf(p)) || *broadcastShapes(norm, c.shapeOf(p)) != norm)
      return c.error(n, "scale/bias " + shapeToString(c.shapeOf(p)) +
                            " does not broadcast to the normalized dims " + shapeToString(norm));
  }
  const float eps = n.attrFloat("epsilon", 1e-5f);
  Values out{layerNorm(c, n.loc, x, scale, n.input(2), axis, eps)};
  if (!n.used(1) && !n.used(2))
    return out;
  // Mean and InvStdDev (training's saved statistics), in stash_type (1: f32, the default),
  // over the normalized dims with them kept as 1s: computed beside the fused norm.
  const int64_t stash = n.attrInt("stash_type", 1);
  if (stash != 1)
    return c.error(n, "stash_type " + std::to_string(stash) + " is not supported (only 1, f32)");
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < (int64_t)xs.size(); ++d)
    axes.push_back(d);
  Value xf = c.cast(n.loc, x, c.b.getF32Type());
  Value mean = reduceOp<tg::ReduceMeanOp>(c, n.loc, xf, axes, true);
  Value d = c.binary<tg::SubOp>(n.loc, xf, mean);
  Value var = reduceOp<tg::ReduceMeanOp>(c, n.loc, c.binary<tg::MulOp>(n.loc, d, d), axes, true);
  Value inv = c.unary<tg::RsqrtOp>(
      n.loc, c.binary<tg::AddOp>(n.loc, var, c.splat(n.loc, eps, c.b.getF32Type())));
  out.push_back(mean);
  out.push_back(inv);
  return out;
}

/// A per-channel parameter [C] reshaped to broadcast against [N, C, d...] of rank `rank`.
Value channelParam(ImportContext &c, Location loc, Value p, int64_t rank) {
  Shape s{c.shapeOf(p).empty() ? 1 : c.shapeOf(p)[0]};
  for (int64_t i = 2; i < rank; ++i)
    s.push_back(1);
  return c.reshape(loc, p, s);
}

Result importBatchNorm(ImportContext &c, const NodeView &n) {
  Value in[5];
  for (int i = 0; i < 5; ++i) {
    TGC_ASSIGN(v, c.need(n, i));
    in[i] = v;
  }
  Value x = in[0];
  const bool training = n.opset >= 14 && n.attrInt("training_mode", 0) != 0;
  if (n.opset < 14 && (n.used(1) || n.used(2) || n.used(3) || n.used(4)))
    return c.error(n, "training mode before opset 14 is not supported (inference only)");
  if (!training && (n.used(1) || n.used(2)))
    return c.error(n, "running_mean/running_var outputs need training_mode=1");
  Shape xs = c.shapeOf(x);
  if (xs.size() < 2)
    return c.error(n, "input must have rank >= 2");
  for (int i = 1; i < 5; ++i)
    if (c.shapeOf(in[i]) != Shape{xs[1]} || c.elemOf(in[i]) != c.elemOf(x))
      return c.error(n, "scale, bias, mean and var must be [" + std::to_string(xs[1]) +
                            "] of the input's element type");
  int64_t r = (int64_t)xs.size();
  Location loc = n.loc;
  Values running;
  if (training) {
    // Training (opset 14+), as the ONNX reference: normalize by the batch statistics (mean and
    // population variance over every axis but 1); running = input * momentum + batch * (1 -
    // momentum).
    if (!c.isFloat(c.elemOf(x)))
      return c.error(n, "input must be a float tensor");
    std::vector<int64_t> axes{0};
    for (int64_t d = 2; d < r; ++d)
      axes.push_back(d);
    Value mean = reduceOp<tg::ReduceMeanOp>(c, loc, x, axes, false);
    Value d = c.binary<tg::SubOp>(loc, x, channelParam(c, loc, mean, r));
    Value bvar = reduceOp<tg::ReduceMeanOp>(c, loc, c.binary<tg::MulOp>(loc, d, d), axes, false);
    const double m = n.attrFloat("momentum", 0.9f);
    auto blend = [&](Value input, Value batch) {
      return c.binary<tg::AddOp>(
          loc, c.binary<tg::MulOp>(loc, input, scalarLike(c, loc, x, m)),
          c.binary<tg::MulOp>(loc, batch, scalarLike(c, loc, x, 1.0 - m)));
    };
    running = {blend(in[3], mean), blend(in[4], bvar)};
    in[3] = mean;
    in[4] = bvar;
  }
  // y = x * a + (B - mean * a), a = scale / sqrt(var + eps)
  Value var = c.binary<tg::AddOp>(loc, in[4], scalarLike(c, loc, x, n.attrFloat("epsilon", 1e-5f)));
  Value a = c.binary<tg::DivOp>(loc, in[1], c.unary<tg::SqrtOp>(loc, var));
  Value shift = c.binary<tg::SubOp>(loc, in[2], c.binary<tg::MulOp>(loc, in[3], a));
  Value y = c.binary<tg::MulOp>(loc, x, channelParam(c, loc, a, r));
  Values out{c.binary<tg::AddOp>(loc, y, channelParam(c, loc, shift, r))};
  out.insert(out.end(), running.begin(), running.end());
  return out;
}

Result importInstanceNorm(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(scale, c.need(n, 1));
  TGC_ASSIGN(bias, c.need(n, 2));
  Shape xs = c.shapeOf(x);
  if (xs.size() < 3)
    return c.error(n, "input must have rank >= 3");
  for (Value p : {scale, bias})
    if (c.shapeOf(p) != Shape{xs[1]} || c.elemOf(p) != c.elemOf(x))
      return c.error(n, "scale and bias must be [" + std::to_string(xs[1]) + "]");
  int64_t r = (int64_t)xs.size();
  Value y = layerNorm(c, n.loc, x, Value(), Value(), 2, n.attrFloat("epsilon", 1e-5f));
  y = c.binary<tg::MulOp>(n.loc, y, channelParam(c, n.loc, scale, r));
  return Values{c.binary<tg::AddOp>(n.loc, y, channelParam(c, n.loc, bias, r))};
}

Result importGroupNorm(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(scale, c.need(n, 1));
  TGC_ASSIGN(bias, c.need(n, 2));
  Shape xs = c.shapeOf(x);
  int64_t g = n.attrInt("num_groups", 0);
  if (xs.size() < 3 || g <= 0 || xs[1] % g != 0)
    return c.error(n, "needs rank >= 3 and channels divisible by num_groups");
  int64_t C = xs[1], r = (int64_t)xs.size();
  Value y = c.reshape(n.loc, x, {xs[0], g, *numElements(xs) / xs[0] / g});
  y = layerNorm(c, n.loc, y, Value(), Value(), 2, n.attrFloat("epsilon", 1e-5f));
  y = c.reshape(n.loc, y, xs);
  Value params[2] = {scale, bias};
  for (Value &p : params) {
    int64_t k = *numElements(c.shapeOf(p));
    if (c.elemOf(p) != c.elemOf(x) || c.rankOf(p) != 1 || (k != C && k != g))
      return c.error(n, "scale and bias must be [C] or [num_groups]");
    if (k != C) // opset 18: one value per group, repeated over its channels
      p = c.reshape(n.loc, c.expand(n.loc, c.reshape(n.loc, p, {g, 1}), {g, C / g}), {C});
  }
  y = c.binary<tg::MulOp>(n.loc, y, channelParam(c, n.loc, params[0], r));
  return Values{c.binary<tg::AddOp>(n.loc, y, channelParam(c, n.loc, params[1], r))};
}

Result importSoftmax(ImportContext &c, const NodeView &n, bool log) {
  TGC_ASSIGN(x, c.need(n, 0));
  if (!c.isFloat(c.elemOf(x)))
    return c.error(n, "input must be floating point");
  Shape xs = c.shapeOf(x);
  int64_t r = (int64_t)xs.size();
  if (n.opset >= 13) {
    TGC_ASSIGN(axis, checkAxis(n, n.attrInt("axis", -1), r));
    return Values{c.emit<tg::SoftmaxOp>(n.loc, x.getType(), x, (uint64_t)axis, log)};
  }
  // Before opset 13 the input is coerced to 2-D [prod(d[:axis]), prod(d[axis:])].
  int64_t axis = n.attrInt("axis", 1);
  if (axis < 0)
    axis += r;
  if (axis < 0 || axis > r)
    return c.error(n, "axis " + std::to_string(n.attrInt("axis", 1)) + " out of range");
  if (axis == r - 1)
    return Values{c.emit<tg::SoftmaxOp>(n.loc, x.getType(), x, (uint64_t)axis, log)};
  int64_t outer = *numElements(Shape(xs.begin(), xs.begin() + axis));
  int64_t inner = *numElements(Shape(xs.begin() + axis, xs.end()));
  Value v = c.reshape(n.loc, x, {outer, inner});
  v = c.emit<tg::SoftmaxOp>(n.loc, v.getType(), v, (uint64_t)1, log);
  return Values{c.reshape(n.loc, v, xs)};
}

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

template <typename OpT>
Value reduceOp(ImportContext &c, Location loc, Value x, const std::vector<int64_t> &axes,
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

Result importReduce(ImportContext &c, const NodeView &n, Reduce kind) {
  TGC_ASSIGN(x, c.need(n, 0));
  int64_t r = c.rankOf(x);
  std::vector<int64_t> axes;
  int64_t inputFrom = kind == Reduce::Sum ? 13 : 18;
  if (n.opset >= inputFrom) {
    if (n.input(1)) {
      TGC_ASSIGN(a, c.requireInts(n, 1, "axes"));
      axes = a;
    }
  } else {
    axes = n.attrInts("axes").value_or(std::vector<int64_t>{});
  }
  bool keep = n.attrInt("keepdims", 1) != 0;
  if (axes.empty()) {
    if (n.attrInt("noop_with_empty_axes", 0) != 0)
      return Values{x};
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  }
  std::vector<bool> seen(r, false);
  for (int64_t &a : axes) {
    TGC_ASSIGN(ax, checkAxis(n, a, r));
    if (seen[ax])
      return c.error(n, "axis " + std::to_string(a) + " repeated");
    seen[ax] = true;
    a = ax;
  }
  std::sort(axes.begin(), axes.end());
  Location loc = n.loc;
  switch (kind) {
  case Reduce::Sum:
    return Values{reduceOp<tg::ReduceSumOp>(c, loc, x, axes, keep)};
  case Reduce::Mean:
    return Values{reduceOp<tg::ReduceMeanOp>(c, loc, x, axes, keep)};
  case Reduce::Max:
    return Values{reduceOp<tg::ReduceMaxOp>(c, loc, x, axes, keep)};
  case Reduce::Min:
    return Values{reduceOp<tg::ReduceMinOp>(c, loc, x, axes, keep)};
  case Reduce::Prod:
    return Values{reduceOp<tg::ReduceProdOp>(c, loc, x, axes, keep)};
  case Reduce::L1:
    return Values{reduceOp<tg::ReduceSumOp>(c, loc, c.unary<tg::AbsOp>(loc, x), axes, keep)};
  case Reduce::L2:
  case Reduce::SumSquare: {
    Value s = reduceOp<tg::ReduceSumOp>(c, loc, c.binary<tg::MulOp>(loc, x, x), axes, keep);
    return Values{kind == Reduce::L2 ? c.unary<tg::SqrtOp>(loc, s) : s};
  }
  case Reduce::LogSum:
    return Values{c.unary<tg::LogOp>(loc, reduceOp<tg::ReduceSumOp>(c, loc, x, axes, keep))};
  case Reduce::LogSumExp: {
    // log(sum(exp(x - m))) + m with m = max(x), for stability.
    Value m = reduceOp<tg::ReduceMaxOp>(c, loc, x, axes, true);
    Value e = c.unary<tg::ExpOp>(loc, c.binary<tg::SubOp>(loc, x, m));
    Value l = c.unary<tg::LogOp>(loc, reduceOp<tg::ReduceSumOp>(c, loc, e, axes, keep));
    return Values{c.binary<tg::AddOp>(loc, l, c.reshape(loc, m, c.shapeOf(l)))};
  }
  }
  return c.error(n, "unknown reduction");
}

Result importArgExtreme(ImportContext &c, const NodeView &n, bool isMin) {
  TGC_ASSIGN(x, c.need(n, 0));
  Shape xs = c.shapeOf(x);
  TGC_ASSIGN(axis, checkAxis(n, n.attrInt("axis", 0), (int64_t)xs.size()));
  bool keep = n.attrInt("keepdims", 1) != 0, last = n.attrInt("select_last_index", 0) != 0;
  if (isMin) {
    Type e = c.elemOf(x);
    if (e.isUnsignedInteger() || e.isInteger(1))
      return c.error(n, "unsigned and bool inputs are not supported");
    x = c.unary<tg::NegOp>(n.loc, x);
  }
  Shape out;
  for (int64_t i = 0; i < (int64_t)xs.size(); ++i)
    if (i != axis)
      out.push_back(xs[i]);
    else if (keep)
      out.push_back(1);
  return Values{c.emit<tg::ArgMaxOp>(n.loc, c.type(out, c.i64()), x, (uint64_t)axis, keep, last)};
}

Result importGlobalPool(ImportContext &c, const NodeView &n, bool isMax) {
  TGC_ASSIGN(x, c.need(n, 0));
  int64_t r = c.rankOf(x);
  if (r < 3)
    return c.error(n, "input must have rank >= 3");
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < r; ++i)
    axes.push_back(i);
  if (isMax)
    return Values{reduceOp<tg::ReduceMaxOp>(c, n.loc, x, axes, true)};
  return Values{reduceOp<tg::ReduceMeanOp>(c, n.loc, x, axes, true)};
}

/// GlobalLpPool: (sum over the spatial dims of |x|^p)^(1/p), p an int >= 1 (default 2).
Result importGlobalLpPool(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  const int64_t r = c.rankOf(x);
  if (r < 3 || !c.isFloat(c.elemOf(x)))
    return c.error(n, "input must be a float tensor of rank >= 3");
  const int64_t p = n.attrInt("p", 2);
  if (p < 1)
    return c.error(n, "p must be >= 1, got " + std::to_string(p));
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < r; ++i)
    axes.push_back(i);
  Location loc = n.loc;
  Value a = c.unary<tg::AbsOp>(loc, x);
  Value pw = p == 1   ? a
             : p == 2 ? c.binary<tg::MulOp>(loc, a, a)
                      : c.binary<tg::PowOp>(loc, a, c.splat(loc, (double)p, c.elemOf(x)));
  Value s = reduceOp<tg::ReduceSumOp>(c, loc, pw, axes, true);
  if (p == 1)
    return Values{s};
  if (p == 2)
    return Values{c.unary<tg::SqrtOp>(loc, s)};
  return Values{c.binary<tg::PowOp>(loc, s, c.splat(loc, 1.0 / (double)p, c.elemOf(x)))};
}

OpHandler reduceHandler(Reduce k) {
  return [k](ImportContext &c, const NodeView &n) { return importReduce(c, n, k); };
}

} // namespace

void registerNNOps(OpTable &t) {
  t["MatMul"] = importMatMul;
  t["Gemm"] = importGemm;
  t["Conv"] = importConv;
  t["LRN"] = importLrn;
  t["MeanVarianceNormalization"] = importMvn;
  t["LpPool"] = [](ImportContext &c, const NodeView &n) { return importPool(c, n, false, true); };
  t["GlobalLpPool"] = importGlobalLpPool;
  t["MaxPool"] = [](ImportContext &c, const NodeView &n) { return importPool(c, n, true); };
  t["AveragePool"] = [](ImportContext &c, const NodeView &n) { return importPool(c, n, false); };
  t["LayerNormalization"] = importLayerNorm;
  t["BatchNormalization"] = importBatchNorm;
  t["InstanceNormalization"] = importInstanceNorm;
  t["GroupNormalization"] = importGroupNorm;
  t["Softmax"] = [](ImportContext &c, const NodeView &n) { return importSoftmax(c, n, false); };
  t["LogSoftmax"] = [](ImportContext &c, const NodeView &n) { return importSoftmax(c, n, true); };
  t["ReduceSum"] = reduceHandler(Reduce::Sum);
  t["ReduceMean"] = reduceHandler(Reduce::Mean);
  t["ReduceMax"] = reduceHandler(Reduce::Max);
  t["ReduceMin"] = reduceHandler(Reduce::Min);
  t["ReduceProd"] = reduceHandler(Reduce::Prod);
  t["ReduceL1"] = reduceHandler(Reduce::L1);
  t["ReduceL2"] = reduceHandler(Reduce::L2);
  t["ReduceSumSquare"] = reduceHandler(Reduce::SumSquare);
  t["ReduceLogSum"] = reduceHandler(Reduce::LogSum);
  t["ReduceLogSumExp"] = reduceHandler(Reduce::LogSumExp);
  t["ArgMax"] = [](ImportContext &c, const NodeView &n) { return importArgExtreme(c, n, false); };
  t["ArgMin"] = [](ImportContext &c, const NodeView &n) { return importArgExtreme(c, n, true); };
  t["GlobalAveragePool"] = [](ImportContext &c, const NodeView &n) {
    return importGlobalPool(c, n, false);
  };
  t["GlobalMaxPool"] = [](ImportContext &c, const NodeView &n) {
    return importGlobalPool(c, n, true);
  };
}

} // namespace tgc::onnx_import
