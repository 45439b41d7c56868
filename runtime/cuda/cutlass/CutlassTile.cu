// CutlassTile.cu — one tile's CUTLASS instantiations (CutlassConfig.cuh): f16 and bf16, each
// activation, and for tile 0 split-K's partial GEMM. Built once per tile with
// -DTGC_CUTLASS_TILE=N (runtime/BUILD's cutlass_sm90 runs the builds in parallel: about a minute
// of nvcc per tile, where one file of every tile took seven on two cores).
#include "runtime/cuda/cutlass/CutlassConfig.cuh"

#ifndef TGC_CUTLASS_TILE
#error "build with -DTGC_CUTLASS_TILE=<tile>"
#endif

namespace tgc_cutlass {

template <> int checkTile<TGC_CUTLASS_TILE>(const TgcCutlassGemmDesc &d, char *err, size_t len) {
  return dispatchType<Check, TGC_CUTLASS_TILE>(d, err, len);
}

template <>
int createTile<TGC_CUTLASS_TILE>(const TgcCutlassGemmDesc &d, void **h, char *err, size_t len) {
  return dispatchType<Create, TGC_CUTLASS_TILE>(d, h, err, len);
}

} // namespace tgc_cutlass
