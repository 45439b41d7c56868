// MovementEmit.cpp — strided copies and clamped gather indices for both backends (see
// MovementEmit.h).
#include "codegen/common/MovementEmit.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::codegen {

bool isStridedCopy(Operation *op) { return isa<tg::TransposeOp, tg::SliceOp, tg::ExpandOp>(op); }

Shape transposeStrides(tg::TransposeOp tr) {
  const Shape xs = contiguousStrides(shapeOf(tr.getInput()));
  Shape st;
  for (Attribute p : tr.getPerm())
    st.push_back(xs[p.cast<IntegerAttr>().getInt()]);
  return st;
}

void emitStridedCopy(CKernel &kb, Operation *op) {
  const Shape y = shapeOf(op->getResult(0));
  Shape st;
  int64_t base = 0;
  if (auto tr = dyn_cast<tg::TransposeOp>(op)) {
    st = transposeStrides(tr);
  } else if (auto sl = dyn_cast<tg::SliceOp>(op)) {
    const Shape xs = contiguousStrides(shapeOf(sl.getInput()));
    size_t d = 0;
    for (auto [s, k] : llvm::zip(sl.getStarts(), sl.getSteps())) {
      const int64_t start = s.cast<IntegerAttr>().getInt(), step = k.cast<IntegerAttr>().getInt();
      if (y[d] > 0)
        base += start * xs[d];
      st.push_back(step * xs[d]);
      ++d;
    }
  } else {
    st = broadcastStrides(shapeOf(op->getOperand(0)), y);
  }
  kb.loop(y, {contiguousStrides(y), st}, {"0", str(base)},
          [&](Code &c, const std::vector<std::string> &o) {
            c.line("out0[" + o[0] + "] = in0[" + o[1] + "];");
          });
}

PadLayout padLayout(CKernel &kb, Operation *op, const CType &ct) {
  auto pad = cast<tg::PadOp>(op);
  PadLayout l;
  l.x = shapeOf(pad.getInput()), l.y = shapeOf(pad.getResult()), l.pads = intsOf(pad.getPads());
  l.value = valueLiteral(kb.target, ct, pad.getValue().convertToDouble());
  return l;
}

JoinLayout joinLayout(Operation *op) {
  const bool cat = isa<tg::ConcatOp>(op);
  JoinLayout l;
  l.joined = shapeOf(cat ? op->getResult(0) : op->getOperand(0));
  const int64_t axis = cat ? cast<tg::ConcatOp>(op).getAxis() : cast<tg::SplitOp>(op).getAxis();
  l.axis = *tgc::normalizeAxis(axis, l.joined.size());
  l.outer = product(l.joined, 0, l.axis), l.row = product(l.joined, l.axis);
  for (Value part : cat ? ValueRange(op->getOperands()) : ValueRange(op->getResults()))
    l.chunks.push_back(product(shapeOf(part), l.axis));
  return l;
}

GatherLayout gatherLayout(Operation *op) {
  auto g = cast<tg::GatherOp>(op);
  const Shape d = shapeOf(g.getData());
  const int64_t axis = *tgc::normalizeAxis(g.getAxis(), d.size());
  return {product(d, 0, axis), d[axis], product(d, axis + 1), product(shapeOf(g.getIndices()))};
}

void clampedIndexLines(Code &c, const std::string &var, const std::string &index, int64_t n) {
  c.line("int64_t " + var + " = (int64_t)" + index + ";");
  c.line("if (" + var + " < 0) " + var + " += " + str(n) + ";");
  c.line(var + " = " + var + " < 0 ? 0 : (" + var + " >= " + str(n) + " ? " + str(n - 1) + " : " +
         var + ");");
}

llvm::Error emitGatherElements(CKernel &kb, Operation *op, const CType &ct) {
  auto ge = cast<tg::GatherElementsOp>(op);
  const Shape d = shapeOf(ge.getData()), idx = shapeOf(ge.getIndices());
  const int64_t axis = *tgc::normalizeAxis(ge.getAxis(), d.size());
  for (size_t k = 0; k < d.size(); ++k)
    if (k != (size_t)axis && idx[k] > d[k])
      return kb.error(ge, "indices dim " + std::to_string(k) + " exceeds the data's");
  Shape st = contiguousStrides(d);
  const int64_t A = d[axis], axisStride = st[axis];
  st[axis] = 0; // the index supplies the gathered axis's coordinate
  if (A > 0)
    kb.c.line(sourceComment("indices wrap and are clamped to [0, " + str(A - 1) + "]"));
  kb.loop(idx, {contiguousStrides(idx), contiguousStrides(idx), st}, {"0", "0", "0"},
          [&](Code &c, const std::vector<std::string> &o) {
            if (A == 0) { // nothing to gather from
              c.line("out0[" + o[0] + "] = " + (ct.lowp ? ct.st("0") : "(" + ct.name + ")0") +
                     ";");
              return;
            }
            clampedIndexLines(c, "x", "in1[" + o[1] + "]", A);
            c.line("out0[" + o[0] + "] = in0[" + o[2] + " + (" + kb.it + ")x * " +
                   str(axisStride) + "];");
          });
  return llvm::Error::success();
}

} // namespace tgc::codegen
