// cpu_vs_interp_test.cpp — compiled CPU packages agree with the reference interpreter on ops and
// layouts the runtime_test does not cover (strided slices, pads, broadcasts, grouped convs, ...).
#include "codegen/common/EmitUtil.h"
#include "codegen/cpu/CpuBackend.h"
#include "compiler/interp/Interpreter.h"
#include "runtime/CpuLevel.h"
#include "runtime/Session.h"
#include "tests/unit/attention_edge_cases.h"

#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <fstream>

#include <cmath>
#include <functional>
#include <cstdlib>

namespace {

std::string tmpDir() {
  const char *t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

tgc::HostTensor randomTensor(tgc::DType t, std::vector<int64_t> shape, uint32_t seed) {
  auto h = tgc::HostTensor::zeros(t, shape);
  uint32_t s = seed * 2654435761u + 7u;
  for (int64_t i = 0; i < h.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    double v = (double)((s >> 8) & 0xffff) / 16384.0 - 2.0; // [-2, 2)
    h.set(i, t == tgc::DType::I64 ? std::floor(v * 2) : v); // i64 in [-4, 4): valid gather indices
  }
  return h;
}

/// Parses `ir`, writes it as a CPU package `name` for `target` ("cpu": x86-64-v2; "cpu:<level>"
/// for that level) and loads it on `threads` threads.
struct Loaded {
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<tgc::Session> session;
};
void compileAndLoad(Loaded &l, const std::string &ir, const std::string &name, int threads,
                    const std::string &target) {
  l.ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>();
  l.module = mlir::parseSourceString<mlir::ModuleOp>(ir, &l.ctx);
  ASSERT_TRUE(l.module);
  tgc::PackageInfo info;
  info.target = target;
  const std::string dir = tmpDir() + "/" + name;
  auto stats = tgc::writeCpuPackage(*l.module, dir, info, tmpDir() + "/kcache");
  ASSERT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  tgc::Status st;
  // Every step on all `threads`: the cases that split loops across the pool must run them split,
  // whatever the load-time timing of each step's thread count would choose (CpuStepThreads.h).
  setenv("TGC_CPU_TUNE", "0", 1);
  l.session = tgc::Session::load(dir, st, threads);
  unsetenv("TGC_CPU_TUNE");
  ASSERT_TRUE(l.session) << st.message;
}

/// Compiles `ir`, runs it (on `threads` threads) and the interpreter on the same random inputs
/// (argument a seeded a + 1, then changed by `edit(a, args, x)` when given), compares every
/// output and hands the session's outputs to `gotOut` when given.
void compareWithInterpreter(
    const std::string &ir, const std::string &name, int threads = 2,
    const std::string &target = "cpu",
    const std::function<void(size_t, size_t, tgc::HostTensor &)> &edit = nullptr,
    std::vector<tgc::HostTensor> *gotOut = nullptr) {
  Loaded l;
  compileAndLoad(l, ir, name, threads, target);
  if (::testing::Test::HasFatalFailure())
    return;
  auto fn = l.module->lookupSymbol<mlir::func::FuncOp>("main");
  std::vector<tgc::HostTensor> inputs;
  const auto types = fn.getArgumentTypes();
  for (size_t a = 0; a < types.size(); ++a) {
    auto rt = types[a].cast<mlir::RankedTensorType>();
    auto dt = tgc::dtypeOf(rt.getElementType());
    ASSERT_TRUE(bool(dt));
    inputs.push_back(
        randomTensor(*dt, {rt.getShape().begin(), rt.getShape().end()}, (uint32_t)a + 1));
    if (edit)
      edit(a, types.size(), inputs.back());
  }
  auto want = tgc::interpret(fn, inputs);
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  std::vector<tgc::HostTensor> got;
  tgc::Status st = l.session->run(inputs, got);
  ASSERT_TRUE(st.ok) << st.message;
  ASSERT_EQ(got.size(), want->size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape, (*want)[i].shape) << "output " << i;
    ASSERT_EQ(got[i].dtype, (*want)[i].dtype) << "output " << i;
    EXPECT_LT(tgc::relativeL2(got[i], (*want)[i]), 1e-5) << "output " << i << " of " << name;
  }
  if (gotOut)
    *gotOut = std::move(got);
}

// The loop dims both emitters walk (codegen::mergeLoopDims): unit dims dropped, neighbours
// merged only where every operand is contiguous across them (not across a broadcast).
TEST(MergeLoopDims, DropsUnitDimsAndMergesWhereEveryOperandIsContiguous) {
  using Dims = std::vector<std::pair<int64_t, tgc::Shape>>;
  // [2, 1, 3, 4]: a contiguous operand and one broadcast over dim 2 (stride 0 there).
  EXPECT_EQ(tgc::codegen::mergeLoopDims({2, 1, 3, 4}, {{12, 12, 4, 1}, {4, 4, 0, 1}}),
            (Dims{{2, {12, 4}}, {3, {4, 0}}, {4, {1, 1}}}));
  // Both contiguous: one dim of 24.
  EXPECT_EQ(tgc::codegen::mergeLoopDims({2, 1, 3, 4}, {{12, 12, 4, 1}, {12, 12, 4, 1}}),
            (Dims{{24, {1, 1}}}));
  // A transposed operand keeps every dim apart; all unit dims leave nothing.
  EXPECT_EQ(tgc::codegen::mergeLoopDims({2, 3}, {{3, 1}, {1, 2}}),
            (Dims{{2, {3, 1}}, {3, {1, 2}}}));
  EXPECT_TRUE(tgc::codegen::mergeLoopDims({1, 1}, {{1, 1}}).empty());
}

TEST(CpuVsInterp, MovementAndIndexing) {
  compareWithInterpreter(R"(
func.func @main(%x: tensor<3x4x5xf32>, %i: tensor<3x2x5xi64>, %c: tensor<4x1xf32>) -> (tensor<3x2x2xf32>, tensor<4x5x6xf32>, tensor<2x4x4x5xf32>, tensor<3x5xi64>, tensor<3x2x5xf32>, tensor<3x4x5xi32>, tensor<3x4x5xf32>, tensor<4x5xf32>, tensor<4xf32>, tensor<3x4x5xi1>, tensor<1x4x5xi64>) {
  %0 = tg.slice %x {starts = [2, 1, 4], steps = [-1, 2, -3]} : tensor<3x4x5xf32> -> tensor<3x2x2xf32>
  %1 = tg.pad %x {pads = [-1, 0, 1, 2, 1, 0], value = 0.5 : f64} : tensor<3x4x5xf32> -> tensor<4x5x6xf32>
  %2 = tg.expand %c : tensor<4x1xf32> -> tensor<2x4x4x5xf32>
  %3 = tg.argmax %x {axis = 1 : i64, keepdims = false} : tensor<3x4x5xf32> -> tensor<3x5xi64>
  %4 = tg.gather_elements %x, %i {axis = 1 : i64} : tensor<3x4x5xf32>, tensor<3x2x5xi64> -> tensor<3x2x5xf32>
  %5 = tg.cast %x : tensor<3x4x5xf32> -> tensor<3x4x5xi32>
  %z = tg.constant dense<0.0> : tensor<f32>
  %pos = tg.greater %x, %z : tensor<3x4x5xf32>, tensor<f32> -> tensor<3x4x5xi1>
  %6 = tg.where %pos, %x, %c : tensor<3x4x5xi1>, tensor<3x4x5xf32>, tensor<4x1xf32> -> tensor<3x4x5xf32>
  %7 = tg.reduce_max %x {axes = [0], keepdims = false} : tensor<3x4x5xf32> -> tensor<4x5xf32>
  %8 = tg.reduce_sum %x {axes = [0, 2], keepdims = false} : tensor<3x4x5xf32> -> tensor<4xf32>
  %9 = tg.isnan %x : tensor<3x4x5xf32> -> tensor<3x4x5xi1>
  %10 = tg.argmax %x {axis = 0 : i64, keepdims = true, select_last = true} : tensor<3x4x5xf32> -> tensor<1x4x5xi64>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10 : tensor<3x2x2xf32>, tensor<4x5x6xf32>, tensor<2x4x4x5xf32>, tensor<3x5xi64>, tensor<3x2x5xf32>, tensor<3x4x5xi32>, tensor<3x4x5xf32>, tensor<4x5xf32>, tensor<4xf32>, tensor<3x4x5xi1>, tensor<1x4x5xi64>
}
)",
                         "movement.tgpkg");
}

