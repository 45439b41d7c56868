// Session.h — the C++ runtime API: load a package, bind inputs, run, read outputs.
//
// No MLIR, LLVM or compiler dependency: a program embedding tgc links only //runtime. Every
// failure is returned as a Status with a message naming what is wrong; nothing aborts or exits.
#ifndef TGC_RUNTIME_SESSION_H
#define TGC_RUNTIME_SESSION_H

#include "runtime/Tensor.h"

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
};

} // namespace tgc

#endif // TGC_RUNTIME_SESSION_H
