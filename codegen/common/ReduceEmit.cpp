// ReduceEmit.cpp — reductions over axes and arg-max for both backends (see ReduceEmit.h).
#include "codegen/common/ReduceEmit.h"

#include "compiler/dialect/TgDialect.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace tgc::codegen {

bool isReduction(Operation *op) {
  return isa<tg::ReduceSumOp, tg::ReduceMeanOp, tg::ReduceMaxOp, tg::ReduceMinOp,
             tg::ReduceProdOp, tg::ArgMaxOp>(op);
}

namespace {

/// reduce_*: per kept element, its reduced elements in order (sum/mean/prod accumulate in double
/// for floats, int64_t for integers; max/min propagate NaN through tg_max/tg_min).
llvm::Error reduceAxes(CKernel &kb, Operation *op, const CType &ct) {
  const std::string &T = ct.name;
  const std::string C = ct.calc(); // element values are read as C
  const ReduceLayout rl = reduceLayout(op);
  const auto &rdims = rl.rdims; // (dim, stride), collapsed
  const int64_t R = rl.count;
  // u64 accumulates unsigned: its mean divides the unsigned sum (sums and products wrap alike).
  const std::string acc = ct.isFloat ? "double" : T == "uint64_t" ? "uint64_t" : "int64_t";
  std::string init, step, fin;
  if (isa<tg::ReduceSumOp, tg::ReduceMeanOp>(op)) {
    init = acc + " acc = 0;";
    step = "acc += v;";
    fin = isa<tg::ReduceMeanOp>(op) ? "(" + C + ")(acc / " + (ct.isFloat ? "(double)" : "") +
                                          str(std::max<int64_t>(R, 1)) + ")"
                                    : "(" + C + ")acc";
    if (isa<tg::ReduceMeanOp>(op) && R == 0)
      fin = ct.isFloat ? kb.target.floatLiteral(NAN, C == "float") : "(" + T + ")0";
  } else if (isa<tg::ReduceProdOp>(op)) {
    init = acc + " acc = 1;";
    step = "acc *= v;";
    fin = "(" + C + ")acc";
  } else {
    const bool mx = isa<tg::ReduceMaxOp>(op);
    const std::string lim = ct.isFloat ? std::string(mx ? "-" : "") + kb.target.infinity(C)
                                       : (mx ? kb.target.lowest(T) : kb.target.highest(T));
    init = C + " acc = " + lim + ";";
    step = std::string("acc = tg_") + (mx ? "max" : "min") + "<" + C + ">(acc, v);";
    fin = "acc";
  }
  if (ct.lowp)
    fin = ct.st(fin);
  kb.loop(
      rl.kept, {contiguousStrides(rl.kept), rl.keptStrides}, {"0", "0"},
      [&](Code &c, const std::vector<std::string> &offs) {
        c.line(init);
        std::string idx = offs[1];
        for (size_t k = 0; k < rdims.size(); ++k) {
          const std::string kv = "k" + std::to_string(k);
          c.open("for (" + kb.it + " " + kv + " = 0; " + kv + " < " + str(rdims[k].first) +
                 "; ++" + kv + ")");
          idx = offsetExpr(idx, kv, rdims[k].second);
        }
        c.line("const " + C + " v = " + ct.ld("in0[" + idx + "]") + ";");
        c.line(step);
        for (size_t k = 0; k < rdims.size(); ++k)
          c.close();
        c.line("out0[" + offs[0] + "] = " + fin + ";");
      },
      std::max<int64_t>(R, 1));
  return llvm::Error::success();
}

/// arg_max along one axis: per (outer, inner) position, the first (or, with select_last, the
/// last) index of the largest element.
llvm::Error argMax(CKernel &kb, tg::ArgMaxOp am) {
  Code &c = kb.c;
  const Shape x = shapeOf(am.getInput());
  auto xt = kb.ctype(am.getInput(), am);
  if (!xt)
    return xt.takeError();
  const int64_t axis = *tgc::normalizeAxis(am.getAxis(), x.size());
  const int64_t O = product(x, 0, axis), L = x[axis], I = product(x, axis + 1);
  if (O * I == 0) {
    kb.items = 0;
    c.line("// empty tensor");
    return llvm::Error::success();
  }
  kb.openParallel("r", O * I, O * L * I);
  c.line("const " + xt->name + " *xr = in0 + (r / " + str(I) + ") * " + str(L * I) + " + r % " +
         str(I) + ";");
  c.line("int64_t best = 0;");
  if (L > 0) {
    c.line(xt->calc() + " bv = " + xt->ld("xr[0]") + ";");
    c.line("for (" + kb.it + " k = 1; k < " + str(L) + "; ++k) { const " + xt->calc() + " v = " +
           xt->ld("xr[k * " + str(I) + "]") + "; if (" +
           (am.getSelectLast() ? "v >= bv" : "v > bv") + ") { bv = v; best = k; } }");
  }
  c.line("out0[r] = best;");
  c.close();
  return llvm::Error::success();
}

} // namespace

llvm::Error emitReduction(CKernel &kb, Operation *op, const CType &ct) {
  if (auto am = dyn_cast<tg::ArgMaxOp>(op))
    return argMax(kb, am);
  return reduceAxes(kb, op, ct);
}

} // namespace tgc::codegen
