// Compile.cpp — the compile driver: import, run the pipeline with instrumentation, write the
// package.
//
// Debugging hooks live here rather than in the passes: IR printing (--print-ir-before/after*,
// through MLIR's enableIRPrinting), pass times (--stats, through MLIR's enableTiming), per-stage
// dumps (--dump-dir) and the numerics check (--check-each-pass), which runs the reference
// interpreter before the pipeline and after every pass and names the first pass whose outputs
// drift.
#include "driver/Compile.h"
#include "driver/CompileBuckets.h"
#include "driver/CompileDecode.h"

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
#include "mlir/Support/Timing.h"
#include "passes/common/Rules.h"
#include "runtime/CpuLevel.h"
#include "runtime/Env.h"
#include "runtime/schema/PlanUtil.h"
#include "runtime/Text.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <cstdlib>
#include <random>

namespace tgc {

const char *tgcVersion() { return "0.1.0"; }

std::string defaultCacheDir() {
  const char *env = envValue(Env::CacheDir);
  const char *home = std::getenv("HOME");
  return env ? env : home ? std::string(home) + "/.cache/tgc" : "";
}

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

/// What MLIR's own instrumentation does not: stage numbers for options.onStage, per-stage IR
/// files (--dump-dir) and the numerics check after each pass (--check-each-pass). Printing IR
/// (IrPrinter) and timing passes (PassTimes) go through the pass manager's own hooks.
class Instrumentation : public mlir::PassInstrumentation {
public:
  Instrumentation(const CompileOptions &o, llvm::raw_ostream &log) : options(o), log(log) {}

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
  }

  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    std::string name = pass->getArgument().str();
    if (name.empty()) // pass-manager adaptors (nesting), not real stages
      return;
    auto module = op->getParentOfType<mlir::ModuleOp>();
    if (!module)
      module = llvm::dyn_cast<mlir::ModuleOp>(op);
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
  std::vector<HostTensor> inputs, reference;
  int stage = 0;
};

/// Whether `pass` is one of `list` (pass flags, with or without the "tgc-" prefix).
bool named(const std::vector<std::string> &list, mlir::Pass *pass) {
  const llvm::StringRef arg = pass->getArgument();
  for (const std::string &p : list)
    if (!arg.empty() && (arg == p || arg == "tgc-" + p))
      return true;
  return false;
}

/// --print-ir-before / --print-ir-after(-all) through MLIR's IR-printing instrumentation
/// (PassManager::enableIRPrinting): MLIR calls these hooks around every pass (never the nesting
/// adaptors, and after a pass that failed too), the filters pick the passes, and the IR is
/// printed in tgc's format: "// -----// IR after <flag> //----- //", then the whole module with
/// large constants elided. (MLIR 15's own banner, "IR Dump After <Class> (<flag>)", cannot be
/// changed; the CLI's users and tests read tgc's.)
class IrPrinter : public mlir::PassManager::IRPrinterConfig {
public:
  using Filter = std::function<bool(mlir::Pass *)>;
  IrPrinter(Filter before, Filter after, llvm::raw_ostream &out)
      : IRPrinterConfig(/*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
                        /*printAfterOnlyOnFailure=*/false, dumpFlags()),
        before(std::move(before)), after(std::move(after)), out(out) {}

  void printBeforeIfEnabled(mlir::Pass *pass, mlir::Operation *op, PrintCallbackFn) override {
    if (before(pass))
      print("before", pass, op);
  }
  void printAfterIfEnabled(mlir::Pass *pass, mlir::Operation *op, PrintCallbackFn) override {
    if (after(pass))
      print("after", pass, op);
  }

private:
  void print(const char *when, mlir::Pass *pass, mlir::Operation *op) {
    while (mlir::Operation *parent = op->getParentOp())
      op = parent;
    out << "// -----// IR " << when << " " << pass->getArgument() << " //----- //\n";
    op->print(out, getOpPrintingFlags());
    out << "\n\n";
  }

