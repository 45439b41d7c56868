// RecognizeSwiglu.cpp — `tgc-recognize-swiglu`: silu(gate) * up over the halves of one tensor.
//
// LLaMA's MLP is down(silu(gate(x)) * up(x)). `tgc-merge-parallel-linears` stacks gate and up
// into one linear [.., 2N] followed by a split, so the pattern this pass sees is
// silu(split#0) * split#1. Kernel formation already fuses silu and mul into one pointwise
// kernel, but the split stays a kernel of its own that copies both halves out of the GEMM
// result; tg.swiglu reads the GEMM result directly, so the copy and one launch per MLP go away.
// The pass runs after the merge (not before it, on silu(linear(x)) * linear'(x)): matching
// the merged form keeps the weight stacking in one place (MergeParallelLinears) and also
// catches models that export the gate/up projection as one fused linear plus a split or two
// slices.
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

// silu(x[..., :N]) * x[..., N:] -> swiglu(x)
struct RecognizeSwiglu : public Rule<tg::MulOp> {
  explicit RecognizeSwiglu(mlir::MLIRContext *ctx) : Rule(ctx, "RecognizeSwiglu") {}

  LogicalResult apply(tg::MulOp op, PatternRewriter &rewriter) const override {
    const char *why = "no operand is silu of a half of the last dim";
    for (auto [s, up] : {std::pair{op.getLhs(), op.getRhs()}, {op.getRhs(), op.getLhs()}}) {
      auto silu = s.getDefiningOp<tg::SiluOp>();
      if (!silu)
        continue;
      auto gate = lastDimHalf(silu.getInput());
      auto other = lastDimHalf(up);
      if (!gate || !other || gate->whole != other->whole) {
        why = "silu's input and the other factor are not the two halves of one tensor";
        continue;
      }
      if (gate->which != 0 || other->which != 1) {
        why = "silu is applied to the upper half (not the swiglu layout)";
        continue;
      }
      if (up.getType() != op.getType()) {
        why = "the product broadcasts beyond the halves";
        continue;
      }
      if (!op.getType().cast<mlir::RankedTensorType>().getElementType().isa<mlir::FloatType>()) {
        why = "not a float tensor";
        continue;
      }
      rewriter.replaceOpWithNewOp<tg::SwigluOp>(op, op.getType(), gate->whole);
      return success();
    }
    return rewriter.notifyMatchFailure(op, why);
  }
};

struct RecognizeSwigluPass : public RecognizeSwigluBase<RecognizeSwigluPass> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<RecognizeSwiglu>(&getContext());
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createRecognizeSwigluPass() {
  return std::make_unique<RecognizeSwigluPass>();
}

} // namespace tgc
