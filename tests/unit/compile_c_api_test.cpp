// compile_c_api_test.cpp — the C compile API (driver/tgc_compiler.h): options read through
// struct_size, refusals as messages (never an exit), model bytes compiled from a private folder.
#include "driver/tgc_compiler.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>

namespace {

const std::string kModel = "tests/data/models/parallel_mlp/model.onnx"; // runfiles path

std::string tmpDir() {
  const char *t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

bool exists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

/// Runs tgc_compile; returns its message ("" on success).
std::string compileMessage(const char *model, size_t size, const tgc_compile_options *o,
                           const std::string &out) {
  char *err = nullptr;
  const int rc = tgc_compile(model, size, o, out.c_str(), &err);
  std::string m = err ? err : "";
  tgc_free_error(err);
  EXPECT_EQ(rc == 0, m.empty()) << m;
  return m;
}

TEST(CompileCApi, RefusesOptionsNotFilledByInit) {
  tgc_compile_options o;
  std::memset(&o, 0, sizeof o); // struct_size 0: the caller skipped tgc_compile_options_init
  o.target = "cuda:sm_90";
  const std::string out = tmpDir() + "/zeroed.tgpkg";
  std::string m = compileMessage(kModel.c_str(), 0, &o, out);
  EXPECT_NE(m.find("struct_size is 0"), std::string::npos) << m;
  EXPECT_NE(m.find("tgc_compile_options_init"), std::string::npos) << m;
  EXPECT_FALSE(exists(out));
}

TEST(CompileCApi, OptionsAndErrorsAsMessages) {
  tgc_compile_options o;
  tgc_compile_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof o);
  o.target = "cuda:sm_90"; // NVRTC: no host compiler, no GPU
  o.cache_dir = "";
  std::string m = compileMessage(kModel.c_str(), 0, &o, tmpDir() + "/ok.tgpkg");
  EXPECT_EQ(m, "");
  EXPECT_TRUE(exists(tmpDir() + "/ok.tgpkg/plan.pb"));

  o.precision = "fp8";
  m = compileMessage(kModel.c_str(), 0, &o, tmpDir() + "/fp8.tgpkg");
  EXPECT_NE(m.find("fp8"), std::string::npos) << m;
  o.precision = nullptr;

  int64_t dims[] = {0, 4};
  tgc_input_shape shape = {"x", 2, dims};
  o.input_shapes = &shape;
  o.num_input_shapes = 1;
  m = compileMessage(kModel.c_str(), 0, &o, tmpDir() + "/dims.tgpkg");
  EXPECT_NE(m.find("input_shapes[0] ('x'): dim 0 is not >= 1"), std::string::npos) << m;
  o.input_shapes = nullptr;
  m = compileMessage(kModel.c_str(), 0, &o, tmpDir() + "/dims.tgpkg");
  EXPECT_NE(m.find("input_shapes is NULL"), std::string::npos) << m;
  o.num_input_shapes = 0;

  m = compileMessage(kModel.c_str(), 0, &o, "");
  EXPECT_NE(m.find("out_dir"), std::string::npos) << m;
}

TEST(CompileCApi, ModelBytes) {
  std::ifstream f(kModel, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 100u);
  tgc_compile_options o;
  tgc_compile_options_init(&o);
  o.target = "cuda:sm_90";
  o.cache_dir = "";
  const std::string out = tmpDir() + "/bytes.tgpkg";
  EXPECT_EQ(compileMessage(bytes.data(), bytes.size(), &o, out), "");
  std::ifstream plan(out + "/plan.txt");
  std::string text((std::istreambuf_iterator<char>(plan)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("model:        model "), std::string::npos) << text.substr(0, 300);

  // Bytes that are not a model: a message, nothing written.
  const std::string junk = "not an onnx model at all";
  const std::string bad = tmpDir() + "/junk.tgpkg";
  std::string m = compileMessage(junk.data(), junk.size(), &o, bad);
  EXPECT_FALSE(m.empty());
  EXPECT_FALSE(exists(bad));
}

} // namespace

// Shape buckets through the C API: ranges and bucket sizes give a bucketed package (its plan
// lists the buckets); a caller built against the first layout (struct_size ending at `verbose`)
// still compiles, with the new fields at their defaults.
TEST(CompileCApi, InputRangesAndBuckets) {
  tgc_compile_options o;
  tgc_compile_options_init(&o);
  o.cache_dir = "";
  const int64_t lo[] = {1, 1}, hi[] = {4, 32};
  tgc_input_range range = {"input_0", 2, lo, hi};
  const int64_t seq[] = {16, 32};
  tgc_bucket_values buckets = {"seq", 2, seq};
  o.input_ranges = &range;
  o.num_input_ranges = 1;
  o.buckets = &buckets;
  o.num_buckets = 1;
  const std::string out = tmpDir() + "/ranges.tgpkg";
  ASSERT_EQ(compileMessage("tests/data/models/gpt2_tiny_dyn/model.onnx", 0, &o, out), "");
  std::ifstream plan(out + "/plan.txt");
  std::string text((std::istreambuf_iterator<char>(plan)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("bucket 5: batch=4 seq=32"), std::string::npos) << text.substr(0, 400);

  const int64_t bad[] = {8, 32};
  range.max_dims = lo;
  range.min_dims = bad;
  std::string m = compileMessage("tests/data/models/gpt2_tiny_dyn/model.onnx", 0, &o,
                                 tmpDir() + "/bad.tgpkg");
  EXPECT_NE(m.find("input_ranges[0] ('input_0'): dim 0 range 8..1 is empty"), std::string::npos)
      << m;

  tgc_compile_options old;
  tgc_compile_options_init(&old);
  old.struct_size = offsetof(tgc_compile_options, input_ranges);
  old.cache_dir = "";
  EXPECT_EQ(compileMessage(kModel.c_str(), 0, &old, tmpDir() + "/old.tgpkg"), "");
}
