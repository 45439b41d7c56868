// MergeBuckets.cpp — bucket packages → one bucketed package (see MergeBuckets.h).
#include "codegen/common/MergeBuckets.h"

#include "codegen/common/PackageUtil.h"
#include "runtime/schema/PlanUtil.h"
#include "runtime/Text.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

namespace tgc::codegen {

namespace {

constexpr const char *kWho = "bucketed package";

/// A maximal byte run of one bucket's weights that its plan reads.
struct Chunk {
  size_t bucket = 0;
  int64_t start = 0, bytes = 0;
  int64_t offset = -1; ///< where it lies in the merged blob
};

/// Calls `f` on every WEIGHT range plan `p` reads: step arguments and output sources.
void forEachWeightArg(plan::Plan &p, const std::function<void(plan::BufferArg &)> &f) {
  for (plan::Step &s : *p.mutable_steps())
    for (plan::BufferArg &a : *s.mutable_args())
      if (a.kind() == plan::WEIGHT)
        f(a);
  for (plan::TensorDesc &d : *p.mutable_outputs())
    if (d.has_source() && d.source().kind() == plan::WEIGHT)
      f(*d.mutable_source());
}

/// "kernels.so" → "kernels.step.so".
std::string stepFileName(const std::string &name) {
  const size_t dot = name.find('.');
  return dot == std::string::npos ? name + ".step" : name.substr(0, dot) + ".step" + name.substr(dot);
}

/// "kernels.so" → "kernels.b3.so".
std::string bucketFileName(const std::string &name, size_t k) {
  const size_t dot = name.find('.');
  const std::string tag = ".b" + std::to_string(k);
  return dot == std::string::npos ? name + tag : name.substr(0, dot) + tag + name.substr(dot);
}

llvm::Error moveFile(const std::string &from, const std::string &to) {
  if (std::error_code ec = llvm::sys::fs::rename(from, to))
    return backendError(kWho, "cannot move " + from + " to " + to + ": " + ec.message());
  return llvm::Error::success();
}

/// Checks that descriptor `d` of bucket `values` keeps `ref`'s shape (the largest bucket's)
/// except on symbolic axes, which hold the bucket's value.
llvm::Error checkShape(const plan::TensorDesc &d, const plan::TensorDesc &ref,
                       const std::vector<int64_t> &values, const std::string &what) {
  if (d.shape_size() != ref.shape_size() || d.dtype() != ref.dtype())
    return backendError(kWho, what + " differs in type or rank between buckets");
  for (int a = 0; a < d.shape_size(); ++a) {
    const int sym = a < ref.dim_symbols_size() ? ref.dim_symbols(a) : -1;
    const int64_t want = sym >= 0 && (size_t)sym < values.size() ? values[(size_t)sym] : ref.shape(a);
    if (d.shape(a) != want)
      return backendError(kWho, what + " axis " + std::to_string(a) + " is " +
                                    std::to_string(d.shape(a)) + " in a bucket where " +
                                    std::to_string(want) +
                                    " was expected (an axis that varies with the bucket but was "
                                    "not traced to an input's dim)");
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<PackageStats>
mergeBuckets(const std::string &dir, const std::vector<BucketPackage> &bucketsIn,
             const std::vector<plan::Symbol> &symbols, const BucketPackage *step,
             const std::function<void(plan::Plan &)> &finish) {
  const size_t n = bucketsIn.size();
  if (n == 0)
    return backendError(kWho, "no buckets");
  // The step plan (decode packages) goes through the weights and kernels like one more bucket.
  std::vector<BucketPackage> buckets = bucketsIn;
  if (step)
    buckets.push_back(*step);
  const size_t all = buckets.size();
  std::vector<plan::Plan> plans(all);
  std::vector<std::string> blobs(all);
  for (size_t k = 0; k < all; ++k) {
    std::string bytes;
    if (!readFile(buckets[k].dir + "/plan.pb", bytes) || !plans[k].ParseFromString(bytes))
      return backendError(kWho, "cannot read the plan of bucket " + std::to_string(k));
    if (!readFile(buckets[k].dir + "/" + plans[k].weights_file(), blobs[k]) ||
        (int64_t)blobs[k].size() != plans[k].weights_bytes())
      return backendError(kWho, "cannot read the weights of bucket " + std::to_string(k));
    for (const plan::Step &s : plans[k].steps())
      if (s.kind() == plan::Step::LOOP) // its body package would need merging too
        return backendError(kWho, s.label() + " runs on the device (its trip count is known "
                                  "only at run time), which bucketed and decode packages do "
                                  "not support yet; compile one shape (no --input-shape "
                                  "ranges, no --decode)");
  }

  // The weight runs each bucket reads, merged where they overlap.
  std::vector<Chunk> chunks;
  std::vector<std::vector<size_t>> chunksOf(all); // indices into chunks, by start
  for (size_t k = 0; k < all; ++k) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    bool inside = true;
    forEachWeightArg(plans[k], [&](plan::BufferArg &a) {
      inside &= a.offset() >= 0 && a.bytes() >= 0 &&
                a.offset() + a.bytes() <= (int64_t)blobs[k].size();
      if (a.bytes() > 0)
        ranges.push_back({a.offset(), a.offset() + a.bytes()});
    });
    if (!inside)
      return backendError(kWho, "bucket " + std::to_string(k) + " reads outside its weights");
    std::sort(ranges.begin(), ranges.end());
    for (const auto &[lo, hi] : ranges) {
      if (!chunksOf[k].empty()) {
        Chunk &last = chunks[chunksOf[k].back()];
        if (lo < last.start + last.bytes) {
          last.bytes = std::max(last.bytes, hi - last.start);
          continue;
        }
      }
      chunksOf[k].push_back(chunks.size());
      chunks.push_back({k, lo, hi - lo});
    }
  }

  // Largest first; a run equal to the start of one already stored is not stored again.
  std::vector<size_t> order(chunks.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return chunks[a].bytes > chunks[b].bytes; });
  std::string blob;
  std::multimap<uint64_t, size_t> byHead; // hash of the first (up to) 64 bytes → stored chunk
  for (size_t i : order) {
    Chunk &c = chunks[i];
    const char *p = blobs[c.bucket].data() + c.start;
    const uint64_t head = plan::xxh3(p, (size_t)std::min<int64_t>(c.bytes, 64));
    auto [lo, hi] = byHead.equal_range(head);
    for (auto it = lo; it != hi && c.offset < 0; ++it) {
      const Chunk &s = chunks[it->second];
      if (s.bytes >= c.bytes && std::memcmp(blob.data() + s.offset, p, (size_t)c.bytes) == 0)
        c.offset = s.offset;
    }
    if (c.offset >= 0)
      continue;
    c.offset = ((int64_t)blob.size() + plan::kAlignment - 1) / plan::kAlignment * plan::kAlignment;
    blob.resize((size_t)c.offset);
    blob.append(p, (size_t)c.bytes);
    byHead.insert({head, i});
  }
  const std::string wfile = "weights.bin";
  if (!writeFile(dir + "/" + wfile, blob.data(), blob.size()))
    return backendError(kWho, "cannot write " + dir + "/" + wfile);

  // Bucket plans: weights into the merged blob, kernels under per-bucket names.
  plan::Plan top;
  const plan::Plan &largest = plans[n - 1];
  PackageStats stats;
  for (size_t k = 0; k < all; ++k) {
    plan::Plan &p = plans[k];
    const std::vector<size_t> &mine = chunksOf[k];
    const bool isStep = k == n;
    forEachWeightArg(p, [&](plan::BufferArg &a) {
      auto it = std::upper_bound(mine.begin(), mine.end(), a.offset(),
                                 [&](int64_t off, size_t c) { return off < chunks[c].start; });
      if (it == mine.begin()) // a zero-byte range before every chunk: any offset is in bounds
        return a.set_offset(0);
      const Chunk &c = chunks[*(it - 1)];
      a.set_offset(c.offset + (a.offset() - c.start));
    });
    for (int i = 0; i < p.inputs_size() && !isStep; ++i)
      if (p.inputs(i).length_of() == 0) {
        if (i >= largest.inputs_size())
          return backendError(kWho, "bucket " + std::to_string(k) + " has an extra input");
        if (auto e = checkShape(p.inputs(i), largest.inputs(i), buckets[k].values,
                                "input '" + escapeText(p.inputs(i).name()) + "'"))
          return std::move(e);
      }
    if (p.outputs_size() != largest.outputs_size())
      return backendError(kWho, "the buckets have different numbers of outputs");
    for (int i = 0; i < p.outputs_size() && !isStep; ++i)
      if (auto e = checkShape(p.outputs(i), largest.outputs(i), buckets[k].values,
                              "output '" + escapeText(p.outputs(i).name()) + "'"))
        return std::move(e);
    for (std::string *file : {p.mutable_kernels_file(), p.mutable_ptx_file()}) {
      if (file->empty())
        continue;
      const std::string to = isStep ? stepFileName(*file) : bucketFileName(*file, k);
      if (auto e = moveFile(buckets[k].dir + "/" + *file, dir + "/" + to))
        return std::move(e);
      *file = to;
    }
    for (const char *source : {"kernels.cpp", "kernels.cu"}) // the kernels' source, for readers
      if (llvm::sys::fs::exists(buckets[k].dir + "/" + source))
        if (auto e = moveFile(buckets[k].dir + "/" + source,
                              dir + "/" + (isStep ? stepFileName(source) : bucketFileName(source, k))))
          return std::move(e);
    p.clear_magic();
    p.clear_end_marker();
    p.clear_plan_xxh3();
    p.clear_weights_file();
    p.clear_weights_xxh3();
    p.set_weights_bytes((int64_t)blob.size());
    for (int64_t v : buckets[k].values)
      p.add_bucket_values(v);
    top.set_arena_bytes(std::max(top.arena_bytes(), p.arena_bytes()));
    stats.kernels = std::max<int64_t>(stats.kernels, p.steps_size());
  }

  // The top-level plan: the interface at the maxima, the symbols, the shared weights.
  top.set_magic(plan::kPlanMagic);
  top.set_format_version(plan::kPlanFormatVersionBucketed);
  top.set_target(largest.target());
  top.set_tgc_version(largest.tgc_version());
  top.set_model_name(largest.model_name());
  top.set_model_hash(largest.model_hash());
  top.set_precision(largest.precision());
  top.set_cpu_signature(largest.cpu_signature());
  top.set_alignment(largest.alignment());
  *top.mutable_rule_hits() = largest.rule_hits();
  for (const plan::TensorDesc &d : largest.inputs())
    if (d.length_of() == 0)
      *top.add_inputs() = d;
  for (const plan::TensorDesc &d : largest.outputs()) {
    plan::TensorDesc &o = *top.add_outputs() = d;
    o.clear_source();
    o.clear_count();
  }
  for (const plan::Symbol &s : symbols)
    *top.add_symbols() = s;
  // A decode package's states (the step's; the prefill plans' are the same) live at the top.
  if (step) {
    *top.mutable_states() = plans[n].states();
    for (plan::Plan &p : plans)
      p.clear_states();
  }
  top.set_weights_file(wfile);
  top.set_weights_bytes((int64_t)blob.size());
  top.set_weights_xxh3(plan::xxh3(blob.data(), blob.size()));
  if (step) {
    *top.mutable_decode_step() = std::move(plans[n]);
    plans.pop_back();
  }
  for (plan::Plan &p : plans)
    *top.add_buckets() = std::move(p);
  top.set_end_marker(plan::kPlanMagic);
  if (finish)
    finish(top);

  std::string bytes;
  if (!plan::serializePlan(top, bytes) || !writeFile(dir + "/plan.pb", bytes.data(), bytes.size()))
    return backendError(kWho, "cannot write " + dir + "/plan.pb");
  std::string text = plan::formatPlan(top);
  for (int k = 0; k < top.buckets_size(); ++k) {
    text += "\nbucket " + std::to_string(k) + ":";
    for (int s = 0; s < top.buckets(k).bucket_values_size(); ++s)
      text += " " + top.symbols(s).name() + "=" + std::to_string(top.buckets(k).bucket_values(s));
    text += "\n" + plan::formatPlan(top.buckets(k));
  }
  if (top.has_decode_step())
    text += "\ndecode step:\n" + plan::formatPlan(top.decode_step());
  if (!writeFile(dir + "/plan.txt", text.data(), text.size()))
    return backendError(kWho, "cannot write " + dir + "/plan.txt");
  for (const BucketPackage &b : buckets)
    if (std::error_code ec = llvm::sys::fs::remove_directories(b.dir))
      return backendError(kWho, "cannot remove " + b.dir + ": " + ec.message());
  stats.arenaBytes = top.arena_bytes();
  stats.weightBytes = top.weights_bytes();
  return stats;
}

} // namespace tgc::codegen
