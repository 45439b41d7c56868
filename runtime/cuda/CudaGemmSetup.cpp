// CudaGemmSetup.cpp — one GEMM step's candidates: cuBLASLt plans, tgc's tensor-core kernel
// configurations, the CUTLASS plug-in's configurations, and the launch of the chosen one.
#include "runtime/cuda/CudaSessionImpl.h"
#include "runtime/Env.h"

namespace tgc::cuda::detail {

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
  rs.fn = gemmFallback_[g.out_f32() ? t + 2 : t];
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
  // An f32 result (GemmDesc.out_f32): C and D in float, A and B in their storage type.
  if (g.out_f32()) {
    lt_->layoutDestroy(gr.c);
    gr.c = nullptr;
    if ((s = lt_->layoutCreate(&gr.c, CUDA_R_32F, g.n(), g.m(), g.ldc())) != 0)
      return fail(s, "cublasLtMatrixLayoutCreate(f32 C)");
    if (g.batch() > 1) {
      int32_t count = (int32_t)g.batch();
      int64_t stride = g.stride_c();
      if ((s = lt_->layoutSet(gr.c, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count)) !=
              0 ||
          (s = lt_->layoutSet(gr.c, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                              sizeof stride)) != 0)
        return fail(s, "cublasLtMatrixLayoutSetAttribute(f32 C)");
    }
  }
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
  const char *force = tgc::envValue(tgc::Env::GemmMma);
  const std::string forceCfg = force ? force : "";
  if (forceCfg == "off" || g.out_f32()) // tgc's tensor-core kernels store the operands' type
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
// activation, ReLU, erf- or tanh-GELU or SiLU, and not both an activation and a residual: what the plug-in's
// kernels implement (it checks the rest: alignment, split-K's limits). B and the bias must be
// weights because the kernels read them before they wait for the kernel ahead (programmatic
// dependent launch): one computed by that kernel would be read stale. Every configuration the
// plug-in accepts and can prepare becomes a candidate; one it cannot prepare on the device (e.g. no memory for split-K partials) is left
// out and named in the tuning report, and the GEMM keeps its other candidates.
Status CudaSession::setupCutlass(size_t i) {
  const plan::GemmDesc &g = plan_.steps((int)i).gemm();
  RtStep &rs = steps_[i];
  GemmRt &gr = rs.g;
  if (!cutlass_ || !g.trans_b() || g.dtype() == 1 || g.out_f32() ||
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
  // $TGC_GEMM_CUTLASS=force: the first configuration that fits; =<name> (e.g.
  // cutlass64x64x128/s2): that one where it fits. Untuned. (A ping-pong tile forced by name is
  // offered for few tokens too.)
  const char *c = tgc::envValue(tgc::Env::GemmCutlass);
  const std::string force = c ? c : "";
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
        (tile >= 3 && g.m() < kCutlassPingPongMinTokens && force != cutlassName(tile, splits)) ||
        cutlass_->check(&plain, err, sizeof err) != 0)
      continue;
    if (cutlass_->create(&plain, &h, err, sizeof err) != 0) {
      if (cutlassSetupError_.empty())
        cutlassSetupError_ = "step " + std::to_string(i) + " " + cutlassName(tile, splits) + ": " + err;
      continue;
    }
    gr.cutCands.push_back({h, tile, splits, d.norm != 0});
  }
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

} // namespace tgc::cuda::detail
