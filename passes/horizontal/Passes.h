// Passes.h — horizontal fusion passes (parallel linears, split branches, independent linears).
#ifndef TGC_PASSES_HORIZONTAL_PASSES_H
#define TGC_PASSES_HORIZONTAL_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <memory>

namespace tgc {

/// Creates the `tgc-merge-parallel-linears` pass (QKV merge).
std::unique_ptr<mlir::Pass> createMergeParallelLinearsPass();
/// Creates the `tgc-batch-split-branches` pass (batched ops in place of a split's branches).
std::unique_ptr<mlir::Pass> createBatchSplitBranchesPass();
/// Creates the `tgc-batch-independent-linears` pass (two-step greedy search).
std::unique_ptr<mlir::Pass> createBatchIndependentLinearsPass();

/// registerHorizontalPasses(): registers the horizontal fusion passes (for tgc-opt).
#define GEN_PASS_REGISTRATION
#include "passes/horizontal/Passes.h.inc"

} // namespace tgc

#endif // TGC_PASSES_HORIZONTAL_PASSES_H
