// import_int_types_test.cpp — the element types int16, uint16, uint32 and uint64 end to end: the
// reference interpreter (wraparound, unsigned compare/div/mod/max/min, reductions, casts from
// negative and large floats), small ONNX models compiled for the CPU backend and run by the
// runtime against hand-computed values, initializers in typed fields, and the runtime's refusal of
// an input of the wrong (same-sized) integer type.
#include "compiler/dialect/TgDialect.h"
#include "compiler/interp/Interpreter.h"
#include "driver/Compile.h"
#include "frontends/onnx/onnx.pb.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "runtime/Session.h"
#include "tests/unit/CpuCompile.h"
#include "tests/unit/OnnxModelBuilder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

using namespace tgc;

namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint64_t k2p63 = uint64_t(1) << 63;

/// A tensor of dtype `t` whose elements are the low bytes of `bits` (two's complement).
HostTensor ints(DType t, std::vector<int64_t> shape, const std::vector<uint64_t> &bits) {
  HostTensor h = HostTensor::zeros(t, std::move(shape));
  EXPECT_EQ((int64_t)bits.size(), h.numel());
  const size_t es = dtypeSize(t);
  for (size_t i = 0; i < bits.size(); ++i)
    std::memcpy(h.data.data() + i * es, &bits[i], es);
  return h;
}

HostTensor floats(DType t, std::vector<int64_t> shape, const std::vector<double> &v) {
  HostTensor h = HostTensor::zeros(t, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i)
    h.set((int64_t)i, v[i]);
  return h;
}

/// The elements' bits, zero-extended (so a u64 compares as uint64_t, an i16 -1 as 0xffff).
std::vector<uint64_t> bitsOf(const HostTensor &h) {
  std::vector<uint64_t> r(h.numel(), 0);
  const size_t es = dtypeSize(h.dtype);
  for (size_t i = 0; i < r.size(); ++i)
    std::memcpy(&r[i], h.data.data() + i * es, es);
  return r;
}

uint64_t u16(int v) { return (uint16_t)v; }
uint64_t u32(int64_t v) { return (uint32_t)v; }

//===----------------------------------------------------------------------===//
// Interpreter
//===----------------------------------------------------------------------===//

class InterpIntTypes : public ::testing::Test {
protected:
  InterpIntTypes() { ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>(); }
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

TEST_F(InterpIntTypes, DTypesMapToMlirTypesAndBack) {
  for (DType d : {DType::I16, DType::U16, DType::U32, DType::U64}) {
    mlir::Type t = elementTypeOf(d, &ctx);
    auto back = dtypeOf(t);
    ASSERT_TRUE(bool(back)) << dtypeName(d);
    EXPECT_EQ(*back, d);
  }
  EXPECT_TRUE(elementTypeOf(DType::U32, &ctx).isUnsignedInteger(32));
  EXPECT_TRUE(elementTypeOf(DType::I16, &ctx).isSignlessInteger(16));
  EXPECT_EQ(dtypeSize(DType::U16), 2u);
  EXPECT_EQ(dtypeSize(DType::U32), 4u);
  EXPECT_EQ(dtypeSize(DType::U64), 8u);
  EXPECT_STREQ(dtypeName(DType::U64), "u64");
  EXPECT_STREQ(dtypeName(DType::I16), "i16");
}

TEST_F(InterpIntTypes, ArithmeticWrapsAround) {
  auto r = run(R"(
    func.func @main(%a: tensor<2xui16>, %b: tensor<2xi16>, %c: tensor<2xui32>, %d: tensor<2xui64>)
        -> (tensor<2xui16>, tensor<2xi16>, tensor<2xui32>, tensor<2xui64>, tensor<2xui16>) {
      %0 = tg.add %a, %a : tensor<2xui16>, tensor<2xui16> -> tensor<2xui16>
      %1 = tg.mul %b, %b : tensor<2xi16>, tensor<2xi16> -> tensor<2xi16>
      %2 = tg.sub %c, %c : tensor<2xui32>, tensor<2xui32> -> tensor<2xui32>
      %one = tg.constant dense<1> : tensor<ui32>
      %3 = tg.sub %2, %one : tensor<2xui32>, tensor<ui32> -> tensor<2xui32>
      %4 = tg.mul %d, %d : tensor<2xui64>, tensor<2xui64> -> tensor<2xui64>
      %5 = tg.neg %a : tensor<2xui16>
      return %0, %1, %3, %4, %5 : tensor<2xui16>, tensor<2xi16>, tensor<2xui32>, tensor<2xui64>, tensor<2xui16>
    })",
               {ints(DType::U16, {2}, {65535, 40000}), ints(DType::I16, {2}, {300, u16(-200)}),
                ints(DType::U32, {2}, {5, 0}), ints(DType::U64, {2}, {k2p63 + 1, 3})});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(bitsOf(r[0]), (std::vector<uint64_t>{65534, 14464}));       // 131070, 80000 mod 2^16
  EXPECT_EQ(bitsOf(r[1]), (std::vector<uint64_t>{24464, u16(-25536)})); // 90000, 40000 wrapped
  EXPECT_EQ(bitsOf(r[2]), (std::vector<uint64_t>{4294967295u, 4294967295u}));
  EXPECT_EQ(bitsOf(r[3]), (std::vector<uint64_t>{1, 9})); // (2^63 + 1)^2 mod 2^64 = 1
  EXPECT_EQ(bitsOf(r[4]), (std::vector<uint64_t>{1, 25536}));
}

