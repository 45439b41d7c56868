// ReduceEmit.h — reductions over axes (reduce_sum, _mean, _max, _min, _prod) and arg-max, written
// once for both backends against CKernel (codegen/common/CStyle.h), as onnx-mlir writes one
// lowering per op family: one loop over the kept elements, each summing (in double or int64_t),
// multiplying or comparing its reduced elements in order.
#ifndef TGC_CODEGEN_COMMON_REDUCEEMIT_H
#define TGC_CODEGEN_COMMON_REDUCEEMIT_H

#include "codegen/common/CStyle.h"

namespace tgc::codegen {

/// Whether `op` is one of the ops emitReduction writes.
bool isReduction(mlir::Operation *op);

/// The kernel body of reduction `op` (result type `ct`), reading in0 and writing out0; its loop
/// has kb.items items (0: an empty result, nothing to launch).
llvm::Error emitReduction(CKernel &kb, mlir::Operation *op, const CType &ct);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_REDUCEEMIT_H
