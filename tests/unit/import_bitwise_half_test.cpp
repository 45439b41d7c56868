// import_bitwise_half_test.cpp — f16/bf16 on the CPU backend and the bitwise ops.
//
// f16/bf16 are storage types in the CPU prelude (tg_f16/tg_bf16: float math, rounded to nearest
// even on store). Checked here: the conversions bit for bit (halfway cases, NaN, infinities,
// subnormals, overflow; every f16 and bf16 pattern back to f32), and each op family's kernels
// (elementwise, casts, reductions, movement, GEMMs, norms, softmax, attention, conv, pool) against
// the reference interpreter. Then BitwiseAnd/Or/Xor/Not and BitShift compiled for the CPU against
// hand-computed values (shifts by the bit width or more give 0), the importer's refusals (named
// node), and opset-1 models: accepted when every op kept its opset-7 definition.
#include "codegen/cpu/CpuBackend.h"
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
#include <set>

using namespace tgc;

namespace {

using test::tmpDir;

using Builder = test::OnnxModel;

std::unique_ptr<Session> compileCpu(const Builder &b, const std::string &name) {
  return test::compileAndLoadCpu(b.bytes(), name);
}
std::string compileError(const Builder &b, const std::string &name) {
  return test::compileForCpu(b.bytes(), name);
}
std::vector<HostTensor> runCpu(Session &s, const std::vector<HostTensor> &inputs) {
  return test::runSession(s, inputs);
}

uint32_t bitsOfFloat(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float floatOfBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// A tensor of dtype `t` whose elements are the low bytes of `bits`.
HostTensor ints(DType t, std::vector<int64_t> shape, const std::vector<uint64_t> &bits) {
  HostTensor h = HostTensor::zeros(t, std::move(shape));
  EXPECT_EQ((int64_t)bits.size(), h.numel());
  const size_t es = dtypeSize(t);
  for (size_t i = 0; i < bits.size() && i < (size_t)h.numel(); ++i)
    std::memcpy(h.data.data() + i * es, &bits[i], es);
  return h;
}

/// The elements' bits, zero-extended.
std::vector<uint64_t> bitsOf(const HostTensor &h) {
  std::vector<uint64_t> r(h.numel(), 0);
  const size_t es = dtypeSize(h.dtype);
  for (size_t i = 0; i < r.size(); ++i)
    std::memcpy(&r[i], h.data.data() + i * es, es);
  return r;
}

HostTensor f32s(const std::vector<float> &v) {
  HostTensor h = HostTensor::zeros(DType::F32, {(int64_t)v.size()});
  std::memcpy(h.data.data(), v.data(), v.size() * 4);
  return h;
}




/// One Cast node from `from` to `to` over n elements.
std::unique_ptr<Session> castModel(int from, int to, int64_t n, const std::string &name) {
  Builder b;
  b.input("x", from, {n});
  test::attrInt(b.node("Cast", {"x"}, {"y"}, "cast"), "to", to);
  b.output("y");
  return compileCpu(b, name);
}

//===----------------------------------------------------------------------===//
// Conversions, bit for bit
//===----------------------------------------------------------------------===//

TEST(HalfCpu, FloatToF16RoundsToNearestEvenWithInfNaNAndSubnormals) {
  const float p = std::ldexp(1.0f, -24); // the smallest f16 subnormal
  // (value, expected f16 bits)
  const std::vector<std::pair<float, uint16_t>> cases = {
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f + std::ldexp(1.0f, -11), 0x3c00},     // halfway 1 .. 1+2^-10: to even (down)
      {1.0f + 3 * std::ldexp(1.0f, -11), 0x3c02}, // halfway 1+2^-10 .. 1+2^-9: to even (up)
      {1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20), 0x3c01}, // just above halfway
      {65504.0f, 0x7bff},                                             // the largest f16
      {65519.996f, 0x7bff}, // below the halfway point to 65536
      {65520.0f, 0x7c00},   // halfway: to even, which is +inf
      {1e10f, 0x7c00},
      {-1e10f, 0xfc00},
      {std::numeric_limits<float>::infinity(), 0x7c00},
      {-std::numeric_limits<float>::infinity(), 0xfc00},
      {p, 0x0001},                                   // 2^-24
      {p / 2, 0x0000},                               // 2^-25: halfway to 0, to even
      {floatOfBits(bitsOfFloat(p / 2) + 1), 0x0001}, // just above 2^-25
      {1.5f * p, 0x0002},                            // halfway 1 .. 2 units: to even
      {2.5f * p, 0x0002},                            // halfway 2 .. 3 units: to even
      {-3.0f * p, 0x8003},
      {std::ldexp(1.0f, -14), 0x0400},         // the smallest normal
      {std::ldexp(1.0f, -14) - p / 2, 0x0400}, // halfway 0x3ff .. 0x400: to even
      {std::ldexp(1.0f, -14) - p, 0x03ff},     // the largest subnormal
      {std::ldexp(1.0f, -30), 0x0000},         // far below: 0
      {std::numeric_limits<float>::denorm_min(), 0x0000},
  };
  std::vector<float> in;
  for (auto &c : cases)
    in.push_back(c.first);
  in.push_back(std::numeric_limits<float>::quiet_NaN());
  in.push_back(-std::numeric_limits<float>::quiet_NaN());
  in.push_back(floatOfBits(0x7f800001)); // signalling NaN: stays NaN
  auto s = castModel(onnx::TensorProto::FLOAT, onnx::TensorProto::FLOAT16, (int64_t)in.size(),
                     "f32_to_f16");
  ASSERT_TRUE(s);
  auto out = runCpu(*s, {f32s(in)});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].dtype, DType::F16);
  const std::vector<uint64_t> got = bitsOf(out[0]);
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(got[i], cases[i].second) << "f16 of " << cases[i].first << " (case " << i << ")";
  for (size_t i = cases.size(); i < in.size(); ++i)
    EXPECT_TRUE((got[i] & 0x7c00) == 0x7c00 && (got[i] & 0x3ff) != 0) << "NaN, case " << i;
  EXPECT_EQ(got[cases.size() + 1] & 0x8000, 0x8000u) << "NaN keeps its sign";
}

