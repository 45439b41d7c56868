// import_misc_ops_test.cpp — the remaining ops of issue 25, all by decomposition into existing tg
// ops: MaxPool's Indices output, DeformConv, Det, BatchNormalization in training mode, Dropout in
// training mode with ratio 0, Scan at opset 8 and Resize with antialias. Small models run through
// the interpreter against hand-computed values (or the ONNX reference's, quoted), and bad input is
// refused with the node named.
#include "compiler/dialect/TgDialect.h"
#include "compiler/interp/Interpreter.h"
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/onnx.pb.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "tests/unit/OnnxModelBuilder.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tgc;

namespace {

using Builder = test::OnnxModel;
using test::attrFloat;
using test::attrInt;
using test::attrInts;
using test::attrString;

mlir::func::FuncOp mainOf(mlir::ModuleOp m) { return m.lookupSymbol<mlir::func::FuncOp>("main"); }

HostTensor f32(std::vector<int64_t> shape, const std::vector<float> &vals) {
  HostTensor t = HostTensor::zeros(DType::F32, shape);
  for (size_t i = 0; i < vals.size(); ++i)
    t.as<float>()[i] = vals[i];
  return t;
}

void initBool(Builder &b, const std::string &name, bool v) {
  auto *t = b.g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(v ? 1 : 0);
}

void initScalarF32(Builder &b, const std::string &name, float v) {
  auto *t = b.g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_float_data(v);
}

class ImportMisc : public ::testing::Test {
protected:
  ImportMisc() { ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>(); }
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> import(const Builder &b) {
    return importOnnxBytes(ctx, b.bytes(), "", {});
  }
  std::string importError(const Builder &b) {
    auto m = import(b);
    return m ? "" : llvm::toString(m.takeError());
  }
  /// Imports and interprets `b` on `inputs`; fails the test on an error.
  std::vector<HostTensor> run(const Builder &b, const std::vector<HostTensor> &inputs) {
    auto m = import(b);
    EXPECT_TRUE(bool(m)) << (m ? "" : llvm::toString(m.takeError()));
    if (!m)
      return {};
    auto got = interpret(mainOf(**m), inputs);
    EXPECT_TRUE(bool(got)) << (got ? "" : llvm::toString(got.takeError()));
    return got ? *got : std::vector<HostTensor>{};
  }
  mlir::MLIRContext ctx;
};

// ---------------------------------------------------------------------------------------------
// MaxPool Indices

// Channel 0 holds x, channel 1 holds -x: the first maximum's flat index over (n, c, h, w), in
// row-major (storage_order 0) or column-major (1) spatial order, channel 1 offset by 9.
TEST_F(ImportMisc, MaxPoolIndicesByHand) {
  const std::vector<float> x = {1, 5, 2, 7, 3, 9, 4, 8, 6};
  std::vector<float> both = x;
  for (float v : x)
    both.push_back(-v);
  const std::vector<int64_t> want[2] = {{3, 5, 7, 5, 9, 11, 13, 13}, {1, 7, 5, 7, 9, 15, 13, 13}};
  for (int order = 0; order < 2; ++order) {
    Builder b(12);
    b.input("x", onnx::TensorProto::FLOAT, {1, 2, 3, 3});
    auto *n = b.node("MaxPool", {"x"}, {"y", "i"}, "mp");
    attrInts(n, "kernel_shape", {2, 2});
    attrInt(n, "storage_order", order);
    b.output("y");
    b.output("i");
    auto got = run(b, {f32({1, 2, 3, 3}, both)});
    ASSERT_EQ(got.size(), 2u);
    ASSERT_EQ(got[1].dtype, DType::I64);
    ASSERT_EQ(got[1].shape, (std::vector<int64_t>{1, 2, 2, 2}));
    const float wantY[] = {7, 9, 8, 9, -1, -2, -3, -3};
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(got[0].as<float>()[i], wantY[i]) << i;
      EXPECT_EQ(got[1].as<int64_t>()[i], want[order][i]) << "storage_order " << order << ", " << i;
    }
  }
}

