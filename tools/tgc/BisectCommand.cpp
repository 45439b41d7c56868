// BisectCommand.cpp — `tgc bisect`: names the rewrite rule that breaks numerics (the reference
// interpreter on the optimized IR against a test data set's outputs, one rule off at a time).
#include "tools/tgc/Cli.h"

#include "driver/Compile.h"

#include <llvm/Support/raw_ostream.h>

#include <cstdio>

namespace tgc::cli {

namespace {

struct BisectArgs {
  CompileOptions copt;
  std::vector<std::string> shapeSpecs;
  std::string testData;
  std::string target; ///< the rewrites differ per target (CPU weight layout, CUDA NHWC)
};

int runBisect(BisectArgs &a) {
  CompileOptions &copt = a.copt;
  std::string err;
  if (!takeInputShapes(a.shapeSpecs, copt, err))
    return fail(err);
  if (!a.target.empty()) { // else CompileOptions' default CPU target
    auto target = parseTarget(a.target);
    if (!target)
      return fail(llvm::toString(target.takeError()));
    copt.target = *target;
  }
  if (!copt.inputRanges.empty())
    return fail("bisect runs one shape: give --input-shape as fixed dims (NAME=1x128), not ranges");
  std::vector<HostTensor> inputs, expected;
  if (!readTensors(numberedFiles(a.testData, "input"), inputs, err) ||
      !readTensors(numberedFiles(a.testData, "output"), expected, err))
    return fail(err);
  if (inputs.empty() || expected.empty())
    return fail("--test-data '" + a.testData + "' holds no input_K.pb / output_K.pb files");
  auto r = bisect(copt, inputs, expected, llvm::outs());
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

} // namespace

Command addBisect(CLI::App &app) {
  auto a = std::make_shared<BisectArgs>();
  auto *bisect = app.add_subcommand(
      "bisect", "name the rewrite rule that breaks numerics (interpreter vs reference outputs)");
  bisect->add_option("model", a->copt.modelPath, "ONNX model file")->required();
  bisect->add_option("--input-shape", a->shapeSpecs, "bind a graph input's dims: NAME=1x128");
  bisect->add_option("--target", a->target,
                     "the target whose rewrites run (the interpreter checks them): cpu | cuda:sm_90");
  bisect->add_option("--disable-rules", a->copt.disabledRules, "rules kept off throughout: A,B")
      ->delimiter(',');
  bisect->add_flag("--inject-fault", a->copt.injectFault, "testing only: add a wrong rule")
      ->group("");
  bisect->add_option("--tolerance", a->copt.bisectTolerance, "max rel-L2 counted as correct")
      ->capture_default_str();
  bisect->add_option("--test-data", a->testData, "ONNX test_data_set folder: input_K.pb, output_K.pb")
      ->required();
  return {bisect, [a] { return runBisect(*a); }};
}

} // namespace tgc::cli
