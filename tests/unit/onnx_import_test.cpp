// onnx_import_test.cpp — the ONNX frontend: real models import, verify and match their reference
// outputs through the interpreter; small hand-built models check folding, op mappings and every
// class of bad input (unsupported ops, undefined names, cycles, bad tensors, external data).
#include "compiler/dialect/TgDialect.h"
#include "compiler/interp/Interpreter.h"
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/TensorIO.h"
#include "frontends/onnx/onnx.pb.h"
#include "tests/unit/OnnxModelBuilder.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace tgc;

namespace {

std::string modelsDir() {
  const char *d = std::getenv("TGC_MODELS_DIR");
  return d && *d ? d : "tests/data/models"; // runfiles path of //tests/data:models
}

bool exists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

mlir::func::FuncOp mainOf(mlir::ModuleOp m) { return m.lookupSymbol<mlir::func::FuncOp>("main"); }

/// Ops in @main that are not tg.constant (nor the terminator).
int countCompute(mlir::ModuleOp m) {
  int n = 0;
  mainOf(m).walk([&](mlir::Operation *op) {
    if (!mlir::isa<tgc::tg::ConstantOp, mlir::func::ReturnOp, mlir::func::FuncOp>(op))
      ++n;
  });
  return n;
}

int countOps(mlir::ModuleOp m, llvm::StringRef name) {
  int n = 0;
  mainOf(m).walk([&](mlir::Operation *op) { n += op->getName().getStringRef() == name; });
  return n;
}

// --- ModelProto construction helpers ---

using Builder = test::OnnxModel;
using test::attrFloat;
using test::attrInt;
using test::attrInts;
using test::attrString;

class OnnxImport : public ::testing::Test {
protected:
  OnnxImport() { ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>(); }
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  import(const Builder &b, const std::string &dir = "", ImportOptions opts = {}) {
    return importOnnxBytes(ctx, b.bytes(), dir, opts);
  }
  std::string importError(const Builder &b, const std::string &dir = "", ImportOptions opts = {}) {
    auto m = import(b, dir, opts);
    if (m)
      return "";
    return llvm::toString(m.takeError());
  }
  mlir::MLIRContext ctx;
};

HostTensor f32(std::vector<int64_t> shape, std::vector<float> vals, std::string name = "") {
  HostTensor t = HostTensor::zeros(DType::F32, shape, name);
  for (size_t i = 0; i < vals.size(); ++i)
    t.as<float>()[i] = vals[i];
  return t;
}

/// A temporary folder removed at scope exit (only files created in it by the test).
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/tgc_onnx_test_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  void write(const std::string &name, const std::string &data) {
    std::ofstream(path + "/" + name, std::ios::binary) << data;
  }
};

} // namespace

// --- Real models ---

class RealModel : public ::testing::TestWithParam<std::string> {};

/// Imports dir/model.onnx, checks it verifies and holds only tg ops, and compares @main run by
/// the interpreter on test_data_set_0 with the reference outputs (rel-L2 < 1e-5).
void checkModelDir(const std::string &dir, const std::string &label) {
  mlir::MLIRContext ctx;
  auto m = importOnnxFile(ctx, dir + "/model.onnx", {});
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  ASSERT_TRUE(mlir::succeeded(mlir::verify(**m)));
  mlir::ModuleOp module = **m;
  if (std::getenv("TGC_DUMP_IR"))
    module.print(llvm::errs(), mlir::OpPrintingFlags().elideLargeElementsAttrs(8));
  // Exporter shape arithmetic is gone: only tg ops, few of them.
  int compute = countCompute(module);
  std::cerr << label << ": " << compute << " compute ops\n";
  mainOf(module).walk([&](mlir::Operation *op) {
    if (!mlir::isa<mlir::func::FuncOp, mlir::func::ReturnOp>(op))
      EXPECT_EQ(op->getDialect()->getNamespace(), "tg") << op->getName().getStringRef().str();
  });
  EXPECT_LT(compute, 200);

  std::vector<HostTensor> inputs, want;
  for (int k = 0;; ++k) {
    std::string p = dir + "/test_data_set_0/input_" + std::to_string(k) + ".pb";
    if (!exists(p))
      break;
    auto t = readTensorProtoFile(p);
    ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
    inputs.push_back(std::move(*t));
  }
  for (int k = 0;; ++k) {
    std::string p = dir + "/test_data_set_0/output_" + std::to_string(k) + ".pb";
    if (!exists(p))
      break;
    auto t = readTensorProtoFile(p);
    ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
    want.push_back(std::move(*t));
  }
  ASSERT_FALSE(want.empty());
  auto got = interpret(mainOf(module), inputs);
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  ASSERT_EQ(got->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ((*got)[i].shape, want[i].shape) << label << " output " << i;
    EXPECT_EQ((*got)[i].dtype, want[i].dtype) << label << " output " << i;
    double err = relativeL2((*got)[i], want[i]);
    std::cerr << label << " output " << i << ": rel-L2 " << err << "\n";
    EXPECT_LT(err, 1e-5) << label << " output " << i;
  }
}

