// Experiment (2026-11-24, seventh session; not built by the project): does CUTLASS example 63's
// weight-prefetch GEMM (TMA warp-specialized, PDL: prefetches weights into L2 before
// griddepcontrol.wait), with split-K done by the compiler (a batch of k-slices writing fp32
// partials that the next kernel sums), beat cuBLASLt in bert_base's layer chain at M = 128?
// The chain: 12 layers of QKV GEMM -> "attention" -> O GEMM -> "norm" -> FFN1 -> "GELU" -> FFN2 ->
// "norm", where the quoted steps are stand-in PDL kernels (wait, then sum the partials / copy,
// 4 elements per thread) — tgc's own kernels sit there in the real graph. cuBLASLt (heuristic's
// first algorithm, D^T = W X^T as torch's Linear) runs the same chain with the same stand-ins.
// Results: docs/perf-log.md, seventh session.
// Build: as docs/experiments/cutlass-prefetch-gemm-chain.cu ($EX63 = the example's collective/,
// kernel/, pipeline/ with the two fp8-only static_asserts removed), plus -lcublasLt:
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DCUTLASS_ENABLE_GDC_FOR_SM90=1 \
//     --expt-relaxed-constexpr -I$EX63 -I$CUTLASS/include cutlass-splitk-layer-chain.cu \
//     -L/usr/local/cuda/lib64 -lcublasLt -Xlinker -rpath=/usr/local/cuda/lib64
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_fp16.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

#include "collective/builder.hpp"
#include "collective/dispatch_policy_extra.hpp"
#include "kernel/sm90_gemm_tma_warpspecialized_with_prefetch.hpp"

