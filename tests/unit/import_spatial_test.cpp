// import_spatial_test.cpp — ConvTranspose, Col2Im, GridSample, AffineGrid, Upsample, RoiAlign and
// MaxUnpool, imported by decomposition into existing tg ops (issue 25): small models run through
// the interpreter against a direct loop reference (ConvTranspose), hand-checked values and the ONNX
// reference's (GridSample, every mode and padding mode), and bad attributes refused with the node
// named.
#include "compiler/dialect/TgDialect.h"
#include "compiler/interp/Interpreter.h"
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/onnx.pb.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "tests/unit/OnnxModelBuilder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace tgc;

namespace {

using Builder = test::OnnxModel;
using test::attrInt;
using test::attrInts;
using test::attrString;

mlir::func::FuncOp mainOf(mlir::ModuleOp m) { return m.lookupSymbol<mlir::func::FuncOp>("main"); }

int countOps(mlir::ModuleOp m, llvm::StringRef name) {
  int n = 0;
  mainOf(m).walk([&](mlir::Operation *op) { n += op->getName().getStringRef() == name; });
  return n;
}

HostTensor f32(std::vector<int64_t> shape, const std::vector<float> &vals) {
  HostTensor t = HostTensor::zeros(DType::F32, shape);
  for (size_t i = 0; i < vals.size(); ++i)
    t.as<float>()[i] = vals[i];
  return t;
}

/// Deterministic, non-symmetric values in [-1, 1).
std::vector<float> ramp(int64_t n, int seed) {
  std::vector<float> v((size_t)n);
  for (int64_t i = 0; i < n; ++i)
    v[(size_t)i] = (float)(((i * 7 + seed * 13) % 23) - 11) / 11.0f;
  return v;
}

int64_t numel(const std::vector<int64_t> &s) {
  int64_t p = 1;
  for (int64_t d : s)
    p *= d;
  return p;
}

/// Direct transposed convolution: y[n, g*Mg+m, o] = b + Σ x[n, g*Cg+c, i] w[g*Cg+c, m, k] over
/// o + begin = i * stride + k * dilation (any spatial rank).
std::vector<float> convTransposeRef(const std::vector<float> &x, const std::vector<int64_t> &xs,
                                    const std::vector<float> &w, const std::vector<int64_t> &ws,
                                    const std::vector<float> &b, const std::vector<int64_t> &st,
                                    const std::vector<int64_t> &dil,
                                    const std::vector<int64_t> &begin, int64_t group,
                                    const std::vector<int64_t> &ys) {
  const size_t sp = xs.size() - 2;
  const int64_t cg = xs[1] / group, mg = ws[1];
  std::vector<float> y((size_t)numel(ys), 0.0f);
  std::vector<int64_t> xsp(xs.begin() + 2, xs.end()), ksp(ws.begin() + 2, ws.end()),
      ysp(ys.begin() + 2, ys.end());
  auto strides = [](const std::vector<int64_t> &s) {
    std::vector<int64_t> r(s.size(), 1);
    for (int64_t i = (int64_t)s.size() - 2; i >= 0; --i)
      r[i] = r[i + 1] * s[i + 1];
    return r;
  };
  const auto xst = strides(xsp), kst = strides(ksp), yst = strides(ysp);
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t ci = 0; ci < xs[1]; ++ci)
      for (int64_t m = 0; m < mg; ++m) {
        const int64_t g = ci / cg, co = g * mg + m;
        for (int64_t xi = 0; xi < numel(xsp); ++xi)
          for (int64_t ki = 0; ki < numel(ksp); ++ki) {
            int64_t yi = 0;
            bool in = true;
            for (size_t d = 0; d < sp; ++d) {
              const int64_t i = xi / xst[d] % xsp[d], k = ki / kst[d] % ksp[d];
              const int64_t o = i * st[d] + k * dil[d] - begin[d];
              in = in && o >= 0 && o < ysp[d];
              yi += o * yst[d];
            }
            if (!in)
              continue;
            y[(size_t)((n * ys[1] + co) * numel(ysp) + yi)] +=
                x[(size_t)((n * xs[1] + ci) * numel(xsp) + xi)] *
                w[(size_t)((ci * mg + m) * numel(ksp) + ki)];
          }
      }
  if (!b.empty())
    for (int64_t n = 0; n < ys[0]; ++n)
      for (int64_t c = 0; c < ys[1]; ++c)
        for (int64_t i = 0; i < numel(ysp); ++i)
          y[(size_t)((n * ys[1] + c) * numel(ysp) + i)] += b[(size_t)c];
  return y;
}

