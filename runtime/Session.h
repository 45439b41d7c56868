// Session.h — the C++ runtime API: load a package, bind inputs, run, read outputs.
//
// No MLIR, LLVM or compiler dependency: a program embedding tgc links only //runtime. Every
// failure is returned as a Status with a message naming what is wrong; nothing aborts or exits.
#ifndef TGC_RUNTIME_SESSION_H
#define TGC_RUNTIME_SESSION_H

#include "runtime/Tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tgc {

/// Success, or an error message.
struct Status {
  bool ok = true;
  std::string message;
  static Status success() { return {}; }
  static Status error(std::string m) { return {false, std::move(m)}; }
};

/// Name, dtype and shape of a package input or output.
struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  /// Inputs only: the input indexes a Gather, and `run` refuses an element outside
  /// [indexLo, indexHi] (the plan's IndexBound).
  bool indexBounded = false;
  int64_t indexLo = 0, indexHi = 0;
  std::string indexNode; ///< the node(s) it indexes, for the error ("Gather 'name'")
  /// Outputs only: >= 0 when the output's extent along this axis depends on the data (NonZero,
  /// Unique, ...): `shape` is its upper bound and outputShape() gives a run's actual shape.
  int32_t dynamicAxis = -1;
  /// Bucketed packages (docs/runtime.md, "Bucketed packages"): per axis, the least value the
  /// axis may take (`shape` holds the most) and the name of the symbol it follows ("" for a
  /// fixed axis, where the least equals `shape`). Both empty in a single-shape package, whose
  /// every axis is fixed. An output's axis that follows a symbol has, after a run, the value
  /// the inputs gave that symbol (outputShape()).
  std::vector<int64_t> minShape;
  std::vector<std::string> dimSymbols;
};

/// A caller-owned tensor buffer, for running without copies (the C API uses this).
struct TensorRef {
  DType dtype = DType::F32;
  const int64_t *dims = nullptr; ///< `rank` dims
  int32_t rank = 0;
  void *data = nullptr;          ///< inputs are only read
  size_t bytes = 0;              ///< size of `data` in bytes
};

/// Wall time of one plan step in the last profiled run.
struct StepProfile {
  std::string symbol; ///< kernel symbol ("copy" for a copy step)
  std::string label;  ///< the ops / ONNX nodes the step came from
  double startMicros = 0, micros = 0;
};

/// How Session::generate picks each new token (docs/runtime.md, "Decode packages").
struct GenerateOptions {
  /// 0 (the default): greedy, the argmax of the logits (the lowest id on ties). > 0: sample from
  /// softmax(logits / temperature), restricted to the `topK` most likely ids when topK > 0.
  float temperature = 0.f;
  int topK = 0;
  uint64_t seed = 0; ///< the sampler's seed (std::mt19937_64): equal seeds, equal ids
  int64_t eosId = -1; ///< >= 0: stop after generating this id (it is returned); -1: never
};

/// What Session::generate measured: wall times around the prefill and around the step loop.
struct GenerateStats {
  int64_t promptTokens = 0, newTokens = 0;
  int64_t steps = 0;            ///< step() calls: newTokens - 1 (the last id is not fed back)
  double prefillMs = 0;         ///< the prefill run, up to the first new id
  double decodeMs = 0;          ///< every step after it
  double prefillTokensPerS = 0; ///< promptTokens / prefill time
  double decodeTokensPerS = 0;  ///< steps / decode time (0 when there was no step)
};

/// A loaded package and one execution context (arena). Use one Session per thread; sessions
/// of the same package share nothing mutable.
class Session {
public:
  /// Loads and validates the package directory at `path`. On failure returns null and sets `st`.
  static std::unique_ptr<Session> load(const std::string &path, Status &st, int numThreads = 0);
  virtual ~Session() = default;

