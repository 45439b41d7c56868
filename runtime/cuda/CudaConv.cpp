// CudaConv.cpp — CONV steps (plan.proto ConvDesc): a convolution runs through cuDNN where cuDNN
// loads, accepts it and is faster than the step's own kernel; otherwise that kernel runs.
//
// cuDNN's call is cudnnConvolutionBiasActivationForward: y = act(conv(x, w) + bias + z), so one
// call also applies the ReLU and the residual add the step carries, and the epilogue kernel after
// the step (marked skip_if_gemm_fused) is skipped; with ConvDesc.own_epilogue the own kernel
// applies the epilogue and that kernel is skipped after it instead. At setup every algorithm
// cuDNN's heuristics offer (workspace ≤ kConvWorkspaceLimit; not FFT or Winograd, which lose
// precision) and the step's own kernel (each with the epilogue kernel where it runs after that
// path) are timed inside a CUDA graph
// and the fastest kept; an identity activation allows only the implicit precomputed GEMM
// (cuDNN's rule for this call). fp32 convolutions use FMA math (no TF32: the
// results stay within fp32's tolerance), f16/bf16 tensor cores with fp32 accumulation.
#include "runtime/cuda/CudaSessionImpl.h"
#include "runtime/Env.h"

#include <algorithm>
#include <tuple>

