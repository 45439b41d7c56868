// PoolEmit.cpp — one pooling output element, for both backends (PoolEmit.h).
#include "codegen/common/PoolEmit.h"

#include "compiler/dialect/TgDialect.h"

namespace tgc::codegen {

int64_t poolWork(tg::PoolOp op) {
  return product(shapeOf(op.getResult())) * product(intsOf(op.getKernel()));
}

void emitPoolElement(Code &c, tg::PoolOp op, const PoolSpelling &s, const std::string &in,
                     const std::string &out) {
  const Shape x = shapeOf(op.getInput()), y = shapeOf(op.getResult());
  const Shape k = intsOf(op.getKernel()), st = intsOf(op.getStrides()),
              pads = intsOf(op.getPads()), dil = intsOf(op.getDilations());
  const int sp = (int)x.size() - 2;
  const bool max = op.getKind() == "max", last = op.getNhwc();
  const std::string &it = s.index;
  // Spatial dims at xs[d + at] (NC[D]HW: 2; nhwc: 1), the channel dim innermost when `last`.
  const size_t at = last ? 1 : 2;
  c.line(it + " rem = i;");
  if (last) {
    c.line("const " + it + " ch = rem % " + str(x.back()) + ";");
    c.line("rem /= " + str(x.back()) + ";");
  }
  for (int d = sp - 1; d >= 0; --d) {
    c.line("const " + it + " y" + std::to_string(d) + " = rem % " + str(y[d + at]) + ";");
    c.line("rem /= " + str(y[d + at]) + ";");
  }
  if (last)
    c.line("const " + it + " base = rem * " + str(product(x, 1)) + " + ch; // image n, channel ch");
  else
    c.line("const " + it + " base = rem * " + str(product(x, 2)) + "; // the (n, c) plane");
  c.line(s.acc + " a = " + (max ? s.lowest : "0") + ";");
  const bool count = !max && !op.getCountIncludePad();
  if (count)
    c.line(it + " taps = 0;");
  for (int d = 0; d < sp; ++d) {
    const std::string kd = "k" + std::to_string(d), xd = "x" + std::to_string(d);
    c.open("for (" + it + " " + kd + " = 0; " + kd + " < " + str(k[d]) + "; ++" + kd + ")");
    c.line("const " + it + " " + xd + " = y" + std::to_string(d) + " * " + str(st[d]) + " - " +
           str(pads[d]) + " + " + kd + " * " + str(dil[d]) + ";");
    c.line("if (" + xd + " < 0 || " + xd + " >= " + str(x[d + at]) + ") continue;");
  }
  std::string off = "0";
  for (int d = 0; d < sp; ++d)
    off = "(" + off + ") * " + str(x[d + at]) + " + x" + std::to_string(d);
  if (last)
    off = "(" + off + ") * " + str(x.back());
  const std::string v = s.load(in + "[base + " + off + "]");
  c.line(max ? "a = tg_max<" + s.acc + ">(a, " + v + ");" : "a += " + v + ";");
  if (count)
    c.line("++taps;");
  for (int d = 0; d < sp; ++d)
    c.close();
  const std::string result =
      max ? "a" : "a / (" + s.acc + ")" + (count ? "taps" : str(product(k)));
  c.line(out + "[i] = " + s.store(result) + ";");
}

} // namespace tgc::codegen
