// Cli.h — what the tgc subcommands share: errors, test data and inputs, sessions, timing, JSON,
// and each subcommand's registration (one file each: CompileCommand.cpp, BisectCommand.cpp,
// RunCommand.cpp, BenchCommand.cpp, InspectCommand.cpp; main.cpp parses and dispatches).
#ifndef TGC_TOOLS_TGC_CLI_H
#define TGC_TOOLS_TGC_CLI_H

#include "runtime/Session.h"
#include "runtime/Tensor.h"

#include <CLI/CLI.hpp>
#include <llvm/Support/JSON.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tgc {
struct CompileOptions;
struct DimRange;
} // namespace tgc

namespace tgc::cli {

/// Prints `tgc: error: msg` to stderr; returns exit code 1.
int fail(const std::string &msg);
/// "name=1x128" -> (name, {1, 128}); "name=1..8x128" -> (name, {1..8, 128}).
bool parseInputShape(const std::string &spec, std::string &name, std::vector<DimRange> &dims,
                     std::string &err);
/// Every --input-shape into `o.inputShapes`, or `o.inputRanges` when a dim is a range; an input
/// named twice is refused.
bool takeInputShapes(const std::vector<std::string> &specs, CompileOptions &o, std::string &err);
/// input_K.pb / output_K.pb files of a test_data_set folder, ordered by K.
std::vector<std::string> numberedFiles(const std::string &dir, const std::string &prefix);
bool readTensors(const std::vector<std::string> &files, std::vector<HostTensor> &out,
                 std::string &err);
/// Inputs drawn for `s` (floats in [-1, 1), integers in [0, 10) or an index input's range),
/// each at its declared shape, or at `shapes[i]` where that is non-empty (a bucketed package's
/// in-range shape: shapesForRun).
std::vector<HostTensor> randomInputs(const Session &s,
                                     const std::vector<std::vector<int64_t>> &shapes = {});
/// Whether `shape` is one input `spec` takes: its declared shape, or in a bucketed package each
/// axis inside its range (TensorSpec::minShape..shape).
bool shapeInRange(const TensorSpec &spec, const std::vector<int64_t> &shape);
/// `--shape NAME=DIMxDIM` specs (tgc bench) as one shape per input of `s` (empty: the declared
/// shape, a bucketed package's maxima = its largest bucket); an unknown input, a shape given
/// twice or out of range is an error naming the input and its range.
bool shapesForRun(const std::vector<std::string> &specs, const Session &s,
                  std::vector<std::vector<int64_t>> &shapes, std::string &err);
/// A run's inputs: from --test-data (with its expected outputs), --inputs files, --input
/// NAME=@FILE (.npy or .pb; every package input named once, takeNamedInputs), or random.
bool takeInputs(const std::string &testData, const std::vector<std::string> &inputFiles,
                const std::vector<std::string> &namedInputs, const Session &s,
                std::vector<HostTensor> &inputs, std::vector<HostTensor> &expected,
                std::string &err);
/// `--input NAME=@FILE` specs into `s`'s inputs, in the package's order: unknown names, names
/// given twice, a dtype or shape the package does not take and inputs not given are errors
/// naming the input, the file and what the package expects.
bool takeNamedInputs(const std::vector<std::string> &specs, const Session &s,
                     std::vector<HostTensor> &inputs, std::string &err);
std::string shapeStr(const std::vector<int64_t> &s);
std::unique_ptr<Session> loadSession(const std::string &pkg, int threads, std::string &err);
/// Wall times of `iters` runs after `warmup` untimed ones, in microseconds, in run order; empty
/// with `err` when a run fails.
std::vector<double> runMicros(Session &s, const std::vector<HostTensor> &in, int warmup, int iters,
                              std::string &err);
/// Median wall time of `iters` runs, in microseconds; -1 with `err` when a run fails.
double medianMicros(Session &s, const std::vector<HostTensor> &in, int warmup, int iters,
                    std::string &err);
/// The nearest-rank `p`-th percentile (0 < p <= 100) of `sorted` (ascending, non-empty).
double percentile(const std::vector<double> &sorted, double p);
/// Writes `bytes` to `path` through a temporary file beside it renamed into place, so that a
/// reader never sees half a file; false with `err` naming the path.
bool writeFileAtomic(const std::string &path, llvm::StringRef bytes, std::string &err);
/// Writes `v` to `path` atomically (llvm::json escapes every string: names with tabs, quotes or
/// control bytes stay valid JSON).
bool writeJson(const std::string &path, llvm::json::Value v);
/// A model name as one file name: escapeText's printable ASCII with `/` as %2F and a leading
/// `.` as %2E, at most ~200 bytes; `fallback` when the name is empty.
std::string fileSafeName(const std::string &name, const std::string &fallback);
/// `tgc --version`.
std::string versionText();

/// A subcommand: its CLI11 app and what runs when it was chosen.
struct Command {
  CLI::App *app;
  std::function<int()> run;
};
Command addCompile(CLI::App &app);
Command addBisect(CLI::App &app);
Command addRun(CLI::App &app);
Command addBench(CLI::App &app);
Command addInspect(CLI::App &app);
Command addOps(CLI::App &app);
/// `tgc generate` (GenerateCommand.cpp): generation with a decode package.
Command addGenerate(CLI::App &app);

} // namespace tgc::cli

#endif // TGC_TOOLS_TGC_CLI_H
