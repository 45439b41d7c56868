// runtime_test.cpp — CPU packages end to end: writeCpuPackage from IR text, Session::load, run,
// numerical checks against reference loops, and refusal of bad inputs and corrupt packages.
#include "codegen/cpu/CpuBackend.h"
#include "runtime/schema/PlanUtil.h"
#include "runtime/CpuLevel.h"
#include "runtime/Session.h"
#include "runtime/tgc_runtime.h"

#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "tests/unit/TestFiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace {

std::string tmpDir() {
  const char *t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

/// Compiles IR text into a package directory; returns "" and fails the test on error.
std::string compile(const std::string &ir, const std::string &name) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  EXPECT_TRUE(module) << "IR does not parse";
  if (!module)
    return "";
  std::string dir = tmpDir() + "/" + name;
  tgc::PackageInfo info;
  info.tgcVersion = "test";
  info.modelName = name;
  auto stats = tgc::writeCpuPackage(*module, dir, info, tmpDir() + "/kcache");
  EXPECT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  if (!stats)
    return "";
  return dir;
}

/// Deterministic pseudo-random values in [-1, 1).
std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (auto &x : v) {
    s = s * 1664525u + 1013904223u;
    x = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}

/// Nested dense literal of `v` with `shape` ("[[1, 2], [3, 4]]").
std::string denseList(const std::vector<float> &v, const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os.precision(9);
  size_t pos = 0;
  std::function<void(size_t)> rec = [&](size_t d) {
    os << "[";
    for (int64_t i = 0; i < shape[d]; ++i) {
      if (i)
        os << ", ";
      if (d + 1 == shape.size())
        os << v[pos++];
      else
        rec(d + 1);
    }
    os << "]";
  };
  rec(0);
  return os.str();
}

tgc::HostTensor f32(std::vector<int64_t> shape, const std::vector<float> &v,
                    const std::string &name = "") {
  auto t = tgc::HostTensor::zeros(tgc::DType::F32, shape, name);
  std::memcpy(t.data.data(), v.data(), v.size() * 4);
  return t;
}

tgc::HostTensor i64(std::vector<int64_t> shape, const std::vector<int64_t> &v) {
  auto t = tgc::HostTensor::zeros(tgc::DType::I64, shape);
  std::memcpy(t.data.data(), v.data(), v.size() * 8);
  return t;
}

void expectNear(const tgc::HostTensor &got, const std::vector<double> &want, double tol = 1e-5) {
  ASSERT_EQ(got.numel(), (int64_t)want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.get(i), want[i], tol * std::max(1.0, std::fabs(want[i]))) << "element " << i;
}

// ---------------------------------------------------------------------------------------------
// One package with many independent computations (compiled once for the suite).

const std::vector<float> kW = values(5 * 8, 1), kBias = values(5, 2), kScale = values(8, 3),
                         kShift = values(8, 4), kEmb = values(10 * 4, 5),
                         kConvW = values(3 * 2 * 3 * 3, 6), kConvB = values(3, 7),
                         kMmB = values(2 * 4 * 5, 8);

