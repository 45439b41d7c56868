// CudaSdpa.cpp — attention through cuDNN: a KERNEL step that carries an AttentionDesc (plan.proto;
// tg.attention at f16/bf16 without a mask) may run cuDNN's fused scaled dot-product attention
// instead of its own kernel, where cuDNN loads, supports the shape and is faster.
//
// The graph is cuDNN frontend's `sdpa` node (headers from PyPI's nvidia-cudnn-frontend, built
// with its dynamic loading and handed the libcudnn the runtime loaded): Q, K, V and O as the
// step's packed [B, H, S, D] or [B, S, H, D] tensors, the scale, and a causal diagonal at the
// bottom right (tgc's rule: row s sees keys t < s + L - S + 1). At load each such step is timed
// both ways alone inside a CUDA graph (a check that cuDNN runs it, and the choice when the run
// uses no graph); then, once the GEMMs are chosen, the package's whole graph is replayed with
// each group of same-shaped attention steps on cuDNN and on the own kernel, and the faster kept:
// alone, the own kernel loses the overlap with its neighbours that programmatic launch gives it
// in the graph (gpt2 at 512 tokens: cuDNN 17 % faster alone, the model 10 % slower with it). The
// GEMMs' in-graph tuning runs after this choice, so it sees the attention steps that will run.
// $TGC_SDPA=cudnn or own forces one. This file alone includes the frontend's heavy headers.
#include "runtime/cuda/CudaSessionImpl.h"
#include "runtime/Env.h"

#include <cudnn_frontend.h>

#include <mutex>

