// IndexEmit.cpp — cumsum, scatter-elements and top-k for both backends (see IndexEmit.h).
#include "codegen/common/IndexEmit.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::codegen {

bool isIndexOp(Operation *op) { return isa<tg::CumsumOp, tg::ScatterElementsOp, tg::TopkOp>(op); }

namespace {

/// `x` seen as O lines of L elements I apart along `axis`.
struct Lines {
  int64_t O, L, I;
};
Lines linesOf(const Shape &x, int64_t axis) {
  return {product(x, 0, axis), x[axis], product(x, axis + 1)};
}

/// An empty loop: nothing to launch.
llvm::Error nothing(CKernel &kb) {
  kb.items = 0;
  kb.c.line("// empty result: nothing to do");
  return llvm::Error::success();
}

/// cumsum: per line, a running sum in double (floats) or int64_t (integers, stored wrapped).
llvm::Error cumsum(CKernel &kb, tg::CumsumOp op, const CType &ct) {
  Code &c = kb.c;
  const Shape x = shapeOf(op.getInput());
  const Lines l = linesOf(x, *tgc::normalizeAxis(op.getAxis(), x.size()));
  if (l.O * l.L * l.I == 0)
    return nothing(kb);
  const std::string acc = ct.isFloat ? "double" : "int64_t";
  const std::string fin = ct.lowp ? ct.st("(float)acc") : "(" + ct.name + ")acc";
  kb.openParallel("r", l.O * l.I, l.O * l.L * l.I);
  c.line("const " + kb.it + " base = (r / " + str(l.I) + ") * " + str(l.L * l.I) + " + r % " +
         str(l.I) + ";");
  c.line(acc + " acc = 0;");
  c.open("for (" + kb.it + " k = 0; k < " + str(l.L) + "; ++k)");
  const std::string pos = op.getReverse() ? "(" + str(l.L - 1) + " - k)" : "k";
  c.line("const " + kb.it + " at = base + " + pos + " * " + str(l.I) + ";");
  c.line("const " + acc + " v = (" + acc + ")" + ct.ld(kb.inPtr[0] + "[at]") + ";");
  if (op.getExclusive()) {
    c.line(kb.outPtr[0] + "[at] = " + fin + ";");
    c.line("acc += v;");
  } else {
    c.line("acc += v;");
    c.line(kb.outPtr[0] + "[at] = " + fin + ";");
  }
  c.close();
  c.close();
  return llvm::Error::success();
}

/// scatter_elements: per output element, the data's element, then every update on its line along
/// the axis whose index names it, in order.
llvm::Error scatterElements(CKernel &kb, tg::ScatterElementsOp op, const CType &ct) {
  Code &c = kb.c;
  const Shape d = shapeOf(op.getData()), is = shapeOf(op.getIndices());
  const int64_t rank = d.size(), axis = *tgc::normalizeAxis(op.getAxis(), rank);
  for (int64_t k = 0; k < rank; ++k)
    if (k != axis && is[k] > d[k])
      return kb.error(op, "indices dim " + std::to_string(k) + " exceeds the data's");
  const int64_t total = product(d);
  if (total == 0)
    return nothing(kb);
  const std::string C = ct.calc();
  const StringRef red = op.getReduction();
  std::string step;
  if (red == "none")
    step = "v = u;";
  else if (red == "add")
    step = "v = (" + C + ")(v + u);";
  else if (red == "mul")
    step = "v = (" + C + ")(v * u);";
  else if (red == "max" || red == "min")
    step = "v = tg_" + red.str() + "<" + C + ">(v, u);";
  else
    return kb.error(op, "unknown reduction '" + red.str() + "'");
  const Shape ist = contiguousStrides(is);
  const int64_t A = d[axis], J = is[axis];
  c.line(sourceComment("each output element applies, in order, the updates whose index (" +
                       std::string("negative: + ") + str(A) +
                       ") names it; an index out of range writes nothing"));
  kb.openParallel("i", total, total * std::max<int64_t>(J, 1));
  c.line(C + " v = " + ct.ld(kb.inPtr[0] + "[i]") + ";");
  // The element's coordinates; the updates on its line start at `ib` in the indices.
  c.line(kb.it + " rem = i;");
  std::string inside, ib = "0";
  for (int64_t k = rank - 1; k >= 0; --k) {
    const std::string ck = "c" + std::to_string(k);
    c.line("const " + kb.it + " " + ck + " = rem % " + str(d[k]) + ";");
    c.line("rem /= " + str(d[k]) + ";");
    if (k == axis)
      continue;
    if (is[k] < d[k])
      inside += std::string(inside.empty() ? "" : " && ") + ck + " < " + str(is[k]);
    ib = offsetExpr(ib, ck, ist[k]);
  }
  c.line("(void)rem;");
  if (J > 0) {
    c.open(inside.empty() ? "" : "if (" + inside + ")");
    c.line("const " + kb.it + " ib = " + ib + ";");
    c.open("for (" + kb.it + " j = 0; j < " + str(J) + "; ++j)");
    c.line("int64_t x = (int64_t)" + kb.inPtr[1] + "[ib + j * " + str(ist[axis]) + "];");
    c.line("if (x < 0) x += " + str(A) + ";");
    c.line("if (x != (int64_t)c" + std::to_string(axis) + ") continue;");
    c.line("const " + C + " u = " + ct.ld(kb.inPtr[2] + "[ib + j * " + str(ist[axis]) + "]") + ";");
    c.line(step);
    c.close();
    c.close();
  }
  c.line(kb.outPtr[0] + "[i] = " + (ct.lowp ? ct.st("v") : "v") + ";");
  c.close();
  return llvm::Error::success();
}

/// topk: per line, k passes; pass r takes the best element ordered after the one pass r-1 took.
llvm::Error topk(CKernel &kb, tg::TopkOp op, const CType &ct) {
  Code &c = kb.c;
  const Shape x = shapeOf(op.getInput());
  const int64_t axis = *tgc::normalizeAxis(op.getAxis(), x.size());
  const Lines l = linesOf(x, axis);
  const int64_t K = shapeOf(op.getValues())[axis];
  if (l.O * l.I * K == 0)
    return nothing(kb);
  const std::string C = ct.calc();
  // Whether (a, ia) comes before (b, ib): the larger (or smaller) value first, NaN larger than
  // every number, equal values by lower index.
  auto gt = [&](const std::string &a, const std::string &b) {
    return ct.isFloat
               ? "((" + a + " != " + a + " && " + b + " == " + b + ") || " + a + " > " + b + ")"
               : "(" + a + " > " + b + ")";
  };
  auto eq = [&](const std::string &a, const std::string &b) {
    return ct.isFloat
               ? "(" + a + " == " + b + " || (" + a + " != " + a + " && " + b + " != " + b + "))"
               : "(" + a + " == " + b + ")";
  };
  const bool largest = op.getLargest();
  auto before = [&](const std::string &a, const std::string &ia, const std::string &b,
                    const std::string &ib) {
    return "(" + (largest ? gt(a, b) : gt(b, a)) + " || (" + eq(a, b) + " && " + ia + " < " + ib +
           "))";
  };
  kb.openParallel("r", l.O * l.I, l.O * l.I * l.L * K);
  c.line("const " + kb.it + " o = r / " + str(l.I) + ", in = r % " + str(l.I) + ";");
  c.line("const " + ct.name + " *xr = " + kb.inPtr[0] + " + o * " + str(l.L * l.I) + " + in;");
  c.line(C + " pv = 0;");
  c.line("int64_t pi = -1;");
  c.open("for (" + kb.it + " q = 0; q < " + str(K) + "; ++q)");
  c.line(C + " bv = 0;");
  c.line("int64_t bi = -1;");
  c.open("for (int64_t j = 0; j < " + str(l.L) + "; ++j)");
  c.line("const " + C + " v = " + ct.ld("xr[j * " + str(l.I) + "]") + ";");
  c.line("if (pi >= 0 && !" + before("pv", "pi", "v", "j") + ") continue;");
  c.line("if (bi < 0 || " + before("v", "j", "bv", "bi") + ") { bv = v; bi = j; }");
  c.close();
  c.line("const " + kb.it + " at = (o * " + str(K) + " + q) * " + str(l.I) + " + in;");
  c.line(kb.outPtr[0] + "[at] = " + (ct.lowp ? ct.st("bv") : "bv") + ";");
  c.line(kb.outPtr[1] + "[at] = bi;");
  c.line("pv = bv;");
  c.line("pi = bi;");
  c.close();
  c.close();
  return llvm::Error::success();
}

} // namespace

llvm::Error emitIndexOp(CKernel &kb, Operation *op, const CType &ct) {
  if (auto cs = dyn_cast<tg::CumsumOp>(op))
    return cumsum(kb, cs, ct);
  if (auto se = dyn_cast<tg::ScatterElementsOp>(op))
    return scatterElements(kb, se, ct);
  if (auto tk = dyn_cast<tg::TopkOp>(op))
    return topk(kb, tk, ct);
  return kb.error(op, "not an indexing op");
}

} // namespace tgc::codegen
