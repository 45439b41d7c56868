// Env.h — every environment variable tgc reads, in one place: what it does and its values.
//
// Code reads them through envValue(), never through std::getenv itself, so this table is the whole
// list (tools/check_layers.py fails on a getenv of a TGC_ variable anywhere else). `tgc --help`
// prints it.
#ifndef TGC_RUNTIME_ENV_H
#define TGC_RUNTIME_ENV_H

namespace tgc {

enum class Env {
  CacheDir,       ///< TGC_CACHE_DIR
  Cxx,            ///< TGC_CXX
  Nvrtc,          ///< TGC_NVRTC
  CudaInclude,    ///< TGC_CUDA_INCLUDE
  CudaDevice,     ///< TGC_CUDA_DEVICE
  CudaGraph,      ///< TGC_CUDA_GRAPH
  CudaPdl,        ///< TGC_CUDA_PDL
  CudaPinned,     ///< TGC_CUDA_PINNED
  NoCublasLt,     ///< TGC_NO_CUBLASLT
  Cudnn,          ///< TGC_CUDNN
  Conv,           ///< TGC_CONV
  Sdpa,           ///< TGC_SDPA
  AttnTile,       ///< TGC_ATTN_TILE
  Cutlass,        ///< TGC_CUTLASS
  GemmCutlass,    ///< TGC_GEMM_CUTLASS
  GemmMma,        ///< TGC_GEMM_MMA
  GemmNorm,       ///< TGC_GEMM_NORM
  GemmTune,       ///< TGC_GEMM_TUNE
  GemmGraphTune,  ///< TGC_GEMM_GRAPH_TUNE
  TuneCache,      ///< TGC_TUNE_CACHE
  CpuTune,        ///< TGC_CPU_TUNE
};

struct EnvInfo {
  Env var;
  const char *name; ///< e.g. "TGC_CUDA_GRAPH"
  const char *doc;  ///< one line: values and effect
};

/// The variable's value, or nullptr when it is unset.
const char *envValue(Env v);
/// Its name.
const char *envName(Env v);
/// Every variable with its documentation, in the order above (null-terminated by count).
const EnvInfo *envTable(int &count);

} // namespace tgc

#endif // TGC_RUNTIME_ENV_H