using namespace cute;
#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_));                   \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)
#define CB(x)                                                                                      \
  do {                                                                                             \
    cublasStatus_t s_ = (x);                                                                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                             \
      std::printf("cuBLASLt %s at %d: %d\n", #x, __LINE__, (int)s_);                               \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

using T = cutlass::half_t;
constexpr int M = 128, layers = 12;

template <class TileShape, class Out> struct Cfg {
  using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, Shape<_1, _1, _1>,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void,
      cutlass::layout::ColumnMajor, 16 / sizeof(Out), Out, cutlass::layout::ColumnMajor,
      16 / sizeof(Out), cutlass::epilogue::TmaWarpSpecialized>::CollectiveOp;
  using Main = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, T, cutlass::layout::RowMajor, 8, T,
      cutlass::layout::ColumnMajor, 8, float, TileShape, Shape<_1, _1, _1>,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epi::SharedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecializedFP8FastAccumWithPrefetchAndSplitDMA>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Main, Epi>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

cutlass::KernelHardwareInfo hw;
cudaStream_t st;
using ChainStep = std::function<void(cudaStream_t)>;

/// D_s (n x M column-major = M x n row-major, slice s at D + s*n*M) = W[:, s*ks:(s+1)*ks] .
/// X[:, s*ks:(s+1)*ks]^T for s < S, ks = k / S. W is n x k row-major, X is M x k with row pitch ldx.
template <class Gemm, class Out>
ChainStep cutlassGemm(const T *W, const T *X, int ldx, Out *D, int n, int k, int S, float overlap) {
  auto op = std::make_shared<Gemm>();
  const int ks = k / S;
  using K = typename Gemm::GemmKernel;
  auto dA = cutlass::make_cute_packed_stride(typename K::StrideA{}, cute::make_shape(n, ks, S));
  get<0>(dA) = k;
  get<2>(dA) = ks;
  auto dB = cutlass::make_cute_packed_stride(typename K::StrideB{}, cute::make_shape(M, ks, S));
  get<0>(dB) = ldx;
  get<2>(dB) = ks;
  auto dD = cutlass::make_cute_packed_stride(typename K::StrideD{}, cute::make_shape(n, M, S));
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kBatched,
                                {n, M, ks, S},
                                {W, dA, X, dB},
                                {{}, nullptr, {}, D, dD},
                                hw};
  args.epilogue.thread.alpha = 1.f;
  args.epilogue.thread.beta = 0.f;
  args.mainloop.overlap_ratio = overlap;
  args.mainloop.prefetch_ratio = -1.f;
  cutlass::Status s = op->can_implement(args);
  if (s == cutlass::Status::kSuccess) s = op->initialize(args, nullptr, st);
  if (s != cutlass::Status::kSuccess) {
    std::printf("CUTLASS n=%d k=%d S=%d: %s\n", n, k, S, cutlassGetStatusString(s));
    std::exit(1);
  }
  return [op](cudaStream_t s) {
    if (op->run(s, nullptr, true) != cutlass::Status::kSuccess) std::printf("CUTLASS run failed\n");
  };
}

cublasLtHandle_t lt;
void *ltWork;
const size_t ltWorkBytes = 32u << 20;

ChainStep cublasGemm(const T *W, const T *X, int ldx, T *D, int n, int k) {
  struct Op {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
  };
  auto op = std::make_shared<Op>();
  CB(cublasLtMatmulDescCreate(&op->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t tA = CUBLAS_OP_T, tB = CUBLAS_OP_N;
  CB(cublasLtMatmulDescSetAttribute(op->desc, CUBLASLT_MATMUL_DESC_TRANSA, &tA, sizeof tA));
  CB(cublasLtMatmulDescSetAttribute(op->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tB, sizeof tB));
  CB(cublasLtMatrixLayoutCreate(&op->a, CUDA_R_16F, k, n, k));
  CB(cublasLtMatrixLayoutCreate(&op->b, CUDA_R_16F, k, M, ldx));
  CB(cublasLtMatrixLayoutCreate(&op->d, CUDA_R_16F, n, M, n));
  cublasLtMatmulPreference_t pref;
  CB(cublasLtMatmulPreferenceCreate(&pref));
  CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                          &ltWorkBytes, sizeof ltWorkBytes));
  cublasLtMatmulHeuristicResult_t h;
  int found = 0;
  CB(cublasLtMatmulAlgoGetHeuristic(lt, op->desc, op->a, op->b, op->d, op->d, pref, 1, &h, &found));
  if (!found) std::exit(1);
  op->algo = h.algo;
  return [op, W, X, D](cudaStream_t s) {
    const float one = 1.f, zero = 0.f;
    CB(cublasLtMatmul(lt, op->desc, &one, W, op->a, X, op->b, &zero, D, op->d, D, op->d, &op->algo,
                      ltWork, ltWorkBytes, s));
  };
}

/// Stand-in for tgc's kernel after a GEMM: waits for it (PDL), then out = sum of S partials of
/// `width` columns, 4 elements per thread.
template <class In>
__global__ void standin(const In *in, int S, long sstride, int ldin, int width, __half *out) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;");
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (i >= M * width) return;
  int r = i / width, c = i % width;
  float acc[4] = {0, 0, 0, 0};
  for (int s = 0; s < S; ++s) {
    const In *p = in + s * sstride + (long)r * ldin + c;
    if constexpr (sizeof(In) == 4) {
      float4 v = *reinterpret_cast<const float4 *>(p);
      acc[0] += v.x, acc[1] += v.y, acc[2] += v.z, acc[3] += v.w;
    } else {
      uint2 u = *reinterpret_cast<const uint2 *>(p);
      __half2 a = *reinterpret_cast<__half2 *>(&u.x), b = *reinterpret_cast<__half2 *>(&u.y);
      acc[0] += __low2float(a), acc[1] += __high2float(a), acc[2] += __low2float(b),
          acc[3] += __high2float(b);
    }
  }
  __half2 a = __floats2half2_rn(acc[0], acc[1]), b = __floats2half2_rn(acc[2], acc[3]);
  uint2 u;
  u.x = *reinterpret_cast<unsigned *>(&a), u.y = *reinterpret_cast<unsigned *>(&b);
  *reinterpret_cast<uint2 *>(out + (long)r * width + c) = u;
}

template <class In> ChainStep standinStep(const In *in, int S, long sstride, int ldin, int width, T *out) {
  return [=](cudaStream_t s) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((M * width / 4 + 255) / 256);
    cfg.blockDim = dim3(256);
    cfg.stream = s;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, standin<In>, in, S, sstride, ldin, width,
                          reinterpret_cast<__half *>(out)));
  };
}

float timeSteps(const std::vector<ChainStep> &steps) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (auto &s : steps) s(st);
  CK(cudaStreamEndCapture(st, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 10; ++i) CK(cudaGraphLaunch(exec, st));
  CK(cudaStreamSynchronize(st));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> r;
  for (int round = 0; round < 7; ++round) {
    CK(cudaEventRecord(a, st));
    for (int i = 0; i < 100; ++i) CK(cudaGraphLaunch(exec, st));
    CK(cudaEventRecord(b, st));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    r.push_back(ms * 10.f);
  }
  std::sort(r.begin(), r.end());
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  return r[3];
}

