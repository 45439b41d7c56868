// import_f8_int4_test.cpp — the float8 types (FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2,
// FLOAT8E5M2FNUZ) and int4/uint4 end to end: the host conversions (runtime/Float8.h), the
// reference interpreter's tg.cast (saturate on and off), small ONNX models (Cast, CastLike,
// QuantizeLinear, DequantizeLinear) compiled for the CPU backend, whose kernels carry the
// prelude's twin of those conversions, int4 packing in TensorProto files, and refusals.
//
// Expected values were computed with ONNX 1.17's reference helpers and pasted here:
//   onnx.helper.float32_to_float8e4m3(x, uz=..., saturate=...),
//   onnx.helper.float32_to_float8e5m2(x, fn=..., uz=..., saturate=...),
//   onnx.numpy_helper.float8e4m3_to_float32 / float8e5m2_to_float32,
//   onnx.subbyte.float32_to_4bit_unpacked(x, signed=...).
#include "compiler/dialect/TgDialect.h"
#include "compiler/interp/Interpreter.h"
#include "driver/Compile.h"
#include "frontends/onnx/TensorIO.h"
#include "frontends/onnx/onnx.pb.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "runtime/Float8.h"
#include "runtime/Session.h"
#include "tests/unit/CpuCompile.h"
#include "tests/unit/OnnxModelBuilder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>

using namespace tgc;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Inputs: zero, -0, 1, ties (1.0625 between 1 and 1.125 -> even 1; 1.1875 -> even 1.25), 448
// (E4M3FN max), 464 (the tie above it), 500, +-1e6, +-inf, NaN, 2^-9 (E4M3FN's least
// subnormal), 2^-10 (a tie to zero), 3 * 2^-11, 57344 (E5M2 max), 61440, -0.3, 240, 2^-17.
const std::vector<float> kX = {0.0f,   -0.0f,   1.0f,     1.0625f,      1.1875f,  448.0f,
                               464.0f, 500.0f,  1e6f,     -1e6f,        kInf,     -kInf,
                               kNaN,   0x1p-9f, 0x1p-10f, 3 * 0x1p-11f, 57344.0f, 61440.0f,
                               -0.3f,  240.0f,  0x1p-17f};

struct Expected {
  int kind; // ONNX type number
  std::vector<uint8_t> sat, noSat;
};

// The reference's encodings of kX (saturate=True, then False).
const Expected kEnc[] = {
    {17,
     {0x00, 0x80, 0x38, 0x38, 0x3A, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x7E,
      0xFE, 0x7F, 0x01, 0x00, 0x01, 0x7E, 0x7E, 0xAA, 0x77, 0x00},
     {0x00, 0x80, 0x38, 0x38, 0x3A, 0x7E, 0x7E, 0x7F, 0x7F, 0xFF, 0x7F,
      0xFF, 0x7F, 0x01, 0x00, 0x01, 0x7F, 0x7F, 0xAA, 0x77, 0x00}},
    {18,
     {0x00, 0x00, 0x40, 0x40, 0x42, 0x7F, 0x7F, 0x7F, 0x7F, 0xFF, 0x7F,
      0xFF, 0x80, 0x02, 0x01, 0x02, 0x7F, 0x7F, 0xB2, 0x7F, 0x00},
     {0x00, 0x00, 0x40, 0x40, 0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
      0x80, 0x80, 0x02, 0x01, 0x02, 0x80, 0x80, 0xB2, 0x7F, 0x00}},
    {19,
     {0x00, 0x80, 0x3C, 0x3C, 0x3D, 0x5F, 0x5F, 0x60, 0x7B, 0xFB, 0x7B,
      0xFB, 0x7F, 0x18, 0x14, 0x16, 0x7B, 0x7B, 0xB5, 0x5C, 0x00},
     {0x00, 0x80, 0x3C, 0x3C, 0x3D, 0x5F, 0x5F, 0x60, 0x7C, 0xFC, 0x7C,
      0xFC, 0x7F, 0x18, 0x14, 0x16, 0x7B, 0x7F, 0xB5, 0x5C, 0x00}},
    {20,
     {0x00, 0x00, 0x40, 0x40, 0x41, 0x63, 0x63, 0x64, 0x7F, 0xFF, 0x7F,
      0xFF, 0x80, 0x1C, 0x18, 0x1A, 0x7F, 0x7F, 0xB9, 0x60, 0x01},
     {0x00, 0x00, 0x40, 0x40, 0x41, 0x63, 0x63, 0x64, 0x80, 0x80, 0x80,
      0x80, 0x80, 0x1C, 0x18, 0x1A, 0x7F, 0x80, 0xB9, 0x60, 0x01}},
};

