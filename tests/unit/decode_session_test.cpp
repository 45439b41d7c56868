// decode_session_test.cpp — decode packages on the CPU (docs/runtime.md, "Decode packages"):
// a "counter" model (DecodePackage.h) compiled at two prompt lengths and as a one-token step,
// hand-assembled into a format-5 package with one state. The state persists across step()
// calls and is zeroed by prefill, the step plan runs for step(), the prefill bucket for
// prefill() (padded prompts included), greedy generation picks the argmax, sampling is seeded,
// positions and lengths out of range are refused, corrupt STATE ranges are refused at load,
// other packages refuse generation, and the C API generates.
#include "codegen/cpu/CpuBackend.h"
#include "runtime/Generate.h"
#include "runtime/Session.h"
#include "runtime/schema/PlanUtil.h"
#include "runtime/tgc_runtime.h"

#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "tests/unit/IrPackage.h"
#include "tests/unit/DecodePackage.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;
using namespace tgc::test;

namespace {

std::string tmpDir() {
  const char *t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

std::string compileIr(const std::string &ir, const std::string &name) {
  return writeCpuPackageFromIr(ir, tmpDir() + "/" + name, "counter", tmpDir() + "/kcache");
}

/// The logits the counter model gives for `token` when the state holds `state`.
std::vector<float> expected(int64_t token, const std::vector<float> &state) {
  std::vector<float> l(kVocab);
  for (int64_t v = 0; v < kVocab; ++v)
    l[(size_t)v] = tableOf(token, v) + state[(size_t)v];
  return l;
}

/// The state after a prefill and `steps` steps.
std::vector<float> stateAfter(int steps) {
  std::vector<float> s(kVocab);
  for (int64_t v = 0; v < kVocab; ++v)
    s[(size_t)v] = prefillInc(v) + float(steps) * stepInc(v);
  return s;
}

class DecodePackage : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    const std::string step = compileIr(counterIr(1, kMaxSeq, stepInc), "step.tgpkg");
    const std::string p4 = compileIr(counterIr(4, 4, prefillInc), "prefill4.tgpkg");
    const std::string p8 = compileIr(counterIr(8, 8, prefillInc), "prefill8.tgpkg");
    if (step.empty() || p4.empty() || p8.empty())
      return;
    stepDir_ = new std::string(step);
    dir_ = new std::string(tmpDir() + "/decode.tgpkg");
    assembleDecode(*dir_, {p4, p8}, {4, 8}, step);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete stepDir_;
  }
  void SetUp() override { ASSERT_TRUE(dir_) << "the counter packages did not compile"; }

  static std::unique_ptr<tgc::Session> load(const std::string &d) {
    tgc::Status st;
    auto s = tgc::Session::load(d, st, 1);
    EXPECT_TRUE(s) << st.message;
    return s;
  }
  /// A copy of the package whose plan `edit` changed; its load error.
  static std::string loadEdited(const std::string &name,
                                const std::function<void(tgc::plan::Plan &)> &edit) {
    const std::string d = tmpDir() + "/" + name;
    fs::remove_all(d);
    fs::copy(*dir_, d, fs::copy_options::recursive);
    tgc::plan::Plan p = readPlanFile(d);
    edit(p);
    writePlanFile(d, p);
    tgc::Status st;
    auto s = tgc::Session::load(d, st, 1);
    EXPECT_FALSE(s) << "the edited package loaded but should have been refused";
    return st.message;
  }
  static std::string *dir_, *stepDir_;
};
std::string *DecodePackage::dir_ = nullptr;
std::string *DecodePackage::stepDir_ = nullptr;

TEST_F(DecodePackage, DescribesItsDecodeInfoStatesAndStepPlan) {
  auto s = load(*dir_);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->maxSeq(), kMaxSeq);
  EXPECT_EQ(s->maxPromptTokens(), 8);
  EXPECT_EQ(s->vocab(), kVocab);
  ASSERT_EQ(s->inputs().size(), 3u); // the past is a state, not an input
  ASSERT_EQ(s->outputs().size(), 1u);
  const std::string d = s->describe();
  EXPECT_NE(d.find("tgc plan v5 (decode"), std::string::npos) << d;
  EXPECT_NE(d.find("decode:       max_seq 16, vocab 8"), std::string::npos) << d;
  EXPECT_NE(d.find("'past' f32 [1, 8], 32 bytes"), std::string::npos) << d;
  EXPECT_NE(d.find("step plan:"), std::string::npos) << d;
  EXPECT_NE(d.find("STATE[0]+0:32"), std::string::npos) << d;
}

