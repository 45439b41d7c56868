// ImportShapeOps.cpp — ONNX data-movement and shape ops → `tg` reshape/transpose/slice/... .
//
// Shapes are static, so the shape-computing ops (Shape, Size, ConstantOfShape, Range) become
// constants, and the ops that take shapes as tensors (Reshape, Expand, Slice, Tile, Pad, Split,
// Unsqueeze/Squeeze) read them from constants — which the exporters' Shape→Gather→Concat chains
// have become by the time they are used, thanks to folding in ImportContext::finish.
#include "frontends/onnx/ImportContext.h"

#include "frontends/onnx/ModelLoader.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace tgc::onnx_import {

using namespace mlir;
using Values = std::vector<Value>;
using Result = llvm::Expected<Values>;

namespace {

std::string intsToString(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

Result importReshape(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  std::vector<int64_t> spec;
  if (n.opset >= 5) {
    TGC_ASSIGN(s, c.requireInts(n, 1, "shape"));
    spec = s;
  } else {
    spec = n.attrInts("shape").value_or(std::vector<int64_t>{});
  }
  bool allowZero = n.attrInt("allowzero", 0) != 0;
  Shape in = c.shapeOf(x), out;
  int64_t infer = -1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return c.error(n, "shape " + intsToString(spec) + " copies dim " + std::to_string(i) +
                              " (0) but the input " + shapeToString(in) + " has rank " +
                              std::to_string(in.size()));
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0)
        return c.error(n, "shape " + intsToString(spec) + " has more than one -1");
      infer = (int64_t)i;
    } else if (d < 0) {
      return c.error(n, "shape " + intsToString(spec) + " has a negative dim");
    }
    out.push_back(d);
  }
  int64_t total = *numElements(in);
  if (infer >= 0) {
    Shape rest = out;
    rest[infer] = 1;
    auto known = numElements(rest);
    if (!known || *known == 0 || total % *known != 0)
      return c.error(n, "cannot reshape " + shapeToString(in) + " to " + intsToString(spec));
    out[infer] = total / *known;
  }
  auto outTotal = numElements(out);
  if (!outTotal || *outTotal != total)
    return c.error(n, "cannot reshape " + shapeToString(in) + " (" + std::to_string(total) +
                          " elements) to " + intsToString(spec));
  return Values{c.reshape(n.loc, x, out)};
}

Result importShape(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  Shape s = c.shapeOf(x);
  int64_t r = (int64_t)s.size();
  auto clampIdx = [r](int64_t i) {
    if (i < 0)
      i += r;
    return std::min(std::max(i, int64_t(0)), r);
  };
  int64_t start = clampIdx(n.attrInt("start", 0));
  int64_t end = n.attr("end") ? clampIdx(n.attrInt("end", r)) : r;
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i)
    dims.push_back(s[i]);
  return Values{c.constI64(n.loc, dims)};
}

Result importSize(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  return Values{c.splat(n.loc, (double)*numElements(c.shapeOf(x)), c.i64())};
}

Result importTranspose(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  int64_t r = c.rankOf(x);
  std::vector<int64_t> perm;
  if (auto p = n.attrInts("perm")) {
    perm = *p;
  } else {
    for (int64_t i = r - 1; i >= 0; --i)
      perm.push_back(i);
  }
  std::vector<bool> seen(r, false);
  if ((int64_t)perm.size() != r)
    return c.error(n, "perm " + intsToString(perm) + " does not match rank " + std::to_string(r));
  for (int64_t &p : perm) {
    if (p < 0)
      p += r;
    if (p < 0 || p >= r || seen[p])
      return c.error(n, "perm " + intsToString(perm) + " is not a permutation");
    seen[p] = true;
  }
  return Values{c.transpose(n.loc, x, perm)};
}

