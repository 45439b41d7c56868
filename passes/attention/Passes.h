// Passes.h — attention passes (scaled dot-product attention recognition).
#ifndef TGC_PASSES_ATTENTION_PASSES_H
#define TGC_PASSES_ATTENTION_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <memory>

namespace tgc {

/// Creates the `tgc-recognize-attention` pass.
std::unique_ptr<mlir::Pass> createRecognizeAttentionPass();

/// registerAttentionPasses(): registers every attention pass with the global registry (for tgc-opt).
#define GEN_PASS_REGISTRATION
#include "passes/attention/Passes.h.inc"

} // namespace tgc

#endif // TGC_PASSES_ATTENTION_PASSES_H
