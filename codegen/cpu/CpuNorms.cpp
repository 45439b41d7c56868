// CpuNorms.cpp — CPU kernels for row normalizations: layer norm, RMS norm and softmax.
#include "codegen/cpu/CpuBuilder.h"

namespace tgc::cpu {

llvm::Error KernelBuilder::emitNorm(Operation *op, const CType *ct) {
  const std::string T = ct->name;
  const std::string A = ct->calc(); // the normalized values: float for f16/bf16

  if (auto ln = dyn_cast<tg::LayerNormOp>(op)) {
    auto rows = normRows(op, *ct);
    if (!rows)
      return rows.takeError();
    const int64_t R = rows->R, D = rows->D;
    const std::string &scale = rows->scale, &bias = rows->bias;
    double eps = ln.getEpsilon().convertToDouble();
    if (R * D == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    // Mean and variance (two passes) summed in double lanes (tg_row_sum: SIMD reductions), the
    // row normalized in the calc type.
    c.line("const double eps = " + floatLiteral(eps, false) + ";");
    std::string pr = pragma(R * D * 4);
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(R) + "; ++r)");
    c.line("const " + T + " *xr = in0 + r * " + str(D) + ";");
    c.line(T + " *yr = out0 + r * " + str(D) + ";");
    c.line("const double mean = tg_row_sum<double>(xr, " + str(D) + ") / " + str(D) + ";");
    c.line("const double var = tg_row_sqsum<double>(xr, " + str(D) + ", mean) / " + str(D) + ";");
    c.line("const " + A + " m = (" + A + ")mean, rstd = (" + A + ")(1.0 / std::sqrt(var + eps));");
    c.open("for (int64_t j = 0; j < " + str(D) + "; ++j)");
    c.line(A + " t = (" + ct->ld("xr[j]") + " - m) * rstd;");
    if (!scale.empty())
      c.line("t *= " + ct->ld(scale) + ";");
    if (!bias.empty())
      c.line("t += " + ct->ld(bias) + ";");
    c.line("yr[j] = " + ct->st("t") + ";");
    c.close();
    c.close();
    return llvm::Error::success();
  }

  if (auto rn = dyn_cast<tg::RmsNormOp>(op)) {
    auto rows = normRows(op, *ct);
    if (!rows)
      return rows.takeError();
    const int64_t R = rows->R, D = rows->D;
    const std::string &scale = rows->scale;
    if (R * D == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    c.line("const double eps = " + floatLiteral(rn.getEpsilon().convertToDouble(), false) + ";");
    std::string pr = pragma(R * D * 3);
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(R) + "; ++r)");
    c.line("const " + T + " *xr = in0 + r * " + str(D) + ";");
    c.line(T + " *yr = out0 + r * " + str(D) + ";");
    c.line("const double q = tg_row_sqsum<double>(xr, " + str(D) + ", 0.0);");
    c.line("const " + A + " rstd = (" + A + ")(1.0 / std::sqrt(q / " + str(D) + " + eps));");
    c.open("for (int64_t j = 0; j < " + str(D) + "; ++j)");
    c.line(A + " t = " + ct->ld("xr[j]") + " * rstd;");
    if (!scale.empty())
      c.line("t *= " + ct->ld(scale) + ";");
    c.line("yr[j] = " + ct->st("t") + ";");
    c.close();
    c.close();
    return llvm::Error::success();
  }

  if (auto sm = dyn_cast<tg::SoftmaxOp>(op)) {
    if (!ct->isFloat)
      return opError(op, "softmax needs a float type");
    Shape x = shapeOf(sm.getInput());
    int64_t axis = *tgc::normalizeAxis(sm.getAxis(), x.size());
    int64_t O = product(x, 0, axis), L = x[axis], I = product(x, axis + 1);
    if (O * L * I == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    std::string pr = pragma(O * L * I * 8);
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(O * I) + "; ++r)");
    c.line("const int64_t base = (r / " + str(I) + ") * " + str(L * I) + " + r % " + str(I) + ";");
    c.line("const " + T + " *xr = in0 + base;");
    c.line(T + " *yr = out0 + base;");
    // f16/bf16: max and exp in float (A); the exponentials are summed before the store rounds
    // them, so the division reads them again from x rather than from y. Max and sum are SIMD
    // reductions (a NaN anywhere makes the row NaN), the exponentials tg_exp's polynomial.
    const std::string xk = ct->ld("xr[k * " + str(I) + "]");
    c.line(A + " m = -std::numeric_limits<" + A + ">::infinity();");
    c.line("int nan = 0;");
    c.line("#pragma omp simd reduction(max : m) reduction(| : nan)");
    c.line("for (int64_t k = 0; k < " + str(L) + "; ++k) { const " + A + " v = " + xk +
           "; m = v > m ? v : m; nan |= v != v; }");
    c.line("if (nan) m = std::numeric_limits<" + A + ">::quiet_NaN();");
    c.line("double s = 0;");
    c.line("#pragma omp simd reduction(+ : s)");
    if (ct->lowp)
      c.line("for (int64_t k = 0; k < " + str(L) + "; ++k) s += tg_exp<float>(" + xk + " - m);");
    else
      c.line("for (int64_t k = 0; k < " + str(L) + "; ++k) { const " + T + " e = tg_exp<" + T +
             ">(xr[k * " + str(I) + "] - m); yr[k * " + str(I) + "] = e; s += e; }");
    if (sm.getLog()) {
      c.line("const double ls = std::log(s);");
      c.line("for (int64_t k = 0; k < " + str(L) + "; ++k) yr[k * " + str(I) + "] = (" + T +
             ")((double)xr[k * " + str(I) + "] - (double)m - ls);");
    } else if (ct->lowp) {
      c.line("const double inv = 1.0 / s;");
      c.line("for (int64_t k = 0; k < " + str(L) + "; ++k) yr[k * " + str(I) + "] = " +
             ct->st("(float)(tg_exp<float>(" + xk + " - m) * inv)") +
             ";");
    } else {
      c.line("const double inv = 1.0 / s;");
      c.line("for (int64_t k = 0; k < " + str(L) + "; ++k) yr[k * " + str(I) + "] = (" + T +
             ")(yr[k * " + str(I) + "] * inv);");
    }
    c.close();
    return llvm::Error::success();
  }

  return opError(op, "op not supported by the CPU backend");
}

} // namespace tgc::cpu