Result importSlice(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  Shape in = c.shapeOf(x);
  int64_t r = (int64_t)in.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset >= 10) {
    TGC_ASSIGN(s, c.requireInts(n, 1, "starts"));
    TGC_ASSIGN(e, c.requireInts(n, 2, "ends"));
    starts = s;
    ends = e;
    if (n.input(3)) {
      TGC_ASSIGN(a, c.requireInts(n, 3, "axes"));
      axes = a;
    }
    if (n.input(4)) {
      TGC_ASSIGN(st, c.requireInts(n, 4, "steps"));
      steps = st;
    }
  } else {
    starts = n.attrInts("starts").value_or(std::vector<int64_t>{});
    ends = n.attrInts("ends").value_or(std::vector<int64_t>{});
    axes = n.attrInts("axes").value_or(std::vector<int64_t>{});
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back((int64_t)i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return c.error(n, "starts, ends, axes and steps must have the same length");
  std::vector<int64_t> st(r, 0), sp(r, 1);
  Shape out = in;
  std::vector<bool> seen(r, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    TGC_ASSIGN(axis, checkAxis(n, axes[k], r));
    if (seen[axis])
      return c.error(n, "axis " + std::to_string(axes[k]) + " repeated");
    seen[axis] = true;
    int64_t step = std::max(steps[k], -INT64_MAX);
    if (step == 0)
      return c.error(n, "step must be non-zero");
    int64_t dim = in[axis], start = starts[k], end = ends[k], count = 0;
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    if (step > 0) {
      start = std::clamp(start, int64_t(0), dim);
      end = std::clamp(end, int64_t(0), dim);
      count = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp(start, int64_t(0), dim - 1);
      end = std::clamp(end, int64_t(-1), dim - 1);
      count = start > end ? (start - end - 1) / (-step) + 1 : 0;
    }
    if (count == 0)
      start = 0;
    st[axis] = start;
    sp[axis] = step;
    out[axis] = count;
  }
  bool identity = out == in;
  for (int64_t i = 0; i < r; ++i)
    identity &= st[i] == 0 && sp[i] == 1;
  if (identity)
    return Values{x};
  return Values{c.emit<tg::SliceOp>(n.loc, c.type(out, c.elemOf(x)), x, c.b.getI64ArrayAttr(st),
                                    c.b.getI64ArrayAttr(sp))};
}

Result importConcat(ImportContext &c, const NodeView &n) {
  if (n.inputs.empty())
    return c.error(n, "needs at least one input");
  std::vector<Value> ins;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    TGC_ASSIGN(v, c.need(n, i));
    ins.push_back(v);
  }
  Shape out = c.shapeOf(ins[0]);
  TGC_ASSIGN(axis, checkAxis(n, n.attrInt("axis", 0), (int64_t)out.size()));
  out[axis] = 0;
  for (Value v : ins) {
    Shape s = c.shapeOf(v);
    if (s.size() != out.size() || c.elemOf(v) != c.elemOf(ins[0]))
      return c.error(n, "inputs must share rank and element type");
    for (size_t i = 0; i < s.size(); ++i)
      if ((int64_t)i != axis && s[i] != out[i])
        return c.error(n, "input shapes " + shapeToString(c.shapeOf(ins[0])) + " and " +
                              shapeToString(s) + " differ off the concat axis");
    out[axis] += s[axis];
  }
  if (ins.size() == 1)
    return Values{ins[0]};
  return Values{
      c.emit<tg::ConcatOp>(n.loc, c.type(out, c.elemOf(ins[0])), ValueRange(ins), (uint64_t)axis)};
}

