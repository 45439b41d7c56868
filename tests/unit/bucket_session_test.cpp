// bucket_session_test.cpp — bucketed CPU packages (docs/runtime.md, "Bucketed packages"): one
// package of three buckets, each compiled from tg IR at its own shape with its own weights (so a
// run's outputs tell which bucket ran), assembled as the compiler writes them
// (BucketPackage.h); bucket choice, zero padding, cut outputs, the length input, the exact-shape
// path, the C API, refusals of bad shapes and of corrupt packages, one arena at the maximum, and
// a data-dependent output (exact shapes only).
#include "codegen/cpu/CpuBackend.h"
#include "runtime/Session.h"
#include "runtime/schema/PlanUtil.h"
#include "runtime/tgc_runtime.h"

#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "tests/unit/IrPackage.h"
#include "tests/unit/BucketPackage.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace fs = std::filesystem;
using tgc::DType;
using tgc::HostTensor;
using namespace tgc::test;

namespace {

std::string tmpDir() {
  const char *t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

std::string compileIr(const std::string &ir, const std::string &name) {
  return writeCpuPackageFromIr(ir, tmpDir() + "/" + name, "bucketed", tmpDir() + "/kcache");
}

class BucketedPackage : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    std::vector<std::string> dirs;
    for (size_t k = 0; k < kBuckets.size(); ++k) {
      dirs.push_back(compileIr(modelIr(k, kBuckets[k][0], kBuckets[k][1]),
                               "bucket" + std::to_string(k) + ".tgpkg"));
      if (dirs.back().empty())
        return;
    }
    dir_ = new std::string(tmpDir() + "/bucketed.tgpkg");
    tgc::test::assembleBucketed(*dir_, dirs, kBuckets, bucketSpec());
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override { ASSERT_TRUE(dir_) << "the bucket packages did not compile"; }

  static std::unique_ptr<tgc::Session> load(const std::string &d) {
    tgc::Status st;
    auto s = tgc::Session::load(d, st, 1);
    EXPECT_TRUE(s) << st.message;
    return s;
  }
  static std::string loadError(const std::string &d) {
    tgc::Status st;
    auto s = tgc::Session::load(d, st, 1);
    EXPECT_FALSE(s) << "the package loaded but should have been refused";
    return st.message;
  }
  /// A fresh copy of the package to corrupt.
  static std::string copy(const std::string &name) {
    const std::string d = tmpDir() + "/" + name;
    fs::remove_all(d);
    fs::copy(*dir_, d);
    return d;
  }
  static std::string *dir_;
};
std::string *BucketedPackage::dir_ = nullptr;

TEST_F(BucketedPackage, ReportsItsRangesAndOneArena) {
  auto s = load(*dir_);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->inputs().size(), 2u) << "the length input is not the caller's";
  const tgc::TensorSpec &x = s->inputs()[0];
  EXPECT_EQ(x.shape, (std::vector<int64_t>{2, 8, kHidden}));
  EXPECT_EQ(x.minShape, (std::vector<int64_t>{1, 1, kHidden}));
  EXPECT_EQ(x.dimSymbols, (std::vector<std::string>{"batch", "seq", ""}));
  EXPECT_EQ(s->outputs()[1].dimSymbols, (std::vector<std::string>{"batch", "seq"}));
  const tgc::plan::Plan top = tgc::test::readPlanFile(*dir_);
  int64_t maxArena = 0;
  for (const auto &b : top.buckets())
    maxArena = std::max(maxArena, b.arena_bytes());
  ASSERT_GT(maxArena, top.buckets(0).arena_bytes()) << "the buckets' arenas should differ";
  const std::string d = s->describe();
  EXPECT_NE(d.find("arena:        " + std::to_string(maxArena) +
                   " bytes, allocated once: the largest bucket's, shared by every bucket"),
            std::string::npos) << d;
  EXPECT_NE(d.find("[0] 'x' f32 [batch 1..2, seq 1..8, 80]"), std::string::npos) << d;
  EXPECT_NE(d.find("[0] 'y' f32 [batch, seq, 80]"), std::string::npos) << d;
  EXPECT_NE(d.find("arena: " + std::to_string(maxArena) + " bytes in host memory (one allocation"),
            std::string::npos) << d;
  EXPECT_NE(d.find("bucket 1: batch=2 seq=4, arena " +
                   std::to_string(top.buckets(1).arena_bytes()) + " bytes"),
            std::string::npos) << d;
}

