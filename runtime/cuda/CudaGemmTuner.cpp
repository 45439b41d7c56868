// CudaGemmTuner.cpp — the load-time GEMM tuner: each GEMM key's candidates timed in isolation, then
// in the captured graph; the choices kept per package and GPU in the tune cache.
#include "runtime/cuda/CudaSessionImpl.h"
#include "runtime/Env.h"

namespace tgc::cuda::detail {

// Times each GEMM key's candidates (cuBLASLt heuristic algorithms, then tgc tensor-core
// configurations) on the first step of that key (its real buffers;
// whatever the arena and inputs hold) and keeps the fastest for every step of the key. Each
// candidate: one untimed launch (a candidate cuBLASLt refuses is skipped), then kTuneReps launches,
// each after a memset of a buffer twice the L2 size (weights come from HBM, as in a real run) and
// between two events; the median counts. The arena is zeroed again afterwards.
Status CudaSession::tuneGemms() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  std::map<std::string, std::vector<size_t>> keys;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const RtStep &s = steps_[i];
    if (!s.gemm || s.g.forced || candidateCount(s, s.g.useLt ? s.g.cands.size() : 0) < 2)
      continue;
    const plan::GemmDesc &g = plan_.steps((int)i).gemm();
    unsigned align = 256;
    for (CUdeviceptr p : s.ptrs)
      while (align > 1 && p % align)
        align /= 2;
    std::string key;
    for (int64_t v : {(int64_t)g.dtype(), g.m(), g.n(), g.k(), g.lda(), g.ldb(), g.ldc(),
                      g.stride_a(), g.stride_b(), g.stride_c(), g.batch(), (int64_t)g.trans_b(),
                      (int64_t)g.bias(), g.bias_stride(), (int64_t)g.residual(),
                      (int64_t)g.activation(), (int64_t)g.out_f32(),
                      (int64_t)(s.g.residual && s.g.residual == s.ptrs[2]), (int64_t)align,
                      // which kernels may take it (the mma flags; CUTLASS's weights only)
                      (int64_t)gemmWeightOperands(i),
                      // the norm its sum kernel may apply: 0 none, 1, 2 stored as f32
                      (int64_t)(gemmMayApplyNorm(i) ? 1 + plan_.steps((int)i + 1).norm().out_f32()
                                                    : 0)})
      key += std::to_string(v) + ",";
    keys[key].push_back(i);
  }
  if (keys.empty()) {
    tuneSummary_ = "nothing to tune";
    return Status::success();
  }
  auto fail = [&](const std::string &e) { return Status::error(pre_ + "GEMM autotune: " + e); };
  std::string e;
  // L2 flush buffer (best effort: without it the timings run with a warm L2).
  int l2 = 0;
  d_->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev_);
  size_t flushBytes = std::min<size_t>(std::max<size_t>(2 * (size_t)std::max(l2, 0), 64u << 20),
                                       256u << 20);
  CUdeviceptr flush = 0;
  if (d_->cuMemAlloc(&flush, flushBytes) != CUDA_SUCCESS)
    flush = 0;
  std::vector<CUevent> ev(2 * kTuneReps, nullptr);
  auto cleanup = [&] {
    for (CUevent x : ev)
      if (x)
        d_->cuEventDestroy(x);
    if (flush)
      d_->cuMemFree(flush);
  };
  for (CUevent &x : ev)
    if (!(e = ck(d_->cuEventCreate(&x, CU_EVENT_DEFAULT), "cuEventCreate")).empty())
      return cleanup(), fail(e);
  int changed = 0, timed = 0, toMma = 0, toCutlass = 0;
  for (auto &[key, idx] : keys) {
    RtStep &s = steps_[idx[0]];
    const size_t nLt = s.g.useLt ? s.g.cands.size() : 0, nAll = candidateCount(s, nLt);
    auto select = [&](RtStep &x, size_t j) { selectGemm(x, nLt, j); };
    // The untuned choice.
    const size_t first = s.g.mma >= 0  ? nLt + (size_t)s.g.mma
                         : s.g.cut >= 0 ? nLt + s.g.mmaCands.size() + (size_t)s.g.cut
                                        : 0;
    std::vector<size_t> order = {first};
    for (size_t j = 0; j < nAll; ++j)
      if (j != first)
        order.push_back(j);
    double best = -1, bestLt = -1;
    size_t bestJ = first;
    std::string mmaTimes;
    TuneKey tk;
    tk.steps = idx, tk.nLt = nLt;
    for (size_t j : order) {
      select(s, j);
      if (!launchGemm(s).empty())
        continue; // this candidate does not run here
      bool ok = true;
      for (int r = 0; r < kTuneReps && ok; ++r) {
        if (flush && !(e = ck(d_->cuMemsetD32Async(flush, (unsigned)r, flushBytes / 4, stream_),
                              "cuMemsetD32Async")).empty())
          return cleanup(), fail(e);
        if (!(e = ck(d_->cuEventRecord(ev[2 * r], stream_), "cuEventRecord")).empty())
          return cleanup(), fail(e);
        ok = launchGemm(s).empty();
        // An activation or norm this candidate leaves to the kernel after the GEMM (cuBLASLt's
        // GELU, a norm off CUTLASS split-K) costs that kernel: time them together.
        if (ok && idx[0] + 1 < steps_.size() && steps_[idx[0] + 1].skipIfFused &&
            !skipped(idx[0] + 1))
          ok = launchKernel(steps_[idx[0] + 1]).empty();
        if (!(e = ck(d_->cuEventRecord(ev[2 * r + 1], stream_), "cuEventRecord")).empty())
          return cleanup(), fail(e);
      }
      if (!(e = ck(d_->cuStreamSynchronize(stream_), "cuStreamSynchronize")).empty())
        return cleanup(), fail(e + " (candidate " + std::to_string(j) + " of step " +
                               std::to_string(idx[0]) + ")");
      if (!ok)
        continue;
      std::vector<float> t(kTuneReps);
      for (int r = 0; r < kTuneReps; ++r)
        if (!(e = ck(d_->cuEventElapsedTime(&t[r], ev[2 * r], ev[2 * r + 1]),
                     "cuEventElapsedTime")).empty())
          return cleanup(), fail(e);
      std::nth_element(t.begin(), t.begin() + kTuneReps / 2, t.end());
      double med = t[kTuneReps / 2];
      ++timed;
      tk.timed.push_back({med, j});
      if (j < nLt)
        bestLt = bestLt < 0 ? med : std::min(bestLt, med);
      else
        mmaTimes += " " + candidateName(s, nLt, j) + "=" + fmtUs(med);
      // Keep the untuned choice unless another is clearly (> 2%) faster.
      if (best < 0 || med < best * (bestJ == first && j != first ? 0.98 : 1.0))
        best = med, bestJ = j;
    }
    const plan::GemmDesc &g = plan_.steps((int)idx[0]).gemm();
    tuneDetail_ += "  " + std::to_string(idx.size()) + " × " + std::to_string(g.m()) + "x" +
                   std::to_string(g.n()) + "x" + std::to_string(g.k()) +
                   (g.batch() > 1 ? " batch " + std::to_string(g.batch()) : "") + ": " +
                   (nLt ? "cuBLASLt " + fmtUs(bestLt) + " (best of " + std::to_string(nLt) + ");" : "") +
                   (mmaTimes.empty() ? "" : " tgc" + mmaTimes + ";") + " chose " +
                   (bestJ < nLt ? std::string("cuBLASLt") : candidateName(s, nLt, bestJ)) + "\n";
    tk.chosen = bestJ;
    tk.shape = std::to_string(g.m()) + "x" + std::to_string(g.n()) + "x" + std::to_string(g.k()) +
               (g.batch() > 1 ? " batch " + std::to_string(g.batch()) : "");
    tuneKeys_.push_back(std::move(tk));
    changed += bestJ != first ? (int)idx.size() : 0;
    toMma += bestJ >= nLt && bestJ - nLt < s.g.mmaCands.size() ? (int)idx.size() : 0;
    toCutlass += isCutlass(s, nLt, bestJ) ? (int)idx.size() : 0;
    for (size_t i : idx)
      select(steps_[i], bestJ);
  }
  cleanup();
  if (!(e = zeroArena()).empty()) // the timed launches wrote into it
    return fail(e);
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  char buf[256];
  std::snprintf(buf, sizeof buf, "%zu GEMM shapes, %d candidates timed, %d steps off the untuned "
                "choice, %d on tensor-core kernels, %d on CUTLASS, %.0f ms%s", keys.size(), timed,
                changed, toMma, toCutlass, ms,
                flush ? "" : " (no L2 flush buffer)");
  tuneSummary_ = buf;
  return Status::success();
}

