// Probe: can a PDL-launched kernel with ~225 KB smem blocks start on an SM where a small-block
// kernel (no smem) is still running? With the small kernel's carveout default vs max-shared.
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>
#include <algorithm>
__device__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
__device__ unsigned smid() { unsigned r; asm volatile("mov.u32 %0, %smid;" : "=r"(r)); return r; }
__global__ void small(unsigned long long *endT, int spin_ns) {
  asm volatile("griddepcontrol.launch_dependents;");
  __shared__ float red[4];
  unsigned long long t0 = gt();
  while (gt() - t0 < (unsigned long long)spin_ns) {}
  if (threadIdx.x == 0) { red[0] = 1; endT[blockIdx.x] = gt(); }
}
__global__ void big(unsigned long long *startT, unsigned *sm) {
  extern __shared__ char s[];
  if (threadIdx.x == 0) { startT[blockIdx.x] = gt(); sm[blockIdx.x] = smid(); s[0] = 1; }
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
int main() {
  int smemOpt = 0, smemSm = 0, res = 0;
  cudaDeviceGetAttribute(&smemOpt, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
  cudaDeviceGetAttribute(&smemSm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0);
  cudaDeviceGetAttribute(&res, cudaDevAttrReservedSharedMemoryPerBlock, 0);
  printf("smem per block optin %d, per SM %d, reserved %d\n", smemOpt, smemSm, res);
  unsigned long long *endT, *startT; unsigned *sm;
  cudaMalloc(&endT, 1024 * 8); cudaMalloc(&startT, 1024 * 8); cudaMalloc(&sm, 4096);
  int bigSmems[] = {200 * 1024, 220 * 1024, 224 * 1024, smemSm - 2 * res};
  for (int carve : {-1, 100}) {
    cudaFuncSetAttribute(small, cudaFuncAttributePreferredSharedMemoryCarveout, carve);
    for (int bs : bigSmems) {
      cudaFuncSetAttribute(big, cudaFuncAttributeMaxDynamicSharedMemorySize, bs);
      for (int rep = 0; rep < 3; ++rep) {
        small<<<128, 96>>>(endT, 20000);
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = 96; cfg.blockDim = 256; cfg.dynamicSmemBytes = bs;
        cudaLaunchAttribute a; a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        a.val.programmaticStreamSerializationAllowed = 1; cfg.attrs = &a; cfg.numAttrs = 1;
        cudaError_t e = cudaLaunchKernelEx(&cfg, big, startT, sm);
        cudaDeviceSynchronize();
        if (e != cudaSuccess || cudaGetLastError() != cudaSuccess) { printf("launch failed %s\n", cudaGetErrorString(e)); continue; }
        std::vector<unsigned long long> E(128), S(96);
        cudaMemcpy(E.data(), endT, 128 * 8, cudaMemcpyDeviceToHost);
        cudaMemcpy(S.data(), startT, 96 * 8, cudaMemcpyDeviceToHost);
        unsigned long long eMin = *std::min_element(E.begin(), E.end()), eMax = *std::max_element(E.begin(), E.end());
        int early = 0; for (auto s : S) early += s < eMin;
        unsigned long long sMin = *std::min_element(S.begin(), S.end());
        printf("carveout %4d big smem %6d: %2d of 96 big blocks started before the small kernel's first block ended; first big start %+.2f us vs small end\n",
               carve, bs, early, ((long long)sMin - (long long)eMax) / 1000.0);
      }
    }
  }
  return 0;
}
