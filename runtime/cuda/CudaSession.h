// CudaSession.h — internal: the CUDA session behind Session::load for "cuda:*" packages.
#ifndef TGC_RUNTIME_CUDA_CUDASESSION_H
#define TGC_RUNTIME_CUDA_CUDASESSION_H

#include "runtime/Session.h"

#include <memory>
#include <string>

namespace tgc::cuda {

/// True when libcuda loads, cuInit succeeds and device $TGC_CUDA_DEVICE (0) exists; then `arch`
/// is its "sm_XY". Otherwise `why` says what is missing (tests skip with it).
bool cudaDeviceAvailable(std::string &why, std::string &arch);

/// True when `path`/plan.pb parses and names a "cuda:" target (anything else: false, and the CPU
/// loader reports what is wrong).
bool isCudaPackage(const std::string &path);

/// Loads a CUDA package: validates it like the CPU loader, then loads libcuda, creates the
/// context, stream, module, buffers and GEMM plans. On failure returns null and sets `st`
/// (e.g. "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)").
std::unique_ptr<Session> loadCudaSession(const std::string &path, Status &st);

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDA_CUDASESSION_H