TEST_F(BucketedPackage, PicksTheSmallestBucketPadsAndCuts) {
  auto s = load(*dir_);
  ASSERT_TRUE(s);
  expectBucketRun(*s, 1, 3, 0); // padded into (1, 4)
  expectBucketRun(*s, 2, 3, 1); // (2, 4) before (2, 8)
  expectBucketRun(*s, 1, 5, 2); // only (2, 8) has seq 8
  expectBucketRun(*s, 1, 1, 0);
  expectBucketRun(*s, 2, 8, 2); // exact shapes: no padding
  expectBucketRun(*s, 1, 4, 0);
  expectBucketRun(*s, 2, 4, 1);
  expectBucketRun(*s, 1, 3, 0); // back to a bucket run before, after others used the arena
}

// runRefs (the C API's path) takes output buffers at the run's shape or at the maxima; either
// way the output is written row-major at its actual shape from the start.
TEST_F(BucketedPackage, CApiRunsAnyShapeInRange) {
  char *err = nullptr;
  tgc_session *s = tgc_session_load(dir_->c_str(), 1, &err);
  ASSERT_TRUE(s) << err;
  int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  ASSERT_EQ(tgc_session_input_dims_range(s, 0, lo, hi), 1);
  EXPECT_EQ(std::vector<int64_t>(lo, lo + 3), (std::vector<int64_t>{1, 1, kHidden}));
  EXPECT_EQ(std::vector<int64_t>(hi, hi + 3), (std::vector<int64_t>{2, 8, kHidden}));
  EXPECT_EQ(tgc_session_input_dims_range(s, 2, lo, hi), -1);
  const char *sym = nullptr;
  ASSERT_EQ(tgc_session_dim_symbol(s, 0, 0, 1, &sym), 1);
  EXPECT_STREQ(sym, "seq");
  EXPECT_EQ(tgc_session_dim_symbol(s, 0, 0, 2, &sym), 0);

  HostTensor x = f32({1, 3, kHidden}, 1), m = f32({1, 3}, 2);
  const int64_t xd[3] = {1, 3, kHidden}, md[2] = {1, 3}, yd[3] = {2, 8, kHidden}, m2d[2] = {1, 3},
                ld[1] = {1};
  std::vector<float> y(2 * 8 * kHidden, -1.f), m2(3, -1.f);
  int64_t len = 0;
  tgc_tensor in[2] = {{1, 3, xd, x.data.data(), x.data.size()},
                      {1, 2, md, m.data.data(), m.data.size()}};
  tgc_tensor out[3] = {{1, 3, yd, y.data(), y.size() * 4}, // at the maxima
                       {1, 2, m2d, m2.data(), m2.size() * 4}, // at the run's shape
                       {7, 1, ld, &len, 8}};
  ASSERT_EQ(tgc_session_run(s, in, 2, out, 3, &err), 0) << err;
  int64_t shape[3] = {0, 0, 0};
  EXPECT_EQ(tgc_session_output_shape(s, 0, shape, nullptr), 0);
  EXPECT_EQ(std::vector<int64_t>(shape, shape + 3), (std::vector<int64_t>{1, 3, kHidden}));
  for (int64_t i = 0; i < 3 * kHidden; ++i)
    ASSERT_EQ(y[i], floats(x)[i] * weightOf(0, i % kHidden)) << i;
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(m2[i], 2 * floats(m)[i]);
  EXPECT_EQ(len, 3);

  // A buffer too small for the run's shape is refused.
  tgc_tensor small[3] = {out[0], out[1], out[2]};
  small[1].bytes = 8;
  EXPECT_EQ(tgc_session_run(s, in, 2, small, 3, &err), -1);
  ASSERT_TRUE(err);
  EXPECT_NE(std::string(err).find("output 'm2': buffer has 8 bytes, needs 12"), std::string::npos)
      << err;
  tgc_free_error(err);
  tgc_session_free(s);
}

