// RunCommand.cpp — `tgc run`: runs a package once on a test data set, --inputs files, --input
// NAME=@FILE (.npy/.pb) or random inputs, checks the outputs against the reference (rel-L2 within
// the tolerance; integer and bool outputs exactly), prints the latency, writes the outputs
// (--output-dir: <name>.npy; --save-outputs: output_K.pb), and with --profile writes a Chrome
// trace of the steps (or, for a path ending in .html, a self-contained HTML report: HtmlReport.h).
#include "tools/tgc/Cli.h"

#include "frontends/onnx/TensorIO.h"
#include "runtime/Text.h"
#include "tools/tgc/HtmlReport.h"
#include "tools/tgc/KernelGraph.h"
#include "tools/tgc/Npy.h"

#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace fs = std::filesystem;

namespace tgc::cli {

namespace {

struct RunArgs {
  std::string pkg, testData, outDir, npyDir, profilePath;
  std::vector<std::string> inputFiles, namedInputs;
  double tolerance = -1;
  int threads = 0;
  bool printValues = false;
};

/// The last profiled run's timeline as a Chrome trace (chrome://tracing, Perfetto).
bool writeTrace(const std::vector<StepProfile> &prof, const std::string &path, std::string &err) {
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
  return true;
}

/// Profiles 10 runs: writes the last run's timeline as a Chrome trace (the HTML report when
/// `path` ends in .html) and prints the steps that take the most time on average.
bool writeProfile(Session &s, const std::string &pkg, const std::vector<HostTensor> &in,
                  const std::string &path, std::string &err) {
  const int runs = 10;
  std::vector<HostTensor> out;
  std::vector<double> total;
  s.setProfiling(true);
  for (int r = 0; r < runs; ++r) {
    Status st = s.run(in, out);
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
  if (llvm::StringRef(path).endswith_insensitive(".html")) {
    plan::Plan p;
    std::vector<double> mean;
    for (double t : total)
      mean.push_back(t / runs);
    if (!loadPlan(pkg, p, err) || !writeHtmlReport(path, pkg, p, prof, mean, runs, err))
      return false;
  } else if (!writeTrace(prof, path, err)) {
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

/// Writes every output as DIR/<name>.npy (file-safe names; a name taken twice gets "~K").
bool writeNpyOutputs(const std::vector<HostTensor> &outputs, const std::string &dir,
                     std::string &err) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    err = "--output-dir: cannot create '" + escapeText(dir) + "': " + ec.message();
    return false;
  }
  std::vector<std::string> used;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string name = fileSafeName(outputs[i].name, "output_" + std::to_string(i));
    if (std::find(used.begin(), used.end(), name) != used.end())
      name += "~" + std::to_string(i);
    used.push_back(name);
    if (!writeFileAtomic(dir + "/" + name + ".npy", npyBytes(outputs[i]), err))
      return false;
  }
  return true;
}

int runRun(RunArgs &a) {
  std::string err;
  auto session = loadSession(a.pkg, a.threads, err);
  if (!session)
    return fail(err);
  Session &s = *session;
  std::vector<HostTensor> inputs, expected;
  if (!takeInputs(a.testData, a.inputFiles, a.namedInputs, s, inputs, expected, err))
    return fail(err);
  std::vector<HostTensor> outputs;
  Status st = s.run(inputs, outputs);
  if (!st.ok)
    return fail(st.message);
  if (!expected.empty() && expected.size() != outputs.size())
    return fail("test data has " + std::to_string(expected.size()) + " outputs, package has " +
                std::to_string(outputs.size()));
  bool ok = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor &o = outputs[i];
    std::cout << "output '" << escapeText(o.name) << "' " << dtypeName(o.dtype) << " "
              << shapeStr(o.shape);
    if (a.printValues) {
      std::cout << " values:";
      for (int64_t j = 0; j < std::min<int64_t>(o.numel(), 8); ++j)
        if (o.dtype == DType::U64) // integers exactly (a double rounds above 2^53)
          std::cout << " " << (uint64_t)o.getInt(j);
        else if (isIntegerDType(o.dtype))
          std::cout << " " << o.getInt(j);
        else
          std::cout << " " << o.get(j);
    }
    if (!expected.empty()) {
      const double tol =
          a.tolerance >= 0 ? a.tolerance : relL2Tolerance(o.dtype, s.precision() != "fp32");
      double e = relativeL2(o, expected[i]);
      // Integer and bool outputs must match exactly: a relative error hides an off-by-one in
      // large (e.g. u64) values.
      const int64_t mismatches = integerMismatches(o, expected[i]);
      bool pass = o.shape == expected[i].shape && e <= tol && mismatches <= 0;
      ok = ok && pass;
      std::printf(" rel_l2=%.3e tolerance=%.0e", e, tol);
      if (mismatches > 0)
        std::printf(" mismatches=%lld", (long long)mismatches);
      std::printf(" %s", pass ? "PASS" : "FAIL");
      if (o.shape != expected[i].shape)
        std::cout << " (expected shape " << shapeStr(expected[i].shape) << ")";
    }
    std::cout << "\n";
    if (!a.outDir.empty()) {
      fs::create_directories(a.outDir);
      if (auto e = writeTensorProtoFile(o, a.outDir + "/output_" + std::to_string(i) + ".pb"))
        return fail(llvm::toString(std::move(e)));
    }
  }
  if (!a.npyDir.empty() && !writeNpyOutputs(outputs, a.npyDir, err))
    return fail(err);
  if (!ok)
    return fail("outputs differ from the reference beyond the tolerance");
  double us = medianMicros(s, inputs, 3, 20, err);
  if (us >= 0)
    std::printf("latency: %.1f us (median of 20 runs)\n", us);
  if (!a.profilePath.empty() && !writeProfile(s, a.pkg, inputs, a.profilePath, err))
    return fail(err);
  return 0;
}

} // namespace

Command addRun(CLI::App &app) {
  auto a = std::make_shared<RunArgs>();
  auto *run = app.add_subcommand("run", "run a package, optionally checking reference outputs");
  run->add_option("package", a->pkg, "package directory")->required();
  run->add_option("--test-data", a->testData, "ONNX test_data_set folder: input_K.pb, output_K.pb");
  run->add_option("--inputs", a->inputFiles, "input TensorProto .pb files, in input order");
  run->add_option("--input", a->namedInputs,
                  "an input by name, repeatable: NAME=@FILE.npy (or a TensorProto .pb); every "
                  "input must be given");
  run->add_option("--tolerance", a->tolerance,
                  "max rel-L2 error (default 1e-5; 1e-2 for f16/bf16 outputs or packages); "
                  "integer and bool outputs must also match exactly");
  run->add_option("--threads", a->threads, "intra-op threads (0: all cores)");
  run->add_option("--save-outputs", a->outDir, "write output_K.pb files to this folder");
  run->add_option("--output-dir", a->npyDir, "write each output as <name>.npy to this folder");
  run->add_flag("--print", a->printValues, "print the first output values");
  run->add_option("--profile", a->profilePath,
                  "write a Chrome trace (JSON) of per-step times to this file, or an HTML report "
                  "when it ends in .html; print the top steps");
  return {run, [a] { return runRun(*a); }};
}

} // namespace tgc::cli
