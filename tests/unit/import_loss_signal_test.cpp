// import_loss_signal_test.cpp — the decomposing importers of ImportLoss.cpp
// (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) and ImportSignal.cpp (Hann/Hamming/
// Blackman windows, MelWeightMatrix, DFT, STFT): small hand-built models run through the
// interpreter against hand-computed values, and the refusals (each naming the node).
#include "compiler/dialect/TgDialect.h"
#include "compiler/interp/Interpreter.h"
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/onnx.pb.h"
#include "tests/unit/OnnxModelBuilder.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tgc;

namespace {

using Builder = test::OnnxModel;
using test::attrInt;
using test::attrString;

HostTensor f32(std::vector<int64_t> shape, std::vector<float> vals) {
  HostTensor t = HostTensor::zeros(DType::F32, shape);
  for (size_t i = 0; i < vals.size(); ++i)
    t.as<float>()[i] = vals[i];
  return t;
}

HostTensor i64(std::vector<int64_t> shape, std::vector<int64_t> vals) {
  HostTensor t = HostTensor::zeros(DType::I64, shape);
  for (size_t i = 0; i < vals.size(); ++i)
    t.as<int64_t>()[i] = vals[i];
  return t;
}

class ImportLossSignal : public ::testing::Test {
protected:
  ImportLossSignal() { ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>(); }
  /// Imports `b` and runs it on `inputs`; fails the test on any error.
  std::vector<HostTensor> run(const Builder &b, const std::vector<HostTensor> &inputs) {
    auto m = importOnnxBytes(ctx, b.bytes(), "", {});
    if (!m) {
      ADD_FAILURE() << llvm::toString(m.takeError());
      return {};
    }
    module = std::move(*m);
    auto got = interpret(module->lookupSymbol<mlir::func::FuncOp>("main"), inputs);
    if (!got) {
      ADD_FAILURE() << llvm::toString(got.takeError());
      return {};
    }
    return *got;
  }
  std::string importError(const Builder &b) {
    auto m = importOnnxBytes(ctx, b.bytes(), "", {});
    return m ? std::string() : llvm::toString(m.takeError());
  }
  /// Ops in @main other than constants and the return.
  int computeOps() {
    int n = 0;
    module->lookupSymbol<mlir::func::FuncOp>("main").walk([&](mlir::Operation *op) {
      n += !mlir::isa<tg::ConstantOp, mlir::func::ReturnOp, mlir::func::FuncOp>(op);
    });
    return n;
  }
  int countOps(llvm::StringRef name) {
    int n = 0;
    module->lookupSymbol<mlir::func::FuncOp>("main").walk(
        [&](mlir::Operation *op) { n += op->getName().getStringRef() == name; });
    return n;
  }
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

void expectValues(const HostTensor &t, const std::vector<int64_t> &shape,
                  const std::vector<double> &want, double tol = 1e-5) {
  ASSERT_EQ(t.shape, shape);
  ASSERT_EQ(t.numel(), (int64_t)want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(t.get((int64_t)i), want[i], tol) << "element " << i;
}

// --- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss ---

/// x [3, 3] (log-probabilities), target [3] = {0, 2, 1}, weight {1, 2, 3}, ignore_index 2:
/// row 0: -x[0][0] * 1 = 1; row 1 ignored (0, weight 0); row 2: -x[2][1] * 2 = 1.5 * 2 = 3.
const std::vector<float> kLogp = {-1, -2, -3, -4, -5, -6, -0.5f, -1.5f, -2.5f};

Builder nllModel(const std::string &reduction, bool weight, bool ignore, int opset = 13) {
  Builder b(opset);
  b.input("x", onnx::TensorProto::FLOAT, {3, 3});
  b.input("t", onnx::TensorProto::INT64, {3});
  std::vector<std::string> ins = {"x", "t"};
  if (weight) {
    b.initF32("w", {3}, {1, 2, 3});
    ins.push_back("w");
  }
  auto *n = b.node("NegativeLogLikelihoodLoss", ins, {"loss"}, "nll");
  attrString(n, "reduction", reduction);
  if (ignore)
    attrInt(n, "ignore_index", 2);
  b.output("loss");
  return b;
}

TEST_F(ImportLossSignal, NllWeightsAndIgnoreIndex) {
  const auto x = f32({3, 3}, kLogp);
  const auto t = i64({3}, {0, 2, 1});
  expectValues(run(nllModel("none", true, true), {x, t})[0], {3}, {1, 0, 3});
  expectValues(run(nllModel("sum", true, true), {x, t})[0], {}, {4});
  // mean divides by the applied weights: (1 + 3) / (1 + 2)
  expectValues(run(nllModel("mean", true, true), {x, t})[0], {}, {4.0 / 3.0});
  // no weight, ignore_index: mean over the two rows kept: (1 + 1.5) / 2
  expectValues(run(nllModel("mean", false, true), {x, t})[0], {}, {1.25});
  // no weight, no ignore: plain mean (1 + 6 + 1.5) / 3
  expectValues(run(nllModel("mean", false, false), {x, t})[0], {}, {8.5 / 3.0});
  // weight, no ignore: (1*1 + 6*3 + 1.5*2) / (1 + 3 + 2)
  expectValues(run(nllModel("mean", true, false), {x, t})[0], {}, {22.0 / 6.0});
}

TEST_F(ImportLossSignal, NllIgnoredTargetOutOfRangeAndSpatialDims) {
  // x [1, 2, 3] (N, C, d1), target [1, 3] with -1 ignored (outside [0, C): clamped, zeroed).
  Builder b(22);
  b.input("x", onnx::TensorProto::FLOAT, {1, 2, 3});
  b.input("t", onnx::TensorProto::INT32, {1, 3});
  auto *n = b.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, "nll");
  attrString(n, "reduction", "none");
  attrInt(n, "ignore_index", -1);
  b.output("loss");
  HostTensor t = HostTensor::zeros(DType::I32, {1, 3});
  t.as<int32_t>()[0] = 1, t.as<int32_t>()[1] = -1, t.as<int32_t>()[2] = 0;
  // x[0, c, d] = -(10c + d + 1): picks -x[0,1,0] = 11, 0, -x[0,0,2] = 3
  expectValues(run(b, {f32({1, 2, 3}, {-1, -2, -3, -11, -12, -13}), t})[0], {1, 3}, {11, 0, 3});
}

TEST_F(ImportLossSignal, SoftmaxCrossEntropyWithLogProb) {
  Builder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.input("t", onnx::TensorProto::INT64, {2});
  attrString(b.node("SoftmaxCrossEntropyLoss", {"x", "t"}, {"loss", "logp"}, "sce"), "reduction",
             "mean");
  b.output("loss");
  b.output("logp");
  std::vector<float> xs = {1, 2, 3, 0, 0, 0};
  auto got = run(b, {f32({2, 3}, xs), i64({2}, {0, 2})});
  ASSERT_EQ(got.size(), 2u);
  const double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), lse1 = std::log(3.0);
  std::vector<double> logp = {1 - lse0, 2 - lse0, 3 - lse0, -lse1, -lse1, -lse1};
  expectValues(got[1], {2, 3}, logp);
  expectValues(got[0], {}, {(-logp[0] - logp[5]) / 2});
}

TEST_F(ImportLossSignal, LossRefusals) {
  auto one = [&](const std::string &op, const std::string &reduction, std::vector<int64_t> ts,
                 int telem, std::vector<int64_t> ws) {
    Builder b(13);
    b.input("x", onnx::TensorProto::FLOAT, {2, 3});
    b.input("t", telem, ts);
    std::vector<std::string> ins = {"x", "t"};
    if (!ws.empty()) {
      b.input("w", onnx::TensorProto::FLOAT, ws);
      ins.push_back("w");
    }
    attrString(b.node(op, ins, {"loss"}, "L"), "reduction", reduction);
    b.output("loss");
    return importError(b);
  };
  const int I64 = onnx::TensorProto::INT64;
  struct Case {
    std::string op, reduction;
    std::vector<int64_t> ts;
    int telem;
    std::vector<int64_t> ws;
    std::string want;
  } cases[] = {
      {"NegativeLogLikelihoodLoss", "avg", {2}, I64, {},
       "NegativeLogLikelihoodLoss 'L': reduction 'avg' is not one of none, sum, mean"},
      {"SoftmaxCrossEntropyLoss", "mean", {2, 1}, I64, {},
       "SoftmaxCrossEntropyLoss 'L': target shape 2x1 must be 2 (the input 2x3"},
      {"NegativeLogLikelihoodLoss", "sum", {2}, onnx::TensorProto::FLOAT, {},
       "NegativeLogLikelihoodLoss 'L': target must be int32 or int64"},
      {"NegativeLogLikelihoodLoss", "sum", {2}, I64, {2},
       "NegativeLogLikelihoodLoss 'L': weight must be a [3] tensor"},
  };
  for (auto &k : cases) {
    std::string e = one(k.op, k.reduction, k.ts, k.telem, k.ws);
    EXPECT_NE(e.find(k.want), std::string::npos) << e;
  }
  { // a constant target out of range (and not ignored)
    Builder b(13);
    b.input("x", onnx::TensorProto::FLOAT, {2, 3});
    b.initI64("t", {0, 3});
    b.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, "L");
    b.output("loss");
    std::string e = importError(b);
    EXPECT_NE(e.find("NegativeLogLikelihoodLoss 'L': target 3 out of range [0, 3)"),
              std::string::npos)
        << e;
  }
}

