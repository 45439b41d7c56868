// CpuConvPrelude.cpp — the convolution templates of kernels.cpp's prelude: im2col + GEMM for
// regular convolutions, a direct vectorized kernel for depthwise ones.
//
// Why two methods (docs/decisions.md, "CPU convolutions"): a convolution with many input
// channels per group is a GEMM of [M, C·k] × [C·k, P] once its input is unfolded (im2col), and
// OpenBLAS runs that near peak; a depthwise convolution (one input channel per group) is a
// GEMM with one row per group, which no BLAS does well (the old path made C calls of M = 1), so
// it is computed directly: each stride phase of the zero-padded input plane is stored apart,
// which makes every tap of the window a contiguous load at a constant offset, and the output
// plane is computed flat in blocks of 32 floats (four 8-float accumulators) with the window
// unrolled at compile time (KH, KW, strides and dilations are template arguments).
#include "codegen/cpu/CpuEmit.h"

namespace tgc::cpu {

namespace {

const char *kConvPrelude = R"PRELUDE(/// Scratch reused across calls by one thread (im2col columns, padded planes); one buffer per
/// (type, tag), so a kernel can hold several at once.
template <class T, int Tag = 0> T *tg_scratch(size_t n) {
  static thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

/// Unfolds output rows [oy0, oy0 + OHb) of one group's input [Cg, H, W] for a 2-D window (1-D
/// is H = 1): row (c, ky, kx) of `col` [Cg*KH*KW, OHb*OW] holds the input under that tap at
/// each of those output positions (0 in the padding). Rows run in parallel when `parallel` and
/// large.
template <class T>
void tg_im2col2d(const T *x, T *col, int64_t Cg, int64_t H, int64_t W, int64_t KH, int64_t KW,
                 int64_t oy0, int64_t OHb, int64_t OW, int64_t SH, int64_t SW, int64_t PT,
                 int64_t PL, int64_t DH, int64_t DW, bool parallel) {
  const int64_t rows = Cg * KH * KW, P = OHb * OW;
  tg_parallel_for(rows, parallel && rows * P > 32768, [&](int64_t r0, int64_t r1) {
  for (int64_t row = r0; row < r1; ++row) {
    const int64_t c = row / (KH * KW), ky = row / KW % KH, kx = row % KW;
    const T *xc = x + c * H * W;
    T *dst = col + row * P;
    // Output columns whose input column ox*SW - PL + kx*DW lies in [0, W): [lo, hi).
    const int64_t off = kx * DW - PL;
    int64_t lo = off >= 0 ? 0 : (-off + SW - 1) / SW;
    int64_t hi = W - off <= 0 ? 0 : (W - off + SW - 1) / SW;
    lo = std::min(lo, OW);
    hi = std::max(lo, std::min(hi, OW));
    for (int64_t oy = oy0; oy < oy0 + OHb; ++oy, dst += OW) {
      const int64_t iy = oy * SH - PT + ky * DH;
      if (iy < 0 || iy >= H) {
        std::fill(dst, dst + OW, T(0));
        continue;
      }
      const T *src = xc + iy * W + off;
      std::fill(dst, dst + lo, T(0));
      if (SW == 1) std::copy(src + lo, src + hi, dst + lo);
      else for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox * SW];
      std::fill(dst + hi, dst + OW, T(0));
    }
  }
  });
}

/// C[M, Nc] (leading dim ldc) = A[M, K] * B[K, Nc] (leading dim ldb) + bias[m] per row (when
/// given). f32 starts C as the bias (one pass over it); f16/bf16 add it before their one rounding.
template <class T>
void tg_conv_gemm(const T *A, const T *B, int64_t ldb, T *C, int64_t ldc, int64_t M, int64_t Nc,
                  int64_t K, const T *bias) {
  if constexpr (kLowp<T>) {
    if (M > 0 && Nc > 0 && K > 0) {
      tg_gemm_lowp<T>(false, M, Nc, K, A, K, B, ldb, C, ldc, bias, true);
      return;
    }
  }
  if constexpr (std::is_same<T, float>::value) {
    if (bias && M > 0 && Nc > 0 && K > 0) {
      for (int64_t m = 0; m < M; ++m) std::fill(C + m * ldc, C + m * ldc + Nc, bias[m]);
      tg_blas_gemm<float>(false, M, Nc, K, A, K, B, ldb, C, ldc, 1.0f);
      return;
    }
  }
  tg_gemm<T>(false, M, Nc, K, A, K, B, ldb, C, ldc);
  if (bias)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t p = 0; p < Nc; ++p) C[m * ldc + p] = (T)(C[m * ldc + p] + bias[m]);
}

/// Bytes of im2col columns unfolded at a time: a block of output rows whose columns stay in the
/// L2 cache while the GEMM packs them (unfolding all at once went to memory and back).
constexpr int64_t kIm2colBlockBytes = 256 * 1024;

/// N-d convolution, NC[D]HW, by im2col + GEMM per (image, group). Shapes: xs = [N, C, in...],
/// ws = [M, C/group, k...], ys = [N, M, out...]; pads = [begin..., end...].
/// 1-D and 2-D windows work in blocks of output rows: each block unfolds its columns
/// (tg_im2col2d; a 1x1 window at stride 1 without padding reads the input as it is) and
/// multiplies them. With several threads the blocks of all images and groups run in parallel
/// on the pool (tg_parallel_for), one GEMM per thread (OpenBLAS is always on one thread; a single block's GEMM
/// is split by tg_blas_gemm instead). More dims unfold whole, element by element.
template <class T>
void tg_conv(const T *x, const T *w, const T *bias, T *y, int sp, const int64_t *xs,
             const int64_t *ws, const int64_t *ys, const int64_t *st, const int64_t *pads,
             const int64_t *dil, int64_t group) {
  const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = C / group, Mg = M / group;
  int64_t KP = 1, P = 1, XP = 1;
  bool pointwise = true;
  for (int d = 0; d < sp; ++d) {
    KP *= ws[d + 2];
    P *= ys[d + 2];
    XP *= xs[d + 2];
    pointwise = pointwise && ws[d + 2] == 1 && st[d] == 1 && pads[d] == 0 && pads[d + sp] == 0 &&
                ys[d + 2] == xs[d + 2];
  }
  const int64_t rows = Cg * KP;
  if (sp <= 2) {
    const bool two = sp == 2; // else 1-D: H = 1
    const int64_t OH = two ? ys[2] : 1, OW = ys[sp + 1], nt = tgk_nt(), images = N * group;
    int64_t OHb = pointwise ? OH : std::max<int64_t>(1, std::min<int64_t>(
        OH, kIm2colBlockBytes / (int64_t)sizeof(T) / std::max<int64_t>(1, rows * OW)));
    if (images < nt) { // enough blocks for every thread
      const int64_t per = (nt + images - 1) / images;
      OHb = std::min(OHb, std::max<int64_t>(1, (OH + per - 1) / per));
    }
    const int64_t blocks = (OH + OHb - 1) / OHb, items = images * blocks;
    const bool par = nt > 1 && items > 1 && Mg * rows * P * images > (1 << 17);
    tg_parallel_for(items, par, [&](int64_t i0, int64_t i1) {
      T *col = pointwise ? nullptr : tg_scratch<T>((size_t)(rows * OHb * OW));
      for (int64_t it = i0; it < i1; ++it) {
        const int64_t img = it / blocks, oy = it % blocks * OHb, nb = std::min(OHb, OH - oy);
        const int64_t n = img / group, g = img % group;
        const T *xin = x + (n * C + g * Cg) * XP, *wg = w + g * Mg * rows;
        T *out = y + (n * M + g * Mg) * P + oy * OW;
        const T *bg = bias ? bias + g * Mg : nullptr;
        if (pointwise) {
          tg_conv_gemm<T>(wg, xin + oy * OW, P, out, P, Mg, nb * OW, rows, bg);
          continue;
        }
        tg_im2col2d<T>(xin, col, Cg, two ? xs[2] : 1, xs[sp + 1], two ? ws[2] : 1, ws[sp + 1],
                       oy, nb, OW, two ? st[0] : 1, st[sp - 1], two ? pads[0] : 0,
                       pads[sp - 1], two ? dil[0] : 1, dil[sp - 1], !par);
        tg_conv_gemm<T>(wg, col, nb * OW, out, P, Mg, nb * OW, rows, bg);
      }
    });
    return;
  }
  T *col = pointwise ? nullptr : tg_scratch<T>((size_t)(rows * P));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < group; ++g) {
      const T *xin = x + (n * C + g * Cg) * XP, *wg = w + g * Mg * rows;
      const T *bg = bias ? bias + g * Mg : nullptr;
      T *out = y + (n * M + g * Mg) * P;
      if (pointwise) {
        tg_conv_gemm<T>(wg, xin, P, out, P, Mg, P, rows, bg);
        continue;
      }
      tg_parallel_for(rows, rows * P > 32768, [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        const int64_t c = row / KP;
        int64_t kc[8], oc[8];
        int64_t kr = row % KP;
        for (int d = sp - 1; d >= 0; --d) { kc[d] = kr % ws[d + 2]; kr /= ws[d + 2]; }
        T *dst = col + row * P;
        const T *xc = xin + c * XP;
        for (int d = 0; d < sp; ++d) oc[d] = 0;
        for (int64_t p = 0; p < P; ++p) {
          int64_t off = 0;
          bool inside = true;
          for (int d = 0; d < sp; ++d) {
            const int64_t ic = oc[d] * st[d] - pads[d] + kc[d] * dil[d];
            inside = inside && ic >= 0 && ic < xs[d + 2];
            off = off * xs[d + 2] + ic;
          }
          dst[p] = inside ? xc[off] : T(0);
          for (int d = sp - 1; d >= 0; --d) { // advance the output coordinate
            if (++oc[d] < ys[d + 2]) break;
            oc[d] = 0;
          }
        }
      }
      });
      tg_conv_gemm<T>(wg, col, P, out, P, Mg, P, rows, bg);
    }
}

