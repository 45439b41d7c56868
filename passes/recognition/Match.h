// Match.h — small matchers shared by the recognition rules (splat constants, product trees).
//
// Exporters spell one formula in many association orders (x*0.5*t, (x*t)*0.5, 0.5*(x*t)) and
// with constants of slightly different precision (1.4142135 vs √2). The rules therefore look
// at a product as the multiset of its factors and compare constants with a relative tolerance,
// instead of matching one tree shape exactly.
#ifndef TGC_PASSES_RECOGNITION_MATCH_H
#define TGC_PASSES_RECOGNITION_MATCH_H

#include "compiler/dialect/TgDialect.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <optional>

namespace tgc::recognition {

/// Relative tolerance for formula constants (1.4142135 vs √2, 0.7978846 vs √(2/π)).
constexpr double kConstTolerance = 1e-4;

/// The value of a float constant whose elements are all equal (a splat, or one element).
inline std::optional<double> splatValue(mlir::Value v) {
  mlir::Attribute attr;
  if (!v || !mlir::matchPattern(v, mlir::m_Constant(&attr)))
    return std::nullopt;
  auto dense = attr.dyn_cast<mlir::DenseElementsAttr>();
  if (!dense || !dense.getElementType().isa<mlir::FloatType>())
    return std::nullopt;
  if (!dense.isSplat() && dense.getNumElements() != 1)
    return std::nullopt;
  return (*dense.getValues<llvm::APFloat>().begin()).convertToDouble();
}

/// True when `v` is a splat float constant within kConstTolerance (relative) of `want`.
inline bool isSplatNear(mlir::Value v, double want) {
  auto got = splatValue(v);
  return got && std::fabs(*got - want) <= kConstTolerance * std::fabs(want);
}

/// True when `v` is a constant whose dims are all 1 (it broadcasts like a scalar).
inline bool isScalarShaped(mlir::Value v) {
  auto t = v.getType().cast<mlir::RankedTensorType>();
  return llvm::all_of(t.getShape(), [](int64_t d) { return d == 1; });
}

/// The factors of a product tree: `v` itself unless it is a tg.mul, in which case the factors
/// of both operands (up to `depth` levels). Below the root only single-use muls are opened:
/// a product with other uses is a value of its own (the `x` of a pattern), not an
/// intermediate of the formula.
inline void flattenProduct(mlir::Value v, llvm::SmallVectorImpl<mlir::Value> &factors,
                           int depth = 4, bool isRoot = true) {
  if (auto mul = v.getDefiningOp<tg::MulOp>(); mul && depth > 0 && (isRoot || v.hasOneUse())) {
    flattenProduct(mul.getLhs(), factors, depth - 1, false);
    flattenProduct(mul.getRhs(), factors, depth - 1, false);
    return;
  }
  factors.push_back(v);
}

/// A product split into the product of its scalar-shaped splat constants and the other factors.
struct Product {
  double constant = 1.0;
  llvm::SmallVector<mlir::Value, 4> others;
};

/// Flattens `v` (see flattenProduct) and folds its scalar splat constants into one number.
inline Product splitProduct(mlir::Value v, int depth = 4) {
  llvm::SmallVector<mlir::Value, 8> factors;
  flattenProduct(v, factors, depth);
  Product p;
  for (mlir::Value f : factors) {
    auto c = splatValue(f);
    if (c && isScalarShaped(f))
      p.constant *= *c;
    else
      p.others.push_back(f);
  }
  return p;
}

/// True when `a` is within kConstTolerance (relative) of `b`.
inline bool near(double a, double b) { return std::fabs(a - b) <= kConstTolerance * std::fabs(b); }

/// For a commutative binary op: the operand that is not `v` (or null when neither is `v`).
template <typename OpT> mlir::Value otherOperand(OpT op, mlir::Value v) {
  if (op.getLhs() == v)
    return op.getRhs();
  if (op.getRhs() == v)
    return op.getLhs();
  return {};
}

} // namespace tgc::recognition

#endif // TGC_PASSES_RECOGNITION_MATCH_H
