// CudaApi.cpp — dlopen + dlsym of the driver API, cuBLASLt and the CUTLASS plug-in, once per
// process.
#include "runtime/cuda/CudaApi.h"
#include "runtime/Env.h"

#include <cstdlib>
#include <dlfcn.h>
#include <unistd.h>
#include <mutex>
#include <type_traits>
#include <vector>

namespace tgc::cuda {

namespace {

/// The first of `names` that dlopen loads (its name in `opened`, when given), or null.
void *openFirst(const std::vector<std::string> &names, std::string *opened = nullptr) {
  for (const auto &n : names)
    if (void *h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      if (opened)
        *opened = n;
      return h;
    }
  return nullptr;
}

/// Resolves `fn` from `dl` under the first of `names` that exists; records misses in `missing`.
template <class F>
void resolve(void *dl, F &fn, std::initializer_list<const char *> names, std::string &missing) {
  fn = nullptr;
  for (const char *n : names)
    if ((fn = reinterpret_cast<F>(dlsym(dl, n))))
      return;
  missing += std::string(missing.empty() ? "" : ", ") + *names.begin();
}

std::vector<std::string> candidates(const char *env, std::initializer_list<const char *> names) {
  std::vector<std::string> out;
  if (const char *e = std::getenv(env); e && *e)
    out.push_back(e);
  out.insert(out.end(), names.begin(), names.end());
  return out;
}

/// The library table T, filled once per process by `load` (which returns "" or why it could
/// not); every call returns it, or null with `error` set to that reason.
template <class T> const T *loadOnce(std::string &error, std::string (*load)(T &)) {
  static T t;
  static std::string err;
  static std::once_flag once;
  std::call_once(once, [&] { err = load(t); });
  if (!err.empty())
    error = err;
  return err.empty() ? &t : nullptr;
}

/// Loads Driver for loadOnce: "" or why not.
std::string openDriver(Driver &d) {
  void *dl = openFirst(candidates("TGC_LIBCUDA", {"libcuda.so.1", "libcuda.so"}));
  if (!dl)
    return "cannot load the CUDA driver (libcuda.so.1): no NVIDIA driver on this machine?";
  std::string missing;
  resolve(dl, d.cuInit, {"cuInit"}, missing);
  resolve(dl, d.cuGetErrorName, {"cuGetErrorName"}, missing);
  resolve(dl, d.cuGetErrorString, {"cuGetErrorString"}, missing);
  resolve(dl, d.cuDeviceGetCount, {"cuDeviceGetCount"}, missing);
  resolve(dl, d.cuDeviceGet, {"cuDeviceGet"}, missing);
  resolve(dl, d.cuDeviceGetName, {"cuDeviceGetName"}, missing);
  resolve(dl, d.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, missing);
  resolve(dl, d.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, missing);
  resolve(dl, d.cuDevicePrimaryCtxRelease,
          {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, missing);
  resolve(dl, d.cuCtxSetCurrent, {"cuCtxSetCurrent"}, missing);
  resolve(dl, d.cuModuleLoadData, {"cuModuleLoadData"}, missing);
  resolve(dl, d.cuModuleUnload, {"cuModuleUnload"}, missing);
  resolve(dl, d.cuModuleGetFunction, {"cuModuleGetFunction"}, missing);
  resolve(dl, d.cuMemAlloc, {"cuMemAlloc_v2"}, missing);
  resolve(dl, d.cuMemFree, {"cuMemFree_v2"}, missing);
  resolve(dl, d.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}, missing);
  resolve(dl, d.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"}, missing);
  resolve(dl, d.cuMemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"}, missing);
  resolve(dl, d.cuMemsetD8, {"cuMemsetD8_v2"}, missing);
  resolve(dl, d.cuMemsetD32Async, {"cuMemsetD32Async"}, missing);
  resolve(dl, d.cuMemsetD8Async, {"cuMemsetD8Async"}, missing);
  resolve(dl, d.cuMemAllocHost, {"cuMemAllocHost_v2"}, missing);
  resolve(dl, d.cuMemFreeHost, {"cuMemFreeHost"}, missing);
  resolve(dl, d.cuLaunchKernel, {"cuLaunchKernel"}, missing);
  resolve(dl, d.cuFuncSetAttribute, {"cuFuncSetAttribute"}, missing);
  resolve(dl, d.cuStreamCreate, {"cuStreamCreate"}, missing);
  resolve(dl, d.cuStreamDestroy, {"cuStreamDestroy_v2"}, missing);
  resolve(dl, d.cuStreamSynchronize, {"cuStreamSynchronize"}, missing);
  resolve(dl, d.cuStreamBeginCapture, {"cuStreamBeginCapture_v2"}, missing);
  resolve(dl, d.cuStreamEndCapture, {"cuStreamEndCapture"}, missing);
  resolve(dl, d.cuGraphInstantiate, {"cuGraphInstantiateWithFlags"}, missing);
  resolve(dl, d.cuGraphLaunch, {"cuGraphLaunch"}, missing);
  resolve(dl, d.cuGraphDestroy, {"cuGraphDestroy"}, missing);
  resolve(dl, d.cuGraphExecDestroy, {"cuGraphExecDestroy"}, missing);
  resolve(dl, d.cuEventCreate, {"cuEventCreate"}, missing);
  resolve(dl, d.cuEventDestroy, {"cuEventDestroy_v2"}, missing);
  resolve(dl, d.cuEventRecord, {"cuEventRecord"}, missing);
  resolve(dl, d.cuEventSynchronize, {"cuEventSynchronize"}, missing);
  resolve(dl, d.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, missing);
  if (!missing.empty())
    return "the CUDA driver lacks " + missing + " (driver too old?)";
  std::string optional;
  resolve(dl, d.cuLaunchKernelEx, {"cuLaunchKernelEx"}, optional);
  resolve(dl, d.cuDriverGetVersion, {"cuDriverGetVersion"}, optional);
  resolve(dl, d.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, optional);
  resolve(dl, d.cuStreamGetCaptureInfo, {"cuStreamGetCaptureInfo_v3"}, optional);
  resolve(dl, d.cuStreamUpdateCaptureDependencies, {"cuStreamUpdateCaptureDependencies_v2"},
          optional);
  resolve(dl, d.cuGraphConditionalHandleCreate, {"cuGraphConditionalHandleCreate"}, optional);
  resolve(dl, d.cuGraphAddNode, {"cuGraphAddNode_v2"}, optional);
  resolve(dl, d.cuStreamBeginCaptureToGraph, {"cuStreamBeginCaptureToGraph"}, optional);
  return "";
}

/// Loads BlasLt for loadOnce: "" or why not.
std::string openBlasLt(BlasLt &b) {
  if (const char *off = tgc::envValue(tgc::Env::NoCublasLt); off && *off && *off != '0')
    return "cuBLASLt disabled by $TGC_NO_CUBLASLT";
  void *dl = openFirst(candidates(
      "TGC_CUBLASLT", {"libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.13"}));
  if (!dl)
    return "cannot load cuBLASLt (libcublasLt.so.13; set $TGC_CUBLASLT)";
  std::string missing;
  resolve(dl, b.create, {"cublasLtCreate"}, missing);
  resolve(dl, b.destroy, {"cublasLtDestroy"}, missing);
  resolve(dl, b.statusString, {"cublasLtGetStatusString"}, missing);
  resolve(dl, b.descCreate, {"cublasLtMatmulDescCreate"}, missing);
  resolve(dl, b.descDestroy, {"cublasLtMatmulDescDestroy"}, missing);
  resolve(dl, b.descSet, {"cublasLtMatmulDescSetAttribute"}, missing);
  resolve(dl, b.layoutCreate, {"cublasLtMatrixLayoutCreate"}, missing);
  resolve(dl, b.layoutDestroy, {"cublasLtMatrixLayoutDestroy"}, missing);
  resolve(dl, b.layoutSet, {"cublasLtMatrixLayoutSetAttribute"}, missing);
  resolve(dl, b.prefCreate, {"cublasLtMatmulPreferenceCreate"}, missing);
  resolve(dl, b.prefDestroy, {"cublasLtMatmulPreferenceDestroy"}, missing);
  resolve(dl, b.prefSet, {"cublasLtMatmulPreferenceSetAttribute"}, missing);
  resolve(dl, b.heuristic, {"cublasLtMatmulAlgoGetHeuristic"}, missing);
  resolve(dl, b.matmul, {"cublasLtMatmul"}, missing);
  if (!missing.empty())
    return "cuBLASLt lacks " + missing;
  return "";
}

/// Loads Cudnn for loadOnce: "" or why not.
std::string openCudnn(Cudnn &c) {
  if (const char *env = tgc::envValue(tgc::Env::Cudnn); env && std::string(env) == "off")
    return "off ($TGC_CUDNN=off)";
  void *dl = openFirst(
      candidates("TGC_CUDNN", {"libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9"}), &c.path);
  if (!dl)
    return "cannot load cuDNN (libcudnn.so.9; set $TGC_CUDNN)";
  c.dl = dl;
  std::string missing;
  resolve(dl, c.getVersion, {"cudnnGetVersion"}, missing);
  resolve(dl, c.errorString, {"cudnnGetErrorString"}, missing);
  resolve(dl, c.create, {"cudnnCreate"}, missing);
  resolve(dl, c.destroy, {"cudnnDestroy"}, missing);
  resolve(dl, c.setStream, {"cudnnSetStream"}, missing);
  resolve(dl, c.createTensor, {"cudnnCreateTensorDescriptor"}, missing);
  resolve(dl, c.setTensorNd, {"cudnnSetTensorNdDescriptor"}, missing);
  resolve(dl, c.destroyTensor, {"cudnnDestroyTensorDescriptor"}, missing);
  resolve(dl, c.createFilter, {"cudnnCreateFilterDescriptor"}, missing);
  resolve(dl, c.setFilterNd, {"cudnnSetFilterNdDescriptor"}, missing);
  resolve(dl, c.destroyFilter, {"cudnnDestroyFilterDescriptor"}, missing);
  resolve(dl, c.createConv, {"cudnnCreateConvolutionDescriptor"}, missing);
  resolve(dl, c.setConvNd, {"cudnnSetConvolutionNdDescriptor"}, missing);
  resolve(dl, c.setConvGroups, {"cudnnSetConvolutionGroupCount"}, missing);
  resolve(dl, c.setConvMath, {"cudnnSetConvolutionMathType"}, missing);
  resolve(dl, c.destroyConv, {"cudnnDestroyConvolutionDescriptor"}, missing);
  resolve(dl, c.createActivation, {"cudnnCreateActivationDescriptor"}, missing);
  resolve(dl, c.setActivation, {"cudnnSetActivationDescriptor"}, missing);
  resolve(dl, c.destroyActivation, {"cudnnDestroyActivationDescriptor"}, missing);
  resolve(dl, c.getAlgorithms, {"cudnnGetConvolutionForwardAlgorithm_v7"}, missing);
  resolve(dl, c.workspaceSize, {"cudnnGetConvolutionForwardWorkspaceSize"}, missing);
  resolve(dl, c.forwardBiasActivation, {"cudnnConvolutionBiasActivationForward"}, missing);
  if (!missing.empty())
    return c.path + " lacks " + missing;
  if (c.getVersion() < 90000)
    return c.path + " is cuDNN " + std::to_string(c.getVersion()) + "; tgc needs 9 or later";
  return "";
}

} // namespace

std::string runtimeModulePath() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&runtimeModulePath), &info) || !info.dli_fname)
    return "";
  // The executable's name is argv[0]: without a '/' it was found through $PATH.
  std::string self = info.dli_fname;
  char buf[4096] = {0};
  if (self.find('/') == std::string::npos)
    self = readlink("/proc/self/exe", buf, sizeof buf - 1) > 0 ? buf : self;
  else if (realpath(self.c_str(), buf))
    self = buf;
  return self;
}