TEST_F(BucketedPackage, RefusesShapesOutOfRange) {
  auto s = load(*dir_);
  ASSERT_TRUE(s);
  auto error = [&](std::vector<HostTensor> in) {
    std::vector<HostTensor> out;
    tgc::Status st = s->run(in, out);
    EXPECT_FALSE(st.ok);
    return st.message;
  };
  EXPECT_EQ(error({f32({1, 9, kHidden}, 0), f32({1, 9}, 0)}),
            "input 'x' dim 1 (seq): 9 is outside 1..8");
  EXPECT_EQ(error({f32({3, 2, kHidden}, 0), f32({3, 2}, 0)}),
            "input 'x' dim 0 (batch): 3 is outside 1..2");
  EXPECT_EQ(error({f32({1, 2, kHidden + 1}, 0), f32({1, 2}, 0)}),
            "input 'x' dim 2: 81 is not 80 (expected f32 [1..2, 1..8, 80])");
  EXPECT_EQ(error({f32({1, 3, kHidden}, 0), f32({1, 4}, 0)}),
            "input 'm' dim 1 (seq): 4, but input 'x' dim 1 gives seq = 3 (one symbol, one value "
            "per run)");
  EXPECT_EQ(error({f32({3, kHidden}, 0), f32({1, 3}, 0)}),
            "input 'x': expected f32 [1..2, 1..8, 80], got f32 [3, 80]");
  HostTensor wrong = HostTensor::zeros(DType::I64, {1, 3}, "");
  EXPECT_EQ(error({f32({1, 3, kHidden}, 0), wrong}),
            "input 'm': expected f32 [1..2, 1..8], got i64 [1, 3]");
  EXPECT_EQ(error({f32({1, 3, kHidden}, 0)}), "expected 2 inputs, got 1");
  expectBucketRun(*s, 1, 2, 0); // the session still runs
}

TEST_F(BucketedPackage, RefusesACorruptBucket) {
  { // a step range outside the shared arena
    const std::string d = copy("bad_step.tgpkg");
    tgc::plan::Plan p = tgc::test::readPlanFile(d);
    tgc::plan::Plan &b = *p.mutable_buckets(1);
    for (tgc::plan::Step &st : *b.mutable_steps())
      for (tgc::plan::BufferArg &a : *st.mutable_args())
        if (a.kind() == tgc::plan::ARENA || a.kind() == tgc::plan::WEIGHT)
          a.set_offset(p.arena_bytes() + p.weights_bytes());
    tgc::test::writePlanFile(d, p);
    const std::string e = loadError(d);
    EXPECT_NE(e.find("bucket 1: step"), std::string::npos) << e;
    EXPECT_NE(e.find("lies outside the"), std::string::npos) << e;
  }
  { // a missing kernels file
    const std::string d = copy("no_kernels.tgpkg");
    fs::remove(d + "/kernels.b2.so");
    const std::string e = loadError(d);
    EXPECT_NE(e.find("bucket 2: kernels.b2.so cannot be read"), std::string::npos) << e;
  }
  { // a corrupt kernels file
    const std::string d = copy("bad_kernels.tgpkg");
    std::string k = tgc::test::readBytes(d + "/kernels.b0.so");
    k[k.size() / 2] ^= 1;
    tgc::test::writeBytes(d + "/kernels.b0.so", k);
    const std::string e = loadError(d);
    EXPECT_NE(e.find("bucket 0: kernels.b0.so checksum mismatch"), std::string::npos) << e;
  }
  { // format 4 without buckets, format 3 with them
    const std::string d = copy("no_buckets.tgpkg");
    tgc::plan::Plan p = tgc::test::readPlanFile(d);
    p.clear_buckets();
    tgc::test::writePlanFile(d, p);
    EXPECT_NE(loadError(d).find("format 4 (bucketed) but holds no buckets"), std::string::npos);
    p = tgc::test::readPlanFile(*dir_);
    p.set_format_version(tgc::plan::kPlanFormatVersion);
    tgc::test::writePlanFile(d, p);
    EXPECT_NE(loadError(d).find("format 3 but holds 3 buckets"), std::string::npos);
  }
  { // a bucket's arena larger than the shared one; a bucket value outside its range
    const std::string d = copy("big_arena.tgpkg");
    tgc::plan::Plan p = tgc::test::readPlanFile(d);
    p.mutable_buckets(0)->set_arena_bytes(p.arena_bytes() + 64);
    tgc::test::writePlanFile(d, p);
    EXPECT_NE(loadError(d).find("bucket 0: arena of"), std::string::npos);
    p = tgc::test::readPlanFile(*dir_);
    p.mutable_buckets(0)->set_bucket_values(1, 9);
    tgc::test::writePlanFile(d, p);
    EXPECT_NE(loadError(d).find("bucket 0: its value 9 of 'seq' is outside 1..8"),
              std::string::npos);
  }
  { // no bucket at the maxima; an input axis whose symbol is unknown
    const std::string d = copy("no_max.tgpkg");
    tgc::plan::Plan p = tgc::test::readPlanFile(d);
    p.mutable_buckets()->RemoveLast();
    tgc::test::writePlanFile(d, p);
    EXPECT_NE(loadError(d).find("no bucket is at every symbol's maximum"), std::string::npos);
    p = tgc::test::readPlanFile(*dir_);
    p.mutable_inputs(0)->set_dim_symbols(1, 5);
    tgc::test::writePlanFile(d, p);
    EXPECT_NE(loadError(d).find("input 'x' axis 1 names symbol 5"), std::string::npos);
  }
  { // a corrupt shared weights file
    const std::string d = copy("bad_weights.tgpkg");
    std::string w = tgc::test::readBytes(d + "/weights.bin");
    w[0] ^= 1;
    tgc::test::writeBytes(d + "/weights.bin", w);
    EXPECT_NE(loadError(d).find("weights.bin checksum mismatch"), std::string::npos);
  }
}

