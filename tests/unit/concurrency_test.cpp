// concurrency_test.cpp — the runtime from many threads: 8 threads each with its own Session of one
// package directory (loaded concurrently) give bit-identical outputs to a serial run; one Session
// shared by 8 threads refuses overlapping runs with an error instead of racing on its arena; the C
// API behaves the same. Run under ThreadSanitizer with --config=tsan (docs/hardening.md).
#include "codegen/cpu/CpuBackend.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "runtime/Session.h"
#include "runtime/tgc_runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

// Under ThreadSanitizer: the OpenMP runtime that generated kernels use (libomp, or libgomp with
// g++) synchronizes its thread pool and internal allocator with atomics and futexes that an
// uninstrumented library does not report to TSan, so its memset/free of per-thread memory shows
// up as races between sessions. Those reports are about libomp itself, not about tgc's runtime:
// suppress only what is called from the OpenMP libraries.
extern "C" const char *__tsan_default_suppressions() {
  return "called_from_lib:libomp.so\n"
         "called_from_lib:libgomp.so\n"
         "race:libomp.so\n"
         "race:libgomp.so\n";
}

namespace {

constexpr int kThreads = 8;
constexpr int kIters = 12;
constexpr int64_t kRows = 16, kCols = 64;

std::string tmpRoot() {
  const char *t = std::getenv("TEST_TMPDIR");
  return t && *t ? t : "/tmp";
}

/// Deterministic values in [-1, 1).
std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (auto &x : v) {
    s = s * 1664525u + 1013904223u;
    x = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}

std::string dense(const std::vector<float> &v, int64_t rows, int64_t cols) {
  std::ostringstream os;
  os.precision(9);
  os << "[";
  for (int64_t r = 0; r < rows; ++r) {
    os << (r ? ", " : "") << (rows > 1 ? "[" : "");
    for (int64_t c = 0; c < cols; ++c)
      os << (c ? ", " : "") << v[(size_t)(r * cols + c)];
    os << (rows > 1 ? "]" : "");
  }
  return os.str() + "]";
}

/// linear (BLAS) + bias + tanh + softmax + layer norm: kernels, arena reuse, two outputs.
std::string packageIR() {
  std::ostringstream os;
  os << R"(
func.func @main(%x: tensor<16x64xf32> {tg.name = "x"}) -> (tensor<16x64xf32> {tg.name = "h"}, tensor<16x64xf32> {tg.name = "p"}) {
  %w = tg.constant dense<)" << dense(values(kCols * kCols, 1), kCols, kCols) << R"(> : tensor<64x64xf32>
  %b = tg.constant dense<)" << dense(values(kCols, 2), 1, kCols) << R"(> : tensor<64xf32>
  %g = tg.constant dense<)" << dense(values(kCols, 3), 1, kCols) << R"(> : tensor<64xf32>
  %0 = tg.linear %x, %w : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
  %1 = tg.add %0, %b : tensor<16x64xf32>, tensor<64xf32> -> tensor<16x64xf32>
  %2 = tg.tanh %1 : tensor<16x64xf32>
  %3 = tg.softmax %2 {axis = 1 : i64} : tensor<16x64xf32>
  %4 = tg.layer_norm %3, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : tensor<16x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<16x64xf32>
  return %2, %4 : tensor<16x64xf32>, tensor<16x64xf32>
}
)";
  return os.str();
}

const std::string &packageDir() {
  static const std::string dir = [] {
    mlir::MLIRContext ctx;
    ctx.disableMultithreading();
    ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>();
    auto module = mlir::parseSourceString<mlir::ModuleOp>(packageIR(), &ctx);
    if (!module)
      return std::string();
    std::string d = tmpRoot() + "/concurrency.tgpkg";
    tgc::PackageInfo info;
    info.tgcVersion = "test";
    info.modelName = "concurrency";
    auto stats = tgc::writeCpuPackage(*module, d, info, tmpRoot() + "/concurrency_kcache");
    if (!stats) {
      ADD_FAILURE() << llvm::toString(stats.takeError());
      return std::string();
    }
    return d;
  }();
  return dir;
}

/// Input of thread t, iteration i.
tgc::HostTensor inputFor(int t, int i) {
  tgc::HostTensor x = tgc::HostTensor::zeros(tgc::DType::F32, {kRows, kCols}, "x");
  auto v = values((size_t)(kRows * kCols), (uint32_t)(1000 + t * 100 + i));
  std::memcpy(x.data.data(), v.data(), v.size() * 4);
  return x;
}

class Concurrency : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(packageDir().empty());
    // The serial reference: one session, every (thread, iteration) input in turn.
    tgc::Status st;
    auto s = tgc::Session::load(packageDir(), st, 1);
    ASSERT_TRUE(s) << st.message;
    want.assign(kThreads, {});
    for (int t = 0; t < kThreads; ++t)
      for (int i = 0; i < kIters; ++i) {
        std::vector<tgc::HostTensor> out;
        st = s->run({inputFor(t, i)}, out);
        ASSERT_TRUE(st.ok) << st.message;
        ASSERT_EQ(out.size(), 2u);
        want[t].push_back(std::move(out));
      }
  }
  std::vector<std::vector<std::vector<tgc::HostTensor>>> want; // [thread][iteration][output]
};

} // namespace