TEST(CpuVsInterp, MathAndContractions) {
  compareWithInterpreter(R"(
func.func @main(%x: tensor<2x1x4xf32>, %y: tensor<3x1xf32>, %a: tensor<2x3x8xf32>, %w: tensor<6x8xf32>, %bias: tensor<6xf32>, %v: tensor<8xf32>, %img: tensor<1x4x7x7xf32>, %cw: tensor<6x2x3x3xf32>, %n: tensor<2x3x8xi64>) -> (tensor<2x3x4xf32>, tensor<2x3x6xf32>, tensor<2x3xf32>, tensor<2x3x8xf32>, tensor<1x6x2x3xf32>, tensor<2x3x8xf32>, tensor<2x3x8xi64>, tensor<2x3x6xf32>) {
  %0 = tg.fused "pointwise" (%x, %y) : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  ^bb0(%p: tensor<2x1x4xf32>, %q: tensor<3x1xf32>):
    %t0 = tg.mul %p, %q : tensor<2x1x4xf32>, tensor<3x1xf32> -> tensor<2x3x4xf32>
    %t1 = tg.gelu %t0 : tensor<2x3x4xf32>
    %t2 = tg.sigmoid %t1 : tensor<2x3x4xf32>
    %t3 = tg.silu %t2 : tensor<2x3x4xf32>
    %t4 = tg.gelu %t3 {tanh_approx = true} : tensor<2x3x4xf32>
    %t5 = tg.max %t4, %p : tensor<2x3x4xf32>, tensor<2x1x4xf32> -> tensor<2x3x4xf32>
    %t6 = tg.round %t5 : tensor<2x3x4xf32>
    %t7 = tg.add %t6, %t1 : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
    tg.yield %t7 : tensor<2x3x4xf32>
  }
  %1 = tg.linear %a, %w, %bias : tensor<2x3x8xf32>, tensor<6x8xf32>, tensor<6xf32> -> tensor<2x3x6xf32>
  %2 = tg.matmul %a, %v : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3xf32>
  %3 = tg.layer_norm %a {axis = 1 : i64, epsilon = 1.0e-03 : f32} : tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  %4 = tg.conv %img, %cw {strides = [2, 2], pads = [1, 1, 0, 0], dilations = [2, 1], group = 2 : i64} : tensor<1x4x7x7xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x2x3xf32>
  %5 = tg.softmax %a {axis = 0 : i64, log = true} : tensor<2x3x8xf32>
  %m = tg.constant dense<[3, -3, 2, -2, 5, -5, 7, 1]> : tensor<8xi64>
  %6 = tg.fused "pointwise" (%n, %m) : (tensor<2x3x8xi64>, tensor<8xi64>) -> tensor<2x3x8xi64> {
  ^bb0(%p: tensor<2x3x8xi64>, %q: tensor<8xi64>):
    %t0 = tg.mod %p, %q : tensor<2x3x8xi64>, tensor<8xi64> -> tensor<2x3x8xi64>
    %t1 = tg.div %p, %q : tensor<2x3x8xi64>, tensor<8xi64> -> tensor<2x3x8xi64>
    %t2 = tg.mul %t0, %t1 : tensor<2x3x8xi64>, tensor<2x3x8xi64> -> tensor<2x3x8xi64>
    tg.yield %t2 : tensor<2x3x8xi64>
  }
  %7 = tg.fused "gemm" (%a, %w, %bias) : (tensor<2x3x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<2x3x6xf32> {
  ^bb0(%p: tensor<2x3x8xf32>, %q: tensor<6x8xf32>, %r: tensor<6xf32>):
    %t0 = tg.linear %p, %q : tensor<2x3x8xf32>, tensor<6x8xf32> -> tensor<2x3x6xf32>
    %t1 = tg.add %t0, %r : tensor<2x3x6xf32>, tensor<6xf32> -> tensor<2x3x6xf32>
    %t2 = tg.relu %t1 : tensor<2x3x6xf32>
    tg.yield %t2 : tensor<2x3x6xf32>
  }
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x3x4xf32>, tensor<2x3x6xf32>, tensor<2x3xf32>, tensor<2x3x8xf32>, tensor<1x6x2x3xf32>, tensor<2x3x8xf32>, tensor<2x3x8xi64>, tensor<2x3x6xf32>
}
)",
                         "math.tgpkg");
}

// The kernels' thread pool (the prelude's tg_pool, tg_parallel_for): every loop that splits
// across threads, at 3 threads so chunks are uneven: a pointwise loop and a norm's rows (the
// lowered parallel-loop marker), GEMMs split by rows (linear, M >= N) and by columns (linear
// with B transposed and matmul with B as is, N > M), an integer matmul, a regular convolution's
// row blocks, a depthwise convolution's channels and attention's rows; each is above its
// parallel threshold. Wrong chunk bounds or a lost chunk give wrong or unwritten elements.
TEST(CpuVsInterp, ThreadPoolSplits) {
  compareWithInterpreter(R"(
func.func @main(%x: tensor<64x1024xf32>, %a: tensor<96x64xf32>, %w: tensor<80x64xf32>, %b: tensor<20x100xf32>, %w2: tensor<200x100xf32>, %w3: tensor<100x200xf32>, %i: tensor<64x64xi64>, %j: tensor<64x64xi64>, %img: tensor<1x16x32x32xf32>, %cw: tensor<24x16x3x3xf32>, %dimg: tensor<1x32x28x28xf32>, %dw: tensor<32x1x3x3xf32>, %q: tensor<1x4x64x32xf32>, %k: tensor<1x4x64x32xf32>, %ln: tensor<256x128xf32>) -> (tensor<64x1024xf32>, tensor<96x80xf32>, tensor<20x200xf32>, tensor<20x200xf32>, tensor<64x64xi64>, tensor<1x24x32x32xf32>, tensor<1x32x28x28xf32>, tensor<1x4x64x32xf32>, tensor<256x128xf32>) {
  %0 = tg.fused "pointwise" (%x) : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%p: tensor<64x1024xf32>):
    %t0 = tg.sigmoid %p : tensor<64x1024xf32>
    %t1 = tg.mul %t0, %p : tensor<64x1024xf32>, tensor<64x1024xf32> -> tensor<64x1024xf32>
    tg.yield %t1 : tensor<64x1024xf32>
  }
  %1 = tg.linear %a, %w : tensor<96x64xf32>, tensor<80x64xf32> -> tensor<96x80xf32>
  %2 = tg.linear %b, %w2 : tensor<20x100xf32>, tensor<200x100xf32> -> tensor<20x200xf32>
  %3 = tg.matmul %b, %w3 : tensor<20x100xf32>, tensor<100x200xf32> -> tensor<20x200xf32>
  %4 = tg.matmul %i, %j : tensor<64x64xi64>, tensor<64x64xi64> -> tensor<64x64xi64>
  %5 = tg.conv %img, %cw {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x16x32x32xf32>, tensor<24x16x3x3xf32> -> tensor<1x24x32x32xf32>
  %6 = tg.conv %dimg, %dw {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 32 : i64} : tensor<1x32x28x28xf32>, tensor<32x1x3x3xf32> -> tensor<1x32x28x28xf32>
  %7 = tg.attention %q, %k, %k {scale = 0.2 : f32} : tensor<1x4x64x32xf32>, tensor<1x4x64x32xf32>, tensor<1x4x64x32xf32> -> tensor<1x4x64x32xf32>
  %8 = tg.layer_norm %ln {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<256x128xf32> -> tensor<256x128xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<64x1024xf32>, tensor<96x80xf32>, tensor<20x200xf32>, tensor<20x200xf32>, tensor<64x64xi64>, tensor<1x24x32x32xf32>, tensor<1x32x28x28xf32>, tensor<1x4x64x32xf32>, tensor<256x128xf32>
}
)",
                         "thread_pool.tgpkg", 3);
}

// tanh and erf are rational fits (CpuPrelude's tg_tanhf, tg_erff) that overshoot 1 by an ulp
// near their clamps (tanh: x in [8.17, 9], erf: [3.69, 4]) unless the result is kept in
// [-1, 1]: a following sqrt(1 - t*t) or atanh would give NaN. Every float in +-[3, 10] on a
// 1/4096 grid, at the host's level (the vectorized code the models run).
TEST(CpuVsInterp, TanhAndErfStayWithinOne) {
  Loaded l;
  compileAndLoad(l, R"(
func.func @main(%x: tensor<57344xf32>) -> (tensor<57344xf32>, tensor<57344xf32>) {
  %0 = tg.tanh %x : tensor<57344xf32>
  %1 = tg.erf %x : tensor<57344xf32>
  return %0, %1 : tensor<57344xf32>, tensor<57344xf32>
}
)",
                 "within_one.tgpkg", 1, "cpu:" + tgc::hostCpuLevel());
  if (HasFatalFailure())
    return;
  auto x = tgc::HostTensor::zeros(tgc::DType::F32, {57344});
  for (int64_t i = 0; i < 28672; ++i) { // 3 + i/4096 and its negative
    x.set(2 * i, 3.0 + (double)i / 4096.0);
    x.set(2 * i + 1, -(3.0 + (double)i / 4096.0));
  }
  std::vector<tgc::HostTensor> got;
  tgc::Status st = l.session->run({x}, got);
  ASSERT_TRUE(st.ok) << st.message;
  ASSERT_EQ(got.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    int64_t over = 0;
    for (int64_t i = 0; i < got[k].numel(); ++i)
      over += std::fabs(got[k].get(i)) > 1.0;
    EXPECT_EQ(over, 0) << (k == 0 ? "tanh" : "erf") << " results beyond +-1";
  }
}

