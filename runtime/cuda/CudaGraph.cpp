// CudaGraph.cpp — launching the plan: kernel and GEMM launches (programmatic dependent launch), the
// steps enqueued in order, captured into a CUDA graph and replayed; a launch timed inside a graph
// (the load-time choices between cuDNN and the own kernels).
#include "runtime/cuda/CudaSessionImpl.h"

namespace tgc::cuda::detail {

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

double CudaSession::graphMicros(const std::function<std::string()> &launch, int reps, int calls) {
  std::vector<CUevent> ev(2 * (size_t)reps, nullptr);
  auto result = [&](double us) {
    for (CUevent e : ev)
      if (e)
        d_->cuEventDestroy(e);
    return us;
  };
  for (CUevent &x : ev)
    if (d_->cuEventCreate(&x, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
      return result(-1);
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  // One call outside the capture first: a library's lazy set-up (module loads) cannot be
  // captured.
  if (!launch().empty() || d_->cuStreamSynchronize(stream_) != CUDA_SUCCESS)
    return result(-1);
  if (d_->cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
    return result(-1);
  bool ok = true;
  for (int k = 0; k < calls && ok; ++k)
    ok = launch().empty();
  ok = d_->cuStreamEndCapture(stream_, &graph) == CUDA_SUCCESS && ok &&
       d_->cuGraphInstantiate(&exec, graph, 0) == CUDA_SUCCESS;
  if (graph)
    d_->cuGraphDestroy(graph);
  ok = ok && d_->cuGraphLaunch(exec, stream_) == CUDA_SUCCESS;
  for (int k = 0; k < reps && ok; ++k)
    ok = d_->cuEventRecord(ev[2 * k], stream_) == CUDA_SUCCESS &&
         d_->cuGraphLaunch(exec, stream_) == CUDA_SUCCESS &&
         d_->cuEventRecord(ev[2 * k + 1], stream_) == CUDA_SUCCESS;
  ok = d_->cuStreamSynchronize(stream_) == CUDA_SUCCESS && ok;
  if (exec)
    d_->cuGraphExecDestroy(exec);
  if (!ok)
    return result(-1);
  std::vector<float> t((size_t)reps);
  for (int k = 0; k < reps; ++k)
    d_->cuEventElapsedTime(&t[k], ev[2 * k], ev[2 * k + 1]);
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return result(t[reps / 2] * 1000.0 / calls);
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
    } else if (i < loops_.size() && loops_[i]) {
      e = enqueueLoop(i);
    } else if (s.conv && i < convs_.size() && convs_[i] && convs_[i]->useCudnn) {
      e = launchConv(i);
    } else if (i < sdpaOn_.size() && sdpaOn_[i]) {
      e = launchSdpa(i);
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

} // namespace tgc::cuda::detail
