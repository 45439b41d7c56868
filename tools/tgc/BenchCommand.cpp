// BenchCommand.cpp — `tgc bench`: a package's latency (median and p50/p90/p99 of wall time); on
// the GPU also the kernels' device time and the device-resident graph replay (optionally without
// some steps: --omit). --json writes the figures for scripts. --shape times a bucketed package
// at any shape in its range (random inputs; default: its maxima, the largest bucket).
#include "tools/tgc/Cli.h"

#include "tools/tgc/KernelGraph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace tgc::cli {

namespace {

struct BenchArgs {
  std::string pkg, testData, jsonPath;
  int threads = 0, iters = 100, warmup = 10;
  std::vector<std::string> omits, namedInputs, shapes;
};

int runBench(BenchArgs &a) {
  if (a.iters < 1 || a.warmup < 0)
    return fail("--iterations must be at least 1 and --warmup at least 0");
  std::string err;
  auto session = loadSession(a.pkg, a.threads, err);
  if (!session)
    return fail(err);
  Session &s = *session;
  std::vector<HostTensor> inputs, expected;
  std::vector<std::vector<int64_t>> shapes;
  if (!shapesForRun(a.shapes, s, shapes, err))
    return fail(err);
  if (!a.shapes.empty() && (!a.testData.empty() || !a.namedInputs.empty()))
    return fail("--shape draws random inputs: give it without --test-data and --input");
  if (!a.shapes.empty())
    inputs = randomInputs(s, shapes);
  else if (!takeInputs(a.testData, {}, a.namedInputs, s, inputs, expected, err))
    return fail(err);
  if (std::any_of(s.inputs().begin(), s.inputs().end(),
                  [](const TensorSpec &t) { return !t.minShape.empty(); })) {
    std::string shown; // a bucketed package: the shapes timed
    for (size_t i = 0; i < inputs.size() && i < s.inputs().size(); ++i)
      shown += (i ? ", " : "") + s.inputs()[i].name + " " + shapeStr(inputs[i].shape);
    std::printf("bucketed package, inputs: %s\n", shown.c_str());
  }
  std::vector<double> times = runMicros(s, inputs, a.warmup, a.iters, err);
  if (times.empty())
    return fail(err);
  std::sort(times.begin(), times.end());
  const double n = (double)times.size();
  const double mean = std::accumulate(times.begin(), times.end(), 0.0) / n;
  double var = 0;
  for (double t : times)
    var += (t - mean) * (t - mean);
  const double stddev = std::sqrt(var / n);
  const double p50 = percentile(times, 50), p90 = percentile(times, 90),
               p99 = percentile(times, 99);
  std::printf("median latency: %.1f us over %d runs\n", p50, a.iters);
  std::printf("p50 %.1f us, p90 %.1f us, p99 %.1f us (min %.1f, max %.1f, mean %.1f +- %.1f)\n",
              p50, p90, p99, times.front(), times.back(), mean, stddev);
  // A CPU session's thread count per step, as chosen at load (runtime/CpuStepThreads.h).
  const std::string desc = s.describe();
  if (const size_t at = desc.find("\nstep threads: "); at != std::string::npos)
    std::printf("%s\n", desc.substr(at + 1, desc.find('\n', at + 1) - at - 1).c_str());
  plan::Plan plan;
  std::string target = loadPlan(a.pkg, plan, err) ? plan.target() : "";
  llvm::json::Object js{{"p50_us", p50},
                        {"p90_us", p90},
                        {"p99_us", p99},
                        {"mean_us", mean},
                        {"stddev_us", stddev},
                        {"min_us", times.front()},
                        {"max_us", times.back()},
                        {"iterations", a.iters},
                        {"warmup", a.warmup},
                        {"target", target},
                        {"precision", s.precision()},
                        {"threads", a.threads}};
  if (s.launchesPerRun() >= 0) {
    std::printf("kernels per inference: %lld\n", (long long)s.launchesPerRun());
    js["kernels_per_run"] = s.launchesPerRun();
  }
  if (s.lastDeviceMicros() >= 0) {
    // GPU time of the kernels alone (device events around the graph), median of `iters`.
    std::vector<double> gpu;
    std::vector<tgc::HostTensor> out;
    for (int i = 0; i < a.iters && s.run(inputs, out).ok; ++i)
      gpu.push_back(s.lastDeviceMicros());
    std::sort(gpu.begin(), gpu.end());
    if (!gpu.empty()) {
      std::printf("median GPU time: %.1f us (kernels only, device events)\n", gpu[gpu.size() / 2]);
      js["gpu_median_us"] = gpu[gpu.size() / 2];
    }
  }
  // Device-resident steady state (inputs stay on the GPU, graph replays back to back), the way
  // PyTorch's benchmarks time CUDA graphs: median of 5 rounds of `iters` replays.
  auto replay = [&](const std::vector<std::string> &omit) {
    std::vector<double> rounds;
    for (int r = 0; r < 5; ++r)
      if (double us = s.replayMicros(a.iters, omit); us >= 0)
        rounds.push_back(us);
    std::sort(rounds.begin(), rounds.end());
    return rounds.empty() ? -1.0 : rounds[rounds.size() / 2];
  };
  double full = replay({});
  if (full >= 0) {
    std::printf("device-resident replay: %.1f us per run (%d back-to-back graph replays, "
                "median of 5 rounds)\n",
                full, a.iters);
    js["replay_us"] = full;
    js["replay_iterations"] = a.iters;
    js["replay_rounds"] = 5;
  }
  llvm::json::Object without;
  for (const std::string &o : a.omits) {
    std::vector<std::string> words;
    for (size_t b = 0, e; b <= o.size(); b = e + 1) {
      e = std::min(o.find(',', b), o.size());
      if (e > b)
        words.push_back(o.substr(b, e - b));
    }
    double us = words.empty() ? -1 : replay(words);
    if (us < 0 || full < 0)
      return fail("--omit '" + o + "': needs a GPU package and a non-empty list of step kinds");
    std::printf("replay without %s: %.1f us (those steps cost %.1f us in the graph)\n", o.c_str(),
                us, full - us);
    without[o] = us;
  }
  if (!a.omits.empty())
    js["replay_without_us"] = std::move(without);
  if (!a.jsonPath.empty() && !writeJson(a.jsonPath, std::move(js)))
    return fail("cannot write " + a.jsonPath);
  return 0;
}

} // namespace

