// Passes.h — recognition passes (linears, activations, normalizations).
#ifndef TGC_PASSES_RECOGNITION_PASSES_H
#define TGC_PASSES_RECOGNITION_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <memory>

namespace tgc {

/// Creates the `tgc-fold-linears` pass.
std::unique_ptr<mlir::Pass> createFoldLinearsPass();
/// Creates the `tgc-recognize-activations` pass.
std::unique_ptr<mlir::Pass> createRecognizeActivationsPass();
/// Creates the `tgc-recognize-norms` pass.
std::unique_ptr<mlir::Pass> createRecognizeNormsPass();
/// Creates the `tgc-recognize-rotary` pass.
std::unique_ptr<mlir::Pass> createRecognizeRotaryPass();
/// Creates the `tgc-recognize-swiglu` pass.
std::unique_ptr<mlir::Pass> createRecognizeSwigluPass();

/// registerRecognitionPasses(): registers the recognition passes (for tgc-opt).
#define GEN_PASS_REGISTRATION
#include "passes/recognition/Passes.h.inc"

} // namespace tgc

#endif // TGC_PASSES_RECOGNITION_PASSES_H
