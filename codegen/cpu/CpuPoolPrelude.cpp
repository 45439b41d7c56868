// CpuPoolPrelude.cpp — the kernels' thread pool and tg_parallel_for, in kernels.cpp's prelude
// (after tgk_nt, before the element helpers).
//
// Why a pool of our own (docs/decisions.md, "One CPU thread pool"): OpenMP's team, woken from a
// futex for every parallel loop, made 2 threads slower than 1 on CNNs of many small kernels, and
// OpenBLAS's own pool beside it fought for the same cores. Why each thread owns a range of every
// loop (docs/decisions.md, "CPU loops: each thread owns a range"): a step reading rows that
// another core wrote waits for them to cross between the cores' caches (measured on the 2-vCPU
// VM: a max pool after a convolution split over 2 threads took 10.5 us instead of 3.7).
#include "codegen/cpu/CpuEmit.h"

namespace tgc::cpu {

namespace {

const char *kPoolPrelude = R"PRELUDE(/// The kernels' thread pool: tgk_nt() - 1 workers, started on the first parallel loop and kept
/// for the process, plus the calling thread. A loop of k chunks is dealt in contiguous ranges,
/// one a thread: range 0 to the caller, range w + 1 to worker w. A thread runs its own range
/// front to back, then takes chunks from the back of the others' (the ranges' owners work from
/// the front). So the same thread computes the same part of every loop (a convolution's top
/// rows, the next one's top rows), and what it wrote is still in its core's cache when it
/// reads it; and the caller never waits for a worker that has not started (a worker
/// descheduled on a loaded machine only costs the chunks it claimed), only for chunks being
/// run. Workers spin for kTgSpinUs after their last chunk (the gaps between the kernels of one
/// run are microseconds) and then sleep on a condition variable; they never sched_yield (on
/// 2-core VMs yielding spinners kept a worker and the caller on one core for whole runs). One
/// loop at a time: a loop started inside a chunk, or on another thread while one runs, runs
/// serially on its own thread. OpenBLAS stays on one thread; large GEMMs are split over this
/// pool (tg_blas_gemm).
/// On Linux each worker is pinned to its own CPU of those the pool's first caller may use,
/// never the CPU the caller last ran on, and moves when it finds itself there: the scheduler
/// woke a sleeping worker onto its waker's CPU (measured: every wake of a 2-vCPU VM), where it
/// spun for kTgSpinUs while the caller, preempted, could not publish the next loop. With
/// no other CPU to move to, a worker sleeps instead of spinning beside the caller.
typedef void (*tg_chunk_fn)(void *, int64_t, int64_t);
constexpr int64_t kTgSpinUs = 500;
/// A range's claim word: (job << 24) | (next << 12) | end, chunks [next, end) unclaimed; the job
/// number's low 40 bits (kTgJobMask), compared as such (2^40 loops wrap it, not hang the pool).
constexpr int kTgRangeBits = 12;
constexpr uint64_t kTgRangeMask = (1ull << kTgRangeBits) - 1;
constexpr uint64_t kTgJobMask = (1ull << (64 - 2 * kTgRangeBits)) - 1;
constexpr int kTgMaxThreads = 256; // a loop's width at most; its chunks at most kTgRangeMask
/// What the threads write apart from each other sits on cache lines of its own: a spinning worker
/// reads `job` over and over, and a write to a line it reads (a chunk count, say) sends the line
/// back and forth between the cores for every chunk.
struct tg_pool {
  struct alignas(64) tg_range {
    std::atomic<uint64_t> claim{0};
  };
  struct alignas(64) tg_count {
    std::atomic<int64_t> n{0};
  };
  alignas(64) std::atomic<uint64_t> job{0}; // the current job's number, what idle workers watch
  // The current job, written before `job` and read once a job by each worker.
  alignas(64) std::atomic<tg_chunk_fn> fn{nullptr};
  std::atomic<void *> ctx{nullptr};
  std::atomic<int64_t> n{0}, chunks{0};
  std::atomic<int> width{0}; // threads (and ranges) of the current job, the caller included
  alignas(64) std::atomic<bool> busy{false};
  std::atomic<int> sleeping{0};
  std::atomic<int> callerCpu{-1}; // the CPU the caller was on when it published the last job
  std::mutex mu;
  std::condition_variable cv;
  uint64_t jobs = 0; // jobs published, guarded by busy
  int started = 0;   // workers started, guarded by busy
  tg_range ranges[kTgMaxThreads];
  tg_count ran[kTgMaxThreads]; // chunks thread t (0: the caller) has run, all jobs; t writes it
#if defined(__linux__)
  cpu_set_t allowed; // the first caller's CPUs, read before the first worker starts
  bool haveAllowed = false;
  std::atomic<int> pinned[kTgMaxThreads]; // worker w's CPU (-1: none yet)
  static int tg_cpu() { return sched_getcpu(); }
  /// Pins worker w to a CPU of `allowed` that is neither the caller's last one nor another
  /// worker's (the w-th such, cyclically; else any but the caller's); false when there is none.
  bool pinAway(int w) {
    if (!haveAllowed) return false;
    const int avoid = callerCpu.load(std::memory_order_relaxed);
    int freeCpus[CPU_SETSIZE], nf = 0, anyCpus[CPU_SETSIZE], na = 0;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (!CPU_ISSET(c, &allowed) || c == avoid) continue;
      anyCpus[na++] = c;
      bool taken = false;
      for (int o = 0; o < kTgMaxThreads; ++o)
        taken = taken || (o != w && pinned[o].load(std::memory_order_relaxed) == c);
      if (!taken) freeCpus[nf++] = c;
    }
    if (na == 0) return false;
    const int c = nf > 0 ? freeCpus[w % nf] : anyCpus[w % na];
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) return false;
    if (w < kTgMaxThreads) pinned[w].store(c, std::memory_order_relaxed);
    return true;
  }
#else
  static int tg_cpu() { return -1; }
  bool pinAway(int) { return false; }
#endif
  /// True when worker w shares the caller's CPU and could not move off it.
  bool besideCaller(int w) {
    const int me = tg_cpu();
    return me >= 0 && me == callerCpu.load(std::memory_order_relaxed) && !pinAway(w);
  }