double CudaSession::timeCapturedGraph(std::string &err) {
  CUgraphExec exec = nullptr;
  if (!(err = captureGraph(exec)).empty())
    return -1;
  std::vector<double> rounds;
  for (int r = 0; r <= kGraphTuneRounds && err.empty(); ++r) { // round 0: upload, warm-up
    err = ck(d_->cuEventRecord(runStart_, stream_), "cuEventRecord");
    for (int i = 0; i < kGraphTuneReplays && err.empty(); ++i)
      err = ck(d_->cuGraphLaunch(exec, stream_), "cuGraphLaunch");
    float ms = 0;
    if (err.empty())
      err = ck(d_->cuEventRecord(runEnd_, stream_), "cuEventRecord");
    if (err.empty())
      err = ck(d_->cuEventSynchronize(runEnd_), "cuEventSynchronize");
    if (err.empty())
      err = ck(d_->cuEventElapsedTime(&ms, runStart_, runEnd_), "cuEventElapsedTime");
    if (r > 0)
      rounds.push_back(ms * 1000.0 / kGraphTuneReplays);
  }
  d_->cuGraphExecDestroy(exec);
  if (!err.empty())
    return -1;
  std::nth_element(rounds.begin(), rounds.begin() + rounds.size() / 2, rounds.end());
  return rounds[rounds.size() / 2];
}