TEST(HalfCpu, FloatToF16AgreesWithTheInterpreterOnManyValues) {
  // Bit patterns spread over every exponent (including subnormal and NaN ranges).
  std::vector<float> in;
  uint32_t s = 12345;
  for (int i = 0; i < 20000; ++i) {
    s = s * 1664525u + 1013904223u;
    in.push_back(floatOfBits(s));
  }
  auto sess = castModel(onnx::TensorProto::FLOAT, onnx::TensorProto::FLOAT16, (int64_t)in.size(),
                        "f32_to_f16_many");
  ASSERT_TRUE(sess);
  auto out = runCpu(*sess, {f32s(in)});
  ASSERT_EQ(out.size(), 1u);
  HostTensor want = HostTensor::zeros(DType::F16, {(int64_t)in.size()});
  for (size_t i = 0; i < in.size(); ++i)
    want.set((int64_t)i, in[i]); // the runtime's (and interpreter's) rounding
  const auto got = bitsOf(out[0]), ref = bitsOf(want);
  int bad = 0;
  for (size_t i = 0; i < in.size(); ++i)
    if (std::isnan(in[i]) ? (got[i] & 0x7c00) != 0x7c00 || (got[i] & 0x3ff) == 0 : got[i] != ref[i])
      if (++bad < 5)
        ADD_FAILURE() << "bits " << std::hex << bitsOfFloat(in[i]) << ": got " << got[i]
                      << ", want " << ref[i];
  EXPECT_EQ(bad, 0);
}

TEST(HalfCpu, EveryF16AndBf16PatternConvertsToFloatExactly) {
  const int64_t n = 65536;
  std::vector<uint64_t> all(n);
  for (int64_t i = 0; i < n; ++i)
    all[i] = (uint64_t)i;
  auto f16 = castModel(onnx::TensorProto::FLOAT16, onnx::TensorProto::FLOAT, n, "f16_to_f32");
  auto bf16 = castModel(onnx::TensorProto::BFLOAT16, onnx::TensorProto::FLOAT, n, "bf16_to_f32");
  ASSERT_TRUE(f16 && bf16);
  auto a = runCpu(*f16, {ints(DType::F16, {n}, all)});
  auto b = runCpu(*bf16, {ints(DType::BF16, {n}, all)});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    // f16: (-1)^s * 2^(e-15) * 1.m, subnormals 2^-14 * 0.m, e = 31: inf / NaN.
    const int sign = (i >> 15) & 1, e = (i >> 10) & 31, m = i & 1023;
    const float got = a[0].as<float>()[i];
    bool ok;
    if (e == 31)
      ok = m ? std::isnan(got) : got == (sign ? -INFINITY : INFINITY);
    else {
      const double v = e ? std::ldexp(1.0 + m / 1024.0, e - 15) : std::ldexp(m / 1024.0, -14);
      ok = (double)got == (sign ? -v : v) && std::signbit(got) == (bool)sign;
    }
    // bf16: the upper half of the float's bits.
    const uint32_t gb = bitsOfFloat(b[0].as<float>()[i]);
    const bool nanB = ((i >> 7) & 255) == 255 && (i & 127);
    ok = ok && (nanB ? std::isnan(floatOfBits(gb)) : gb == (uint32_t)i << 16);
    if (!ok && ++bad < 5)
      ADD_FAILURE() << "pattern 0x" << std::hex << i << ": f16 -> " << got << ", bf16 -> bits "
                    << gb;
  }
  EXPECT_EQ(bad, 0);
}

