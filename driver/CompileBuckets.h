// CompileBuckets.h — a bucketed compile: one package serving a range of input shapes.
#ifndef TGC_DRIVER_COMPILEBUCKETS_H
#define TGC_DRIVER_COMPILEBUCKETS_H

#include "codegen/common/MergeBuckets.h"
#include "driver/Compile.h"
#include "runtime/schema/plan.pb.h"

namespace tgc {

/// Compiles options.modelPath once per shape bucket (driver/Buckets.h) and merges the bucket
/// packages into one at options.outputPath (codegen/common/MergeBuckets.h). compile() calls it
/// when options.inputRanges is set.
llvm::Expected<CompileResult> compileBucketed(const CompileOptions &options,
                                              llvm::raw_ostream &log);

/// The bucket packages of a bucketed compile, not yet merged.
struct BucketPackages {
  std::vector<codegen::BucketPackage> packages; ///< smallest bucket first
  std::vector<plan::Symbol> symbols;
  CompileResult result; ///< the last bucket's figures, pass times summed
};

/// Compiles every bucket of options.inputRanges into `stageDir`/bucket<k> (compileBucketed's
/// first half; a decode compile merges them with its step plan).
llvm::Expected<BucketPackages> compileBucketPackages(const CompileOptions &options,
                                                     const std::string &stageDir,
                                                     llvm::raw_ostream &log);

} // namespace tgc

#endif // TGC_DRIVER_COMPILEBUCKETS_H