class ImportSpatial : public ::testing::Test {
protected:
  ImportSpatial() { ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>(); }
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> import(const Builder &b) {
    return importOnnxBytes(ctx, b.bytes(), "", {});
  }
  std::string importError(const Builder &b) {
    auto m = import(b);
    return m ? "" : llvm::toString(m.takeError());
  }
  mlir::MLIRContext ctx;
};

struct CtCase {
  const char *what;
  std::vector<int64_t> xs, ws;
  int64_t group;
  std::function<void(onnx::NodeProto *)> attrs;
  std::vector<int64_t> st, dil, begin, ys; // for the reference
  bool bias;
};

} // namespace

// Strided, grouped, dilated ConvTranspose with output_padding, a pad larger than the kernel's
// reach (cropped), SAME_UPPER/SAME_LOWER, output_shape, 1-D and 3-D: against the direct loop.
TEST_F(ImportSpatial, ConvTransposeMatchesLoopReference) {
  const CtCase cases[] = {
      {"2-D groups, strides, dilations, output_padding, crop",
       {1, 4, 3, 2},
       {4, 3, 2, 3},
       2,
       [](onnx::NodeProto *n) {
         attrInt(n, "group", 2);
         attrInts(n, "strides", {2, 3});
         attrInts(n, "dilations", {1, 2});
         attrInts(n, "pads", {2, 0, 0, 2});
         attrInts(n, "output_padding", {1, 2});
       },
       {2, 3},
       {1, 2},
       {2, 0},
       // H: 2*2 + 1 + 2 - 2 = 5; W: 3*1 + 2 + 5 - 2 = 8
       {1, 6, 5, 8},
       true},
      {"1-D SAME_UPPER stride 2 (odd total: the extra pad at the end)",
       {2, 1, 4},
       {1, 2, 4},
       1,
       [](onnx::NodeProto *n) {
         attrString(n, "auto_pad", "SAME_UPPER");
         attrInts(n, "strides", {2});
       },
       {2},
       {1},
       {1}, // total = 2*3 + 4 - 8 = 2 -> begin 1
       {2, 2, 8},
       false},
      {"1-D SAME_LOWER stride 3, kernel 2 (negative total: zeros at the begin)",
       {1, 2, 3},
       {2, 1, 2},
       1,
       [](onnx::NodeProto *n) {
         attrString(n, "auto_pad", "SAME_LOWER");
         attrInts(n, "strides", {3});
       },
       {3},
       {1},
       {0}, // total = 3*2 + 2 - 9 = -1 -> begin -1 - floor(-1/2) = 0, end -1
       {1, 1, 9},
       true},
      {"2-D output_shape (pads generated, more at the begin)",
       {1, 1, 3, 3},
       {1, 2, 3, 3},
       1,
       [](onnx::NodeProto *n) {
         attrInts(n, "strides", {2, 2});
         attrInts(n, "output_shape", {5, 6});
       },
       {2, 2},
       {1, 1},
       {1, 1}, // full 7 x 7: totals 2 and 1 -> begin total - total / 2 = 1, 1 (spec, NOTSET)
       {1, 2, 5, 6},
       false},
      {"3-D strides 2, 1, 2",
       {1, 2, 2, 3, 2},
       {2, 1, 2, 2, 3},
       1,
       [](onnx::NodeProto *n) {
         attrInts(n, "strides", {2, 1, 2});
       },
       {2, 1, 2},
       {1, 1, 1},
       {0, 0, 0},
       {1, 1, 4, 4, 5},
       false},
  };
  // A weight fed at run time keeps the zero-insertion form; a constant one takes the stride
  // phases (ConvTransposePhases.cpp) wherever no strided dim is dilated (all but the first case).
  for (const CtCase &k : cases)
    for (bool constWeight : {false, true}) {
      SCOPED_TRACE(std::string(k.what) + (constWeight ? ", constant weight" : ""));
      const auto xv = ramp(numel(k.xs), 1), wv = ramp(numel(k.ws), 2), bv = ramp(k.ys[1], 3);
      Builder b(17);
      b.input("x", onnx::TensorProto::FLOAT, k.xs);
      if (constWeight)
        b.initF32("w", k.ws, wv);
      else
        b.input("w", onnx::TensorProto::FLOAT, k.ws);
      std::vector<std::string> ins{"x", "w"};
      if (k.bias) {
        b.input("b", onnx::TensorProto::FLOAT, {k.ys[1]});
        ins.push_back("b");
      }
      k.attrs(b.node("ConvTranspose", ins, {"y"}, "ct"));
      b.output("y");
      auto m = import(b);
      ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
      EXPECT_EQ(countOps(**m, "tg.conv"), 1);
      std::vector<HostTensor> inputs{f32(k.xs, xv)};
      if (!constWeight)
        inputs.push_back(f32(k.ws, wv));
      if (k.bias)
        inputs.push_back(f32({k.ys[1]}, bv));
      auto got = interpret(mainOf(**m), inputs);
      ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
      ASSERT_EQ((*got)[0].shape, k.ys);
      const auto want = convTransposeRef(xv, k.xs, wv, k.ws, k.bias ? bv : std::vector<float>{},
                                         k.st, k.dil, k.begin, k.group, k.ys);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR((*got)[0].as<float>()[i], want[i], 1e-5) << i;
    }
}

