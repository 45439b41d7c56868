// Experiment (2026-11-24, fifth session; not built by the project): bert_base's 48 GEMMs at M = 128
// (QKV 2304x768, out 768x768, FFN1 3072x768, FFN2 768x3072, each reading the previous output,
// 12 layers of distinct weights) through CUTLASS 4.2 sm90 kernels, captured into one CUDA graph
// with and without programmatic dependent launch (CUTLASS_ENABLE_GDC_FOR_SM90: the kernels wait
// with griddepcontrol.wait, so PDL is safe). Results and analysis: docs/perf-log.md, fifth session.
//
// Build (here: CUDA 13.0 nvcc, ~2 min on 2 cores; headers from PyPI `nvidia-cutlass==4.2.0.0`,
// cutlass_library/source/include — with nvcc 13.0 its sm90_tile_scheduler_stream_k.hpp needs a
// one-line fix in is_last_tile(): pass a local copy of unit_iter_start_, the callee takes a
// non-const reference inside a const method):
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DCUTLASS_ENABLE_GDC_FOR_SM90=1 \
//     --expt-relaxed-constexpr -I$CUTLASS/include cutlass-gemm-chain.cu -o cutlass_chain
// Run on the GPU machine next to ../shared/bench/gemm_floor.py (the same chain through cuBLAS).
// CUTLASS sm90 GEMM chain benchmark: bert_base's 48 GEMMs (M = 128) as one CUDA graph, with and
// without programmatic dependent launch (CUTLASS built with CUTLASS_ENABLE_GDC_FOR_SM90).
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
#include "cutlass/gemm/kernel/tile_scheduler.hpp"
#include "cutlass/util/packed_stride.hpp"
using namespace cute;

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); std::exit(1); } } while (0)

using T = cutlass::half_t;
using LayoutA = cutlass::layout::RowMajor;     // activations M x K
using LayoutB = cutlass::layout::ColumnMajor;  // weights N x K row-major = K x N column-major
using LayoutC = cutlass::layout::RowMajor;
constexpr int Align = 8;

template <class TileShape, class ClusterShape, class KSched, class ESched, class Sched>
struct Cfg {
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, T, LayoutC, Align, T, LayoutC,
      Align, ESched>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, T, LayoutA, Align, T, LayoutB, Align, float,
      TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      KSched>::CollectiveOp;
  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                          CollectiveEpilogue, Sched>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
};

struct Shp { int n, k, in, out, lda; };
const Shp shapes[4] = {{2304, 768, 0, 1, 768}, {768, 768, 1, 2, 2304}, {3072, 768, 2, 3, 768}, {768, 3072, 3, 0, 3072}};
const int M = 128, layers = 12;
T *act[4];
std::vector<T *> weights;
cudaStream_t st;
cutlass::KernelHardwareInfo hw;

template <class Gemm, bool StreamK>
void runConfig(const char *name, std::vector<int> splitsList) {
  struct Op { Gemm g; void *ws = nullptr; size_t wsb = 0; };
  for (int sp : splitsList) {
    std::vector<Op> ops(layers * 4);
    bool ok = true;
    for (int l = 0; l < layers && ok; ++l) for (int j = 0; j < 4; ++j) {
      const Shp &s = shapes[j];
      Op &op = ops[l * 4 + j];
      typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {M, s.n, s.k, 1},
          {act[s.in], cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideA{}, cute::make_shape(M, s.k, 1)),
           weights[l * 4 + j], cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideB{}, cute::make_shape(s.n, s.k, 1))},
          {{}, act[s.out], cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideC{}, cute::make_shape(M, s.n, 1)),
           act[s.out], cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideD{}, cute::make_shape(M, s.n, 1))},
          hw};
      cute::get<0>(args.mainloop.dA) = s.lda;
      args.epilogue.thread.alpha = 1.f; args.epilogue.thread.beta = 0.f;
      if constexpr (StreamK) {
        using DM = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90StreamKParams::DecompositionMode;
        args.scheduler.splits = sp; args.scheduler.decomposition_mode = sp > 1 ? DM::SplitK : DM::DataParallel;
      }
      size_t wsb = Gemm::get_workspace_size(args);
      if (wsb) CK(cudaMalloc(&op.ws, wsb));
      op.wsb = wsb;
      cutlass::Status ci = op.g.can_implement(args);
      cutlass::Status in = ci == cutlass::Status::kSuccess ? op.g.initialize(args, op.ws, st) : ci;
      if (in != cutlass::Status::kSuccess) { std::printf("%s splits %d: status %s\n", name, sp, cutlassGetStatusString(in)); ok = false; break; }
    }
    if (!ok) continue;
    for (int pdl = 0; pdl < 2; ++pdl) {
      cudaGraph_t graph; cudaGraphExec_t exec;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
      for (auto &op : ops) if (op.ws) CK(cudaMemsetAsync(op.ws, 0, op.wsb, st));
      for (auto &op : ops) if (op.g.run(st, nullptr, pdl == 1) != cutlass::Status::kSuccess) std::printf("run failed\n");
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
      std::printf("%s splits %d pdl %d: 48 GEMMs %.1f us per pass (%.2f us each)\n", name, sp, pdl, r[2], r[2] / 48);
      CK(cudaGraphExecDestroy(exec)); CK(cudaGraphDestroy(graph));
    }
    for (auto &op : ops) if (op.ws) cudaFree(op.ws);
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
  using namespace cutlass::gemm;
  using PP64x64c21 = Cfg<Shape<_64, _64, _64>, Shape<_2, _1, _1>, KernelTmaWarpSpecializedPingpong, cutlass::epilogue::TmaWarpSpecialized, PersistentScheduler>::Gemm;
  runConfig<PP64x64c21, false>("pingpong 64x64x64 cluster 2x1", {1});
  using PP64x64c12 = Cfg<Shape<_64, _64, _64>, Shape<_1, _2, _1>, KernelTmaWarpSpecializedPingpong, cutlass::epilogue::TmaWarpSpecialized, PersistentScheduler>::Gemm;
  runConfig<PP64x64c12, false>("pingpong 64x64x64 cluster 1x2", {1});
  using CO128x64c12 = Cfg<Shape<_128, _64, _64>, Shape<_1, _2, _1>, KernelTmaWarpSpecializedCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative, StreamKScheduler>::Gemm;
  runConfig<CO128x64c12, true>("cooperative 128x64x64 cluster 1x2 split-K", {1, 2, 4});
  using CO128x32 = Cfg<Shape<_128, _32, _64>, Shape<_1, _1, _1>, KernelTmaWarpSpecializedCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative, StreamKScheduler>::Gemm;
  runConfig<CO128x32, true>("cooperative 128x32x64 split-K", {1, 2, 4});
  return 0;
}