// f32 GEMMs with an untransposed B run in 8 x 32 register tiles on AVX-512 hosts
// (tg_tiled_sgemm; OpenBLAS elsewhere): row tails of 1 to 7 (M = 1, 7, 13, 29), column tails
// after whole strips (N = 45, 77, 200) through OpenBLAS, exactly one strip (N = 32), K = 1 and
// odd K, a batched matmul whose rows are all batches, the linear-weight layout the CPU stores
// ([K, N] constants: tgc-cpu-weight-layout runs in the pipeline, not here), and a convolution
// whose im2col GEMM accumulates onto its bias (72 output channels: not the direct kernel).
// Compiled for this host's level, so the tiles run wherever the host has AVX-512.
TEST(CpuVsInterp, GemmTiles) {
  compareWithInterpreter(R"(
func.func @main(%a1: tensor<1x70xf32>, %b1: tensor<70x45xf32>, %a7: tensor<7x3xf32>, %b7: tensor<3x77xf32>, %a13: tensor<13x1xf32>, %b13: tensor<1x32xf32>, %a29: tensor<2x29x64xf32>, %b29: tensor<64x200xf32>, %img: tensor<1x16x8x8xf32>, %cw: tensor<72x16x3x3xf32>, %cb: tensor<72xf32>) -> (tensor<1x45xf32>, tensor<7x77xf32>, tensor<13x32xf32>, tensor<2x29x200xf32>, tensor<1x72x8x8xf32>) {
  %0 = tg.matmul %a1, %b1 : tensor<1x70xf32>, tensor<70x45xf32> -> tensor<1x45xf32>
  %1 = tg.matmul %a7, %b7 : tensor<7x3xf32>, tensor<3x77xf32> -> tensor<7x77xf32>
  %2 = tg.matmul %a13, %b13 : tensor<13x1xf32>, tensor<1x32xf32> -> tensor<13x32xf32>
  %3 = tg.matmul %a29, %b29 : tensor<2x29x64xf32>, tensor<64x200xf32> -> tensor<2x29x200xf32>
  %4 = tg.conv %img, %cw, %cb {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x16x8x8xf32>, tensor<72x16x3x3xf32>, tensor<72xf32> -> tensor<1x72x8x8xf32>
  return %0, %1, %2, %3, %4 : tensor<1x45xf32>, tensor<7x77xf32>, tensor<13x32xf32>, tensor<2x29x200xf32>, tensor<1x72x8x8xf32>
}
)",
                         "gemm_tiles.tgpkg", 1, "cpu:" + tgc::hostCpuLevel());
}

// A "gemm" kernel whose only epilogue adds a bias per column is emitted as tg_matmul_bias (the
// bias is the tiles' initial accumulators, or C's initial value for OpenBLAS) with no pass of its
// own: one bias for every batch ([N], [1, N]), one per batch ([B, 1, N]), the lhs batch folded
// into M, N = 45 (a 32-column strip and a 13-column OpenBLAS tail), the bias as the add's lhs.
// A bias per row ([M, 1]) keeps its epilogue pass, and so does a 1-D lhs (the output [B, N] has
// no M dim: its [B, N] addend is not a bias per column). Each against the interpreter.
TEST(CpuVsInterp, MatmulBiasEpilogues) {
  const std::string ir = R"(
func.func @main(%a: tensor<2x29x64xf32>, %b: tensor<2x64x200xf32>, %w: tensor<64x200xf32>, %c: tensor<200xf32>, %cb: tensor<2x1x200xf32>, %c1: tensor<1x200xf32>, %r: tensor<29x1xf32>, %a2: tensor<40x64xf32>, %w2: tensor<64x45xf32>, %c2: tensor<45xf32>, %v: tensor<64xf32>, %cv: tensor<2x200xf32>) -> (tensor<2x29x200xf32>, tensor<2x29x200xf32>, tensor<2x29x200xf32>, tensor<2x29x200xf32>, tensor<40x45xf32>, tensor<40x45xf32>, tensor<2x200xf32>) {
  %0 = tg.fused "gemm" (%a, %b, %c) : (tensor<2x29x64xf32>, tensor<2x64x200xf32>, tensor<200xf32>) -> tensor<2x29x200xf32> {
  ^bb0(%p: tensor<2x29x64xf32>, %q: tensor<2x64x200xf32>, %e: tensor<200xf32>):
    %t0 = tg.matmul %p, %q : tensor<2x29x64xf32>, tensor<2x64x200xf32> -> tensor<2x29x200xf32>
    %t1 = tg.add %t0, %e : tensor<2x29x200xf32>, tensor<200xf32> -> tensor<2x29x200xf32>
    tg.yield %t1 : tensor<2x29x200xf32>
  }
  %1 = tg.fused "gemm" (%a, %b, %cb) : (tensor<2x29x64xf32>, tensor<2x64x200xf32>, tensor<2x1x200xf32>) -> tensor<2x29x200xf32> {
  ^bb0(%p: tensor<2x29x64xf32>, %q: tensor<2x64x200xf32>, %e: tensor<2x1x200xf32>):
    %t0 = tg.matmul %p, %q : tensor<2x29x64xf32>, tensor<2x64x200xf32> -> tensor<2x29x200xf32>
    %t1 = tg.add %t0, %e : tensor<2x29x200xf32>, tensor<2x1x200xf32> -> tensor<2x29x200xf32>
    tg.yield %t1 : tensor<2x29x200xf32>
  }
  %2 = tg.fused "gemm" (%a, %w, %c1) : (tensor<2x29x64xf32>, tensor<64x200xf32>, tensor<1x200xf32>) -> tensor<2x29x200xf32> {
  ^bb0(%p: tensor<2x29x64xf32>, %q: tensor<64x200xf32>, %e: tensor<1x200xf32>):
    %t0 = tg.matmul %p, %q : tensor<2x29x64xf32>, tensor<64x200xf32> -> tensor<2x29x200xf32>
    %t1 = tg.add %t0, %e : tensor<2x29x200xf32>, tensor<1x200xf32> -> tensor<2x29x200xf32>
    tg.yield %t1 : tensor<2x29x200xf32>
  }
  %3 = tg.fused "gemm" (%a, %w, %r) : (tensor<2x29x64xf32>, tensor<64x200xf32>, tensor<29x1xf32>) -> tensor<2x29x200xf32> {
  ^bb0(%p: tensor<2x29x64xf32>, %q: tensor<64x200xf32>, %e: tensor<29x1xf32>):
    %t0 = tg.matmul %p, %q : tensor<2x29x64xf32>, tensor<64x200xf32> -> tensor<2x29x200xf32>
    %t1 = tg.add %t0, %e : tensor<2x29x200xf32>, tensor<29x1xf32> -> tensor<2x29x200xf32>
    tg.yield %t1 : tensor<2x29x200xf32>
  }
  %4 = tg.fused "gemm" (%a2, %w2, %c2) : (tensor<40x64xf32>, tensor<64x45xf32>, tensor<45xf32>) -> tensor<40x45xf32> {
  ^bb0(%p: tensor<40x64xf32>, %q: tensor<64x45xf32>, %e: tensor<45xf32>):
    %t0 = tg.matmul %p, %q : tensor<40x64xf32>, tensor<64x45xf32> -> tensor<40x45xf32>
    %t1 = tg.add %t0, %e : tensor<40x45xf32>, tensor<45xf32> -> tensor<40x45xf32>
    tg.yield %t1 : tensor<40x45xf32>
  }
  %5 = tg.fused "gemm" (%a2, %w2, %c2) : (tensor<40x64xf32>, tensor<64x45xf32>, tensor<45xf32>) -> tensor<40x45xf32> {
  ^bb0(%p: tensor<40x64xf32>, %q: tensor<64x45xf32>, %e: tensor<45xf32>):
    %t0 = tg.matmul %p, %q : tensor<40x64xf32>, tensor<64x45xf32> -> tensor<40x45xf32>
    %t1 = tg.add %e, %t0 : tensor<45xf32>, tensor<40x45xf32> -> tensor<40x45xf32>
    tg.yield %t1 : tensor<40x45xf32>
  }
  %6 = tg.fused "gemm" (%v, %b, %cv) : (tensor<64xf32>, tensor<2x64x200xf32>, tensor<2x200xf32>) -> tensor<2x200xf32> {
  ^bb0(%p: tensor<64xf32>, %q: tensor<2x64x200xf32>, %e: tensor<2x200xf32>):
    %t0 = tg.matmul %p, %q : tensor<64xf32>, tensor<2x64x200xf32> -> tensor<2x200xf32>
    %t1 = tg.add %t0, %e : tensor<2x200xf32>, tensor<2x200xf32> -> tensor<2x200xf32>
    tg.yield %t1 : tensor<2x200xf32>
  }
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x29x200xf32>, tensor<2x29x200xf32>, tensor<2x29x200xf32>, tensor<2x29x200xf32>, tensor<40x45xf32>, tensor<40x45xf32>, tensor<2x200xf32>
}
)";
  compareWithInterpreter(ir, "matmul_bias.tgpkg", 2, "cpu:" + tgc::hostCpuLevel());
  // Kernels 0, 1, 2, 4, 5 call tg_matmul_bias; kernels 3 and 6 keep their pass.
  std::ifstream f(tmpDir() + "/matmul_bias.tgpkg/kernels.cpp");
  int calls = 0, passes = 0;
  for (std::string line; std::getline(f, line);) {
    calls += line.rfind("  tg_matmul_bias(", 0) == 0;
    passes += line.find("// epilogue: 1 elementwise op(s) per output element") != std::string::npos;
  }
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(passes, 2);
}

