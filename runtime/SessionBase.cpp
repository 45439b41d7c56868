// SessionBase.cpp — the interface and argument checks both sessions share (see SessionBase.h).
#include "runtime/SessionBase.h"

#include "runtime/IndexBounds.h"
#include "runtime/PackageFiles.h"
#include "runtime/Text.h"

#include <algorithm>
#include <cstring>

namespace tgc {

namespace {

std::string specString(DType t, const int64_t *dims, size_t rank) {
  return std::string(isKnownDType((int32_t)t) ? dtypeName(t)
                                              : "dtype(" + std::to_string((int)t) + ")") +
         " " + shapeString(dims, rank);
}

} // namespace

std::string shapeString(const int64_t *dims, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

Status SessionBase::runRefs(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                            size_t numOutputs) {
  RunGuard guard(running_);
  if (!guard.acquired)
    return Status::error(kConcurrentRun);
  Status st = checkSpecs(inputs, numInputs, true);
  if (!st.ok)
    return st;
  if (!(st = checkSpecs(outputs, numOutputs, false)).ok)
    return st;
  return executeRefs(inputs, numInputs, outputs, numOutputs);
}

Status SessionBase::readInterface(const plan::Plan &p, const std::string &pre) {
  for (int io = 0; io < 2; ++io) {
    const auto &descs = io == 0 ? p.inputs() : p.outputs();
    auto &specs = io == 0 ? inputs_ : outputs_;
    auto &sizes = io == 0 ? inBytes_ : outBytes_;
    for (const plan::TensorDesc &d : descs) {
      const std::string what =
          std::string(io == 0 ? "input" : "output") + " '" + escapeText(d.name()) + "'";
      if (!isKnownDType(d.dtype()))
        return Status::error(pre + what + " has unknown dtype " + std::to_string(d.dtype()));
      TensorSpec s{d.name(), static_cast<DType>(d.dtype()), {d.shape().begin(), d.shape().end()}};
      if (std::string why = io == 0 ? takeIndexBound(d, s) : ""; !why.empty())
        return Status::error(pre + what + " " + why);
      const int64_t b = bytesOf(s.dtype, s.shape);
      if (b < 0)
        return Status::error(pre + what + " has an invalid shape " +
                             shapeString(s.shape.data(), s.shape.size()));
      if (io == 1 && d.has_count()) {
        s.dynamicAxis = d.dynamic_axis();
        dynamic_.push_back(specs.size());
      }
      if (io == 1)
        shapes_.push_back(s.shape);
      specs.push_back(std::move(s));
      sizes.push_back(b);
    }
  }
  return Status::success();
}

void SessionBase::finishDynamic(const TensorRef *outputs, const int64_t *counts) {
  for (size_t k = 0; k < dynamic_.size(); ++k) {
    const size_t i = dynamic_[k];
    const TensorSpec &s = outputs_[i];
    const size_t a = (size_t)s.dynamicAxis;
    std::vector<int64_t> &shape = shapes_[i];
    shape = s.shape;
    shape[a] = std::max<int64_t>(0, std::min<int64_t>(counts[k], s.shape[a]));
    // Rows of `inner` bytes: outer blocks of L rows, of which the first n are kept.
    int64_t outer = 1, inner = bytesOf(s.dtype, {});
    for (size_t d = 0; d < a; ++d)
      outer *= s.shape[d];
    for (size_t d = a + 1; d < s.shape.size(); ++d)
      inner *= s.shape[d];
    const int64_t L = s.shape[a], n = shape[a];
    auto *base = static_cast<uint8_t *>(outputs[i].data);
    if (n == L || !base)
      continue;
    for (int64_t o = 1; o < outer; ++o) // block 0 is in place; later ones move down
      std::memmove(base + o * n * inner, base + o * L * inner, (size_t)(n * inner));
  }
}

void SessionBase::trimOutputs(std::vector<HostTensor> &outputs) const {
  for (size_t i : dynamic_) {
    if (i >= outputs.size())
      continue;
    outputs[i].shape = shapes_[i];
    outputs[i].data.resize((size_t)bytesOf(outputs[i].dtype, shapes_[i]));
  }
}

Status SessionBase::checkSpecs(const TensorRef *refs, size_t n, bool isInput) const {
  const auto &specs = isInput ? inputs_ : outputs_;
  const auto &sizes = isInput ? inBytes_ : outBytes_;
  const char *what = isInput ? "input" : "output";
  if (n != specs.size())
    return Status::error("expected " + std::to_string(specs.size()) + " " + what + "s, got " +
                         std::to_string(n));
  if (n > 0 && !refs)
    return Status::error(std::string(what) + " array is null");
  for (size_t i = 0; i < n; ++i) {
    const TensorRef &r = refs[i];
    const TensorSpec &s = specs[i];
    bool same = r.dtype == s.dtype && r.rank >= 0 && (size_t)r.rank == s.shape.size() &&
                (r.rank == 0 || r.dims);
    for (size_t d = 0; same && d < s.shape.size(); ++d)
      same = r.dims[d] == s.shape[d];
    const std::string name = std::string(what) + " '" + escapeText(s.name) + "'";
    if (!same) {
      std::string got = r.rank < 0 || (r.rank > 0 && !r.dims) ? std::string("an invalid shape")
                        : r.rank > 64 ? "rank " + std::to_string(r.rank)
                                      : specString(r.dtype, r.dims, (size_t)r.rank);
      return Status::error(name + ": expected " +
                           specString(s.dtype, s.shape.data(), s.shape.size()) + ", got " + got);
    }
    if (sizes[i] > 0 && !r.data)
      return Status::error(name + ": data pointer is null");
    if ((int64_t)r.bytes < sizes[i])
      return Status::error(name + ": buffer has " + std::to_string(r.bytes) + " bytes, needs " +
                           std::to_string(sizes[i]));
  }
  return isInput ? checkIndexBounds(inputs_, refs, n) : Status::success();
}

} // namespace tgc
