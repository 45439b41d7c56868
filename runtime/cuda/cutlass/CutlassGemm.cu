// CutlassGemm.cu — libtgc_cutlass_sm90.so (see CutlassGemm.h). Row-major C = A·Bᵀ is run as
// column-major Cᵀ = B·Aᵀ, so the weights B are CUTLASS's operand A: the operand example 63's
// kernel prefetches into L2 while it waits for the previous kernel (perf-log, seventh session).
// Three tiles on that kernel (64 weight rows × 64, 128 or 32 tokens) for few tokens, and two on
// CUTLASS's persistent ping-pong kernel (128 or 64 weight rows × 128 tokens, bias and activation
// in the epilogue) for many, where two warp groups take turns on the tensor cores and one's
// epilogue runs under the other's mainloop; f16 and bf16, no activation, ReLU, erf-GELU, tanh-GELU
// (CUTLASS's GELU_taylor, tanh.approx inside) or SiLU; split-K's sum kernel also applies a layer
// or RMS norm (splitReduceNorm): fifty instantiations, about seven minutes of nvcc on two cores.
#include "runtime/cuda/cutlass/CutlassGemm.h"

#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

// CUTLASS example 63 (the include path points at its folder).
#include "collective/builder.hpp"
#include "collective/dispatch_policy_extra.hpp"
#include "kernel/sm90_gemm_tma_warpspecialized_with_prefetch.hpp"

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