// Matmuls by a weight in 32-column strips (tg.matmul's weight_block: [ceil(N/32), K, 32], the
// layout tgc-cpu-weight-layout writes; the interpreter reads it as the plain [K, N]), emitted as
// tg_gemm_strips: N = 200 (six strips and an 8-column tail, split across two threads by columns
// into panels of four strips and of two plus the tail), with a bias for every batch and one per
// batch (a call a batch), 1,100 rows of K = 512 (row blocks of 512 whose A stays in L2, split by
// rows) with N = 40, and 5 rows (no full row tile) of one exact strip. The strips' padding past N
// is random here, not zeros: nothing may read it. At the host's level (the tiles) and at
// x86-64-v2 (cblas_sgemm reading the strips), each against the interpreter.
TEST(CpuVsInterp, MatmulWeightStrips) {
  const std::string ir = R"(
func.func @main(%a: tensor<2x29x64xf32>, %w: tensor<7x64x32xf32>, %c: tensor<200xf32>, %cb: tensor<2x1x200xf32>, %big: tensor<1100x512xf32>, %wb: tensor<2x512x32xf32>, %a5: tensor<5x3xf32>, %w5: tensor<1x3x32xf32>) -> (tensor<2x29x200xf32>, tensor<2x29x200xf32>, tensor<2x29x200xf32>, tensor<1100x40xf32>, tensor<5x32xf32>) {
  %0 = tg.matmul %a, %w {weight_block = 32 : i64} : tensor<2x29x64xf32>, tensor<7x64x32xf32> -> tensor<2x29x200xf32>
  %1 = tg.fused "gemm" (%a, %w, %c) : (tensor<2x29x64xf32>, tensor<7x64x32xf32>, tensor<200xf32>) -> tensor<2x29x200xf32> {
  ^bb0(%p: tensor<2x29x64xf32>, %q: tensor<7x64x32xf32>, %e: tensor<200xf32>):
    %t0 = tg.matmul %p, %q {weight_block = 32 : i64} : tensor<2x29x64xf32>, tensor<7x64x32xf32> -> tensor<2x29x200xf32>
    %t1 = tg.add %t0, %e : tensor<2x29x200xf32>, tensor<200xf32> -> tensor<2x29x200xf32>
    tg.yield %t1 : tensor<2x29x200xf32>
  }
  %2 = tg.fused "gemm" (%a, %w, %cb) : (tensor<2x29x64xf32>, tensor<7x64x32xf32>, tensor<2x1x200xf32>) -> tensor<2x29x200xf32> {
  ^bb0(%p: tensor<2x29x64xf32>, %q: tensor<7x64x32xf32>, %e: tensor<2x1x200xf32>):
    %t0 = tg.matmul %p, %q {weight_block = 32 : i64} : tensor<2x29x64xf32>, tensor<7x64x32xf32> -> tensor<2x29x200xf32>
    %t1 = tg.add %t0, %e : tensor<2x29x200xf32>, tensor<2x1x200xf32> -> tensor<2x29x200xf32>
    tg.yield %t1 : tensor<2x29x200xf32>
  }
  %3 = tg.matmul %big, %wb {weight_block = 32 : i64} : tensor<1100x512xf32>, tensor<2x512x32xf32> -> tensor<1100x40xf32>
  %4 = tg.matmul %a5, %w5 {weight_block = 32 : i64} : tensor<5x3xf32>, tensor<1x3x32xf32> -> tensor<5x32xf32>
  return %0, %1, %2, %3, %4 : tensor<2x29x200xf32>, tensor<2x29x200xf32>, tensor<2x29x200xf32>, tensor<1100x40xf32>, tensor<5x32xf32>
}
)";
  for (const std::string target : {"cpu:" + tgc::hostCpuLevel(), std::string("cpu:x86-64-v2")}) {
    compareWithInterpreter(ir, "matmul_strips.tgpkg", 2, target);
    std::ifstream f(tmpDir() + "/matmul_strips.tgpkg/kernels.cpp");
    int calls = 0, perBatch = 0;
    for (std::string line; std::getline(f, line);) {
      calls += line.rfind("  tg_gemm_strips(", 0) == 0;
      perBatch += line.rfind("    tg_gemm_strips(", 0) == 0;
    }
    EXPECT_EQ(calls, 4) << target;    // %0, %1, %3, %4
    EXPECT_EQ(perBatch, 1) << target; // %2, one call a batch
  }
}

// Strips of another width verify (and interpret) as the [K, N] weight they stand for, but the
// CPU's GEMM reads strips of 32 only: the backend refuses them, naming why, instead of reading
// them as 32 wide.
TEST(CpuVsInterp, RefusesMatmulWeightStripsOfAnotherWidth) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(R"(
func.func @main(%x: tensor<4x8xf32>, %w: tensor<3x8x16xf32>) -> tensor<4x40xf32> {
  %0 = tg.matmul %x, %w {weight_block = 16 : i64} : tensor<4x8xf32>, tensor<3x8x16xf32> -> tensor<4x40xf32>
  return %0 : tensor<4x40xf32>
}
)",
                                                        &ctx);
  ASSERT_TRUE(module);
  tgc::PackageInfo info;
  info.target = "cpu";
  auto stats = tgc::writeCpuPackage(*module, tmpDir() + "/strips16.tgpkg", info,
                                    tmpDir() + "/kcache");
  ASSERT_FALSE(bool(stats));
  const std::string error = llvm::toString(stats.takeError());
  EXPECT_NE(error.find("must be in strips of 32"), std::string::npos) << error;
}

// Convolutions with weights blocked by 16 output channels (tg.conv's weight_block, the lanes
// kernel tg_conv_lanes2d; the interpreter reads the blocked weight as the plain one): a last
// block of 4 valid channels, two images with a stride, 1-D with stride and dilation and a
// position tail, a 2x3 window with per-dim strides/dilations and asymmetric pads, five blocks
// (a last group of fewer blocks: tg_conv_lanes_rest), no bias, rows of 20 positions (P = 20:
// two transposes per block). Max pools (tg_maxpool2d): 3x3/2
// padded, 2x2/2 with a 4-column output, a dilated 3x3/1, 1-D with stride 3, and a window
// overhanging the end pad (ceil mode).
TEST(CpuVsInterp, LanesConvolutionsAndMaxPools) {
  compareWithInterpreter(R"(
func.func @main(%x1: tensor<1x8x16x16xf32>, %w1: tensor<2x8x3x3x16xf32>, %b1: tensor<20xf32>, %x2: tensor<2x16x9x9xf32>, %w2: tensor<4x16x3x3x16xf32>, %b2: tensor<64xf32>, %x3: tensor<1x12x61xf32>, %w3: tensor<3x12x3x16xf32>, %b3: tensor<48xf32>, %x4: tensor<1x8x7x10xf32>, %w4: tensor<3x8x2x3x16xf32>, %b4: tensor<33xf32>, %x5: tensor<1x8x12x12xf32>, %w5: tensor<5x8x3x3x16xf32>, %p1: tensor<1x3x32x32xf32>, %p2: tensor<1x2x9x9xf32>, %p4: tensor<1x2x50xf32>, %p5: tensor<1x1x8x8xf32>, %x6: tensor<1x8x6x20xf32>, %w6: tensor<1x8x3x3x16xf32>, %b6: tensor<16xf32>) -> (tensor<1x20x16x16xf32>, tensor<2x64x5x5xf32>, tensor<1x48x30xf32>, tensor<1x33x6x5xf32>, tensor<1x80x12x12xf32>, tensor<1x3x16x16xf32>, tensor<1x2x4x4xf32>, tensor<1x3x32x32xf32>, tensor<1x2x16xf32>, tensor<1x1x4x4xf32>, tensor<1x16x6x20xf32>) {
  %0 = tg.conv %x1, %w1, %b1 {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<1x8x16x16xf32>, tensor<2x8x3x3x16xf32>, tensor<20xf32> -> tensor<1x20x16x16xf32>
  %1 = tg.conv %x2, %w2, %b2 {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<2x16x9x9xf32>, tensor<4x16x3x3x16xf32>, tensor<64xf32> -> tensor<2x64x5x5xf32>
  %2 = tg.conv %x3, %w3, %b3 {strides = [2], pads = [2, 1], dilations = [2], group = 1 : i64, weight_block = 16 : i64} : tensor<1x12x61xf32>, tensor<3x12x3x16xf32>, tensor<48xf32> -> tensor<1x48x30xf32>
  %3 = tg.conv %x4, %w4, %b4 {strides = [1, 2], pads = [0, 1, 1, 0], dilations = [2, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<1x8x7x10xf32>, tensor<3x8x2x3x16xf32>, tensor<33xf32> -> tensor<1x33x6x5xf32>
  %4 = tg.conv %x5, %w5 {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<1x8x12x12xf32>, tensor<5x8x3x3x16xf32> -> tensor<1x80x12x12xf32>
  %5 = tg.pool %p1 {kind = "max", kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1]} : tensor<1x3x32x32xf32> -> tensor<1x3x16x16xf32>
  %6 = tg.pool %p2 {kind = "max", kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1]} : tensor<1x2x9x9xf32> -> tensor<1x2x4x4xf32>
  %7 = tg.pool %p1 {kind = "max", kernel = [3, 3], strides = [1, 1], pads = [2, 2, 2, 2], dilations = [2, 2]} : tensor<1x3x32x32xf32> -> tensor<1x3x32x32xf32>
  %8 = tg.pool %p4 {kind = "max", kernel = [3], strides = [3], pads = [0, 0], dilations = [1]} : tensor<1x2x50xf32> -> tensor<1x2x16xf32>
  %9 = tg.pool %p5 {kind = "max", kernel = [3, 3], strides = [2, 2], pads = [0, 0, 1, 1], dilations = [1, 1]} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  %10 = tg.conv %x6, %w6, %b6 {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<1x8x6x20xf32>, tensor<1x8x3x3x16xf32>, tensor<16xf32> -> tensor<1x16x6x20xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10 : tensor<1x20x16x16xf32>, tensor<2x64x5x5xf32>, tensor<1x48x30xf32>, tensor<1x33x6x5xf32>, tensor<1x80x12x12xf32>, tensor<1x3x16x16xf32>, tensor<1x2x4x4xf32>, tensor<1x3x32x32xf32>, tensor<1x2x16xf32>, tensor<1x1x4x4xf32>, tensor<1x16x6x20xf32>
}
)",
                         "lanes_conv.tgpkg", 1, "cpu:" + tgc::hostCpuLevel());
}

// Strided 1x1 windows (downsampling shortcuts) on the lanes kernel: cnn_small's 32 -> 64
// channels at stride 2, and 20 outputs (a partial block) at stride 3 over an odd plane.
TEST(CpuVsInterp, LanesStridedPointwiseConvolutions) {
  compareWithInterpreter(R"(
func.func @main(%x1: tensor<1x32x8x8xf32>, %w1: tensor<4x32x1x1x16xf32>, %b1: tensor<64xf32>, %x2: tensor<2x16x9x9xf32>, %w2: tensor<2x16x1x1x16xf32>) -> (tensor<1x64x4x4xf32>, tensor<2x20x3x3xf32>) {
  %0 = tg.conv %x1, %w1, %b1 {strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<1x32x8x8xf32>, tensor<4x32x1x1x16xf32>, tensor<64xf32> -> tensor<1x64x4x4xf32>
  %1 = tg.conv %x2, %w2 {strides = [3, 3], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<2x16x9x9xf32>, tensor<2x16x1x1x16xf32> -> tensor<2x20x3x3xf32>
  return %0, %1 : tensor<1x64x4x4xf32>, tensor<2x20x3x3xf32>
}
)",
                         "lanes_conv_1x1.tgpkg", 1, "cpu:" + tgc::hostCpuLevel());
}

// Max pools (tg_maxpool2d) on shapes the model pools have: rows of 45 columns (a 13-column
// tail in the row pass) into 23 outputs (a 7-column tail chunk); a 1-D stride-2 pool over 20
// planes (one row a plane: groups of 16 planes, the second partial); at 2 threads, split by
// output rows (each thread the same rows of every plane): ResNet's 3x3/2 stem pool over 64 planes
// of 56 × 56, 512 planes of 16 × 16 into 8 × 8 (chunks of one row: groups of 16 planes), and 24
// planes into 10 × 10 (chunks of 1 and 2 rows, the second group of planes partial).
TEST(CpuVsInterp, MaxPoolTailsAndGroups) {
  compareWithInterpreter(R"(
func.func @main(%a: tensor<1x2x40x45xf32>, %b: tensor<1x20x33xf32>, %c: tensor<1x64x56x56xf32>, %d: tensor<1x512x16x16xf32>, %e: tensor<1x24x19x19xf32>) -> (tensor<1x2x20x23xf32>, tensor<1x20x17xf32>, tensor<1x64x28x28xf32>, tensor<1x512x8x8xf32>, tensor<1x24x10x10xf32>) {
  %0 = tg.pool %a {kind = "max", kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1]} : tensor<1x2x40x45xf32> -> tensor<1x2x20x23xf32>
  %1 = tg.pool %b {kind = "max", kernel = [3], strides = [2], pads = [1, 1], dilations = [1]} : tensor<1x20x33xf32> -> tensor<1x20x17xf32>
  %2 = tg.pool %c {kind = "max", kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1]} : tensor<1x64x56x56xf32> -> tensor<1x64x28x28xf32>
  %3 = tg.pool %d {kind = "max", kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1]} : tensor<1x512x16x16xf32> -> tensor<1x512x8x8xf32>
  %4 = tg.pool %e {kind = "max", kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1]} : tensor<1x24x19x19xf32> -> tensor<1x24x10x10xf32>
  return %0, %1, %2, %3, %4 : tensor<1x2x20x23xf32>, tensor<1x20x17xf32>, tensor<1x64x28x28xf32>, tensor<1x512x8x8xf32>, tensor<1x24x10x10xf32>
}
)",
                         "max_pools.tgpkg", 2, "cpu:" + tgc::hostCpuLevel());
}

