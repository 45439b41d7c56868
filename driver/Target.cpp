// Target.cpp — parsing and naming targets and precisions (see Target.h).
#include "driver/Target.h"

#include "codegen/cuda/CudaBackend.h"

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
  if (text == "cpu")
    return Target{};
  auto arch = cudaArchOf(text.str());
  if (!arch)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s (use --target=cpu or --target=cuda:sm_90)",
                                   llvm::toString(arch.takeError()).c_str());
  return Target{Target::Kind::Cuda, *arch};
}

} // namespace tgc