Result importSplit(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  Shape in = c.shapeOf(x);
  TGC_ASSIGN(axis, checkAxis(n, n.attrInt("axis", 0), (int64_t)in.size()));
  int64_t dim = in[axis];
  int64_t nOut = n.proto.output_size();
  std::vector<int64_t> sizes;
  if (n.opset >= 13 && n.input(1)) {
    TGC_ASSIGN(s, c.requireInts(n, 1, "split"));
    sizes = s;
  } else if (n.opset < 13 && n.attr("split")) {
    sizes = *n.attrInts("split");
  } else if (n.opset >= 18 && n.attr("num_outputs")) {
    int64_t k = n.attrInt("num_outputs", 0);
    if (k <= 0 || k != nOut)
      return c.error(n, "num_outputs " + std::to_string(k) + " does not match the " +
                            std::to_string(nOut) + " outputs");
    int64_t chunk = (dim + k - 1) / k;
    for (int64_t i = 0; i < k; ++i)
      sizes.push_back(std::max(int64_t(0), std::min(chunk, dim - chunk * i)));
  } else {
    if (nOut <= 0 || dim % nOut != 0)
      return c.error(n, "dim " + std::to_string(dim) + " does not split evenly into " +
                            std::to_string(nOut) + " outputs");
    sizes.assign(nOut, dim / nOut);
  }
  if ((int64_t)sizes.size() != nOut)
    return c.error(n, "split sizes " + intsToString(sizes) + " do not match the " +
                          std::to_string(nOut) + " outputs");
  int64_t total = 0;
  std::vector<Type> types;
  for (int64_t s : sizes) {
    if (s < 0 || s > dim)
      return c.error(n, "split size " + std::to_string(s) + " out of range");
    total += s;
    Shape o = in;
    o[axis] = s;
    types.push_back(c.type(o, c.elemOf(x)));
  }
  if (total != dim)
    return c.error(n, "split sizes " + intsToString(sizes) + " do not sum to dim " +
                          std::to_string(dim));
  if (nOut == 1)
    return Values{x};
  return c.emitAll<tg::SplitOp>(n.loc, TypeRange(types), x, (uint64_t)axis);
}

/// Constant indices must lie in [-dim, dim).
llvm::Error checkIndices(ImportContext &c, const NodeView &n, Value idx, int64_t dim) {
  if (auto vals = c.constInts(idx))
    for (int64_t v : *vals)
      if (v < -dim || v >= dim)
        return c.error(n, "index " + std::to_string(v) + " out of range for dim " +
                              std::to_string(dim));
  return llvm::Error::success();
}

Result importGather(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(data, c.need(n, 0));
  TGC_ASSIGN(idx, c.need(n, 1));
  Shape d = c.shapeOf(data), is = c.shapeOf(idx);
  TGC_ASSIGN(axis, checkAxis(n, n.attrInt("axis", 0), (int64_t)d.size()));
  if (!c.elemOf(idx).isSignlessInteger() || c.elemOf(idx).isInteger(1))
    return c.error(n, "indices must be int32 or int64");
  if (auto e = checkIndices(c, n, idx, d[axis]))
    return std::move(e);
  Shape out(d.begin(), d.begin() + axis);
  out.insert(out.end(), is.begin(), is.end());
  out.insert(out.end(), d.begin() + axis + 1, d.end());
  return Values{
      c.emit<tg::GatherOp>(n.loc, c.type(out, c.elemOf(data)), data, idx, (uint64_t)axis)};
}

Result importGatherElements(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(data, c.need(n, 0));
  TGC_ASSIGN(idx, c.need(n, 1));
  Shape d = c.shapeOf(data), is = c.shapeOf(idx);
  TGC_ASSIGN(axis, checkAxis(n, n.attrInt("axis", 0), (int64_t)d.size()));
  if (!c.elemOf(idx).isSignlessInteger() || c.elemOf(idx).isInteger(1))
    return c.error(n, "indices must be int32 or int64");
  if (is.size() != d.size())
    return c.error(n, "indices must have the data's rank");
  for (size_t i = 0; i < d.size(); ++i)
    if ((int64_t)i != axis && is[i] > d[i])
      return c.error(n, "indices shape " + shapeToString(is) + " exceeds data shape " +
                            shapeToString(d));
  if (auto e = checkIndices(c, n, idx, d[axis]))
    return std::move(e);
  return Values{
      c.emit<tg::GatherElementsOp>(n.loc, c.type(is, c.elemOf(data)), data, idx, (uint64_t)axis)};
}

Result importExpand(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(shape, c.requireInts(n, 1, "shape"));
  for (int64_t d : shape)
    if (d < 0)
      return c.error(n, "shape " + intsToString(shape) + " has a negative dim");
  auto out = broadcastShapes(c.shapeOf(x), shape);
  if (!out)
    return c.error(n, "input " + shapeToString(c.shapeOf(x)) + " does not broadcast to " +
                          intsToString(shape));
  return Values{c.expand(n.loc, x, *out)};
}

