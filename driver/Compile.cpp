// Compile.cpp — the compile driver: import, run the pipeline with instrumentation, write the
// package.
//
// Debugging hooks live here rather than in the passes: IR printing and per-stage dumps
// (--print-ir-after*, --dump-dir) and the numerics check (--check-each-pass), which runs the
// reference interpreter before the pipeline and after every pass and names the first pass whose
// outputs drift.
#include "driver/Compile.h"

#include "codegen/common/StagedDir.h"
#include "codegen/cuda/CudaBackend.h"
#include "driver/Pipeline.h"
#include "compiler/dialect/TgDialect.h"
#include "compiler/interp/Interpreter.h"
#include "frontends/onnx/Importer.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "passes/common/Rules.h"
#include "runtime/Text.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <random>

namespace tgc {

const char *tgcVersion() { return "0.1.0"; }

namespace {

mlir::OpPrintingFlags dumpFlags() {
  mlir::OpPrintingFlags flags;
  flags.elideLargeElementsAttrs(16);
  return flags;
}

std::string printModule(mlir::ModuleOp m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m->print(os, dumpFlags());
  return s;
}

llvm::Error writeFile(const std::string &path, llvm::StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::createStringError(ec, "cannot write %s: %s", path.c_str(), ec.message().c_str());
  os << text;
  return llvm::Error::success();
}

mlir::func::FuncOp mainOf(mlir::ModuleOp m) { return m.lookupSymbol<mlir::func::FuncOp>("main"); }

/// Deterministic random inputs for @main's arguments (floats in [-1, 1), integers in [0, 10)).
std::vector<HostTensor> randomInputs(mlir::func::FuncOp fn) {
  std::mt19937 rng(1234);
  std::vector<HostTensor> inputs;
  for (mlir::BlockArgument arg : fn.getArguments()) {
    auto type = arg.getType().cast<mlir::RankedTensorType>();
    DType dt = llvm::cantFail(dtypeOf(type.getElementType()));
    HostTensor t = HostTensor::zeros(dt, type.getShape().vec());
    bool isFloat = type.getElementType().isa<mlir::FloatType>();
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, isFloat ? std::uniform_real_distribution<double>(-1, 1)(rng)
                       : static_cast<double>(rng() % (dt == DType::Bool ? 2 : 10)));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

/// Prints/dumps IR after passes, times them, and checks numerics after each when asked.
class Instrumentation : public mlir::PassInstrumentation {
public:
  Instrumentation(const CompileOptions &o, llvm::raw_ostream &log, CompileResult &r)
      : options(o), log(log), result(r) {}

  llvm::Error begin(mlir::ModuleOp m) {
    if (!options.dumpDir.empty())
      if (auto err = writeFile(stagePath("import"), printModule(m)))
        return err;
    if (options.checkEachPass) {
      inputs = randomInputs(mainOf(m));
      auto ref = interpret(mainOf(m), inputs);
      if (!ref)
        return ref.takeError();
      reference = std::move(*ref);
    }
    return llvm::Error::success();
  }

  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
    const std::string name = pass->getArgument().str();
    if (!name.empty() && options.onStage)
      options.onStage(name, ++stageNumber, stageCount);
    if (!name.empty() && named(options.printIrBefore, name)) {
      auto module = op->getParentOfType<mlir::ModuleOp>();
      if (!module)
        module = llvm::dyn_cast<mlir::ModuleOp>(op);
      log << "// -----// IR before " << name << " //----- //\n" << printModule(module) << "\n";
    }
    start = std::chrono::steady_clock::now();
  }

  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string name = pass->getArgument().str();
    if (name.empty()) // pass-manager adaptors (nesting), not real stages
      return;
    result.passSeconds.push_back({name, secs});
    auto module = op->getParentOfType<mlir::ModuleOp>();
    if (!module)
      module = llvm::dyn_cast<mlir::ModuleOp>(op);
    if (wantsPrint(name))
      log << "// -----// IR after " << name << " //----- //\n" << printModule(module) << "\n";
    if (!options.dumpDir.empty())
      llvm::consumeError(writeFile(stagePath(name), printModule(module)));
    if (options.checkEachPass && driftPass.empty())
      checkNumerics(name, module);
  }

