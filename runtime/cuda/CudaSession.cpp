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
#include "runtime/cuda/CudaSessionImpl.h"
#include "runtime/Env.h"

namespace tgc::cuda {

namespace detail {

std::string describeBucketsWithoutGpu(const std::string &path, const plan::Plan &top,
                                      const std::string &why, Status &st); // CudaBucket.cpp

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

Status CudaSession::validateOnly(const std::string &path) {
  path_ = path;
  pre_ = "package '" + path + "': ";
  return validate();
}

Status CudaSession::init(const std::string &path) {
  Status st = validateOnly(path);
  return st.ok ? setupGpu() : st;
}

Status CudaSession::execute(const TensorRef *inputs, size_t numInputs, const TensorRef *outputs,
                            size_t numOutputs) {
  Status st;
  std::string e;
  auto fail = [](const std::string &m) { return Status::error(m); };
  if (!(e = ck(d_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent")).empty())
    return fail(e);
  if (setupPending_) { // a bucket's first run: its GEMM tuning (the graph is captured below)
    setupPending_ = false;
    // The tuners replay the steps, which write a decode package's caches: with this run's
    // inputs in place they write what this run writes (zeros would write token 0 at slot 0).
    for (size_t i = 0; writesStates_ && i < numInputs; ++i)
      if (inBytes_[i] > 0 &&
          !(e = ck(d_->cuMemcpyHtoD(inputsBuf_ + inOffsets_[i], inputs[i].data,
                                    (size_t)inBytes_[i]),
                   "cuMemcpyHtoD(input)")).empty())
        return fail(e);
    if (!(st = finishSetup()).ok)
      setupError_ = st.message;
  }
  if (!setupError_.empty())
    return fail(setupError_);
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
  // Data-dependent extents: each count (8 bytes in the arena, written by the graph's last
  // kernels) comes back with the outputs, on the same stream after the one graph.
  std::vector<int64_t> counts(dynamic_.size(), 0);
  for (size_t k = 0; k < dynamic_.size(); ++k)
    if (!(e = ck(d_->cuMemcpyDtoHAsync(&counts[k], ptrOf(plan_.outputs((int)dynamic_[k]).count()),
                                       8, stream_),
                 "cuMemcpyDtoHAsync(count)")).empty())
      return fail(e);
  if (!(e = ck(d_->cuStreamSynchronize(stream_), "cuStreamSynchronize")).empty())
    return fail(e + " (a kernel failed; rerun with TGC_CUDA_GRAPH=0 to find it)");
  if (staging)
    for (size_t i = 0; i < numOutputs; ++i)
      std::memcpy(outputs[i].data, staging + outOffsets_[i], (size_t)outBytes_[i]);
  if (!dynamic_.empty())
    finishDynamic(outputs, counts.data());
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
  st = execute(in.data(), in.size(), out.data(), out.size());
  if (st.ok)
    trimOutputs(outputs);
  return st;
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
  int fusedActs = 0, fusedNorms = 0, byCudnn = 0, byOwnConv = 0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const bool afterConv = i > 0 && steps_[i - 1].conv;
    const bool dnn = afterConv && i - 1 < convs_.size() && convs_[i - 1] && convs_[i - 1]->useCudnn;
    (steps_[i].norm ? fusedNorms
     : afterConv    ? (dnn ? byCudnn : byOwnConv)
                    : fusedActs) += skipped(i);
  }
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
                  convDetail_ + sdpaDetail_ +
                  oneBlockLine() +
                  "launches per run: " + std::to_string(launchesPerRun()) +
                  (fused.empty() ? "" : " (" + fused + " fused into GEMMs)") +
                  (byCudnn ? " (" + std::to_string(byCudnn) + " epilogue steps applied by cuDNN)"
                           : "") +
                  (byOwnConv ? " (" + std::to_string(byOwnConv) +
                                   " epilogue steps applied by tgc's convolution kernels)"
                             : "") +
                  (useGraph_ ? " (one CUDA graph" : " (no graph") +
                  (pdl_ ? ", programmatic dependent launch)\n" : ")\n");
  return s + plan::formatPlan(plan_);
}

} // namespace detail

using detail::CudaSession;

bool cudaDeviceAvailable(std::string &why, std::string &arch) {
  const Driver *d = loadDriver(why);
  if (!d)
    return false;
  if (!(why = check(*d, d->cuInit(0), "cuInit")).empty())
    return false;
  int ordinal = 0, major = 0, minor = 0;
  if (const char *env = tgc::envValue(tgc::Env::CudaDevice); env && *env)
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
  if (plan::Plan top; peekBucketedPlan(path, top)) {
    if (Status h = readPlan(path, top); !h.ok) {
      st = Status::error("package '" + path + "': " + h.message);
      return "";
    }
    try {
      return detail::describeBucketsWithoutGpu(path, top, why, st);
    } catch (const std::exception &e) {
      st = Status::error("package '" + path + "': " + e.what());
      return "";
    }
  }
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
