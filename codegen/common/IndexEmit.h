// IndexEmit.h — the indexing ops (tg.cumsum, tg.scatter_elements, tg.topk), written once for both
// backends against CKernel (codegen/common/CStyle.h), as ReduceEmit writes the reductions: each
// kernel is one parallel loop (OpenMP on the CPU, a grid-stride loop on CUDA) whose items own
// disjoint outputs, so no kernel needs atomics or a second pass and every result is deterministic.
//   cumsum:  one item per line along the axis, a running sum (double for floats, int64_t else).
//   scatter: one item per output element, which copies the data's element and then scans the
//            updates that can target it (those on its line along the axis) in order, applying
//            each whose index (negative: + dim) names it; an index out of range names none, so
//            it writes nothing. Work: output elements × the indices' size along the axis.
//   topk:    one item per line along the axis, selecting its k results in order (each the best
//            element after the one before: value first, then the lower index; NaN largest).
//            Work: line length × k per line.
#ifndef TGC_CODEGEN_COMMON_INDEXEMIT_H
#define TGC_CODEGEN_COMMON_INDEXEMIT_H

#include "codegen/common/CStyle.h"

namespace tgc::codegen {

/// Whether `op` is one of the ops emitIndexOp writes.
bool isIndexOp(mlir::Operation *op);

/// The kernel body of indexing op `op` (`ct`: the C type of its first result), reading in0...
/// and writing out0 (and out1: topk's indices); its loop has kb.items items (0: an empty result,
/// nothing to launch).
llvm::Error emitIndexOp(CKernel &kb, mlir::Operation *op, const CType &ct);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_INDEXEMIT_H
