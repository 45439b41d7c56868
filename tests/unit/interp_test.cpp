// interp_test.cpp — unit tests of the `tg` reference interpreter (compiler/interp).
//
// Each case parses a small function in the tg dialect, runs it, and compares with values worked
// out by hand (or with numpy, noted where used). Every test fails if its feature breaks.
#include "compiler/dialect/TgDialect.h"
#include "compiler/interp/Interpreter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

using namespace tgc;

namespace {

HostTensor make(DType t, std::vector<int64_t> shape, std::vector<double> values,
                std::string name = "") {
  HostTensor h = HostTensor::zeros(t, std::move(shape), std::move(name));
  EXPECT_EQ(static_cast<int64_t>(values.size()), h.numel());
  for (size_t i = 0; i < values.size(); ++i)
    h.set(i, values[i]);
  return h;
}
HostTensor f32(std::vector<int64_t> shape, std::vector<double> v) {
  return make(DType::F32, std::move(shape), std::move(v));
}
HostTensor i64(std::vector<int64_t> shape, std::vector<double> v) {
  return make(DType::I64, std::move(shape), std::move(v));
}

std::vector<double> values(const HostTensor &t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i)
    v.push_back(t.get(i));
  return v;
}

void expectNear(const HostTensor &t, const std::vector<double> &want, double tol = 1e-5) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(t.get(i), want[i], tol * std::max(1.0, std::fabs(want[i]))) << "element " << i;
}

class InterpTest : public ::testing::Test {
protected:
  InterpTest() { ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>(); }

  /// Parses `src` and returns its first function.
  mlir::func::FuncOp parse(const std::string &src) {
    module = mlir::parseSourceString<mlir::ModuleOp>(src, &ctx);
    if (!module)
      return {};
    auto fns = module->getOps<mlir::func::FuncOp>();
    return fns.empty() ? mlir::func::FuncOp() : *fns.begin();
  }

  /// Runs `src` on `inputs`; fails the test on an error.
  std::vector<HostTensor> run(const std::string &src, const std::vector<HostTensor> &inputs) {
    auto fn = parse(src);
    EXPECT_TRUE(fn) << "parse failed:\n" << src;
    if (!fn)
      return {};
    auto r = interpret(fn, inputs);
    if (!r) {
      ADD_FAILURE() << llvm::toString(r.takeError());
      return {};
    }
    return std::move(*r);
  }

  /// Runs `src` and returns the error message ("" when it succeeded).
  std::string runError(const std::string &src, const std::vector<HostTensor> &inputs) {
    auto fn = parse(src);
    EXPECT_TRUE(fn);
    if (!fn)
      return "no function";
    auto r = interpret(fn, inputs);
    return r ? "" : llvm::toString(r.takeError());
  }

  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

TEST_F(InterpTest, BroadcastAdd) {
  auto r = run(R"(
    func.func @main(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
      %0 = tg.add %a, %b : tensor<2x1xf32>, tensor<3xf32> -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })",
               {f32({2, 1}, {10, 20}), f32({3}, {1, 2, 3})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r[0].name, "output_0");
  expectNear(r[0], {11, 12, 13, 21, 22, 23});
}

TEST_F(InterpTest, IntegerDivModAndCompare) {
  auto r = run(R"(
    func.func @main(%a: tensor<4xi64>, %b: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi1>) {
      %0 = tg.div %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
      %1 = tg.mod %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
      %2 = tg.less %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi1>
      return %0, %1, %2 : tensor<4xi64>, tensor<4xi64>, tensor<4xi1>
    })",
               {i64({4}, {7, -7, 7, -7}), i64({4}, {2, 2, -2, -2})});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(values(r[0]), (std::vector<double>{3, -3, -3, 3}));  // truncating
  EXPECT_EQ(values(r[1]), (std::vector<double>{1, 1, -1, -1}));  // sign of the divisor
  EXPECT_EQ(r[2].dtype, DType::Bool);
  EXPECT_EQ(values(r[2]), (std::vector<double>{0, 1, 0, 1}));
}

TEST_F(InterpTest, IntegerDivisionByZeroIsAnError) {
  std::string err = runError(R"(
    func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<2xi32> {
      %0 = tg.div %a, %b : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
      return %0 : tensor<2xi32>
    })",
                             {make(DType::I32, {2}, {1, 2}), make(DType::I32, {2}, {1, 0})});
  EXPECT_NE(err.find("tg.div"), std::string::npos) << err;
  EXPECT_NE(err.find("division by zero"), std::string::npos) << err;
}

