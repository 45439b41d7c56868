// ImportBitwise.cpp — ONNX BitwiseAnd/Or/Xor/Not (opset 18) and BitShift (opset 11) as tg.bitwise
// and tg.bitwise_not.
//
// One new elementwise op pair rather than a decomposition: no existing tg op computes bits, and
// the element functions (tg_bitwise_* in codegen/common/ElementPrelude) serve both backends.
// Any integer element type the dialect has is accepted (not bool: ONNX's domain excludes it);
// BitShift needs an unsigned one, as ONNX defines it, and a shift by the bit width or more
// gives 0 in both directions.
#include "frontends/onnx/ImportContext.h"

namespace tgc::onnx_import {

using namespace mlir;
using Values = std::vector<Value>;
using Result = llvm::Expected<Values>;

namespace {

/// The element type of `x` when it is an integer type other than bool, else a refusal.
llvm::Expected<IntegerType> integerOperand(ImportContext &c, const NodeView &n, Value x) {
  auto it = c.elemOf(x).dyn_cast<IntegerType>();
  if (!it || it.getWidth() == 1) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << c.elemOf(x);
    return c.error(n, "needs an integer tensor, not " + os.str());
  }
  return it;
}

/// BitwiseAnd/Or/Xor (fn "and", "or", "xor") and BitShift (fn from its direction).
Result importBinary(ImportContext &c, const NodeView &n, const std::string &fn) {
  const int64_t since = fn.rfind("shift_", 0) == 0 ? 11 : 18;
  if (n.opset < since)
    return c.error(n, "needs opset " + std::to_string(since) +
                          " or later (the model imports opset " + std::to_string(n.opset) + ")");
  TGC_ASSIGN(a, c.need(n, 0));
  TGC_ASSIGN(b, c.need(n, 1));
  if (c.elemOf(a) != c.elemOf(b))
    return c.error(n, "operands have different element types");
  auto it = integerOperand(c, n, a);
  if (!it)
    return it.takeError();
  if (fn.rfind("shift_", 0) == 0 && !it->isUnsigned())
    return c.error(n, "BitShift needs an unsigned integer tensor (uint8, uint16, uint32, uint64)");
  auto s = broadcastShapes(c.shapeOf(a), c.shapeOf(b));
  if (!s)
    return c.error(n, "operand shapes " + shapeToString(c.shapeOf(a)) + " and " +
                          shapeToString(c.shapeOf(b)) + " do not broadcast");
  return Values{c.emit<tg::BitwiseOp>(n.loc, c.type(*s, c.elemOf(a)), a, b, c.b.getStringAttr(fn))};
}

Result importBitShift(ImportContext &c, const NodeView &n) {
  if (!n.attr("direction"))
    return c.error(n, "attribute 'direction' (LEFT or RIGHT) is required");
  const std::string dir = n.attrString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    return c.error(n, "direction must be LEFT or RIGHT, not '" + dir + "'");
  return importBinary(c, n, dir == "LEFT" ? "shift_left" : "shift_right");
}

Result importBitwiseNot(ImportContext &c, const NodeView &n) {
  if (n.opset < 18)
    return c.error(n, "needs opset 18 or later (the model imports opset " +
                          std::to_string(n.opset) + ")");
  TGC_ASSIGN(x, c.need(n, 0));
  if (auto it = integerOperand(c, n, x); !it)
    return it.takeError();
  return Values{c.unary<tg::BitwiseNotOp>(n.loc, x)};
}

} // namespace

void registerBitwiseOps(OpTable &t) {
  for (const char *fn : {"And", "Or", "Xor"})
    t[std::string("Bitwise") + fn] = [fn](ImportContext &c, const NodeView &n) -> Result {
      return importBinary(c, n, llvm::StringRef(fn).lower());
    };
  t["BitwiseNot"] = importBitwiseNot;
  t["BitShift"] = importBitShift;
}

} // namespace tgc::onnx_import
