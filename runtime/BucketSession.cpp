// BucketSession.cpp — a bucketed package's session: load every bucket on one set of weights and
// one arena, and run a caller's shapes through the smallest bucket that fits (see
// BucketSession.h; the plan-level rules are in BucketPlan.cpp). A decode package's session is
// one too, with its states and step plan: prefill runs a bucket, step the step plan (the rules
// in DecodePlan.cpp, the generate loop in Generate.cpp).
#include "runtime/BucketSession.h"

#include "runtime/BucketPlan.h"
#include "runtime/DecodePlan.h"
#include "runtime/IndexBounds.h"
#include "runtime/PackageFiles.h"
#include "runtime/SessionBase.h"
#include "runtime/Text.h"
#include "runtime/schema/PlanUtil.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace tgc {

namespace {

using Shape = std::vector<int64_t>;

class BucketSession final : public SessionBase {
public:
  Status init(const std::string &path, const plan::Plan &top,
              std::unique_ptr<BucketBackend> backend);
  Status run(const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs) override;
  /// Caller shapes anywhere in range (SessionBase's runRefs wants the declared shapes).
  Status runRefs(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                 size_t numOutputs) override;
  std::string describe() const override;
  void setProfiling(bool on) override {
    profiling_ = on;
    for (auto &b : buckets_)
      b->setProfiling(on);
  }
  const std::vector<StepProfile> &lastProfile() const override {
    const Session *s = lastRun();
    return s ? s->lastProfile() : profile_;
  }
  int64_t launchesPerRun() const override { return current().launchesPerRun(); }
  double lastDeviceMicros() const override { return current().lastDeviceMicros(); }
  /// The last run's bucket replayed (its graph reads the inputs that run left on the device).
  double replayMicros(int iters, const std::vector<std::string> &omit) override {
    RunGuard guard(running_);
    Session *s = lastRun();
    return guard.acquired && s ? s->replayMicros(iters, omit) : -1;
  }
  std::string precision() const override {
    return top_.precision().empty() ? "fp32" : top_.precision();
  }
  int64_t maxSeq() const override { return step_ ? top_.decode().max_seq() : 0; }
  int64_t maxPromptTokens() const override { return step_ ? top_.symbols(0).max() : 0; }
  int64_t vocab() const override { return step_ ? top_.decode().vocab() : 0; }
  Status prefill(const std::vector<int64_t> &promptIds, std::vector<float> &lastLogits) override;
  Status step(int64_t token, int64_t position, std::vector<float> &logits) override;

private:
  static constexpr int kStepRun = -2; ///< last_ after a decode package's step plan ran
  /// The session of the last run (a bucket, or the step plan), null before any.
  Session *lastRun() const {
    return last_ == kStepRun ? step_.get() : last_ >= 0 ? buckets_[(size_t)last_].get() : nullptr;
  }
  /// The session of the last run, else the last bucket (the largest).
  const Session &current() const {
    const Session *s = lastRun();
    return s ? *s : *buckets_.back();
  }
  /// Logits row `row` of output decode.logits (f32, f16 or bf16 in `raw`) as f32.
  void logitsRow(const std::vector<uint8_t> &raw, int64_t row, std::vector<float> &out) const;
  Status executeRefs(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                     size_t numOutputs) override;
  /// The caller's output buffers against this run's shapes `want`: dtype, rank, dims (the
  /// run's or the declared maxima) and byte size.
  Status checkOutputs(const TensorRef *outputs, size_t n, const std::vector<Shape> &want) const;