// Channels-last pools (tg.pool's nhwc, written by tgc-cuda-channels-last): the one pooling
// element emitter both backends share, here on the CPU's generic loop; max with padding, average
// counting only the taps inside, and 1-D.
TEST(CpuVsInterp, ChannelsLastPools) {
  compareWithInterpreter(R"(
func.func @main(%a: tensor<2x9x11x5xf32>, %b: tensor<1x17x6xf32>) -> (tensor<2x5x6x5xf32>, tensor<2x9x11x5xf32>, tensor<1x9x6xf32>) {
  %0 = tg.pool %a {kind = "max", kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], nhwc} : tensor<2x9x11x5xf32> -> tensor<2x5x6x5xf32>
  %1 = tg.pool %a {kind = "avg", kernel = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], count_include_pad = false, nhwc} : tensor<2x9x11x5xf32> -> tensor<2x9x11x5xf32>
  %2 = tg.pool %b {kind = "max", kernel = [3], strides = [2], pads = [1, 1], dilations = [1], nhwc} : tensor<1x17x6xf32> -> tensor<1x9x6xf32>
  return %0, %1, %2 : tensor<2x5x6x5xf32>, tensor<2x9x11x5xf32>, tensor<1x9x6xf32>
}
)",
                         "nhwc_pools.tgpkg");
}

// Channels-last lanes convolutions (tg.conv's channels_last: a transpose folded in by
// tgc-cpu-weight-layout): 15 outputs (one partial block: masked stores), 12 with a stride,
// 40 (two blocks and a partial third) over rows of 20 positions (two store chunks) on two
// threads, 1-D, and a fused sigmoid applied as the channels-last stores go. For this host's
// level (AVX-512: masked stores) and for x86-64-v3 (AVX2: the partial block in pieces).
TEST(CpuVsInterp, LanesConvolutionsChannelsLast) {
  const char *ir = R"(
func.func @main(%x: tensor<1x8x10x10xf32>, %w1: tensor<1x8x3x3x16xf32>, %b1: tensor<15xf32>, %w2: tensor<1x8x3x3x16xf32>, %y: tensor<1x16x24x20xf32>, %w3: tensor<3x16x3x3x16xf32>, %b3: tensor<40xf32>, %z: tensor<1x8x30xf32>, %w4: tensor<2x8x3x16xf32>) -> (tensor<1x10x10x15xf32>, tensor<1x4x4x12xf32>, tensor<1x24x20x40xf32>, tensor<1x28x32xf32>, tensor<1x10x10x15xf32>) {
  %0 = tg.conv %x, %w1, %b1 {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64, channels_last} : tensor<1x8x10x10xf32>, tensor<1x8x3x3x16xf32>, tensor<15xf32> -> tensor<1x10x10x15xf32>
  %1 = tg.conv %x, %w2 {strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64, channels_last} : tensor<1x8x10x10xf32>, tensor<1x8x3x3x16xf32> -> tensor<1x4x4x12xf32>
  %2 = tg.conv %y, %w3, %b3 {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64, channels_last} : tensor<1x16x24x20xf32>, tensor<3x16x3x3x16xf32>, tensor<40xf32> -> tensor<1x24x20x40xf32>
  %3 = tg.conv %z, %w4 {strides = [1], pads = [0, 0], dilations = [1], group = 1 : i64, weight_block = 16 : i64, channels_last} : tensor<1x8x30xf32>, tensor<2x8x3x16xf32> -> tensor<1x28x32xf32>
  %4 = tg.fused "conv" (%x, %w1, %b1) : (tensor<1x8x10x10xf32>, tensor<1x8x3x3x16xf32>, tensor<15xf32>) -> tensor<1x10x10x15xf32> {
  ^bb0(%p: tensor<1x8x10x10xf32>, %q: tensor<1x8x3x3x16xf32>, %c: tensor<15xf32>):
    %t0 = tg.conv %p, %q, %c {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64, channels_last} : tensor<1x8x10x10xf32>, tensor<1x8x3x3x16xf32>, tensor<15xf32> -> tensor<1x10x10x15xf32>
    %t1 = tg.sigmoid %t0 : tensor<1x10x10x15xf32>
    tg.yield %t1 : tensor<1x10x10x15xf32>
  }
  return %0, %1, %2, %3, %4 : tensor<1x10x10x15xf32>, tensor<1x4x4x12xf32>, tensor<1x24x20x40xf32>, tensor<1x28x32xf32>, tensor<1x10x10x15xf32>
}
)";
  compareWithInterpreter(ir, "lanes_conv_last.tgpkg", 2, "cpu:" + tgc::hostCpuLevel());
  compareWithInterpreter(ir, "lanes_conv_last_v3.tgpkg", 2, "cpu:x86-64-v3");
}