// Windows overhanging the pads: the padded taps never win, even over negative values.
TEST_F(ImportMisc, MaxPoolIndicesSkipPads) {
  Builder b(12);
  b.input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 2});
  auto *n = b.node("MaxPool", {"x"}, {"y", "i"}, "mp");
  attrInts(n, "kernel_shape", {2, 2});
  attrInts(n, "strides", {2, 2});
  attrInts(n, "pads", {1, 1, 1, 1});
  b.output("y");
  b.output("i");
  auto got = run(b, {f32({1, 1, 2, 2}, {-5, -6, -7, -8})});
  ASSERT_EQ(got.size(), 2u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got[0].as<float>()[i], -5.0f - i);
    EXPECT_EQ(got[1].as<int64_t>()[i], i);
  }
  // -inf everywhere ties with the padded taps, which come first in each window: the reference
  // (skipping pads) still names the one tap inside.
  const float inf = INFINITY;
  got = run(b, {f32({1, 1, 2, 2}, {-inf, -inf, -inf, -inf})});
  ASSERT_EQ(got.size(), 2u);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(got[1].as<int64_t>()[i], i);
}

TEST_F(ImportMisc, MaxPoolBadStorageOrderRefused) {
  Builder b(12);
  b.input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 2});
  auto *n = b.node("MaxPool", {"x"}, {"y", "i"}, "mp");
  attrInts(n, "kernel_shape", {2, 2});
  attrInt(n, "storage_order", 2);
  b.output("y");
  b.output("i");
  const std::string e = importError(b);
  EXPECT_NE(e.find("MaxPool 'mp'"), std::string::npos) << e;
  EXPECT_NE(e.find("storage_order 2 is not 0 or 1"), std::string::npos) << e;
}

// ---------------------------------------------------------------------------------------------
// DeformConv

// A 1x1 kernel on [[1, 2], [3, 4]]: offsets (0.5, 0.5) → the centre 2.5; (0, 0) → 2; (0, -1)
// → outside, 0; (-0.5, 0) → between 2 and 4, 3. Mask [1, 2, 1, 0.5], bias 10.
TEST_F(ImportMisc, DeformConvByHand) {
  Builder b(19);
  b.input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 2});
  b.initF32("w", {1, 1, 1, 1}, {1});
  b.input("off", onnx::TensorProto::FLOAT, {1, 2, 2, 2});
  b.initF32("bias", {1}, {10});
  b.input("mask", onnx::TensorProto::FLOAT, {1, 1, 2, 2});
  b.node("DeformConv", {"x", "w", "off", "bias", "mask"}, {"y"}, "dc");
  b.output("y");
  // offset channels: 0 = dy, 1 = dx, each [oH, oW].
  auto got = run(b, {f32({1, 1, 2, 2}, {1, 2, 3, 4}),
                     f32({1, 2, 2, 2}, {0.5f, 0, 0, -0.5f, 0.5f, 0, -1, 0}),
                     f32({1, 1, 2, 2}, {1, 2, 1, 0.5f})});
  ASSERT_EQ(got.size(), 1u);
  const float want[] = {12.5f, 14, 10, 11.5f};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(got[0].as<float>()[i], want[i], 1e-6) << i;
}

// Zero offsets make DeformConv a Conv: group 2, offset_group 2, a 2x2 kernel, strides, dilations
// and pads, compared with the Conv import on the same values.
TEST_F(ImportMisc, DeformConvZeroOffsetsIsConv) {
  const std::vector<int64_t> xs{2, 4, 5, 6}, ws{6, 2, 2, 2};
  auto attrs = [](onnx::NodeProto *n) {
    attrInt(n, "group", 2);
    attrInts(n, "pads", {1, 0, 1, 2});
    attrInts(n, "strides", {2, 1});
    attrInts(n, "dilations", {1, 2});
  };
  // output: H (5 + 2 - 2) / 2 + 1 = 3, W (6 + 2 - 3) / 1 + 1 = 6
  const std::vector<int64_t> os{2, 2 * 4 * 2, 3, 6}; // offset_group * kH * kW * 2
  std::vector<float> xv, wv;
  for (int i = 0; i < 2 * 4 * 5 * 6; ++i)
    xv.push_back((float)((i * 7) % 19) - 9.0f);
  for (int i = 0; i < 6 * 2 * 2 * 2; ++i)
    wv.push_back((float)((i * 5) % 11) / 5.0f - 1.0f);
  std::vector<float> bv{0.5f, -1, 2, 0, 1, -0.25f};

  Builder conv(19);
  conv.input("x", onnx::TensorProto::FLOAT, xs);
  conv.initF32("w", ws, wv);
  conv.initF32("b", {6}, bv);
  attrs(conv.node("Conv", {"x", "w", "b"}, {"y"}, "c"));
  conv.output("y");
  auto want = run(conv, {f32(xs, xv)});

  Builder dc(19);
  dc.input("x", onnx::TensorProto::FLOAT, xs);
  dc.initF32("w", ws, wv);
  dc.initF32("b", {6}, bv);
  dc.input("off", onnx::TensorProto::FLOAT, os);
  auto *n = dc.node("DeformConv", {"x", "w", "off", "b"}, {"y"}, "dc");
  attrs(n);
  attrInt(n, "offset_group", 2);
  dc.output("y");
  auto got = run(dc, {f32(xs, xv), HostTensor::zeros(DType::F32, os)});
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].shape, want[0].shape);
  for (int64_t i = 0; i < want[0].numel(); ++i)
    EXPECT_NEAR(got[0].as<float>()[i], want[0].as<float>()[i], 1e-4) << i;
}

