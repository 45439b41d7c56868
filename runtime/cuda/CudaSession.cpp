// CudaSession.cpp — loads a CUDA package and replays its plan as one CUDA graph.
//
// Load validates the package before touching the GPU (plan parse/magic/version/end marker/target,
// weights size + checksum, cubin/PTX checksums, every step argument's byte range, every GEMM's
// extent against its arguments), then: libcuda via dlopen, cuInit, the device's primary context,
// one non-blocking stream, the module (cubin; the PTX when the cubin is not for this GPU), one
// allocation each for the weights (uploaded once), the arena (+ GEMM scratch), the inputs and the
// cuBLASLt workspace, and one cuBLASLt plan (descriptors + algorithm) per GEMM step. f16/bf16
// GEMMs may also run on the package's own tensor-core kernels (tgk_mma_gemm_*, tile rows ×
// split-K count chosen per GEMM). The choice is autotuned once per Session at load: up to
// kTuneCandidates cuBLASLt heuristic algorithms and every fitting tensor-core configuration per
// distinct GEMM (shape, types, epilogue, pointer alignment) are timed on the session's own
// buffers with device events, L2 flushed before each timed launch, and the fastest is kept for
// every step of that key; then each key's next-fastest candidates are tried in the captured graph
// itself and kept when the whole graph replays faster (graphTuneGemms; $TGC_GEMM_GRAPH_TUNE=0
// skips it); $TGC_GEMM_TUNE=0 keeps cuBLASLt's first heuristic algorithm (the
// tensor-core kernel with a split count that fills the GPU, for GEMMs cuBLASLt cannot run).
// On sm_90, f16/bf16 linears whose B is a weight may also run on the CUTLASS plug-in
// (libtgc_cutlass_sm90.so beside the executable; cutlass/CutlassGemm.h): one more candidate per
// tile and split-K configuration (kCutlassConfigs), launched with programmatic dependent launch
// and applying bias, residual and GELU itself; with split-K its sum kernel also applies the norm
// step after the GEMM (plan.proto Step.norm), which is then skipped ($TGC_GEMM_NORM=off: never).
// The in-graph pass first puts every GEMM on its
// fastest isolated CUTLASS configuration at once, then tries each GEMM shape's next candidates
// and all its CUTLASS configurations (their advantage, an early start, does not show in
// isolation). $TGC_GEMM_CUTLASS=off leaves it out, =force uses it wherever it fits, =<name> that
// configuration.
// Run: inputs are copied into their fixed device buffers, the plan is launched — captured into a
// CUDA graph on the first run and replayed after — and outputs are copied back, all on the
// stream, then one synchronize. Every CUDA call is checked; errors come back as Status naming the
// call. $TGC_CUDA_GRAPH=0 launches the steps one by one instead (debugging); profiling always
// does, with an event between steps.
#include "runtime/cuda/CudaSession.h"
#include "runtime/Text.h"

#include "runtime/IndexBounds.h"
#include "runtime/PackageFiles.h"

#include "runtime/schema/MmaGemm.h"
#include "runtime/schema/PlanUtil.h"
#include "runtime/cuda/CudaApi.h"
#include "runtime/cuda/TuneCache.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <cstring>
#include <new>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace tgc::cuda {