TEST_P(RealModel, ImportsVerifiesAndMatchesReference) {
  std::string dir = modelsDir() + "/" + GetParam();
  ASSERT_TRUE(exists(dir + "/model.onnx")) << "no model at " << dir;
  checkModelDir(dir, GetParam());
}

/// Every folder under $TGC_EXTRA_MODELS_DIR holding model.onnx + test_data_set_0 (e.g. single-op
/// models with onnxruntime reference outputs); skipped when unset.
TEST(ExtraModels, MatchReference) {
  const char *root = std::getenv("TGC_EXTRA_MODELS_DIR");
  if (!root || !*root)
    GTEST_SKIP() << "TGC_EXTRA_MODELS_DIR not set";
  std::error_code ec;
  int n = 0;
  for (llvm::sys::fs::directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec)) {
    if (!exists(it->path() + "/model.onnx"))
      continue;
    SCOPED_TRACE(it->path());
    checkModelDir(it->path(), llvm::sys::path::filename(it->path()).str());
    ++n;
  }
  EXPECT_GT(n, 0);
}

INSTANTIATE_TEST_SUITE_P(Models, RealModel,
                         ::testing::Values("bert_tiny", "bert_tiny_dynamo", "gpt2_tiny",
                                           "gpt2_tiny_dynamo", "llama_tiny", "llama_tiny_dynamo",
                                           "parallel_mlp", "parallel_mlp_dynamo", "vit_tiny",
                                           "vit_tiny_dynamo"));

// --- Folding and op mapping ---