// Decoding: the bytes kB in each format (NaN where the format has it there).
const std::vector<uint8_t> kB = {0x00, 0x80, 0x01, 0x07, 0x08, 0x38, 0x7E,
                                 0x7F, 0xFE, 0xFF, 0x7B, 0x7C, 0xFC, 0x7D};
const std::vector<std::pair<int, std::vector<float>>> kDec = {
    {17,
     {0.0f, -0.0f, 0.001953125f, 0.013671875f, 0.015625f, 1.0f, 448.0f, kNaN, -448.0f, kNaN, 352.0f,
      384.0f, -384.0f, 416.0f}},
    {18,
     {0.0f, kNaN, 0.0009765625f, 0.0068359375f, 0.0078125f, 0.5f, 224.0f, 240.0f, -224.0f, -240.0f,
      176.0f, 192.0f, -192.0f, 208.0f}},
    {19,
     {0.0f, -0.0f, 1.52587890625e-05f, 0.0001068115234375f, 0.0001220703125f, 0.5f, kNaN, kNaN,
      kNaN, kNaN, 57344.0f, kInf, -kInf, kNaN}},
    {20,
     {0.0f, kNaN, 7.62939453125e-06f, 5.340576171875e-05f, 6.103515625e-05f, 0.25f, 49152.0f,
      57344.0f, -49152.0f, -57344.0f, 28672.0f, 32768.0f, -32768.0f, 40960.0f}},
};

// int4/uint4: clip, then round half to even.
const std::vector<float> kI = {-9.5f, -8.5f, -2.5f, -1.5f, -0.5f, 0.5f, 1.5f,
                               2.5f,  7.4f,  7.6f,  100.f, 14.5f, 15.5f};
const std::vector<int> kInt4 = {-8, -8, -2, -2, 0, 0, 2, 2, 7, 7, 7, 7, 7};
const std::vector<int> kUint4 = {0, 0, 0, 0, 0, 0, 2, 2, 7, 8, 15, 14, 15};

const char *kindName(int k) {
  return k == 17 ? "f8e4m3fn" : k == 18 ? "f8e4m3fnuz" : k == 19 ? "f8e5m2" : "f8e5m2fnuz";
}

HostTensor f32(const std::vector<float> &v) {
  HostTensor h = HostTensor::zeros(DType::F32, {(int64_t)v.size()});
  for (size_t i = 0; i < v.size(); ++i)
    h.as<float>()[i] = v[i];
  return h;
}

HostTensor bytes(DType t, const std::vector<uint8_t> &v) {
  HostTensor h = HostTensor::zeros(t, {(int64_t)v.size()});
  for (size_t i = 0; i < v.size(); ++i)
    h.data[i] = v[i];
  return h;
}

std::vector<uint8_t> bytesOf(const HostTensor &h) { return h.data; }

/// Float vectors equal bit for bit, except that any NaN matches any NaN.
void expectFloats(const HostTensor &got, const std::vector<float> &want, const std::string &what) {
  ASSERT_EQ(got.numel(), (int64_t)want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const float g = (float)got.get((int64_t)i);
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(g)) << what << " [" << i << "]";
    else
      EXPECT_EQ(f8::bitsOf(g), f8::bitsOf(want[i])) << what << " [" << i << "] " << g;
  }
}

//===----------------------------------------------------------------------===//
// Host conversions and the interpreter
//===----------------------------------------------------------------------===//

TEST(Float8Host, EncodeAndDecodeMatchTheReference) {
  for (const Expected &e : kEnc)
    for (size_t i = 0; i < kX.size(); ++i) {
      EXPECT_EQ(f8::fromFloat(kX[i], e.kind, true), e.sat[i]) << e.kind << " x=" << kX[i];
      EXPECT_EQ(f8::fromFloat(kX[i], e.kind, false), e.noSat[i]) << e.kind << " x=" << kX[i];
    }
  for (const auto &[kind, want] : kDec) {
    HostTensor h = bytes(static_cast<DType>(kind), kB);
    expectFloats(h, want, kindName(kind));
  }
  // Every finite value converts back to its own bits (NaN to the format's NaN).
  for (int kind = 17; kind <= 20; ++kind)
    for (int v = 0; v < 256; ++v) {
      const float x = f8::toFloat((uint8_t)v, kind);
      if (!std::isnan(x) && !std::isinf(x))
        EXPECT_EQ(f8::fromFloat(x, kind, false), v) << kind << " " << v;
    }
}