// A hand-checked case: x = [1, 2] (1-D), w = [1, 10], stride 2 -> [1, 10, 2, 20], + bias 0.5;
// output_padding 1 adds a bias-only element at the end.
TEST_F(ImportSpatial, ConvTransposeByHand) {
  Builder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 1, 2});
  b.initF32("w", {1, 1, 2}, {1, 10});
  b.initF32("b", {1}, {0.5f});
  auto *n = b.node("ConvTranspose", {"x", "w", "b"}, {"y"}, "ct");
  attrInts(n, "strides", {2});
  attrInts(n, "output_padding", {1});
  b.output("y");
  auto m = import(b);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  auto got = interpret(mainOf(**m), {f32({1, 1, 2}, {1, 2})});
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  ASSERT_EQ((*got)[0].shape, (std::vector<int64_t>{1, 1, 5}));
  const float want[] = {1.5f, 10.5f, 2.5f, 20.5f, 0.5f};
  for (int i = 0; i < 5; ++i)
    EXPECT_FLOAT_EQ((*got)[0].as<float>()[i], want[i]) << i;
}

TEST_F(ImportSpatial, ConvTransposeRefusals) {
  auto one = [&](const std::vector<int64_t> &xs, const std::vector<int64_t> &ws,
                 const std::function<void(onnx::NodeProto *)> &attrs) {
    Builder b(17);
    b.input("x", onnx::TensorProto::FLOAT, xs);
    b.input("w", onnx::TensorProto::FLOAT, ws);
    attrs(b.node("ConvTranspose", {"x", "w"}, {"y"}, "ct"));
    b.output("y");
    return importError(b);
  };
  auto none = [](onnx::NodeProto *) {};
  struct Case {
    std::vector<int64_t> xs, ws;
    std::function<void(onnx::NodeProto *)> attrs;
    std::string want;
  } cases[] = {
      {{1, 1, 4, 4},
       {1, 1, 3, 3},
       [](onnx::NodeProto *n) { attrString(n, "auto_pad", "SAME"); },
       "auto_pad 'SAME' is not supported"},
      {{1, 4}, {4, 1}, none, "must have the same rank, 3 to 5"},
      {{1, 1, 4, 4}, {1, 1, 3}, none, "must have the same rank, 3 to 5"},
      {{1, 3, 4, 4},
       {2, 1, 3, 3},
       none,
       "input channels 3 do not match weight 2x1x3x3 (C x M/group x k...) with group 1"},
      {{1, 4, 4, 4},
       {4, 1, 3, 3},
       [](onnx::NodeProto *n) { attrInt(n, "group", 3); },
       "with group 3"},
      {{1, 1, 4, 4},
       {1, 1, 3, 3},
       [](onnx::NodeProto *n) {
         attrInts(n, "strides", {0, 1});
       },
       "must be positive"},
      {{1, 1, 4, 4},
       {1, 1, 3, 3},
       [](onnx::NodeProto *n) { attrInts(n, "output_padding", {1}); },
       "need one entry per spatial dim"},
      {{1, 1, 4, 4},
       {1, 1, 3, 3},
       [](onnx::NodeProto *n) {
         attrInts(n, "kernel_shape", {2, 2});
       },
       "kernel_shape 2x2 differs from the weight's spatial dims 3x3"},
      {{1, 1, 2, 2},
       {1, 1, 1, 1},
       [](onnx::NodeProto *n) {
         attrInts(n, "pads", {1, 1, 1, 1});
       },
       "leave no output along spatial dim 0"},
  };
  for (auto &k : cases) {
    std::string e = one(k.xs, k.ws, k.attrs);
    EXPECT_NE(e.find("ConvTranspose 'ct': "), std::string::npos) << e;
    EXPECT_NE(e.find(k.want), std::string::npos) << k.want << " | " << e;
  }
}

