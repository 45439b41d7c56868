// Constants.h — compile-time rewrites of dense constants that graph rules share.
#ifndef TGC_PASSES_COMMON_CONSTANTS_H
#define TGC_PASSES_COMMON_CONSTANTS_H

#include "mlir/IR/BuiltinAttributes.h"

#include <optional>

namespace tgc {

/// The [R, C] → [C, R] transpose of a rank-2 dense constant of a byte-sized element type
/// (nullopt for other element types).
std::optional<mlir::DenseElementsAttr> transpose2d(mlir::DenseElementsAttr a);

} // namespace tgc

#endif // TGC_PASSES_COMMON_CONSTANTS_H
