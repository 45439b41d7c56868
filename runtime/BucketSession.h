// BucketSession.h — the session of a bucketed package: one package serves a range of shapes
// (docs/runtime.md, "Bucketed packages").
//
// A bucketed package holds one top-level plan (the interface at the maxima, the symbols, the
// shared weights, arena_bytes = the largest bucket's) and one full plan per bucket. The session
// loads and checks the weights once, allocates one arena, and runs every bucket through the
// target's own session (CpuSession, CudaSession) built from the nested plan on those shared
// buffers. A run binds the symbols from the caller's shapes, picks the smallest bucket that
// fits, pads the inputs with zeros to it (no copy when the shape is already the bucket's), fills
// the length inputs, runs that bucket and cuts every output back to the run's values. The
// target-specific part (where weights and arena live, how a bucket session is made) is a
// BucketBackend. Internal to //runtime; callers see only Session.
#ifndef TGC_RUNTIME_BUCKETSESSION_H
#define TGC_RUNTIME_BUCKETSESSION_H

#include "runtime/Session.h"
#include "runtime/schema/plan.pb.h"

#include <memory>
#include <string>

namespace tgc {

/// One target's part of a bucketed session: the shared weights and arena, and each bucket's
/// session on them (the CPU's in runtime/Session.cpp, CUDA's in runtime/cuda/CudaBucket.cpp).
/// The bucket sessions it makes borrow its buffers: they must be destroyed before it.
class BucketBackend {
public:
  virtual ~BucketBackend() = default;
  /// Reads and checks the package's weights once (`top`'s weights_file: size and checksum),
  /// keeps them where the kernels read them, and allocates the one arena of
  /// top.arena_bytes() and, for a decode package, each of top.states() (zeroed), which the
  /// sessions it makes resolve STATE arguments to. Errors start with `pre`.
  virtual Status init(const std::string &dir, const plan::Plan &top, const std::string &pre) = 0;
  /// Bucket plan `b`'s session (or a decode package's step plan's) on the shared weights, arena
  /// and states, validated as a single package is (kernels file and checksum, every step's
  /// ranges, STATE ones against the states); null with `st` set (starting with `pre`) when it
  /// is refused.
  virtual std::unique_ptr<Session> loadBucket(const std::string &dir, const plan::Plan &b,
                                              const std::string &pre, Status &st) = 0;
  /// Before a run of bucket `b` when the last run was another bucket's: zeroes the part of
  /// the arena `b` uses, so that every bucket starts from the arena a single package has.
  virtual Status switchTo(const plan::Plan &b) = 0;
  /// A decode package's new sequence: zeroes every state (ordered before the next run).
  virtual Status resetStates() = 0;
  /// Lines for describe(): the device, and the weights and arena held once.
  virtual std::string describe() const = 0;
};

/// The CPU's BucketBackend (runtime/Session.cpp); `numThreads` as Session::load's.
std::unique_ptr<BucketBackend> makeCpuBucketBackend(int numThreads);

/// Loads the bucketed package at `path` whose top-level plan `top` passed readPlan (a format 4
/// plan with buckets, or a format 5 decode package): checks it (checkBucketedPlan, and
/// checkDecodePlan for a decode package), then the backend's weights, arena and states, then
/// every bucket and the step plan. A decode package's session also generates (Session::prefill,
/// step, generate). Null with `st` set on failure.
std::unique_ptr<Session> loadBucketSession(const std::string &path, const plan::Plan &top,
                                           std::unique_ptr<BucketBackend> backend, Status &st);

/// A bucketed plan as text, for describe() and `tgc inspect`: its header, symbols, interface
/// (each varying axis as its symbol and range), shared weights and arena, and the bucket table:
/// each bucket's values, arena bytes, steps and kernels file, and that one arena of the
/// largest bucket's size serves them all.
std::string describeBuckets(const plan::Plan &top);

/// A decode package's part of describeBuckets: the decode info, the states and the step plan's
/// summary ("" for any other plan).
std::string describeDecode(const plan::Plan &top);

} // namespace tgc

#endif // TGC_RUNTIME_BUCKETSESSION_H
