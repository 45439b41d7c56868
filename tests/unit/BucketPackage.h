// BucketPackage.h — unit-test helper: one bucketed package (docs/runtime.md, "Bucketed
// packages") assembled from single-shape packages compiled at each bucket's shape, as the
// compiler's bucketed compile writes it: the bucket plans nested in one format-4 top-level plan,
// their kernels files renamed per bucket, their weights concatenated into one weights.bin (each
// bucket's WEIGHT ranges moved to its part), the length inputs marked. Header-only; works for
// CPU and CUDA packages alike (it reads only plan fields).
#ifndef TGC_TESTS_UNIT_BUCKETPACKAGE_H
#define TGC_TESTS_UNIT_BUCKETPACKAGE_H

#include "runtime/schema/PlanUtil.h"
#include "runtime/schema/plan.pb.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tgc::test {

/// How to read the single-shape packages as buckets.
struct BucketSpec {
  std::vector<plan::Symbol> symbols;
  /// Per input and output (by name): each axis' symbol index, -1 for a fixed axis.
  std::vector<std::pair<std::string, std::vector<int32_t>>> dimSymbols;
  /// Inputs (by name) the runtime fills with a symbol's value: symbol index + 1 (length_of).
  std::vector<std::pair<std::string, int32_t>> lengthInputs;
};

inline std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

inline void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

inline plan::Plan readPlanFile(const std::string &dir) {
  plan::Plan p;
  EXPECT_TRUE(p.ParseFromString(readBytes(dir + "/plan.pb"))) << dir;
  return p;
}

/// Serializes `p` with its self-checksum into `dir`/plan.pb.
inline void writePlanFile(const std::string &dir, const plan::Plan &p) {
  std::string bytes;
  ASSERT_TRUE(plan::serializePlan(p, bytes));
  writeBytes(dir + "/plan.pb", bytes);
}

/// Writes into `dir` the bucketed package of the packages `bucketDirs` (bucket k at
/// `values[k]`, the last at every maximum). Their directories are left as they are.
inline void assembleBucketed(const std::string &dir, const std::vector<std::string> &bucketDirs,
                             const std::vector<std::vector<int64_t>> &values,
                             const BucketSpec &spec) {
  namespace fs = std::filesystem;
  fs::remove_all(dir);
  fs::create_directories(dir);
  plan::Plan top;
  std::string blob;
  auto symbolsOf = [&](const std::string &name) -> const std::vector<int32_t> * {
    for (const auto &[n, s] : spec.dimSymbols)
      if (n == name)
        return &s;
    return nullptr;
  };
  auto mark = [&](plan::TensorDesc &d) {
    if (const std::vector<int32_t> *s = symbolsOf(d.name()))
      for (int32_t v : *s)
        d.add_dim_symbols(v);
    for (const auto &[n, sym] : spec.lengthInputs)
      if (n == d.name())
        d.set_length_of(sym);
  };
  for (size_t k = 0; k < bucketDirs.size(); ++k) {
    plan::Plan p = readPlanFile(bucketDirs[k]);
    // This bucket's weights at the end of the shared blob (64-byte aligned).
    const int64_t base = ((int64_t)blob.size() + 63) / 64 * 64;
    blob.resize((size_t)base);
    blob += readBytes(bucketDirs[k] + "/" + p.weights_file());
    for (plan::Step &s : *p.mutable_steps())
      for (plan::BufferArg &a : *s.mutable_args())
        if (a.kind() == plan::WEIGHT)
          a.set_offset(a.offset() + base);
    for (plan::TensorDesc &d : *p.mutable_outputs())
      if (d.has_source() && d.source().kind() == plan::WEIGHT)
        d.mutable_source()->set_offset(d.source().offset() + base);
    for (std::string *file : {p.mutable_kernels_file(), p.mutable_ptx_file()}) {
      if (file->empty())
        continue;
      const size_t dot = file->find('.');
      const std::string to = file->substr(0, dot) + ".b" + std::to_string(k) + file->substr(dot);
      fs::copy_file(bucketDirs[k] + "/" + *file, dir + "/" + to,
                    fs::copy_options::overwrite_existing);
      *file = to;
    }
    for (plan::TensorDesc &d : *p.mutable_inputs())
      mark(d);
    for (plan::TensorDesc &d : *p.mutable_outputs())
      mark(d);
    for (int64_t v : values[k])
      p.add_bucket_values(v);
    p.clear_magic();
    p.clear_end_marker();
    p.clear_plan_xxh3();
    p.clear_weights_file();
    p.clear_weights_xxh3();
    top.set_arena_bytes(std::max(top.arena_bytes(), p.arena_bytes()));
    *top.add_buckets() = std::move(p);
  }
  for (plan::Plan &p : *top.mutable_buckets())
    p.set_weights_bytes((int64_t)blob.size());
  const plan::Plan &largest = top.buckets(top.buckets_size() - 1);
  top.set_magic(plan::kPlanMagic);
  top.set_format_version(plan::kPlanFormatVersionBucketed);
  top.set_target(largest.target());
  top.set_tgc_version(largest.tgc_version());
  top.set_model_name(largest.model_name());
  top.set_precision(largest.precision());
  top.set_cpu_signature(largest.cpu_signature());
  top.set_alignment(largest.alignment());
  for (const plan::TensorDesc &d : largest.inputs())
    if (d.length_of() == 0)
      *top.add_inputs() = d;
  for (const plan::TensorDesc &d : largest.outputs()) {
    plan::TensorDesc &o = *top.add_outputs() = d;
    o.clear_source();
    o.clear_count();
  }
  for (const plan::Symbol &s : spec.symbols)
    *top.add_symbols() = s;
  top.set_weights_file("weights.bin");
  top.set_weights_bytes((int64_t)blob.size());
  top.set_weights_xxh3(plan::xxh3(blob.data(), blob.size()));
  top.set_end_marker(plan::kPlanMagic);
  writeBytes(dir + "/weights.bin", blob);
  writePlanFile(dir, top);
}

} // namespace tgc::test

#endif // TGC_TESTS_UNIT_BUCKETPACKAGE_H
