// Reductions.cpp — reduce_*, argmax, softmax and layer_norm kernels.
//
// Reductions accumulate in double (int64 for integer tensors, so integer sums stay exact).
// Softmax subtracts the row maximum; layer_norm uses the two-pass (biased) variance.
#include "compiler/interp/Kernels.h"

#include <cmath>
#include <limits>

namespace tgc::interp {

namespace {

bool isNaN(double v) { return std::isnan(v); }
bool isNaN(int64_t) { return false; }
bool isNaN(uint64_t) { return false; }

template <typename T>
std::vector<T> reduceValues(Reduce kind, const std::vector<T> &in, const Shape &shape,
                            const std::vector<bool> &reduced, int64_t outSize) {
  Shape keep = shape;
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d])
      keep[d] = 1;
  std::vector<int64_t> strides = broadcastStrides(keep, shape);
  T init = 0;
  if (kind == Reduce::Prod)
    init = 1;
  else if (kind == Reduce::Max)
    init = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  else if (kind == Reduce::Min)
    init = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::max();
  std::vector<T> acc(outSize, init);
  forEachIndex<1>(shape, {strides}, {0}, [&](int64_t i, const std::array<int64_t, 1> &o) {
    T &a = acc[o[0]];
    T v = in[i];
    switch (kind) {
    case Reduce::Sum: case Reduce::Mean: a += v; break;
    case Reduce::Prod: a *= v; break;
    case Reduce::Max: if (!isNaN(a) && (isNaN(v) || v > a)) a = v; break;
    case Reduce::Min: if (!isNaN(a) && (isNaN(v) || v < a)) a = v; break;
    }
  });
  if (kind == Reduce::Mean) {
    int64_t count = product(shape) / std::max<int64_t>(outSize, 1);
    for (T &a : acc) // integer means truncate toward zero; the mean of nothing is NaN (or 0)
      a = count ? a / static_cast<T>(count)
                : (std::numeric_limits<T>::has_quiet_NaN ? std::numeric_limits<T>::quiet_NaN() : 0);
  }
  return acc;
}

/// Splits `shape` around `axis` into outer (before), size (at) and inner (after).
void around(const Shape &shape, int64_t axis, int64_t &outer, int64_t &size, int64_t &inner) {
  outer = product(shape, 0, axis);
  size = shape[axis];
  inner = product(shape, axis + 1);
}

llvm::Error checkAxis(int64_t axis, const Shape &shape) {
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    return kernelError("axis " + std::to_string(axis) + " out of range for shape " +
                       shapeToString(shape));
  return llvm::Error::success();
}

/// `t` broadcast to `shape` (leading size-1 dims beyond its rank dropped), as doubles.
llvm::Expected<std::vector<double>> expandTo(const HostTensor &t, const Shape &shape,
                                             const char *what) {
  Shape s = t.shape;
  while (s.size() > shape.size() && s.front() == 1)
    s.erase(s.begin());
  if (auto e = checkBroadcast(s, shape, what))
    return std::move(e);
  std::vector<double> v = toF64(t), r(product(shape));
  forEachIndex<1>(shape, {broadcastStrides(s, shape)}, {0},
                  [&](int64_t i, const std::array<int64_t, 1> &o) { r[i] = v[o[0]]; });
  return r;
}

} // namespace

llvm::Expected<HostTensor> reduce(Reduce kind, const HostTensor &x, const std::vector<int64_t> &axes,
                                  const Shape &outShape) {
  std::vector<bool> reduced(x.shape.size(), false);
  int64_t outSize = 1;
  for (int64_t a : axes) {
    if (auto e = checkAxis(a, x.shape))
      return std::move(e);
    if (reduced[a])
      return kernelError("axis " + std::to_string(a) + " repeated");
    reduced[a] = true;
  }
  for (size_t d = 0; d < x.shape.size(); ++d)
    outSize *= reduced[d] ? 1 : x.shape[d];
  if (outSize != product(outShape))
    return kernelError("result shape " + shapeToString(outShape) + " does not match the reduction");
  HostTensor out = HostTensor::zeros(x.dtype, outShape);
  if (axes.empty()) {
    out.data = x.data;
    return std::move(out);
  }
  if (x.dtype == DType::U64) { // unsigned order and division; the bits are stored back
    std::vector<int64_t> bits = toI64(x);
    std::vector<uint64_t> u(bits.begin(), bits.end());
    std::vector<uint64_t> r = reduceValues<uint64_t>(kind, u, x.shape, reduced, outSize);
    storeI64(out, std::vector<int64_t>(r.begin(), r.end()));
  } else if (isIntegerLike(x.dtype))
    storeI64(out, reduceValues<int64_t>(kind, toI64(x), x.shape, reduced, outSize));
  else
    storeF64(out, reduceValues<double>(kind, toF64(x), x.shape, reduced, outSize));
  return std::move(out);
}

