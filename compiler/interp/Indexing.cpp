// Indexing.cpp — cumulative sum, scatter-elements and top-k (tg.cumsum, tg.scatter_elements,
// tg.topk).
//
// Floats are computed in double and integers in int64 (stored back wrapped), so an integer sum
// beyond 2^53 stays exact. Each follows the ONNX reference order: the scatter applies its updates
// in row-major order of the indices (a later duplicate wins or combines after an earlier one), and
// top-k orders by value, then by lower index. A scatter index outside [-dim, dim) writes nothing,
// as the compiled kernels do.
#include "compiler/interp/Kernels.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

namespace tgc::interp {

namespace {

/// A tensor's (outer, axis, inner) split around `axis`.
struct Lines {
  int64_t O, L, I;
};
Lines linesOf(const Shape &s, int64_t axis) {
  return {product(s, 0, axis), s[axis], product(s, axis + 1)};
}

/// Whether `axis` lies in [0, rank).
llvm::Error checkAxisIn(int64_t axis, const Shape &s) {
  if (axis < 0 || axis >= (int64_t)s.size())
    return kernelError("axis " + std::to_string(axis) + " out of range for shape " +
                       shapeToString(s));
  return llvm::Error::success();
}

/// Runs `f` over values read as double (floats), int64 (integers) or uint64 (u64, for its
/// unsigned order), then stores them back.
template <typename F> HostTensor numeric(const HostTensor &x, F &&f) {
  HostTensor out = HostTensor::zeros(x.dtype, x.shape);
  if (x.dtype == DType::U64) {
    std::vector<int64_t> bits = toI64(x);
    std::vector<uint64_t> v(bits.begin(), bits.end());
    f(v);
    storeI64(out, std::vector<int64_t>(v.begin(), v.end()));
  } else if (isIntegerLike(x.dtype)) {
    std::vector<int64_t> v = toI64(x);
    f(v);
    storeI64(out, v);
  } else {
    std::vector<double> v = toF64(x);
    f(v);
    storeF64(out, v);
  }
  return out;
}

} // namespace

llvm::Expected<HostTensor> cumsum(const HostTensor &x, int64_t axis, bool exclusive, bool reverse) {
  if (auto e = checkAxisIn(axis, x.shape))
    return std::move(e);
  const Lines l = linesOf(x.shape, axis);
  return numeric(x, [&](auto &v) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    for (int64_t o = 0; o < l.O; ++o)
      for (int64_t i = 0; i < l.I; ++i) {
        V acc = 0;
        for (int64_t k = 0; k < l.L; ++k) {
          const int64_t at = (o * l.L + (reverse ? l.L - 1 - k : k)) * l.I + i;
          const V e = v[at];
          if (!exclusive)
            acc += e;
          v[at] = acc;
          if (exclusive)
            acc += e;
        }
      }
  });
}