TEST_F(OnnxImport, ShapeArithmeticFolds) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 3, 4});
  b.initI64("idx0", {0});
  b.initI64("minus1", {-1});
  b.node("Shape", {"x"}, {"s"}, "shape");
  attrInt(b.node("Gather", {"s", "idx0"}, {"d0"}, "gather"), "axis", 0);
  attrInt(b.node("Concat", {"d0", "minus1"}, {"target"}, "concat"), "axis", 0);
  b.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  b.node("ConstantOfShape", {"s"}, {"unused"}, "cos");
  b.node("Identity", {"y"}, {"z"}, "id");
  b.output("z");
  auto m = import(b);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(countCompute(**m), 1);
  EXPECT_EQ(countOps(**m, "tg.reshape"), 1);
  auto fn = mainOf(**m);
  auto ty = fn.getFunctionType().getResult(0).cast<mlir::RankedTensorType>();
  EXPECT_EQ(std::vector<int64_t>(ty.getShape().begin(), ty.getShape().end()),
            (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(fn.getArgAttrOfType<mlir::StringAttr>(0, "tg.name").getValue(), "x");
  EXPECT_EQ(fn.getResultAttrOfType<mlir::StringAttr>(0, "tg.name").getValue(), "z");
}

TEST_F(OnnxImport, GemmBecomesLinear) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.initF32("w", {4, 3}, std::vector<float>(12, 0.5f));
  b.initF32("bias", {4}, {1, 2, 3, 4});
  attrInt(b.node("Gemm", {"x", "w", "bias"}, {"y"}, "fc"), "transB", 1);
  b.output("y");
  auto m = import(b);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(countOps(**m, "tg.linear"), 1);
  EXPECT_EQ(countCompute(**m), 1);
  auto got = interpret(mainOf(**m), {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  EXPECT_FLOAT_EQ((*got)[0].as<float>()[0], 3 + 1);
  EXPECT_FLOAT_EQ((*got)[0].as<float>()[7], 7.5f + 4);
}

TEST_F(OnnxImport, GemmGeneralForm) {
  Builder b;
  b.input("a", onnx::TensorProto::FLOAT, {3, 2});
  b.input("bm", onnx::TensorProto::FLOAT, {3, 2});
  b.initF32("c", {1}, {1});
  auto *n = b.node("Gemm", {"a", "bm", "c"}, {"y"}, "g");
  attrInt(n, "transA", 1);
  attrFloat(n, "alpha", 2);
  attrFloat(n, "beta", 3);
  b.output("y");
  auto m = import(b);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  // a^T [2,3] · bm [3,2] → [2,2]
  auto got =
      interpret(mainOf(**m), {f32({3, 2}, {1, 0, 0, 1, 0, 0}), f32({3, 2}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  ASSERT_EQ((*got)[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_FLOAT_EQ((*got)[0].as<float>()[0], 2 * 1 + 3);
  EXPECT_FLOAT_EQ((*got)[0].as<float>()[3], 2 * 4 + 3);
}

TEST_F(OnnxImport, ActivationCompositions) {
  Builder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {5});
  attrFloat(b.node("LeakyRelu", {"x"}, {"lr"}, "lr"), "alpha", 0.1f);
  b.initF32("lo", {}, {-1});
  b.initF32("hi", {}, {1});
  b.node("Clip", {"x", "lo", "hi"}, {"cl"}, "clip");
  b.node("Softplus", {"x"}, {"sp"}, "sp");
  b.node("Elu", {"x"}, {"elu"}, "elu");
  b.node("HardSwish", {"x"}, {"hs"}, "hs");
  for (auto o : {"lr", "cl", "sp", "elu", "hs"})
    b.output(o);
  auto m = import(b);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  std::vector<float> xs{-3, -0.5f, 0, 0.5f, 3};
  auto got = interpret(mainOf(**m), {f32({5}, xs)});
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  for (int i = 0; i < 5; ++i) {
    float x = xs[i];
    EXPECT_NEAR((*got)[0].as<float>()[i], x < 0 ? 0.1f * x : x, 1e-6);
    EXPECT_NEAR((*got)[1].as<float>()[i], std::min(1.f, std::max(-1.f, x)), 1e-6);
    EXPECT_NEAR((*got)[2].as<float>()[i], std::log1p(std::exp(x)), 1e-6);
    EXPECT_NEAR((*got)[3].as<float>()[i], x < 0 ? std::expm1(x) : x, 1e-6);
    EXPECT_NEAR((*got)[4].as<float>()[i], x * std::min(1.f, std::max(0.f, x / 6 + 0.5f)), 1e-6);
  }
}

TEST_F(OnnxImport, SliceSplitUnsqueezeOpset13) {
  Builder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {4, 6});
  b.initI64("starts", {1, -1});
  b.initI64("ends", {INT64_MAX, -INT64_MAX});
  b.initI64("axes", {0, 1});
  b.initI64("steps", {2, -2});
  b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"}, "slice");
  b.initI64("split", {2, 4});
  attrInt(b.node("Split", {"x", "split"}, {"p", "q"}, "split"), "axis", 1);
  b.initI64("uax", {0, -1});
  b.node("Unsqueeze", {"q", "uax"}, {"u"}, "unsq");
  b.output("s");
  b.output("p");
  b.output("u");
  auto m = import(b);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  auto ty = [&](int i) {
    auto t = mainOf(**m).getFunctionType().getResult(i).cast<mlir::RankedTensorType>();
    return std::vector<int64_t>(t.getShape().begin(), t.getShape().end());
  };
  EXPECT_EQ(ty(0), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ty(1), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(ty(2), (std::vector<int64_t>{1, 4, 4, 1}));
  std::vector<float> xs(24);
  for (int i = 0; i < 24; ++i)
    xs[i] = (float)i;
  auto got = interpret(mainOf(**m), {f32({4, 6}, xs)});
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  // rows 1, 3; cols 5, 3, 1
  std::vector<float> want{11, 9, 7, 23, 21, 19};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ((*got)[0].as<float>()[i], want[i]);
}

TEST_F(OnnxImport, SymbolicDimsNeedInputShapes) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {}, {"batch", "seq"});
  b.node("Relu", {"x"}, {"y"}, "relu");
  b.output("y");
  std::string e = importError(b);
  EXPECT_NE(e.find("graph input 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("batch"), std::string::npos) << e;
  ImportOptions opts;
  opts.inputShapes["x"] = {2, 8};
  auto m = import(b, "", opts);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  opts.inputShapes["nope"] = {1};
  EXPECT_NE(importError(b, "", opts).find("'nope'"), std::string::npos);
}

// --- Bad input ---

TEST_F(OnnxImport, UnsupportedOpsAreAllListed) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.node("FancyOp", {"x"}, {"a"}, "first_bad");
  b.node("Relu", {"a"}, {"b"}, "fine");
  b.node("OtherFancyOp", {"b"}, {"c"}, "second_bad");
  b.output("c");
  std::string e = importError(b);
  EXPECT_NE(e.find("FancyOp (node 'first_bad')"), std::string::npos) << e;
  EXPECT_NE(e.find("OtherFancyOp (node 'second_bad')"), std::string::npos) << e;
  EXPECT_EQ(e.find("Relu"), std::string::npos) << e;
}

TEST_F(OnnxImport, MalformedBytesRefused) {
  auto m = importOnnxBytes(ctx, std::string("\xff\xff\xff\xff garbage", 12), "", {});
  ASSERT_FALSE(bool(m));
  EXPECT_NE(llvm::toString(m.takeError()).find("malformed"), std::string::npos);
}

TEST_F(OnnxImport, UndefinedInputRefused) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.node("Add", {"x", "ghost"}, {"y"}, "adder");
  b.output("y");
  std::string e = importError(b);
  EXPECT_NE(e.find("Add 'adder'"), std::string::npos) << e;
  EXPECT_NE(e.find("'ghost'"), std::string::npos) << e;
}

TEST_F(OnnxImport, DuplicateOutputRefused) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.node("Relu", {"x"}, {"y"}, "r1");
  b.node("Neg", {"x"}, {"y"}, "r2");
  b.output("y");
  std::string e = importError(b);
  EXPECT_NE(e.find("Neg 'r2'"), std::string::npos) << e;
  EXPECT_NE(e.find("already defined"), std::string::npos) << e;
}

TEST_F(OnnxImport, CycleRefused) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.node("Add", {"x", "c"}, {"a"}, "n1");
  b.node("Relu", {"a"}, {"c"}, "n2");
  b.output("c");
  std::string e = importError(b);
  EXPECT_NE(e.find("cycle"), std::string::npos) << e;
  EXPECT_NE(e.find("n1"), std::string::npos) << e;
}

TEST_F(OnnxImport, OutOfOrderNodesAreScheduled) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.node("Neg", {"a"}, {"y"}, "second");
  b.node("Relu", {"x"}, {"a"}, "first");
  b.output("y");
  auto m = import(b);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
}

TEST_F(OnnxImport, RawDataSizeMismatchRefused) {
  for (int delta : {-4, 4}) {
    Builder b;
    b.input("x", onnx::TensorProto::FLOAT, {3});
    auto *t = b.initF32("weights", {3}, {1, 2, 3});
    t->mutable_raw_data()->resize(12 + delta);
    b.node("Add", {"x", "weights"}, {"y"}, "add");
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("tensor 'weights'"), std::string::npos) << e;
    EXPECT_NE(e.find(delta < 0 ? "too short" : "too long"), std::string::npos) << e;
  }
}

