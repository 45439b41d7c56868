// BucketPlan.h — the plan-level rules of a bucketed package (docs/runtime.md, "Bucketed
// packages"): the load-time checks of the top-level plan against its bucket plans, binding a
// run's symbols from the caller's input shapes, picking the bucket, and the row-major block copy
// that pads inputs and cuts outputs.
//
// Pure functions over plan::Plan and caller shapes, with no session state, so that the CPU and
// CUDA bucketed sessions share them and the tests can reach every rule. Internal to //runtime.
#ifndef TGC_RUNTIME_BUCKETPLAN_H
#define TGC_RUNTIME_BUCKETPLAN_H

#include "runtime/Session.h"
#include "runtime/schema/plan.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

/// The symbol index of axis `axis` of `d` (TensorDesc.dim_symbols), or -1 for a fixed axis.
int symbolOf(const plan::TensorDesc &d, int axis);

/// `d`'s shape with every symbolic axis at `values` (one value per Plan.symbols entry).
std::vector<int64_t> shapeAt(const plan::TensorDesc &d, const std::vector<int64_t> &values);

/// Checks a bucketed top-level plan (readPlan already checked its header and version) and every
/// bucket plan's interface against it: the symbols' ranges, each axis' symbol index and maximum,
/// each bucket's values, target, weights (none of its own, the shared size), arena (at most the
/// top-level's), inputs (the caller's at the bucket's shape, then the length inputs: i64 [1]),
/// outputs (the top-level's at the bucket's shape), and that one bucket covers every maximum.
/// The bucket plans' steps are checked by the session that runs them. Errors start with `pre`.
Status checkBucketedPlan(const plan::Plan &top, const std::string &pre);

/// The top-level interface as the session reports it: each spec's shape at the maxima, with
/// minShape and dimSymbols filled (TensorSpec).
void fillBucketSpecs(const plan::Plan &top, std::vector<TensorSpec> &inputs,
                     std::vector<TensorSpec> &outputs);

/// "[1..8, 128]": a spec's shape with each symbolic axis as its range.
std::string rangeString(const TensorSpec &s);

/// Binds each symbol to the caller's dims: checks each input's dtype, rank and dims (a fixed
/// axis equal, a symbolic one inside its symbol's range and the same wherever the symbol
/// appears) and sets `values` (one per symbol). Errors name the input, the dimension and the
/// range: "input 'input_ids' dim 1 (seq): 200 is outside 1..128".
Status bindSymbols(const plan::Plan &top, const std::vector<TensorSpec> &specs,
                   const TensorRef *inputs, size_t n, std::vector<int64_t> &values);

/// The bucket a run of `values` takes: among those whose every value is >= the run's, the one
/// with the smallest product of values (the first of equals); -1 when none covers the run.
int pickBucket(const plan::Plan &top, const std::vector<int64_t> &values);

/// Copies the row-major block of `src` (shape `srcShape`) whose extent along each axis is
/// `block` (<= both shapes) into `dst` (shape `dstShape`) at the same indices. With `dst`
/// zeroed first and `block` = `srcShape` it pads; with `dstShape` = `block` it cuts. `elem` is
/// the element size in bytes; both shapes have the same rank.
void copyBlock(const uint8_t *src, const std::vector<int64_t> &srcShape, uint8_t *dst,
               const std::vector<int64_t> &dstShape, const std::vector<int64_t> &block,
               size_t elem);

} // namespace tgc

#endif // TGC_RUNTIME_BUCKETPLAN_H