TEST_F(DecodePackage, StatePersistsAcrossStepsAndPrefillZeroesIt) {
  auto s = load(*dir_);
  ASSERT_TRUE(s);
  std::vector<float> logits;
  for (int round = 0; round < 2; ++round) { // the second prefill starts from zeroed caches
    SCOPED_TRACE("round " + std::to_string(round));
    tgc::Status st = s->prefill({1, 2, 3}, logits); // bucket 4, padded
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_EQ(logits, expected(3, stateAfter(0)));
    for (int k = 1; k <= 3; ++k) {
      const int64_t token = (int64_t)k + 4;
      ASSERT_TRUE((st = s->step(token, 2 + k, logits)).ok) << st.message;
      EXPECT_EQ(logits, expected(token, stateAfter(k))) << "step " << k;
    }
  }
  // A prompt at a bucket's exact length, and one through the larger bucket.
  tgc::Status st = s->prefill({7, 7, 7, 0}, logits);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_EQ(logits, expected(0, stateAfter(0)));
  ASSERT_TRUE((st = s->prefill({1, 2, 3, 4, 5, 6}, logits)).ok) << st.message;
  EXPECT_EQ(logits, expected(6, stateAfter(0)));
  ASSERT_TRUE((st = s->step(2, 6, logits)).ok) << st.message;
  EXPECT_EQ(logits, expected(2, stateAfter(1)));
  // A plain bucketed run still works on the package (the prefill plans, the state as left).
  std::vector<tgc::HostTensor> out;
  tgc::HostTensor ids = tgc::HostTensor::zeros(tgc::DType::I64, {1, 2}, "");
  std::vector<tgc::HostTensor> in = {ids, ids, ids};
  ASSERT_TRUE((st = s->run(in, out)).ok) << st.message;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{1, 2, kVocab}));
}

TEST_F(DecodePackage, RefusesPositionsAndPromptsOutOfRange) {
  auto s = load(*dir_);
  ASSERT_TRUE(s);
  std::vector<float> logits;
  tgc::Status st = s->step(1, kMaxSeq, logits);
  ASSERT_FALSE(st.ok);
  EXPECT_NE(st.message.find("position 16 is outside the cache's 0..15"), std::string::npos)
      << st.message;
  EXPECT_FALSE(s->step(1, -1, logits).ok);
  st = s->step(kVocab, 0, logits); // the token indexes the table
  ASSERT_FALSE(st.ok);
  EXPECT_NE(st.message.find("input_ids"), std::string::npos) << st.message;
  st = s->prefill({}, logits);
  EXPECT_FALSE(st.ok);
  st = s->prefill(std::vector<int64_t>(9, 1), logits);
  ASSERT_FALSE(st.ok);
  EXPECT_NE(st.message.find("outside 1..8"), std::string::npos) << st.message;
  std::vector<int64_t> ids;
  tgc::GenerateStats stats;
  st = s->generate({1, 2, 3}, 14, {}, ids, stats);
  ASSERT_FALSE(st.ok);
  EXPECT_NE(st.message.find("exceed the package's cache of 16 positions"), std::string::npos)
      << st.message;
  EXPECT_TRUE(ids.empty());
  st = s->generate(std::vector<int64_t>(9, 1), 2, {}, ids, stats);
  ASSERT_FALSE(st.ok);
  EXPECT_NE(st.message.find("longer than the package's largest prefill bucket (8"),
            std::string::npos)
      << st.message;
  EXPECT_FALSE(s->generate({1}, 0, {}, ids, stats).ok);
}

TEST_F(DecodePackage, GreedyGenerationPicksTheArgmax) {
  auto s = load(*dir_);
  ASSERT_TRUE(s);
  const std::vector<int64_t> prompt = {5, 6};
  const int maxNew = 14; // 2 + 14 = max_seq
  // The reference: the model's logits by hand, argmax with the lowest id on ties.
  std::vector<int64_t> want;
  int64_t token = prompt.back();
  for (int k = 0; k < maxNew; ++k) {
    token = tgc::argmaxToken(expected(token, stateAfter(k)));
    want.push_back(token);
  }
  std::vector<int64_t> ids;
  tgc::GenerateStats stats;
  tgc::Status st = s->generate(prompt, maxNew, {}, ids, stats);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_EQ(ids, want);
  EXPECT_EQ(stats.promptTokens, 2);
  EXPECT_EQ(stats.newTokens, maxNew);
  EXPECT_EQ(stats.steps, maxNew - 1);
  EXPECT_GT(stats.decodeTokensPerS, 0);
  // The state's step increment reaches id 3 after enough steps: the argmax moves there.
  EXPECT_EQ(want.back(), 3);
  // An EOS id stops the loop after it.
  tgc::GenerateOptions eos;
  eos.eosId = want[2];
  ASSERT_TRUE((st = s->generate(prompt, maxNew, eos, ids, stats)).ok) << st.message;
  EXPECT_EQ(ids, std::vector<int64_t>(want.begin(), want.begin() + 3));
}

