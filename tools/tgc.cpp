// tgc.cpp — the tgc command line: compile, run, bench, inspect.
//
// A thin shell over the library: argument parsing (CLI11), then tgc::compile or tgc::Session.
// Exit codes: 0 success; 1 any error or a failed --check; CLI11's own codes (< 128) for bad
// arguments. Every error goes to stderr and names what is wrong.
#include "driver/Compile.h"
#include "runtime/Text.h"
#include "tools/BuildInfo.h"
#include "frontends/onnx/TensorIO.h"
#include "runtime/Session.h"
#include "runtime/cuda/CudaSession.h"

#include <CLI/CLI.hpp>
#include <cuda.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace {

const char *kExamples = R"(Examples:
  tgc compile model.onnx -o model.tgpkg --target=cpu
  tgc compile model.onnx -o model.tgpkg --input-shape input_ids=1x128 --dump-dir=dump/
  tgc compile model.onnx -o model.tgpkg --stats --disable-rules=MergeParallelLinears
  tgc bisect model.onnx --test-data model/test_data_set_0
  tgc run model.tgpkg --test-data model/test_data_set_0
  tgc bench model.tgpkg --iters 200
  tgc inspect model.tgpkg
)";

int fail(const std::string &msg) {
  std::cerr << "tgc: error: " << msg << "\n";
  return 1;
}

/// "name=1x128" → (name, {1, 128}).
bool parseInputShape(const std::string &spec, std::string &name, std::vector<int64_t> &dims,
                     std::string &err) {
  size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    err = "--input-shape '" + spec + "': expected NAME=DIMxDIM...";
    return false;
  }
  name = spec.substr(0, eq);
  std::stringstream ss(spec.substr(eq + 1));
  std::string d;
  while (std::getline(ss, d, 'x')) {
    char *end = nullptr;
    long long v = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end != '\0' || v <= 0) {
      err = "--input-shape '" + spec + "': dim '" + d + "' is not a positive integer";
      return false;
    }
    dims.push_back(v);
  }
  return true;
}

/// input_K.pb / output_K.pb files of a test_data_set folder, ordered by K.
std::vector<std::string> numberedFiles(const std::string &dir, const std::string &prefix) {
  std::vector<std::pair<int, std::string>> found;
  std::regex re(prefix + "_([0-9]+)\\.pb");
  std::error_code ec;
  for (auto &e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    std::string f = e.path().filename().string();
    // Bounded length: std::stoi would throw (and abort the CLI) on input_99999999999.pb.
    if (std::regex_match(f, m, re) && m[1].length() <= 9)
      found.push_back({std::stoi(m[1]), e.path().string()});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto &p : found)
    out.push_back(p.second);
  return out;
}

bool readTensors(const std::vector<std::string> &files, std::vector<tgc::HostTensor> &out,
                 std::string &err) {
  for (const std::string &f : files) {
    auto t = tgc::readTensorProtoFile(f);
    if (!t) {
      err = llvm::toString(t.takeError());
      return false;
    }
    out.push_back(std::move(*t));
  }
  return true;
}

std::vector<tgc::HostTensor> randomInputs(const tgc::Session &s) {
  std::mt19937 rng(42);
  std::vector<tgc::HostTensor> in;
  for (const tgc::TensorSpec &spec : s.inputs()) {
    tgc::HostTensor t = tgc::HostTensor::zeros(spec.dtype, spec.shape, spec.name);
    bool isFloat = spec.dtype == tgc::DType::F32 || spec.dtype == tgc::DType::F64 ||
                   spec.dtype == tgc::DType::F16 || spec.dtype == tgc::DType::BF16;
    // Integers in [0, 10), or as much of it as lies in the range of an input that indexes a
    // Gather (from the range's start when it lies wholly on one side of 0).
    int64_t base = 0;
    uint64_t ints = spec.dtype == tgc::DType::Bool ? 2 : 10;
    if (spec.indexBounded) {
      base = std::clamp<int64_t>(0, spec.indexLo, spec.indexHi);
      ints = std::min<uint64_t>(ints, (uint64_t)(spec.indexHi - base) + 1);
    }
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, isFloat ? std::uniform_real_distribution<double>(-1, 1)(rng)
                       : double(base + (int64_t)(rng() % ints)));
    in.push_back(std::move(t));
  }
  return in;
}

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::unique_ptr<tgc::Session> loadSession(const std::string &pkg, int threads, std::string &err) {
  tgc::Status st;
  auto s = tgc::Session::load(pkg, st, threads);
  if (!s)
    err = st.message;
  return s;
}

