// PackageFiles.h — reading a package's files, shared by the CPU and CUDA sessions: bounded
// whole-file reads, file-name and size checks, and the plan header checks (magic, format
// version, end marker, self-checksum); also the one-run-at-a-time guard both sessions use.
// Internal to //runtime.
#ifndef TGC_RUNTIME_PACKAGEFILES_H
#define TGC_RUNTIME_PACKAGEFILES_H

#include "runtime/schema/plan.pb.h"
#include "runtime/Session.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tgc {

/// Holds a session's "running" flag for one run; `acquired` is false when another run holds it
/// (the run is then refused with kConcurrentRun).
struct RunGuard {
  std::atomic<bool> &flag;
  bool acquired;
  explicit RunGuard(std::atomic<bool> &f) : flag(f), acquired(!f.exchange(true)) {}
  ~RunGuard() {
    if (acquired)
      flag.store(false);
  }
};
inline constexpr const char *kConcurrentRun =
    "this session is already running on another thread (a session owns one arena: use one "
    "Session per thread)";

/// Largest arena or weights blob a package may ask for (1 TiB): beyond it the plan is corrupt.
constexpr int64_t kMaxBufferBytes = int64_t(1) << 40;

/// Plain file name inside the package (no directories, no "..").
bool plainFileName(const std::string &s);

/// Bytes of a tensor; -1 when a dim is negative or the product overflows kMaxBufferBytes.
int64_t bytesOf(DType t, const std::vector<int64_t> &shape);

/// Reads a whole regular file of at most `limit` bytes; `what` ("plan", "weights", ...) names
/// it in errors.
Status readWhole(const std::string &path, int64_t limit, std::string &out, const char *what);

/// Reads `dir`/plan.pb and checks its header: parses, magic, format version, end marker and
/// self-checksum. Errors name plan.pb and what is wrong (no package prefix).
Status readPlan(const std::string &dir, plan::Plan &p);

/// Whether `dir`/plan.pb parses as a bucketed plan (it has buckets, or format 4 or 5, a decode
/// package's): then `top`
/// holds it, unchecked (readPlan checks it). Anything else is for the single-shape loaders,
/// which report what is wrong.
bool peekBucketedPlan(const std::string &dir, plan::Plan &top);

/// Each output's source: a valid argument (`checkArg`: the session's own range check), exactly
/// the output's size (`outBytes`), and never another output's buffer. Errors start with `pre`.
Status checkOutputSources(
    const plan::Plan &p, const std::vector<int64_t> &outBytes, const std::string &pre,
    const std::function<Status(const plan::BufferArg &, const std::string &)> &checkArg);

} // namespace tgc

#endif // TGC_RUNTIME_PACKAGEFILES_H
