// DynamicEmit.h — the ops with a data-dependent result extent (tg.nonzero, tg.unique, tg.nms),
// written once for both backends against CKernel (codegen/common/CStyle.h).
//
// Each kernel writes its results at their upper-bound shape, zero past the valid part, and the
// count of valid entries into its last result, an i64 scalar the runtime reads after the run
// (docs/design.md, "Data-dependent shapes"). Correctness first: each kernel is ONE item (one
// thread on CUDA, one loop on the CPU; nonzero: one block on CUDA) that scans in order, so the
// output order is the ONNX reference's with no second pass, atomics or scratch buffer. These ops
// sit at the end of detection heads on a few thousand elements; a parallel scan is future work
// (docs/decisions.md).
//   nonzero: a scan in row-major order writing each nonzero element's coordinates; on CUDA one
//            block instead, a block-wide prefix sum per chunk of blockDim.x elements placing
//            them (the target's only difference here).
//   unique:  first occurrences by comparing each slice with the distinct ones found so far,
//            then (sorted) an insertion sort of them and the inverse recomputed. Work: L² · slice.
//   nms:     per batch and class, the candidates in score order (each the best after the one
//            before, as tg.topk), each kept unless a kept one suppresses it. Work: B·C·N².
#ifndef TGC_CODEGEN_COMMON_DYNAMICEMIT_H
#define TGC_CODEGEN_COMMON_DYNAMICEMIT_H

#include "codegen/common/CStyle.h"

namespace tgc::codegen {

/// Whether `op` is one of the ops emitDynamicOp writes.
bool isDynamicOp(mlir::Operation *op);

/// The kernel body of `op`, reading in0... and writing out0... (count last); always one item,
/// so the count is written even for an empty input.
llvm::Error emitDynamicOp(CKernel &kb, mlir::Operation *op);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_DYNAMICEMIT_H
