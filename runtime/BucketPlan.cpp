// BucketPlan.cpp — a bucketed plan's checks, symbol binding, bucket choice and block copy (see
// BucketPlan.h).
#include "runtime/BucketPlan.h"

#include "runtime/PackageFiles.h"
#include "runtime/SessionBase.h"
#include "runtime/Text.h"
#include "runtime/schema/PlanUtil.h"

#include <cstring>

namespace tgc {

namespace {

std::string descName(const plan::TensorDesc &d, bool input) {
  return std::string(input ? "input" : "output") + " '" + escapeText(d.name()) + "'";
}

/// A top-level descriptor's dim_symbols: none, or one per axis, each -1 or a symbol whose
/// maximum the axis holds.
Status checkTopDesc(const plan::Plan &top, const plan::TensorDesc &d, const std::string &what) {
  if (d.dim_symbols_size() != 0 && d.dim_symbols_size() != d.shape_size())
    return Status::error(what + " has " + std::to_string(d.dim_symbols_size()) +
                         " dim symbols for " + std::to_string(d.shape_size()) + " axes");
  for (int a = 0; a < d.dim_symbols_size(); ++a) {
    const int s = d.dim_symbols(a);
    if (s < -1 || s >= top.symbols_size())
      return Status::error(what + " axis " + std::to_string(a) + " names symbol " +
                           std::to_string(s) + " (the package has " +
                           std::to_string(top.symbols_size()) + ")");
    if (s >= 0 && d.shape(a) != top.symbols(s).max())
      return Status::error(what + " axis " + std::to_string(a) + " is " +
                           std::to_string(d.shape(a)) + ", not the maximum " +
                           std::to_string(top.symbols(s).max()) + " of its symbol '" +
                           escapeText(top.symbols(s).name()) + "'");
  }
  if (d.length_of() != 0)
    return Status::error(what + " is a length input, which only bucket plans hold");
  return Status::success();
}

/// Bucket descriptor `b` is top-level descriptor `t` at the bucket's `values`.
Status checkBucketDesc(const plan::TensorDesc &b, const plan::TensorDesc &t,
                       const std::vector<int64_t> &values, const std::string &what) {
  if (b.name() != t.name() || b.dtype() != t.dtype() || b.shape_size() != t.shape_size())
    return Status::error(what + " differs from the package's ('" + escapeText(t.name()) +
                         "') in name, dtype or rank");
  if (b.dim_symbols_size() != 0 && b.dim_symbols_size() != t.dim_symbols_size())
    return Status::error(what + " follows other symbols than the package's");
  for (int a = 0; a < b.dim_symbols_size(); ++a)
    if (b.dim_symbols(a) != t.dim_symbols(a))
      return Status::error(what + " axis " + std::to_string(a) +
                           " follows another symbol than the package's");
  const std::vector<int64_t> want = shapeAt(t, values);
  if (std::vector<int64_t>(b.shape().begin(), b.shape().end()) != want)
    return Status::error(what + " has shape " + plan::formatShape({b.shape().begin(),
                                                                   b.shape().end()}) +
                         ", the bucket's values give " + plan::formatShape(want));
  return Status::success();
}

Status checkBucket(const plan::Plan &top, const plan::Plan &b, const std::string &where) {
  const int nsym = top.symbols_size();
  if (b.buckets_size() != 0 || b.symbols_size() != 0)
    return Status::error(where + ": a bucket plan holds no buckets or symbols of its own");
  if (b.bucket_values_size() != nsym)
    return Status::error(where + ": has " + std::to_string(b.bucket_values_size()) +
                         " symbol values, the package has " + std::to_string(nsym) + " symbols");
  std::vector<int64_t> values(b.bucket_values().begin(), b.bucket_values().end());
  for (int s = 0; s < nsym; ++s)
    if (values[s] < top.symbols(s).min() || values[s] > top.symbols(s).max())
      return Status::error(where + ": its value " + std::to_string(values[s]) + " of '" +
                           escapeText(top.symbols(s).name()) + "' is outside " +
                           std::to_string(top.symbols(s).min()) + ".." +
                           std::to_string(top.symbols(s).max()));
  if (b.target() != top.target())
    return Status::error(where + ": target '" + escapeText(b.target()) +
                         "' differs from the package's '" + escapeText(top.target()) + "'");
  if (!b.weights_file().empty() || b.weights_bytes() != top.weights_bytes())
    return Status::error(where + ": a bucket reads the package's weights (" +
                         std::to_string(top.weights_bytes()) + " bytes), it has " +
                         (b.weights_file().empty() ? "" : "a weights file and ") +
                         std::to_string(b.weights_bytes()));
  if (b.arena_bytes() < 0 || b.arena_bytes() > top.arena_bytes())
    return Status::error(where + ": arena of " + std::to_string(b.arena_bytes()) +
                         " bytes does not fit the shared arena of " +
                         std::to_string(top.arena_bytes()));
  // Inputs: the caller's, then the length inputs.
  if (b.inputs_size() < top.inputs_size())
    return Status::error(where + ": has " + std::to_string(b.inputs_size()) +
                         " inputs, the package " + std::to_string(top.inputs_size()));
  for (int i = 0; i < b.inputs_size(); ++i) {
    const plan::TensorDesc &d = b.inputs(i);
    const std::string what = where + " " + descName(d, true);
    if (i < top.inputs_size()) {
      if (d.length_of() != 0)
        return Status::error(what + ": a length input before the package's inputs");
      if (Status st = checkBucketDesc(d, top.inputs(i), values, what); !st.ok)
        return st;
      continue;
    }
    if (d.length_of() < 1 || d.length_of() > nsym)
      return Status::error(what + ": an extra input must be a length input (length_of in 1.." +
                           std::to_string(nsym) + "), it has " + std::to_string(d.length_of()));
    if (d.dtype() != (int32_t)DType::I64 || d.shape_size() != 1 || d.shape(0) != 1)
      return Status::error(what + ": a length input is i64 [1]");
  }
  if (b.outputs_size() != top.outputs_size())
    return Status::error(where + ": has " + std::to_string(b.outputs_size()) +
                         " outputs, the package " + std::to_string(top.outputs_size()));
  for (int i = 0; i < b.outputs_size(); ++i)
    if (Status st = checkBucketDesc(b.outputs(i), top.outputs(i), values,
                                    where + " " + descName(b.outputs(i), false));
        !st.ok)
      return st;
  return Status::success();
}

} // namespace

int symbolOf(const plan::TensorDesc &d, int axis) {
  return axis < d.dim_symbols_size() ? d.dim_symbols(axis) : -1;
}

std::vector<int64_t> shapeAt(const plan::TensorDesc &d, const std::vector<int64_t> &values) {
  std::vector<int64_t> shape(d.shape().begin(), d.shape().end());
  for (int a = 0; a < d.shape_size(); ++a)
    if (int s = symbolOf(d, a); s >= 0 && (size_t)s < values.size())
      shape[a] = values[s];
  return shape;
}

Status checkBucketedPlan(const plan::Plan &top, const std::string &pre) {
  if (top.symbols_size() == 0)
    return Status::error(pre + "a bucketed plan names no symbols");
  if (top.steps_size() != 0)
    return Status::error(pre + "a bucketed plan's top level has no steps (its buckets do)");
  if (top.arena_bytes() < 0 || top.arena_bytes() > kMaxBufferBytes ||
      top.weights_bytes() < 0 || top.weights_bytes() > kMaxBufferBytes)
    return Status::error(pre + "arena or weights size is invalid");
  for (const plan::Symbol &s : top.symbols())
    if (s.name().empty() || s.min() < 0 || s.min() > s.max() || s.max() > kMaxBufferBytes)
      return Status::error(pre + "symbol '" + escapeText(s.name()) + "' has an invalid range " +
                           std::to_string(s.min()) + ".." + std::to_string(s.max()));
  std::vector<bool> bound(top.symbols_size(), false);
  for (int io = 0; io < 2; ++io)
    for (const plan::TensorDesc &d : io == 0 ? top.inputs() : top.outputs()) {
      if (Status st = checkTopDesc(top, d, pre + descName(d, io == 0)); !st.ok)
        return st;
      for (int a = 0; io == 0 && a < d.dim_symbols_size(); ++a)
        if (d.dim_symbols(a) >= 0)
          bound[d.dim_symbols(a)] = true;
    }
  for (int s = 0; s < top.symbols_size(); ++s)
    if (!bound[s])
      return Status::error(pre + "symbol '" + escapeText(top.symbols(s).name()) +
                           "' is the dim of no input (a run could not set it)");
  bool coversMax = false;
  for (int k = 0; k < top.buckets_size(); ++k) {
    const plan::Plan &b = top.buckets(k);
    if (Status st = checkBucket(top, b, pre + "bucket " + std::to_string(k)); !st.ok)
      return st;
    bool atMax = true;
    for (int s = 0; s < top.symbols_size(); ++s)
      atMax = atMax && b.bucket_values(s) == top.symbols(s).max();
    coversMax = coversMax || atMax;
  }
  if (!coversMax)
    return Status::error(pre + "no bucket is at every symbol's maximum (runs there would have "
                               "no bucket)");
  return Status::success();
}

void fillBucketSpecs(const plan::Plan &top, std::vector<TensorSpec> &inputs,
                     std::vector<TensorSpec> &outputs) {
  for (int io = 0; io < 2; ++io) {
    auto &specs = io == 0 ? inputs : outputs;
    const auto &descs = io == 0 ? top.inputs() : top.outputs();
    for (size_t i = 0; i < specs.size() && (int)i < descs.size(); ++i) {
      const plan::TensorDesc &d = descs[(int)i];
      TensorSpec &s = specs[i];
      s.minShape = s.shape;
      s.dimSymbols.assign(s.shape.size(), "");
      for (int a = 0; a < d.shape_size(); ++a)
        if (int k = symbolOf(d, a); k >= 0) {
          s.minShape[a] = top.symbols(k).min();
          s.dimSymbols[a] = top.symbols(k).name();
        }
    }
  }
}

std::string rangeString(const TensorSpec &s) {
  std::string r = "[";
  for (size_t a = 0; a < s.shape.size(); ++a) {
    r += a ? ", " : "";
    if (a < s.minShape.size() && s.minShape[a] != s.shape[a])
      r += std::to_string(s.minShape[a]) + "..";
    r += std::to_string(s.shape[a]);
  }
  return r + "]";
}

Status bindSymbols(const plan::Plan &top, const std::vector<TensorSpec> &specs,
                   const TensorRef *inputs, size_t n, std::vector<int64_t> &values) {
  if (n != specs.size())
    return Status::error("expected " + std::to_string(specs.size()) + " inputs, got " +
                         std::to_string(n));
  if (n > 0 && !inputs)
    return Status::error("input array is null");
  values.assign(top.symbols_size(), -1);
  std::vector<std::string> boundBy(top.symbols_size());
  for (size_t i = 0; i < n; ++i) {
    const TensorRef &r = inputs[i];
    const TensorSpec &s = specs[i];
    const plan::TensorDesc &d = top.inputs((int)i);
    const std::string name = "input '" + escapeText(s.name) + "'";
    const bool rankOk = r.rank >= 0 && (size_t)r.rank == s.shape.size() && (r.rank == 0 || r.dims);
    if (r.dtype != s.dtype || !rankOk) {
      std::string got = r.rank < 0 || (r.rank > 0 && !r.dims) ? std::string("an invalid shape")
                        : r.rank > 64 ? "rank " + std::to_string(r.rank)
                                      : std::string(isKnownDType((int32_t)r.dtype)
                                                        ? dtypeName(r.dtype)
                                                        : "dtype(" +
                                                              std::to_string((int)r.dtype) + ")") +
                                            " " + shapeString(r.dims, (size_t)r.rank);
      return Status::error(name + ": expected " + dtypeName(s.dtype) + " " + rangeString(s) +
                           ", got " + got);
    }
    for (int a = 0; a < r.rank; ++a) {
      const int k = symbolOf(d, a);
      const int64_t v = r.dims[a];
      const std::string dim = name + " dim " + std::to_string(a);
      if (k < 0) {
        if (v != s.shape[a])
          return Status::error(dim + ": " + std::to_string(v) + " is not " +
                               std::to_string(s.shape[a]) + " (expected " + dtypeName(s.dtype) +
                               " " + rangeString(s) + ")");
        continue;
      }
      const plan::Symbol &sym = top.symbols(k);
      const std::string symName = escapeText(sym.name());
      if (v < sym.min() || v > sym.max())
        return Status::error(dim + " (" + symName + "): " + std::to_string(v) + " is outside " +
                             std::to_string(sym.min()) + ".." + std::to_string(sym.max()));
      if (values[k] < 0) {
        values[k] = v;
        boundBy[k] = dim;
      } else if (values[k] != v) {
        return Status::error(dim + " (" + symName + "): " + std::to_string(v) + ", but " +
                             boundBy[k] + " gives " + symName + " = " +
                             std::to_string(values[k]) + " (one symbol, one value per run)");
      }
    }
  }
  return Status::success();
}

int pickBucket(const plan::Plan &top, const std::vector<int64_t> &values) {
  int best = -1;
  long double bestSize = 0;
  for (int k = 0; k < top.buckets_size(); ++k) {
    const plan::Plan &b = top.buckets(k);
    bool fits = b.bucket_values_size() == (int)values.size();
    long double size = 1;
    for (int s = 0; fits && s < b.bucket_values_size(); ++s) {
      fits = b.bucket_values(s) >= values[s];
      size *= (long double)b.bucket_values(s);
    }
    if (fits && (best < 0 || size < bestSize))
      best = k, bestSize = size;
  }
  return best;
}

void copyBlock(const uint8_t *src, const std::vector<int64_t> &srcShape, uint8_t *dst,
               const std::vector<int64_t> &dstShape, const std::vector<int64_t> &block,
               size_t elem) {
  const size_t rank = block.size();
  for (int64_t b : block)
    if (b <= 0)
      return;
  if (rank == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  // Strides in bytes; the last axis is one contiguous run of block.back() elements.
  std::vector<int64_t> ss(rank), ds(rank);
  ss[rank - 1] = ds[rank - 1] = (int64_t)elem;
  for (size_t a = rank - 1; a > 0; --a) {
    ss[a - 1] = ss[a] * srcShape[a];
    ds[a - 1] = ds[a] * dstShape[a];
  }
  const size_t run = (size_t)(block[rank - 1] * (int64_t)elem);
  std::vector<int64_t> idx(rank, 0);
  while (true) {
    int64_t so = 0, d = 0;
    for (size_t a = 0; a + 1 < rank; ++a)
      so += idx[a] * ss[a], d += idx[a] * ds[a];
    std::memcpy(dst + d, src + so, run);
    size_t a = rank - 1;
    while (a > 0) { // next index over the outer axes
      if (++idx[a - 1] < block[a - 1])
        break;
      idx[a - 1] = 0;
      --a;
    }
    if (a == 0)
      return;
  }
}

} // namespace tgc
