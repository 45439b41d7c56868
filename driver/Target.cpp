// Target.cpp — parsing and naming targets and precisions (see Target.h).
#include "driver/Target.h"

#include "codegen/cuda/CudaBackend.h"
#include "runtime/CpuLevel.h"

namespace tgc {

llvm::StringRef precisionName(Precision p) {
  switch (p) {
  case Precision::FP16:
    return "fp16";
  case Precision::BF16:
    return "bf16";
  case Precision::FP32:
    break;
  }
  return "fp32";
}

llvm::Expected<Precision> parsePrecision(llvm::StringRef text) {
  for (Precision p : {Precision::FP32, Precision::FP16, Precision::BF16})
    if (text == precisionName(p))
      return p;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "--precision must be fp32, fp16 or bf16, not '%s'",
                                 text.str().c_str());
}

llvm::Expected<Target> parseTarget(llvm::StringRef text) {
  if (text == "cpu" || text.startswith("cpu:")) {
    std::string level = text == "cpu" ? hostCpuLevel() : text.drop_front(4).str();
    if (level.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--target=cpu: this machine is not x86-64 (the CPU backend "
                                     "generates x86-64 code)");
    if (level != "native" && !isCpuLevel(level)) {
      std::string known;
      for (const auto &l : cpuLevels())
        known += "cpu:" + l + ", ";
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "unknown CPU target '%s' (use cpu, %scpu:native)",
                                     text.str().c_str(), known.c_str());
    }
    return Target{Target::Kind::Cpu, level};
  }
  auto arch = cudaArchOf(text.str());
  if (!arch)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s (use --target=cpu or --target=cuda:sm_90)",
                                   llvm::toString(arch.takeError()).c_str());
  return Target{Target::Kind::Cuda, *arch};
}

} // namespace tgc
