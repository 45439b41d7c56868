// CudaMmaGemm.cpp — tgc's own tensor-core GEMM for f16/bf16 GEMMs with few rows (batch-1
// transformers: M = 128..256 tokens), where cuBLASLt launches too few blocks to stream the weights
// from every SM. The runtime times it against cuBLASLt's candidates per GEMM shape and keeps the
// faster (runtime/cuda/CudaSession.cpp); GEMMs with an activation epilogue cuBLASLt lacks
// (erf GELU, SiLU) run only here.
#include "codegen/cuda/CudaMmaGemm.h"

namespace tgc::cuda {

namespace {

/// The kernel template (needs kHalfHeaders and prelude()'s tg_* element functions).
const char *kMmaGemmTemplate = R"GEMM(
// ---- tgc tensor-core GEMM (mma.sync m16n8k16, fp32 accumulation) ----
// For b < batch: C[b] = act(A[b] (m×k, lda) · op(B[b]) + bias[b·sbias + n]) + R[b] (R laid out
// like C),
// op(B) = Bᵀ for B n×k (TB) or B for B k×n. Tiles of BM×64 outputs, BK-deep k steps, an ST-deep
// cp.async pipeline in dynamic shared memory, (BM/32)×2 warps of 32×32. Split-K: blockIdx.z = b·splits + split; each split of a
// tile writes its fp32 partial tile to `ws`, and the last to arrive (counted in `cnt`, which it
// resets for the next launch) sums all partials in split order (deterministic), then applies the
// epilogue. Needs n % 64 == 0, k % (BK·splits) == 0, lda, ldb, sa, sb % 8 == 0, ldc and sc even,
// 16-byte aligned A and B and a 4-byte aligned C (the runtime checks before choosing it). act: 0 none, 1 relu, 2 gelu (erf),
// 3 gelu (tanh), 4 silu.
namespace {
__device__ __forceinline__ unsigned tgm_s32(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void tgm_ldsm4(unsigned *r, const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(tgm_s32(p)));
}
__device__ __forceinline__ void tgm_ldsm4t(unsigned *r, const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(tgm_s32(p)));
}
template <class T> __device__ __forceinline__ void tgm_mma(float *c, const unsigned *a, const unsigned *b);
template <> __device__ __forceinline__ void tgm_mma<__half>(float *c, const unsigned *a, const unsigned *b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void tgm_mma<__nv_bfloat16>(float *c, const unsigned *a, const unsigned *b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// Two adjacent outputs as one 4-byte store (c and ldc are even; C is 4-byte aligned).
__device__ __forceinline__ void tgm_st2(__half *p, float a, float b) {
  *reinterpret_cast<__half2 *>(p) = __floats2half2_rn(a, b);
}
__device__ __forceinline__ void tgm_st2(__nv_bfloat16 *p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(a, b);
}
// Out of line: inlined at each of a thread's 32 outputs, the activations would multiply the
// kernel's size (and NVRTC time) several times over.
__device__ __noinline__ float tgm_act(float v, int act) { return tg_act(v, act); }

template <class T, bool TB, int BM, int BK, int ST>
__device__ __forceinline__ void tgm_gemm(const T *__restrict__ A, const T *__restrict__ B, T *C,
                                         const T *bias, const T *R, float *ws, int *cnt, int m,
                                         int n, int k, int lda, int ldb, int ldc, long long sa,
                                         long long sb, long long sc, long long sbias,
                                         int splits, int act, int flags) {
  constexpr int BN = 64, NT = BM * 2, CK = BK / 8; // CK: 16-byte chunks per k step of a row
  constexpr int AS = BK + 8;               // A rows padded by 16 bytes: conflict-free ldmatrix
  constexpr int BS = TB ? BK + 8 : BN + 8; // B rows: n-major (TB) or k-major
  constexpr int AE = BM * AS, BE = TB ? BN * BS : BK * BS;
  extern __shared__ __align__(16) unsigned char tgm_smem[];
  T *sA = reinterpret_cast<T *>(tgm_smem), *sB = sA + ST * AE;
  __shared__ int isLast;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp >> 1, wn = warp & 1;
  const int split = blockIdx.z % splits, b = blockIdx.z / splits;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  A += b * sa;
  B += b * sb;
  C += b * sc;
  if (R)
    R += b * sc;
  if (bias)
    bias += b * sbias;
  const int kLen = k / splits, kBeg = split * kLen, nk = kLen / BK;
  // Each thread copies the same AI chunks of A and BI chunks of B (16 bytes each) in every k
  // step: their sources and shared-memory offsets are computed once; a k step adds BK (A, and B
  // when n×k) or BK rows (B when k×n). Compile-time trip counts: no loop overhead per copy.
  constexpr int AI = BM * CK / NT, BI = (TB ? BN * CK : BK * 8) / NT;
  static_assert(AI * NT == BM * CK && BI * NT == (TB ? BN * CK : BK * 8), "copy split");
  const T *aSrc[AI], *bSrc[BI];
  unsigned aDst[AI], bDst[BI], aBytes[AI];
  const unsigned sA0 = tgm_s32(sA), sB0 = tgm_s32(sB);
#pragma unroll
  for (int i = 0; i < AI; ++i) {
    const int c = tid + i * NT, r = c / CK, ch = c % CK, gr = m0 + r;
    aSrc[i] = A + (long long)min(gr, m - 1) * lda + kBeg + ch * 8;
    aDst[i] = sA0 + (unsigned)(r * AS + ch * 8) * (unsigned)sizeof(T);
    aBytes[i] = gr < m ? 16 : 0;
  }
#pragma unroll
  for (int i = 0; i < BI; ++i) {
    const int c = tid + i * NT;
    if (TB) {
      const int r = c / CK, ch = c % CK;
      bSrc[i] = B + (long long)(n0 + r) * ldb + kBeg + ch * 8;
      bDst[i] = sB0 + (unsigned)(r * BS + ch * 8) * (unsigned)sizeof(T);
    } else {
      const int r = c >> 3, ch = c & 7;
      bSrc[i] = B + (long long)(kBeg + r) * ldb + n0 + ch * 8;
      bDst[i] = sB0 + (unsigned)(r * BS + ch * 8) * (unsigned)sizeof(T);
    }
  }
  const long long bStep = TB ? BK : (long long)BK * ldb;
  auto loadA = [&](int stage, int kt) {
#pragma unroll
    for (int i = 0; i < AI; ++i)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                       aDst[i] + (unsigned)(stage * AE * (int)sizeof(T))),
                   "l"(aSrc[i] + kt * BK), "r"(aBytes[i]));
  };
  auto loadB = [&](int stage, int kt) {
#pragma unroll
    for (int i = 0; i < BI; ++i)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                       bDst[i] + (unsigned)(stage * BE * (int)sizeof(T))),
                   "l"(bSrc[i] + kt * bStep));
  };
  float acc[2][4][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        acc[i][j][e] = 0.f;
  // flags bit 0: B is a weight, bit 1: the bias is (never written by any step): their first
  // stages and values are fetched before waiting for the previous kernel (programmatic dependent
  // launch), so the weight stream starts while that kernel finishes.
  const int g = lane >> 2, t = lane & 3;
  float bv[4][2];
  auto loadBias = [&] {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = n0 + wn * 32 + j * 8 + 2 * t;
      bv[j][0] = bias ? tg_ld(bias[c]) : 0.f;
      bv[j][1] = bias ? tg_ld(bias[c + 1]) : 0.f;
    }
  };
  if (flags & 1) {
#pragma unroll
    for (int s = 0; s < ST - 1; ++s)
      if (s < nk)
        loadB(s, s);
  }
  if (flags & 2)
    loadBias();
  tg_pdl_begin();
  if (!(flags & 2))
    loadBias();
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < nk) {
      if (!(flags & 1))
        loadB(s, s);
      loadA(s, s);
    }
    asm volatile("cp.async.commit_group;\n" ::);
  }
  // The residual, loaded early: it is read before C is written (C may alias R).
  float rv[2][2][4][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = m0 + wm * 32 + i * 16 + g + h * 8;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const long long o = (long long)min(r, m - 1) * ldc + n0 + wn * 32 + j * 8 + 2 * t;
        rv[i][h][j][0] = R ? tg_ld(R[o]) : 0.f;
        rv[i][h][j][1] = R ? tg_ld(R[o + 1]) : 0.f;
      }
    }
  for (int kt = 0; kt < nk; ++kt) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(ST - 2));
    __syncthreads(); // tile kt landed; every warp is done with the stage loaded next
    const int nx = kt + ST - 1;
    if (nx < nk)
      loadB(nx % ST, nx), loadA(nx % ST, nx);
    asm volatile("cp.async.commit_group;\n" ::);
    const T *a = sA + (kt % ST) * AE, *bs = sB + (kt % ST) * BE;