Command addBench(CLI::App &app) {
  auto a = std::make_shared<BenchArgs>();
  auto *bench = app.add_subcommand("bench", "time a package (median, p50/p90/p99 latency)");
  bench->add_option("package", a->pkg, "package directory")->required();
  bench->add_option("--test-data", a->testData, "take inputs from this test_data_set folder");
  bench->add_option("--input", a->namedInputs,
                    "an input by name, repeatable: NAME=@FILE.npy (or a TensorProto .pb)");
  bench->add_option("--shape", a->shapes,
                    "random inputs of this shape, repeatable: NAME=DIMxDIM (a bucketed "
                    "package: any shape in its range; default: the largest bucket's)");
  bench->add_option("--iters,--iterations", a->iters, "timed runs")->capture_default_str();
  bench->add_option("--warmup", a->warmup, "untimed runs first")->capture_default_str();
  bench->add_option("--threads", a->threads, "intra-op threads (0: all cores)");
  bench->add_option("--json", a->jsonPath,
                    "write the figures as JSON (p50_us, p90_us, p99_us, mean_us, stddev_us, "
                    "min_us, max_us, iterations, warmup, target; replay_us on the GPU)");
  bench->add_option("--omit", a->omits,
                    "GPU diagnostics, repeatable: also time the graph without these steps "
                    "(comma list: 'gemm', 'gemm:<words of GEMM labels>' such as "
                    "gemm:attn/c_proj, or words of kernel names such as attention, norm)");
  return {bench, [a] { return runBench(*a); }};
}

} // namespace tgc::cli
