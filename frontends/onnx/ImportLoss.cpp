// ImportLoss.cpp — ONNX NegativeLogLikelihoodLoss (opsets 12/13/22) and SoftmaxCrossEntropyLoss
// (opsets 12/13) by decomposition into ops tg already has, so both backends run them without a
// new op. With x [N, C, d1..dk] (log-probabilities; SoftmaxCrossEntropyLoss first takes
// LogSoftmax over axis 1, its optional second output) and target t [N, d1..dk]:
//   tc   = clamp(t, 0, C-1)                        (an ignored target may lie outside [0, C))
//   loss = -GatherElements(x, tc[:, None], axis 1)  [N, d1..dk]
//   w    = weight[tc] (Gather) or 1; w = 0 where t == ignore_index; loss = w * loss, and 0
//          where ignored (a Where, so an ignored row's inf/NaN does not leak through)
//   none: loss; sum: ReduceSum(loss); mean: ReduceSum(loss) / ReduceSum(w) when a weight or an
//   ignore_index is given (ONNX: the sum of the applied weights), else ReduceMean(loss).
// Why the clamp: a target that is not ignore_index but lies outside [0, C) is an error in ONNX;
// the runtime cannot refuse it, so the read is clamped into the row (no out-of-bounds access).
// Constant targets out of range (and not ignored) are refused at import with the node named.
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

/// Both losses; `softmax` adds the LogSoftmax (and its log_prob output).
Result importLoss(ImportContext &c, const NodeView &n, bool softmax) {
  const char *op = softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";
  if (n.opset < 12)
    return c.error(n, std::string(op) + " needs opset 12 or later (the model imports opset " +
                          std::to_string(n.opset) + ")");
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(target, c.need(n, 1));
  Value weight = n.input(2);
  const Shape xs = c.shapeOf(x), ts = c.shapeOf(target);
  const Type elem = c.elemOf(x);
  if (!c.isFloat(elem))
    return c.error(n, "input must be floating point");
  if (xs.size() < 2)
    return c.error(n, "input must have rank >= 2 ([N, C, d1..dk]), got " + shapeToString(xs));
  if (!c.elemOf(target).isSignlessInteger() || c.elemOf(target).isInteger(1))
    return c.error(n, "target must be int32 or int64");
  Shape want{xs[0]};
  want.insert(want.end(), xs.begin() + 2, xs.end());
  if (ts != want)
    return c.error(n, "target shape " + shapeToString(ts) + " must be " + shapeToString(want) +
                          " (the input " + shapeToString(xs) + " without its class dim 1)");
  const int64_t C = xs[1];
  if (C < 1)
    return c.error(n, "the class dim (1) of input " + shapeToString(xs) + " is empty");
  if (weight && (c.elemOf(weight) != elem || c.shapeOf(weight) != Shape{C}))
    return c.error(n, "weight must be a [" + std::to_string(C) + "] tensor of the input's type");
  const std::string reduction = n.attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return c.error(n, "reduction '" + reduction + "' is not one of none, sum, mean");
  const bool hasIgnore = n.attr("ignore_index") != nullptr;
  const int64_t ignore = n.attrInt("ignore_index", 0);
  if (auto vals = c.constInts(target))
    for (int64_t v : *vals)
      if ((!hasIgnore || v != ignore) && (v < 0 || v >= C))
        return c.error(n, "target " + std::to_string(v) + " out of range [0, " +
                              std::to_string(C) + ")");

  Location loc = n.loc;
  Value logp = x;
  if (softmax)
    logp = c.emit<tg::SoftmaxOp>(loc, x.getType(), x, (uint64_t)1, true);
  Value t = c.cast(loc, target, c.i64());
  Value tc = c.binary<tg::MaxOp>(
      loc, c.binary<tg::MinOp>(loc, t, c.splat(loc, (double)(C - 1), c.i64())),
      c.splat(loc, 0, c.i64()));
  Shape is = ts;
  is.insert(is.begin() + 1, 1);
  Value picked = c.emit<tg::GatherElementsOp>(loc, c.type(is, elem), logp, c.reshape(loc, tc, is),
                                              (uint64_t)1);
  Value loss = c.unary<tg::NegOp>(loc, c.reshape(loc, picked, ts));
  Value w; // the applied weight per position, when not all ones
  if (weight)
    w = c.emit<tg::GatherOp>(loc, c.type(ts, elem), weight, tc, (uint64_t)0);
  if (hasIgnore) {
    Value ignored = c.binary<tg::EqualOp>(loc, t, c.splat(loc, (double)ignore, c.i64()), true);
    Value zero = c.splat(loc, 0, elem);
    w = c.emit<tg::WhereOp>(loc, c.type(ts, elem), ignored, zero,
                            w ? w : c.splat(loc, 1, elem));
    loss = c.emit<tg::WhereOp>(loc, c.type(ts, elem), ignored, zero, loss);
  }
  if (weight)
    loss = c.binary<tg::MulOp>(loc, loss, w);
  Values out;
  if (reduction == "none") {
    out.push_back(loss);
  } else {
    std::vector<int64_t> all(ts.size());
    for (size_t i = 0; i < all.size(); ++i)
      all[i] = (int64_t)i;
    auto sum = [&](Value v) {
      return c.emit<tg::ReduceSumOp>(loc, c.type({}, elem), v, c.b.getI64ArrayAttr(all), false);
    };
    if (reduction == "sum")
      out.push_back(sum(loss));
    else if (w)
      out.push_back(c.binary<tg::DivOp>(loc, sum(loss), sum(w)));
    else
      out.push_back(
          c.emit<tg::ReduceMeanOp>(loc, c.type({}, elem), loss, c.b.getI64ArrayAttr(all), false));
  }
  if (softmax)
    out.push_back(logp);
  return out;
}

} // namespace

void registerLossOps(OpTable &t) {
  t["NegativeLogLikelihoodLoss"] = [](ImportContext &c, const NodeView &n) {
    return importLoss(c, n, false);
  };
  t["SoftmaxCrossEntropyLoss"] = [](ImportContext &c, const NodeView &n) {
    return importLoss(c, n, true);
  };
}

} // namespace tgc::onnx_import