  std::string path_;
  plan::Plan top_;
  /// Declared before the bucket sessions, which borrow its buffers: destroyed after them.
  std::unique_ptr<BucketBackend> backend_;
  std::vector<std::unique_ptr<Session>> buckets_;
  /// Per bucket, each input's and output's shape there (the dims a bucket run passes).
  std::vector<std::vector<Shape>> bucketIn_, bucketOut_;
  int last_ = -1; ///< the bucket of the last run
  /// Zero-padded inputs, outputs at the bucket's shape before they are cut, and the values of
  /// the length inputs; reused across runs.
  std::vector<std::vector<uint8_t>> inStage_, outStage_;
  std::vector<int64_t> lengths_;
  /// A decode package's step plan session (null otherwise), and the step's inputs and outputs,
  /// reused across steps: input_ids, attention_mask and position_ids values, the outputs' bytes.
  std::unique_ptr<Session> step_;
  std::vector<int64_t> stepIds_, stepMask_, stepPos_;
  std::vector<std::vector<uint8_t>> stepOut_;
};

const Shape kLengthShape = {1};

Status BucketSession::init(const std::string &path, const plan::Plan &top,
                           std::unique_ptr<BucketBackend> backend) {
  path_ = path;
  top_ = top;
  backend_ = std::move(backend);
  const std::string pre = "package '" + path + "': ";
  if (Status st = checkBucketedPlan(top_, pre); !st.ok)
    return st;
  const bool decode = isDecodePlan(top_);
  if (decode)
    if (Status st = checkDecodePlan(top_, pre); !st.ok)
      return st;
  if (Status st = readInterface(top_, pre); !st.ok)
    return st;
  fillBucketSpecs(top_, inputs_, outputs_);
  if (Status st = backend_->init(path, top_, pre); !st.ok)
    return st;
  for (int k = 0; k < top_.buckets_size(); ++k) {
    const plan::Plan &b = top_.buckets(k);
    Status st;
    auto s = backend_->loadBucket(path, b, pre + "bucket " + std::to_string(k) + ": ", st);
    if (!s)
      return st;
    // A data-dependent extent is declared by the buckets (the top level keeps no count).
    for (int i = 0; i < b.outputs_size(); ++i)
      if (b.outputs(i).has_count() && outputs_[(size_t)i].dynamicAxis < 0)
        outputs_[(size_t)i].dynamicAxis = b.outputs(i).dynamic_axis();
    std::vector<int64_t> values(b.bucket_values().begin(), b.bucket_values().end());
    bucketIn_.emplace_back();
    for (const plan::TensorDesc &d : b.inputs())
      bucketIn_.back().push_back(shapeAt(d, values));
    bucketOut_.emplace_back();
    for (const plan::TensorDesc &d : b.outputs())
      bucketOut_.back().push_back(shapeAt(d, values));
    s->setProfiling(profiling_);
    buckets_.push_back(std::move(s));
  }
  inStage_.resize(inputs_.size());
  outStage_.resize(outputs_.size());
  if (decode) { // the step plan, on the same weights, arena and states
    Status st;
    step_ = backend_->loadBucket(path, top_.decode_step(), pre + "step plan: ", st);
    if (!step_)
      return st;
    step_->setProfiling(profiling_);
  }
  return Status::success();
}

void BucketSession::logitsRow(const std::vector<uint8_t> &raw, int64_t row,
                              std::vector<float> &out) const {
  const DType t = outputs_[(size_t)top_.decode().logits()].dtype;
  const int64_t vocab = top_.decode().vocab();
  out.resize((size_t)vocab);
  const uint8_t *p = raw.data() + (size_t)(row * vocab) * dtypeSize(t);
  for (int64_t v = 0; v < vocab; ++v) {
    if (t == DType::F32) {
      std::memcpy(&out[(size_t)v], p + 4 * v, 4);
      continue;
    }
    uint16_t h;
    std::memcpy(&h, p + 2 * v, 2);
    out[(size_t)v] = t == DType::F16 ? halfToFloat(h) : bf16ToFloat(h);
  }
}

Status BucketSession::prefill(const std::vector<int64_t> &promptIds,
                              std::vector<float> &lastLogits) {
  if (!step_)
    return Session::prefill(promptIds, lastLogits); // the refusal
  const plan::DecodeInfo &di = top_.decode();
  const int64_t n = (int64_t)promptIds.size();
  if (n < 1 || n > maxPromptTokens())
    return Status::error("prefill: a prompt of " + std::to_string(n) + " tokens is outside 1.." +
                         std::to_string(maxPromptTokens()) +
                         " (the package's prefill buckets)");
  RunGuard guard(running_);
  if (!guard.acquired)
    return Status::error(kConcurrentRun);
  try {
    std::vector<int64_t> mask((size_t)n, 1), pos((size_t)n);
    for (int64_t i = 0; i < n; ++i)
      pos[(size_t)i] = i;
    const Shape shape = {1, n};
    std::vector<TensorRef> in(inputs_.size());
    for (size_t i = 0; i < in.size(); ++i) { // checkDecodePlan: every input has one of 3 roles
      const int32_t r = (int32_t)i;
      const std::vector<int64_t> &v = r == di.input_ids() ? promptIds
                                      : r == di.attention_mask() ? mask : pos;
      in[i] = {DType::I64, shape.data(), 2, const_cast<int64_t *>(v.data()),
               v.size() * sizeof(int64_t)};
    }
    std::vector<Shape> outShapes;
    std::vector<std::vector<uint8_t>> outData;
    std::vector<TensorRef> out(outputs_.size());
    for (size_t i = 0; i < out.size(); ++i)
      outShapes.push_back(shapeAt(top_.outputs((int)i), {n}));
    for (size_t i = 0; i < out.size(); ++i) {
      outData.emplace_back((size_t)bytesOf(outputs_[i].dtype, outShapes[i]));
      out[i] = {outputs_[i].dtype, outShapes[i].data(), (int32_t)outShapes[i].size(),
                outData[i].data(), outData[i].size()};
    }
    if (Status st = backend_->resetStates(); !st.ok)
      return Status::error("prefill: zeroing the caches: " + st.message);
    if (Status st = executeRefs(in.data(), in.size(), out.data(), out.size()); !st.ok)
      return Status::error("prefill: " + st.message);
    logitsRow(outData[(size_t)di.logits()], n - 1, lastLogits);
  } catch (const std::bad_alloc &) {
    return Status::error("prefill: out of memory staging the prompt and the logits");
  }
  return Status::success();
}

Status BucketSession::step(int64_t token, int64_t position, std::vector<float> &logits) {
  if (!step_)
    return Session::step(token, position, logits); // the refusal
  const plan::DecodeInfo &di = top_.decode();
  if (position < 0 || position >= di.max_seq())
    return Status::error("step: position " + std::to_string(position) +
                         " is outside the cache's 0.." + std::to_string(di.max_seq() - 1) +
                         " (the package was compiled with --max-seq " +
                         std::to_string(di.max_seq()) + ")");
  RunGuard guard(running_);
  if (!guard.acquired)
    return Status::error(kConcurrentRun);
  try {
    stepIds_.assign(1, token);
    stepPos_.assign(1, position);
    stepMask_.assign((size_t)di.max_seq(), 0);
    std::fill(stepMask_.begin(), stepMask_.begin() + position + 1, 1);
    const std::vector<TensorSpec> &ins = step_->inputs(), &outs = step_->outputs();
    std::vector<TensorRef> in(ins.size()), out(outs.size());
    for (size_t i = 0; i < in.size(); ++i) {
      const int32_t r = (int32_t)i;
      std::vector<int64_t> &v = r == di.input_ids() ? stepIds_
                                : r == di.attention_mask() ? stepMask_ : stepPos_;
      in[i] = {DType::I64, ins[i].shape.data(), (int32_t)ins[i].shape.size(), v.data(),
               v.size() * sizeof(int64_t)};
    }
    stepOut_.resize(outs.size());
    for (size_t i = 0; i < out.size(); ++i) {
      stepOut_[i].resize((size_t)bytesOf(outs[i].dtype, outs[i].shape));
      out[i] = {outs[i].dtype, outs[i].shape.data(), (int32_t)outs[i].shape.size(),
                stepOut_[i].data(), stepOut_[i].size()};
    }
    if (last_ != kStepRun) { // the arena as the step plan's own package would start it
      if (Status st = backend_->switchTo(top_.decode_step()); !st.ok)
        return Status::error("step: " + st.message);
      last_ = -1;
    }
    if (Status st = step_->runRefs(in.data(), in.size(), out.data(), out.size()); !st.ok)
      return Status::error("step: " + st.message);
    last_ = kStepRun;
    logitsRow(stepOut_[(size_t)di.logits()], 0, logits);
  } catch (const std::bad_alloc &) {
    return Status::error("step: out of memory staging the token and the logits");
  }
  return Status::success();
}

Status BucketSession::checkOutputs(const TensorRef *outputs, size_t n,
                                   const std::vector<Shape> &want) const {
  if (n != outputs_.size())
    return Status::error("expected " + std::to_string(outputs_.size()) + " outputs, got " +
                         std::to_string(n));
  if (n > 0 && !outputs)
    return Status::error("output array is null");
  for (size_t i = 0; i < n; ++i) {
    const TensorRef &r = outputs[i];
    const TensorSpec &s = outputs_[i];
    bool same = r.dtype == s.dtype && r.rank >= 0 && (size_t)r.rank == s.shape.size() &&
                (r.rank == 0 || r.dims);
    for (size_t a = 0; same && a < s.shape.size(); ++a)
      same = r.dims[a] == want[i][a] || r.dims[a] == s.shape[a];
    const std::string name = "output '" + escapeText(s.name) + "'";
    if (!same)
      return Status::error(name + ": expected " + dtypeName(s.dtype) + " " +
                           shapeString(want[i].data(), want[i].size()) +
                           " (this run's shape) or " +
                           shapeString(s.shape.data(), s.shape.size()) + ", got " +
                           (r.rank < 0 || (r.rank > 0 && !r.dims) || r.rank > 64
                                ? std::string("an invalid shape")
                                : std::string(isKnownDType((int32_t)r.dtype) ? dtypeName(r.dtype)
                                                                              : "dtype(?)") +
                                      " " + shapeString(r.dims, (size_t)r.rank)));
    const int64_t need = bytesOf(s.dtype, want[i]);
    if (need > 0 && !r.data)
      return Status::error(name + ": data pointer is null");
    if ((int64_t)r.bytes < need)
      return Status::error(name + ": buffer has " + std::to_string(r.bytes) + " bytes, needs " +
                           std::to_string(need));
  }
  return Status::success();
}

Status BucketSession::runRefs(const TensorRef *inputs, size_t numInputs,
                              const TensorRef *outputs, size_t numOutputs) {
  RunGuard guard(running_);
  if (!guard.acquired)
    return Status::error(kConcurrentRun);
  return executeRefs(inputs, numInputs, outputs, numOutputs);
}

Status BucketSession::executeRefs(const TensorRef *inputs, size_t numInputs,
                                  const TensorRef *outputs, size_t numOutputs) {
  std::vector<int64_t> values;
  if (Status st = bindSymbols(top_, inputs_, inputs, numInputs, values); !st.ok)
    return st;
  for (size_t i = 0; i < numInputs; ++i) {
    const TensorRef &r = inputs[i];
    const int64_t need = bytesOf(r.dtype, Shape(r.dims, r.dims + r.rank));
    const std::string name = "input '" + escapeText(inputs_[i].name) + "'";
    if (need < 0)
      return Status::error(name + ": its dims overflow");
    if (need > 0 && !r.data)
      return Status::error(name + ": data pointer is null");
    if ((int64_t)r.bytes < need)
      return Status::error(name + ": buffer has " + std::to_string(r.bytes) + " bytes, needs " +
                           std::to_string(need));
  }
  if (Status st = checkIndexBounds(inputs_, inputs, numInputs); !st.ok)
    return st;
  std::vector<Shape> want;
  for (int i = 0; i < top_.outputs_size(); ++i)
    want.push_back(shapeAt(top_.outputs(i), values));
  if (Status st = checkOutputs(outputs, numOutputs, want); !st.ok)
    return st;

  const int k = pickBucket(top_, values);
  if (k < 0) // checkBucketedPlan made sure the maxima have a bucket
    return Status::error("no bucket of the package covers this run");
  const plan::Plan &b = top_.buckets(k);
  const bool exact = std::equal(values.begin(), values.end(), b.bucket_values().begin());
  if (!exact)
    for (const TensorSpec &s : outputs_)
      if (s.dynamicAxis >= 0)
        return Status::error("output '" + escapeText(s.name) +
                             "' has a data-dependent extent, which a padded run would count "
                             "wrongly: run it at a bucket's exact shape");
  if (k != last_) {
    if (Status st = backend_->switchTo(b); !st.ok)
      return st;
    last_ = -1; // until this bucket has run
  }

  // Inputs at the bucket's shape: the caller's own buffer when it is, else zero-padded.
  const std::vector<Shape> &bin = bucketIn_[(size_t)k], &bout = bucketOut_[(size_t)k];
  std::vector<TensorRef> in(bin.size());
  try {
    for (size_t i = 0; i < numInputs; ++i) {
      const TensorRef &r = inputs[i];
      const Shape caller(r.dims, r.dims + r.rank);
      const int64_t bytes = bytesOf(r.dtype, bin[i]);
      in[i] = {r.dtype, bin[i].data(), r.rank, r.data, r.bytes};
      if (caller == bin[i])
        continue;
      std::vector<uint8_t> &stage = inStage_[i];
      stage.assign((size_t)bytes, 0);
      copyBlock(static_cast<const uint8_t *>(r.data), caller, stage.data(), bin[i], caller,
                dtypeSize(r.dtype));
      in[i].data = stage.data();
      in[i].bytes = stage.size();
    }
    lengths_.assign(bin.size() - numInputs, 0);
    for (size_t i = numInputs; i < bin.size(); ++i) {
      int64_t &len = lengths_[i - numInputs];
      len = values[(size_t)b.inputs((int)i).length_of() - 1];
      in[i] = {DType::I64, kLengthShape.data(), 1, &len, sizeof len};
    }
    // Outputs at the bucket's shape: the caller's buffer on an exact run, else staged.
    std::vector<TensorRef> out(bout.size());
    for (size_t i = 0; i < bout.size(); ++i) {
      const int64_t bytes = bytesOf(outputs_[i].dtype, bout[i]);
      out[i] = {outputs_[i].dtype, bout[i].data(), (int32_t)bout[i].size(), outputs[i].data,
                outputs[i].bytes};
      if (exact && (int64_t)outputs[i].bytes >= bytes)
        continue;
      outStage_[i].resize((size_t)bytes);
      out[i].data = outStage_[i].data();
      out[i].bytes = outStage_[i].size();
    }
    Session &s = *buckets_[(size_t)k];
    if (Status st = s.runRefs(in.data(), in.size(), out.data(), out.size()); !st.ok)
      return st;
    last_ = k;
    // Cut each output back: an axis that follows a symbol has the run's value.
    for (size_t i = 0; i < out.size(); ++i) {
      const Shape inner = s.outputShape(i);
      Shape cut = inner;
      for (size_t a = 0; a < cut.size(); ++a)
        if (int sym = symbolOf(top_.outputs((int)i), (int)a); sym >= 0)
          cut[a] = std::min(cut[a], values[(size_t)sym]);
      shapes_[i] = cut;
      if (out[i].data != outputs[i].data)
        copyBlock(static_cast<const uint8_t *>(out[i].data), inner,
                  static_cast<uint8_t *>(outputs[i].data), cut, cut,
                  dtypeSize(outputs_[i].dtype));
    }
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory staging the inputs and outputs of bucket " +
                         std::to_string(k));
  }
  return Status::success();
}