// Isolated timings cannot see how a GEMM behaves among its neighbours in the graph (its launch
// after the kernel before it, what it leaves in L2, the next kernel's start), so the isolated
// winners are checked in the real graph: per GEMM key (most isolated time first), up to
// kGraphTuneCandidates of the next-fastest isolated candidates are swapped in for every step of
// the key, the whole graph is captured and replayed, and a candidate is kept when the graph gets
// faster by at least 0.5% (kGraphTuneKeep). $TGC_GEMM_GRAPH_TUNE=0 skips this.
Status CudaSession::graphTuneGemms() {
  if (const char *g = tgc::envValue(tgc::Env::GemmGraphTune); g && std::string(g) == "0") {
    graphTuneSummary_ = "off ($TGC_GEMM_GRAPH_TUNE=0)";
    return Status::success();
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto fail = [&](const std::string &e) { return Status::error(pre_ + "in-graph GEMM tuning: " + e); };
  std::string e;
  double best = timeCapturedGraph(e);
  if (best < 0)
    return fail(e);
  const double start = best;
  // First, every key on its fastest isolated CUTLASS tile at once: a CUTLASS GEMM also lets the
  // kernel after it start early, so their gains add up along the chain in a way one key at a time
  // does not show. Kept as the starting point when the graph gets faster by 0.5% or more.
  std::vector<size_t> before;
  bool anyCutlass = false;
  for (TuneKey &k : tuneKeys_) {
    before.push_back(k.chosen);
    std::vector<std::pair<double, size_t>> cands = k.timed;
    std::stable_sort(cands.begin(), cands.end());
    for (const auto &[us, j] : cands)
      if (isCutlass(steps_[k.steps[0]], k.nLt, j)) {
        k.chosen = j, anyCutlass = true;
        break;
      }
    for (size_t i : k.steps)
      selectGemm(steps_[i], k.nLt, k.chosen);
  }
  int graphs = 1, changed = 0;
  if (anyCutlass) {
    double t = timeCapturedGraph(e);
    ++graphs;
    if (t < 0)
      return fail(e);
    if (t < best * kGraphTuneKeep) {
      best = t;
      for (size_t q = 0; q < tuneKeys_.size(); ++q) {
        const TuneKey &k = tuneKeys_[q];
        if (k.chosen == before[q])
          continue;
        ++changed;
        tuneDetail_ += "  in the graph, all on CUTLASS: " + std::to_string(k.steps.size()) + " × " +
                       k.shape + " -> " + candidateName(steps_[k.steps[0]], k.nLt, k.chosen) + "\n";
      }
    } else {
      for (size_t q = 0; q < tuneKeys_.size(); ++q) {
        tuneKeys_[q].chosen = before[q];
        for (size_t i : tuneKeys_[q].steps)
          selectGemm(steps_[i], tuneKeys_[q].nLt, before[q]);
      }
    }
  }
  std::vector<TuneKey *> order;
  for (TuneKey &k : tuneKeys_)
    if (k.timed.size() > 1)
      order.push_back(&k);
  auto cost = [](const TuneKey *k) {
    double m = -1;
    for (const auto &[us, j] : k->timed)
      m = m < 0 ? us : std::min(m, us);
    return m * (double)k->steps.size();
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const TuneKey *a, const TuneKey *b) { return cost(a) > cost(b); });
  for (TuneKey *k : order) {
    std::vector<std::pair<double, size_t>> cands = k->timed;
    std::stable_sort(cands.begin(), cands.end());
    const size_t was = k->chosen;
    int tried = 0;
    // Every CUTLASS configuration is tried whatever its isolated rank: they start early in the
    // graph (programmatic dependent launch) and split-K's sum kernel overlaps differently there,
    // which isolated timing cannot show.
    const RtStep &first = steps_[k->steps[0]];
    for (const auto &[us, j] : cands) {
      if (j == k->chosen || (tried >= kGraphTuneCandidates && !isCutlass(first, k->nLt, j)))
        continue;
      ++tried;
      for (size_t i : k->steps)
        selectGemm(steps_[i], k->nLt, j);
      double t = timeCapturedGraph(e);
      ++graphs;
      if (t < 0)
        return fail(e);
      if (t < best * kGraphTuneKeep)
        best = t, k->chosen = j;
    }
    for (size_t i : k->steps)
      selectGemm(steps_[i], k->nLt, k->chosen);
    if (k->chosen != was) {
      ++changed;
      const std::string name = candidateName(steps_[k->steps[0]], k->nLt, k->chosen);
      tuneDetail_ += "  in the graph: " + std::to_string(k->steps.size()) + " × " + k->shape +
                     " -> " + name + "\n";
    }
  }
  if (!(e = zeroArena()).empty()) // the replays wrote into it
    return fail(e);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  char buf[200];
  std::snprintf(buf, sizeof buf, "%d graphs replayed, %d GEMM shapes changed, %.1f -> %.1f us, %.0f ms",
                graphs, changed, start, best, ms);
  graphTuneSummary_ = buf;
  return Status::success();
}