TEST_F(OnnxImport, BadDimsAndTypesRefused) {
  {
    Builder b;
    b.input("x", onnx::TensorProto::FLOAT, {3});
    auto *t = b.initF32("neg", {3}, {1, 2, 3});
    t->set_dims(0, -3);
    b.node("Add", {"x", "neg"}, {"y"});
    b.output("y");
    EXPECT_NE(importError(b).find("negative dim"), std::string::npos);
  }
  {
    Builder b;
    b.input("x", onnx::TensorProto::FLOAT, {3});
    auto *t = b.initF32("huge", {3}, {1, 2, 3});
    t->set_dims(0, INT64_MAX / 2);
    t->add_dims(8);
    b.node("Add", {"x", "huge"}, {"y"});
    b.output("y");
    EXPECT_NE(importError(b).find("overflow"), std::string::npos) << importError(b);
  }
  {
    Builder b;
    b.input("s", onnx::TensorProto::STRING, {3});
    b.node("Identity", {"s"}, {"y"});
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("graph input 's'"), std::string::npos) << e;
    EXPECT_NE(e.find("STRING"), std::string::npos) << e;
  }
}

TEST_F(OnnxImport, ShapeMismatchNamesNode) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {3});
  b.input("z", onnx::TensorProto::FLOAT, {4});
  b.node("Add", {"x", "z"}, {"y"}, "bad_add");
  b.output("y");
  std::string e = importError(b);
  EXPECT_NE(e.find("Add 'bad_add'"), std::string::npos) << e;
  EXPECT_NE(e.find("broadcast"), std::string::npos) << e;
}

TEST_F(OnnxImport, NonConstantShapeInputRefused) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {6});
  b.input("shape", onnx::TensorProto::INT64, {2});
  b.node("Reshape", {"x", "shape"}, {"y"}, "node");
  b.output("y");
  std::string e = importError(b);
  EXPECT_NE(e.find("Reshape 'node': shape input must be constant"), std::string::npos) << e;
}

// Resize: bad attributes and inputs are refused with the node named.
TEST_F(OnnxImport, ResizeRefusals) {
  auto refusal = [&](const std::function<void(onnx::NodeProto *)> &attrs, bool sizesToo,
                     const std::string &scalesIn = "scales") {
    Builder b;
    b.input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 2});
    b.initF32("scales", {4}, {1, 1, 2, 2});
    b.initI64("sizes", {1, 1, 4, 4});
    b.initF32("roi", {0}, {});
    std::vector<std::string> ins = {"x", "roi", scalesIn};
    if (sizesToo)
      ins.push_back("sizes");
    attrs(b.node("Resize", ins, {"y"}, "rs"));
    b.output("y");
    return importError(b);
  };
  auto withString = [](const char *name, const char *value) {
    return [=](onnx::NodeProto *n) { test::attrString(n, name, value); };
  };
  std::string e = refusal([](onnx::NodeProto *) {}, false);
  EXPECT_EQ(e, "") << "a plain nearest upsample imports";
  e = refusal(withString("mode", "bilinear"), false);
  EXPECT_NE(e.find("Resize 'rs': mode 'bilinear' is not nearest, linear or cubic"), std::string::npos) << e;
  e = refusal(withString("coordinate_transformation_mode", "centered"), false);
  EXPECT_NE(e.find("Resize 'rs': coordinate_transformation_mode 'centered'"), std::string::npos) << e;
  e = refusal(withString("nearest_mode", "nearest"), false);
  EXPECT_NE(e.find("Resize 'rs': nearest_mode 'nearest'"), std::string::npos) << e;
  e = refusal([](onnx::NodeProto *n) { attrInt(n, "antialias", 1); }, false);
  EXPECT_NE(e.find("Resize 'rs': antialias=1 needs mode linear or cubic"), std::string::npos) << e;
  e = refusal([](onnx::NodeProto *) {}, true);
  EXPECT_NE(e.find("Resize 'rs': exactly one of scales and sizes"), std::string::npos) << e;
  e = refusal([](onnx::NodeProto *n) { attrInts(n, "axes", {2, 7}); }, false);
  EXPECT_NE(e.find("Resize 'rs': axis 7 is out of range"), std::string::npos) << e;
}

