// import_dynamic_test.cpp — ops whose output shape depends on the data (NonZero, Unique,
// NonMaxSuppression, Compress by a computed condition): small ONNX models compiled for the CPU
// backend and run by the runtime against hand-computed values, the actual shapes the runtime
// reports (an all-zero input gives count 0), the valid part packed at the start of a caller's
// buffer (runRefs and the C API), a NonZero -> Transpose -> GatherND chain as exporters write
// it, a constant input folded to its exact shape, and the refusals of ops that would mix or
// reduce along a data-dependent axis, each naming the node and the op the length came from.
#include "driver/Compile.h"
#include "frontends/onnx/onnx.pb.h"
#include "runtime/Session.h"
#include "runtime/tgc_runtime.h"
#include "tests/unit/CpuCompile.h"
#include "tests/unit/OnnxModelBuilder.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

using namespace tgc;

namespace {

using Builder = test::OnnxModel;
using V = std::vector<double>;
using Dims = std::vector<int64_t>;

std::string compileError(const Builder &b, const std::string &name) {
  return test::compileForCpu(b.bytes(), name);
}
std::unique_ptr<Session> load(const Builder &b, const std::string &name) {
  return test::compileAndLoadCpu(b.bytes(), name);
}
std::vector<HostTensor> run(Session &s, const std::vector<HostTensor> &inputs) {
  return test::runSession(s, inputs);
}

using test::tmpDir;




HostTensor tensor(DType t, Dims shape, const V &v, const std::string &name) {
  HostTensor h = HostTensor::zeros(t, std::move(shape), name);
  EXPECT_EQ((int64_t)v.size(), h.numel());
  for (size_t i = 0; i < v.size(); ++i)
    h.set((int64_t)i, v[i]);
  return h;
}

V values(const HostTensor &t) {
  V v;
  for (int64_t i = 0; i < t.numel(); ++i)
    v.push_back(t.get(i));
  return v;
}

Builder nonzeroModel() {
  Builder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.node("NonZero", {"x"}, {"nz"}, "nz");
  b.output("nz");
  return b;
}

// Coordinates of the nonzero elements, column by column; the shape the runtime reports follows
// each run's count: 3, then 0 (all zero), then 6 (none zero).
TEST(ImportDynamic, NonZeroShapeFollowsEachRun) {
  auto s = load(nonzeroModel(), "dyn_nonzero");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->outputs().size(), 1u);
  EXPECT_EQ(s->outputs()[0].shape, (Dims{2, 6}));
  EXPECT_EQ(s->outputs()[0].dynamicAxis, 1);
  auto out = run(*s, {tensor(DType::F32, {2, 3}, {0, 1, 0, 2, 0, -3}, "x")});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype, DType::I64);
  EXPECT_EQ(out[0].shape, (Dims{2, 3}));
  EXPECT_EQ(values(out[0]), (V{0, 1, 1, 1, 0, 2}));
  EXPECT_EQ(s->outputShape(0), (Dims{2, 3}));

  out = run(*s, {tensor(DType::F32, {2, 3}, {0, 0, 0, 0, 0, 0}, "x")});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (Dims{2, 0}));
  EXPECT_EQ(out[0].numel(), 0);
  EXPECT_EQ(s->outputShape(0), (Dims{2, 0}));

  out = run(*s, {tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}, "x")});
  EXPECT_EQ(out[0].shape, (Dims{2, 6}));
  EXPECT_EQ(values(out[0]), (V{0, 0, 0, 1, 1, 1, 0, 1, 2, 0, 1, 2}));
}

// runRefs and the C API on caller buffers of the upper bound: the valid [2, 2] part is packed
// row-major at the start, and tgc_session_output_shape reports it.
TEST(ImportDynamic, CallerBuffersGetThePackedValidPart) {
  ASSERT_EQ(compileError(nonzeroModel(), "dyn_nonzero_c"), "");
  char *err = nullptr;
  tgc_session *s = tgc_session_load((tmpDir() + "/dyn_nonzero_c.tgpkg").c_str(), 1, &err);
  ASSERT_TRUE(s) << (err ? err : "");
  std::vector<float> x{0, 0, 7, 0, 8, 0};
  std::vector<int64_t> y(12, -1);
  const int64_t xd[2] = {2, 3}, yd[2] = {2, 6};
  tgc_tensor in{1, 2, xd, x.data(), x.size() * 4}, out{7, 2, yd, y.data(), y.size() * 8};
  int64_t dims[2] = {-1, -1};
  int32_t axis = -2;
  EXPECT_EQ(tgc_session_output_shape(s, 0, dims, &axis), 1); // before a run: the bound
  EXPECT_EQ(dims[1], 6);
  EXPECT_EQ(axis, 1);
  ASSERT_EQ(tgc_session_run(s, &in, 1, &out, 1, &err), 0) << (err ? err : "");
  EXPECT_EQ(tgc_session_output_shape(s, 0, dims, &axis), 1);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[1], 2);
  EXPECT_EQ(std::vector<int64_t>(y.begin(), y.begin() + 4), (std::vector<int64_t>{0, 1, 2, 1}));
  EXPECT_EQ(tgc_session_output_shape(s, 1, dims, &axis), -1);
  EXPECT_EQ(tgc_session_output_shape(nullptr, 0, dims, &axis), -1);
  tgc_session_free(s);
}

