// Attention.cpp — the reference kernel of tg.attention (scaled dot-product attention).
//
// One row (b, h, s) at a time, in double: scores against every key, a max-subtracted softmax,
// then the weighted sum of values. Query head h reads key/value head h / (Hq / Hkv) (GQA/MQA).
// A row whose softmax is undefined (all scores -inf, or a NaN / +inf score) gives 0, like the
// IsNaN → Where(0) guard that PyTorch exports after its softmax.
#include "compiler/interp/Kernels.h"

#include <cmath>
#include <limits>

namespace tgc::interp {

llvm::Expected<HostTensor> attention(const HostTensor &q, const HostTensor &k, const HostTensor &v,
                                     const HostTensor *mask, double scale, bool causal) {
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4)
    return kernelError("attention needs rank-4 q, k and v");
  const int64_t B = q.shape[0], Hq = q.shape[1], S = q.shape[2], D = q.shape[3];
  const int64_t Hkv = k.shape[1], T = k.shape[2], Dv = v.shape[3];
  if (k.shape[0] != B || v.shape[0] != B || k.shape[3] != D || v.shape[1] != Hkv ||
      v.shape[2] != T || Hkv <= 0 || Hq % Hkv != 0)
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
  std::vector<double> out(B * Hq * S * Dv, 0.0), sc(T), acc(Dv);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = h / group;
      const double *kb = kv.data() + (b * Hkv + kh) * T * D;
      const double *vb = vv.data() + (b * Hkv + kh) * T * Dv;
      for (int64_t s = 0; s < S; ++s) {
        const double *qr = qv.data() + ((b * Hq + h) * S + s) * D;
        double mx = -inf;
        bool undefined = false;
        for (int64_t t = 0; t < T; ++t) {
          double x = 0;
          for (int64_t d = 0; d < D; ++d)
            x += qr[d] * kb[t * D + d];
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
        double *o = out.data() + ((b * Hq + h) * S + s) * Dv;
        if (undefined || mx == -inf)
          continue; // the row stays 0
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t t = 0; t < T; ++t) {
          const double e = std::exp(sc[t] - mx);
          sum += e;
          for (int64_t j = 0; j < Dv; ++j)
            acc[j] += e * vb[t * Dv + j];
        }
        for (int64_t j = 0; j < Dv; ++j)
          o[j] = acc[j] / sum;
      }
    }
  HostTensor r = HostTensor::zeros(q.dtype, {B, Hq, S, Dv});
  storeF64(r, out);
  return std::move(r);
}

} // namespace tgc::interp
