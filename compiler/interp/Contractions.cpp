// Contractions.cpp — matmul, linear, convolution and pooling kernels.
//
// Operands are read into double once; every dot product accumulates in double (integer operands:
// their exact values, summed modulo 2^64 and stored modulo the type's width, as integer arithmetic
// wraps and both backends compute). Loop orders are the
// simple cache-friendly ones (i-k-j for matmul, row dots for linear, precomputed kernel offsets for
// conv): fast enough to run small models in tests, and obviously correct.
#include "compiler/interp/Kernels.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tgc::interp {

namespace {

llvm::Error checkOutSize(const Shape &want, const Shape &outShape) {
  if (product(want) != product(outShape))
    return kernelError("result shape " + shapeToString(outShape) + " should hold " +
                       shapeToString(want));
  return llvm::Error::success();
}

/// The operands of a contraction: integer ones as their exact values (modulo 2^64), others in
/// double.
template <class A> std::vector<A> load(const HostTensor &t);
template <> std::vector<double> load<double>(const HostTensor &t) { return toF64(t); }
template <> std::vector<uint64_t> load<uint64_t>(const HostTensor &t) {
  std::vector<uint64_t> v((size_t)t.numel());
  for (int64_t i = 0; i < t.numel(); ++i)
    v[(size_t)i] = (uint64_t)t.getInt(i);
  return v;
}
void store(HostTensor &t, const std::vector<double> &v) { storeF64(t, v); }
void store(HostTensor &t, const std::vector<uint64_t> &v) { // the low bytes (little-endian)
  const size_t es = dtypeSize(t.dtype);
  for (size_t i = 0; i < v.size(); ++i)
    std::memcpy(t.data.data() + i * es, &v[i], es);
}

/// Calls `f` with a zero of the accumulator type for `t`'s dtype (uint64_t or double).
template <class F> auto byAccumulator(const HostTensor &t, F &&f) {
  return isIntegerDType(t.dtype) ? f(uint64_t(0)) : f(0.0);
}

} // namespace

llvm::Expected<HostTensor> matmul(const HostTensor &a, const HostTensor &b, const Shape &outShape) {
  Shape sa = a.shape, sb = b.shape;
  if (sa.empty() || sb.empty())
    return kernelError("matmul operands must have rank >= 1");
  if (sa.size() == 1)
    sa.insert(sa.begin(), 1);
  if (sb.size() == 1)
    sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k)
    return kernelError("matmul shapes " + shapeToString(a.shape) + " and " +
                       shapeToString(b.shape) + " do not contract");
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  auto batch = broadcastShapes(ba, bb);
  if (!batch)
    return kernelError("matmul batch dims " + shapeToString(ba) + " and " + shapeToString(bb) +
                       " do not broadcast");
  Shape full = *batch;
  full.push_back(m);
  full.push_back(n);
  if (auto e = checkOutSize(full, outShape))
    return std::move(e);

  // Batch strides in elements: a broadcast batch dim re-reads the same matrix.
  std::array<std::vector<int64_t>, 2> strides{broadcastStrides(ba, *batch),
                                              broadcastStrides(bb, *batch)};
  for (int64_t &s : strides[0])
    s *= m * k;
  for (int64_t &s : strides[1])
    s *= k * n;
  return byAccumulator(a, [&](auto zero) -> llvm::Expected<HostTensor> {
    using A = decltype(zero);
    std::vector<A> va = load<A>(a), vb = load<A>(b), r(product(outShape)), acc(n);
    forEachIndex<2>(*batch, strides, {0, 0}, [&](int64_t bi, const std::array<int64_t, 2> &o) {
      const A *pa = va.data() + o[0], *pb = vb.data() + o[1];
      for (int64_t i = 0; i < m; ++i) {
        std::fill(acc.begin(), acc.end(), zero);
        for (int64_t kk = 0; kk < k; ++kk) {
          A x = pa[i * k + kk];
          const A *row = pb + kk * n;
          for (int64_t j = 0; j < n; ++j)
            acc[j] += x * row[j];
        }
        std::copy(acc.begin(), acc.end(), r.begin() + (bi * m + i) * n);
      }
    });
    HostTensor out = HostTensor::zeros(a.dtype, outShape);
    store(out, r);
    return std::move(out);
  });
}

