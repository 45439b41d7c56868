// CudaSessionImpl.h — the CUDA session's class, shared by the files that implement it (one
// concept each, as IREE's hal/drivers/cuda does): CudaSession.cpp (load, run, describe),
// CudaPlanCheck.cpp, CudaDeviceSetup.cpp, CudaGemmSetup.cpp, CudaGemmTuner.cpp and CudaGraph.cpp.
// Private to runtime/cuda; the public face is CudaSession.h.
#ifndef TGC_RUNTIME_CUDA_CUDASESSIONIMPL_H
#define TGC_RUNTIME_CUDA_CUDASESSIONIMPL_H

#include "runtime/cuda/CudaSession.h"
#include "runtime/SessionBase.h"
#include "runtime/Text.h"
#include "runtime/IndexBounds.h"
#include "runtime/LoopPlan.h"
#include "runtime/PackageFiles.h"
#include "runtime/schema/MmaGemm.h"
#include "runtime/schema/PlanUtil.h"
#include "runtime/cuda/CudaApi.h"
#include "runtime/cuda/TuneCache.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <cstdio>
#include <map>
#include <memory>
#include <cstdlib>
#include <cstring>
#include <new>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace tgc::cuda::detail {

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
/// depth, "pp" for the ping-pong kernel, "co" for the cooperative one, and "/sN" for N-way
/// split-K.
inline std::string cutlassName(int tile, int splits) {
  static const char *const names[] = {"cutlass64x64x128",    "cutlass64x128x64",
                                      "cutlass64x32x128",    "cutlass128x128x64pp",
                                      "cutlass64x128x64pp",  "cutlass192x128x64co",
                                      "cutlass192x64x64pp",  "cutlass96x64x64pp"};
  return std::string(names[tile]) +
         (splits > 1 ? "/s" + std::to_string(splits) : "");
}
/// The plug-in configurations offered per GEMM as (tile, splits); split-K only where every
/// slice is at least 256 deep (bert_base's FFN down-projection: 2, 3 or 4 slices of 3072); the
/// ping-pong and cooperative tiles (3 and up) only for many tokens (kCutlassPingPongMinTokens).
constexpr std::pair<int, int> kCutlassConfigs[] = {{0, 1}, {1, 1}, {2, 1}, {0, 2}, {0, 3}, {0, 4},
                                                   {3, 1}, {4, 1}, {5, 1}, {6, 1}, {7, 1}};
constexpr int64_t kCutlassPingPongMinTokens = 256;
constexpr int64_t kCutlassMinSliceK = 256;

inline std::string fmtUs(double ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1fus", ms * 1000.0);
  return b;
}