std::string bigIR() {
  std::ostringstream os;
  os << R"(
func.func @main(%x: tensor<2x3xf32> {tg.name = "x"}, %b: tensor<3xf32> {tg.name = "b"},
                %a: tensor<4x8xf32> {tg.name = "a"}, %ids: tensor<2x2xi64> {tg.name = "ids"},
                %img: tensor<1x2x5x5xf32> {tg.name = "img"}, %q: tensor<2x3x4xf32> {tg.name = "q"})
    -> (tensor<2x3xf32> {tg.name = "pointwise"}, tensor<4x5xf32> {tg.name = "gemm"},
        tensor<4x8xf32> {tg.name = "layer_norm"}, tensor<4x8xf32> {tg.name = "softmax"},
        tensor<8x4xf32> {tg.name = "transpose"}, tensor<2x6xf32> {tg.name = "concat"},
        tensor<4x3xf32> {tg.name = "split0"}, tensor<4x5xf32> {tg.name = "split1"},
        tensor<2x2x4xf32> {tg.name = "gather"}, tensor<1x3x5x5xf32> {tg.name = "conv"},
        tensor<4x1xf32> {tg.name = "reduce_mean"}, tensor<3x2xf32> {tg.name = "reshape"},
        tensor<2x3x5xf32> {tg.name = "matmul"}, tensor<2x2xi64> {tg.name = "imod"},
        tensor<1x3x3x2xf32> {tg.name = "conv_s2"}, tensor<2x2x4xf32> {tg.name = "gather_computed"}) {
  %two = tg.constant dense<2.0> : tensor<f32>
  %w = tg.constant dense<)" << denseList(kW, {5, 8}) << R"(> : tensor<5x8xf32>
  %bias = tg.constant dense<)" << denseList(kBias, {5}) << R"(> : tensor<5xf32>
  %scale = tg.constant dense<)" << denseList(kScale, {8}) << R"(> : tensor<8xf32>
  %shift = tg.constant dense<)" << denseList(kShift, {8}) << R"(> : tensor<8xf32>
  %emb = tg.constant dense<)" << denseList(kEmb, {10, 4}) << R"(> : tensor<10x4xf32>
  %cw = tg.constant dense<)" << denseList(kConvW, {3, 2, 3, 3}) << R"(> : tensor<3x2x3x3xf32>
  %cb = tg.constant dense<)" << denseList(kConvB, {3}) << R"(> : tensor<3xf32>
  %mb = tg.constant dense<)" << denseList(kMmB, {2, 4, 5}) << R"(> : tensor<2x4x5xf32>
  %three = tg.constant dense<3> : tensor<i64>
  %0 = tg.fused "pointwise" (%x, %b, %two) : (tensor<2x3xf32>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32> {
  ^bb0(%p: tensor<2x3xf32>, %r: tensor<3xf32>, %s: tensor<f32>):
    %t0 = tg.add %p, %r : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    %t1 = tg.tanh %t0 : tensor<2x3xf32>
    %t2 = tg.mul %t1, %s : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
    tg.yield %t2 : tensor<2x3xf32>
  }
  %1 = tg.fused "gemm" (%a, %w, %bias) : (tensor<4x8xf32>, tensor<5x8xf32>, tensor<5xf32>) -> tensor<4x5xf32> {
  ^bb0(%p: tensor<4x8xf32>, %r: tensor<5x8xf32>, %s: tensor<5xf32>):
    %t0 = tg.linear %p, %r : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<4x5xf32>
    %t1 = tg.add %t0, %s : tensor<4x5xf32>, tensor<5xf32> -> tensor<4x5xf32>
    %t2 = tg.tanh %t1 : tensor<4x5xf32>
    tg.yield %t2 : tensor<4x5xf32>
  }
  %2 = tg.layer_norm %a, %scale, %shift {axis = -1 : i64, epsilon = 1.0e-05 : f32} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %3 = tg.softmax %a {axis = 1 : i64} : tensor<4x8xf32>
  %4 = tg.transpose %a {perm = [1, 0]} : tensor<4x8xf32> -> tensor<8x4xf32>
  %5 = tg.concat %x, %0 {axis = 1 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  %6:2 = tg.split %a {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x3xf32>, tensor<4x5xf32>
  %7 = tg.gather %emb, %ids {axis = 0 : i64} : tensor<10x4xf32>, tensor<2x2xi64> -> tensor<2x2x4xf32>
  %8 = tg.conv %img, %cw, %cb {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>, tensor<3xf32> -> tensor<1x3x5x5xf32>
  %9 = tg.reduce_mean %a {axes = [1], keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %10 = tg.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
  %11 = tg.matmul %q, %mb : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  %12 = tg.mod %ids, %three : tensor<2x2xi64>, tensor<i64> -> tensor<2x2xi64>
  %13 = tg.conv %img, %cw {strides = [2, 2], pads = [1, 0, 1, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x3x2xf32>
  %14 = tg.mul %ids, %three : tensor<2x2xi64>, tensor<i64> -> tensor<2x2xi64>
  %15 = tg.gather %emb, %14 {axis = 0 : i64} : tensor<10x4xf32>, tensor<2x2xi64> -> tensor<2x2x4xf32>
  return %0, %1, %2, %3, %4, %5, %6#0, %6#1, %7, %8, %9, %10, %11, %12, %13, %15 : tensor<2x3xf32>, tensor<4x5xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<2x6xf32>, tensor<4x3xf32>, tensor<4x5xf32>, tensor<2x2x4xf32>, tensor<1x3x5x5xf32>, tensor<4x1xf32>, tensor<3x2xf32>, tensor<2x3x5xf32>, tensor<2x2xi64>, tensor<1x3x3x2xf32>, tensor<2x2x4xf32>
}
)";
  return os.str();
}

const std::vector<float> kX = values(6, 11), kB = values(3, 12), kA = values(32, 13),
                         kImg = values(50, 14), kQ = values(24, 15);
const std::vector<int64_t> kIds = {3, -1, 9, -7}; // -1 wraps to 9, -7 to 3

class BigPackage : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(compile(bigIR(), "big.tgpkg"));
    if (dir_->empty())
      return;
    tgc::Status st;
    session_ = tgc::Session::load(*dir_, st, 2).release();
    ASSERT_TRUE(st.ok) << st.message;
    outs_ = new std::vector<tgc::HostTensor>;
    st = session_->run({f32({2, 3}, kX), f32({3}, kB), f32({4, 8}, kA), i64({2, 2}, kIds),
                        f32({1, 2, 5, 5}, kImg), f32({2, 3, 4}, kQ)},
                       *outs_);
    ASSERT_TRUE(st.ok) << st.message;
  }
  static void TearDownTestSuite() {
    delete session_;
    delete outs_;
    delete dir_;
  }
  void SetUp() override {
    ASSERT_TRUE(session_ && outs_ && outs_->size() == 16) << "package did not build or run";
  }
  const tgc::HostTensor &out(int i) { return (*outs_)[i]; }
  static std::string *dir_;
  static tgc::Session *session_;
  static std::vector<tgc::HostTensor> *outs_;
};
std::string *BigPackage::dir_ = nullptr;
tgc::Session *BigPackage::session_ = nullptr;
std::vector<tgc::HostTensor> *BigPackage::outs_ = nullptr;

TEST_F(BigPackage, Interface) {
  ASSERT_EQ(session_->inputs().size(), 6u);
  EXPECT_EQ(session_->inputs()[3].name, "ids");
  EXPECT_EQ(session_->inputs()[3].dtype, tgc::DType::I64);
  EXPECT_EQ(session_->outputs()[1].name, "gemm");
  EXPECT_EQ(out(1).name, "gemm");
  std::string d = session_->describe();
  EXPECT_NE(d.find("tgk_1_gemm_linear_add_tanh"), std::string::npos) << d;
  EXPECT_TRUE(fs::exists(*dir_ + "/plan.txt"));
  EXPECT_TRUE(fs::exists(*dir_ + "/kernels.cpp"));
}

/// Whether the environment named OpenBLAS's core before any session loaded (read at start-up).
const bool kCoreTypePreset = std::getenv("OPENBLAS_CORETYPE") != nullptr;

// Loading a CPU session names OpenBLAS's core where OpenBLAS's CPUID table may not know this
// CPU's model (runtime/CpuLevel.h, openblasCoreType: SSE3 kernels otherwise), and leaves a core
// the environment already named alone.
TEST_F(BigPackage, OpenblasCoreNamedForIntelModels) {
  const char *want = tgc::openblasCoreType();
  if (!want)
    GTEST_SKIP() << "not an Intel CPU with AVX2 or AVX-512: OpenBLAS's own detection stands";
  const char *got = std::getenv("OPENBLAS_CORETYPE");
  ASSERT_NE(got, nullptr) << "the session did not name OpenBLAS's core";
  if (!kCoreTypePreset)
    EXPECT_STREQ(got, want);
}

TEST_F(BigPackage, PointwiseChainWithBroadcast) {
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      want.push_back(std::tanh((double)kX[i * 3 + j] + kB[j]) * 2.0);
  expectNear(out(0), want);
}

TEST_F(BigPackage, GemmWithBiasTanhEpilogue) {
  std::vector<double> want;
  for (int m = 0; m < 4; ++m)
    for (int n = 0; n < 5; ++n) {
      double s = 0;
      for (int k = 0; k < 8; ++k)
        s += (double)kA[m * 8 + k] * kW[n * 8 + k];
      want.push_back(std::tanh(s + kBias[n]));
    }
  expectNear(out(1), want);
}

TEST_F(BigPackage, LayerNorm) {
  std::vector<double> want;
  for (int m = 0; m < 4; ++m) {
    double mean = 0, var = 0;
    for (int k = 0; k < 8; ++k)
      mean += kA[m * 8 + k];
    mean /= 8;
    for (int k = 0; k < 8; ++k)
      var += (kA[m * 8 + k] - mean) * (kA[m * 8 + k] - mean);
    var /= 8;
    for (int k = 0; k < 8; ++k)
      want.push_back((kA[m * 8 + k] - mean) / std::sqrt(var + 1e-5) * kScale[k] + kShift[k]);
  }
  expectNear(out(2), want);
}

TEST_F(BigPackage, Softmax) {
  std::vector<double> want;
  for (int m = 0; m < 4; ++m) {
    double mx = -1e30, s = 0;
    for (int k = 0; k < 8; ++k)
      mx = std::max(mx, (double)kA[m * 8 + k]);
    for (int k = 0; k < 8; ++k)
      s += std::exp(kA[m * 8 + k] - mx);
    for (int k = 0; k < 8; ++k)
      want.push_back(std::exp(kA[m * 8 + k] - mx) / s);
  }
  expectNear(out(3), want);
}

TEST_F(BigPackage, Transpose) {
  std::vector<double> want;
  for (int j = 0; j < 8; ++j)
    for (int i = 0; i < 4; ++i)
      want.push_back(kA[i * 8 + j]);
  expectNear(out(4), want, 0);
}

TEST_F(BigPackage, Concat) {
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j)
      want.push_back(kX[i * 3 + j]);
    for (int j = 0; j < 3; ++j)
      want.push_back(out(0).get(i * 3 + j));
  }
  expectNear(out(5), want, 0);
}

TEST_F(BigPackage, Split) {
  std::vector<double> w0, w1;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      (j < 3 ? w0 : w1).push_back(kA[i * 8 + j]);
  expectNear(out(6), w0, 0);
  expectNear(out(7), w1, 0);
}

/// The rows `ids` of the embedding table, concatenated.
std::vector<double> embRows(std::initializer_list<int64_t> ids) {
  std::vector<double> want;
  for (int64_t id : ids)
    for (int k = 0; k < 4; ++k)
      want.push_back(kEmb[id * 4 + k]);
  return want;
}

TEST_F(BigPackage, GatherWrapsNegativeIndices) { expectNear(out(8), embRows({3, 9, 9, 3}), 0); }

// Indices the model computes are not checked: the kernel wraps them once and clamps them, so it
// never reads outside the table (ids · 3 = {9, -3, 27, -21} → rows 9, 7, 9 (clamped), 0
// (-21 + 10 = -11, clamped)).
TEST_F(BigPackage, GatherOfComputedIndicesClamps) {
  expectNear(out(15), embRows({9, 7, 9, 0}), 0);
}

// An input that indexes a Gather is checked against the gathered axis before anything runs: the
// error names the input, the element, its value and the range; the session still runs after it.
TEST_F(BigPackage, RefusesAnInputIndexOutsideTheGatheredAxis) {
  const std::string about = session_->describe();
  EXPECT_NE(about.find("'ids' i64 [2, 2] in [-10, 9] (indices of Gather)"), std::string::npos)
      << about;
  for (auto [ids, msg] : std::vector<std::pair<std::vector<int64_t>, std::string>>{
           {{3, -1, 100, -7}, "input 'ids': element [1, 0] is 100, outside [-10, 9] (indices of Gather)"},
           {{3, -11, 0, 0}, "input 'ids': element [0, 1] is -11, outside [-10, 9] (indices of Gather)"}}) {
    std::vector<tgc::HostTensor> got;
    auto st = session_->run({f32({2, 3}, kX), f32({3}, kB), f32({4, 8}, kA), i64({2, 2}, ids),
                             f32({1, 2, 5, 5}, kImg), f32({2, 3, 4}, kQ)},
                            got);
    EXPECT_FALSE(st.ok);
    EXPECT_EQ(st.message, msg);
  }
  std::vector<tgc::HostTensor> again;
  auto st = session_->run({f32({2, 3}, kX), f32({3}, kB), f32({4, 8}, kA), i64({2, 2}, kIds),
                           f32({1, 2, 5, 5}, kImg), f32({2, 3, 4}, kQ)},
                          again);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_EQ(again[8].data, out(8).data);
}

// Which inputs get a range: the tightest over every Gather / GatherElements they index, followed
// through reshapes (values kept) but not through ops that change values (a multiply, a narrowing
// cast); i32 inputs, GatherElements and axes other than 0 too. Then `run` refuses an i32 index.
TEST(IndexBounds, FollowOnlyValuePreservingOpsAndKeepTheTightest) {
  std::ostringstream os;
  os << R"(
func.func @main(%a: tensor<2xi64> {tg.name = "two_tables"}, %b: tensor<2xi64> {tg.name = "scaled"},
                %c: tensor<2xi64> {tg.name = "narrowed"}, %d: tensor<2xi32> {tg.name = "axis1"},
                %e: tensor<2x3xi64> {tg.name = "elements"})
    -> (tensor<2x4xf32>, tensor<1x2x2xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<3x2xf32>,
        tensor<2x3xf32>) {
  %t10 = tg.constant dense<)" << denseList(values(40, 21), {10, 4}) << R"(> : tensor<10x4xf32>
  %t4 = tg.constant dense<)" << denseList(values(8, 22), {4, 2}) << R"(> : tensor<4x2xf32>
  %t6 = tg.constant dense<)" << denseList(values(18, 23), {3, 6}) << R"(> : tensor<3x6xf32>
  %t5 = tg.constant dense<)" << denseList(values(10, 24), {2, 5}) << R"(> : tensor<2x5xf32>
  %three = tg.constant dense<3> : tensor<i64>
  %0 = tg.gather %t10, %a {axis = 0 : i64} : tensor<10x4xf32>, tensor<2xi64> -> tensor<2x4xf32>
  %r = tg.reshape %a : tensor<2xi64> -> tensor<1x2xi64>
  %1 = tg.gather %t4, %r {axis = 0 : i64} : tensor<4x2xf32>, tensor<1x2xi64> -> tensor<1x2x2xf32>
  %m = tg.mul %b, %three : tensor<2xi64>, tensor<i64> -> tensor<2xi64>
  %2 = tg.gather %t10, %m {axis = 0 : i64} : tensor<10x4xf32>, tensor<2xi64> -> tensor<2x4xf32>
  %n = tg.cast %c : tensor<2xi64> -> tensor<2xi32>
  %3 = tg.gather %t10, %n {axis = 0 : i64} : tensor<10x4xf32>, tensor<2xi32> -> tensor<2x4xf32>
  %4 = tg.gather %t6, %d {axis = 1 : i64} : tensor<3x6xf32>, tensor<2xi32> -> tensor<3x2xf32>
  %5 = tg.gather_elements %t5, %e {axis = 1 : i64} : tensor<2x5xf32>, tensor<2x3xi64> -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x4xf32>, tensor<1x2x2xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<3x2xf32>, tensor<2x3xf32>
}
)";
  const std::string dir = compile(os.str(), "bounds.tgpkg");
  ASSERT_FALSE(dir.empty());
  tgc::Status st;
  auto s = tgc::Session::load(dir, st, 1);
  ASSERT_TRUE(s) << st.message;
  const std::string about = s->describe();
  for (const char *line : {"'two_tables' i64 [2] in [-4, 3] (indices of Gather)\n",
                           "'scaled' i64 [2]\n", "'narrowed' i64 [2]\n",
                           "'axis1' i32 [2] in [-6, 5] (indices of Gather)\n",
                           "'elements' i64 [2, 3] in [-5, 4] (indices of GatherElements)\n"})
    EXPECT_NE(about.find(line), std::string::npos) << line << "\n" << about;
  EXPECT_TRUE(s->inputs()[0].indexBounded);
  EXPECT_EQ(s->inputs()[0].indexLo, -4);
  EXPECT_EQ(s->inputs()[0].indexHi, 3);
  EXPECT_FALSE(s->inputs()[1].indexBounded);
  auto i32 = [](std::vector<int64_t> shape, std::vector<int32_t> v) {
    tgc::HostTensor t = tgc::HostTensor::zeros(tgc::DType::I32, shape, "");
    for (size_t i = 0; i < v.size(); ++i)
      t.set((int64_t)i, v[i]);
    return t;
  };
  auto inputs = [&](std::vector<int32_t> axis1) {
    return std::vector<tgc::HostTensor>{i64({2}, {3, -4}), i64({2}, {100, -100}),
                                        i64({2}, {50, 0}), i32({2}, axis1),
                                        i64({2, 3}, {0, 4, -5, 1, 2, 3})};
  };
  std::vector<tgc::HostTensor> got;
  st = s->run(inputs({5, -6}), got);
  ASSERT_TRUE(st.ok) << st.message;
  st = s->run(inputs({5, 6}), got);
  EXPECT_FALSE(st.ok);
  EXPECT_EQ(st.message, "input 'axis1': element [1] is 6, outside [-6, 5] (indices of Gather)");

  // The C API reports the ranges and refuses the same input.
  char *err = nullptr;
  tgc_session *c = tgc_session_load(dir.c_str(), 1, &err);
  ASSERT_NE(c, nullptr) << err;
  int64_t lo = 0, hi = 0;
  EXPECT_EQ(tgc_session_input_range(c, 3, &lo, &hi), 1);
  EXPECT_EQ(lo, -6);
  EXPECT_EQ(hi, 5);
  EXPECT_EQ(tgc_session_input_range(c, 1, &lo, &hi), 0);
  EXPECT_EQ(tgc_session_input_range(c, 5, &lo, &hi), -1);
  EXPECT_EQ(tgc_session_input_range(nullptr, 0, nullptr, nullptr), -1);
  const std::vector<tgc::HostTensor> bad = inputs({5, 6});
  std::vector<tgc_tensor> ins;
  for (const tgc::HostTensor &t : bad)
    ins.push_back({(int32_t)t.dtype, (int32_t)t.shape.size(), t.shape.data(),
                   const_cast<uint8_t *>(t.data.data()), t.data.size()});
  std::vector<std::vector<uint8_t>> outBufs;
  std::vector<tgc_tensor> outs;
  for (const tgc::TensorSpec &o : s->outputs()) {
    int64_t n = 4;
    for (int64_t d : o.shape)
      n *= d;
    outBufs.emplace_back((size_t)n);
  }
  for (size_t i = 0; i < outBufs.size(); ++i)
    outs.push_back({1, (int32_t)s->outputs()[i].shape.size(), s->outputs()[i].shape.data(),
                    outBufs[i].data(), outBufs[i].size()});
  EXPECT_EQ(tgc_session_run(c, ins.data(), ins.size(), outs.data(), outs.size(), &err), -1);
  ASSERT_NE(err, nullptr);
  EXPECT_STREQ(err, "input 'axis1': element [1] is 6, outside [-6, 5] (indices of Gather)");
  tgc_free_error(err);
  tgc_session_free(c);
}

std::vector<double> convRef(int stride, const std::vector<int> &pads, bool bias, int OH, int OW) {
  std::vector<double> want;
  for (int m = 0; m < 3; ++m)
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow) {
        double s = bias ? kConvB[m] : 0.0;
        for (int c = 0; c < 2; ++c)
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              int ih = oh * stride - pads[0] + kh, iw = ow * stride - pads[1] + kw;
              if (ih < 0 || ih >= 5 || iw < 0 || iw >= 5)
                continue;
              s += (double)kImg[(c * 5 + ih) * 5 + iw] * kConvW[((m * 2 + c) * 3 + kh) * 3 + kw];
            }
        want.push_back(s);
      }
  return want;
}

