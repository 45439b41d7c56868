// CpuStepThreads.h — how many threads each step of a CPU package runs on, chosen at load by
// timing (docs/decisions.md, "CPU steps pick their thread count at load").
//
// Splitting a kernel of a few microseconds across the pool costs about what the second core
// saves, and on some machines more (cnn_small at 2 threads ran slower than at 1). Which kernels
// gain depends on the machine, so the session times the package at load, on zeroed inputs:
// blocks of back-to-back runs with every step on one thread and on all threads, alternately;
// each step then takes the count it ran faster on, and that mix is kept only if its runs beat
// both uniform ones.
// Every parallel loop splits over independent outputs, so results do not depend on the choice.
#ifndef TGC_RUNTIME_CPUSTEPTHREADS_H
#define TGC_RUNTIME_CPUSTEPTHREADS_H

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tgc {

/// Runs the package once with step i on threads[i] threads; returns the whole run's µs and fills
/// stepMicros[i] with each step's.
using TimedRun = std::function<double(const std::vector<int> &threads,
                                      std::vector<double> &stepMicros)>;

struct StepThreads {
  std::vector<int> threads; ///< per step
  /// The best whole run of each candidate, µs (0: not timed).
  double allMicros = 0, oneMicros = 0, mixedMicros = 0;
  std::string picked = "all"; ///< "all", "one", "mixed", or why nothing was timed
  int stepsOnOne = 0;         ///< tunable steps that run on one thread
};

/// Whole runs slower than this are not tuned: their kernels are long enough to split.
constexpr double kStepThreadsMaxRunMicros = 20000;
/// Nor runs faster than this: microseconds at most to gain, for 60 ms of timing at every load.
constexpr double kStepThreadsMinRunMicros = 20;
/// Each candidate (all threads, one thread, the mix) is timed in kStepThreadsBlocks blocks of
/// back-to-back runs, each about this long: at most ~60 ms at load.
constexpr double kStepThreadsBlockMicros = 10000;
constexpr int kStepThreadsBlocks = 2;

/// Chooses the thread count of each of `tunable.size()` steps (`tunable[i]`: a kernel step
/// whose count may change) for a session of `threads` threads.
StepThreads tuneStepThreads(const std::vector<bool> &tunable, int threads, const TimedRun &run);

/// One line for `tgc inspect`: what was timed and chosen.
std::string describeStepThreads(const StepThreads &s, int threads);

} // namespace tgc

#endif // TGC_RUNTIME_CPUSTEPTHREADS_H
