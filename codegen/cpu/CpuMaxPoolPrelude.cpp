// CpuMaxPoolPrelude.cpp — max pooling in kernels.cpp's prelude (after the convolution templates,
// whose scratch buffers, copies and 16-float vectors it uses): separable, vectorized over output
// columns, split over the thread pool by output rows (the rows the convolution before it wrote
// on the same thread) or by planes.
#include "codegen/cpu/CpuEmit.h"

namespace tgc::cpu {

namespace {

const char *kMaxPoolPrelude = R"PRELUDE(/// Max of two 16-float vectors lane by lane, NaN propagating (as tg_max).
TG_ZMM inline tg_f16x tg_vmax16(tg_f16x a, tg_f16x b) {
  return ((a != a) | (a > b)) ? a : b;
}

/// Columns of a row of tg_maxpool2d's buffer: PL leading -inf columns, the W input columns,
/// and -inf beyond them as far as the last 16-column output chunk's taps reach.
template <int KW, int SW, int DW>
inline int64_t tg_pool_row_cols(int64_t W, int64_t OW, int64_t PL) {
  const int64_t reach = (OW + 15) / 16 * 16 * SW + (KW - 1) * DW + 16;
  return (std::max(PL + W, reach) + 15) / 16 * 16;
}

/// Output rows [o0, o1) of planes [c0, c1) of a 2-D max pooling in f32 (1-D is KH = SH = DH =
/// 1, H = 1): plane c of x [H, W] -> y [OH, OW], PT/PL the leading pads; padding never wins
/// (-inf). Separable, in two passes over a group of planes, so that no load reads a store still
/// in flight (a one-pass pool re-read each row at a one-float offset from its own stores: 2x
/// slower): (1) for each
/// output row, the max of its window's KH input rows (rows outside the plane skipped) into a
/// row of `vm` (Wr columns: the input at column PL, -inf around it, the borders written once
/// per call); (2) for each 16 outputs of a row, tap kx is the run of columns ox*SW + kx*DW: one
/// load for SW = 1, the even lanes of two for SW = 2, gathered for larger strides. A group is
/// enough planes for 16 rows, so that 1-D pools (one row a plane) batch their rows too.
template <int KH, int KW, int SH, int SW, int DH, int DW>
TG_ZMM TG_INLINE_COPIES void tg_maxpool2d_planes(const float *x, float *y, int64_t c0, int64_t c1,
                                                 int64_t o0, int64_t o1, int64_t H, int64_t W,
                                                 int64_t OH, int64_t OW, int64_t PT, int64_t PL,
                                                 int64_t G, float *vm, float *yo) {
  const float lowest = -std::numeric_limits<float>::infinity();
  const int64_t Wr = tg_pool_row_cols<KW, SW, DW>(W, OW, PL), R = o1 - o0;
  for (int64_t r = 0; r < G * R; ++r) { // the borders: [0, PL) and [PL + W, Wr)
    float *v = vm + r * Wr;
    for (int64_t j = 0; j < PL; ++j) v[j] = lowest;
    for (int64_t j = PL + W; j < Wr; ++j) v[j] = lowest;
  }
  for (int64_t g0 = c0; g0 < c1; g0 += G) {
    const int64_t g1 = std::min(c1, g0 + G);
    for (int64_t c = g0; c < g1; ++c)
      for (int64_t oy = o0; oy < o1; ++oy) {
        const float *xc = x + c * H * W;
        float *v = vm + ((c - g0) * R + oy - o0) * Wr + PL;
        const float *rows[KH];
        int n = 0;
#pragma GCC unroll 16
        for (int ky = 0; ky < KH; ++ky) {
          const int64_t iy = oy * SH - PT + ky * DH;
          if (iy >= 0 && iy < H) rows[n++] = xc + iy * W;
        }
        int64_t j = 0;
        if (n == 0) {
          for (; j < W; ++j) v[j] = lowest;
          continue;
        }
        for (; j + 16 <= W; j += 16) {
          tg_f16x m;
          std::memcpy(&m, rows[0] + j, 64);
          for (int k = 1; k < n; ++k) {
            tg_f16x a;
            std::memcpy(&a, rows[k] + j, 64);
            m = tg_vmax16(m, a);
          }
          std::memcpy(v + j, &m, 64);
        }
        for (; j < W; ++j) {
          float m = rows[0][j];
          for (int k = 1; k < n; ++k) m = (m != m || m > rows[k][j]) ? m : rows[k][j];
          v[j] = m;
        }
      }
    for (int64_t c = g0; c < g1; ++c)
      for (int64_t oy = o0; oy < o1; ++oy) {
        const float *v = vm + ((c - g0) * R + oy - o0) * Wr;
        float *dst = y + (c * OH + oy) * OW;
        for (int64_t ox = 0; ox < OW; ox += 16) {
          tg_f16x m;
#pragma GCC unroll 16
          for (int kx = 0; kx < KW; ++kx) {
            const float *t = v + ox * SW + kx * DW;
            tg_f16x a;
            if constexpr (SW == 1) {
              std::memcpy(&a, t, 64);
            } else if constexpr (SW == 2) {
              tg_f16x e, o;
              std::memcpy(&e, t, 64);
              std::memcpy(&o, t + 16, 64);
              a = __builtin_shufflevector(e, o, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                          28, 30);
            } else {
              for (int l = 0; l < 16; ++l) a[l] = t[l * SW];
            }
            m = kx == 0 ? a : tg_vmax16(m, a);
          }
          if (ox + 16 <= OW) {
            std::memcpy(dst + ox, &m, 64);
          } else {
            std::memcpy(yo, &m, 64);
            tg_copy_f32(dst + ox, yo, OW - ox);
          }
        }
      }
  }
}

/// 2-D max pooling in f32 over NC planes (tg_maxpool2d_planes). Planes of kTgPoolRowSplitMin or
/// more output rows split over the pool by rows, every plane's (from 16K window taps): thread t
/// pools the rows of each plane that the convolution before it wrote (its rows are row-split
/// too, tg_conv_lanes2d and tg_conv), so its input is in its own core's cache; smaller planes
/// split by planes (from 64K taps).
constexpr int64_t kTgPoolRowSplitMin = 8;
template <int KH, int KW, int SH, int SW, int DH, int DW>
void tg_maxpool2d(const float *x, float *y, int64_t NC, int64_t H, int64_t W, int64_t OH,
                  int64_t OW, int64_t PT, int64_t PL) {
  const int64_t Wr = tg_pool_row_cols<KW, SW, DW>(W, OW, PL);
  const int64_t work = NC * OH * OW * KH * KW;
  if (OH >= kTgPoolRowSplitMin) {
    tg_parallel_for(OH, work > (1 << 14), [&](int64_t o0, int64_t o1) {
      const int64_t R = o1 - o0, G = (16 + R - 1) / R; // planes a group: 16+ rows
      float *vm = tg_scratch<float, 5>((size_t)(G * R * Wr + 16));
      tg_maxpool2d_planes<KH, KW, SH, SW, DH, DW>(x, y, 0, NC, o0, o1, H, W, OH, OW, PT, PL, G,
                                                  vm, vm + G * R * Wr);
    });
    return;
  }
  const int64_t G = (16 + OH - 1) / OH; // planes a group: 16+ rows
  tg_parallel_for(NC, work > (1 << 16), [&](int64_t c0, int64_t c1) {
    float *vm = tg_scratch<float, 5>((size_t)(G * OH * Wr + 16));
    tg_maxpool2d_planes<KH, KW, SH, SW, DH, DW>(x, y, c0, c1, 0, OH, H, W, OH, OW, PT, PL, G, vm,
                                                vm + G * OH * Wr);
  });
}
)PRELUDE";

} // namespace

const char *maxPoolPrelude() { return kMaxPoolPrelude; }

} // namespace tgc::cpu
