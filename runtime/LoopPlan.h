// LoopPlan.h — a plan's LOOP steps (plan.proto LoopDesc), checked the same way by the CPU and
// CUDA sessions: the step's arguments, and the body package's interface against them.
//
// A LOOP step's body is a package in a subdirectory of the package; each session loads it as a
// session of its own (at most kMaxLoopDepth loops deep, so a crafted package cannot recurse) and
// runs it once per iteration — on the CPU from the host, on CUDA inside the graph.
#ifndef TGC_RUNTIME_LOOPPLAN_H
#define TGC_RUNTIME_LOOPPLAN_H

#include "runtime/Session.h"
#include "runtime/schema/plan.pb.h"

#include <string>
#include <vector>

namespace tgc {

/// Loops inside loop bodies, at most.
constexpr int kMaxLoopDepth = 8;

/// Where a LOOP step's arguments are: [M] [cond] carried initial values, captures, results.
struct LoopLayout {
  bool hasTrip = false, hasCond = false;
  int carried = 0, captures = 0;
  int lead() const { return (hasTrip ? 1 : 0) + (hasCond ? 1 : 0); }
  int initial(int k) const { return lead() + k; }
  int capture(int j) const { return lead() + carried + j; }
  int result(int k) const { return lead() + carried + captures + k; }
};

/// The step's LoopDesc and argument count; its body directory's name (no path).
Status checkLoopStep(const plan::Step &s, const std::string &where, LoopLayout &layout);

/// The body directory of step `s` in the package at `dir`: a real directory (not a link), named
/// by no other LOOP step of the same plan (`seen` collects the names), so a crafted package
/// cannot make loading fan out through links or shared bodies.
Status checkLoopBodyDir(const std::string &dir, const plan::Step &s, std::vector<std::string> &seen,
                        const std::string &where);

/// The body session's interface against the step: inputs (i64 [], bool [], carried...,
/// captures...) and outputs (bool [], carried...) of the sizes of the step's ranges.
Status checkLoopBody(const Session &body, const plan::Step &s, const LoopLayout &layout,
                     const std::string &where);

} // namespace tgc

#endif // TGC_RUNTIME_LOOPPLAN_H