TEST_F(BigPackage, Conv) { expectNear(out(9), convRef(1, {1, 1}, true, 5, 5)); }

TEST_F(BigPackage, ConvStridedPadsOnlyInH) {
  // pads = [h_begin, w_begin, h_end, w_end] = [1, 0, 1, 0], stride 2, no bias.
  expectNear(out(14), convRef(2, {1, 0}, false, 3, 2));
}

TEST_F(BigPackage, ReduceMeanKeepdims) {
  ASSERT_EQ(out(10).shape, (std::vector<int64_t>{4, 1}));
  std::vector<double> want;
  for (int m = 0; m < 4; ++m) {
    double s = 0;
    for (int k = 0; k < 8; ++k)
      s += kA[m * 8 + k];
    want.push_back(s / 8);
  }
  expectNear(out(10), want);
}

TEST_F(BigPackage, OutputIsReshapeOfInput) {
  ASSERT_EQ(out(11).shape, (std::vector<int64_t>{3, 2}));
  expectNear(out(11), std::vector<double>(kX.begin(), kX.end()), 0);
}

TEST_F(BigPackage, BatchedMatmul) {
  std::vector<double> want;
  for (int b = 0; b < 2; ++b)
    for (int m = 0; m < 3; ++m)
      for (int n = 0; n < 5; ++n) {
        double s = 0;
        for (int k = 0; k < 4; ++k)
          s += (double)kQ[(b * 3 + m) * 4 + k] * kMmB[(b * 4 + k) * 5 + n];
        want.push_back(s);
      }
  expectNear(out(12), want);
}