TEST_F(InterpTest, UnaryRoundGeluFloatMod) {
  auto r = run(R"(
    func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
      %0 = tg.round %a : tensor<4xf32>
      %1 = tg.gelu %b : tensor<4xf32>
      %2 = tg.gelu %b {tanh_approx = true} : tensor<4xf32>
      %3 = tg.mod %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    })",
               {f32({4}, {0.5, 1.5, 2.5, -2.5}), f32({4}, {-1, 0, 1, 2})});
  ASSERT_EQ(r.size(), 4u);
  expectNear(r[0], {0, 2, 2, -2}); // half to even
  expectNear(r[1], {-0.15865525393145707, 0, 0.8413447460685429, 1.9544997361036416});
  expectNear(r[2], {-0.15880800939172324, 0, 0.8411919906082768, 1.954597694087775});
  EXPECT_NEAR(r[3].get(0), std::fmod(0.5, -1.0), 1e-6); // fmod: sign of the dividend
  EXPECT_TRUE(std::isnan(r[3].get(1)));
  EXPECT_NEAR(r[3].get(3), std::fmod(-2.5, 2.0), 1e-6);
}

TEST_F(InterpTest, MatmulBatchBroadcastAndRank1) {
  // lhs [2,1,2,2] = arange(8), rhs [3,2,2] = arange(12) - 5; expected from numpy.
  std::vector<double> a, b;
  for (int i = 0; i < 8; ++i)
    a.push_back(i);
  for (int i = 0; i < 12; ++i)
    b.push_back(i - 5);
  auto r = run(R"(
    func.func @main(%a: tensor<2x1x2x2xf32>, %b: tensor<3x2x2xf32>, %v: tensor<2xf32>) -> (tensor<2x3x2x2xf32>, tensor<3x2xf32>) {
      %0 = tg.matmul %a, %b : tensor<2x1x2x2xf32>, tensor<3x2x2xf32> -> tensor<2x3x2x2xf32>
      %1 = tg.matmul %v, %b : tensor<2xf32>, tensor<3x2x2xf32> -> tensor<3x2xf32>
      return %0, %1 : tensor<2x3x2x2xf32>, tensor<3x2xf32>
    })",
               {f32({2, 1, 2, 2}, a), f32({3, 2, 2}, b), f32({2}, {1, -1})});
  ASSERT_EQ(r.size(), 2u);
  expectNear(r[0], {-3, -2, -19, -14, 1, 2, 1, 6, 5, 6, 21, 26,
                    -35, -26, -51, -38, 1, 10, 1, 14, 37, 46, 53, 66});
  // [1,-1] @ [[-5,-4],[-3,-2]] = [-2,-2]; each batch adds 4 to every entry of both rows.
  expectNear(r[1], {-2, -2, -2, -2, -2, -2});
}

TEST_F(InterpTest, LinearWithBias) {
  auto r = run(R"(
    func.func @main(%x: tensor<2x3xf32>, %w: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x2xf32> {
      %0 = tg.linear %x, %w, %b : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32> -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })",
               {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5}),
                f32({2}, {10, -1})});
  ASSERT_EQ(r.size(), 1u);
  // row 0: [1-3, 3] + b = [8, 2]; row 1: [4-6, 7.5] + b = [8, 6.5]
  expectNear(r[0], {8, 2, 8, 6.5});
}

TEST_F(InterpTest, LayerNormScaleBias) {
  auto r = run(R"(
    func.func @main(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
      %0 = tg.layer_norm %x, %s, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
      return %0 : tensor<2x4xf32>
    })",
               {f32({2, 4}, {1, 2, 3, 4, 2, 2, 2, 6}), f32({4}, {1, 2, 0.5, 1}),
                f32({4}, {0, 1, 0, -1})});
  ASSERT_EQ(r.size(), 1u);
  // numpy: (x - mean) / sqrt(var + 1e-5) * s + b, biased variance
  expectNear(r[0], {-1.3416354199689269, 0.105576386687382, 0.2236059033281545,
                    0.3416354199689269, -0.5773493069415827, -0.15469861388316541,
                    -0.28867465347079135, 0.7320479208247481});
}

TEST_F(InterpTest, RotaryBothLayoutsAndSwiglu) {
  auto r = run(R"(
    func.func @main(%x: tensor<1x4xf32>, %c: tensor<4xf32>, %s: tensor<1xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x2xf32>) {
      %0 = tg.rotary %x, %c, %s : tensor<1x4xf32>, tensor<4xf32>, tensor<1xf32> -> tensor<1x4xf32>
      %1 = tg.rotary %x, %c, %s {interleaved = true} : tensor<1x4xf32>, tensor<4xf32>, tensor<1xf32> -> tensor<1x4xf32>
      %2 = tg.swiglu %x : tensor<1x4xf32> -> tensor<1x2xf32>
      return %0, %1, %2 : tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x2xf32>
    })",
               {f32({1, 4}, {1, -2, 3, 0.5}), f32({4}, {0.5, 1, 2, 0}), f32({1}, {10})});
  ASSERT_EQ(r.size(), 3u);
  // rotate_half(x) = [-3, -0.5, 1, -2]; interleaved rotate(x) = [2, 1, -0.5, 3]
  expectNear(r[0], {0.5 - 30, -2 - 5, 6 + 10, 0 - 20});
  expectNear(r[1], {0.5 + 20, -2 + 10, 6 - 5, 0 + 30});
  // silu(1) * 3, silu(-2) * 0.5
  expectNear(r[2], {0.7310585786300049 * 3, -0.2384058440442351 * 0.5});
}

