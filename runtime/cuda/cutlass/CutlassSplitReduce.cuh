// CutlassSplitReduce.cuh — split-K's second kernels (splitReduce, splitReduceNorm): the float
// partial sums of the k-slices summed, then bias, activation and residual, or a layer/RMS norm of
// each row. Launched by CutlassConfig.cuh's SplitOp (tile 0's split-K form).
#ifndef TGC_RUNTIME_CUDA_CUTLASS_CUTLASSSPLITREDUCE_CUH
#define TGC_RUNTIME_CUDA_CUTLASS_CUTLASSSPLITREDUCE_CUH

#include <cuda_runtime.h>

// A __global__ template must not live in an anonymous namespace next to CUTLASS's (nvcc's
// generated stubs name it ambiguously).
namespace tgc_cutlass {

__device__ inline float activate(float x, int act) {
  if (act == 1)
    return x > 0.f ? x : 0.f;
  if (act == 4)
    return x / (1.f + expf(-x));
  if (act == 2)
    return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  if (act == 3)
    return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  return x;
}

/// Split-K's second kernel: C = act(Σ_s P_s + bias) + R, 4 columns per thread (n % 8 == 0). It
/// lets the next grid launch, then waits for the partial GEMM (programmatic dependent launch)
/// before reading; see tgc's tg_pdl_begin for why that order is safe.
template <class T>
__global__ void splitReduce(const float *__restrict__ P, int S, int m, int n, int ldc,
                            const T *__restrict__ bias, const T *__restrict__ res, T *C, int act) {
  asm volatile("griddepcontrol.launch_dependents;");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 4, mn = (long long)m * n;
  if (i >= mn)
    return;
  const int r = (int)(i / n), c = (int)(i % n);
  float4 a = *reinterpret_cast<const float4 *>(P + i);
  for (int s = 1; s < S; ++s) {
    const float4 b = *reinterpret_cast<const float4 *>(P + s * mn + i);
    a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
  }
  float v[4] = {a.x, a.y, a.z, a.w};
  for (int q = 0; q < 4; ++q) {
    float x = activate(v[q] + (bias ? float(bias[c + q]) : 0.f), act);
    if (res)
      x += float(res[(long long)r * ldc + c + q]);
    C[(long long)r * ldc + c + q] = T(x);
  }
}

/// Sum of `v` over the block (at most 32 warps); every thread gets it. `red` holds 33 floats.
__device__ inline float blockSum(float v, float *red) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  const int w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads(); // red is free (an earlier sum has been read)
  if ((threadIdx.x & 31) == 0)
    red[w] = v;
  __syncthreads();
  float t = 0.f;
  for (int i = 0; i < nw; ++i)
    t += red[i];
  return t;
}

/// Split-K's second kernel with the norm after the GEMM: one block per row, 8 columns per thread
/// (n % 8 == 0, n <= 8192). C = Σ_s P_s + bias + R as splitReduce computes it, then Y = the
/// norm of the row of C as stored (rounded to T), in two passes over registers like tgc's norm
/// kernels: layer norm (norm 1) y = (c - mean) / sqrt(mean((c - mean)²) + eps) · γ + β, RMS
/// norm (norm 2) y = c / sqrt(mean(c²) + eps) · γ, stored as TY (T, or float: a cast to f32
/// after the norm, as tgc's norm kernel applies it). Each block reads its row of R before it
/// writes its row of Y, so Y may be R (or C) itself where TY is T. Bias, γ and β (weights: no
/// grid writes them) are loaded before the wait, and every partial and the residual are in
/// flight at once.
template <class T, class TY>
__global__ void splitReduceNorm(const float *__restrict__ P, int S, int m, int n, int ldc,
                                const T *__restrict__ bias, const T *res, T *C, int norm,
                                float eps, const T *__restrict__ gamma, const T *__restrict__ beta,
                                TY *Y) {
  __shared__ float red[33];
  asm volatile("griddepcontrol.launch_dependents;");
  const int r = blockIdx.x, c = threadIdx.x * 8;
  const bool in = c < n;
  const long long mn = (long long)m * n, i = (long long)r * n + c;
  auto load8 = [](const T *p, float *out) {
    const uint4 raw = *reinterpret_cast<const uint4 *>(p);
    const T *t = reinterpret_cast<const T *>(&raw);
    for (int q = 0; q < 8; ++q)
      out[q] = float(t[q]);
  };
  float bi[8], g[8], b[8];
  for (int q = 0; q < 8; ++q)
    bi[q] = 0.f, g[q] = 1.f, b[q] = 0.f;
  if (in && bias)
    load8(bias + c, bi);
  if (in && gamma)
    load8(gamma + c, g);
  if (in && beta)
    load8(beta + c, b);
  asm volatile("griddepcontrol.wait;" ::: "memory");
  float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  if (in) {
    constexpr int kUnrolled = 4; // slices whose loads are all issued before the first add
    float4 p[2 * kUnrolled];
#pragma unroll
    for (int s = 0; s < kUnrolled; ++s)
      if (s < S) {
        p[2 * s] = *reinterpret_cast<const float4 *>(P + s * mn + i);
        p[2 * s + 1] = *reinterpret_cast<const float4 *>(P + s * mn + i + 4);
      }
    float t[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (res)
      load8(res + (long long)r * ldc + c, t);
#pragma unroll
    for (int s = 0; s < kUnrolled; ++s)
      if (s < S)
        for (int h = 0; h < 2; ++h) {
          const float4 q = p[2 * s + h];
          v[4 * h] += q.x, v[4 * h + 1] += q.y, v[4 * h + 2] += q.z, v[4 * h + 3] += q.w;
        }
    for (int s = kUnrolled; s < S; ++s)
      for (int h = 0; h < 2; ++h) {
        const float4 q = *reinterpret_cast<const float4 *>(P + s * mn + i + 4 * h);
        v[4 * h] += q.x, v[4 * h + 1] += q.y, v[4 * h + 2] += q.z, v[4 * h + 3] += q.w;
      }
    for (int q = 0; q < 8; ++q) {
      v[q] += bi[q]; // the order splitReduce and the unsplit GEMM add them in
      if (res)
        v[q] += t[q];
    }
    uint4 raw;
    T *o = reinterpret_cast<T *>(&raw);
    for (int q = 0; q < 8; ++q) {
      o[q] = T(v[q]);
      v[q] = float(o[q]);
    }
    *reinterpret_cast<uint4 *>(C + (long long)r * ldc + c) = raw;
  }
  float s = 0.f;
  for (int q = 0; q < 8; ++q)
    s += v[q];
  const float mean = norm == 1 ? blockSum(s, red) / n : 0.f;
  float sq = 0.f;
  for (int q = 0; q < 8; ++q)
    sq += in ? (v[q] - mean) * (v[q] - mean) : 0.f;
  const float rstd = 1.f / sqrtf(blockSum(sq, red) / n + eps);
  if (!in)
    return;
  constexpr int kVecs = sizeof(TY) * 8 / 16; // 16-byte stores of the 8 outputs
  uint4 raw[kVecs];
  TY *o = reinterpret_cast<TY *>(raw);
  for (int q = 0; q < 8; ++q)
    o[q] = TY((v[q] - mean) * rstd * g[q] + b[q]);
  for (int w = 0; w < kVecs; ++w)
    reinterpret_cast<uint4 *>(Y + (long long)r * n + c)[w] = raw[w];
}

} // namespace tgc_cutlass

#endif // TGC_RUNTIME_CUDA_CUTLASS_CUTLASSSPLITREDUCE_CUH
