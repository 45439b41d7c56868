// DynamicExtent.cpp — which values have a data-dependent extent, node by node.
//
// NonZero, Unique, NonMaxSuppression and Compress by a computed condition write results of an
// upper-bound shape and a run-time count of valid entries along ONE axis (docs/design.md,
// "Data-dependent shapes"). The importer tracks that (axis, count) per value in
// ImportContext::extents: an op that treats the axis row by row (element-wise, Transpose,
// the Gathers whose indices carry it, Reshape/Slice/Concat/Split/reductions that keep it apart,
// MatMul rows) passes it on; any other op reading such a value is refused here, naming itself
// and the op the length came from, since it would mix padding into valid entries. An output
// that keeps an extent returns its count as an extra @main result (appendOutputCounts).
#include "frontends/onnx/ImportContext.h"

#include <algorithm>
#include <set>

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Extent = DynamicExtent;

const std::set<std::string> &elementwiseOps() {
  // clang-format off
  static const std::set<std::string> ops = {
      "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "BitShift",
      "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "Cast", "CastLike", "Ceil", "Celu",
      "Clip", "Cos", "Cosh", "Div", "Elu", "Equal", "Erf", "Exp", "Floor", "Gelu", "Greater",
      "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity", "IsInf", "IsNaN", "LeakyRelu",
      "Less", "LessOrEqual", "Log", "Max", "Mean", "Min", "Mish", "Mod", "Mul", "Neg", "Not", "Or",
      "Pow", "PRelu", "Reciprocal", "Relu", "Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin",
      "Sinh", "Softplus", "Softsign", "Sqrt", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu",
      "Where", "Xor"};
  // clang-format on
  return ops;
}

const std::set<std::string> &reduceOps() {
  // clang-format off
  static const std::set<std::string> ops = {
      "ReduceL1",  "ReduceL2",  "ReduceLogSum",  "ReduceLogSumExp", "ReduceMax",
      "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",       "ReduceSumSquare"};
  // clang-format on
  return ops;
}

int64_t prod(const Shape &s, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e && i < s.size(); ++i)
    p *= s[i];
  return p;
}

/// Where axis `a` of shape `s` lies in shape `t` of the same elements when it stays a dim of its
/// own (same size, same elements before it); -1 when it does not.
int64_t reshapedAxis(const Shape &s, const Shape &t, int64_t a) {
  const int64_t before = prod(s, 0, a), after = prod(s, a + 1, s.size());
  for (size_t p = 0; p < t.size(); ++p)
    if (t[p] == s[a] && prod(t, 0, p) == before && prod(t, p + 1, t.size()) == after)
      return (int64_t)p;
  return -1;
}

} // namespace

Value markDynamic(ImportContext &c, const NodeView &n, Value v, int64_t axis, Value count) {
  if (auto k = ImportContext::constInts(count)) {
    // Folded (constant inputs): the exact extent is known now.
    Shape s = ImportContext::shapeOf(v);
    const int64_t keep = std::clamp<int64_t>(k->empty() ? 0 : (*k)[0], 0, s[axis]);
    if (keep == s[axis])
      return v;
    std::vector<int64_t> starts(s.size(), 0), steps(s.size(), 1);
    s[axis] = keep;
    return c.emit<tg::SliceOp>(n.loc, c.type(s, ImportContext::elemOf(v)), v,
                               c.b.getI64ArrayAttr(starts), c.b.getI64ArrayAttr(steps));
  }
  c.extents[v] = Extent{axis, count, n.label};
  return v;
}

