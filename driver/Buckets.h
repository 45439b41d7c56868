// Buckets.h — the shape buckets of a bucketed compile: which dims vary (symbols), their ranges,
// and the values each bucket binds (docs/design.md, "Shape buckets").
//
// `--input-shape 'ids=1..8x1..128'` gives ranges. A dim that the model names (an ONNX dim_param
// such as "batch") is a symbol under that name, so every input that declares the same name
// varies with it (attention_mask follows input_ids without a flag of its own); an unnamed dim
// is the symbol "<input>.<axis>". Each symbol gets bucket values (`--buckets SYM=V,V,...`, or
// the defaults below), and the buckets are every combination of them.
#ifndef TGC_DRIVER_BUCKETS_H
#define TGC_DRIVER_BUCKETS_H

#include "driver/Compile.h"
#include "frontends/onnx/Importer.h"

#include <map>
#include <string>
#include <vector>

namespace tgc {

/// A dim that varies between runs, and the values its buckets take (ascending, ending at max).
struct BucketSymbol {
  std::string name;
  int64_t min = 0, max = 0;
  std::vector<int64_t> values;
};

/// Everything a bucketed compile needs to compile bucket by bucket.
struct BucketPlan {
  std::vector<BucketSymbol> symbols;
  /// Per graph input that varies: the symbol index each axis carries (-1 fixed).
  std::map<std::string, std::vector<int64_t>> dimSymbols;
  /// Per graph input that varies: its dims (a symbolic axis holds the symbol's max).
  std::map<std::string, std::vector<int64_t>> maxShapes;
  /// Each bucket: one value per symbol, smallest first (by the product of the values).
  std::vector<std::vector<int64_t>> buckets;

  /// The --input-shape bindings of bucket `k` (the fixed inputs' shapes included).
  std::map<std::string, std::vector<int64_t>>
  shapesOf(size_t k, const std::map<std::string, std::vector<int64_t>> &fixed) const;
};

/// Default bucket values of a symbol over [min, max]. A batch-like symbol (first seen as axis 0)
/// takes min and the powers of two above it; a length-like one the powers of two from 16 (or
/// the first >= min). Both end at max.
std::vector<int64_t> defaultBucketValues(int64_t min, int64_t max, bool batchLike);

/// Resolves options.inputRanges and options.bucketValues against the model's declared inputs;
/// errors name the input, dim or symbol at fault.
llvm::Expected<BucketPlan> planBuckets(const CompileOptions &options,
                                       const std::vector<GraphInputDims> &inputs);

/// The largest number of buckets one package may hold.
constexpr size_t kMaxBuckets = 64;

} // namespace tgc

#endif // TGC_DRIVER_BUCKETS_H