inline std::string shapeString(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

/// What the bucket sessions of a bucketed package share (CudaBucket.cpp owns it): the driver,
/// the context and stream, and the weights, arena and (a decode package) states on the device.
struct CudaShared {
  const Driver *d = nullptr;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr weights = 0, arena = 0;
  std::vector<CUdeviceptr> states;
  std::vector<int64_t> stateBytes;
};

class CudaSession final : public SessionBase {
public:
  ~CudaSession() override;
  Status init(const std::string &path);
  /// A bucket of a bucketed package: plan `p` (its files in `dir`) validated as a package is,
  /// then set up on `shared`'s context, stream, weights and arena (borrowed: `shared` outlives
  /// the session). Its GEMM tuning and graph capture wait for its first run (finishSetup).
  Status initBucket(const std::string &dir, const plan::Plan &p, const std::string &pre,
                    const CudaShared *shared) {
    shared_ = shared;
    if (Status st = validateBucket(dir, p, pre, shared->stateBytes); !st.ok)
      return st;
    return setupGpu();
  }
  /// initBucket's checks of plan `p` alone (no GPU touched; it has no weights of its own), its
  /// STATE arguments against a decode package's states of `stateBytes` each.
  Status validateBucket(const std::string &dir, const plan::Plan &p, const std::string &pre,
                        const std::vector<int64_t> &stateBytes) {
    path_ = dir;
    pre_ = pre;
    plan_ = p;
    bucket_ = true;
    stateBytes_ = stateBytes;
    return validatePlan();
  }
  /// init's checks of the package alone (no GPU touched).
  Status validateOnly(const std::string &path);
  std::string planText() const { return plan::formatPlan(plan_); }
  Status run(const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs) override;
  std::string describe() const override;
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
  /// validate's checks after the plan is read (a bucket's plan is given, not read).
  Status validatePlan();
  /// The end of setupGpu: the GEMM tuning (or its cache), the run events and the pinned
  /// staging. A bucket session runs it at its first run, so that a package's load time does
  /// not grow with its number of buckets.
  Status finishSetup();
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
  Status executeRefs(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                     size_t numOutputs) override {
    return execute(inputs, numInputs, outputs, numOutputs);
  }
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
    if (steps_[i - 1].conv) // cuDNN applied the activation and the residual, or the own kernel
      return convEpilogueApplied(i - 1);
    const GemmRt &g = steps_[i - 1].g;
    if (steps_[i].norm)
      return g.cut >= 0 && g.cutCands[(size_t)g.cut].norm;
    return g.mma >= 0 || g.cut >= 0 || !g.useLt || g.ltAct;
  }
  /// Whether CONV step i applies the epilogue of the step after it: cuDNN when it runs with the
  /// step's activation or residual, the own kernel when the plan says so (ConvDesc.own_epilogue).
  bool convEpilogueApplied(size_t i) const {
    const plan::ConvDesc &d = plan_.steps((int)i).conv();
    const bool dnn = i < convs_.size() && convs_[i] && convs_[i]->useCudnn;
    return dnn ? d.activation() != plan::GemmDesc::NONE || d.residual() : d.own_epilogue();
  }
  CUdeviceptr ptrOf(const BufferArg &a) const;
  std::string ck(CUresult r, const char *call) const { return check(*d_, r, call); }
  std::string blasError(cublasStatus_t s, const char *call) const {
    return std::string(call) + ": " + (lt_ ? lt_->statusString(s) : "?") + " (status " +
           std::to_string((int)s) + ")";
  }

  std::string path_, pre_;
  plan::Plan plan_;
  std::vector<int64_t> inOffsets_;
  std::string weightsHost_, cubin_, ptx_;

  const Driver *d_ = nullptr;
  const BlasLt *lt_ = nullptr;
  std::string ltError_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  bool ctxRetained_ = false;
  CUstream stream_ = nullptr;
  CUmodule module_ = nullptr;
  /// f32, f16, bf16, then f16 and bf16 with an f32 result (GemmDesc.out_f32).
  CUfunction gemmFallback_[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
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
    bool conv = false;        ///< a CONV step (its kernel is the fallback; convs_[i] its cuDNN)
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
  std::vector<CUevent> events_;
  CUevent runStart_ = nullptr, runEnd_ = nullptr; ///< around the kernels of every run
  double deviceMicros_ = -1;
  // Pinned host staging for inputs and outputs (async DMA instead of pageable copies);
  // $TGC_CUDA_PINNED=0 copies from/to the caller's pageable memory directly.
  void *pinned_ = nullptr;
  std::vector<int64_t> outOffsets_;
  /// Bucketed packages: a bucket's plan (no weights file of its own), and the buffers and
  /// stream it borrows (null when validated without a GPU); finishSetup still to run, or the
  /// error it returned (every later run returns it).
  bool bucket_ = false;
  const CudaShared *shared_ = nullptr;
  /// A decode package's states' sizes (STATE arguments are checked against them), and whether
  /// this plan has any STATE argument: its first run then copies the inputs in before the GEMM
  /// tuning, whose replays write the caches (at the run's own slots, as the run itself will).
  std::vector<int64_t> stateBytes_;
  bool writesStates_ = false;
  bool setupPending_ = false;
  std::string setupError_;

  // LOOP steps (CudaLoop.cpp). A loop body is a session of its own package (loopBody_: on
  // shared_'s driver, context and stream, with weights and arena of its own), `depth_` loops
  // deep. Per LOOP step: the body, where its inputs are (slots the step copies the carried and
  // captured values into) and where its outputs lie after a run.
  struct LoopRt {
    LoopLayout layout;
    CudaShared lent; ///< this session's context and stream, as the body borrows them
    std::unique_ptr<CudaSession> body;
    std::vector<CUdeviceptr> in, out;
    std::vector<int64_t> inBytes;
    /// An output that is another carried value's input slot (the body swaps values): the
    /// carried outputs go through `tmp` first.
    bool viaTmp = false;
    bool condSaved = false; ///< the condition output is a carried slot: saved to go + 8 first
    CUdeviceptr tmp = 0, go = 0; ///< go: the eager loop's condition, one byte
    /// Otherwise the tail kernel copies them itself: `numCopies` {dst, src, bytes} on the device
    /// (LoopControl.cu's TgcLoopCopy), over `copyBlocks` blocks of 256 threads.
    CUdeviceptr copies = 0;
    int numCopies = 0;
    unsigned copyBlocks = 1;
  };
  std::vector<std::unique_ptr<LoopRt>> loops_; ///< by step index; null for other steps

  // CONV steps (CudaConv.cpp): cuDNN where it loads, accepts the step and is faster than the
  // step's own kernel.
  struct ConvRt {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    cudnnActivationDescriptor_t act = nullptr;
    std::vector<std::pair<cudnnConvolutionFwdAlgo_t, size_t>> cands; ///< algorithm, workspace
    cudnnConvolutionFwdAlgo_t algo{}; ///< the algorithm launchConv runs, and its workspace
    size_t ws = 0;
    bool useCudnn = false;
    CUdeviceptr xp = 0, wp = 0, yp = 0, bp = 0, zp = 0;
    CUdeviceptr zeroBias = 0; ///< the bias of a convolution without one
    std::string why;          ///< why cuDNN does not run it
  };
  std::vector<std::unique_ptr<ConvRt>> convs_; ///< by step index; null for other steps
  const Cudnn *dnn_ = nullptr;
  std::string dnnError_;
  cudnnHandle_t dnnHandle_ = nullptr;
  CUdeviceptr dnnWs_ = 0;
  size_t dnnWsBytes_ = 0;
  std::string convDetail_; ///< the convolutions' choices, for the tuning report
  /// Loads cuDNN and creates the session's handle once (convolutions and attention share it);
  /// false with dnnError_ set when either fails.
  bool ensureCudnn();
  /// Why cuDNN cannot run convolution `c` ("" if it may).
  std::string convWhyNot(const plan::ConvDesc &c) const;
  /// Descriptors and cuDNN's candidate algorithms of every CONV step (setupGpu).
  Status setupConvs();
  /// Times each CONV step's candidates against its own kernel and keeps the fastest
  /// (finishSetup).
  Status tuneConvs();
  Status checkConv(int i, const std::string &where) const;
  std::string launchConv(size_t i);
  void freeConvs();
  /// µs per call of `launch` inside a CUDA graph, as a run calls it: one call outside the
  /// capture (a library's lazy set-up), `calls` calls captured into one graph, replayed once, then
  /// timed `reps` times (median); -1 when it fails or cannot be captured.
  double graphMicros(const std::function<std::string()> &launch, int reps = 5, int calls = 10);

  // KERNEL steps carrying an AttentionDesc (CudaSdpa.cpp): cuDNN's fused attention where it
  // loads, supports the step and is faster than the step's kernel.
  struct SdpaRt; ///< the step's cuDNN graph (defined in CudaSdpa.cpp only)
  struct SdpaRtDeleter {
    void operator()(SdpaRt *p) const;
  };
  std::vector<std::unique_ptr<SdpaRt, SdpaRtDeleter>> sdpas_; ///< by step index, or null
  std::vector<char> sdpaOn_;  ///< by step index: cuDNN runs it
  CUdeviceptr sdpaWs_ = 0;
  std::string sdpaDetail_;    ///< the attention steps' choices, for the tuning report
  /// Builds cuDNN's graph for every step with an AttentionDesc (setupGpu).
  Status setupSdpas();
  /// Times each alone against its kernel and keeps the faster (finishSetup).
  Status tuneSdpas();
  /// Then, in the whole graph (GEMMs chosen), each group of same-shaped steps both ways.
  Status graphTuneSdpas();
  void sdpaReport(const std::string &how); ///< sdpaDetail_ from the choices
  int sdpaTotal_ = 0;     ///< steps cuDNN was tried on
  std::string sdpaNotes_; ///< their timings
  std::string sdpaMode_;  ///< $TGC_SDPA as read at setup: "cudnn", "own" or "" (the faster)
  Status checkAttention(int i, const std::string &where) const;
  std::string launchSdpa(size_t i);
  void freeSdpas();
  bool loopBody_ = false;
  int depth_ = 0;
  CUstream loopStream_ = nullptr; ///< captures a body into its WHILE node's graph
  CUmodule loopModule_ = nullptr;
  CUfunction loopHead_ = nullptr, loopTail_ = nullptr, loopHeadEager_ = nullptr,
             loopTailEager_ = nullptr;
  /// Loads the body of every LOOP step (setupGpu, once the stream exists).
  Status setupLoops();
  /// Enqueues LOOP step i: inside a graph being captured, a conditional WHILE node; else one
  /// iteration at a time, reading the condition back (profiling, $TGC_CUDA_GRAPH=0).
  std::string enqueueLoop(size_t i);
  void freeLoops();
};

} // namespace tgc::cuda::detail

#endif // TGC_RUNTIME_CUDA_CUDASESSIONIMPL_H
