// RecognizeRotary.cpp — `tgc-recognize-rotary`: rotary position embedding (rotate_half form).
//
// HF LLaMA / GPT-NeoX apply RoPE as q·cos + rotate_half(q)·sin, and both ONNX exporters spell
// rotate_half as two Slices of the last dim, a Neg of the upper half and a Concat in swapped
// order. Decomposed, that is a rotated copy of q plus three elementwise passes (two of which
// kernel formation cannot fuse across the Concat); as one tg.rotary it is a single pass that
// reads each element's partner in place. The rule matches the root Add with operands and
// factors in any order; the halves may be Slices or the two results of one even Split, and
// the negation a Neg or a product with -1.
#include "compiler/dialect/Shapes.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/common/Rules.h"
#include "passes/recognition/Match.h"
#include "passes/recognition/Passes.h"

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/recognition/Passes.h.inc"

using namespace tgc::recognition;
using mlir::LogicalResult;
using mlir::PatternRewriter;
using mlir::success;
using mlir::Value;

Shape shapeOf(Value v) {
  auto s = v.getType().cast<mlir::RankedTensorType>().getShape();
  return Shape(s.begin(), s.end());
}

/// When `v` is concat(-x[..., H:], x[..., :H]) on the last axis (rotate_half(x)): x.
/// `why` receives the reason when it is not.
Value rotateHalfOf(Value v, const char *&why) {
  auto cat = v.getDefiningOp<tg::ConcatOp>();
  if (!cat || cat.getInputs().size() != 2) {
    why = "not a two-input concat";
    return {};
  }
  int64_t rank = shapeOf(v).size();
  auto axis = tgc::normalizeAxis(cat.getAxis(), rank);
  if (!axis || *axis != rank - 1) {
    why = "concat is not on the last axis";
    return {};
  }
  Value first = cat.getInputs()[0], second = cat.getInputs()[1];
  Value negHi = negated(first);
  if (!negHi) {
    why = "the concat's first input is not a negation";
    return {};
  }
  auto hi = lastDimHalf(negHi), lo = lastDimHalf(second);
  if (!hi || !lo || hi->whole != lo->whole) {
    why = "the concat's inputs are not the two halves of one tensor's last dim";
    return {};
  }
  if (hi->which != 1 || lo->which != 0) {
    why = "not (-upper half, lower half): wrong order or negation on the wrong half";
    return {};
  }
  if (shapeOf(hi->whole) != shapeOf(v)) {
    why = "the rotated tensor does not keep the input's shape";
    return {};
  }
  return hi->whole;
}

/// True when `p` broadcasts to `x` without growing it.
bool broadcastsTo(Value p, Value x) {
  return tgc::broadcastShapes(shapeOf(x), shapeOf(p)) == std::optional<Shape>(shapeOf(x));
}

// x * cos + rotate_half(x) * sin -> rotary(x, cos, sin) {interleaved = false}
struct RecognizeRotaryEmbedding : public Rule<tg::AddOp> {
  explicit RecognizeRotaryEmbedding(mlir::MLIRContext *ctx)
      : Rule(ctx, "RecognizeRotaryEmbedding") {}

  LogicalResult apply(tg::AddOp op, PatternRewriter &rewriter) const override {
    const char *why = "no operand is rotate_half(x) * sin";
    for (auto [direct, rotated] :
         {std::pair{op.getLhs(), op.getRhs()}, {op.getRhs(), op.getLhs()}}) {
      auto rotMul = rotated.getDefiningOp<tg::MulOp>();
      auto dirMul = direct.getDefiningOp<tg::MulOp>();
      if (!rotMul || !dirMul)
        continue;
      for (auto [r, sin] :
           {std::pair{rotMul.getLhs(), rotMul.getRhs()}, {rotMul.getRhs(), rotMul.getLhs()}}) {
        Value x = rotateHalfOf(r, why);
        if (!x)
          continue;
        Value cos = otherOperand(dirMul, x);
        if (!cos) {
          why = "the other product does not multiply the rotated tensor";
          continue;
        }
        if (x.getType() != op.getType()) {
          why = "the sum's type differs from the rotated tensor's";
          continue;
        }
        if (!x.getType().cast<mlir::RankedTensorType>().getElementType().isa<mlir::FloatType>()) {
          why = "not a float tensor";
          continue;
        }
        if (!broadcastsTo(cos, x) || !broadcastsTo(sin, x)) {
          why = "cos/sin do not broadcast to the rotated tensor's shape";
          continue;
        }
        rewriter.replaceOpWithNewOp<tg::RotaryOp>(op, op.getType(), x, cos, sin, false);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(op, why);
  }
};

struct RecognizeRotaryPass : public RecognizeRotaryBase<RecognizeRotaryPass> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<RecognizeRotaryEmbedding>(&getContext());
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createRecognizeRotaryPass() {
  return std::make_unique<RecognizeRotaryPass>();
}

} // namespace tgc
