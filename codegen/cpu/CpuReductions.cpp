// CpuReductions.cpp — CPU kernels for reductions over axes (sum, mean, max, min, prod) and arg-max.
#include "codegen/cpu/CpuBuilder.h"

namespace tgc::cpu {

llvm::Error KernelBuilder::emitReduction(Operation *op, const CType *ct) {
  const std::string T = ct->name;
  const std::string sz = "sizeof(" + T + ")";
  (void)sz;

  if (isa<tg::ReduceSumOp, tg::ReduceMeanOp, tg::ReduceMaxOp, tg::ReduceMinOp, tg::ReduceProdOp>(
          op)) {
    Shape x = shapeOf(op->getOperand(0));
    const ReduceLayout rl = reduceLayout(op);
    const Shape &kept = rl.kept, &keptStrides = rl.keptStrides;
    const auto &rdims = rl.rdims; // (dim, stride), collapsed
    const int64_t R = rl.count;
    std::string acc = ct->isFloat ? "double" : (ct->isBool ? "int64_t" : "int64_t");
    std::string init, step, fin;
    if (isa<tg::ReduceSumOp, tg::ReduceMeanOp>(op)) {
      init = acc + " acc = 0;";
      step = "acc += v;";
      fin = isa<tg::ReduceMeanOp>(op) ? "(" + T + ")(acc / " + (ct->isFloat ? "(double)" : "") +
                                            str(std::max<int64_t>(R, 1)) + ")"
                                      : "(" + T + ")acc";
      if (isa<tg::ReduceMeanOp>(op) && R == 0)
        fin = ct->isFloat ? "std::numeric_limits<" + T + ">::quiet_NaN()" : "(" + T + ")0";
    } else if (isa<tg::ReduceProdOp>(op)) {
      init = acc + " acc = 1;";
      step = "acc *= v;";
      fin = "(" + T + ")acc";
    } else {
      bool mx = isa<tg::ReduceMaxOp>(op);
      std::string lim = ct->isFloat ? std::string(mx ? "-" : "") + "std::numeric_limits<" + T +
                                          ">::infinity()"
                                    : "std::numeric_limits<" + T + ">::" + (mx ? "lowest()" : "max()");
      init = T + " acc = " + lim + ";";
      step = std::string("acc = tg_") + (mx ? "max" : "min") + "<" + T + ">(acc, v);";
      fin = "acc";
    }
    loopNest(
        c, kept, {contiguousStrides(kept), keptStrides}, {"0", "0"},
        [&](Code &c, const std::vector<std::string> &offs) {
          c.line(init);
          std::string idx = offs[1];
          for (size_t k = 0; k < rdims.size(); ++k) {
            std::string kv = "k" + std::to_string(k);
            c.open("for (int64_t " + kv + " = 0; " + kv + " < " + str(rdims[k].first) + "; ++" +
                   kv + ")");
            idx = offsetExpr(idx, kv, rdims[k].second);
          }
          c.line("const " + T + " v = in0[" + idx + "];");
          c.line(step);
          for (size_t k = 0; k < rdims.size(); ++k)
            c.close();
          c.line("out0[" + offs[0] + "] = " + fin + ";");
        },
        std::max<int64_t>(R, 1));
    return llvm::Error::success();
  }

  if (auto am = dyn_cast<tg::ArgMaxOp>(op)) {
    Shape x = shapeOf(am.getInput());
    auto it = ctypeOf(am.getInput(), op);
    if (!it)
      return it.takeError();
    int64_t axis = *tgc::normalizeAxis(am.getAxis(), x.size());
    int64_t O = product(x, 0, axis), L = x[axis], I = product(x, axis + 1);
    if (O * I == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    std::string pr = pragma(O * L * I);
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(O * I) + "; ++r)");
    c.line("const " + it->name + " *xr = in0 + (r / " + str(I) + ") * " + str(L * I) + " + r % " +
           str(I) + ";");
    c.line("int64_t best = 0;");
    if (L > 0) {
      c.line(it->name + " bv = xr[0];");
      c.line("for (int64_t k = 1; k < " + str(L) + "; ++k) { const " + it->name + " v = xr[k * " +
             str(I) + "]; if (" + (am.getSelectLast() ? "v >= bv" : "v > bv") +
             ") { bv = v; best = k; } }");
    }
    c.line("out0[r] = best;");
    c.close();
    return llvm::Error::success();
  }

  return opError(op, "op not supported by the CPU backend");
}

} // namespace tgc::cpu