/// Median wall time of `iters` runs, in microseconds.
double medianMicros(tgc::Session &s, const std::vector<tgc::HostTensor> &in, int warmup, int iters,
                    std::string &err) {
  std::vector<tgc::HostTensor> out;
  for (int i = 0; i < warmup; ++i) {
    tgc::Status st = s.run(in, out);
    if (!st.ok) {
      err = st.message;
      return -1;
    }
  }
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    s.run(in, out);
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                        .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Writes `v` to `path` (llvm::json escapes every string: names with tabs, quotes or control
/// bytes stay valid JSON).
bool writeJson(const std::string &path, llvm::json::Value v) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return false;
  os << llvm::formatv("{0:2}", v) << "\n";
  os.close();
  return !os.has_error();
}

/// Profiles 10 runs: writes the last run's timeline as a Chrome trace and prints the steps that
/// take the most time on average.
bool writeProfile(tgc::Session &s, const std::vector<tgc::HostTensor> &in, const std::string &path,
                  std::string &err) {
  const int runs = 10;
  std::vector<tgc::HostTensor> out;
  std::vector<double> total;
  s.setProfiling(true);
  for (int r = 0; r < runs; ++r) {
    tgc::Status st = s.run(in, out);
    if (!st.ok) {
      err = st.message;
      return false;
    }
    const auto &prof = s.lastProfile();
    total.resize(prof.size(), 0.0);
    for (size_t i = 0; i < prof.size(); ++i)
      total[i] += prof[i].micros;
  }
  s.setProfiling(false);
  const auto &prof = s.lastProfile();
  llvm::json::Array events;
  for (const auto &p : prof)
    events.push_back(llvm::json::Object{{"name", p.symbol},
                                        {"ph", "X"},
                                        {"pid", 0},
                                        {"tid", 0},
                                        {"ts", p.startMicros},
                                        {"dur", p.micros},
                                        {"args", llvm::json::Object{{"ops", p.label}}}});
  if (!writeJson(path, llvm::json::Object{{"traceEvents", std::move(events)}})) {
    err = "cannot write " + path;
    return false;
  }
  std::vector<size_t> order(prof.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return total[a] > total[b]; });
  double sum = 0;
  for (double t : total)
    sum += t / runs;
  std::printf("profile: %zu steps, %.1f us per run (mean of %d); top steps:\n", prof.size(), sum,
              runs);
  for (size_t k = 0; k < std::min<size_t>(10, order.size()); ++k) {
    size_t i = order[k];
    std::printf("  %8.1f us %5.1f%%  %s\n", total[i] / runs, 100.0 * total[i] / runs / sum,
                prof[i].symbol.c_str());
  }
  std::printf("profile written to %s\n", path.c_str());
  return true;
}

} // namespace

/// `tgc --version`: tgc's version, the commit it was built from, and the LLVM/MLIR and CUDA
/// headers it was built with (libcuda, NVRTC and cuBLASLt are found at run time).
std::string versionText() {
  return std::string("tgc ") + tgc::tgcVersion() + " (commit " + TGC_GIT_COMMIT + ")\n" +
         "built with LLVM/MLIR " + LLVM_VERSION_STRING + ", CUDA " +
         std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10) +
         " headers (driver, NVRTC and cuBLASLt are loaded at run time)";
}

