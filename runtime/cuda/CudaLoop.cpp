// CudaLoop.cpp — LOOP steps on CUDA: the body package run inside the graph as a conditional
// WHILE node (CUDA 12.4+), so a loop whose trip count is known only at run time needs no host
// round trip.
//
// Each LOOP step's body is a CudaSession of its own (its package in the subdirectory the step
// names, LoopPlan.h) on this session's context and stream, with its own weights and arena.
// Captured, a LOOP step is:
//   copies of the captured and initial carried values into the body's input slots,
//   tgc_loop_head (iteration 0, and the condition 0 < M && cond into the node's handle),
//   WHILE(handle) { the body's steps; tgc_loop_tail (its carried outputs copied into the input
//                   slots, the next iteration, and i < M && the body's cond) },
//   copies of the carried slots into the step's results.
// The body's steps are captured into the node's graph on a second stream
// (cuStreamBeginCaptureToGraph). Without a graph (profiling, $TGC_CUDA_GRAPH=0) the same runs
// one iteration at a time, the condition read back after each. The control kernels
// (LoopControl.cu) set the handle with cudaGraphSetConditional; they are built by nvcc and
// embedded (runtime/BUILD, loop_control_fatbin).
#include "runtime/cuda/CudaSessionImpl.h"

namespace tgc::cuda::detail {

namespace {
#include "runtime/cuda/LoopControlFatbin.inc"
} // namespace

Status CudaSession::setupLoops() {
  loops_.clear();
  loops_.resize(steps_.size());
  bool any = false;
  for (const plan::Step &s : plan_.steps())
    any = any || s.kind() == plan::Step::LOOP;
  if (!any)
    return Status::success();
  auto fail = [&](const std::string &e) { return Status::error(pre_ + e); };
  if (!d_->cuMemcpyDtoDAsync || !d_->cuStreamGetCaptureInfo ||
      !d_->cuStreamUpdateCaptureDependencies || !d_->cuGraphConditionalHandleCreate ||
      !d_->cuGraphAddNode || !d_->cuStreamBeginCaptureToGraph)
    return fail("the package runs a loop on the device, which needs conditional graph nodes "
                "(a driver of CUDA 12.4 or later)");
  if (depth_ >= kMaxLoopDepth)
    return fail("loops nest more than " + std::to_string(kMaxLoopDepth) + " deep");
  std::string e;
  if (!(e = ck(d_->cuModuleLoadData(&loopModule_, kLoopControlFatbin),
               "cuModuleLoadData(loop control kernels)"))
           .empty())
    return fail(e);
  const std::pair<CUfunction *, const char *> fns[] = {{&loopHead_, "tgc_loop_head"},
                                                       {&loopTail_, "tgc_loop_tail"},
                                                       {&loopHeadEager_, "tgc_loop_head_eager"},
                                                       {&loopTailEager_, "tgc_loop_tail_eager"}};
  for (auto [fn, name] : fns)
    if (!(e = ck(d_->cuModuleGetFunction(fn, loopModule_, name), "cuModuleGetFunction")).empty())
      return fail(std::string(name) + ": " + e);
  if (!(e = ck(d_->cuStreamCreate(&loopStream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate")).empty())
    return fail(e);
  std::vector<std::string> bodies;
  for (int i = 0; i < plan_.steps_size(); ++i) {
    const plan::Step &s = plan_.steps(i);
    if (s.kind() != plan::Step::LOOP)
      continue;
    const std::string where = pre_ + "step " + std::to_string(i) + " (" + s.symbol() + ")";
    auto L = std::make_unique<LoopRt>();
    if (Status st = checkLoopStep(s, where, L->layout); !st.ok)
      return st;
    if (Status st = checkLoopBodyDir(path_, s, bodies, where); !st.ok)
      return st;
    L->lent.d = d_;
    L->lent.dev = dev_;
    L->lent.ctx = ctx_;
    L->lent.stream = stream_;
    L->body = std::make_unique<CudaSession>();
    CudaSession &b = *L->body;
    b.shared_ = &L->lent;
    b.loopBody_ = true;
    b.depth_ = depth_ + 1;
    b.pdl_ = pdl_; // setupGpu turns it off where the device or driver lacks it
    if (Status st = b.validateOnly(path_ + "/" + s.loop().body()); !st.ok)
      return Status::error(where + ": " + st.message);
    if (Status st = b.setupGpu(); !st.ok)
      return Status::error(where + ": " + st.message);
    if (Status st = checkLoopBody(b, s, L->layout, where); !st.ok)
      return st;
    for (size_t k = 0; k < b.inputs_.size(); ++k) {
      L->in.push_back(b.inputsBuf_ + b.inOffsets_[k]);
      L->inBytes.push_back(b.inBytes_[k]);
    }
    const int carried = L->layout.carried;
    for (int k = 0; k < b.plan_.outputs_size(); ++k) {
      const BufferArg &src = b.plan_.outputs(k).source();
      L->out.push_back(b.ptrOf(src));
      // An output that is one of the body's own input slots which the copies or the tail kernel
      // write (another carried value's, the iteration number's, the condition's): the copies go
      // through tmp as copy nodes before the tail kernel, and a condition output that is a
      // carried slot is saved first (condSaved), so nothing is read after it was overwritten.
      const bool slot = src.kind() == plan::INPUT && src.index() < 2 + carried;
      if (k >= 1 && slot && src.index() != k + 1)
        L->viaTmp = true;
      if (k == 0 && slot && src.index() >= 2)
        L->viaTmp = L->condSaved = true;
    }
    int64_t tmpBytes = 0;
    for (int c = 0; c < carried; ++c)
      tmpBytes += (L->inBytes[2 + c] + 255) / 256 * 256;
    if (L->viaTmp && !(e = ck(d_->cuMemAlloc(&L->tmp, (size_t)std::max<int64_t>(tmpBytes, 256)),
                              "cuMemAlloc(loop)"))
                          .empty())
      return fail(e);
    if (!(e = ck(d_->cuMemAlloc(&L->go, 256), "cuMemAlloc(loop)")).empty())
      return fail(e);
    // The tail kernel's copies (unless the body swaps values: then copy nodes through tmp).
    std::vector<unsigned long long> copies; // {dst, src, bytes} each
    int64_t largest = 0;
    for (int c = 0; !L->viaTmp && c < carried; ++c)
      if (L->in[2 + c] != L->out[1 + c] && L->inBytes[2 + c] > 0) {
        copies.insert(copies.end(),
                      {(unsigned long long)L->in[2 + c], (unsigned long long)L->out[1 + c],
                       (unsigned long long)L->inBytes[2 + c]});
        largest = std::max(largest, L->inBytes[2 + c]);
      }
    L->numCopies = (int)(copies.size() / 3);
    L->copyBlocks =
        (unsigned)std::min<int64_t>(std::max<int64_t>((largest + 4095) / 4096, 1), 1024);
    if (L->numCopies &&
        (!(e = ck(d_->cuMemAlloc(&L->copies, copies.size() * 8), "cuMemAlloc(loop)")).empty() ||
         !(e = ck(d_->cuMemcpyHtoD(L->copies, copies.data(), copies.size() * 8),
                  "cuMemcpyHtoD(loop)"))
              .empty()))
      return fail(e);
    loops_[(size_t)i] = std::move(L);
  }
  return Status::success();
}

void CudaSession::freeLoops() {
  for (auto &L : loops_)
    if (L) {
      L->body.reset();
      for (CUdeviceptr p : {L->tmp, L->go, L->copies})
        if (p)
          d_->cuMemFree(p);
    }
  loops_.clear();
  if (loopStream_)
    d_->cuStreamDestroy(loopStream_);
  if (loopModule_)
    d_->cuModuleUnload(loopModule_);
}

std::string CudaSession::enqueueLoop(size_t i) {
  LoopRt &L = *loops_[i];
  const LoopLayout &y = L.layout;
  const std::vector<CUdeviceptr> &p = steps_[i].ptrs;
  std::string e;
  auto copy = [&](CUdeviceptr dst, CUdeviceptr src, int64_t bytes, CUstream st) {
    if (e.empty() && bytes > 0 && dst != src)
      e = ck(d_->cuMemcpyDtoDAsync(dst, src, (size_t)bytes, st), "cuMemcpyDtoDAsync(loop)");
  };
  auto launchControl = [&](CUfunction fn, std::vector<void *> args, CUstream st,
                           unsigned blocks = 1, unsigned threads = 1) {
    if (e.empty())
      e = ck(d_->cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, st, args.data(), nullptr),
             "cuLaunchKernel(loop control)");
  };
  // Where the step's operands are, and the body's slots.
  CUdeviceptr trip = y.hasTrip ? p[0] : 0, cond = y.hasCond ? p[y.hasTrip ? 1 : 0] : 0;
  CUdeviceptr iter = L.in[0], bodyCond = L.in[1], go = L.go;
  CUdeviceptr condOut = L.condSaved ? L.go + 8 : L.out[0];
  for (int j = 0; j < y.captures; ++j)
    copy(L.in[2 + y.carried + j], p[y.capture(j)], L.inBytes[2 + y.carried + j], stream_);
  for (int c = 0; c < y.carried; ++c)
    copy(L.in[2 + c], p[y.initial(c)], L.inBytes[2 + c], stream_);
  // The body's carried outputs into its input slots, for the next iteration: by the tail
  // kernel, or (values that swap) by copy nodes through tmp.
  CUdeviceptr copies = L.copies;
  int numCopies = L.numCopies;
  auto feedBack = [&](CUstream st) {
    if (!L.viaTmp)
      return;
    if (L.condSaved)
      copy(condOut, L.out[0], 1, st);
    int64_t off = 0;
    for (int c = 0; c < y.carried; ++c) {
      const int64_t n = L.inBytes[2 + c];
      copy(L.tmp + off, L.out[1 + c], n, st);
      off += (n + 255) / 256 * 256;
    }
    off = 0;
    for (int c = 0; c < y.carried; ++c) {
      copy(L.in[2 + c], L.tmp + off, L.inBytes[2 + c], st);
      off += (L.inBytes[2 + c] + 255) / 256 * 256;
    }
  };
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph graph = nullptr;
  const CUgraphNode *deps = nullptr;
  const CUgraphEdgeData *edges = nullptr;
  size_t numDeps = 0;
  if (e.empty())
    e = ck(d_->cuStreamGetCaptureInfo(stream_, &status, nullptr, &graph, &deps, &edges, &numDeps),
           "cuStreamGetCaptureInfo");
  if (!e.empty())
    return e;
  CudaSession &b = *L.body;
  if (status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    CUgraphConditionalHandle handle = 0;
    if (!(e = ck(d_->cuGraphConditionalHandleCreate(&handle, graph, ctx_, 0, 0),
                 "cuGraphConditionalHandleCreate"))
             .empty())
      return e;
    launchControl(loopHead_, {&handle, &trip, &cond, &iter, &bodyCond}, stream_);
    if (e.empty())
      e = ck(d_->cuStreamGetCaptureInfo(stream_, &status, nullptr, &graph, &deps, &edges, &numDeps),
             "cuStreamGetCaptureInfo");
    if (!e.empty())
      return e;
    CUgraphNodeParams np{};
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = handle;
    np.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    np.conditional.size = 1;
    np.conditional.ctx = ctx_;
    CUgraphNode node = nullptr;
    if (!(e = ck(d_->cuGraphAddNode(&node, graph, deps, edges, numDeps, &np),
                 "cuGraphAddNode(while)"))
             .empty() ||
        !(e = ck(d_->cuStreamUpdateCaptureDependencies(stream_, &node, nullptr, 1,
                                                       CU_STREAM_SET_CAPTURE_DEPENDENCIES),
                 "cuStreamUpdateCaptureDependencies"))
             .empty())
      return e;
    // The body, captured into the node's graph on the second stream.
    if (!(e = ck(d_->cuStreamBeginCaptureToGraph(loopStream_, np.conditional.phGraph_out[0],
                                                 nullptr, nullptr, 0,
                                                 CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                 "cuStreamBeginCaptureToGraph"))
             .empty())
      return e;
    const CUstream prev = b.stream_; // (a nested body's is its parent's capture stream)
    b.stream_ = loopStream_;
    Status st = b.enqueueSteps(false);
    b.stream_ = prev;
    if (!st.ok)
      e = st.message;
    feedBack(loopStream_);
    launchControl(loopTail_, {&handle, &trip, &condOut, &iter, &copies, &numCopies}, loopStream_,
                  L.copyBlocks, 256);
    CUgraph same = nullptr;
    std::string end = ck(d_->cuStreamEndCapture(loopStream_, &same), "cuStreamEndCapture(loop)");
    if (!e.empty() || !end.empty())
      return e.empty() ? end : e;
  } else {
    // One iteration at a time; the condition comes back to the host after each.
    launchControl(loopHeadEager_, {&trip, &cond, &iter, &bodyCond, &go}, stream_);
    for (;;) {
      unsigned char more = 0;
      if (e.empty())
        e = ck(d_->cuMemcpyDtoHAsync(&more, go, 1, stream_), "cuMemcpyDtoHAsync(loop)");
      if (e.empty())
        e = ck(d_->cuStreamSynchronize(stream_), "cuStreamSynchronize(loop)");
      if (!e.empty() || !more)
        break;
      Status st = b.enqueueSteps(false);
      if (!st.ok)
        return st.message;
      feedBack(stream_);
      launchControl(loopTailEager_, {&trip, &condOut, &iter, &go, &copies, &numCopies}, stream_,
                    L.copyBlocks, 256);
    }
    if (!e.empty())
      return e;
  }
  for (int c = 0; c < y.carried; ++c)
    copy(p[y.result(c)], L.in[2 + c], L.inBytes[2 + c], stream_);
  return e;
}

} // namespace tgc::cuda::detail