TEST_F(BigPackage, IntegerModTakesDivisorSign) {
  expectNear(out(13), {0, 2, 0, 2}, 0); // 3 % 3, -1 mod 3, 9 mod 3, -7 mod 3
}

TEST_F(BigPackage, RunsTwiceWithSameResult) {
  std::vector<tgc::HostTensor> again;
  auto st = session_->run({f32({2, 3}, kX), f32({3}, kB), f32({4, 8}, kA), i64({2, 2}, kIds),
                           f32({1, 2, 5, 5}, kImg), f32({2, 3, 4}, kQ)},
                          again);
  ASSERT_TRUE(st.ok) << st.message;
  for (size_t i = 0; i < again.size(); ++i)
    EXPECT_EQ(again[i].data, out(i).data) << "output " << i;
}

TEST_F(BigPackage, ProfilesEveryStep) {
  std::vector<tgc::HostTensor> again;
  session_->setProfiling(true);
  auto st = session_->run({f32({2, 3}, kX), f32({3}, kB), f32({4, 8}, kA), i64({2, 2}, kIds),
                           f32({1, 2, 5, 5}, kImg), f32({2, 3, 4}, kQ)},
                          again);
  session_->setProfiling(false);
  ASSERT_TRUE(st.ok) << st.message;
  const auto &prof = session_->lastProfile();
  ASSERT_FALSE(prof.empty());
  bool sawGemm = false;
  double lastStart = -1;
  for (const tgc::StepProfile &p : prof) {
    EXPECT_FALSE(p.symbol.empty());
    EXPECT_GE(p.micros, 0.0);
    EXPECT_GE(p.startMicros, lastStart); // steps run in plan order
    lastStart = p.startMicros;
    sawGemm = sawGemm || p.symbol == "tgk_1_gemm_linear_add_tanh";
  }
  EXPECT_TRUE(sawGemm);
  EXPECT_EQ(again[1].data, out(1).data); // profiling does not change results
}