TEST(HalfCpu, FloatToBf16RoundsToNearestEven) {
  const std::vector<std::pair<float, uint16_t>> cases = {
      {1.0f, 0x3f80},
      {-1.0f, 0xbf80},
      {1.0f + std::ldexp(1.0f, -8), 0x3f80},     // halfway: to even (down)
      {1.0f + 3 * std::ldexp(1.0f, -8), 0x3f82}, // halfway: to even (up)
      {1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20), 0x3f81},
      {std::numeric_limits<float>::max(), 0x7f80}, // rounds up to +inf
      {std::numeric_limits<float>::infinity(), 0x7f80},
      {-std::numeric_limits<float>::infinity(), 0xff80},
      {floatOfBits(0x00010000), 0x0001}, // a subnormal bf16, exact
      {floatOfBits(0x00008000), 0x0000}, // halfway to 0: to even
      {floatOfBits(0x00018000), 0x0002}, // halfway 1 .. 2: to even
      {-0.0f, 0x8000},
  };
  std::vector<float> in;
  for (auto &c : cases)
    in.push_back(c.first);
  in.push_back(std::numeric_limits<float>::quiet_NaN());
  in.push_back(floatOfBits(0x7f800001)); // a NaN whose payload sits below bf16's bits
  auto s = castModel(onnx::TensorProto::FLOAT, onnx::TensorProto::BFLOAT16, (int64_t)in.size(),
                     "f32_to_bf16");
  ASSERT_TRUE(s);
  auto out = runCpu(*s, {f32s(in)});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].dtype, DType::BF16);
  const auto got = bitsOf(out[0]);
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(got[i], cases[i].second) << "bf16 of " << cases[i].first << " (case " << i << ")";
  for (size_t i = cases.size(); i < in.size(); ++i)
    EXPECT_TRUE((got[i] & 0x7f80) == 0x7f80 && (got[i] & 0x7f) != 0) << "NaN, case " << i;
}

//===----------------------------------------------------------------------===//
// Op families on f16/bf16 against the interpreter
//===----------------------------------------------------------------------===//

HostTensor randomTensor(DType t, std::vector<int64_t> shape, uint32_t seed) {
  auto h = HostTensor::zeros(t, shape);
  uint32_t s = seed * 2654435761u + 7u;
  for (int64_t i = 0; i < h.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    double v = (double)((s >> 8) & 0xffff) / 16384.0 - 2.0; // [-2, 2)
    h.set(i, t == DType::I64 ? std::floor(v * 2) : v);      // i64 in [-4, 4)
  }
  return h;
}

/// Compiles tg IR `ir` for the CPU, runs it and the interpreter on random inputs: the outputs in
/// `loose` within `tol` (relative L2) of the interpreter's, every other one equal to it.
void compareWithInterpreter(const std::string &ir, const std::string &name, double tol,
                            const std::set<size_t> &loose = {}) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  ASSERT_TRUE(module);
  auto fn = module->lookupSymbol<mlir::func::FuncOp>("main");
  std::vector<HostTensor> inputs;
  uint32_t seed = 1;
  for (mlir::Type t : fn.getArgumentTypes()) {
    auto rt = t.cast<mlir::RankedTensorType>();
    auto dt = dtypeOf(rt.getElementType());
    ASSERT_TRUE(bool(dt));
    inputs.push_back(randomTensor(*dt, {rt.getShape().begin(), rt.getShape().end()}, seed++));
  }
  auto want = interpret(fn, inputs);
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  const std::string dir = tmpDir() + "/" + name;
  auto stats = writeCpuPackage(*module, dir, {}, tmpDir() + "/kcache");
  ASSERT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  Status st;
  auto session = Session::load(dir, st, 2);
  ASSERT_TRUE(session) << st.message;
  std::vector<HostTensor> got;
  st = session->run(inputs, got);
  ASSERT_TRUE(st.ok) << st.message;
  ASSERT_EQ(got.size(), want->size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape, (*want)[i].shape) << "output " << i;
    ASSERT_EQ(got[i].dtype, (*want)[i].dtype) << "output " << i;
    EXPECT_LE(relativeL2(got[i], (*want)[i]), loose.count(i) ? tol : 0.0)
        << "output " << i << " of " << name;
  }
}

