// Target.h — what a package is compiled for, as types: the target (CPU, or CUDA with an SM
// architecture) and the precision, each parsed and validated once (parseTarget, parsePrecision)
// where text enters (the CLI, tests); the driver and passes see only these values.
#ifndef TGC_DRIVER_TARGET_H
#define TGC_DRIVER_TARGET_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace tgc {

/// The element precision a package computes in (fp16/bf16: storage in the half type, math and
/// accumulation in fp32; CUDA only).
enum class Precision { FP32, FP16, BF16 };

/// "fp32", "fp16" or "bf16" (as written in packages and on the command line).
llvm::StringRef precisionName(Precision p);
/// Refuses anything but fp32, fp16 and bf16, naming the value.
llvm::Expected<Precision> parsePrecision(llvm::StringRef text);

/// The machine a package runs on.
struct Target {
  enum class Kind { Cpu, Cuda };
  Kind kind = Kind::Cpu;
  /// CUDA: the SM architecture ("sm_90"); CPU: the x86-64 level ("x86-64-v3", runtime/CpuLevel.h)
  /// or "native". A default Target is the baseline CPU level, which runs anywhere.
  std::string arch = "x86-64-v2";

  bool isCuda() const { return kind == Kind::Cuda; }
  /// "cpu:<level>" or "cuda:<arch>" (as packages record it).
  std::string str() const { return (isCuda() ? "cuda:" : "cpu:") + arch; }
};

/// "cpu" (the best x86-64 level of the compiling machine), "cpu:x86-64[-v2|-v3|-v4]",
/// "cpu:native", or "cuda:sm_XY" with an architecture the CUDA backend generates code for;
/// anything else is refused, naming the value and the supported ones.
llvm::Expected<Target> parseTarget(llvm::StringRef text);

} // namespace tgc

#endif // TGC_DRIVER_TARGET_H