// ---------------------------------------------------------------------------------------------
// A small package with a weight, for interface checks and corruption.

const char *kSmallIRValid = R"(
func.func @main(%x: tensor<2x50xf32> {tg.name = "input_0"}, %k: tensor<1x32xi64> {tg.name = "ids"}) -> (tensor<2x50xf32> {tg.name = "y"}, tensor<1x32xi64> {tg.name = "ids_out"}) {
  %w = tg.constant dense<0.5> : tensor<50xf32>
  %lw = tg.constant dense<0.25> : tensor<50x50xf32>
  %0 = tg.linear %x, %lw : tensor<2x50xf32>, tensor<50x50xf32> -> tensor<2x50xf32>
  %1 = tg.add %0, %w : tensor<2x50xf32>, tensor<50xf32> -> tensor<2x50xf32>
  return %1, %k : tensor<2x50xf32>, tensor<1x32xi64>
}
)";

class SmallPackage : public ::testing::Test {
protected:
  static void SetUpTestSuite() { dir_ = new std::string(compile(kSmallIRValid, "small.tgpkg")); }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override { ASSERT_FALSE(dir_->empty()); }

  /// A fresh copy of the package to corrupt.
  std::string copy(const std::string &name) {
    std::string d = tmpDir() + "/" + name;
    fs::remove_all(d);
    fs::copy(*dir_, d);
    return d;
  }
  static tgc::plan::Plan readPlan(const std::string &d) {
    tgc::plan::Plan p;
    std::ifstream in(d + "/plan.pb", std::ios::binary);
    EXPECT_TRUE(p.ParseFromIstream(&in));
    return p;
  }
  static void writePlan(const std::string &d, const tgc::plan::Plan &p) {
    // A consistent plan (self-checksum filled in), so deeper checks are what refuses it.
    std::string bytes;
    ASSERT_TRUE(tgc::plan::serializePlan(p, bytes));
    std::ofstream out(d + "/plan.pb", std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), bytes.size());
  }
  static std::string loadError(const std::string &d) {
    tgc::Status st;
    auto s = tgc::Session::load(d, st);
    EXPECT_FALSE(s) << "package loaded but should have been refused";
    EXPECT_FALSE(st.ok);
    return st.message;
  }
  static std::vector<tgc::HostTensor> goodInputs() {
    std::vector<float> x(100);
    for (int i = 0; i < 100; ++i)
      x[i] = i * 0.01f;
    std::vector<int64_t> ids(32);
    for (int i = 0; i < 32; ++i)
      ids[i] = i - 5;
    return {f32({2, 50}, x), i64({1, 32}, ids)};
  }
  static std::string *dir_;
};
std::string *SmallPackage::dir_ = nullptr;

TEST_F(SmallPackage, RunsAndCopiesInputAliasOutput) {
  tgc::Status st;
  auto s = tgc::Session::load(*dir_, st);
  ASSERT_TRUE(s) << st.message;
  std::vector<tgc::HostTensor> outs;
  auto in = goodInputs();
  st = s->run(in, outs);
  ASSERT_TRUE(st.ok) << st.message;
  ASSERT_EQ(outs.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    double rowSum = 0;
    for (int k = 0; k < 50; ++k)
      rowSum += in[0].get(r * 50 + k);
    for (int n = 0; n < 50; ++n)
      ASSERT_NEAR(outs[0].get(r * 50 + n), 0.25 * rowSum + 0.5, 1e-4);
  }
  EXPECT_EQ(outs[1].data, in[1].data); // output that is an input: copied by a COPY step
}

TEST_F(SmallPackage, RefusesWrongInputDtype) {
  tgc::Status st;
  auto s = tgc::Session::load(*dir_, st);
  ASSERT_TRUE(s) << st.message;
  auto in = goodInputs();
  in[1] = f32({1, 32}, std::vector<float>(32, 0));
  std::vector<tgc::HostTensor> outs;
  st = s->run(in, outs);
  ASSERT_FALSE(st.ok);
  EXPECT_EQ(st.message, "input 'ids': expected i64 [1, 32], got f32 [1, 32]");
}

TEST_F(SmallPackage, RefusesWrongInputShape) {
  tgc::Status st;
  auto s = tgc::Session::load(*dir_, st);
  ASSERT_TRUE(s) << st.message;
  auto in = goodInputs();
  in[0] = f32({2, 49}, std::vector<float>(98, 0));
  std::vector<tgc::HostTensor> outs;
  st = s->run(in, outs);
  ASSERT_FALSE(st.ok);
  EXPECT_EQ(st.message, "input 'input_0': expected f32 [2, 50], got f32 [2, 49]");
  in[0] = f32({100}, std::vector<float>(100, 0));
  st = s->run(in, outs);
  EXPECT_EQ(st.message, "input 'input_0': expected f32 [2, 50], got f32 [100]");
}

TEST_F(SmallPackage, RefusesWrongInputCount) {
  tgc::Status st;
  auto s = tgc::Session::load(*dir_, st);
  ASSERT_TRUE(s) << st.message;
  auto in = goodInputs();
  in.pop_back();
  std::vector<tgc::HostTensor> outs;
  st = s->run(in, outs);
  ASSERT_FALSE(st.ok);
  EXPECT_EQ(st.message, "expected 2 inputs, got 1");
}

