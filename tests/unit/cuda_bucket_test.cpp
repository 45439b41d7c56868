// cuda_bucket_test.cpp — bucketed CUDA packages (docs/runtime.md, "Bucketed packages"): the small
// model of BucketPackage.h NVRTC-compiled at each bucket's shape and assembled into one package.
// Without a GPU: every bucket plan is validated as `tgc inspect` does (describeCudaPackageWithoutGpu)
// and a corrupt bucket is refused naming it. On a GPU (skipped without one): one context, weights
// and arena for all buckets, each run at any in-range shape through the smallest bucket (its
// weight shows in the output), padding, cut outputs, the length input, switching buckets back
// and forth, and output buffers at the maxima through runRefs. Decode packages (DecodePackage.h):
// the step plan and STATE ranges validated without a GPU; on a GPU, steps on changing tokens
// replay the step plan's graph on each one's inputs, and greedy generation.
#include "codegen/cuda/CudaBackend.h"
#include "compiler/dialect/TgDialect.h"
#include "runtime/Session.h"
#include "runtime/cuda/CudaSession.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "tests/unit/BucketPackage.h"
#include "tests/unit/DecodePackage.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

using namespace tgc;
using namespace tgc::test;
namespace fs = std::filesystem;

namespace {

std::string tmpDir() {
  const char *t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

/// The GPU's arch when there is one (the cubin then loads without the PTX), else sm_90.
std::string arch() {
  std::string why, a;
  return cuda::cudaDeviceAvailable(why, a) ? a : "sm_90";
}

/// Bucket k's CUDA package; "" with a test failure on error.
std::string compileBucket(size_t k) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(
      modelIr(k, kBuckets[k][0], kBuckets[k][1]), &ctx);
  EXPECT_TRUE(module) << "the IR does not parse";
  if (!module)
    return "";
  const std::string dir = tmpDir() + "/cuda_bucket" + std::to_string(k) + ".tgpkg";
  PackageInfo info;
  info.target = "cuda:" + arch();
  info.tgcVersion = "test";
  info.modelName = "bucketed";
  auto stats = writeCudaPackage(*module, dir, info, "");
  EXPECT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  return stats ? dir : "";
}

class CudaBucketed : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    std::vector<std::string> dirs;
    for (size_t k = 0; k < kBuckets.size(); ++k)
      if (dirs.push_back(compileBucket(k)); dirs.back().empty())
        return;
    dir_ = new std::string(tmpDir() + "/cuda_bucketed.tgpkg");
    assembleBucketed(*dir_, dirs, kBuckets, bucketSpec());
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override { ASSERT_TRUE(dir_) << "the bucket packages did not compile"; }
  static std::string *dir_;
};
std::string *CudaBucketed::dir_ = nullptr;

// No GPU needed: what `tgc inspect` shows on a machine without one, every bucket validated.
TEST_F(CudaBucketed, EveryBucketIsValidatedWithoutAGpu) {
  Status st;
  const std::string text = cuda::describeCudaPackageWithoutGpu(*dir_, "test", st);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_NE(text.find("buckets:      3"), std::string::npos) << text;
  EXPECT_NE(text.find("bucket 2: batch=2 seq=8"), std::string::npos) << text;
  EXPECT_NE(text.find("kernels.b1.cubin"), std::string::npos) << text;

  const std::string bad = tmpDir() + "/cuda_bucketed_bad.tgpkg";
  fs::remove_all(bad);
  fs::copy(*dir_, bad);
  std::string ptx = readBytes(bad + "/kernels.b1.ptx");
  ASSERT_FALSE(ptx.empty());
  ptx[ptx.size() / 2] ^= 1;
  writeBytes(bad + "/kernels.b1.ptx", ptx);
  cuda::describeCudaPackageWithoutGpu(bad, "test", st);
  EXPECT_FALSE(st.ok);
  EXPECT_NE(st.message.find("bucket 1: kernels.b1.ptx checksum mismatch"), std::string::npos)
      << st.message;
}

