// LOOP steps on the CPU (issue 25: a Loop whose trip count is known only at run time): a
// package written from tg IR whose @main runs a tg.loop, run for several trip counts and
// conditions against the same recurrence computed here; then corrupted LOOP steps and body
// packages, each refused at load with an error naming it (never run).
#include "runtime/Session.h"
#include "runtime/schema/PlanUtil.h"
#include "runtime/schema/plan.pb.h"

#include "tests/unit/IrPackage.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using tgc::DType;
using tgc::HostTensor;
using namespace tgc;

namespace {

// acc = acc * w + i while i < M and the body's condition (sum(acc) < 100) holds; k counts.
const char *kIr = R"(
func.func @main(%m: tensor<i64> {tg.name = "M"}, %go: tensor<i1> {tg.name = "go"},
                %a0: tensor<3xf32> {tg.name = "a0"}, %w: tensor<3xf32> {tg.name = "w"})
    -> (tensor<3xf32> {tg.name = "a"}, tensor<i64> {tg.name = "k"}) {
  %k0 = tg.constant dense<0> : tensor<i64>
  %0:2 = tg.loop @loop_body_0(%m, %go, %a0, %k0, %w) {has_cond = true, has_trip_count = true, num_carried = 2 : i64} : (tensor<i64>, tensor<i1>, tensor<3xf32>, tensor<i64>, tensor<3xf32>) -> (tensor<3xf32>, tensor<i64>)
  return %0#0, %0#1 : tensor<3xf32>, tensor<i64>
}
func.func private @loop_body_0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<3xf32>, %k: tensor<i64>, %w: tensor<3xf32>) -> (tensor<i1>, tensor<3xf32>, tensor<i64>) {
  %one = tg.constant dense<1> : tensor<i64>
  %lim = tg.constant dense<100.0> : tensor<f32>
  %fi = tg.cast %i : tensor<i64> -> tensor<f32>
  %0 = tg.mul %acc, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %1 = tg.add %0, %fi : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %2 = tg.reduce_sum %1 {axes = [0], keepdims = false} : tensor<3xf32> -> tensor<f32>
  %3 = tg.less %2, %lim : tensor<f32>, tensor<f32> -> tensor<i1>
  %4 = tg.add %k, %one : tensor<i64>, tensor<i64> -> tensor<i64>
  return %3, %1, %4 : tensor<i1>, tensor<3xf32>, tensor<i64>
}
)";