TEST_F(InterpIntTypes, UnsignedCompareDivModMaxMin) {
  auto r =
      run(R"(
    func.func @main(%a: tensor<3xui64>, %b: tensor<3xui64>)
        -> (tensor<3xui64>, tensor<3xui64>, tensor<3xui64>, tensor<3xui64>, tensor<3xi1>, tensor<3xi1>) {
      %0 = tg.div %a, %b : tensor<3xui64>, tensor<3xui64> -> tensor<3xui64>
      %1 = tg.mod %a, %b : tensor<3xui64>, tensor<3xui64> -> tensor<3xui64>
      %2 = tg.max %a, %b : tensor<3xui64>, tensor<3xui64> -> tensor<3xui64>
      %3 = tg.min %a, %b : tensor<3xui64>, tensor<3xui64> -> tensor<3xui64>
      %4 = tg.greater %a, %b : tensor<3xui64>, tensor<3xui64> -> tensor<3xi1>
      %5 = tg.less_equal %a, %b : tensor<3xui64>, tensor<3xui64> -> tensor<3xi1>
      return %0, %1, %2, %3, %4, %5 : tensor<3xui64>, tensor<3xui64>, tensor<3xui64>, tensor<3xui64>, tensor<3xi1>, tensor<3xi1>
    })",
          {ints(DType::U64, {3}, {kU64Max, 7, k2p63}), ints(DType::U64, {3}, {2, kU64Max, 3})});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(bitsOf(r[0]), (std::vector<uint64_t>{kU64Max / 2, 0, k2p63 / 3}));
  EXPECT_EQ(bitsOf(r[1]), (std::vector<uint64_t>{1, 7, k2p63 % 3}));
  EXPECT_EQ(bitsOf(r[2]), (std::vector<uint64_t>{kU64Max, kU64Max, k2p63}));
  EXPECT_EQ(bitsOf(r[3]), (std::vector<uint64_t>{2, 7, 3}));
  EXPECT_EQ(bitsOf(r[4]), (std::vector<uint64_t>{1, 0, 1}));
  EXPECT_EQ(bitsOf(r[5]), (std::vector<uint64_t>{0, 1, 0}));

  // u32 (zero-extended) and i16 (signed: mod takes the divisor's sign, div truncates).
  r = run(R"(
    func.func @main(%a: tensor<2xui32>, %b: tensor<2xui32>, %c: tensor<4xi16>, %d: tensor<4xi16>)
        -> (tensor<2xui32>, tensor<2xi1>, tensor<4xi16>, tensor<4xi16>, tensor<4xi16>) {
      %0 = tg.div %a, %b : tensor<2xui32>, tensor<2xui32> -> tensor<2xui32>
      %1 = tg.less %a, %b : tensor<2xui32>, tensor<2xui32> -> tensor<2xi1>
      %2 = tg.mod %c, %d : tensor<4xi16>, tensor<4xi16> -> tensor<4xi16>
      %3 = tg.div %c, %d : tensor<4xi16>, tensor<4xi16> -> tensor<4xi16>
      %4 = tg.max %c, %d : tensor<4xi16>, tensor<4xi16> -> tensor<4xi16>
      return %0, %1, %2, %3, %4 : tensor<2xui32>, tensor<2xi1>, tensor<4xi16>, tensor<4xi16>, tensor<4xi16>
    })",
          {ints(DType::U32, {2}, {4294967295u, 5}), ints(DType::U32, {2}, {2, 4294967295u}),
           ints(DType::I16, {4}, {u16(-7), 7, u16(-32768), u16(-7)}),
           ints(DType::I16, {4}, {3, u16(-3), u16(-1), u16(-3)})});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(bitsOf(r[0]), (std::vector<uint64_t>{2147483647u, 0}));
  EXPECT_EQ(bitsOf(r[1]), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(bitsOf(r[2]), (std::vector<uint64_t>{2, u16(-2), 0, u16(-1)}));
  EXPECT_EQ(bitsOf(r[3]), (std::vector<uint64_t>{u16(-2), u16(-2), u16(-32768), 2}));
  EXPECT_EQ(bitsOf(r[4]), (std::vector<uint64_t>{3, 7, u16(-1), u16(-3)}));
}

