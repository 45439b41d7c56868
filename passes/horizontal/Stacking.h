// Stacking.h — building the stacked/concatenated weight constants horizontal fusion needs.
//
// Fusing N linears into one GEMM needs their weights side by side ([ΣN, K]) or stacked and
// transposed for a batched matmul ([S, K, M]). Building the constant directly (instead of
// emitting tg.concat / tg.transpose for tgc-fold-constants) keeps the graph free of weight
// shuffles even when a fold would exceed the folder's size bound.
#ifndef TGC_PASSES_HORIZONTAL_STACKING_H
#define TGC_PASSES_HORIZONTAL_STACKING_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

#include <optional>

namespace tgc {

/// The constant value of `v` when it is defined by a constant op (tg.constant), else nullopt.
std::optional<mlir::ElementsAttr> constantOf(mlir::Value v);

/// `parts` laid end to end in row-major order, as a constant of `type` (element counts must sum
/// to the type's; all parts share its element type). Null parts are zeros of `zeroElems` each.
mlir::DenseElementsAttr concatConstants(llvm::ArrayRef<mlir::ElementsAttr> parts,
                                        mlir::RankedTensorType type, int64_t zeroElems = 0);

/// Weights [M, K] (one per member) stacked as their transposes: a constant [S, K, M].
mlir::DenseElementsAttr stackTransposed(llvm::ArrayRef<mlir::ElementsAttr> weights,
                                        mlir::RankedTensorType type);

} // namespace tgc

#endif // TGC_PASSES_HORIZONTAL_STACKING_H
