// Nvrtc.h — compiles CUDA C++ to cubin + PTX with NVRTC, loaded at run time (dlopen).
//
// NVRTC is opened on first use rather than linked, so `tgc` starts (and compiles CPU packages)
// on machines without the CUDA toolkit; only compiling for a CUDA target needs it. Search order:
// $TGC_NVRTC, /usr/local/cuda/lib64/libnvrtc.so.13, then the loader's path (libnvrtc.so.13,
// libnvrtc.so.12, libnvrtc.so).
#ifndef TGC_CODEGEN_CUDA_NVRTC_H
#define TGC_CODEGEN_CUDA_NVRTC_H

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace tgc::cuda {

/// Output of one NVRTC compilation.
struct NvrtcOutput {
  std::string cubin; ///< machine code for the requested sm_XY
  std::string ptx;   ///< PTX of the same program (JIT fallback for newer GPUs)
  std::string log;   ///< compiler log (warnings)
};

/// "13.0" for the loaded NVRTC, or an error when it cannot be loaded.
llvm::Expected<std::string> nvrtcVersion();

/// Directory holding the CUDA headers NVRTC lacks built in (cuda_fp16.h, cuda_bf16.h), for
/// `-I`: $TGC_CUDA_INCLUDE, else `<dir of the loaded libnvrtc>/../include` (and
/// `../../include` for targets/<arch>/lib layouts), else /usr/local/cuda/include; the first that
/// holds cuda_fp16.h. Error when none does.
llvm::Expected<std::string> cudaIncludeDir();

/// Compiles `source` (named `name` in messages) for `arch` ("sm_90") with `options` added to
/// `--gpu-architecture`. Errors quote the compiler log.
llvm::Expected<NvrtcOutput> nvrtcCompile(const std::string &source, const std::string &name,
                                         const std::string &arch,
                                         const std::vector<std::string> &options);

} // namespace tgc::cuda

#endif // TGC_CODEGEN_CUDA_NVRTC_H