// --- Windows and MelWeightMatrix: constants ---

TEST_F(ImportLossSignal, WindowsAreConstants) {
  auto window = [&](const std::string &op, int64_t size, int64_t periodic, int64_t dtype = 1) {
    Builder b(17);
    b.initI64("n", {size});
    auto *n = b.node(op, {"n"}, {"y"}, "win");
    attrInt(n, "periodic", periodic);
    attrInt(n, "output_datatype", dtype);
    b.output("y");
    auto got = run(b, {});
    EXPECT_EQ(computeOps(), 0) << op;
    return got.empty() ? HostTensor() : got[0];
  };
  expectValues(window("HannWindow", 4, 1), {4}, {0, 0.5, 1, 0.5});
  expectValues(window("HannWindow", 5, 0), {5}, {0, 0.5, 1, 0.5, 0});
  // 25/46 - 21/46 cos(2 pi n / 4)
  expectValues(window("HammingWindow", 4, 1), {4}, {4.0 / 46, 25.0 / 46, 1, 25.0 / 46});
  // 0.42 - 0.5 cos(2 pi n / 4) + 0.08 cos(4 pi n / 4)
  HostTensor bw = window("BlackmanWindow", 4, 1, onnx::TensorProto::DOUBLE);
  EXPECT_EQ(bw.dtype, DType::F64);
  expectValues(bw, {4}, {0, 0.34, 1, 0.34}, 1e-12);
}

