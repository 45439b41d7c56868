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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? kInf : v[v.size() / 2];
}

/// Runs `threads` back to back for about kStepThreadsBlockMicros (at least 3 runs): the median
/// whole run and each step's median. A spinning pool slows the machine down only over a
/// sustained stretch (one vCPU's sibling busy, the clock lowered), so single runs would not see
/// what a caller running the package again and again gets.
double timeBlock(const TimedRun &run, const std::vector<int> &threads,
                 std::vector<double> &stepMedian) {
  const size_t n = threads.size();
  std::vector<double> totals, stepMicros(n);
  std::vector<std::vector<double>> steps(n);
  for (double spent = 0; totals.size() < 3 || spent < kStepThreadsBlockMicros;) {
    const double t = run(threads, stepMicros);
    totals.push_back(t);
    spent += t;
    for (size_t i = 0; i < n; ++i)
      steps[i].push_back(stepMicros[i]);
  }
  for (size_t i = 0; i < n; ++i)
    stepMedian[i] = median(steps[i]);
  return median(totals);
}

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
  std::vector<double> stepMicros(n), bestAllStep(n, kInf), bestOneStep(n, kInf);
  const double first = run(one, stepMicros); // warms the caches (and starts no pool worker)
  if (!(first <= kStepThreadsMaxRunMicros)) {
    out.picked = "runs too long to tune";
    return out;
  }
  if (first < kStepThreadsMinRunMicros) {
    out.picked = "runs too short to tune";
    return out;
  }
  // Blocks of each candidate, alternately; a candidate's figure is its best block's median.
  double bestAll = kInf, bestOne = kInf;
  for (int b = 0; b < kStepThreadsBlocks; ++b) {
    bestOne = std::min(bestOne, timeBlock(run, one, stepMicros));
    for (size_t i = 0; i < n; ++i)
      bestOneStep[i] = std::min(bestOneStep[i], stepMicros[i]);
    bestAll = std::min(bestAll, timeBlock(run, out.threads, stepMicros));
    for (size_t i = 0; i < n; ++i)
      bestAllStep[i] = std::min(bestAllStep[i], stepMicros[i]);
  }
  std::vector<int> mixed = out.threads;
  int onOne = 0;
  for (size_t i = 0; i < n; ++i)
    if (tunable[i] && !(bestAllStep[i] < kStepGain * bestOneStep[i])) {
      mixed[i] = 1;
      ++onOne;
    }
  double bestMixed = kInf;
  if (mixed != one && mixed != out.threads)
    for (int b = 0; b < kStepThreadsBlocks; ++b)
      bestMixed = std::min(bestMixed, timeBlock(run, mixed, stepMicros));
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
  if (s.allMicros == 0)
    std::snprintf(buf, sizeof buf, "step threads: all %d (%s)", threads, s.picked.c_str());
  else
    std::snprintf(buf, sizeof buf,
                  "step threads: %s (%d kernel steps on one thread); timed at load: all %d %.1f "
                  "us, one %.1f us",
                  s.picked.c_str(), s.stepsOnOne, threads, s.allMicros, s.oneMicros);
  std::string out = buf;
  if (s.mixedMicros > 0) {
    std::snprintf(buf, sizeof buf, ", mixed %.1f us", s.mixedMicros);
    out += buf;
  }
  return out + "\n";
}

} // namespace tgc