TEST_F(ImportMisc, DeformConvRefusals) {
  auto one = [&](const std::vector<int64_t> &xs, const std::vector<int64_t> &ws,
                 const std::vector<int64_t> &os, int64_t offsetGroup) {
    Builder b(19);
    b.input("x", onnx::TensorProto::FLOAT, xs);
    b.input("w", onnx::TensorProto::FLOAT, ws);
    b.input("off", onnx::TensorProto::FLOAT, os);
    attrInt(b.node("DeformConv", {"x", "w", "off"}, {"y"}, "dc"), "offset_group", offsetGroup);
    b.output("y");
    return importError(b);
  };
  struct Case {
    std::vector<int64_t> xs, ws, os;
    int64_t og;
    const char *want;
  } cases[] = {
      {{1, 1, 4, 4}, {1, 1, 2, 2}, {1, 6, 3, 3}, 1, "offset 1x6x3x3 must be 1x8x3x3"},
      {{1, 1, 4, 4}, {1, 1, 2, 2}, {1, 8, 2, 3}, 1, "offset 1x8x2x3 must be 1x8x3x3"},
      {{1, 2, 4, 4}, {1, 1, 2, 2}, {1, 8, 3, 3}, 1, "do not match with group 1"},
      {{1, 2, 4, 4}, {1, 2, 2, 2}, {1, 8, 3, 3}, 3, "offset_group 3 does not divide"},
      {{1, 1, 4}, {1, 1, 2}, {1, 2, 3}, 1, "only 2-D DeformConv is supported"},
  };
  for (const auto &k : cases) {
    const std::string e = one(k.xs, k.ws, k.os, k.og);
    EXPECT_NE(e.find("DeformConv 'dc'"), std::string::npos) << e;
    EXPECT_NE(e.find(k.want), std::string::npos) << e;
  }
}

// ---------------------------------------------------------------------------------------------
// Det

TEST_F(ImportMisc, DetByHand) {
  Builder b(22);
  b.input("x", onnx::TensorProto::FLOAT, {3, 3, 3});
  b.node("Det", {"x"}, {"y"}, "det");
  b.output("y");
  // A zero first pivot (rows swap), a singular matrix, a diagonal one with a negative entry.
  auto got = run(b, {f32({3, 3, 3}, {0, 2, 1, 3, 1, 0, 1, 1, 4, //
                                     1, 2, 3, 2, 4, 6, 1, 0, 1, //
                                     2, 0, 0, 0, -3, 0, 0, 0, 0.5f})});
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].shape, (std::vector<int64_t>{3}));
  EXPECT_NEAR(got[0].as<float>()[0], -22.0f, 1e-4);
  EXPECT_NEAR(got[0].as<float>()[1], 0.0f, 1e-5);
  EXPECT_NEAR(got[0].as<float>()[2], -3.0f, 1e-6);
}

// Swaps change the sign: a permutation matrix of one transposition has det -1, of a 3-cycle +1.
TEST_F(ImportMisc, DetPermutations) {
  Builder b(22);
  b.input("x", onnx::TensorProto::FLOAT, {2, 3, 3});
  b.node("Det", {"x"}, {"y"}, "det");
  b.output("y");
  auto got = run(b, {f32({2, 3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1, //
                                     0, 1, 0, 0, 0, 1, 1, 0, 0})});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FLOAT_EQ(got[0].as<float>()[0], -1.0f);
  EXPECT_FLOAT_EQ(got[0].as<float>()[1], 1.0f);
}

TEST_F(ImportMisc, DetRefusals) {
  for (auto [shape, want] : {std::pair<std::vector<int64_t>, const char *>{
                                 {2, 3}, "must be [..., M, M] (square matrices)"},
                             {{4}, "must be [..., M, M] (square matrices)"},
                             {{17, 17}, "matrices of size 17 are not supported (at most 16"}}) {
    Builder b(22);
    b.input("x", onnx::TensorProto::FLOAT, shape);
    b.node("Det", {"x"}, {"y"}, "det");
    b.output("y");
    const std::string e = importError(b);
    EXPECT_NE(e.find("Det 'det'"), std::string::npos) << e;
    EXPECT_NE(e.find(want), std::string::npos) << e;
  }
}