// "conv" kernels over the lanes kernel: an epilogue that reads nothing but the convolution's
// value and splats (ReLU and a clip; a sigmoid) is applied as the convolution stores (the `epi`
// functor); one reading a per-channel broadcast or a residual keeps its own pass. On two
// threads and large enough to split, so worker threads run the epilogue too.
TEST(CpuVsInterp, LanesConvolutionEpilogues) {
  compareWithInterpreter(R"(
func.func @main(%x: tensor<1x16x24x24xf32>, %w: tensor<2x16x3x3x16xf32>, %b: tensor<20xf32>, %r: tensor<1x20x24x24xf32>, %s: tensor<1x20x1x1xf32>) -> (tensor<1x20x24x24xf32>, tensor<1x20x24x24xf32>, tensor<1x20x12x12xf32>, tensor<1x20x24x24xf32>) {
  %0 = tg.fused "conv" (%x, %w, %b) : (tensor<1x16x24x24xf32>, tensor<2x16x3x3x16xf32>, tensor<20xf32>) -> tensor<1x20x24x24xf32> {
  ^bb0(%p: tensor<1x16x24x24xf32>, %q: tensor<2x16x3x3x16xf32>, %c: tensor<20xf32>):
    %t0 = tg.conv %p, %q, %c {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<1x16x24x24xf32>, tensor<2x16x3x3x16xf32>, tensor<20xf32> -> tensor<1x20x24x24xf32>
    %t1 = tg.relu %t0 : tensor<1x20x24x24xf32>
    %six = tg.constant dense<6.0> : tensor<f32>
    %t2 = tg.min %t1, %six : tensor<1x20x24x24xf32>, tensor<f32> -> tensor<1x20x24x24xf32>
    tg.yield %t2 : tensor<1x20x24x24xf32>
  }
  %1 = tg.fused "conv" (%x, %w, %b, %s) : (tensor<1x16x24x24xf32>, tensor<2x16x3x3x16xf32>, tensor<20xf32>, tensor<1x20x1x1xf32>) -> tensor<1x20x24x24xf32> {
  ^bb0(%p: tensor<1x16x24x24xf32>, %q: tensor<2x16x3x3x16xf32>, %c: tensor<20xf32>, %e: tensor<1x20x1x1xf32>):
    %t0 = tg.conv %p, %q, %c {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<1x16x24x24xf32>, tensor<2x16x3x3x16xf32>, tensor<20xf32> -> tensor<1x20x24x24xf32>
    %t1 = tg.mul %t0, %e : tensor<1x20x24x24xf32>, tensor<1x20x1x1xf32> -> tensor<1x20x24x24xf32>
    tg.yield %t1 : tensor<1x20x24x24xf32>
  }
  %2 = tg.fused "conv" (%x, %w) : (tensor<1x16x24x24xf32>, tensor<2x16x3x3x16xf32>) -> tensor<1x20x12x12xf32> {
  ^bb0(%p: tensor<1x16x24x24xf32>, %q: tensor<2x16x3x3x16xf32>):
    %t0 = tg.conv %p, %q {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<1x16x24x24xf32>, tensor<2x16x3x3x16xf32> -> tensor<1x20x12x12xf32>
    %t1 = tg.sigmoid %t0 : tensor<1x20x12x12xf32>
    tg.yield %t1 : tensor<1x20x12x12xf32>
  }
  %3 = tg.fused "conv" (%x, %w, %b, %r) : (tensor<1x16x24x24xf32>, tensor<2x16x3x3x16xf32>, tensor<20xf32>, tensor<1x20x24x24xf32>) -> tensor<1x20x24x24xf32> {
  ^bb0(%p: tensor<1x16x24x24xf32>, %q: tensor<2x16x3x3x16xf32>, %c: tensor<20xf32>, %d: tensor<1x20x24x24xf32>):
    %t0 = tg.conv %p, %q, %c {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<1x16x24x24xf32>, tensor<2x16x3x3x16xf32>, tensor<20xf32> -> tensor<1x20x24x24xf32>
    %t1 = tg.add %t0, %d : tensor<1x20x24x24xf32>, tensor<1x20x24x24xf32> -> tensor<1x20x24x24xf32>
    %t2 = tg.relu %t1 : tensor<1x20x24x24xf32>
    tg.yield %t2 : tensor<1x20x24x24xf32>
  }
  return %0, %1, %2, %3 : tensor<1x20x24x24xf32>, tensor<1x20x24x24xf32>, tensor<1x20x12x12xf32>, tensor<1x20x24x24xf32>
}
)",
                         "lanes_epilogue.tgpkg", 2, "cpu:" + tgc::hostCpuLevel());
}

// The same kernels at the level the bundled packages default to without a host level
// (x86-64-v2: the 16-float vectors split into SSE registers), on two threads.
TEST(CpuVsInterp, LanesConvolutionsAtX8664V2) {
  compareWithInterpreter(R"(
func.func @main(%x2: tensor<2x16x9x9xf32>, %w2: tensor<4x16x3x3x16xf32>, %b2: tensor<64xf32>, %x5: tensor<1x8x12x12xf32>, %w5: tensor<5x8x3x3x16xf32>, %p1: tensor<1x3x32x32xf32>) -> (tensor<2x64x5x5xf32>, tensor<1x80x12x12xf32>, tensor<1x3x16x16xf32>) {
  %1 = tg.conv %x2, %w2, %b2 {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<2x16x9x9xf32>, tensor<4x16x3x3x16xf32>, tensor<64xf32> -> tensor<2x64x5x5xf32>
  %4 = tg.conv %x5, %w5 {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<1x8x12x12xf32>, tensor<5x8x3x3x16xf32> -> tensor<1x80x12x12xf32>
  %5 = tg.pool %p1 {kind = "max", kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1]} : tensor<1x3x32x32xf32> -> tensor<1x3x16x16xf32>
  return %1, %4, %5 : tensor<2x64x5x5xf32>, tensor<1x80x12x12xf32>, tensor<1x3x16x16xf32>
}
)",
                         "lanes_conv_v2.tgpkg", 2, "cpu:x86-64-v2");
}

// Transposes that move the input's contiguous dim go through 2-D 8 x 8 tiles
// (tg_transpose2d): sizes that are not multiples of 8, an outer loop of other dims, NCHW ->
// NHWC and back, a 3-D rotation, one large enough to split its tiles across threads, and a
// 1-byte type.
// Transposes whose output-contiguous dim is short (<= 4) and comes from an outer input dim (the
// ConvTranspose phase interleave): B contiguous input rows written interleaved.
TEST(CpuVsInterp, InterleaveTranspose) {
  compareWithInterpreter(R"(
func.func @main(%p: tensor<1x2x3x5x7x9xf32>, %m: tensor<3x37xf32>, %f: tensor<4x5x11xf32>, %w: tensor<2x6x5xf32>, %i: tensor<2x13x9xi64>, %g: tensor<3x3x2x33x17xf32>) -> (tensor<1x5x7x2x9x3xf32>, tensor<37x3xf32>, tensor<5x11x4xf32>, tensor<5x6x2xf32>, tensor<13x9x2xi64>, tensor<2x33x3x17x3xf32>) {
  %0 = tg.transpose %p {perm = [0, 3, 4, 1, 5, 2]} : tensor<1x2x3x5x7x9xf32> -> tensor<1x5x7x2x9x3xf32>
  %1 = tg.transpose %m {perm = [1, 0]} : tensor<3x37xf32> -> tensor<37x3xf32>
  %2 = tg.transpose %f {perm = [1, 2, 0]} : tensor<4x5x11xf32> -> tensor<5x11x4xf32>
  %3 = tg.transpose %w {perm = [2, 1, 0]} : tensor<2x6x5xf32> -> tensor<5x6x2xf32>
  %4 = tg.transpose %i {perm = [1, 2, 0]} : tensor<2x13x9xi64> -> tensor<13x9x2xi64>
  %5 = tg.transpose %g {perm = [2, 3, 0, 4, 1]} : tensor<3x3x2x33x17xf32> -> tensor<2x33x3x17x3xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<1x5x7x2x9x3xf32>, tensor<37x3xf32>, tensor<5x11x4xf32>, tensor<5x6x2xf32>, tensor<13x9x2xi64>, tensor<2x33x3x17x3xf32>
}
)", "interleave_transpose");
}

TEST(CpuVsInterp, TiledTranspose) {
  compareWithInterpreter(R"(
func.func @main(%x: tensor<3x37x45xf32>, %n: tensor<2x5x7x9xf32>, %r: tensor<6x33x17xf32>, %big: tensor<1x32x40x33xf32>, %i: tensor<13x21xi64>) -> (tensor<3x45x37xf32>, tensor<2x7x9x5xf32>, tensor<2x9x5x7xf32>, tensor<17x6x33xf32>, tensor<1x40x33x32xf32>, tensor<21x13xi64>) {
  %0 = tg.transpose %x {perm = [0, 2, 1]} : tensor<3x37x45xf32> -> tensor<3x45x37xf32>
  %1 = tg.transpose %n {perm = [0, 2, 3, 1]} : tensor<2x5x7x9xf32> -> tensor<2x7x9x5xf32>
  %2 = tg.transpose %n {perm = [0, 3, 1, 2]} : tensor<2x5x7x9xf32> -> tensor<2x9x5x7xf32>
  %3 = tg.transpose %r {perm = [2, 0, 1]} : tensor<6x33x17xf32> -> tensor<17x6x33xf32>
  %4 = tg.transpose %big {perm = [0, 2, 3, 1]} : tensor<1x32x40x33xf32> -> tensor<1x40x33x32xf32>
  %5 = tg.transpose %i {perm = [1, 0]} : tensor<13x21xi64> -> tensor<21x13xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<3x45x37xf32>, tensor<2x7x9x5xf32>, tensor<2x9x5x7xf32>, tensor<17x6x33xf32>, tensor<1x40x33x32xf32>, tensor<21x13xi64>
}
)",
                         "tiled_transpose.tgpkg", 3);
}

// Regular 2-D f32 convolutions with at most 64 output channels run direct (tg_conv_direct2d):
// output channels not a multiple of its block of 4 (15, 5), strides 1 and 2, a dilation,
// asymmetric pads, a non-square window, two images, with and without a bias; once on 3 threads
// (runs of positions split across the pool) and once on 1.
TEST(CpuVsInterp, DirectConv) {
  const char *ir = R"(
func.func @main(%x: tensor<2x7x19x23xf32>, %w15: tensor<15x7x3x3xf32>, %b15: tensor<15xf32>, %w5: tensor<5x7x3x2xf32>, %w64: tensor<64x7x5x5xf32>, %b64: tensor<64xf32>) -> (tensor<2x15x19x23xf32>, tensor<2x5x9x12xf32>, tensor<2x15x16x19xf32>, tensor<2x64x10x12xf32>) {
  %0 = tg.conv %x, %w15, %b15 {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<2x7x19x23xf32>, tensor<15x7x3x3xf32>, tensor<15xf32> -> tensor<2x15x19x23xf32>
  %1 = tg.conv %x, %w5 {strides = [2, 2], pads = [1, 0, 0, 1], dilations = [1, 1], group = 1 : i64} : tensor<2x7x19x23xf32>, tensor<5x7x3x2xf32> -> tensor<2x5x9x12xf32>
  %2 = tg.conv %x, %w15 {strides = [1, 1], pads = [0, 0, 1, 0], dilations = [2, 2], group = 1 : i64} : tensor<2x7x19x23xf32>, tensor<15x7x3x3xf32> -> tensor<2x15x16x19xf32>
  %3 = tg.conv %x, %w64, %b64 {strides = [2, 2], pads = [2, 2, 2, 2], dilations = [1, 1], group = 1 : i64} : tensor<2x7x19x23xf32>, tensor<64x7x5x5xf32>, tensor<64xf32> -> tensor<2x64x10x12xf32>
  return %0, %1, %2, %3 : tensor<2x15x19x23xf32>, tensor<2x5x9x12xf32>, tensor<2x15x16x19xf32>, tensor<2x64x10x12xf32>
}
)";
  compareWithInterpreter(ir, "direct_conv3.tgpkg", 3);
  compareWithInterpreter(ir, "direct_conv1.tgpkg", 1);
}

// tg.layer_norm's scale and bias read three ways (codegen::normParamIndex): one per position of
// the row, broadcast within the row ([8] over normalized dims [3, 8]: an index table), and with
// more dims than the row ([3, 8] over rows of 8: a row offset); a bias without a scale.
TEST(CpuVsInterp, LayerNormParameterLayouts) {
  compareWithInterpreter(R"(
func.func @main(%a: tensor<2x3x8xf32>, %s: tensor<8xf32>, %t: tensor<3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %0 = tg.layer_norm %a, %s, %s {axis = 2 : i64, epsilon = 1.0e-05 : f32} : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %1 = tg.layer_norm %a, %s, %t {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x3x8xf32>, tensor<8xf32>, tensor<3x8xf32> -> tensor<2x3x8xf32>
  %2 = tg.layer_norm %a, bias %t {axis = 2 : i64, epsilon = 1.0e-03 : f32} : tensor<2x3x8xf32>, tensor<3x8xf32> -> tensor<2x3x8xf32>
  return %0, %1, %2 : tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>
}
)",
                         "layer_norm_params.tgpkg");
}

// tg.rms_norm (formed by tgc-recognize-norms): scale over one and over two trailing dims.
TEST(CpuVsInterp, RmsNorm) {
  compareWithInterpreter(R"(
func.func @main(%a: tensor<2x3x8xf32>, %s: tensor<8xf32>, %t: tensor<1x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %0 = tg.rms_norm %a, %s {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %1 = tg.rms_norm %a, %t {axis = 1 : i64, epsilon = 1.0e-03 : f32} : tensor<2x3x8xf32>, tensor<1x3x8xf32> -> tensor<2x3x8xf32>
  %2 = tg.rms_norm %a {axis = 2 : i64, epsilon = 1.0e-05 : f32} : tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  return %0, %1, %2 : tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>
}
)",
                         "rms_norm.tgpkg");
}

// tg.rotary (tgc-recognize-rotary) with cos/sin broadcast over heads and of lower rank, in both
// layouts, and tg.swiglu (tgc-recognize-swiglu), each one kernel without temporaries.
TEST(CpuVsInterp, RotaryAndSwiglu) {
  compareWithInterpreter(R"(
func.func @main(%q: tensor<1x4x8x32xf32>, %cos: tensor<1x1x8x32xf32>, %sin: tensor<8x32xf32>, %v: tensor<6xf32>, %c: tensor<6xf32>, %g: tensor<2x5x24xf32>) -> (tensor<1x4x8x32xf32>, tensor<1x4x8x32xf32>, tensor<6xf32>, tensor<2x5x12xf32>) {
  %0 = tg.rotary %q, %cos, %sin : tensor<1x4x8x32xf32>, tensor<1x1x8x32xf32>, tensor<8x32xf32> -> tensor<1x4x8x32xf32>
  %1 = tg.rotary %q, %cos, %sin {interleaved = true} : tensor<1x4x8x32xf32>, tensor<1x1x8x32xf32>, tensor<8x32xf32> -> tensor<1x4x8x32xf32>
  %2 = tg.rotary %v, %c, %c : tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
  %3 = tg.swiglu %g : tensor<2x5x24xf32> -> tensor<2x5x12xf32>
  return %0, %1, %2, %3 : tensor<1x4x8x32xf32>, tensor<1x4x8x32xf32>, tensor<6xf32>, tensor<2x5x12xf32>
}
)",
                         "rotary_swiglu.tgpkg");
}

// tg.attention in both layouts (tgc-recognize-attention forms "bshd" from the [0,2,1,3]
// transposes around a block): GQA (4 query heads on 2 key/value heads), a mask broadcast over
// heads, Dv != D, and causal with fewer queries than keys (bottom-right aligned).
TEST(CpuVsInterp, AttentionLayouts) {
  compareWithInterpreter(R"(
func.func @main(%q: tensor<2x5x4x8xf32>, %k: tensor<2x7x2x8xf32>, %v: tensor<2x7x2x12xf32>, %m: tensor<2x1x5x7xf32>, %cq: tensor<1x3x4x16xf32>, %ck: tensor<1x6x2x16xf32>) -> (tensor<2x5x4x12xf32>, tensor<1x3x4x16xf32>, tensor<2x4x5x12xf32>, tensor<1x4x3x16xf32>) {
  %0 = tg.attention %q, %k, %v, %m {layout = "bshd", scale = 0.35 : f32} : tensor<2x5x4x8xf32>, tensor<2x7x2x8xf32>, tensor<2x7x2x12xf32>, tensor<2x1x5x7xf32> -> tensor<2x5x4x12xf32>
  %1 = tg.attention %cq, %ck, %ck {causal = true, layout = "bshd", scale = 0.25 : f32} : tensor<1x3x4x16xf32>, tensor<1x6x2x16xf32>, tensor<1x6x2x16xf32> -> tensor<1x3x4x16xf32>
  %tq = tg.transpose %q {perm = [0, 2, 1, 3]} : tensor<2x5x4x8xf32> -> tensor<2x4x5x8xf32>
  %tk = tg.transpose %k {perm = [0, 2, 1, 3]} : tensor<2x7x2x8xf32> -> tensor<2x2x7x8xf32>
  %tv = tg.transpose %v {perm = [0, 2, 1, 3]} : tensor<2x7x2x12xf32> -> tensor<2x2x7x12xf32>
  %2 = tg.attention %tq, %tk, %tv, %m {scale = 0.35 : f32} : tensor<2x4x5x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x12xf32>, tensor<2x1x5x7xf32> -> tensor<2x4x5x12xf32>
  %tcq = tg.transpose %cq {perm = [0, 2, 1, 3]} : tensor<1x3x4x16xf32> -> tensor<1x4x3x16xf32>
  %tck = tg.transpose %ck {perm = [0, 2, 1, 3]} : tensor<1x6x2x16xf32> -> tensor<1x2x6x16xf32>
  %3 = tg.attention %tcq, %tck, %tck {causal = true, scale = 0.25 : f32} : tensor<1x4x3x16xf32>, tensor<1x2x6x16xf32>, tensor<1x2x6x16xf32> -> tensor<1x4x3x16xf32>
  return %0, %1, %2, %3 : tensor<2x5x4x12xf32>, tensor<1x3x4x16xf32>, tensor<2x4x5x12xf32>, tensor<1x4x3x16xf32>
}
)",
                         "attention_layouts.tgpkg");
}

