// import_int_gemm_test.cpp — MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv on the
// CPU backend against exact integer references (tests/unit/IntGemmCases.h: K = 4096 sums beyond
// float's exact integers, sizes that are no multiple of a tile, zero points per tensor, per
// row/column and per output channel, requantization ties and saturation), float16 scales, and the
// importer's refusals naming the node.
#include "driver/Compile.h"
#include "runtime/Session.h"
#include "tests/unit/IntGemmCases.h"
#include "tests/unit/CpuCompile.h"
#include "tests/unit/OnnxModelBuilder.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

using namespace tgc;
using test::IntGemmCase;

namespace {

/// Compiles `m` for the CPU: the package path, or the compile error's text (`error` set).
std::string compileCpu(const test::OnnxModel &m, const std::string &name, bool &error) {
  const std::string err = test::compileForCpu(m.bytes(), name);
  error = !err.empty();
  return error ? err : test::cpuPackagePath(name);
}



/// Runs case `c` on the CPU and checks its output bit for bit.
void runCase(const IntGemmCase &c) {
  SCOPED_TRACE(c.name);
  bool failed = false;
  const std::string pkg = compileCpu(c.model, c.name, failed);
  ASSERT_FALSE(failed) << pkg;
  Status st;
  auto s = Session::load(pkg, st, 1);
  ASSERT_TRUE(s) << st.message;
  std::vector<HostTensor> out;
  st = s->run(c.inputs, out);
  ASSERT_TRUE(st.ok) << st.message;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype, c.want.dtype);
  EXPECT_EQ(out[0].shape, c.want.shape);
  EXPECT_EQ(integerMismatches(out[0], c.want), 0);
  if (out[0].numel() != c.want.numel())
    return;
  int shown = 0;
  for (int64_t i = 0; i < c.want.numel(); ++i)
    if (out[0].getInt(i) != c.want.getInt(i) && shown++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << out[0].getInt(i) << ", want "
                    << c.want.getInt(i);
}

TEST(CpuIntGemm, MatMulIntegerLargeKIsExact) { runCase(test::matMulIntegerLargeK()); }
TEST(CpuIntGemm, MatMulIntegerPerRowAndColumnZeroPoints) {
  runCase(test::matMulIntegerPerRowColumn());
}
TEST(CpuIntGemm, MatMulIntegerNdZeroPointsMixedSigns) {
  runCase(test::matMulIntegerNdZeroPoints());
}
TEST(CpuIntGemm, ConvIntegerPerChannelZeroPointAndPads) { runCase(test::convIntegerPerChannel()); }
TEST(CpuIntGemm, QLinearMatMulRoundsTiesToEvenAndSaturatesInt8) {
  runCase(test::qlinearMatMulTies(true));
}
TEST(CpuIntGemm, QLinearMatMulRoundsTiesToEvenAndSaturatesUint8) {
  runCase(test::qlinearMatMulTies(false));
}
TEST(CpuIntGemm, QLinearMatMulPerRowAndColumnScales) { runCase(test::qlinearMatMulPerRowColumn()); }
TEST(CpuIntGemm, QLinearConvPerChannelWithBias) { runCase(test::qlinearConvPerChannel()); }
TEST(CpuIntGemm, QLinearMatMulConstantWeightsFold) { runCase(test::qlinearMatMulConstantB()); }
// int64: the products and sums wrap modulo 2^64 in the compiled GEMM and in the interpreter that
// folds a product of constants (which sums integers exactly, not in double).
TEST(CpuIntGemm, Int64MatMulWrapsModulo2To64) { runCase(test::i64WrappingMatMul(false)); }
TEST(CpuIntGemm, Int64MatMulFoldedAtImportWraps) { runCase(test::i64WrappingMatMul(true)); }

// float16 scales: each scale widened to float, the product a_scale * b_scale / y_scale computed
// in float (one rounding per op, on every backend and inside fused kernels alike). With 0.05,
// 0.3 and 0.011 float16 steps would give 1.36328 and float steps give 1.36333, which rounds
// acc = 128 and 139 differently.
TEST(CpuIntGemm, QLinearMatMulFloat16Scales) {
  IntGemmCase c;
  c.name = "qlmm_f16";
  test::addInput(c, "a", DType::U8, {1, 1}, {1});
  test::addFloatInput(c, "as", DType::F16, {}, {0.05f});
  test::addInput(c, "az", DType::U8, {}, {0});
  test::addInput(c, "b", DType::U8, {1, 3}, {7, 128, 139});
  test::addFloatInput(c, "bs", DType::F16, {}, {0.3f});
  test::addInput(c, "bz", DType::U8, {}, {0});
  test::addFloatInput(c, "ys", DType::F16, {}, {0.011f});
  test::addInput(c, "yz", DType::U8, {}, {10});
  c.model.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "qmm");
  c.model.output("y");
  auto h = [](float v) { return halfToFloat(floatToHalf(v)); };
  const float s = h(0.05f) * h(0.3f) / h(0.011f);
  std::vector<int64_t> want;
  for (int64_t acc : {7, 128, 139})
    want.push_back(test::requant(acc, s, 10, 0, 255));
  c.want = test::tensorOf(DType::U8, {1, 3}, want);
  runCase(c);
}