// ---------------------------------------------------------------------------------------------
// BatchNormalization, training mode

// x [N=2, C=2, 1]: channel 0 holds 1 and 3 (mean 2, variance 1), channel 1 holds 2 and 2 (mean 2,
// variance 0). momentum 0.5: running = (input + batch) / 2.
TEST_F(ImportMisc, BatchNormTraining) {
  Builder b(15);
  b.input("x", onnx::TensorProto::FLOAT, {2, 2, 1});
  b.initF32("s", {2}, {1, 2});
  b.initF32("bias", {2}, {0, 1});
  b.initF32("mean", {2}, {0, 10});
  b.initF32("var", {2}, {1, 1});
  auto *n = b.node("BatchNormalization", {"x", "s", "bias", "mean", "var"}, {"y", "rm", "rv"},
                   "bn");
  attrInt(n, "training_mode", 1);
  attrFloat(n, "momentum", 0.5f);
  b.output("y");
  b.output("rm");
  b.output("rv");
  auto got = run(b, {f32({2, 2, 1}, {1, 2, 3, 2})});
  ASSERT_EQ(got.size(), 3u);
  const float d = 1.0f / std::sqrt(1.0f + 1e-5f);
  const float wantY[] = {-d, 1, d, 1};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(got[0].as<float>()[i], wantY[i], 1e-6) << i;
  EXPECT_NEAR(got[1].as<float>()[0], 1.0f, 1e-6);
  EXPECT_NEAR(got[1].as<float>()[1], 6.0f, 1e-6);
  EXPECT_NEAR(got[2].as<float>()[0], 1.0f, 1e-6);
  EXPECT_NEAR(got[2].as<float>()[1], 0.5f, 1e-6);
}

TEST_F(ImportMisc, BatchNormRunningOutputsNeedTraining) {
  Builder b(15);
  b.input("x", onnx::TensorProto::FLOAT, {2, 2, 1});
  for (const char *p : {"s", "bias", "mean", "var"})
    b.initF32(p, {2}, {1, 1});
  b.node("BatchNormalization", {"x", "s", "bias", "mean", "var"}, {"y", "rm"}, "bn");
  b.output("y");
  b.output("rm");
  const std::string e = importError(b);
  EXPECT_NE(e.find("BatchNormalization 'bn'"), std::string::npos) << e;
  EXPECT_NE(e.find("need training_mode=1"), std::string::npos) << e;
}

// ---------------------------------------------------------------------------------------------
// Dropout, training mode

TEST_F(ImportMisc, DropoutTrainingZeroRatio) {
  Builder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {2, 2});
  initScalarF32(b, "r", 0);
  initBool(b, "t", true);
  b.node("Dropout", {"x", "r", "t"}, {"y", "mask"}, "do");
  b.output("y");
  b.output("mask");
  auto got = run(b, {f32({2, 2}, {1, -2, 3, 4})});
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(got[1].dtype, DType::Bool);
  const float want[] = {1, -2, 3, 4};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got[0].as<float>()[i], want[i]);
    EXPECT_EQ(got[1].as<uint8_t>()[i], 1);
  }
}

TEST_F(ImportMisc, DropoutTrainingRandomRefused) {
  for (bool withRatio : {true, false}) {
    Builder b(13);
    b.input("x", onnx::TensorProto::FLOAT, {2, 2});
    if (withRatio)
      initScalarF32(b, "r", 0.25f);
    initBool(b, "t", true);
    b.node("Dropout", {"x", withRatio ? "r" : "", "t"}, {"y"}, "do");
    b.output("y");
    const std::string e = importError(b);
    EXPECT_NE(e.find("Dropout 'do'"), std::string::npos) << e;
    EXPECT_NE(e.find(withRatio ? "ratio 0.25" : "ratio 0.5"), std::string::npos) << e;
    EXPECT_NE(e.find("random mask"), std::string::npos) << e;
  }
}

// ---------------------------------------------------------------------------------------------
// Scan, opset 8

/// A Scan-8 node summing its scan input into one state: body (s, x) -> (s + x, s + x).
void scanSumBody(onnx::NodeProto *n) {
  auto *a = n->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  auto *g = a->mutable_g();
  g->set_name("body");
  for (const char *in : {"s_in", "x_in"}) {
    auto *v = g->add_input();
    v->set_name(in);
    auto *tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(2);
  }
  auto *add = g->add_node();
  add->set_op_type("Add");
  add->add_input("s_in");
  add->add_input("x_in");
  add->add_output("s_out");
  auto *id = g->add_node();
  id->set_op_type("Identity");
  id->add_input("s_out");
  id->add_output("scan_out");
  g->add_output()->set_name("s_out");
  g->add_output()->set_name("scan_out");
  attrInt(n, "num_scan_inputs", 1);
}