llvm::Expected<HostTensor> linear(const HostTensor &x, const HostTensor &w, const HostTensor *bias,
                                  const Shape &outShape) {
  if (x.shape.empty() || w.shape.size() != 2 || w.shape[1] != x.shape.back())
    return kernelError("linear weight " + shapeToString(w.shape) + " does not fit input " +
                       shapeToString(x.shape));
  int64_t k = w.shape[1], n = w.shape[0], m = k ? x.numel() / k : product(x.shape, 0, x.shape.size() - 1);
  if (bias && bias->numel() != n)
    return kernelError("linear bias " + shapeToString(bias->shape) + " should have " +
                       std::to_string(n) + " elements");
  Shape full(x.shape.begin(), x.shape.end() - 1);
  full.push_back(n);
  if (auto e = checkOutSize(full, outShape))
    return std::move(e);
  return byAccumulator(x, [&](auto zero) -> llvm::Expected<HostTensor> {
    using A = decltype(zero);
    std::vector<A> vx = load<A>(x), vw = load<A>(w), r(m * n, zero);
    std::vector<A> vb = bias ? load<A>(*bias) : std::vector<A>(n, zero);
    for (int64_t i = 0; i < m; ++i) {
      const A *xr = vx.data() + i * k;
      for (int64_t j = 0; j < n; ++j) {
        const A *wr = vw.data() + j * k;
        A acc = zero;
        for (int64_t kk = 0; kk < k; ++kk)
          acc += xr[kk] * wr[kk];
        r[i * n + j] = acc + vb[j];
      }
    }
    HostTensor out = HostTensor::zeros(x.dtype, outShape);
    store(out, r);
    return std::move(out);
  });
}

/// The input offset of each tap of a sliding window (kernel `kSp`) at output position `oIdx`, or
/// -1 where the tap lands in padding (conv and pool).
static void tapOffsets(const std::vector<int64_t> &oIdx, const Shape &inSp,
                       const std::vector<int64_t> &inStr, const Shape &kSp,
                       const std::vector<int64_t> &strides, const std::vector<int64_t> &pads,
                       const std::vector<int64_t> &dilations, std::vector<int64_t> &offs) {
  for (size_t kp = 0; kp < offs.size(); ++kp) {
    int64_t off = 0;
    for (int64_t d = (int64_t)kSp.size() - 1, rem = (int64_t)kp; d >= 0 && off >= 0; --d) {
      int64_t ki = rem % kSp[d];
      rem /= kSp[d];
      int64_t pos = oIdx[d] * strides[d] - pads[d] + ki * dilations[d];
      off = pos < 0 || pos >= inSp[d] ? -1 : off + pos * inStr[d];
    }
    offs[kp] = off;
  }
}

