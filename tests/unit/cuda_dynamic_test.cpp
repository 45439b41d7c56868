// cuda_dynamic_test.cpp — data-dependent output shapes on the CUDA backend: tg.nonzero,
// tg.unique and tg.nms (codegen/common/DynamicEmit) NVRTC-compile in f32, f16, f64 and i64 (no
// GPU needed), the CUDA plan carries each output's dynamic_axis and count, and on a GPU (skipped
// without one) the session reports each run's actual shape and packs the valid part: run() at
// the actual shape, runRefs into a buffer of the bound, and the count of an all-zero input, 0.
#include "codegen/cuda/CudaBackend.h"
#include "compiler/dialect/TgDialect.h"
#include "runtime/Session.h"
#include "runtime/cuda/CudaSession.h"
#include "runtime/schema/PlanUtil.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace tgc;

namespace {

std::string tempDir(const std::string &tag) {
  llvm::SmallString<128> p;
  if (llvm::sys::fs::createUniqueDirectory("tgc_cuda_dyn_" + tag, p))
    return "/tmp/tgc_cuda_dyn_" + tag;
  return p.str().str();
}

std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Writes a CUDA package (sm_90, NVRTC) of `ir` into a fresh folder: its path, or "" with `error`.
std::string cudaPackage(const std::string &ir, const std::string &tag, std::string &error) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  if (!module) {
    error = "the IR does not parse";
    return "";
  }
  const std::string dir = tempDir(tag) + "/pkg";
  PackageInfo info;
  info.target = "cuda:sm_90";
  auto stats = writeCudaPackage(*module, dir, info, "");
  if (!stats) {
    error = llvm::toString(stats.takeError());
    return "";
  }
  if (readFile(dir + "/kernels.cubin").empty())
    error = "empty cubin";
  return dir;
}

TEST(CudaDynamic, OpsCompileInEveryTypeAndThePlanCarriesTheCounts) {
  for (const char *t : {"f32", "f16", "f64", "i64"}) {
    std::string ir = R"(
func.func @main(%x: tensor<3x4xT>, %b: tensor<2x5x4xf32>, %s: tensor<2x3x5xf32>) -> (tensor<2x12xi64>, tensor<3x4xT>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<18x3xi64>, tensor<i64>, tensor<i64>, tensor<i64>) attributes {tg.dynamic_outputs = [0, 1, 1, 1, 5, 0]} {
  %0:2 = tg.nonzero %x : tensor<3x4xT> -> tensor<2x12xi64>, tensor<i64>
  %1:5 = tg.unique %x {axis = 1 : i64} : tensor<3x4xT> -> tensor<3x4xT>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<i64>
  %2:2 = tg.nms %b, %s {center_point_box = true, has_score_threshold = true, iou_threshold = 0.5 : f64, max_per_class = 3 : i64, score_threshold = 0.25 : f64} : tensor<2x5x4xf32>, tensor<2x3x5xf32> -> tensor<18x3xi64>, tensor<i64>
  return %0#0, %1#0, %1#1, %1#2, %1#3, %2#0, %0#1, %1#4, %2#1 : tensor<2x12xi64>, tensor<3x4xT>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<18x3xi64>, tensor<i64>, tensor<i64>, tensor<i64>
}
)";
    for (size_t at; (at = ir.find("xT>")) != std::string::npos;)
      ir.replace(at, 3, std::string("x") + t + ">");
    std::string error;
    const std::string dir = cudaPackage(ir, "ops", error);
    ASSERT_TRUE(error.empty()) << t << ": " << error;
    plan::Plan p;
    std::ifstream in(dir + "/plan.pb", std::ios::binary);
    ASSERT_TRUE(p.ParseFromIstream(&in));
    ASSERT_EQ(p.outputs_size(), 6) << t;
    for (int i : {0, 1, 5}) {
      EXPECT_TRUE(p.outputs(i).has_count()) << t << " output " << i;
      EXPECT_EQ(p.outputs(i).count().bytes(), 8);
    }
    EXPECT_EQ(p.outputs(0).dynamic_axis(), 1);
    EXPECT_EQ(p.outputs(1).dynamic_axis(), 1);
    EXPECT_FALSE(p.outputs(3).has_count()) << "unique's inverse is static";
    llvm::sys::fs::remove_directories(dir + "/..");
  }
}

// On a GPU: Compress of x [2, 4] along axis 1 by a run-time condition, times 2.
TEST(CudaDynamic, RunsReportTheActualShapeOnTheGpu) {
  std::string why, arch;
  if (!cuda::cudaDeviceAvailable(why, arch))
    GTEST_SKIP() << "no usable GPU: " << why;
  const char *ir = R"(
func.func @main(%x: tensor<2x4xf32> {tg.name = "x"}, %c: tensor<4xf32> {tg.name = "c"}) -> (tensor<2x4xf32> {tg.name = "y"}, tensor<i64>) attributes {tg.dynamic_outputs = [0, 1]} {
  %idx, %count = tg.nonzero %c : tensor<4xf32> -> tensor<1x4xi64>, tensor<i64>
  %i = tg.reshape %idx : tensor<1x4xi64> -> tensor<4xi64>
  %g = tg.gather %x, %i {axis = 1 : i64} : tensor<2x4xf32>, tensor<4xi64> -> tensor<2x4xf32>
  %y = tg.add %g, %g : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %y, %count : tensor<2x4xf32>, tensor<i64>
}
)";
  std::string error;
  const std::string dir = cudaPackage(ir, "run", error);
  ASSERT_TRUE(error.empty()) << error;
  Status st;
  auto s = cuda::loadCudaSession(dir, st);
  ASSERT_TRUE(s) << st.message;
  HostTensor x = HostTensor::zeros(DType::F32, {2, 4}, "x");
  HostTensor c = HostTensor::zeros(DType::F32, {4}, "c");
  for (int i = 0; i < 8; ++i)
    x.as<float>()[i] = (float)(i + 1);
  c.as<float>()[1] = 1;
  c.as<float>()[3] = -1;
  std::vector<HostTensor> out;
  for (int rep = 0; rep < 2; ++rep) { // the graph's capture, then its replay
    st = s->run({x, c}, out);
    ASSERT_TRUE(st.ok) << st.message;
    ASSERT_EQ(out[0].shape, (std::vector<int64_t>{2, 2}));
    const float *y = out[0].as<float>();
    EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{4, 8, 12, 16}));
  }
  HostTensor zero = HostTensor::zeros(DType::F32, {4}, "c");
  st = s->run({x, zero}, out);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 0}));
  c.as<float>()[0] = 3;
  std::vector<float> y(8, -1);
  const int64_t xd[2] = {2, 4}, cd[1] = {4};
  TensorRef in[2] = {{DType::F32, xd, 2, x.data.data(), 32},
                     {DType::F32, cd, 1, c.data.data(), 16}};
  TensorRef outs[1] = {{DType::F32, xd, 2, y.data(), 32}};
  st = s->runRefs(in, 2, outs, 1);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_EQ(s->outputShape(0), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 6),
            (std::vector<float>{2, 4, 8, 10, 12, 16}));
  llvm::sys::fs::remove_directories(dir + "/..");
}

} // namespace
