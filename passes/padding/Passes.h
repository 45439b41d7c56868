// Passes.h — padding passes (shape buckets: serving a run padded up to its bucket).
#ifndef TGC_PASSES_PADDING_PASSES_H
#define TGC_PASSES_PADDING_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <memory>

namespace tgc {

/// Creates the `tgc-mask-padding` pass.
std::unique_ptr<mlir::Pass> createMaskPaddingPass();

/// registerPaddingPasses(): registers every padding pass with the global registry (for tgc-opt).
#define GEN_PASS_REGISTRATION
#include "passes/padding/Passes.h.inc"

} // namespace tgc

#endif // TGC_PASSES_PADDING_PASSES_H