namespace cudnn_frontend {
/// The frontend's handle of libcudnn under dynamic loading: the one the runtime loaded.
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend

namespace tgc::cuda::detail {

namespace fe = cudnn_frontend;

struct CudaSession::SdpaRt {
  std::shared_ptr<fe::graph::Graph> graph;  ///< shared by the steps of one shape
  std::unordered_map<int64_t, void *> pack; ///< tensor uid → device pointer
  std::string why;                          ///< why cuDNN does not run it ("" if it may)
};

void CudaSession::SdpaRtDeleter::operator()(SdpaRt *p) const { delete p; }

namespace {

enum : int64_t { kQ = 1, kK, kV, kO };

/// cuDNN is kept for a group of steps when the whole graph gets at least 0.5 % faster with it.
constexpr double kSdpaGraphKeep = 0.995;

/// A packed tensor's strides in cuDNN's [B, H, S, D] order, for tgc's layout.
std::vector<int64_t> strides(bool bshd, int64_t heads, int64_t seq, int64_t dim) {
  return bshd ? std::vector<int64_t>{seq * heads * dim, dim, heads * dim, 1}
              : std::vector<int64_t>{heads * seq * dim, seq * dim, dim, 1};
}

/// cuDNN's graph for the attention `a`, built and planned on `handle`; throws with the reason
/// when cuDNN does not support it.
std::shared_ptr<fe::graph::Graph> buildGraph(const plan::AttentionDesc &a, cudnnHandle_t handle,
                                             int64_t &ws) {
  auto check = [](fe::error_t e, const char *what) {
    if (e.is_bad())
      throw std::runtime_error(std::string(what) + ": " + e.get_message());
  };
  const int64_t B = a.batch(), H = a.heads(), Hk = a.kv_heads(), S = a.seq_q(), L = a.seq_kv(),
                D = a.head_dim(), Dv = a.head_dim_v();
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(a.dtype() == 16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto tensor = [&](const char *name, int64_t uid, int64_t heads, int64_t seq, int64_t dim) {
    return g->tensor(fe::graph::Tensor_attributes()
                         .set_name(name)
                         .set_uid(uid)
                         .set_dim({B, heads, seq, dim})
                         .set_stride(strides(a.bshd(), heads, seq, dim)));
  };
  auto q = tensor("Q", kQ, H, S, D), k = tensor("K", kK, Hk, L, D), v = tensor("V", kV, Hk, L, Dv);
  auto opts = fe::graph::SDPA_attributes().set_name("attention").set_generate_stats(false);
  opts.set_attn_scale(a.scale());
  if (a.causal()) {
    if (S == L)
      opts.set_causal_mask(true);
    else
      opts.set_causal_mask_bottom_right(true);
  }
  auto [o, stats] = g->sdpa(q, k, v, opts);
  (void)stats;
  o->set_output(true).set_uid(kO).set_dim({B, H, S, Dv}).set_stride(strides(a.bshd(), H, S, Dv));
  check(g->validate(), "validate");
  check(g->build_operation_graph(handle), "build_operation_graph");
  check(g->create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans");
  check(g->check_support(handle), "check_support");
  check(g->build_plans(handle), "build_plans");
  check(g->get_workspace_size(ws), "get_workspace_size");
  return g;
}

} // namespace

Status CudaSession::setupSdpas() {
  bool any = false;
  for (const plan::Step &s : plan_.steps())
    any = any || (s.kind() == plan::Step::KERNEL && s.has_attention());
  if (!any)
    return Status::success();
  sdpas_.resize(steps_.size());
  sdpaOn_.assign(steps_.size(), 0);
  // $TGC_SDPA, read once (a bucket tunes at its first run): cudnn, own, or the faster.
  const char *mode = tgc::envValue(tgc::Env::Sdpa);
  sdpaMode_ = mode ? mode : "";
  if (sdpaMode_ == "own") {
    sdpaDetail_ = "attention: tgc's own kernels ($TGC_SDPA=own)\n";
    return Status::success();
  }
  if (!sdpaMode_.empty() && sdpaMode_ != "cudnn")
    sdpaMode_.clear(); // another value: the faster, as when unset
  if (!ensureCudnn()) {
    sdpaDetail_ = "attention: tgc's own kernels (cuDNN unavailable: " + dnnError_ + ")\n";
    return Status::success();
  }
  static std::once_flag handleSet; // the library loadCudnn opened, the same for every session
  std::call_once(handleSet, [&] { fe::cudnn_dlhandle = dnn_->dl; });
  // One graph per shape (a transformer's layers share it); the pointers come at each execute.
  std::map<std::string, std::pair<std::shared_ptr<fe::graph::Graph>, std::string>> built;
  int64_t wsBytes = 0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const plan::Step &s = plan_.steps((int)i);
    if (s.kind() != plan::Step::KERNEL || !s.has_attention())
      continue;
    sdpas_[i].reset(new SdpaRt);
    SdpaRt &r = *sdpas_[i];
    const plan::AttentionDesc &a = s.attention();
    auto [it, fresh] = built.try_emplace(a.SerializeAsString());
    if (fresh) {
      try {
        int64_t ws = 0;
        it->second.first = buildGraph(a, dnnHandle_, ws);
        wsBytes = std::max(wsBytes, ws);
      } catch (const std::exception &e) {
        it->second.second = e.what();
      }
    }
    r.graph = it->second.first;
    r.why = it->second.second;
    const std::vector<CUdeviceptr> &p = steps_[i].ptrs;
    r.pack = {{kQ, reinterpret_cast<void *>(p[(size_t)a.q_arg()])},
              {kK, reinterpret_cast<void *>(p[(size_t)a.k_arg()])},
              {kV, reinterpret_cast<void *>(p[(size_t)a.v_arg()])},
              {kO, reinterpret_cast<void *>(p[(size_t)a.o_arg()])}};
  }
  if (wsBytes > 0) {
    std::string e = ck(d_->cuMemAlloc(&sdpaWs_, (size_t)wsBytes), "cuMemAlloc");
    if (!e.empty()) { // the own kernels, then
      sdpaWs_ = 0;
      for (auto &r : sdpas_)
        if (r && r->graph)
          r->graph.reset(), r->why = "its workspace (" + std::to_string(wsBytes) +
                                     " bytes) could not be allocated: " + e;
    }
  }
  return Status::success();
}

std::string CudaSession::launchSdpa(size_t i) {
  SdpaRt &r = *sdpas_[i];
  cudnnStatus_t st = dnn_->setStream(dnnHandle_, reinterpret_cast<cudaStream_t>(stream_));
  if (st != CUDNN_STATUS_SUCCESS)
    return std::string("cudnnSetStream: ") + dnn_->errorString(st);
  try { // the frontend may throw (a symbol its dynamic loading cannot find, memory)
    fe::error_t e = r.graph->execute(dnnHandle_, r.pack, reinterpret_cast<void *>(sdpaWs_));
    return e.is_good() ? "" : "cuDNN attention: " + e.get_message();
  } catch (const std::exception &e) {
    return std::string("cuDNN attention: ") + e.what();
  }
}

Status CudaSession::tuneSdpas() {
  if (sdpas_.empty() || !sdpaDetail_.empty()) // none, or reported by setupSdpas
    return Status::success();
  const bool timed = tune_ && sdpaMode_.empty();
  int total = 0;
  std::string notes;
  for (size_t i = 0; i < sdpas_.size(); ++i) {
    if (!sdpas_[i])
      continue;
    ++total;
    SdpaRt &r = *sdpas_[i];
    if (!r.graph) {
      notes += "  step " + std::to_string(i) + ": own kernel (cuDNN: " + r.why + ")\n";
      continue;
    }
    // cuDNN must run the step, and inside a captured graph, before it may be chosen: timed
    // (both ways) when choosing by time, else one captured call as a check.
    const double dnn = timed ? graphMicros([&] { return launchSdpa(i); })
                             : graphMicros([&] { return launchSdpa(i); }, 1, 1);
    const double own = timed ? graphMicros([&] { return launchKernel(steps_[i]); }) : -1;
    if (d_->cuStreamSynchronize(stream_) != CUDA_SUCCESS)
      return Status::error(pre_ + "cuDNN attention failed on step " + std::to_string(i));
    if (dnn < 0) { // it did not run: the own kernel, whatever the graph would say
      r.graph.reset(), r.why = "it failed to run or to be captured";
      notes += "  step " + std::to_string(i) + ": own kernel (cuDNN: " + r.why + ")\n";
      continue;
    }
    // Forced or untimed: cuDNN. Timed: with a graph the choice is made in it (graphTuneSdpas),
    // until then the own kernel runs; without one, the faster alone.
    sdpaOn_[i] = !timed || (!useGraph_ && (own < 0 || dnn < own));
    if (timed) {
      char line[160];
      std::snprintf(line, sizeof line, "  step %zu alone: cuDNN %.1fus, own kernel %.1fus\n", i,
                    dnn, own);
      notes += line;
    }
  }
  sdpaTotal_ = total;
  sdpaNotes_ = notes;
  sdpaReport(sdpaMode_ == "cudnn" ? ", $TGC_SDPA=cudnn"
             : !tune_              ? ", untimed: $TGC_GEMM_TUNE=0"
                                   : "");
  // The timing wrote outputs: the first run starts from zeros, as without it.
  std::string e = zeroArena();
  return e.empty() ? Status::success() : Status::error(pre_ + e);
}

void CudaSession::sdpaReport(const std::string &how) {
  int onDnn = 0;
  for (char on : sdpaOn_)
    onDnn += on;
  sdpaDetail_ = "attention: " + std::to_string(onDnn) + " of " + std::to_string(sdpaTotal_) +
                " through cuDNN (" + dnn_->path + how + ")\n" + sdpaNotes_;
}

Status CudaSession::graphTuneSdpas() {
  if (sdpaTotal_ == 0 || !sdpaMode_.empty()) // none, cuDNN unavailable, or forced
    return Status::success();
  // The steps sharing one cuDNN graph (one attention shape: a transformer's layers) make a
  // group with one choice; groups in the order of their first step.
  std::vector<std::pair<const fe::graph::Graph *, std::vector<size_t>>> groups;
  for (size_t i = 0; i < sdpas_.size(); ++i) {
    if (!sdpas_[i] || !sdpas_[i]->graph)
      continue;
    const fe::graph::Graph *g = sdpas_[i]->graph.get();
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto &x) { return x.first == g; });
    if (it == groups.end())
      it = groups.insert(groups.end(), {g, {}});
    it->second.push_back(i);
  }
  if (groups.empty())
    return Status::success();
  std::string e;
  double base = timeCapturedGraph(e); // the graph as it stands: every attention on its kernel
  if (base < 0)
    return Status::error(pre_ + "in-graph attention tuning: " + e);
  for (const auto &[graph, idx] : groups) {
    (void)graph;
    for (size_t i : idx)
      sdpaOn_[i] = 1;
    const double t = timeCapturedGraph(e);
    const bool dnn = t >= 0 && t < base * kSdpaGraphKeep;
    for (size_t i : idx)
      sdpaOn_[i] = dnn;
    char line[240];
    if (t < 0)
      std::snprintf(line, sizeof line,
                    "  in the graph, steps %zu..%zu (%zu): own kernels (with cuDNN the graph "
                    "failed: %s)\n",
                    idx.front(), idx.back(), idx.size(), e.c_str());
    else
      std::snprintf(line, sizeof line,
                    "  in the graph, steps %zu..%zu (%zu): cuDNN %.1fus, own kernels %.1fus a "
                    "run: %s\n",
                    idx.front(), idx.back(), idx.size(), t, base, dnn ? "cuDNN" : "own kernels");
    sdpaNotes_ += line;
    e.clear();
    if (dnn)
      base = t;
  }
  sdpaReport(", chosen in the graph");
  std::string z = zeroArena();
  return z.empty() ? Status::success() : Status::error(pre_ + z);
}

void CudaSession::freeSdpas() {
  sdpas_.clear(); // the frontend's graphs free their own cuDNN descriptors
  sdpaOn_.clear();
  if (sdpaWs_)
    d_->cuMemFree(sdpaWs_);
  sdpaWs_ = 0;
}

} // namespace tgc::cuda::detail
