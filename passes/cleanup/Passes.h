// Passes.h — cleanup passes (constant folding, ...).
#ifndef TGC_PASSES_CLEANUP_PASSES_H
#define TGC_PASSES_CLEANUP_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <memory>

namespace tgc {

/// Creates the `tgc-fold-constants` pass.
std::unique_ptr<mlir::Pass> createFoldConstantsPass();
/// Creates the `tgc-eliminate-identities` pass.
std::unique_ptr<mlir::Pass> createEliminateIdentitiesPass();
/// Creates the `tgc-eliminate-casts` pass.
std::unique_ptr<mlir::Pass> createEliminateCastsPass();
/// Creates the `tgc-sink-layout-ops` pass.
std::unique_ptr<mlir::Pass> createSinkLayoutOpsPass();

/// registerCleanupPasses(): registers every cleanup pass with the global registry (for tgc-opt).
#define GEN_PASS_REGISTRATION
#include "passes/cleanup/Passes.h.inc"

} // namespace tgc

#endif // TGC_PASSES_CLEANUP_PASSES_H
