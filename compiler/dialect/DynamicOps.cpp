// DynamicOps.cpp — verifiers of the ops with a data-dependent result extent (tg.nonzero,
// tg.unique, tg.nms).
//
// Each writes results of an upper-bound shape and a last i64 scalar `count` (docs/design.md,
// "Data-dependent shapes"); the verifiers pin the upper bounds, so the interpreter and both
// emitters can rely on them.
#include "compiler/dialect/Shapes.h"
#include "compiler/dialect/TgDialect.h"

#include <algorithm>

using namespace mlir;
using namespace tgc::tg;

namespace {

tgc::Shape shapeOf(Value v) {
  auto t = v.getType().cast<RankedTensorType>();
  return tgc::Shape(t.getShape().begin(), t.getShape().end());
}

Type elemOf(Value v) { return v.getType().cast<RankedTensorType>().getElementType(); }

/// Static shapes everywhere and a last result `count` of type tensor<i64>.
LogicalResult checkCommon(Operation *op) {
  for (Value v : op->getOperands())
    if (!v.getType().cast<RankedTensorType>().hasStaticShape())
      return op->emitOpError("operands must have static shapes");
  for (Value v : op->getResults())
    if (!v.getType().cast<RankedTensorType>().hasStaticShape())
      return op->emitOpError("results must have static shapes");
  Value count = op->getResults().back();
  if (!shapeOf(count).empty() || !elemOf(count).isSignlessInteger(64))
    return op->emitOpError("count must be a tensor<i64> scalar");
  return success();
}

bool isI64(Value v) { return elemOf(v).isSignlessInteger(64); }

} // namespace

LogicalResult NonzeroOp::verify() {
  if (failed(checkCommon(*this)))
    return failure();
  const tgc::Shape x = shapeOf(getInput());
  if (x.empty())
    return emitOpError("input must have rank >= 1");
  const tgc::Shape want{(int64_t)x.size(), tgc::numElements(x).value_or(-1)};
  if (shapeOf(getIndices()) != want || !isI64(getIndices()))
    return emitOpError("indices must be i64 of shape ") << tgc::shapeToString(want);
  return success();
}

LogicalResult UniqueOp::verify() {
  if (failed(checkCommon(*this)))
    return failure();
  const tgc::Shape x = shapeOf(getInput());
  auto axis = tgc::normalizeAxis(getAxis(), x.size());
  if (x.empty() || !axis)
    return emitOpError("needs rank >= 1 and an axis in range");
  if (getY().getType() != getInput().getType())
    return emitOpError("y must have the input's type (its upper bound)");
  const tgc::Shape n{x[*axis]};
  for (Value v : {getIndices(), getInverse(), getCounts()})
    if (shapeOf(v) != n || !isI64(v))
      return emitOpError("indices, inverse and counts must be i64 of shape ")
             << tgc::shapeToString(n);
  return success();
}

LogicalResult NmsOp::verify() {
  if (failed(checkCommon(*this)))
    return failure();
  const tgc::Shape b = shapeOf(getBoxes()), s = shapeOf(getScores());
  if (b.size() != 3 || b[2] != 4 || s.size() != 3 || s[0] != b[0] || s[2] != b[1])
    return emitOpError("boxes must be [B, N, 4] and scores [B, C, N]");
  if (elemOf(getBoxes()) != elemOf(getScores()) || !elemOf(getBoxes()).isa<FloatType>())
    return emitOpError("boxes and scores must share one float type");
  const int64_t maxPer = getMaxPerClassAttr().getInt();
  if (maxPer < 0)
    return emitOpError("max_per_class must be >= 0");
  const tgc::Shape want{b[0] * s[1] * std::min(maxPer, b[1]), 3};
  if (shapeOf(getSelected()) != want || !isI64(getSelected()))
    return emitOpError("selected must be i64 of shape ") << tgc::shapeToString(want);
  return success();
}
