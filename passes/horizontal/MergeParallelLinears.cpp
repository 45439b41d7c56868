// MergeParallelLinears.cpp — `tgc-merge-parallel-linears`: linears on one input become one GEMM.
//
// Attention's Q, K and V projections (and a SwiGLU's gate and up projections) read the same
// activation with different constant weights. One GEMM with the weights concatenated reads the
// activation once and launches once; a split on the last axis hands each consumer its columns.
// Models exported with the projections already merged (gpt2's c_attn) have one linear and are
// left as they are.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/common/Rules.h"
#include "passes/horizontal/Passes.h"
#include "passes/horizontal/Stacking.h"

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/horizontal/Passes.h.inc"

mlir::RankedTensorType typeOf(mlir::Value v) {
  return v.getType().cast<mlir::RankedTensorType>();
}

/// True when `lin` can join a merge: constant weight, constant or absent bias, same element type.
bool isMergeable(tg::LinearOp lin) {
  if (!constantOf(lin.getWeight()) || (lin.getBias() && !constantOf(lin.getBias())))
    return false;
  return typeOf(lin.getWeight()).getElementType() == typeOf(lin.getInput()).getElementType();
}

// linear(x, W_1, b_1), ..., linear(x, W_n, b_n)  ==>  split(linear(x, [W_1; ...; W_n], [b_1; ...]), -1)
struct MergeParallelLinears : Rule<tg::LinearOp> {
  MergeParallelLinears(mlir::MLIRContext *ctx) : Rule(ctx, "MergeParallelLinears") {}
  mlir::LogicalResult apply(tg::LinearOp op, mlir::PatternRewriter &rewriter) const override {
    if (!isMergeable(op))
      return rewriter.notifyMatchFailure(op, "weight or bias is not a constant");
    mlir::Value x = op.getInput();
    llvm::SmallVector<tg::LinearOp> group;
    for (mlir::Operation *user : x.getUsers()) {
      auto lin = llvm::dyn_cast<tg::LinearOp>(user);
      if (!lin || lin.getInput() != x || lin->getBlock() != op->getBlock() || !isMergeable(lin))
        continue;
      if (llvm::is_contained(group, lin))
        continue; // x used twice by one op (as input and weight) is listed twice
      group.push_back(lin);
    }
    if (group.size() < 2)
      return rewriter.notifyMatchFailure(op, "no other linear with constant weights reads the input");
    llvm::sort(group, [](tg::LinearOp a, tg::LinearOp b) { return a->isBeforeInBlock(b); });
    if (group[0] != op)
      return rewriter.notifyMatchFailure(op, "the group is rewritten from its first linear");

    auto xt = typeOf(x);
    mlir::Type elem = xt.getElementType();
    int64_t K = xt.getShape().back(), total = 0;
    bool anyBias = false;
    llvm::SmallVector<mlir::ElementsAttr> weights, biases;
    llvm::SmallVector<mlir::Location> locs;
    for (tg::LinearOp lin : group) {
      total += typeOf(lin.getWeight()).getShape()[0];
      weights.push_back(*constantOf(lin.getWeight()));
      anyBias = anyBias || lin.getBias();
      locs.push_back(lin.getLoc());
    }
    auto wType = mlir::RankedTensorType::get({total, K}, elem);
    mlir::DenseElementsAttr w = concatConstants(weights, wType), b;
    if (!w)
      return rewriter.notifyMatchFailure(op, "weights could not be concatenated");
    auto bType = mlir::RankedTensorType::get({total}, elem);
    if (anyBias) {
      // A linear without a bias contributes zeros.
      for (tg::LinearOp lin : group)
        biases.push_back(lin.getBias() ? *constantOf(lin.getBias()) : mlir::ElementsAttr());
      for (size_t i = 0; i < group.size(); ++i)
        if (!biases[i]) {
          auto zeros = mlir::RankedTensorType::get(
              {typeOf(group[i].getWeight()).getShape()[0]}, elem);
          biases[i] = mlir::DenseElementsAttr::get(
              zeros, rewriter.getZeroAttr(elem));
        }
      if (!(b = concatConstants(biases, bType)))
        return rewriter.notifyMatchFailure(op, "biases could not be concatenated");
    }

    mlir::Location loc = rewriter.getFusedLoc(locs);
    rewriter.setInsertionPoint(op);
    mlir::Value wv = rewriter.create<tg::ConstantOp>(loc, wType, w);
    mlir::Value bv = anyBias ? rewriter.create<tg::ConstantOp>(loc, bType, b) : mlir::Value();
    llvm::SmallVector<int64_t> shape = llvm::to_vector(xt.getShape());
    shape.back() = total;
    auto merged = rewriter.create<tg::LinearOp>(loc, mlir::RankedTensorType::get(shape, elem), x,
                                                wv, bv);
    llvm::SmallVector<mlir::Type> types;
    for (tg::LinearOp lin : group)
      types.push_back(lin.getType());
    auto split = rewriter.create<tg::SplitOp>(loc, types, merged.getResult(),
                                              rewriter.getI64IntegerAttr(xt.getRank() - 1));
    for (auto [lin, r] : llvm::zip(group, split.getResults()))
      rewriter.replaceOp(lin, r);
    return mlir::success();
  }
};

struct MergeParallelLinearsPass : public MergeParallelLinearsBase<MergeParallelLinearsPass> {
  void runOnOperation() override {
    mlir::MLIRContext *ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    patterns.add<MergeParallelLinears>(ctx);
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createMergeParallelLinearsPass() {
  return std::make_unique<MergeParallelLinearsPass>();
}

} // namespace tgc
