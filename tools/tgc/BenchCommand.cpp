// BenchCommand.cpp — `tgc bench`: a package's median latency; on the GPU also the kernels'
// device time and the device-resident graph replay (optionally without some steps: --omit).
#include "tools/tgc/Cli.h"

#include <algorithm>
#include <cstdio>

namespace tgc::cli {

namespace {

struct BenchArgs {
  std::string pkg, testData;
  int threads = 0, iters = 100, warmup = 10;
  std::vector<std::string> omits;
};

int runBench(BenchArgs &a) {
  std::string err;
  auto session = loadSession(a.pkg, a.threads, err);
  if (!session)
    return fail(err);
  Session &s = *session;
  std::vector<HostTensor> inputs, expected;
  if (!takeInputs(a.testData, {}, s, inputs, expected, err))
    return fail(err);
  double us = medianMicros(s, inputs, a.warmup, a.iters, err);
  if (us < 0)
    return fail(err);
  std::printf("median latency: %.1f us over %d runs\n", us, a.iters);
  if (s.launchesPerRun() >= 0)
    std::printf("kernels per inference: %lld\n", (long long)s.launchesPerRun());
  if (s.lastDeviceMicros() >= 0) {
    // GPU time of the kernels alone (device events around the graph), median of `iters`.
    std::vector<double> gpu;
    std::vector<tgc::HostTensor> out;
    for (int i = 0; i < a.iters && s.run(inputs, out).ok; ++i)
      gpu.push_back(s.lastDeviceMicros());
    std::sort(gpu.begin(), gpu.end());
    if (!gpu.empty())
      std::printf("median GPU time: %.1f us (kernels only, device events)\n",
                  gpu[gpu.size() / 2]);
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
  if (full >= 0)
    std::printf("device-resident replay: %.1f us per run (%d back-to-back graph replays, "
                "median of 5 rounds)\n", full, a.iters);
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
    std::printf("replay without %s: %.1f us (those steps cost %.1f us in the graph)\n",
                o.c_str(), us, full - us);
  }
  return 0;
}

} // namespace

Command addBench(CLI::App &app) {
  auto a = std::make_shared<BenchArgs>();
  auto *bench = app.add_subcommand("bench", "time a package (median latency)");
  bench->add_option("package", a->pkg, "package directory")->required();
  bench->add_option("--test-data", a->testData, "take inputs from this test_data_set folder");
  bench->add_option("--iters", a->iters, "timed runs")->capture_default_str();
  bench->add_option("--warmup", a->warmup, "untimed runs first")->capture_default_str();
  bench->add_option("--threads", a->threads, "intra-op threads (0: all cores)");
  bench->add_option("--omit", a->omits,
                    "GPU diagnostics, repeatable: also time the graph without these steps "
                    "(comma list: 'gemm', 'gemm:<words of GEMM labels>' such as "
                    "gemm:attn/c_proj, or words of kernel names such as attention, norm)");
  return {bench, [a] { return runBench(*a); }};
}

} // namespace tgc::cli
