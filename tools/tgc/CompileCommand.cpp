// CompileCommand.cpp — `tgc compile`: an ONNX model into a package (tgc::compile), with the
// debugging switches (IR before/after passes, dumps, check-each-pass, rule switches) and stats.
#include "tools/tgc/Cli.h"
#include "runtime/Text.h"
#include "tools/tgc/KernelGraph.h"
#include "tools/tgc/Progress.h"

#include "driver/Compile.h"

#include <llvm/Support/raw_ostream.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>

namespace tgc::cli {

namespace {

struct CompileArgs {
  CompileOptions copt;
  std::string target = "cpu", precision = "fp32"; ///< parsed into copt (parseTarget, ...)
  std::vector<std::string> shapeSpecs, bindSpecs, bucketSpecs;
  bool stats = false, noCache = false;
  std::string statsJson;
};

int runCompile(CompileArgs &a) {
  CompileOptions &copt = a.copt;
  std::string err;
  if (!takeInputShapes(a.shapeSpecs, copt, err))
    return fail(err);
  for (const std::string &spec : a.bucketSpecs) {
    const size_t eq = spec.find('=');
    std::vector<int64_t> values;
    std::string rest = eq == std::string::npos ? "" : spec.substr(eq + 1) + ",";
    for (size_t at = 0, comma; !rest.empty() && (comma = rest.find(',', at)) != std::string::npos;
         at = comma + 1) {
      const std::string v = rest.substr(at, comma - at);
      char *end = nullptr;
      const long long x = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || x <= 0 || v.size() > 18)
        return fail("--buckets '" + escapeText(spec) + "': '" + escapeText(v) +
                    "' is not a positive integer");
      values.push_back(x);
    }
    if (eq == std::string::npos || eq == 0 || values.empty())
      return fail("--buckets '" + escapeText(spec) + "' is not SYMBOL=V1,V2,...");
    if (!copt.bucketValues.emplace(spec.substr(0, eq), values).second)
      return fail("--buckets names '" + escapeText(spec.substr(0, eq)) + "' twice");
  }
  if (copt.maxSeq != 0 && !copt.decode)
    return fail("--max-seq needs --decode");
  if (!copt.bucketValues.empty() && copt.inputRanges.empty() && !copt.decode)
    return fail("--buckets needs an --input-shape with a range (NAME=1..8x1..128)");
  for (const std::string &spec : a.bindSpecs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return fail("--bind-input '" + escapeText(spec) + "' is not NAME=FILE.pb");
    if (!copt.boundInputs.emplace(spec.substr(0, eq), spec.substr(eq + 1)).second)
      return fail("--bind-input names '" + escapeText(spec.substr(0, eq)) + "' twice");
  }
  auto target = parseTarget(a.target);
  if (!target)
    return fail(llvm::toString(target.takeError()));
  auto precision = parsePrecision(a.precision);
  if (!precision)
    return fail(llvm::toString(precision.takeError()));
  copt.target = *target;
  copt.precision = *precision;
  if (!a.noCache && copt.cacheDir.empty())
    copt.cacheDir = defaultCacheDir();
  if (a.noCache)
    copt.cacheDir.clear();
  // A progress line on a terminal, unless IR or numerics checks are being printed to stderr.
  const bool logs = copt.printIrAfterAll || !copt.printIrAfter.empty() ||
                    !copt.printIrBefore.empty() || copt.checkEachPass;
  ProgressLine progress(!logs && ProgressLine::stderrIsTerminal());
  copt.onStage = [&progress](llvm::StringRef stage, int k, int n) { progress.stage(stage, k, n); };
  auto result = compile(copt, llvm::errs());
  progress.finish();
  copt.onStage = nullptr;
  if (!result)
    return fail(llvm::toString(result.takeError()));
  if (!copt.dumpDir.empty()) {
    // The final kernel graph, from the package's plan: graph.dot, and graph.svg where Graphviz is.
    plan::Plan p;
    std::string note;
    if (!loadPlan(copt.outputPath, p, err) ||
        !writeKernelGraph(p, copt.outputPath, copt.dumpDir, note, err))
      return fail(err);
    if (!note.empty())
      std::cerr << "tgc: note: " << note << "\n";
  }
  std::cout << "wrote " << copt.outputPath << ": " << result->package.kernels << " kernels, arena "
            << result->package.arenaBytes << " B, weights " << result->package.weightBytes
            << " B\n";
  if (a.stats) {
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
  if (!a.statsJson.empty()) {
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
    if (!writeJson(a.statsJson, std::move(stats)))
      return fail("cannot write " + a.statsJson);
  }
  return 0;
}

} // namespace

Command addCompile(CLI::App &app) {
  auto a = std::make_shared<CompileArgs>();
  CompileOptions &copt = a->copt;
  auto *compile = app.add_subcommand("compile", "compile an ONNX model into a package");
  compile->add_option("model", copt.modelPath, "ONNX model file")->required();
  compile->add_option("-o,--output", copt.outputPath, "package directory to write")->required();
  compile->add_option("--target", a->target, "cpu | cuda:sm_90 | cuda:sm_80")->capture_default_str();
  compile->add_option("--precision", a->precision, "fp32 | fp16 | bf16")->capture_default_str();
  compile->add_option("--input-shape", a->shapeSpecs,
                      "bind a graph input's dims: NAME=1x128, or ranges for one package serving "
                      "every shape in them: NAME=1..8x1..128");
  compile->add_flag("--decode", copt.decode,
                    "a decode package for `tgc generate`: a decoder exported with past key/values "
                    "becomes prefill plans (bucketed by prompt length), a one-token step plan and "
                    "a static KV cache of --max-seq positions");
  compile->add_option("--max-seq", copt.maxSeq, "--decode: the cache's positions (prompt + new tokens)");
  compile->add_option("--buckets", a->bucketSpecs,
                      "a varying dim's bucket sizes: SYMBOL=1,2,4,8 (default: powers of two)");
  compile->add_option("--bind-input", a->bindSpecs,
                      "bind a graph input's value (it becomes a constant): NAME=FILE.pb");
  compile->add_flag("--print-ir-after-all", copt.printIrAfterAll, "print IR after every pass");
  compile->add_option("--print-ir-after", copt.printIrAfter, "print IR after the named pass");
  compile->add_option("--print-ir-before", copt.printIrBefore, "print IR before the named pass");
  compile->add_option("--dump-dir", copt.dumpDir,
                      "write per-stage IR, kernels, plan and the kernel graph (graph.dot, .svg) here");
  compile->add_option("--cache-dir", copt.cacheDir, "kernel cache (default $TGC_CACHE_DIR or ~/.cache/tgc)");
  compile->add_flag("--no-cache", a->noCache, "do not use the kernel cache");
  compile->add_flag("--check-each-pass", copt.checkEachPass,
                    "interpret before and after every pass; name the first pass that drifts");
  compile->add_flag("--stats", a->stats, "print op counts, kernels and pass times");
  compile->add_option("--stats-json", a->statsJson, "write the statistics as JSON to this file");
  compile->add_flag("--inject-fault", copt.injectFault,
                    "testing only: add a deliberately wrong rule (to test the debugging tools)")
      ->group("");
  compile->add_option("--disable-rules", copt.disabledRules, "rules that must not run: A,B (all: none runs)")
      ->delimiter(',');
  compile->add_option("--enable-rules", copt.enabledRules, "run only these rules: A,B")
      ->delimiter(',');
  return {compile, [a] { return runCompile(*a); }};
}

} // namespace tgc::cli
