// CudaApi.h — the CUDA driver API and cuBLASLt, loaded at run time (dlopen).
//
// Nothing links libcuda or libcublasLt: the runtime (and `tgc`) start on machines without a GPU,
// and only a CUDA session needs the libraries. Every call's result goes through `check`, which
// turns a failure into a message naming the call and the driver's error name and string.
#ifndef TGC_RUNTIME_CUDA_CUDAAPI_H
#define TGC_RUNTIME_CUDA_CUDAAPI_H

#include "runtime/cuda/cutlass/CutlassGemm.h"

#include <cublasLt.h>
#include <cuda.h>
#include <cudnn.h>

#include <string>

namespace tgc::cuda {

/// The driver functions the runtime uses (versioned symbols resolved by name).
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuMemAllocHost)(void **, size_t);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  /// Optional (null on drivers before CUDA 12): launches with attributes (programmatic
  /// dependent launch).
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **) = nullptr;
  /// Optional: the driver's CUDA version (keys the GEMM tuning cache).
  CUresult (*cuDriverGetVersion)(int *) = nullptr;
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamBeginCapture)(CUstream, CUstreamCaptureMode);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphDestroy)(CUgraph);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  // Optional (null on drivers before CUDA 12.4): what a LOOP step needs (cuda/CudaLoop.cpp): a
  // conditional WHILE node added to the graph being captured, its body captured into it.
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuStreamGetCaptureInfo)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                                     const CUgraphNode **, const CUgraphEdgeData **,
                                     size_t *) = nullptr;
  CUresult (*cuStreamUpdateCaptureDependencies)(CUstream, CUgraphNode *, const CUgraphEdgeData *,
                                                size_t, unsigned) = nullptr;
  CUresult (*cuGraphConditionalHandleCreate)(CUgraphConditionalHandle *, CUgraph, CUcontext,
                                             unsigned, unsigned) = nullptr;
  CUresult (*cuGraphAddNode)(CUgraphNode *, CUgraph, const CUgraphNode *, const CUgraphEdgeData *,
                             size_t, CUgraphNodeParams *) = nullptr;
  CUresult (*cuStreamBeginCaptureToGraph)(CUstream, CUgraph, const CUgraphNode *,
                                          const CUgraphEdgeData *, size_t,
                                          CUstreamCaptureMode) = nullptr;
};

/// The cuBLASLt functions the runtime uses.
struct BlasLt {
  cublasStatus_t (*create)(cublasLtHandle_t *);
  cublasStatus_t (*destroy)(cublasLtHandle_t);
  const char *(*statusString)(cublasStatus_t);
  cublasStatus_t (*descCreate)(cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType_t);
  cublasStatus_t (*descDestroy)(cublasLtMatmulDesc_t);
  cublasStatus_t (*descSet)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void *,
                            size_t);
  cublasStatus_t (*layoutCreate)(cublasLtMatrixLayout_t *, cudaDataType, uint64_t, uint64_t,
                                 int64_t);
  cublasStatus_t (*layoutDestroy)(cublasLtMatrixLayout_t);
  cublasStatus_t (*layoutSet)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t,
                              const void *, size_t);
  cublasStatus_t (*prefCreate)(cublasLtMatmulPreference_t *);
  cublasStatus_t (*prefDestroy)(cublasLtMatmulPreference_t);
  cublasStatus_t (*prefSet)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                            const void *, size_t);
  cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                              cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                              cublasLtMatmulHeuristicResult_t *, int *);
  cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
                           cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t,
                           const void *, const void *, cublasLtMatrixLayout_t, void *,
                           cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,
                           cudaStream_t);
};

