// LoopGemmEmit.h — a GEMM (tg.linear / tg.matmul) as plain loops, one output element per item,
// written once for both backends: exact for integer types (the products summed modulo 2^64 and
// the result kept modulo its width, as integer arithmetic wraps) and in double for f64. The CUDA
// backend runs its integer and f64 GEMMs this way (its GEMM steps are f32/f16/bf16); the CPU
// backend's prelude has its own loops (and BLAS for f32/f64).
#ifndef TGC_CODEGEN_COMMON_LOOPGEMMEMIT_H
#define TGC_CODEGEN_COMMON_LOOPGEMMEMIT_H

#include "codegen/common/CStyle.h"

#include <string>
#include <vector>

namespace tgc::codegen {

/// Writes one parallel loop (k.openParallel, `k.items` = batches · M · N) computing linear or
/// matmul `op` from the operand pointers `ptrs` (A, B, and a linear's bias when `withBias`) into
/// `out`, row-major and dense. Integer types accumulate in uint64_t (each product of the values
/// widened to int64_t, so the result modulo 2^width is exact whatever the signs), floats in their
/// `calc()` type (double for f64). Broadcast batches read per-batch offsets from constant arrays
/// in `k.globals`. Refuses bool and operands whose type differs from the result's.
llvm::Error emitLoopGemm(CKernel &k, mlir::Operation *op, const std::vector<std::string> &ptrs,
                         const std::string &out, bool withBias);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_LOOPGEMMEMIT_H