// f32 attention over 4+ query rows runs as blocks of up to 8 rows, each block's scores and
// P·V two small GEMMs against a transposed copy of its head's keys (the prelude's
// tg_attention_f32). At 3 threads (uneven chunks of (batch, head, block) units, the transposed
// keys reused within a chunk): 21 rows (blocks of 8, 8, 5) against 45 keys (two 32-key strips,
// the second partial) with GQA and D = Dv = 40 (a 32-column strip and 8 left over); causal over
// 70 keys (each row of a block sees a different count) with Dv 64; causal with fewer queries
// than keys (12 rows, bottom-right aligned: 19 to 30 keys each); batch 2 in "bhsd"; masks
// broadcast over heads, and over heads and rows (a padding mask, "bhsd"). At the
// host's level (AVX-512 register tiles where it has them) and at x86-64-v2 (the plain loops).
TEST(CpuVsInterp, AttentionBlocksOfRows) {
  const std::string ir = R"(
func.func @main(%q: tensor<1x21x4x40xf32>, %k: tensor<1x45x2x40xf32>, %v: tensor<1x45x2x40xf32>, %cq: tensor<2x3x70x32xf32>, %cv: tensor<2x3x70x64xf32>, %lq: tensor<2x2x12x16xf32>, %lk: tensor<2x2x30x16xf32>, %m: tensor<1x1x21x45xf32>, %pm: tensor<2x1x1x70xf32>) -> (tensor<1x21x4x40xf32>, tensor<2x3x70x64xf32>, tensor<2x2x12x16xf32>, tensor<1x21x4x40xf32>, tensor<2x3x70x64xf32>) {
  %0 = tg.attention %q, %k, %v {layout = "bshd", scale = 0.3 : f32} : tensor<1x21x4x40xf32>, tensor<1x45x2x40xf32>, tensor<1x45x2x40xf32> -> tensor<1x21x4x40xf32>
  %1 = tg.attention %cq, %cq, %cv {causal = true, scale = 0.2 : f32} : tensor<2x3x70x32xf32>, tensor<2x3x70x32xf32>, tensor<2x3x70x64xf32> -> tensor<2x3x70x64xf32>
  %2 = tg.attention %lq, %lk, %lk {causal = true, scale = 0.25 : f32} : tensor<2x2x12x16xf32>, tensor<2x2x30x16xf32>, tensor<2x2x30x16xf32> -> tensor<2x2x12x16xf32>
  %3 = tg.attention %q, %k, %v, %m {layout = "bshd", scale = 0.3 : f32} : tensor<1x21x4x40xf32>, tensor<1x45x2x40xf32>, tensor<1x45x2x40xf32>, tensor<1x1x21x45xf32> -> tensor<1x21x4x40xf32>
  %4 = tg.attention %cq, %cq, %cv, %pm {scale = 0.2 : f32} : tensor<2x3x70x32xf32>, tensor<2x3x70x32xf32>, tensor<2x3x70x64xf32>, tensor<2x1x1x70xf32> -> tensor<2x3x70x64xf32>
  return %0, %1, %2, %3, %4 : tensor<1x21x4x40xf32>, tensor<2x3x70x64xf32>, tensor<2x2x12x16xf32>, tensor<1x21x4x40xf32>, tensor<2x3x70x64xf32>
}
)";
  compareWithInterpreter(ir, "attention_blocks.tgpkg", 3, "cpu:" + tgc::hostCpuLevel());
  compareWithInterpreter(ir, "attention_blocks_v2.tgpkg", 3, "cpu:x86-64-v2");
}