/// out[a * osa + b] = in[a + b * isb] for a < A, b < B (one 2-D transpose of a bigger one: the
/// dim contiguous in the input is a, the one contiguous in the output b), in 8 x 8 tiles so that
/// both the strided reads and the strided writes stay within 8 cache lines. Tiles of b run on
/// the pool when `parallel` and large.
template <class T>
void tg_transpose2d(int64_t A, int64_t B, int64_t isb, int64_t osa, const T *in, T *out,
                    bool parallel) {
  constexpr int64_t t = 8;
  tg_parallel_for((B + t - 1) / t, parallel && A * B >= (1 << 15), [&](int64_t j0, int64_t j1) {
    for (int64_t a0 = 0; a0 < A; a0 += t) {
      const int64_t a1 = std::min(A, a0 + t);
      for (int64_t b0 = j0 * t; b0 < std::min(B, j1 * t); b0 += t) {
        const int64_t b1 = std::min(B, b0 + t);
        for (int64_t a = a0; a < a1; ++a)
          for (int64_t b = b0; b < b1; ++b) out[a * osa + b] = in[a + b * isb];
      }
    }
  });
}

/// The rows copied are short (W or OW floats): loops the compiler vectorizes inline, not library
/// calls (clang's no_builtin keeps it from turning them into memcpy; other compilers ignore it).
#if defined(__clang__)
#define TG_INLINE_COPIES __attribute__((no_builtin("memcpy", "memmove", "memset")))
#else
#define TG_INLINE_COPIES
#endif

