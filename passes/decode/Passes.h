// Passes.h — decode passes (a static KV cache for generation).
#ifndef TGC_PASSES_DECODE_PASSES_H
#define TGC_PASSES_DECODE_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <memory>

namespace tgc {

/// Creates the `tgc-use-static-kv-cache` pass.
std::unique_ptr<mlir::Pass> createUseStaticKvCachePass();

/// registerDecodePasses(): registers every decode pass with the global registry (for tgc-opt).
#define GEN_PASS_REGISTRATION
#include "passes/decode/Passes.h.inc"

} // namespace tgc

#endif // TGC_PASSES_DECODE_PASSES_H