// QuantizeLinear / DequantizeLinear: parameters that do not fit are refused with the node named.
TEST_F(OnnxImport, QuantizeRefusals) {
  auto refusal = [&](const char *op, std::vector<int64_t> scaleShape, int64_t axis) {
    Builder b;
    const bool q = std::string(op) == "QuantizeLinear";
    b.input("x", q ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT8, {2, 3});
    int64_t n = 1;
    for (int64_t d : scaleShape)
      n *= d;
    b.initF32("scale", scaleShape, std::vector<float>(n, 0.5f));
    attrInt(b.node(op, {"x", "scale"}, {"y"}, "qn"), "axis", axis);
    b.output("y");
    return importError(b);
  };
  EXPECT_EQ(refusal("QuantizeLinear", {3}, 1), "") << "per-axis scale imports";
  EXPECT_EQ(refusal("DequantizeLinear", {}, 7), "") << "a per-tensor scale ignores axis";
  std::string e = refusal("QuantizeLinear", {3}, 2);
  EXPECT_NE(e.find("QuantizeLinear 'qn': axis 2 is out of range for rank 2"), std::string::npos) << e;
  e = refusal("DequantizeLinear", {4}, 1);
  EXPECT_NE(e.find("DequantizeLinear 'qn': scale/zero point 4 is neither a scalar nor one value "
                   "per element of axis 1"), std::string::npos) << e;
}

// Hardmax / OneHot / EyeLike: bad axes, depths and ranks are refused with the node named.
TEST_F(OnnxImport, OneHotFamilyRefusals) {
  {
    Builder b;
    b.input("x", onnx::TensorProto::FLOAT, {2, 3});
    attrInt(b.node("Hardmax", {"x"}, {"y"}, "hm"), "axis", 2);
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("Hardmax 'hm': axis 2 is out of range for rank 2"), std::string::npos) << e;
  }
  {
    Builder b;
    b.input("i", onnx::TensorProto::INT64, {3});
    b.initF32("depth", {1}, {0});
    b.initF32("values", {2}, {0, 1});
    b.node("OneHot", {"i", "depth", "values"}, {"y"}, "oh");
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("OneHot 'oh': depth must be one positive value"), std::string::npos) << e;
  }
  {
    Builder b;
    b.input("x", onnx::TensorProto::FLOAT, {2, 3, 4});
    b.node("EyeLike", {"x"}, {"y"}, "eye");
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("EyeLike 'eye': input must be 2-D"), std::string::npos) << e;
  }
}

// Einsum / GatherND (issue 25): decomposed into existing ops; bad equations and indices are
// refused with the node and the equation named.
TEST_F(OnnxImport, EinsumDecomposesAndComputes) {
  Builder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {2, 3, 3});
  b.input("w", onnx::TensorProto::FLOAT, {3, 4});
  attrString(b.node("Einsum", {"x", "w"}, {"y"}, "es"), "equation", "bii, ik -> kb");
  b.output("y");
  auto m = import(b);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(countOps(**m, "tg.matmul"), 1);
  EXPECT_EQ(countOps(**m, "tg.gather"), 1); // the diagonal, exact
  std::vector<float> xs(18), ws(12);
  for (int i = 0; i < 18; ++i)
    xs[i] = (float)i;
  for (int i = 0; i < 12; ++i)
    ws[i] = (float)(i % 5) - 2;
  auto got = interpret(mainOf(**m), {f32({2, 3, 3}, xs), f32({3, 4}, ws)});
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  ASSERT_EQ((*got)[0].shape, (std::vector<int64_t>{4, 2}));
  for (int k = 0; k < 4; ++k)
    for (int bb = 0; bb < 2; ++bb) {
      float want = 0;
      for (int i = 0; i < 3; ++i)
        want += xs[bb * 9 + i * 4] * ws[i * 4 + k];
      EXPECT_FLOAT_EQ((*got)[0].as<float>()[k * 2 + bb], want) << k << "," << bb;
    }
}