namespace {

using namespace cute;

template <class T, template <class> class Act>
using WithAct = cutlass::epilogue::fusion::LinCombEltAct<Act, T, float, T, float>;

template <class T, template <class> class Act>
using RowBiasAct = cutlass::epilogue::fusion::LinCombPerRowBiasEltAct<Act, T, float, T, T, float>;

/// CUTLASS's elementwise activation for plan.proto's code `Act`.
template <int Act> struct ActOf {
  template <class T>
  using Fn = std::conditional_t<
      Act == 1, cutlass::epilogue::thread::ReLu<T>,
      std::conditional_t<
          Act == 2, cutlass::epilogue::thread::GELU<T>,
          std::conditional_t<Act == 3, cutlass::epilogue::thread::GELU_taylor<T>,
                             std::conditional_t<Act == 4, cutlass::epilogue::thread::SiLu<T>,
                                                cutlass::epilogue::thread::Identity<T>>>>>;
};

/// Act: 0 none, 1 ReLU, 2 erf-GELU, 3 tanh-GELU, 4 SiLU (plan.proto's codes). Partial: the
/// split-K form, which writes float partial sums of k-slices (no C, bias or activation;
/// splitReduce applies them).
/// Tiles 0-2 run example 63's kernel (its mainloop adds the bias: kExample63); tiles 3 and 4
/// CUTLASS's ping-pong kernel, whose epilogue adds the per-row bias (a weight row's) and
/// applies the activation.
template <class T, int Act, int TileId, bool Partial = false> struct Config {
  static constexpr bool kPartial = Partial;
  static constexpr bool kExample63 = TileId < 3;
  using Tile = std::conditional_t<
      TileId == 0, Shape<_64, _64, _128>,
      std::conditional_t<
          TileId == 1, Shape<_64, _128, _64>,
          std::conditional_t<TileId == 2, Shape<_64, _32, _128>,
                             std::conditional_t<TileId == 3, Shape<_128, _128, _64>,
                                                Shape<_64, _128, _64>>>>>;
  using Cluster = Shape<_1, _1, _1>;
  using Out = std::conditional_t<Partial, float, T>;
  using Src = std::conditional_t<Partial, void, T>;
  using Fusion63 = std::conditional_t<
      Partial, cutlass::epilogue::fusion::LinearCombination<float, float, void, float>,
      std::conditional_t<
          Act == 0, cutlass::epilogue::fusion::LinearCombination<T, float, T, float>,
          WithAct<T, ActOf<Act>::template Fn>>>;
  using FusionPp = RowBiasAct<T, ActOf<Act>::template Fn>;
  using Fusion = std::conditional_t<kExample63, Fusion63, FusionPp>;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, Src,
      cutlass::layout::ColumnMajor, 16 / sizeof(Out), Out, cutlass::layout::ColumnMajor,
      16 / sizeof(Out), cutlass::epilogue::TmaWarpSpecialized, Fusion>::CollectiveOp;
  using Schedule = std::conditional_t<
      kExample63, cutlass::gemm::KernelTmaWarpSpecializedFP8FastAccumWithPrefetchAndSplitDMA,
      cutlass::gemm::KernelTmaWarpSpecializedPingpong>;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, T, cutlass::layout::RowMajor, 8, T,
      cutlass::layout::ColumnMajor, 8, float, Tile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      Schedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

int fail(char *err, size_t len, const std::string &msg) {
  if (err && len)
    std::snprintf(err, len, "%s", msg.c_str());
  return 1;
}

struct Op {
  virtual ~Op() = default;
  virtual cutlass::Status run(cudaStream_t stream, bool pdl) = 0;
};

template <class G> struct OpT : Op {
  G gemm;
  void *ws = nullptr; // the kernel's workspace, where it asks for one
  ~OpT() override { cudaFree(ws); }
  cutlass::Status run(cudaStream_t stream, bool pdl) override {
    return gemm.run(stream, nullptr, pdl);
  }
};

/// A split-K GEMM: the partial GEMM over `splits` k-slices into a float workspace, then
/// splitReduce, both with programmatic dependent launch.
template <class G, class T> struct SplitOp : Op {
  G gemm;
  float *ws = nullptr;
  TgcCutlassGemmDesc d{};
  ~SplitOp() override { cudaFree(ws); }
  cutlass::Status run(cudaStream_t stream, bool pdl) override {
    cutlass::Status s = gemm.run(stream, nullptr, pdl);
    if (s != cutlass::Status::kSuccess)
      return s;
    cudaLaunchConfig_t cfg = {};
    cfg.stream = stream;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl ? 1 : 0;
    const float *p = ws;
    const T *bias = static_cast<const T *>(d.bias), *res = static_cast<const T *>(d.residual);
    T *c = static_cast<T *>(d.c);
    cudaError_t e;
    if (d.norm) {
      cfg.gridDim = dim3((unsigned)d.m);
      cfg.blockDim = dim3((unsigned)((d.n / 8 + 31) / 32 * 32));
      auto launch = [&](auto *y) { // Y's type: T, or float
        using TY = std::remove_pointer_t<decltype(y)>;
        return cudaLaunchKernelEx(&cfg, tgc_cutlass::splitReduceNorm<T, TY>, p, d.splits,
                                  (int)d.m, (int)d.n, (int)d.ldc, bias, res, c, d.norm, d.eps,
                                  static_cast<const T *>(d.gamma),
                                  static_cast<const T *>(d.beta), y);
      };
      e = d.norm_out_f32 ? launch(static_cast<float *>(d.norm_out))
                         : launch(static_cast<T *>(d.norm_out));
    } else {
      cfg.gridDim = dim3((unsigned)((d.m * d.n / 4 + 255) / 256));
      cfg.blockDim = dim3(256);
      e = cudaLaunchKernelEx(&cfg, tgc_cutlass::splitReduce<T>, p, d.splits, (int)d.m, (int)d.n,
                             (int)d.ldc, bias, res, c, d.activation);
    }
    return e == cudaSuccess ? cutlass::Status::kSuccess : cutlass::Status::kErrorInternal;
  }
};

/// CUTLASS's arguments for `d` (its pointers baked in).
template <class C> typename C::Gemm::Arguments arguments(const TgcCutlassGemmDesc &d, int sms) {
  using Args = typename C::Gemm::Arguments;
  using K = typename C::Gemm::GemmKernel;
  using E = typename C::Gemm::ElementA;
  using PtrC = decltype(Args{}.epilogue.ptr_C);
  using PtrD = decltype(Args{}.epilogue.ptr_D);
  const int n = (int)d.n, m = (int)d.m, k = (int)d.k, l = (int)d.batch;
  auto dA = cutlass::make_cute_packed_stride(typename K::StrideA{}, cute::make_shape(n, k, l));
  get<0>(dA) = d.ldb, get<2>(dA) = d.stride_b;
  auto dB = cutlass::make_cute_packed_stride(typename K::StrideB{}, cute::make_shape(m, k, l));
  get<0>(dB) = d.lda, get<2>(dB) = d.stride_a;
  auto dC = cutlass::make_cute_packed_stride(typename K::StrideC{}, cute::make_shape(n, m, l));
  get<1>(dC) = d.ldc, get<2>(dC) = d.stride_c;
  auto dD = cutlass::make_cute_packed_stride(typename K::StrideD{}, cute::make_shape(n, m, l));
  get<1>(dD) = d.ldc, get<2>(dD) = d.stride_c;
  cutlass::KernelHardwareInfo hw;
  hw.sm_count = sms;
  Args args{
      l > 1 ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm,
      {n, m, k, l},
      {static_cast<const E *>(d.b), dA, static_cast<const E *>(d.a), dB},
      {{}, static_cast<PtrC>(d.residual), dC, static_cast<PtrD>(d.c), dD},
      hw};
  args.epilogue.thread.alpha = 1.f;
  args.epilogue.thread.beta = d.residual ? 1.f : 0.f;
  // The bias: added to the accumulators by the kernel (tools/setup's patch to example 63), which
  // reads it before the mainloop; split-K's sum kernel applies it instead.
  if constexpr (!C::kExample63) {
    // The ping-pong kernel: the epilogue's per-row broadcast adds it (a weight: read without
    // waiting for the kernel ahead, as example 63's patch does).
    args.epilogue.thread.bias_ptr = static_cast<const E *>(d.bias);
    args.epilogue.thread.dBias = {_1{}, _0{}, d.bias_stride};
  } else {
    if constexpr (!C::kPartial) {
      args.mainloop.tgc_bias = d.bias;
      args.mainloop.tgc_bias_batch_stride = d.bias_stride;
    }
    // Example 63's knobs: trigger the next kernel's launch after half the k tiles are loaded;
    // prefetch weights until the other loads are past the wait.
    args.mainloop.overlap_ratio = 0.5f; // 0 and 0.25 measured the same (perf-log, 8th session)
    args.mainloop.prefetch_ratio = -1.f;
  }
  return args;
}

/// Split-K's partial GEMM as a batched GEMM of its own: slice s (k/S deep) of A and B writes the
/// float partial P_s (m×n, row pitch n) at ws + s·m·n; splitReduce applies bias, activation and
/// residual.
TgcCutlassGemmDesc partialDesc(const TgcCutlassGemmDesc &d, float *ws) {
  TgcCutlassGemmDesc p = d;
  p.k = d.k / d.splits, p.batch = d.splits, p.splits = 1;
  p.stride_a = p.stride_b = p.k;
  p.ldc = d.n, p.stride_c = d.m * d.n;
  p.c = ws, p.bias = p.residual = nullptr, p.activation = 0, p.bias_stride = 0;
  p.norm = 0, p.gamma = p.beta = nullptr, p.norm_out = nullptr, p.norm_out_f32 = 0;
  return p;
}

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

template <class C> using PartialOf = Config<typename C::Gemm::ElementA, 0, 0, true>;

template <class C> int check(const TgcCutlassGemmDesc &d, char *err, size_t len) {
  using P = PartialOf<C>;
  cutlass::Status s = d.splits > 1 ? P::Gemm::can_implement(arguments<P>(partialDesc(d, nullptr), 1))
                                   : C::Gemm::can_implement(arguments<C>(d, 1));
  if (s != cutlass::Status::kSuccess)
    return fail(err, len, std::string("CUTLASS refuses ") + describe(d) + ": " +
                              cutlassGetStatusString(s));
  return 0;
}

/// After check (tgc_cutlass_gemm_create runs it): the operation, initialized for this device.
template <class C> int create(const TgcCutlassGemmDesc &d, void **handle, char *err, size_t len) {
  int dev = 0, sms = 0;
  cudaError_t ce = cudaGetDevice(&dev);
  if (ce == cudaSuccess)
    ce = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (ce != cudaSuccess)
    return fail(err, len, std::string("CUDA runtime: ") + cudaGetErrorString(ce));
  cutlass::Status s;
  std::unique_ptr<Op> op;
  if (d.splits > 1) {
    using E = typename C::Gemm::ElementA;
    auto sp = std::make_unique<SplitOp<typename PartialOf<C>::Gemm, E>>();
    sp->d = d;
    if ((ce = cudaMalloc(&sp->ws, (size_t)d.splits * d.m * d.n * sizeof(float))) != cudaSuccess)
      return fail(err, len, std::string("cudaMalloc(split-K partials): ") + cudaGetErrorString(ce));
    s = sp->gemm.initialize(arguments<PartialOf<C>>(partialDesc(d, sp->ws), sms), nullptr);
    op = std::move(sp);
  } else {
    auto one = std::make_unique<OpT<typename C::Gemm>>();
    const auto args = arguments<C>(d, sms);
    if (const size_t bytes = C::Gemm::get_workspace_size(args);
        bytes && (ce = cudaMalloc(&one->ws, bytes)) != cudaSuccess)
      return fail(err, len, std::string("cudaMalloc(GEMM workspace): ") + cudaGetErrorString(ce));
    s = one->gemm.initialize(args, one->ws);
    op = std::move(one);
  }
  if (s != cutlass::Status::kSuccess)
    return fail(err, len, std::string("CUTLASS initialize ") + describe(d) + ": " +
                              cutlassGetStatusString(s) + " (" +
                              cudaGetErrorString(cudaGetLastError()) + ")");
  *handle = op.release();
  return 0;
}

/// Calls F<Config<element, activation, tile>>(args...) for the descriptor's element type,
/// activation and tile.
template <template <class> class F, class T, int Tile, class... A>
int dispatchAct(const TgcCutlassGemmDesc &d, A... a) {
  switch (d.activation) {
  case 1: return F<Config<T, 1, Tile>>::call(d, a...);
  case 2: return F<Config<T, 2, Tile>>::call(d, a...);
  case 3: return F<Config<T, 3, Tile>>::call(d, a...);
  case 4: return F<Config<T, 4, Tile>>::call(d, a...);
  default: return F<Config<T, 0, Tile>>::call(d, a...);
  }
}
template <template <class> class F, int Tile, class... A>
int dispatchTile(const TgcCutlassGemmDesc &d, A... a) {
  return d.dtype == 10 ? dispatchAct<F, cutlass::half_t, Tile>(d, a...)
                       : dispatchAct<F, cutlass::bfloat16_t, Tile>(d, a...);
}
template <template <class> class F, class... A> int dispatch(const TgcCutlassGemmDesc &d, A... a) {
  switch (d.tile) {
  case 0: return dispatchTile<F, 0>(d, a...);
  case 1: return dispatchTile<F, 1>(d, a...);
  case 2: return dispatchTile<F, 2>(d, a...);
  case 3: return dispatchTile<F, 3>(d, a...);
  default: return dispatchTile<F, 4>(d, a...);
  }
}
template <class C> struct Check {
  static int call(const TgcCutlassGemmDesc &d, char *err, size_t len) { return check<C>(d, err, len); }
};
template <class C> struct Create {
  static int call(const TgcCutlassGemmDesc &d, void **h, char *err, size_t len) {
    return create<C>(d, h, err, len);
  }
};

} // namespace

extern "C" {

int tgc_cutlass_abi(void) { return TGC_CUTLASS_ABI; }

int tgc_cutlass_gemm_check(const TgcCutlassGemmDesc *d, char *err, size_t len) {
  if (!d)
    return fail(err, len, "null descriptor");
  std::string why = unsupported(*d);
  if (!why.empty())
    return fail(err, len, "CUTLASS GEMM cannot run " + describe(*d) + ": " + why);
  return dispatch<Check>(*d, err, len);
}

int tgc_cutlass_gemm_create(const TgcCutlassGemmDesc *d, void **handle, char *err, size_t len) {
  if (!handle)
    return fail(err, len, "null handle");
  *handle = nullptr;
  if (int r = tgc_cutlass_gemm_check(d, err, len))
    return r;
  return dispatch<Create>(*d, handle, err, len);
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
