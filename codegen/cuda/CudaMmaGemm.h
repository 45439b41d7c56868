// CudaMmaGemm.h — the generator of tgc's tensor-core GEMM kernels for f16/bf16 (CudaMmaGemm.cpp);
// their names and limits, which the runtime shares, are the package schema's
// (runtime/schema/MmaGemm.h).
#ifndef TGC_CODEGEN_CUDA_CUDAMMAGEMM_H
#define TGC_CODEGEN_CUDA_CUDAMMAGEMM_H

#include "runtime/schema/MmaGemm.h"

#include <set>
#include <string>
#include <utility>

namespace tgc::cuda {

/// CUDA source of the kernels for each (dtype, transB) a package's GEMMs use; empty when none.
std::string mmaGemmSource(const std::set<std::pair<int, bool>> &uses);

} // namespace tgc::cuda

#endif // TGC_CODEGEN_CUDA_CUDAMMAGEMM_H