namespace tgc::cuda::detail {
namespace {

constexpr size_t kConvWorkspaceLimit = size_t(256) << 20;
constexpr int kConvReps = 5;
constexpr int kConvGraphCalls = 10;

cudnnDataType_t dnnType(int onnxDtype) {
  return onnxDtype == 10 ? CUDNN_DATA_HALF
                         : (onnxDtype == 16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT);
}

/// Packed strides of `dims` (N, C, spatial... order) stored NC[D]HW, or channels last.
std::vector<int> packed(const std::vector<int> &dims, bool channelsLast = false) {
  std::vector<int> s(dims.size(), 1);
  if (!channelsLast) {
    for (int i = (int)dims.size() - 2; i >= 0; --i)
      s[i] = s[i + 1] * dims[i + 1];
    return s;
  }
  int stride = dims[1]; // C is innermost, then the spatial dims, then N
  for (int i = (int)dims.size() - 1; i >= 2; --i)
    s[i] = stride, stride *= dims[i];
  s[0] = stride;
  return s;
}

/// An `nhwc` step's shape [N, spatial..., C] in cuDNN's N, C, spatial... order.
std::vector<int> channelsFirstOrder(std::vector<int> v) {
  std::rotate(v.begin() + 1, v.end() - 1, v.end());
  return v;
}

} // namespace

std::string CudaSession::convWhyNot(const plan::ConvDesc &c) const {
  const int sp = c.x_size() - 2;
  if (sp < 1 || sp > 3)
    return std::to_string(sp) + " spatial dims (cuDNN: 1 to 3)";
  for (int d = 0; d < sp; ++d)
    if (c.pads(d) != c.pads(d + sp))
      return "asymmetric padding";
  for (const auto *v : {&c.x(), &c.w(), &c.y()}) { // cuDNN's strides are int
    int64_t n = 1;
    for (int64_t e : *v)
      if (__builtin_mul_overflow(n, e, &n) || n > (int64_t(1) << 31) - 1)
        return "a tensor of 2^31 elements or more";
  }
  return "";
}

bool CudaSession::ensureCudnn() {
  if (dnnHandle_)
    return true;
  if (!dnnError_.empty() || (!dnn_ && !(dnn_ = loadCudnn(dnnError_))))
    return false;
  cudnnStatus_t st = dnn_->create(&dnnHandle_);
  if (st != CUDNN_STATUS_SUCCESS) {
    dnnError_ = std::string("cudnnCreate: ") + dnn_->errorString(st);
    dnnHandle_ = nullptr;
    return false;
  }
  return true;
}

Status CudaSession::setupConvs() {
  bool any = false;
  for (const plan::Step &s : plan_.steps())
    any = any || s.kind() == plan::Step::CONV;
  if (!any)
    return Status::success();
  convs_.resize(steps_.size());
  if (!ensureCudnn())
    return Status::success(); // every CONV step runs its own kernel
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (plan_.steps((int)i).kind() != plan::Step::CONV)
      continue;
    convs_[i] = std::make_unique<ConvRt>();
    ConvRt &r = *convs_[i];
    const plan::ConvDesc &c = plan_.steps((int)i).conv();
    if (!(r.why = convWhyNot(c)).empty())
      continue;
    // Descriptors; a 1-D convolution is a 2-D one of height 1.
    const int sp = c.x_size() - 2;
    // Dims in N, C, spatial... order whatever the layout (an nhwc step's strides say it).
    std::vector<int> x(c.x().begin(), c.x().end()), w(c.w().begin(), c.w().end()),
        y(c.y().begin(), c.y().end()), pad, str, dil;
    const bool last = c.nhwc();
    if (last)
      x = channelsFirstOrder(x), w = channelsFirstOrder(w), y = channelsFirstOrder(y);
    for (int d = 0; d < sp; ++d)
      pad.push_back((int)c.pads(d)), str.push_back((int)c.strides(d)),
          dil.push_back((int)c.dilations(d));
    if (sp == 1) {
      x.insert(x.begin() + 2, 1), w.insert(w.begin() + 2, 1), y.insert(y.begin() + 2, 1);
      pad.insert(pad.begin(), 0), str.insert(str.begin(), 1), dil.insert(dil.begin(), 1);
    }
    std::vector<int> b(x.size(), 1);
    b[1] = w[0];
    const cudnnDataType_t t = dnnType(c.dtype());
    auto ok = [&](cudnnStatus_t s, const char *call) {
      if (s != CUDNN_STATUS_SUCCESS && r.why.empty())
        r.why = std::string(call) + ": " + dnn_->errorString(s);
      return r.why.empty();
    };
    const int n = (int)x.size();
    if (!ok(dnn_->createTensor(&r.x), "cudnnCreateTensorDescriptor") ||
        !ok(dnn_->setTensorNd(r.x, t, n, x.data(), packed(x, last).data()),
            "cudnnSetTensorNdDescriptor") ||
        !ok(dnn_->createTensor(&r.y), "cudnnCreateTensorDescriptor") ||
        !ok(dnn_->setTensorNd(r.y, t, n, y.data(), packed(y, last).data()),
            "cudnnSetTensorNdDescriptor") ||
        !ok(dnn_->createTensor(&r.b), "cudnnCreateTensorDescriptor") ||
        !ok(dnn_->setTensorNd(r.b, t, n, b.data(), packed(b).data()), "cudnnSetTensorNdDescriptor") ||
        !ok(dnn_->createFilter(&r.w), "cudnnCreateFilterDescriptor") ||
        !ok(dnn_->setFilterNd(r.w, t, last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, n, w.data()),
            "cudnnSetFilterNdDescriptor") ||
        !ok(dnn_->createConv(&r.conv), "cudnnCreateConvolutionDescriptor") ||
        !ok(dnn_->setConvNd(r.conv, n - 2, pad.data(), str.data(), dil.data(),
                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            "cudnnSetConvolutionNdDescriptor") ||
        !ok(dnn_->setConvGroups(r.conv, (int)c.group()), "cudnnSetConvolutionGroupCount") ||
        !ok(dnn_->setConvMath(r.conv, c.dtype() == 1 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
            "cudnnSetConvolutionMathType") ||
        !ok(dnn_->createActivation(&r.act), "cudnnCreateActivationDescriptor") ||
        !ok(dnn_->setActivation(r.act,
                                c.activation() == plan::GemmDesc::RELU ? CUDNN_ACTIVATION_RELU
                                                                       : CUDNN_ACTIVATION_IDENTITY,
                                CUDNN_PROPAGATE_NAN, 0.0),
            "cudnnSetActivationDescriptor"))
      continue;
    const std::vector<CUdeviceptr> &p = steps_[i].ptrs;
    r.xp = p[(size_t)c.x_arg()], r.wp = p[(size_t)c.w_arg()], r.yp = p[(size_t)c.y_arg()];
    r.zp = c.residual() ? p[(size_t)c.residual_arg()] : r.yp;
    if (c.bias()) {
      r.bp = p[(size_t)c.bias_arg()];
    } else { // cuDNN's call needs a bias: zeros
      const size_t bytes = (size_t)w[0] * (c.dtype() == 1 ? 4 : 2);
      std::string e = ck(d_->cuMemAlloc(&r.zeroBias, std::max<size_t>(bytes, 256)), "cuMemAlloc");
      if (e.empty())
        e = ck(d_->cuMemsetD8(r.zeroBias, 0, std::max<size_t>(bytes, 256)), "cuMemsetD8");
      if (!e.empty())
        return Status::error(pre_ + "step " + std::to_string(i) + " (zero bias): " + e);
      r.bp = r.zeroBias;
    }
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    if (!ok(dnn_->getAlgorithms(dnnHandle_, r.x, r.w, r.conv, r.y,
                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf),
            "cudnnGetConvolutionForwardAlgorithm_v7"))
      continue;
    for (int k = 0; k < found; ++k) {
      // The workspace of the algorithm under this descriptor's math type (the heuristics may
      // report another math type's).
      size_t ws = 0;
      if (perf[k].status == CUDNN_STATUS_SUCCESS &&
          dnn_->workspaceSize(dnnHandle_, r.x, r.w, r.conv, r.y, perf[k].algo, &ws) !=
              CUDNN_STATUS_SUCCESS)
        continue;
      perf[k].memory = std::max(perf[k].memory, ws);
      const bool identityOk = c.activation() == plan::GemmDesc::RELU ||
                              perf[k].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
      // FFT and Winograd trade precision for speed (f16 results off by ~1e-2 relative): tgc
      // keeps the direct and GEMM-based algorithms.
      const bool exact = perf[k].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
                         perf[k].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
                         perf[k].algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM ||
                         perf[k].algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
      if (perf[k].status == CUDNN_STATUS_SUCCESS && perf[k].memory <= kConvWorkspaceLimit &&
          identityOk && exact &&
          std::none_of(r.cands.begin(), r.cands.end(),
                       [&](const auto &a) { return a.first == perf[k].algo; }))
        r.cands.push_back({perf[k].algo, perf[k].memory});
    }
    if (r.cands.empty())
      r.why = "no cuDNN algorithm for it";
    for (const auto &a : r.cands)
      dnnWsBytes_ = std::max(dnnWsBytes_, a.second);
  }
  if (dnnWsBytes_) {
    std::string e = ck(d_->cuMemAlloc(&dnnWs_, dnnWsBytes_), "cuMemAlloc");
    if (!e.empty())
      return Status::error(pre_ + "cuDNN workspace (" + std::to_string(dnnWsBytes_) +
                           " bytes): " + e);
  }
  return Status::success();
}

std::string CudaSession::launchConv(size_t i) {
  ConvRt &r = *convs_[i];
  const plan::ConvDesc &c = plan_.steps((int)i).conv();
  const float one = 1.f, alpha2 = c.residual() ? 1.f : 0.f;
  cudnnStatus_t st = dnn_->setStream(dnnHandle_, reinterpret_cast<cudaStream_t>(stream_));
  if (st == CUDNN_STATUS_SUCCESS)
    st = dnn_->forwardBiasActivation(
        dnnHandle_, &one, r.x, reinterpret_cast<const void *>(r.xp), r.w,
        reinterpret_cast<const void *>(r.wp), r.conv, r.algo, reinterpret_cast<void *>(dnnWs_),
        r.ws, &alpha2, r.y, reinterpret_cast<const void *>(r.zp), r.b,
        reinterpret_cast<const void *>(r.bp), r.act, r.y, reinterpret_cast<void *>(r.yp));
  return st == CUDNN_STATUS_SUCCESS
             ? ""
             : std::string("cudnnConvolutionBiasActivationForward: ") + dnn_->errorString(st);
}

Status CudaSession::tuneConvs() {
  if (!dnnHandle_) {
    if (!convs_.empty())
      convDetail_ = "convolutions: tgc's own kernels (cuDNN unavailable: " + dnnError_ + ")\n";
    return Status::success();
  }
  // $TGC_CONV: "cudnn" runs every step cuDNN takes on it (its fastest algorithm), "own" none;
  // otherwise the faster, timed here. With $TGC_GEMM_TUNE=0 nothing is timed: cuDNN's first
  // heuristic algorithm runs.
  const char *mode = tgc::envValue(tgc::Env::Conv);
  const std::string m = mode ? mode : "";
  if (m == "own" || (!tune_ && m != "cudnn")) {
    int onDnn = 0;
    for (auto &r : convs_)
      if (r && !r->cands.empty() && m != "own") {
        r->useCudnn = true, r->algo = r->cands[0].first, r->ws = r->cands[0].second;
        ++onDnn;
      }
    convDetail_ = "convolutions: " + std::to_string(onDnn) + " through cuDNN, untimed (" +
                  (m == "own" ? "$TGC_CONV=own" : "$TGC_GEMM_TUNE=0") + ")\n";
    return Status::success();
  }
  auto fail = [&](const std::string &e) { return Status::error(pre_ + e); };
  auto timeIt = [&](const std::function<std::string()> &launch) {
    return graphMicros(launch, kConvReps, kConvGraphCalls);
  };
  int onDnn = 0, total = 0;
  std::string notes;
  for (size_t i = 0; i < convs_.size(); ++i) {
    if (!convs_[i])
      continue;
    ++total;
    ConvRt &r = *convs_[i];
    if (r.cands.empty()) {
      notes += "  step " + std::to_string(i) + ": own kernel (" + r.why + ")\n";
      continue;
    }
    double own = timeIt([&] { return launchKernel(steps_[i]); });
    // The epilogue kernel one path saves runs after the other: after the own kernel unless it
    // applies the epilogue itself, after cuDNN unless its call fuses it.
    const plan::ConvDesc &cd = plan_.steps((int)i).conv();
    const bool dnnFuses = cd.activation() != plan::GemmDesc::NONE || cd.residual();
    double epi = 0;
    if (own >= 0 && i + 1 < steps_.size() && steps_[i + 1].skipIfFused) {
      epi = std::max(0.0, timeIt([&] { return launchKernel(steps_[i + 1]); }));
      own += cd.own_epilogue() ? 0 : epi;
    }
    double best = -1;
    size_t bestJ = 0;
    for (size_t j = 0; j < r.cands.size(); ++j) {
      std::tie(r.algo, r.ws) = r.cands[j];
      double t = timeIt([&] { return launchConv(i); });
      t = t >= 0 && !dnnFuses ? t + epi : t;
      if (t >= 0 && (best < 0 || t < best))
        best = t, bestJ = j;
    }
    if (d_->cuStreamSynchronize(stream_) != CUDA_SUCCESS) // a failed candidate's error
      return fail("a cuDNN convolution failed on step " + std::to_string(i));
    r.useCudnn = best >= 0 && (m == "cudnn" || own < 0 || best < own);
    std::tie(r.algo, r.ws) = r.cands[bestJ];
    onDnn += r.useCudnn;
    char line[160];
    std::snprintf(line, sizeof line, "  step %zu: cuDNN %.1fus (algorithm %d), own kernel %.1fus: %s\n",
                  i, best, (int)r.algo, own, r.useCudnn ? "cuDNN" : "own kernel");
    notes += line;
  }
  convDetail_ = "convolutions: " + std::to_string(onDnn) + " of " + std::to_string(total) +
                " through cuDNN (" + dnn_->path + (m == "cudnn" ? ", $TGC_CONV=cudnn" : "") +
                ")\n" + notes;
  // The timing wrote outputs and ran epilogues in place: the first run starts from zeros, as
  // without it.
  std::string e2 = zeroArena();
  return e2.empty() ? Status::success() : fail(e2);
}

void CudaSession::freeConvs() {
  for (auto &c : convs_) {
    if (!c)
      continue;
    if (dnn_) {
      if (c->x) dnn_->destroyTensor(c->x);
      if (c->y) dnn_->destroyTensor(c->y);
      if (c->b) dnn_->destroyTensor(c->b);
      if (c->w) dnn_->destroyFilter(c->w);
      if (c->conv) dnn_->destroyConv(c->conv);
      if (c->act) dnn_->destroyActivation(c->act);
    }
    if (c->zeroBias)
      d_->cuMemFree(c->zeroBias);
  }
  convs_.clear();
  if (dnnWs_)
    d_->cuMemFree(dnnWs_);
  if (dnnHandle_)
    dnn_->destroy(dnnHandle_);
  dnnWs_ = 0, dnnHandle_ = nullptr;
}

} // namespace tgc::cuda::detail
