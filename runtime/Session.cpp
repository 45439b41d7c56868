// Session.cpp — loads a CPU package and replays its plan.
//
// Loading validates everything before anything runs: plan.pb size, parse, magic, format
// version, end marker (truncation), target; weights.bin size and XXH3 64 checksum;
// kernels.so checksum; every kernel symbol; every step argument's byte range against its buffer
// (arena, weights, input or output) with overflow-safe arithmetic. A package that passes cannot
// make a step read or write outside the buffers the runtime owns or was handed.
// kernels.so is opened RTLD_LOCAL (packages never see each other's symbols) and RTLD_NODELETE
// (OpenMP/OpenBLAS worker threads may outlive a session; the code must stay mapped).
#include "runtime/Session.h"
#include "runtime/BucketSession.h"
#include "runtime/CpuLevel.h"
#include "runtime/CpuStepThreads.h"
#include "runtime/Env.h"
#include "runtime/DecodePlan.h"
#include "runtime/SessionBase.h"
#include "runtime/Text.h"

#include "runtime/schema/PlanUtil.h"
#include "runtime/IndexBounds.h"
#include "runtime/LoopPlan.h"
#include "runtime/PackageFiles.h"
#include "runtime/cuda/CudaSession.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <mutex>
#include <cstring>
#include <thread>
#include <dlfcn.h>
#include <sys/stat.h>

