// CpuStepThreads.cpp — the load-time choice of each CPU step's thread count (CpuStepThreads.h).
#include "runtime/CpuStepThreads.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace tgc {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// A step goes to all threads only when that is this much faster than one thread.
constexpr double kStepGain = 0.9;
/// A candidate replaces "all threads" (the untuned behaviour) only when this much faster.
constexpr double kRunGain = 0.97;

} // namespace

StepThreads tuneStepThreads(const std::vector<bool> &tunable, int threads, const TimedRun &run) {
  const size_t n = tunable.size();
  StepThreads out;
  out.threads.assign(n, threads);
  if (threads <= 1 || std::none_of(tunable.begin(), tunable.end(), [](bool b) { return b; })) {
    out.picked = "nothing to tune";
    return out;
  }
  std::vector<int> one = out.threads;
  for (size_t i = 0; i < n; ++i)
    if (tunable[i])
      one[i] = 1;
  std::vector<double> stepMicros(n), minAll(n, kInf), minOne(n, kInf);
  const double first = run(out.threads, stepMicros); // warms caches and the pool
  if (!(first <= kStepThreadsMaxRunMicros)) {
    out.picked = "runs too long to tune";
    return out;
  }
  const int rounds = std::clamp((int)(kStepThreadsBudgetMicros / (3 * std::max(first, 1.0))), 2, 6);
  double bestAll = kInf, bestOne = kInf;
  for (int r = 0; r < rounds; ++r) {
    bestAll = std::min(bestAll, run(out.threads, stepMicros));
    for (size_t i = 0; i < n; ++i)
      minAll[i] = std::min(minAll[i], stepMicros[i]);
    bestOne = std::min(bestOne, run(one, stepMicros));
    for (size_t i = 0; i < n; ++i)
      minOne[i] = std::min(minOne[i], stepMicros[i]);
  }
  std::vector<int> mixed = out.threads;
  int onOne = 0;
  for (size_t i = 0; i < n; ++i)
    if (tunable[i] && !(minAll[i] < kStepGain * minOne[i])) {
      mixed[i] = 1;
      ++onOne;
    }
  double bestMixed = kInf;
  if (mixed != one && mixed != out.threads)
    for (int r = 0; r < rounds; ++r)
      bestMixed = std::min(bestMixed, run(mixed, stepMicros));
  out.allMicros = bestAll;
  out.oneMicros = bestOne;
  out.mixedMicros = bestMixed < kInf ? bestMixed : 0;
  const double best = std::min(bestOne, bestMixed);
  if (best < kRunGain * bestAll) {
    const bool useOne = bestOne <= bestMixed;
    out.threads = useOne ? one : mixed;
    out.picked = useOne ? "one" : "mixed";
    out.stepsOnOne = useOne ? (int)std::count(tunable.begin(), tunable.end(), true) : onOne;
  }
  return out;
}

std::string describeStepThreads(const StepThreads &s, int threads) {
  char buf[256];
  if (s.allMicros == 0) {
    std::snprintf(buf, sizeof buf, "step threads: all %d (%s)\n", threads, s.picked.c_str());
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "step threads: %s (%d kernel steps on one thread); timed at load: all %d %.1f us, "
                "one %.1f us%s",
                s.picked == "all" ? "all" : s.picked.c_str(), s.stepsOnOne, threads, s.allMicros,
                s.oneMicros, s.mixedMicros > 0 ? "" : "\n");
  std::string out = buf;
  if (s.mixedMicros > 0) {
    std::snprintf(buf, sizeof buf, ", mixed %.1f us\n", s.mixedMicros);
    out += buf;
  }
  return out;
}

} // namespace tgc