__global__ void fillRandom(T *p, long n, unsigned seed, float scale) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
    p[i] = T(scale * ((h & 0xffff) / 32768.f - 1.f));
  }
}

// bert_base's four GEMMs: n (outputs), k, input activation, output activation.
struct Shp {
  const char *name;
  int n, k, in, out;
};
const Shp shapes[4] = {{"qkv", 2304, 768, 0, 1}, {"o", 768, 768, 2, 3},
                       {"ffn1", 3072, 768, 4, 5}, {"ffn2", 768, 3072, 6, 7}};
// act[0] = x (768), act[1] = qkv (2304), act[2] = attention out (768), act[3] = o (768),
// act[4] = normed (768), act[5] = ffn1 (3072), act[6] = gelu (3072), act[7] = ffn2 (768)
const int widths[8] = {768, 2304, 768, 768, 768, 3072, 3072, 768};
T *act[8];
float *partials; // room for 12 slices of 128 x 3072 fp32
std::vector<T *> weights;

/// The layer chain with GEMM `j` (of `shapes`) built by `gemm(j, layer)`, which returns the step
/// and sets what the next stand-in reads (input pointer, slices, slice stride, row pitch, fp32?).
struct GemmOut {
  ChainStep step;
  const void *out;
  int S;
  long sstride;
  bool f32;
};
std::vector<ChainStep> chain(const std::function<GemmOut(int, int)> &gemm, const std::vector<int> &which) {
  std::vector<ChainStep> steps;
  for (int l = 0; l < layers; ++l)
    for (int j : which) {
      GemmOut g = gemm(j, l);
      steps.push_back(g.step);
      const Shp &s = shapes[j];
      const int next = (s.out + 1) % 8, width = widths[next];
      // the stand-in reads `width` columns of the GEMM's output (attention: the first 768 of qkv)
      if (g.f32)
        steps.push_back(standinStep(static_cast<const float *>(g.out), g.S, g.sstride, s.n, width,
                                    act[next]));
      else
        steps.push_back(standinStep(static_cast<const T *>(g.out), 1, 0, s.n, width, act[next]));
    }
  return steps;
}

using G64h = Cfg<Shape<_64, _64, _128>, T>::Gemm;
using G64f = Cfg<Shape<_64, _64, _128>, float>::Gemm;
using G32h = Cfg<Shape<_64, _32, _128>, T>::Gemm;
using G32f = Cfg<Shape<_64, _32, _128>, float>::Gemm;

template <class Gh, class Gf> GemmOut cutlassStep(int j, int l, const int *splits, float overlap) {
  const Shp &s = shapes[j];
  const T *W = weights[l * 4 + j], *X = act[s.in];
  const int S = splits[j];
  if (S == 1)
    return {cutlassGemm<Gh, T>(W, X, s.k, act[s.out], s.n, s.k, 1, overlap), act[s.out], 1, 0, false};
  return {cutlassGemm<Gf, float>(W, X, s.k, partials, s.n, s.k, S, overlap), partials, S,
          (long)s.n * M, true};
}

double relL2(const std::vector<T> &a, const std::vector<T> &b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = float(a[i]) - float(b[i]);
    num += d * d, den += double(float(b[i])) * float(b[i]);
  }
  return std::sqrt(num / den);
}