TEST_F(InterpIntTypes, CastsFromNegativeAndLargeFloats) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto r = run(R"(
    func.func @main(%x: tensor<6xf32>, %y: tensor<5xf64>)
        -> (tensor<6xui32>, tensor<6xui16>, tensor<6xi16>, tensor<5xui64>, tensor<6xui8>) {
      %0 = tg.cast %x : tensor<6xf32> -> tensor<6xui32>
      %1 = tg.cast %x : tensor<6xf32> -> tensor<6xui16>
      %2 = tg.cast %x : tensor<6xf32> -> tensor<6xi16>
      %3 = tg.cast %y : tensor<5xf64> -> tensor<5xui64>
      %4 = tg.cast %x : tensor<6xf32> -> tensor<6xui8>
      return %0, %1, %2, %3, %4 : tensor<6xui32>, tensor<6xui16>, tensor<6xi16>, tensor<5xui64>, tensor<6xui8>
    })",
               {floats(DType::F32, {6}, {-1.5, 3.7, 70000.0, 4294967296.0, nan, 1e20}),
                floats(DType::F64, {5}, {-1.0, 1e19, 9.3e18, 18446744073709551616.0, -2.5})});
  ASSERT_EQ(r.size(), 5u);
  // Truncated toward zero, then wrapped modulo 2^N; NaN -> 0; beyond int64 saturates first
  // (INT64_MAX's low bits).
  EXPECT_EQ(bitsOf(r[0]), (std::vector<uint64_t>{4294967295u, 3, 70000, 0, 0, 4294967295u}));
  EXPECT_EQ(bitsOf(r[1]), (std::vector<uint64_t>{65535, 3, 4464, 0, 0, 65535}));
  EXPECT_EQ(bitsOf(r[2]), (std::vector<uint64_t>{u16(-1), 3, 4464, 0, 0, u16(-1)}));
  // u64: negatives wrap, [2^63, 2^64) exact, 2^64 and beyond saturate.
  EXPECT_EQ(bitsOf(r[3]), (std::vector<uint64_t>{kU64Max, 10000000000000000000ull,
                                                 9300000000000000000ull, kU64Max, kU64Max - 1}));
  EXPECT_EQ(bitsOf(r[4]), (std::vector<uint64_t>{255, 3, 112, 0, 0, 255}));
}

