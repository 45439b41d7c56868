// cpu_step_threads_test.cpp — each CPU step's thread count, chosen at load by timing
// (runtime/CpuStepThreads.h): the choice against made-up step timings, then a real package whose
// outputs must not depend on it.
#include "codegen/cpu/CpuBackend.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "runtime/CpuStepThreads.h"
#include "runtime/Session.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <thread>
#include <string>
#include <vector>

namespace {

/// A made-up package: step i takes serial[i] µs on one thread and parallel[i] on all threads;
/// `mixPenalty` µs more for every switch between counts from one step to the next (a pool that
/// wakes for a parallel step after a serial one). Counts the runs.
struct FakePackage {
  std::vector<double> serial, parallel;
  double mixPenalty = 0;
  int runs = 0;
  double operator()(const std::vector<int> &threads, std::vector<double> &stepMicros) {
    ++runs;
    double total = 0;
    for (size_t i = 0; i < threads.size(); ++i) {
      stepMicros[i] = threads[i] > 1 ? parallel[i] : serial[i];
      if (i > 0 && (threads[i] > 1) != (threads[i - 1] > 1))
        stepMicros[i] += mixPenalty;
      total += stepMicros[i];
    }
    return total;
  }
};

tgc::StepThreads tune(FakePackage &p, const std::vector<bool> &tunable, int threads = 2) {
  return tgc::tuneStepThreads(tunable, threads,
                              [&](const std::vector<int> &t, std::vector<double> &m) {
                                return p(t, m);
                              });
}

} // namespace

TEST(StepThreads, SmallKernelsThatSplitSlowerRunOnOneThread) {
  FakePackage p{{50, 40, 80}, {90, 60, 85}};
  const tgc::StepThreads s = tune(p, {true, true, true});
  EXPECT_EQ(s.picked, "one");
  EXPECT_EQ(s.threads, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(s.stepsOnOne, 3);
  EXPECT_DOUBLE_EQ(s.allMicros, 235);
  EXPECT_DOUBLE_EQ(s.oneMicros, 170);
}

TEST(StepThreads, OnlyTheKernelsThatGainKeepAllThreads) {
  // Step 0 halves on two threads; step 1 doubles; step 2 gains 5 %, under the 10 % a step must.
  FakePackage p{{100, 4, 10}, {50, 8, 9.5}};
  const tgc::StepThreads s = tune(p, {true, true, true}, 4);
  EXPECT_EQ(s.picked, "mixed");
  EXPECT_EQ(s.threads, (std::vector<int>{4, 1, 1}));
  EXPECT_EQ(s.stepsOnOne, 2);
  EXPECT_DOUBLE_EQ(s.mixedMicros, 64);
}

TEST(StepThreads, KernelsThatAllGainStayOnAllThreads) {
  FakePackage p{{100, 40}, {55, 22}};
  const tgc::StepThreads s = tune(p, {true, true});
  EXPECT_EQ(s.picked, "all");
  EXPECT_EQ(s.threads, (std::vector<int>{2, 2}));
  EXPECT_EQ(s.stepsOnOne, 0);
}

TEST(StepThreads, AMixSlowerAsAWholeThanItsStepsSayIsNotKept) {
  // Per step the mix {2, 1, 2, 1} looks best, but every switch costs 30 µs: the whole runs
  // decide, and all threads (73) beat one thread (88) and the mix (58 + 90).
  FakePackage p{{40, 4, 40, 4}, {30, 6.5, 30, 6.5}, 30};
  const tgc::StepThreads s = tune(p, {true, true, true, true});
  EXPECT_EQ(s.picked, "all");
  EXPECT_EQ(s.threads, (std::vector<int>{2, 2, 2, 2}));
  EXPECT_GT(s.mixedMicros, s.allMicros);
}

TEST(StepThreads, StepsThatAreNotKernelsKeepTheSessionsCount) {
  FakePackage p{{50, 40}, {90, 80}};
  const tgc::StepThreads s = tune(p, {false, true}, 3);
  EXPECT_EQ(s.picked, "one");
  EXPECT_EQ(s.threads, (std::vector<int>{3, 1}));
  EXPECT_EQ(s.stepsOnOne, 1);
}

TEST(StepThreads, NothingIsTimedAtOneThreadOrForRunsTooLongOrTooShort) {
  FakePackage small{{5}, {9}};
  tgc::StepThreads s = tune(small, {true}, 1);
  EXPECT_EQ(small.runs, 0);
  EXPECT_EQ(s.threads, (std::vector<int>{1}));
  FakePackage big{{30000, 1}, {20000, 2}};
  s = tune(big, {true, true});
  EXPECT_EQ(big.runs, 1) << "a run over kStepThreadsMaxRunMicros ends the tuning";
  EXPECT_EQ(s.picked, "runs too long to tune");
  EXPECT_EQ(s.threads, (std::vector<int>{2, 2}));
  EXPECT_NE(tgc::describeStepThreads(s, 2).find("runs too long"), std::string::npos);
  FakePackage tiny{{5, 4}, {2, 2}};
  s = tune(tiny, {true, true});
  EXPECT_EQ(tiny.runs, 1) << "a run under kStepThreadsMinRunMicros ends the tuning";
  EXPECT_EQ(s.picked, "runs too short to tune");
  EXPECT_EQ(s.threads, (std::vector<int>{2, 2}));
}

namespace {

/// A real package: one kernel large enough to split, several small ones; its directory.
std::string writeStepThreadsPackage() {
  mlir::MLIRContext ctx;
  ctx.disableMultithreading();
  ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(R"(
func.func @main(%x: tensor<256x1024xf32> {tg.name = "x"}, %g: tensor<1024xf32> {tg.name = "g"}) -> (tensor<256x1024xf32> {tg.name = "y"}) {
  %0 = tg.tanh %x : tensor<256x1024xf32>
  %1 = tg.layer_norm %0, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<256x1024xf32>, tensor<1024xf32> -> tensor<256x1024xf32>
  %2 = tg.sigmoid %1 : tensor<256x1024xf32>
  return %2 : tensor<256x1024xf32>
}
)",
                                                        &ctx);
  EXPECT_TRUE(module);
  const char *t = std::getenv("TEST_TMPDIR");
  const std::string root = t && *t ? t : "/tmp";
  const std::string dir = root + "/step_threads.tgpkg";
  tgc::PackageInfo info;
  info.tgcVersion = "test";
  info.modelName = "step_threads";
  auto stats = tgc::writeCpuPackage(*module, dir, info, root + "/step_threads_kcache");
  EXPECT_TRUE((bool)stats) << llvm::toString(stats.takeError());
  return dir;
}

std::vector<tgc::HostTensor> stepThreadsInputs() {
  tgc::HostTensor x = tgc::HostTensor::zeros(tgc::DType::F32, {256, 1024}, "x");
  tgc::HostTensor g = tgc::HostTensor::zeros(tgc::DType::F32, {1024}, "g");
  auto *xf = reinterpret_cast<float *>(x.data.data());
  for (int i = 0; i < 256 * 1024; ++i)
    xf[i] = (float)((i * 7919) % 2003) / 997.f - 1.f;
  auto *gf = reinterpret_cast<float *>(g.data.data());
  for (int i = 0; i < 1024; ++i)
    gf[i] = 0.5f + (float)(i % 13) / 13.f;
  return {x, g};
}

} // namespace