llvm::Expected<HostTensor> conv(const HostTensor &x, const HostTensor &w, const HostTensor *bias,
                                const ConvParams &p, const Shape &outShape) {
  size_t rank = x.shape.size();
  if (rank < 3 || w.shape.size() != rank || outShape.size() != rank)
    return kernelError("conv input, weight and result need one rank >= 3");
  size_t sp = rank - 2;
  if (p.strides.size() != sp || p.dilations.size() != sp || p.pads.size() != 2 * sp)
    return kernelError("conv needs one stride and dilation per spatial dim and two pads");
  int64_t batch = x.shape[0], c = x.shape[1], mOut = w.shape[0], cg = w.shape[1], g = p.group;
  if (g <= 0 || cg * g != c || mOut % g != 0 || outShape[0] != batch || outShape[1] != mOut)
    return kernelError("conv channels of input " + shapeToString(x.shape) + " and weight " +
                       shapeToString(w.shape) + " do not match group " + std::to_string(g));
  if (bias && bias->numel() != mOut)
    return kernelError("conv bias must have one element per output channel");

  Shape inSp(x.shape.begin() + 2, x.shape.end()), kSp(w.shape.begin() + 2, w.shape.end()),
      outSp(outShape.begin() + 2, outShape.end());
  std::vector<int64_t> inStr = stridesOf(inSp);
  int64_t inVol = product(inSp), kVol = product(kSp), outVol = product(outSp), mPerG = mOut / g;

  return byAccumulator(x, [&](auto zero) -> llvm::Expected<HostTensor> {
    using A = decltype(zero);
    std::vector<A> vx = load<A>(x), vw = load<A>(w), r(product(outShape));
    std::vector<A> vb = bias ? load<A>(*bias) : std::vector<A>(mOut, zero);
    std::vector<int64_t> offs(kVol), oIdx(sp);
    for (int64_t op = 0; op < outVol; ++op) {
      for (int64_t d = sp - 1, rem = op; d >= 0; --d) {
        oIdx[d] = rem % outSp[d];
        rem /= outSp[d];
      }
      tapOffsets(oIdx, inSp, inStr, kSp, p.strides, p.pads, p.dilations, offs);
      for (int64_t nb = 0; nb < batch; ++nb)
        for (int64_t m = 0; m < mOut; ++m) {
          int64_t grp = m / mPerG;
          A acc = vb[m];
          for (int64_t ci = 0; ci < cg; ++ci) {
            const A *xs = vx.data() + (nb * c + grp * cg + ci) * inVol;
            const A *ws = vw.data() + (m * cg + ci) * kVol;
            for (int64_t kp = 0; kp < kVol; ++kp)
              if (offs[kp] >= 0)
                acc += xs[offs[kp]] * ws[kp];
          }
          r[(nb * mOut + m) * outVol + op] = acc;
        }
    }
    HostTensor out = HostTensor::zeros(x.dtype, outShape);
    store(out, r);
    return std::move(out);
  });
}

llvm::Expected<HostTensor> pool(const HostTensor &x, const PoolParams &p, const Shape &outShape) {
  size_t rank = x.shape.size();
  if (rank < 3 || outShape.size() != rank || outShape[0] != x.shape[0] ||
      outShape[1] != x.shape[1])
    return kernelError("pool input and result need one rank >= 3 and the same N and C");
  size_t sp = rank - 2;
  if (p.kernel.size() != sp || p.strides.size() != sp || p.dilations.size() != sp ||
      p.pads.size() != 2 * sp)
    return kernelError("pool needs one kernel dim, stride and dilation per spatial dim and two pads");
  Shape inSp(x.shape.begin() + 2, x.shape.end()), outSp(outShape.begin() + 2, outShape.end());
  std::vector<int64_t> inStr = stridesOf(inSp);
  int64_t inVol = product(inSp), kVol = product(p.kernel), outVol = product(outSp);
  int64_t planes = x.shape[0] * x.shape[1];
  std::vector<double> vx = toF64(x), r(product(outShape));
  std::vector<int64_t> offs(kVol), oIdx(sp);
  for (int64_t op = 0; op < outVol; ++op) {
    for (int64_t d = sp - 1, rem = op; d >= 0; --d) {
      oIdx[d] = rem % outSp[d];
      rem /= outSp[d];
    }
    tapOffsets(oIdx, inSp, inStr, p.kernel, p.strides, p.pads, p.dilations, offs);
    for (int64_t pl = 0; pl < planes; ++pl) {
      const double *xs = vx.data() + pl * inVol;
      double acc = p.max ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t count = 0;
      for (int64_t kp = 0; kp < kVol; ++kp) {
        if (offs[kp] < 0)
          continue;
        const double v = xs[offs[kp]];
        if (!p.max)
          acc += v;
        else if (!std::isnan(acc) && (std::isnan(v) || v > acc)) // NaN propagates
          acc = v;
        ++count;
      }
      r[pl * outVol + op] = p.max ? acc : acc / (double)(p.countIncludePad ? kVol : count);
    }
  }
  HostTensor out = HostTensor::zeros(x.dtype, outShape);
  storeF64(out, r);
  return std::move(out);
}

} // namespace tgc::interp
