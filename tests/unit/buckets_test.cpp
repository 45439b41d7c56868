// buckets_test.cpp — bucketed compiles (docs/design.md, "Shape buckets"): symbols and bucket
// values from --input-shape ranges, and the merged package (shared weights, one arena, the
// length inputs only where attention needs them). Running such packages: bucket_run_test and
// tests/e2e/run_buckets.py.
#include "driver/Buckets.h"
#include "driver/Compile.h"
#include "runtime/schema/PlanUtil.h"
#include "tests/unit/TestFiles.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

namespace tgc {
namespace {

const std::string kModels = "tests/data/models"; // runfiles path of //tests/data:models

std::vector<GraphInputDims> idsInput() {
  return {{"ids", {-1, -1}, {"batch", "seq"}, true}, {"mask", {-1, -1}, {"batch", "seq"}, true}};
}

TEST(Buckets, DefaultValues) {
  EXPECT_EQ(defaultBucketValues(1, 8, true), (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(defaultBucketValues(1, 128, false), (std::vector<int64_t>{16, 32, 64, 128}));
  EXPECT_EQ(defaultBucketValues(1, 100, false), (std::vector<int64_t>{16, 32, 64, 100}));
  EXPECT_EQ(defaultBucketValues(20, 512, false), (std::vector<int64_t>{32, 64, 128, 256, 512}));
  EXPECT_EQ(defaultBucketValues(3, 10, true), (std::vector<int64_t>{3, 4, 8, 10}));
  EXPECT_EQ(defaultBucketValues(1, 7, false), (std::vector<int64_t>{7}));
}

TEST(Buckets, NamedDimsBindTogether) {
  CompileOptions o;
  o.inputRanges["ids"] = {{1, 8}, {1, 128}};
  auto plan = planBuckets(o, idsInput());
  ASSERT_TRUE((bool)plan) << llvm::toString(plan.takeError());
  ASSERT_EQ(plan->symbols.size(), 2u);
  EXPECT_EQ(plan->symbols[0].name, "batch");
  EXPECT_EQ(plan->symbols[1].name, "seq");
  // The mask declares the same names: it follows the ids without a flag of its own.
  EXPECT_EQ(plan->dimSymbols.at("mask"), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(plan->buckets.size(), 16u);
  EXPECT_EQ(plan->buckets.front(), (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(plan->buckets.back(), (std::vector<int64_t>{8, 128}));
  auto shapes = plan->shapesOf(0, {});
  EXPECT_EQ(shapes.at("mask"), (std::vector<int64_t>{1, 16}));
}

TEST(Buckets, ChosenValuesAndErrors) {
  CompileOptions o;
  o.inputRanges["ids"] = {{1, 8}, {1, 128}};
  o.bucketValues["seq"] = {32, 128};
  auto plan = planBuckets(o, idsInput());
  ASSERT_TRUE((bool)plan) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->buckets.size(), 8u);

  auto refused = [&](CompileOptions opts, const std::string &want) {
    SCOPED_TRACE(want);
    auto p = planBuckets(opts, idsInput());
    ASSERT_FALSE((bool)p);
    std::string msg = llvm::toString(p.takeError());
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
  };
  CompileOptions bad = o;
  bad.bucketValues["seq"] = {32, 64};
  refused(bad, "the last value must be the range's max, 128");
  bad.bucketValues["seq"] = {64, 32, 128};
  refused(bad, "values must ascend");
  bad.bucketValues = {{"sequence", {128}}};
  refused(bad, "--buckets names 'sequence', which is not a varying dim (symbols: batch, seq)");
  bad = o;
  bad.inputShapes["mask"] = {8, 128};
  refused(bad, "input 'mask' dim 0 is 'batch', which varies over 1..8");
  bad = o;
  bad.inputRanges["mask"] = {{1, 4}, {1, 128}};
  refused(bad, "is 'batch', given 1..4 here and 1..8 elsewhere");
  bad = o;
  bad.inputRanges["ids"] = {{1, 8}};
  refused(bad, "graph input 'ids' has rank 2 but the given shape has rank 1");
  bad = o;
  bad.inputRanges = {{"ids", {{1, 512}, {1, 4096}}}};
  bad.bucketValues.clear();
  refused(bad, "more than 64 buckets");
  std::vector<GraphInputDims> fixed = {{"ids", {1, 32}, {"", ""}, true}};
  bad = o;
  bad.bucketValues.clear();
  auto p = planBuckets(bad, fixed);
  ASSERT_FALSE((bool)p);
  EXPECT_NE(llvm::toString(p.takeError()).find("input 'ids' dim 0 is fixed at 1 in the model"),
            std::string::npos);
}

/// Compiles `model` for the CPU with ranges; returns the top-level plan.
plan::Plan compileBucketed(const std::string &model, const std::string &out,
                           std::vector<DimRange> ranges,
                           std::map<std::string, std::vector<int64_t>> values) {
  CompileOptions o;
  o.modelPath = kModels + "/" + model + "/model.onnx";
  o.outputPath = out;
  o.target = llvm::cantFail(parseTarget("cpu:x86-64-v2"));
  o.inputRanges["input_0"] = std::move(ranges);
  o.bucketValues = std::move(values);
  std::string log;
  llvm::raw_string_ostream os(log);
  auto r = compile(o, os);
  EXPECT_TRUE((bool)r) << (r ? "" : llvm::toString(r.takeError()));
  plan::Plan p;
  EXPECT_TRUE(p.ParseFromString(test::readFile(out + "/plan.pb")));
  return p;
}

TEST(BucketedPackage, SharedWeightsOneArena) {
  const std::string out = testing::TempDir() + "/bert_buckets";
  plan::Plan p = compileBucketed("bert_tiny_dyn", out, {{1, 4}, {1, 32}},
                                 {{"batch", {1, 4}}, {"seq", {16, 32}}});
  ASSERT_EQ(p.buckets_size(), 4);
  EXPECT_EQ(p.format_version(), 4u);
  EXPECT_TRUE(plan::planChecksumMatches(p));
  ASSERT_EQ(p.symbols_size(), 2);
  EXPECT_EQ(p.symbols(0).name(), "batch");
  EXPECT_EQ(p.symbols(1).max(), 32);
  ASSERT_EQ(p.inputs_size(), 1);
  EXPECT_EQ(p.inputs(0).shape(0), 4);
  EXPECT_EQ(p.inputs(0).shape(1), 32);
  EXPECT_EQ(std::vector<int32_t>(p.inputs(0).dim_symbols().begin(), p.inputs(0).dim_symbols().end()),
            (std::vector<int32_t>{0, 1}));
  ASSERT_EQ(p.outputs_size(), 1);
  EXPECT_EQ(std::vector<int32_t>(p.outputs(0).dim_symbols().begin(),
                                 p.outputs(0).dim_symbols().end()),
            (std::vector<int32_t>{0, 1, -1}));
  int64_t largestArena = 0;
  for (const plan::Plan &b : p.buckets()) {
    largestArena = std::max(largestArena, b.arena_bytes());
    EXPECT_EQ(b.weights_bytes(), p.weights_bytes());
    EXPECT_TRUE(llvm::sys::fs::exists(out + "/" + b.kernels_file())) << b.kernels_file();
    // BERT attends to every key: each bucket reads the run's length to mask padded keys.
    ASSERT_EQ(b.inputs_size(), 2);
    EXPECT_EQ(b.inputs(1).length_of(), 2); // symbol 1 ("seq") + 1
  }
  EXPECT_EQ(p.arena_bytes(), largestArena);
  EXPECT_EQ(p.buckets(0).bucket_values(0), 1);
  EXPECT_EQ(p.buckets(3).bucket_values(1), 32);

  // The weights are the model's once: the size of a single-shape package's, give or take the
  // shape-sized tables (position ids) of the largest bucket.
  CompileOptions single;
  single.modelPath = kModels + "/bert_tiny_dyn/model.onnx";
  single.outputPath = testing::TempDir() + "/bert_single";
  single.target = llvm::cantFail(parseTarget("cpu:x86-64-v2"));
  single.inputShapes["input_0"] = {4, 32};
  llvm::raw_null_ostream quiet;
  ASSERT_TRUE((bool)compile(single, quiet));
  plan::Plan one;
  ASSERT_TRUE(one.ParseFromString(test::readFile(single.outputPath + "/plan.pb")));
  EXPECT_LE(p.weights_bytes(), one.weights_bytes() + one.weights_bytes() / 50)
      << "bucketed " << p.weights_bytes() << " vs single " << one.weights_bytes();
}

TEST(BucketedPackage, CausalModelsNeedNoLength) {
  const std::string out = testing::TempDir() + "/gpt2_buckets";
  plan::Plan p = compileBucketed("gpt2_tiny_dyn", out, {{1, 2}, {1, 32}},
                                 {{"batch", {2}}, {"seq", {16, 32}}});
  ASSERT_EQ(p.buckets_size(), 2);
  for (const plan::Plan &b : p.buckets())
    EXPECT_EQ(b.inputs_size(), 1) << "a causal mask already hides padded keys";
}

} // namespace
} // namespace tgc