std::string tmpDir() {
  const char *t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

plan::Plan readPlan(const std::string &d) {
  std::ifstream f(d + "/plan.pb", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  plan::Plan p;
  EXPECT_TRUE(p.ParseFromString(bytes));
  return p;
}

void writePlan(const std::string &d, const plan::Plan &p) {
  std::string bytes;
  ASSERT_TRUE(plan::serializePlan(p, bytes));
  std::ofstream(d + "/plan.pb", std::ios::binary | std::ios::trunc) << bytes;
}

class LoopPackage : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(
        test::writeCpuPackageFromIr(kIr, tmpDir() + "/loop.tgpkg", "loop", tmpDir() + "/kcache"));
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override { ASSERT_FALSE(dir_->empty()) << "the loop package did not compile"; }

  static std::string loadError(const std::string &d) {
    Status st;
    auto s = Session::load(d, st, 1);
    EXPECT_FALSE(s) << "the package loaded but should have been refused";
    return st.message;
  }
  static std::string copy(const std::string &name) {
    const std::string d = tmpDir() + "/" + name;
    fs::remove_all(d);
    fs::copy(*dir_, d, fs::copy_options::recursive);
    return d;
  }
  static std::string *dir_;
};
std::string *LoopPackage::dir_ = nullptr;

HostTensor scalarI64(int64_t v) {
  HostTensor t = HostTensor::zeros(DType::I64, {});
  t.set(0, (double)v);
  return t;
}

TEST_F(LoopPackage, RunsTheBodyWhileTheTripCountAndConditionAllow) {
  Status st;
  auto s = Session::load(*dir_, st, 1);
  ASSERT_TRUE(s) << st.message;
  const float a0[3] = {0.5f, 1.0f, -0.5f}, w[3] = {1.5f, 0.9f, 1.1f};
  for (int64_t m : {0, 1, 3, 1000}) {
    for (bool go : {true, false}) {
      // The recurrence here, in float like the kernels.
      float acc[3] = {a0[0], a0[1], a0[2]};
      int64_t k = 0;
      bool cond = go;
      for (int64_t i = 0; i < m && cond; ++i, ++k) {
        float sum = 0;
        for (int j = 0; j < 3; ++j) {
          acc[j] = acc[j] * w[j] + (float)i;
          sum += acc[j];
        }
        cond = sum < 100.f;
      }
      HostTensor g = HostTensor::zeros(DType::Bool, {});
      g.set(0, go ? 1.0 : 0.0);
      HostTensor ta = HostTensor::zeros(DType::F32, {3}), tw = HostTensor::zeros(DType::F32, {3});
      for (int j = 0; j < 3; ++j)
        ta.set(j, a0[j]), tw.set(j, w[j]);
      std::vector<HostTensor> out;
      Status rs = s->run({scalarI64(m), g, ta, tw}, out);
      ASSERT_TRUE(rs.ok) << rs.message;
      EXPECT_EQ((int64_t)out[1].get(0), k) << "M=" << m << " go=" << go;
      for (int j = 0; j < 3; ++j)
        EXPECT_NEAR(out[0].get(j), acc[j], 1e-4 * std::abs(acc[j]) + 1e-6) << "M=" << m;
    }
  }
  // The body is a package of its own beside the plan.
  ASSERT_TRUE(fs::exists(*dir_ + "/loop_body_0/plan.pb"));
}

TEST_F(LoopPackage, CorruptLoopStepsAreRefused) {
  const plan::Plan good = readPlan(*dir_);
  int loopStep = -1;
  for (int i = 0; i < good.steps_size(); ++i)
    if (good.steps(i).kind() == plan::Step::LOOP)
      loopStep = i;
  ASSERT_GE(loopStep, 0);
  const std::string d = copy("loop-corrupt.tgpkg");
  auto edit = [&](const std::function<void(plan::Step &)> &f) {
    plan::Plan p = good;
    f(*p.mutable_steps(loopStep));
    writePlan(d, p);
  };
  edit([](plan::Step &s) { s.mutable_loop()->set_body("../loop.tgpkg"); });
  EXPECT_NE(loadError(d).find("loop body directory '../loop.tgpkg' is not a plain name"),
            std::string::npos);
  edit([](plan::Step &s) { s.mutable_loop()->set_carried(3); });
  EXPECT_NE(loadError(d).find("a loop of 3 carried values and 1 captures needs"),
            std::string::npos);
  edit([](plan::Step &s) { s.mutable_args(0)->set_bytes(4); });
  EXPECT_NE(loadError(d).find("the trip count must be one int64"), std::string::npos);
  edit([](plan::Step &s) { s.clear_loop(); });
  EXPECT_NE(loadError(d).find("a LOOP step without its LoopDesc"), std::string::npos);
  edit([](plan::Step &s) { s.mutable_loop()->set_body("missing_body"); });
  EXPECT_NE(loadError(d).find("missing_body"), std::string::npos);
  // The body's interface must match the loop's: a capture of another size is refused.
  writePlan(d, good);
  plan::Plan body = readPlan(d + "/loop_body_0");
  body.mutable_inputs(4)->set_shape(0, 4);
  writePlan(d + "/loop_body_0", body);
  const std::string e = loadError(d);
  EXPECT_NE(e.find("loop body 'loop_body_0' capture 0 does not match the loop's"),
            std::string::npos)
      << e;
}

TEST_F(LoopPackage, BodiesMustBeTheirOwnDirectories) {
  // loop_body_0 a link back to the package: each level would load the next; not followed.
  const std::string d = copy("loop-recursive.tgpkg");
  fs::remove_all(d + "/loop_body_0");
  fs::create_directory_symlink(d, d + "/loop_body_0");
  std::string e = loadError(d);
  EXPECT_NE(e.find("loop body 'loop_body_0' is not a directory of the package (a link is not "
                   "followed)"),
            std::string::npos)
      << e;
  // Two LOOP steps naming one body: loading could fan out (K steps per level, K^depth loads).
  const std::string d2 = copy("loop-shared-body.tgpkg");
  plan::Plan p = readPlan(d2);
  plan::Step loop;
  for (const plan::Step &st : p.steps())
    if (st.kind() == plan::Step::LOOP)
      loop = st;
  ASSERT_EQ(loop.kind(), plan::Step::LOOP);
  *p.add_steps() = loop;
  writePlan(d2, p);
  e = loadError(d2);
  EXPECT_NE(e.find("loop body 'loop_body_0' is named by two LOOP steps"), std::string::npos) << e;
}

} // namespace
