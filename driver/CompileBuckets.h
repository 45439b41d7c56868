// CompileBuckets.h — a bucketed compile: one package serving a range of input shapes.
#ifndef TGC_DRIVER_COMPILEBUCKETS_H
#define TGC_DRIVER_COMPILEBUCKETS_H

#include "driver/Compile.h"

namespace tgc {

/// Compiles options.modelPath once per shape bucket (driver/Buckets.h) and merges the bucket
/// packages into one at options.outputPath (codegen/common/MergeBuckets.h). compile() calls it
/// when options.inputRanges is set.
llvm::Expected<CompileResult> compileBucketed(const CompileOptions &options,
                                              llvm::raw_ostream &log);

} // namespace tgc

#endif // TGC_DRIVER_COMPILEBUCKETS_H