// batch 2, length 3, forward and (directions [1]) backward.
TEST_F(ImportMisc, Scan8Sum) {
  for (int reverse = 0; reverse < 2; ++reverse) {
    Builder b(8);
    b.input("init", onnx::TensorProto::FLOAT, {2, 2});
    b.input("x", onnx::TensorProto::FLOAT, {2, 3, 2});
    b.initI64("lens", {3, 3});
    auto *n = b.node("Scan", {"lens", "init", "x"}, {"y", "z"}, "scan");
    scanSumBody(n);
    if (reverse)
      attrInts(n, "directions", {1});
    b.output("y");
    b.output("z");
    auto got = run(b, {f32({2, 2}, {0, 0, 10, 20}), f32({2, 3, 2}, {1, 2, 3, 4, 5, 6, //
                                                                    1, 1, 2, 2, 3, 3})});
    ASSERT_EQ(got.size(), 2u);
    ASSERT_EQ(got[0].shape, (std::vector<int64_t>{2, 2}));
    ASSERT_EQ(got[1].shape, (std::vector<int64_t>{2, 3, 2}));
    const float wantY[] = {9, 12, 16, 26};
    const float wantZ[2][12] = {{1, 2, 4, 6, 9, 12, 11, 21, 13, 23, 16, 26},
                                {5, 6, 8, 10, 9, 12, 13, 23, 15, 25, 16, 26}};
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(got[0].as<float>()[i], wantY[i]) << i;
    for (int i = 0; i < 12; ++i)
      EXPECT_EQ(got[1].as<float>()[i], wantZ[reverse][i]) << "reverse " << reverse << ", " << i;
  }
}

TEST_F(ImportMisc, Scan8ShortSequenceRefused) {
  Builder b(8);
  b.input("init", onnx::TensorProto::FLOAT, {2, 2});
  b.input("x", onnx::TensorProto::FLOAT, {2, 3, 2});
  b.initI64("lens", {3, 2});
  scanSumBody(b.node("Scan", {"lens", "init", "x"}, {"y", "z"}, "scan"));
  b.output("y");
  b.output("z");
  const std::string e = importError(b);
  EXPECT_NE(e.find("Scan 'scan'"), std::string::npos) << e;
  EXPECT_NE(e.find("sequence_lens 2 differs from the scan length 3"), std::string::npos) << e;
}

// ---------------------------------------------------------------------------------------------
// Resize, antialias

// [1, 2, 3, 4] to 2 wide (half_pixel): the reference's antialiased linear filter (support 2 at
// scale 1/2) gives 1.625 and 3.375, its cubic one 1.49023438 and 3.50976562.
TEST_F(ImportMisc, ResizeAntialias) {
  for (auto [mode, w0, w1] : {std::tuple<const char *, float, float>{"linear", 1.625f, 3.375f},
                              {"cubic", 1.49023438f, 3.50976562f}}) {
    Builder b(18);
    b.input("x", onnx::TensorProto::FLOAT, {1, 1, 1, 4});
    b.initI64("sizes", {1, 1, 1, 2});
    auto *n = b.node("Resize", {"x", "", "", "sizes"}, {"y"}, "rs");
    attrString(n, "mode", mode);
    attrInt(n, "antialias", 1);
    b.output("y");
    auto got = run(b, {f32({1, 1, 1, 4}, {1, 2, 3, 4})});
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].shape, (std::vector<int64_t>{1, 1, 1, 2}));
    EXPECT_NEAR(got[0].as<float>()[0], w0, 1e-6) << mode;
    EXPECT_NEAR(got[0].as<float>()[1], w1, 1e-6) << mode;
  }
}

TEST_F(ImportMisc, ResizeAntialiasNearestRefused) {
  Builder b(18);
  b.input("x", onnx::TensorProto::FLOAT, {1, 1, 1, 4});
  b.initI64("sizes", {1, 1, 1, 2});
  attrInt(b.node("Resize", {"x", "", "", "sizes"}, {"y"}, "rs"), "antialias", 1);
  b.output("y");
  const std::string e = importError(b);
  EXPECT_NE(e.find("Resize 'rs'"), std::string::npos) << e;
  EXPECT_NE(e.find("antialias=1 needs mode linear or cubic"), std::string::npos) << e;
}

} // namespace
