// import_index_test.cpp — CumSum, ScatterElements/Scatter, ScatterND and TopK (tg.cumsum,
// tg.scatter_elements, tg.topk): small ONNX models compiled for the CPU backend and run by the
// runtime against hand-computed values (negative indices wrap, out-of-range ones write nothing,
// duplicates apply in order, ScatterND through its [rows, slice] scatter, TopK ties by lower
// index), the CPU kernels against the reference interpreter on larger random inputs, and the
// importer's refusals, each naming the node.
#include "codegen/cpu/CpuBackend.h"
#include "compiler/dialect/TgDialect.h"
#include "compiler/interp/Interpreter.h"
#include "driver/Compile.h"
#include "frontends/onnx/onnx.pb.h"
#include "runtime/Session.h"
#include "tests/unit/CpuCompile.h"
#include "tests/unit/OnnxModelBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

using namespace tgc;

namespace {

using Builder = test::OnnxModel;

using test::tmpDir;

/// Compiles `b` for the CPU into `name`.tgpkg: the error message, "" on success.
std::string compileError(const Builder &b, const std::string &name) {
  return test::compileForCpu(b.bytes(), name);
}

/// Compiles `b` for the CPU and runs it on `inputs`; the outputs (empty, with a failure, on error).
std::vector<HostTensor> runCpu(const Builder &b, const std::string &name,
                               const std::vector<HostTensor> &inputs) {
  auto s = test::compileAndLoadCpu(b.bytes(), name);
  return s ? test::runSession(*s, inputs) : std::vector<HostTensor>{};
}



HostTensor tensor(DType t, std::vector<int64_t> shape, const std::vector<double> &v,
                  const std::string &name) {
  HostTensor h = HostTensor::zeros(t, std::move(shape), name);
  EXPECT_EQ((int64_t)v.size(), h.numel());
  for (size_t i = 0; i < v.size(); ++i)
    h.set((int64_t)i, v[i]);
  return h;
}

std::vector<double> values(const HostTensor &t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i)
    v.push_back(t.get(i));
  return v;
}

using V = std::vector<double>;

TEST(ImportIndex, CumSumExclusiveReverseAndIntegers) {
  Builder b(14);
  b.input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.input("n", onnx::TensorProto::INT64, {2, 3});
  b.initI64("ax1", {1});
  b.initI64("ax0", {0});
  auto *rev = b.node("CumSum", {"x", "ax1"}, {"r"}, "rev");
  test::attrInt(rev, "exclusive", 1);
  test::attrInt(rev, "reverse", 1);
  b.node("CumSum", {"n", "ax0"}, {"c"}, "ints");
  b.output("r");
  b.output("c");
  auto out = runCpu(b, "idx_cumsum",
                    {tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}, "x"),
                     tensor(DType::I64, {2, 3}, {1, 2, 3, 4, 5, 6}, "n")});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (V{5, 3, 0, 11, 6, 0}));
  EXPECT_EQ(out[1].dtype, DType::I64);
  EXPECT_EQ(values(out[1]), (V{1, 2, 3, 5, 7, 9}));
}

// Along axis 0: index -1 wraps to the last row, 5 is out of range and writes nothing; the two
// updates of element (1, 0) are both added, and with no reduction the later one wins.
TEST(ImportIndex, ScatterElementsAddAndNoneWithDuplicatesNegativeAndOutOfRange) {
  Builder b(18);
  b.input("d", onnx::TensorProto::FLOAT, {3, 3});
  b.input("i", onnx::TensorProto::INT64, {2, 3});
  b.input("u", onnx::TensorProto::FLOAT, {2, 3});
  test::attrString(b.node("ScatterElements", {"d", "i", "u"}, {"add"}, "sa"), "reduction", "add");
  b.node("ScatterElements", {"d", "i", "u"}, {"none"}, "sn");
  b.output("add");
  b.output("none");
  auto out = runCpu(b, "idx_scatter",
                    {tensor(DType::F32, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, "d"),
                     tensor(DType::I64, {2, 3}, {1, 0, 2, 1, -1, 5}, "i"),
                     tensor(DType::F32, {2, 3}, {10, 20, 30, 40, 50, 60}, "u")});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (V{1, 22, 3, 54, 5, 6, 7, 58, 39}));
  EXPECT_EQ(values(out[1]), (V{1, 20, 3, 40, 5, 6, 7, 50, 30}));
}