/// The families' IR with `T` standing for the element type.
std::string familiesIr(const std::string &T) {
  std::string s = R"(
func.func @main(%x: tensor<3x4x5xT>, %g: tensor<5xT>, %w: tensor<6x5xT>, %bias: tensor<6xT>, %m: tensor<5x6xT>, %i: tensor<2xi64>, %img: tensor<1x4x6x6xT>, %cw: tensor<4x2x3x3xT>, %q: tensor<1x2x4x8xT>, %k: tensor<1x2x6x8xT>, %v: tensor<1x2x6x8xT>, %cs: tensor<4x8xT>) -> (tensor<3x4x5xT>, tensor<3x4x5xT>, tensor<3x4x5xf32>, tensor<3x4x5xi32>, tensor<3x5xT>, tensor<4xT>, tensor<3x4xi64>, tensor<5x3x4xT>, tensor<3x2x2xT>, tensor<4x5x6xT>, tensor<3x8x5xT>, tensor<3x2x5xT>, tensor<3x4x6xT>, tensor<3x4x6xT>, tensor<3x4x5xT>, tensor<3x4x5xT>, tensor<3x4x5xT>, tensor<3x4x5xT>, tensor<1x2x4x8xT>, tensor<1x4x2x3xT>, tensor<1x4x3x3xT>, tensor<1x4x3x3xT>, tensor<3x4x2xT>, tensor<1x2x4x8xT>, tensor<3x4x5xT>) {
  %0 = tg.fused "pointwise" (%x, %g) : (tensor<3x4x5xT>, tensor<5xT>) -> tensor<3x4x5xT> {
  ^bb0(%p: tensor<3x4x5xT>, %r: tensor<5xT>):
    %t0 = tg.mul %p, %r : tensor<3x4x5xT>, tensor<5xT> -> tensor<3x4x5xT>
    %t1 = tg.exp %t0 : tensor<3x4x5xT>
    %t2 = tg.max %t1, %p : tensor<3x4x5xT>, tensor<3x4x5xT> -> tensor<3x4x5xT>
    %t3 = tg.gelu %t2 : tensor<3x4x5xT>
    tg.yield %t3 : tensor<3x4x5xT>
  }
  %1 = tg.mod %x, %g : tensor<3x4x5xT>, tensor<5xT> -> tensor<3x4x5xT>
  %2 = tg.cast %x : tensor<3x4x5xT> -> tensor<3x4x5xf32>
  %3 = tg.cast %x : tensor<3x4x5xT> -> tensor<3x4x5xi32>
  %4 = tg.reduce_sum %x {axes = [1], keepdims = false} : tensor<3x4x5xT> -> tensor<3x5xT>
  %5 = tg.reduce_max %x {axes = [0, 2], keepdims = false} : tensor<3x4x5xT> -> tensor<4xT>
  %6 = tg.argmax %x {axis = 2 : i64, keepdims = false} : tensor<3x4x5xT> -> tensor<3x4xi64>
  %7 = tg.transpose %x {perm = [2, 0, 1]} : tensor<3x4x5xT> -> tensor<5x3x4xT>
  %8 = tg.slice %x {starts = [2, 1, 4], steps = [-1, 2, -3]} : tensor<3x4x5xT> -> tensor<3x2x2xT>
  %9 = tg.pad %x {pads = [-1, 0, 1, 2, 1, 0], value = 0.5 : f64} : tensor<3x4x5xT> -> tensor<4x5x6xT>
  %10 = tg.concat %x, %x {axis = 1 : i64} : tensor<3x4x5xT>, tensor<3x4x5xT> -> tensor<3x8x5xT>
  %11 = tg.gather %x, %i {axis = 1 : i64} : tensor<3x4x5xT>, tensor<2xi64> -> tensor<3x2x5xT>
  %12 = tg.linear %x, %w, %bias : tensor<3x4x5xT>, tensor<6x5xT>, tensor<6xT> -> tensor<3x4x6xT>
  %13 = tg.matmul %x, %m : tensor<3x4x5xT>, tensor<5x6xT> -> tensor<3x4x6xT>
  %14 = tg.layer_norm %x, %g, %g {axis = -1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x4x5xT>, tensor<5xT>, tensor<5xT> -> tensor<3x4x5xT>
  %15 = tg.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<3x4x5xT>, tensor<5xT> -> tensor<3x4x5xT>
  %16 = tg.softmax %x {axis = 2 : i64} : tensor<3x4x5xT>
  %17 = tg.softmax %x {axis = 1 : i64, log = true} : tensor<3x4x5xT>
  %18 = tg.attention %q, %k, %v {causal = true, scale = 0.35 : f32} : tensor<1x2x4x8xT>, tensor<1x2x6x8xT>, tensor<1x2x6x8xT> -> tensor<1x2x4x8xT>
  %19 = tg.conv %img, %cw {strides = [2, 2], pads = [1, 1, 0, 0], dilations = [2, 1], group = 2 : i64} : tensor<1x4x6x6xT>, tensor<4x2x3x3xT> -> tensor<1x4x2x3xT>
  %20 = tg.pool %img {kind = "max", kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1]} : tensor<1x4x6x6xT> -> tensor<1x4x3x3xT>
  %21 = tg.pool %img {kind = "avg", kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], count_include_pad = false} : tensor<1x4x6x6xT> -> tensor<1x4x3x3xT>
  %22 = tg.swiglu %x4 : tensor<3x4x4xT> -> tensor<3x4x2xT>
  %23 = tg.rotary %q, %cs, %cs : tensor<1x2x4x8xT>, tensor<4x8xT>, tensor<4x8xT> -> tensor<1x2x4x8xT>
  %24 = tg.where %b, %x, %g : tensor<3x4x5xi1>, tensor<3x4x5xT>, tensor<5xT> -> tensor<3x4x5xT>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24 : tensor<3x4x5xT>, tensor<3x4x5xT>, tensor<3x4x5xf32>, tensor<3x4x5xi32>, tensor<3x5xT>, tensor<4xT>, tensor<3x4xi64>, tensor<5x3x4xT>, tensor<3x2x2xT>, tensor<4x5x6xT>, tensor<3x8x5xT>, tensor<3x2x5xT>, tensor<3x4x6xT>, tensor<3x4x6xT>, tensor<3x4x5xT>, tensor<3x4x5xT>, tensor<3x4x5xT>, tensor<3x4x5xT>, tensor<1x2x4x8xT>, tensor<1x4x2x3xT>, tensor<1x4x3x3xT>, tensor<1x4x3x3xT>, tensor<3x4x2xT>, tensor<1x2x4x8xT>, tensor<3x4x5xT>
}
)";
  // %x4 (swiglu's input) and %b (where's condition) are computed from %x.
  const std::string extra =
      "  %x4 = tg.slice %x {starts = [0, 0, 0], steps = [1, 1, 1]} : tensor<3x4x5xT> -> "
      "tensor<3x4x4xT>\n"
      "  %zero = tg.constant dense<0.0> : tensor<T>\n"
      "  %b = tg.greater %x, %zero : tensor<3x4x5xT>, tensor<T> -> tensor<3x4x5xi1>\n";
  s.insert(s.find("  %0 = "), extra);
  std::string out;
  for (char ch : s)
    out += ch == 'T' ? T : std::string(1, ch);
  return out;
}