TEST_F(InterpTest, SoftmaxAndLogSoftmax) {
  auto r = run(R"(
    func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
      %0 = tg.softmax %x {axis = 1 : i64} : tensor<2x3xf32>
      %1 = tg.softmax %x {axis = -1 : i64, log = true} : tensor<2x3xf32>
      return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
    })",
               {f32({2, 3}, {1, 2, 3, 1001, 1002, 1003})}); // large row: needs max subtraction
  ASSERT_EQ(r.size(), 2u);
  std::vector<double> sm{0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
  std::vector<double> lsm{-2.40760596444438, -1.4076059644443801, -0.4076059644443803};
  expectNear(r[0], {sm[0], sm[1], sm[2], sm[0], sm[1], sm[2]});
  expectNear(r[1], {lsm[0], lsm[1], lsm[2], lsm[0], lsm[1], lsm[2]});
}

TEST_F(InterpTest, ReduceKeepdimsAndEmptyAxes) {
  auto r = run(R"(
    func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<3xf32>, tensor<1x1xf32>, tensor<2x3xf32>) {
      %0 = tg.reduce_sum %x {axes = [1], keepdims = true} : tensor<2x3xf32> -> tensor<2x1xf32>
      %1 = tg.reduce_max %x {axes = [0], keepdims = false} : tensor<2x3xf32> -> tensor<3xf32>
      %2 = tg.reduce_mean %x {axes = [0, -1], keepdims = true} : tensor<2x3xf32> -> tensor<1x1xf32>
      %3 = tg.reduce_prod %x {axes = [], keepdims = true} : tensor<2x3xf32> -> tensor<2x3xf32>
      return %0, %1, %2, %3 : tensor<2x1xf32>, tensor<3xf32>, tensor<1x1xf32>, tensor<2x3xf32>
    })",
               {f32({2, 3}, {1, 5, 3, 4, 2, 6})});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{2, 1}));
  expectNear(r[0], {9, 12});
  expectNear(r[1], {4, 5, 6});
  expectNear(r[2], {3.5});
  expectNear(r[3], {1, 5, 3, 4, 2, 6}); // empty axes: no reduction
}

TEST_F(InterpTest, ArgMaxFirstAndLast) {
  auto r = run(R"(
    func.func @main(%x: tensor<2x3xf32>) -> (tensor<2xi64>, tensor<2x1xi64>) {
      %0 = tg.argmax %x {axis = 1 : i64, keepdims = false} : tensor<2x3xf32> -> tensor<2xi64>
      %1 = tg.argmax %x {axis = 1 : i64, keepdims = true, select_last = true} : tensor<2x3xf32> -> tensor<2x1xi64>
      return %0, %1 : tensor<2xi64>, tensor<2x1xi64>
    })",
               {f32({2, 3}, {3, 1, 3, 0, 7, 2})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(values(r[0]), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(r[1]), (std::vector<double>{2, 1}));
}

TEST_F(InterpTest, Transpose) {
  std::vector<double> x;
  for (int i = 0; i < 24; ++i)
    x.push_back(i);
  auto r = run(R"(
    func.func @main(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
      %0 = tg.transpose %x {perm = [2, 0, 1]} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
      return %0 : tensor<4x2x3xf32>
    })",
               {f32({2, 3, 4}, x)});
  ASSERT_EQ(r.size(), 1u);
  // result[i][j][k] = x[j][k][i] = 12j + 4k + i
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(r[0].get(i * 6 + j * 3 + k), 12 * j + 4 * k + i);
}

TEST_F(InterpTest, SliceNegativeStep) {
  auto r = run(R"(
    func.func @main(%x: tensor<3x5xf32>) -> tensor<2x3xf32> {
      %0 = tg.slice %x {starts = [2, 4], steps = [-2, -2]} : tensor<3x5xf32> -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })",
               {f32({3, 5}, {0, 1, 2, 3, 4, 10, 11, 12, 13, 14, 20, 21, 22, 23, 24})});
  ASSERT_EQ(r.size(), 1u);
  expectNear(r[0], {24, 22, 20, 4, 2, 0});
}