/// Copies n floats between buffers that do not overlap, 8 at a time (the last 8 overlapping the
/// block before them).
TG_INLINE_COPIES inline void tg_copy_f32(float *d, const float *s, int64_t n) {
  typedef float v8 __attribute__((vector_size(32)));
  if (n < 8) {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  v8 t;
  for (int64_t i = 0; i + 8 <= n; i += 8) {
    std::memcpy(&t, s + i, 32);
    std::memcpy(d + i, &t, 32);
  }
  std::memcpy(&t, s + n - 8, 32);
  std::memcpy(d + n - 8, &t, 32);
}

/// The SH x SW stride phases of one zero-padded input plane xc [H, W] (leading pads PT, PL),
/// each Hq x Wq and `stride` floats apart in ph: phase (a, b) holds padded[r*SH + a][j*SW + b],
/// so every tap of a strided window is a contiguous read (the depthwise and direct kernels).
template <int SH, int SW>
TG_INLINE_COPIES inline void tg_phase_planes(const float *xc, int64_t H, int64_t W, int64_t PT,
                                             int64_t PL, int64_t Hq, int64_t Wq, int64_t stride,
                                             float *ph) {
  for (int64_t i = 0; i < SH * SW * stride; ++i) ph[i] = 0.0f;
  for (int a = 0; a < SH; ++a)
    for (int b = 0; b < SW; ++b) {
      float *dst = ph + (a * SW + b) * stride;
      const int64_t off = b - PL; // input column of phase column j: j*SW + off
      const int64_t lo = off >= 0 ? 0 : (-off + SW - 1) / SW;
      const int64_t end = W - off <= 0 ? 0 : (W - off + SW - 1) / SW;
      const int64_t hi = std::max(lo, std::min(Wq, end));
      for (int64_t r = 0; r < Hq; ++r) {
        const int64_t iy = r * SH + a - PT;
        if (iy < 0 || iy >= H) continue;
        const float *src = xc + iy * W + off;
        if constexpr (SW == 1) tg_copy_f32(dst + r * Wq + lo, src + lo, hi - lo);
        else for (int64_t j = lo; j < hi; ++j) dst[r * Wq + j] = src[j * SW];
      }
    }
}

/// Depthwise 2-D convolution in f32 (group = C, M = C*mult; 1-D is KH = SH = DH = 1, H = 1):
/// x [N, C, H, W], w [M, 1, KH, KW], y [N, M, OH, OW], PT/PL the leading pads. Per (image,
/// channel): the zero-padded plane is stored as SH*SW stride phases of Hq x Wq (phase (a, b)
/// holds padded[r*SH + a][j*SW + b]), so tap (ky, kx) at output (oy, ox) is phase
/// ((ky*DH) % SH, (kx*DW) % SW) at flat index q + floor(ky*DH / SH)*Wq + floor(kx*DW / SW) with
/// q = oy*Wq + ox: contiguous in q. The output is computed over all q < OH*Wq (the columns past
/// OW are discarded) in blocks of 32 with the window unrolled, then copied out.
template <int KH, int KW, int SH, int SW, int DH, int DW>
TG_INLINE_COPIES void tg_conv_dw2d(const float *x, const float *w, const float *bias, float *y,
                                    int64_t N, int64_t C, int64_t mult, int64_t H, int64_t W,
                                    int64_t OH, int64_t OW, int64_t PT, int64_t PL) {
  typedef float v8 __attribute__((vector_size(32)));
  constexpr int64_t EH = (KH - 1) * DH / SH, EW = (KW - 1) * DW / SW; // extra phase rows/cols
  const int64_t Hq = OH + EH, Wq = OW + EW, Q = OH * Wq, QB = (Q + 31) / 32 * 32;
  const int64_t stride = Hq * Wq + (QB - Q) + EW + 8; // one phase, with room for the last block
  const int64_t work = N * C * mult * QB * KH * KW;
  tg_parallel_for(N * C, work > (1 << 16), [&](int64_t nc0, int64_t nc1) {
    float *ph = tg_scratch<float>((size_t)(SH * SW * stride + QB));
    float *acc = ph + SH * SW * stride;
    for (int64_t nc = nc0; nc < nc1; ++nc) {
      const float *xc = x + nc * H * W;
      tg_phase_planes<SH, SW>(xc, H, W, PT, PL, Hq, Wq, stride, ph);
      for (int64_t k = 0; k < mult; ++k) {
        const int64_t m = nc % C * mult + k, img = nc / C;
        const float *wk = w + m * KH * KW;
        const float b0 = bias ? bias[m] : 0.0f;
        for (int64_t q = 0; q < QB; q += 32) {
          v8 s0 = b0 - (v8){}, s1 = s0, s2 = s0, s3 = s0;
          for (int ky = 0; ky < KH; ++ky)
            for (int kx = 0; kx < KW; ++kx) {
              const float *p = ph + ((ky * DH) % SH * SW + (kx * DW) % SW) * stride + q +
                               (ky * DH / SH) * Wq + kx * DW / SW;
              const float t = wk[ky * KW + kx];
              v8 l0, l1, l2, l3;
              std::memcpy(&l0, p, 32);
              std::memcpy(&l1, p + 8, 32);
              std::memcpy(&l2, p + 16, 32);
              std::memcpy(&l3, p + 24, 32);
              s0 += t * l0;
              s1 += t * l1;
              s2 += t * l2;
              s3 += t * l3;
            }
          std::memcpy(acc + q, &s0, 32);
          std::memcpy(acc + q + 8, &s1, 32);
          std::memcpy(acc + q + 16, &s2, 32);
          std::memcpy(acc + q + 24, &s3, 32);
        }
        float *yo = y + (img * C * mult + m) * OH * OW;
        for (int64_t oy = 0; oy < OH; ++oy) tg_copy_f32(yo + oy * OW, acc + oy * Wq, OW);
      }
    }
  });
}

/// Direct 2-D convolution in f32 for few output channels per group (group = 1; 1-D is KH = SH =
/// DH = 1, H = 1): x [N, C, H, W], w [M, C, KH, KW], y [N, M, OH, OW], PT/PL the leading pads.
/// The input planes are stored zero-padded as stride phases, as in tg_conv_dw2d, so each tap
/// (c, ky, kx) of output q = oy*Wq + ox reads a contiguous run at a constant offset: no im2col
/// matrix and no GEMM packing, which for M of 12-64 cost as much as the multiply. Outputs are
/// computed 4 channels x 16 positions at a time (eight 8-float accumulators; per tap 2 loads,
/// 4 broadcasts from the weights repacked as [M/4][C][KH][KW][4], 8 FMAs). Per image, the
/// planes are filled channel-parallel, then runs of 16-position blocks go to the pool.
template <int KH, int KW, int SH, int SW, int DH, int DW>
TG_INLINE_COPIES void tg_conv_direct2d(const float *x, const float *w, const float *bias, float *y,
                                        int64_t N, int64_t C, int64_t M, int64_t H, int64_t W,
                                        int64_t OH, int64_t OW, int64_t PT, int64_t PL) {
  typedef float v8 __attribute__((vector_size(32)));
  constexpr int64_t EH = (KH - 1) * DH / SH, EW = (KW - 1) * DW / SW, MB = 4;
  const int64_t Hq = OH + EH, Wq = OW + EW, Q = OH * Wq, QB = (Q + 15) / 16 * 16;
  const int64_t stride = Hq * Wq + (QB - Q) + EW + 8; // one phase, with room for the last block
  const int64_t plane = SH * SW * stride, MBs = (M + MB - 1) / MB, taps = C * KH * KW;
  // Weights as [M/4][C][KH][KW][4] (zero past M), planes per image, both reused across calls.
  float *wp = tg_scratch<float, 1>((size_t)(MBs * taps * MB));
  for (int64_t mb = 0; mb < MBs; ++mb)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t i = 0; i < MB; ++i)
        wp[(mb * taps + t) * MB + i] = mb * MB + i < M ? w[(mb * MB + i) * taps + t] : 0.0f;
  float *ph = tg_scratch<float, 2>((size_t)(C * plane));
  for (int64_t n = 0; n < N; ++n) {
    tg_parallel_for(C, C * plane > (1 << 15), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const float *xc = x + (n * C + c) * H * W;
        float *pc = ph + c * plane;
        tg_phase_planes<SH, SW>(xc, H, W, PT, PL, Hq, Wq, stride, pc);
      }
    });
    // Blocks of 16 output positions: each chunk of the pool takes a run of them, for all
    // channel blocks (splitting by channel blocks had every thread read every plane).
    const int64_t QN = QB / 16;
    tg_parallel_for(QN, M * taps * QB >= (1 << 20), [&](int64_t j0, int64_t j1) {
      float *acc = tg_scratch<float, 3>((size_t)(MB * QB));
      const int64_t q0 = j0 * 16, q1 = j1 * 16;
      for (int64_t mb = 0; mb < MBs; ++mb) {
        const float *wb = wp + mb * taps * MB;
        float b4[MB];
        for (int64_t i = 0; i < MB; ++i)
          b4[i] = bias && mb * MB + i < M ? bias[mb * MB + i] : 0.0f;
        for (int64_t q = q0; q < q1; q += 16) {
          v8 s00 = b4[0] - (v8){}, s01 = s00, s10 = b4[1] - (v8){}, s11 = s10;
          v8 s20 = b4[2] - (v8){}, s21 = s20, s30 = b4[3] - (v8){}, s31 = s30;
          const float *wt = wb;
          for (int64_t c = 0; c < C; ++c) {
            const float *pc = ph + c * plane + q;
            for (int ky = 0; ky < KH; ++ky)
              for (int kx = 0; kx < KW; ++kx, wt += MB) {
                const float *p = pc + ((ky * DH) % SH * SW + (kx * DW) % SW) * stride +
                                 (ky * DH / SH) * Wq + kx * DW / SW;
                v8 l0, l1;
                std::memcpy(&l0, p, 32);
                std::memcpy(&l1, p + 8, 32);
                s00 += wt[0] * l0; s01 += wt[0] * l1;
                s10 += wt[1] * l0; s11 += wt[1] * l1;
                s20 += wt[2] * l0; s21 += wt[2] * l1;
                s30 += wt[3] * l0; s31 += wt[3] * l1;
              }
          }
          std::memcpy(acc + q, &s00, 32); std::memcpy(acc + q + 8, &s01, 32);
          std::memcpy(acc + QB + q, &s10, 32); std::memcpy(acc + QB + q + 8, &s11, 32);
          std::memcpy(acc + 2 * QB + q, &s20, 32); std::memcpy(acc + 2 * QB + q + 8, &s21, 32);
          std::memcpy(acc + 3 * QB + q, &s30, 32); std::memcpy(acc + 3 * QB + q + 8, &s31, 32);
        }
        // The valid columns of the output rows that meet [q0, q1).
        const int64_t e = std::min(q1, Q);
        for (int64_t i = 0; i < MB && mb * MB + i < M; ++i) {
          float *yo = y + (n * M + mb * MB + i) * OH * OW;
          for (int64_t oy = q0 / Wq; oy < OH && oy * Wq < e; ++oy) {
            const int64_t lo = std::max(q0, oy * Wq), hi = std::min(e, oy * Wq + OW);
            if (hi > lo) tg_copy_f32(yo + oy * OW + (lo - oy * Wq), acc + i * QB + lo, hi - lo);
          }
        }
      }
    });
  }
}