// Each kernel rounds once on store, as the interpreter rounds each op: the results are equal,
// except the fused kernel (output 0), which keeps float between its ops where the interpreter
// rounds every op's result.
TEST(HalfCpu, F16OpFamiliesAgreeWithTheInterpreter) {
  compareWithInterpreter(familiesIr("f16"), "families_f16.tgpkg", 2e-3, {0});
}

TEST(HalfCpu, Bf16OpFamiliesAgreeWithTheInterpreter) {
  compareWithInterpreter(familiesIr("bf16"), "families_bf16.tgpkg", 1e-2, {0});
}

// The indexing family (codegen/common/IndexEmit) on f16 and bf16.
TEST(HalfCpu, IndexingOpsAgreeWithTheInterpreter) {
  for (const std::string T : {"f16", "bf16"}) {
    std::string ir = R"(
func.func @main(%x: tensor<2x3xT>, %d: tensor<4x3xT>, %i: tensor<2x3xi64>) -> (tensor<2x3xT>, tensor<4x3xT>, tensor<4x3xT>, tensor<2x2xT>, tensor<2x2xi64>) {
  %0 = tg.cumsum %x {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x3xT>
  %1 = tg.scatter_elements %d, %i, %x {axis = 0 : i64, reduction = "max"} : tensor<4x3xT>, tensor<2x3xi64>, tensor<2x3xT> -> tensor<4x3xT>
  %2 = tg.scatter_elements %d, %i, %x {axis = 0 : i64, reduction = "add"} : tensor<4x3xT>, tensor<2x3xi64>, tensor<2x3xT> -> tensor<4x3xT>
  %3:2 = tg.topk %x {axis = 1 : i64, largest = false} : tensor<2x3xT> -> tensor<2x2xT>, tensor<2x2xi64>
  return %0, %1, %2, %3#0, %3#1 : tensor<2x3xT>, tensor<4x3xT>, tensor<4x3xT>, tensor<2x2xT>, tensor<2x2xi64>
}
)";
    std::string out;
    for (char ch : ir)
      out += ch == 'T' ? T : std::string(1, ch);
    compareWithInterpreter(out, "indexing_" + T + ".tgpkg", 0.0);
  }
}