  /// Claims one chunk of job `j` from range r: the front one when `own`, else the back one.
  /// Returns the chunk, -1 when the range is empty, -2 when job j is over.
  int64_t claim(uint64_t j, int r, bool own) {
    std::atomic<uint64_t> &a = ranges[r].claim;
    uint64_t c = a.load(std::memory_order_acquire);
    for (;;) {
      if ((c >> (2 * kTgRangeBits)) != (j & kTgJobMask)) return -2;
      const uint64_t next = (c >> kTgRangeBits) & kTgRangeMask, end = c & kTgRangeMask;
      if (next >= end) return -1;
      const uint64_t want = own ? c + (1ull << kTgRangeBits) : c - 1;
      if (a.compare_exchange_weak(c, want, std::memory_order_acq_rel, std::memory_order_acquire))
        return (int64_t)(own ? next : end - 1);
    }
  }

  /// Runs chunks of job `j` as thread `me` (0: the caller, w + 1: worker w): its own range,
  /// then the others', until none is left or another job is current.
  void work(uint64_t j, int me) {
    const int nr = width.load(std::memory_order_relaxed);
    for (int t = 0; t < nr; ++t) {
      const int r = (me + t) % nr;
      for (;;) {
        // A claim tagged j means job j is still open, so the fields read after it are its own.
        const int64_t i = claim(j, r, t == 0);
        if (i == -2) return;
        if (i < 0) break;
        const tg_chunk_fn f = fn.load(std::memory_order_relaxed);
        void *const x = ctx.load(std::memory_order_relaxed);
        const int64_t nn = n.load(std::memory_order_relaxed),
                      k = chunks.load(std::memory_order_relaxed);
        f(x, nn * i / k, nn * (i + 1) / k);
        ran[me].n.store(ran[me].n.load(std::memory_order_relaxed) + 1, std::memory_order_release);
      }
    }
  }