TEST_F(ImportLossSignal, MelWeightMatrix) {
  Builder b(17);
  b.initI64("bins", {2});
  b.initI64("len", {16});
  b.initI64("rate", {8000});
  b.initF32("lo", {}, {0});
  b.initF32("hi", {}, {4000});
  b.node("MelWeightMatrix", {"bins", "len", "rate", "lo", "hi"}, {"y"}, "mel");
  b.output("y");
  // mel points 0, 536.5, 1073, 1609.5 -> 0, 426.7, 1113.6, 2219.2 Hz -> DFT bins
  // floor(17 f / 8000) = 0, 0, 2, 4: triangles (0,0,2) and (0,2,4).
  auto got = run(b, {});
  ASSERT_EQ(got.size(), 1u);
  std::vector<double> want(9 * 2, 0.0);
  want[0 * 2 + 0] = 1, want[1 * 2 + 0] = 0.5;
  want[1 * 2 + 1] = 0.5, want[2 * 2 + 1] = 1, want[3 * 2 + 1] = 0.5;
  expectValues(got[0], {9, 2}, want);
}

TEST_F(ImportLossSignal, WindowAndMelRefusals) {
  {
    Builder b(17);
    b.input("n", onnx::TensorProto::INT64, {});
    b.node("HannWindow", {"n"}, {"y"}, "win");
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("HannWindow 'win': size input must be constant (graph input 'n': bind its "
                     "value at compile time with --bind-input n=FILE.pb)"),
              std::string::npos)
        << e;
  }
  {
    Builder b(17);
    b.initI64("n", {4});
    attrInt(b.node("HammingWindow", {"n"}, {"y"}, "win"), "periodic", 2);
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("HammingWindow 'win': periodic must be 0 or 1"), std::string::npos) << e;
  }
  {
    Builder b(17);
    b.initI64("n", {4, 5});
    b.node("BlackmanWindow", {"n"}, {"y"}, "win");
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("BlackmanWindow 'win': size must be a scalar"), std::string::npos) << e;
  }
  {
    Builder b(17);
    b.initI64("bins", {2});
    b.initI64("len", {16});
    b.initI64("rate", {8000});
    b.initF32("lo", {}, {0});
    b.initF32("hi", {}, {16000}); // far above sample_rate / 2
    b.node("MelWeightMatrix", {"bins", "len", "rate", "lo", "hi"}, {"y"}, "mel");
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("MelWeightMatrix 'mel': upper_edge_hertz"), std::string::npos) << e;
  }
}

