// Session 17: hand-off latency between two kernels: PDL (griddepcontrol.wait) vs a flag counter.
// A: 96 CTAs, each stores `bytes` to global at its end (16-byte st.global), then exits (or signals).
// B: 96 CTAs launched early (PDL), each stamps when released. Reports median over reps of
// (min release of B) - (max end stamp of A), and (median release) - (max end).
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>
#include <algorithm>
__device__ __forceinline__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__global__ void A(float4 *out, int vecs, unsigned long long *endT, unsigned *cnt, int mode, int spin) {
  asm volatile("griddepcontrol.launch_dependents;");
  unsigned long long t0 = gt();
  while (gt() - t0 < (unsigned long long)spin) {}
  float4 v = make_float4(threadIdx.x, 1, 2, 3);
  for (int i = threadIdx.x; i < vecs; i += blockDim.x) out[(size_t)blockIdx.x * vecs + i] = v;
  if (mode == 1) {  // flag: make the stores visible, then count this CTA
    __syncthreads();
    if (threadIdx.x == 0) endT[blockIdx.x] = gt();
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(cnt) : "memory");
  } else {
    __syncthreads();
    if (threadIdx.x == 0) endT[blockIdx.x] = gt();
  }
}
__global__ void B(const float4 *in, int vecs, unsigned long long *relT, unsigned *cnt, int mode, unsigned target, float *sink) {
  if (mode == 1) {
    if (threadIdx.x == 0) { unsigned c; do { asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(c) : "l"(cnt)); } while (c < target); }
    __syncthreads();
  } else {
    asm volatile("griddepcontrol.wait;" ::: "memory");
  }
  unsigned long long t = gt();
  float4 x = in[(size_t)((blockIdx.x + 1) % gridDim.x) * vecs + threadIdx.x];
  if (x.x == -1.f) sink[0] = x.y;
  if (threadIdx.x == 0) relT[blockIdx.x] = t;
}
int main() {
  const int G = 64, T = 256;
  float4 *buf; unsigned long long *endT, *relT; unsigned *cnt; float *sink;
  cudaMalloc(&buf, (size_t)G * 4096 * 16); cudaMalloc(&endT, G * 8); cudaMalloc(&relT, G * 8); cudaMalloc(&cnt, 4); cudaMalloc(&sink, 4);
  cudaMemset(cnt, 0, 4);
  cudaStream_t s; cudaStreamCreate(&s);
  unsigned target = 0;
  for (int mode : {0, 1})
    for (int vecs : {0, 512, 4096}) {
      std::vector<double> dmin, dmed;
      for (int rep = 0; rep < 30; ++rep) {
        A<<<G, T, 0, s>>>(buf, vecs, endT, cnt, mode, 5000);
        target += (mode == 1) ? G : 0;
        cudaLaunchConfig_t cfg = {}; cfg.gridDim = G; cfg.blockDim = T; cfg.stream = s;
        cudaLaunchAttribute a; a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        a.val.programmaticStreamSerializationAllowed = 1; cfg.attrs = &a; cfg.numAttrs = 1;
        cudaLaunchKernelEx(&cfg, B, (const float4 *)buf, vecs ? vecs : 256, relT, cnt, mode, target, sink);
        cudaStreamSynchronize(s);
        std::vector<unsigned long long> E(G), R(G);
        cudaMemcpy(E.data(), endT, G * 8, cudaMemcpyDeviceToHost); cudaMemcpy(R.data(), relT, G * 8, cudaMemcpyDeviceToHost);
        unsigned long long eMax = *std::max_element(E.begin(), E.end());
        std::sort(R.begin(), R.end());
        dmin.push_back(((long long)R[0] - (long long)eMax) / 1e3); dmed.push_back(((long long)R[G / 2] - (long long)eMax) / 1e3);
      }
      std::sort(dmin.begin(), dmin.end()); std::sort(dmed.begin(), dmed.end());
      printf("%s, %5d KB stored per CTA: first release %.2f us, median release %.2f us after the last end stamp (err %s)\n",
             mode ? "flag (fence + atomic)" : "PDL wait            ", vecs * 16 / 1024, dmin[15], dmed[15], cudaGetErrorString(cudaGetLastError()));
    }
  return 0;
}
