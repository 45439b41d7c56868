// CpuBackend.h — lowers kernel-formed `tg` IR to a CPU package (C++ kernels in a shared object).
#ifndef TGC_CODEGEN_CPU_CPUBACKEND_H
#define TGC_CODEGEN_CPU_CPUBACKEND_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace tgc {

/// What the package records about where it came from.
struct PackageInfo {
  std::string target = "cpu";
  std::string tgcVersion;
  std::string modelName;
  std::string modelHash; ///< hex hash of the source model bytes
  std::string precision = "fp32"; ///< --precision: what the package stores inside its f32 edges
};

/// Figures of a written package (for --stats and tgc inspect).
struct PackageStats {
  int64_t kernels = 0;      ///< kernel launches per inference
  int64_t arenaBytes = 0;   ///< activation arena
  int64_t weightBytes = 0;  ///< weights blob
  bool kernelCacheHit = false;
};

/// Writes the package for `module`'s `@main` into directory `dir` (created; replaced if present).
/// `@main` holds tg ops, tg.fused kernels and tg.constant weights. Kernels are emitted as C++,
/// compiled by the host compiler into kernels.so (cached by content hash under `cacheDir`, "" for
/// no cache), GEMMs call OpenBLAS. Errors name the op that could not be lowered.
llvm::Expected<PackageStats> writeCpuPackage(mlir::ModuleOp module, const std::string &dir,
                                             const PackageInfo &info,
                                             const std::string &cacheDir);

} // namespace tgc

#endif // TGC_CODEGEN_CPU_CPUBACKEND_H