TEST_F(CudaBucketed, RunsAnyShapeInRangeOnOneArena) {
  std::string why, a;
  if (!cuda::cudaDeviceAvailable(why, a))
    GTEST_SKIP() << "no usable GPU: " << why;
  Status st;
  auto s = Session::load(*dir_, st);
  ASSERT_TRUE(s) << st.message;
  const std::string d = s->describe();
  EXPECT_NE(d.find("one allocation each, one context and stream for every bucket"),
            std::string::npos) << d;
  expectBucketRun(*s, 1, 3, 0); // padded into (1, 4); the bucket's first run tunes and captures
  expectBucketRun(*s, 2, 3, 1);
  expectBucketRun(*s, 1, 5, 2);
  expectBucketRun(*s, 2, 8, 2); // exact: the caller's buffers directly
  expectBucketRun(*s, 1, 4, 0);
  expectBucketRun(*s, 1, 3, 0); // replayed graph after other buckets used the arena
  expectBucketRun(*s, 2, 4, 1);

  // runRefs with outputs declared at the maxima: written at the run's shape from the start.
  HostTensor x = f32({1, 2, kHidden}, 9), m = f32({1, 2}, 4);
  std::vector<HostTensor> out = {HostTensor::zeros(DType::F32, {2, 8, kHidden}),
                                 HostTensor::zeros(DType::F32, {2, 8}),
                                 HostTensor::zeros(DType::I64, {1})};
  std::vector<TensorRef> in = {{DType::F32, x.shape.data(), 3, x.data.data(), x.data.size()},
                               {DType::F32, m.shape.data(), 2, m.data.data(), m.data.size()}};
  std::vector<TensorRef> refs;
  for (HostTensor &o : out)
    refs.push_back({o.dtype, o.shape.data(), (int32_t)o.shape.size(), o.data.data(),
                    o.data.size()});
  st = s->runRefs(in.data(), in.size(), refs.data(), refs.size());
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_EQ(s->outputShape(0), (std::vector<int64_t>{1, 2, kHidden}));
  for (int64_t i = 0; i < 2 * kHidden; ++i)
    ASSERT_EQ(floats(out[0])[i], floats(x)[i] * weightOf(0, i % kHidden)) << i;
  int64_t len = 0;
  std::memcpy(&len, out[2].data.data(), 8);
  EXPECT_EQ(len, 2);

  std::vector<HostTensor> o;
  st = s->run({f32({1, 9, kHidden}, 0), f32({1, 9}, 0)}, o);
  EXPECT_EQ(st.message, "input 'x' dim 1 (seq): 9 is outside 1..8");
}

} // namespace

namespace {

/// The counter model of DecodePackage.h at prompt length `s` (mask `t`) as a CUDA package.
std::string compileCounter(int64_t s, int64_t t, float (*inc)(int64_t), const std::string &name,
                           bool stateInLogits = true) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(counterIr(s, t, inc, stateInLogits), &ctx);
  EXPECT_TRUE(module) << "the IR does not parse";
  if (!module)
    return "";
  const std::string dir = tmpDir() + "/" + name;
  PackageInfo info;
  info.target = "cuda:" + arch();
  info.tgcVersion = "test";
  info.modelName = "counter";
  auto stats = writeCudaPackage(*module, dir, info, "");
  EXPECT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  return stats ? dir : "";
}