// X = [[1, 2, 3], [4, 5, 6]]; five grid points, every mode x align_corners x padding mode. The
// linear align_corners=1 rows are by hand: (0, 0) -> x 1, y 0.5 -> (2 + 5) / 2; (-1.5, -1) ->
// x -0.5: zeros 0.5 * 1, border 1, reflected to 0.5 -> 1.5; (1.5, 2) -> x 2.5, y 1.5: zeros
// 0.25 * 6, border 6, reflected to (1.5, 0.5) -> (2 + 3 + 5 + 6) / 4. The rest are the ONNX
// reference's values (onnx.reference, opset 20).
TEST_F(ImportSpatial, GridSampleModesAndPadding) {
  struct Case {
    const char *mode;
    int ac;
    const char *pad;
    std::vector<float> want;
  } cases[] = {
      {"linear", 0, "zeros", {3.5f, 0, 0, 1.38f, 0}},
      {"linear", 0, "border", {3.5f, 1, 6, 2.3f, 5.4f}},
      {"linear", 0, "reflection", {3.5f, 1.25f, 4.25f, 2.3f, 4.4f}},
      {"linear", 1, "zeros", {3.5f, 0.5f, 1.5f, 2.35f, 0}},
      {"linear", 1, "border", {3.5f, 1, 6, 2.35f, 4.95f}},
      {"linear", 1, "reflection", {3.5f, 1.5f, 4, 2.35f, 3.95f}},
      {"nearest", 0, "zeros", {2, 0, 0, 2, 0}},
      {"nearest", 0, "border", {2, 1, 6, 2, 6}},
      {"nearest", 0, "reflection", {2, 1, 6, 2, 5}},
      {"nearest", 1, "zeros", {2, 1, 0, 2, 0}},
      {"nearest", 1, "border", {2, 1, 6, 2, 6}},
      {"nearest", 1, "reflection", {2, 1, 3, 2, 5}},
      {"cubic", 0, "zeros", {4.15625f, -0.02307129f, 0.05932617f, 1.209663f, 0}},
      {"cubic", 0, "border", {3.5f, 0.71875f, 6, 2.06525f, 5.472f}},
      {"cubic", 0, "reflection", {3.5f, 0.6289062f, 4.308594f, 1.84925f, 4.472f}},
      {"cubic", 1, "zeros", {4.15625f, 0.40625f, 1.6875f, 2.553745f, 0}},
      {"cubic", 1, "border", {3.5f, 1, 6, 2.389938f, 5.001187f}},
      {"cubic", 1, "reflection", {3.5f, 1.3125f, 4.1875f, 2.31775f, 4.15475f}},
  };
  const std::vector<float> grid{0, 0, -1.5f, -1, 1.5f, 2, 0.2f, -0.9f, 4, 0.3f};
  for (auto &k : cases) {
    for (int opset : {16, 20}) {
      SCOPED_TRACE(std::string(k.mode) + " align_corners=" + std::to_string(k.ac) + " " + k.pad +
                   " opset " + std::to_string(opset));
      Builder b(opset);
      b.input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 3});
      b.input("g", onnx::TensorProto::FLOAT, {1, 1, 5, 2});
      auto *n = b.node("GridSample", {"x", "g"}, {"y"}, "gs");
      std::string mode = k.mode;
      if (opset < 20 && mode != "nearest")
        mode = mode == "linear" ? "bilinear" : "bicubic";
      attrString(n, "mode", mode);
      attrString(n, "padding_mode", k.pad);
      attrInt(n, "align_corners", k.ac);
      b.output("y");
      auto m = import(b);
      ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
      EXPECT_EQ(countOps(**m, "tg.gather_elements"), 1);
      auto got =
          interpret(mainOf(**m), {f32({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6}), f32({1, 1, 5, 2}, grid)});
      ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
      ASSERT_EQ((*got)[0].shape, (std::vector<int64_t>{1, 1, 1, 5}));
      for (int i = 0; i < 5; ++i)
        EXPECT_NEAR((*got)[0].as<float>()[i], k.want[(size_t)i], 2e-5) << i;
    }
  }
}