TEST_F(InterpTest, ConcatSplitExpandPadWhere) {
  auto r = run(R"(
    func.func @main(%a: tensor<2x1xf32>, %b: tensor<2x2xf32>, %c: tensor<2x3xi1>) -> (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x2xf32>, tensor<3x3xf32>, tensor<2x3xf32>) {
      %0 = tg.concat %a, %b {axis = -1 : i64} : tensor<2x1xf32>, tensor<2x2xf32> -> tensor<2x3xf32>
      %1:2 = tg.split %0 {axis = 1 : i64} : tensor<2x3xf32> -> tensor<2x1xf32>, tensor<2x2xf32>
      %2 = tg.expand %a : tensor<2x1xf32> -> tensor<2x2xf32>
      %3 = tg.pad %b {pads = [1, -1, 0, 2], value = 9.0 : f64} : tensor<2x2xf32> -> tensor<3x3xf32>
      %4 = tg.where %c, %0, %a : tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
      return %0, %1#0, %2, %3, %4 : tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x2xf32>, tensor<3x3xf32>, tensor<2x3xf32>
    })",
               {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6}),
                make(DType::Bool, {2, 3}, {1, 0, 1, 0, 1, 0})});
  ASSERT_EQ(r.size(), 5u);
  expectNear(r[0], {1, 3, 4, 2, 5, 6});
  expectNear(r[1], {1, 2});
  expectNear(r[2], {1, 1, 2, 2});
  // rows: one pad row on top; cols: crop the first, append two 9s.
  expectNear(r[3], {9, 9, 9, 4, 9, 9, 6, 9, 9});
  expectNear(r[4], {1, 1, 4, 2, 5, 2});
}

TEST_F(InterpTest, GatherNegativeIndexAndOutOfRange) {
  const char *src = R"(
    func.func @main(%d: tensor<3x2xf32>, %i: tensor<2xi64>) -> tensor<2x2xf32> {
      %0 = tg.gather %d, %i {axis = 0 : i64} : tensor<3x2xf32>, tensor<2xi64> -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })";
  auto data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto r = run(src, {data, i64({2}, {-1, 0})});
  ASSERT_EQ(r.size(), 1u);
  expectNear(r[0], {5, 6, 1, 2});
  std::string err = runError(src, {data, i64({2}, {0, 3})});
  EXPECT_NE(err.find("tg.gather"), std::string::npos) << err;
  EXPECT_NE(err.find("out of range"), std::string::npos) << err;
  EXPECT_NE(runError(src, {data, i64({2}, {-4, 0})}), "");
}

TEST_F(InterpTest, GatherElements) {
  const char *src = R"(
    func.func @main(%d: tensor<2x2xf32>, %i: tensor<2x2xi64>) -> tensor<2x2xf32> {
      %0 = tg.gather_elements %d, %i {axis = 1 : i64} : tensor<2x2xf32>, tensor<2x2xi64> -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })";
  auto data = f32({2, 2}, {1, 2, 3, 4});
  auto r = run(src, {data, i64({2, 2}, {0, 0, -1, 0})});
  ASSERT_EQ(r.size(), 1u);
  expectNear(r[0], {1, 1, 4, 3});
  EXPECT_NE(runError(src, {data, i64({2, 2}, {0, 2, 0, 0})}).find("out of range"),
            std::string::npos);
}

TEST_F(InterpTest, Conv2DPaddingStrideGroup) {
  std::vector<double> x;
  for (int i = 0; i < 18; ++i)
    x.push_back(i);
  auto r = run(R"(
    func.func @main(%x: tensor<1x2x3x3xf32>, %w: tensor<2x1x2x2xf32>, %b: tensor<2xf32>) -> tensor<1x2x2x2xf32> {
      %0 = tg.conv %x, %w, %b {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], group = 2 : i64} : tensor<1x2x3x3xf32>, tensor<2x1x2x2xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32>
      return %0 : tensor<1x2x2x2xf32>
    })",
               {f32({1, 2, 3, 3}, x), f32({2, 1, 2, 2}, {1, 2, 3, 4, -1, 0.5, 2, -2}),
                f32({2}, {0.5, -1})});
  ASSERT_EQ(r.size(), 1u);
  // numpy reference (zero-padded input, per-group 2x2 windows at stride 2)
  expectNear(r[0], {0.5, 11.5, 30.5, 67.5, -19, -3, -25, -9});
}

// Pooling over a 3x3 plane in 2x2 windows at stride 2 with an end pad of 1 (the windows of the
// last row and column overhang it): max over the taps inside the input, average over them or,
// with count_include_pad, over all 4; NaN propagates through max.
TEST_F(InterpTest, PoolMaxAverageCountIncludePadAndNaN) {
  std::vector<double> x;
  for (int i = 0; i < 9; ++i)
    x.push_back(i);
  auto r = run(R"(
    func.func @main(%x: tensor<1x1x3x3xf32>, %n: tensor<1x1x1x2xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) {
      %0 = tg.pool %x {kind = "max", kernel = [2, 2], strides = [2, 2], pads = [0, 0, 1, 1], dilations = [1, 1]} : tensor<1x1x3x3xf32> -> tensor<1x1x2x2xf32>
      %1 = tg.pool %x {kind = "avg", kernel = [2, 2], strides = [2, 2], pads = [0, 0, 1, 1], dilations = [1, 1]} : tensor<1x1x3x3xf32> -> tensor<1x1x2x2xf32>
      %2 = tg.pool %x {kind = "avg", kernel = [2, 2], strides = [2, 2], pads = [0, 0, 1, 1], dilations = [1, 1], count_include_pad = true} : tensor<1x1x3x3xf32> -> tensor<1x1x2x2xf32>
      %3 = tg.pool %n {kind = "max", kernel = [1, 2], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1]} : tensor<1x1x1x2xf32> -> tensor<1x1x1x1xf32>
      return %0, %1, %2, %3 : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>
    })",
               {f32({1, 1, 3, 3}, x), f32({1, 1, 1, 2}, {std::nan(""), 1})});
  ASSERT_EQ(r.size(), 4u);
  expectNear(r[0], {4, 5, 7, 8});
  expectNear(r[1], {2, 3.5, 6.5, 8});
  expectNear(r[2], {2, 1.75, 3.25, 2});
  EXPECT_TRUE(std::isnan(values(r[3])[0]));
}