// A real package at two threads. Whatever the timing chose, its outputs equal, bit for bit,
// those of the same package on one thread and on two threads untuned (TGC_CPU_TUNE=0);
// `describe` says what was chosen only when tuned.
TEST(StepThreads, OutputsDoNotDependOnTheChoice) {
  const std::string dir = writeStepThreadsPackage();
  const std::vector<tgc::HostTensor> inputs = stepThreadsInputs();
  auto runOn = [&](int threads, bool tune, std::string &describe) {
    if (tune)
      unsetenv("TGC_CPU_TUNE");
    else
      setenv("TGC_CPU_TUNE", "0", 1);
    tgc::Status st;
    auto s = tgc::Session::load(dir, st, threads);
    EXPECT_TRUE(s) << st.message;
    std::vector<tgc::HostTensor> out;
    if (!s)
      return out;
    describe = s->describe();
    st = s->run(inputs, out);
    EXPECT_TRUE(st.ok) << st.message;
    return out;
  };
  std::string dTuned, dUntuned, dOne;
  const auto tuned = runOn(2, true, dTuned);
  const auto untuned = runOn(2, false, dUntuned);
  const auto one = runOn(1, true, dOne);
  unsetenv("TGC_CPU_TUNE");
  ASSERT_EQ(tuned.size(), 1u);
  ASSERT_EQ(untuned.size(), 1u);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(tuned[0].data, untuned[0].data) << "tuned and untuned two-thread runs differ";
  EXPECT_EQ(tuned[0].data, one[0].data) << "two threads and one thread differ";
  EXPECT_NE(dTuned.find("step threads: "), std::string::npos) << dTuned;
  EXPECT_NE(dTuned.find("timed at load"), std::string::npos) << dTuned;
  EXPECT_EQ(dUntuned.find("step threads: "), std::string::npos) << dUntuned;
  EXPECT_NE(dOne.find("step threads: all 1 (nothing to tune)"), std::string::npos) << dOne;
}

// The kernels' per-step count (tgk_set_step_threads) belongs to the calling thread, and a tuned
// session's run sets it step by step and clears it after: a count left on the thread before the
// run is gone after it, and the library's count shows again.
TEST(StepThreads, StepCountIsPerThreadAndEachRunClearsIt) {
  const std::string dir = writeStepThreadsPackage();
  unsetenv("TGC_CPU_TUNE");
  tgc::Status st;
  auto s = tgc::Session::load(dir, st, 2);
  ASSERT_TRUE(s) << st.message;
  // The session's own kernels.so: dlopen finds the loaded library by its file.
  void *dl = dlopen((dir + "/kernels.so").c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  ASSERT_NE(dl, nullptr) << dlerror();
  auto set = reinterpret_cast<void (*)(int)>(dlsym(dl, "tgk_set_step_threads"));
  auto get = reinterpret_cast<int (*)()>(dlsym(dl, "tgk_get_threads"));
  ASSERT_TRUE(set && get);
  EXPECT_EQ(get(), 2);
  set(1);
  EXPECT_EQ(get(), 1);
  int other = 0;
  std::thread([&] { other = get(); }).join();
  EXPECT_EQ(other, 2) << "another thread sees this thread's step count";
  // The library's count moved to 3 (as another session of these kernels loaded with 3 threads
  // would move it): the tuned session's steps still get their own counts (at most 2), and after
  // the run this thread reads the library's 3 again.
  auto setLibrary = reinterpret_cast<void (*)(int)>(dlsym(dl, "tgk_set_threads"));
  ASSERT_TRUE(setLibrary);
  setLibrary(3);
  std::vector<tgc::HostTensor> out;
  st = s->run(stepThreadsInputs(), out);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_EQ(get(), 3) << "the run did not clear the step count it set";
  setLibrary(2);
  dlclose(dl);
}
