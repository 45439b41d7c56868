// cuda_bucket_test.cpp — bucketed CUDA packages (docs/runtime.md, "Bucketed packages"): the small
// model of BucketPackage.h NVRTC-compiled at each bucket's shape and assembled into one package.
// Without a GPU: every bucket plan is validated as `tgc inspect` does (describeCudaPackageWithoutGpu)
// and a corrupt bucket is refused naming it. On a GPU (skipped without one): one context, weights
// and arena for all buckets, each run at any in-range shape through the smallest bucket (its
// weight shows in the output), padding, cut outputs, the length input, switching buckets back
// and forth, and output buffers at the maxima through runRefs.
#include "codegen/cuda/CudaBackend.h"
#include "compiler/dialect/TgDialect.h"
#include "runtime/Session.h"
#include "runtime/cuda/CudaSession.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "tests/unit/BucketPackage.h"

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