// ScatterND: row tuples (q = 1) with mul (two updates of row 1 multiply in, -2 wraps to row 0,
// row 2 is out of range and writes nothing), and whole-element tuples (q = 2) without reduction.
TEST(ImportIndex, ScatterNDRowsAndElements) {
  Builder b(18);
  b.input("d", onnx::TensorProto::FLOAT, {2, 3});
  b.input("rows", onnx::TensorProto::INT64, {4, 1});
  b.input("ru", onnx::TensorProto::FLOAT, {4, 3});
  b.input("elems", onnx::TensorProto::INT64, {2, 2});
  b.input("eu", onnx::TensorProto::FLOAT, {2});
  test::attrString(b.node("ScatterND", {"d", "rows", "ru"}, {"m"}, "rowmul"), "reduction", "mul");
  b.node("ScatterND", {"d", "elems", "eu"}, {"e"}, "elems");
  b.output("m");
  b.output("e");
  auto out = runCpu(
      b, "idx_scatternd",
      {tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}, "d"),
       tensor(DType::I64, {4, 1}, {1, -2, 1, 2}, "rows"),
       tensor(DType::F32, {4, 3}, {2, 2, 2, 3, 3, 3, 10, 10, 10, 100, 100, 100}, "ru"),
       tensor(DType::I64, {2, 2}, {1, 2, 0, -1}, "elems"), tensor(DType::F32, {2}, {7, 8}, "eu")});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (V{3, 6, 9, 80, 100, 120}));
  EXPECT_EQ(values(out[1]), (V{1, 2, 8, 4, 5, 7}));
}

// Top-2 of each row, largest and smallest: equal values by lower index first.
TEST(ImportIndex, TopKLargestAndSmallestWithTies) {
  Builder b(11);
  b.input("x", onnx::TensorProto::FLOAT, {2, 4});
  b.initI64("k", {2});
  b.node("TopK", {"x", "k"}, {"lv", "li"}, "large");
  test::attrInt(b.node("TopK", {"x", "k"}, {"sv", "si"}, "small"), "largest", 0);
  for (const char *o : {"lv", "li", "sv", "si"})
    b.output(o);
  auto out = runCpu(b, "idx_topk", {tensor(DType::F32, {2, 4}, {3, 1, 3, 1, 0, 9, 5, -2}, "x")});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(values(out[0]), (V{3, 3, 9, 5}));
  EXPECT_EQ(out[1].dtype, DType::I64);
  EXPECT_EQ(values(out[1]), (V{0, 2, 1, 2}));
  EXPECT_EQ(values(out[2]), (V{1, 1, -2, 0}));
  EXPECT_EQ(values(out[3]), (V{1, 3, 3, 0}));
}

