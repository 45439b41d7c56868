// MergeBuckets.h — one bucketed package out of the packages compiled for each shape bucket.
//
// A bucketed compile (driver/CompileBuckets.cpp) compiles the model once per bucket into a
// package of its own; this merges them (docs/design.md, "Shape buckets"): the bucket plans nest
// in one top-level plan, their kernels files are kept under per-bucket names, and their weights
// become one blob in which every distinct byte run is stored once. A weight equal to the start
// of a larger one (a position table cut to a shorter length) is stored as that prefix, so the
// model's weights take the space of one package's.
#ifndef TGC_CODEGEN_COMMON_MERGEBUCKETS_H
#define TGC_CODEGEN_COMMON_MERGEBUCKETS_H

#include "codegen/common/PackageInfo.h"
#include "runtime/schema/plan.pb.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace tgc::codegen {

/// One compiled bucket: its package directory and each symbol's value in it.
struct BucketPackage {
  std::string dir;
  std::vector<int64_t> values;
};

/// Writes the bucketed package made of `buckets` (each a complete package, smallest first, the
/// last at every symbol's max) into `dir`, moving their kernels files there and removing their
/// directories. Checks that every input and output keeps its shape across buckets except on the
/// axes traced to a symbol (TensorDesc.dim_symbols), which take the bucket's value.
/// A decode package (`step` set): the step plan is merged too (its weights into the same blob,
/// its kernels as kernels.step.*) into Plan.decode_step, and its states become the top-level
/// plan's. `finish` may complete the top-level plan before it is written.
llvm::Expected<PackageStats>
mergeBuckets(const std::string &dir, const std::vector<BucketPackage> &buckets,
             const std::vector<plan::Symbol> &symbols, const BucketPackage *step = nullptr,
             const std::function<void(plan::Plan &)> &finish = {});

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_MERGEBUCKETS_H
