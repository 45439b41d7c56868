// ImportIndexOps.cpp — ONNX CumSum, ScatterElements / Scatter, ScatterND and TopK as the tg
// indexing ops (tg.cumsum, tg.scatter_elements, tg.topk; the kernels are codegen/common/IndexEmit).
//
// ScatterND has no op of its own: the data is seen as [rows, slice] (rows: the dims an index
// tuple names, slice: the rest), each index tuple becomes one row number
// sum_k wrap(idx[..., k]) * stride_k (a tuple with a component out of range becomes `rows`, which
// the scatter skips, so it cannot spill into a neighbouring row), broadcast over the slice, and
// the updates seen as [tuples, slice] are scattered along axis 0 — the same updates in the same
// order as ONNX's loop. Constant indices out of range are refused at import with the node named.
// CumSum's axis and TopK's k must be constant (a graph input may be bound at compile time).
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

int64_t product(const Shape &s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= s[i];
  return p;
}

bool isIndexType(Type t) { return t.isSignlessInteger(32) || t.isSignlessInteger(64); }

/// A 0/1 attribute; anything else is refused.
llvm::Expected<bool> flag(const NodeView &n, const char *name) {
  const int64_t v = n.attrInt(name, 0);
  if (v != 0 && v != 1)
    return ImportContext::error(n, llvm::Twine(name) + " must be 0 or 1, got " + llvm::Twine(v));
  return v == 1;
}

Result importCumSum(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(axes, c.requireInts(n, 1, "axis"));
  if (axes.size() != 1 || c.rankOf(n.input(1)) > 1)
    return c.error(n, "axis must be a scalar or a one-element tensor");
  if (c.elemOf(x).isInteger(1) || !c.elemOf(x).isIntOrFloat())
    return c.error(n, "input must be numeric");
  TGC_ASSIGN(axis, checkAxis(n, axes[0], c.rankOf(x)));
  TGC_ASSIGN(exclusive, flag(n, "exclusive"));
  TGC_ASSIGN(reverse, flag(n, "reverse"));
  return Values{c.emit<tg::CumsumOp>(n.loc, x.getType(), x, (uint64_t)axis, exclusive, reverse)};
}

