// CudaSession.h — internal: the CUDA session behind Session::load for "cuda:*" packages.
#ifndef TGC_RUNTIME_CUDA_CUDASESSION_H
#define TGC_RUNTIME_CUDA_CUDASESSION_H

#include "runtime/Session.h"

#include <memory>
#include <string>

namespace tgc {
class BucketBackend;
} // namespace tgc

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

/// `tgc inspect` without a GPU: validates the package like loadCudaSession (plan, weights,
/// kernels, every argument's range) and describes its plan; the GPU-side choices (GEMM
/// candidates, graph) are made only when a session loads on a GPU. `why` says why there is none.
/// A bucketed package: its symbols and buckets, and every bucket validated.
/// Empty with `st` set when the package is invalid.
std::string describeCudaPackageWithoutGpu(const std::string &path, const std::string &why,
                                          Status &st);

/// The CUDA part of a bucketed package's session (runtime/BucketSession.h; CudaBucket.cpp).
std::unique_ptr<BucketBackend> makeCudaBucketBackend();

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDA_CUDASESSION_H
