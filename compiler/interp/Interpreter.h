// Interpreter.h — the reference interpreter for the `tg` dialect: the numerics oracle.
//
// Plain C++ over host tensors. Arithmetic is done in double (sums and dot products accumulate in
// fp64) and rounded to the result's element type on store, so fp32 IR gives the fp32 answer an
// exact implementation would. It runs any IR stage: before or after any pass, including tg.fused.
#ifndef TGC_COMPILER_INTERP_INTERPRETER_H
#define TGC_COMPILER_INTERP_INTERPRETER_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "runtime/Tensor.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace mlir::func {
class FuncOp;
}

namespace tgc {

/// Runs `fn` on `inputs` (one per argument, in order; dtype and shape must match) and returns one
/// tensor per result, named from the result's `tg.name` attribute when present.
llvm::Expected<std::vector<HostTensor>> interpret(mlir::func::FuncOp fn,
                                                  const std::vector<HostTensor> &inputs);

/// Evaluates one `tg` op on concrete operands (one per operand, in order). Used by constant
/// folding and by the ONNX frontend to fold shape arithmetic. Errors name the op and its location.
llvm::Expected<std::vector<HostTensor>> evaluateOp(mlir::Operation *op,
                                                   const std::vector<HostTensor> &operands);

/// The DType of an MLIR element type (f32, f64, f16, bf16, i64, i32, i16, i8, ui64, ui32, ui16,
/// ui8, i1).
llvm::Expected<DType> dtypeOf(mlir::Type elementType);

/// The MLIR element type of a DType.
mlir::Type elementTypeOf(DType t, mlir::MLIRContext *ctx);

/// Host tensor holding a constant's values.
HostTensor tensorFromAttr(mlir::ElementsAttr attr);

/// Dense attribute of the given tensor type holding `t`'s values (dtype and size must match).
mlir::DenseElementsAttr attrFromTensor(const HostTensor &t, mlir::RankedTensorType type);

} // namespace tgc

#endif // TGC_COMPILER_INTERP_INTERPRETER_H