#if defined(__clang__)
/// Lets clang keep 16-float vectors in zmm registers (-march=x86-64-v4 otherwise prefers ymm,
/// splitting each into two and spilling the lanes kernel's accumulators).
#define TG_ZMM __attribute__((min_vector_width(512)))
#else
#define TG_ZMM
#endif
typedef float tg_f16x __attribute__((vector_size(64)));

/// Rows [r0, r1) of C zero-padded input planes (plane c of x [C, H, W] to dst + c * plane), Wp
/// columns each: padded row r is input row r - PT shifted right by PL, zeros outside [H, W]. On
/// AVX-512 each 16 columns are one zero-masked load (the lanes over the input row; masked-off
/// lanes never fault) and one masked store, the masks made once per call: the rows are short
/// (6-65 columns), and per-row scalar loops for the pad columns and the tail cost ~10 ns a row,
/// a quarter of cnn_small's time at one thread.
TG_INLINE_COPIES inline void tg_pad_rows(const float *x, int64_t C, int64_t H, int64_t W,
                                         int64_t PT, int64_t PL, int64_t r0, int64_t r1,
                                         int64_t Wp, float *dst, int64_t plane) {
#if defined(__AVX512F__)
  typedef float v16 __attribute__((vector_size(64)));
  constexpr int kMaxBlocks = 64; // rows of up to 1024 columns this way
  const int64_t nb = (Wp + 15) / 16;
  if (nb <= kMaxBlocks) {
    unsigned short keep[kMaxBlocks], valid[kMaxBlocks];
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t j = b * 16, n = std::min<int64_t>(16, Wp - j);
      const int64_t lo = std::max<int64_t>(0, PL - j), hi = std::min<int64_t>(n, PL + W - j);
      keep[b] = (unsigned short)((1u << n) - 1);
      valid[b] = hi > lo ? (unsigned short)(((1u << hi) - 1) & ~((1u << lo) - 1)) : 0;
    }
    const v16 zero = {};
    for (int64_t c = 0; c < C; ++c) {
      float *d = dst + c * plane;
      for (int64_t r = r0; r < r1; ++r, d += Wp) {
        const int64_t iy = r - PT;
        if (iy < 0 || iy >= H) {
          for (int64_t b = 0; b < nb; ++b) __builtin_ia32_storeups512_mask(d + b * 16, zero, keep[b]);
          continue;
        }
        const float *src = x + (c * H + iy) * W - PL; // column j of the row is src[j]
        for (int64_t b = 0; b < nb; ++b)
          __builtin_ia32_storeups512_mask(
              d + b * 16, __builtin_ia32_loadups512_mask(src + b * 16, zero, valid[b]), keep[b]);
      }
    }
    return;
  }