namespace {

using plan::BufferArg;

constexpr size_t kWorkspaceBytes = 32u << 20; // cuBLASLt workspace
constexpr int kTuneCandidates = 16;             // heuristic algorithms timed per GEMM key
constexpr int kTuneReps = 5;                    // timed launches per candidate (median kept)
constexpr int kGraphTuneCandidates = 3; // in-graph: next-fastest isolated candidates per GEMM key
constexpr int kGraphTuneReplays = 20;   // in-graph: replays per timed round
constexpr int kGraphTuneRounds = 3;     // in-graph: timed rounds (median kept)
// In-graph: a change is kept when the whole graph replays at least 0.5% faster. A captured
// graph's time repeats within ±0.2% (the same choices loaded again); at 1% the greedy pass
// stopped on worse choices in some loads (perf-log, twelfth session).
constexpr double kGraphTuneKeep = 0.995;
constexpr int kSplitCounts[] = {1, 2, 3, 4, 6, 8, 12, 16}; // split-K counts of tgk_mma_gemm_*
constexpr int64_t kMmaWorkspaceMax = 64ll << 20; // split-K partials (tgc kernels; per CUTLASS config)

/// A CUTLASS plug-in configuration: tile (TgcCutlassGemmDesc.tile) as weight rows × tokens ×
/// depth, and "/sN" for N-way split-K.
std::string cutlassName(int tile, int splits) {
  static const char *const names[] = {"cutlass64x64x128", "cutlass64x128x64", "cutlass64x32x128"};
  return std::string(names[tile]) +
         (splits > 1 ? "/s" + std::to_string(splits) : "");
}
/// The plug-in configurations offered per GEMM as (tile, splits); split-K only where every
/// slice is at least 256 deep (bert_base's FFN down-projection: 2, 3 or 4 slices of 3072).
constexpr std::pair<int, int> kCutlassConfigs[] = {{0, 1}, {1, 1}, {2, 1}, {0, 2}, {0, 3}, {0, 4}};
constexpr int64_t kCutlassMinSliceK = 256;

std::string fmtUs(double ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1fus", ms * 1000.0);
  return b;
}

std::string shapeString(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

class CudaSession final : public Session {
public:
  ~CudaSession() override;
  Status init(const std::string &path);
  /// init's checks of the package alone (no GPU touched).
  Status validateOnly(const std::string &path);
  std::string planText() const { return plan::formatPlan(plan_); }
  const std::vector<TensorSpec> &inputs() const override { return inputs_; }
  const std::vector<TensorSpec> &outputs() const override { return outputs_; }
  Status run(const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs) override;
  Status runRefs(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                 size_t numOutputs) override;
  std::string describe() const override;
  void setProfiling(bool on) override { profiling_ = on; }
  const std::vector<StepProfile> &lastProfile() const override { return profile_; }
  int64_t launchesPerRun() const override {
    int64_t n = 0;
    for (size_t i = 0; i < steps_.size(); ++i)
      n += !skipped(i);
    return n;
  }
  double lastDeviceMicros() const override { return deviceMicros_; }
  double replayMicros(int iters, const std::vector<std::string> &omit) override;
  std::string precision() const override {
    return plan_.precision().empty() ? "fp32" : plan_.precision();
  }

private:
  Status validate();
  Status checkArg(const BufferArg &a, const std::string &where) const;
  Status checkGemm(const plan::Step &s, const std::string &where) const;
  /// Step i's norm (plan.proto Step.norm) against the GEMM step before it.
  Status checkNorm(int i, const std::string &where) const;
  /// Whether the GEMM step i may leave the norm step after it to split-K's sum kernel: there is
  /// one, $TGC_GEMM_NORM is not "off", and its scale and shift are weights (the sum kernel reads
  /// them before it waits for the GEMM).
  bool gemmMayApplyNorm(size_t i) const;
  /// Which operands of GEMM step i are weights (no grid writes them, so a kernel may read them
  /// before it waits for the one ahead): 1 B, 2 the bias (tgk_mma_gemm's flags).
  int gemmWeightOperands(size_t i) const;
  Status checkSpecs(const TensorRef *refs, size_t n, bool isInput) const;
  /// A run of checked inputs and outputs (checkSpecs), the caller holding the run guard: copy
  /// in, launch, copy out.
  Status execute(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                 size_t numOutputs);
  Status setupGpu();
  Status setupGemm(size_t i);
  void setupMma(size_t i);
  /// Prepares step i's GEMM on the CUTLASS plug-in's configurations that fit (GemmRt::cutCands).
  Status setupCutlass(size_t i);
  Status tuneGemms();
  Status graphTuneGemms();
  /// The GEMM tuning cache's key for this package on this device (TuneCache.h): the plan, the
  /// device, driver, plug-in and runtime builds, and the settings that change the choices.
  uint64_t tuneKey(int major, int minor) const;
  /// Applies the choices cached at `path` for `key`; false (nothing changed) when there are none
  /// that fit. saveTuneCache writes the steps' current choices there.
  bool loadTuneCache(const std::string &path, uint64_t key);
  void saveTuneCache(const std::string &path, uint64_t key);
  /// The indices of the GEMM steps, in step order (the tuning cache's records list them so).
  std::vector<size_t> gemmSteps() const {
    std::vector<size_t> g;
    for (size_t i = 0; i < steps_.size(); ++i)
      if (steps_[i].gemm)
        g.push_back(i);
    return g;
  }
  /// Zeroes the arena on the stream and waits: after the tuners' launches, it holds what it held
  /// at load. "" or the failed call.
  std::string zeroArena();
  /// Captures the steps (less those matching `omit`) into a CUDA graph and instantiates it. ""
  /// or the failed call.
  std::string captureGraph(CUgraphExec &exec, const std::vector<std::string> *omit = nullptr);
  /// Captures the steps as they are now into a CUDA graph and returns its median replay time in
  /// µs (3 rounds of kGraphTuneReplays back-to-back replays), or -1 with `err` set.
  double timeCapturedGraph(std::string &err);
  /// Enqueues every step (records events_[i + 1] after step i when `events`); steps matching
  /// `omit` (see Session::replayMicros) are left out.
  Status enqueueSteps(bool events, const std::vector<std::string> *omit = nullptr);
  /// Step i is an activation or norm kernel whose GEMM (step i - 1) applies its work itself
  /// (every kernel but cuBLASLt's applies an activation; only CUTLASS split-K sums a norm).
  bool skipped(size_t i) const {
    if (i == 0 || !steps_[i].skipIfFused)
      return false;
    const GemmRt &g = steps_[i - 1].g;
    if (steps_[i].norm)
      return g.cut >= 0 && g.cutCands[(size_t)g.cut].norm;
    return g.mma >= 0 || g.cut >= 0 || !g.useLt || g.ltAct;
  }
  CUdeviceptr ptrOf(const BufferArg &a) const;
  std::string ck(CUresult r, const char *call) const { return check(*d_, r, call); }
  std::string blasError(cublasStatus_t s, const char *call) const {
    return std::string(call) + ": " + (lt_ ? lt_->statusString(s) : "?") + " (status " +
           std::to_string((int)s) + ")";
  }

  std::string path_, pre_;
  plan::Plan plan_;
  std::vector<TensorSpec> inputs_, outputs_;
  std::vector<int64_t> inBytes_, outBytes_, inOffsets_;
  std::string weightsHost_, cubin_, ptx_;

  const Driver *d_ = nullptr;
  const BlasLt *lt_ = nullptr;
  std::string ltError_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  bool ctxRetained_ = false;
  CUstream stream_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction gemmFallback_[3] = {nullptr, nullptr, nullptr}; ///< f32, f16, bf16
  CUdeviceptr weights_ = 0, arena_ = 0, inputsBuf_ = 0, workspace_ = 0;
  // tgk_mma_gemm_* by (dtype, transB, kMmaGemmConfigs index); split-K partials and per-tile
  // arrival counters.
  std::map<std::tuple<int, bool, int>, CUfunction> mmaFns_;
  CUdeviceptr mmaWs_ = 0, mmaCnt_ = 0;
  int64_t mmaWsBytes_ = 0, mmaCntBytes_ = 0;
  int sms_ = 0;
  /// Steps marked one_block_per_sm, how many of them launch padded, the padded size (the last
  /// one's), and a multiprocessor's shared memory and per-block reserve (the padding's inputs):
  /// describe() reports them.
  int oneBlockMarked_ = 0, oneBlockPadded_ = 0;
  uint32_t oneBlockShared_ = 0;
  int smemPerSm_ = 0, smemReserved_ = 0;
  /// describe()'s line on them ("" when no step is marked).
  std::string oneBlockLine() const;
  cublasLtHandle_t ltHandle_ = nullptr;
  const CutlassLib *cutlass_ = nullptr; ///< the plug-in, on sm_90 when found
  std::string cutlassError_ = "not needed";
  std::string cutlassSetupError_; ///< the first configuration the plug-in could not prepare
  std::string deviceName_, moduleFrom_;
  std::string tuneSummary_ = "off";
  std::string graphTuneSummary_ = "off";
  std::string tuneDetail_; ///< per GEMM shape: each candidate's median µs and the choice
  std::string tuneCacheNote_; ///< where the choices came from or went (describe)
  /// What the isolated tuning left for the in-graph pass: per GEMM key, its steps, the number of
  /// cuBLASLt candidates (candidate j < nLt is cuBLASLt algorithm j, then the tensor-core
  /// configurations, then the CUTLASS configurations; see selectGemm), every timed candidate as
  /// (isolated µs, j), and the choice.
  struct TuneKey {
    std::vector<size_t> steps;
    size_t nLt = 0, chosen = 0;
    std::vector<std::pair<double, size_t>> timed;
    std::string shape;
  };
  std::vector<TuneKey> tuneKeys_;

  struct GemmRt {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    std::vector<cublasLtMatmulAlgo_t> cands; ///< heuristic candidates, best-estimated first
    bool useLt = false;
    bool ltAct = false; ///< cuBLASLt's epilogue applies the activation (ReLU, tanh-GELU)
    // tgc tensor-core kernel configurations that fit this GEMM, and the chosen one (-1: none;
    // then cuBLASLt when useLt, else the fallback kernel).
    struct Mma {
      CUfunction fn;
      MmaGemmConfig cfg;
      int smem, splits;
      std::string name() const {
        return std::to_string(cfg.bm) + "x" + std::to_string(cfg.bk) + "x" + std::to_string(splits);
      }
    };
    std::vector<Mma> mmaCands;
    int mma = -1;
    bool forced = false; ///< $TGC_GEMM_MMA chose the configuration: not autotuned
    int im = 0, in = 0, ik = 0, ilda = 0, ildb = 0, ildc = 0; ///< int copies for tgk_mma_gemm
    // Fallback kernel parameters.
    int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0, sa = 0, sb = 0, sc = 0;
    int64_t batch = 1, sbias = 0;
    int transB = 0, act = 0;
    int mmaFlags = 0; ///< tgk_mma_gemm flags: 1 B is a weight, 2 the bias is
    CUdeviceptr bias = 0, residual = 0;
    // The CUTLASS plug-in's configurations that fit (in candidate order), and the chosen one (-1:
    // none; then mma < 0).
    struct Cut {
      void *h; ///< freed (null) after tuning when not chosen
      int tile, splits;
      bool norm; ///< applies the norm of the step after the GEMM (skipped then)
      std::string name() const { return cutlassName(tile, splits); }
    };
    std::vector<Cut> cutCands;
    int cut = -1;
  };
  struct RtStep {
    bool gemm = false;
    bool skipIfFused = false; ///< plan.proto Step.skip_if_gemm_fused
    bool norm = false;        ///< ...for the norm in plan.proto Step.norm
    CUfunction fn = nullptr;
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared = 0;
    std::vector<CUdeviceptr> ptrs;
    std::vector<void *> params;
    GemmRt g;
  };
  std::vector<RtStep> steps_;
  /// Runs step `s`'s GEMM on candidate j of its key: cuBLASLt algorithm j (j < nLt), tensor-core
  /// configuration j - nLt, or, after those, a CUTLASS configuration.
  static void selectGemm(RtStep &s, size_t nLt, size_t j) {
    s.g.cut = -1;
    if (j < nLt)
      s.g.algo = s.g.cands[j], s.g.mma = -1;
    else if (j - nLt < s.g.mmaCands.size())
      s.g.mma = (int)(j - nLt);
    else
      s.g.mma = -1, s.g.cut = (int)(j - nLt - s.g.mmaCands.size());
  }
  static size_t candidateCount(const RtStep &s, size_t nLt) {
    return nLt + s.g.mmaCands.size() + s.g.cutCands.size();
  }
  static bool isCutlass(const RtStep &s, size_t nLt, size_t j) {
    return j >= nLt + s.g.mmaCands.size() && j < candidateCount(s, nLt);
  }
  /// Candidate j's name in tuning reports.
  static std::string candidateName(const RtStep &s, size_t nLt, size_t j) {
    if (j < nLt)
      return "cuBLASLt algorithm " + std::to_string(j);
    if (j - nLt < s.g.mmaCands.size())
      return s.g.mmaCands[j - nLt].name();
    return s.g.cutCands[j - nLt - s.g.mmaCands.size()].name();
  }
  /// Candidate j of a GEMM step as the tuning cache names it (TuneCache.h): "lt:<algorithm
  /// bytes>", "mma:<config>" or "cutlass:<config>"; and the step's current choice ("none": the
  /// fallback kernel).
  static std::string choiceName(const RtStep &s, size_t nLt, size_t j);
  static std::string choiceOf(const RtStep &s);
  /// The candidate `choice` names for step s (candidateCount for "none": the step's setup
  /// choice stays), or -1 when there is none.
  static int64_t findChoice(const RtStep &s, const std::string &choice);
  std::string launchGemm(const RtStep &s);
  std::string launchKernel(const RtStep &s);
  /// cuLaunchKernel, or cuLaunchKernelEx with programmatic stream serialization when pdl_.
  std::string launch(CUfunction fn, const unsigned grid[3], const unsigned block[3],
                     unsigned shared, void **params, const char *what);
  bool pdl_ = true; ///< programmatic dependent launch ($TGC_CUDA_PDL=0: off)
  float alpha_ = 1.f, beta_ = 0.f;
  CUgraphExec graph_ = nullptr;
  bool useGraph_ = true;
  bool tune_ = true; ///< $TGC_GEMM_TUNE=0: the first heuristic algorithm, untimed
  bool profiling_ = false;
  std::vector<StepProfile> profile_;
  std::vector<CUevent> events_;
  CUevent runStart_ = nullptr, runEnd_ = nullptr; ///< around the kernels of every run
  double deviceMicros_ = -1;
  // Pinned host staging for inputs and outputs (async DMA instead of pageable copies);
  // $TGC_CUDA_PINNED=0 copies from/to the caller's pageable memory directly.
  void *pinned_ = nullptr;
  std::vector<int64_t> outOffsets_;
  /// Set while a run is in progress: a concurrent run on this session is refused.
  std::atomic<bool> running_{false};
};

std::string CudaSession::oneBlockLine() const {
  if (!oneBlockMarked_)
    return "";
  const std::string head = "one block per multiprocessor: " + std::to_string(oneBlockPadded_) +
                           " of " + std::to_string(oneBlockMarked_) + " marked steps";
  if (!oneBlockPadded_) // grids wider than the multiprocessors, or no size from the driver
    return head + " padded (grids wider than " + std::to_string(sms_) +
           " multiprocessors, or no shared memory size from the driver)\n";
  return head + " launch with " + std::to_string(oneBlockShared_) +
         " B of dynamic shared memory (a multiprocessor has " + std::to_string(smemPerSm_) +
         " B, " + std::to_string(smemReserved_) + " B of it reserved per block)\n";
}

CudaSession::~CudaSession() {
  if (!d_)
    return;
  d_->cuCtxSetCurrent(ctx_);
  if (graph_)
    d_->cuGraphExecDestroy(graph_);
  for (CUevent e : events_)
    d_->cuEventDestroy(e);
  for (CUevent e : {runStart_, runEnd_})
    if (e)
      d_->cuEventDestroy(e);
  if (pinned_)
    d_->cuMemFreeHost(pinned_);
  for (RtStep &s : steps_)
    for (auto &c : s.g.cutCands)
      if (c.h)
        cutlass_->destroy(c.h);
  for (RtStep &s : steps_) {
    if (!lt_)
      break;
    if (s.g.desc) lt_->descDestroy(s.g.desc);
    if (s.g.a) lt_->layoutDestroy(s.g.a);
    if (s.g.b) lt_->layoutDestroy(s.g.b);
    if (s.g.c) lt_->layoutDestroy(s.g.c);
  }
  if (ltHandle_)
    lt_->destroy(ltHandle_);
  for (CUdeviceptr p : {weights_, arena_, inputsBuf_, workspace_, mmaWs_, mmaCnt_})
    if (p)
      d_->cuMemFree(p);
  if (module_)
    d_->cuModuleUnload(module_);
  if (stream_)
    d_->cuStreamDestroy(stream_);
  if (ctxRetained_)
    d_->cuDevicePrimaryCtxRelease(dev_);
}

Status CudaSession::checkArg(const BufferArg &a, const std::string &where) const {
  int64_t limit;
  switch (a.kind()) {
  case plan::ARENA: limit = plan_.arena_bytes(); break;
  case plan::WEIGHT: limit = plan_.weights_bytes(); break;
  case plan::INPUT:
    if (a.index() < 0 || (size_t)a.index() >= inBytes_.size())
      return Status::error(where + ": input index " + std::to_string(a.index()) + " out of range");
    limit = inBytes_[a.index()];
    break;
  default:
    return Status::error(where + ": buffer kind " + std::to_string((int)a.kind()) +
                         " is not valid in a CUDA package");
  }
  if (a.offset() < 0 || a.bytes() < 0 || a.offset() > limit || a.bytes() > limit - a.offset())
    return Status::error(where + ": range " + plan::formatArg(a) + " lies outside its buffer (" +
                         std::to_string(limit) + " bytes)");
  return Status::success();
}

Status CudaSession::checkGemm(const plan::Step &s, const std::string &where) const {
  const plan::GemmDesc &g = s.gemm();
  // fp32, fp16 or bf16 (ONNX dtypes 1, 10, 16) for A, B, C, bias and R; fp32 accumulation.
  if (g.dtype() != 1 && g.dtype() != 10 && g.dtype() != 16)
    return Status::error(where + ": GEMM dtype " + std::to_string(g.dtype()) + " is not supported");
  const int64_t es = g.dtype() == 1 ? 4 : 2;
  if (!plan::GemmDesc::Activation_IsValid(g.activation()))
    return Status::error(where + ": GEMM activation " + std::to_string(g.activation()) +
                         " is not supported");
  if (s.args_size() != 3 + g.bias() + g.residual())
    return Status::error(where + ": GEMM needs " + std::to_string(3 + g.bias() + g.residual()) +
                         " args");
  const int64_t lim = int64_t(1) << 31;
  for (int64_t v : {g.m(), g.n(), g.k(), g.lda(), g.ldb(), g.ldc(), g.batch()})
    if (v < 0 || v >= lim)
      return Status::error(where + ": GEMM dims out of range");
  for (int64_t v : {g.stride_a(), g.stride_b(), g.stride_c(), g.bias_stride()})
    if (v < 0 || v >= kMaxBufferBytes)
      return Status::error(where + ": GEMM strides out of range");
  if (g.m() == 0 || g.n() == 0 || g.k() == 0 || g.batch() < 1 || g.lda() < g.k() ||
      g.ldc() < g.n() || g.ldb() < (g.trans_b() ? g.k() : g.n()))
    return Status::error(where + ": GEMM shape is invalid");
  // Largest element index + 1 each operand touches.
  int64_t b1 = g.batch() - 1;
  int64_t needA = b1 * g.stride_a() + (g.m() - 1) * g.lda() + g.k();
  int64_t needB = b1 * g.stride_b() + (g.trans_b() ? (g.n() - 1) * g.ldb() + g.k()
                                                   : (g.k() - 1) * g.ldb() + g.n());
  int64_t needC = b1 * g.stride_c() + (g.m() - 1) * g.ldc() + g.n();
  int64_t need[5] = {needA, needB, needC, g.bias() ? b1 * g.bias_stride() + g.n() : needC, needC};
  for (int i = 0; i < s.args_size(); ++i)
    if (need[i] > s.args(i).bytes() / es)
      return Status::error(where + ": GEMM operand " + std::to_string(i) + " needs " +
                           std::to_string(need[i] * es) + " bytes, its range has " +
                           std::to_string(s.args(i).bytes()));
  return Status::success();
}

Status CudaSession::validate() {
  Status st = readPlan(path_, plan_);
  if (!st.ok)
    return Status::error(pre_ + st.message);
  if (plan_.target().rfind("cuda:", 0) != 0)
    return Status::error(pre_ + "target '" + plan_.target() + "' is not a CUDA target");
  if (plan_.arena_bytes() < 0 || plan_.arena_bytes() > kMaxBufferBytes ||
      plan_.weights_bytes() < 0 || plan_.weights_bytes() > kMaxBufferBytes)
    return Status::error(pre_ + "arena or weights size is invalid");
  for (int io = 0; io < 2; ++io) {
    const auto &descs = io == 0 ? plan_.inputs() : plan_.outputs();
    auto &specs = io == 0 ? inputs_ : outputs_;
    auto &sizes = io == 0 ? inBytes_ : outBytes_;
    for (const plan::TensorDesc &d : descs) {
      std::string what = std::string(io == 0 ? "input" : "output") + " '" + escapeText(d.name()) + "'";
      if (!isKnownDType(d.dtype()))
        return Status::error(pre_ + what + " has unknown dtype " + std::to_string(d.dtype()));
      TensorSpec s{d.name(), static_cast<DType>(d.dtype()), {d.shape().begin(), d.shape().end()}};
      if (std::string why = io == 0 ? takeIndexBound(d, s) : ""; !why.empty())
        return Status::error(pre_ + what + " " + why);
      int64_t b = bytesOf(s.dtype, s.shape);
      if (b < 0)
        return Status::error(pre_ + what + " has an invalid shape " + shapeString(s.shape));
      specs.push_back(std::move(s));
      sizes.push_back(b);
    }
  }
  int64_t off = 0;
  for (int64_t b : inBytes_) {
    inOffsets_.push_back(off);
    off += (b + 255) / 256 * 256;
  }
  // Files.
  for (const std::string *f : {&plan_.weights_file(), &plan_.kernels_file(), &plan_.ptx_file()})
    if (!plainFileName(*f))
      return Status::error(pre_ + "file name '" + *f + "' is invalid");
  st = readWhole(path_ + "/" + plan_.weights_file(), kMaxBufferBytes, weightsHost_, "weights");
  if (!st.ok)
    return Status::error(pre_ + st.message);
  if ((int64_t)weightsHost_.size() != plan_.weights_bytes() ||
      plan::fnv1a64(weightsHost_.data(), weightsHost_.size()) != plan_.weights_fnv1a64())
    return Status::error(pre_ + plan_.weights_file() + " size or checksum mismatch (corrupt)");
  st = readWhole(path_ + "/" + plan_.kernels_file(), 1ll << 30, cubin_, "kernels");
  if (!st.ok)
    return Status::error(pre_ + st.message);
  if (plan::fnv1a64(cubin_.data(), cubin_.size()) != plan_.kernels_fnv1a64())
    return Status::error(pre_ + plan_.kernels_file() + " checksum mismatch (corrupt)");
  st = readWhole(path_ + "/" + plan_.ptx_file(), 1ll << 30, ptx_, "ptx");
  if (!st.ok)
    return Status::error(pre_ + st.message);
  if (plan::fnv1a64(ptx_.data(), ptx_.size()) != plan_.ptx_fnv1a64())
    return Status::error(pre_ + plan_.ptx_file() + " checksum mismatch (corrupt)");
  // Steps.
  for (int i = 0; i < plan_.steps_size(); ++i) {
    const plan::Step &s = plan_.steps(i);
    std::string where = pre_ + "step " + std::to_string(i) + " (" + s.symbol() + ")";
    for (int j = 0; j < s.args_size(); ++j) {
      st = checkArg(s.args(j), where + " arg " + std::to_string(j));
      if (!st.ok)
        return st;
    }
    if (s.kind() == plan::Step::GEMM) {
      if (s.skip_if_gemm_fused() || s.norm().kind() != plan::NormDesc::NONE)
        return Status::error(where + ": skip_if_gemm_fused and norm are for kernel steps");
      st = checkGemm(s, where);
      if (!st.ok)
        return st;
    } else if (s.kind() == plan::Step::KERNEL) {
      if (s.symbol().empty() || s.grid_size() != 3 || s.block_size() != 3)
        return Status::error(where + ": kernel step needs a symbol, grid[3] and block[3]");
      uint64_t threads = 1;
      for (int d = 0; d < 3; ++d) {
        if (s.grid(d) == 0 || s.block(d) == 0)
          return Status::error(where + ": empty launch dimension");
        threads *= s.block(d);
      }
      if (threads > 1024 || s.grid(1) > 65535 || s.grid(2) > 65535)
        return Status::error(where + ": launch shape exceeds the device limits");
      if (s.norm().kind() != plan::NormDesc::NONE) {
        st = checkNorm(i, where);
        if (!st.ok)
          return st;
      } else if (s.skip_if_gemm_fused() &&
                 (i == 0 || plan_.steps(i - 1).kind() != plan::Step::GEMM ||
                  plan_.steps(i - 1).gemm().activation() == plan::GemmDesc::NONE)) {
        return Status::error(where + ": skip_if_gemm_fused needs a GEMM step with an "
                                     "activation right before it");
      }
    } else {
      return Status::error(where + ": step kind " + std::to_string((int)s.kind()) +
                           " is not valid in a CUDA package");
    }
  }
  return checkOutputSources(plan_, outBytes_, pre_, [&](const BufferArg &a, const std::string &w) {
    return checkArg(a, w);
  });
}

Status CudaSession::checkNorm(int i, const std::string &where) const {
  const plan::Step &s = plan_.steps(i);
  if (!s.skip_if_gemm_fused() || i == 0)
    return Status::error(where + ": a norm step needs skip_if_gemm_fused and a GEMM step right "
                                 "before it");
  const std::string why = plan::gemmNormProblem(plan_.steps(i - 1), s);
  return why.empty() ? Status::success() : Status::error(where + ": " + why);
}

bool CudaSession::gemmMayApplyNorm(size_t i) const {
  if (i + 1 >= steps_.size() || !steps_[i + 1].norm)
    return false;
  if (const char *e = std::getenv("TGC_GEMM_NORM"); e && std::string(e) == "off")
    return false;
  const plan::Step &n = plan_.steps((int)i + 1);
  const int params = (n.norm().scale() ? 1 : 0) + (n.norm().bias() ? 1 : 0);
  for (int a = 1; a <= params; ++a)
    if (n.args(a).kind() != plan::WEIGHT)
      return false;
  return true;
}

int CudaSession::gemmWeightOperands(size_t i) const {
  const plan::Step &s = plan_.steps((int)i);
  return (s.args(1).kind() == plan::WEIGHT ? 1 : 0) |
         (s.gemm().bias() && s.args(3).kind() == plan::WEIGHT ? 2 : 0);
}

CUdeviceptr CudaSession::ptrOf(const BufferArg &a) const {
  switch (a.kind()) {
  case plan::ARENA: return arena_ + a.offset();
  case plan::WEIGHT: return weights_ + a.offset();
  case plan::INPUT: return inputsBuf_ + inOffsets_[a.index()] + a.offset();
  default: return 0;
  }
}

Status CudaSession::setupGpu() {
  std::string err;
  d_ = loadDriver(err);
  if (!d_)
    return Status::error(pre_ + err);
  auto fail = [&](const std::string &e) { return Status::error(pre_ + e); };
  std::string e;
  if (!(e = ck(d_->cuInit(0), "cuInit")).empty())
    return d_ = nullptr, fail(e);
  int ordinal = 0;
  if (const char *env = std::getenv("TGC_CUDA_DEVICE"); env && *env)
    ordinal = std::atoi(env);
  if (!(e = ck(d_->cuDeviceGet(&dev_, ordinal), "cuDeviceGet")).empty())
    return d_ = nullptr, fail(e);
  if (!(e = ck(d_->cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain")).empty())
    return d_ = nullptr, fail(e);
  ctxRetained_ = true;
  if (!(e = ck(d_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent")).empty())
    return fail(e);
  char name[256] = {0};
  d_->cuDeviceGetName(name, sizeof name - 1, dev_);
  int major = 0, minor = 0;
  d_->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_);
  d_->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_);
  deviceName_ = std::string(name) + " (sm_" + std::to_string(major) + std::to_string(minor) + ")";
  if (!(e = ck(d_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate")).empty())
    return fail(e);
  // The cubin when it is for this GPU, else the PTX (JIT-compiled by the driver).
  CUresult r = d_->cuModuleLoadData(&module_, cubin_.data());
  moduleFrom_ = plan_.kernels_file();
  if (r != CUDA_SUCCESS) {
    std::string cubinErr = ck(r, "cuModuleLoadData(cubin)");
    std::string text = ptx_ + '\0';
    if (!(e = ck(d_->cuModuleLoadData(&module_, text.data()), "cuModuleLoadData(ptx)")).empty())
      return fail(cubinErr + "; " + e);
    moduleFrom_ = plan_.ptx_file() + " (JIT: " + cubinErr + ")";
  }
  std::string().swap(cubin_);
  std::string().swap(ptx_);
  // Fallback GEMM kernels, one per GEMM dtype the plan uses (f16/bf16 ones exist only in
  // packages that store f16/bf16).
  for (const plan::Step &s : plan_.steps()) {
    if (s.kind() != plan::Step::GEMM)
      continue;
    int t = s.gemm().dtype() == 1 ? 0 : (s.gemm().dtype() == 10 ? 1 : 2);
    const char *names[] = {"tgk_gemm_f32", "tgk_gemm_f16", "tgk_gemm_bf16"};
    if (!gemmFallback_[t] &&
        !(e = ck(d_->cuModuleGetFunction(&gemmFallback_[t], module_, names[t]),
                 (std::string("cuModuleGetFunction(") + names[t] + ")").c_str())).empty())
      return fail(e);
    // Tensor-core kernels (absent from packages of older tgc versions: then not used), with
    // their dynamic shared memory allowed.
    for (int c = 0; c < (int)std::size(kMmaGemmConfigs); ++c) {
      const MmaGemmConfig &cfg = kMmaGemmConfigs[c];
      auto key = std::make_tuple((int)s.gemm().dtype(), s.gemm().trans_b(), c);
      CUfunction fn = nullptr;
      if (t != 0 && !mmaFns_.count(key) &&
          d_->cuModuleGetFunction(&fn, module_,
                                  mmaGemmSymbol(s.gemm().dtype(), s.gemm().trans_b(), cfg).c_str()) ==
              CUDA_SUCCESS &&
          d_->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 mmaGemmSmemBytes(cfg, s.gemm().trans_b())) == CUDA_SUCCESS)
        mmaFns_[key] = fn;
    }
  }
  d_->cuDeviceGetAttribute(&sms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_);
  sms_ = std::max(sms_, 1);
  // Shared memory per multiprocessor, reserved per block, most per block: what a step marked
  // one_block_per_sm is padded by (0 where the driver does not say: no padding).
  int smemPerBlock = 0;
  d_->cuDeviceGetAttribute(&smemPerSm_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev_);
  d_->cuDeviceGetAttribute(&smemReserved_, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, dev_);
  d_->cuDeviceGetAttribute(&smemPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev_);
  // Programmatic dependent launch needs sm_90 and cuLaunchKernelEx.
  if (const char *p = std::getenv("TGC_CUDA_PDL");
      (p && std::string(p) == "0") || major < 9 || !d_->cuLaunchKernelEx)
    pdl_ = false;
  // Buffers: weights (uploaded once), arena, inputs, cuBLASLt workspace.
  auto alloc = [&](CUdeviceptr &p, int64_t bytes, const char *what) {
    std::string e2 = ck(d_->cuMemAlloc(&p, (size_t)std::max<int64_t>(bytes, 256)), "cuMemAlloc");
    return e2.empty() ? e2 : e2 + " for the " + what + " (" + std::to_string(bytes) + " bytes)";
  };
  int64_t inTotal = inOffsets_.empty() ? 0 : inOffsets_.back() + inBytes_.back();
  if (!(e = alloc(weights_, plan_.weights_bytes(), "weights")).empty() ||
      !(e = alloc(arena_, plan_.arena_bytes(), "arena")).empty() ||
      !(e = alloc(inputsBuf_, inTotal, "inputs")).empty())
    return fail(e);
  if (!weightsHost_.empty() &&
      !(e = ck(d_->cuMemcpyHtoD(weights_, weightsHost_.data(), weightsHost_.size()),
               "cuMemcpyHtoD(weights)")).empty())
    return fail(e);
  std::string().swap(weightsHost_);
  // The arena and the inputs start zeroed: the load-time tuning replays the whole graph before any
  // input arrives (zero indices, finite values; gathers clamp their indices anyway).
  if (!(e = ck(d_->cuMemsetD8(arena_, 0, (size_t)std::max<int64_t>(plan_.arena_bytes(), 256)),
               "cuMemsetD8(arena)")).empty() ||
      !(e = ck(d_->cuMemsetD8(inputsBuf_, 0, (size_t)std::max<int64_t>(inTotal, 256)),
               "cuMemsetD8(inputs)")).empty())
    return fail(e);
  // cuBLASLt (optional: GEMMs fall back to tgk_gemm_f32).
  bool anyGemm = false;
  for (const plan::Step &s : plan_.steps())
    anyGemm = anyGemm || s.kind() == plan::Step::GEMM;
  if (const char *tv = std::getenv("TGC_GEMM_TUNE"); tv && std::string(tv) == "0")
    tune_ = false;
  if (anyGemm && (lt_ = loadBlasLt(ltError_))) {
    cublasStatus_t bs = lt_->create(&ltHandle_);
    if (bs != CUBLAS_STATUS_SUCCESS) {
      ltError_ = blasError(bs, "cublasLtCreate");
      ltHandle_ = nullptr;
    } else if (!(e = alloc(workspace_, kWorkspaceBytes, "cuBLASLt workspace")).empty()) {
      return fail(e);
    }
  }
  // The CUTLASS plug-in: its kernels are sm_90a (wgmma, TMA), for f16/bf16 GEMMs.
  bool halfGemm = false;
  for (const plan::Step &s : plan_.steps())
    halfGemm = halfGemm || (s.kind() == plan::Step::GEMM && s.gemm().dtype() != 1);
  if (const char *c = std::getenv("TGC_GEMM_CUTLASS"); c && std::string(c) == "off")
    cutlassError_ = "off ($TGC_GEMM_CUTLASS=off)";
  else if (halfGemm && (major != 9 || minor != 0))
    cutlassError_ = "its kernels are for sm_90 only";
  else if (halfGemm)
    cutlass_ = loadCutlass(cutlassError_);
  // Steps.
  steps_.resize(plan_.steps_size());
  for (int i = 0; i < plan_.steps_size(); ++i) { // (a GEMM's setup reads the next step's too)
    const plan::Step &s = plan_.steps(i);
    for (const BufferArg &a : s.args())
      steps_[i].ptrs.push_back(ptrOf(a));
    if (s.kind() == plan::Step::KERNEL) { // (validate refuses them on other steps)
      steps_[i].skipIfFused = s.skip_if_gemm_fused();
      steps_[i].norm = s.norm().kind() != plan::NormDesc::NONE;
    }
  }
  for (int i = 0; i < plan_.steps_size(); ++i) {
    const plan::Step &s = plan_.steps(i);
    RtStep &rs = steps_[i];
    if (s.kind() == plan::Step::GEMM) {
      rs.gemm = true;
      Status gs = setupGemm(i);
      if (!gs.ok)
        return gs;
      setupMma(i);
      if (Status cs = setupCutlass(i); !cs.ok)
        return cs;
      continue;
    }
    if (!(e = ck(d_->cuModuleGetFunction(&rs.fn, module_, s.symbol().c_str()),
                 "cuModuleGetFunction")).empty())
      return fail("step " + std::to_string(i) + " kernel '" + s.symbol() + "': " + e);
    for (int dd = 0; dd < 3; ++dd)
      rs.grid[dd] = s.grid(dd), rs.block[dd] = s.block(dd);
    rs.shared = plan::launchSharedBytes(s, (int64_t)rs.grid[0] * rs.grid[1] * rs.grid[2], sms_,
                                        smemPerSm_, smemReserved_, smemPerBlock);
    if (s.one_block_per_sm()) {
      ++oneBlockMarked_;
      if (rs.shared != s.shared_bytes())
        ++oneBlockPadded_, oneBlockShared_ = rs.shared;
    }
    if (rs.shared > 48 * 1024 &&
        !(e = ck(d_->cuFuncSetAttribute(rs.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        (int)rs.shared),
                 "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")).empty())
      return fail("step " + std::to_string(i) + " kernel '" + s.symbol() + "' needs " +
                  std::to_string(rs.shared) + " bytes of shared memory: " + e);
    for (CUdeviceptr &p : rs.ptrs)
      rs.params.push_back(&p);
  }
  if ((mmaWsBytes_ && !(e = alloc(mmaWs_, mmaWsBytes_, "split-K workspace")).empty()) ||
      (mmaCntBytes_ && !(e = alloc(mmaCnt_, mmaCntBytes_, "split-K counters")).empty()))
    return fail(e);
  if (mmaCnt_ && !(e = ck(d_->cuMemsetD8(mmaCnt_, 0, (size_t)mmaCntBytes_), "cuMemsetD8(counters)"))
                      .empty())
    return fail(e);
  if (const char *g = std::getenv("TGC_CUDA_GRAPH"); g && std::string(g) == "0")
    useGraph_ = false;
  // The tuning cache: this package's choices on this GPU from an earlier load, else tune and
  // keep what the tuners chose.
  const uint64_t key = tune_ && !gemmSteps().empty() ? tuneKey(major, minor) : 0;
  std::string cachePath;
  if (key)
    cachePath = tuneCachePath(key, tuneCacheNote_); // "" with the reason when there is none
  const bool cached = !cachePath.empty() && loadTuneCache(cachePath, key);
  if (tune_ && !cached) {
    Status ts = tuneGemms();
    if (!ts.ok)
      return ts;
  }
  for (CUevent *ev : {&runStart_, &runEnd_})
    if (!(e = ck(d_->cuEventCreate(ev, CU_EVENT_DEFAULT), "cuEventCreate")).empty())
      return fail(e);
  if (tune_ && useGraph_ && !cached) {
    Status ts = graphTuneGemms();
    if (!ts.ok)
      return ts;
  }
  if (!cachePath.empty() && !cached)
    saveTuneCache(cachePath, key);
  // The CUTLASS configurations not chosen are not needed any more (split-K ones hold partials).
  for (RtStep &rs : steps_)
    for (size_t j = 0; j < rs.g.cutCands.size(); ++j)
      if ((int)j != rs.g.cut && rs.g.cutCands[j].h) {
        cutlass_->destroy(rs.g.cutCands[j].h);
        rs.g.cutCands[j].h = nullptr;
      }
  const char *pin = std::getenv("TGC_CUDA_PINNED");
  if (!(pin && std::string(pin) == "0")) {
    int64_t total = inOffsets_.empty() ? 0 : inOffsets_.back() + inBytes_.back();
    total = (total + 255) / 256 * 256;
    for (int64_t b : outBytes_) {
      outOffsets_.push_back(total);
      total += (b + 255) / 256 * 256;
    }
    if (!(e = ck(d_->cuMemAllocHost(&pinned_, (size_t)std::max<int64_t>(total, 256)),
                 "cuMemAllocHost(staging)")).empty())
      return fail(e);
  }
  return Status::success();
}

Status CudaSession::setupGemm(size_t i) {
  const plan::GemmDesc &g = plan_.steps((int)i).gemm();
  RtStep &rs = steps_[i];
  GemmRt &gr = rs.g;
  gr.m = g.m(), gr.n = g.n(), gr.k = g.k(), gr.lda = g.lda(), gr.ldb = g.ldb(), gr.ldc = g.ldc();
  gr.sa = g.stride_a(), gr.sb = g.stride_b(), gr.sc = g.stride_c(), gr.transB = g.trans_b();
  gr.act = g.activation(), gr.batch = g.batch(), gr.sbias = g.bias_stride();
  gr.bias = g.bias() ? rs.ptrs[3] : 0;
  gr.residual = g.residual() ? rs.ptrs.back() : 0;
  // Fallback kernel launch: grid (n/16, m/16, batch) of 16×16 threads.
  const int t = g.dtype() == 1 ? 0 : (g.dtype() == 10 ? 1 : 2);
  rs.fn = gemmFallback_[t];
  rs.grid[0] = (unsigned)((g.n() + 15) / 16), rs.grid[1] = (unsigned)((g.m() + 15) / 16);
  rs.grid[2] = (unsigned)g.batch();
  rs.block[0] = rs.block[1] = 16;
  if ((g.m() + 15) / 16 > 65535 || g.batch() > 65535)
    if (!ltHandle_)
      return Status::error(pre_ + "step " + std::to_string(i) + ": GEMM too large for the "
                           "fallback kernel and cuBLASLt is unavailable: " + ltError_);
  void *params[] = {&rs.ptrs[0], &rs.ptrs[1], &rs.ptrs[2], &gr.bias, &gr.residual, &gr.m,
                    &gr.n, &gr.k, &gr.transB, &gr.lda, &gr.ldb, &gr.ldc, &gr.sa, &gr.sb, &gr.sc,
                    &gr.sbias, &gr.act};
  rs.params.assign(std::begin(params), std::end(params));
  // With an activation cuBLASLt's epilogue lacks (or after a residual), cuBLASLt computes the GEMM
  // and the next step (marked skip_if_gemm_fused) applies the activation.
  if (!ltHandle_)
    return Status::success();
  // Row-major C = A·op(B) is column-major Cᵀ = op(B)ᵀ·Aᵀ: cuBLASLt's A is our B, its B our A.
  auto fail = [&](cublasStatus_t s, const char *call) {
    return Status::error(pre_ + "step " + std::to_string(i) + ": " + blasError(s, call));
  };
  // fp32 accumulation and float alpha/beta for every storage type; A/B/C/D (and the bias, which
  // cuBLASLt takes in D's type) are f32, f16 or bf16.
  const cudaDataType_t dt = t == 0 ? CUDA_R_32F : (t == 1 ? CUDA_R_16F : CUDA_R_16BF);
  cublasStatus_t s;
  if ((s = lt_->descCreate(&gr.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) != CUBLAS_STATUS_SUCCESS)
    return fail(s, "cublasLtMatmulDescCreate");
  cublasOperation_t ta = g.trans_b() ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
  lt_->descSet(gr.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  lt_->descSet(gr.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  // cuBLASLt's epilogue applies ReLU and tanh-GELU (exactly our activation codes 1 and 3) after
  // the bias; with a residual it would apply them after adding C, so those GEMMs keep the
  // activation step.
  gr.ltAct = (g.activation() == 1 || g.activation() == 3) && !g.residual();
  auto setEpilogue = [&] {
    cublasLtEpilogue_t ep =
        !gr.ltAct ? (g.bias() ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT)
        : g.activation() == 1 ? (g.bias() ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU)
                              : (g.bias() ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU);
    return lt_->descSet(gr.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep);
  };
  if ((s = setEpilogue()) != CUBLAS_STATUS_SUCCESS)
    return fail(s, "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  if (g.bias()) {
    void *bias = reinterpret_cast<void *>(gr.bias);
    if ((s = lt_->descSet(gr.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias)) !=
        CUBLAS_STATUS_SUCCESS)
      return fail(s, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
    int64_t biasStride = g.bias_stride();
    if (biasStride &&
        (s = lt_->descSet(gr.desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &biasStride,
                          sizeof biasStride)) != CUBLAS_STATUS_SUCCESS)
      return fail(s, "cublasLtMatmulDescSetAttribute(BIAS_BATCH_STRIDE)");
  }
  auto layout = [&](cublasLtMatrixLayout_t &l, int64_t rows, int64_t cols, int64_t ld,
                    int64_t stride) {
    cublasStatus_t st = lt_->layoutCreate(&l, dt, rows, cols, ld);
    if (st == CUBLAS_STATUS_SUCCESS && g.batch() > 1) {
      int32_t count = (int32_t)g.batch();
      lt_->layoutSet(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
      st = lt_->layoutSet(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
    }
    return st;
  };
  if ((s = g.trans_b() ? layout(gr.a, g.k(), g.n(), g.ldb(), g.stride_b())
                       : layout(gr.a, g.n(), g.k(), g.ldb(), g.stride_b())) != 0 ||
      (s = layout(gr.b, g.k(), g.m(), g.lda(), g.stride_a())) != 0 ||
      (s = layout(gr.c, g.n(), g.m(), g.ldc(), g.stride_c())) != 0)
    return fail(s, "cublasLtMatrixLayoutCreate");
  cublasLtMatmulPreference_t pref = nullptr;
  if ((s = lt_->prefCreate(&pref)) != CUBLAS_STATUS_SUCCESS)
    return fail(s, "cublasLtMatmulPreferenceCreate");
  uint64_t ws = kWorkspaceBytes;
  lt_->prefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t results[kTuneCandidates] = {};
  int found = 0;
  s = lt_->heuristic(ltHandle_, gr.desc, gr.a, gr.b, gr.c, gr.c, pref, tune_ ? kTuneCandidates : 1,
                     results, &found);
  if (gr.ltAct && (s != CUBLAS_STATUS_SUCCESS || found == 0)) {
    // No algorithm with the activation epilogue: the activation step applies it.
    gr.ltAct = false;
    setEpilogue();
    s = lt_->heuristic(ltHandle_, gr.desc, gr.a, gr.b, gr.c, gr.c, pref,
                       tune_ ? kTuneCandidates : 1, results, &found);
  }
  lt_->prefDestroy(pref);
  if (s == CUBLAS_STATUS_SUCCESS)
    for (int j = 0; j < found && j < kTuneCandidates; ++j)
      if (results[j].state == CUBLAS_STATUS_SUCCESS && results[j].workspaceSize <= kWorkspaceBytes)
        gr.cands.push_back(results[j].algo);
  if (!gr.cands.empty()) {
    gr.algo = gr.cands[0];
    gr.useLt = true;
  } // else: no cuBLASLt algorithm for this shape; the fallback kernel runs it
  return Status::success();
}

// The tensor-core configurations that fit step i's GEMM (shape, alignment, launch limits, split-K
// workspace), and a default: the smallest split count on 64-row tiles that gives every SM a block
// (used when cuBLASLt cannot run the GEMM and tuning is off).
void CudaSession::setupMma(size_t i) {
  const plan::GemmDesc &g = plan_.steps((int)i).gemm();
  RtStep &rs = steps_[i];
  GemmRt &gr = rs.g;
  // $TGC_GEMM_MMA (testing, A/B timing): "off" never uses the tensor-core kernels;
  // "<BM>x<BK>x<splits>" (e.g. 64x32x4) forces that configuration on every GEMM it fits.
  const char *force = std::getenv("TGC_GEMM_MMA");
  const std::string forceCfg = force ? force : "";
  if (forceCfg == "off")
    return;
  if (!mmaGemmShapeFits(g.dtype(), g.n(), g.k(), g.lda(), g.ldb(), g.ldc(), g.stride_a(),
                        g.stride_b(), g.stride_c()) ||
      rs.ptrs[0] % 16 || rs.ptrs[1] % 16 || rs.ptrs[2] % 4)
    return;
  gr.im = (int)g.m(), gr.in = (int)g.n(), gr.ik = (int)g.k();
  gr.mmaFlags = gemmWeightOperands(i);
  gr.ilda = (int)g.lda(), gr.ildb = (int)g.ldb(), gr.ildc = (int)g.ldc();
  int dflt = -1;
  for (int c = 0; c < (int)std::size(kMmaGemmConfigs); ++c) {
    const MmaGemmConfig &cfg = kMmaGemmConfigs[c];
    auto f = mmaFns_.find(std::make_tuple((int)g.dtype(), g.trans_b(), c));
    const int64_t tilesM = (g.m() + cfg.bm - 1) / cfg.bm;
    if (f == mmaFns_.end() || tilesM > 65535)
      continue;
    const int64_t tiles = tilesM * (g.n() / kMmaGemmTileCols) * g.batch();
    for (int sp : kSplitCounts) {
      if (g.k() % (cfg.bk * sp) || g.batch() * sp > 65535 || (sp > 1 && tiles * sp > 4 * sms_))
        continue;
      const int64_t ws = sp > 1 ? tiles * sp * cfg.bm * kMmaGemmTileCols * 4 : 0;
      if (ws > kMmaWorkspaceMax)
        continue;
      mmaWsBytes_ = std::max(mmaWsBytes_, ws);
      mmaCntBytes_ = std::max(mmaCntBytes_, sp > 1 ? tiles * 4 : 0);
      gr.mmaCands.push_back({f->second, cfg, mmaGemmSmemBytes(cfg, g.trans_b()), sp});
      // Default: the first configuration, with the fewest splits that give every SM a block.
      if (c == 0 && (dflt < 0 || tiles * gr.mmaCands[(size_t)dflt].splits < sms_))
        dflt = (int)gr.mmaCands.size() - 1;
    }
  }
  if (!gr.useLt && !gr.mmaCands.empty())
    gr.mma = dflt >= 0 ? dflt : 0;
  for (size_t j = 0; j < gr.mmaCands.size(); ++j)
    if (forceCfg == gr.mmaCands[j].name())
      gr.mma = (int)j, gr.forced = true;
}

// A linear (B is n×k) at f16/bf16 whose B and bias are weights, batched or not, with no
// activation, erf- or tanh-GELU, and not both an activation and a residual: what the plug-in's
// kernels implement (it checks the rest: alignment, split-K's limits). B and the bias must be
// weights because the kernels read them before they wait for the kernel ahead (programmatic
// dependent launch): one computed by that kernel would be read stale. Every configuration the
// plug-in accepts and can prepare becomes a candidate; one it cannot prepare on the device (e.g. no memory for split-K partials) is left
// out and named in the tuning report, and the GEMM keeps its other candidates.
Status CudaSession::setupCutlass(size_t i) {
  const plan::GemmDesc &g = plan_.steps((int)i).gemm();
  RtStep &rs = steps_[i];
  GemmRt &gr = rs.g;
  if (!cutlass_ || !g.trans_b() || g.dtype() == 1 ||
      gemmWeightOperands(i) != (g.bias() ? 3 : 1))
    return Status::success();
  TgcCutlassGemmDesc d{};
  d.abi = TGC_CUTLASS_ABI, d.dtype = g.dtype(), d.activation = g.activation();
  d.m = g.m(), d.n = g.n(), d.k = g.k(), d.lda = g.lda(), d.ldb = g.ldb(), d.ldc = g.ldc();
  d.batch = g.batch(), d.stride_a = g.stride_a(), d.stride_b = g.stride_b();
  d.stride_c = g.stride_c(), d.bias_stride = g.bias_stride();
  d.a = reinterpret_cast<const void *>(rs.ptrs[0]);
  d.b = reinterpret_cast<const void *>(rs.ptrs[1]);
  d.c = reinterpret_cast<void *>(rs.ptrs[2]);
  d.bias = reinterpret_cast<const void *>(gr.bias);
  d.residual = reinterpret_cast<const void *>(gr.residual);
  // The norm step after it (validated: checkNorm): split-K's sum kernel applies it where
  // gemmMayApplyNorm and the plug-in accepts its buffers (its output equal to or clear of C and
  // the residual; an f32 output clear of both), else the norm step runs after the GEMM.
  const plan::NormDesc *nd = nullptr;
  if (gemmMayApplyNorm(i)) {
    nd = &plan_.steps((int)i + 1).norm();
    const std::vector<CUdeviceptr> &p = steps_[i + 1].ptrs;
    d.eps = nd->epsilon();
    d.gamma = nd->scale() ? reinterpret_cast<const void *>(p[1]) : nullptr;
    d.beta = nd->bias() ? reinterpret_cast<const void *>(p[1 + nd->scale()]) : nullptr;
    d.norm_out = reinterpret_cast<void *>(p.back());
    d.norm_out_f32 = nd->out_f32() ? 1 : 0;
  }
  char err[512] = {0};
  for (auto [tile, splits] : kCutlassConfigs) {
    d.tile = tile, d.splits = splits;
    d.norm = splits > 1 && nd ? (int)nd->kind() : 0;
    if (d.norm && cutlass_->check(&d, err, sizeof err) != 0)
      d.norm = 0;
    TgcCutlassGemmDesc plain = d; // the norm's buffers only where it is applied
    if (!d.norm)
      plain.gamma = plain.beta = plain.norm_out = nullptr, plain.eps = 0.f, plain.norm_out_f32 = 0;
    void *h = nullptr;
    // The plug-in checks split-K's divisibility; the runtime limits slice depth and memory.
    if ((splits > 1 && (g.k() / splits < kCutlassMinSliceK ||
                        splits * g.m() * g.n() * 4 > kMmaWorkspaceMax)) ||
        cutlass_->check(&plain, err, sizeof err) != 0)
      continue;
    if (cutlass_->create(&plain, &h, err, sizeof err) != 0) {
      if (cutlassSetupError_.empty())
        cutlassSetupError_ = "step " + std::to_string(i) + " " + cutlassName(tile, splits) + ": " + err;
      continue;
    }
    gr.cutCands.push_back({h, tile, splits, d.norm != 0});
  }
  // $TGC_GEMM_CUTLASS=force: the first configuration that fits; =<name> (e.g.
  // cutlass64x64x128/s2): that one where it fits. Untuned.
  const char *c = std::getenv("TGC_GEMM_CUTLASS");
  const std::string force = c ? c : "";
  for (size_t j = 0; j < gr.cutCands.size(); ++j)
    if ((force == "force" && j == 0) || force == gr.cutCands[j].name())
      gr.cut = (int)j, gr.mma = -1, gr.forced = true;
  if (!gr.forced && !gr.useLt && gr.mma < 0 && !gr.cutCands.empty())
    gr.cut = 0; // rather than the fallback kernel
  return Status::success();
}

std::string CudaSession::launchGemm(const RtStep &s) {
  if (s.g.cut >= 0) {
    char err[512] = {0};
    if (cutlass_->run(s.g.cutCands[(size_t)s.g.cut].h, stream_, pdl_ ? 1 : 0, err, sizeof err) != 0)
      return err;
    return "";
  }
  if (s.g.mma >= 0) {
    const GemmRt::Mma &c = s.g.mmaCands[(size_t)s.g.mma];
    auto p = [](const auto &v) { return const_cast<void *>(static_cast<const void *>(&v)); };
    void *params[] = {p(s.ptrs[0]), p(s.ptrs[1]), p(s.ptrs[2]), p(s.g.bias), p(s.g.residual),
                      p(mmaWs_),    p(mmaCnt_),   p(s.g.im),   p(s.g.in),   p(s.g.ik),
                      p(s.g.ilda),  p(s.g.ildb),  p(s.g.ildc), p(s.g.sa),   p(s.g.sb),
                      p(s.g.sc),    p(s.g.sbias), p(c.splits), p(s.g.act),  p(s.g.mmaFlags)};
    const unsigned grid[3] = {(unsigned)(s.g.n / kMmaGemmTileCols),
                              (unsigned)((s.g.m + c.cfg.bm - 1) / c.cfg.bm),
                              (unsigned)(s.g.batch * c.splits)};
    const unsigned block[3] = {(unsigned)(c.cfg.bm * 2), 1, 1};
    return launch(c.fn, grid, block, (unsigned)c.smem, params, "launch(tgk_mma_gemm)");
  }
  // With a residual R: D = A·B (+ bias) + 1·R, cuBLASLt's C input.
  const bool res = s.g.residual != 0;
  cublasStatus_t bs = lt_->matmul(ltHandle_, s.g.desc, &alpha_,
                                  reinterpret_cast<void *>(s.ptrs[1]), s.g.a,
                                  reinterpret_cast<void *>(s.ptrs[0]), s.g.b,
                                  res ? &alpha_ : &beta_,
                                  reinterpret_cast<void *>(res ? s.g.residual : s.ptrs[2]), s.g.c,
                                  reinterpret_cast<void *>(s.ptrs[2]), s.g.c, &s.g.algo,
                                  reinterpret_cast<void *>(workspace_), kWorkspaceBytes,
                                  reinterpret_cast<cudaStream_t>(stream_));
  return bs == CUBLAS_STATUS_SUCCESS ? std::string() : blasError(bs, "cublasLtMatmul");
}

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
                      (int64_t)g.activation(),
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

std::string CudaSession::zeroArena() {
  std::string e = ck(d_->cuMemsetD32Async(arena_, 0,
                                          (size_t)std::max<int64_t>(plan_.arena_bytes(), 256) / 4,
                                          stream_),
                     "cuMemsetD32Async(arena)");
  return e.empty() ? ck(d_->cuStreamSynchronize(stream_), "cuStreamSynchronize") : e;
}

std::string CudaSession::captureGraph(CUgraphExec &exec, const std::vector<std::string> *omit) {
  std::string e = ck(d_->cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                     "cuStreamBeginCapture");
  if (!e.empty())
    return e;
  Status enq = enqueueSteps(false, omit);
  CUgraph graph = nullptr;
  e = ck(d_->cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture");
  if (!enq.ok) // the failed step, not the capture it invalidated
    e = enq.message;
  if (e.empty())
    e = ck(d_->cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  if (graph)
    d_->cuGraphDestroy(graph);
  return e;
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
  if (const char *g = std::getenv("TGC_GEMM_GRAPH_TUNE"); g && std::string(g) == "0") {
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

std::string CudaSession::launch(CUfunction fn, const unsigned grid[3], const unsigned block[3],
                                unsigned shared, void **params, const char *what) {
  if (pdl_) {
    CUlaunchAttribute at{};
    at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    at.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = grid[0], cfg.gridDimY = grid[1], cfg.gridDimZ = grid[2];
    cfg.blockDimX = block[0], cfg.blockDimY = block[1], cfg.blockDimZ = block[2];
    cfg.sharedMemBytes = shared, cfg.hStream = stream_, cfg.attrs = &at, cfg.numAttrs = 1;
    return ck(d_->cuLaunchKernelEx(&cfg, fn, params, nullptr), what);
  }
  return ck(d_->cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared,
                               stream_, params, nullptr),
            what);
}

std::string CudaSession::launchKernel(const RtStep &s) {
  return launch(s.fn, s.grid, s.block, s.shared, const_cast<void **>(s.params.data()),
                "cuLaunchKernel");
}

Status CudaSession::enqueueSteps(bool events, const std::vector<std::string> *omit) {
  for (size_t i = 0; i < steps_.size(); ++i) {
    RtStep &s = steps_[i];
    std::string e;
    if (skipped(i) || (omit && plan::stepOmitted(plan_.steps((int)i), *omit))) {
      // The GEMM before applied the activation, or a diagnostic replay leaves the step out.
    } else if (s.gemm && (s.g.useLt || s.g.mma >= 0 || s.g.cut >= 0)) {
      e = launchGemm(s);
    } else {
      e = launchKernel(s);
    }
    if (!e.empty())
      return Status::error("step " + std::to_string(i) + " (" + plan_.steps((int)i).symbol() +
                           "): " + e);
    if (events && !(e = ck(d_->cuEventRecord(events_[i + 1], stream_), "cuEventRecord")).empty())
      return Status::error(e);
  }
  return Status::success();
}

Status CudaSession::validateOnly(const std::string &path) {
  path_ = path;
  pre_ = "package '" + path + "': ";
  return validate();
}

Status CudaSession::init(const std::string &path) {
  Status st = validateOnly(path);
  return st.ok ? setupGpu() : st;
}

Status CudaSession::checkSpecs(const TensorRef *refs, size_t n, bool isInput) const {
  const auto &specs = isInput ? inputs_ : outputs_;
  const auto &sizes = isInput ? inBytes_ : outBytes_;
  const char *what = isInput ? "input" : "output";
  if (n != specs.size())
    return Status::error("expected " + std::to_string(specs.size()) + " " + what + "s, got " +
                         std::to_string(n));
  for (size_t i = 0; i < n; ++i) {
    const TensorRef &r = refs[i];
    const TensorSpec &s = specs[i];
    bool same = r.dtype == s.dtype && r.rank >= 0 && (size_t)r.rank == s.shape.size() &&
                (r.rank == 0 || r.dims);
    for (size_t d = 0; same && d < s.shape.size(); ++d)
      same = r.dims[d] == s.shape[d];
    if (!same)
      return Status::error(std::string(what) + " '" + escapeText(s.name) + "': expected " +
                           dtypeName(s.dtype) + " " + shapeString(s.shape) +
                           ", got another dtype or shape");
    if ((int64_t)r.bytes < sizes[i] || (sizes[i] > 0 && !r.data))
      return Status::error(std::string(what) + " '" + escapeText(s.name) + "': buffer has " +
                           std::to_string(r.bytes) + " bytes, needs " + std::to_string(sizes[i]));
  }
  return isInput ? checkIndexBounds(inputs_, refs, n) : Status::success();
}

Status CudaSession::runRefs(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                            size_t numOutputs) {
  RunGuard guard(running_);
  if (!guard.acquired)
    return Status::error(kConcurrentRun);
  Status st = checkSpecs(inputs, numInputs, true);
  if (!st.ok)
    return st;
  if (!(st = checkSpecs(outputs, numOutputs, false)).ok)
    return st;
  return execute(inputs, numInputs, outputs, numOutputs);
}

Status CudaSession::execute(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                            size_t numOutputs) {
  Status st;
  std::string e;
  auto fail = [](const std::string &m) { return Status::error(m); };
  if (!(e = ck(d_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent")).empty())
    return fail(e);
  auto *staging = static_cast<uint8_t *>(pinned_);
  for (size_t i = 0; i < numInputs; ++i) {
    if (inBytes_[i] == 0)
      continue;
    const void *src = inputs[i].data;
    if (staging) {
      std::memcpy(staging + inOffsets_[i], src, (size_t)inBytes_[i]);
      src = staging + inOffsets_[i];
    }
    if (!(e = ck(d_->cuMemcpyHtoDAsync(inputsBuf_ + inOffsets_[i], src, (size_t)inBytes_[i],
                                       stream_),
                 "cuMemcpyHtoDAsync(input)")).empty())
      return fail(e);
  }
  if (!(e = ck(d_->cuEventRecord(runStart_, stream_), "cuEventRecord")).empty())
    return fail(e);
  if (profiling_) {
    if (events_.size() != steps_.size() + 1) {
      events_.resize(steps_.size() + 1);
      for (CUevent &ev : events_)
        if (!(e = ck(d_->cuEventCreate(&ev, CU_EVENT_DEFAULT), "cuEventCreate")).empty())
          return fail(e);
    }
    if (!(e = ck(d_->cuEventRecord(events_[0], stream_), "cuEventRecord")).empty())
      return fail(e);
    if (!(st = enqueueSteps(true)).ok)
      return st;
  } else if (!useGraph_) {
    if (!(st = enqueueSteps(false)).ok)
      return st;
  } else {
    if (!graph_ && !(e = captureGraph(graph_)).empty()) {
      graph_ = nullptr;
      return fail("capturing the CUDA graph: " + e);
    }
    if (!(e = ck(d_->cuGraphLaunch(graph_, stream_), "cuGraphLaunch")).empty())
      return fail(e);
  }
  if (!(e = ck(d_->cuEventRecord(runEnd_, stream_), "cuEventRecord")).empty())
    return fail(e);
  for (size_t i = 0; i < numOutputs; ++i) {
    const BufferArg &src = plan_.outputs((int)i).source();
    void *dst = staging ? staging + outOffsets_[i] : outputs[i].data;
    if (src.bytes() > 0 &&
        !(e = ck(d_->cuMemcpyDtoHAsync(dst, ptrOf(src), (size_t)src.bytes(), stream_),
                 "cuMemcpyDtoHAsync(output)")).empty())
      return fail(e);
  }
  if (!(e = ck(d_->cuStreamSynchronize(stream_), "cuStreamSynchronize")).empty())
    return fail(e + " (a kernel failed; rerun with TGC_CUDA_GRAPH=0 to find it)");
  if (staging)
    for (size_t i = 0; i < numOutputs; ++i)
      std::memcpy(outputs[i].data, staging + outOffsets_[i], (size_t)outBytes_[i]);
  float ms = 0;
  deviceMicros_ = d_->cuEventElapsedTime(&ms, runStart_, runEnd_) == CUDA_SUCCESS ? ms * 1e3 : -1;
  if (profiling_) {
    profile_.assign(steps_.size(), StepProfile{});
    double t = 0;
    for (size_t i = 0; i < steps_.size(); ++i) {
      float ms = 0;
      if (!(e = ck(d_->cuEventElapsedTime(&ms, events_[i], events_[i + 1]),
                   "cuEventElapsedTime")).empty())
        return fail(e);
      StepProfile &p = profile_[i];
      p.symbol = plan_.steps((int)i).symbol();
      p.label = safeText(plan_.steps((int)i).label());
      p.startMicros = t;
      p.micros = ms * 1000.0;
      t += p.micros;
    }
  }
  return Status::success();
}

Status CudaSession::run(const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs) {
  std::vector<TensorRef> in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor &t = inputs[i];
    in[i] = {t.dtype, t.shape.data(), (int32_t)t.shape.size(),
             const_cast<uint8_t *>(t.data.data()), t.data.size()};
    if (i < inputs_.size() && t.dtype == inputs_[i].dtype && t.shape == inputs_[i].shape &&
        bytesOf(t.dtype, t.shape) != (int64_t)t.data.size())
      return Status::error("input '" + escapeText(inputs_[i].name) + "': data has " +
                           std::to_string(t.data.size()) + " bytes, expected " +
                           std::to_string(bytesOf(t.dtype, t.shape)));
  }
  RunGuard guard(running_);
  if (!guard.acquired)
    return Status::error(kConcurrentRun);
  Status st = checkSpecs(in.data(), in.size(), true); // once: the outputs are made to fit
  if (!st.ok)
    return st;
  outputs.clear();
  try {
    outputs.reserve(outputs_.size());
    for (const TensorSpec &s : outputs_)
      outputs.push_back(HostTensor::zeros(s.dtype, s.shape, s.name));
  } catch (const std::bad_alloc &) {
    outputs.clear();
    return Status::error("out of memory allocating the outputs");
  }
  std::vector<TensorRef> out(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    out[i] = {outputs[i].dtype, outputs[i].shape.data(), (int32_t)outputs[i].shape.size(),
              outputs[i].data.data(), outputs[i].data.size()};
  return execute(in.data(), in.size(), out.data(), out.size());
}

double CudaSession::replayMicros(int iters, const std::vector<std::string> &omit) {
  RunGuard guard(running_);
  if (!guard.acquired || !graph_ || iters < 1 || d_->cuCtxSetCurrent(ctx_) != CUDA_SUCCESS)
    return -1;
  CUgraphExec exec = graph_;
  if (!omit.empty() && !captureGraph(exec, &omit).empty())
    return -1;
  auto time = [&]() -> double {
    if (d_->cuEventRecord(runStart_, stream_) != CUDA_SUCCESS)
      return -1;
    for (int i = 0; i < iters; ++i)
      if (d_->cuGraphLaunch(exec, stream_) != CUDA_SUCCESS)
        return -1;
    float ms = 0;
    if (d_->cuEventRecord(runEnd_, stream_) != CUDA_SUCCESS ||
        d_->cuEventSynchronize(runEnd_) != CUDA_SUCCESS ||
        d_->cuEventElapsedTime(&ms, runStart_, runEnd_) != CUDA_SUCCESS)
      return -1;
    return ms * 1000.0 / iters;
  };
  if (exec != graph_ && d_->cuGraphLaunch(exec, stream_) != CUDA_SUCCESS) // upload, untimed
    iters = 0;
  double us = iters ? time() : -1;
  if (exec != graph_)
    d_->cuGraphExecDestroy(exec);
  return us;
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
  return plan::fnv1a64(k.data(), k.size());
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

std::string CudaSession::describe() const {
  int gemms = 0, lt = 0, mma = 0, cut = 0;
  std::map<std::string, int> configs, tiles;
  for (const RtStep &s : steps_) {
    const bool onCutlass = s.gemm && s.g.cut >= 0;
    if (onCutlass)
      ++tiles[s.g.cutCands[(size_t)s.g.cut].name()];
    gemms += s.gemm, mma += s.gemm && s.g.mma >= 0, cut += onCutlass;
    lt += s.gemm && s.g.useLt && s.g.mma < 0 && !onCutlass;
    if (s.gemm && s.g.mma >= 0)
      ++configs[s.g.mmaCands[(size_t)s.g.mma].name()];
  }
  std::string cfg, tileCfg;
  for (const auto &[c, n] : configs)
    cfg += (cfg.empty() ? ": " : ", ") + std::to_string(n) + " × " + c;
  for (const auto &[c, n] : tiles)
    tileCfg += (tileCfg.empty() ? ": " : ", ") + std::to_string(n) + " × " + c;
  int fusedActs = 0, fusedNorms = 0;
  for (size_t i = 0; i < steps_.size(); ++i)
    (steps_[i].norm ? fusedNorms : fusedActs) += skipped(i);
  std::string fused;
  if (fusedActs)
    fused = std::to_string(fusedActs) + " activation steps";
  if (fusedNorms)
    fused += (fused.empty() ? "" : " and ") + std::to_string(fusedNorms) + " norm steps";
  std::string s = "package: " + path_ + "\n" + "device: " + deviceName_ + ", module from " +
                  moduleFrom_ + "\n" + "gemms: " + std::to_string(gemms) + " (" +
                  std::to_string(mma) + " on tgc tensor-core kernels (BMxBKxsplits)" + cfg + "; " +
                  std::to_string(lt) + " through cuBLASLt" +
                  (ltHandle_ ? "" : ", cuBLASLt unavailable: " + ltError_) + "; " +
                  std::to_string(cut) + " on CUTLASS" +
                  (cutlass_ ? " (" + cutlass_->path + ")" + tileCfg
                            : ", CUTLASS unavailable: " + cutlassError_) +
                  (cutlassSetupError_.empty() ? "" : "; not prepared: " + cutlassSetupError_) +
                  ")\n" +
                  "gemm autotune: " + (tune_ ? tuneSummary_ : "off ($TGC_GEMM_TUNE=0)") + "\n" +
                  "gemm autotune in the graph: " + graphTuneSummary_ + "\n" +
                  (tuneCacheNote_.empty() ? "" : "gemm tuning cache: " + tuneCacheNote_ + "\n") +
                  tuneDetail_ +
                  oneBlockLine() +
                  "launches per run: " + std::to_string(launchesPerRun()) +
                  (fused.empty() ? "" : " (" + fused + " fused into GEMMs)") +
                  (useGraph_ ? " (one CUDA graph" : " (no graph") +
                  (pdl_ ? ", programmatic dependent launch)\n" : ")\n");
  return s + plan::formatPlan(plan_);
}

} // namespace

bool cudaDeviceAvailable(std::string &why, std::string &arch) {
  const Driver *d = loadDriver(why);
  if (!d)
    return false;
  if (!(why = check(*d, d->cuInit(0), "cuInit")).empty())
    return false;
  int ordinal = 0, major = 0, minor = 0;
  if (const char *env = std::getenv("TGC_CUDA_DEVICE"); env && *env)
    ordinal = std::atoi(env);
  CUdevice dev;
  if (!(why = check(*d, d->cuDeviceGet(&dev, ordinal), "cuDeviceGet")).empty())
    return false;
  d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  arch = "sm_" + std::to_string(major) + std::to_string(minor);
  return true;
}

std::string describeCudaPackageWithoutGpu(const std::string &path, const std::string &why,
                                          Status &st) {
  CudaSession s;
  try {
    st = s.validateOnly(path);
  } catch (const std::exception &e) {
    st = Status::error("package '" + path + "': " + e.what());
  }
  if (!st.ok)
    return "";
  return "package: " + path + "\ndevice: none usable here (" + why +
         "); GEMM kernels are chosen when the package loads on a GPU\n" + s.planText();
}

bool isCudaPackage(const std::string &path) {
  std::string bytes;
  if (!readWhole(path + "/plan.pb", plan::kMaxPlanBytes, bytes, "plan").ok)
    return false;
  plan::Plan p;
  return p.ParseFromString(bytes) && p.target().rfind("cuda:", 0) == 0;
}

std::unique_ptr<Session> loadCudaSession(const std::string &path, Status &st) {
  auto s = std::make_unique<CudaSession>();
  try {
    st = s->init(path);
  } catch (const std::exception &e) {
    st = Status::error("package '" + path + "': " + e.what());
  }
  if (!st.ok)
    return nullptr;
  return s;
}

} // namespace tgc::cuda
