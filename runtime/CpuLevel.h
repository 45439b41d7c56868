// CpuLevel.h — which x86-64 instructions a CPU package may use, and whether this CPU has them.
//
// A CPU package's kernels are compiled for one target, recorded in its plan:
//   cpu:x86-64 / -v2 / -v3 / -v4   the psABI microarchitecture levels (baseline; SSE4.2; + AVX2,
//                               FMA, BMI; + AVX-512 F/BW/CD/DQ/VL), portable to any CPU of that level;
//   cpu:native                  -march=native on the compiling machine: runs only on a CPU of
//                               the same vendor, family, model and stepping (cpuSignature());
//   cpu                         (plans before tgc recorded a level) = x86-64-v2.
// `--target=cpu` compiles for the best level the compiling machine has. The runtime refuses a
// package whose instructions this CPU lacks, naming what is missing, instead of dying of SIGILL.
// Shared by the compiler (choosing) and the runtime (checking); no LLVM.
#ifndef TGC_RUNTIME_CPULEVEL_H
#define TGC_RUNTIME_CPULEVEL_H

#include <string>
#include <vector>

namespace tgc {

/// The levels tgc compiles for, lowest first.
const std::vector<std::string> &cpuLevels();
/// Is `level` one of cpuLevels()?
bool isCpuLevel(const std::string &level);
/// The best level this CPU supports ("x86-64" at least; "" when it is not x86-64).
std::string hostCpuLevel();
/// The features of `level` this CPU lacks (empty: it can run such code).
std::vector<std::string> missingCpuFeatures(const std::string &level);
/// "GenuineIntel family 6 model 143 stepping 8": what a cpu:native package is tied to.
std::string cpuSignature();
/// The OpenBLAS core type for this CPU's kernels when OpenBLAS's own CPUID table may not know
/// the model (it falls back to Prescott, SSE3, for one it does not: an Emerald Rapids VM, family
/// 6 model 207, with OpenBLAS 0.3.21): "SkylakeX" on an Intel CPU with AVX-512 (F, BW, CD, DQ,
/// VL), "Haswell" on one with AVX2 and FMA; nullptr otherwise (AMD and others: OpenBLAS's
/// detection goes by family there).
const char *openblasCoreType();

/// Checks a plan's CPU target (`cpu`, `cpu:<level>`, `cpu:native` with the signature it was
/// compiled on) against this CPU: "" when it can run here, else why not.
std::string cpuTargetMismatch(const std::string &target, const std::string &signature);

} // namespace tgc

#endif // TGC_RUNTIME_CPULEVEL_H
