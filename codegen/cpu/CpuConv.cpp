// CpuConv.cpp — CPU kernels for sliding windows: convolutions (the prelude's tg_conv template) and pooling (codegen/common/PoolEmit).
#include "codegen/cpu/CpuBuilder.h"

#include "codegen/common/PoolEmit.h"

namespace tgc::cpu {

llvm::Error KernelBuilder::emitConv(Operation *op, const CType *ct) {
  const std::string T = ct->name;
  const std::string sz = "sizeof(" + T + ")";
  (void)sz;

  if (auto conv = dyn_cast<tg::ConvOp>(op)) {
    Shape x = shapeOf(conv.getInput()), w = shapeOf(conv.getWeight()), y = shapeOf(conv.getResult());
    int sp = (int)x.size() - 2;
    if (sp > 8)
      return opError(op, "conv with more than 8 spatial dims");
    c.line("static const int64_t xs[] = " + intArray(x) + ", ws[] = " + intArray(w) +
           ", ys[] = " + intArray(y) + ";");
    c.line("static const int64_t st[] = " + intArray(codegen::intsOf(conv.getStrides())) +
           ", pads[] = " + intArray(codegen::intsOf(conv.getPads())) +
           ", dil[] = " + intArray(codegen::intsOf(conv.getDilations())) + ";");
    c.line("tg_conv<" + T + ">(in0, in1, " + (conv.getBias() ? inPtr[2] : "nullptr") +
           ", out0, " + std::to_string(sp) + ", xs, ws, ys, st, pads, dil, " +
           str(conv.getGroup()) + ");");
    return llvm::Error::success();
  }

  if (auto pool = dyn_cast<tg::PoolOp>(op)) {
    const int64_t total = product(shapeOf(pool.getResult()));
    codegen::PoolSpelling sp;
    sp.index = "int64_t";
    sp.acc = ct->calc(); // float for f16/bf16, loaded and rounded on store
    sp.lowest = ct->isFloat ? "-std::numeric_limits<" + sp.acc + ">::infinity()"
                            : "std::numeric_limits<" + T + ">::lowest()";
    if (ct->lowp) {
      sp.load = [ct](const std::string &e) { return ct->ld(e); };
      sp.store = [ct](const std::string &e) { return ct->st(e); };
    } else {
      sp.load = sp.store = [](const std::string &e) { return e; };
    }
    if (std::string pr = pragma(codegen::poolWork(pool)); !pr.empty())
      c.line(pr);
    c.open("for (int64_t i = 0; i < " + str(total) + "; ++i)");
    codegen::emitPoolElement(c, pool, sp, "in0", "out0");
    c.close();
    return llvm::Error::success();
  }

  return opError(op, "op not supported by the CPU backend");
}

} // namespace tgc::cpu