TEST_F(DecodePackage, SamplingIsSeeded) {
  auto s = load(*dir_);
  ASSERT_TRUE(s);
  tgc::GenerateOptions opt;
  opt.temperature = 5.f;
  opt.seed = 42;
  std::vector<int64_t> a, b, greedy;
  tgc::GenerateStats stats;
  ASSERT_TRUE(s->generate({1}, 10, opt, a, stats).ok);
  ASSERT_TRUE(s->generate({1}, 10, opt, b, stats).ok);
  EXPECT_EQ(a, b) << "equal seeds, equal ids";
  for (int64_t id : a)
    EXPECT_TRUE(id >= 0 && id < kVocab);
  opt.topK = 1; // one candidate: the argmax
  ASSERT_TRUE(s->generate({1}, 10, opt, a, stats).ok);
  ASSERT_TRUE(s->generate({1}, 10, {}, greedy, stats).ok);
  EXPECT_EQ(a, greedy);
}

TEST(Generate, ArgmaxTakesTheLowestIdOnTies) {
  EXPECT_EQ(tgc::argmaxToken({1.f, 3.f, 3.f, 2.f}), 1);
  EXPECT_EQ(tgc::argmaxToken({NAN, -1.f, NAN}), 1);
  EXPECT_EQ(tgc::argmaxToken({}), -1);
}

TEST_F(DecodePackage, RefusesCorruptStatesAtLoad) {
  std::string e = loadEdited("state_range.tgpkg", [](tgc::plan::Plan &p) {
    tgc::plan::Plan &step = *p.mutable_decode_step();
    step.mutable_steps(step.steps_size() - 1)->mutable_args(0)->set_offset(8);
  });
  EXPECT_NE(e.find("step plan: step"), std::string::npos) << e;
  EXPECT_NE(e.find("lies outside state 0 (32 bytes)"), std::string::npos) << e;
  e = loadEdited("state_index.tgpkg", [](tgc::plan::Plan &p) {
    tgc::plan::Plan &b = *p.mutable_buckets(0);
    b.mutable_steps(b.steps_size() - 1)->mutable_args(0)->set_index(1);
  });
  EXPECT_NE(e.find("bucket 0: step"), std::string::npos) << e;
  EXPECT_NE(e.find("state index 1 out of range (package has 1 states)"), std::string::npos) << e;
  e = loadEdited("no_step.tgpkg", [](tgc::plan::Plan &p) { p.clear_decode_step(); });
  EXPECT_NE(e.find("needs states, a step plan and its decode info"), std::string::npos) << e;
  e = loadEdited("bad_logits.tgpkg", [](tgc::plan::Plan &p) {
    p.mutable_decode()->set_logits(3);
  });
  EXPECT_NE(e.find("decode.logits = 3 is not an output"), std::string::npos) << e;
  e = loadEdited("bad_mask.tgpkg", [](tgc::plan::Plan &p) {
    p.mutable_decode_step()->mutable_inputs(1)->set_shape(1, 8);
  });
  EXPECT_NE(e.find("a one-token step needs [1, 16]"), std::string::npos) << e;
  e = loadEdited("state_in_v4.tgpkg", [](tgc::plan::Plan &p) {
    p.set_format_version(tgc::plan::kPlanFormatVersionBucketed);
  });
  EXPECT_NE(e.find("package format 5"), std::string::npos) << e;
}

TEST_F(DecodePackage, OtherPackagesRefuseGeneration) {
  auto s = load(*stepDir_); // a single-shape package (the counter's step, past as an input)
  ASSERT_TRUE(s);
  std::vector<float> logits;
  std::vector<int64_t> ids;
  tgc::GenerateStats stats;
  EXPECT_EQ(s->maxSeq(), 0);
  for (const tgc::Status &st : {s->prefill({1}, logits), s->step(1, 0, logits),
                                s->generate({1}, 2, {}, ids, stats)}) {
    ASSERT_FALSE(st.ok);
    EXPECT_NE(st.message.find("not a decode package"), std::string::npos) << st.message;
  }
}

