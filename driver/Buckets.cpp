// Buckets.cpp — symbols, ranges and bucket values of a bucketed compile (see Buckets.h).
#include "driver/Buckets.h"

#include "runtime/Text.h"

#include <algorithm>

namespace tgc {

namespace {

llvm::Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", msg.c_str());
}

std::string range(int64_t lo, int64_t hi) {
  return std::to_string(lo) + ".." + std::to_string(hi);
}

std::string quoted(const std::string &s) { return "'" + escapeText(s) + "'"; }

/// Every symbol's values checked (ascending, inside the range, ending at max) or defaulted.
llvm::Error chooseValues(BucketPlan &plan, const std::vector<bool> &batchLike,
                         const std::map<std::string, std::vector<int64_t>> &given) {
  for (const auto &entry : given)
    if (std::none_of(plan.symbols.begin(), plan.symbols.end(),
                     [&](const BucketSymbol &s) { return s.name == entry.first; })) {
      const std::string &name = entry.first;
      std::string known;
      for (const BucketSymbol &s : plan.symbols)
        known += (known.empty() ? "" : ", ") + s.name;
      return fail("--buckets names " + quoted(name) + ", which is not a varying dim (symbols: " +
                  known + ")");
    }
  for (size_t i = 0; i < plan.symbols.size(); ++i) {
    BucketSymbol &s = plan.symbols[i];
    auto it = given.find(s.name);
    if (it == given.end()) {
      s.values = defaultBucketValues(s.min, s.max, batchLike[i]);
      continue;
    }
    s.values = it->second;
    const std::string what = "--buckets " + quoted(s.name) + ": ";
    for (size_t k = 0; k < s.values.size(); ++k) {
      if (s.values[k] < s.min || s.values[k] > s.max)
        return fail(what + std::to_string(s.values[k]) + " is outside the range " +
                    range(s.min, s.max));
      if (k > 0 && s.values[k] <= s.values[k - 1])
        return fail(what + "values must ascend");
    }
    if (s.values.empty() || s.values.back() != s.max)
      return fail(what + "the last value must be the range's max, " + std::to_string(s.max) +
                  " (a run of that size needs a bucket)");
  }
  return llvm::Error::success();
}

} // namespace

std::vector<int64_t> defaultBucketValues(int64_t min, int64_t max, bool batchLike) {
  std::vector<int64_t> v;
  int64_t p = 1;
  if (batchLike) {
    v.push_back(min);
    while (p <= min)
      p *= 2;
  } else {
    p = 16;
    while (p < min)
      p *= 2;
  }
  for (; p < max; p *= 2)
    v.push_back(p);
  if (v.empty() || v.back() != max)
    v.push_back(max);
  return v;
}

std::map<std::string, std::vector<int64_t>>
BucketPlan::shapesOf(size_t k, const std::map<std::string, std::vector<int64_t>> &fixed) const {
  std::map<std::string, std::vector<int64_t>> out = fixed;
  for (const auto &[input, syms] : dimSymbols) {
    std::vector<int64_t> shape = maxShapes.at(input);
    for (size_t a = 0; a < syms.size(); ++a)
      if (syms[a] >= 0)
        shape[a] = buckets[k][(size_t)syms[a]];
    out[input] = shape;
  }
  return out;
}

