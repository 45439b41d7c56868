// ImportGatherND.cpp — ONNX GatherND (opsets 11-13, batch_dims) by decomposition into ops tg
// already has, so both backends run it without a new op:
//   each index tuple idx[..., 0:m] (negatives wrapped, then clamped to [0, dim-1] per axis)
//   becomes one linear index sum_k idx[..., k] * stride_k (+ the batch offset, a constant, for
//   batch_dims > 0); the data is reshaped to [prod(leading b+m dims), rest...] and gathered along
//   axis 0, which already has the ONNX output shape.
//
// Why the clamp: the runtime's index bounds (runtime/IndexBounds) follow a graph input to a
// Gather only through reshapes, broadcasts and widening casts, so an index computed from an input
// is not checked at run time. Kernels clamp a Gather index to the flattened axis, which keeps the
// read in bounds but would let an out-of-range component spill into a neighbouring row; clamping
// each component to its own axis keeps the element read on the row ONNX names, like Gather's
// clamp. Constant indices out of range are refused at import with the node named.
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

Result importGatherND(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(data, c.need(n, 0));
  TGC_ASSIGN(idx, c.need(n, 1));
  const Shape ds = c.shapeOf(data), is = c.shapeOf(idx);
  const int64_t r = (int64_t)ds.size(), q = (int64_t)is.size();
  const int64_t b = n.opset >= 12 ? n.attrInt("batch_dims", 0) : 0;
  if (n.opset < 11)
    return c.error(n, "GatherND needs opset 11 or later (the model imports opset " +
                          std::to_string(n.opset) + ")");
  if (!c.elemOf(idx).isSignlessInteger() || c.elemOf(idx).isInteger(1))
    return c.error(n, "indices must be int32 or int64");
  if (r < 1 || q < 1)
    return c.error(n, "data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    return c.error(n, "batch_dims " + std::to_string(b) + " must lie in [0, min(rank(data) " +
                          std::to_string(r) + ", rank(indices) " + std::to_string(q) + "))");
  for (int64_t i = 0; i < b; ++i)
    if (ds[i] != is[i])
      return c.error(n, "batch dim " + std::to_string(i) + " differs: data " + shapeToString(ds) +
                            ", indices " + shapeToString(is));
  const int64_t m = is[q - 1];
  if (m < 1 || m > r - b)
    return c.error(n, "the indices' last dim " + std::to_string(m) + " must lie in [1, " +
                          std::to_string(r - b) + "] (data rank " + std::to_string(r) +
                          " minus batch_dims " + std::to_string(b) + ")");
  if (auto vals = c.constInts(idx))
    for (size_t i = 0; i < vals->size(); ++i) {
      const int64_t dim = ds[b + (int64_t)(i % m)], v = (*vals)[i];
      if (v < -dim || v >= dim)
        return c.error(n, "index " + std::to_string(v) + " out of range for dim " +
                              std::to_string(dim));
    }

  Location loc = n.loc;
  // Per-axis dims and strides laid along the indices' last axis.
  std::vector<int64_t> dims(m), strides(m);
  for (int64_t k = 0; k < m; ++k) {
    dims[k] = ds[b + k];
    strides[k] = product(ds, b + k + 1, b + m);
  }
  std::vector<int64_t> dimsLess1(dims);
  for (int64_t &d : dimsLess1)
    d -= 1;
  Value i = c.cast(loc, idx, c.i64());
  Value zero = c.splat(loc, 0, c.i64());
  Value wrapped = c.binary<tg::AddOp>(loc, i, c.constI64(loc, dims));
  i = c.emit<tg::WhereOp>(loc, i.getType(), c.binary<tg::LessOp>(loc, i, zero, true), wrapped, i);
  i = c.binary<tg::MaxOp>(loc, c.binary<tg::MinOp>(loc, i, c.constI64(loc, dimsLess1)), zero);
  Shape lead(is.begin(), is.end() - 1); // the indices' leading dims: the gather's index shape
  Value linear = c.binary<tg::MulOp>(loc, i, c.constI64(loc, strides));
  linear = c.emit<tg::ReduceSumOp>(loc, c.type(lead, c.i64()), linear, c.b.getI64ArrayAttr({q - 1}),
                                   false);
  if (b > 0) { // + (flat batch position) * rows per batch
    const int64_t batches = product(is, 0, b), rows = product(ds, b, b + m);
    std::vector<int64_t> offs(batches);
    for (int64_t k = 0; k < batches; ++k)
      offs[k] = k * rows;
    Shape os(is.begin(), is.begin() + b);
    os.resize(lead.size(), 1);
    linear = c.binary<tg::AddOp>(loc, linear, c.reshape(loc, c.constI64(loc, offs), os));
  }
  Shape flat{product(ds, 0, b + m)};
  flat.insert(flat.end(), ds.begin() + b + m, ds.end());
  Shape out = lead;
  out.insert(out.end(), ds.begin() + b + m, ds.end());
  Value rows = c.reshape(loc, data, flat);
  return Values{c.emit<tg::GatherOp>(loc, c.type(out, c.elemOf(data)), rows, linear, (uint64_t)0)};
}

} // namespace

void registerGatherNDOps(OpTable &t) { t["GatherND"] = importGatherND; }

} // namespace tgc::onnx_import