TEST_F(ImportSpatial, GridSampleRefusals) {
  auto one = [&](int opset, const std::vector<int64_t> &xs, const std::vector<int64_t> &gs,
                 const std::function<void(onnx::NodeProto *)> &attrs) {
    Builder b(opset);
    b.input("x", onnx::TensorProto::FLOAT, xs);
    b.input("g", onnx::TensorProto::FLOAT, gs);
    attrs(b.node("GridSample", {"x", "g"}, {"y"}, "gs"));
    b.output("y");
    return importError(b);
  };
  auto none = [](onnx::NodeProto *) {};
  struct Case {
    int opset;
    std::vector<int64_t> xs, gs;
    std::function<void(onnx::NodeProto *)> attrs;
    std::string want;
  } cases[] = {
      {20,
       {1, 1, 4, 4},
       {1, 2, 2, 2},
       [](onnx::NodeProto *n) { attrString(n, "mode", "area"); },
       "mode 'area' is not supported"},
      {20,
       {1, 1, 4, 4},
       {1, 2, 2, 2},
       [](onnx::NodeProto *n) { attrString(n, "padding_mode", "wrap"); },
       "padding_mode 'wrap' is not supported"},
      {16, {1, 1, 2, 4, 4}, {1, 2, 2, 2, 3}, none, "must be 4-D (N, C, H, W) before opset 20"},
      {20, {1, 1, 4, 4}, {1, 2, 2, 3}, none, "grid 1x2x2x3 must be [N, spatial..., 2]"},
      {20, {1, 1, 4, 4}, {2, 2, 2, 2}, none, "grid 2x2x2x2 must be [N, spatial..., 2]"},
      {20, {1, 4}, {1, 2}, none, "must have rank 3 to 5"},
  };
  for (auto &k : cases) {
    std::string e = one(k.opset, k.xs, k.gs, k.attrs);
    EXPECT_NE(e.find("GridSample 'gs': "), std::string::npos) << e;
    EXPECT_NE(e.find(k.want), std::string::npos) << k.want << " | " << e;
  }
}

