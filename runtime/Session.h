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
  /// Runs once. `inputs` are matched by position and validated (dtype, rank, shape);
  /// `outputs` is resized and filled.
  virtual Status run(const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs) = 0;
  /// Human-readable summary: target, kernels and their steps, arena and weight bytes.
  virtual std::string describe() const = 0;
};

} // namespace tgc

#endif // TGC_RUNTIME_SESSION_H