TEST_F(SmallPackage, RefusesShortInputData) {
  tgc::Status st;
  auto s = tgc::Session::load(*dir_, st);
  ASSERT_TRUE(s) << st.message;
  auto in = goodInputs();
  in[0].data.resize(10);
  std::vector<tgc::HostTensor> outs;
  st = s->run(in, outs);
  ASSERT_FALSE(st.ok);
  EXPECT_NE(st.message.find("input_0"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("bytes"), std::string::npos) << st.message;
}

// A plan changed on disk in a way that still parses (an arena offset moved by one byte) is
// refused by its self-checksum before any pointer is formed from it.
TEST_F(SmallPackage, RefusesPlanWithBadChecksum) {
  std::string d = copy("flip.tgpkg");
  tgc::plan::Plan p = readPlan(d);
  ASSERT_GT(p.steps_size(), 0);
  bool changed = false;
  for (auto &step : *p.mutable_steps())
    for (auto &arg : *step.mutable_args())
      if (!changed && arg.kind() == tgc::plan::ARENA && arg.offset() == 0 && arg.bytes() > 4) {
        arg.set_offset(4); // still inside the arena: only the checksum can notice
        arg.set_bytes(arg.bytes() - 4);
        changed = true;
      }
  ASSERT_TRUE(changed);
  std::string bytes;
  ASSERT_TRUE(p.SerializeToString(&bytes)); // keeps the old plan_xxh3
  std::ofstream(d + "/plan.pb", std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
  std::string e = loadError(d);
  EXPECT_NE(e.find("plan.pb checksum mismatch"), std::string::npos) << e;
}

TEST_F(SmallPackage, RefusesTruncatedPlan) {
  std::string d = copy("trunc.tgpkg");
  const std::string bytes = tgc::test::readFile(d + "/plan.pb");
  for (size_t cut : {bytes.size() / 2, bytes.size() - 1, bytes.size() - 5, size_t(3)}) {
    std::ofstream(d + "/plan.pb", std::ios::binary | std::ios::trunc).write(bytes.data(), cut);
    std::string e = loadError(d);
    EXPECT_TRUE(e.find("truncated") != std::string::npos) << "cut " << cut << ": " << e;
  }
  fs::remove(d + "/plan.pb");
  EXPECT_NE(loadError(d).find("plan.pb"), std::string::npos);
}

TEST_F(SmallPackage, RefusesShortWeights) {
  std::string d = copy("shortw.tgpkg");
  auto size = fs::file_size(d + "/weights.bin");
  ASSERT_GT(size, 64u);
  fs::resize_file(d + "/weights.bin", size - 64);
  std::string e = loadError(d);
  EXPECT_NE(e.find("weights.bin has " + std::to_string(size - 64) + " bytes, the plan expects " +
                   std::to_string(size)),
            std::string::npos)
      << e;
}

/// Flips one bit of the byte at `at` in `path` (size unchanged).
static void flipByte(const std::string &path, std::streamoff at) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(at);
  char c = 0;
  f.get(c);
  f.seekp(at);
  f.put((char)(c ^ 0x10));
}

TEST_F(SmallPackage, RefusesCorruptWeights) {
  std::string d = copy("badw.tgpkg");
  flipByte(d + "/weights.bin", 10);
  std::string e = loadError(d);
  EXPECT_NE(e.find("weights.bin checksum mismatch"), std::string::npos) << e;
  EXPECT_NE(e.find("badw.tgpkg"), std::string::npos) << e; // names the package
}

// One flipped bit in the middle of kernels.so (same size, still an ELF file) is caught by the
// checksum before dlopen runs any of its code.
TEST_F(SmallPackage, RefusesKernelsWithAFlippedByte) {
  std::string d = copy("flipk.tgpkg");
  auto size = fs::file_size(d + "/kernels.so");
  ASSERT_GT(size, 1000u);
  flipByte(d + "/kernels.so", (std::streamoff)size / 2);
  EXPECT_EQ(fs::file_size(d + "/kernels.so"), size);
  std::string e = loadError(d);
  EXPECT_NE(e.find("kernels.so checksum mismatch"), std::string::npos) << e;
}

// A package written by an older tgc (format 2: FNV-1a 64 checksums) is refused by its version,
// with what to do, before any checksum is compared.
TEST_F(SmallPackage, RefusesAnOlderFormatVersion) {
  std::string d = copy("old.tgpkg");
  auto p = readPlan(d);
  p.set_format_version(tgc::plan::kPlanFormatVersion - 1);
  p.clear_plan_xxh3();
  std::string bytes;
  ASSERT_TRUE(p.SerializeToString(&bytes));
  std::ofstream(d + "/plan.pb", std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
  std::string e = loadError(d);
  EXPECT_NE(e.find("package format " + std::to_string(tgc::plan::kPlanFormatVersion - 1) +
                   ", this runtime reads " + std::to_string(tgc::plan::kPlanFormatVersion) +
                   ": recompile"),
            std::string::npos)
      << e;
}

// A CPU package records the x86-64 level its kernels use (runtime/CpuLevel.h): the runtime
// refuses a level this CPU lacks or does not know, and a cpu:native package compiled on another
// CPU, naming why; the host's own level and signature load.
TEST_F(SmallPackage, ChecksTheCpuTargetAgainstThisCpu) {
  auto withTarget = [&](const std::string &name, const std::string &target,
                        const std::string &signature) {
    std::string d = copy(name);
    auto p = readPlan(d);
    p.set_target(target);
    p.set_cpu_signature(signature);
    writePlan(d, p);
    return d;
  };
  const std::string here = tgc::cpuSignature(), level = tgc::hostCpuLevel();
  ASSERT_FALSE(level.empty());
  for (const auto &[target, sig] : {std::pair<std::string, std::string>{"cpu:" + level, ""},
                                    {"cpu:native", here},
                                    {"cpu", ""}}) {
    tgc::Status st;
    EXPECT_TRUE(tgc::Session::load(withTarget("cpuok.tgpkg", target, sig), st)) << st.message;
  }
  const std::string other = here.rfind("GenuineIntel", 0) == 0
                                ? "AuthenticAMD family 25 model 1 stepping 1"
                                : "GenuineIntel family 6 model 143 stepping 8";
  std::string e = loadError(withTarget("cpunative.tgpkg", "cpu:native", other));
  EXPECT_NE(e.find("cannot run on this CPU: its kernels were compiled with --target=cpu:native "
                   "on a " + other + "; this CPU is a " + here),
            std::string::npos)
      << e;
  e = loadError(withTarget("cpuv9.tgpkg", "cpu:x86-64-v9", ""));
  EXPECT_NE(e.find("unknown CPU target 'cpu:x86-64-v9'"), std::string::npos) << e;
  EXPECT_TRUE(tgc::missingCpuFeatures("x86-64").empty());
  if (level != "x86-64-v4") { // a level above this CPU's: refused, naming a missing feature
    e = loadError(withTarget("cpuv4.tgpkg", "cpu:x86-64-v4", ""));
    EXPECT_NE(e.find("its kernels need x86-64-v4 instructions this CPU lacks (avx512"),
              std::string::npos)
        << e;
  }
}

// XXH3 64 as xxHash defines it (the empty input's published value), and the streamed file
// checksum equal to the one-shot one across several 64 KiB reads.
TEST(PlanUtil, Xxh3MatchesTheReferenceAndStreamsFiles) {
  EXPECT_EQ(tgc::plan::xxh3("", 0), 0x2D06800538D394C2ull);
  std::string data(200000, '\0');
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = (char)(i * 131 + (i >> 9));
  std::string path = tmpDir() + "/xxh3_stream.bin";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(data.data(), data.size());
  uint64_t h = 0;
  ASSERT_TRUE(tgc::plan::xxh3File(path, h));
  EXPECT_EQ(h, tgc::plan::xxh3(data.data(), data.size()));
  EXPECT_NE(h, tgc::plan::xxh3(data.data(), data.size() - 1));
  EXPECT_FALSE(tgc::plan::xxh3File(tmpDir() + "/no_such_file", h));
}

TEST_F(SmallPackage, RefusesWrongMagic) {
  std::string d = copy("magic.tgpkg");
  auto p = readPlan(d);
  p.set_magic(0x12345678);
  writePlan(d, p);
  std::string e = loadError(d);
  EXPECT_NE(e.find("bad magic 0x12345678"), std::string::npos) << e;
}

TEST_F(SmallPackage, RefusesMissingKernelSymbol) {
  std::string d = copy("sym.tgpkg");
  auto p = readPlan(d);
  ASSERT_GT(p.steps_size(), 0);
  p.mutable_steps(0)->set_symbol("tgk_does_not_exist");
  writePlan(d, p);
  std::string e = loadError(d);
  EXPECT_NE(e.find("kernel symbol 'tgk_does_not_exist' of step 0 not found"), std::string::npos)
      << e;
}

TEST_F(SmallPackage, RefusesArenaOffsetBeyondArena) {
  std::string d = copy("arena.tgpkg");
  auto p = readPlan(d);
  bool changed = false;
  for (auto &s : *p.mutable_steps())
    for (auto &a : *s.mutable_args())
      if (a.kind() == tgc::plan::ARENA && !changed) {
        a.set_offset(p.arena_bytes() + 64);
        changed = true;
      }
  ASSERT_TRUE(changed);
  writePlan(d, p);
  std::string e = loadError(d);
  EXPECT_NE(e.find("lies outside the arena"), std::string::npos) << e;
}

TEST_F(SmallPackage, RefusesCorruptKernels) {
  std::string d = copy("kern.tgpkg");
  std::ofstream(d + "/kernels.so", std::ios::binary | std::ios::app) << "x";
  EXPECT_NE(loadError(d).find("kernels.so checksum mismatch"), std::string::npos);
}

TEST_F(SmallPackage, RefusesBadInputIndexAndVersion) {
  std::string d = copy("idx.tgpkg");
  auto p = readPlan(d);
  tgc::plan::Plan q = p;
  for (auto &s : *q.mutable_steps())
    for (auto &a : *s.mutable_args())
      if (a.kind() == tgc::plan::INPUT)
        a.set_index(7);
  writePlan(d, q);
  EXPECT_NE(loadError(d).find("input index 7 out of range"), std::string::npos);
  q = p;
  q.set_format_version(99);
  writePlan(d, q);
  EXPECT_NE(loadError(d).find("package format 99, this runtime reads"), std::string::npos);
}

// The host compiler runs through llvm::sys::ExecuteAndWait: one not on $PATH is named in the
// error; one that fails has its first error quoted from the log; a compiled object is published
// to the kernel cache under a unique temporary name, then renamed (nothing else is left there).
TEST(CpuBackend, HostCompilerErrorsAndCachePublish) {
  const char *saved = std::getenv("TGC_CXX");
  const std::string savedValue = saved ? saved : "";
  auto build = [](const std::string &name, const std::string &cache) -> std::string {
    mlir::MLIRContext ctx;
    ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>();
    auto module = mlir::parseSourceString<mlir::ModuleOp>(kSmallIRValid, &ctx);
    if (!module)
      return "IR does not parse";
    tgc::PackageInfo info;
    info.tgcVersion = "test";
    info.modelName = name;
    auto stats = tgc::writeCpuPackage(*module, tmpDir() + "/" + name, info, cache);
    return stats ? "" : llvm::toString(stats.takeError());
  };
  setenv("TGC_CXX", "tgc-no-such-compiler --version", 1);
  std::string e = build("nocxx.tgpkg", "");
  EXPECT_NE(e.find("cannot run the host compiler 'tgc-no-such-compiler'"), std::string::npos) << e;
  setenv("TGC_CXX", "c++ -include /nonexistent/tgc-missing-header.h", 1);
  e = build("badcxx.tgpkg", "");
  EXPECT_NE(e.find("kernel compilation failed (c++ -include"), std::string::npos) << e;
  EXPECT_NE(e.find("tgc-missing-header.h"), std::string::npos) << e; // quoted from the log
  saved ? setenv("TGC_CXX", savedValue.c_str(), 1) : unsetenv("TGC_CXX");
  const std::string cache = tmpDir() + "/publish_cache";
  fs::remove_all(cache);
  ASSERT_EQ(build("cached.tgpkg", cache), "");
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(cache))
    names.push_back(entry.path().filename().string());
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(fs::path(names[0]).extension(), ".so") << names[0];
  EXPECT_FALSE(fs::exists(tmpDir() + "/cached.tgpkg/kernels.log")); // removed after success
}

TEST_F(SmallPackage, CApi) {
  char *err = nullptr;
  EXPECT_EQ(tgc_session_load((tmpDir() + "/nonexistent.tgpkg").c_str(), 1, &err), nullptr);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("plan.pb"), std::string::npos) << err;
  tgc_free_error(err);

  tgc_session *s = tgc_session_load(dir_->c_str(), 1, &err);
  ASSERT_NE(s, nullptr) << err;
  ASSERT_EQ(tgc_session_num_io(s, 0), 2u);
  ASSERT_EQ(tgc_session_num_io(s, 1), 2u);
  const char *name;
  int32_t dtype, rank;
  const int64_t *dims;
  ASSERT_EQ(tgc_session_io(s, 0, 1, &name, &dtype, &rank, &dims), 0);
  EXPECT_STREQ(name, "ids");
  EXPECT_EQ(dtype, 7);
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(tgc_session_io(s, 0, 2, &name, &dtype, &rank, &dims), -1);

  auto in = goodInputs();
  int64_t xd[] = {2, 50}, kd[] = {1, 32};
  std::vector<float> y(100);
  std::vector<int64_t> ko(32);
  tgc_tensor ins[] = {{1, 2, xd, in[0].data.data(), in[0].data.size()},
                      {7, 2, kd, in[1].data.data(), in[1].data.size()}};
  tgc_tensor outs[] = {{1, 2, xd, y.data(), y.size() * 4}, {7, 2, kd, ko.data(), ko.size() * 8}};
  ASSERT_EQ(tgc_session_run(s, ins, 2, outs, 2, &err), 0) << err;
  EXPECT_NEAR(y[0], 0.25 * 12.25 + 0.5, 1e-4); // row 0: 0.25 * (0 + 0.01 + ... + 0.49) + 0.5
  EXPECT_EQ(ko[31], 26);
  ins[1].dtype = 1;
  EXPECT_EQ(tgc_session_run(s, ins, 2, outs, 2, &err), -1);
  ASSERT_NE(err, nullptr);
  EXPECT_STREQ(err, "input 'ids': expected i64 [1, 32], got f32 [1, 32]");
  tgc_free_error(err);
  ins[1].dtype = 12345;
  EXPECT_EQ(tgc_session_run(s, ins, 2, outs, 2, &err), -1);
  tgc_free_error(err);
  outs[0].bytes = 4;
  ins[1].dtype = 7;
  EXPECT_EQ(tgc_session_run(s, ins, 2, outs, 2, &err), -1);
  EXPECT_NE(std::string(err).find("output 'y'"), std::string::npos) << err;
  tgc_free_error(err);
  EXPECT_NE(std::string(tgc_session_describe(s)).find("tgk_0_linear"), std::string::npos);
  tgc_session_free(s);
}