// theta = [[1, 0, 0.5], [0, 2, 0]] on a 2 x 3 grid: x' = x + 0.5, y' = 2y, with the base
// coordinates x in {-1, 0, 1} and y in {-1, 1} (align_corners) or {-2/3, 0, 2/3}, {-1/2, 1/2}.
TEST_F(ImportSpatial, AffineGrid2D) {
  for (int ac : {0, 1}) {
    Builder b(20);
    b.input("theta", onnx::TensorProto::FLOAT, {1, 2, 3});
    b.initI64("size", {1, 1, 2, 3});
    attrInt(b.node("AffineGrid", {"theta", "size"}, {"grid"}, "ag"), "align_corners", ac);
    b.output("grid");
    auto m = import(b);
    ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
    auto got = interpret(mainOf(**m), {f32({1, 2, 3}, {1, 0, 0.5f, 0, 2, 0})});
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    ASSERT_EQ((*got)[0].shape, (std::vector<int64_t>{1, 2, 3, 2}));
    const std::vector<float> xs =
        ac ? std::vector<float>{-1, 0, 1} : std::vector<float>{-2.0f / 3, 0, 2.0f / 3};
    const std::vector<float> ys = ac ? std::vector<float>{-1, 1} : std::vector<float>{-0.5f, 0.5f};
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 3; ++w) {
        EXPECT_NEAR((*got)[0].as<float>()[(h * 3 + w) * 2], xs[w] + 0.5f, 1e-6) << h << w;
        EXPECT_NEAR((*got)[0].as<float>()[(h * 3 + w) * 2 + 1], 2 * ys[h], 1e-6) << h << w;
      }
  }
}

// 3-D: theta [1, 3, 4] = identity with a z shift; size [1, 1, 2, 1, 2] (D, H, W), align_corners.
TEST_F(ImportSpatial, AffineGrid3DAndRefusals) {
  {
    Builder b(20);
    b.input("theta", onnx::TensorProto::FLOAT, {1, 3, 4});
    b.initI64("size", {1, 1, 2, 1, 2});
    attrInt(b.node("AffineGrid", {"theta", "size"}, {"grid"}, "ag"), "align_corners", 1);
    b.output("grid");
    auto m = import(b);
    ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
    auto got = interpret(mainOf(**m), {f32({1, 3, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0.25f})});
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    ASSERT_EQ((*got)[0].shape, (std::vector<int64_t>{1, 2, 1, 2, 3}));
    // (d, w) -> (x, y, z) = (w ? 1 : -1, -1 (H = 1), (d ? 1 : -1) + 0.25)
    const float want[] = {-1, -1, -0.75f, 1, -1, -0.75f, -1, -1, 1.25f, 1, -1, 1.25f};
    for (int i = 0; i < 12; ++i)
      EXPECT_NEAR((*got)[0].as<float>()[i], want[i], 1e-6) << i;
  }
  auto one = [&](const std::vector<int64_t> &ts, const std::vector<int64_t> &size, bool constSize) {
    Builder b(20);
    b.input("theta", onnx::TensorProto::FLOAT, ts);
    if (constSize)
      b.initI64("size", size);
    else
      b.input("size", onnx::TensorProto::INT64, {(int64_t)size.size()});
    b.node("AffineGrid", {"theta", "size"}, {"grid"}, "ag");
    b.output("grid");
    return importError(b);
  };
  std::string e = one({1, 2, 3}, {1, 1, 4, 4}, false);
  EXPECT_NE(e.find("AffineGrid 'ag': size input must be constant"), std::string::npos) << e;
  e = one({1, 3, 4}, {1, 1, 4, 4}, true);
  EXPECT_NE(e.find("AffineGrid 'ag': theta 1x3x4 must be [N, 2, 3] for size 1x1x4x4"),
            std::string::npos)
      << e;
  e = one({1, 2, 3}, {1, 1, 4}, true);
  EXPECT_NE(e.find("AffineGrid 'ag': size must hold 4"), std::string::npos) << e;
  e = one({1, 2, 3}, {1, 1, 0, 4}, true);
  EXPECT_NE(e.find("AffineGrid 'ag': size 1x1x0x4 must be positive"), std::string::npos) << e;
}

