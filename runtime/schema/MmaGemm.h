// MmaGemm.h — tgc's tensor-core GEMM kernels for f16/bf16: the names and limits the package
// writer (codegen/cuda/CudaMmaGemm.cpp generates the kernels) and the CUDA runtime (which picks
// a configuration per GEMM) agree on. Header-only: part of the package schema.
#ifndef TGC_RUNTIME_SCHEMA_MMAGEMM_H
#define TGC_RUNTIME_SCHEMA_MMAGEMM_H

#include <string>

namespace tgc::cuda {

/// One instantiated kernel shape: BM×64 output tiles, BK-deep k steps, ST pipeline stages.
struct MmaGemmConfig {
  int bm, bk, stages;
};
constexpr MmaGemmConfig kMmaGemmConfigs[] = {{64, 32, 4}, {64, 64, 4}, {128, 64, 3}};
constexpr int kMmaGemmTileCols = 64;
constexpr int kMmaGemmTileK = 32; ///< smallest BK

/// Dynamic shared memory of a configuration (padded rows: A BM×(BK+8); B 64×(BK+8) when B is
/// n×k, BK×72 when k×n).
constexpr int mmaGemmSmemBytes(const MmaGemmConfig &c, bool transB) {
  return c.stages * 2 * (c.bm * (c.bk + 8) + (transB ? 64 * (c.bk + 8) : c.bk * 72));
}

/// Kernel symbol for ONNX dtype 10 (f16) or 16 (bf16), B n×k (`transB`) or k×n.
inline std::string mmaGemmSymbol(int dtype, bool transB, const MmaGemmConfig &c) {
  return std::string("tgk_mma_gemm_") + (dtype == 10 ? "f16" : "bf16") +
         (transB ? "_nt_" : "_nn_") + std::to_string(c.bm) + "x" + std::to_string(c.bk);
}

/// Whether a GEMM's shape fits the kernels at all (n, k and leading dims/strides in elements;
/// pointer alignment is the runtime's to check).
inline bool mmaGemmShapeFits(int dtype, long long n, long long k, long long lda, long long ldb,
                             long long ldc, long long sa, long long sb, long long sc) {
  return (dtype == 10 || dtype == 16) && n > 0 && k > 0 && n % kMmaGemmTileCols == 0 &&
         k % kMmaGemmTileK == 0 && lda % 8 == 0 && ldb % 8 == 0 && ldc % 2 == 0 && sa % 8 == 0 &&
         sb % 8 == 0 && sc % 2 == 0 && k < (1LL << 31) && n < (1LL << 31) && lda < (1LL << 31) &&
         ldb < (1LL << 31) && ldc < (1LL << 31);
}

} // namespace tgc::cuda

#endif // TGC_RUNTIME_SCHEMA_MMAGEMM_H