#pragma unroll
    for (int ks = 0; ks < BK; ks += 16) {
      unsigned af[2][4], bf[4][2];
#pragma unroll
      for (int i = 0; i < 2; ++i)
        tgm_ldsm4(af[i], a + (wm * 32 + i * 16 + (lane & 15)) * AS + ks + (lane >> 4) * 8);
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        unsigned r[4];
        if (TB)
          tgm_ldsm4(r, bs + (wn * 32 + j * 16 + (lane & 7) + ((lane >> 4) << 3)) * BS + ks +
                           ((lane >> 3) & 1) * 8);
        else
          tgm_ldsm4t(r, bs + (ks + (lane & 15)) * BS + wn * 32 + j * 16 + (lane >> 4) * 8);
        bf[2 * j][0] = r[0], bf[2 * j][1] = r[1], bf[2 * j + 1][0] = r[2], bf[2 * j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          tgm_mma<T>(acc[i][j], af[i], bf[j]);
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::);
  if (splits > 1) {
    const int tiles = gridDim.x * gridDim.y, tile = blockIdx.y * gridDim.x + blockIdx.x;
    float *w0 = ws + (long long)(b * tiles + tile) * splits * (BM * BN);
    float *w = w0 + (long long)split * (BM * BN);
#pragma unroll
    for (int f = 0; f < 32; ++f) // fragment order: element f of thread tid at f·NT + tid
      w[f * NT + tid] = acc[f >> 4][(f >> 2) & 3][f & 3];
    __threadfence();
    __syncthreads();
    if (tid == 0) {
      const int prev = atomicAdd(&cnt[b * tiles + tile], 1);
      isLast = prev == splits - 1;
      if (isLast)
        cnt[b * tiles + tile] = 0; // every split of this launch has arrived
    }
    __syncthreads();
    if (!isLast)
      return;
    __threadfence();
    // Sum the partials in split order; each split's 32 loads are issued together.
#pragma unroll
    for (int f = 0; f < 32; ++f)
      acc[f >> 4][(f >> 2) & 3][f & 3] = 0.f;
    for (int s = 0; s < splits; ++s) {
      float part[32];
#pragma unroll
      for (int f = 0; f < 32; ++f)
        part[f] = __ldcg(w0 + (long long)s * (BM * BN) + f * NT + tid);
#pragma unroll
      for (int f = 0; f < 32; ++f)
        acc[f >> 4][(f >> 2) & 3][f & 3] += part[f];
    }
  }
  // Epilogue (bias and R are in registers already: no load waits behind a store).
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = m0 + wm * 32 + i * 16 + g + h * 8;
      if (r >= m)
        continue;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float v0 = acc[i][j][2 * h] + bv[j][0], v1 = acc[i][j][2 * h + 1] + bv[j][1];
        if (act)
          v0 = tgm_act(v0, act), v1 = tgm_act(v1, act);
        tgm_st2(C + (long long)r * ldc + n0 + wn * 32 + j * 8 + 2 * t, v0 + rv[i][h][j][0],
                v1 + rv[i][h][j][1]);
      }
    }
}
} // namespace
#define TGM_GEMM(NAME, T, TB, BM, BK, ST)                                                          \
  extern "C" __global__ void __launch_bounds__(BM * 2)                                            \
  NAME(const T *A, const T *B, T *C, const T *bias, const T *R, float *ws, int *cnt, int m, int n, \
       int k, int lda, int ldb, int ldc, long long sa, long long sb, long long sc,                 \
       long long sbias, int splits, int act, int flags) {                                          \
    tgm_gemm<T, TB, BM, BK, ST>(A, B, C, bias, R, ws, cnt, m, n, k, lda, ldb, ldc, sa, sb, sc,    \
                                sbias, splits, act, flags);                                        \
  }
)GEMM";

} // namespace

std::string mmaGemmSource(const std::set<std::pair<int, bool>> &uses) {
  if (uses.empty())
    return "";
  std::string code = kMmaGemmTemplate;
  for (const auto &[dtype, transB] : uses)
    for (const MmaGemmConfig &c : kMmaGemmConfigs) {
      const char *t = dtype == 10 ? "__half" : "__nv_bfloat16";
      code += "TGM_GEMM(" + mmaGemmSymbol(dtype, transB, c) + ", " + t + ", " +
              (transB ? "true" : "false") + ", " + std::to_string(c.bm) + ", " +
              std::to_string(c.bk) + ", " + std::to_string(c.stages) + ")\n";
    }
  return code;
}

} // namespace tgc::cuda
