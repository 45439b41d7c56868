// BucketPackage.h — unit-test helper: one bucketed package (docs/runtime.md, "Bucketed
// packages") assembled from single-shape packages compiled at each bucket's shape, as the
// compiler's bucketed compile writes it: the bucket plans nested in one format-4 top-level plan,
// their kernels files renamed per bucket, their weights concatenated into one weights.bin (each
// bucket's WEIGHT ranges moved to its part), the length inputs marked. Header-only; works for
// CPU and CUDA packages alike (it reads only plan fields). Also the small model the bucket tests
// compile at each shape, and the check of one run of it.
#ifndef TGC_TESTS_UNIT_BUCKETPACKAGE_H
#define TGC_TESTS_UNIT_BUCKETPACKAGE_H

#include "runtime/Session.h"
#include "runtime/schema/PlanUtil.h"
#include "runtime/schema/plan.pb.h"

#include <gtest/gtest.h>

#include <cstring>
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


// ---- The small model both bucket tests compile at each bucket's shape (bucket_session_test on
// the CPU, cuda_bucket_test on a GPU): y = x * w with bucket k's own weight w (so a run's y
// tells which bucket ran), m2 = m + m, and len_out = the length input the runtime fills with
// the run's seq. Buckets (batch, seq): (1, 4), (2, 4), (2, 8) over batch 1..2, seq 1..8.

inline constexpr int64_t kHidden = 80; // > 64 elements: the weight lands in weights.bin
inline const std::vector<std::vector<int64_t>> kBuckets = {{1, 4}, {2, 4}, {2, 8}}; // (batch, seq)

/// Bucket k's weight: element j is (k + 1) + j / 64 (each bucket's differ; exact in 6 decimals).
inline float weightOf(size_t k, int64_t j) { return float(k + 1) + float(j) / 64.f; }

/// y = x * w (w per bucket), m2 = m + m, len_out = the length input the runtime fills.
inline std::string modelIr(size_t k, int64_t b, int64_t s) {
  std::string w = "[";
  for (int64_t j = 0; j < kHidden; ++j)
    w += (j ? ", " : "") + std::to_string(weightOf(k, j));
  w += "]";
  const std::string x = "tensor<" + std::to_string(b) + "x" + std::to_string(s) + "x" +
                        std::to_string(kHidden) + "xf32>";
  const std::string m = "tensor<" + std::to_string(b) + "x" + std::to_string(s) + "xf32>";
  return "func.func @main(%x: " + x + " {tg.name = \"x\"}, %m: " + m +
         " {tg.name = \"m\"}, %n: tensor<1xi64> {tg.name = \"seq_len\"}) -> (" + x +
         " {tg.name = \"y\"}, " + m + " {tg.name = \"m2\"}, tensor<1xi64> {tg.name = "
         "\"len_out\"}) {\n"
         "  %w = tg.constant dense<" + w + "> : tensor<" + std::to_string(kHidden) + "xf32>\n"
         "  %0 = tg.mul %x, %w : " + x + ", tensor<" + std::to_string(kHidden) + "xf32> -> " + x +
         "\n  %1 = tg.add %m, %m : " + m + ", " + m + " -> " + m + "\n"
         "  return %0, %1, %n : " + x + ", " + m + ", tensor<1xi64>\n}\n";
}

inline BucketSpec bucketSpec() {
  BucketSpec spec;
  plan::Symbol batch, seq;
  batch.set_name("batch"), batch.set_min(1), batch.set_max(2);
  seq.set_name("seq"), seq.set_min(1), seq.set_max(8);
  spec.symbols = {batch, seq};
  spec.dimSymbols = {{"x", {0, 1, -1}}, {"y", {0, 1, -1}}, {"m", {0, 1}}, {"m2", {0, 1}}};
  spec.lengthInputs = {{"seq_len", 2}}; // symbol 1 (seq) + 1
  return spec;
}

inline HostTensor f32(std::vector<int64_t> shape, uint32_t seed) {
  HostTensor t = HostTensor::zeros(DType::F32, shape, "");
  float *p = reinterpret_cast<float *>(t.data.data());
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = float((i * 7 + seed) % 23) - 11.f;
  return t;
}

inline const float *floats(const HostTensor &t) { return reinterpret_cast<const float *>(t.data.data()); }

/// Runs (batch, seq) and checks every output against the model, computed with bucket
/// `bucket`'s weight: the bucket the run must take.
inline void expectBucketRun(Session &s, int64_t b, int64_t q, size_t bucket) {
  SCOPED_TRACE("run batch " + std::to_string(b) + " seq " + std::to_string(q));
  std::vector<HostTensor> out;
  HostTensor x = f32({b, q, kHidden}, 3), m = f32({b, q}, 5);
  tgc::Status st = s.run({x, m}, out);
  ASSERT_TRUE(st.ok) << st.message;
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{b, q, kHidden}));
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{b, q}));
  EXPECT_EQ(out[2].shape, (std::vector<int64_t>{1}));
  ASSERT_EQ(out[0].data.size(), size_t(b * q * kHidden * 4));
  for (int64_t i = 0; i < b * q * kHidden; ++i)
    ASSERT_EQ(floats(out[0])[i], floats(x)[i] * weightOf(bucket, i % kHidden)) << "y[" << i << "]";
  for (int64_t i = 0; i < b * q; ++i)
    ASSERT_EQ(floats(out[1])[i], 2 * floats(m)[i]) << "m2[" << i << "]";
  int64_t len = 0;
  std::memcpy(&len, out[2].data.data(), 8);
  EXPECT_EQ(len, q) << "the length input holds the run's seq";
  EXPECT_EQ(s.outputShape(0), (std::vector<int64_t>{b, q, kHidden}));
}

} // namespace tgc::test

#endif // TGC_TESTS_UNIT_BUCKETPACKAGE_H