TEST(Float8Host, DTypesSetAndIntegerNibbles) {
  EXPECT_EQ(dtypeSize(DType::F8E5M2), 1u);
  EXPECT_EQ(dtypeSize(DType::I4), 1u);
  EXPECT_STREQ(dtypeName(DType::F8E4M3FNUZ), "f8e4m3fnuz");
  EXPECT_STREQ(dtypeName(DType::U4), "u4");
  EXPECT_TRUE(isKnownDType(22));
  EXPECT_TRUE(isIntegerDType(DType::I4) && isUnsignedDType(DType::U4));
  HostTensor h = HostTensor::zeros(DType::I4, {3});
  h.set(0, -3), h.set(1, 9), h.set(2, 7.9); // keeps the low 4 bits (9 -> -7), truncating
  EXPECT_EQ(h.getInt(0), -3);
  EXPECT_EQ(h.getInt(1), -7);
  EXPECT_EQ(h.getInt(2), 7);
  HostTensor f = HostTensor::zeros(DType::F8E4M3FN, {1});
  f.set(0, 1e6); // HostTensor::set saturates
  EXPECT_EQ(f.data[0], 0x7E);
}

class InterpF8 : public ::testing::Test {
protected:
  InterpF8() { ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>(); }
  std::vector<HostTensor> run(const std::string &src, const std::vector<HostTensor> &inputs) {
    module = mlir::parseSourceString<mlir::ModuleOp>(src, &ctx);
    EXPECT_TRUE(module) << src;
    if (!module)
      return {};
    auto fn = *module->getOps<mlir::func::FuncOp>().begin();
    auto r = interpret(fn, inputs);
    if (!r) {
      ADD_FAILURE() << llvm::toString(r.takeError());
      return {};
    }
    return std::move(*r);
  }
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

TEST_F(InterpF8, DTypesMapToMlirTypesAndBack) {
  for (DType d : {DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ, DType::I4,
                  DType::U4}) {
    mlir::Type t = elementTypeOf(d, &ctx);
    auto back = dtypeOf(t);
    ASSERT_TRUE(bool(back)) << dtypeName(d);
    EXPECT_EQ(*back, d);
  }
  EXPECT_TRUE(elementTypeOf(DType::I4, &ctx).isSignlessInteger(4));
  EXPECT_EQ(tg::float8Kind(elementTypeOf(DType::F8E5M2, &ctx)), 19);
}

TEST_F(InterpF8, CastsRoundToNearestEvenSaturateOrNot) {
  for (const Expected &e : kEnc) {
    const std::string n = std::to_string(kX.size()), t = kindName(e.kind);
    auto r = run("func.func @main(%x: tensor<" + n + "xf32>) -> (tensor<" + n + "x!tg." + t +
                     ">, tensor<" + n + "x!tg." + t + ">) {\n" + "  %0 = tg.cast %x : tensor<" + n +
                     "xf32> -> tensor<" + n + "x!tg." + t +
                     ">\n  %1 = tg.cast %x {saturate = false} : tensor<" + n + "xf32> -> tensor<" +
                     n + "x!tg." + t + ">\n  return %0, %1 : tensor<" + n + "x!tg." + t +
                     ">, tensor<" + n + "x!tg." + t + ">\n}",
                 {f32(kX)});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(bytesOf(r[0]), e.sat) << t;
    EXPECT_EQ(bytesOf(r[1]), e.noSat) << t;
  }
}

TEST_F(InterpF8, CastsFromFloat8DecodeAndConvert) {
  const std::string n = std::to_string(kB.size());
  auto r =
      run("func.func @main(%a: tensor<" + n + "x!tg.f8e5m2>, %b: tensor<" + n +
              "x!tg.f8e4m3fnuz>) -> (tensor<" + n + "xf32>, tensor<" + n + "xf16>, tensor<" + n +
              "x!tg.f8e4m3fn>) {\n"
              "  %0 = tg.cast %a : tensor<" +
              n + "x!tg.f8e5m2> -> tensor<" + n +
              "xf32>\n"
              "  %1 = tg.cast %b : tensor<" +
              n + "x!tg.f8e4m3fnuz> -> tensor<" + n +
              "xf16>\n"
              "  %2 = tg.cast %b : tensor<" +
              n + "x!tg.f8e4m3fnuz> -> tensor<" + n +
              "x!tg.f8e4m3fn>\n"
              "  return %0, %1, %2 : tensor<" +
              n + "xf32>, tensor<" + n + "xf16>, tensor<" + n + "x!tg.f8e4m3fn>\n}",
          {bytes(DType::F8E5M2, kB), bytes(DType::F8E4M3FNUZ, kB)});
  ASSERT_EQ(r.size(), 3u);
  expectFloats(r[0], kDec[2].second, "e5m2 -> f32");
  expectFloats(r[1], kDec[1].second, "e4m3fnuz -> f16"); // all exact in f16
  // e4m3fnuz -> e4m3fn through f32: the values are half as large in e4m3fnuz's bias, so each
  // finite one exists in e4m3fn: the expected bytes are e4m3fn's encodings of kDec[1].
  std::vector<uint8_t> want;
  for (float v : kDec[1].second)
    want.push_back(f8::fromFloat(v, 17, true));
  EXPECT_EQ(bytesOf(r[2]), want);
  EXPECT_EQ(want[1], 0x7F); // fnuz NaN (0x80) -> e4m3fn NaN
  EXPECT_EQ(want[6], 0x76); // 224 = 1.75 * 2^7
}

TEST_F(InterpF8, Int4ConstantsSignExtendAndCastsWrap) {
  auto r = run(R"(
    func.func @main() -> (tensor<3xi32>, tensor<2xi8>) {
      %c = tg.constant dense<[-8, -1, 7]> : tensor<3xi4>
      %0 = tg.cast %c : tensor<3xi4> -> tensor<3xi32>
      %u = tg.constant dense<[15, 9]> : tensor<2xui4>
      %1 = tg.cast %u : tensor<2xui4> -> tensor<2xi8>
      return %0, %1 : tensor<3xi32>, tensor<2xi8>
    })",
               {});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].getInt(0), -8);
  EXPECT_EQ(r[0].getInt(1), -1);
  EXPECT_EQ(r[0].getInt(2), 7);
  EXPECT_EQ(r[1].getInt(0), 15);
  EXPECT_EQ(r[1].getInt(1), 9);
}

