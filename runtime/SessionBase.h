// SessionBase.h — what the CPU and CUDA sessions share: the package's interface (input and output
// specs with their byte sizes, read from the plan and checked once), caller tensors checked
// against it, one run at a time, and the step profile. Internal to //runtime.
#ifndef TGC_RUNTIME_SESSIONBASE_H
#define TGC_RUNTIME_SESSIONBASE_H

#include "runtime/Session.h"
#include "runtime/schema/plan.pb.h"

#include <atomic>
#include <string>
#include <vector>

namespace tgc {

/// "[2, 3]".
std::string shapeString(const int64_t *dims, size_t rank);

class SessionBase : public Session {
public:
  const std::vector<TensorSpec> &inputs() const override { return inputs_; }
  const std::vector<TensorSpec> &outputs() const override { return outputs_; }
  void setProfiling(bool on) override { profiling_ = on; }
  const std::vector<StepProfile> &lastProfile() const override { return profile_; }
  std::vector<int64_t> outputShape(size_t i) const override {
    return i < shapes_.size() ? shapes_[i] : std::vector<int64_t>();
  }
  /// Refuses a concurrent run, checks both arrays (checkSpecs), then runs (executeRefs).
  Status runRefs(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                 size_t numOutputs) override;

protected:
  /// Runs on caller tensors runRefs checked.
  virtual Status executeRefs(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                             size_t numOutputs) = 0;
  /// Reads the plan's input and output descriptors into the specs and byte sizes, refusing an
  /// unknown dtype, an invalid shape or an unsound index bound (errors start with `pre`).
  Status readInterface(const plan::Plan &p, const std::string &pre);
  /// Caller tensors against the specs: their count, a non-null array, each one's dtype, shape,
  /// data pointer and byte size, and (inputs) the index bounds.
  Status checkSpecs(const TensorRef *refs, size_t n, bool isInput) const;

  /// After a run wrote the outputs at their upper bounds: sets each data-dependent output's
  /// shape from `counts` (one i64 per entry of dynamic_, in order) and packs its valid part at
  /// the start of the caller's buffer (docs/design.md, "Data-dependent shapes").
  void finishDynamic(const TensorRef *outputs, const int64_t *counts);
  /// Trims the HostTensors run() returns to the shapes finishDynamic set.
  void trimOutputs(std::vector<HostTensor> &outputs) const;

  std::vector<TensorSpec> inputs_, outputs_;
  /// The outputs with a data-dependent extent (indices into outputs_), and each output's shape
  /// after the last run.
  std::vector<size_t> dynamic_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<int64_t> inBytes_, outBytes_;
  bool profiling_ = false;
  std::vector<StepProfile> profile_;
  /// Set while a run is in progress: a second concurrent run on this session is refused.
  std::atomic<bool> running_{false};
};

} // namespace tgc

#endif // TGC_RUNTIME_SESSIONBASE_H
