// MovementEmit.h — data movement that both backends write alike, against CKernel
// (codegen/common/CStyle.h): transpose, slice and expand as one strided copy over the result,
// and the clamped index read of the gathers. Concat, split, pad and gather keep per-target loops
// (the CPU copies whole rows with memcpy, CUDA moves one element per thread).
#ifndef TGC_CODEGEN_COMMON_MOVEMENTEMIT_H
#define TGC_CODEGEN_COMMON_MOVEMENTEMIT_H

#include "codegen/common/CStyle.h"

namespace tgc::tg {
class TransposeOp;
} // namespace tgc::tg

namespace tgc::codegen {

/// Whether `op` is a transpose, slice or expand (emitStridedCopy writes it).
bool isStridedCopy(mlir::Operation *op);
/// Input strides (elements) that read a transpose's input at its result's coordinates.
Shape transposeStrides(tg::TransposeOp tr);
/// out0[i] = in0[base + Σ coord_d * stride_d] over the result of a transpose, slice or expand.
void emitStridedCopy(CKernel &kb, mlir::Operation *op);

/// A pad's input and result shapes, its pads (begin per dim, then end per dim) and its value's
/// literal in the result's type.
struct PadLayout {
  Shape x, y, pads;
  std::string value;
};
PadLayout padLayout(CKernel &kb, mlir::Operation *pad, const CType &ct);

/// A concat's result or a split's input seen as `outer` rows of `row` elements along `axis`,
/// part i (a concat operand, a split result) holding `chunks[i]` contiguous elements of each row.
struct JoinLayout {
  Shape joined, chunks;
  int64_t axis = 0, outer = 0, row = 0;
};
JoinLayout joinLayout(mlir::Operation *concatOrSplit);

/// A gather along `axis` seen as `outer` × `NI` (the indices) rows of `inner` elements taken from
/// an axis of `A`.
struct GatherLayout {
  int64_t outer = 0, A = 0, inner = 0, NI = 0;
};
GatherLayout gatherLayout(mlir::Operation *gather);

/// Lines that set int64_t `var` to index expression `index` wrapped once when negative (+ `n`)
/// and clamped to [0, n): an out-of-range index never reads out of bounds.
void clampedIndexLines(Code &c, const std::string &var, const std::string &index, int64_t n);

/// Gather-elements: out0 over the indices' shape reads in0 at the element's coordinates with
/// the gathered axis's coordinate taken from in1 (wrapped and clamped); indices larger than the
/// data on another axis are refused.
llvm::Error emitGatherElements(CKernel &kb, mlir::Operation *op, const CType &ct);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_MOVEMENTEMIT_H
