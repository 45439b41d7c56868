// CutlassGemm.cu — libtgc_cutlass_sm90.so's C interface (CutlassGemm.h): the descriptor's
// checks, then the tile's own check and create (CutlassTile.cu, one translation unit per tile;
// the configurations themselves are in CutlassConfig.cuh). Eight tiles on three CUTLASS kernels:
// example 63's, which prefetches the weights into L2 while it waits for the kernel ahead (tiles
// 0-2, few tokens), the persistent ping-pong kernel (tiles 3, 4, 6, 7) and the cooperative one
// (tile 5), the last two for many tokens; f16 and bf16, no activation, ReLU, erf-GELU, tanh-GELU
// (CUTLASS's GELU_taylor, tanh.approx inside) or SiLU; split-K (tile 0) in a second kernel that
// may also apply a layer or RMS norm (CutlassSplitReduce.cuh).
#include "runtime/cuda/cutlass/CutlassGemm.h"

#include <cstdio>
#include <string>

#include "runtime/cuda/cutlass/CutlassConfig.cuh"

namespace tgc_cutlass {

std::string describe(const TgcCutlassGemmDesc &d) {
  char b[200];
  std::snprintf(b, sizeof b,
                "m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld batch %lld dtype %d tile %d splits %d%s%s",
                (long long)d.m, (long long)d.n, (long long)d.k, (long long)d.lda,
                (long long)d.ldb, (long long)d.ldc, (long long)d.batch, d.dtype, d.tile, d.splits,
                d.norm == 1 ? " + layer norm" : d.norm == 2 ? " + RMS norm" : "",
                d.norm && d.norm_out_f32 ? " to f32" : "");
  return b;
}

/// Shape and pointer rules the kernel needs; "" when it fits.
std::string unsupported(const TgcCutlassGemmDesc &d) {
  if (d.abi != TGC_CUTLASS_ABI)
    return "ABI " + std::to_string(d.abi) + " (this library: " + std::to_string(TGC_CUTLASS_ABI) + ")";
  if (d.dtype != 10 && d.dtype != 16)
    return "element type " + std::to_string(d.dtype) + " (f16 and bf16 only)";
  if (d.activation < 0 || d.activation > 4)
    return "activation " + std::to_string(d.activation) +
           " (none, ReLU, erf-GELU, tanh-GELU and SiLU only)";
  if (d.activation && d.residual)
    return "an activation with a residual";
  if (d.tile < 0 || d.tile >= TGC_CUTLASS_TILES)
    return "tile " + std::to_string(d.tile);
  if (d.m < 1 || d.n < 1 || d.k < 1 || d.batch < 1 || d.m > INT32_MAX || d.n > INT32_MAX ||
      d.k > INT32_MAX || d.batch > INT32_MAX)
    return "extent out of range";
  if (d.splits < 1 || d.splits > 16)
    return "splits " + std::to_string(d.splits) + " (1 to 16)";
  if (d.splits > 1 && (d.batch != 1 || d.tile != 0 || d.k % d.splits || (d.k / d.splits) % 8 ||
                       d.n % 8))
    return "split-K needs one batch, tile 0, k a multiple of 8·splits and n of 8";
  if (d.stride_a % 8 || d.stride_b % 8 || d.stride_c % 8 || d.bias_stride % 8 || d.stride_a < 0 ||
      d.stride_b < 0 || d.stride_c < 0 || d.bias_stride < 0)
    return "batch strides must be non-negative multiples of 8 elements";
  if (d.norm < 0 || d.norm > 2)
    return "norm " + std::to_string(d.norm) + " (none, layer norm and RMS norm only)";
  if (d.norm && (d.splits < 2 || d.activation || d.n > 8192 || !d.norm_out ||
                 !(d.eps >= 0.f && d.eps < 1e30f)))
    return "a norm needs split-K, no activation, n <= 8192, an output and a finite eps >= 0";
  if (d.norm_out_f32 != 0 && d.norm_out_f32 != 1)
    return "norm_out_f32 " + std::to_string(d.norm_out_f32) + " (0 or 1)";
  if (d.norm) {
    // Y rows are n apart: equal to or clear of C and R (rows ldc apart), which each block reads
    // or writes one row of; a float Y is clear of them.
    const auto bytes = [&](int64_t ld) { return (uint64_t)((d.m - 1) * ld + d.n) * 2; };
    const uint64_t yBytes = bytes(d.n) * (d.norm_out_f32 ? 2 : 1);
    const auto clear = [&](const void *p, int64_t ld) {
      const uint64_t y = (uintptr_t)d.norm_out, x = (uintptr_t)p;
      return !p || (x == y && ld == d.n && !d.norm_out_f32) || x + bytes(ld) <= y ||
             y + yBytes <= x;
    };
    if (!clear(d.c, d.ldc) || !clear(d.residual, d.ldc))
      return "the norm's output overlaps C or the residual (other than exactly in place)";
    // Every block reads all of the bias, gamma and beta while others write Y.
    const auto apart = [&](const void *p) {
      const uint64_t y = (uintptr_t)d.norm_out, x = (uintptr_t)p;
      return !p || x + (uint64_t)d.n * 2 <= y || y + yBytes <= x;
    };
    if (!apart(d.bias) || !apart(d.gamma) || !apart(d.beta))
      return "the norm's output overlaps the bias, gamma or beta";
  }
  // TMA: 16-byte aligned bases and row pitches.
  if (d.lda % 8 || d.ldb % 8 || d.ldc % 8 || d.lda < d.k || d.ldb < d.k || d.ldc < d.n)
    return "row pitches must be multiples of 8 elements and cover the rows";
  for (const void *p : {d.a, d.b, d.bias, d.residual, (const void *)d.c})
    if ((uintptr_t)p % 16)
      return "pointers must be 16-byte aligned";
  if (d.norm)
    for (const void *p : {d.gamma, d.beta, (const void *)d.norm_out})
      if ((uintptr_t)p % 16)
        return "pointers must be 16-byte aligned";
  if (!d.a || !d.b || !d.c)
    return "null operand";
  return "";
}


namespace {

using CheckFn = int (*)(const TgcCutlassGemmDesc &, char *, size_t);
using CreateFn = int (*)(const TgcCutlassGemmDesc &, void **, char *, size_t);
constexpr CheckFn kCheck[] = {checkTile<0>, checkTile<1>, checkTile<2>, checkTile<3>,
                              checkTile<4>, checkTile<5>, checkTile<6>, checkTile<7>};
constexpr CreateFn kCreate[] = {createTile<0>, createTile<1>, createTile<2>, createTile<3>,
                                createTile<4>, createTile<5>, createTile<6>, createTile<7>};
static_assert(sizeof kCheck / sizeof kCheck[0] == TGC_CUTLASS_TILES, "one entry per tile");

} // namespace
} // namespace tgc_cutlass