//===----------------------------------------------------------------------===//
// ONNX models on the CPU backend
//===----------------------------------------------------------------------===//


using Builder = test::OnnxModel;

std::unique_ptr<Session> compileCpu(const Builder &b, const std::string &name) {
  return test::compileAndLoadCpu(b.bytes(), name);
}
std::vector<HostTensor> runCpu(Session &s, const std::vector<HostTensor> &inputs) {
  return test::runSession(s, inputs);
}




TEST(CpuF8, CastToFloat8SaturateOnAndOff) {
  Builder b(19);
  b.input("x", onnx::TensorProto::FLOAT, {(int64_t)kX.size()});
  std::vector<std::string> outs;
  for (const Expected &e : kEnc)
    for (int sat = 1; sat >= 0; --sat) {
      const std::string o = std::string(kindName(e.kind)) + (sat ? "_sat" : "_nosat");
      auto *n = b.node("Cast", {"x"}, {o});
      test::attrInt(n, "to", e.kind);
      if (!sat)
        test::attrInt(n, "saturate", 0);
      b.output(o);
    }
  auto s = compileCpu(b, "cast_f8");
  ASSERT_TRUE(s);
  auto out = runCpu(*s, {f32(kX)});
  ASSERT_EQ(out.size(), 8u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(out[2 * k].dtype, static_cast<DType>(kEnc[k].kind));
    EXPECT_EQ(bytesOf(out[2 * k]), kEnc[k].sat) << kindName(kEnc[k].kind);
    EXPECT_EQ(bytesOf(out[2 * k + 1]), kEnc[k].noSat) << kindName(kEnc[k].kind);
  }
}