// Compress by a condition that is a graph input: along axis 0, and flat (no axis).
TEST(ImportDynamic, CompressByAComputedCondition) {
  Builder b(11);
  b.input("x", onnx::TensorProto::FLOAT, {3, 2});
  b.input("c", onnx::TensorProto::BOOL, {3});
  b.input("f", onnx::TensorProto::BOOL, {5});
  test::attrInt(b.node("Compress", {"x", "c"}, {"rows"}, "rows"), "axis", 0);
  b.node("Compress", {"x", "f"}, {"flat"}, "flat");
  b.output("rows");
  b.output("flat");
  auto s = load(b, "dyn_compress");
  ASSERT_TRUE(s);
  auto out = run(*s, {tensor(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6}, "x"),
                      tensor(DType::Bool, {3}, {1, 0, 1}, "c"),
                      tensor(DType::Bool, {5}, {0, 1, 1, 0, 1}, "f")});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape, (Dims{2, 2}));
  EXPECT_EQ(values(out[0]), (V{1, 2, 5, 6}));
  EXPECT_EQ(out[1].shape, (Dims{3}));
  EXPECT_EQ(values(out[1]), (V{2, 3, 5}));
}

// Unique's four outputs, sorted and by first occurrence; the inverse has the input's length.
TEST(ImportDynamic, UniqueSortedAndUnsorted) {
  Builder b(11);
  b.input("x", onnx::TensorProto::FLOAT, {6});
  b.node("Unique", {"x"}, {"y", "i", "v", "n"}, "sorted");
  test::attrInt(b.node("Unique", {"x"}, {"uy", "ui"}, "unsorted"), "sorted", 0);
  for (const char *o : {"y", "i", "v", "n", "uy", "ui"})
    b.output(o);
  auto s = load(b, "dyn_unique");
  ASSERT_TRUE(s);
  auto out = run(*s, {tensor(DType::F32, {6}, {2, 1, 1, 3, 4, 3}, "x")});
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(values(out[0]), (V{1, 2, 3, 4}));
  EXPECT_EQ(values(out[1]), (V{1, 0, 3, 4}));
  EXPECT_EQ(out[2].shape, (Dims{6}));
  EXPECT_EQ(values(out[2]), (V{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(values(out[3]), (V{2, 1, 2, 1}));
  EXPECT_EQ(values(out[4]), (V{2, 1, 3, 4}));
  EXPECT_EQ(values(out[5]), (V{0, 1, 3, 4}));
}

// Two classes, a score threshold and a per-class limit: rows in (batch, class, order).
TEST(ImportDynamic, NonMaxSuppressionRows) {
  Builder b(11);
  b.input("boxes", onnx::TensorProto::FLOAT, {1, 3, 4});
  b.input("scores", onnx::TensorProto::FLOAT, {1, 2, 3});
  b.initI64("max", {2});
  b.initF32("iou", {1}, {0.5f});
  b.initF32("thr", {1}, {0.3f});
  b.node("NonMaxSuppression", {"boxes", "scores", "max", "iou", "thr"}, {"sel"}, "nms");
  b.output("sel");
  auto s = load(b, "dyn_nms");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->outputs()[0].shape, (Dims{4, 3}));
  // Box 1 overlaps box 0 (IoU 0.82); box 2 is apart.
  auto out =
      run(*s, {tensor(DType::F32, {1, 3, 4}, {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 2, 1, 3}, "boxes"),
               tensor(DType::F32, {1, 2, 3}, {0.9, 0.8, 0.7, 0.1, 0.6, 0.2}, "scores")});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (Dims{3, 3}));
  EXPECT_EQ(values(out[0]), (V{0, 0, 0, 0, 0, 2, 0, 1, 1}));
}

// The typical export: NonZero -> Transpose -> GatherND picks the nonzero values (then an
// element-wise op), as x[x != 0] * 2.
TEST(ImportDynamic, NonZeroTransposeGatherNDChain) {
  Builder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {3, 4});
  b.node("NonZero", {"x"}, {"nz"}, "nz");
  test::attrInts(b.node("Transpose", {"nz"}, {"idx"}, "t"), "perm", {1, 0});
  b.node("GatherND", {"x", "idx"}, {"vals"}, "g");
  b.node("Add", {"vals", "vals"}, {"twice"}, "add");
  b.output("twice");
  b.output("idx");
  auto s = load(b, "dyn_chain");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->outputs()[0].dynamicAxis, 0);
  EXPECT_EQ(s->outputs()[1].dynamicAxis, 0);
  auto out = run(*s, {tensor(DType::F32, {3, 4}, {0, 5, 0, 0, 0, 0, 0, -1, 2, 0, 0, 3}, "x")});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape, (Dims{4}));
  EXPECT_EQ(values(out[0]), (V{10, -2, 4, 6}));
  EXPECT_EQ(out[1].shape, (Dims{4, 2}));
  EXPECT_EQ(values(out[1]), (V{0, 1, 1, 3, 2, 0, 2, 3}));
  out = run(*s, {tensor(DType::F32, {3, 4}, V(12, 0.0), "x")});
  EXPECT_EQ(out[0].shape, (Dims{0}));
  EXPECT_EQ(out[1].shape, (Dims{0, 2}));
}

