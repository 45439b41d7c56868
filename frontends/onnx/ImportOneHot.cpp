// ImportOneHot.cpp — ops whose result marks positions along an axis, lowered to a comparison with
// a constant iota (0, 1, ..., n-1 laid along the axis) and a select:
//   Hardmax: 1 where the index equals the axis's first arg-max, else 0;
//   OneHot:  `on` where the index equals the (wrapped) index input, else `off`;
//   EyeLike: 1 on the k-th diagonal of a 2-D shape, else 0 (a constant).
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"
#include "frontends/onnx/ModelLoader.h"

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

/// 0 .. n-1 as i64, shaped to lie along `axis` of a rank-`rank` tensor (1s elsewhere).
Value iotaAlong(ImportContext &c, Location loc, int64_t n, int64_t axis, int64_t rank) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = i;
  Shape s(rank, 1);
  s[axis] = n;
  return c.reshape(loc, c.constI64(loc, v), s);
}

Result importHardmax(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  const Shape xs = c.shapeOf(x);
  const int64_t r = (int64_t)xs.size();
  if (r == 0)
    return c.error(n, "input must have rank >= 1");
  int64_t axis = n.attrInt("axis", -1);
  if (axis < -r || axis >= r)
    return c.error(n, "axis " + std::to_string(axis) + " is out of range for rank " +
                          std::to_string(r));
  axis = axis < 0 ? axis + r : axis;
  if (n.opset < 13) // before opset 13: the input is seen as 2-D, [d0 * ... * d(axis-1), rest]
    return c.error(n, "Hardmax before opset 13 is not supported");
  Shape ks = xs;
  ks[axis] = 1;
  Value am = c.emit<tg::ArgMaxOp>(n.loc, c.type(ks, c.i64()), x, (uint64_t)axis, true, false);
  Value hit = c.binary<tg::EqualOp>(n.loc, iotaAlong(c, n.loc, xs[axis], axis, r), am, true);
  return Values{c.cast(n.loc, c.expand(n.loc, hit, xs), c.elemOf(x))};
}

Result importOneHot(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(idx, c.need(n, 0));
  TGC_ASSIGN(values, c.need(n, 2));
  TGC_ASSIGN(depthIn, c.need(n, 1));
  auto depthV = c.constDoubles(depthIn); // any numeric type
  if (!depthV)
    return c.error(n, "depth input must be constant" + c.bindHint(depthIn));
  if (depthV->size() != 1 || !((*depthV)[0] >= 1) || (*depthV)[0] > 1e9)
    return c.error(n, "depth must be one positive value");
  const int64_t depth = (int64_t)(*depthV)[0];
  if (c.shapeOf(values) != Shape{2})
    return c.error(n, "values must hold [off, on]");
  const Shape is = c.shapeOf(idx);
  const int64_t r = (int64_t)is.size() + 1;
  int64_t axis = n.attrInt("axis", -1);
  if (axis < -r || axis >= r)
    return c.error(n, "axis " + std::to_string(axis) + " is out of range for rank " +
                          std::to_string(r));
  axis = axis < 0 ? axis + r : axis;
  // Indices (any numeric type) as i64, negative ones counted from the end.
  Value i = c.cast(n.loc, idx, c.i64());
  Value wrapped = c.binary<tg::AddOp>(n.loc, i, c.splat(n.loc, (double)depth, c.i64()));
  i = c.emit<tg::WhereOp>(n.loc, i.getType(),
                          c.binary<tg::LessOp>(n.loc, i, c.splat(n.loc, 0, c.i64()), true), wrapped,
                          i);
  Shape es = is;
  es.insert(es.begin() + axis, 1);
  Shape os = is;
  os.insert(os.begin() + axis, depth);
  Value hit = c.binary<tg::EqualOp>(n.loc, c.reshape(n.loc, i, es),
                                    iotaAlong(c, n.loc, depth, axis, r), true);
  auto pick = [&](int64_t k) {
    std::vector<int64_t> one{k};
    return c.emit<tg::GatherOp>(n.loc, c.type({}, c.elemOf(values)), values,
                                c.reshape(n.loc, c.constI64(n.loc, one), {}), (uint64_t)0);
  };
  Value out = c.emit<tg::WhereOp>(n.loc, c.type(os, c.elemOf(values)), hit, pick(1), pick(0));
  return Values{out};
}

Result importEyeLike(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  const Shape xs = c.shapeOf(x);
  if (xs.size() != 2)
    return c.error(n, "input must be 2-D");
  const int64_t k = n.attrInt("k", 0);
  Type elem = c.elemOf(x);
  if (n.attrInt("dtype", -1) >= 0) {
    auto dt = dtypeFromOnnx((int)n.attrInt("dtype", 1), "dtype");
    if (!dt)
      return dt.takeError();
    elem = mlirElementType(*dt, c.ctx);
  }
  // Row index + k == column index.
  Value rows = c.binary<tg::AddOp>(n.loc, iotaAlong(c, n.loc, xs[0], 0, 2),
                                   c.splat(n.loc, (double)k, c.i64()));
  Value hit = c.binary<tg::EqualOp>(n.loc, rows, iotaAlong(c, n.loc, xs[1], 1, 2), true);
  return Values{c.cast(n.loc, c.expand(n.loc, hit, xs), elem)};
}

} // namespace

void registerOneHotOps(OpTable &t) {
  t["Hardmax"] = importHardmax;
  t["OneHot"] = importOneHot;
  t["EyeLike"] = importEyeLike;
}

} // namespace tgc::onnx_import
