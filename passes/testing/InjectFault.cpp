// InjectFault.cpp — `tgc-inject-fault`: a wrong rule on purpose, to test bisect/check-each-pass.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/common/Rules.h"
#include "passes/testing/Passes.h"

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/testing/Passes.h.inc"

// tanh(x) -> 1.01 * tanh(x)   (wrong by 1%: the fault to be found)
struct InjectFaultScaleTanh : Rule<tg::TanhOp> {
  using Rule::Rule;
  mlir::LogicalResult apply(tg::TanhOp op, mlir::PatternRewriter &rewriter) const override {
    auto type = op.getType().cast<mlir::RankedTensorType>();
    if (!type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 tanh is perturbed");
    if (op->hasAttr("tgc.faulted"))
      return rewriter.notifyMatchFailure(op, "already perturbed");
    rewriter.setInsertionPointAfter(op);
    auto scale = rewriter.create<tg::ConstantOp>(
        op.getLoc(), type, mlir::DenseElementsAttr::get(type, 1.01f));
    auto mul = rewriter.create<tg::MulOp>(op.getLoc(), type, op.getResult(), scale);
    rewriter.updateRootInPlace(op, [&] { op->setAttr("tgc.faulted", rewriter.getUnitAttr()); });
    op.getResult().replaceAllUsesExcept(mul.getResult(), mul);
    return mlir::success();
  }
};

struct InjectFaultPass : public InjectFaultBase<InjectFaultPass> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<InjectFaultScaleTanh>(&getContext(), "InjectFaultScaleTanh");
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
    getOperation().walk([](tg::TanhOp op) { op->removeAttr("tgc.faulted"); });
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createInjectFaultPass() { return std::make_unique<InjectFaultPass>(); }

} // namespace tgc