TEST_F(OnnxImport, EinsumRefusals) {
  auto one = [&](const std::string &eq, const std::vector<std::vector<int64_t>> &shapes,
                 int elem = onnx::TensorProto::FLOAT) {
    Builder b(13);
    std::vector<std::string> ins;
    for (size_t k = 0; k < shapes.size(); ++k) {
      ins.push_back("x" + std::to_string(k));
      b.input(ins.back(), elem, shapes[k]);
    }
    attrString(b.node("Einsum", ins, {"y"}, "es"), "equation", eq);
    b.output("y");
    return importError(b);
  };
  struct Case {
    std::string eq;
    std::vector<std::vector<int64_t>> shapes;
    std::string want;
  } cases[] = {
      {"ij->i->j", {{2, 3}}, "Einsum 'es': equation 'ij->i->j': two '->'"},
      {"i.j->i", {{2, 3}}, "equation 'i.j->i': a '.' that is not part of '...'"},
      {"i1->i", {{2, 3}}, "character '1' is not a letter"},
      {"ij,jk->ik",
       {{2, 3}, {4, 5}},
       "equation 'ij,jk->ik': letter 'j' has sizes 3 and 4 (input 1)"},
      {"ij->i", {{2, 3}, {3}}, "1 input terms for 2 inputs"},
      {"ijk->i", {{2, 3}}, "term 0 names 3 dims but input 0 has rank 2"},
      {"ij->iz", {{2, 3}}, "output letter 'z' is in no input"},
      {"ij->ii", {{2, 3}}, "output letter 'i' repeated"},
      {"ii->i", {{2, 3}}, "letter 'i' has sizes 2 and 3"},
  };
  for (auto &k : cases) {
    std::string e = one(k.eq, k.shapes);
    EXPECT_NE(e.find(k.want), std::string::npos) << k.eq << ": " << e;
    EXPECT_NE(e.find("Einsum 'es'"), std::string::npos) << e;
  }
  std::string e = one("ij->ji", {{2, 3}}, onnx::TensorProto::INT32);
  EXPECT_NE(e.find("Einsum 'es': equation 'ij->ji': only float inputs are supported"),
            std::string::npos)
      << e;
}

TEST_F(OnnxImport, GatherNDDecomposesClampsAndRefuses) {
  { // batch_dims 1, negative and out-of-range runtime indices (clamped per axis, in bounds)
    Builder b(13);
    b.input("d", onnx::TensorProto::FLOAT, {2, 3, 2});
    b.input("i", onnx::TensorProto::INT64, {2, 1, 1});
    attrInt(b.node("GatherND", {"d", "i"}, {"y"}, "gn"), "batch_dims", 1);
    b.output("y");
    auto m = import(b);
    ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
    EXPECT_EQ(countOps(**m, "tg.gather"), 1);
    std::vector<float> ds(12);
    for (int k = 0; k < 12; ++k)
      ds[k] = (float)k;
    HostTensor idx = HostTensor::zeros(DType::I64, {2, 1, 1});
    idx.as<int64_t>()[0] = -1; // row 2 of batch 0
    idx.as<int64_t>()[1] = 7;  // out of range: clamped to row 2 of batch 1
    auto got = interpret(mainOf(**m), {f32({2, 3, 2}, ds), idx});
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    ASSERT_EQ((*got)[0].shape, (std::vector<int64_t>{2, 1, 2}));
    const float want[] = {4, 5, 10, 11};
    for (int k = 0; k < 4; ++k)
      EXPECT_FLOAT_EQ((*got)[0].as<float>()[k], want[k]) << k;
  }
  auto one = [&](const std::vector<int64_t> &ds, const std::vector<int64_t> &is, int64_t bd,
                 const std::vector<int64_t> &constIdx = {}) {
    Builder b(13);
    b.input("d", onnx::TensorProto::FLOAT, ds);
    if (constIdx.empty()) {
      b.input("i", onnx::TensorProto::INT64, is);
    } else {
      auto *t = b.initI64("i", constIdx);
      t->clear_dims();
      for (int64_t d : is)
        t->add_dims(d);
    }
    attrInt(b.node("GatherND", {"d", "i"}, {"y"}, "gn"), "batch_dims", bd);
    b.output("y");
    return importError(b);
  };
  std::string e = one({2, 3}, {4, 3}, 0);
  EXPECT_NE(e.find("GatherND 'gn': the indices' last dim 3 must lie in [1, 2]"), std::string::npos)
      << e;
  e = one({2, 3, 4}, {3, 1}, 1);
  EXPECT_NE(e.find("GatherND 'gn': batch dim 0 differs"), std::string::npos) << e;
  e = one({2, 3}, {2}, 2);
  EXPECT_NE(e.find("GatherND 'gn': batch_dims 2 must lie in [0, min("), std::string::npos) << e;
  e = one({2, 3}, {2, 2}, 0, {1, 2, 0, 3});
  EXPECT_NE(e.find("GatherND 'gn': index 3 out of range for dim 3"), std::string::npos) << e;
  EXPECT_EQ(one({2, 3}, {2, 2}, 0, {1, 2, -2, -3}), "");
}