// --- DFT / STFT ---

TEST_F(ImportLossSignal, DftForwardOnesidedAndLength) {
  // fft([1, 2, 3, 4]) = 10, -2+2i, -2, -2-2i
  auto dft = [&](int opset, int64_t onesided, int64_t len) {
    Builder b(opset);
    b.input("x", onnx::TensorProto::FLOAT, {1, 4, 1});
    std::vector<std::string> ins = {"x", ""};
    if (len) {
      b.initI64("len", {len});
      ins[1] = "len";
    }
    if (opset >= 20) {
      b.initI64("axis", {-2});
      ins.push_back("axis");
    }
    auto *n = b.node("DFT", ins, {"y"}, "dft");
    if (opset < 20)
      attrInt(n, "axis", 1);
    attrInt(n, "onesided", onesided);
    b.output("y");
    auto got = run(b, {f32({1, 4, 1}, {1, 2, 3, 4})});
    EXPECT_GE(countOps("tg.matmul"), 1);
    return got.empty() ? HostTensor() : got[0];
  };
  expectValues(dft(17, 0, 0), {1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  expectValues(dft(20, 1, 0), {1, 3, 2}, {10, 0, -2, 2, -2, 0});
  // dft_length 2: fft([1, 2]) = 3, -1
  expectValues(dft(20, 0, 2), {1, 2, 2}, {3, 0, -1, 0});
  // dft_length 6 (zero padded), onesided: 10, -3.5-4.3301i, 2.5+0.8660i, -2
  expectValues(dft(17, 1, 6), {1, 4, 2}, {10, 0, -3.5, -4.330127, 2.5, 0.866025, -2, 0}, 1e-4);
}

TEST_F(ImportLossSignal, DftInverseOnInnerAxis) {
  // x [2, 4, 2]: the transform along axis 0 (length 2) of complex values; inverse.
  // ifft([a, b]) = [(a + b) / 2, (a - b) / 2] per column.
  Builder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {2, 2, 2});
  auto *n = b.node("DFT", {"x"}, {"y"}, "idft");
  attrInt(n, "axis", 0);
  attrInt(n, "inverse", 1);
  b.output("y");
  // column 0: a = 1+2i, b = 3+4i; column 1: a = 5-1i, b = -1+1i
  auto got = run(b, {f32({2, 2, 2}, {1, 2, 5, -1, 3, 4, -1, 1})});
  ASSERT_EQ(got.size(), 1u);
  expectValues(got[0], {2, 2, 2}, {2, 3, 2, 0, -1, -1, 3, -1});
  // forward then inverse of [10, -2+2i, -2, -2-2i] gives [1, 2, 3, 4] back
  Builder c(20);
  c.input("x", onnx::TensorProto::FLOAT, {4, 2});
  c.initI64("axis", {0});
  attrInt(c.node("DFT", {"x", "", "axis"}, {"y"}, "idft"), "inverse", 1);
  c.output("y");
  got = run(c, {f32({4, 2}, {10, 0, -2, 2, -2, 0, -2, -2})});
  ASSERT_EQ(got.size(), 1u);
  expectValues(got[0], {4, 2}, {1, 0, 2, 0, 3, 0, 4, 0});
}

TEST_F(ImportLossSignal, StftFramesWindowAndRefusals) {
  auto stft = [&](bool window, bool constStep) {
    Builder b(17);
    b.input("s", onnx::TensorProto::FLOAT, {1, 5, 1});
    if (constStep)
      b.initI64("step", {2});
    else
      b.input("step", onnx::TensorProto::INT64, {});
    b.initI64("len", {2});
    std::vector<std::string> ins = {"s", "step", "", "len"};
    if (window) {
      b.initF32("w", {2}, {1, 0.5f});
      ins[2] = "w";
    }
    b.node("STFT", ins, {"y"}, "stft");
    b.output("y");
    return b;
  };
  // frames [1, 2], [3, 4] (the 5th sample is in no frame); DFT-2: [a + b, a - b]
  const auto s = f32({1, 5, 1}, {1, 2, 3, 4, 5});
  expectValues(run(stft(false, true), {s})[0], {1, 2, 2, 2}, {3, 0, -1, 0, 7, 0, -1, 0});
  // window [1, 0.5]: frames [1, 1], [3, 2]
  expectValues(run(stft(true, true), {s})[0], {1, 2, 2, 2}, {2, 0, 0, 0, 5, 0, 1, 0});
  std::string e = importError(stft(false, false));
  EXPECT_NE(e.find("STFT 'stft': frame_step input must be constant (graph input 'step'"),
            std::string::npos)
      << e;
  { // window length differs from frame_length
    Builder b(17);
    b.input("s", onnx::TensorProto::FLOAT, {1, 5, 1});
    b.initI64("step", {2});
    b.initI64("len", {3});
    b.initF32("w", {2}, {1, 1});
    b.node("STFT", {"s", "step", "w", "len"}, {"y"}, "stft");
    b.output("y");
    e = importError(b);
    EXPECT_NE(e.find("STFT 'stft': window length 2 differs from frame_length 3"),
              std::string::npos)
        << e;
  }
}

TEST_F(ImportLossSignal, DftRefusals) {
  auto one = [&](std::vector<int64_t> shape, int64_t axis, int64_t inverse = 0) {
    Builder b(17);
    b.input("x", onnx::TensorProto::FLOAT, shape);
    auto *n = b.node("DFT", {"x"}, {"y"}, "dft");
    attrInt(n, "axis", axis);
    attrInt(n, "inverse", inverse);
    b.output("y");
    return importError(b);
  };
  std::string e = one({1, 4, 1}, 2);
  EXPECT_NE(e.find("DFT 'dft': axis 2 must lie in [-3, -2] or [0, 1]"), std::string::npos) << e;
  e = one({1, 4, 3}, 1);
  EXPECT_NE(e.find("DFT 'dft': input 1x4x3 must be [..., 1] (real) or [..., 2] (complex)"),
            std::string::npos)
      << e;
  e = one({1, 4, 1}, 1, 2);
  EXPECT_NE(e.find("DFT 'dft': inverse and onesided must be 0 or 1"), std::string::npos) << e;
  { // a non-constant dft_length
    Builder b(17);
    b.input("x", onnx::TensorProto::FLOAT, {1, 4, 1});
    b.input("len", onnx::TensorProto::INT64, {});
    b.node("DFT", {"x", "len"}, {"y"}, "dft");
    b.output("y");
    e = importError(b);
    EXPECT_NE(e.find("DFT 'dft': dft_length input must be constant"), std::string::npos) << e;
  }
}

} // namespace
