// ImportDynamic.cpp — the ops whose output shape depends on the data: NonZero, Unique,
// NonMaxSuppression, and Compress by a condition known only at run time.
//
// Each becomes one op of the tg dialect (tg.nonzero, tg.unique, tg.nms; Compress: tg.nonzero of
// the condition, then a Gather) whose results have an upper-bound shape and a run-time count of
// valid entries along one axis, recorded by markDynamic (DynamicExtent.cpp; docs/design.md,
// "Data-dependent shapes"). With constant inputs the op folds and its results are cut to the
// exact count at once. NonMaxSuppression's limits decide the upper bound and are attributes:
// they must be constant (or bound with --bind-input).
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

Result importNonZero(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  const Shape s = c.shapeOf(x);
  if (s.empty())
    return c.error(n, "a scalar input is not supported (rank >= 1)");
  auto total = numElements(s);
  if (!total)
    return c.error(n, "input is too large");
  auto r = c.emitAll<tg::NonzeroOp>(n.loc, c.type({(int64_t)s.size(), *total}, c.i64()),
                                    c.type({}, c.i64()), x);
  return Values{markDynamic(c, n, r[0], 1, r[1])};
}

Result importUnique(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  const int64_t sorted = n.attrInt("sorted", 1);
  if (sorted != 0 && sorted != 1)
    return c.error(n, "sorted must be 0 or 1");
  int64_t axis = 0;
  if (n.attr("axis")) {
    TGC_ASSIGN(a, checkAxis(n, n.attrInt("axis", 0), c.rankOf(x)));
    axis = a;
  } else {
    auto total = numElements(c.shapeOf(x));
    if (!total)
      return c.error(n, "input is too large");
    x = c.reshape(n.loc, x, {*total});
  }
  if (c.rankOf(x) == 0)
    return c.error(n, "a scalar input needs no axis");
  const Shape s = c.shapeOf(x);
  auto i64s = c.type({s[axis]}, c.i64());
  auto r = c.emitAll<tg::UniqueOp>(n.loc, x.getType(), i64s, i64s, i64s, c.type({}, c.i64()), x,
                                   (uint64_t)axis, sorted != 0);
  if (ImportContext::isConstant(r[0])) { // folded: the outputs cut to the count now
    Values out;
    for (int k : {0, 1, 3})
      out.push_back(markDynamic(c, n, r[k], k == 0 ? axis : 0, r[4]));
    return Values{out[0], out[1], r[2], out[2]};
  }
  return Values{markDynamic(c, n, r[0], axis, r[4]), markDynamic(c, n, r[1], 0, r[4]), r[2],
                markDynamic(c, n, r[3], 0, r[4])};
}

/// Input i's single number (a scalar or one-element tensor), which must be constant; `dflt`
/// when absent.
llvm::Expected<std::optional<double>> scalarInput(ImportContext &c, const NodeView &n, size_t i,
                                                  const char *what) {
  Value v = n.input(i);
  if (!v)
    return std::optional<double>();
  auto d = ImportContext::constDoubles(v);
  if (!d)
    return c.error(n, std::string(what) + " must be constant" + ImportContext::bindHint(v));
  if (d->size() != 1)
    return c.error(n, std::string(what) + " must hold one value");
  return std::optional<double>((*d)[0]);
}

Result importNonMaxSuppression(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(boxes, c.need(n, 0));
  TGC_ASSIGN(scores, c.need(n, 1));
  const Shape b = c.shapeOf(boxes), s = c.shapeOf(scores);
  if (b.size() != 3 || b[2] != 4 || s.size() != 3 || s[0] != b[0] || s[2] != b[1])
    return c.error(n, "boxes must be [batches, boxes, 4] and scores [batches, classes, boxes]; "
                      "got " +
                          shapeToString(b) + " and " + shapeToString(s));
  if (!ImportContext::isFloat(c.elemOf(boxes)) || c.elemOf(scores) != c.elemOf(boxes))
    return c.error(n, "boxes and scores must share one float type");
  const int64_t center = n.attrInt("center_point_box", 0);
  if (center != 0 && center != 1)
    return c.error(n, "center_point_box must be 0 or 1");
  TGC_ASSIGN(maxOut, scalarInput(c, n, 2, "max_output_boxes_per_class"));
  TGC_ASSIGN(iou, scalarInput(c, n, 3, "iou_threshold"));
  TGC_ASSIGN(score, scalarInput(c, n, 4, "score_threshold"));
  const int64_t maxPer = std::max<int64_t>(0, (int64_t)maxOut.value_or(0));
  const int64_t rows = b[0] * s[1] * std::min(maxPer, b[1]);
  auto r = c.emitAll<tg::NmsOp>(n.loc, c.type({rows, 3}, c.i64()), c.type({}, c.i64()), boxes,
                                scores, (uint64_t)maxPer, llvm::APFloat(iou.value_or(0.0)),
                                llvm::APFloat(score.value_or(0.0)), score.has_value(), center != 0);
  return Values{markDynamic(c, n, r[0], 0, r[1])};
}

void registerAll(OpTable &t) {
  t["NonZero"] = importNonZero;
  t["Unique"] = importUnique;
  t["NonMaxSuppression"] = importNonMaxSuppression;
}

} // namespace

llvm::Expected<Value> compressDynamic(ImportContext &c, const NodeView &n, Value x, Value cond,
                                      int64_t axis) {
  if (c.rankOf(cond) != 1)
    return c.error(n, "condition must be 1-D");
  if (axis < 0) {
    auto total = numElements(c.shapeOf(x));
    if (!total)
      return c.error(n, "input is too large");
    x = c.reshape(n.loc, x, {*total});
    axis = 0;
  }
  Shape xs = c.shapeOf(x);
  const int64_t L = c.shapeOf(cond)[0];
  if (L > xs[axis])
    return c.error(n, "condition has " + std::to_string(L) + " entries for " +
                          std::to_string(xs[axis]) + " elements");
  auto nz = c.emitAll<tg::NonzeroOp>(n.loc, c.type({1, L}, c.i64()), c.type({}, c.i64()), cond);
  Value idx = c.reshape(n.loc, nz[0], {L});
  xs[axis] = L;
  Value g = c.emit<tg::GatherOp>(n.loc, c.type(xs, c.elemOf(x)), x, idx, (uint64_t)axis);
  return markDynamic(c, n, g, axis, nz[1]);
}

void registerDynamicOps(OpTable &table) { registerAll(table); }

} // namespace tgc::onnx_import
