// DecodePlan.cpp — a decode package's plan checks: states, DecodeInfo, the step plan (see
// DecodePlan.h).
#include "runtime/DecodePlan.h"

#include "runtime/BucketPlan.h"
#include "runtime/PackageFiles.h"
#include "runtime/Text.h"
#include "runtime/schema/PlanUtil.h"

namespace tgc {

namespace {

std::vector<int64_t> shapeOf(const plan::TensorDesc &d) {
  return std::vector<int64_t>(d.shape().begin(), d.shape().end());
}

/// Input or output `index` of `p` for DecodeInfo field `field`: it exists, has `dtype` (any
/// float when `dtype` is F32) and rank `rank`.
Status checkRole(const plan::Plan &p, bool input, int32_t index, const char *field, DType dtype,
                 int rank, const std::string &pre) {
  const int n = input ? p.inputs_size() : p.outputs_size();
  const std::string what = std::string("decode.") + field + " = " + std::to_string(index);
  if (index < 0 || index >= n)
    return Status::error(pre + what + " is not " + (input ? "an input" : "an output") +
                         " of the package (it has " + std::to_string(n) + ")");
  const plan::TensorDesc &d = input ? p.inputs(index) : p.outputs(index);
  const bool isFloat = d.dtype() == (int32_t)DType::F32 || d.dtype() == (int32_t)DType::F16 ||
                       d.dtype() == (int32_t)DType::BF16;
  if ((dtype == DType::F32 ? !isFloat : d.dtype() != (int32_t)dtype) || d.shape_size() != rank)
    return Status::error(pre + what + " ('" + escapeText(d.name()) + "') must be " +
                         (dtype == DType::F32 ? std::string("a float") : dtypeName(dtype)) +
                         " tensor of rank " + std::to_string(rank) + ", it is " +
                         (isKnownDType(d.dtype()) ? dtypeName((DType)d.dtype()) : "?") + " " +
                         plan::formatShape(shapeOf(d)));
  return Status::success();
}

/// The step plan's interface against the package's.
Status checkStep(const plan::Plan &top, const std::string &pre) {
  const plan::Plan &s = top.decode_step();
  const plan::DecodeInfo &di = top.decode();
  const std::string where = pre + "step plan: ";
  if (s.buckets_size() || s.symbols_size() || s.states_size() || s.has_decode_step() ||
      s.has_decode())
    return Status::error(where + "holds buckets, symbols, states or a step plan of its own");
  if (s.target() != top.target())
    return Status::error(where + "target '" + escapeText(s.target()) +
                         "' differs from the package's '" + escapeText(top.target()) + "'");
  if (!s.weights_file().empty() || s.weights_bytes() != top.weights_bytes())
    return Status::error(where + "reads the package's weights (" +
                         std::to_string(top.weights_bytes()) + " bytes), it has " +
                         (s.weights_file().empty() ? "" : "a weights file and ") +
                         std::to_string(s.weights_bytes()));
  if (s.arena_bytes() < 0 || s.arena_bytes() > top.arena_bytes())
    return Status::error(where + "arena of " + std::to_string(s.arena_bytes()) +
                         " bytes does not fit the shared arena of " +
                         std::to_string(top.arena_bytes()));
  if (s.inputs_size() != top.inputs_size() || s.outputs_size() != top.outputs_size())
    return Status::error(where + "has " + std::to_string(s.inputs_size()) + " inputs and " +
                         std::to_string(s.outputs_size()) + " outputs, the package " +
                         std::to_string(top.inputs_size()) + " and " +
                         std::to_string(top.outputs_size()));
  for (int io = 0; io < 2; ++io)
    for (int i = 0; i < (io == 0 ? s.inputs_size() : s.outputs_size()); ++i) {
      const plan::TensorDesc &d = io == 0 ? s.inputs(i) : s.outputs(i);
      const plan::TensorDesc &t = io == 0 ? top.inputs(i) : top.outputs(i);
      // Every axis at S = 1, except the mask's, which spans the whole cache.
      std::vector<int64_t> want = shapeAt(t, {1});
      if (io == 0 && i == di.attention_mask())
        want = {1, di.max_seq()};
      const std::string what =
          where + (io == 0 ? "input" : "output") + " '" + escapeText(d.name()) + "'";
      if (d.name() != t.name() || d.dtype() != t.dtype())
        return Status::error(what + " differs from the package's '" + escapeText(t.name()) +
                             "' in name or dtype (every plan lists the same interface)");
      if (shapeOf(d) != want)
        return Status::error(what + " has shape " + plan::formatShape(shapeOf(d)) +
                             ", a one-token step needs " + plan::formatShape(want));
      if (d.length_of() != 0)
        return Status::error(what + " is a length input, which a step plan does not take");
    }
  return Status::success();
}

} // namespace

bool isDecodePlan(const plan::Plan &top) {
  return top.format_version() == plan::kPlanFormatVersionDecode || top.states_size() > 0 ||
         top.has_decode_step() || top.has_decode();
}

Status stateSizes(const plan::Plan &top, const std::string &pre, std::vector<int64_t> &bytes) {
  bytes.clear();
  for (int k = 0; k < top.states_size(); ++k) {
    const plan::StateDesc &s = top.states(k);
    const std::string what = pre + "state " + std::to_string(k) + " ('" + escapeText(s.name()) + "')";
    if (s.name().empty())
      return Status::error(pre + "state " + std::to_string(k) + " has no name");
    if (!isKnownDType(s.dtype()))
      return Status::error(what + ": dtype " + std::to_string(s.dtype()) + " is not supported");
    std::vector<int64_t> shape(s.shape().begin(), s.shape().end());
    int64_t b = shape.empty() ? -1 : bytesOf((DType)s.dtype(), shape);
    for (int64_t d : shape)
      if (d <= 0)
        b = -1;
    if (b <= 0)
      return Status::error(what + ": shape " + plan::formatShape(shape) +
                           " is empty, negative or too large");
    bytes.push_back(b);
  }
  return Status::success();
}

Status checkDecodePlan(const plan::Plan &top, const std::string &pre) {
  if (top.format_version() != plan::kPlanFormatVersionDecode)
    return Status::error(pre + "a plan with states or a step plan is package format " +
                         std::to_string(plan::kPlanFormatVersionDecode) + ", this one is " +
                         std::to_string(top.format_version()));
  if (top.states_size() == 0 || !top.has_decode_step() || !top.has_decode())
    return Status::error(pre + "a decode package needs states, a step plan and its decode info "
                               "(it has " + std::to_string(top.states_size()) + " states" +
                         (top.has_decode_step() ? "" : ", no step plan") +
                         (top.has_decode() ? "" : ", no decode info") + ")");
  std::vector<int64_t> bytes;
  if (Status st = stateSizes(top, pre, bytes); !st.ok)
    return st;
  const plan::DecodeInfo &di = top.decode();
  if (di.max_seq() < 1 || di.max_seq() > (int64_t(1) << 24) || di.vocab() < 1 ||
      di.vocab() > (int64_t(1) << 31))
    return Status::error(pre + "decode.max_seq " + std::to_string(di.max_seq()) +
                         " or decode.vocab " + std::to_string(di.vocab()) + " is invalid");
  if (top.symbols_size() != 1)
    return Status::error(pre + "a decode package's prefill plans vary in one symbol (the prompt "
                               "length), it has " + std::to_string(top.symbols_size()));
  if (top.symbols(0).max() > di.max_seq())
    return Status::error(pre + "prompts up to " + std::to_string(top.symbols(0).max()) +
                         " tokens do not fit a cache of max_seq " + std::to_string(di.max_seq()));
  Status st = checkRole(top, true, di.input_ids(), "input_ids", DType::I64, 2, pre);
  if (st.ok && di.attention_mask() != -1)
    st = checkRole(top, true, di.attention_mask(), "attention_mask", DType::I64, 2, pre);
  if (st.ok && di.position_ids() != -1)
    st = checkRole(top, true, di.position_ids(), "position_ids", DType::I64, 2, pre);
  if (st.ok)
    st = checkRole(top, false, di.logits(), "logits", DType::F32, 3, pre);
  if (!st.ok)
    return st;
  if (di.input_ids() == di.attention_mask() || di.input_ids() == di.position_ids() ||
      (di.attention_mask() >= 0 && di.attention_mask() == di.position_ids()))
    return Status::error(pre + "decode info names one input for two roles");
  for (int i = 0; i < top.inputs_size(); ++i)
    if (i != di.input_ids() && i != di.attention_mask() && i != di.position_ids())
      return Status::error(pre + "input '" + escapeText(top.inputs(i).name()) +
                           "' is none of input_ids, attention_mask and position_ids (the "
                           "runtime fills every input of a decode package itself)");
  // The prompt inputs are [1, S] with S the symbol; the logits [1, S, vocab].
  for (int i = 0; i < top.inputs_size(); ++i) {
    const plan::TensorDesc &d = top.inputs(i);
    if (d.shape(0) != 1 || symbolOf(d, 0) >= 0 || symbolOf(d, 1) != 0)
      return Status::error(pre + "input '" + escapeText(d.name()) + "' must be [1, " +
                           escapeText(top.symbols(0).name()) + "] (batch 1, the prompt length)");
  }
  const plan::TensorDesc &lg = top.outputs(di.logits());
  if (lg.shape(0) != 1 || symbolOf(lg, 0) >= 0 || symbolOf(lg, 1) != 0 ||
      symbolOf(lg, 2) >= 0 || lg.shape(2) != di.vocab())
    return Status::error(pre + "output '" + escapeText(lg.name()) + "' must be [1, " +
                         escapeText(top.symbols(0).name()) + ", " + std::to_string(di.vocab()) +
                         "] (the logits of every prompt position)");
  return checkStep(top, pre);
}

Status checkStateArg(const plan::BufferArg &a, const std::vector<int64_t> &stateBytes,
                     const std::string &where) {
  if (a.index() < 0 || (size_t)a.index() >= stateBytes.size())
    return Status::error(where + ": state index " + std::to_string(a.index()) +
                         " out of range (package has " + std::to_string(stateBytes.size()) +
                         " states)");
  const int64_t limit = stateBytes[(size_t)a.index()];
  if (a.offset() < 0 || a.bytes() < 0 || a.offset() > limit || a.bytes() > limit - a.offset())
    return Status::error(where + ": range " + plan::formatArg(a) + " lies outside state " +
                         std::to_string(a.index()) + " (" + std::to_string(limit) + " bytes)");
  return Status::success();
}

} // namespace tgc