// tg.math: the function named by `fn`, as libm computes it.
TEST_F(InterpTest, MathFunctions) {
  auto r = run(R"(
    func.func @main(%x: tensor<2xf32>, %y: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
      %0 = tg.math "asin" %x : tensor<2xf32>
      %1 = tg.math "atanh" %x : tensor<2xf32>
      %2 = tg.math "cosh" %x : tensor<2xf32>
      %3 = tg.math "acosh" %y : tensor<2xf32>
      return %0, %1, %2, %3 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
    })",
               {f32({2}, {0.5, -0.25}), f32({2}, {1.5, 0.5})});
  ASSERT_EQ(r.size(), 4u);
  expectNear(r[0], {std::asin(0.5), std::asin(-0.25)});
  expectNear(r[1], {std::atanh(0.5), std::atanh(-0.25)});
  expectNear(r[2], {std::cosh(0.5), std::cosh(-0.25)});
  EXPECT_NEAR(values(r[3])[0], std::acosh(1.5), 1e-6);
  EXPECT_TRUE(std::isnan(values(r[3])[1])) << "acosh below 1 is NaN";
}

TEST_F(InterpTest, CastFloatToIntAndBool) {
  auto r = run(R"(
    func.func @main(%x: tensor<5xf32>) -> (tensor<5xi64>, tensor<5xi1>, tensor<5xf32>) {
      %0 = tg.cast %x : tensor<5xf32> -> tensor<5xi64>
      %1 = tg.cast %x : tensor<5xf32> -> tensor<5xi1>
      %2 = tg.cast %1 : tensor<5xi1> -> tensor<5xf32>
      return %0, %1, %2 : tensor<5xi64>, tensor<5xi1>, tensor<5xf32>
    })",
               {f32({5}, {-1.7, 1.7, 2.5, -0.2, 0})});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(values(r[0]), (std::vector<double>{-1, 1, 2, 0, 0}));
  EXPECT_EQ(values(r[1]), (std::vector<double>{1, 1, 1, 1, 0}));
  EXPECT_EQ(values(r[2]), (std::vector<double>{1, 1, 1, 1, 0}));
}

TEST_F(InterpTest, FusedRegion) {
  auto r = run(R"(
    func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
      %0 = tg.fused "pointwise" (%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
      ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
        %s = tg.sub %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
        %r = tg.relu %s : tensor<4xf32>
        tg.yield %r : tensor<4xf32>
      }
      return %0 : tensor<4xf32>
    })",
               {f32({4}, {1, 2, 3, 4}), f32({4}, {2, 2, 2, 2})});
  ASSERT_EQ(r.size(), 1u);
  expectNear(r[0], {0, 0, 1, 2});
}

TEST_F(InterpTest, ConstantsAndResultNames) {
  auto r = run(R"(
    func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32> {tg.name = "y"}) {
      %c = tg.constant dense<[1.5, -2.0]> : tensor<2xf32>
      %s = tg.constant dense<3.0> : tensor<2xf32>
      %0 = tg.mul %x, %c : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
      %1 = tg.add %0, %s : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
      return %1 : tensor<2xf32>
    })",
               {f32({2}, {2, 3})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].name, "y");
  expectNear(r[0], {6, -3});
}