TEST_F(InterpIntTypes, CastsBetweenIntegerTypesAndToFloat) {
  auto r = run(R"(
    func.func @main(%a: tensor<2xui64>, %b: tensor<2xi64>, %c: tensor<2xui32>, %d: tensor<2xi16>)
        -> (tensor<2xf64>, tensor<2xi64>, tensor<2xui64>, tensor<2xi64>, tensor<2xui32>, tensor<2xf32>, tensor<2xi1>) {
      %0 = tg.cast %a : tensor<2xui64> -> tensor<2xf64>
      %1 = tg.cast %a : tensor<2xui64> -> tensor<2xi64>
      %2 = tg.cast %b : tensor<2xi64> -> tensor<2xui64>
      %3 = tg.cast %c : tensor<2xui32> -> tensor<2xi64>
      %4 = tg.cast %d : tensor<2xi16> -> tensor<2xui32>
      %5 = tg.cast %c : tensor<2xui32> -> tensor<2xf32>
      %6 = tg.cast %a : tensor<2xui64> -> tensor<2xi1>
      return %0, %1, %2, %3, %4, %5, %6 : tensor<2xf64>, tensor<2xi64>, tensor<2xui64>, tensor<2xi64>, tensor<2xui32>, tensor<2xf32>, tensor<2xi1>
    })",
               {ints(DType::U64, {2}, {kU64Max, 0}), ints(DType::I64, {2}, {uint64_t(-1), 5}),
                ints(DType::U32, {2}, {4294967295u, 7}), ints(DType::I16, {2}, {u16(-2), 9})});
  ASSERT_EQ(r.size(), 7u);
  EXPECT_EQ(r[0].get(0), 18446744073709551616.0); // not -1
  EXPECT_EQ(bitsOf(r[1]), (std::vector<uint64_t>{kU64Max, 0}));
  EXPECT_EQ(bitsOf(r[2]), (std::vector<uint64_t>{kU64Max, 5}));
  EXPECT_EQ(bitsOf(r[3]), (std::vector<uint64_t>{4294967295u, 7})); // zero-extended
  EXPECT_EQ(bitsOf(r[4]), (std::vector<uint64_t>{4294967294u, 9}));
  EXPECT_EQ(r[5].get(0), 4294967296.0f);
  EXPECT_EQ(bitsOf(r[6]), (std::vector<uint64_t>{1, 0}));
}

TEST_F(InterpIntTypes, ReductionsArgMaxAndUnaryAreUnsigned) {
  auto r = run(R"(
    func.func @main(%a: tensor<2x3xui64>, %b: tensor<2xui16>, %c: tensor<3xui64>)
        -> (tensor<2xui64>, tensor<2xui64>, tensor<2xi64>, tensor<2xui64>, tensor<ui16>, tensor<3xui64>, tensor<3xui64>, tensor<3xui64>) {
      %0 = tg.reduce_max %a {axes = [1], keepdims = false} : tensor<2x3xui64> -> tensor<2xui64>
      %1 = tg.reduce_min %a {axes = [1], keepdims = false} : tensor<2x3xui64> -> tensor<2xui64>
      %2 = tg.argmax %a {axis = 1 : i64, keepdims = false} : tensor<2x3xui64> -> tensor<2xi64>
      %3 = tg.reduce_mean %a {axes = [1], keepdims = false} : tensor<2x3xui64> -> tensor<2xui64>
      %4 = tg.reduce_sum %b {axes = [0], keepdims = false} : tensor<2xui16> -> tensor<ui16>
      %5 = tg.abs %c : tensor<3xui64>
      %6 = tg.sign %c : tensor<3xui64>
      %7 = tg.relu %c : tensor<3xui64>
      return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2xui64>, tensor<2xui64>, tensor<2xi64>, tensor<2xui64>, tensor<ui16>, tensor<3xui64>, tensor<3xui64>, tensor<3xui64>
    })",
               {ints(DType::U64, {2, 3}, {k2p63, 1, 2, 3, kU64Max, 7}),
                ints(DType::U16, {2}, {65535, 2}), ints(DType::U64, {3}, {kU64Max, 0, k2p63})});
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(bitsOf(r[0]), (std::vector<uint64_t>{k2p63, kU64Max}));
  EXPECT_EQ(bitsOf(r[1]), (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(bitsOf(r[2]), (std::vector<uint64_t>{0, 1}));
  // (2^63 + 3) / 3 unsigned; the second row's sum wraps to 9.
  EXPECT_EQ(bitsOf(r[3]), (std::vector<uint64_t>{3074457345618258603ull, 3}));
  EXPECT_EQ(bitsOf(r[4]), (std::vector<uint64_t>{1}));
  EXPECT_EQ(bitsOf(r[5]), (std::vector<uint64_t>{kU64Max, 0, k2p63}));
  EXPECT_EQ(bitsOf(r[6]), (std::vector<uint64_t>{1, 0, 1}));
  EXPECT_EQ(bitsOf(r[7]), (std::vector<uint64_t>{kU64Max, 0, k2p63}));
}

TEST_F(InterpIntTypes, TopKAndScatterMaxOrderU64Unsigned) {
  auto r = run(R"(
    func.func @main(%x: tensor<4xui64>, %i: tensor<2xi64>, %u: tensor<2xui64>)
        -> (tensor<2xui64>, tensor<2xi64>, tensor<4xui64>) {
      %0:2 = tg.topk %x {axis = 0 : i64, largest = true} : tensor<4xui64> -> tensor<2xui64>, tensor<2xi64>
      %1 = tg.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "max"} : tensor<4xui64>, tensor<2xi64>, tensor<2xui64> -> tensor<4xui64>
      return %0#0, %0#1, %1 : tensor<2xui64>, tensor<2xi64>, tensor<4xui64>
    })",
               {ints(DType::U64, {4}, {5, kU64Max, 7, k2p63}), ints(DType::I64, {2}, {0, 2}),
                ints(DType::U64, {2}, {k2p63, 3})});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(bitsOf(r[0]), (std::vector<uint64_t>{kU64Max, k2p63}));
  EXPECT_EQ(bitsOf(r[1]), (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(bitsOf(r[2]), (std::vector<uint64_t>{k2p63, kU64Max, 7, k2p63}));
}

TEST_F(InterpIntTypes, ConstantsKeepTheirBits) {
  auto r = run(R"(
    func.func @main() -> (tensor<2xui64>, tensor<2xi16>, tensor<ui32>) {
      %0 = tg.constant dense<[18446744073709551615, 9223372036854775808]> : tensor<2xui64>
      %1 = tg.constant dense<[-32768, 32767]> : tensor<2xi16>
      %2 = tg.constant dense<4294967295> : tensor<ui32>
      return %0, %1, %2 : tensor<2xui64>, tensor<2xi16>, tensor<ui32>
    })",
               {});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(bitsOf(r[0]), (std::vector<uint64_t>{kU64Max, k2p63}));
  EXPECT_EQ(bitsOf(r[1]), (std::vector<uint64_t>{u16(-32768), 32767}));
  EXPECT_EQ(bitsOf(r[2]), (std::vector<uint64_t>{4294967295u}));
}

