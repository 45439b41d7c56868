// LoopControl.cu — the two one-thread kernels of a LOOP step on CUDA (CudaLoop.cpp): they keep
// the iteration count and set the conditional WHILE node's condition from the device, so a
// loop whose trip count is known only at run time stays inside one CUDA graph.
//
// cudaGraphSetConditional lives in the CUDA device runtime (libcudadevrt), which NVRTC cannot
// link: these kernels are built once with nvcc (-dc, then -dlink against cudadevrt into a
// fatbin), embedded in the runtime and loaded with cuModuleLoadData.
#include <cuda_runtime.h>

// Before the WHILE node: iteration 0, the body's condition input 1, and whether the first
// iteration runs (0 < M and the initial condition).
extern "C" __global__ void tgc_loop_head(cudaGraphConditionalHandle handle, const long long *trip,
                                         const unsigned char *cond, long long *iter,
                                         unsigned char *bodyCond) {
  const long long m = trip ? *trip : 0x7fffffffffffffffLL;
  *iter = 0;
  *bodyCond = 1;
  cudaGraphSetConditional(handle, (m > 0 && (!cond || *cond)) ? 1u : 0u);
}

// One copy of a carried value (the body's output into its input slot for the next iteration).
struct TgcLoopCopy {
  unsigned long long dst, src, bytes;
};

// The copies, by every thread of the grid: 16 bytes at a time where both ends allow, then bytes.
__device__ void tgcLoopCopies(const TgcLoopCopy *copies, int n) {
  const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (int c = 0; c < n; ++c) {
    unsigned char *dst = reinterpret_cast<unsigned char *>(copies[c].dst);
    const unsigned char *src = reinterpret_cast<const unsigned char *>(copies[c].src);
    const unsigned long long bytes = copies[c].bytes;
    unsigned long long vec = ((copies[c].dst | copies[c].src) & 15) ? 0 : bytes / 16;
    for (unsigned long long i = tid; i < vec; i += stride)
      reinterpret_cast<uint4 *>(dst)[i] = reinterpret_cast<const uint4 *>(src)[i];
    for (unsigned long long i = vec * 16 + tid; i < bytes; i += stride)
      dst[i] = src[i];
  }
}

// Last in the WHILE body: the carried outputs copied into the body's input slots, the next
// iteration number, and whether it runs (i < M and the condition the body returned). One kernel
// instead of a copy node per carried value: a graph node costs ~1.5-2 us of an iteration.
extern "C" __global__ void tgc_loop_tail(cudaGraphConditionalHandle handle, const long long *trip,
                                         const unsigned char *condOut, long long *iter,
                                         const TgcLoopCopy *copies, int n) {
  tgcLoopCopies(copies, n);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const long long m = trip ? *trip : 0x7fffffffffffffffLL;
    const long long i = *iter + 1;
    *iter = i;
    cudaGraphSetConditional(handle, (i < m && *condOut) ? 1u : 0u);
  }
}

// Eager runs (profiling, TGC_CUDA_GRAPH=0): the same bookkeeping, with the condition written to
// memory for the host to read.
extern "C" __global__ void tgc_loop_head_eager(const long long *trip, const unsigned char *cond,
                                               long long *iter, unsigned char *bodyCond,
                                               unsigned char *go) {
  const long long m = trip ? *trip : 0x7fffffffffffffffLL;
  *iter = 0;
  *bodyCond = 1;
  *go = (m > 0 && (!cond || *cond)) ? 1 : 0;
}

extern "C" __global__ void tgc_loop_tail_eager(const long long *trip, const unsigned char *condOut,
                                               long long *iter, unsigned char *go,
                                               const TgcLoopCopy *copies, int n) {
  tgcLoopCopies(copies, n);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const long long m = trip ? *trip : 0x7fffffffffffffffLL;
    const long long i = *iter + 1;
    *iter = i;
    *go = (i < m && *condOut) ? 1 : 0;
  }
}