// Pad modes, LRN and LpPool: bad attributes are refused with the node named.
TEST_F(OnnxImport, PadLrnLpPoolRefusals) {
  auto one = [&](const char *op, const std::function<void(onnx::NodeProto *)> &attrs,
                 std::vector<std::string> extra = {}) {
    Builder b;
    b.input("x", onnx::TensorProto::FLOAT, {1, 2, 4, 4});
    b.initI64("pads", {0, 0, 1, 1, 0, 0, 1, 1});
    std::vector<std::string> ins{"x"};
    ins.insert(ins.end(), extra.begin(), extra.end());
    attrs(b.node(op, ins, {"y"}, "n0"));
    b.output("y");
    return importError(b);
  };
  std::string e = one("Pad", [](onnx::NodeProto *n) { test::attrString(n, "mode", "reflect"); },
                      {"pads"});
  EXPECT_EQ(e, "") << "reflect padding imports";
  e = one("Pad", [](onnx::NodeProto *n) { test::attrString(n, "mode", "mirror"); }, {"pads"});
  EXPECT_NE(e.find("Pad 'n0': mode 'mirror' is not constant, reflect, edge or wrap"),
            std::string::npos) << e;
  e = one("LRN", [](onnx::NodeProto *n) { attrInt(n, "size", 0); });
  EXPECT_NE(e.find("LRN 'n0': size must be a positive number of channels"), std::string::npos) << e;
  e = one("LpPool", [](onnx::NodeProto *n) {
    attrInts(n, "kernel_shape", {2, 2});
    attrInt(n, "p", 0);
  });
  EXPECT_NE(e.find("LpPool 'n0': p must be >= 1"), std::string::npos) << e;
}

// Compress, ReverseSequence, CenterCropPad: inputs that do not fit are refused with the node named.
TEST_F(OnnxImport, ReorderRefusals) {
  {
    Builder b;
    b.input("x", onnx::TensorProto::FLOAT, {3, 2});
    b.input("cond", onnx::TensorProto::BOOL, {4}); // known at run time: longer than the axis
    attrInt(b.node("Compress", {"x", "cond"}, {"y"}, "cp"), "axis", 0);
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("Compress 'cp': condition has 4 entries for 3 elements"), std::string::npos)
        << e;
  }
  {
    Builder b;
    b.input("x", onnx::TensorProto::FLOAT, {4, 2, 3});
    b.input("lens", onnx::TensorProto::INT64, {3});
    b.node("ReverseSequence", {"x", "lens"}, {"y"}, "rs");
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("ReverseSequence 'rs': sequence_lens must hold one integer per batch entry"),
              std::string::npos) << e;
  }
  {
    Builder b;
    b.input("x", onnx::TensorProto::FLOAT, {4, 4});
    b.initI64("shape", {2});
    b.node("CenterCropPad", {"x", "shape"}, {"y"}, "ccp");
    b.output("y");
    std::string e = importError(b);
    EXPECT_NE(e.find("CenterCropPad 'ccp': shape needs one size per axis"), std::string::npos) << e;
  }
}

// --- External data ---

namespace {
void externalInit(Builder &b, const std::string &location,
                  const std::vector<std::pair<std::string, std::string>> &extra = {}) {
  auto *t = b.g->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto *kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  for (auto &e : extra) {
    kv = t->add_external_data();
    kv->set_key(e.first);
    kv->set_value(e.second);
  }
  b.input("x", onnx::TensorProto::FLOAT, {2});
  b.node("Add", {"x", "w"}, {"y"}, "add");
  b.output("y");
}
} // namespace

TEST_F(OnnxImport, ExternalDataReadFromModelFolder) {
  TempDir dir;
  float vals[4] = {0, 0, 5, 7};
  dir.write("weights.bin", std::string(reinterpret_cast<char *>(vals), 16));
  Builder b;
  externalInit(b, "weights.bin", {{"offset", "8"}, {"length", "8"}});
  auto m = import(b, dir.path);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  auto got = interpret(mainOf(**m), {f32({2}, {1, 1})});
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  EXPECT_FLOAT_EQ((*got)[0].as<float>()[0], 6);
  EXPECT_FLOAT_EQ((*got)[0].as<float>()[1], 8);
}