Status BucketSession::run(const std::vector<HostTensor> &inputs,
                          std::vector<HostTensor> &outputs) {
  RunGuard guard(running_);
  if (!guard.acquired)
    return Status::error(kConcurrentRun);
  std::vector<TensorRef> in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor &t = inputs[i];
    in[i] = {t.dtype, t.shape.data(), (int32_t)t.shape.size(),
             const_cast<uint8_t *>(t.data.data()), t.data.size()};
  }
  std::vector<int64_t> values;
  if (Status st = bindSymbols(top_, inputs_, in.data(), in.size(), values); !st.ok)
    return st;
  for (size_t i = 0; i < inputs.size(); ++i) // a HostTensor's bytes match its own shape
    if (bytesOf(inputs[i].dtype, inputs[i].shape) != (int64_t)inputs[i].data.size())
      return Status::error("input '" + escapeText(inputs_[i].name) + "': data has " +
                           std::to_string(inputs[i].data.size()) + " bytes, expected " +
                           std::to_string(bytesOf(inputs[i].dtype, inputs[i].shape)));
  outputs.clear();
  try {
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const TensorSpec &s = outputs_[i];
      // A data-dependent output at its bound, any other at this run's shape.
      outputs.push_back(HostTensor::zeros(
          s.dtype, s.dynamicAxis >= 0 ? s.shape : shapeAt(top_.outputs((int)i), values), s.name));
    }
  } catch (const std::bad_alloc &) {
    outputs.clear();
    return Status::error("out of memory allocating the outputs");
  }
  std::vector<TensorRef> out(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    out[i] = {outputs[i].dtype, outputs[i].shape.data(), (int32_t)outputs[i].shape.size(),
              outputs[i].data.data(), outputs[i].data.size()};
  if (Status st = executeRefs(in.data(), in.size(), out.data(), out.size()); !st.ok)
    return st;
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].shape = shapes_[i];
    outputs[i].data.resize((size_t)bytesOf(outputs[i].dtype, shapes_[i]));
  }
  return Status::success();
}