TEST(CpuF8, CastFromFloat8AndCastLike) {
  Builder b(19);
  std::vector<std::string> names;
  for (const auto &[kind, want] : kDec) {
    const std::string in = std::string("in_") + kindName(kind),
                      o = std::string("out_") + kindName(kind);
    b.input(in, kind, {(int64_t)kB.size()});
    test::attrInt(b.node("Cast", {in}, {o}), "to", onnx::TensorProto::FLOAT);
    b.output(o);
  }
  // CastLike to an f16 input's type, from e4m3fn.
  b.input("like", onnx::TensorProto::FLOAT16, {1});
  b.node("CastLike", {"in_f8e4m3fn", "like"}, {"h"});
  b.output("h");
  // A float8 initializer (int32_data, one byte a value): +inf, 1, -57344 in e5m2.
  auto *w = b.g->add_initializer();
  w->set_name("w");
  w->set_data_type(19);
  w->add_dims(3);
  for (int v : {0x7C, 0x3C, 0xFB})
    w->add_int32_data(v);
  test::attrInt(b.node("Cast", {"w"}, {"wf"}), "to", onnx::TensorProto::FLOAT);
  b.output("wf");
  auto s = compileCpu(b, "cast_from_f8");
  ASSERT_TRUE(s);
  std::vector<HostTensor> ins;
  for (const auto &[kind, want] : kDec)
    ins.push_back(bytes(static_cast<DType>(kind), kB));
  ins.push_back(HostTensor::zeros(DType::F16, {1}));
  auto out = runCpu(*s, ins);
  ASSERT_EQ(out.size(), 6u);
  for (size_t k = 0; k < 4; ++k)
    expectFloats(out[k], kDec[k].second, kindName(kDec[k].first));
  EXPECT_EQ(out[4].dtype, DType::F16);
  expectFloats(out[4], kDec[0].second, "e4m3fn -> f16");
  expectFloats(out[5], {kInf, 1.0f, -57344.0f}, "e5m2 initializer");
}

TEST(CpuF8, QuantizeAndDequantizeFloat8) {
  Builder b(21);
  b.input("x", onnx::TensorProto::FLOAT, {4});
  b.initF32("s", {}, {2.0f});
  auto *q = b.node("QuantizeLinear", {"x", "s"}, {"q"}, "quant");
  test::attrInt(q, "output_dtype", 19); // e5m2: x / 2
  auto *q2 = b.node("QuantizeLinear", {"x", "s"}, {"q2"});
  test::attrInt(q2, "output_dtype", 17);
  test::attrInt(q2, "saturate", 0);
  b.node("DequantizeLinear", {"q2", "s"}, {"d"});
  for (const char *o : {"q", "q2", "d"})
    b.output(o);
  auto s = compileCpu(b, "quant_f8");
  ASSERT_TRUE(s);
  auto out = runCpu(*s, {f32({2.0f, 3.0f, 1000.0f, -kInf})});
  ASSERT_EQ(out.size(), 3u);
  // x / 2 = 1, 1.5, 500, -inf: e5m2 (saturating) 0x3C, 0x3E, 0x60, 0xFB; e4m3fn without
  // saturation 0x38, 0x3C, 0x7F (NaN), 0xFF (NaN); dequantized 2, 3, NaN, NaN.
  EXPECT_EQ(bytesOf(out[0]), (std::vector<uint8_t>{0x3C, 0x3E, 0x60, 0xFB}));
  EXPECT_EQ(bytesOf(out[1]), (std::vector<uint8_t>{0x38, 0x3C, 0x7F, 0xFF}));
  expectFloats(out[2], {2.0f, 3.0f, kNaN, kNaN}, "dequantized");
}

TEST(CpuInt4, CastClipsThenRoundsHalfToEven) {
  Builder b(21);
  b.input("x", onnx::TensorProto::FLOAT, {(int64_t)kI.size()});
  test::attrInt(b.node("Cast", {"x"}, {"i4"}), "to", 22);
  test::attrInt(b.node("Cast", {"x"}, {"u4"}), "to", 21);
  test::attrInt(b.node("Cast", {"i4"}, {"back"}), "to", onnx::TensorProto::FLOAT);
  for (const char *o : {"i4", "u4", "back"})
    b.output(o);
  auto s = compileCpu(b, "cast_int4");
  ASSERT_TRUE(s);
  auto out = runCpu(*s, {f32(kI)});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].dtype, DType::I4);
  EXPECT_EQ(out[1].dtype, DType::U4);
  for (size_t i = 0; i < kI.size(); ++i) {
    EXPECT_EQ(out[0].getInt((int64_t)i), kInt4[i]) << kI[i];
    EXPECT_EQ(out[1].getInt((int64_t)i), kUint4[i]) << kI[i];
    EXPECT_EQ(out[2].get((int64_t)i), (double)kInt4[i]) << kI[i];
  }
}

