// Generate.cpp — Session::generate (prefill, then one step per new token), the token pickers,
// and the refusals of a package that is not a decode package (see Generate.h, Session.h).
#include "runtime/Generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace tgc {

namespace {

const char *kNotDecode = "this package is not a decode package (prefill, step and generate need "
                         "one: compile the model with `tgc compile --decode --max-seq N`)";

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int64_t argmaxToken(const std::vector<float> &logits) {
  if (logits.empty())
    return -1;
  int64_t best = -1;
  for (size_t i = 0; i < logits.size(); ++i)
    if (!std::isnan(logits[i]) && (best < 0 || logits[i] > logits[(size_t)best]))
      best = (int64_t)i;
  return best < 0 ? 0 : best;
}

int64_t pickToken(const std::vector<float> &logits, const GenerateOptions &options,
                  std::mt19937_64 &rng) {
  if (!(options.temperature > 0.f) || logits.empty())
    return argmaxToken(logits);
  // The candidates: every id, or the topK largest (ties: the lower id first).
  std::vector<int64_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  auto higher = [&](int64_t a, int64_t b) {
    const float x = std::isnan(logits[(size_t)a]) ? -INFINITY : logits[(size_t)a];
    const float y = std::isnan(logits[(size_t)b]) ? -INFINITY : logits[(size_t)b];
    return x > y || (x == y && a < b);
  };
  size_t k = options.topK > 0 ? std::min(ids.size(), (size_t)options.topK) : ids.size();
  std::partial_sort(ids.begin(), ids.begin() + (std::ptrdiff_t)k, ids.end(), higher);
  ids.resize(k);
  // Softmax of logits / temperature, shifted by the largest (ids[0]) for range.
  const double top = logits[(size_t)ids[0]];
  if (!std::isfinite(top))
    return ids[0];
  std::vector<double> w(k);
  for (size_t i = 0; i < k; ++i) {
    const double x = logits[(size_t)ids[i]];
    w[i] = std::isfinite(x) ? std::exp((x - top) / options.temperature) : 0.0;
  }
  std::discrete_distribution<size_t> pick(w.begin(), w.end());
  return ids[pick(rng)];
}

Status Session::prefill(const std::vector<int64_t> &, std::vector<float> &) {
  return Status::error(kNotDecode);
}

Status Session::step(int64_t, int64_t, std::vector<float> &) {
  return Status::error(kNotDecode);
}

Status Session::generate(const std::vector<int64_t> &prompt, int maxNewTokens,
                         const GenerateOptions &options, std::vector<int64_t> &newIds,
                         GenerateStats &stats) {
  newIds.clear();
  stats = GenerateStats{};
  if (maxSeq() <= 0)
    return Status::error(kNotDecode);
  const int64_t n = (int64_t)prompt.size();
  if (n == 0)
    return Status::error("generate: the prompt is empty (it needs at least one token)");
  if (maxNewTokens < 1)
    return Status::error("generate: max new tokens is " + std::to_string(maxNewTokens) +
                         ", it must be at least 1");
  if (n > maxPromptTokens())
    return Status::error("generate: a prompt of " + std::to_string(n) +
                         " tokens is longer than the package's largest prefill bucket (" +
                         std::to_string(maxPromptTokens()) + " tokens)");
  if (n + maxNewTokens > maxSeq())
    return Status::error("generate: the prompt (" + std::to_string(n) + " tokens) + " +
                         std::to_string(maxNewTokens) + " new tokens = " +
                         std::to_string(n + maxNewTokens) + " exceed the package's cache of " +
                         std::to_string(maxSeq()) + " positions (--max-seq at compile time)");
  if (!(options.temperature >= 0.f) || !std::isfinite(options.temperature))
    return Status::error("generate: temperature must be a finite value >= 0");
  std::mt19937_64 rng(options.seed);
  std::vector<float> logits;
  using Clock = std::chrono::steady_clock;
  Clock::time_point t0 = Clock::now();
  if (Status st = prefill(prompt, logits); !st.ok)
    return st;
  int64_t token = pickToken(logits, options, rng);
  stats.prefillMs = msSince(t0);
  newIds.push_back(token);
  t0 = Clock::now();
  for (int64_t pos = n; (int64_t)newIds.size() < maxNewTokens; ++pos) {
    if (options.eosId >= 0 && token == options.eosId)
      break;
    if (Status st = step(token, pos, logits); !st.ok)
      return Status::error("generate: new token " + std::to_string(newIds.size()) +
                           " (position " + std::to_string(pos) + "): " + st.message);
    token = pickToken(logits, options, rng);
    newIds.push_back(token);
    ++stats.steps;
  }
  stats.decodeMs = stats.steps ? msSince(t0) : 0;
  stats.promptTokens = n;
  stats.newTokens = (int64_t)newIds.size();
  stats.prefillTokensPerS = stats.prefillMs > 0 ? n * 1e3 / stats.prefillMs : 0;
  stats.decodeTokensPerS = stats.decodeMs > 0 ? stats.steps * 1e3 / stats.decodeMs : 0;
  return Status::success();
}

} // namespace tgc