llvm::Expected<std::vector<int64_t>> axesOf(ImportContext &c, const NodeView &n, int64_t fromOpset,
                                            bool required) {
  if (n.opset >= fromOpset) {
    if (!n.input(1)) {
      if (required)
        return c.error(n, "axes input is required");
      return std::vector<int64_t>{};
    }
    return c.requireInts(n, 1, "axes");
  }
  auto a = n.attrInts("axes");
  if (!a && required)
    return c.error(n, "attribute 'axes' is required");
  return a.value_or(std::vector<int64_t>{});
}

Result importUnsqueeze(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(axes, axesOf(c, n, 13, true));
  Shape in = c.shapeOf(x);
  int64_t outRank = (int64_t)(in.size() + axes.size());
  std::vector<bool> inserted(outRank, false);
  for (int64_t a : axes) {
    TGC_ASSIGN(ax, checkAxis(n, a, outRank));
    if (inserted[ax])
      return c.error(n, "axis " + std::to_string(a) + " repeated");
    inserted[ax] = true;
  }
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < outRank; ++i)
    out.push_back(inserted[i] ? 1 : in[j++]);
  return Values{c.reshape(n.loc, x, out)};
}

Result importSqueeze(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(axes, axesOf(c, n, 13, false));
  Shape in = c.shapeOf(x), out;
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < in.size(); ++i)
      drop[i] = in[i] == 1;
  }
  for (int64_t a : axes) {
    TGC_ASSIGN(ax, checkAxis(n, a, (int64_t)in.size()));
    if (in[ax] != 1)
      return c.error(n, "cannot squeeze dim " + std::to_string(a) + " of size " +
                            std::to_string(in[ax]));
    drop[ax] = true;
  }
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i])
      out.push_back(in[i]);
  return Values{c.reshape(n.loc, x, out)};
}

Result importFlatten(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  Shape in = c.shapeOf(x);
  int64_t r = (int64_t)in.size(), axis = n.attrInt("axis", 1);
  if (axis < 0)
    axis += r;
  if (axis < 0 || axis > r)
    return c.error(n, "axis " + std::to_string(n.attrInt("axis", 1)) + " out of range");
  int64_t outer = *numElements(Shape(in.begin(), in.begin() + axis));
  int64_t inner = *numElements(Shape(in.begin() + axis, in.end()));
  return Values{c.reshape(n.loc, x, {outer, inner})};
}

/// A constant of `shape` filled with the single value of `one`.
Value fill(ImportContext &c, Location loc, HostTensor one, const Shape &shape) {
  one.shape = shape;
  if (*numElements(shape) == 0)
    one.data.clear();
  return c.constant(loc, one);
}

Result importConstantOfShape(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(shape, c.requireInts(n, 0, "shape"));
  for (int64_t d : shape)
    if (d < 0)
      return c.error(n, "shape " + intsToString(shape) + " has a negative dim");
  if (!numElements(shape))
    return c.error(n, "shape " + intsToString(shape) + " overflows");
  HostTensor one = HostTensor::zeros(DType::F32, {1});
  if (auto *v = n.attr("value")) {
    auto t = tensorFromProto(v->t(), "");
    if (!t)
      return c.error(n, llvm::toString(t.takeError()));
    if (t->numel() != 1)
      return c.error(n, "value must have one element");
    one = *t;
  }
  return Values{fill(c, n.loc, one, shape)};
}