llvm::Expected<BucketPlan> planBuckets(const CompileOptions &options,
                                       const std::vector<GraphInputDims> &inputs) {
  BucketPlan plan;
  std::vector<bool> batchLike;
  auto symbolOf = [&](const std::string &name) -> int64_t {
    for (size_t i = 0; i < plan.symbols.size(); ++i)
      if (plan.symbols[i].name == name)
        return (int64_t)i;
    return -1;
  };
  auto declOf = [&](const std::string &name) -> const GraphInputDims * {
    for (const GraphInputDims &d : inputs)
      if (d.name == name)
        return &d;
    return nullptr;
  };
  // The ranges given: each varying dim becomes (or joins) a symbol.
  for (const auto &[input, ranges] : options.inputRanges) {
    const GraphInputDims *decl = declOf(input);
    if (!decl)
      return fail("--input-shape names " + quoted(input) + ", which is not a graph input");
    if (options.inputShapes.count(input))
      return fail("--input-shape names input " + quoted(input) + " twice");
    if (decl->hasShape && decl->dims.size() != ranges.size())
      return fail("graph input " + quoted(input) + " has rank " +
                  std::to_string(decl->dims.size()) + " but the given shape has rank " +
                  std::to_string(ranges.size()));
    std::vector<int64_t> syms, maxShape;
    for (size_t a = 0; a < ranges.size(); ++a) {
      const DimRange r = ranges[a];
      const std::string where = "input " + quoted(input) + " dim " + std::to_string(a);
      if (r.min < 1 || r.min > r.max)
        return fail(where + ": range " + range(r.min, r.max) + " is empty or not positive");
      const bool declared = decl->hasShape && decl->dims[a] >= 0;
      if (declared && (r.min != decl->dims[a] || r.max != decl->dims[a]))
        return fail(where + " is fixed at " + std::to_string(decl->dims[a]) +
                    " in the model; it cannot take " + range(r.min, r.max) +
                    " (export the model with this axis dynamic)");
      maxShape.push_back(r.max);
      if (r.min == r.max) {
        syms.push_back(-1);
        continue;
      }
      std::string param = decl->hasShape ? decl->params[a] : "";
      if (auto n = options.dimNames.find(input);
          n != options.dimNames.end() && a < n->second.size() && !n->second[a].empty())
        param = n->second[a];
      const std::string name = param.empty() ? input + "." + std::to_string(a) : param;
      int64_t s = symbolOf(name);
      if (s < 0) {
        s = (int64_t)plan.symbols.size();
        plan.symbols.push_back({name, r.min, r.max, {}});
        batchLike.push_back(a == 0);
      } else if (plan.symbols[(size_t)s].min != r.min || plan.symbols[(size_t)s].max != r.max) {
        const BucketSymbol &o = plan.symbols[(size_t)s];
        return fail(where + " is " + quoted(name) + ", given " + range(r.min, r.max) +
                    " here and " + range(o.min, o.max) + " elsewhere");
      }
      syms.push_back(s);
    }
    plan.dimSymbols[input] = syms;
    plan.maxShapes[input] = maxShape;
  }
  if (plan.symbols.empty())
    return fail("--input-shape: no dim is given as a range (A..B)");
  // Inputs not given whose named dims are symbols follow them (attention_mask with input_ids).
  for (const GraphInputDims &d : inputs) {
    if (options.inputRanges.count(d.name) || options.boundInputs.count(d.name) || !d.hasShape)
      continue;
    auto fixed = options.inputShapes.find(d.name);
    std::vector<int64_t> syms, maxShape;
    bool varies = false, complete = true;
    for (size_t a = 0; a < d.dims.size(); ++a) {
      const int64_t s = d.params[a].empty() ? -1 : symbolOf(d.params[a]);
      if (s >= 0 && fixed != options.inputShapes.end())
        return fail("input " + quoted(d.name) + " dim " + std::to_string(a) + " is " +
                    quoted(d.params[a]) + ", which varies over " +
                    range(plan.symbols[(size_t)s].min, plan.symbols[(size_t)s].max) +
                    "; give it as a range too, or leave the input out of --input-shape");
      varies |= s >= 0;
      complete &= s >= 0 || d.dims[a] >= 0;
      syms.push_back(s);
      maxShape.push_back(s >= 0 ? plan.symbols[(size_t)s].max : d.dims[a]);
    }
    if (varies && complete && fixed == options.inputShapes.end()) {
      plan.dimSymbols[d.name] = syms;
      plan.maxShapes[d.name] = maxShape;
    }
  }
  if (auto e = chooseValues(plan, batchLike, options.bucketValues))
    return std::move(e);
  // Every combination, smallest (fewest positions) first.
  size_t count = 1;
  for (const BucketSymbol &s : plan.symbols) {
    count *= s.values.size();
    if (count > kMaxBuckets)
      return fail("the ranges make more than " + std::to_string(kMaxBuckets) +
                  " buckets; choose fewer values with --buckets SYMBOL=V1,V2,...");
  }
  for (size_t k = 0; k < count; ++k) {
    std::vector<int64_t> b;
    size_t rest = k;
    for (const BucketSymbol &s : plan.symbols) {
      b.push_back(s.values[rest % s.values.size()]);
      rest /= s.values.size();
    }
    plan.buckets.push_back(b);
  }
  auto size = [](const std::vector<int64_t> &b) {
    int64_t n = 1;
    for (int64_t v : b)
      n *= v;
    return n;
  };
  std::stable_sort(plan.buckets.begin(), plan.buckets.end(),
                   [&](const auto &x, const auto &y) { return size(x) < size(y); });
  return plan;
}

} // namespace tgc