// The CPU kernels agree exactly with the interpreter: random values in steps of 0.5 (so top-k
// meets ties and sums are exact), indices in [-7, 7) (some out of range on every axis), every
// scatter reduction, cumsum in f32, f64 and i32, top-k along an inner axis.
TEST(ImportIndex, CpuKernelsMatchTheInterpreter) {
  const char *ir = R"(
func.func @main(%x: tensor<3x6x4xf32>, %d: tensor<f64x>, %n: tensor<5x3xi32>, %i: tensor<3x5x4xi64>, %u: tensor<3x5x4xf32>) -> (tensor<3x6x4xf32>, tensor<f64x>, tensor<5x3xi32>, tensor<3x6x4xf32>, tensor<3x6x4xf32>, tensor<3x6x4xf32>, tensor<3x6x4xf32>, tensor<3x6x4xf32>, tensor<3x3x4xf32>, tensor<3x3x4xi64>, tensor<3x6x2xf32>, tensor<3x6x2xi64>) {
  %0 = tg.cumsum %x {axis = 1 : i64, reverse = true} : tensor<3x6x4xf32>
  %1 = tg.cumsum %d {axis = 0 : i64, exclusive = true} : tensor<f64x>
  %2 = tg.cumsum %n {axis = 0 : i64} : tensor<5x3xi32>
  %3 = tg.scatter_elements %x, %i, %u {axis = 1 : i64} : tensor<3x6x4xf32>, tensor<3x5x4xi64>, tensor<3x5x4xf32> -> tensor<3x6x4xf32>
  %4 = tg.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"} : tensor<3x6x4xf32>, tensor<3x5x4xi64>, tensor<3x5x4xf32> -> tensor<3x6x4xf32>
  %5 = tg.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "mul"} : tensor<3x6x4xf32>, tensor<3x5x4xi64>, tensor<3x5x4xf32> -> tensor<3x6x4xf32>
  %6 = tg.scatter_elements %x, %i, %u {axis = 2 : i64, reduction = "max"} : tensor<3x6x4xf32>, tensor<3x5x4xi64>, tensor<3x5x4xf32> -> tensor<3x6x4xf32>
  %7 = tg.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "min"} : tensor<3x6x4xf32>, tensor<3x5x4xi64>, tensor<3x5x4xf32> -> tensor<3x6x4xf32>
  %8:2 = tg.topk %x {axis = 1 : i64} : tensor<3x6x4xf32> -> tensor<3x3x4xf32>, tensor<3x3x4xi64>
  %9:2 = tg.topk %x {axis = 2 : i64, largest = false} : tensor<3x6x4xf32> -> tensor<3x6x2xf32>, tensor<3x6x2xi64>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8#0, %8#1, %9#0, %9#1 : tensor<3x6x4xf32>, tensor<f64x>, tensor<5x3xi32>, tensor<3x6x4xf32>, tensor<3x6x4xf32>, tensor<3x6x4xf32>, tensor<3x6x4xf32>, tensor<3x6x4xf32>, tensor<3x3x4xf32>, tensor<3x3x4xi64>, tensor<3x6x2xf32>, tensor<3x6x2xi64>
}
)";
  std::string src = ir;
  for (size_t at; (at = src.find("f64x")) != std::string::npos;)
    src.replace(at, 4, "7x2xf64");
  mlir::MLIRContext ctx;
  ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(src, &ctx);
  ASSERT_TRUE(module);
  auto fn = module->lookupSymbol<mlir::func::FuncOp>("main");
  std::vector<HostTensor> inputs;
  uint32_t s = 12345;
  for (mlir::Type t : fn.getArgumentTypes()) {
    auto rt = t.cast<mlir::RankedTensorType>();
    auto dt = dtypeOf(rt.getElementType());
    ASSERT_TRUE(bool(dt));
    HostTensor h = HostTensor::zeros(*dt, {rt.getShape().begin(), rt.getShape().end()});
    for (int64_t k = 0; k < h.numel(); ++k) {
      s = s * 1664525u + 1013904223u;
      const int r = (int)((s >> 16) % 14) - 7; // [-7, 7)
      h.set(k, *dt == DType::I64 || *dt == DType::I32 ? r : r * 0.5);
    }
    inputs.push_back(std::move(h));
  }
  auto want = interpret(fn, inputs);
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  const std::string dir = tmpDir() + "/idx_cpu_vs_interp.tgpkg";
  auto stats = writeCpuPackage(*module, dir, {}, tmpDir() + "/kcache");
  ASSERT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  Status st;
  auto session = Session::load(dir, st, 2);
  ASSERT_TRUE(session) << st.message;
  std::vector<HostTensor> got;
  st = session->run(inputs, got);
  ASSERT_TRUE(st.ok) << st.message;
  ASSERT_EQ(got.size(), want->size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape, (*want)[k].shape) << "output " << k;
    ASSERT_EQ(got[k].dtype, (*want)[k].dtype) << "output " << k;
    EXPECT_EQ(values(got[k]), values((*want)[k])) << "output " << k;
  }
}

