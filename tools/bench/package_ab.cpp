// package_ab.cpp — two or more packages timed in one process, one run of each in turn, so that a
// slow phase of a shared machine (another VM, a build) hits every package alike. tgc bench in
// separate processes, even interleaved (cpu_ab_vs_ort.py), saw the same package's median move
// 2x between rounds on the 2-vCPU VM; single runs interleaved in one process keep the ratio.
//
// Build (here, after `bazel build //runtime:libtgc.so`):
//   clang++ -O2 -std=c++17 -I. tools/bench/package_ab.cpp -o /tmp/package_ab \
//       -Lbazel-bin/runtime -ltgc -Wl,-rpath,$PWD/bazel-bin/runtime
// Use: ROUNDS=1000 TH=1 /tmp/package_ab before.tgpkg after.tgpkg
//      ROUNDS=1000 /tmp/package_ab model.tgpkg@1 copy.tgpkg@2   (threads per package)
// Two thread counts need two copies of the package (cp -r): one kernels.so loaded twice is one
// library, whose thread count (tgk_set_threads) the two sessions would share.
// Inputs are zeros of each input's declared shape and type (timing, not numerics). Prints each
// package's median, p10 and p25 (µs) and the median over rounds of its time over the first's.
#include "runtime/tgc_runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// One loaded package with zeroed inputs and room for its outputs, and its run times (µs).
struct Package {
  std::string path;
  tgc_session *session = nullptr;
  std::vector<std::vector<char>> buffers[2]; // inputs, outputs
  std::vector<tgc_tensor> tensors[2];
  std::vector<double> times;
};

size_t elementBytes(int32_t dtype) {
  switch (dtype) {
  case 7: case 11: case 13: return 8; // i64, f64, u64
  case 10: case 16: case 5: case 4: return 2; // f16, bf16, i16, u16
  case 2: case 3: case 9: return 1; // u8, i8, bool
  default: return 4;
  }
}

/// Zero-filled tensors for the package's inputs (isOut 0) or outputs (1).
void makeTensors(Package &p, int isOut) {
  const size_t n = tgc_session_num_io(p.session, isOut);
  p.buffers[isOut].resize(n);
  for (size_t i = 0; i < n; ++i) {
    int32_t dtype = 0, rank = 0;
    const int64_t *dims = nullptr;
    tgc_session_io(p.session, isOut, i, nullptr, &dtype, &rank, &dims);
    size_t elements = 1;
    for (int32_t d = 0; d < rank; ++d)
      elements *= (size_t)dims[d];
    p.buffers[isOut][i].assign(elements * elementBytes(dtype), 0);
    p.tensors[isOut].push_back(
        {dtype, rank, dims, p.buffers[isOut][i].data(), p.buffers[isOut][i].size()});
  }
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[(size_t)(q * (double)(v.size() - 1))];
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: [ROUNDS=n] [TH=threads] package_ab PKG[@threads]...\n");
    return 2;
  }
  const int rounds = std::atoi(std::getenv("ROUNDS") ? std::getenv("ROUNDS") : "3000");
  const int threads = std::atoi(std::getenv("TH") ? std::getenv("TH") : "1");
  const int warmup = 100;
  std::vector<Package> pkgs(argc - 1);
  for (int a = 1; a < argc; ++a) {
    Package &p = pkgs[a - 1];
    p.path = argv[a];
    int t = threads; // PATH@N: N threads for this package
    if (size_t at = p.path.rfind('@'); at != std::string::npos) {
      t = std::atoi(p.path.c_str() + at + 1);
      p.path.resize(at);
    }
    char *err = nullptr;
    p.session = tgc_session_load(p.path.c_str(), t, &err);
    if (!p.session) {
      std::fprintf(stderr, "%s: %s\n", p.path.c_str(), err);
      return 1;
    }
    makeTensors(p, 0);
    makeTensors(p, 1);
  }
  for (int r = 0; r < warmup + rounds; ++r)
    for (Package &p : pkgs) {
      char *err = nullptr;
      const auto t0 = std::chrono::steady_clock::now();
      if (tgc_session_run(p.session, p.tensors[0].data(), p.tensors[0].size(),
                          p.tensors[1].data(), p.tensors[1].size(), &err) != 0) {
        std::fprintf(stderr, "%s: %s\n", p.path.c_str(), err);
        return 1;
      }
      const auto t1 = std::chrono::steady_clock::now();
      if (r >= warmup)
        p.times.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  for (const Package &p : pkgs) {
    std::vector<double> ratio;
    for (size_t i = 0; i < p.times.size(); ++i)
      ratio.push_back(p.times[i] / pkgs[0].times[i]);
    std::printf("%-40s median %8.1f p10 %8.1f p25 %8.1f  time / first's, median %.3f\n",
                argv[&p - pkgs.data() + 1],
                percentile(p.times, 0.5), percentile(p.times, 0.1), percentile(p.times, 0.25),
                percentile(ratio, 0.5));
  }
  for (Package &p : pkgs)
    tgc_session_free(p.session);
  return 0;
}