/// The cuDNN 9 functions the runtime's CONV steps use (the convolution API of cudnn_cnn.h: one
/// call applies bias, ReLU and a residual; docs/decisions.md says why not the graph API yet).
/// Attention goes through cuDNN's graph API by way of its frontend (CudaSdpa.cpp), which
/// resolves its own functions from `dl`.
struct Cudnn {
  void *dl = nullptr; ///< the dlopen handle
  size_t (*getVersion)(void);
  const char *(*errorString)(cudnnStatus_t);
  cudnnStatus_t (*create)(cudnnHandle_t *);
  cudnnStatus_t (*destroy)(cudnnHandle_t);
  cudnnStatus_t (*setStream)(cudnnHandle_t, cudaStream_t);
  cudnnStatus_t (*createTensor)(cudnnTensorDescriptor_t *);
  cudnnStatus_t (*setTensorNd)(cudnnTensorDescriptor_t, cudnnDataType_t, int, const int[],
                               const int[]);
  cudnnStatus_t (*destroyTensor)(cudnnTensorDescriptor_t);
  cudnnStatus_t (*createFilter)(cudnnFilterDescriptor_t *);
  cudnnStatus_t (*setFilterNd)(cudnnFilterDescriptor_t, cudnnDataType_t, cudnnTensorFormat_t, int,
                               const int[]);
  cudnnStatus_t (*destroyFilter)(cudnnFilterDescriptor_t);
  cudnnStatus_t (*createConv)(cudnnConvolutionDescriptor_t *);
  cudnnStatus_t (*setConvNd)(cudnnConvolutionDescriptor_t, int, const int[], const int[],
                             const int[], cudnnConvolutionMode_t, cudnnDataType_t);
  cudnnStatus_t (*setConvGroups)(cudnnConvolutionDescriptor_t, int);
  cudnnStatus_t (*setConvMath)(cudnnConvolutionDescriptor_t, cudnnMathType_t);
  cudnnStatus_t (*destroyConv)(cudnnConvolutionDescriptor_t);
  cudnnStatus_t (*createActivation)(cudnnActivationDescriptor_t *);
  cudnnStatus_t (*setActivation)(cudnnActivationDescriptor_t, cudnnActivationMode_t,
                                 cudnnNanPropagation_t, double);
  cudnnStatus_t (*destroyActivation)(cudnnActivationDescriptor_t);
  cudnnStatus_t (*getAlgorithms)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                                 cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int *,
                                 cudnnConvolutionFwdAlgoPerf_t *);
  cudnnStatus_t (*workspaceSize)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                                 cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t,
                                 cudnnConvolutionFwdAlgo_t, size_t *);
  cudnnStatus_t (*forwardBiasActivation)(
      cudnnHandle_t, const void *, cudnnTensorDescriptor_t, const void *, cudnnFilterDescriptor_t,
      const void *, cudnnConvolutionDescriptor_t, cudnnConvolutionFwdAlgo_t, void *, size_t,
      const void *, cudnnTensorDescriptor_t, const void *, cudnnTensorDescriptor_t, const void *,
      cudnnActivationDescriptor_t, cudnnTensorDescriptor_t, void *);
  std::string path; ///< the file loaded
};
/// libtgc_cutlass_sm90.so, tgc's CUTLASS GEMM plug-in (cutlass/CutlassGemm.h).
struct CutlassLib {
  int (*abi)(void);
  int (*check)(const TgcCutlassGemmDesc *, char *, size_t);
  int (*create)(const TgcCutlassGemmDesc *, void **, char *, size_t);
  int (*run)(void *, void *, int, char *, size_t);
  void (*destroy)(void *);
  std::string path; ///< the file loaded
};

/// The driver, loaded once (libcuda.so.1, or $TGC_LIBCUDA); null with `error` set when missing.
const Driver *loadDriver(std::string &error);
/// cuBLASLt, loaded once ($TGC_CUBLASLT, libcublasLt.so.13, /usr/local/cuda/lib64/...); null
/// with `error` set when missing or when $TGC_NO_CUBLASLT is set.
const BlasLt *loadBlasLt(std::string &error);

/// cuDNN, loaded once ($TGC_CUDNN, libcudnn.so.9, /usr/local/cuda/lib64/libcudnn.so.9); null
/// with `error` set when missing, older than 9, or when $TGC_CUDNN is "off".
const Cudnn *loadCudnn(std::string &error);
/// The CUTLASS plug-in, loaded once: $TGC_CUTLASS, else libtgc_cutlass_sm90.so beside the module
/// holding this runtime (the executable, or the shared library it was linked into); null with
/// `error` set when missing or of another ABI.
const CutlassLib *loadCutlass(std::string &error);
/// The file holding the runtime's code: the executable (through /proc/self/exe when it was
/// started through $PATH), or the shared library the runtime is linked into; "" if unknown.
std::string runtimeModulePath();

/// "" on success; otherwise "<call>: <CUDA_ERROR_NAME> (<description>)".
std::string check(const Driver &d, CUresult r, const char *call);

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDA_CUDAAPI_H