TEST_F(OnnxImport, ExternalDataEscapesRefused) {
  TempDir dir;
  ::mkdir((dir.path + "/sub").c_str(), 0755);
  dir.write("weights.bin", std::string(8, '\0'));
  dir.write("sub/w.bin", std::string(8, '\0'));
  struct Case {
    std::string location;
    std::vector<std::pair<std::string, std::string>> extra;
    std::string expect;
  } cases[] = {
      {"../weights.bin", {}, "leaves the model's folder"},
      {"sub/../../etc/passwd", {}, "leaves the model's folder"},
      {"/etc/passwd", {}, "absolute path"},
      {"C:\\weights.bin", {}, "drive path"},
      {"link.bin", {}, "symlink"},
      {"hard.bin", {}, "hard links"},
      {"weights.bin", {{"offset", "-1"}}, "offset"},
      {"weights.bin", {{"offset", "abc"}}, "offset"},
      {"weights.bin", {{"offset", "0"}, {"offset", "0"}}, "twice"},
      {"weights.bin", {{"color", "red"}}, "unknown external_data key"},
      {"weights.bin", {{"offset", "4"}}, "beyond the end"},
      {"weights.bin", {{"offset", "100"}}, "beyond the end"},
      {"weights.bin", {{"length", "4"}}, "length"},
      {"missing.bin", {}, "cannot stat"},
  };
  ASSERT_EQ(::symlink((dir.path + "/weights.bin").c_str(), (dir.path + "/link.bin").c_str()), 0);
  dir.write("orig.bin", std::string(8, '\0'));
  ASSERT_EQ(::link((dir.path + "/orig.bin").c_str(), (dir.path + "/hard.bin").c_str()), 0);
  for (const auto &c : cases) {
    Builder b;
    externalInit(b, c.location, c.extra);
    std::string e = importError(b, dir.path);
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.location << ": " << e;
    EXPECT_NE(e.find("tensor 'w'"), std::string::npos) << e;
  }
  // A symlinked directory component is refused too.
  ASSERT_EQ(::symlink((dir.path + "/sub").c_str(), (dir.path + "/sublink").c_str()), 0);
  Builder b;
  externalInit(b, "sublink/w.bin");
  EXPECT_NE(importError(b, dir.path).find("symlink"), std::string::npos);
  // No folder at all: external data cannot be read.
  Builder b2;
  externalInit(b2, "weights.bin");
  EXPECT_NE(importError(b2, "").find("not loaded from a folder"), std::string::npos);
}

// --- TensorIO ---

TEST(TensorIO, RoundTripAndValidation) {
  TempDir dir;
  HostTensor t = HostTensor::zeros(DType::I64, {2, 3}, "ids");
  for (int i = 0; i < 6; ++i)
    t.as<int64_t>()[i] = i * 10 - 7;
  std::string p = dir.path + "/t.pb";
  ASSERT_FALSE(bool(writeTensorProtoFile(t, p)));
  auto r = readTensorProtoFile(p);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->name, "ids");
  EXPECT_EQ(r->shape, t.shape);
  EXPECT_EQ(r->data, t.data);

  onnx::TensorProto bad;
  bad.set_name("short");
  bad.set_data_type(onnx::TensorProto::FLOAT);
  bad.add_dims(4);
  bad.add_float_data(1);
  dir.write("bad.pb", bad.SerializeAsString());
  auto e = readTensorProtoFile(dir.path + "/bad.pb");
  ASSERT_FALSE(bool(e));
  std::string msg = llvm::toString(e.takeError());
  EXPECT_NE(msg.find("tensor 'short'"), std::string::npos) << msg;

  dir.write("garbage.pb", "\xff\xff\xff");
  auto g = readTensorProtoFile(dir.path + "/garbage.pb");
  ASSERT_FALSE(bool(g));
  llvm::consumeError(g.takeError());
}

// --- Robustness: corrupted bytes give an error or a valid module, never a crash ---

TEST_F(OnnxImport, CorruptedModelsNeverCrash) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 3, 4});
  b.initI64("idx0", {0});
  b.initI64("minus1", {-1});
  b.initF32("w", {5, 12}, std::vector<float>(60, 0.25f));
  b.node("Shape", {"x"}, {"s"}, "shape");
  attrInt(b.node("Gather", {"s", "idx0"}, {"d0"}, "gather"), "axis", 0);
  attrInt(b.node("Concat", {"d0", "minus1"}, {"target"}, "concat"), "axis", 0);
  b.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  attrInt(b.node("Gemm", {"y", "w"}, {"z"}, "fc"), "transB", 1);
  attrInt(b.node("Softmax", {"z"}, {"p"}, "sm"), "axis", -1);
  b.output("p");
  const std::string good = b.bytes();
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(state >> 33);
  };
  int ok = 0, refused = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string bytes = good;
    int flips = 1 + next() % 3;
    for (int f = 0; f < flips; ++f)
      bytes[next() % bytes.size()] = (char)(next() & 0xff);
    if (iter % 10 == 0)
      bytes.resize(next() % bytes.size());
    mlir::MLIRContext c2;
    auto m = importOnnxBytes(c2, bytes, "", {});
    if (m) {
      EXPECT_TRUE(mlir::succeeded(mlir::verify(**m)));
      ++ok;
    } else {
      llvm::consumeError(m.takeError());
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
  std::cerr << "mutations: " << ok << " imported, " << refused << " refused\n";
}

TEST_F(OnnxImport, HugeDimsWithoutDataFailFast) {
  Builder b;
  b.input("x", onnx::TensorProto::FLOAT, {3});
  auto *t = b.g->add_initializer();
  t->set_name("big");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(int64_t(1) << 40);
  t->add_float_data(1);
  b.node("Add", {"x", "big"}, {"y"});
  b.output("y");
  std::string e = importError(b);
  EXPECT_NE(e.find("tensor 'big'"), std::string::npos) << e;
}
