// Passes.h — testing-only passes (fault injection for the numerics debugging tools).
#ifndef TGC_PASSES_TESTING_PASSES_H
#define TGC_PASSES_TESTING_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <memory>

namespace tgc {

/// Creates `tgc-inject-fault`.
std::unique_ptr<mlir::Pass> createInjectFaultPass();

/// registerTestingPasses(): registers the testing passes (for tgc-opt).
#define GEN_PASS_REGISTRATION
#include "passes/testing/Passes.h.inc"

} // namespace tgc

#endif // TGC_PASSES_TESTING_PASSES_H