/// The compile error of `m` (a failure when it compiles).
std::string refusal(const test::OnnxModel &m, const std::string &name) {
  bool failed = false;
  std::string msg = compileCpu(m, name, failed);
  EXPECT_TRUE(failed) << name << " compiled";
  return msg;
}

TEST(CpuIntGemm, RefusesNon8BitOperandsNamingTheNode) {
  test::OnnxModel m(21);
  m.input("A", (int)DType::I16, {2, 3});
  m.input("B", (int)DType::I8, {3, 2});
  m.node("MatMulInteger", {"A", "B"}, {"Y"}, "mm16");
  m.output("Y");
  const std::string msg = refusal(m, "refuse_i16");
  EXPECT_NE(msg.find("MatMulInteger 'mm16'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("only int8 and uint8"), std::string::npos) << msg;
}

TEST(CpuIntGemm, RefusesMismatchedZeroPointShapes) {
  test::OnnxModel m(21);
  m.input("A", (int)DType::U8, {2, 3});
  m.input("B", (int)DType::U8, {3, 4});
  m.input("az", (int)DType::U8, {3}); // M is 2
  m.node("MatMulInteger", {"A", "B", "az"}, {"Y"}, "mmz");
  m.output("Y");
  const std::string msg = refusal(m, "refuse_zp_shape");
  EXPECT_NE(msg.find("MatMulInteger 'mmz'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a_zero_point has shape [3]"), std::string::npos) << msg;

  test::OnnxModel w(21);
  w.input("x", (int)DType::U8, {1, 2, 4, 4});
  w.input("w", (int)DType::U8, {3, 2, 2, 2});
  w.input("xz", (int)DType::U8, {});
  w.input("wz", (int)DType::U8, {2}); // 3 output channels
  w.node("ConvInteger", {"x", "w", "xz", "wz"}, {"Y"}, "ci");
  w.output("Y");
  const std::string wmsg = refusal(w, "refuse_wz_shape");
  EXPECT_NE(wmsg.find("ConvInteger 'ci'"), std::string::npos) << wmsg;
  EXPECT_NE(wmsg.find("w_zero_point has shape [2]"), std::string::npos) << wmsg;
}

TEST(CpuIntGemm, RefusesAZeroPointOfAnotherType) {
  test::OnnxModel m(21);
  m.input("A", (int)DType::U8, {2, 3});
  m.input("B", (int)DType::U8, {3, 4});
  m.input("az", (int)DType::I8, {});
  m.node("MatMulInteger", {"A", "B", "az"}, {"Y"}, "mmt");
  m.output("Y");
  const std::string msg = refusal(m, "refuse_zp_type");
  EXPECT_NE(msg.find("MatMulInteger 'mmt'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a_zero_point has type i8"), std::string::npos) << msg;
}

TEST(CpuIntGemm, RefusesPerChannelInputScaleOfQLinearConv) {
  test::OnnxModel m(21);
  m.input("x", (int)DType::U8, {1, 2, 4, 4});
  m.input("xs", (int)DType::F32, {2});
  m.input("xz", (int)DType::U8, {});
  m.input("w", (int)DType::U8, {3, 2, 2, 2});
  m.input("ws", (int)DType::F32, {});
  m.input("wz", (int)DType::U8, {});
  m.input("ys", (int)DType::F32, {});
  m.input("yz", (int)DType::U8, {});
  m.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}, "qc");
  m.output("y");
  const std::string msg = refusal(m, "refuse_xs_shape");
  EXPECT_NE(msg.find("QLinearConv 'qc'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("x_scale has shape [2]"), std::string::npos) << msg;
}

TEST(CpuIntGemm, RefusesDoubleScales) {
  test::OnnxModel m(21);
  m.input("a", (int)DType::U8, {2, 3});
  m.input("as", (int)DType::F64, {});
  m.input("az", (int)DType::U8, {});
  m.input("b", (int)DType::U8, {3, 2});
  m.input("bs", (int)DType::F64, {});
  m.input("bz", (int)DType::U8, {});
  m.input("ys", (int)DType::F64, {});
  m.input("yz", (int)DType::U8, {});
  m.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "qd");
  m.output("y");
  const std::string msg = refusal(m, "refuse_f64_scale");
  EXPECT_NE(msg.find("QLinearMatMul 'qd'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a_scale has type f64"), std::string::npos) << msg;
}

} // namespace