TEST_F(InterpTest, InterpretRejectsWrongInputs) {
  const char *src = R"(
    func.func @main(%x: tensor<2x3xf32> {tg.name = "pixels"}) -> tensor<2x3xf32> {
      %0 = tg.neg %x : tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })";
  std::string err = runError(src, {f32({3, 2}, {1, 2, 3, 4, 5, 6})});
  EXPECT_NE(err.find("pixels"), std::string::npos) << err;
  EXPECT_NE(err.find("2x3"), std::string::npos) << err;
  err = runError(src, {i64({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_NE(err.find("f32"), std::string::npos) << err;
  EXPECT_NE(runError(src, {}).find("inputs"), std::string::npos);
  HostTensor bad = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  bad.data.resize(8); // malformed: fewer bytes than the shape says
  EXPECT_NE(runError(src, {bad}).find("bytes"), std::string::npos);
}

TEST_F(InterpTest, EvaluateOpAndUnknownOp) {
  ctx.allowUnregisteredDialects();
  auto fn = parse(R"(
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %c = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
      %0 = tg.sqrt %c : tensor<2xf32>
      %1 = "foo.bar"(%0) : (tensor<2xf32>) -> tensor<2xf32>
      return %1 : tensor<2xf32>
    })");
  ASSERT_TRUE(fn);
  auto it = fn.getBody().front().begin();
  mlir::Operation *constant = &*it++, *sqrt = &*it++, *unknown = &*it;
  auto c = evaluateOp(constant, {});
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  expectNear((*c)[0], {1, 2});
  auto s = evaluateOp(sqrt, *c);
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  expectNear((*s)[0], {1, std::sqrt(2.0)});
  auto wrong = evaluateOp(sqrt, {f32({3}, {1, 2, 3})}); // operand shape disagrees with the IR
  ASSERT_FALSE(bool(wrong));
  llvm::consumeError(wrong.takeError());
  auto u = evaluateOp(unknown, *s);
  ASSERT_FALSE(bool(u));
  std::string err = llvm::toString(u.takeError());
  EXPECT_NE(err.find("foo.bar"), std::string::npos) << err;
  EXPECT_NE(err.find("loc("), std::string::npos) << err;
}

TEST_F(InterpTest, AttrRoundTrip) {
  auto ty = [&](DType d, std::vector<int64_t> shape) {
    return mlir::RankedTensorType::get(shape, elementTypeOf(d, &ctx));
  };
  for (DType d : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32,
                  DType::I8, DType::U8, DType::Bool}) {
    auto back = dtypeOf(elementTypeOf(d, &ctx));
    ASSERT_TRUE(bool(back));
    EXPECT_EQ(*back, d);
    HostTensor t = make(d, {2, 2}, {1, 0, 1, 1});
    if (d != DType::Bool)
      t.set(3, -0.5 * (d == DType::U8 ? -500 : 1)); // u8: 250
    auto attr = attrFromTensor(t, ty(d, {2, 2}));
    ASSERT_TRUE(bool(attr)) << dtypeName(d);
    HostTensor u = tensorFromAttr(attr.cast<mlir::ElementsAttr>());
    EXPECT_EQ(u.dtype, d);
    EXPECT_EQ(u.shape, t.shape);
    EXPECT_EQ(u.data, t.data) << dtypeName(d);
    // splat
    HostTensor s = make(d, {3}, {1, 1, 1});
    auto sa = attrFromTensor(s, ty(d, {3}));
    ASSERT_TRUE(bool(sa));
    EXPECT_TRUE(sa.isSplat()) << dtypeName(d);
    EXPECT_EQ(tensorFromAttr(sa.cast<mlir::ElementsAttr>()).data, s.data) << dtypeName(d);
  }
  // f16 bits come through exactly from an attribute parsed as text.
  auto fn = parse(R"(
    func.func @main() -> tensor<2xf16> {
      %c = tg.constant dense<[0.1, 65504.0]> : tensor<2xf16>
      return %c : tensor<2xf16>
    })");
  ASSERT_TRUE(fn);
  auto c = evaluateOp(&fn.getBody().front().front(), {});
  ASSERT_TRUE(bool(c));
  EXPECT_EQ((*c)[0].as<uint16_t>()[0], floatToHalf(0.1f));
  EXPECT_EQ((*c)[0].get(1), 65504.0);
  // mismatched dtype gives a null attribute, not a crash
  EXPECT_FALSE(bool(attrFromTensor(f32({2}, {1, 2}), ty(DType::I64, {2}))));
}

TEST_F(InterpTest, LargeLinearRunsQuickly) {
  const int m = 256, k = 1024, n = 128;
  std::vector<double> x(m * k), w(n * k);
  for (int i = 0; i < m * k; ++i)
    x[i] = (i % 7) - 3;
  for (int i = 0; i < n * k; ++i)
    w[i] = (i % 5) - 2;
  auto fn = parse(R"(
    func.func @main(%x: tensor<256x1024xf32>, %w: tensor<128x1024xf32>) -> tensor<256x128xf32> {
      %0 = tg.linear %x, %w : tensor<256x1024xf32>, tensor<128x1024xf32> -> tensor<256x128xf32>
      return %0 : tensor<256x128xf32>
    })");
  ASSERT_TRUE(fn);
  std::vector<HostTensor> in{f32({m, k}, x), f32({n, k}, w)};
  auto start = std::chrono::steady_clock::now();
  auto r = interpret(fn, in);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  double want = 0;
  for (int kk = 0; kk < k; ++kk)
    want += x[5 * k + kk] * w[7 * k + kk];
  EXPECT_EQ((*r)[0].get(5 * n + 7), want);
  EXPECT_LT(secs, 5.0); // generous: a few hundred ms on a slow core
}

// Cumsum along axis 1, plain, exclusive and reverse-exclusive; an i64 sum beyond 2^53 stays exact.
TEST_F(InterpTest, CumsumExclusiveReverseAndExactIntegers) {
  auto r = run(R"(
    func.func @main(%x: tensor<2x3xf32>, %n: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xi64>) {
      %0 = tg.cumsum %x {axis = 1 : i64} : tensor<2x3xf32>
      %1 = tg.cumsum %x {axis = 1 : i64, exclusive = true} : tensor<2x3xf32>
      %2 = tg.cumsum %x {axis = -1 : i64, exclusive = true, reverse = true} : tensor<2x3xf32>
      %3 = tg.cumsum %n {axis = 0 : i64} : tensor<2xi64>
      return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xi64>
    })",
               {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i64({2}, {9007199254740993.0, 0})});
  ASSERT_EQ(r.size(), 4u);
  expectNear(r[0], {1, 3, 6, 4, 9, 15});
  expectNear(r[1], {0, 1, 3, 0, 4, 9});
  expectNear(r[2], {5, 3, 0, 11, 6, 0});
  EXPECT_EQ(r[3].as<int64_t>()[1], r[3].as<int64_t>()[0]);
}