Result importConstant(ImportContext &c, const NodeView &n) {
  if (n.proto.attribute_size() != 1)
    return c.error(n, "needs exactly one value attribute");
  const auto &a = n.proto.attribute(0);
  const std::string &k = a.name();
  HostTensor t;
  if (k == "value") {
    auto h = tensorFromProto(a.t(), "");
    if (!h)
      return c.error(n, llvm::toString(h.takeError()));
    t = std::move(*h);
  } else if (k == "value_float") {
    t = HostTensor::zeros(DType::F32, {});
    t.as<float>()[0] = a.f();
  } else if (k == "value_floats") {
    t = HostTensor::zeros(DType::F32, {(int64_t)a.floats_size()});
    for (int i = 0; i < a.floats_size(); ++i)
      t.as<float>()[i] = a.floats(i);
  } else if (k == "value_int") {
    t = HostTensor::zeros(DType::I64, {});
    t.as<int64_t>()[0] = a.i();
  } else if (k == "value_ints") {
    t = HostTensor::zeros(DType::I64, {(int64_t)a.ints_size()});
    for (int i = 0; i < a.ints_size(); ++i)
      t.as<int64_t>()[i] = a.ints(i);
  } else {
    return c.error(n, "attribute '" + k + "' is not supported");
  }
  return Values{c.constant(n.loc, t)};
}

Result importRange(ImportContext &c, const NodeView &n) {
  Value in[3];
  for (int i = 0; i < 3; ++i) {
    TGC_ASSIGN(v, c.need(n, i));
    if (!c.isConstant(v) || *numElements(c.shapeOf(v)) != 1)
      return c.error(n, "start, limit and delta must be constant scalars" + c.bindHint(v));
    in[i] = v;
  }
  Type elem = c.elemOf(in[0]);
  auto dtype = DType::F32;
  if (elem.isF64())
    dtype = DType::F64;
  else if (elem.isSignlessInteger(64))
    dtype = DType::I64;
  else if (elem.isSignlessInteger(32))
    dtype = DType::I32;
  else if (elem.isSignlessInteger(16))
    dtype = DType::I16;
  else if (!elem.isF32())
    return c.error(n, "element type must be float, double, int16, int32 or int64");
  HostTensor t;
  if (elem.isa<IntegerType>()) {
    int64_t s = (*c.constInts(in[0]))[0], l = (*c.constInts(in[1]))[0],
            d = (*c.constInts(in[2]))[0];
    if (d == 0)
      return c.error(n, "delta must be non-zero");
    __int128 span = (__int128)l - s;
    __int128 cnt = span / d + (span % d != 0 && ((span > 0) == (d > 0)) ? 1 : 0);
    if (cnt < 0)
      cnt = 0;
    if (cnt > (int64_t(1) << 31))
      return c.error(n, "range of " + std::to_string((int64_t)cnt) + " elements is too large");
    t = HostTensor::zeros(dtype, {(int64_t)cnt});
    for (int64_t i = 0; i < (int64_t)cnt; ++i) {
      int64_t v = s + i * d;
      if (dtype == DType::I64)
        t.as<int64_t>()[i] = v;
      else if (dtype == DType::I16)
        t.as<int16_t>()[i] = (int16_t)v;
      else
        t.as<int32_t>()[i] = (int32_t)v;
    }
  } else {
    double s = (*c.constDoubles(in[0]))[0], l = (*c.constDoubles(in[1]))[0],
           d = (*c.constDoubles(in[2]))[0];
    double cnt = std::ceil((l - s) / d);
    if (!(d != 0) || std::isnan(cnt))
      return c.error(n, "delta must be non-zero and the bounds finite");
    if (cnt < 0)
      cnt = 0;
    if (cnt > double(int64_t(1) << 31))
      return c.error(n, "range is too large");
    t = HostTensor::zeros(dtype, {(int64_t)cnt});
    for (int64_t i = 0; i < (int64_t)cnt; ++i)
      t.set(i, s + (double)i * d);
  }
  return Values{c.constant(n.loc, t)};
}