namespace {

/// Loads CutlassLib for loadOnce: "" or why not.
std::string openCutlass(CutlassLib &c) {
  const char *env = tgc::envValue(tgc::Env::Cutlass);
  std::string path;
  if (env && *env) {
    path = env;
  } else {
    const std::string self = runtimeModulePath();
    if (self.empty())
      return "cannot locate the runtime's own module (dladdr) to find libtgc_cutlass_sm90.so";
    path = self.substr(0, self.rfind('/') + 1) + "libtgc_cutlass_sm90.so";
  }
  void *dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *why = dlerror();
    return "cannot load the CUTLASS GEMM plug-in " + path + ": " + (why ? why : "?") +
           " (set $TGC_CUTLASS)";
  }
  std::string missing;
  resolve(dl, c.abi, {"tgc_cutlass_abi"}, missing);
  resolve(dl, c.check, {"tgc_cutlass_gemm_check"}, missing);
  resolve(dl, c.create, {"tgc_cutlass_gemm_create"}, missing);
  resolve(dl, c.run, {"tgc_cutlass_gemm_run"}, missing);
  resolve(dl, c.destroy, {"tgc_cutlass_gemm_destroy"}, missing);
  if (!missing.empty())
    return path + " lacks " + missing;
  if (c.abi() != TGC_CUTLASS_ABI)
    return path + " has ABI " + std::to_string(c.abi()) + ", this runtime needs " +
           std::to_string(TGC_CUTLASS_ABI);
  c.path = path;
  return "";
}

} // namespace

const Driver *loadDriver(std::string &error) { return loadOnce(error, openDriver); }
const BlasLt *loadBlasLt(std::string &error) { return loadOnce(error, openBlasLt); }
const CutlassLib *loadCutlass(std::string &error) { return loadOnce(error, openCutlass); }
const Cudnn *loadCudnn(std::string &error) { return loadOnce(error, openCudnn); }
std::string check(const Driver &d, CUresult r, const char *call) {
  if (r == CUDA_SUCCESS)
    return "";
  const char *name = nullptr, *desc = nullptr;
  d.cuGetErrorName(r, &name);
  d.cuGetErrorString(r, &desc);
  return std::string(call) + ": " + (name ? name : "CUDA error " + std::to_string((int)r)) +
         " (" + (desc ? desc : "no description") + ")";
}

} // namespace tgc::cuda