// 8 threads, each loading its own Session of the same directory at the same time and running.
TEST_F(Concurrency, SessionPerThreadMatchesSerial) {
  std::atomic<int> failures{0}, runs{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      while (!go.load())
        std::this_thread::yield();
      tgc::Status st;
      auto s = tgc::Session::load(packageDir(), st, 1);
      if (!s) {
        errors[t] = st.message;
        ++failures;
        return;
      }
      for (int i = 0; i < kIters; ++i) {
        std::vector<tgc::HostTensor> out;
        st = s->run({inputFor(t, i)}, out);
        if (!st.ok) {
          errors[t] = st.message;
          ++failures;
          return;
        }
        for (size_t o = 0; o < out.size(); ++o)
          if (out[o].data != want[t][i][o].data) {
            errors[t] = "output " + std::to_string(o) + " of iteration " + std::to_string(i) +
                        " differs from the serial run";
            ++failures;
            return;
          }
        ++runs;
      }
    });
  go = true;
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(runs.load(), kThreads * kIters);
}

// 8 sessions loaded up front (one package, loaded once per session), then run from 8 threads at
// once, several rounds, through the caller-buffer API.
TEST_F(Concurrency, PreloadedSessionsRunTogether) {
  std::vector<std::unique_ptr<tgc::Session>> sessions;
  for (int t = 0; t < kThreads; ++t) {
    tgc::Status st;
    sessions.push_back(tgc::Session::load(packageDir(), st, 1));
    ASSERT_TRUE(sessions.back()) << st.message;
  }
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      int64_t dims[] = {kRows, kCols};
      std::vector<float> h(kRows * kCols), p(kRows * kCols);
      for (int i = 0; i < kIters && errors[t].empty(); ++i) {
        tgc::HostTensor x = inputFor(t, i);
        tgc::TensorRef in{tgc::DType::F32, dims, 2, x.data.data(), x.data.size()};
        tgc::TensorRef out[] = {{tgc::DType::F32, dims, 2, h.data(), h.size() * 4},
                                {tgc::DType::F32, dims, 2, p.data(), p.size() * 4}};
        tgc::Status st = sessions[t]->runRefs(&in, 1, out, 2);
        if (!st.ok)
          errors[t] = st.message;
        else if (std::memcmp(h.data(), want[t][i][0].data.data(), h.size() * 4) ||
                 std::memcmp(p.data(), want[t][i][1].data.data(), p.size() * 4))
          errors[t] = "iteration " + std::to_string(i) + " differs from the serial run";
      }
    });
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
}

// One Session shared by 8 threads: a Session owns one arena, so overlapping runs are refused
// with an error (never a data race); the runs that go through are correct.
TEST_F(Concurrency, SharedSessionRefusesOverlappingRuns) {
  tgc::Status st;
  auto s = tgc::Session::load(packageDir(), st, 1);
  ASSERT_TRUE(s) << st.message;
  std::atomic<int> ok{0}, refused{0}, wrong{0};
  std::vector<std::string> unexpected(kThreads);
  std::vector<std::thread> threads;
  std::atomic<bool> go{false};
  const int rounds = 10 * kIters;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<tgc::HostTensor> inputs;
      for (int i = 0; i < kIters; ++i)
        inputs.push_back(inputFor(t, i));
      while (!go.load())
        std::this_thread::yield();
      for (int round = 0; round < rounds; ++round) {
        int i = round % kIters;
        std::vector<tgc::HostTensor> out;
        tgc::Status r = s->run({inputs[i]}, out);
        if (r.ok) {
          ++ok;
          for (size_t o = 0; o < out.size(); ++o)
            if (out[o].data != want[t][i][o].data)
              ++wrong;
        } else if (r.message.find("already running on another thread") != std::string::npos) {
          ++refused;
        } else {
          unexpected[t] = r.message;
        }
      }
    });
  go = true;
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_TRUE(unexpected[t].empty()) << unexpected[t];
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(ok.load() + refused.load(), kThreads * rounds);
  std::cerr << "shared session: " << ok.load() << " runs, " << refused.load() << " refused\n";
  // Afterwards the session is free again.
  std::vector<tgc::HostTensor> out;
  ASSERT_TRUE(s->run({inputFor(0, 0)}, out).ok);
  EXPECT_EQ(out[1].data, want[0][0][1].data);
}

// The C API from 8 threads, one handle each.
TEST_F(Concurrency, CApiHandlePerThread) {
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      char *err = nullptr;
      tgc_session *s = tgc_session_load(packageDir().c_str(), 1, &err);
      if (!s) {
        errors[t] = err ? err : "load failed";
        tgc_free_error(err);
        return;
      }
      int64_t dims[] = {kRows, kCols};
      std::vector<float> h(kRows * kCols), p(kRows * kCols);
      for (int i = 0; i < kIters && errors[t].empty(); ++i) {
        tgc::HostTensor x = inputFor(t, i);
        tgc_tensor in{1, 2, dims, x.data.data(), x.data.size()};
        tgc_tensor out[] = {{1, 2, dims, h.data(), h.size() * 4}, {1, 2, dims, p.data(), p.size() * 4}};
        if (tgc_session_run(s, &in, 1, out, 2, &err) != 0) {
          errors[t] = err ? err : "run failed";
          tgc_free_error(err);
        } else if (std::memcmp(p.data(), want[t][i][1].data.data(), p.size() * 4)) {
          errors[t] = "iteration " + std::to_string(i) + " differs from the serial run";
        }
      }
      tgc_session_free(s);
    });
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
}