  /// The first pass whose interpreter output drifted ("" when none did).
  std::string driftPass, driftMessage;
  /// For options.onStage: the number of the stage last begun, and of stages in all.
  int stageNumber = 1, stageCount = 0;

private:
  std::string stagePath(const std::string &name) {
    return llvm::formatv("{0}/{1:2}-{2}.mlir", options.dumpDir, stage++, name).str();
  }

  static bool named(const std::vector<std::string> &list, const std::string &name) {
    for (const std::string &p : list)
      if (p == name || "tgc-" + p == name)
        return true;
    return false;
  }
  bool wantsPrint(const std::string &name) const {
    return options.printIrAfterAll || named(options.printIrAfter, name);
  }

  void checkNumerics(const std::string &name, mlir::ModuleOp m) {
    auto out = interpret(mainOf(m), inputs);
    if (!out) {
      driftPass = name;
      driftMessage = llvm::toString(out.takeError());
      return;
    }
    for (size_t i = 0; i < out->size(); ++i) {
      double err = relativeL2((*out)[i], reference[i]);
      const double tol = relL2Tolerance((*out)[i].dtype, options.precision != Precision::FP32);
      log << llvm::formatv("check-each-pass: after {0}: output {1} rel_l2={2:e}\n", name, i, err);
      if (!(err <= tol)) {
        driftPass = name;
        driftMessage = llvm::formatv("output {0} drifted: rel_l2={1:e} > {2:e}", i, err, tol);
      }
    }
  }

  const CompileOptions &options;
  llvm::raw_ostream &log;
  CompileResult &result;
  std::vector<HostTensor> inputs, reference;
  std::chrono::steady_clock::time_point start;
  int stage = 0;
};

void countOps(mlir::ModuleOp m, int64_t &total, std::map<std::string, int64_t> *byKind) {
  total = 0;
  m.walk([&](mlir::Operation *op) {
    if (op->getDialect() == nullptr || op->getDialect()->getNamespace() != "tg" ||
        llvm::isa<tg::ConstantOp, tg::YieldOp>(op) || op->getParentOfType<tg::FusedOp>())
      return;
    ++total;
    if (byKind)
      ++(*byKind)[op->getName().getStringRef().str()];
  });
}

std::string hashFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  uint64_t h = 1469598103934665603ull;
  if (buf)
    for (unsigned char c : (*buf)->getBuffer())
      h = (h ^ c) * 1099511628211ull;
  return llvm::formatv("{0:x16}", h).str();
}

/// Checks what compile() and bisect() are asked for before any work.
llvm::Error checkOptions(const CompileOptions &options) {
  if (!options.dumpDir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(options.dumpDir))
      return llvm::createStringError(ec, "cannot create dump dir %s", options.dumpDir.c_str());
  return llvm::Error::success();
}

/// Rule labels named on the command line that no pass declared (typos).
llvm::Error checkRuleNames(const CompileOptions &options) {
  std::vector<std::string> known = RuleRegistry::get().known();
  for (const auto *list : {&options.disabledRules, &options.enabledRules})
    for (const std::string &name : *list)
      if (name != "all" && std::find(known.begin(), known.end(), name) == known.end()) {
        std::string all;
        for (const std::string &k : known)
          all += (all.empty() ? "" : ", ") + k;
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "unknown rule '%s' (known rules: %s)", name.c_str(),
                                       all.c_str());
      }
  return llvm::Error::success();
}

/// The passes `pm` runs, in order (a pass that runs twice is named twice).
std::vector<std::string> pipelinePasses(mlir::PassManager &pm) {
  std::string pipeline;
  llvm::raw_string_ostream os(pipeline);
  pm.printAsTextualPipeline(os);
  os.flush();
  // "builtin.module(a,b{opt=1},func.func(c))": the pass names are the words not followed by "(".
  std::vector<std::string> passes;
  std::string word;
  int braces = 0;
  for (char c : pipeline + ",") {
    if (c == '{')
      ++braces;
    else if (c == '}')
      --braces;
    if (braces > 0 || c == '}')
      continue;
    if (c == '(' ) {
      word.clear();
    } else if (c == ',' || c == ')') {
      if (!word.empty())
        passes.push_back(word);
      word.clear();
    } else if (!std::isspace((unsigned char)c)) {
      word += c;
    }
  }
  return passes;
}

