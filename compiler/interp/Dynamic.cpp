// Dynamic.cpp — the ops with a data-dependent result extent (tg.nonzero, tg.unique, tg.nms).
//
// Each returns its results at their upper-bound shape, zero past the valid part, and a last i64
// scalar: the count of valid entries (docs/design.md, "Data-dependent shapes"). The compiled
// kernels (codegen/common/DynamicEmit) write the same padding, so a later op reading padding
// reads the same values in both. Floats compare as double (f32 boxes as float, as the ONNX
// reference computes IoU), integers as int64.
#include "compiler/interp/Kernels.h"

#include <algorithm>
#include <cmath>

namespace tgc::interp {

namespace {

HostTensor countTensor(int64_t n) {
  HostTensor c = HostTensor::zeros(DType::I64, {});
  storeI64(c, {n});
  return c;
}

/// The input's values, as double (floats) or int64 (the rest) in one vector of double-or-int.
struct Values {
  bool isFloat;
  std::vector<double> f;
  std::vector<int64_t> i;
  explicit Values(const HostTensor &x) : isFloat(!isIntegerLike(x.dtype)) {
    if (isFloat)
      f = toF64(x);
    else
      i = toI64(x);
  }
  bool eq(int64_t a, int64_t b) const { return isFloat ? f[a] == f[b] : i[a] == i[b]; }
  bool lt(int64_t a, int64_t b) const { return isFloat ? f[a] < f[b] : i[a] < i[b]; }
};

} // namespace

llvm::Expected<std::vector<HostTensor>> nonzero(const HostTensor &x) {
  const int64_t r = (int64_t)x.shape.size(), n = x.numel();
  if (r == 0)
    return kernelError("nonzero needs rank >= 1");
  const Values v(x);
  std::vector<int64_t> idx((size_t)(r * n), 0);
  const std::vector<int64_t> st = stridesOf(x.shape);
  int64_t count = 0;
  for (int64_t e = 0; e < n; ++e) {
    if (v.isFloat ? v.f[e] == 0 : v.i[e] == 0)
      continue;
    for (int64_t d = 0; d < r; ++d)
      idx[d * n + count] = (e / st[d]) % x.shape[d];
    ++count;
  }
  HostTensor out = HostTensor::zeros(DType::I64, {r, n});
  storeI64(out, idx);
  return std::vector<HostTensor>{std::move(out), countTensor(count)};
}

llvm::Expected<std::vector<HostTensor>> unique(const HostTensor &x, int64_t axis, bool sorted) {
  if (axis < 0 || axis >= (int64_t)x.shape.size())
    return kernelError("unique: axis out of range");
  const int64_t O = product(x.shape, 0, axis), L = x.shape[axis], I = product(x.shape, axis + 1);
  const Values v(x);
  auto at = [&](int64_t s, int64_t k) { return (k / I) * L * I + s * I + k % I; };
  auto same = [&](int64_t a, int64_t b) {
    for (int64_t k = 0; k < O * I; ++k)
      if (!v.eq(at(a, k), at(b, k)))
        return false;
    return true;
  };
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t k = 0; k < O * I; ++k) {
      if (v.lt(at(a, k), at(b, k)))
        return true;
      if (v.lt(at(b, k), at(a, k)))
        return false;
    }
    return false;
  };
  std::vector<int64_t> first, counts, inverse(L);
  for (int64_t s = 0; s < L; ++s) {
    int64_t j = 0;
    while (j < (int64_t)first.size() && !same(first[j], s))
      ++j;
    if (j == (int64_t)first.size()) {
      first.push_back(s);
      counts.push_back(0);
    }
    ++counts[j];
    inverse[s] = j;
  }
  const int64_t u = (int64_t)first.size();
  std::vector<int64_t> order(u), rank(u);
  for (int64_t j = 0; j < u; ++j)
    order[j] = j;
  if (sorted)
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return less(first[a], first[b]); });
  for (int64_t p = 0; p < u; ++p)
    rank[order[p]] = p;
  HostTensor y = HostTensor::zeros(x.dtype, x.shape);
  const size_t es = x.data.size() / std::max<size_t>(1, (size_t)x.numel());
  std::vector<int64_t> idx(L, 0), cnt(L, 0), inv(L);
  for (int64_t p = 0; p < u; ++p) {
    idx[p] = first[order[p]];
    cnt[p] = counts[order[p]];
    for (int64_t k = 0; k < O * I; ++k)
      std::copy_n(x.data.begin() + at(idx[p], k) * es, es, y.data.begin() + at(p, k) * es);
  }
  for (int64_t s = 0; s < L; ++s)
    inv[s] = rank[inverse[s]];
  std::vector<HostTensor> out{std::move(y)};
  for (auto *vec : {&idx, &inv, &cnt}) {
    HostTensor t = HostTensor::zeros(DType::I64, {L});
    storeI64(t, *vec);
    out.push_back(std::move(t));
  }
  out.push_back(countTensor(u));
  return out;
}