uint64_t CudaSession::tuneKey(int major, int minor) const {
  int driver = 0;
  if (d_->cuDriverGetVersion)
    d_->cuDriverGetVersion(&driver);
  // A rebuilt runtime or plug-in may offer other candidates: their files' size and time count.
  auto stamp = [](const std::string &path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0
               ? path + ":" + std::to_string((long long)st.st_size) + ":" +
                     std::to_string((long long)st.st_mtime)
               : path + ":missing";
  };
  std::string k = plan_.SerializeAsString();
  k += "\n" + deviceName_ + " " + std::to_string(major) + "." + std::to_string(minor) +
       " driver " + std::to_string(driver) + " sms " + std::to_string(sms_) + "\n" +
       stamp(runtimeModulePath()) + "\n" + (cutlass_ ? stamp(cutlass_->path) : "no CUTLASS") + "\n" +
       (ltHandle_ ? "cuBLASLt" : "no cuBLASLt") + " pdl " + std::to_string(pdl_) + " graph " +
       std::to_string(useGraph_) + "\n";
  // Every GEMM step's candidates: a runtime, plug-in or cuBLASLt that offers others (or the same
  // cuBLASLt algorithm bytes no longer) gets another record.
  for (const RtStep &st : steps_) {
    if (!st.gemm)
      continue;
    const size_t nLt = st.g.useLt ? st.g.cands.size() : 0;
    for (size_t j = 0; j < candidateCount(st, nLt); ++j)
      k += choiceName(st, nLt, j) + " ";
    k += "\n";
  }
  for (const char *env : {"TGC_GEMM_CUTLASS", "TGC_GEMM_MMA", "TGC_GEMM_NORM",
                          "TGC_GEMM_GRAPH_TUNE", "TGC_NO_CUBLASLT", "TGC_CUTLASS"})
    if (const char *v = std::getenv(env))
      k += std::string(env) + "=" + v + "\n";
  return plan::xxh3(k.data(), k.size());
}