Result importTile(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(reps, c.requireInts(n, 1, "repeats"));
  Shape in = c.shapeOf(x);
  if (reps.size() != in.size())
    return c.error(n, "repeats " + intsToString(reps) + " must have one entry per dim of " +
                          shapeToString(in));
  Shape inter, wide, out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (reps[i] < 0 || reps[i] > (int64_t(1) << 40))
      return c.error(n, "repeat " + std::to_string(reps[i]) + " out of range");
    if (in[i] > 0 && reps[i] > INT64_MAX / in[i])
      return c.error(n, "result size overflows");
    inter.push_back(1);
    inter.push_back(in[i]);
    wide.push_back(reps[i]);
    wide.push_back(in[i]);
    out.push_back(reps[i] * in[i]);
  }
  if (!numElements(wide))
    return c.error(n, "result size overflows");
  // tile = reshape(expand(reshape(x, [1, d0, 1, d1, ...]), [r0, d0, r1, d1, ...]), [r0*d0, ...])
  Value v = c.reshape(n.loc, x, inter);
  v = c.expand(n.loc, v, wide);
  return Values{c.reshape(n.loc, v, out)};
}

Result importPad(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  std::string mode = n.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return c.error(n, "mode '" + mode + "' is not constant, reflect, edge or wrap");
  Shape in = c.shapeOf(x);
  int64_t r = (int64_t)in.size();
  std::vector<int64_t> pads, axes;
  double value = 0;
  if (n.opset < 11) {
    pads = n.attrInts("pads").value_or(std::vector<int64_t>{});
    value = n.attrFloat("value", 0);
  } else {
    TGC_ASSIGN(p, c.requireInts(n, 1, "pads"));
    pads = p;
    if (Value cv = n.input(2)) {
      auto v = c.constDoubles(cv);
      if (!v)
        return c.error(n, "constant_value input must be constant" + c.bindHint(cv));
      if (v->size() != 1)
        return c.error(n, "constant_value must be a scalar");
      value = (*v)[0];
    }
    if (n.input(3)) {
      TGC_ASSIGN(a, c.requireInts(n, 3, "axes"));
      axes = a;
    }
  }
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    return c.error(n, "pads " + intsToString(pads) + " need two entries per padded axis");
  for (int64_t p : pads)
    if (p > (int64_t(1) << 40) || p < -(int64_t(1) << 40))
      return c.error(n, "pad " + std::to_string(p) + " is out of range");
  std::vector<int64_t> full(2 * r, 0);
  size_t k = axes.size();
  for (size_t i = 0; i < k; ++i) {
    TGC_ASSIGN(ax, checkAxis(n, axes[i], r));
    full[ax] = pads[i];
    full[ax + r] = pads[i + k];
  }
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    int64_t d = in[i] + full[i] + full[i + r];
    if (d < 0 || full[i] < -in[i] || full[i + r] < -in[i])
      return c.error(n, "pads " + intsToString(pads) + " remove more than dim " +
                            std::to_string(i) + " holds");
    out.push_back(d);
  }
  if (std::all_of(full.begin(), full.end(), [](int64_t p) { return p == 0; }))
    return Values{x};
  if (mode != "constant") {
    // reflect / edge / wrap: along each padded axis, a gather whose constant indices say which
    // input element every output element copies (numpy.pad's modes, as the ONNX reference).
    Value y = x;
    for (int64_t d = 0; d < r; ++d) {
      if (full[d] == 0 && full[d + r] == 0)
        continue;
      if (in[d] == 0)
        return c.error(n, "mode '" + mode + "' cannot pad the empty dim " + std::to_string(d));
      if (out[d] > (int64_t(1) << 31))
        return c.error(n, "padded dim " + std::to_string(d) + " is too large");
      std::vector<int64_t> idx(out[d]);
      const int64_t len = in[d], period = 2 * (len - 1);
      for (int64_t o = 0; o < out[d]; ++o) {
        const int64_t src = o - full[d];
        if (mode == "edge") {
          idx[o] = std::clamp<int64_t>(src, 0, len - 1);
        } else if (mode == "wrap") {
          idx[o] = ((src % len) + len) % len;
        } else if (period == 0) {
          idx[o] = 0; // reflecting a single element repeats it
        } else {
          const int64_t m = ((src % period) + period) % period;
          idx[o] = m < len ? m : period - m;
        }
      }
      Shape ys = c.shapeOf(y);
      ys[d] = out[d];
      y = c.emit<tg::GatherOp>(n.loc, c.type(ys, c.elemOf(x)), y, c.constI64(n.loc, idx),
                               (uint64_t)d);
    }
    return Values{y};
  }
  return Values{c.emit<tg::PadOp>(n.loc, c.type(out, c.elemOf(x)), x, c.b.getI64ArrayAttr(full),
                                  c.b.getF64FloatAttr(value))};
}

