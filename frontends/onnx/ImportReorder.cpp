// ImportReorder.cpp — ops that move elements to places known at compile time, lowered to
// gathers with constant indices (and a pad):
//   Compress:        the positions where a constant condition holds, along an axis (or flat);
//   ReverseSequence: each batch entry's first sequence_lens[b] time steps reversed (the index
//                    computed at run time from the lengths: they may be a graph input);
//   CenterCropPad:   each listed axis cropped or zero-padded to a size, centred.
// CenterCropPad's shape decides the result's shape: it must be constant (or bound with
// --bind-input); a Compress condition known only at run time gives a data-dependent extent
// (compressDynamic, ImportDynamic.cpp).
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

Result importCompress(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(cond, c.need(n, 1));
  auto keep = c.constDoubles(cond);
  if (!keep) { // known at run time: a data-dependent extent (ImportDynamic.cpp)
    const int64_t r = c.rankOf(x);
    int64_t axis = n.attr("axis") ? n.attrInt("axis", 0) : -1;
    if (n.attr("axis") && (axis < -r || axis >= r))
      return c.error(n, "axis " + std::to_string(axis) + " is out of range for rank " +
                            std::to_string(r));
    TGC_ASSIGN(out, compressDynamic(c, n, x, cond, axis < 0 && n.attr("axis") ? axis + r : axis));
    return Values{out};
  }
  if (c.rankOf(cond) != 1)
    return c.error(n, "condition must be 1-D");
  int64_t axis = 0;
  if (n.attr("axis")) {
    const int64_t r = c.rankOf(x);
    axis = n.attrInt("axis", 0);
    if (axis < -r || axis >= r)
      return c.error(n, "axis " + std::to_string(axis) + " is out of range for rank " +
                            std::to_string(r));
    axis = axis < 0 ? axis + r : axis;
  } else {
    auto total = numElements(c.shapeOf(x));
    if (!total)
      return c.error(n, "input is too large");
    x = c.reshape(n.loc, x, {*total});
  }
  const Shape xs = c.shapeOf(x);
  if ((int64_t)keep->size() > xs[axis])
    return c.error(n, "condition has " + std::to_string(keep->size()) + " entries for " +
                          std::to_string(xs[axis]) + " elements");
  std::vector<int64_t> idx;
  for (size_t i = 0; i < keep->size(); ++i)
    if ((*keep)[i] != 0)
      idx.push_back((int64_t)i);
  Shape os = xs;
  os[axis] = (int64_t)idx.size();
  return Values{c.emit<tg::GatherOp>(n.loc, c.type(os, c.elemOf(x)), x, c.constI64(n.loc, idx),
                                     (uint64_t)axis)};
}

Result importReverseSequence(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(lens, c.need(n, 1));
  const Shape xs = c.shapeOf(x);
  const int64_t r = (int64_t)xs.size();
  const int64_t ba = n.attrInt("batch_axis", 1), ta = n.attrInt("time_axis", 0);
  if (r < 2 || !((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
    return c.error(n, "batch_axis and time_axis must be 0 and 1 (either way) of a rank >= 2 input");
  if (c.shapeOf(lens) != Shape{xs[ba]} || !c.elemOf(lens).isa<IntegerType>())
    return c.error(n, "sequence_lens must hold one integer per batch entry");
  // GatherElements along the time axis, its index computed at run time from the lengths:
  // idx = t < len[b] ? len[b] - 1 - t : t (a length past the time axis reads in bounds: the
  // gather clamps).
  std::vector<int64_t> ts(xs[ta]);
  for (int64_t t = 0; t < xs[ta]; ++t)
    ts[t] = t;
  Shape tShape(r, 1), bShape(r, 1);
  tShape[ta] = xs[ta];
  bShape[ba] = xs[ba];
  Value t = c.reshape(n.loc, c.constI64(n.loc, ts), tShape);
  Value len = c.reshape(n.loc, c.cast(n.loc, lens, c.i64()), bShape);
  Value rev = c.binary<tg::SubOp>(
      n.loc, c.binary<tg::SubOp>(n.loc, len, c.splat(n.loc, 1, c.i64())), t);
  Value inside = c.binary<tg::LessOp>(n.loc, t, len, true);
  Shape two(r, 1);
  two[ta] = xs[ta], two[ba] = xs[ba];
  Value idx = c.emit<tg::WhereOp>(n.loc, c.type(two, c.i64()), inside, rev,
                                  c.expand(n.loc, t, two));
  return Values{c.emit<tg::GatherElementsOp>(n.loc, x.getType(), x, c.expand(n.loc, idx, xs),
                                             c.b.getI64IntegerAttr(ta))};
}

Result importCenterCropPad(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(shape, c.requireInts(n, 1, "shape"));
  Shape xs = c.shapeOf(x);
  const int64_t r = (int64_t)xs.size();
  TGC_ASSIGN(axes, c.axesAttr(n, r));
  if (shape.size() != axes.size())
    return c.error(n, "shape needs one size per axis");
  Value y = x;
  std::vector<int64_t> pads(2 * r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i], dim = xs[a], want = shape[i];
    if (want < 0)
      return c.error(n, "sizes must be non-negative");
    if (want < dim) { // crop, the extra element (odd difference) off the end
      std::vector<int64_t> idx(want);
      for (int64_t k = 0; k < want; ++k)
        idx[k] = (dim - want) / 2 + k;
      Shape ys = c.shapeOf(y);
      ys[a] = want;
      y = c.emit<tg::GatherOp>(n.loc, c.type(ys, c.elemOf(x)), y, c.constI64(n.loc, idx),
                               (uint64_t)a);
    } else if (want > dim) { // pad with zeros, the extra one at the end
      pads[a] = (want - dim) / 2;
      pads[a + r] = want - dim - pads[a];
    }
  }
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; })) {
    Shape ys = c.shapeOf(y);
    for (int64_t d = 0; d < r; ++d)
      ys[d] += pads[d] + pads[d + r];
    y = c.emit<tg::PadOp>(n.loc, c.type(ys, c.elemOf(x)), y, c.b.getI64ArrayAttr(pads),
                          c.b.getF64FloatAttr(0.0));
  }
  return Values{y};
}

} // namespace

void registerReorderOps(OpTable &t) {
  t["Compress"] = importCompress;
  t["ReverseSequence"] = importReverseSequence;
  t["CenterCropPad"] = importCenterCropPad;
}

} // namespace tgc::onnx_import