std::string CudaSession::choiceName(const RtStep &s, size_t nLt, size_t j) {
  if (j >= nLt)
    return (isCutlass(s, nLt, j) ? "cutlass:" : "mma:") + candidateName(s, nLt, j);
  static_assert(sizeof(cublasLtMatmulAlgo_t) == 64, "cuBLASLt's algorithm is 64 bytes");
  const unsigned char *b = reinterpret_cast<const unsigned char *>(&s.g.cands[j]);
  std::string h = "lt:";
  char two[3];
  for (size_t i = 0; i < sizeof(cublasLtMatmulAlgo_t); ++i)
    std::snprintf(two, sizeof two, "%02x", b[i]), h += two;
  return h;
}

std::string CudaSession::choiceOf(const RtStep &s) {
  const size_t nLt = s.g.useLt ? s.g.cands.size() : 0;
  if (s.g.cut >= 0)
    return choiceName(s, nLt, nLt + s.g.mmaCands.size() + (size_t)s.g.cut);
  if (s.g.mma >= 0)
    return choiceName(s, nLt, nLt + (size_t)s.g.mma);
  for (size_t j = 0; j < nLt; ++j)
    if (std::memcmp(&s.g.cands[j], &s.g.algo, sizeof s.g.algo) == 0)
      return choiceName(s, nLt, j);
  return "none";
}

int64_t CudaSession::findChoice(const RtStep &s, const std::string &choice) {
  const size_t nLt = s.g.useLt ? s.g.cands.size() : 0, n = candidateCount(s, nLt);
  for (size_t j = 0; j < n; ++j)
    if (choiceName(s, nLt, j) == choice)
      return (int64_t)j;
  return choice == "none" && choiceOf(s) == "none" ? (int64_t)n : -1;
}

bool CudaSession::loadTuneCache(const std::string &path, uint64_t key) {
  const std::vector<size_t> gemms = gemmSteps();
  TuneRecord r;
  std::string why;
  bool ok = readTuneRecord(path, key, r, why);
  if (ok && r.choices.size() != gemms.size())
    ok = false, why = "it lists " + std::to_string(r.choices.size()) + " GEMM steps, the plan has " +
                      std::to_string(gemms.size());
  // Every choice must be a candidate here before any is applied.
  std::vector<int64_t> picks;
  for (size_t q = 0; ok && q < gemms.size(); ++q) {
    picks.push_back((size_t)r.choices[q].first == gemms[q]
                        ? findChoice(steps_[gemms[q]], r.choices[q].second)
                        : -1);
    if (picks.back() < 0)
      ok = false, why = "step " + std::to_string(gemms[q]) + "'s choice '" +
                        r.choices[q].second + "' is not a candidate here";
  }
  if (!ok) {
    if (why != "none") // a record that does not fit: say so (it is rewritten after tuning)
      tuneCacheNote_ = path + ": " + why + "; tuned anew";
    return false;
  }
  for (size_t q = 0; q < gemms.size(); ++q) {
    RtStep &st = steps_[gemms[q]];
    const size_t nLt = st.g.useLt ? st.g.cands.size() : 0;
    if ((size_t)picks[q] < candidateCount(st, nLt)) // else "none": setup's choice stays
      selectGemm(st, nLt, (size_t)picks[q]);
  }
  tuneCacheNote_ = path + ": " + std::to_string(gemms.size()) + " GEMM choices applied";
  tuneSummary_ = graphTuneSummary_ = "from the tuning cache";
  return true;
}

void CudaSession::saveTuneCache(const std::string &path, uint64_t key) {
  TuneRecord r;
  r.key = key;
  for (size_t i : gemmSteps())
    r.choices.push_back({(int)i, choiceOf(steps_[i])});
  std::string why;
  if (!writeTuneRecord(path, r, why))
    tuneCacheNote_ += (tuneCacheNote_.empty() ? "" : "; ") + why + " (not cached)";
  else
    tuneCacheNote_ = tuneCacheNote_.empty() ? path + ": written" : tuneCacheNote_ + "; rewritten";
}

} // namespace tgc::cuda::detail
