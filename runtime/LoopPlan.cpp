// LoopPlan.cpp — see LoopPlan.h.
#include "runtime/LoopPlan.h"

#include "runtime/PackageFiles.h"
#include "runtime/Text.h"

#include <sys/stat.h>

namespace tgc {

namespace {

int64_t bytesOfSpec(const TensorSpec &t) {
  int64_t n = (int64_t)dtypeSize(t.dtype);
  for (int64_t d : t.shape)
    n *= d;
  return n;
}

} // namespace

Status checkLoopStep(const plan::Step &s, const std::string &where, LoopLayout &layout) {
  if (!s.has_loop())
    return Status::error(where + ": a LOOP step without its LoopDesc");
  const plan::LoopDesc &d = s.loop();
  if (!plainFileName(d.body()))
    return Status::error(where + ": loop body directory '" + safeText(d.body()) +
                         "' is not a plain name");
  if (d.carried() < 0 || d.captures() < 0 || d.carried() > 4096 || d.captures() > 4096)
    return Status::error(where + ": invalid loop value counts");
  layout.hasTrip = d.has_trip_count();
  layout.hasCond = d.has_cond();
  layout.carried = d.carried();
  layout.captures = d.captures();
  if (s.args_size() != layout.result(layout.carried))
    return Status::error(where + ": a loop of " + std::to_string(d.carried()) +
                         " carried values and " + std::to_string(d.captures()) +
                         " captures needs " + std::to_string(layout.result(layout.carried)) +
                         " arguments, not " + std::to_string(s.args_size()));
  if (layout.hasTrip && s.args(0).bytes() != 8)
    return Status::error(where + ": the trip count must be one int64");
  if (layout.hasCond && s.args(layout.hasTrip ? 1 : 0).bytes() != 1)
    return Status::error(where + ": the condition must be one bool");
  for (int k = 0; k < layout.carried; ++k)
    if (s.args(layout.initial(k)).bytes() != s.args(layout.result(k)).bytes())
      return Status::error(where + ": loop-carried value " + std::to_string(k) +
                           " and its result differ in size");
  return Status::success();
}

Status checkLoopBodyDir(const std::string &dir, const plan::Step &s, std::vector<std::string> &seen,
                        const std::string &where) {
  const std::string &name = s.loop().body();
  for (const std::string &n : seen)
    if (n == name)
      return Status::error(where + ": loop body '" + safeText(name) +
                           "' is named by two LOOP steps");
  seen.push_back(name);
  struct stat st;
  if (lstat((dir + "/" + name).c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::error(where + ": loop body '" + safeText(name) +
                         "' is not a directory of the package (a link is not followed)");
  return Status::success();
}

Status checkLoopBody(const Session &body, const plan::Step &s, const LoopLayout &layout,
                     const std::string &where) {
  const auto &in = body.inputs();
  const auto &out = body.outputs();
  const std::string pre = where + ": loop body '" + safeText(s.loop().body()) + "' ";
  if ((int)in.size() != 2 + layout.carried + layout.captures ||
      (int)out.size() != 1 + layout.carried)
    return Status::error(pre + "has " + std::to_string(in.size()) + " inputs and " +
                         std::to_string(out.size()) + " outputs; the loop needs " +
                         std::to_string(2 + layout.carried + layout.captures) + " and " +
                         std::to_string(1 + layout.carried));
  if (in[0].dtype != DType::I64 || !in[0].shape.empty() || in[1].dtype != DType::Bool ||
      !in[1].shape.empty() || out[0].dtype != DType::Bool || !out[0].shape.empty())
    return Status::error(pre + "must take an int64 [] iteration and a bool [] condition and "
                               "return a bool [] condition");
  for (const auto *specs : {&in, &out})
    for (const TensorSpec &t : *specs)
      if (t.dynamicAxis >= 0 || !t.dimSymbols.empty())
        return Status::error(pre + "has a data-dependent or bucketed interface");
  for (int k = 0; k < layout.carried; ++k)
    if (bytesOfSpec(in[2 + k]) != s.args(layout.initial(k)).bytes() ||
        bytesOfSpec(out[1 + k]) != s.args(layout.initial(k)).bytes() ||
        in[2 + k].dtype != out[1 + k].dtype || in[2 + k].shape != out[1 + k].shape)
      return Status::error(pre + "loop-carried value " + std::to_string(k) +
                           " does not match the loop's");
  for (int j = 0; j < layout.captures; ++j)
    if (bytesOfSpec(in[2 + layout.carried + j]) != s.args(layout.capture(j)).bytes())
      return Status::error(pre + "capture " + std::to_string(j) + " does not match the loop's");
  return Status::success();
}

} // namespace tgc