// Scatter along axis 1: a negative index wraps, an out-of-range one writes nothing, duplicates
// are applied in order (none: the last wins; add sums; max keeps the largest).
TEST_F(InterpTest, ScatterElementsReductionsNegativeAndOutOfRange) {
  const char *src = R"(
    func.func @main(%d: tensor<2x4xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
      %0 = tg.scatter_elements %d, %i, %u {axis = 1 : i64} : tensor<2x4xf32>, tensor<2x3xi64>, tensor<2x3xf32> -> tensor<2x4xf32>
      %1 = tg.scatter_elements %d, %i, %u {axis = 1 : i64, reduction = "add"} : tensor<2x4xf32>, tensor<2x3xi64>, tensor<2x3xf32> -> tensor<2x4xf32>
      %2 = tg.scatter_elements %d, %i, %u {axis = 1 : i64, reduction = "max"} : tensor<2x4xf32>, tensor<2x3xi64>, tensor<2x3xf32> -> tensor<2x4xf32>
      return %0, %1, %2 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
    })";
  auto r = run(src, {f32({2, 4}, {1, 1, 1, 1, 2, 2, 2, 2}), i64({2, 3}, {0, 0, -1, 1, 4, -5}),
                     f32({2, 3}, {5, 7, 9, 3, 8, 8})});
  ASSERT_EQ(r.size(), 3u);
  expectNear(r[0], {7, 1, 1, 9, 2, 3, 2, 2});
  expectNear(r[1], {13, 1, 1, 10, 2, 5, 2, 2});
  expectNear(r[2], {7, 1, 1, 9, 2, 3, 2, 2});
}

// Top-2 along axis 1, largest and smallest: ties by lower index first, NaN largest.
TEST_F(InterpTest, TopkTiesAndNaN) {
  auto r = run(R"(
    func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>, tensor<2x2xf32>, tensor<2x2xi64>) {
      %0:2 = tg.topk %x {axis = 1 : i64} : tensor<2x4xf32> -> tensor<2x2xf32>, tensor<2x2xi64>
      %1:2 = tg.topk %x {axis = 1 : i64, largest = false} : tensor<2x4xf32> -> tensor<2x2xf32>, tensor<2x2xi64>
      return %0#0, %0#1, %1#0, %1#1 : tensor<2x2xf32>, tensor<2x2xi64>, tensor<2x2xf32>, tensor<2x2xi64>
    })",
               {f32({2, 4}, {3, 1, 3, 1, 0, std::nan(""), 5, -2})});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(values(r[0])[0], 3);
  EXPECT_EQ(values(r[0])[1], 3);
  EXPECT_TRUE(std::isnan(values(r[0])[2]));
  EXPECT_EQ(values(r[0])[3], 5);
  expectNear(r[1], {0, 2, 1, 2});
  expectNear(r[2], {1, 1, -2, 0});
  expectNear(r[3], {1, 3, 3, 0});
}