  Filter before, after;
  llvm::raw_ostream &out;
};

/// Wall time of every pass through MLIR's pass timing (PassManager::enableTiming): MLIR nests a
/// timer per pass (inside its pipeline, with the pass's analyses inside it) and starts it after
/// every other instrumentation's hook, so printing, dumps and --check-each-pass are not counted.
/// MLIR 15's DefaultTimingManager only prints a report; this manager keeps the timers, in the
/// order they started, for CompileResult::passSeconds.
class PassTimes : public mlir::TimingManager {
public:
  struct Timer {
    std::string name;
    double seconds = 0;
    std::chrono::steady_clock::time_point start;
  };
  /// Every timer MLIR made (pipelines and analyses too), in the order they were made.
  const std::deque<Timer> &timers() const { return all; }

protected:
  llvm::Optional<void *> rootTimer() override { return &root; }
  void startTimer(void *handle) override {
    static_cast<Timer *>(handle)->start = std::chrono::steady_clock::now();
  }
  void stopTimer(void *handle) override {
    auto *t = static_cast<Timer *>(handle);
    t->seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t->start).count();
  }
  void *nestTimer(void *, const void *, llvm::function_ref<std::string()> nameBuilder) override {
    all.push_back(Timer{nameBuilder()});
    return &all.back();
  }

private:
  Timer root;
  std::deque<Timer> all;
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
  uint64_t h = 0;
  if (!plan::xxh3File(path, h)) // read again by the importer next, which names the failure
    h = 0;
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

