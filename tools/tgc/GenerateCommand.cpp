// GenerateCommand.cpp — `tgc generate`: text generation with a decode package (`tgc compile
// --decode`): a prompt of token ids in, the new ids and the prefill and decode speeds out
// (docs/runtime.md, "Decode packages").
#include "tools/tgc/Cli.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace tgc::cli {

namespace {

struct GenerateArgs {
  std::string pkg, promptIds, jsonPath;
  int maxNew = 16, threads = 0, topK = 0;
  float temperature = 0.f;
  uint64_t seed = 0;
  int64_t eosId = -1;
};

/// "1,2,3" -> {1, 2, 3}; false with `err` on an empty list or an entry that is not an integer.
bool parseIds(const std::string &text, std::vector<int64_t> &ids, std::string &err) {
  ids.clear();
  for (size_t b = 0, e; b <= text.size(); b = e + 1) {
    e = std::min(text.find(',', b), text.size());
    const std::string item = text.substr(b, e - b);
    char *end = nullptr;
    errno = 0;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno == ERANGE) {
      err = "--prompt-ids: '" + item + "' is not an integer (expected ids like 1,2,3)";
      return false;
    }
    ids.push_back(v);
  }
  return true;
}

std::string joinIds(const std::vector<int64_t> &ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

int runGenerate(const GenerateArgs &a) {
  std::vector<int64_t> prompt;
  std::string err;
  if (!parseIds(a.promptIds, prompt, err))
    return fail(err);
  auto s = loadSession(a.pkg, a.threads, err);
  if (!s)
    return fail(err);
  if (s->maxSeq() <= 0)
    return fail("package '" + a.pkg + "' is not a decode package (compile the model with `tgc "
                "compile --decode --max-seq N` to generate with it)");
  GenerateOptions opt;
  opt.temperature = a.temperature;
  opt.topK = a.topK;
  opt.seed = a.seed;
  opt.eosId = a.eosId;
  std::vector<int64_t> ids;
  GenerateStats st;
  if (Status r = s->generate(prompt, a.maxNew, opt, ids, st); !r.ok)
    return fail(r.message);
  std::printf("new ids: %s\n", joinIds(ids).c_str());
  std::printf("prefill: %lld tokens in %.3f ms (%.1f tokens/s)\n", (long long)st.promptTokens,
              st.prefillMs, st.prefillTokensPerS);
  if (st.steps > 0)
    std::printf("decode:  %lld tokens in %.3f ms (%.1f tokens/s, one step plan run per token)\n",
                (long long)st.steps, st.decodeMs, st.decodeTokensPerS);
  if (a.jsonPath.empty())
    return 0;
  llvm::json::Array newIds, promptIds;
  for (int64_t id : ids)
    newIds.push_back(id);
  for (int64_t id : prompt)
    promptIds.push_back(id);
  llvm::json::Object js{{"package", a.pkg},
                        {"prompt_ids", std::move(promptIds)},
                        {"new_ids", std::move(newIds)},
                        {"max_new_tokens", a.maxNew},
                        {"max_seq", s->maxSeq()},
                        {"precision", s->precision()},
                        {"greedy", !(a.temperature > 0.f)},
                        {"temperature", a.temperature},
                        {"top_k", a.topK},
                        {"seed", (int64_t)a.seed},
                        {"prefill_tokens", st.promptTokens},
                        {"prefill_ms", st.prefillMs},
                        {"prefill_tokens_per_s", st.prefillTokensPerS},
                        {"decode_steps", st.steps},
                        {"decode_ms", st.decodeMs},
                        {"decode_tokens_per_s", st.decodeTokensPerS}};
  if (!writeJson(a.jsonPath, std::move(js)))
    return fail("cannot write " + a.jsonPath);
  return 0;
}

} // namespace

Command addGenerate(CLI::App &app) {
  auto a = std::make_shared<GenerateArgs>();
  auto *gen = app.add_subcommand(
      "generate", "generate token ids with a decode package (tgc compile --decode): greedy, or "
                  "sampled with --temperature");
  gen->add_option("package", a->pkg, "decode package directory")->required();
  gen->add_option("--prompt-ids", a->promptIds, "the prompt's token ids, e.g. 1,2,3")->required();
  gen->add_option("--max-new-tokens", a->maxNew, "ids to generate (prompt + these <= max_seq)")
      ->check(CLI::PositiveNumber);
  gen->add_option("--temperature", a->temperature,
                  "0 (default): greedy argmax; > 0: sample from softmax(logits / T)")
      ->check(CLI::NonNegativeNumber);
  gen->add_option("--top-k", a->topK, "sampling: draw among the K most likely ids (0: all)")
      ->check(CLI::NonNegativeNumber);
  gen->add_option("--seed", a->seed, "sampling: the generator's seed");
  gen->add_option("--eos-id", a->eosId, "stop after generating this id (default: never)");
  gen->add_option("--threads", a->threads, "CPU threads (0: the default)");
  gen->add_option("--json", a->jsonPath,
                  "write new_ids, prefill_ms, decode_tokens_per_s, ... to this file");
  return {gen, [a]() { return runGenerate(*a); }};
}

} // namespace tgc::cli