// A runtime input of the other 16-bit float type is refused with both specs named.
TEST(HalfCpu, RuntimeRefusesBf16ForAnF16Input) {
  auto s = castModel(onnx::TensorProto::FLOAT16, onnx::TensorProto::FLOAT, 3, "f16_input_check");
  ASSERT_TRUE(s);
  std::vector<HostTensor> out;
  Status st = s->run({HostTensor::zeros(DType::BF16, {3})}, out);
  EXPECT_FALSE(st.ok);
  EXPECT_NE(st.message.find("f16"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("bf16"), std::string::npos) << st.message;
}

//===----------------------------------------------------------------------===//
// Bitwise ops on the CPU
//===----------------------------------------------------------------------===//

TEST(BitwiseCpu, AndOrXorNotOnSignedUnsignedAndBroadcast) {
  Builder b(18);
  b.input("a", onnx::TensorProto::INT8, {4});
  b.input("c", onnx::TensorProto::INT8, {4});
  b.input("u", onnx::TensorProto::UINT8, {2, 3});
  b.input("v", onnx::TensorProto::UINT8, {3});
  b.input("w", onnx::TensorProto::UINT64, {2});
  b.input("l", onnx::TensorProto::INT64, {2});
  b.node("BitwiseAnd", {"a", "c"}, {"and8"});
  b.node("BitwiseOr", {"a", "c"}, {"or8"});
  b.node("BitwiseXor", {"a", "c"}, {"xor8"});
  b.node("BitwiseNot", {"a"}, {"not8"});
  b.node("BitwiseXor", {"u", "v"}, {"xoru8"});
  b.node("BitwiseNot", {"w"}, {"notu64"});
  b.node("BitwiseAnd", {"l", "l"}, {"andi64"});
  for (const char *o : {"and8", "or8", "xor8", "not8", "xoru8", "notu64", "andi64"})
    b.output(o);
  auto s = compileCpu(b, "bitwise_ops");
  ASSERT_TRUE(s);
  auto out = runCpu(*s, {ints(DType::I8, {4}, {0xff, 0x80, 0x55, 0}),
                         ints(DType::I8, {4}, {0x0f, 0x7f, 0xaa, 0xff}),
                         ints(DType::U8, {2, 3}, {1, 2, 255, 0xf0, 0, 7}),
                         ints(DType::U8, {3}, {0xff, 2, 0x0f}),
                         ints(DType::U64, {2}, {0, 0x8000000000000001ull}),
                         ints(DType::I64, {2}, {(uint64_t)-5ll, 0x7fffffffffffffffull})});
  ASSERT_EQ(out.size(), 7u);
  EXPECT_EQ(bitsOf(out[0]), (std::vector<uint64_t>{0x0f, 0, 0, 0}));
  EXPECT_EQ(bitsOf(out[1]), (std::vector<uint64_t>{0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(bitsOf(out[2]), (std::vector<uint64_t>{0xf0, 0xff, 0xff, 0xff}));
  EXPECT_EQ(bitsOf(out[3]), (std::vector<uint64_t>{0, 0x7f, 0xaa, 0xff}));
  EXPECT_EQ(bitsOf(out[4]), (std::vector<uint64_t>{0xfe, 0, 0xf0, 0x0f, 2, 0x08}));
  EXPECT_EQ(bitsOf(out[5]), (std::vector<uint64_t>{~0ull, 0x7ffffffffffffffeull}));
  EXPECT_EQ(bitsOf(out[6]), (std::vector<uint64_t>{(uint64_t)-5ll, 0x7fffffffffffffffull}));
}

TEST(BitwiseCpu, ShiftsByTheBitWidthOrMoreGiveZero) {
  Builder b(11);
  b.input("x8", onnx::TensorProto::UINT8, {6});
  b.input("s8", onnx::TensorProto::UINT8, {6});
  b.input("x32", onnx::TensorProto::UINT32, {4});
  b.input("s32", onnx::TensorProto::UINT32, {4});
  b.input("x64", onnx::TensorProto::UINT64, {4});
  b.input("s64", onnx::TensorProto::UINT64, {4});
  test::attrString(b.node("BitShift", {"x8", "s8"}, {"l8"}), "direction", "LEFT");
  test::attrString(b.node("BitShift", {"x8", "s8"}, {"r8"}), "direction", "RIGHT");
  test::attrString(b.node("BitShift", {"x32", "s32"}, {"l32"}), "direction", "LEFT");
  test::attrString(b.node("BitShift", {"x32", "s32"}, {"r32"}), "direction", "RIGHT");
  test::attrString(b.node("BitShift", {"x64", "s64"}, {"l64"}), "direction", "LEFT");
  test::attrString(b.node("BitShift", {"x64", "s64"}, {"r64"}), "direction", "RIGHT");
  for (const char *o : {"l8", "r8", "l32", "r32", "l64", "r64"})
    b.output(o);
  auto s = compileCpu(b, "bitshift");
  ASSERT_TRUE(s);
  auto out = runCpu(*s, {ints(DType::U8, {6}, {255, 255, 1, 129, 200, 3}),
                         ints(DType::U8, {6}, {1, 7, 8, 9, 255, 0}),
                         ints(DType::U32, {4}, {0xffffffffu, 1, 5, 0x80000000u}),
                         ints(DType::U32, {4}, {31, 32, 40, 0xffffffffu}),
                         ints(DType::U64, {4}, {1, 3, 1, ~0ull}),
                         ints(DType::U64, {4}, {63, 64, 1000, 0x8000000000000000ull})});
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(bitsOf(out[0]), (std::vector<uint64_t>{254, 128, 0, 0, 0, 3}));
  EXPECT_EQ(bitsOf(out[1]), (std::vector<uint64_t>{127, 1, 0, 0, 0, 3}));
  EXPECT_EQ(bitsOf(out[2]), (std::vector<uint64_t>{0x80000000u, 0, 0, 0}));
  EXPECT_EQ(bitsOf(out[3]), (std::vector<uint64_t>{1, 0, 0, 0}));
  EXPECT_EQ(bitsOf(out[4]), (std::vector<uint64_t>{0x8000000000000000ull, 0, 0, 0}));
  EXPECT_EQ(bitsOf(out[5]), (std::vector<uint64_t>{0, 0, 0, 0}));
}

// The fused form (FormKernels puts the bitwise ops in one pointwise kernel with others) agrees
// with the interpreter too.
TEST(BitwiseCpu, FusedWithOtherElementwiseOpsAgreesWithTheInterpreter) {
  compareWithInterpreter(R"(
func.func @main(%a: tensor<4x6xui32>, %b: tensor<6xui32>, %c: tensor<4x6xi64>) -> (tensor<4x6xui32>, tensor<4x6xi64>) {
  %0 = tg.fused "pointwise" (%a, %b) : (tensor<4x6xui32>, tensor<6xui32>) -> tensor<4x6xui32> {
  ^bb0(%p: tensor<4x6xui32>, %q: tensor<6xui32>):
    %t0 = tg.add %p, %q : tensor<4x6xui32>, tensor<6xui32> -> tensor<4x6xui32>
    %t1 = tg.bitwise "shift_left" %t0, %q : tensor<4x6xui32>, tensor<6xui32> -> tensor<4x6xui32>
    %t2 = tg.bitwise "xor" %t1, %p : tensor<4x6xui32>, tensor<4x6xui32> -> tensor<4x6xui32>
    %t3 = tg.bitwise_not %t2 : tensor<4x6xui32>
    tg.yield %t3 : tensor<4x6xui32>
  }
  %1 = tg.bitwise "or" %c, %c : tensor<4x6xi64>, tensor<4x6xi64> -> tensor<4x6xi64>
  return %0, %1 : tensor<4x6xui32>, tensor<4x6xi64>
}
)",
                         "bitwise_fused.tgpkg", 0.0);
}

//===----------------------------------------------------------------------===//
// Refusals and old opsets
//===----------------------------------------------------------------------===//

TEST(BitwiseImport, RefusalsNameTheNode) {
  {
    Builder b(11);
    b.input("x", onnx::TensorProto::UINT8, {2});
    test::attrString(b.node("BitShift", {"x", "x"}, {"y"}, "shift_up"), "direction", "UP");
    b.output("y");
    const std::string e = compileError(b, "bitshift_up");
    EXPECT_NE(e.find("shift_up"), std::string::npos) << e;
    EXPECT_NE(e.find("direction must be LEFT or RIGHT, not 'UP'"), std::string::npos) << e;
  }
  {
    Builder b(11);
    b.input("x", onnx::TensorProto::UINT8, {2});
    b.node("BitShift", {"x", "x"}, {"y"}, "no_direction");
    b.output("y");
    const std::string e = compileError(b, "bitshift_nodir");
    EXPECT_NE(e.find("no_direction"), std::string::npos) << e;
    EXPECT_NE(e.find("'direction'"), std::string::npos) << e;
  }
  {
    Builder b(11);
    b.input("x", onnx::TensorProto::INT32, {2});
    test::attrString(b.node("BitShift", {"x", "x"}, {"y"}, "signed_shift"), "direction", "LEFT");
    b.output("y");
    const std::string e = compileError(b, "bitshift_signed");
    EXPECT_NE(e.find("signed_shift"), std::string::npos) << e;
    EXPECT_NE(e.find("unsigned"), std::string::npos) << e;
  }
  for (const char *op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    Builder b(18);
    b.input("x", onnx::TensorProto::FLOAT, {2});
    b.node(op, {"x", "x"}, {"y"}, "float_bits");
    b.output("y");
    const std::string e = compileError(b, std::string("bitwise_float_") + op);
    EXPECT_NE(e.find("float_bits"), std::string::npos) << e;
    EXPECT_NE(e.find("needs an integer tensor, not f32"), std::string::npos) << e;
  }
  {
    Builder b(18);
    b.input("x", onnx::TensorProto::BOOL, {2});
    b.node("BitwiseNot", {"x"}, {"y"}, "bool_not");
    b.output("y");
    const std::string e = compileError(b, "bitwise_not_bool");
    EXPECT_NE(e.find("bool_not"), std::string::npos) << e;
    EXPECT_NE(e.find("needs an integer tensor"), std::string::npos) << e;
  }
  {
    Builder b(17); // BitwiseAnd is opset 18
    b.input("x", onnx::TensorProto::INT32, {2});
    b.node("BitwiseAnd", {"x", "x"}, {"y"}, "too_early");
    b.output("y");
    const std::string e = compileError(b, "bitwise_opset17");
    EXPECT_NE(e.find("too_early"), std::string::npos) << e;
    EXPECT_NE(e.find("needs opset 18"), std::string::npos) << e;
  }
}

TEST(OldOpsets, Opset1ModelOfUnchangedOpsImportsAsOpset7) {
  Builder b(1);
  b.input("x", onnx::TensorProto::BOOL, {3});
  b.node("Not", {"x"}, {"y"});
  b.output("y");
  auto s = compileCpu(b, "opset1_not");
  ASSERT_TRUE(s);
  auto out = runCpu(*s, {ints(DType::Bool, {3}, {1, 0, 1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(bitsOf(out[0]), (std::vector<uint64_t>{0, 1, 0}));
}

TEST(OldOpsets, Opset6ModelWithAChangedOpIsRefusedNamingIt) {
  // Add-6 broadcasts only with its `broadcast` attribute (legacy semantics, changed at 7).
  Builder b(6);
  b.input("x", onnx::TensorProto::FLOAT, {3});
  b.node("Relu", {"x"}, {"r"});
  b.node("Add", {"r", "x"}, {"y"});
  b.output("y");
  const std::string e = compileError(b, "opset6_add");
  EXPECT_NE(e.find("opset 6 is too old"), std::string::npos) << e;
  EXPECT_NE(e.find("not: Add)"), std::string::npos) << e;
  // Relu-6 is the definition opset 7 uses: not named.
  EXPECT_EQ(e.find("Relu"), std::string::npos) << e;
}

} // namespace