namespace tgc {

namespace {

using plan::BufferArg;

struct AlignedFree {
  void operator()(uint8_t *p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t[], AlignedFree>;

AlignedBuffer allocAligned(int64_t bytes) {
  size_t n = (size_t)((bytes + 63) / 64 * 64);
  if (n == 0)
    n = 64;
  auto *p = static_cast<uint8_t *>(std::aligned_alloc(64, n));
  if (p)
    std::memset(p, 0, n);
  return AlignedBuffer(p);
}


using KernelFn = void (*)(void *const *);

class CpuSession final : public SessionBase {
public:
  /// `depth`: how many LOOP bodies deep this package is (LoopPlan.h).
  Status init(const std::string &path, int numThreads, int depth = 0);
  /// A bucket (or a decode package's step plan) of a bucketed package (BucketSession.h): plan
  /// `p` with its kernels file in `dir`, on weights and an arena the caller owns (`p`'s
  /// weights_bytes and arena_bytes, at least) and the decode package's states (`states`, of
  /// `stateBytes` each; none for a plain bucketed package).
  Status initBucket(const std::string &dir, const plan::Plan &p, uint8_t *weights,
                    uint8_t *arena, const std::vector<uint8_t *> &states,
                    const std::vector<int64_t> &stateBytes, int numThreads,
                    const std::string &pre) {
    path_ = dir;
    plan_ = p;
    weightsPtr_ = weights;
    arenaPtr_ = arena;
    statePtrs_ = states;
    stateBytes_ = stateBytes;
    return setup(pre, numThreads);
  }
  Status run(const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs) override;
  std::string describe() const override;

private:
  Status checkArg(const BufferArg &a, const std::string &where) const;
  Status executeRefs(const TensorRef *inputs, size_t, const TensorRef *outputs, size_t) override {
    execute(inputs, outputs);
    return Status::success();
  }
  void execute(const TensorRef *inputs, const TensorRef *outputs);
  /// Everything init checks after reading the plan: target, sizes, interface, the weights
  /// (unless borrowed), kernels, steps and output sources.
  Status setup(const std::string &pre, int numThreads);
  /// Reads and checks weights.bin into weights_ and allocates arena_ (a single package).
  Status loadWeights(const std::string &pre);

  std::string path_;
  plan::Plan plan_;
  AlignedBuffer weights_, arena_; ///< owned (a single package), else borrowed through:
  uint8_t *weightsPtr_ = nullptr, *arenaPtr_ = nullptr;
  /// A decode package's states (borrowed from the CpuBucketBackend), and their sizes.
  std::vector<uint8_t *> statePtrs_;
  std::vector<int64_t> stateBytes_;
  void *dl_ = nullptr;
  /// A LOOP step: the body's session, its input and output refs (data set per iteration) and
  /// the carried values, this iteration's and the next's.
  struct LoopRt {
    LoopLayout layout;
    std::unique_ptr<CpuSession> body;
    std::vector<TensorRef> in, out;
    std::vector<AlignedBuffer> cur, next;
  };
  struct RtStep {
    KernelFn fn = nullptr; ///< null for COPY and LOOP
    std::vector<BufferArg> args;
    std::vector<void *> ptrs;
    std::unique_ptr<LoopRt> loop;
  };
  /// Loads step i's body package and prepares its buffers (setup).
  Status setupLoop(int i, RtStep &rs, int numThreads, const std::string &where);
  /// Runs a LOOP step (its ptrs resolved).
  void runLoop(RtStep &s);
  int depth_ = 0;
  std::vector<std::string> loopBodies_; ///< the body directories loaded (checkLoopBodyDir)
  std::vector<RtStep> steps_;
  /// Times the package on zeroed inputs and sets stepThreads_ (CpuStepThreads.h): a single
  /// package at the top level, without states, data-dependent outputs or an input whose index
  /// range excludes 0; kernels that export tgk_set_step_threads.
  void tuneStepThreadCounts(int numThreads);
  /// Per step, the thread count it runs on (empty: the library's count, tgk_set_threads), set
  /// through the kernels' tgk_set_step_threads before each step whose count differs from the
  /// last one, and cleared after the run.
  std::vector<int> stepThreads_;
  void (*setStepThreads_)(int) = nullptr;
  StepThreads tuned_;
  int tunedThreads_ = 0; ///< the session's thread count when tuned_ was chosen (0: never)
};


Status CpuSession::checkArg(const BufferArg &a, const std::string &where) const {
  int64_t limit;
  std::string buf;
  switch (a.kind()) {
  case plan::ARENA: limit = plan_.arena_bytes(); buf = "arena"; break;
  case plan::WEIGHT: limit = plan_.weights_bytes(); buf = "weights"; break;
  case plan::INPUT:
  case plan::OUTPUT: {
    const auto &bytes = a.kind() == plan::INPUT ? inBytes_ : outBytes_;
    const char *what = a.kind() == plan::INPUT ? "input" : "output";
    if (a.index() < 0 || (size_t)a.index() >= bytes.size())
      return Status::error(where + ": " + what + " index " + std::to_string(a.index()) +
                           " out of range (package has " + std::to_string(bytes.size()) + ")");
    limit = bytes[a.index()];
    buf = std::string(what) + " " + std::to_string(a.index());
    break;
  }
  case plan::STATE: return checkStateArg(a, stateBytes_, where);
  default:
    return Status::error(where + ": unknown buffer kind " + std::to_string((int)a.kind()));
  }
  if (a.offset() < 0 || a.bytes() < 0 || a.offset() > limit || a.bytes() > limit - a.offset())
    return Status::error(where + ": range " + plan::formatArg(a) + " lies outside the " + buf +
                         " (" + std::to_string(limit) + " bytes)");
  return Status::success();
}

Status CpuSession::loadWeights(const std::string &pre) {
  const std::string &path = path_;
  Status st;
  if (!plainFileName(plan_.weights_file()))
    return Status::error(pre + "weights file name '" + plan_.weights_file() + "' is invalid");
  std::string wpath = path + "/" + plan_.weights_file();
  std::string wbytes;
  st = readWhole(wpath, kMaxBufferBytes, wbytes, "weights");
  if (!st.ok)
    return Status::error(pre + st.message);
  if ((int64_t)wbytes.size() != plan_.weights_bytes())
    return Status::error(pre + plan_.weights_file() + " has " + std::to_string(wbytes.size()) +
                         " bytes, the plan expects " + std::to_string(plan_.weights_bytes()));
  if (plan::xxh3(wbytes.data(), wbytes.size()) != plan_.weights_xxh3())
    return Status::error(pre + plan_.weights_file() + " checksum mismatch (file is corrupt)");
  weights_ = allocAligned(plan_.weights_bytes());
  arena_ = allocAligned(plan_.arena_bytes());
  if (!weights_ || !arena_)
    return Status::error(pre + "out of memory allocating weights and arena (" +
                         std::to_string(plan_.weights_bytes() + plan_.arena_bytes()) + " bytes)");
  if (!wbytes.empty())
    std::memcpy(weights_.get(), wbytes.data(), wbytes.size());
  std::string().swap(wbytes);
  return Status::success();
}

Status CpuSession::init(const std::string &path, int numThreads, int depth) {
  path_ = path;
  depth_ = depth;
  const std::string pre = "package '" + path + "': ";
  Status st = readPlan(path, plan_);
  if (!st.ok)
    return Status::error(pre + st.message);
  if (st = setup(pre, numThreads); !st.ok)
    return st;
  if (depth == 0)
    tuneStepThreadCounts(numThreads);
  return Status::success();
}

void CpuSession::tuneStepThreadCounts(int numThreads) {
  if (const char *e = envValue(Env::CpuTune); e && std::string(e) == "0")
    return;
  setStepThreads_ = reinterpret_cast<void (*)(int)>(dlsym(dl_, "tgk_set_step_threads"));
  auto getThreads = reinterpret_cast<int (*)()>(dlsym(dl_, "tgk_get_threads"));
  if (!setStepThreads_ || !getThreads || !dynamic_.empty() || !statePtrs_.empty())
    return;
  for (const TensorSpec &t : inputs_)
    if (t.indexBounded && (t.indexLo > 0 || t.indexHi < 0))
      return;
  const int threads = numThreads > 0 ? numThreads : getThreads();
  std::vector<bool> tunable(steps_.size());
  for (size_t i = 0; i < steps_.size(); ++i)
    tunable[i] = steps_[i].fn != nullptr;
  if (threads <= 1) { // nothing to time: every step on the one thread
    tuned_ = tuneStepThreads(tunable, threads, nullptr);
    tunedThreads_ = threads;
    stepThreads_ = tuned_.threads;
    return;
  }
  std::vector<AlignedBuffer> bufs;
  std::vector<TensorRef> in, out;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    bufs.push_back(allocAligned(inBytes_[i]));
    in.push_back({inputs_[i].dtype, inputs_[i].shape.data(), (int32_t)inputs_[i].shape.size(),
                  bufs.back().get(), (size_t)inBytes_[i]});
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    bufs.push_back(allocAligned(outBytes_[i]));
    out.push_back({outputs_[i].dtype, outputs_[i].shape.data(), (int32_t)outputs_[i].shape.size(),
                   bufs.back().get(), (size_t)outBytes_[i]});
  }
  for (const AlignedBuffer &b : bufs)
    if (!b)
      return; // out of memory: run untuned
  const bool wasProfiling = profiling_;
  profiling_ = true;
  bool lastSerial = true; // no step has used the pool yet
  tuned_ = tuneStepThreads(tunable, threads,
                           [&](const std::vector<int> &t, std::vector<double> &stepMicros) {
                             stepThreads_ = t;
                             // A run with no step on the pool is timed as a one-thread session
                             // runs: after the pool's workers stopped spinning (they spin for
                             // 500 us after a job, which on SMT siblings or a busy VM slows
                             // the caller; measured: audio_frontend 260 against 144 us).
                             bool serial = true;
                             for (size_t i = 0; i < t.size(); ++i)
                               serial = serial && (!tunable[i] || t[i] == 1);
                             if (serial && !lastSerial)
                               std::this_thread::sleep_for(std::chrono::milliseconds(2));
                             lastSerial = serial;
                             const auto t0 = std::chrono::steady_clock::now();
                             execute(in.data(), out.data());
                             const auto t1 = std::chrono::steady_clock::now();
                             for (size_t i = 0; i < stepMicros.size(); ++i)
                               stepMicros[i] = profile_[i].micros;
                             return std::chrono::duration<double, std::micro>(t1 - t0).count();
                           });
  profiling_ = wasProfiling;
  profile_.clear();
  tunedThreads_ = threads;
  // Every step's count, "all" included, is set on the calling thread as the run goes: another
  // session of this kernels.so loaded with a different count (tgk_set_threads, one per library)
  // does not change this session's.
  stepThreads_ = tuned_.threads;
  // The arena held the tuning runs' values; a run writes everything it reads first, but the
  // first real run starts from the same zeroed arena as an untuned session.
  if (arena_)
    std::memset(arena_.get(), 0, (size_t)((plan_.arena_bytes() + 63) / 64 * 64));
}

Status CpuSession::setup(const std::string &pre, int numThreads) {
  const std::string &path = path_;
  Status st;
  if (plan_.target().rfind("cpu", 0) != 0)
    return Status::error(pre + "target '" + plan_.target() + "' cannot run on the CPU runtime");
  if (std::string why = cpuTargetMismatch(plan_.target(), plan_.cpu_signature()); !why.empty())
    return Status::error(pre + "cannot run on this CPU: " + why);
  if (plan_.arena_bytes() < 0 || plan_.arena_bytes() > kMaxBufferBytes)
    return Status::error(pre + "arena size " + std::to_string(plan_.arena_bytes()) + " is invalid");
  if (plan_.weights_bytes() < 0 || plan_.weights_bytes() > kMaxBufferBytes)
    return Status::error(pre + "weights size " + std::to_string(plan_.weights_bytes()) +
                         " is invalid");

  // Interface.
  if (Status st = readInterface(plan_, pre); !st.ok)
    return st;

  // Weights.
  if (!weightsPtr_ && (st = loadWeights(pre)).ok) {
    weightsPtr_ = weights_.get();
    arenaPtr_ = arena_.get();
  }
  if (!st.ok)
    return st;

  // Kernels.
  if (!plainFileName(plan_.kernels_file()))
    return Status::error(pre + "kernels file name '" + plan_.kernels_file() + "' is invalid");
  std::string kpath = path + "/" + plan_.kernels_file();
  uint64_t khash;
  if (!plan::xxh3File(kpath, khash))
    return Status::error(pre + plan_.kernels_file() + " cannot be read");
  if (khash != plan_.kernels_xxh3())
    return Status::error(pre + plan_.kernels_file() + " checksum mismatch (file is corrupt)");
  // OpenMP worker threads must sleep, not spin, between kernels: a spinning team starves
  // OpenBLAS's threads and any other process on a loaded machine (measured: 30x slower runs on
  // 2 busy cores). The user's own setting wins.
  // OpenBLAS (loaded with the first kernels.so) picks its kernels from CPUID and takes SSE3 ones
  // for an Intel model it does not know: name the core for it (openblasCoreType; kws_gru's
  // GEMVs at 1 thread: p50 211-283 -> 163-248 us on such a VM). The user's own setting wins.
  // setenv is not thread-safe: once per process, even when sessions load on several threads.
  static std::once_flag ompPolicyOnce;
  std::call_once(ompPolicyOnce, [] {
    setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
    if (const char *core = openblasCoreType())
      setenv("OPENBLAS_CORETYPE", core, /*overwrite=*/0);
  });
  if (kpath.front() != '/' && kpath.rfind("./", 0) != 0)
    kpath = "./" + kpath; // never let dlopen search the library path
  dlerror();
  dl_ = dlopen(kpath.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!dl_) {
    const char *e = dlerror();
    return Status::error(pre + "cannot load " + plan_.kernels_file() + ": " + (e ? e : "?"));
  }

  // Steps.
  for (int i = 0; i < plan_.steps_size(); ++i) {
    const plan::Step &s = plan_.steps(i);
    std::string where = pre + "step " + std::to_string(i) +
                        (s.symbol().empty() ? "" : " (" + s.symbol() + ")");
    RtStep rs;
    if (s.kind() == plan::Step::KERNEL) {
      if (s.symbol().empty())
        return Status::error(where + ": kernel symbol is empty");
      // Only generated kernels: dlsym on the handle also finds the library's dependencies
      // (libc's free, memcpy, ...), which a corrupt plan must not be able to call.
      bool generated = s.symbol().rfind("tgk_", 0) == 0 && s.symbol().size() <= 256;
      for (char ch : s.symbol())
        generated = generated && (std::isalnum((unsigned char)ch) || ch == '_');
      if (!generated)
        return Status::error(where + ": '" + s.symbol() + "' is not a generated kernel symbol (tgk_...)");
      dlerror();
      void *sym = dlsym(dl_, s.symbol().c_str());
      if (!sym)
        return Status::error(pre + "kernel symbol '" + s.symbol() + "' of step " +
                             std::to_string(i) + " not found in " + plan_.kernels_file());
      rs.fn = reinterpret_cast<KernelFn>(sym);
    } else if (s.kind() == plan::Step::COPY) {
      if (s.args_size() != 2 || s.args(0).bytes() != s.args(1).bytes())
        return Status::error(where + ": a copy needs two ranges of equal size");
      if (s.args(0).kind() != plan::OUTPUT && s.args(0).kind() != plan::ARENA &&
          s.args(0).kind() != plan::STATE)
        return Status::error(where + ": a copy must write an output, the arena or a state");
    } else if (s.kind() == plan::Step::LOOP) {
      if (Status ls = setupLoop(i, rs, numThreads, where); !ls.ok)
        return ls;
      for (const BufferArg &a : s.args())
        if (a.kind() == plan::OUTPUT)
          return Status::error(where + ": a loop reads and writes the arena, weights and inputs only");
    } else {
      return Status::error(where + ": unknown step kind " + std::to_string((int)s.kind()));
    }
    for (int j = 0; j < s.args_size(); ++j) {
      st = checkArg(s.args(j), where + " arg " + std::to_string(j));
      if (!st.ok)
        return st;
      rs.args.push_back(s.args(j));
    }
    rs.ptrs.resize(rs.args.size());
    steps_.push_back(std::move(rs));
  }
  st = checkOutputSources(plan_, outBytes_, pre, [&](const BufferArg &a, const std::string &w) {
    return checkArg(a, w);
  });
  if (!st.ok)
    return st;

  if (numThreads > 0)
    if (auto setThreads = reinterpret_cast<void (*)(int)>(dlsym(dl_, "tgk_set_threads")))
      setThreads(numThreads);
  return Status::success();
}

Status CpuSession::setupLoop(int i, RtStep &rs, int numThreads, const std::string &where) {
  const plan::Step &s = plan_.steps(i);
  auto L = std::make_unique<LoopRt>();
  if (Status st = checkLoopStep(s, where, L->layout); !st.ok)
    return st;
  if (depth_ >= kMaxLoopDepth)
    return Status::error(where + ": loops nest more than " + std::to_string(kMaxLoopDepth) +
                         " deep");
  if (Status st = checkLoopBodyDir(path_, s, loopBodies_, where); !st.ok)
    return st;
  L->body = std::make_unique<CpuSession>();
  if (Status st = L->body->init(path_ + "/" + s.loop().body(), numThreads, depth_ + 1); !st.ok)
    return Status::error(where + ": " + st.message);
  if (Status st = checkLoopBody(*L->body, s, L->layout, where); !st.ok)
    return st;
  auto refs = [](const std::vector<TensorSpec> &specs, std::vector<TensorRef> &out) {
    for (const TensorSpec &t : specs) {
      size_t bytes = dtypeSize(t.dtype);
      for (int64_t d : t.shape)
        bytes *= (size_t)d;
      out.push_back({t.dtype, t.shape.data(), (int32_t)t.shape.size(), nullptr, bytes});
    }
  };
  refs(L->body->inputs(), L->in);
  refs(L->body->outputs(), L->out);
  for (int k = 0; k < L->layout.carried; ++k) {
    L->cur.push_back(allocAligned(s.args(L->layout.initial(k)).bytes()));
    L->next.push_back(allocAligned(s.args(L->layout.initial(k)).bytes()));
  }
  rs.loop = std::move(L);
  return Status::success();
}

void CpuSession::runLoop(RtStep &s) {
  LoopRt &L = *s.loop;
  const LoopLayout &y = L.layout;
  int64_t trips = INT64_MAX, iter = 0;
  uint8_t cond = 1, one = 1, condOut = 0;
  size_t k = 0;
  if (y.hasTrip)
    std::memcpy(&trips, s.ptrs[k++], sizeof trips);
  if (y.hasCond)
    cond = *static_cast<const uint8_t *>(s.ptrs[k++]) != 0;
  for (int c = 0; c < y.carried; ++c)
    std::memcpy(L.cur[c].get(), s.ptrs[y.initial(c)], L.in[2 + c].bytes);
  for (int j = 0; j < y.captures; ++j)
    L.in[2 + y.carried + j].data = s.ptrs[y.capture(j)];
  L.in[0].data = &iter;
  L.in[1].data = &one;
  L.out[0].data = &condOut;
  for (; iter < trips && cond; ++iter) {
    for (int c = 0; c < y.carried; ++c) {
      L.in[2 + c].data = L.cur[c].get();
      L.out[1 + c].data = L.next[c].get();
    }
    L.body->execute(L.in.data(), L.out.data());
    cond = condOut != 0;
    std::swap(L.cur, L.next);
  }
  for (int c = 0; c < y.carried; ++c)
    std::memcpy(s.ptrs[y.result(c)], L.cur[c].get(), L.in[2 + c].bytes);
}

void CpuSession::execute(const TensorRef *inputs, const TensorRef *outputs) {
  auto base = [&](const BufferArg &a) -> uint8_t * {
    switch (a.kind()) {
    case plan::INPUT: return static_cast<uint8_t *>(inputs[a.index()].data);
    case plan::OUTPUT: return static_cast<uint8_t *>(outputs[a.index()].data);
    case plan::ARENA: return arenaPtr_;
    case plan::WEIGHT: return weightsPtr_;
    case plan::STATE: return statePtrs_[(size_t)a.index()]; // checked at load
    default: return nullptr;
    }
  };
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  if (profiling_)
    profile_.assign(steps_.size(), StepProfile{});
  int threadsNow = 0; // the kernels' count on this thread for the step (0: the session's)
  for (size_t i = 0; i < steps_.size(); ++i) {
    RtStep &s = steps_[i];
    for (size_t j = 0; j < s.args.size(); ++j) {
      uint8_t *b = base(s.args[j]);
      s.ptrs[j] = b ? b + s.args[j].offset() : nullptr;
    }
    if (!stepThreads_.empty() && stepThreads_[i] != threadsNow)
      setStepThreads_(threadsNow = stepThreads_[i]);
    const Clock::time_point start = profiling_ ? Clock::now() : t0;
    if (s.fn)
      s.fn(s.ptrs.data());
    else if (s.loop)
      runLoop(s);
    else if (s.args[0].bytes() > 0 && s.ptrs[0] != s.ptrs[1])
      std::memmove(s.ptrs[0], s.ptrs[1], (size_t)s.args[0].bytes());
    if (profiling_) {
      const plan::Step &ps = plan_.steps(static_cast<int>(i));
      StepProfile &p = profile_[i];
      p.symbol = s.fn || s.loop ? ps.symbol() : "copy";
      p.label = safeText(ps.label());
      p.startMicros = std::chrono::duration<double, std::micro>(start - t0).count();
      p.micros = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    }
  }
  if (threadsNow != 0) // this thread's next run, of any session of these kernels, starts clean
    setStepThreads_(0);
  for (int i = 0; i < plan_.outputs_size(); ++i) {
    const BufferArg &src = plan_.outputs(i).source();
    if (src.kind() == plan::OUTPUT || src.bytes() == 0)
      continue;
    std::memcpy(outputs[i].data, base(src) + src.offset(), (size_t)src.bytes());
  }
  if (dynamic_.empty())
    return;
  std::vector<int64_t> counts(dynamic_.size());
  for (size_t k = 0; k < dynamic_.size(); ++k) // checked at load: 8 bytes in the arena
    std::memcpy(&counts[k], arenaPtr_ + plan_.outputs((int)dynamic_[k]).count().offset(), 8);
  finishDynamic(outputs, counts.data());
}

Status CpuSession::run(const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs) {
  RunGuard guard(running_);
  if (!guard.acquired)
    return Status::error(kConcurrentRun);
  std::vector<TensorRef> in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor &t = inputs[i];
    in[i] = {t.dtype, t.shape.data(), (int32_t)t.shape.size(),
             const_cast<uint8_t *>(t.data.data()), t.data.size()};
    // A HostTensor's byte count must match its own dtype and shape exactly.
    int64_t want = bytesOf(t.dtype, t.shape);
    if (i < inputs_.size() && t.dtype == inputs_[i].dtype && t.shape == inputs_[i].shape &&
        want != (int64_t)t.data.size())
      return Status::error("input '" + escapeText(inputs_[i].name) + "': data has " +
                           std::to_string(t.data.size()) + " bytes, expected " +
                           std::to_string(want));
  }
  Status st = checkSpecs(in.data(), in.size(), true);
  if (!st.ok)
    return st;
  outputs.clear();
  std::vector<TensorRef> out(outputs_.size());
  try {
    outputs.reserve(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i)
      outputs.push_back(HostTensor::zeros(outputs_[i].dtype, outputs_[i].shape, outputs_[i].name));
  } catch (const std::bad_alloc &) {
    outputs.clear();
    return Status::error("out of memory allocating the outputs");
  }
  for (size_t i = 0; i < outputs_.size(); ++i)
    out[i] = {outputs[i].dtype, outputs[i].shape.data(), (int32_t)outputs[i].shape.size(),
              outputs[i].data.data(), outputs[i].data.size()};
  execute(in.data(), out.data());
  trimOutputs(outputs);
  return Status::success();
}

std::string CpuSession::describe() const {
  return "package: " + path_ + "\n" +
         (tunedThreads_ > 0 ? describeStepThreads(tuned_, tunedThreads_) : std::string()) +
         plan::formatPlan(plan_);
}

/// A bucketed CPU package's weights (read and checked once) and its one arena; each bucket a
/// CpuSession on them.
class CpuBucketBackend final : public BucketBackend {
public:
  explicit CpuBucketBackend(int numThreads) : threads_(numThreads) {}
  Status init(const std::string &dir, const plan::Plan &top, const std::string &pre) override {
    if (!plainFileName(top.weights_file()))
      return Status::error(pre + "weights file name '" + top.weights_file() + "' is invalid");
    std::string bytes;
    Status st = readWhole(dir + "/" + top.weights_file(), kMaxBufferBytes, bytes, "weights");
    if (!st.ok)
      return Status::error(pre + st.message);
    if ((int64_t)bytes.size() != top.weights_bytes())
      return Status::error(pre + top.weights_file() + " has " + std::to_string(bytes.size()) +
                           " bytes, the plan expects " + std::to_string(top.weights_bytes()));
    if (plan::xxh3(bytes.data(), bytes.size()) != top.weights_xxh3())
      return Status::error(pre + top.weights_file() + " checksum mismatch (file is corrupt)");
    weights_ = allocAligned(top.weights_bytes());
    arena_ = allocAligned(top.arena_bytes());
    if (!weights_ || !arena_)
      return Status::error(pre + "out of memory allocating weights and arena (" +
                           std::to_string(top.weights_bytes() + top.arena_bytes()) + " bytes)");
    if (!bytes.empty())
      std::memcpy(weights_.get(), bytes.data(), bytes.size());
    weightBytes_ = top.weights_bytes();
    arenaBytes_ = top.arena_bytes();
    // A decode package's states: one zeroed allocation each, for the session's life.
    if (Status st = stateSizes(top, pre, stateBytes_); !st.ok)
      return st;
    for (size_t k = 0; k < stateBytes_.size(); ++k) {
      states_.push_back(allocAligned(stateBytes_[k]));
      if (!states_.back())
        return Status::error(pre + "out of memory allocating state " + std::to_string(k) +
                             " (" + std::to_string(stateBytes_[k]) + " bytes)");
      statePtrs_.push_back(states_.back().get());
    }
    return Status::success();
  }
  std::unique_ptr<Session> loadBucket(const std::string &dir, const plan::Plan &b,
                                      const std::string &pre, Status &st) override {
    auto s = std::make_unique<CpuSession>();
    st = s->initBucket(dir, b, weights_.get(), arena_.get(), statePtrs_, stateBytes_, threads_,
                       pre);
    if (!st.ok)
      return nullptr;
    return s;
  }
  Status switchTo(const plan::Plan &b) override {
    std::memset(arena_.get(), 0, (size_t)std::min(b.arena_bytes(), arenaBytes_));
    return Status::success();
  }
  Status resetStates() override {
    for (size_t k = 0; k < states_.size(); ++k)
      std::memset(statePtrs_[k], 0, (size_t)stateBytes_[k]);
    return Status::success();
  }
  std::string describe() const override {
    int64_t states = 0;
    for (int64_t b : stateBytes_)
      states += b;
    return "weights: " + std::to_string(weightBytes_) + " bytes in host memory, arena: " +
           std::to_string(arenaBytes_) + " bytes in host memory (one allocation each)" +
           (states_.empty() ? std::string()
                            : ", states: " + std::to_string(states_.size()) + " of " +
                                  std::to_string(states) + " bytes in all in host memory") +
           "\n";
  }

private:
  int threads_;
  AlignedBuffer weights_, arena_;
  std::vector<AlignedBuffer> states_;
  std::vector<uint8_t *> statePtrs_;
  std::vector<int64_t> stateBytes_;
  int64_t weightBytes_ = 0, arenaBytes_ = 0;
};

} // namespace

std::unique_ptr<BucketBackend> makeCpuBucketBackend(int numThreads) {
  return std::make_unique<CpuBucketBackend>(numThreads);
}

std::unique_ptr<Session> Session::load(const std::string &path, Status &st, int numThreads) {
  if (plan::Plan top; peekBucketedPlan(path, top)) { // runtime/BucketSession.cpp
    const std::string pre = "package '" + path + "': ";
    if (Status h = readPlan(path, top); !h.ok) {
      st = Status::error(pre + h.message);
      return nullptr;
    }
    std::unique_ptr<BucketBackend> backend;
    if (top.target().rfind("cuda:", 0) == 0)
      backend = cuda::makeCudaBucketBackend();
    else if (top.target().rfind("cpu", 0) == 0)
      backend = makeCpuBucketBackend(numThreads);
    if (!backend) {
      st = Status::error(pre + "target '" + escapeText(top.target()) + "' is not supported");
      return nullptr;
    }
    return loadBucketSession(path, top, std::move(backend), st);
  }
  if (cuda::isCudaPackage(path)) // "cuda:*" targets: runtime/cuda/CudaSession.cpp
    return cuda::loadCudaSession(path, st);
  auto s = std::make_unique<CpuSession>();
  try {
    st = s->init(path, numThreads);
  } catch (const std::exception &e) {
    st = Status::error("package '" + path + "': " + e.what());
  }
  if (!st.ok)
    return nullptr;
  return s;
}

} // namespace tgc
