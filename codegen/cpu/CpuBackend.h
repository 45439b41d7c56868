// CpuBackend.h — lowers kernel-formed `tg` IR to a CPU package (C++ kernels in a shared object).
#ifndef TGC_CODEGEN_CPU_CPUBACKEND_H
#define TGC_CODEGEN_CPU_CPUBACKEND_H

#include "codegen/common/PackageInfo.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace tgc {

/// Writes the package for `module`'s `@main` into directory `dir` (created; replaced if present).
/// `@main` holds tg ops, tg.fused kernels and tg.constant weights. Kernels are emitted as C++,
/// compiled by the host compiler into kernels.so (cached by content hash under `cacheDir`, "" for
/// no cache), GEMMs call OpenBLAS. Errors name the op that could not be lowered.
/// The C++ source of `module`'s kernels as writeCpuPackage would write it, without writing or
/// compiling anything (the fuzz harness of model names checks it).
llvm::Expected<std::string> emitCpuSource(mlir::ModuleOp module, const PackageInfo &info);

llvm::Expected<PackageStats> writeCpuPackage(mlir::ModuleOp module, const std::string &dir,
                                             const PackageInfo &info,
                                             const std::string &cacheDir);

} // namespace tgc

#endif // TGC_CODEGEN_CPU_CPUBACKEND_H