/// Expects compiling `b` to fail with a message holding every one of `parts`.
void expectRefused(const Builder &b, const std::string &name,
                   const std::vector<std::string> &parts) {
  const std::string err = compileError(b, name);
  ASSERT_FALSE(err.empty()) << name << " compiled";
  for (const std::string &p : parts)
    EXPECT_NE(err.find(p), std::string::npos) << "'" << p << "' not in: " << err;
}

TEST(ImportIndex, RefusalsNameTheNode) {
  { // TopK's k from a graph input
    Builder b(11);
    b.input("x", onnx::TensorProto::FLOAT, {2, 4});
    b.input("k", onnx::TensorProto::INT64, {1});
    b.node("TopK", {"x", "k"}, {"v", "i"}, "tk");
    b.output("v");
    expectRefused(b, "idx_bad_k", {"TopK 'tk'", "K input must be constant", "--bind-input k="});
  }
  { // k larger than the axis
    Builder b(11);
    b.input("x", onnx::TensorProto::FLOAT, {2, 4});
    b.initI64("k", {5});
    b.node("TopK", {"x", "k"}, {"v", "i"}, "tk5");
    b.output("v");
    expectRefused(b, "idx_big_k", {"TopK 'tk5'", "k = 5"});
  }
  { // CumSum's axis from a graph input, and out of range
    Builder b(14);
    b.input("x", onnx::TensorProto::FLOAT, {2, 3});
    b.input("a", onnx::TensorProto::INT64, {});
    b.node("CumSum", {"x", "a"}, {"y"}, "cs");
    b.output("y");
    expectRefused(b, "idx_cs_axis_input", {"CumSum 'cs'", "axis input must be constant"});
    Builder c(14);
    c.input("x", onnx::TensorProto::FLOAT, {2, 3});
    c.initI64("a", {2});
    c.node("CumSum", {"x", "a"}, {"y"}, "cs2");
    c.output("y");
    expectRefused(c, "idx_cs_axis_range", {"CumSum 'cs2'", "axis 2 is out of range"});
  }
  { // an unknown reduction, and an axis out of range
    Builder b(18);
    b.input("d", onnx::TensorProto::FLOAT, {3, 3});
    b.input("i", onnx::TensorProto::INT64, {2, 3});
    b.input("u", onnx::TensorProto::FLOAT, {2, 3});
    test::attrString(b.node("ScatterElements", {"d", "i", "u"}, {"y"}, "sc"), "reduction", "sub");
    b.output("y");
    expectRefused(b, "idx_bad_reduction", {"ScatterElements 'sc'", "reduction 'sub'"});
    Builder c(18);
    c.input("d", onnx::TensorProto::FLOAT, {3, 3});
    c.input("i", onnx::TensorProto::INT64, {2, 3});
    c.input("u", onnx::TensorProto::FLOAT, {2, 3});
    test::attrInt(c.node("ScatterElements", {"d", "i", "u"}, {"y"}, "sc2"), "axis", 2);
    c.output("y");
    expectRefused(c, "idx_bad_axis", {"ScatterElements 'sc2'", "axis 2 is out of range"});
  }
  { // ScatterND: a constant index out of range, and updates of the wrong shape
    Builder b(18);
    b.input("d", onnx::TensorProto::FLOAT, {2, 3});
    b.initI64("i", {3});
    b.g->mutable_initializer(0)->clear_dims();
    b.g->mutable_initializer(0)->add_dims(1);
    b.g->mutable_initializer(0)->add_dims(1);
    b.input("u", onnx::TensorProto::FLOAT, {1, 3});
    b.node("ScatterND", {"d", "i", "u"}, {"y"}, "snd");
    b.output("y");
    expectRefused(b, "idx_nd_range", {"ScatterND 'snd'", "index 3 out of range for dim 2"});
    Builder c(18);
    c.input("d", onnx::TensorProto::FLOAT, {2, 3});
    c.input("i", onnx::TensorProto::INT64, {1, 1});
    c.input("u", onnx::TensorProto::FLOAT, {1, 2});
    c.node("ScatterND", {"d", "i", "u"}, {"y"}, "snd2");
    c.output("y");
    expectRefused(c, "idx_nd_shape", {"ScatterND 'snd2'", "updates 1x2 should be 1x3"});
  }
}

} // namespace