  /// Worker `w` (0-based) helps with the jobs that are at least w + 2 threads wide.
  void worker(int w) {
    pinAway(w);
    uint64_t seen = 0;
    for (;;) {
      uint64_t j = job.load(std::memory_order_acquire);
      if (j == seen) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kTgSpinUs);
        for (int spin = 0; j == seen; ++spin) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
          j = job.load(std::memory_order_acquire);
          if ((spin & 255) == 255 && j == seen &&
              (besideCaller(w) || std::chrono::steady_clock::now() > until)) {
            sleeping.fetch_add(1);
            std::unique_lock<std::mutex> lock(mu);
            cv.wait(lock, [&] { return job.load() != seen; });
            lock.unlock();
            sleeping.fetch_sub(1);
            j = job.load(std::memory_order_acquire);
          }
        }
      }
      seen = j;
      if (w + 1 < width.load(std::memory_order_relaxed)) work(j, w + 1);
    }
  }

  /// Runs f(ctx, lo, hi) over [0, total) in `k` chunks on `nt` threads; false (nothing run)
  /// when the pool is busy.
  bool run(int64_t total, int64_t k, int nt, tg_chunk_fn f, void *x) {
    if (busy.exchange(true, std::memory_order_acquire)) return false;
    nt = std::min(nt, kTgMaxThreads);
    k = std::min<int64_t>(k, (int64_t)kTgRangeMask);
    callerCpu.store(tg_cpu(), std::memory_order_relaxed);
#if defined(__linux__)
    if (started == 0 && nt > 1) { // once, before any worker exists to read it
      haveAllowed = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
      for (int i = 0; i < kTgMaxThreads; ++i) pinned[i].store(-1, std::memory_order_relaxed);
    }
#endif
    for (; started < nt - 1; ++started) std::thread([this, w = started] { worker(w); }).detach();
    fn.store(f, std::memory_order_relaxed);
    ctx.store(x, std::memory_order_relaxed);
    n.store(total, std::memory_order_relaxed);
    chunks.store(k, std::memory_order_relaxed);
    width.store(nt, std::memory_order_relaxed);
    // Every chunk of the last job has been counted (the caller waited for them): the counts
    // now are where this job's start.
    int64_t before = 0;
    for (int t = 0; t < nt; ++t) before += ran[t].n.load(std::memory_order_acquire);
    const uint64_t j = ++jobs;
    for (int r = 0; r < nt; ++r) // range r: chunks [k*r/nt, k*(r+1)/nt)
      ranges[r].claim.store((j << (2 * kTgRangeBits)) |
                                ((uint64_t)(k * r / nt) << kTgRangeBits) |
                                (uint64_t)(k * (r + 1) / nt),
                            std::memory_order_relaxed);
    job.store(j); // publishes the job and its ranges (seq_cst, paired with `sleeping`)
    if (sleeping.load() > 0) {
      std::lock_guard<std::mutex> lock(mu);
      cv.notify_all();
    }
    work(j, 0);
    auto finished = [&] {
      int64_t now = 0;
      for (int t = 0; t < nt; ++t) now += ran[t].n.load(std::memory_order_acquire);
      return now - before >= k;
    };
    for (int spin = 0; !finished();) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (spin < (1 << 16)) ++spin;
      else std::this_thread::yield(); // a worker descheduled in the middle of its chunk
    }
    busy.store(false, std::memory_order_release);
    return true;
  }
};
inline tg_pool &tg_the_pool() {
  static tg_pool *p = new tg_pool; // never destroyed: detached workers wait on it until exit
  return *p;
}

/// f(lo, hi) over [0, n), split across the pool when `parallel`, tgk_nt() > 1 and n > 1: in
/// min(n, 4 * threads) chunks, thread t owning the t-th contiguous range of them.
template <class F> void tg_parallel_for(int64_t n, bool parallel, F &&f) {
  const int nt = tgk_nt();
  if (parallel && nt > 1 && n > 1) {
    const int64_t k = std::min<int64_t>(n, 4 * (int64_t)nt);
    auto call = [](void *x, int64_t lo, int64_t hi) { (*static_cast<F *>(x))(lo, hi); };
    if (tg_the_pool().run(n, k, nt, call, (void *)&f)) return;
  }
  if (n > 0) f((int64_t)0, n);
}
)PRELUDE";

} // namespace

const char *poolPrelude() { return kPoolPrelude; }

} // namespace tgc::cpu