#endif
  for (int64_t c = 0; c < C; ++c) {
    const float *xc = x + c * H * W;
    float *d = dst + c * plane;
    for (int64_t r = r0; r < r1; ++r, d += Wp) {
      const int64_t iy = r - PT;
      const int64_t lo = iy < 0 || iy >= H ? Wp : std::min(Wp, std::max<int64_t>(0, PL));
      const int64_t hi = std::max(lo, std::min(Wp, PL + W));
      for (int64_t j = 0; j < lo; ++j) d[j] = 0.0f;
      if (hi > lo) tg_copy_f32(d + lo, xc + iy * W + (lo - PL), hi - lo);
      for (int64_t j = hi; j < Wp; ++j) d[j] = 0.0f;
    }
  }
}

/// Transposes 16x16 floats held as 16 row vectors, in place: four butterfly stages (blocks of
/// 8, 4, 2 and 1 swapped across the diagonal), 64 two-source shuffles instead of 256 scalar
/// moves.
TG_ZMM __attribute__((always_inline)) inline void tg_transpose16(tg_f16x *r) {
  for (int i = 0; i < 8; ++i) {
    const tg_f16x a = r[i], b = r[i + 8];
    r[i] = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    r[i + 8] = __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29,
                                       30, 31);
  }
  for (int i = 0; i < 16; ++i)
    if (!(i & 4)) {
      const tg_f16x a = r[i], b = r[i + 4];
      r[i] = __builtin_shufflevector(a, b, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26,
                                     27);
      r[i + 4] = __builtin_shufflevector(a, b, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29,
                                         30, 31);
    }
  for (int i = 0; i < 16; ++i)
    if (!(i & 2)) {
      const tg_f16x a = r[i], b = r[i + 2];
      r[i] = __builtin_shufflevector(a, b, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28,
                                     29);
      r[i + 2] = __builtin_shufflevector(a, b, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15,
                                         30, 31);
    }
  for (int i = 0; i < 16; i += 2) {
    const tg_f16x a = r[i], b = r[i + 1];
    r[i] = __builtin_shufflevector(a, b, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    r[i + 1] = __builtin_shufflevector(a, b, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15,
                                       31);
  }
}