TEST(CpuInt4, QuantizeWithPackedZeroPointAndDequantize) {
  Builder b(21);
  b.input("x", onnx::TensorProto::FLOAT, {5});
  b.initF32("s", {}, {0.5f});
  // An int4 zero point in int32_data, packed: one value holds elements 0 (low nibble) and 1.
  auto *zp = b.g->add_initializer();
  zp->set_name("zp");
  zp->set_data_type(22);
  zp->add_int32_data(0xF); // one element: -1
  b.node("QuantizeLinear", {"x", "s", "zp"}, {"q"});
  b.input("u", 21, {3});
  b.node("DequantizeLinear", {"u", "s"}, {"d"});
  b.output("q");
  b.output("d");
  auto s = compileCpu(b, "quant_int4");
  ASSERT_TRUE(s);
  // round(x / 0.5) - 1, clipped to [-8, 7]: 2.25 -> 4.5 -> 4 -> 3; -1.25 -> -2.5 -> -2 -> -3;
  // 10 -> 19 -> 7; -10 -> -21 -> -8; 0.75 -> 1.5 -> 2 -> 1.
  auto out = runCpu(*s, {f32({2.25f, -1.25f, 10.0f, -10.0f, 0.75f}), bytes(DType::U4, {0, 15, 7})});
  ASSERT_EQ(out.size(), 2u);
  const int want[] = {3, -3, 7, -8, 1};
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(out[0].getInt(i), want[i]) << i;
  expectFloats(out[1], {0.0f, 7.5f, 3.5f}, "dequantized uint4");
}

TEST(Int4Files, PackedTwoAByteLowNibbleFirst) {
  HostTensor h = HostTensor::zeros(DType::I4, {3}, "t");
  h.set(0, -1), h.set(1, 2), h.set(2, -8);
  const std::string path = test::tmpDir() + "/int4.pb";
  ASSERT_FALSE(bool(writeTensorProtoFile(h, path)));
  onnx::TensorProto p;
  {
    std::ifstream f(path, std::ios::binary);
    ASSERT_TRUE(p.ParseFromIstream(&f));
  }
  EXPECT_EQ(p.data_type(), 22);
  ASSERT_EQ(p.raw_data().size(), 2u); // ceil(3 / 2)
  EXPECT_EQ((uint8_t)p.raw_data()[0], 0x2F);
  EXPECT_EQ((uint8_t)p.raw_data()[1], 0x08);
  auto back = readTensorProtoFile(path);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->data, h.data);
  // A raw_data of the unpacked size is refused.
  p.set_raw_data(std::string(3, '\0'));
  {
    std::ofstream f(path, std::ios::binary);
    p.SerializeToOstream(&f);
  }
  auto bad = readTensorProtoFile(path);
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("two elements a byte"), std::string::npos);
}

TEST(Float8Refusals, OtherOpsOnFloat8AreRefusedNamingTheNode) {
  Builder b(19);
  b.input("a", 17, {2, 2});
  b.node("MatMul", {"a", "a"}, {"y"}, "mm");
  b.output("y");
  const std::string msg = test::compileForCpu(b.bytes(), "refuse_matmul");
  ASSERT_FALSE(msg.empty()) << "compiled";
  EXPECT_NE(msg.find("mm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MatMul of a float8 tensor is not supported"), std::string::npos) << msg;

  Builder q(21);
  q.input("x", onnx::TensorProto::FLOAT, {2});
  q.initF32("s", {}, {1.0f});
  test::attrInt(q.node("QuantizeLinear", {"x", "s"}, {"y"}, "q64"), "output_dtype", 7);
  q.output("y");
  const std::string msg2 = test::compileForCpu(q.bytes(), "refuse_quant");
  ASSERT_FALSE(msg2.empty()) << "compiled";
  EXPECT_NE(msg2.find("q64"), std::string::npos) << msg2;
  EXPECT_NE(msg2.find("output_dtype 7 is not supported"), std::string::npos) << msg2;
}

} // namespace