std::string BucketSession::describe() const {
  std::string s = "package: " + path_ + "\n" + backend_->describe() + describeBuckets(top_);
  for (size_t k = 0; k < buckets_.size(); ++k) // each bucket as its own session describes it
    s += "\nbucket " + std::to_string(k) + ":\n" + buckets_[k]->describe();
  if (step_)
    s += "\nstep plan:\n" + step_->describe();
  return s;
}

} // namespace

std::string describeBuckets(const plan::Plan &top) {
  auto name = [&](int sym) {
    return sym >= 0 && sym < top.symbols_size() ? escapeText(top.symbols(sym).name()) : "?";
  };
  const bool decode = isDecodePlan(top);
  std::string s = "tgc plan v" + std::to_string(top.format_version()) +
                  (decode ? " (decode: bucketed prefill, one-token step)\n" : " (bucketed)\n") +
                  "target:       " + escapeText(top.target()) + "\n" +
                  "tgc version:  " + escapeText(top.tgc_version()) + "\n" +
                  (top.precision().empty() ? "" : "precision:    " + top.precision() + "\n") +
                  "model:        " + escapeText(top.model_name()) + "\n";
  s += "symbols:     ";
  for (const plan::Symbol &sym : top.symbols())
    s += " " + escapeText(sym.name()) + " " + std::to_string(sym.min()) + ".." +
         std::to_string(sym.max());
  for (int io = 0; io < 2; ++io) {
    s += io == 0 ? "\ninputs:\n" : "outputs:\n";
    const auto &descs = io == 0 ? top.inputs() : top.outputs();
    for (int i = 0; i < descs.size(); ++i) {
      const plan::TensorDesc &d = descs[i];
      s += "  [" + std::to_string(i) + "] '" + escapeText(d.name()) + "' " +
           (isKnownDType(d.dtype()) ? dtypeName((DType)d.dtype()) : "?") + " [";
      for (int a = 0; a < d.shape_size(); ++a) {
        const int sym = symbolOf(d, a);
        s += (a ? ", " : "") +
             (sym < 0 ? std::to_string(d.shape(a))
                      : name(sym) + (io == 0 ? " " + std::to_string(top.symbols(sym).min()) +
                                                   ".." + std::to_string(d.shape(a))
                                             : ""));
      }
      s += "]";
      if (d.has_index_bound())
        s += " in [" + std::to_string(d.index_bound().lo()) + ", " +
             std::to_string(d.index_bound().hi()) + "]";
      s += "\n";
    }
  }
  s += "weights:      " + escapeText(top.weights_file()) + ", " +
       std::to_string(top.weights_bytes()) + " bytes, loaded once for every bucket\n";
  s += "arena:        " + std::to_string(top.arena_bytes()) +
       " bytes, allocated once: the largest bucket's, shared by every bucket\n";
  s += "buckets:      " + std::to_string(top.buckets_size()) +
       " (a run takes the smallest that fits; inputs padded with zeros, outputs cut back)\n";
  for (int k = 0; k < top.buckets_size(); ++k) {
    const plan::Plan &b = top.buckets(k);
    int kernels = 0;
    for (const plan::Step &st : b.steps())
      kernels += st.kind() != plan::Step::COPY;
    s += "  bucket " + std::to_string(k) + ":";
    for (int v = 0; v < b.bucket_values_size(); ++v)
      s += " " + name(v) + "=" + std::to_string(b.bucket_values(v));
    s += ", arena " + std::to_string(b.arena_bytes()) + " bytes, " +
         std::to_string(b.steps_size()) + " steps (" + std::to_string(kernels) + " kernels), " +
         escapeText(b.kernels_file()) + "\n";
  }
  return s + describeDecode(top);
}