/// Pass names given to --print-ir-after/--print-ir-before that the pipeline does not run (with or
/// without the "tgc-" prefix), refused with the list of those it runs.
llvm::Error checkPassNames(mlir::PassManager &pm, const CompileOptions &options) {
  std::vector<std::string> known;
  for (const std::string &p : pipelinePasses(pm))
    if (std::find(known.begin(), known.end(), p) == known.end())
      known.push_back(p);
  for (const auto *list : {&options.printIrAfter, &options.printIrBefore})
    for (const std::string &name : *list)
      if (std::find(known.begin(), known.end(), name) == known.end() &&
          std::find(known.begin(), known.end(), "tgc-" + name) == known.end()) {
        std::string all;
        for (const std::string &k : known)
          all += (all.empty() ? "" : ", ") + k;
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(), "--print-ir-%s: no pass '%s' in the pipeline (passes: %s)",
            list == &options.printIrAfter ? "after" : "before", escapeText(name).c_str(),
            all.c_str());
      }
  return llvm::Error::success();
}

/// Import + pipeline: the module at the end of the passes, with figures in `result`.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importAndOptimize(mlir::MLIRContext &ctx, const CompileOptions &options, llvm::raw_ostream &log,
                  CompileResult &result) {
  // Stages for options.onStage: import, the passes, codegen (compile() reports the last).
  PipelineOptions pipelineOptions;
  pipelineOptions.formKernels = options.formKernels;
  pipelineOptions.precision = options.precision;
  pipelineOptions.injectFault = options.injectFault;
  int stageCount = 0;
  if (options.onStage) {
    mlir::PassManager probe(&ctx);
    buildPipeline(probe, pipelineOptions);
    stageCount = (int)pipelinePasses(probe).size() + 2;
    options.onStage("import", 1, stageCount);
  }
  auto t0 = std::chrono::steady_clock::now();
  ImportOptions importOptions;
  importOptions.inputShapes = options.inputShapes;
  importOptions.boundInputs = options.boundInputs;
  auto module = importOnnxFile(ctx, options.modelPath, importOptions);
  if (!module)
    return module.takeError();
  result.passSeconds.push_back(
      {"import", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
  countOps(**module, result.opsBefore, nullptr);

  // "--disable-rules=all": enable only a label no rule has, so no rule runs.
  bool noRules = std::find(options.disabledRules.begin(), options.disabledRules.end(), "all") !=
                 options.disabledRules.end();
  RuleRegistry::get().setDisabled(options.disabledRules);
  RuleRegistry::get().setEnabled(noRules ? std::vector<std::string>{"(no rule)"}
                                         : options.enabledRules);
  RuleRegistry::get().resetHits();
  mlir::PassManager pm(&ctx);
  buildPipeline(pm, pipelineOptions);
  if (auto err = checkPassNames(pm, options))
    return std::move(err);
  auto instr = std::make_unique<Instrumentation>(options, log, result);
  instr->stageCount = stageCount;
  Instrumentation *instrPtr = instr.get();
  if (auto err = instr->begin(**module))
    return std::move(err);
  pm.addInstrumentation(std::move(instr));

  std::string diagnostics;
  {
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
      llvm::raw_string_ostream os(diagnostics);
      os << d.getLocation() << ": " << d << "\n";
      return mlir::success();
    });
    if (mlir::failed(pm.run(**module)))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "compile pipeline failed:\n%s",
                                     diagnostics.c_str());
  }
  if (auto err = checkRuleNames(options))
    return std::move(err);
  if (!instrPtr->driftPass.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "check-each-pass: pass '%s' changed the results: %s",
                                   instrPtr->driftPass.c_str(), instrPtr->driftMessage.c_str());
  countOps(**module, result.opsAfter, &result.opsAfterByKind);
  result.ruleHits = RuleRegistry::get().hits();
  return module;
}

mlir::MLIRContext &newContext(std::unique_ptr<mlir::MLIRContext> &holder) {
  holder = std::make_unique<mlir::MLIRContext>();
  holder->loadDialect<tg::TGDialect, mlir::func::FuncDialect>();
  holder->disableMultithreading(); // deterministic dumps; the graphs are small
  return *holder;
}

} // namespace

