// PackageInfo.h — what a package records about where it came from, and the figures of a written
// package; shared by the CPU and CUDA backends (and their callers) without their heavy headers.
#ifndef TGC_CODEGEN_COMMON_PACKAGEINFO_H
#define TGC_CODEGEN_COMMON_PACKAGEINFO_H

#include <cstdint>
#include <map>
#include <string>

namespace tgc {

/// What the package records about where it came from.
struct PackageInfo {
  std::string target = "cpu";
  std::string tgcVersion;
  std::string modelName;
  std::string modelHash; ///< hex hash of the source model bytes
  std::string precision = "fp32"; ///< --precision: what the package stores inside its f32 edges
  std::map<std::string, int64_t> ruleHits; ///< rule label → times applied (reports only)
};

/// Figures of a written package (for --stats and tgc inspect).
struct PackageStats {
  int64_t kernels = 0;      ///< kernel launches per inference
  int64_t arenaBytes = 0;   ///< activation arena
  int64_t weightBytes = 0;  ///< weights blob
  bool kernelCacheHit = false;
};

} // namespace tgc

#endif // TGC_CODEGEN_COMMON_PACKAGEINFO_H