Result importTrilu(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  Shape s = c.shapeOf(x);
  if (s.size() < 2)
    return c.error(n, "input must have rank >= 2");
  int64_t k = 0;
  if (n.input(1)) {
    TGC_ASSIGN(kv, c.requireInts(n, 1, "k"));
    if (kv.size() != 1)
      return c.error(n, "k must be a scalar");
    k = kv[0];
  }
  bool upper = n.attrInt("upper", 1) != 0;
  int64_t rows = s[s.size() - 2], cols = s.back();
  if (rows * cols > (int64_t(1) << 28))
    return c.error(n,
                   "matrix " + std::to_string(rows) + "x" + std::to_string(cols) + " is too large");
  HostTensor mask = HostTensor::zeros(DType::Bool, {rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.data[i * cols + j] = upper ? (j - i >= k) : (j - i <= k);
  Value m = c.constant(n.loc, mask);
  return Values{c.emit<tg::WhereOp>(n.loc, x.getType(), m, x, c.splat(n.loc, 0, c.elemOf(x)))};
}

/// DepthToSpace (DCR/CRD) and SpaceToDepth as reshape → transpose → reshape.
Result importDepthToSpace(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  Shape s = c.shapeOf(x);
  int64_t bs = n.attrInt("blocksize", 0);
  if (s.size() != 4 || bs <= 0 || s[1] % (bs * bs) != 0)
    return c.error(n, "needs a 4-D input whose channels divide by blocksize^2");
  int64_t N = s[0], C = s[1], H = s[2], W = s[3], oc = C / (bs * bs);
  Value v;
  if (n.attrString("mode", "DCR") == "DCR") {
    v = c.reshape(n.loc, x, {N, bs, bs, oc, H, W});
    v = c.transpose(n.loc, v, {0, 3, 4, 1, 5, 2});
  } else {
    v = c.reshape(n.loc, x, {N, oc, bs, bs, H, W});
    v = c.transpose(n.loc, v, {0, 1, 4, 2, 5, 3});
  }
  return Values{c.reshape(n.loc, v, {N, oc, H * bs, W * bs})};
}

Result importSpaceToDepth(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(x, c.need(n, 0));
  Shape s = c.shapeOf(x);
  int64_t bs = n.attrInt("blocksize", 0);
  if (s.size() != 4 || bs <= 0 || s[2] % bs != 0 || s[3] % bs != 0)
    return c.error(n, "needs a 4-D input whose height and width divide by blocksize");
  int64_t N = s[0], C = s[1], H = s[2] / bs, W = s[3] / bs;
  Value v = c.reshape(n.loc, x, {N, C, H, bs, W, bs});
  v = c.transpose(n.loc, v, {0, 3, 5, 1, 2, 4});
  return Values{c.reshape(n.loc, v, {N, C * bs * bs, H, W})};
}

} // namespace

void registerShapeOps(OpTable &t) {
  t["Reshape"] = importReshape;
  t["Shape"] = importShape;
  t["Size"] = importSize;
  t["Transpose"] = importTranspose;
  t["Slice"] = importSlice;
  t["Concat"] = importConcat;
  t["Split"] = importSplit;
  t["Gather"] = importGather;
  t["GatherElements"] = importGatherElements;
  t["Expand"] = importExpand;
  t["Unsqueeze"] = importUnsqueeze;
  t["Squeeze"] = importSqueeze;
  t["Flatten"] = importFlatten;
  t["ConstantOfShape"] = importConstantOfShape;
  t["Constant"] = importConstant;
  t["Range"] = importRange;
  t["Tile"] = importTile;
  t["Pad"] = importPad;
  t["Trilu"] = importTrilu;
  t["DepthToSpace"] = importDepthToSpace;
  t["SpaceToDepth"] = importSpaceToDepth;
}

} // namespace tgc::onnx_import
