// Attention.cpp — the reference kernel of tg.attention (scaled dot-product attention).
//
// One row (b, h, s) at a time, in double: scores against every key, a max-subtracted softmax,
// then the weighted sum of values. Query head h reads key/value head h / (Hq / Hkv) (GQA/MQA).
// A row whose softmax is undefined (all scores -inf, or a NaN / +inf score) gives 0, like the
// IsNaN → Where(0) guard that PyTorch exports after its softmax. With `bshd` the operands and
// the result are [B, S, H, D] instead of [B, H, S, D]; only the strides change.
#include "compiler/interp/Kernels.h"

#include <cmath>
#include <limits>

namespace tgc::interp {

llvm::Expected<HostTensor> attention(const HostTensor &q, const HostTensor &k, const HostTensor &v,
                                     const HostTensor *mask, double scale, bool causal,
                                     bool bshd) {
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4)
    return kernelError("attention needs rank-4 q, k and v");
  const int hd = bshd ? 2 : 1, sd = bshd ? 1 : 2; // head and sequence dims
  const int64_t B = q.shape[0], Hq = q.shape[hd], S = q.shape[sd], D = q.shape[3];
  const int64_t Hkv = k.shape[hd], T = k.shape[sd], Dv = v.shape[3];
  if (k.shape[0] != B || v.shape[0] != B || k.shape[3] != D || v.shape[hd] != Hkv ||
      v.shape[sd] != T || Hkv <= 0 || Hq % Hkv != 0)
    return kernelError("attention shapes " + shapeToString(q.shape) + ", " +
                       shapeToString(k.shape) + ", " + shapeToString(v.shape) + " do not agree");
  const Shape scoreShape{B, Hq, S, T};
  std::vector<int64_t> mstr(4, 0);
  std::vector<double> m;
  if (mask) {
    if (auto e = checkBroadcast(mask->shape, scoreShape, "mask"))
      return std::move(e);
    mstr = broadcastStrides(mask->shape, scoreShape);
    m = toF64(*mask);
  }
  const std::vector<double> qv = toF64(q), kv = toF64(k), vv = toF64(v);
  const int64_t group = Hq / Hkv;
  const double inf = std::numeric_limits<double>::infinity();
  // Row strides (in rows of D or Dv elements) of batch, head and sequence position.
  struct Strides {
    int64_t b, h, s;
  };
  auto strides = [&](int64_t H, int64_t L) {
    return bshd ? Strides{L * H, 1, H} : Strides{H * L, L, 1};
  };
  const Strides qs = strides(Hq, S), ks = strides(Hkv, T);
  std::vector<double> out(B * Hq * S * Dv, 0.0), sc(T), acc(Dv);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = h / group, krow = b * ks.b + kh * ks.h;
      const double *kb = kv.data() + krow * D;
      const double *vb = vv.data() + krow * Dv;
      for (int64_t s = 0; s < S; ++s) {
        const int64_t qrow = b * qs.b + h * qs.h + s * qs.s;
        const double *qr = qv.data() + qrow * D;
        double mx = -inf;
        bool undefined = false;
        for (int64_t t = 0; t < T; ++t) {
          double x = 0;
          for (int64_t d = 0; d < D; ++d)
            x += qr[d] * kb[t * ks.s * D + d];
          x *= scale;
          if (mask)
            x += m[b * mstr[0] + h * mstr[1] + s * mstr[2] + t * mstr[3]];
          if (causal && t > s + (T - S))
            x = -inf;
          if (std::isnan(x) || x == inf)
            undefined = true;
          sc[t] = x;
          mx = std::max(mx, x);
        }
        double *o = out.data() + qrow * Dv;
        if (undefined || mx == -inf)
          continue; // the row stays 0
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t t = 0; t < T; ++t) {
          const double e = std::exp(sc[t] - mx);
          sum += e;
          for (int64_t j = 0; j < Dv; ++j)
            acc[j] += e * vb[t * ks.s * Dv + j];
        }
        for (int64_t j = 0; j < Dv; ++j)
          o[j] = acc[j] / sum;
      }
    }
  HostTensor r = HostTensor::zeros(q.dtype, bshd ? Shape{B, S, Hq, Dv} : Shape{B, Hq, S, Dv});
  storeF64(r, out);
  return std::move(r);
}

} // namespace tgc::interp