// Integer outputs compare exactly: rel-L2 cannot tell 2^64 - 1 from 2^64 - 2.
TEST(IntTypeCompare, IntegerMismatchesAndExactRelL2) {
  HostTensor a = ints(DType::U64, {2}, {kU64Max, 1}), b = ints(DType::U64, {2}, {kU64Max - 1, 1});
  EXPECT_EQ(integerMismatches(a, b), 1);
  EXPECT_EQ(integerMismatches(a, a), 0);
  EXPECT_GT(relativeL2(a, b), 0.0); // computed exactly: 1 / |b|, not 0 from rounding
  EXPECT_EQ(integerMismatches(a, ints(DType::I64, {2}, {kU64Max, 1})), -1); // dtypes differ
  EXPECT_EQ(integerMismatches(floats(DType::F32, {1}, {1}), floats(DType::F32, {1}, {1})), -1);
  EXPECT_EQ(a.getInt(0), -1); // the bits
  EXPECT_EQ(ints(DType::U32, {1}, {4294967295u}).getInt(0), 4294967295);
  EXPECT_EQ(ints(DType::I16, {1}, {u16(-5)}).getInt(0), -5);
}

//===----------------------------------------------------------------------===//
// ONNX models on the CPU backend
//===----------------------------------------------------------------------===//

using test::tmpDir;

using Builder = test::OnnxModel;

std::unique_ptr<Session> compileCpu(const Builder &b, const std::string &name) {
  return test::compileAndLoadCpu(b.bytes(), name);
}
std::vector<HostTensor> runCpu(Session &s, const std::vector<HostTensor> &inputs) {
  return test::runSession(s, inputs);
}



