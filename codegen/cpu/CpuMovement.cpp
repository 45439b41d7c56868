// CpuMovement.cpp — CPU kernels for data movement: transpose, slice, expand, pad, concat, split,
// gather and gather-elements.
#include "codegen/cpu/CpuBuilder.h"

namespace tgc::cpu {

llvm::Error KernelBuilder::emitMovement(Operation *op, const CType *ct) {
  const std::string T = ct->name;
  const std::string sz = "sizeof(" + T + ")";
  (void)sz;

  if (auto tr = dyn_cast<tg::TransposeOp>(op)) {
    Shape x = shapeOf(tr.getInput()), y = shapeOf(tr.getResult()), xs = contiguousStrides(x), st;
    for (Attribute p : tr.getPerm())
      st.push_back(xs[p.cast<IntegerAttr>().getInt()]);
    loopNest(c, y, {contiguousStrides(y), st}, {"0", "0"},
             [&](Code &c, const std::vector<std::string> &o) {
               c.line("out0[" + o[0] + "] = in0[" + o[1] + "];");
             });
    return llvm::Error::success();
  }

  if (auto sl = dyn_cast<tg::SliceOp>(op)) {
    Shape x = shapeOf(sl.getInput()), y = shapeOf(sl.getResult()), xs = contiguousStrides(x), st;
    int64_t base = 0;
    size_t d = 0;
    for (auto [s, k] : llvm::zip(sl.getStarts(), sl.getSteps())) {
      int64_t start = s.cast<IntegerAttr>().getInt(), step = k.cast<IntegerAttr>().getInt();
      if (y[d] > 0)
        base += start * xs[d];
      st.push_back(step * xs[d]);
      ++d;
    }
    loopNest(c, y, {contiguousStrides(y), st}, {"0", str(base)},
             [&](Code &c, const std::vector<std::string> &o) {
               c.line("out0[" + o[0] + "] = in0[" + o[1] + "];");
             });
    return llvm::Error::success();
  }

  if (auto ex = dyn_cast<tg::ExpandOp>(op)) {
    Shape x = shapeOf(ex.getInput()), y = shapeOf(ex.getResult());
    loopNest(c, y, {contiguousStrides(y), broadcastStrides(x, y)}, {"0", "0"},
             [&](Code &c, const std::vector<std::string> &o) {
               c.line("out0[" + o[0] + "] = in0[" + o[1] + "];");
             });
    return llvm::Error::success();
  }

  if (auto pad = dyn_cast<tg::PadOp>(op)) {
    Shape x = shapeOf(pad.getInput()), y = shapeOf(pad.getResult()), p;
    for (Attribute a : pad.getPads())
      p.push_back(a.cast<IntegerAttr>().getInt());
    double value = pad.getValue().convertToDouble();
    std::string lit = ct->isFloat ? floatLiteral(value, T == "float")
                                  : (ct->isBool ? (value != 0 ? "1" : "0")
                                                : str(static_cast<int64_t>(value)));
    c.line("std::fill(out0, out0 + " + str(product(y)) + ", (" + T + ")" + lit + ");");
    size_t r = x.size();
    Shape region(r), ys = contiguousStrides(y), xs = contiguousStrides(x);
    int64_t ob = 0, ib = 0;
    for (size_t d = 0; d < r; ++d) {
      int64_t begin = p[d], end = p[d + r];
      int64_t skipIn = std::max<int64_t>(-begin, 0), cutIn = std::max<int64_t>(-end, 0);
      region[d] = std::max<int64_t>(x[d] - skipIn - cutIn, 0);
      ob += std::max<int64_t>(begin, 0) * ys[d];
      ib += skipIn * xs[d];
    }
    loopNest(c, region, {ys, xs}, {str(ob), str(ib)},
             [&](Code &c, const std::vector<std::string> &o) {
               c.line("out0[" + o[0] + "] = in0[" + o[1] + "];");
             });
    return llvm::Error::success();
  }

  if (auto cat = dyn_cast<tg::ConcatOp>(op)) {
    Shape y = shapeOf(cat.getResult());
    int64_t axis = *tgc::normalizeAxis(cat.getAxis(), y.size());
    int64_t outer = product(y, 0, axis), row = product(y, axis);
    if (outer * row == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    std::string pr = pragma(outer * row);
    if (!pr.empty() && outer > 1)
      c.line(pr);
    c.open("for (int64_t o = 0; o < " + str(outer) + "; ++o)");
    int64_t off = 0;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      int64_t chunk = product(shapeOf(op->getOperand(i)), axis);
      if (chunk > 0)
        c.line("std::memcpy(out0 + o * " + str(row) + " + " + str(off) + ", " + inPtr[i] +
               " + o * " + str(chunk) + ", " + str(chunk) + " * " + sz + ");");
      off += chunk;
    }
    c.close();
    return llvm::Error::success();
  }

  if (auto sp = dyn_cast<tg::SplitOp>(op)) {
    Shape x = shapeOf(sp.getInput());
    int64_t axis = *tgc::normalizeAxis(sp.getAxis(), x.size());
    int64_t outer = product(x, 0, axis), row = product(x, axis);
    if (outer * row == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    std::string pr = pragma(outer * row);
    if (!pr.empty() && outer > 1)
      c.line(pr);
    c.open("for (int64_t o = 0; o < " + str(outer) + "; ++o)");
    int64_t off = 0;
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      int64_t chunk = product(shapeOf(op->getResult(i)), axis);
      if (chunk > 0)
        c.line("std::memcpy(" + outPtr[i] + " + o * " + str(chunk) + ", in0 + o * " + str(row) +
               " + " + str(off) + ", " + str(chunk) + " * " + sz + ");");
      off += chunk;
    }
    c.close();
    return llvm::Error::success();
  }

  if (auto g = dyn_cast<tg::GatherOp>(op)) {
    Shape d = shapeOf(g.getData()), idx = shapeOf(g.getIndices());
    int64_t axis = *tgc::normalizeAxis(g.getAxis(), d.size());
    int64_t outer = product(d, 0, axis), A = d[axis], inner = product(d, axis + 1),
            NI = product(idx);
    int64_t total = outer * NI * inner;
    if (total == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    if (A == 0) {
      c.line("std::fill(out0, out0 + " + str(total) + ", (" + T + ")0); // no data to gather");
      return llvm::Error::success();
    }
    c.line(sourceComment("indices are wrapped (negative + " + str(A) + ") and clamped to [0, " +
           str(A - 1) + "]: an out-of-range index never reads out of bounds"));
    std::string pr = pragma(total);
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(outer * NI) + "; ++r)");
    c.line("const int64_t o = r / " + str(NI) + ", k = r % " + str(NI) + ";");
    c.line("int64_t i = (int64_t)in1[k];");
    c.line("if (i < 0) i += " + str(A) + ";");
    c.line("i = i < 0 ? 0 : (i >= " + str(A) + " ? " + str(A - 1) + " : i);");
    if (inner == 1)
      c.line("out0[r] = in0[o * " + str(A) + " + i];");
    else
      c.line("std::memcpy(out0 + r * " + str(inner) + ", in0 + (o * " + str(A) + " + i) * " +
             str(inner) + ", " + str(inner) + " * " + sz + ");");
    c.close();
    return llvm::Error::success();
  }

  if (auto ge = dyn_cast<tg::GatherElementsOp>(op)) {
    Shape d = shapeOf(ge.getData()), idx = shapeOf(ge.getIndices());
    int64_t axis = *tgc::normalizeAxis(ge.getAxis(), d.size());
    Shape ds = contiguousStrides(d), st = ds;
    st[axis] = 0;
    int64_t A = d[axis];
    if (A == 0) {
      c.line("std::fill(out0, out0 + " + str(product(idx)) + ", (" + T + ")0);");
      return llvm::Error::success();
    }
    for (size_t k = 0; k < d.size(); ++k)
      if (k != (size_t)axis && idx[k] > d[k])
        return opError(op, "indices dim " + std::to_string(k) + " exceeds the data's");
    c.line(sourceComment("indices wrap and are clamped to [0, " + str(A - 1) + "]"));
    loopNest(c, idx, {contiguousStrides(idx), contiguousStrides(idx), st}, {"0", "0", "0"},
             [&](Code &c, const std::vector<std::string> &o) {
               c.line("int64_t i = (int64_t)in1[" + o[1] + "];");
               c.line("if (i < 0) i += " + str(A) + ";");
               c.line("i = i < 0 ? 0 : (i >= " + str(A) + " ? " + str(A - 1) + " : i);");
               c.line("out0[" + o[0] + "] = in0[" + o[2] + " + i * " + str(ds[axis]) + "];");
             });
    return llvm::Error::success();
  }

  return opError(op, "op not supported by the CPU backend");
}

} // namespace tgc::cpu
