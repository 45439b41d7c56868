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

// Last in the WHILE body: the next iteration number, and whether it runs (i < M and the
// condition the body returned).
extern "C" __global__ void tgc_loop_tail(cudaGraphConditionalHandle handle, const long long *trip,
                                         const unsigned char *condOut, long long *iter) {
  const long long m = trip ? *trip : 0x7fffffffffffffffLL;
  const long long i = *iter + 1;
  *iter = i;
  cudaGraphSetConditional(handle, (i < m && *condOut) ? 1u : 0u);
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
                                               long long *iter, unsigned char *go) {
  const long long m = trip ? *trip : 0x7fffffffffffffffLL;
  const long long i = *iter + 1;
  *iter = i;
  *go = (i < m && *condOut) ? 1 : 0;
}
