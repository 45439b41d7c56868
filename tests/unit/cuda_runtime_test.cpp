// cuda_runtime_test.cpp — the CUDA runtime on a GPU (skipped cleanly where libcuda is missing or
// cuInit fails): each test model compiled for the device's arch matches its reference outputs on
// both test data sets, alternating sets in one session (CUDA graph replay with new inputs), through
// run() and runRefs(), with profiling on and off.
#include "compiler/Compile.h"
#include "frontends/onnx/TensorIO.h"
#include "runtime/Session.h"
#include "runtime/cuda/CudaSession.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace tgc;

namespace {

std::string modelsDir() {
  const char *d = std::getenv("TGC_MODELS_DIR");
  return d && *d ? d : "tests/data/models";
}

std::vector<HostTensor> readSet(const std::string &dir, const char *prefix) {
  std::vector<HostTensor> out;
  for (int i = 0;; ++i) {
    std::string p = dir + "/" + prefix + "_" + std::to_string(i) + ".pb";
    if (!llvm::sys::fs::exists(p))
      break;
    auto t = readTensorProtoFile(p);
    if (!t) {
      ADD_FAILURE() << llvm::toString(t.takeError());
      break;
    }
    out.push_back(std::move(*t));
  }
  return out;
}

class CudaModels : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    std::string why;
    if (!cuda::cudaDeviceAvailable(why, arch_))
      GTEST_SKIP() << "no usable GPU: " << why;
  }
  std::string arch_;
};

TEST_P(CudaModels, MatchesReferenceWithGraphReplay) {
  std::string model = GetParam();
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("tgc_cuda_rt", dir));
  CompileOptions o;
  o.modelPath = modelsDir() + "/" + model + "/model.onnx";
  o.outputPath = dir.str().str() + "/pkg";
  o.target = "cuda:" + arch_;
  llvm::raw_null_ostream quiet;
  auto r = compile(o, quiet);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());

  Status st;
  auto s = Session::load(o.outputPath, st);
  ASSERT_TRUE(s) << st.message;
  EXPECT_EQ(s->launchesPerRun(), r->package.kernels);
  std::vector<HostTensor> in[2], want[2];
  for (int k = 0; k < 2; ++k) {
    std::string set = modelsDir() + "/" + model + "/test_data_set_" + std::to_string(k);
    in[k] = readSet(set, "input");
    want[k] = readSet(set, "output");
    ASSERT_FALSE(in[k].empty());
  }
  // 0, 1, 0, 1: the first run captures the graph, the others replay it with new inputs.
  for (int rep = 0; rep < 4; ++rep) {
    int k = rep % 2;
    std::vector<HostTensor> got;
    if (rep == 3)
      s->setProfiling(true);
    st = s->run(in[k], got);
    ASSERT_TRUE(st.ok) << st.message;
    ASSERT_EQ(got.size(), want[k].size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_LE(relativeL2(got[i], want[k][i]), 1e-4) << model << " run " << rep << " output " << i;
    if (rep == 3) {
      EXPECT_EQ((int64_t)s->lastProfile().size(), r->package.kernels);
      s->setProfiling(false);
    } else {
      EXPECT_GE(s->lastDeviceMicros(), 0);
    }
  }
  // runRefs into caller-owned buffers.
  std::vector<HostTensor> got;
  for (const TensorSpec &spec : s->outputs())
    got.push_back(HostTensor::zeros(spec.dtype, spec.shape, spec.name));
  std::vector<TensorRef> ins, outs;
  for (HostTensor &t : in[0])
    ins.push_back({t.dtype, t.shape.data(), (int32_t)t.shape.size(), t.data.data(), t.data.size()});
  for (HostTensor &t : got)
    outs.push_back({t.dtype, t.shape.data(), (int32_t)t.shape.size(), t.data.data(), t.data.size()});
  st = s->runRefs(ins.data(), ins.size(), outs.data(), outs.size());
  ASSERT_TRUE(st.ok) << st.message;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(relativeL2(got[i], want[0][i]), 1e-4);
  // Wrong input shape: a clean error, no launch.
  std::vector<HostTensor> bad = in[0], out;
  bad[0].shape.push_back(1);
  EXPECT_FALSE(s->run(bad, out).ok);
  s.reset();
  llvm::sys::fs::remove_directories(dir);
}

INSTANTIATE_TEST_SUITE_P(TestModels, CudaModels,
                         ::testing::Values("bert_tiny", "gpt2_tiny", "llama_tiny", "vit_tiny",
                                           "parallel_mlp", "gpt2_tiny_dynamo"));

} // namespace
