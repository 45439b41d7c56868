// TuneCache.h — the GEMM tuning cache: what the load-time tuner chose for each GEMM step of a
// package on one GPU, kept in a small text file so a later load of the same package on the same
// GPU, driver and libraries applies the same choices instead of tuning anew (faster loads, the
// same latency load after load). See docs/cuda.md ("Tuning cache").
//
// A record is keyed by a hash of everything the choices depend on (the package's plan, which
// names its kernels' and weights' hashes; the device and driver; every GEMM step's candidates,
// so another runtime, plug-in or cuBLASLt build that offers other candidates gets another key;
// the settings that change the choices). The file is a tgc.plan.TuneCacheRecord
// (runtime/schema/plan.proto) in protobuf text format:
//   # tgc GEMM tuning cache ...
//   version: 2
//   key: <the key, decimal>
//   steps { index: <GEMM step index> choice: "<choice>" }    one per GEMM step, in step order
// where <choice> is "cutlass:<config>", "mma:<config>", "lt:<128 hex digits>" (cuBLASLt's
// algorithm, byte for byte) or "none". A file that does not parse, has another version or holds
// a choice the runtime could not have written is ignored (the package is tuned anew and the file
// rewritten); reading it never fails the load.
#ifndef TGC_RUNTIME_CUDA_TUNECACHE_H
#define TGC_RUNTIME_CUDA_TUNECACHE_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tgc::cuda {

struct TuneRecord {
  uint64_t key = 0;
  std::vector<std::pair<int, std::string>> choices; ///< (GEMM step index, choice), step order
};

std::string formatTuneRecord(const TuneRecord &r);
/// Parses a record; false with `why` (the parser's line, or the step) when the text is not one.
bool parseTuneRecord(const std::string &text, TuneRecord &r, std::string &why);

/// The cache file for `key`: $TGC_TUNE_CACHE (a directory), else $TGC_CACHE_DIR/tune, else
/// ~/.cache/tgc/tune; "" with `why` when $TGC_TUNE_CACHE is "off" or no directory can be named.
std::string tuneCachePath(uint64_t key, std::string &why);
/// Reads the record at `path`; false with `why` when there is none or it does not parse or its
/// key is not `key`.
bool readTuneRecord(const std::string &path, uint64_t key, TuneRecord &r, std::string &why);
/// Writes `r` to `path` (creating its directory; written to a temporary file, then renamed);
/// false with `why` on failure.
bool writeTuneRecord(const std::string &path, const TuneRecord &r, std::string &why);

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDA_TUNECACHE_H