llvm::Error propagateExtents(ImportContext &c, const NodeView &n, const std::vector<Value> &outs) {
  // The inputs that carry an extent.
  std::vector<std::pair<size_t, Extent>> carried;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i] && c.extents.count(n.inputs[i]))
      carried.push_back({i, c.extents.lookup(n.inputs[i])});
  if (carried.empty())
    return llvm::Error::success();
  const std::string &op = n.proto.op_type();
  const Extent &e0 = carried.front().second;
  auto inName = [&](size_t i) { return "'" + n.proto.input((int)i) + "'"; };
  auto refuse = [&](size_t i, const Extent &e, const std::string &why) {
    return ImportContext::error(
        n, why + " axis " + std::to_string(e.axis) + " of input " + inName(i) +
               ", whose length is known only at run time (the count of " + e.origin +
               "); tgc passes such a length only through ops that keep that axis apart "
               "(element-wise, Transpose, Gather/GatherND/GatherElements by such indices, "
               "Reshape/Slice/Concat/Split/reductions off that axis, MatMul rows)");
  };
  for (auto &[i, e] : carried)
    if (e.count != e0.count)
      return refuse(i, e, "mixes two data-dependent lengths: a second one on");
  // The output axis each output gets (-1: the output is static).
  std::vector<int64_t> axes(outs.size(), -1);
  auto rankOf = [](Value v) { return ImportContext::rankOf(v); };
  auto shapeOf = [](Value v) { return ImportContext::shapeOf(v); };
  auto onlyInput = [&](size_t want) -> bool {
    return carried.size() == 1 && carried.front().first == want;
  };
  if (outs.empty())
    return llvm::Error::success();
  const int64_t R = rankOf(outs[0]);
  if (elementwiseOps().count(op)) {
    int64_t at = -1;
    for (auto &[i, e] : carried) {
      const int64_t a = R - rankOf(n.inputs[i]) + e.axis;
      if ((at >= 0 && a != at) || shapeOf(outs[0])[a] != shapeOf(n.inputs[i])[e.axis])
        return refuse(i, e, "broadcasts across");
      at = a;
    }
    axes[0] = at;
  } else if (op == "Transpose") {
    if (!onlyInput(0))
      return refuse(carried.front().first, e0, "reads");
    auto perm = n.attrInts("perm");
    const int64_t r = rankOf(n.inputs[0]);
    for (int64_t p = 0; p < r; ++p)
      if ((perm ? (*perm)[p] : r - 1 - p) == e0.axis)
        axes[0] = p;
  } else if (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten") {
    if (!onlyInput(0))
      return refuse(carried.front().first, e0, "takes its shape from");
    axes[0] = reshapedAxis(shapeOf(n.inputs[0]), shapeOf(outs[0]), e0.axis);
    if (axes[0] < 0)
      return refuse(0, e0, "merges or splits");
  } else if (op == "Gather" || op == "Compress") {
    if (carried.size() != 1)
      return refuse(carried.back().first, e0, "gathers along");
    const int64_t r = rankOf(n.inputs[0]);
    int64_t g = n.attrInt("axis", 0);
    g = g < 0 ? g + r : g;
    if (op == "Compress" && (!n.attr("axis") || carried.front().first != 0))
      return refuse(carried.front().first, e0, "selects along");
    if (carried.front().first == 1 && op == "Gather") // indices carry it
      axes[0] = g + e0.axis;
    else if (e0.axis == g)
      return refuse(0, e0, "gathers along");
    else
      axes[0] = e0.axis < g || op == "Compress" ? e0.axis : e0.axis + rankOf(n.inputs[1]) - 1;
  } else if (op == "GatherElements") {
    if (!onlyInput(1))
      return refuse(carried.front().first, e0, "gathers along");
    axes[0] = e0.axis;
  } else if (op == "GatherND") {
    if (!onlyInput(1) || e0.axis >= rankOf(n.inputs[1]) - 1 || e0.axis < n.attrInt("batch_dims", 0))
      return refuse(carried.front().first, e0, "gathers along");
    axes[0] = e0.axis;
  } else if (op == "Slice") {
    if (!onlyInput(0))
      return refuse(carried.front().first, e0, "slices along");
    const Shape s = shapeOf(n.inputs[0]);
    auto starts = ImportContext::constInts(n.input(1)), ends = ImportContext::constInts(n.input(2));
    auto ax =
        n.input(3) ? ImportContext::constInts(n.input(3)) : std::optional<std::vector<int64_t>>();
    auto st =
        n.input(4) ? ImportContext::constInts(n.input(4)) : std::optional<std::vector<int64_t>>();
    if (n.opset < 10 || !starts || !ends || (n.input(3) && !ax) || (n.input(4) && !st))
      return refuse(0, e0, "may slice");
    for (size_t k = 0; k < starts->size(); ++k) {
      int64_t a = ax ? (*ax)[k] : (int64_t)k;
      a = a < 0 ? a + (int64_t)s.size() : a;
      if (a != e0.axis)
        continue;
      int64_t b = (*starts)[k], end = (*ends)[k];
      b = b < 0 ? b + s[a] : b;
      end = end < 0 ? end + s[a] : end;
      if (b > 0 || end < s[a] || (st && (*st)[k] != 1))
        return refuse(0, e0, "slices along");
    }
    axes[0] = e0.axis;
  } else if (op == "Concat") {
    int64_t a = n.attrInt("axis", 0);
    a = a < 0 ? a + R : a;
    for (auto &[i, e] : carried)
      if (e.axis != e0.axis || a == e.axis)
        return refuse(i, e, "concatenates along");
    axes[0] = e0.axis;
  } else if (op == "Split") {
    int64_t a = n.attrInt("axis", 0);
    a = a < 0 ? a + rankOf(n.inputs[0]) : a;
    if (!onlyInput(0) || a == e0.axis)
      return refuse(carried.front().first, e0, "splits along");
    std::fill(axes.begin(), axes.end(), e0.axis);
  } else if (reduceOps().count(op) || op == "ArgMax" || op == "ArgMin" || op == "Softmax" ||
             op == "LogSoftmax" || op == "Hardmax" || op == "CumSum" || op == "TopK") {
    if (!onlyInput(0))
      return refuse(carried.front().first, e0, "reads");
    const int64_t r = rankOf(n.inputs[0]);
    std::vector<int64_t> red;
    bool keep = n.attrInt("keepdims", 1) != 0;
    if (reduceOps().count(op)) {
      // axes: an input from opset 13 (ReduceSum) or 18 (the others), an attribute before.
      const bool asInput = n.opset >= (op == "ReduceSum" ? 13 : 18);
      std::optional<std::vector<int64_t>> a =
          asInput ? ImportContext::constInts(n.input(1)) : n.attrInts("axes");
      if (asInput && n.input(1) && !a)
        return refuse(0, e0, "may reduce over");
      if (!a || a->empty()) {
        if (n.attrInt("noop_with_empty_axes", 0) == 0)
          for (int64_t k = 0; k < r; ++k)
            red.push_back(k);
      } else {
        red = *a;
      }
    } else if (op == "CumSum" || op == "TopK") {
      auto a = ImportContext::constInts(n.input(op == "CumSum" ? 1 : 99));
      int64_t ax = op == "CumSum" ? (a && !a->empty() ? (*a)[0] : e0.axis) : n.attrInt("axis", -1);
      red.push_back(ax);
      keep = true;
    } else {
      const bool softmax = op != "ArgMax" && op != "ArgMin";
      int64_t ax = n.attrInt("axis", softmax ? (n.opset >= 13 ? -1 : 1) : 0);
      ax = ax < 0 ? ax + r : ax;
      if (softmax && n.opset < 13)
        for (int64_t k = ax; k < r; ++k)
          red.push_back(k);
      else
        red.push_back(ax);
      keep = keep || softmax;
    }
    int64_t before = 0;
    for (int64_t k : red) {
      k = k < 0 ? k + r : k;
      if (k == e0.axis)
        return refuse(0, e0, op.rfind("Reduce", 0) == 0 ? "reduces over" : "computes along");
      before += k < e0.axis;
    }
    std::fill(axes.begin(), axes.end(), keep ? e0.axis : e0.axis - before);
  } else if (op == "MatMul" || op == "Gemm") {
    const int64_t ra = rankOf(n.inputs[0]);
    if (!onlyInput(0) || ra < 2 || e0.axis == ra - 1 ||
        (op == "Gemm" && n.attrInt("transA", 0) != 0))
      return refuse(carried.front().first, e0, "contracts along");
    axes[0] = R - ra + e0.axis;
  } else {
    return refuse(carried.front().first, e0, "reads");
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    if (axes[k] < 0 || !outs[k] || ImportContext::isConstant(outs[k]))
      continue;
    auto had = c.extents.find(outs[k]);
    if (had != c.extents.end() && had->second.count != e0.count)
      return refuse(carried.front().first, e0, "adds a second data-dependent length to");
    c.extents[outs[k]] = Extent{axes[k], e0.count, e0.origin};
  }
  return llvm::Error::success();
}

std::vector<int64_t> appendOutputCounts(ImportContext &c, std::vector<Value> &results,
                                        std::vector<Type> &types) {
  std::vector<int64_t> pairs;
  const size_t n = results.size();
  for (size_t i = 0; i < n; ++i) {
    auto it = c.extents.find(results[i]);
    if (it == c.extents.end())
      continue;
    pairs.push_back((int64_t)i);
    pairs.push_back(it->second.axis);
    results.push_back(it->second.count);
    types.push_back(it->second.count.getType());
  }
  return pairs;
}

} // namespace tgc::onnx_import
