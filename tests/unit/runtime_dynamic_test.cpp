// runtime_dynamic_test.cpp — the runtime's side of data-dependent output shapes: a CPU package
// written from IR text with tg.dynamic_outputs (as the importer leaves it), the plan's
// TensorDesc.dynamic_axis / count, the actual shape after each run through the C++ API
// (outputShape, run() trimming, runRefs packing a middle axis) and the C API, and the load-time
// refusal of a count that is not 8 bytes inside the arena or names an axis the output lacks.
#include "codegen/cpu/CpuBackend.h"
#include "compiler/dialect/TgDialect.h"
#include "runtime/Session.h"
#include "runtime/schema/PlanUtil.h"
#include "runtime/tgc_runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace tgc;

namespace {

std::string tmpDir() {
  const char *t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

// y = x * 2 compressed along axis 1 of [2, 4] by a run-time condition (nonzero of c, then a
// gather): the valid columns of each row are packed, a middle-of-the-buffer move for row 1.
const char *kIR = R"(
func.func @main(%x: tensor<2x4xf32> {tg.name = "x"}, %c: tensor<4xf32> {tg.name = "c"}) -> (tensor<2x4xf32> {tg.name = "y"}, tensor<4xf32> {tg.name = "static"}, tensor<i64>) attributes {tg.dynamic_outputs = [0, 1]} {
  %idx, %count = tg.nonzero %c : tensor<4xf32> -> tensor<1x4xi64>, tensor<i64>
  %i = tg.reshape %idx : tensor<1x4xi64> -> tensor<4xi64>
  %g = tg.gather %x, %i {axis = 1 : i64} : tensor<2x4xf32>, tensor<4xi64> -> tensor<2x4xf32>
  %y = tg.add %g, %g : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %s = tg.add %c, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %y, %s, %count : tensor<2x4xf32>, tensor<4xf32>, tensor<i64>
}
)";

std::string package(const std::string &name) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kIR, &ctx);
  EXPECT_TRUE(module) << "IR does not parse";
  if (!module)
    return "";
  const std::string dir = tmpDir() + "/" + name;
  PackageInfo info;
  info.tgcVersion = "test";
  info.modelName = name;
  auto stats = writeCpuPackage(*module, dir, info, tmpDir() + "/kcache");
  EXPECT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  return stats ? dir : "";
}

HostTensor f32(std::vector<int64_t> shape, const std::vector<float> &v, const std::string &name) {
  HostTensor t = HostTensor::zeros(DType::F32, std::move(shape), name);
  std::copy(v.begin(), v.end(), t.as<float>());
  return t;
}

std::vector<float> floats(const HostTensor &t) {
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
}