/// The lanes kernel's epilogue when a convolution has none: its values as they are.
struct tg_no_epilogue {
  float operator()(float v) const { return v; }
};

/// Positions [P0, P0 + 16) of P channels-last accumulators (16 channels each) to nm channel
/// planes ystride apart (a 16x16 transpose in registers; np valid positions of the P), each
/// value through `epi(value)` (the fused kernel's elementwise epilogue). Always inlined with
/// constant P and P0, so the accumulators stay in registers.
template <int P, int P0, class Epi>
TG_ZMM __attribute__((always_inline)) inline void tg_lanes_store(const tg_f16x *acc, int64_t nm,
                                                                 int64_t np, float *y,
                                                                 int64_t ystride, const Epi &epi) {
  constexpr int n = P - P0 < 16 ? P - P0 : 16; // positions in this chunk
  tg_f16x t[16];
#pragma GCC unroll 16
  for (int p = 0; p < 16; ++p) t[p] = p < n ? acc[P0 + (p < n ? p : 0)] : (tg_f16x){};
  tg_transpose16(t);
  const int64_t valid = std::min<int64_t>(n, np - P0);
  for (int64_t i = 0; i < nm; ++i) {
    float *yo = y + i * ystride + P0;
    if constexpr (std::is_same<Epi, tg_no_epilogue>::value) {
      if (valid == n) std::memcpy(yo, &t[i], sizeof(float) * n);
      else for (int64_t p = 0; p < valid; ++p) yo[p] = t[i][p];
    } else {
      if (valid == n) {
#pragma GCC unroll 16
        for (int p = 0; p < n; ++p) yo[p] = epi(t[i][p]);
      } else {
        for (int64_t p = 0; p < valid; ++p) yo[p] = epi(t[i][p]);
      }
    }
  }
}

