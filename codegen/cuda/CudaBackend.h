// CudaBackend.h — lowers kernel-formed `tg` IR to a CUDA package (NVRTC cubin + PTX, cuBLASLt
// GEMM steps, one arena, one weights blob).
#ifndef TGC_CODEGEN_CUDA_CUDABACKEND_H
#define TGC_CODEGEN_CUDA_CUDABACKEND_H

#include "codegen/common/PackageInfo.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace tgc {

/// "sm_90" for "cuda:sm_90"; an error for anything else that is not "cuda:sm_<digits>".
llvm::Expected<std::string> cudaArchOf(const std::string &target);

/// Writes the CUDA package for `module`'s `@main` into directory `dir` (created; replaced if it
/// holds a package): plan.pb/plan.txt, weights.bin, kernels.cu and, compiled by NVRTC for
/// `info.target`'s arch (cached by content hash under `cacheDir`, "" for no cache),
/// kernels.cubin + kernels.ptx. Errors name the op that could not be lowered or quote NVRTC.
llvm::Expected<PackageStats> writeCudaPackage(mlir::ModuleOp module, const std::string &dir,
                                              const PackageInfo &info,
                                              const std::string &cacheDir);

} // namespace tgc

#endif // TGC_CODEGEN_CUDA_CUDABACKEND_H