TEST(RuntimeDynamic, PlanDescribesTheCountAndRunsReportTheActualShape) {
  const std::string dir = package("dyn_rt.tgpkg");
  ASSERT_FALSE(dir.empty());
  plan::Plan p;
  {
    std::ifstream in(dir + "/plan.pb", std::ios::binary);
    ASSERT_TRUE(p.ParseFromIstream(&in));
  }
  ASSERT_EQ(p.outputs_size(), 2); // the count is no output of its own
  EXPECT_TRUE(p.outputs(0).has_count());
  EXPECT_EQ(p.outputs(0).dynamic_axis(), 1);
  EXPECT_EQ(p.outputs(0).count().kind(), plan::ARENA);
  EXPECT_EQ(p.outputs(0).count().bytes(), 8);
  EXPECT_FALSE(p.outputs(1).has_count());

  Status st;
  auto s = Session::load(dir, st, 1);
  ASSERT_TRUE(s) << st.message;
  EXPECT_EQ(s->outputs()[0].dynamicAxis, 1);
  EXPECT_EQ(s->outputs()[1].dynamicAxis, -1);
  EXPECT_EQ(s->outputShape(0), (std::vector<int64_t>{2, 4})); // before a run: the bound
  EXPECT_TRUE(s->outputShape(2).empty());
  const HostTensor x = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, "x");
  std::vector<HostTensor> out;
  st = s->run({x, f32({4}, {0, 1, 0, 1}, "c")}, out);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(floats(out[0]), (std::vector<float>{4, 8, 12, 16}));
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(s->outputShape(0), (std::vector<int64_t>{2, 2}));
  st = s->run({x, f32({4}, {0, 0, 0, 0}, "c")}, out);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 0}));
  EXPECT_TRUE(out[0].data.empty());

  // runRefs on buffers of the bound: the [2, 3] valid part packed row-major at the start.
  std::vector<float> y(8, -1), stat(4, -1), c{1, 0, 1, 1};
  const int64_t xd[2] = {2, 4}, cd[1] = {4};
  TensorRef in[2] = {{DType::F32, xd, 2, const_cast<uint8_t *>(x.data.data()), 32},
                     {DType::F32, cd, 1, c.data(), 16}};
  TensorRef outs[2] = {{DType::F32, xd, 2, y.data(), 32}, {DType::F32, cd, 1, stat.data(), 16}};
  st = s->runRefs(in, 2, outs, 2);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_EQ(s->outputShape(0), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 6),
            (std::vector<float>{2, 6, 8, 10, 14, 16}));

  // The C API reports the same.
  char *err = nullptr;
  tgc_session *cs = tgc_session_load(dir.c_str(), 1, &err);
  ASSERT_TRUE(cs) << (err ? err : "");
  int64_t dims[2] = {0, 0};
  int32_t axis = 0;
  EXPECT_EQ(tgc_session_output_shape(cs, 1, dims, &axis), 0);
  EXPECT_EQ(axis, -1);
  EXPECT_EQ(dims[0], 4);
  const tgc_tensor cin[2] = {{1, 2, xd, const_cast<uint8_t *>(x.data.data()), 32},
                             {1, 1, cd, c.data(), 16}};
  const tgc_tensor cout[2] = {{1, 2, xd, y.data(), 32}, {1, 1, cd, stat.data(), 16}};
  c = {0, 0, 0, 5};
  ASSERT_EQ(tgc_session_run(cs, cin, 2, cout, 2, &err), 0) << (err ? err : "");
  EXPECT_EQ(tgc_session_output_shape(cs, 0, dims, &axis), 1);
  EXPECT_EQ(axis, 1);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[1], 1);
  EXPECT_EQ(y[0], 8);
  EXPECT_EQ(y[1], 16);
  tgc_session_free(cs);
}

TEST(RuntimeDynamic, RefusesABadCountAtLoad) {
  const std::string good = package("dyn_rt_bad.tgpkg");
  ASSERT_FALSE(good.empty());
  plan::Plan base;
  {
    std::ifstream in(good + "/plan.pb", std::ios::binary);
    ASSERT_TRUE(base.ParseFromIstream(&in));
  }
  auto loadWith = [&](const std::function<void(plan::Plan &)> &edit) {
    const std::string d = tmpDir() + "/dyn_rt_bad_copy";
    fs::remove_all(d);
    fs::copy(good, d);
    plan::Plan p = base;
    edit(p);
    std::string bytes;
    EXPECT_TRUE(plan::serializePlan(p, bytes));
    std::ofstream(d + "/plan.pb", std::ios::binary | std::ios::trunc) << bytes;
    Status st;
    auto s = Session::load(d, st, 1);
    return s ? std::string() : st.message;
  };
  EXPECT_EQ(loadWith([](plan::Plan &) {}), "");
  const std::string want = "its count is not 8 bytes in the arena for an axis of it";
  EXPECT_NE(loadWith([](plan::Plan &p) { p.mutable_outputs(0)->set_dynamic_axis(2); }).find(want),
            std::string::npos);
  EXPECT_NE(loadWith([](plan::Plan &p) {
              p.mutable_outputs(0)->mutable_count()->set_kind(plan::WEIGHT);
            }).find(want),
            std::string::npos);
  EXPECT_NE(loadWith([](plan::Plan &p) {
              p.mutable_outputs(0)->mutable_count()->set_bytes(4);
            }).find(want),
            std::string::npos);
  const std::string outside = loadWith(
      [&](plan::Plan &p) { p.mutable_outputs(0)->mutable_count()->set_offset(p.arena_bytes()); });
  EXPECT_NE(outside.find("output 'y' count"), std::string::npos) << outside;
}

} // namespace