/// The node's reduction (none when absent; opset 16 adds add and mul, 18 max and min).
llvm::Expected<std::string> reductionOf(ImportContext &c, const NodeView &n, Value data) {
  const std::string r = n.attrString("reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return c.error(n, "reduction '" + r + "' is not one of none, add, mul, max, min");
  if (r != "none" && c.elemOf(data).isInteger(1))
    return c.error(n, "reduction '" + r + "' needs numeric data, not bool");
  return r;
}

/// Refuses constant indices outside [-dim, dim), `dimOf(i)` the dim index i addresses.
llvm::Error checkConstIndices(const NodeView &n, Value idx,
                              const std::function<int64_t(size_t)> &dimOf) {
  if (auto vals = ImportContext::constInts(idx))
    for (size_t i = 0; i < vals->size(); ++i) {
      const int64_t dim = dimOf(i), v = (*vals)[i];
      if (v < -dim || v >= dim)
        return ImportContext::error(n, "index " + std::to_string(v) + " out of range for dim " +
                                           std::to_string(dim));
    }
  return llvm::Error::success();
}

/// ScatterElements (opsets 11-18) and the deprecated Scatter (opsets 9-10, no reduction).
Result importScatterElements(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(data, c.need(n, 0));
  TGC_ASSIGN(idx, c.need(n, 1));
  TGC_ASSIGN(upd, c.need(n, 2));
  const Shape ds = c.shapeOf(data), is = c.shapeOf(idx);
  if (!isIndexType(c.elemOf(idx)))
    return c.error(n, "indices must be int32 or int64");
  if (is.size() != ds.size() || c.shapeOf(upd) != is)
    return c.error(n, "indices " + shapeToString(is) + " and updates " +
                          shapeToString(c.shapeOf(upd)) + " must have one shape of rank " +
                          std::to_string(ds.size()) + " (data " + shapeToString(ds) + ")");
  if (c.elemOf(upd) != c.elemOf(data))
    return c.error(n, "updates must have the data's element type");
  TGC_ASSIGN(axis, checkAxis(n, n.attrInt("axis", 0), (int64_t)ds.size()));
  for (size_t k = 0; k < ds.size(); ++k)
    if ((int64_t)k != axis && is[k] > ds[k])
      return c.error(n, "indices " + shapeToString(is) + " are larger than the data " +
                            shapeToString(ds) + " on dim " + std::to_string(k));
  TGC_ASSIGN(red, reductionOf(c, n, data));
  if (auto e = checkConstIndices(n, idx, [&](size_t) { return ds[axis]; }))
    return std::move(e);
  return Values{c.emit<tg::ScatterElementsOp>(n.loc, data.getType(), data, idx, upd, (uint64_t)axis,
                                              c.b.getStringAttr(red))};
}

/// ScatterND (opsets 11-18): a scatter along axis 0 of the data seen as [rows, slice].
Result importScatterND(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(data, c.need(n, 0));
  TGC_ASSIGN(idx, c.need(n, 1));
  TGC_ASSIGN(upd, c.need(n, 2));
  const Shape ds = c.shapeOf(data), is = c.shapeOf(idx), us = c.shapeOf(upd);
  const int64_t r = (int64_t)ds.size(), qi = (int64_t)is.size();
  if (!c.elemOf(idx).isSignlessInteger(64) && !c.elemOf(idx).isSignlessInteger(32))
    return c.error(n, "indices must be int32 or int64");
  if (r < 1 || qi < 1)
    return c.error(n, "data and indices must have rank >= 1");
  const int64_t q = is[qi - 1];
  if (q < 1 || q > r)
    return c.error(n, "the indices' last dim " + std::to_string(q) + " must lie in [1, " +
                          std::to_string(r) + "] (the data's rank)");
  Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), ds.begin() + q, ds.end());
  if (us != want)
    return c.error(n, "updates " + shapeToString(us) + " should be " + shapeToString(want) +
                          " (indices " + shapeToString(is) + ", data " + shapeToString(ds) + ")");
  if (c.elemOf(upd) != c.elemOf(data))
    return c.error(n, "updates must have the data's element type");
  TGC_ASSIGN(red, reductionOf(c, n, data));
  if (auto e = checkConstIndices(n, idx, [&](size_t i) { return ds[i % q]; }))
    return std::move(e);

  Location loc = n.loc;
  const int64_t P = product(ds, 0, q), S = product(ds, q, r), M = product(is, 0, qi - 1);
  std::vector<int64_t> dims(ds.begin(), ds.begin() + q), strides(q);
  for (int64_t k = 0; k < q; ++k)
    strides[k] = product(ds, k + 1, q);
  Value i = c.reshape(loc, c.cast(loc, idx, c.i64()), {M, q});
  Value zero = c.splat(loc, 0, c.i64());
  Value dimsV = c.constI64(loc, dims);
  Value wrapped = c.binary<tg::AddOp>(loc, i, dimsV);
  i = c.emit<tg::WhereOp>(loc, i.getType(), c.binary<tg::LessOp>(loc, i, zero, true), wrapped, i);
  // 1 where a component lies in [0, dim), else 0; a tuple with any 0 names no row.
  Value inside = c.cast(loc,
                        c.binary<tg::AndOp>(loc, c.binary<tg::GreaterEqualOp>(loc, i, zero, true),
                                            c.binary<tg::LessOp>(loc, i, dimsV, true)),
                        c.i64());
  Value ok =
      c.emit<tg::ReduceMinOp>(loc, c.type({M}, c.i64()), inside, c.b.getI64ArrayAttr({1}), false);
  Value row = c.emit<tg::ReduceSumOp>(loc, c.type({M}, c.i64()),
                                      c.binary<tg::MulOp>(loc, i, c.constI64(loc, strides)),
                                      c.b.getI64ArrayAttr({1}), false);
  row = c.emit<tg::WhereOp>(loc, row.getType(), c.binary<tg::EqualOp>(loc, ok, zero, true),
                            c.splat(loc, (double)P, c.i64()), row);
  Value rows = c.expand(loc, c.reshape(loc, row, {M, 1}), {M, S});
  Value flat = c.reshape(loc, data, {P, S});
  Value scattered =
      c.emit<tg::ScatterElementsOp>(loc, flat.getType(), flat, rows, c.reshape(loc, upd, {M, S}),
                                    (uint64_t)0, c.b.getStringAttr(red));
  return Values{c.reshape(loc, scattered, ds)};
}

/// TopK (opset 1: k an attribute; 10+: a constant input; 11 adds largest and sorted).
Result importTopK(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  const Shape xs = c.shapeOf(x);
  if (xs.empty())
    return c.error(n, "input must have rank >= 1");
  if (c.elemOf(x).isInteger(1) || !c.elemOf(x).isIntOrFloat())
    return c.error(n, "input must be numeric");
  int64_t k = n.attrInt("k", -1);
  if (n.opset >= 10) {
    TGC_ASSIGN(ks, c.requireInts(n, 1, "K"));
    if (ks.size() != 1)
      return c.error(n, "K must hold one value");
    k = ks[0];
  }
  TGC_ASSIGN(axis, checkAxis(n, n.attrInt("axis", -1), (int64_t)xs.size()));
  if (k < 0 || k > xs[axis])
    return c.error(n, "k = " + std::to_string(k) + " must lie in [0, " + std::to_string(xs[axis]) +
                          "] (the size of axis " + std::to_string(axis) + ")");
  TGC_ASSIGN(largest, [&]() -> llvm::Expected<bool> {
    const int64_t v = n.attrInt("largest", 1);
    if (v != 0 && v != 1)
      return c.error(n, "largest must be 0 or 1, got " + std::to_string(v));
    return v == 1;
  }());
  const int64_t sorted = n.attrInt("sorted", 1);
  if (sorted != 0 && sorted != 1)
    return c.error(n, "sorted must be 0 or 1, got " + std::to_string(sorted));
  Shape os = xs;
  os[axis] = k;
  return c.emitAll<tg::TopkOp>(n.loc, c.type(os, c.elemOf(x)), c.type(os, c.i64()), x,
                               (uint64_t)axis, largest, sorted == 1);
}

} // namespace

void registerIndexOps(OpTable &t) {
  t["CumSum"] = importCumSum;
  t["ScatterElements"] = importScatterElements;
  t["Scatter"] = importScatterElements;
  t["ScatterND"] = importScatterND;
  t["TopK"] = importTopK;
}

} // namespace tgc::onnx_import