llvm::Expected<HostTensor> scatterElements(const HostTensor &data, const HostTensor &indices,
                                           const HostTensor &updates, int64_t axis,
                                           Scatter reduction) {
  if (auto e = checkAxisIn(axis, data.shape))
    return std::move(e);
  const size_t rank = data.shape.size();
  bool ok = indices.shape.size() == rank && updates.shape == indices.shape;
  for (size_t d = 0; ok && d < rank; ++d)
    ok = d == (size_t)axis || indices.shape[d] <= data.shape[d];
  if (!ok)
    return kernelError("indices " + shapeToString(indices.shape) + " and updates " +
                       shapeToString(updates.shape) + " do not fit data " +
                       shapeToString(data.shape));
  if (!isIntegerLike(indices.dtype) || indices.dtype == DType::Bool)
    return kernelError(llvm::Twine("indices must be integers, got ") + dtypeName(indices.dtype));
  if (updates.dtype != data.dtype)
    return kernelError("updates must have the data's dtype");
  const std::vector<int64_t> idx = toI64(indices);
  std::vector<int64_t> dst = stridesOf(data.shape);
  const int64_t axisStride = dst[axis], A = data.shape[axis];
  dst[axis] = 0;                               // the index supplies the axis coordinate
  std::vector<int64_t> target(idx.size(), -1); // data offset of each update, -1: skipped
  forEachIndex<1>(indices.shape, {dst}, {0}, [&](int64_t i, const std::array<int64_t, 1> &o) {
    int64_t a = idx[i] < 0 ? idx[i] + A : idx[i];
    if (a >= 0 && a < A)
      target[i] = o[0] + a * axisStride;
  });
  auto apply = [&](auto &v, const auto &u) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    for (size_t i = 0; i < target.size(); ++i) {
      if (target[i] < 0)
        continue;
      V &d = v[target[i]];
      const V w = u[i];
      switch (reduction) {
      case Scatter::None:
        d = w;
        break;
      case Scatter::Add:
        d = d + w;
        break;
      case Scatter::Mul:
        d = d * w;
        break;
      case Scatter::Max:
        d = (d != d || w != w) ? (d != d ? d : w) : std::max(d, w);
        break;
      case Scatter::Min:
        d = (d != d || w != w) ? (d != d ? d : w) : std::min(d, w);
        break;
      }
    }
  };
  return numeric(data, [&](auto &v) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::vector<int64_t>>) {
      apply(v, toI64(updates));
    } else if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::vector<uint64_t>>) {
      const std::vector<int64_t> bits = toI64(updates);
      apply(v, std::vector<uint64_t>(bits.begin(), bits.end()));
    } else
      apply(v, toF64(updates));
  });
}

llvm::Expected<std::vector<HostTensor>> topk(const HostTensor &x, int64_t axis, int64_t k,
                                             bool largest) {
  if (auto e = checkAxisIn(axis, x.shape))
    return std::move(e);
  const Lines l = linesOf(x.shape, axis);
  if (k < 0 || k > l.L)
    return kernelError("k = " + std::to_string(k) + " outside [0, " + std::to_string(l.L) + "]");
  Shape os = x.shape;
  os[axis] = k;
  std::vector<HostTensor> out{HostTensor::zeros(x.dtype, os), HostTensor::zeros(DType::I64, os)};
  std::vector<int64_t> pos(l.L), outIdx(product(os));
  auto select = [&](const auto &v, auto &r) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    // NaN counts as larger than every number; equal values keep the lower index first.
    auto greater = [](V a, V b) { return (a != a && b == b) || a > b; };
    for (int64_t o = 0; o < l.O; ++o)
      for (int64_t i = 0; i < l.I; ++i) {
        auto at = [&](int64_t j) { return v[(o * l.L + j) * l.I + i]; };
        std::iota(pos.begin(), pos.end(), 0);
        std::stable_sort(pos.begin(), pos.end(), [&](int64_t a, int64_t b) {
          return largest ? greater(at(a), at(b)) : greater(at(b), at(a));
        });
        for (int64_t j = 0; j < k; ++j) {
          r[(o * k + j) * l.I + i] = at(pos[j]);
          outIdx[(o * k + j) * l.I + i] = pos[j];
        }
      }
  };
  if (x.dtype == DType::U64) { // unsigned order
    const std::vector<int64_t> bits = toI64(x);
    std::vector<uint64_t> r(product(os));
    select(std::vector<uint64_t>(bits.begin(), bits.end()), r);
    storeI64(out[0], std::vector<int64_t>(r.begin(), r.end()));
  } else if (isIntegerLike(x.dtype)) {
    std::vector<int64_t> r(product(os));
    select(toI64(x), r);
    storeI64(out[0], r);
  } else {
    std::vector<double> r(product(os));
    select(toF64(x), r);
    storeF64(out[0], r);
  }
  storeI64(out[1], outIdx);
  return std::move(out);
}

} // namespace tgc::interp