// `tgc bench --omit` words (plan::stepOmitted): "gemm" every GEMM step, "gemm:<text>" the GEMM
// steps whose label has the text, other words the kernel steps whose symbol has them.
TEST(PlanUtil, OmitWordsSelectSteps) {
  tgc::plan::Step gemm, kernel;
  gemm.set_kind(tgc::plan::Step::GEMM);
  gemm.set_label("tg.fused \"gemm\" [linear, add] <- /m/h.0/attn/c_proj/Reshape_1, /m/h.0/Add");
  kernel.set_kind(tgc::plan::Step::KERNEL);
  kernel.set_symbol("tgk_5_attention");
  kernel.set_label("tg.attention <- /m/h.0/attn/MatMul");
  using W = std::vector<std::string>;
  EXPECT_TRUE(tgc::plan::stepOmitted(gemm, W{"gemm"}));
  EXPECT_FALSE(tgc::plan::stepOmitted(kernel, W{"gemm"}));
  EXPECT_TRUE(tgc::plan::stepOmitted(gemm, W{"gemm:attn/c_proj"}));
  EXPECT_FALSE(tgc::plan::stepOmitted(gemm, W{"gemm:mlp/c_fc"}));
  EXPECT_FALSE(tgc::plan::stepOmitted(kernel, W{"gemm:attn"})) << "gemm: matches GEMM steps only";
  EXPECT_TRUE(tgc::plan::stepOmitted(kernel, W{"attention"}));
  EXPECT_FALSE(tgc::plan::stepOmitted(gemm, W{"attention"})) << "words match kernel symbols";
  EXPECT_FALSE(tgc::plan::stepOmitted(kernel, W{"c_proj"})) << "words match symbols, not labels";
  EXPECT_TRUE(tgc::plan::stepOmitted(kernel, W{"norm", "attention"}));
  EXPECT_FALSE(tgc::plan::stepOmitted(kernel, W{}));
}

