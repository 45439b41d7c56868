// Passes.h — kernel formation passes.
#ifndef TGC_PASSES_KERNELS_PASSES_H
#define TGC_PASSES_KERNELS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <memory>

namespace mlir {
class Operation;
}

namespace tgc {

/// Creates the `tgc-form-kernels` pass.
std::unique_ptr<mlir::Pass> createFormKernelsPass();

/// Creates the `tgc-cpu-weight-layout` pass (CPU targets only); `gemmTiles`: whether the target
/// has the AVX-512 GEMM tiles (the pass's gemm-tiles option, true by default).
std::unique_ptr<mlir::Pass> createCpuWeightLayoutPass();
std::unique_ptr<mlir::Pass> createCpuWeightLayoutPass(bool gemmTiles);

/// Creates the `tgc-cuda-channels-last` pass (CUDA targets only).
std::unique_ptr<mlir::Pass> createCudaChannelsLastPass();

/// True for ops computed element by element from (broadcast) operands: the ops a pointwise
/// kernel may hold.
bool isPointwiseOp(mlir::Operation *op);

/// registerKernelsPasses(): registers the kernel formation passes (for tgc-opt).
#define GEN_PASS_REGISTRATION
#include "passes/kernels/Passes.h.inc"

} // namespace tgc

#endif // TGC_PASSES_KERNELS_PASSES_H
