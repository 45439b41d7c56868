// Float8Types.h — the float8 element types of the tg dialect. MLIR 15 has no float8 types, so a
// float8 element type is an opaque type of the tg namespace: `!tg.f8e4m3fn`, `!tg.f8e4m3fnuz`,
// `!tg.f8e5m2`, `!tg.f8e5m2fnuz` (ONNX's FLOAT8E4M3FN 17 .. FLOAT8E5M2FNUZ 20). Each is one byte
// in memory (runtime/Float8.h encodes and decodes it); only tg.cast converts to and from one
// (its `saturate` attribute picks what values beyond the format's range become), other ops only
// move such bytes. int4/uint4 need no such type: they are the builtin i4/ui4, one per byte.
#ifndef TGC_COMPILER_DIALECT_FLOAT8TYPES_H
#define TGC_COMPILER_DIALECT_FLOAT8TYPES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

namespace tgc::tg {

/// The ONNX number (17..20) of a float8 element type, else 0.
inline int float8Kind(mlir::Type t) {
  auto o = t.dyn_cast_or_null<mlir::OpaqueType>();
  if (!o || o.getDialectNamespace().getValue() != "tg")
    return 0;
  const llvm::StringRef d = o.getTypeData();
  return d == "f8e4m3fn"     ? 17
         : d == "f8e4m3fnuz" ? 18
         : d == "f8e5m2"     ? 19
         : d == "f8e5m2fnuz" ? 20
                             : 0;
}

inline bool isFloat8(mlir::Type t) { return float8Kind(t) != 0; }

/// The float8 element type of ONNX number `kind` (17..20).
inline mlir::Type float8Type(mlir::MLIRContext *ctx, int kind) {
  const char *names[] = {"f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz"};
  return mlir::OpaqueType::get(mlir::StringAttr::get(ctx, "tg"), names[(kind - 17) & 3]);
}

} // namespace tgc::tg

#endif // TGC_COMPILER_DIALECT_FLOAT8TYPES_H