TEST(CpuIntTypes, Uint64MaxMinModDivAndCompare) {
  Builder b;
  b.input("a", onnx::TensorProto::UINT64, {3});
  b.input("c", onnx::TensorProto::UINT64, {3});
  b.node("Max", {"a", "c"}, {"mx"});
  b.node("Min", {"a", "c"}, {"mn"});
  b.node("Mod", {"a", "c"}, {"md"});
  b.node("Div", {"a", "c"}, {"dv"});
  b.node("Greater", {"a", "c"}, {"gt"});
  b.node("Add", {"a", "c"}, {"ad"});
  for (const char *o : {"mx", "mn", "md", "dv", "gt", "ad"})
    b.output(o);
  auto s = compileCpu(b, "u64_binary");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->inputs()[0].dtype, DType::U64);
  auto out = runCpu(
      *s, {ints(DType::U64, {3}, {kU64Max, 7, k2p63}), ints(DType::U64, {3}, {2, kU64Max, 3})});
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0].dtype, DType::U64);
  EXPECT_EQ(bitsOf(out[0]), (std::vector<uint64_t>{kU64Max, kU64Max, k2p63}));
  EXPECT_EQ(bitsOf(out[1]), (std::vector<uint64_t>{2, 7, 3}));
  EXPECT_EQ(bitsOf(out[2]), (std::vector<uint64_t>{1, 7, k2p63 % 3}));
  EXPECT_EQ(bitsOf(out[3]), (std::vector<uint64_t>{kU64Max / 2, 0, k2p63 / 3}));
  EXPECT_EQ(bitsOf(out[4]), (std::vector<uint64_t>{1, 0, 1}));
  EXPECT_EQ(bitsOf(out[5]), (std::vector<uint64_t>{1, 6, k2p63 + 3})); // wraps
}

TEST(CpuIntTypes, SmallTypesWrapAndInt16ModTakesTheDivisorsSign) {
  Builder b;
  b.input("a", onnx::TensorProto::UINT16, {2});
  b.input("c", onnx::TensorProto::INT16, {4});
  b.input("d", onnx::TensorProto::INT16, {4});
  b.input("e", onnx::TensorProto::UINT32, {2});
  b.node("Add", {"a", "a"}, {"aa"});
  b.node("Mul", {"c", "c"}, {"cc"});
  b.node("Mod", {"c", "d"}, {"cm"});
  b.node("Sub", {"e", "e"}, {"z"});
  b.node("Neg", {"c"}, {"cn"});
  b.node("Div", {"e", "e"}, {"one"});
  b.node("Sub", {"z", "one"}, {"em"}); // 0 - 1 on u32
  for (const char *o : {"aa", "cc", "cm", "cn", "em"})
    b.output(o);
  auto s = compileCpu(b, "small_wrap");
  ASSERT_TRUE(s);
  auto out =
      runCpu(*s, {ints(DType::U16, {2}, {65535, 40000}),
                  ints(DType::I16, {4}, {300, u16(-7), 7, u16(-32768)}),
                  ints(DType::I16, {4}, {7, 3, u16(-3), u16(-1)}), ints(DType::U32, {2}, {5, 9})});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(bitsOf(out[0]), (std::vector<uint64_t>{65534, 14464}));
  EXPECT_EQ(bitsOf(out[1]), (std::vector<uint64_t>{24464, 49, 49, 0}));
  EXPECT_EQ(bitsOf(out[2]), (std::vector<uint64_t>{6, 2, u16(-2), 0}));
  EXPECT_EQ(bitsOf(out[3]), (std::vector<uint64_t>{u16(-300), 7, u16(-7), u16(-32768)}));
  EXPECT_EQ(bitsOf(out[4]), (std::vector<uint64_t>{4294967295u, 4294967295u}));
}

