// CudaDeviceSetup.cpp — the GPU side of a session: driver, context, stream, module, the allocations
// (weights, arena, inputs, workspaces, pinned staging) and their release.
#include "runtime/cuda/CudaSessionImpl.h"
#include "runtime/Env.h"

namespace tgc::cuda::detail {

CudaSession::~CudaSession() {
  if (!d_)
    return;
  d_->cuCtxSetCurrent(ctx_);
  if (graph_)
    d_->cuGraphExecDestroy(graph_);
  freeLoops();
  freeSdpas(); // before freeConvs, which destroys the cuDNN handle
  freeConvs();
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
    if (p && !(shared_ && !loopBody_ && (p == weights_ || p == arena_))) // a bucket's are borrowed
      d_->cuMemFree(p);
  if (module_)
    d_->cuModuleUnload(module_);
  if (stream_ && !shared_)
    d_->cuStreamDestroy(stream_);
  if (ctxRetained_)
    d_->cuDevicePrimaryCtxRelease(dev_);
}

CUdeviceptr CudaSession::ptrOf(const BufferArg &a) const {
  switch (a.kind()) {
  case plan::ARENA: return arena_ + a.offset();
  case plan::WEIGHT: return weights_ + a.offset();
  case plan::STATE: return shared_ ? shared_->states[(size_t)a.index()] + a.offset() : 0;
  case plan::INPUT: return inputsBuf_ + inOffsets_[a.index()] + a.offset();
  default: return 0;
  }
}

Status CudaSession::setupGpu() {
  std::string err;
  d_ = shared_ ? shared_->d : loadDriver(err);
  if (!d_)
    return Status::error(pre_ + err);
  auto fail = [&](const std::string &e) { return Status::error(pre_ + e); };
  std::string e;
  if (shared_) { // a bucket: the package's context (CudaBucket.cpp)
    dev_ = shared_->dev;
    ctx_ = shared_->ctx;
  } else {
    if (!(e = ck(d_->cuInit(0), "cuInit")).empty())
      return d_ = nullptr, fail(e);
    int ordinal = 0;
    if (const char *env = tgc::envValue(tgc::Env::CudaDevice); env && *env)
      ordinal = std::atoi(env);
    if (!(e = ck(d_->cuDeviceGet(&dev_, ordinal), "cuDeviceGet")).empty())
      return d_ = nullptr, fail(e);
    if (!(e = ck(d_->cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain")).empty())
      return d_ = nullptr, fail(e);
    ctxRetained_ = true;
  }
  if (!(e = ck(d_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent")).empty())
    return fail(e);
  char name[256] = {0};
  d_->cuDeviceGetName(name, sizeof name - 1, dev_);
  int major = 0, minor = 0;
  d_->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_);
  d_->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_);
  deviceName_ = std::string(name) + " (sm_" + std::to_string(major) + std::to_string(minor) + ")";
  if (shared_)
    stream_ = shared_->stream;
  else if (!(e = ck(d_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate")).empty())
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
    if (s.gemm().out_f32())
      t += 2;
    const char *names[] = {"tgk_gemm_f32", "tgk_gemm_f16", "tgk_gemm_bf16", "tgk_gemm_f16_f32c",
                           "tgk_gemm_bf16_f32c"};
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
  if (const char *p = tgc::envValue(tgc::Env::CudaPdl);
      (p && std::string(p) == "0") || major < 9 || !d_->cuLaunchKernelEx)
    pdl_ = false;
  // Buffers: weights (uploaded once), arena, inputs, cuBLASLt workspace.
  auto alloc = [&](CUdeviceptr &p, int64_t bytes, const char *what) {
    std::string e2 = ck(d_->cuMemAlloc(&p, (size_t)std::max<int64_t>(bytes, 256)), "cuMemAlloc");
    return e2.empty() ? e2 : e2 + " for the " + what + " (" + std::to_string(bytes) + " bytes)";
  };
  int64_t inTotal = inOffsets_.empty() ? 0 : inOffsets_.back() + inBytes_.back();
  if (shared_ && !loopBody_) { // a bucket: the package's weights (uploaded) and arena (zeroed) are borrowed
    weights_ = shared_->weights;
    arena_ = shared_->arena;
    if (!(e = alloc(inputsBuf_, inTotal, "inputs")).empty() ||
        !(e = ck(d_->cuMemsetD8(inputsBuf_, 0, (size_t)std::max<int64_t>(inTotal, 256)),
                 "cuMemsetD8(inputs)")).empty())
      return fail(e);
  } else if (!(e = alloc(weights_, plan_.weights_bytes(), "weights")).empty() ||
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
  if (const char *tv = tgc::envValue(tgc::Env::GemmTune); tv && std::string(tv) == "0")
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
  if (const char *c = tgc::envValue(tgc::Env::GemmCutlass); c && std::string(c) == "off")
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
    steps_[i].conv = s.kind() == plan::Step::CONV;
    if (s.kind() == plan::Step::KERNEL) { // (validate refuses them on other steps)
      steps_[i].skipIfFused = s.skip_if_gemm_fused();
      steps_[i].norm = s.norm().kind() != plan::NormDesc::NONE;
    }
  }
  for (int i = 0; i < plan_.steps_size(); ++i) {
    const plan::Step &s = plan_.steps(i);
    RtStep &rs = steps_[i];
    if (s.kind() == plan::Step::LOOP) // setupLoops
      continue;
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
  if (const char *g = tgc::envValue(tgc::Env::CudaGraph); g && std::string(g) == "0")
    useGraph_ = false;
  if (Status ls = setupLoops(); !ls.ok)
    return ls;
  if (Status cs = setupConvs(); !cs.ok)
    return cs;
  if (Status as = setupSdpas(); !as.ok)
    return as;
  if (shared_ && !loopBody_) { // a bucket tunes at its first run (execute)
    setupPending_ = true;
    return Status::success();
  }
  return finishSetup();
}

Status CudaSession::finishSetup() {
  auto fail = [&](const std::string &e) { return Status::error(pre_ + e); };
  std::string e;
  int major = 0, minor = 0;
  d_->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_);
  d_->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_);
  // The tuning cache: this package's choices on this GPU from an earlier load, else tune and
  // keep what the tuners chose.
  const uint64_t key = tune_ && !gemmSteps().empty() ? tuneKey(major, minor) : 0;
  std::string cachePath;
  if (key)
    cachePath = tuneCachePath(key, tuneCacheNote_); // "" with the reason when there is none
  const bool cached = !cachePath.empty() && loadTuneCache(cachePath, key);
  if (Status cs = tuneConvs(); !cs.ok) // before the GEMMs: their timings see its choices
    return cs;
  if (Status as = tuneSdpas(); !as.ok)
    return as;
  if (tune_ && !cached) {
    Status ts = tuneGemms();
    if (!ts.ok)
      return ts;
  }
  for (CUevent *ev : {&runStart_, &runEnd_})
    if (!(e = ck(d_->cuEventCreate(ev, CU_EVENT_DEFAULT), "cuEventCreate")).empty())
      return fail(e);
  // Attention on cuDNN or the own kernels, decided in the graph before the GEMMs' in-graph
  // tuning, which then sees the attention steps that will run.
  if (tune_ && useGraph_) {
    Status as = graphTuneSdpas();
    if (!as.ok)
      return as;
  }
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
  const char *pin = tgc::envValue(tgc::Env::CudaPinned);
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

std::string CudaSession::zeroArena() {
  std::string e = ck(d_->cuMemsetD32Async(arena_, 0,
                                          (size_t)std::max<int64_t>(plan_.arena_bytes(), 256) / 4,
                                          stream_),
                     "cuMemsetD32Async(arena)");
  return e.empty() ? ck(d_->cuStreamSynchronize(stream_), "cuStreamSynchronize") : e;
}

} // namespace tgc::cuda::detail
