// Match.h — small matchers shared by the recognition rules (splat constants, product trees).
//
// Exporters spell one formula in many association orders (x*0.5*t, (x*t)*0.5, 0.5*(x*t)) and
// with constants of slightly different precision (1.4142135 vs √2). The rules therefore look
// at a product as the multiset of its factors and compare constants with a relative tolerance,
// instead of matching one tree shape exactly.
#ifndef TGC_PASSES_RECOGNITION_MATCH_H
#define TGC_PASSES_RECOGNITION_MATCH_H

#include "compiler/dialect/Shapes.h"
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

/// One half of a tensor's last dim: `whole` [..., 2H] and which half (0: [0, H), 1: [H, 2H)).
struct LastDimHalf {
  mlir::Value whole;
  int which = -1;
};

/// When `v` is the lower or upper half of some x along x's last dim, written as a unit-step
/// tg.slice that keeps every other dim whole, or as a result of a two-way even tg.split on
/// the last axis: that x and which half.
inline std::optional<LastDimHalf> lastDimHalf(mlir::Value v) {
  auto shapeOf = [](mlir::Value t) {
    return t.getType().cast<mlir::RankedTensorType>().getShape();
  };
  if (auto slice = v.getDefiningOp<tg::SliceOp>()) {
    auto x = shapeOf(slice.getInput()), y = shapeOf(slice.getResult());
    if (x.empty() || x.back() <= 0 || x.back() % 2 != 0 || y.back() != x.back() / 2)
      return std::nullopt;
    for (size_t d = 0; d + 1 < x.size(); ++d)
      if (y[d] != x[d])
        return std::nullopt;
    int64_t d = 0, last = (int64_t)x.size() - 1;
    for (auto [start, step] : llvm::zip(slice.getStarts(), slice.getSteps())) {
      int64_t s = start.cast<mlir::IntegerAttr>().getInt();
      if (step.cast<mlir::IntegerAttr>().getInt() != 1 || (d != last && s != 0))
        return std::nullopt;
      if (d == last && s != 0 && s != x.back() / 2)
        return std::nullopt;
      if (d == last)
        return LastDimHalf{slice.getInput(), s == 0 ? 0 : 1};
      ++d;
    }
    return std::nullopt;
  }
  if (auto split = v.getDefiningOp<tg::SplitOp>()) {
    auto x = shapeOf(split.getInput());
    auto axis = tgc::normalizeAxis(split.getAxis(), x.size());
    if (x.empty() || !axis || *axis != (int64_t)x.size() - 1 || split.getNumResults() != 2 ||
        x.back() <= 0 || x.back() % 2 != 0 || shapeOf(split.getResult(0)).back() != x.back() / 2)
      return std::nullopt;
    return LastDimHalf{split.getInput(), (int)v.cast<mlir::OpResult>().getResultNumber()};
  }
  return std::nullopt;
}

/// When `v` is -y (tg.neg, or a product with a scalar splat -1): y.
inline mlir::Value negated(mlir::Value v) {
  if (auto neg = v.getDefiningOp<tg::NegOp>())
    return neg.getInput();
  if (auto mul = v.getDefiningOp<tg::MulOp>())
    for (auto [y, c] : {std::pair{mul.getLhs(), mul.getRhs()}, {mul.getRhs(), mul.getLhs()}})
      if (isSplatNear(c, -1.0) && isScalarShaped(c) && y.getType() == v.getType())
        return y;
  return {};
}

} // namespace tgc::recognition

#endif // TGC_PASSES_RECOGNITION_MATCH_H
