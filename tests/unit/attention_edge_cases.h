// attention_edge_cases.h — tg.attention cases no test model reaches, shared by
// the CUDA codegen test (NVRTC compiles them, no GPU) and the CUDA runtime test
// (they match the interpreter on a GPU): additive masks with -inf entries and a
// fully masked query row, causal with S < T, GQA in layout "bshd", head dims
// 128 / 96 / 40 / 160 (tensor-core, tiled and one-warp-per-row kernels), key
// counts (T = 70, 260, 300) that leave partial tiles or give every warp of a
// block its own key tiles, long queries (S = 260, 300: many query tiles,
// the last partial), many query rows (64-row blocks in key groups), and NaN /
// +inf scores. Each `ir` is a template: "xT>" stands for the element
// type ("xf32>" or "xf16>"); instantiate() fills it in.
#ifndef TGC_TESTS_UNIT_ATTENTION_EDGE_CASES_H
#define TGC_TESTS_UNIT_ATTENTION_EDGE_CASES_H

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "runtime/Tensor.h"

namespace tgc::attn_cases {

struct AttentionEdgeCase {
  const char *name;
  const char *ir;
  /// The last argument is an additive mask [B, 1, Sm, T]: filled with some -inf
  /// entries (never at t = 0, so only the row below is fully masked), the rest
  /// small random values.
  bool hasMask = false;
  /// With zeroRowS >= 0: every key of query row (b = zeroRowB, s = zeroRowS) is
  /// masked (-inf), so that row of output 0 (layout "bhsd") must be exactly 0.
  int64_t zeroRowB = -1, zeroRowS = -1;
  /// With poisonS >= 0 (layout "bhsd"): q[0, 0, poisonS, 0] is NaN and q[0, 0, poisonS + 1, 0]
  /// is +inf, so those two rows' softmax is undefined and their outputs (head 0) must be 0.
  int64_t poisonS = -1;
  /// With poisonKeys (layout "bhsd", at least 3 heads and 451 keys): k[0, 1, 450, 0] is +inf
  /// (rows of head 1 with q[.., 0] > 0 that see key 450 are undefined in that key's group only,
  /// defined in the others) and k[0, 2, 20, 0] is NaN (one NaN score among finite ones in every
  /// row of head 2: all undefined).
  bool poisonKeys = false;
};

/// Turns argument `a` of `args` (random values in [-2, 2)) into case `c`'s input, as its flags
/// above describe: the mask gets its -inf entries (some keys of every row, never t = 0, and every
/// key of row (zeroRowB, zeroRowS)) and its other values halved; q gets a NaN and a +inf row
/// (poisonS); k a +inf and a NaN key (poisonKeys). Other arguments are left as they are.
inline void editEdgeInput(const AttentionEdgeCase &c, size_t a, size_t args, HostTensor &x) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<int64_t> &shape = x.shape;
  if (c.hasMask && a + 1 == args) { // [B, 1, Sm, T]
    const int64_t Sm = shape[2], T = shape[3];
    const bool zeroRow = c.zeroRowS >= 0 && Sm > 1;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t tt = i % T, s = (i / T) % Sm, b = i / (T * Sm * shape[1]);
      if ((zeroRow && b == c.zeroRowB && s == c.zeroRowS) ||
          (tt != 0 && (tt * 7 + s * 3 + b) % 5 == 0))
        x.set(i, -inf);
      else
        x.set(i, x.get(i) * 0.5);
    }
  } else if (c.poisonKeys && a == 1) { // k [B, H, L, D]
    const int64_t L = shape[2], D = shape[3];
    x.set((1 * L + 450) * D, inf);
    x.set((2 * L + 20) * D, std::numeric_limits<double>::quiet_NaN());
  } else if (c.poisonS >= 0 && a == 0) { // q [B, H, S, D]
    x.set(c.poisonS * shape[3], std::numeric_limits<double>::quiet_NaN());
    x.set((c.poisonS + 1) * shape[3], inf);
  }
}

inline std::string instantiate(const char *ir, const std::string &elem) {
  std::string s = ir;
  for (size_t at; (at = s.find("xT>")) != std::string::npos;)
    s.replace(at, 3, "x" + elem + ">");
  return s;
}