  virtual const std::vector<TensorSpec> &inputs() const = 0;
  virtual const std::vector<TensorSpec> &outputs() const = 0;
  /// Runs once. `inputs` are matched by position and validated (dtype, rank, shape; in a
  /// bucketed package each axis anywhere in its range, TensorSpec::minShape..shape);
  /// `outputs` is resized and filled, each at its actual shape (outputShape()).
  virtual Status run(const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs) = 0;
  /// Runs once on caller-owned buffers: inputs are validated (dtype, rank, shape, byte size) and
  /// read in place; each output's declared dtype/shape must match and its buffer be large enough.
  /// Bucketed packages: inputs of any shape in range; an output's dims may be its actual shape
  /// for this run or its declared one (the maxima), and it is written row-major at its actual
  /// shape (outputShape()) from the start of its buffer.
  virtual Status runRefs(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                         size_t numOutputs) = 0;
  /// Output `i`'s shape after the last run: its declared shape, except that each axis of a
  /// bucketed package's output that follows a symbol has the run's value, and that an output with a
  /// data-dependent extent (TensorSpec::dynamicAxis >= 0) has that dim cut to the run's count
  /// (the declared upper bound before any run). run() returns such outputs trimmed; runRefs()
  /// packs the valid part row-major at the start of the caller's buffer (the rest undefined).
  /// Empty for `i` out of range.
  virtual std::vector<int64_t> outputShape(size_t i) const = 0;
  /// Human-readable summary: target, kernels and their steps, arena and weight bytes.
  virtual std::string describe() const = 0;
  /// Times every step of the following runs (small overhead: one clock read per step).
  virtual void setProfiling(bool on) = 0;
  /// Per-step times of the last run made with profiling on.
  virtual const std::vector<StepProfile> &lastProfile() const = 0;
  /// Kernel launches per run (GEMMs included); -1 when the session does not count them.
  virtual int64_t launchesPerRun() const { return -1; }
  /// GPU time of the last run's kernels in µs (device events around the launch); -1 on the CPU.
  virtual double lastDeviceMicros() const { return -1; }
  /// Device-resident steady state, timed as PyTorch's benchmarks time CUDA graphs: the inputs of
  /// the last run stay on the device and `iters` replays are enqueued back to back between two
  /// device events; µs per replay. -1 where not supported (CPU, or no run yet).
  /// `omit` (diagnostics: where the time goes inside the graph) leaves steps out of a separate
  /// graph timed the same way: "gemm" names every GEMM step, "gemm:<words>" the GEMM steps whose
  /// label contains them, any other word the kernel steps whose symbol contains it ("attention",
  /// "norm"). Such a graph computes wrong outputs; only its time
  /// is reported, and the package's own graph is not touched.
  virtual double replayMicros(int iters, const std::vector<std::string> &omit) { return -1; }
  /// The package's --precision ("fp32", "fp16", "bf16"): f16/bf16 inside, whatever the edges.
  virtual std::string precision() const { return "fp32"; }

  // Generation (decode packages, `tgc compile --decode`; docs/runtime.md, "Decode packages").
  // Any other package refuses these calls with an error saying so.

  /// The cache's positions (DecodeInfo.max_seq): prompt + new tokens <= maxSeq(); 0 when this
  /// is not a decode package.
  virtual int64_t maxSeq() const { return 0; }
  /// The longest prompt prefill() takes (the largest prefill bucket); 0 when not a decode package.
  virtual int64_t maxPromptTokens() const { return 0; }
  /// The vocabulary size: the length of the logits prefill() and step() return (0: not decode).
  virtual int64_t vocab() const { return 0; }
  /// Starts a sequence: zeroes the caches, runs the smallest prefill bucket that fits the prompt
  /// (input_ids padded with zeros, attention_mask 1 over the prompt and 0 over the padding,
  /// position_ids 0..n-1), which writes the prompt's keys and values at cache slots 0..n-1, and
  /// returns the logits of the last prompt position as f32 (vocab() values).
  virtual Status prefill(const std::vector<int64_t> &promptIds, std::vector<float> &lastLogits);
  /// One new token: runs the step plan (on CUDA one graph, captured at its first run) with
  /// input_ids = token, position_ids = position, attention_mask 1 over slots 0..position and 0
  /// after; it writes the token's key and value at slot `position` and returns its logits as f32.
  /// `position` must lie in [0, maxSeq()); the caches are read as the earlier calls left them.
  virtual Status step(int64_t token, int64_t position, std::vector<float> &logits);
  /// prefill(prompt), then step() for each new id but the last: `maxNewTokens` ids (fewer when
  /// options.eosId comes) in `newIds`, greedy unless options.temperature > 0, and the timings in
  /// `stats`. A prompt + maxNewTokens beyond maxSeq(), or a prompt longer than
  /// maxPromptTokens(), is refused before anything runs.
  Status generate(const std::vector<int64_t> &prompt, int maxNewTokens,
                  const GenerateOptions &options, std::vector<int64_t> &newIds,
                  GenerateStats &stats);
};

} // namespace tgc

#endif // TGC_RUNTIME_SESSION_H