// Col2Im of all-ones columns: each pixel is the number of 2x2 blocks covering it in a 3x3 image.
TEST_F(ImportSpatial, Col2ImCountsOverlapsAndRefuses) {
  auto build = [&](const std::vector<int64_t> &xs, const std::vector<int64_t> &image) {
    Builder b(18);
    b.input("x", onnx::TensorProto::FLOAT, xs);
    b.initI64("image", image);
    b.initI64("block", {2, 2});
    b.node("Col2Im", {"x", "image", "block"}, {"y"}, "c2i");
    b.output("y");
    return b;
  };
  auto m = import(build({1, 4, 4}, {3, 3}));
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  auto got = interpret(mainOf(**m), {f32({1, 4, 4}, std::vector<float>(16, 1.0f))});
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  ASSERT_EQ((*got)[0].shape, (std::vector<int64_t>{1, 1, 3, 3}));
  const float want[] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
  for (int i = 0; i < 9; ++i)
    EXPECT_FLOAT_EQ((*got)[0].as<float>()[i], want[i]) << i;
  std::string e = importError(build({1, 4, 5}, {3, 3}));
  EXPECT_NE(e.find("Col2Im 'c2i': input 1x4x5 must be [N, C * 4, 4]"), std::string::npos) << e;
  e = importError(build({1, 4, 4}, {1, 3}));
  EXPECT_NE(e.find("Col2Im 'c2i': block 2x2 is larger than the padded image 1x3"),
            std::string::npos)
      << e;
}