// A constant input folds: the output has its exact static shape, no data-dependent axis.
TEST(ImportDynamic, ConstantInputFoldsToTheExactShape) {
  Builder b(13);
  b.input("y", onnx::TensorProto::FLOAT, {1});
  b.initF32("c", {4}, {0, 3, 0, 4});
  b.node("NonZero", {"c"}, {"nz"}, "nz");
  test::attrInt(b.node("Cast", {"nz"}, {"f"}, "cast"), "to", onnx::TensorProto::FLOAT);
  b.node("Add", {"f", "y"}, {"out"}, "add");
  b.output("out");
  auto s = load(b, "dyn_folded");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->outputs()[0].shape, (Dims{1, 2}));
  EXPECT_EQ(s->outputs()[0].dynamicAxis, -1);
  auto out = run(*s, {tensor(DType::F32, {1}, {10}, "y")});
  EXPECT_EQ(values(out[0]), (V{11, 13}));
}

// A ReduceSum over the data-dependent axis would add padding: refused, naming the node, the
// axis and the NonZero it came from (axes as an input, opset 13). A reduction over the other
// axis passes (axes as an attribute, opset 11).
TEST(ImportDynamic, ReductionOverTheDataDependentAxisIsRefused) {
  Builder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.initI64("ax", {1});
  b.node("NonZero", {"x"}, {"nz"}, "nz");
  b.node("ReduceSum", {"nz", "ax"}, {"s"}, "sum");
  b.output("s");
  const std::string err = compileError(b, "dyn_refused");
  EXPECT_NE(err.find("ReduceSum 'sum'"), std::string::npos) << err;
  EXPECT_NE(err.find("reduces over axis 1"), std::string::npos) << err;
  EXPECT_NE(err.find("NonZero 'nz'"), std::string::npos) << err;

  Builder ok(11); // axes as an attribute
  ok.input("x", onnx::TensorProto::FLOAT, {2, 3});
  ok.node("NonZero", {"x"}, {"nz"}, "nz");
  auto *sum = ok.node("ReduceSum", {"nz"}, {"s"}, "sum");
  test::attrInts(sum, "axes", {0});
  test::attrInt(sum, "keepdims", 0);
  ok.output("s");
  auto s = load(ok, "dyn_reduce_ok");
  ASSERT_TRUE(s);
  auto out = run(*s, {tensor(DType::F32, {2, 3}, {0, 1, 0, 2, 0, 3}, "x")});
  EXPECT_EQ(out[0].shape, (Dims{3}));
  EXPECT_EQ(values(out[0]), (V{1, 1, 3}));
}

// Shape of a data-dependent value (the bound, not the run's length) and a Concat along the
// axis are refused; so is NonMaxSuppression with a computed limit (with the --bind-input hint).
TEST(ImportDynamic, OtherRefusalsNameTheNode) {
  Builder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {4});
  b.node("NonZero", {"x"}, {"nz"}, "nz");
  b.node("Shape", {"nz"}, {"s"}, "shape");
  b.output("s");
  std::string err = compileError(b, "dyn_shape");
  EXPECT_NE(err.find("Shape 'shape'"), std::string::npos) << err;
  EXPECT_NE(err.find("NonZero 'nz'"), std::string::npos) << err;

  Builder c(13);
  c.input("x", onnx::TensorProto::FLOAT, {4});
  c.node("NonZero", {"x"}, {"nz"}, "nz");
  test::attrInt(c.node("Concat", {"nz", "nz"}, {"cat"}, "cat"), "axis", 1);
  c.output("cat");
  err = compileError(c, "dyn_concat");
  EXPECT_NE(err.find("Concat 'cat': concatenates along axis 1"), std::string::npos) << err;

  Builder n(11);
  n.input("boxes", onnx::TensorProto::FLOAT, {1, 3, 4});
  n.input("scores", onnx::TensorProto::FLOAT, {1, 1, 3});
  n.input("max", onnx::TensorProto::INT64, {1});
  n.node("NonMaxSuppression", {"boxes", "scores", "max"}, {"sel"}, "nms");
  n.output("sel");
  err = compileError(n, "dyn_nms_max");
  EXPECT_NE(err.find("NonMaxSuppression 'nms': max_output_boxes_per_class must be constant"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("--bind-input max="), std::string::npos) << err;
}

} // namespace
