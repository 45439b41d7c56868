// DecodePlan.h — the plan-level rules of a decode package (docs/runtime.md, "Decode packages"):
// the load-time checks of its states, its DecodeInfo and its one-token step plan against the
// top-level (bucketed) plan, the states' byte sizes, and the range check of a STATE argument.
//
// Pure functions over plan::Plan, shared by the CPU and CUDA sessions and reachable by the tests.
// Internal to //runtime.
#ifndef TGC_RUNTIME_DECODEPLAN_H
#define TGC_RUNTIME_DECODEPLAN_H

#include "runtime/Session.h"
#include "runtime/schema/plan.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

/// Whether `top` is a decode package's top-level plan (format 5, or any of states, decode_step
/// or decode set): the session then checks it with checkDecodePlan.
bool isDecodePlan(const plan::Plan &top);

/// The byte size of each of `top`'s states (dtype × shape), refusing an unnamed state, an unknown
/// dtype, an empty or negative dim or a size beyond kMaxBufferBytes. Errors start with `pre`.
Status stateSizes(const plan::Plan &top, const std::string &pre, std::vector<int64_t> &bytes);

/// Checks a decode package beyond checkBucketedPlan: the format version, the states, DecodeInfo
/// (each index an input or output of the right dtype and shape, every input one the runtime
/// fills: input_ids, attention_mask or position_ids; one symbol, the prompt length, at most
/// max_seq; batch 1), and the step plan's interface (the package's inputs at S = 1 with the mask
/// at max_seq, its outputs at S = 1, the shared weights, an arena within the shared one, the
/// same target, no buckets or states of its own). The steps of every plan are checked by the
/// session that runs them. Errors start with `pre`.
Status checkDecodePlan(const plan::Plan &top, const std::string &pre);

/// A STATE argument: `index` names a state and [offset, offset + bytes) lies inside it
/// (`stateBytes`, one per state: none outside a decode package). Errors start with `where`.
Status checkStateArg(const plan::BufferArg &a, const std::vector<int64_t> &stateBytes,
                     const std::string &where);

} // namespace tgc

#endif // TGC_RUNTIME_DECODEPLAN_H
