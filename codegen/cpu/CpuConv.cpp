// CpuConv.cpp — CPU kernels for convolutions (direct loops over the prelude's tg_conv template).
#include "codegen/cpu/CpuBuilder.h"

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
    auto ints = [](ArrayAttr a) {
      Shape r;
      for (Attribute v : a)
        r.push_back(v.cast<IntegerAttr>().getInt());
      return r;
    };
    c.line("static const int64_t xs[] = " + intArray(x) + ", ws[] = " + intArray(w) +
           ", ys[] = " + intArray(y) + ";");
    c.line("static const int64_t st[] = " + intArray(ints(conv.getStrides())) +
           ", pads[] = " + intArray(ints(conv.getPads())) +
           ", dil[] = " + intArray(ints(conv.getDilations())) + ";");
    c.line("tg_conv<" + T + ">(in0, in1, " + (conv.getBias() ? inPtr[2] : "nullptr") +
           ", out0, " + std::to_string(sp) + ", xs, ws, ys, st, pads, dil, " +
           str(conv.getGroup()) + ");");
    return llvm::Error::success();
  }

  return opError(op, "op not supported by the CPU backend");
}

} // namespace tgc::cpu