/// Channels last: positions [0, np) of P accumulators (16 channels each, nm valid) stored as
/// they are, position p's channels at y + p*M (the output [.., OW, M]), each value through
/// `epi(value)`. No transpose: this is the layout the accumulators have.
template <int P, class Epi>
TG_ZMM __attribute__((always_inline)) inline void tg_lanes_store_last(const tg_f16x *acc,
                                                                      int64_t nm, int64_t np,
                                                                      float *y, int64_t M,
                                                                      const Epi &epi) {
#if defined(__AVX512F__)
  const unsigned short mask = (unsigned short)((1u << nm) - 1); // nm of the 16 lanes
#endif
#pragma GCC unroll 32
  for (int p = 0; p < P; ++p) {
    if (p >= np) break;
    float *yo = y + p * M;
    tg_f16x v = acc[p];
    if constexpr (!std::is_same<Epi, tg_no_epilogue>::value) {
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) v[i] = epi(v[i]);
    }
    if (nm == 16) {
      std::memcpy(yo, &v, 64);
    } else {
#if defined(__AVX512F__)
      __builtin_ia32_storeups512_mask(yo, v, mask); // a masked store: no write past channel nm
#else
      float t[16];
      std::memcpy(t, &v, 64);
      int64_t i = 0;
      if (nm & 8) std::memcpy(yo, t, 32), i = 8;
      if (nm & 4) std::memcpy(yo + i, t + i, 16), i += 4;
      for (; i < nm; ++i) yo[i] = t[i];
#endif
    }
  }
}

/// One output row oy of B blocks of 16 output channels (the lanes kernel below): px is the
/// padded planes at input row oy*SH, wg the group's blocked weights, bg its 16*B biases, yrow
/// y[m0][oy] with channel planes ystride apart. P output positions at a time: B*P 16-float
/// accumulators; per tap B weight loads and P broadcasts of the input feed B*P FMAs. CL: y is
/// channels last (yrow at the row's first position and channel m0, ystride = M).
template <int KH, int KW, int SH, int SW, int DH, int DW, int B, int P, bool CL, class Epi>
TG_ZMM TG_INLINE_COPIES inline void tg_conv_lanes_row(const float *px, int64_t plane, int64_t Wp,
                                                     const float *wg, const float *bg, int64_t C,
                                                     int64_t OW, int64_t M, int64_t m0,
                                                     float *yrow, int64_t ystride,
                                                     const Epi &epi) {
  typedef float v16 __attribute__((vector_size(64)));
  constexpr int64_t KK = KH * KW;
  for (int64_t ox0 = 0; ox0 < OW; ox0 += P) {
    v16 acc[B][P];
#pragma GCC unroll 8
    for (int b = 0; b < B; ++b) {
      v16 bv;
      std::memcpy(&bv, bg + b * 16, 64);
#pragma GCC unroll 32
      for (int p = 0; p < P; ++p) acc[b][p] = bv;
    }
    const float *pr = px + ox0 * SW;
    for (int64_t c = 0; c < C; ++c) {
      const float *pc = pr + c * plane;
      const float *wc = wg + c * KK * 16;
#pragma GCC unroll 16
      for (int ky = 0; ky < KH; ++ky)
#pragma GCC unroll 16
        for (int kx = 0; kx < KW; ++kx) {
          const float *r = pc + ky * DH * Wp + kx * DW;
          v16 wv[B];
#pragma GCC unroll 8
          for (int b = 0; b < B; ++b)
            std::memcpy(&wv[b], wc + b * C * KK * 16 + (ky * KW + kx) * 16, 64);
#pragma GCC unroll 32
          for (int p = 0; p < P; ++p) {
            const float v = r[p * SW];
#pragma GCC unroll 8
            for (int b = 0; b < B; ++b) acc[b][p] += wv[b] * v;
          }
        }
    }
    // Channels-last accumulators to the channel planes, 16 positions at a time.
    const int64_t np = std::min<int64_t>(P, OW - ox0);
#pragma GCC unroll 8
    for (int b = 0; b < B; ++b) {
      const int64_t nm = std::min<int64_t>(16, M - m0 - b * 16);
      if constexpr (CL) {
        tg_lanes_store_last<P>(acc[b], nm, np, yrow + ox0 * ystride + b * 16, ystride, epi);
      } else {
        float *yb = yrow + b * 16 * ystride + ox0;
        tg_lanes_store<P, 0>(acc[b], nm, np, yb, ystride, epi);
        if constexpr (P > 16) tg_lanes_store<P, 16>(acc[b], nm, np, yb, ystride, epi);
      }
    }
  }
}

