// IndexBounds.h — refusing caller inputs that index a Gather out of range. Internal to //runtime,
// shared by the CPU and CUDA sessions.
#ifndef TGC_RUNTIME_INDEXBOUNDS_H
#define TGC_RUNTIME_INDEXBOUNDS_H

#include "runtime/schema/plan.pb.h"
#include "runtime/Session.h"

#include <cstddef>
#include <string>
#include <vector>

namespace tgc {

/// Every input whose spec is index-bounded (it indexes a Gather or GatherElements: takeIndexBound)
/// holds only values in [indexLo, indexHi]; else an error naming the input, the element, its
/// value, the range and the node. The kernels would clamp such an index (never out of bounds)
/// and return a wrong row without a word. `refs` are host memory whose specs were checked;
/// inputs without a bound are not read.
Status checkIndexBounds(const std::vector<TensorSpec> &specs, const TensorRef *refs, size_t n);

/// Copies input descriptor `d`'s index bound, when it has one, into its spec `s` (dtype already
/// set). Returns what is wrong with the bound ("" when it has none or it is sound: an i32/i64
/// input, lo <= hi); the sessions refuse such a plan at load.
std::string takeIndexBound(const plan::TensorDesc &d, TensorSpec &s);

} // namespace tgc

#endif // TGC_RUNTIME_INDEXBOUNDS_H
