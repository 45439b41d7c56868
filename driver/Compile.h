// Compile.h — the compile driver: ONNX file → passes → package (`tgc::compile`).
#ifndef TGC_DRIVER_COMPILE_H
#define TGC_DRIVER_COMPILE_H

#include "codegen/cpu/CpuBackend.h"
#include "driver/Target.h"
#include "runtime/Tensor.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tgc {

/// A dim given as a range on the command line; min == max for a fixed dim.
struct DimRange {
  int64_t min = 0, max = 0;
};

/// Everything `tgc compile` can be told.
struct CompileOptions {
  std::string modelPath;
  std::string modelName; ///< recorded in the package; "" for the model file's folder name
  std::string outputPath;
  Target target;                  ///< parseTarget("cpu" | "cuda:sm_XY")
  Precision precision = Precision::FP32;
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Inputs given with a range on some dim (`--input-shape 'ids=1..8x1..128'`): a bucketed
  /// package (docs/design.md, "Shape buckets"). Fixed dims have min == max.
  std::map<std::string, std::vector<DimRange>> inputRanges;
  /// `--buckets SYMBOL=V1,V2,...`: a symbol's bucket values (default: driver/Buckets.h).
  std::map<std::string, std::vector<int64_t>> bucketValues;
  /// Internal to bucketed compiles: per input, the symbol each axis carries (-1 fixed), passed to
  /// the importer (ImportOptions::dimSymbols) for the padding pass.
  std::map<std::string, std::vector<int64_t>> dimSymbols;
  std::vector<std::string> symbolNames; ///< likewise: the symbols' names, by index
  /// Per input, a name for each axis' symbol that overrides the model's dim_param ("" keeps
  /// it): binds dims the model names differently (a decoder's total_seq to seq in prefill).
  std::map<std::string, std::vector<std::string>> dimNames;
  /// `tgc compile --decode --max-seq N` (docs/design.md, "Generation"): a decode package.
  bool decode = false;
  int64_t maxSeq = 0;
  /// Internal to decode compiles: ImportOptions::states, decodeMode and maxSeq.
  std::map<std::string, int64_t> states;
  std::string decodeMode;
  /// Graph inputs bound to a value at compile time: name -> TensorProto file (ImportOptions).
  std::map<std::string, std::string> boundInputs;
  bool printIrAfterAll = false;
  std::vector<std::string> printIrAfter; ///< pass flags, with or without the "tgc-" prefix
  std::vector<std::string> printIrBefore; ///< likewise, printed before the pass runs
  std::string dumpDir;                   ///< per-stage IR, kernels and plan; "" for none
  std::string cacheDir;                  ///< kernel cache; "" for none
  bool checkEachPass = false;            ///< interpret before/after every pass, name drift
  bool formKernels = true;
  std::vector<std::string> disabledRules; ///< rule labels that must not run
  std::vector<std::string> enabledRules;  ///< when non-empty, only these rules run
  double bisectTolerance = 1e-5; ///< `tgc bisect`: max rel-L2 that counts as correct
  bool injectFault = false; ///< testing only: run a deliberately wrong rule (tgc-inject-fault)
  /// Called as each stage of compile() begins: "import", every pass, then codegen (with the host
  /// compiler or NVRTC), as stage `k` (1-based) of `n`. For progress displays; may be empty.
  std::function<void(llvm::StringRef stage, int k, int n)> onStage;
};

/// Figures of one compile, for --stats.
struct CompileResult {
  PackageStats package;
  int64_t opsBefore = 0; ///< tg ops after import (constants excluded)
  int64_t opsAfter = 0;  ///< tg ops at the end of the pipeline (constants excluded)
  std::map<std::string, int64_t> opsAfterByKind;
  std::vector<std::pair<std::string, double>> passSeconds; ///< wall time per stage
  std::map<std::string, int64_t> ruleHits;                 ///< rule label → times applied
};

/// Outcome of `tgc bisect`.
struct BisectResult {
  double errorAllRules = 0;       ///< max rel-L2 with every rule on
  std::string culprit;            ///< first rule whose removal fixes numerics ("" if none/needed)
  double errorWithoutCulprit = 0; ///< max rel-L2 with the culprit off
};

/// Compiles `options.modelPath` into a package at `options.outputPath`. IR dumps and messages
/// go to `log`. Errors name what is wrong (node, tensor, pass).
llvm::Expected<CompileResult> compile(const CompileOptions &options, llvm::raw_ostream &log);

/// Runs import + passes with the interpreter on `inputs`, compares with `expected`, and when the
/// error exceeds options.bisectTolerance disables the rules that fired one at a time to name the
/// first one whose removal brings the error back under the tolerance.
llvm::Expected<BisectResult> bisect(const CompileOptions &options,
                                    const std::vector<HostTensor> &inputs,
                                    const std::vector<HostTensor> &expected,
                                    llvm::raw_ostream &log);

/// The version string recorded in packages.
const char *tgcVersion();

/// The kernel cache a compile uses unless told otherwise: $TGC_CACHE_DIR, else ~/.cache/tgc,
/// else "" (none) when neither is set.
std::string defaultCacheDir();

} // namespace tgc

#endif // TGC_DRIVER_COMPILE_H