// Data-dependent extents: results at their upper bound, zero past the count. nonzero's
// coordinates in row-major order; unique sorted (the inverse follows the sort) and by first
// occurrence; nms keeps box 0, suppresses box 1 (IoU 0.81 > 0.5) and keeps box 2.
TEST_F(InterpTest, NonzeroUniqueNmsPadAndCount) {
  auto r = run(R"(
    func.func @main(%x: tensor<2x3xf32>, %u: tensor<5xf32>, %b: tensor<1x3x4xf32>, %s: tensor<1x1x3xf32>) -> (tensor<2x6xi64>, tensor<i64>, tensor<5xf32>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>, tensor<5xf32>, tensor<3x3xi64>, tensor<i64>) {
      %0:2 = tg.nonzero %x : tensor<2x3xf32> -> tensor<2x6xi64>, tensor<i64>
      %1:5 = tg.unique %u {axis = 0 : i64} : tensor<5xf32> -> tensor<5xf32>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>
      %2:5 = tg.unique %u {axis = 0 : i64, sorted = false} : tensor<5xf32> -> tensor<5xf32>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>
      %3:2 = tg.nms %b, %s {center_point_box = false, has_score_threshold = false, iou_threshold = 0.5 : f64, max_per_class = 3 : i64, score_threshold = 0.0 : f64} : tensor<1x3x4xf32>, tensor<1x1x3xf32> -> tensor<3x3xi64>, tensor<i64>
      return %0#0, %0#1, %1#0, %1#1, %1#2, %1#3, %1#4, %2#0, %3#0, %3#1 : tensor<2x6xi64>, tensor<i64>, tensor<5xf32>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>, tensor<5xf32>, tensor<3x3xi64>, tensor<i64>
    })",
               {f32({2, 3}, {0, 1, 0, 2, 0, 3}), f32({5}, {2, 1, 2, 3, 1}),
                f32({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3}),
                f32({1, 1, 3}, {0.9f, 0.8f, 0.7f})});
  ASSERT_EQ(r.size(), 10u);
  expectNear(r[0], {0, 1, 1, 0, 0, 0, 1, 0, 2, 0, 0, 0});
  expectNear(r[1], {3});
  expectNear(r[2], {1, 2, 3, 0, 0});
  expectNear(r[3], {1, 0, 3, 0, 0});
  expectNear(r[4], {1, 0, 1, 2, 0});
  expectNear(r[5], {2, 2, 1, 0, 0});
  expectNear(r[6], {3});
  expectNear(r[7], {2, 1, 3, 0, 0});
  expectNear(r[8], {0, 0, 0, 0, 0, 2, 0, 0, 0});
  expectNear(r[9], {2});
}


// tg.bitwise / tg.bitwise_not: the low bits of the element type (i8 sign-extended, u8 and u64
// as their bits); shifts by the bit width or more give 0 in both directions.
TEST_F(InterpTest, BitwiseOpsAndShiftsPastTheWidth) {
  auto r = run(R"(
    func.func @main(%a: tensor<4xi8>, %b: tensor<4xi8>, %u: tensor<5xui8>, %s: tensor<5xui8>, %w: tensor<3xui64>, %k: tensor<3xui64>) -> (tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<5xui8>, tensor<5xui8>, tensor<3xui64>, tensor<3xui64>) {
      %0 = tg.bitwise "and" %a, %b : tensor<4xi8>, tensor<4xi8> -> tensor<4xi8>
      %1 = tg.bitwise "or" %a, %b : tensor<4xi8>, tensor<4xi8> -> tensor<4xi8>
      %2 = tg.bitwise "xor" %a, %b : tensor<4xi8>, tensor<4xi8> -> tensor<4xi8>
      %3 = tg.bitwise_not %a : tensor<4xi8>
      %4 = tg.bitwise "shift_left" %u, %s : tensor<5xui8>, tensor<5xui8> -> tensor<5xui8>
      %5 = tg.bitwise "shift_right" %u, %s : tensor<5xui8>, tensor<5xui8> -> tensor<5xui8>
      %6 = tg.bitwise "shift_left" %w, %k : tensor<3xui64>, tensor<3xui64> -> tensor<3xui64>
      %7 = tg.bitwise "shift_right" %w, %k : tensor<3xui64>, tensor<3xui64> -> tensor<3xui64>
      return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<5xui8>, tensor<5xui8>, tensor<3xui64>, tensor<3xui64>
    })",
               {make(DType::I8, {4}, {-1, -128, 85, 0}), make(DType::I8, {4}, {15, 127, -86, -1}),
                make(DType::U8, {5}, {255, 255, 1, 129, 200}),
                make(DType::U8, {5}, {1, 7, 8, 9, 200}), make(DType::U64, {3}, {1, 3, 1}),
                make(DType::U64, {3}, {63, 64, 200})});
  ASSERT_EQ(r.size(), 8u);
  expectNear(r[0], {15, 0, 0, 0});
  expectNear(r[1], {-1, -1, -1, -1});
  expectNear(r[2], {-16, -1, -1, -1});
  expectNear(r[3], {0, 127, -86, -1});
  expectNear(r[4], {254, 128, 0, 0, 0});
  expectNear(r[5], {127, 1, 0, 0, 0});
  EXPECT_EQ(r[6].as<uint64_t>()[0], uint64_t(1) << 63);
  EXPECT_EQ(r[6].as<uint64_t>()[1], 0u);
  EXPECT_EQ(r[6].as<uint64_t>()[2], 0u);
  expectNear(r[7], {0, 0, 0});
}

} // namespace