using namespace tgc_cutlass;

extern "C" {

int tgc_cutlass_abi(void) { return TGC_CUTLASS_ABI; }

int tgc_cutlass_gemm_check(const TgcCutlassGemmDesc *d, char *err, size_t len) {
  if (!d)
    return fail(err, len, "null descriptor");
  std::string why = unsupported(*d);
  if (!why.empty())
    return fail(err, len, "CUTLASS GEMM cannot run " + describe(*d) + ": " + why);
  return kCheck[d->tile](*d, err, len);
}

int tgc_cutlass_gemm_create(const TgcCutlassGemmDesc *d, void **handle, char *err, size_t len) {
  if (!handle)
    return fail(err, len, "null handle");
  *handle = nullptr;
  if (int r = tgc_cutlass_gemm_check(d, err, len))
    return r;
  return kCreate[d->tile](*d, handle, err, len);
}

int tgc_cutlass_gemm_run(void *handle, void *stream, int pdl, char *err, size_t len) {
  if (!handle)
    return fail(err, len, "null handle");
  cutlass::Status s = static_cast<Op *>(handle)->run(static_cast<cudaStream_t>(stream), pdl != 0);
  if (s != cutlass::Status::kSuccess)
    return fail(err, len, std::string("CUTLASS run: ") + cutlassGetStatusString(s) + " (" +
                              cudaGetErrorString(cudaGetLastError()) + ")");
  return 0;
}

void tgc_cutlass_gemm_destroy(void *handle) { delete static_cast<Op *>(handle); }

} // extern "C"