TEST(CpuIntTypes, CastsFollowTheInterpreter) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {6});
  b.input("y", onnx::TensorProto::DOUBLE, {5});
  b.input("u", onnx::TensorProto::UINT64, {2});
  auto cast = [&](const char *in, const char *out, int to) {
    test::attrInt(b.node("Cast", {in}, {out}), "to", to);
    b.output(out);
  };
  cast("x", "x_u32", onnx::TensorProto::UINT32);
  cast("x", "x_u16", onnx::TensorProto::UINT16);
  cast("x", "x_i16", onnx::TensorProto::INT16);
  cast("y", "y_u64", onnx::TensorProto::UINT64);
  cast("u", "u_f64", onnx::TensorProto::DOUBLE);
  cast("u", "u_i16", onnx::TensorProto::INT16);
  auto s = compileCpu(b, "casts");
  ASSERT_TRUE(s);
  auto out =
      runCpu(*s, {floats(DType::F32, {6}, {-1.5, 3.7, 70000.0, 4294967296.0, nan, 1e20}),
                  floats(DType::F64, {5}, {-1.0, 1e19, 9.3e18, 18446744073709551616.0, -2.5}),
                  ints(DType::U64, {2}, {kU64Max, 65541})});
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(bitsOf(out[0]), (std::vector<uint64_t>{4294967295u, 3, 70000, 0, 0, 4294967295u}));
  EXPECT_EQ(bitsOf(out[1]), (std::vector<uint64_t>{65535, 3, 4464, 0, 0, 65535}));
  EXPECT_EQ(bitsOf(out[2]), (std::vector<uint64_t>{u16(-1), 3, 4464, 0, 0, u16(-1)}));
  EXPECT_EQ(bitsOf(out[3]), (std::vector<uint64_t>{kU64Max, 10000000000000000000ull,
                                                   9300000000000000000ull, kU64Max, kU64Max - 1}));
  EXPECT_EQ(out[4].get(0), 18446744073709551616.0);
  EXPECT_EQ(out[4].get(1), 65541.0);
  EXPECT_EQ(bitsOf(out[5]), (std::vector<uint64_t>{u16(-1), 5}));
}

TEST(CpuIntTypes, ReductionsArgMaxAndTypedInitializers) {
  Builder b;
  b.input("a", onnx::TensorProto::UINT64, {2, 3});
  // An initializer in uint64_data (u64 and u32 are stored there), one in int32_data (i16).
  auto *k = b.g->add_initializer();
  k->set_name("k");
  k->set_data_type(onnx::TensorProto::UINT64);
  k->add_dims(3);
  for (uint64_t v : {kU64Max, uint64_t(1), k2p63})
    k->add_uint64_data(v);
  auto *h = b.g->add_initializer();
  h->set_name("h");
  h->set_data_type(onnx::TensorProto::INT16);
  h->add_dims(2);
  h->add_int32_data(-32768);
  h->add_int32_data(32767);
  b.input("g", onnx::TensorProto::INT16, {2});
  test::attrInt(b.node("ReduceMax", {"a"}, {"rmax"}), "keepdims", 0);
  test::attrInts(b.g->mutable_node(b.g->node_size() - 1), "axes", {1});
  auto *am = b.node("ArgMax", {"a"}, {"am"});
  test::attrInt(am, "axis", 1);
  test::attrInt(am, "keepdims", 0);
  b.node("Min", {"a", "k"}, {"mk"});
  b.node("Add", {"g", "h"}, {"gh"});
  for (const char *o : {"rmax", "am", "mk", "gh"})
    b.output(o);
  auto s = compileCpu(b, "reductions");
  ASSERT_TRUE(s);
  auto out = runCpu(*s, {ints(DType::U64, {2, 3}, {k2p63, 1, 2, 3, kU64Max, 7}),
                         ints(DType::I16, {2}, {u16(-1), 1})});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(bitsOf(out[0]), (std::vector<uint64_t>{k2p63, kU64Max}));
  EXPECT_EQ(bitsOf(out[1]), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(bitsOf(out[2]), (std::vector<uint64_t>{k2p63, 1, 2, 3, 1, 7}));
  EXPECT_EQ(bitsOf(out[3]), (std::vector<uint64_t>{32767, u16(-32768)})); // wraps both ways
}

TEST(CpuIntTypes, RuntimeRefusesASameSizedIntegerTypeOfTheWrongKind) {
  Builder b;
  b.input("a", onnx::TensorProto::UINT16, {2});
  b.node("Add", {"a", "a"}, {"y"});
  b.output("y");
  auto s = compileCpu(b, "refuse");
  ASSERT_TRUE(s);
  std::vector<HostTensor> out;
  Status st = s->run({ints(DType::I16, {2}, {1, 2})}, out);
  EXPECT_FALSE(st.ok);
  EXPECT_NE(st.message.find("u16"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("i16"), std::string::npos) << st.message;
  st = s->run({ints(DType::U16, {2}, {1, 2})}, out);
  EXPECT_TRUE(st.ok) << st.message;
}

} // namespace
