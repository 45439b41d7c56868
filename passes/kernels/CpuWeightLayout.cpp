// CpuWeightLayout.cpp — `tgc-cpu-weight-layout`: linear weights stored [K, N] for the CPU.
//
// tg.linear keeps its weight as [N, K]: cuBLASLt's transposed-B layout, and the form horizontal
// fusion stacks. The CPU's GEMM reads B row by row instead: its AVX-512 tiles broadcast one
// element of A and load 32 consecutive columns of B per step of k (no packing), and OpenBLAS is
// as fast or faster on an untransposed B. So on CPU targets, after every rule that matches
// tg.linear:
//   linear(x, W:const[N, K], b) -> matmul(x, Wᵀ:const[K, N]) (+ b)
// with Wᵀ written at compile time; the bias add becomes the GEMM's epilogue in kernel
// formation. f32 only (an f16/bf16 GEMM copies B to float anyway), and only a weight that only
// linears read (a recurrent weight, read by every step, gets one transpose for all; a tied
// embedding keeps one copy).
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/common/Constants.h"
#include "passes/common/Rules.h"
#include "passes/kernels/Passes.h"

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/kernels/Passes.h.inc"

using mlir::LogicalResult;
using mlir::PatternRewriter;
using mlir::RankedTensorType;
using mlir::Value;

/// True when every reader of `w` is a tg.linear that takes it as its weight, with an input of
/// rank >= 2 (each becomes a matmul by one shared transpose).
bool onlyLinearWeight(Value w) {
  for (mlir::OpOperand &use : w.getUses()) {
    auto lin = dyn_cast<tg::LinearOp>(use.getOwner());
    if (!lin || use.getOperandNumber() != 1 ||
        lin.getInput().getType().cast<RankedTensorType>().getRank() < 2)
      return false;
  }
  return true;
}

struct StoreLinearWeightKN : public Rule<tg::LinearOp> {
  explicit StoreLinearWeightKN(mlir::MLIRContext *ctx) : Rule(ctx, "StoreLinearWeightKN") {}

  LogicalResult apply(tg::LinearOp op, PatternRewriter &rewriter) const override {
    auto c = op.getWeight().getDefiningOp<tg::ConstantOp>();
    if (!c)
      return rewriter.notifyMatchFailure(op, "weight is not a constant");
    auto dense = c.getValue().dyn_cast<mlir::DenseElementsAttr>();
    auto wt = op.getWeight().getType().cast<RankedTensorType>();
    if (!dense || wt.getRank() != 2 || !wt.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "weight is not a dense f32 [N, K] constant");
    // A recurrent weight is read by every step's linear: all of them share one transpose.
    if (!onlyLinearWeight(op.getWeight()))
      return rewriter.notifyMatchFailure(op, "another op reads the weight, or an input is a vector");
    auto kn = transpose2d(dense);
    if (!kn)
      return rewriter.notifyMatchFailure(op, "weight cannot be transposed");
    rewriter.setInsertionPointAfter(c);
    auto w = rewriter.create<tg::ConstantOp>(c.getLoc(), kn->getType(), *kn);
    for (mlir::Operation *user : llvm::to_vector(op.getWeight().getUsers())) {
      auto lin = cast<tg::LinearOp>(user);
      rewriter.setInsertionPoint(lin);
      Value y = rewriter.create<tg::MatmulOp>(lin.getLoc(), lin.getType(), lin.getInput(), w);
      if (Value b = lin.getBias())
        y = rewriter.create<tg::AddOp>(lin.getLoc(), lin.getType(), y, b);
      rewriter.replaceOp(lin, y);
    }
    return mlir::success();
  }
};

struct CpuWeightLayoutPass : public CpuWeightLayoutBase<CpuWeightLayoutPass> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<StoreLinearWeightKN>(&getContext());
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createCpuWeightLayoutPass() {
  return std::make_unique<CpuWeightLayoutPass>();
}

} // namespace tgc
