// TgDialect.h — C++ declarations of the `tg` dialect (generated from TgOps.td).
//
// Include this, not the .inc files. Shape helpers shared by verifiers, the frontend and the
// interpreter live in Shapes.h so that including the dialect stays cheap.
#ifndef TGC_COMPILER_DIALECT_TGDIALECT_H
#define TGC_COMPILER_DIALECT_TGDIALECT_H

#include "compiler/dialect/Float8Types.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "compiler/dialect/TgOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "compiler/dialect/TgOps.h.inc"

#endif // TGC_COMPILER_DIALECT_TGDIALECT_H