TEST_F(DecodePackage, CApiGenerates) {
  char *err = nullptr;
  tgc_session *s = tgc_session_load(dir_->c_str(), 1, &err);
  ASSERT_TRUE(s) << err;
  int64_t maxSeq = 0, maxPrompt = 0, vocab = 0;
  ASSERT_EQ(tgc_session_decode_info(s, &maxSeq, &maxPrompt, &vocab), 1);
  EXPECT_EQ(maxSeq, kMaxSeq);
  EXPECT_EQ(maxPrompt, 8);
  EXPECT_EQ(vocab, kVocab);
  const int64_t prompt[] = {5, 6};
  int64_t ids[14];
  size_t n = 0;
  double prefillMs = -1, tps = -1;
  ASSERT_EQ(tgc_session_generate(s, prompt, 2, 14, nullptr, ids, &n, &prefillMs, &tps, &err), 0)
      << err;
  ASSERT_EQ(n, 14u);
  EXPECT_GE(prefillMs, 0);
  EXPECT_GT(tps, 0);
  std::vector<int64_t> want;
  tgc::GenerateStats stats;
  auto cpp = load(*dir_);
  ASSERT_TRUE(cpp->generate({5, 6}, 14, {}, want, stats).ok);
  EXPECT_EQ(std::vector<int64_t>(ids, ids + n), want);
  // prefill and step through the C API.
  float logits[kVocab];
  ASSERT_EQ(tgc_session_prefill(s, prompt, 2, logits, kVocab, &err), 0) << err;
  EXPECT_EQ(std::vector<float>(logits, logits + kVocab), expected(6, stateAfter(0)));
  ASSERT_EQ(tgc_session_step(s, 4, 2, logits, kVocab, &err), 0) << err;
  EXPECT_EQ(std::vector<float>(logits, logits + kVocab), expected(4, stateAfter(1)));
  EXPECT_EQ(tgc_session_step(s, 4, 2, logits, kVocab - 1, &err), -1);
  EXPECT_NE(std::string(err).find("logits buffer has 7 floats"), std::string::npos) << err;
  tgc_free_error(err);
  err = nullptr;
  EXPECT_EQ(tgc_session_generate(s, prompt, 2, 15, nullptr, ids, &n, nullptr, nullptr, &err), -1);
  EXPECT_NE(std::string(err).find("exceed"), std::string::npos) << err;
  tgc_free_error(err);
  tgc_generate_options opt;
  tgc_generate_options_init(&opt);
  EXPECT_EQ(opt.eos_id, -1);
  opt.struct_size = 3;
  err = nullptr;
  EXPECT_EQ(tgc_session_generate(s, prompt, 2, 2, &opt, ids, &n, nullptr, nullptr, &err), -1);
  EXPECT_NE(std::string(err).find("struct_size"), std::string::npos) << err;
  tgc_free_error(err);
  tgc_session_free(s);
}

} // namespace

namespace {

// Kernels that write a state directly (the in-place package the CUDA test runs too): each step's
// logits name the token it read (E[token]²), and greedy generation follows the table.
TEST(DecodeInPlace, KernelsWriteTheStateDirectly) {
  const std::string step = compileIr(counterIr(1, kMaxSeq, stepInc, false), "sq_step.tgpkg");
  const std::string p4 = compileIr(counterIr(4, 4, prefillInc, false), "sq_p4.tgpkg");
  const std::string p8 = compileIr(counterIr(8, 8, prefillInc, false), "sq_p8.tgpkg");
  ASSERT_FALSE(step.empty() || p4.empty() || p8.empty());
  const std::string dir = tmpDir() + "/sq_decode.tgpkg";
  assembleDecode(dir, {p4, p8}, {4, 8}, step, /*inPlace=*/true);
  tgc::Status st;
  auto s = tgc::Session::load(dir, st, 1);
  ASSERT_TRUE(s) << st.message;
  auto squares = [](int64_t token) {
    std::vector<float> l(kVocab);
    for (int64_t v = 0; v < kVocab; ++v)
      l[(size_t)v] = tableOf(token, v) * tableOf(token, v);
    return l;
  };
  std::vector<float> logits;
  ASSERT_TRUE((st = s->prefill({1, 2, 3}, logits)).ok) << st.message;
  EXPECT_EQ(logits, squares(3));
  for (int64_t k = 0; k < 6; ++k) {
    const int64_t token = (k * 5 + 1) % kVocab;
    ASSERT_TRUE((st = s->step(token, 3 + k, logits)).ok) << st.message;
    EXPECT_EQ(logits, squares(token)) << "step " << k << " (token " << token << ")";
  }
  std::vector<int64_t> ids;
  tgc::GenerateStats stats;
  ASSERT_TRUE((st = s->generate({4, 5, 6, 7, 0}, 10, {}, ids, stats)).ok) << st.message;
  std::vector<int64_t> want;
  for (int64_t t = 0, k = 0; k < 10; ++k)
    want.push_back(t = (t + 1) % kVocab);
  EXPECT_EQ(ids, want);
  EXPECT_NE(s->describe().find("STATE[0]"), std::string::npos);
}

} // namespace