// A decode package (docs/runtime.md, "Decode packages") on CUDA without a GPU: the prefill
// buckets and the step plan validated with their STATE ranges, as `tgc inspect` does; a STATE
// range outside its state refused naming the step plan.
TEST(CudaDecode, StepPlanAndStatesAreValidatedWithoutAGpu) {
  const std::string step = compileCounter(1, kMaxSeq, stepInc, "cuda_counter_step.tgpkg");
  const std::string p4 = compileCounter(4, 4, prefillInc, "cuda_counter_p4.tgpkg");
  const std::string p8 = compileCounter(8, 8, prefillInc, "cuda_counter_p8.tgpkg");
  ASSERT_FALSE(step.empty() || p4.empty() || p8.empty());
  const std::string dir = tmpDir() + "/cuda_decode.tgpkg";
  assembleDecode(dir, {p4, p8}, {4, 8}, step, /*inPlace=*/true);
  Status st;
  std::string text = cuda::describeCudaPackageWithoutGpu(dir, "test", st);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_NE(text.find("tgc plan v5 (decode"), std::string::npos) << text;
  EXPECT_NE(text.find("'past' f32 [1, 8], 32 bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("one CUDA graph captured at its first run"), std::string::npos) << text;
  EXPECT_NE(text.find("\nstep plan:\n"), std::string::npos) << text;
  EXPECT_NE(text.find("STATE[0]+0:32"), std::string::npos) << text;
  plan::Plan p = readPlanFile(dir);
  bool moved = false;
  for (plan::Step &s : *p.mutable_decode_step()->mutable_steps())
    for (plan::BufferArg &a : *s.mutable_args())
      if (a.kind() == plan::STATE && !moved)
        a.set_offset(16), moved = true;
  ASSERT_TRUE(moved) << "the step plan has no STATE argument";
  writePlanFile(dir, p);
  cuda::describeCudaPackageWithoutGpu(dir, "test", st);
  ASSERT_FALSE(st.ok);
  EXPECT_NE(st.message.find("step plan: step"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("lies outside state 0 (32 bytes)"), std::string::npos) << st.message;
}

// On a GPU (skipped without one): prefill through a padded bucket, then steps whose token
// changes every call replay the step plan's one CUDA graph on the new inputs each time
// (logits = E[token]², so each step's logits name the token it read), and greedy generation
// follows the table: id (t + 1) % 8 after t.
TEST(CudaDecode, StepsReplayTheGraphOnNewTokens) {
  std::string why, a;
  if (!cuda::cudaDeviceAvailable(why, a))
    GTEST_SKIP() << "no usable GPU: " << why;
  const std::string step = compileCounter(1, kMaxSeq, stepInc, "cuda_sq_step.tgpkg", false);
  const std::string p4 = compileCounter(4, 4, prefillInc, "cuda_sq_p4.tgpkg", false);
  const std::string p8 = compileCounter(8, 8, prefillInc, "cuda_sq_p8.tgpkg", false);
  ASSERT_FALSE(step.empty() || p4.empty() || p8.empty());
  const std::string dir = tmpDir() + "/cuda_sq_decode.tgpkg";
  assembleDecode(dir, {p4, p8}, {4, 8}, step, /*inPlace=*/true);
  Status st;
  auto s = Session::load(dir, st);
  ASSERT_TRUE(s) << st.message;
  auto squares = [](int64_t token) {
    std::vector<float> l(kVocab);
    for (int64_t v = 0; v < kVocab; ++v)
      l[(size_t)v] = tableOf(token, v) * tableOf(token, v);
    return l;
  };
  std::vector<float> logits;
  ASSERT_TRUE((st = s->prefill({1, 2, 3}, logits)).ok) << st.message;
  EXPECT_EQ(logits, squares(3));
  for (int64_t k = 0; k < 6; ++k) {
    const int64_t token = (k * 5 + 1) % kVocab;
    ASSERT_TRUE((st = s->step(token, 3 + k, logits)).ok) << st.message;
    EXPECT_EQ(logits, squares(token)) << "step " << k << " (token " << token << ")";
  }
  std::vector<int64_t> ids;
  GenerateStats stats;
  ASSERT_TRUE((st = s->generate({4, 5, 6, 7, 0}, 10, {}, ids, stats)).ok) << st.message;
  std::vector<int64_t> want;
  for (int64_t t = 0, k = 0; k < 10; ++k)
    want.push_back(t = (t + 1) % kVocab);
  EXPECT_EQ(ids, want);
  EXPECT_GT(stats.decodeTokensPerS, 0);
}

} // namespace
