// CpuLevel.cpp — x86-64 levels and the CPU's features (see CpuLevel.h). Features are read with
// the compiler's __builtin_cpu_supports (CPUID, with the OS's XSAVE support for AVX state taken
// into account), the signature with CPUID directly.
#include "runtime/CpuLevel.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cstring>

namespace tgc {

namespace {

/// The features each level adds (x86-64 psABI), as __builtin_cpu_supports names them.
struct Level {
  const char *name;
  std::vector<const char *> adds;
};

const std::vector<Level> &levels() {
  static const std::vector<Level> table = {
      {"x86-64", {}},
      {"x86-64-v2", {"popcnt", "sse3", "ssse3", "sse4.1", "sse4.2"}},
      {"x86-64-v3", {"avx", "avx2", "bmi", "bmi2", "fma"}},
      {"x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}},
  };
  return table;
}

bool supports(const char *feature) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  // __builtin_cpu_supports needs a literal: one case per name in the table.
#define TGC_FEATURE(name)                                                                          \
  if (!std::strcmp(feature, name))                                                                 \
    return __builtin_cpu_supports(name);
  TGC_FEATURE("popcnt")
  TGC_FEATURE("sse3")
  TGC_FEATURE("ssse3")
  TGC_FEATURE("sse4.1")
  TGC_FEATURE("sse4.2")
  TGC_FEATURE("avx")
  TGC_FEATURE("avx2")
  TGC_FEATURE("bmi")
  TGC_FEATURE("bmi2")
  TGC_FEATURE("fma")
  TGC_FEATURE("avx512f")
  TGC_FEATURE("avx512bw")
  TGC_FEATURE("avx512cd")
  TGC_FEATURE("avx512dq")
  TGC_FEATURE("avx512vl")
#undef TGC_FEATURE
#endif
  (void)feature;
  return false;
}

} // namespace

const std::vector<std::string> &cpuLevels() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Level &l : levels())
      v.push_back(l.name);
    return v;
  }();
  return names;
}

bool isCpuLevel(const std::string &level) {
  for (const auto &l : cpuLevels())
    if (l == level)
      return true;
  return false;
}

std::vector<std::string> missingCpuFeatures(const std::string &level) {
  std::vector<std::string> missing;
  for (const Level &l : levels()) {
    for (const char *f : l.adds)
      if (!supports(f))
        missing.push_back(f);
    if (level == l.name)
      break;
  }
  return missing;
}

std::string hostCpuLevel() {
  std::string best;
  for (const auto &l : cpuLevels()) {
    if (!missingCpuFeatures(l).empty())
      break;
    best = l;
  }
  return best;
}

std::string cpuSignature() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d))
    return "unknown x86-64";
  char vendor[13];
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  vendor[12] = 0;
  __get_cpuid(1, &a, &b, &c, &d);
  unsigned family = (a >> 8) & 0xf, model = (a >> 4) & 0xf, stepping = a & 0xf;
  if (family == 0xf)
    family += (a >> 20) & 0xff;
  if (family == 0x6 || family >= 0xf)
    model += ((a >> 16) & 0xf) << 4;
  return std::string(vendor) + " family " + std::to_string(family) + " model " +
         std::to_string(model) + " stepping " + std::to_string(stepping);
#else
  return "not x86-64";
#endif
}

const char *openblasCoreType() {
  if (cpuSignature().rfind("GenuineIntel ", 0) != 0)
    return nullptr;
  if (missingCpuFeatures("x86-64-v4").empty())
    return "SkylakeX";
  if (missingCpuFeatures("x86-64-v3").empty())
    return "Haswell";
  return nullptr;
}

std::string cpuTargetMismatch(const std::string &target, const std::string &signature) {
  std::string level = "x86-64-v2"; // "cpu": plans from before levels were recorded
  if (target.rfind("cpu:", 0) == 0)
    level = target.substr(4);
  else if (target != "cpu")
    return "target '" + target + "' is not a CPU target";
  if (level == "native") {
    const std::string here = cpuSignature();
    if (signature != here)
      return "its kernels were compiled with --target=cpu:native on a " +
             (signature.empty() ? std::string("CPU not recorded") : signature) +
             "; this CPU is a " + here +
             " (recompile here, or for a level both have: --target=cpu:x86-64-v2/v3/v4)";
    return "";
  }
  if (!isCpuLevel(level))
    return "unknown CPU target '" + target + "'";
  auto missing = missingCpuFeatures(level);
  if (missing.empty())
    return "";
  std::string list;
  for (const auto &f : missing)
    list += (list.empty() ? "" : ", ") + f;
  return "its kernels need " + level + " instructions this CPU lacks (" + list +
         "); recompile with --target=cpu" +
         (hostCpuLevel().empty() ? std::string() : ":" + hostCpuLevel());
}

} // namespace tgc