// A row whose scores hold a NaN is 0 in the blocked f32 kernel, as in the interpreter, and the
// other rows of its block are not touched by it.
TEST(CpuVsInterp, AttentionBlockWithAnUndefinedRow) {
  std::vector<tgc::HostTensor> got;
  compareWithInterpreter(
      R"(
func.func @main(%q: tensor<1x2x10x32xf32>, %k: tensor<1x2x20x32xf32>) -> tensor<1x2x10x32xf32> {
  %0 = tg.attention %q, %k, %k {scale = 0.2 : f32} : tensor<1x2x10x32xf32>, tensor<1x2x20x32xf32>, tensor<1x2x20x32xf32> -> tensor<1x2x10x32xf32>
  return %0 : tensor<1x2x10x32xf32>
}
)",
      "attention_nan_row.tgpkg", 2, "cpu:" + tgc::hostCpuLevel(),
      [](size_t a, size_t, tgc::HostTensor &x) {
        if (a == 0)
          x.set((1 * 10 + 3) * 32 + 5, std::nan("")); // head 1, row 3
      },
      &got);
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < got[0].numel(); ++i) {
    const bool undefinedRow = i / 32 == 1 * 10 + 3;
    if (undefinedRow)
      EXPECT_EQ(got[0].get(i), 0.0) << i;
    else
      EXPECT_TRUE(std::isfinite(got[0].get(i))) << i;
  }
}

// The attention edge cases the CUDA tests run (tests/unit/attention_edge_cases.h: -inf masks and
// a fully masked row, NaN and +inf queries and keys, causal with S < T, GQA, head dims 40 to 160,
// long keys and queries) at f32 on 3 threads, at the host's level and at x86-64-v2: every output
// matches the interpreter, and the rows it writes 0 are exactly 0.
TEST(CpuVsInterp, AttentionEdgeCasesMatchInterpreter) {
  for (const std::string &target : {"cpu:" + tgc::hostCpuLevel(), std::string("cpu:x86-64-v2")})
    for (const tgc::attn_cases::AttentionEdgeCase &c : tgc::attn_cases::attentionEdgeCases()) {
      SCOPED_TRACE(std::string(c.name) + " at " + target);
      std::vector<tgc::HostTensor> got;
      compareWithInterpreter(
          tgc::attn_cases::instantiate(c.ir, "f32"), std::string("attn_edge_") + c.name + ".tgpkg",
          3, target,
          [&](size_t a, size_t args, tgc::HostTensor &x) {
            tgc::attn_cases::editEdgeInput(c, a, args, x);
          },
          &got);
      for (size_t o = 0; o < got.size(); ++o) {
        // Output o is [B, H, S, Dv] ("bhsd") where these cases set rows to 0.
        const std::vector<int64_t> &sh = got[o].shape;
        const int64_t H = sh[1], S = sh[2], Dv = sh[3];
        int64_t nonzero = 0;
        if (c.poisonKeys) // head 2: a NaN score in every row
          for (int64_t i = 2 * S * Dv; i < 3 * S * Dv; ++i)
            nonzero += got[o].get(i) != 0.0;
        if (c.poisonS >= 0) // rows poisonS (NaN) and poisonS + 1 (+inf) of head 0
          for (int64_t i = c.poisonS * Dv; i < (c.poisonS + 2) * Dv; ++i)
            nonzero += got[o].get(i) != 0.0;
        if (c.zeroRowS >= 0 && o == 0) // the fully masked row, in every head
          for (int64_t h = 0; h < H; ++h)
            for (int64_t d = 0; d < Dv; ++d)
              nonzero += got[o].get(((c.zeroRowB * H + h) * S + c.zeroRowS) * Dv + d) != 0.0;
        EXPECT_EQ(nonzero, 0) << "output " << o << ": rows the interpreter writes 0 are not";
      }
    }
}

// The interpreter's "bshd" attention is its "bhsd" one with dims 1 and 2 swapped on q, k, v
// and the result (what FoldLayoutTransposesIntoAttention relies on).
TEST(CpuVsInterp, AttentionBshdMatchesTransposedBhsd) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(R"(
func.func @main(%q: tensor<2x5x4x8xf32>, %k: tensor<2x7x2x8xf32>, %v: tensor<2x7x2x12xf32>, %m: tensor<2x4x5x7xf32>) -> (tensor<2x5x4x12xf32>, tensor<2x5x4x12xf32>) {
  %0 = tg.attention %q, %k, %v, %m {layout = "bshd", scale = 0.35 : f32} : tensor<2x5x4x8xf32>, tensor<2x7x2x8xf32>, tensor<2x7x2x12xf32>, tensor<2x4x5x7xf32> -> tensor<2x5x4x12xf32>
  %tq = tg.transpose %q {perm = [0, 2, 1, 3]} : tensor<2x5x4x8xf32> -> tensor<2x4x5x8xf32>
  %tk = tg.transpose %k {perm = [0, 2, 1, 3]} : tensor<2x7x2x8xf32> -> tensor<2x2x7x8xf32>
  %tv = tg.transpose %v {perm = [0, 2, 1, 3]} : tensor<2x7x2x12xf32> -> tensor<2x2x7x12xf32>
  %a = tg.attention %tq, %tk, %tv, %m {scale = 0.35 : f32} : tensor<2x4x5x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x12xf32>, tensor<2x4x5x7xf32> -> tensor<2x4x5x12xf32>
  %1 = tg.transpose %a {perm = [0, 2, 1, 3]} : tensor<2x4x5x12xf32> -> tensor<2x5x4x12xf32>
  return %0, %1 : tensor<2x5x4x12xf32>, tensor<2x5x4x12xf32>
}
)",
                                                        &ctx);
  ASSERT_TRUE(module);
  auto fn = module->lookupSymbol<mlir::func::FuncOp>("main");
  std::vector<tgc::HostTensor> inputs{randomTensor(tgc::DType::F32, {2, 5, 4, 8}, 1),
                                      randomTensor(tgc::DType::F32, {2, 7, 2, 8}, 2),
                                      randomTensor(tgc::DType::F32, {2, 7, 2, 12}, 3),
                                      randomTensor(tgc::DType::F32, {2, 4, 5, 7}, 4)};
  auto got = tgc::interpret(fn, inputs);
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].shape, (*got)[1].shape);
  EXPECT_LT(tgc::relativeL2((*got)[0], (*got)[1]), 1e-12);
}

} // namespace