// A data-dependent output (Unique along the padded axis) works at a bucket's exact shape, and a
// padded run, whose padding could be counted, is refused with what to do.
TEST(BucketedDataDependent, RunsAtABucketsShapeAndRefusesPadding) {
  auto ir = [](int64_t s) {
    const std::string x = "tensor<2x" + std::to_string(s) + "xf32>",
                      i = "tensor<" + std::to_string(s) + "xi64>";
    return "func.func @main(%x: " + x + " {tg.name = \"x\"}) -> (" + x +
           " {tg.name = \"u\"}, tensor<i64>) attributes {tg.dynamic_outputs = [0, 1]} {\n"
           "  %0:5 = tg.unique %x {axis = 1 : i64} : " + x + " -> " + x + ", " + i + ", " + i +
           ", " + i + ", tensor<i64>\n  return %0#0, %0#4 : " + x + ", tensor<i64>\n}\n";
  };
  const std::vector<std::vector<int64_t>> values = {{4}, {8}};
  std::vector<std::string> dirs;
  for (int64_t s : {4, 8}) {
    dirs.push_back(compileIr(ir(s), "unique" + std::to_string(s) + ".tgpkg"));
    ASSERT_FALSE(dirs.back().empty());
  }
  BucketSpec spec;
  tgc::plan::Symbol seq;
  seq.set_name("seq"), seq.set_min(1), seq.set_max(8);
  spec.symbols = {seq};
  spec.dimSymbols = {{"x", {-1, 0}}, {"u", {-1, 0}}};
  const std::string dir = tmpDir() + "/unique_bucketed.tgpkg";
  assembleBucketed(dir, dirs, values, spec);
  tgc::Status st;
  auto s = tgc::Session::load(dir, st, 1);
  ASSERT_TRUE(s) << st.message;
  EXPECT_EQ(s->outputs()[0].dynamicAxis, 1);
  HostTensor x = HostTensor::zeros(DType::F32, {2, 4}, "x");
  const float cols[4] = {1, 2, 1, 3}; // columns (1,1), (2,2), (1,1), (3,3): three distinct
  for (int r = 0; r < 2; ++r)
    std::memcpy(x.data.data() + r * 16, cols, 16);
  std::vector<HostTensor> out;
  st = s->run({x}, out);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s->outputShape(0), (std::vector<int64_t>{2, 3}));
  st = s->run({HostTensor::zeros(DType::F32, {2, 3}, "x")}, out);
  EXPECT_FALSE(st.ok);
  EXPECT_EQ(st.message, "output 'u' has a data-dependent extent, which a padded run would count "
                        "wrongly: run it at a bucket's exact shape");
}

} // namespace
