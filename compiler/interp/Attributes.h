// Attributes.h — conversion between MLIR constants and HostTensor (internal to the interpreter).
//
// The public, non-failing forms live in Interpreter.h; the interpreter itself uses this checked
// form so a constant it cannot read becomes an error instead of a wrong tensor.
#ifndef TGC_COMPILER_INTERP_ATTRIBUTES_H
#define TGC_COMPILER_INTERP_ATTRIBUTES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "runtime/Tensor.h"
#include "llvm/Support/Error.h"

namespace tgc::interp {

/// The values of a statically shaped constant of a supported element type.
llvm::Expected<HostTensor> readConstant(mlir::ElementsAttr attr);

} // namespace tgc::interp

#endif // TGC_COMPILER_INTERP_ATTRIBUTES_H
