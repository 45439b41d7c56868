// CpuAttentionPrelude.cpp — the attention helpers of kernels.cpp's prelude, after its GEMM
// tiles: tg_small_gemm (blocks of at most 8 rows on the register tiles), tg_row_max and
// tg_attention_f32, which runs f32 attention over 4+ query rows as blocks of 8 rows, their
// scores and P*V two small GEMMs against a per-thread transposed copy of each head's keys
// (docs/decisions.md, "CPU attention as blocks of rows"). CpuAttention.cpp emits the call.
#include "codegen/cpu/CpuEmit.h"

namespace tgc::cpu {

namespace {

const char *kAttentionPrelude = R"PRELUDE(/// C[R x 32] = A[R x K] * B[K x 32] for R <= 8 rows (rows lda, ldb, ldc apart): the AVX-512
/// register tile where there is one, else loops the compiler vectorizes over the 32 columns.
template <int R>
inline void tg_small_tile(int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                          float *C, int64_t ldc) {
#if defined(__AVX512F__)
  tg_tile_f32<R>(K, A, lda, B, ldb, C, ldc, false, nullptr);
#else
  float c[R][32] = {};
  for (int64_t k = 0; k < K; ++k) {
    const float *b = B + k * ldb;
    for (int i = 0; i < R; ++i) {
      const float a = A[i * lda + k];
#pragma omp simd
      for (int v = 0; v < 32; ++v) c[i][v] += a * b[v];
    }
  }
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < 32; ++v) C[i * ldc + v] = c[i][v];
#endif
}

/// C[R x N] = A[R x K] * B[K x N], R <= 8: 32-column strips on tg_small_tile, the last N % 32
/// columns by plain loops. On one thread (the caller's): attention's blocks are the parallel unit.
inline void tg_small_gemm(int R, int64_t N, int64_t K, const float *A, int64_t lda,
                          const float *B, int64_t ldb, float *C, int64_t ldc) {
  const int64_t full = N / 32 * 32;
  for (int64_t j = 0; j < full; j += 32) {
    switch (R) {
    case 8: tg_small_tile<8>(K, A, lda, B + j, ldb, C + j, ldc); break;
    case 7: tg_small_tile<7>(K, A, lda, B + j, ldb, C + j, ldc); break;
    case 6: tg_small_tile<6>(K, A, lda, B + j, ldb, C + j, ldc); break;
    case 5: tg_small_tile<5>(K, A, lda, B + j, ldb, C + j, ldc); break;
    case 4: tg_small_tile<4>(K, A, lda, B + j, ldb, C + j, ldc); break;
    case 3: tg_small_tile<3>(K, A, lda, B + j, ldb, C + j, ldc); break;
    case 2: tg_small_tile<2>(K, A, lda, B + j, ldb, C + j, ldc); break;
    default: tg_small_tile<1>(K, A, lda, B + j, ldb, C + j, ldc); break;
    }
  }
  for (int i = 0; i < R; ++i)
    for (int64_t j = full; j < N; ++j) {
      float x = 0;
      for (int64_t k = 0; k < K; ++k) x += A[i * lda + k] * B[k * ldb + j];
      C[i * ldc + j] = x;
    }
}

/// The largest of x[0, n) (-inf when n is 0) and whether any is NaN, in 16 lanes the compiler
/// vectorizes (clang 14 does not vectorize a max reduction written as a loop-carried select).
inline float tg_row_max(const float *x, int64_t n, bool &nan) {
  constexpr int W = 16;
  float mv[W];
  int nv[W];
  for (int l = 0; l < W; ++l) mv[l] = -std::numeric_limits<float>::infinity(), nv[l] = 0;
  int64_t t = 0;
  for (; t + W <= n; t += W)
    for (int l = 0; l < W; ++l) {
      const float v = x[t + l];
      nv[l] |= v != v;
      mv[l] = v > mv[l] ? v : mv[l];
    }
  for (int l = 0; t + l < n; ++l) {
    const float v = x[t + l];
    nv[l] |= v != v;
    mv[l] = v > mv[l] ? v : mv[l];
  }
  float m = mv[0];
  int any = nv[0];
  for (int l = 1; l < W; ++l) m = mv[l] > m ? mv[l] : m, any |= nv[l];
  nan = any != 0;
  return m;
}

/// Scaled dot-product attention in f32 (tg.attention; the interpreter's rules), with an additive
/// mask when `mask` is given: element (b, h, s, t) at b*mb + h*mh + s*ms + t*mt (0 strides where
/// it is broadcast), added to the scaled score.
/// The unit is a block of up to 8 query rows of one (batch, head), on the pool. Its scores are
/// one small GEMM against a transposed copy of the head's keys, made once per head and thread
/// and call: keys in the vector lanes, no horizontal sums (the row kernel summed each q*k
/// across the lanes). Then each row's softmax: causal rows see their first min(s + L - S + 1,
/// L) keys; a row with a NaN or +inf score, or none above -inf, is written 0. Then P*V, one more
/// small GEMM over the values in place, each row scaled by 1 / its sum. Layout "bshd" puts
/// consecutive rows (and keys) of a head H*D apart; "bhsd" D apart.
inline void tg_attention_f32(const float *q, const float *k, const float *v, float *o, int64_t B,
                             int64_t Hq, int64_t Hkv, int64_t S, int64_t L, int64_t D, int64_t Dv,
                             bool bshd, bool causal, float scale, const float *mask, int64_t mb,
                             int64_t mh, int64_t ms, int64_t mt, bool par) {
  constexpr int kRows = 8;
  const int64_t Lp = (L + 31) / 32 * 32, blocks = (S + kRows - 1) / kRows, group = Hq / Hkv;
  const int64_t qs = bshd ? Hq * D : D, os = bshd ? Hq * Dv : Dv;
  const int64_t ks = bshd ? Hkv * D : D, vs = bshd ? Hkv * Dv : Dv;
  const float inf = std::numeric_limits<float>::infinity();
  // Whole heads per chunk where there are enough to go round (each thread transposes a head's
  // keys once), else single blocks.
  const int64_t per = B * Hq >= tgk_nt() ? blocks : 1;
  tg_parallel_for(B * Hq * blocks / per, par, [&](int64_t c0, int64_t c1) {
    const int64_t u0 = c0 * per, u1 = c1 * per;
    static thread_local std::vector<float> buf; // kept across calls: no allocation per run
    const size_t need = (size_t)((D + kRows) * Lp);
    if (buf.size() < need) buf.resize(need);
    float *const kT = buf.data(), *const sc = kT + D * Lp;
    int64_t held = -1; // the (batch, kv head) whose keys kT holds in this call
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t blk = u % blocks, h = (u / blocks) % Hq, b = u / (blocks * Hq);
      const int64_t kh = h / group, s0 = blk * kRows;
      const int R = (int)std::min<int64_t>(kRows, S - s0);
      const float *qb = q + (bshd ? (b * S * Hq + h) * D : (b * Hq + h) * S * D) + s0 * qs;
      float *ob = o + (bshd ? (b * S * Hq + h) * Dv : (b * Hq + h) * S * Dv) + s0 * os;
      const float *vb = v + (bshd ? (b * L * Hkv + kh) * Dv : (b * Hkv + kh) * L * Dv);
      int64_t n[kRows], nMax = 0;
      for (int i = 0; i < R; ++i) {
        n[i] = causal ? std::max<int64_t>(std::min<int64_t>(s0 + i + L - S + 1, L), 0) : L;
        nMax = std::max(nMax, n[i]);
      }
      if (nMax > 0 && b * Hkv + kh != held) {
        held = b * Hkv + kh;
        const float *kb = k + (bshd ? (b * L * Hkv + kh) * D : (b * Hkv + kh) * L * D);
        for (int64_t t = 0; t < L; ++t)
          for (int64_t d = 0; d < D; ++d) kT[d * Lp + t] = kb[t * ks + d];
        for (int64_t d = 0; d < D; ++d)
          for (int64_t t = L; t < Lp; ++t) kT[d * Lp + t] = 0;
      }
      const int64_t cols = (nMax + 31) / 32 * 32; // whole strips of the transposed keys
      if (nMax > 0) tg_small_gemm(R, cols, D, qb, qs, kT, Lp, sc, Lp);
      bool zero[kRows];
      float inv[kRows];
      for (int i = 0; i < R; ++i) {
        float *p = sc + i * Lp;
#pragma omp simd
        for (int64_t t = 0; t < n[i]; ++t) p[t] *= scale;
        if (mask) {
          const float *mr = mask + b * mb + h * mh + (s0 + i) * ms;
#pragma omp simd
          for (int64_t t = 0; t < n[i]; ++t) p[t] += mr[t * mt];
        }
        bool nan = false;
        const float m = tg_row_max(p, n[i], nan);
        zero[i] = nan || m == inf || m == -inf;
        inv[i] = 0;
        if (zero[i]) continue;
        float sum = 0; // at most L terms in (0, 1]
#pragma omp simd reduction(+ : sum)
        for (int64_t t = 0; t < n[i]; ++t) { p[t] = tg_exp<float>(p[t] - m); sum += p[t]; }
        for (int64_t t = n[i]; t < nMax; ++t) p[t] = 0; // keys this row does not see
        inv[i] = 1.0f / sum;
      }
      if (nMax > 0) tg_small_gemm(R, Dv, nMax, sc, Lp, vb, vs, ob, os);
      for (int i = 0; i < R; ++i) {
        float *orow = ob + i * os;
        for (int64_t j = 0; j < Dv; ++j) orow[j] = zero[i] ? 0.0f : orow[j] * inv[i];
      }
    }
  });
}

)PRELUDE";

} // namespace

const char *attentionPrelude() { return kAttentionPrelude; }

} // namespace tgc::cpu