namespace {

/// Whether box a suppresses box b: IoU > threshold, computed in T as the ONNX reference does.
template <typename T> bool suppresses(const T *a, const T *b, bool center, T threshold) {
  T ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
  if (!center) {
    ax0 = std::min(a[1], a[3]), ax1 = std::max(a[1], a[3]);
    ay0 = std::min(a[0], a[2]), ay1 = std::max(a[0], a[2]);
    bx0 = std::min(b[1], b[3]), bx1 = std::max(b[1], b[3]);
    by0 = std::min(b[0], b[2]), by1 = std::max(b[0], b[2]);
  } else {
    ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2, ay1 = a[1] + a[3] / 2;
    bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2, by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
  }
  const T ix0 = std::max(ax0, bx0), ix1 = std::min(ax1, bx1);
  const T iy0 = std::max(ay0, by0), iy1 = std::min(ay1, by1);
  if (ix1 <= ix0 || iy1 <= iy0)
    return false;
  const T inter = (ix1 - ix0) * (iy1 - iy0);
  const T areaA = (ax1 - ax0) * (ay1 - ay0), areaB = (bx1 - bx0) * (by1 - by0);
  const T uni = areaA + areaB - inter;
  if (inter <= 0 || areaA <= 0 || areaB <= 0 || uni <= 0)
    return false;
  return inter / uni > threshold;
}

template <typename T>
std::vector<int64_t> nmsRows(const std::vector<T> &boxes, const std::vector<T> &scores, int64_t B,
                             int64_t C, int64_t N, const NmsParams &p, int64_t &count) {
  const int64_t cap = std::min(p.maxPerClass, N);
  std::vector<int64_t> rows((size_t)(B * C * cap * 3), 0);
  count = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const T *sc = scores.data() + (b * C + c) * N;
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < N; ++i)
        if (!p.hasScoreThreshold || sc[i] > (T)p.scoreThreshold)
          cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(),
                       [&](int64_t x, int64_t y) { return sc[x] > sc[y]; });
      std::vector<int64_t> taken;
      for (int64_t i : cand) {
        if ((int64_t)taken.size() >= cap)
          break;
        bool keep = true;
        for (int64_t t : taken)
          keep = keep && !suppresses(boxes.data() + (b * N + i) * 4, boxes.data() + (b * N + t) * 4,
                                     p.centerPointBox, (T)p.iouThreshold);
        if (!keep)
          continue;
        taken.push_back(i);
        rows[count * 3] = b, rows[count * 3 + 1] = c, rows[count * 3 + 2] = i;
        ++count;
      }
    }
  return rows;
}

} // namespace

llvm::Expected<std::vector<HostTensor>> nms(const HostTensor &boxes, const HostTensor &scores,
                                            const NmsParams &p) {
  if (boxes.shape.size() != 3 || scores.shape.size() != 3 || boxes.shape[2] != 4)
    return kernelError("nms: boxes must be [B, N, 4] and scores [B, C, N]");
  const int64_t B = boxes.shape[0], N = boxes.shape[1], C = scores.shape[1];
  int64_t count = 0;
  std::vector<int64_t> rows;
  if (boxes.dtype == DType::F64) {
    rows = nmsRows(toF64(boxes), toF64(scores), B, C, N, p, count);
  } else {
    const std::vector<double> bd = toF64(boxes), sd = toF64(scores);
    rows = nmsRows(std::vector<float>(bd.begin(), bd.end()),
                   std::vector<float>(sd.begin(), sd.end()), B, C, N, p, count);
  }
  HostTensor out = HostTensor::zeros(DType::I64, {(int64_t)rows.size() / 3, 3});
  storeI64(out, rows);
  return std::vector<HostTensor>{std::move(out), countTensor(count)};
}

} // namespace tgc::interp