// One block per multiprocessor: the dynamic shared memory is padded just past half of a
// multiprocessor's (H100/H200 figures: 228 KB per SM, 1 KB reserved per block, 227 KB per block).
TEST(PlanUtil, OneBlockPerSmPadsSharedMemoryWhenTheGridFits) {
  tgc::plan::Step s;
  s.set_kind(tgc::plan::Step::KERNEL);
  s.set_shared_bytes(36864);
  const int64_t perSm = 233472, reserved = 1024, perBlock = 232448;
  EXPECT_EQ(tgc::plan::launchSharedBytes(s, 96, 132, perSm, reserved, perBlock), 36864u)
      << "unmarked steps keep their own";
  s.set_one_block_per_sm(true);
  const uint32_t padded = tgc::plan::launchSharedBytes(s, 96, 132, perSm, reserved, perBlock);
  EXPECT_GT(2 * (padded + reserved), perSm) << "a second block must not fit";
  EXPECT_LE(2 * (padded - 16 + reserved), perSm) << "the least such size (16-byte steps)";
  EXPECT_EQ(padded % 16, 0u);
  EXPECT_EQ(tgc::plan::launchSharedBytes(s, 132, 132, perSm, reserved, perBlock), padded);
  EXPECT_EQ(tgc::plan::launchSharedBytes(s, 156, 132, perSm, reserved, perBlock), 36864u)
      << "a grid over the multiprocessors would need a second wave";
  EXPECT_EQ(tgc::plan::launchSharedBytes(s, 96, 132, perSm, reserved, 100000), 36864u)
      << "more than one block may have";
  EXPECT_EQ(tgc::plan::launchSharedBytes(s, 96, 132, 0, 0, 0), 36864u) << "unknown device";
  s.set_shared_bytes(200000);
  EXPECT_EQ(tgc::plan::launchSharedBytes(s, 96, 132, perSm, reserved, perBlock), 200000u);
}

// f16 on the CPU backend (storage type, float math): a package of Exp over f16 compiles, loads
// and computes exp of each value rounded once to f16 (the CPU backend refused f16 before).
TEST(CpuBackend, RunsF16Packages) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(R"(
func.func @main(%x: tensor<4xf16>) -> tensor<4xf16> {
  %0 = tg.exp %x : tensor<4xf16> loc("Exp_7")
  return %0 : tensor<4xf16>
}
)",
                                                        &ctx);
  ASSERT_TRUE(module);
  const std::string dir = tmpDir() + "/f16.tgpkg";
  auto r = tgc::writeCpuPackage(*module, dir, {}, "");
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  tgc::Status st;
  auto s = tgc::Session::load(dir, st);
  ASSERT_TRUE(s) << st.message;
  tgc::HostTensor x = tgc::HostTensor::zeros(tgc::DType::F16, {4});
  const float in[4] = {-1.5f, 0.0f, 0.5f, 3.0f};
  for (int i = 0; i < 4; ++i)
    x.as<uint16_t>()[i] = tgc::floatToHalf(in[i]);
  std::vector<tgc::HostTensor> out;
  st = s->run({x}, out);
  ASSERT_TRUE(st.ok) << st.message;
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].dtype, tgc::DType::F16);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out[0].as<uint16_t>()[i], tgc::floatToHalf(std::exp(tgc::halfToFloat(x.as<uint16_t>()[i]))))
        << "element " << i;
}

} // namespace
