// CutlassGemm.h — the C interface of libtgc_cutlass_sm90.so, tgc's plug-in of CUTLASS GEMMs for
// sm_90 (built by nvcc at build time from CutlassGemm.cu; the runtime loads it with dlopen, so
// tgc runs without it, and CPU packages never touch it). Tiles 0-2: CUTLASS 4.2 example 63's
// warp-specialized TMA GEMM, which requests its weight tiles into L2 before `griddepcontrol.wait`
// and is launched with programmatic dependent launch — the one thing cuBLASLt's kernels do not
// do; tiles 3-4: CUTLASS's persistent ping-pong kernel, for many tokens. A per-output bias
// (added to the accumulators by example 63's kernel, as tools/setup patches it; by the ping-pong
// kernel's epilogue), then a residual
// (C = A·Bᵀ + bias + R) or an activation (C = act(A·Bᵀ + bias): ReLU, GELU in erf form, which
// cuBLASLt cannot apply, or tanh form, SiLU, which cuBLASLt cannot apply either) in the epilogue; with split-K also a layer or RMS norm of each row of the
// result (the sum kernel then does the norm kernel's work). Plain C types only: the runtime and
// the plug-in share no C++ ABI.
#ifndef TGC_RUNTIME_CUDA_CUTLASS_CUTLASSGEMM_H
#define TGC_RUNTIME_CUDA_CUTLASS_CUTLASSGEMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 6: the bias, like B, is read before the wait (the runtime passes only weights). */
#define TGC_CUTLASS_ABI 6

/// B, the bias, gamma and beta must not change while the previous kernel runs (weights): the
/// kernels read them before waiting for that kernel. For each batch i < batch: row-major C_i
/// (m×n, row pitch ldc) = act(A_i (m×k, pitch lda) · B_iᵀ (B_i n×k, pitch ldb) + bias_i[n]) +
/// R_i (m×n, pitch ldc), where X_i = X + i·stride_x (elements; stride_a may be 0: one A for
/// every batch, as the QKV GEMM has). bias and residual may be null; an activation with a
/// residual is refused.
typedef struct TgcCutlassGemmDesc {
  int abi;        /* TGC_CUTLASS_ABI */
  int dtype;      /* ONNX element type of A, B, C, bias and R: 10 (f16) or 16 (bf16) */
  int activation; /* 0: none, 1: ReLU, 2: GELU (erf form), 3: GELU (tanh form), 4: SiLU;
                     plan.proto's codes */
  int tile;       /* 0: 64 weight rows × 64 tokens × 128 deep; 1: 64 × 128 × 64; 2: 64 × 32 ×
                     128 (example 63's kernel, weights prefetched into L2); 3: 128 × 128 × 64;
                     4: 64 × 128 × 64 (CUTLASS's persistent ping-pong kernel, for many
                     tokens); 5: 192 × 128 × 64 (the cooperative kernel); 6: 192 × 64 × 64;
                     7: 96 × 64 × 64 (ping-pong) */
  int splits;     /* split-K: > 1 runs k/splits-deep slices into float partials, then a second
                     kernel sums them and applies bias, activation and residual (tile 0, one
                     batch); 1: none */
  int64_t m, n, k, lda, ldb, ldc;
  int64_t batch, stride_a, stride_b, stride_c, bias_stride;
  const void *a, *b, *bias, *residual;
  void *c;
  /* With splits > 1, one batch and no activation, the sum kernel may also normalize each row of
     C (as stored, rounded to dtype) into Y (m×n, row pitch n): 1 layer norm, Y = (C - mean) /
     sqrt(var + eps) · gamma + beta; 2 RMS norm, Y = C / sqrt(mean(C²) + eps) · gamma; gamma and
     beta (n each) may be null. 0: none. Y must equal or be clear of C and the residual. */
  int norm;
  float eps;
  const void *gamma, *beta;
  void *norm_out;
  int norm_out_f32; /* 1: Y is float (the norm's value unrounded; clear of C and the residual),
                       0: dtype */
} TgcCutlassGemmDesc;

/// Number of tile configurations (TgcCutlassGemmDesc.tile < this).
#define TGC_CUTLASS_TILES 8

/// TGC_CUTLASS_ABI of the library.
int tgc_cutlass_abi(void);
/// 0 when the library can run `desc` (host only: no GPU needed); else non-zero and why in err.
int tgc_cutlass_gemm_check(const TgcCutlassGemmDesc *desc, char *err, size_t err_len);
/// Prepares `desc` on the current device (its pointers are baked in): 0 and *handle, else
/// non-zero and why in err.
int tgc_cutlass_gemm_create(const TgcCutlassGemmDesc *desc, void **handle, char *err,
                            size_t err_len);
/// Launches the GEMM on `stream` (a CUstream), with programmatic dependent launch when `pdl`.
int tgc_cutlass_gemm_run(void *handle, void *stream, int pdl, char *err, size_t err_len);
void tgc_cutlass_gemm_destroy(void *handle);

#ifdef __cplusplus
}
#endif

#endif // TGC_RUNTIME_CUDA_CUTLASS_CUTLASSGEMM_H
