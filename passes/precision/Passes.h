// Passes.h — precision passes.
#ifndef TGC_PASSES_PRECISION_PASSES_H
#define TGC_PASSES_PRECISION_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <memory>
#include <string>

namespace tgc {

/// Creates `tgc-convert-precision` with its default (fp16).
std::unique_ptr<mlir::Pass> createConvertPrecisionPass();
/// Creates `tgc-convert-precision` for "fp16" or "bf16".
std::unique_ptr<mlir::Pass> createConvertPrecisionPass(const std::string &precision);

/// registerPrecisionPasses(): registers the precision passes (for tgc-opt).
#define GEN_PASS_REGISTRATION
#include "passes/precision/Passes.h.inc"

} // namespace tgc

#endif // TGC_PASSES_PRECISION_PASSES_H
