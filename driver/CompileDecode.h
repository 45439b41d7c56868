// CompileDecode.h — a decode package: prefill plans bucketed by prompt length, a one-token step
// plan, and the static KV cache they share (docs/design.md, "Generation").
#ifndef TGC_DRIVER_COMPILEDECODE_H
#define TGC_DRIVER_COMPILEDECODE_H

#include "driver/Compile.h"

namespace tgc {

/// Compiles a decoder exported with past key/values (`options.decode`, `options.maxSeq`) into a
/// decode package at options.outputPath. compile() calls it when options.decode is set.
llvm::Expected<CompileResult> compileDecode(const CompileOptions &options, llvm::raw_ostream &log);

} // namespace tgc

#endif // TGC_DRIVER_COMPILEDECODE_H