int tgcMain(int argc, char **argv) {
  CLI::App app{"tgc — ahead-of-time tensor-graph compiler"};
  app.footer(kExamples);
  app.require_subcommand(1);
  app.set_version_flag("--version", versionText(), "print tgc's version and what it was built with");

  // compile
  tgc::CompileOptions copt;
  std::vector<std::string> shapeSpecs;
  bool stats = false, noCache = false;
  std::string statsJson;
  auto *compile = app.add_subcommand("compile", "compile an ONNX model into a package");
  compile->add_option("model", copt.modelPath, "ONNX model file")->required();
  compile->add_option("-o,--output", copt.outputPath, "package directory to write")->required();
  compile->add_option("--target", copt.target, "cpu | cuda:sm_90 | cuda:sm_80")->capture_default_str();
  compile->add_option("--precision", copt.precision, "fp32 | fp16 | bf16")->capture_default_str();
  compile->add_option("--input-shape", shapeSpecs, "bind a graph input's dims: NAME=1x128");
  compile->add_flag("--print-ir-after-all", copt.printIrAfterAll, "print IR after every pass");
  compile->add_option("--print-ir-after", copt.printIrAfter, "print IR after the named pass");
  compile->add_option("--print-ir-before", copt.printIrBefore, "print IR before the named pass");
  compile->add_option("--dump-dir", copt.dumpDir, "write per-stage IR, kernels and plan here");
  compile->add_option("--cache-dir", copt.cacheDir, "kernel cache (default $TGC_CACHE_DIR or ~/.cache/tgc)");
  compile->add_flag("--no-cache", noCache, "do not use the kernel cache");
  compile->add_flag("--check-each-pass", copt.checkEachPass,
                    "interpret before and after every pass; name the first pass that drifts");
  compile->add_flag("--stats", stats, "print op counts, kernels and pass times");
  compile->add_option("--stats-json", statsJson, "write the statistics as JSON to this file");
  compile->add_flag("--inject-fault", copt.injectFault,
                    "testing only: add a deliberately wrong rule (to test the debugging tools)")
      ->group("");
  compile->add_option("--disable-rules", copt.disabledRules, "rules that must not run: A,B (all: none runs)")
      ->delimiter(',');
  compile->add_option("--enable-rules", copt.enabledRules, "run only these rules: A,B")
      ->delimiter(',');

  // bisect
  auto *bisect = app.add_subcommand(
      "bisect", "name the rewrite rule that breaks numerics (interpreter vs reference outputs)");
  bisect->add_option("model", copt.modelPath, "ONNX model file")->required();
  bisect->add_option("--input-shape", shapeSpecs, "bind a graph input's dims: NAME=1x128");
  bisect->add_option("--disable-rules", copt.disabledRules, "rules kept off throughout: A,B")
      ->delimiter(',');
  bisect->add_flag("--inject-fault", copt.injectFault, "testing only: add a wrong rule")
      ->group("");
  bisect->add_option("--tolerance", copt.bisectTolerance, "max rel-L2 counted as correct")
      ->capture_default_str();

  // run / bench / inspect
  std::string pkg, testData, outDir;
  std::vector<std::string> inputFiles;
  double tolerance = -1;
  int threads = 0, iters = 100, warmup = 10;
  bool printValues = false;
  // bisect and run share the input options below
  auto *run = app.add_subcommand("run", "run a package, optionally checking reference outputs");
  run->add_option("package", pkg, "package directory")->required();
  run->add_option("--test-data", testData, "ONNX test_data_set folder: input_K.pb, output_K.pb");
  run->add_option("--inputs", inputFiles, "input TensorProto .pb files, in input order");
  bisect->add_option("--test-data", testData, "ONNX test_data_set folder: input_K.pb, output_K.pb")
      ->required();
  run->add_option("--tolerance", tolerance,
                  "max rel-L2 error (default 1e-5; 1e-2 for f16/bf16 outputs or packages)");
  run->add_option("--threads", threads, "intra-op threads (0: all cores)");
  run->add_option("--save-outputs", outDir, "write output_K.pb files to this folder");
  run->add_flag("--print", printValues, "print the first output values");
  std::string profilePath;
  run->add_option("--profile", profilePath,
                  "write a Chrome trace (JSON) of per-step times to this file; print the top steps");

  auto *bench = app.add_subcommand("bench", "time a package (median latency)");
  bench->add_option("package", pkg, "package directory")->required();
  bench->add_option("--test-data", testData, "take inputs from this test_data_set folder");
  bench->add_option("--iters", iters, "timed runs")->capture_default_str();
  bench->add_option("--warmup", warmup, "untimed runs first")->capture_default_str();
  bench->add_option("--threads", threads, "intra-op threads (0: all cores)");
  std::vector<std::string> omits;
  bench->add_option("--omit", omits,
                    "GPU diagnostics, repeatable: also time the graph without these steps "
                    "(comma list: 'gemm', 'gemm:<words of GEMM labels>' such as "
                    "gemm:attn/c_proj, or words of kernel names such as attention, norm)");

  auto *inspect = app.add_subcommand("inspect", "print a package's plan, kernels, arena and weights");
  inspect->add_option("package", pkg, "package directory")->required();

  CLI11_PARSE(app, argc, argv);
  std::string err;

  for (const std::string &spec : shapeSpecs) {
    std::string name;
    std::vector<int64_t> dims;
    if (!parseInputShape(spec, name, dims, err))
      return fail(err);
    if (!copt.inputShapes.emplace(name, dims).second)
      return fail("--input-shape names input '" + tgc::escapeText(name) + "' twice");
  }

  if (*bisect) {
    std::vector<tgc::HostTensor> inputs, expected;
    if (!readTensors(numberedFiles(testData, "input"), inputs, err) ||
        !readTensors(numberedFiles(testData, "output"), expected, err))
      return fail(err);
    if (inputs.empty() || expected.empty())
      return fail("--test-data '" + testData + "' holds no input_K.pb / output_K.pb files");
    auto r = tgc::bisect(copt, inputs, expected, llvm::outs());
    if (!r)
      return fail(llvm::toString(r.takeError()));
    llvm::outs().flush();
    if (r->errorAllRules <= copt.bisectTolerance) {
      std::printf("bisect: numerics are within tolerance with every rule on; nothing to find\n");
      return 0;
    }
    if (r->culprit.empty()) {
      std::printf("bisect: no single rule explains the drift (max rel_l2=%.3e with all rules on)\n",
                  r->errorAllRules);
      return 1;
    }
    std::printf("bisect: culprit rule '%s': rel_l2 %.3e with it, %.3e without "
                "(use --disable-rules=%s)\n",
                r->culprit.c_str(), r->errorAllRules, r->errorWithoutCulprit, r->culprit.c_str());
    return 1;
  }

  if (*compile) {
    if (!noCache && copt.cacheDir.empty()) {
      const char *env = std::getenv("TGC_CACHE_DIR");
      const char *home = std::getenv("HOME");
      copt.cacheDir = env ? env : home ? std::string(home) + "/.cache/tgc" : "";
    }
    if (noCache)
      copt.cacheDir.clear();
    auto result = tgc::compile(copt, llvm::errs());
    if (!result)
      return fail(llvm::toString(result.takeError()));
    std::cout << "wrote " << copt.outputPath << ": " << result->package.kernels << " kernels, arena "
              << result->package.arenaBytes << " B, weights " << result->package.weightBytes
              << " B\n";
    if (stats) {
      std::cout << "ops: " << result->opsBefore << " after import -> " << result->opsAfter
                << " after passes\n";
      for (auto &[k, n] : result->opsAfterByKind)
        std::cout << "  " << k << ": " << n << "\n";
      std::cout << "kernels: " << result->package.kernels << "\n";
      std::cout << "rules applied:" << (result->ruleHits.empty() ? " none" : "") << "\n";
      for (auto &[rule, n] : result->ruleHits)
        std::cout << "  " << rule << ": " << n << "\n";
      for (auto &[p, s] : result->passSeconds)
        std::printf("  time %-24s %8.3f ms\n", p.c_str(), s * 1e3);
    }
    if (!statsJson.empty()) {
      llvm::json::Object rules, byKind, passSeconds;
      for (auto &[rule, n] : result->ruleHits)
        rules[rule] = n;
      for (auto &[k, n] : result->opsAfterByKind)
        byKind[k] = n;
      std::map<std::string, int> seen; // a pass that runs again is "name#2", "name#3", ...
      for (auto &[p, s] : result->passSeconds) {
        int n = ++seen[p];
        passSeconds[n == 1 ? p : p + "#" + std::to_string(n)] = s;
      }
      llvm::json::Object stats{{"rules", std::move(rules)},
                               {"ops_before", result->opsBefore},
                               {"ops_after", result->opsAfter},
                               {"ops_after_by_kind", std::move(byKind)},
                               {"kernels", result->package.kernels},
                               {"arena_bytes", result->package.arenaBytes},
                               {"weight_bytes", result->package.weightBytes},
                               {"pass_seconds", std::move(passSeconds)}};
      if (!writeJson(statsJson, std::move(stats)))
        return fail("cannot write " + statsJson);
    }
    return 0;
  }

  // A CUDA package on a machine without a usable GPU can still be inspected (its plan).
  if (*inspect && tgc::cuda::isCudaPackage(pkg)) {
    std::string why, arch;
    if (!tgc::cuda::cudaDeviceAvailable(why, arch)) {
      tgc::Status st;
      std::string text = tgc::cuda::describeCudaPackageWithoutGpu(pkg, why, st);
      if (!st.ok)
        return fail(st.message);
      std::cout << text;
      return 0;
    }
  }
  auto session = loadSession(pkg, threads, err);
  if (!session)
    return fail(err);

  if (*inspect) {
    std::cout << session->describe();
    return 0;
  }

  std::vector<tgc::HostTensor> inputs, expected;
  if (!testData.empty()) {
    if (!fs::is_directory(testData))
      return fail("--test-data '" + testData + "' is not a directory");
    if (!readTensors(numberedFiles(testData, "input"), inputs, err) ||
        !readTensors(numberedFiles(testData, "output"), expected, err))
      return fail(err);
  } else if (!inputFiles.empty()) {
    if (!readTensors(inputFiles, inputs, err))
      return fail(err);
  } else {
    inputs = randomInputs(*session);
  }

  if (*bench) {
    double us = medianMicros(*session, inputs, warmup, iters, err);
    if (us < 0)
      return fail(err);
    std::printf("median latency: %.1f us over %d runs\n", us, iters);
    if (session->launchesPerRun() >= 0)
      std::printf("kernels per inference: %lld\n", (long long)session->launchesPerRun());
    if (session->lastDeviceMicros() >= 0) {
      // GPU time of the kernels alone (device events around the graph), median of `iters`.
      std::vector<double> gpu;
      std::vector<tgc::HostTensor> out;
      for (int i = 0; i < iters && session->run(inputs, out).ok; ++i)
        gpu.push_back(session->lastDeviceMicros());
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
        if (double us = session->replayMicros(iters, omit); us >= 0)
          rounds.push_back(us);
      std::sort(rounds.begin(), rounds.end());
      return rounds.empty() ? -1.0 : rounds[rounds.size() / 2];
    };
    double full = replay({});
    if (full >= 0)
      std::printf("device-resident replay: %.1f us per run (%d back-to-back graph replays, "
                  "median of 5 rounds)\n", full, iters);
    for (const std::string &o : omits) {
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

  std::vector<tgc::HostTensor> outputs;
  tgc::Status st = session->run(inputs, outputs);
  if (!st.ok)
    return fail(st.message);
  if (!expected.empty() && expected.size() != outputs.size())
    return fail("test data has " + std::to_string(expected.size()) + " outputs, package has " +
                std::to_string(outputs.size()));
  bool ok = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const tgc::HostTensor &o = outputs[i];
    std::cout << "output '" << tgc::escapeText(o.name) << "' " << tgc::dtypeName(o.dtype) << " " << shapeStr(o.shape);
    if (printValues) {
      std::cout << " values:";
      for (int64_t j = 0; j < std::min<int64_t>(o.numel(), 8); ++j)
        std::cout << " " << o.get(j);
    }
    if (!expected.empty()) {
      // f16/bf16 outputs, or an f16/bf16 package behind f32 edges: 1e-2 (the brief's bound).
      bool lowp = o.dtype == tgc::DType::F16 || o.dtype == tgc::DType::BF16 ||
                  session->precision() != "fp32";
      double tol = tolerance >= 0 ? tolerance : lowp ? 1e-2 : 1e-5;
      double e = tgc::relativeL2(o, expected[i]);
      bool pass = o.shape == expected[i].shape && e <= tol;
      ok = ok && pass;
      std::printf(" rel_l2=%.3e tolerance=%.0e %s", e, tol, pass ? "PASS" : "FAIL");
      if (o.shape != expected[i].shape)
        std::cout << " (expected shape " << shapeStr(expected[i].shape) << ")";
    }
    std::cout << "\n";
    if (!outDir.empty()) {
      fs::create_directories(outDir);
      if (auto e = tgc::writeTensorProtoFile(o, outDir + "/output_" + std::to_string(i) + ".pb"))
        return fail(llvm::toString(std::move(e)));
    }
  }
  if (!ok)
    return fail("outputs differ from the reference beyond the tolerance");
  double us = medianMicros(*session, inputs, 3, 20, err);
  if (us >= 0)
    std::printf("latency: %.1f us (median of 20 runs)\n", us);
  if (!profilePath.empty() && !writeProfile(*session, inputs, profilePath, err))
    return fail(err);
  return 0;
}

// Library errors are values; anything thrown (std::filesystem, std::bad_alloc, ...) still ends
// as a message and exit code 1, never std::terminate.
int main(int argc, char **argv) {
  try {
    return tgcMain(argc, argv);
  } catch (const std::exception &e) {
    return fail(std::string("internal error: ") + e.what());
  } catch (...) {
    return fail("internal error: unknown exception");
  }
}