/// Pass names given to --print-ir-after/--print-ir-before that the pipeline does not run (with or
/// without the "tgc-" prefix), refused with the list of those it runs.
llvm::Error checkPassNames(const std::vector<PipelinePass> &passes, const CompileOptions &options) {
  std::vector<std::string> known;
  for (const PipelinePass &p : passes)
    if (std::find(known.begin(), known.end(), p.argument) == known.end())
      known.push_back(p.argument);
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
  pipelineOptions.cpuTarget = !options.target.isCuda();
  // The prelude's GEMM tiles need AVX-512: x86-64-v4, or native on a host of that level.
  const std::string &arch = options.target.arch;
  pipelineOptions.cpuGemmTiles =
      arch == "x86-64-v4" || (arch == "native" && hostCpuLevel() == "x86-64-v4");
  pipelineOptions.cudaTarget = options.target.isCuda();
  const std::vector<PipelinePass> passes = pipelinePasses(pipelineOptions);
  if (auto err = checkPassNames(passes, options))
    return std::move(err);
  const int stageCount = (int)passes.size() + 2;
  if (options.onStage)
    options.onStage("import", 1, stageCount);
  auto t0 = std::chrono::steady_clock::now();
  ImportOptions importOptions;
  importOptions.inputShapes = options.inputShapes;
  importOptions.boundInputs = options.boundInputs;
  importOptions.dimSymbols = options.dimSymbols;
  importOptions.symbolNames = options.symbolNames;
  importOptions.states = options.states;
  importOptions.decodeMode = options.decodeMode;
  importOptions.maxSeq = options.maxSeq;
  auto module = importOnnxFile(ctx, options.modelPath, importOptions);
  if (!module)
    return module.takeError();
  result.passSeconds.push_back(
      {"import", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
  countOps(**module, result.opsBefore, nullptr);

  // "--disable-rules=all": enable only a label no rule has, so no rule runs.
  bool noRules = std::find(options.disabledRules.begin(), options.disabledRules.end(), "all") !=
                 options.disabledRules.end();
  RuleRegistry::get().setDisabled(&ctx, options.disabledRules);
  RuleRegistry::get().setEnabled(&ctx, noRules ? std::vector<std::string>{"(no rule)"}
                                               : options.enabledRules);
  RuleRegistry::get().resetHits(&ctx);
  // The pass timers outlive the pass manager: after a pass fails, MLIR 15's PassTiming still
  // holds open timers that it stops as it is destroyed, which must find their manager alive
  // (an owned one, enableTiming(unique_ptr), is destroyed first: a use after free).
  PassTimes times;
  mlir::TimingScope timingRoot = times.getRootScope();
  mlir::PassManager pm(&ctx);
  buildPipeline(pm, pipelineOptions);
  auto instr = std::make_unique<Instrumentation>(options, log);
  instr->stageCount = stageCount;
  Instrumentation *instrPtr = instr.get();
  if (auto err = instr->begin(**module))
    return std::move(err);
  pm.addInstrumentation(std::move(instr));
  if (options.printIrAfterAll || !options.printIrAfter.empty() || !options.printIrBefore.empty())
    pm.enableIRPrinting(std::make_unique<IrPrinter>(
        [&](mlir::Pass *p) { return named(options.printIrBefore, p); },
        [&](mlir::Pass *p) {
          return (options.printIrAfterAll && !p->getArgument().empty()) ||
                 named(options.printIrAfter, p);
        },
        log));
  pm.enableTiming(timingRoot); // last: the timers exclude the hooks above

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
  // Pass timers by their class name (MLIR's) → the flag --stats and --print-ir-* use.
  llvm::StringMap<std::string> flagOf;
  for (const PipelinePass &p : passes)
    flagOf[p.name] = p.argument;
  for (const PassTimes::Timer &t : times.timers())
    if (auto it = flagOf.find(t.name); it != flagOf.end())
      result.passSeconds.push_back({it->second, t.seconds});
  if (auto err = checkRuleNames(options))
    return std::move(err);
  if (!instrPtr->driftPass.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "check-each-pass: pass '%s' changed the results: %s",
                                   instrPtr->driftPass.c_str(), instrPtr->driftMessage.c_str());
  countOps(**module, result.opsAfter, &result.opsAfterByKind);
  result.ruleHits = RuleRegistry::get().hits(&ctx);
  return module;
}

/// One compile's MLIRContext. Its rule switches and hit counts (RuleRegistry, kept per context)
/// go with it, so a later context at the same address starts clean.
struct CompileContext {
  mlir::MLIRContext ctx;
  CompileContext() {
    ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>();
    ctx.disableMultithreading(); // deterministic dumps; the graphs are small
  }
  ~CompileContext() { RuleRegistry::get().forget(&ctx); }
};

} // namespace

llvm::Expected<CompileResult> compile(const CompileOptions &options, llvm::raw_ostream &log) {
  if (auto err = checkOptions(options))
    return std::move(err);
  if (options.decode)
    return compileDecode(options, log);
  if (!options.inputRanges.empty())
    return compileBucketed(options, log);
  if (!options.target.isCuda() && options.precision != Precision::FP32)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--precision=%s needs a CUDA target: the CPU backend computes "
                                   "in fp32 (use --precision=fp32 or --target=cuda:sm_90)",
                                   precisionName(options.precision).str().c_str());
  // The package is written beside -o and renamed into place once complete (StagedDir.h).
  auto stage = codegen::StagedDir::create(options.outputPath);
  if (!stage)
    return stage.takeError();
  CompileContext holder;
  mlir::MLIRContext &ctx = holder.ctx;
  CompileResult result;
  auto module = importAndOptimize(ctx, options, log, result);
  if (!module)
    return module.takeError();

  PackageInfo info;
  info.target = options.target.str();
  info.precision = precisionName(options.precision).str();
  info.tgcVersion = tgcVersion();
  info.modelName =
      !options.modelName.empty()
          ? options.modelName
          : llvm::sys::path::stem(llvm::sys::path::parent_path(options.modelPath)).str();
  info.modelHash = hashFile(options.modelPath);
  info.ruleHits = result.ruleHits;
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
    CompileContext holder;
    mlir::MLIRContext &ctx = holder.ctx;
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