// Upsample (opset 7, scales attribute): nearest repeats each element scale times.
TEST_F(ImportSpatial, UpsampleNearestRepeatsAndRefuses) {
  auto build = [&](const std::string &mode) {
    Builder b(7);
    b.input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 2});
    auto *n = b.node("Upsample", {"x"}, {"y"}, "up");
    auto *a = n->add_attribute();
    a->set_name("scales");
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float v : {1.0f, 1.0f, 2.0f, 3.0f})
      a->add_floats(v);
    attrString(n, "mode", mode);
    b.output("y");
    return b;
  };
  auto m = import(build("nearest"));
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  auto got = interpret(mainOf(**m), {f32({1, 1, 2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  ASSERT_EQ((*got)[0].shape, (std::vector<int64_t>{1, 1, 4, 6}));
  for (int h = 0; h < 4; ++h)
    for (int w = 0; w < 6; ++w)
      EXPECT_FLOAT_EQ((*got)[0].as<float>()[h * 6 + w], (float)(1 + (h / 2) * 2 + w / 3)) << h << w;
  std::string e = importError(build("cubic"));
  EXPECT_NE(e.find("Upsample 'up': mode 'cubic' is not supported"), std::string::npos) << e;
}

// RoiAlign over X = x + 4y (bilinear sampling of a linear function is exact): the average of
// the 2x2 samples of one 1x1 bin is the value at their mean position. roi (0, 0, 3, 3):
// output_half_pixel samples at 0.75, 2.25 -> (1.5, 1.5) -> 7.5; half_pixel shifts by -0.5 ->
// samples 0.25, 1.75 -> (1, 1) -> 5.
TEST_F(ImportSpatial, RoiAlignByHandAndRefusals) {
  auto build = [&](const std::string &ctm, int64_t ratio) {
    Builder b(16);
    b.input("x", onnx::TensorProto::FLOAT, {1, 1, 4, 4});
    b.initF32("rois", {1, 4}, {0, 0, 3, 3});
    b.initI64("bi", {0});
    auto *n = b.node("RoiAlign", {"x", "rois", "bi"}, {"y"}, "ra");
    attrString(n, "coordinate_transformation_mode", ctm);
    attrInt(n, "output_height", 1);
    attrInt(n, "output_width", 1);
    attrInt(n, "sampling_ratio", ratio);
    b.output("y");
    return b;
  };
  std::vector<float> xv(16);
  for (int i = 0; i < 16; ++i)
    xv[i] = (float)i;
  for (auto [ctm, want] : {std::pair<const char *, float>{"output_half_pixel", 7.5f},
                           std::pair<const char *, float>{"half_pixel", 5.0f}}) {
    auto m = import(build(ctm, 2));
    ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
    auto got = interpret(mainOf(**m), {f32({1, 1, 4, 4}, xv)});
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    ASSERT_EQ((*got)[0].shape, (std::vector<int64_t>{1, 1, 1, 1}));
    EXPECT_NEAR((*got)[0].as<float>()[0], want, 1e-5) << ctm;
  }
  std::string e = importError(build("half_pixel", 0));
  EXPECT_NE(e.find("RoiAlign 'ra': sampling_ratio 0 is not supported"), std::string::npos) << e;
  e = importError(build("tf_crop", 2));
  EXPECT_NE(e.find("RoiAlign 'ra': coordinate_transformation_mode 'tf_crop' is not supported"),
            std::string::npos)
      << e;
}

// MaxUnpool: X scattered to flat indices of the 4x4 unpooled shape, padded at the end to a given
// 5x5 output_shape (as the ONNX reference); an index outside writes nothing.
TEST_F(ImportSpatial, MaxUnpoolScattersAndRefuses) {
  auto build = [&](const std::vector<int64_t> &outShape, const std::vector<int64_t> &kernel) {
    Builder b(11);
    b.input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 2});
    b.input("i", onnx::TensorProto::INT64, {1, 1, 2, 2});
    std::vector<std::string> ins{"x", "i"};
    if (!outShape.empty()) {
      b.initI64("os", outShape);
      ins.push_back("os");
    }
    auto *n = b.node("MaxUnpool", ins, {"y"}, "mu");
    attrInts(n, "kernel_shape", kernel);
    attrInts(n, "strides", {2, 2});
    b.output("y");
    return b;
  };
  auto m = import(build({1, 1, 5, 5}, {2, 2}));
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  HostTensor idx = HostTensor::zeros(DType::I64, {1, 1, 2, 2});
  const int64_t iv[] = {5, 7, 13, 99}; // 99: outside the 16 elements
  for (int k = 0; k < 4; ++k)
    idx.as<int64_t>()[k] = iv[k];
  auto got = interpret(mainOf(**m), {f32({1, 1, 2, 2}, {5, 6, 7, 8}), idx});
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  ASSERT_EQ((*got)[0].shape, (std::vector<int64_t>{1, 1, 5, 5}));
  std::vector<float> want(25, 0.0f);
  want[1 * 5 + 1] = 5, want[1 * 5 + 3] = 6, want[3 * 5 + 1] = 7;
  for (int k = 0; k < 25; ++k)
    EXPECT_FLOAT_EQ((*got)[0].as<float>()[k], want[(size_t)k]) << k;
  std::string e = importError(build({1, 1, 3, 3}, {2, 2}));
  EXPECT_NE(e.find("MaxUnpool 'mu': output_shape 1x1x3x3 is smaller than the unpooled shape "
                   "1x1x4x4"),
            std::string::npos)
      << e;
  e = importError(build({}, {2}));
  EXPECT_NE(e.find("MaxUnpool 'mu': kernel_shape and strides need one entry per spatial dim"),
            std::string::npos)
      << e;
}