llvm::Expected<HostTensor> argmax(const HostTensor &x, int64_t axis, bool selectLast,
                                  const Shape &outShape) {
  if (auto e = checkAxis(axis, x.shape))
    return std::move(e);
  int64_t outer, n, inner;
  around(x.shape, axis, outer, n, inner);
  if (n == 0)
    return kernelError("argmax over an empty axis");
  if (outer * inner != product(outShape))
    return kernelError("result shape " + shapeToString(outShape) + " does not match argmax");
  std::vector<int64_t> r(outer * inner);
  auto scan = [&](const auto &v) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const auto *p = v.data() + o * n * inner + in;
        int64_t best = 0;
        for (int64_t j = 1; j < n; ++j) {
          auto a = p[j * inner], b = p[best * inner];
          bool greater = (isNaN(a) && !isNaN(b)) || a > b; // NaN counts as the maximum
          bool equal = a == b || (isNaN(a) && isNaN(b));
          if (greater || (selectLast && equal))
            best = j;
        }
        r[o * inner + in] = best;
      }
  };
  // Integers compare exactly (64-bit values beyond 2^53 would tie in double); u64 unsigned.
  if (x.dtype == DType::U64) {
    std::vector<int64_t> bits = toI64(x);
    scan(std::vector<uint64_t>(bits.begin(), bits.end()));
  } else if (isIntegerLike(x.dtype)) {
    scan(toI64(x));
  } else {
    scan(toF64(x));
  }
  HostTensor out = HostTensor::zeros(DType::I64, outShape);
  storeI64(out, r);
  return std::move(out);
}

llvm::Expected<HostTensor> softmax(const HostTensor &x, int64_t axis, bool log) {
  if (auto e = checkAxis(axis, x.shape))
    return std::move(e);
  int64_t outer, n, inner;
  around(x.shape, axis, outer, n, inner);
  std::vector<double> v = toF64(x);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double *p = v.data() + o * n * inner + in;
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < n; ++j)
        mx = std::max(mx, p[j * inner]);
      for (int64_t j = 0; j < n; ++j)
        sum += std::exp(p[j * inner] - mx);
      double logSum = std::log(sum);
      for (int64_t j = 0; j < n; ++j)
        p[j * inner] = log ? p[j * inner] - mx - logSum : std::exp(p[j * inner] - mx) / sum;
    }
  HostTensor out = HostTensor::zeros(x.dtype, x.shape);
  storeF64(out, v);
  return std::move(out);
}

llvm::Expected<HostTensor> layerNorm(const HostTensor &x, const HostTensor *scale,
                                     const HostTensor *bias, int64_t axis, double epsilon) {
  if (auto e = checkAxis(axis, x.shape))
    return std::move(e);
  Shape norm(x.shape.begin() + axis, x.shape.end());
  int64_t outer = product(x.shape, 0, axis), n = product(norm);
  std::vector<double> s(n, 1.0), b(n, 0.0);
  // Scale/bias with more (non-unit) dims than the normalized ones broadcast against the whole
  // input (e.g. [N, M] on [rows, N, M], axis -1): then they hold one row of n values per outer
  // index, and sRow/bRow step through those rows.
  int64_t sRow = 0, bRow = 0;
  auto target = [&](const HostTensor &t, int64_t &row) -> const Shape & {
    Shape ts = t.shape;
    while (ts.size() > norm.size() && ts.front() == 1)
      ts.erase(ts.begin());
    row = ts.size() > norm.size() ? n : 0;
    return row ? x.shape : norm;
  };
  if (scale) {
    auto v = expandTo(*scale, target(*scale, sRow), "scale");
    if (!v)
      return v.takeError();
    s = std::move(*v);
  }
  if (bias) {
    auto v = expandTo(*bias, target(*bias, bRow), "bias");
    if (!v)
      return v.takeError();
    b = std::move(*v);
  }
  std::vector<double> v = toF64(x);
  for (int64_t o = 0; o < outer; ++o) {
    double *p = v.data() + o * n, mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j)
      mean += p[j];
    mean /= n;
    for (int64_t j = 0; j < n; ++j)
      var += (p[j] - mean) * (p[j] - mean);
    var /= n;
    double inv = 1.0 / std::sqrt(var + epsilon);
    for (int64_t j = 0; j < n; ++j)
      p[j] = (p[j] - mean) * inv * s[o * sRow + j] + b[o * bRow + j];
  }
  HostTensor out = HostTensor::zeros(x.dtype, x.shape);
  storeF64(out, v);
  return std::move(out);
}

llvm::Expected<HostTensor> rmsNorm(const HostTensor &x, const HostTensor *scale, int64_t axis,
                                   double epsilon) {
  if (auto e = checkAxis(axis, x.shape))
    return std::move(e);
  Shape norm(x.shape.begin() + axis, x.shape.end());
  int64_t outer = product(x.shape, 0, axis), n = product(norm);
  std::vector<double> s(n, 1.0);
  if (scale) {
    auto v = expandTo(*scale, norm, "scale");
    if (!v)
      return v.takeError();
    s = std::move(*v);
  }
  std::vector<double> v = toF64(x);
  for (int64_t o = 0; o < outer; ++o) {
    double *p = v.data() + o * n, sq = 0;
    for (int64_t j = 0; j < n; ++j)
      sq += p[j] * p[j];
    double inv = 1.0 / std::sqrt(sq / n + epsilon);
    for (int64_t j = 0; j < n; ++j)
      p[j] = p[j] * inv * s[j];
  }
  HostTensor out = HostTensor::zeros(x.dtype, x.shape);
  storeF64(out, v);
  return std::move(out);
}

} // namespace tgc::interp