llvm::Expected<CompileResult> compile(const CompileOptions &options, llvm::raw_ostream &log) {
  if (auto err = checkOptions(options))
    return std::move(err);
  if (!options.target.isCuda() && options.precision != Precision::FP32)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--precision=%s needs a CUDA target: the CPU backend computes "
                                   "in fp32 (use --precision=fp32 or --target=cuda:sm_90)",
                                   precisionName(options.precision).str().c_str());
  // The package is written beside -o and renamed into place once complete (StagedDir.h).
  auto stage = codegen::StagedDir::create(options.outputPath);
  if (!stage)
    return stage.takeError();
  std::unique_ptr<mlir::MLIRContext> ctxHolder;
  mlir::MLIRContext &ctx = newContext(ctxHolder);
  CompileResult result;
  auto module = importAndOptimize(ctx, options, log, result);
  if (!module)
    return module.takeError();

  PackageInfo info;
  info.target = options.target.str();
  info.precision = precisionName(options.precision).str();
  info.tgcVersion = tgcVersion();
  info.modelName = llvm::sys::path::stem(llvm::sys::path::parent_path(options.modelPath)).str();
  info.modelHash = hashFile(options.modelPath);
  auto t1 = std::chrono::steady_clock::now();
  const bool cuda = options.target.isCuda();
  const std::string &dir = (*stage)->path();
  if (options.onStage) { // the last stage: after import and every pass (passSeconds has each)
    const int n = (int)result.passSeconds.size() + 1;
    options.onStage(cuda ? "codegen, NVRTC" : "codegen, host C++ compiler", n, n);
  }
  auto stats = cuda ? writeCudaPackage(**module, dir, info, options.cacheDir)
                    : writeCpuPackage(**module, dir, info, options.cacheDir);
  if (!stats)
    return stats.takeError();
  if (auto e = (*stage)->publish())
    return std::move(e);
  result.passSeconds.push_back(
      {"codegen", std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count()});
  result.package = *stats;

  if (!options.dumpDir.empty())
    for (const char *f : {cuda ? "kernels.cu" : "kernels.cpp", "plan.txt"})
      llvm::sys::fs::copy_file(options.outputPath + "/" + f, options.dumpDir + "/" + f);
  return result;
}

llvm::Expected<BisectResult> bisect(const CompileOptions &options,
                                    const std::vector<HostTensor> &inputs,
                                    const std::vector<HostTensor> &expected,
                                    llvm::raw_ostream &log) {
  if (auto err = checkOptions(options))
    return std::move(err);
  BisectResult out;
  // One pipeline run with a given set of disabled rules → worst rel-L2 over the outputs.
  auto measure = [&](const std::vector<std::string> &disabled,
                     std::map<std::string, int64_t> *hits) -> llvm::Expected<double> {
    CompileOptions o = options;
    o.disabledRules = disabled;
    o.dumpDir.clear();
    o.printIrAfterAll = false;
    o.printIrAfter.clear();
    o.printIrBefore.clear();
    std::unique_ptr<mlir::MLIRContext> ctxHolder;
    mlir::MLIRContext &ctx = newContext(ctxHolder);
    CompileResult r;
    llvm::raw_null_ostream quiet;
    auto module = importAndOptimize(ctx, o, quiet, r);
    if (!module)
      return module.takeError();
    if (hits)
      *hits = r.ruleHits;
    auto fn = (*module)->lookupSymbol<mlir::func::FuncOp>("main");
    auto got = interpret(fn, inputs);
    if (!got)
      return got.takeError();
    if (got->size() != expected.size())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "model has %zu outputs, reference has %zu", got->size(),
                                     expected.size());
    double worst = 0;
    for (size_t i = 0; i < got->size(); ++i)
      worst = std::max(worst, relativeL2((*got)[i], expected[i]));
    return worst;
  };

  std::map<std::string, int64_t> hits;
  auto all = measure(options.disabledRules, &hits);
  if (!all)
    return all.takeError();
  out.errorAllRules = *all;
  log << llvm::formatv("bisect: all rules on: max rel_l2={0:e}\n", *all);
  if (*all <= options.bisectTolerance)
    return out;
  for (auto &[rule, count] : hits) {
    if (count == 0)
      continue;
    std::vector<std::string> disabled = options.disabledRules;
    disabled.push_back(rule);
    auto err = measure(disabled, nullptr);
    if (!err)
      return err.takeError();
    log << llvm::formatv("bisect: without {0} ({1} hits): max rel_l2={2:e}\n", rule, count, *err);
    if (*err <= options.bisectTolerance) {
      out.culprit = rule;
      out.errorWithoutCulprit = *err;
      return out;
    }
  }
  return out;
}

} // namespace tgc
