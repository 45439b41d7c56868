// Env.cpp — the table of tgc's environment variables (Env.h).
#include "runtime/Env.h"

#include <cstdlib>

namespace tgc {

namespace {

const EnvInfo kTable[] = {
    {Env::CacheDir, "TGC_CACHE_DIR",
     "kernel cache (compiled kernels, and the GEMM tune cache's parent); default ~/.cache/tgc"},
    {Env::Cxx, "TGC_CXX", "host compiler command for CPU kernels; default clang++ or c++"},
    {Env::Nvrtc, "TGC_NVRTC", "path of libnvrtc to load; default the CUDA 13/12 install"},
    {Env::CudaInclude, "TGC_CUDA_INCLUDE",
     "CUDA include folder NVRTC gets for f16/bf16 headers; default beside libnvrtc"},
    {Env::CudaDevice, "TGC_CUDA_DEVICE", "GPU ordinal to run on; default 0"},
    {Env::CudaGraph, "TGC_CUDA_GRAPH", "0: launch the steps one by one instead of a CUDA graph"},
    {Env::CudaPdl, "TGC_CUDA_PDL", "0: no programmatic dependent launch"},
    {Env::CudaPinned, "TGC_CUDA_PINNED",
     "0: copy inputs/outputs from/to pageable memory (no pinned staging)"},
    {Env::NoCublasLt, "TGC_NO_CUBLASLT", "1: never load cuBLASLt (tgc's own GEMM kernels only)"},
    {Env::Cudnn, "TGC_CUDNN",
     "path of libcudnn.so.9 for convolutions, or off (tgc's own kernels); default libcudnn.so.9"},
    {Env::Conv, "TGC_CONV",
     "cudnn: every convolution cuDNN takes runs on it; own: tgc's kernels only; default: the "
     "faster, timed at load"},
    {Env::Sdpa, "TGC_SDPA",
     "cudnn: every unmasked f16/bf16 attention cuDNN takes runs on its fused attention; own: "
     "tgc's kernels only; unset or another value: the faster, timed at load in the graph"},
    {Env::AttnTile, "TGC_ATTN_TILE",
     "QW,KG,KT[,CL]: compile every f16/bf16 attention with that tiling (query warps 1/2/4/8, "
     "key groups with QW*KG <= 16, keys a tile 16/32/64; CL 2 or 4: blocks of a cluster that "
     "split the keys, QW > 1, sm_90+); for tests and sweeps"},
    {Env::Cutlass, "TGC_CUTLASS",
     "path of libtgc_cutlass_sm90.so; default beside the executable"},
    {Env::GemmCutlass, "TGC_GEMM_CUTLASS",
     "off: no CUTLASS GEMMs; force: wherever they fit; <name>: that configuration"},
    {Env::GemmMma, "TGC_GEMM_MMA",
     "off: no tgc tensor-core GEMMs; <BMxBKxS>: that configuration where it fits"},
    {Env::GemmNorm, "TGC_GEMM_NORM", "off: split-K sum kernels never apply the norm after them"},
    {Env::GemmTune, "TGC_GEMM_TUNE", "0: no load-time GEMM tuning (first heuristic choice)"},
    {Env::GemmGraphTune, "TGC_GEMM_GRAPH_TUNE", "0: no in-graph GEMM tuning pass"},
    {Env::TuneCache, "TGC_TUNE_CACHE",
     "folder of the GEMM tune cache, or off; default $TGC_CACHE_DIR/tune or ~/.cache/tgc/tune"},
    {Env::CpuTune, "TGC_CPU_TUNE",
     "0: CPU packages run every step on all their threads (no load-time choice per step)"},
};

} // namespace

const EnvInfo *envTable(int &count) {
  count = (int)(sizeof kTable / sizeof kTable[0]);
  return kTable;
}

const char *envName(Env v) {
  for (const EnvInfo &e : kTable)
    if (e.var == v)
      return e.name;
  return "";
}

const char *envValue(Env v) { return std::getenv(envName(v)); }

} // namespace tgc