/// tg_conv_lanes_row for a last group of nb < B channel blocks (instantiated for B-1 down to 1).
template <int KH, int KW, int SH, int SW, int DH, int DW, int B, int P, bool CL, class Epi>
inline void tg_conv_lanes_rest(int64_t nb, const float *px, int64_t plane, int64_t Wp,
                               const float *wg, const float *bg, int64_t C, int64_t OW, int64_t M,
                               int64_t m0, float *yrow, int64_t ystride, const Epi &epi) {
  if constexpr (B > 1) {
    if (nb == B - 1)
      tg_conv_lanes_row<KH, KW, SH, SW, DH, DW, B - 1, P, CL>(px, plane, Wp, wg, bg, C, OW, M,
                                                              m0, yrow, ystride, epi);
    else
      tg_conv_lanes_rest<KH, KW, SH, SW, DH, DW, B - 1, P, CL>(nb, px, plane, Wp, wg, bg, C, OW,
                                                               M, m0, yrow, ystride, epi);
  }
}

/// Direct 2-D convolution in f32 with the output channels in vector lanes (group = 1; 1-D is
/// KH = SH = DH = 1, H = 1): x [N, C, H, W], w blocked as [ceil(M/16), C, KH, KW, 16] (zeros
/// past M; tg.conv's weight_block, written at compile time by tgc-cpu-weight-layout), y [N, M,
/// OH, OW], PT/PL the leading pads. The work is (output row, group of B channel blocks) units,
/// row-major; each chunk of the pool first copies the input rows its units read, zero-padded,
/// into its thread's scratch (no stride phases: a stride only spaces the broadcasts; the rows
/// are in the cache of the thread that reads them). Unlike tg_conv_direct2d nothing is
/// computed past a row's end (P positions at a time, the last block's extra columns
/// discarded), so 4x4 and 8x8 planes run at the rate of large ones. `epi(value)`
/// is the fused kernel's elementwise epilogue (an activation, a residual add), applied as the
/// values are stored instead of in a second pass over y. CL: y is [N, OH, OW, M] (tg.conv's
/// channels_last), each position's channels stored as the accumulator holds them.
template <int KH, int KW, int SH, int SW, int DH, int DW, int B, int P, bool CL = false,
          class Epi = tg_no_epilogue>
TG_INLINE_COPIES void tg_conv_lanes2d(const float *x, const float *w, const float *bias, float *y,
                                      int64_t N, int64_t C, int64_t M, int64_t H, int64_t W,
                                      int64_t OH, int64_t OW, int64_t PT, int64_t PL,
                                      const Epi &epi = Epi()) {
  constexpr int64_t KK = KH * KW;
  const int64_t OWB = (OW + P - 1) / P * P, Wp = (OWB - 1) * SW + (KW - 1) * DW + 1;
  const int64_t MBs = (M + 15) / 16, G = (MBs + B - 1) / B;
  float *bp = tg_scratch<float, 4>((size_t)(MBs * 16)); // biases per lane, zeros past M
  for (int64_t m = 0; m < MBs * 16; ++m) bp[m] = bias && m < M ? bias[m] : 0.0f;
  for (int64_t n = 0; n < N; ++n) {
    tg_parallel_for(OH * G, M * C * KK * OH * OW >= (1 << 17), [&](int64_t u0, int64_t u1) {
      // Padded rows [r0, r1) of every channel: those of output rows u0 / G .. (u1 - 1) / G.
      const int64_t r0 = u0 / G * SH, r1 = (u1 - 1) / G * SH + (KH - 1) * DH + 1;
      const int64_t plane = (r1 - r0) * Wp;
      float *ph = tg_scratch<float, 2>((size_t)(C * plane));
      tg_pad_rows(x + n * C * H * W, C, H, W, PT, PL, r0, r1, Wp, ph, plane);
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t oy = u / G, g = u % G, nb = std::min<int64_t>(B, MBs - g * B);
        const float *px = ph + (oy * SH - r0) * Wp, *wg = w + g * B * C * KK * 16;
        const float *bg = bp + g * B * 16;
        float *yrow = CL ? y + (n * OH + oy) * OW * M + g * B * 16
                         : y + ((n * M + g * B * 16) * OH + oy) * OW;
        const int64_t ystride = CL ? M : OH * OW;
        if (nb == B)
          tg_conv_lanes_row<KH, KW, SH, SW, DH, DW, B, P, CL>(px, plane, Wp, wg, bg, C, OW, M,
                                                              g * B * 16, yrow, ystride, epi);
        else
          tg_conv_lanes_rest<KH, KW, SH, SW, DH, DW, B, P, CL>(nb, px, plane, Wp, wg, bg, C, OW,
                                                               M, g * B * 16, yrow, ystride, epi);
      }
    });
  }
}

)PRELUDE";

} // namespace

const char *convPrelude() { return kConvPrelude; }

} // namespace tgc::cpu
