// Experiment (2026-11-24, fifth session; not built by the project): bert_base's 48 GEMMs (M = 128)
// chained in one CUDA graph through CUTLASS 4.2 example 63's weight-prefetch kernel
// (examples/63_hopper_gemm_with_weight_prefetch: TMA warp-specialized, non-persistent; while its
// other warps wait on griddepcontrol.wait, it prefetches weights into L2) at fp16, weights as
// operand A (Dᵀ = W·Xᵀ). Results: docs/perf-log.md, fifth session.
// Build: copy the example's collective/, kernel/, pipeline/ folders to $EX63 and delete the two
// `static_assert(detail::is_input_fp8<...>)` lines from $EX63/collective/builder.hpp (the
// collective itself is type-generic), then
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DCUTLASS_ENABLE_GDC_FOR_SM90=1 \
//     --expt-relaxed-constexpr -I$EX63 -I$CUTLASS/include cutlass-prefetch-gemm-chain.cu
// bert_base's 48 GEMMs chained in one graph through CUTLASS example 63's weight-prefetch kernel at
// fp16 (weights as operand A: D^T = W X^T), with PDL (the kernel prefetches weights into L2 while
// it waits for the previous kernel).
#include <cstdio>
#include <vector>
#include <algorithm>
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"
#include "collective/dispatch_policy_extra.hpp"
#include "collective/builder.hpp"
#include "kernel/sm90_gemm_tma_warpspecialized_with_prefetch.hpp"
using namespace cute;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); std::exit(1); } } while (0)
using T = cutlass::half_t;
template <class TileShape, class KSched>
struct Cfg {
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, Shape<_1, _1, _1>,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, T, cutlass::layout::ColumnMajor, 8,
      T, cutlass::layout::ColumnMajor, 8, cutlass::epilogue::TmaWarpSpecialized>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, T, cutlass::layout::RowMajor, 8, T,
      cutlass::layout::ColumnMajor, 8, float, TileShape, Shape<_1, _1, _1>,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      KSched>::CollectiveOp;
  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                          CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
};
struct Shp { int n, k, in, out, lda; };
const Shp shapes[4] = {{2304, 768, 0, 1, 768}, {768, 768, 1, 2, 2304}, {3072, 768, 2, 3, 768}, {768, 3072, 3, 0, 3072}};
const int M = 128, layers = 12;
T *act[4];
std::vector<T *> weights;
cudaStream_t st;
cutlass::KernelHardwareInfo hw;

template <class Gemm>
void runConfig(const char *name, float overlap, float prefetch) {
  std::vector<Gemm> ops(layers * 4);
  for (int l = 0; l < layers; ++l) for (int j = 0; j < 4; ++j) {
    const Shp &s = shapes[j];
    // D' (n x 128, column-major = the 128 x n row-major output) = W (n x k, row-major) * X' (k x 128, column-major = X row-major)
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {s.n, M, s.k, 1},
        {weights[l * 4 + j], cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideA{}, cute::make_shape(s.n, s.k, 1)),
         act[s.in], cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideB{}, cute::make_shape(M, s.k, 1))},
        {{}, act[s.out], cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideC{}, cute::make_shape(s.n, M, 1)),
         act[s.out], cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideD{}, cute::make_shape(s.n, M, 1))},
        hw};
    cute::get<0>(args.mainloop.dB) = s.lda; // X rows lda apart
    args.epilogue.thread.alpha = 1.f; args.epilogue.thread.beta = 0.f;
    args.mainloop.overlap_ratio = overlap; args.mainloop.prefetch_ratio = prefetch;
    cutlass::Status ci = ops[l * 4 + j].can_implement(args);
    cutlass::Status in = ci == cutlass::Status::kSuccess ? ops[l * 4 + j].initialize(args, nullptr, st) : ci;
    if (in != cutlass::Status::kSuccess) { std::printf("%s: %s (shape %d)\n", name, cutlassGetStatusString(in), j); return; }
  }
  for (int pdl = 0; pdl < 2; ++pdl) {
    cudaGraph_t graph; cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (auto &op : ops) if (op.run(st, nullptr, pdl == 1) != cutlass::Status::kSuccess) std::printf("run failed\n");
    CK(cudaStreamEndCapture(st, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 10; ++i) CK(cudaGraphLaunch(exec, st));
    CK(cudaStreamSynchronize(st));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> r;
    for (int round = 0; round < 5; ++round) {
      CK(cudaEventRecord(a, st));
      for (int i = 0; i < 100; ++i) CK(cudaGraphLaunch(exec, st));
      CK(cudaEventRecord(b, st)); CK(cudaEventSynchronize(b));
      float ms; CK(cudaEventElapsedTime(&ms, a, b)); r.push_back(ms * 10.f);
    }
    std::sort(r.begin(), r.end());
    std::printf("%s overlap %.2f prefetch %.2f pdl %d: 48 GEMMs %.1f us per pass (%.2f us each)\n", name, overlap, prefetch, pdl, r[2], r[2] / 48);
    CK(cudaGraphExecDestroy(exec)); CK(cudaGraphDestroy(graph));
  }
}

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  hw.device_id = 0; hw.sm_count = sms;
  const int widths[4] = {768, 2304, 768, 3072};
  for (int i = 0; i < 4; ++i) { CK(cudaMalloc(&act[i], (size_t)M * widths[i] * sizeof(T))); CK(cudaMemset(act[i], 0, (size_t)M * widths[i] * sizeof(T))); }
  for (int l = 0; l < layers; ++l) for (auto &s : shapes) { T *w; CK(cudaMalloc(&w, (size_t)s.n * s.k * sizeof(T))); CK(cudaMemset(w, 0, (size_t)s.n * s.k * sizeof(T))); weights.push_back(w); }
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  using G1 = Cfg<Shape<_64, _64, _128>, cutlass::gemm::KernelTmaWarpSpecializedFP8FastAccumWithPrefetchAndSplitDMA>::Gemm;
  runConfig<G1>("prefetch-splitDMA 64x64x128", 0.5f, -1.0f);
  using G3 = Cfg<Shape<_64, _32, _128>, cutlass::gemm::KernelTmaWarpSpecializedFP8FastAccumWithPrefetchAndSplitDMA>::Gemm;
  runConfig<G3>("prefetch-splitDMA 64x32x128", 0.5f, -1.0f);
  using G4 = Cfg<Shape<_64, _16, _128>, cutlass::gemm::KernelTmaWarpSpecializedFP8FastAccumWithPrefetchAndSplitDMA>::Gemm;
  runConfig<G4>("prefetch-splitDMA 64x16x128", 0.5f, -1.0f);
  using G5 = Cfg<Shape<_64, _32, _256>, cutlass::gemm::KernelTmaWarpSpecializedFP8FastAccumWithPrefetchAndSplitDMA>::Gemm;
  runConfig<G5>("prefetch-splitDMA 64x32x256", 0.5f, -1.0f);
  return 0;
}