/// One GEMM + stand-in through CUTLASS with `S` slices against cuBLASLt + stand-in, random operands.
template <class Gh, class Gf> void check(const char *tile, int j, int S) {
  const Shp &s = shapes[j];
  const int next = (s.out + 1) % 8, width = widths[next];
  auto run = [&](const std::vector<ChainStep> &steps) {
    std::vector<T> out((size_t)M * width);
    CK(cudaMemset(act[next], 0, out.size() * sizeof(T)));
    for (auto &step : steps) step(st);
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(out.data(), act[next], out.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  };
  auto ref = run({cublasGemm(weights[j], act[s.in], s.k, act[s.out], s.n, s.k),
                  standinStep<T>(act[s.out], 1, 0, s.n, width, act[next])});
  int splits[4] = {1, 1, 1, 1};
  splits[j] = S;
  GemmOut g = cutlassStep<Gh, Gf>(j, 0, splits, 0.5f);
  auto got = run({g.step, g.f32 ? standinStep(static_cast<const float *>(g.out), g.S, g.sstride, s.n,
                                              width, act[next])
                                : standinStep(static_cast<const T *>(g.out), 1, 0, s.n, width,
                                              act[next])});
  std::printf("check %s %s S=%d: rel-L2 vs cuBLASLt %.2e\n", tile, s.name, S, relL2(got, ref));
}

const int splitChoices[5] = {1, 2, 3, 4, 6};

/// Per shape: 12 (GEMM + stand-in) pairs per graph, µs per pair, for every split count; then the
/// whole layer chain with each shape's fastest split and a sweep of the overlap ratio.
template <class Gh, class Gf> void sweep(const char *tile, float cublasChain) {
  int best[4];
  for (int j = 0; j < 4; ++j) {
    float bestT = 1e9f;
    for (int S : splitChoices) {
      int splits[4] = {1, 1, 1, 1};
      splits[j] = S;
      float t = timeSteps(chain([&](int jj, int l) { return cutlassStep<Gh, Gf>(jj, l, splits, 0.5f); },
                                {j})) / layers;
      std::printf("  %s %-4s S=%d: %.2f us per GEMM + stand-in (%d CTAs)\n", tile, shapes[j].name, S, t,
                  (shapes[j].n / 64) * (M / (std::string(tile) == "64x64x128" ? 64 : 32)) * S);
      if (t < bestT) bestT = t, best[j] = S;
    }
  }
  for (float overlap : {0.5f, 0.f, 1.f, -1.f}) {
    for (int variant = 0; variant < 2; ++variant) {
      int splits[4] = {1, 1, 1, 1};
      if (variant == 1) std::copy(best, best + 4, splits); // variant 0: no splits anywhere
      float t = timeSteps(chain([&](int jj, int l) { return cutlassStep<Gh, Gf>(jj, l, splits, overlap); },
                                {0, 1, 2, 3}));
      std::printf("%s layer chain, splits qkv/o/ffn1/ffn2 = %d/%d/%d/%d, overlap %.1f: %.1f us "
                  "(cuBLASLt %.1f, %+.1f)\n", tile, splits[0], splits[1], splits[2], splits[3], overlap,
                  t, cublasChain, t - cublasChain);
    }
  }
}

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  hw.device_id = 0;
  hw.sm_count = sms;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CB(cublasLtCreate(&lt));
  CK(cudaMalloc(&ltWork, ltWorkBytes));
  for (int i = 0; i < 8; ++i) {
    CK(cudaMalloc(&act[i], (size_t)M * widths[i] * sizeof(T)));
    fillRandom<<<256, 256>>>(act[i], (long)M * widths[i], 17 + i, 1.f);
  }
  CK(cudaMalloc(&partials, (size_t)12 * M * 3072 * sizeof(float)));
  for (int l = 0; l < layers; ++l)
    for (auto &s : shapes) {
      T *w;
      CK(cudaMalloc(&w, (size_t)s.n * s.k * sizeof(T)));
      fillRandom<<<1024, 256>>>(w, (long)s.n * s.k, 1000 + (unsigned)weights.size(), 0.05f);
      weights.push_back(w);
    }
  CK(cudaDeviceSynchronize());
  for (int j = 0; j < 4; ++j)
    for (int S : {1, 4}) {
      check<G64h, G64f>("64x64x128", j, S);
      check<G32h, G32f>("64x32x128", j, S);
    }
  auto cub = [&](int j, int l) -> GemmOut {
    const Shp &s = shapes[j];
    return {cublasGemm(weights[l * 4 + j], act[s.in], s.k, act[s.out], s.n, s.k), act[s.out], 1, 0, false};
  };
  for (int j = 0; j < 4; ++j)
    std::printf("  cuBLASLt %-4s: %.2f us per GEMM + stand-in\n", shapes[j].name,
                timeSteps(chain(cub, {j})) / layers);
  std::vector<float> cubRuns;
  for (int i = 0; i < 3; ++i) cubRuns.push_back(timeSteps(chain(cub, {0, 1, 2, 3})));
  std::sort(cubRuns.begin(), cubRuns.end());
  std::printf("cuBLASLt layer chain: %.1f us (runs %.1f..%.1f)\n", cubRuns[1], cubRuns[0], cubRuns[2]);
  sweep<G64h, G64f>("64x64x128", cubRuns[1]);
  sweep<G32h, G32f>("64x32x128", cubRuns[1]);
  std::printf("cuBLASLt layer chain again: %.1f us\n", timeSteps(chain(cub, {0, 1, 2, 3})));
  return 0;
}