inline const std::vector<AttentionEdgeCase> &attentionEdgeCases() {
  static const std::vector<AttentionEdgeCase> cases = {
      // (1a) Mask [B,1,1,T] with -inf entries, D = 64, T = 70 (partial key
      // tile).
      {"mask_b11t_d64", R"(
func.func @main(%q: tensor<2x3x16x64xT>, %k: tensor<2x3x70x64xT>, %v: tensor<2x3x70x64xT>, %m: tensor<2x1x1x70xT>) -> tensor<2x3x16x64xT> {
  %0 = tg.attention %q, %k, %v, %m {scale = 0.125 : f32} : tensor<2x3x16x64xT>, tensor<2x3x70x64xT>, tensor<2x3x70x64xT>, tensor<2x1x1x70xT> -> tensor<2x3x16x64xT>
  return %0 : tensor<2x3x16x64xT>
}
)",
       true},
      // (1b) Mask [B,1,S,T] with a fully masked row (b=1, s=3): that output row
      // is 0.
      // D = 32, Dv = 48 (tensor-core kernel at f16).
      {"mask_full_row_d32", R"(
func.func @main(%q: tensor<2x2x9x32xT>, %k: tensor<2x2x70x32xT>, %v: tensor<2x2x70x48xT>, %m: tensor<2x1x9x70xT>) -> tensor<2x2x9x48xT> {
  %0 = tg.attention %q, %k, %v, %m {scale = 0.17677 : f32} : tensor<2x2x9x32xT>, tensor<2x2x70x32xT>, tensor<2x2x70x48xT>, tensor<2x1x9x70xT> -> tensor<2x2x9x48xT>
  return %0 : tensor<2x2x9x48xT>
}
)",
       true, 1, 3},
      // (1c) The same fully masked row with D = 40 (not a multiple of 16: tiled
      // kernel at f16).
      {"mask_full_row_d40", R"(
func.func @main(%q: tensor<2x2x9x40xT>, %k: tensor<2x2x70x40xT>, %v: tensor<2x2x70x40xT>, %m: tensor<2x1x9x70xT>) -> tensor<2x2x9x40xT> {
  %0 = tg.attention %q, %k, %v, %m {scale = 0.158 : f32} : tensor<2x2x9x40xT>, tensor<2x2x70x40xT>, tensor<2x2x70x40xT>, tensor<2x1x9x70xT> -> tensor<2x2x9x40xT>
  return %0 : tensor<2x2x9x40xT>
}
)",
       true, 1, 3},
      // (1d) The same with D = 160 (> 128: one-warp-per-row kernel).
      {"mask_full_row_d160", R"(
func.func @main(%q: tensor<2x2x9x160xT>, %k: tensor<2x2x70x160xT>, %v: tensor<2x2x70x160xT>, %m: tensor<2x1x9x70xT>) -> tensor<2x2x9x160xT> {
  %0 = tg.attention %q, %k, %v, %m {scale = 0.079 : f32} : tensor<2x2x9x160xT>, tensor<2x2x70x160xT>, tensor<2x2x70x160xT>, tensor<2x1x9x70xT> -> tensor<2x2x9x160xT>
  return %0 : tensor<2x2x9x160xT>
}
)",
       true, 1, 3},
      // (2a) Causal with S < T (bottom-right aligned): S = 5, T = 9.
      {"causal_s5_t9", R"(
func.func @main(%q: tensor<1x2x5x64xT>, %k: tensor<1x2x9x64xT>, %v: tensor<1x2x9x64xT>) -> tensor<1x2x5x64xT> {
  %0 = tg.attention %q, %k, %v {causal = true, scale = 0.125 : f32} : tensor<1x2x5x64xT>, tensor<1x2x9x64xT>, tensor<1x2x9x64xT> -> tensor<1x2x5x64xT>
  return %0 : tensor<1x2x5x64xT>
}
)"},
      // (2b) Causal S = 20 < T = 70 plus a mask [B,1,S,T] (partial query and
      // key tiles).
      {"causal_mask_s20_t70", R"(
func.func @main(%q: tensor<2x2x20x64xT>, %k: tensor<2x2x70x64xT>, %v: tensor<2x2x70x64xT>, %m: tensor<2x1x20x70xT>) -> tensor<2x2x20x64xT> {
  %0 = tg.attention %q, %k, %v, %m {causal = true, scale = 0.125 : f32} : tensor<2x2x20x64xT>, tensor<2x2x70x64xT>, tensor<2x2x70x64xT>, tensor<2x1x20x70xT> -> tensor<2x2x20x64xT>
  return %0 : tensor<2x2x20x64xT>
}
)",
       true},
      // (3) GQA Hq = 4, Hkv = 2, layout "bshd": plain, causal (S = 17 < T = 70)
      // and masked.
      {"gqa_bshd", R"(
func.func @main(%q: tensor<2x17x4x64xT>, %k: tensor<2x70x2x64xT>, %v: tensor<2x70x2x32xT>, %m: tensor<2x1x17x70xT>) -> (tensor<2x17x4x32xT>, tensor<2x17x4x32xT>, tensor<2x17x4x32xT>) {
  %0 = tg.attention %q, %k, %v {layout = "bshd", scale = 0.125 : f32} : tensor<2x17x4x64xT>, tensor<2x70x2x64xT>, tensor<2x70x2x32xT> -> tensor<2x17x4x32xT>
  %1 = tg.attention %q, %k, %v {causal = true, layout = "bshd", scale = 0.125 : f32} : tensor<2x17x4x64xT>, tensor<2x70x2x64xT>, tensor<2x70x2x32xT> -> tensor<2x17x4x32xT>
  %2 = tg.attention %q, %k, %v, %m {layout = "bshd", scale = 0.125 : f32} : tensor<2x17x4x64xT>, tensor<2x70x2x64xT>, tensor<2x70x2x32xT>, tensor<2x1x17x70xT> -> tensor<2x17x4x32xT>
  return %0, %1, %2 : tensor<2x17x4x32xT>, tensor<2x17x4x32xT>, tensor<2x17x4x32xT>
}
)",
       true},
      // (4a) D = 128 with a mask [B,1,1,T], and causal.
      {"d128", R"(
func.func @main(%q: tensor<1x2x33x128xT>, %k: tensor<1x2x70x128xT>, %v: tensor<1x2x70x128xT>, %m: tensor<1x1x1x70xT>) -> (tensor<1x2x33x128xT>, tensor<1x2x33x128xT>) {
  %0 = tg.attention %q, %k, %v, %m {scale = 0.0884 : f32} : tensor<1x2x33x128xT>, tensor<1x2x70x128xT>, tensor<1x2x70x128xT>, tensor<1x1x1x70xT> -> tensor<1x2x33x128xT>
  %1 = tg.attention %q, %k, %v {causal = true, scale = 0.0884 : f32} : tensor<1x2x33x128xT>, tensor<1x2x70x128xT>, tensor<1x2x70x128xT> -> tensor<1x2x33x128xT>
  return %0, %1 : tensor<1x2x33x128xT>, tensor<1x2x33x128xT>
}
)",
       true},
      // (4b) D = 96, plain and causal.
      {"d96", R"(
func.func @main(%q: tensor<1x2x33x96xT>, %k: tensor<1x2x70x96xT>, %v: tensor<1x2x70x96xT>) -> (tensor<1x2x33x96xT>, tensor<1x2x33x96xT>) {
  %0 = tg.attention %q, %k, %v {scale = 0.102 : f32} : tensor<1x2x33x96xT>, tensor<1x2x70x96xT>, tensor<1x2x70x96xT> -> tensor<1x2x33x96xT>
  %1 = tg.attention %q, %k, %v {causal = true, scale = 0.102 : f32} : tensor<1x2x33x96xT>, tensor<1x2x70x96xT>, tensor<1x2x70x96xT> -> tensor<1x2x33x96xT>
  return %0, %1 : tensor<1x2x33x96xT>, tensor<1x2x33x96xT>
}
)"},
      // (4c) D = 40 (not a multiple of 16: no tensor cores at f16), plain and
      // causal.
      {"d40", R"(
func.func @main(%q: tensor<1x2x33x40xT>, %k: tensor<1x2x70x40xT>, %v: tensor<1x2x70x40xT>) -> (tensor<1x2x33x40xT>, tensor<1x2x33x40xT>) {
  %0 = tg.attention %q, %k, %v {scale = 0.158 : f32} : tensor<1x2x33x40xT>, tensor<1x2x70x40xT>, tensor<1x2x70x40xT> -> tensor<1x2x33x40xT>
  %1 = tg.attention %q, %k, %v {causal = true, scale = 0.158 : f32} : tensor<1x2x33x40xT>, tensor<1x2x70x40xT>, tensor<1x2x70x40xT> -> tensor<1x2x33x40xT>
  return %0, %1 : tensor<1x2x33x40xT>, tensor<1x2x33x40xT>
}
)"},
      // (5a) Long keys (T = 300: 10 key tiles, the last partial) split over 8 warps with two
      // stages each, D = 32 and Dv = 24 (an odd number of 8-column output groups), masked and
      // causal (S < T).
      {"long_t300_d32_dv24", R"(
func.func @main(%q: tensor<1x2x20x32xT>, %k: tensor<1x2x300x32xT>, %v: tensor<1x2x300x24xT>, %m: tensor<1x1x1x300xT>) -> (tensor<1x2x20x24xT>, tensor<1x2x20x24xT>) {
  %0 = tg.attention %q, %k, %v, %m {scale = 0.177 : f32} : tensor<1x2x20x32xT>, tensor<1x2x300x32xT>, tensor<1x2x300x24xT>, tensor<1x1x1x300xT> -> tensor<1x2x20x24xT>
  %1 = tg.attention %q, %k, %v {causal = true, scale = 0.177 : f32} : tensor<1x2x20x32xT>, tensor<1x2x300x32xT>, tensor<1x2x300x24xT> -> tensor<1x2x20x24xT>
  return %0, %1 : tensor<1x2x20x24xT>, tensor<1x2x20x24xT>
}
)",
       true},
      // (5b) T = 260, D = 64: 8 warps, one stage each, some with two key tiles; plain and
      // causal.
      {"long_t260_d64", R"(
func.func @main(%q: tensor<1x2x20x64xT>, %k: tensor<1x2x260x64xT>, %v: tensor<1x2x260x64xT>) -> (tensor<1x2x20x64xT>, tensor<1x2x20x64xT>) {
  %0 = tg.attention %q, %k, %v {scale = 0.125 : f32} : tensor<1x2x20x64xT>, tensor<1x2x260x64xT>, tensor<1x2x260x64xT> -> tensor<1x2x20x64xT>
  %1 = tg.attention %q, %k, %v {causal = true, scale = 0.125 : f32} : tensor<1x2x20x64xT>, tensor<1x2x260x64xT>, tensor<1x2x260x64xT> -> tensor<1x2x20x64xT>
  return %0, %1 : tensor<1x2x20x64xT>, tensor<1x2x20x64xT>
}
)"},
      // (6a) Long queries and keys (S = T = 300: 19 query tiles, 10 key tiles per head), a mask
      // [B,1,S,T] with a fully masked row in the last query tile (s = 290), and causal.
      {"long_s300_mask", R"(
func.func @main(%q: tensor<1x2x300x64xT>, %k: tensor<1x2x300x64xT>, %v: tensor<1x2x300x64xT>, %m: tensor<1x1x300x300xT>) -> (tensor<1x2x300x64xT>, tensor<1x2x300x64xT>) {
  %0 = tg.attention %q, %k, %v, %m {scale = 0.125 : f32} : tensor<1x2x300x64xT>, tensor<1x2x300x64xT>, tensor<1x2x300x64xT>, tensor<1x1x300x300xT> -> tensor<1x2x300x64xT>
  %1 = tg.attention %q, %k, %v {causal = true, scale = 0.125 : f32} : tensor<1x2x300x64xT>, tensor<1x2x300x64xT>, tensor<1x2x300x64xT> -> tensor<1x2x300x64xT>
  return %0, %1 : tensor<1x2x300x64xT>, tensor<1x2x300x64xT>
}
)",
       true, 0, 290},
      // (6b) GQA in layout "bshd" with S = 260 < T = 270 (a last query tile of 4 rows),
      // Dv = 24 (an odd number of output groups), plain and causal.
      {"long_gqa_bshd_s260", R"(
func.func @main(%q: tensor<1x260x4x64xT>, %k: tensor<1x270x2x64xT>, %v: tensor<1x270x2x24xT>) -> (tensor<1x260x4x24xT>, tensor<1x260x4x24xT>) {
  %0 = tg.attention %q, %k, %v {layout = "bshd", scale = 0.125 : f32} : tensor<1x260x4x64xT>, tensor<1x270x2x64xT>, tensor<1x270x2x24xT> -> tensor<1x260x4x24xT>
  %1 = tg.attention %q, %k, %v {causal = true, layout = "bshd", scale = 0.125 : f32} : tensor<1x260x4x64xT>, tensor<1x270x2x64xT>, tensor<1x270x2x24xT> -> tensor<1x260x4x24xT>
  return %0, %1 : tensor<1x260x4x24xT>, tensor<1x260x4x24xT>
}
)"},
      // (6c) S = T = 300 with a NaN score row (s = 150) and a +inf one (s = 151) in head 0,
      // plain and causal: rows whose keys are whole tiles take the kernels' fast path.
      {"long_s300_nan_inf", R"(
func.func @main(%q: tensor<1x2x300x64xT>, %k: tensor<1x2x300x64xT>, %v: tensor<1x2x300x64xT>) -> (tensor<1x2x300x64xT>, tensor<1x2x300x64xT>) {
  %0 = tg.attention %q, %k, %v {scale = 0.125 : f32} : tensor<1x2x300x64xT>, tensor<1x2x300x64xT>, tensor<1x2x300x64xT> -> tensor<1x2x300x64xT>
  %1 = tg.attention %q, %k, %v {causal = true, scale = 0.125 : f32} : tensor<1x2x300x64xT>, tensor<1x2x300x64xT>, tensor<1x2x300x64xT> -> tensor<1x2x300x64xT>
  return %0, %1 : tensor<1x2x300x64xT>, tensor<1x2x300x64xT>
}
)",
       false, -1, -1, 150},
      // (7a-c) Many query rows (B·H·S >= 4096): 64-row blocks whose query warps share each K/V
      // tile, in key groups. (7a) S = T = 300 over 14 heads (one group of 64-key tiles, the
      // last partial; causal: two groups of 32-key tiles), a mask with a fully masked row in the
      // last query block (s = 290).
      {"rows_s300_h14_mask", R"(
func.func @main(%q: tensor<1x14x300x64xT>, %k: tensor<1x14x300x64xT>, %v: tensor<1x14x300x64xT>, %m: tensor<1x1x300x300xT>) -> (tensor<1x14x300x64xT>, tensor<1x14x300x64xT>) {
  %0 = tg.attention %q, %k, %v, %m {scale = 0.125 : f32} : tensor<1x14x300x64xT>, tensor<1x14x300x64xT>, tensor<1x14x300x64xT>, tensor<1x1x300x300xT> -> tensor<1x14x300x64xT>
  %1 = tg.attention %q, %k, %v {causal = true, scale = 0.125 : f32} : tensor<1x14x300x64xT>, tensor<1x14x300x64xT>, tensor<1x14x300x64xT> -> tensor<1x14x300x64xT>
  return %0, %1 : tensor<1x14x300x64xT>, tensor<1x14x300x64xT>
}
)",
       true, 0, 290},
      // (7b) GQA in layout "bshd", Hq = 16, Hkv = 2, S = 260 < T = 270 (a last query block of
      // 4 rows), Dv = 24 (an odd number of output groups), plain and causal.
      {"rows_gqa_bshd_s260", R"(
func.func @main(%q: tensor<1x260x16x64xT>, %k: tensor<1x270x2x64xT>, %v: tensor<1x270x2x24xT>) -> (tensor<1x260x16x24xT>, tensor<1x260x16x24xT>) {
  %0 = tg.attention %q, %k, %v {layout = "bshd", scale = 0.125 : f32} : tensor<1x260x16x64xT>, tensor<1x270x2x64xT>, tensor<1x270x2x24xT> -> tensor<1x260x16x24xT>
  %1 = tg.attention %q, %k, %v {causal = true, layout = "bshd", scale = 0.125 : f32} : tensor<1x260x16x64xT>, tensor<1x270x2x64xT>, tensor<1x270x2x24xT> -> tensor<1x260x16x24xT>
  return %0, %1 : tensor<1x260x16x24xT>, tensor<1x260x16x24xT>
}
)"},
      // (7c) S = 512 < T = 600 over 8 heads: two key groups of 64-key tiles (the last partial),
      // causal four groups of 32-key tiles; NaN and +inf score rows (s = 150, 151, head 0).
      {"rows_s512_t600_nan_inf", R"(
func.func @main(%q: tensor<1x8x512x64xT>, %k: tensor<1x8x600x64xT>, %v: tensor<1x8x600x64xT>) -> (tensor<1x8x512x64xT>, tensor<1x8x512x64xT>) {
  %0 = tg.attention %q, %k, %v {scale = 0.125 : f32} : tensor<1x8x512x64xT>, tensor<1x8x600x64xT>, tensor<1x8x600x64xT> -> tensor<1x8x512x64xT>
  %1 = tg.attention %q, %k, %v {causal = true, scale = 0.125 : f32} : tensor<1x8x512x64xT>, tensor<1x8x600x64xT>, tensor<1x8x600x64xT> -> tensor<1x8x512x64xT>
  return %0, %1 : tensor<1x8x512x64xT>, tensor<1x8x512x64xT>
}
)",
       false, -1, -1, 150, true},
      // (7d) S = 512 < T = 600 over 8 heads with a mask [B,1,S,T] and a fully masked row
      // (s = 400): two key groups of 64-key tiles with the mask, and causal with the mask (four
      // groups of 32-key tiles).
      {"rows_s512_t600_mask", R"(
func.func @main(%q: tensor<1x8x512x64xT>, %k: tensor<1x8x600x64xT>, %v: tensor<1x8x600x64xT>, %m: tensor<1x1x512x600xT>) -> (tensor<1x8x512x64xT>, tensor<1x8x512x64xT>) {
  %0 = tg.attention %q, %k, %v, %m {scale = 0.125 : f32} : tensor<1x8x512x64xT>, tensor<1x8x600x64xT>, tensor<1x8x600x64xT>, tensor<1x1x512x600xT> -> tensor<1x8x512x64xT>
  %1 = tg.attention %q, %k, %v, %m {causal = true, scale = 0.125 : f32} : tensor<1x8x512x64xT>, tensor<1x8x600x64xT>, tensor<1x8x600x64xT>, tensor<1x1x512x600xT> -> tensor<1x8x512x64xT>
  return %0, %1 : tensor<1x8x512x64xT>, tensor<1x8x512x64xT>
}
)",
       true, 0, 400},
      // (7e) Long keys, not causal (T >= 1024): 2 query warps × 4 key groups of 32-key tiles.
      // S = 1030 < T = 1100 over 4 heads (a last query block of 6 rows, a last key tile of
      // 12), a mask with a fully masked row (s = 1000), NaN and +inf query rows (s = 150, 151);
      // causal with the mask: four groups of 32-key tiles, 4 query warps.
      {"long_keys_t1100_mask_nan_inf", R"(
func.func @main(%q: tensor<1x4x1030x64xT>, %k: tensor<1x4x1100x64xT>, %v: tensor<1x4x1100x64xT>, %m: tensor<1x1x1030x1100xT>) -> (tensor<1x4x1030x64xT>, tensor<1x4x1030x64xT>) {
  %0 = tg.attention %q, %k, %v, %m {scale = 0.125 : f32} : tensor<1x4x1030x64xT>, tensor<1x4x1100x64xT>, tensor<1x4x1100x64xT>, tensor<1x1x1030x1100xT> -> tensor<1x4x1030x64xT>
  %1 = tg.attention %q, %k, %v, %m {causal = true, scale = 0.125 : f32} : tensor<1x4x1030x64xT>, tensor<1x4x1100x64xT>, tensor<1x4x1100x64xT>, tensor<1x1x1030x1100xT> -> tensor<1x4x1030x64xT>
  return %0, %1 : tensor<1x4x1030x64xT>, tensor<1x4x1030x64xT>
}
)",
       true, 0, 1000, 150},
      // (7f) The same tiling with a +inf key in one key group's tiles of a row (head 1, key
      // 450) and a NaN key among finite ones (head 2, key 20), 4 heads × 1024.
      {"long_keys_t1024_nan_inf_keys", R"(
func.func @main(%q: tensor<1x4x1024x64xT>, %k: tensor<1x4x1024x64xT>, %v: tensor<1x4x1024x64xT>) -> tensor<1x4x1024x64xT> {
  %0 = tg.attention %q, %k, %v {scale = 0.125 : f32} : tensor<1x4x1024x64xT>, tensor<1x4x1024x64xT>, tensor<1x4x1024x64xT> -> tensor<1x4x1024x64xT>
  return %0 : tensor<1x4x1024x64xT>
}
)",
       false, -1, -1, -1, true},
  };
  return cases;
}

} // namespace tgc::attn_cases

#endif // TGC_TESTS_UNIT_ATTENTION_EDGE_CASES_H