std::string describeDecode(const plan::Plan &top) {
  if (!isDecodePlan(top))
    return "";
  const plan::DecodeInfo &di = top.decode();
  auto in = [&](int32_t i) {
    return i >= 0 && i < top.inputs_size() ? "'" + escapeText(top.inputs(i).name()) + "'"
                                           : std::string(i == -1 ? "none" : "?");
  };
  std::string s = "decode:       max_seq " + std::to_string(di.max_seq()) + ", vocab " +
                  std::to_string(di.vocab()) + "; input_ids " + in(di.input_ids()) +
                  ", attention_mask " + in(di.attention_mask()) + ", position_ids " +
                  in(di.position_ids()) + ", logits " +
                  (di.logits() >= 0 && di.logits() < top.outputs_size()
                       ? "'" + escapeText(top.outputs(di.logits()).name()) + "'"
                       : std::string("?")) +
                  "\n";
  int64_t total = 0;
  std::string lines;
  for (int k = 0; k < top.states_size(); ++k) {
    const plan::StateDesc &st = top.states(k);
    std::vector<int64_t> shape(st.shape().begin(), st.shape().end());
    const int64_t b = isKnownDType(st.dtype()) ? bytesOf((DType)st.dtype(), shape) : -1;
    total += b > 0 ? b : 0;
    lines += "  [" + std::to_string(k) + "] '" + escapeText(st.name()) + "' " +
             (isKnownDType(st.dtype()) ? dtypeName((DType)st.dtype()) : "?") + " " +
             plan::formatShape(shape) + ", " + std::to_string(b) + " bytes\n";
  }
  s += "states:       " + std::to_string(top.states_size()) + ", " + std::to_string(total) +
       " bytes in all, allocated once and shared by every plan (zeroed by each prefill)\n" + lines;
  const plan::Plan &st = top.decode_step();
  int kernels = 0;
  for (const plan::Step &x : st.steps())
    kernels += x.kind() != plan::Step::COPY;
  s += "step plan:    one token (input_ids [1, 1], position_ids [1, 1], attention_mask [1, " +
       std::to_string(di.max_seq()) + "]), arena " + std::to_string(st.arena_bytes()) +
       " bytes, " + std::to_string(st.steps_size()) + " steps (" + std::to_string(kernels) +
       " kernels), " + escapeText(st.kernels_file()) +
       (top.target().rfind("cuda:", 0) == 0 ? ", one CUDA graph captured at its first run" : "") +
       "\n";
  return s;
}

std::unique_ptr<Session> loadBucketSession(const std::string &path, const plan::Plan &top,
                                           std::unique_ptr<BucketBackend> backend, Status &st) {
  auto s = std::make_unique<BucketSession>();
  try {
    st = s->init(path, top, std::move(backend));
  } catch (const std::exception &e) {
    st = Status::error("package '" + path + "': " + e.what());
  }
  if (!st.ok)
    return nullptr;
  return s;
}

} // namespace tgc
