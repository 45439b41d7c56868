// SinkLayoutOps.cpp — `tgc-sink-layout-ops`: move reshapes and transposes below the elementwise
// ops (unary, or binary with a scalar) and layer norms that read them, and drop the reshapes around a linear that only flatten
// and restore its leading dims.
//
// Batching rewrites (horizontal fusion) wrap each batched op in layout ops: transpose into the
// batched layout, compute, transpose back. Between two batched ops the "back" of one meets the
// "into" of the next only if nothing sits between them. Sinking a layout op below an op that
// does not care about layout (elementwise) or only about its last dims (a layer norm over dims
// the transpose keeps in place) brings the pairs together, and tgc-eliminate-identities then
// cancels them. Sinking never adds an op, so it cannot make a graph worse.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/cleanup/Passes.h"
#include "passes/common/Rules.h"

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/cleanup/Passes.h.inc"

/// `op` rebuilt on `input` (same name and attributes; result type = input type).
mlir::Value cloneUnaryOn(mlir::PatternRewriter &rewriter, mlir::Operation *op,
                         mlir::Value input) {
  mlir::OperationState state(op->getLoc(), op->getName());
  state.addOperands(input);
  state.addTypes(input.getType());
  state.addAttributes(op->getAttrs());
  return rewriter.create(state)->getResult(0);
}

// f(layout(x)) -> layout(f(x)), f elementwise, layout = reshape or transpose (one rule per
// layout op kind; instantiated for every elementwise unary op under one label)
template <typename LayoutOp, typename UnaryOp> struct SinkLayoutBelowUnary : Rule<UnaryOp> {
  SinkLayoutBelowUnary(mlir::MLIRContext *ctx, llvm::StringRef name) : Rule<UnaryOp>(ctx, name) {}
  mlir::LogicalResult apply(UnaryOp op, mlir::PatternRewriter &rewriter) const override {
    auto layout = op->getOperand(0).template getDefiningOp<LayoutOp>();
    if (!layout)
      return rewriter.notifyMatchFailure(op, "operand is not the layout op");
    if (!layout->hasOneUse())
      return rewriter.notifyMatchFailure(op, "the layout op has other users");
    mlir::Value inner = cloneUnaryOn(rewriter, op, layout.getInput());
    mlir::Operation *moved = rewriter.clone(*layout);
    moved->setOperand(0, inner);
    rewriter.replaceOp(op, moved->getResults());
    return mlir::success();
  }
};

// tanh(reshape(x)) -> reshape(tanh(x))
template <typename UnaryOp>
struct SinkReshapeBelowUnary : SinkLayoutBelowUnary<tg::ReshapeOp, UnaryOp> {
  SinkReshapeBelowUnary(mlir::MLIRContext *ctx)
      : SinkLayoutBelowUnary<tg::ReshapeOp, UnaryOp>(ctx, "SinkReshapeBelowUnary") {}
};

// tanh(transpose(x, p)) -> transpose(tanh(x), p)
template <typename UnaryOp>
struct SinkTransposeBelowUnary : SinkLayoutBelowUnary<tg::TransposeOp, UnaryOp> {
  SinkTransposeBelowUnary(mlir::MLIRContext *ctx)
      : SinkLayoutBelowUnary<tg::TransposeOp, UnaryOp>(ctx, "SinkTransposeBelowUnary") {}
};

/// Adds both sinking rules for each elementwise unary op kind.
template <typename... UnaryOps>
void addUnarySinks(mlir::RewritePatternSet &patterns, mlir::MLIRContext *ctx) {
  (patterns.add<SinkReshapeBelowUnary<UnaryOps>, SinkTransposeBelowUnary<UnaryOps>>(ctx), ...);
}

// f(layout(x), c) -> layout(f(x, c)), f an elementwise binary op, c one element of rank at most
// x's (so it broadcasts to either shape alike; either operand order). The scalar halves of a
// hardsigmoid on a squeeze-excitation vector (MobileNetV3: reshape, then x·(1/6) + 1/2 clipped)
// thus sink below its reshape and join the GEMM before it in one kernel.
template <typename LayoutOp, typename BinaryOp> struct SinkLayoutBelowScalarBinary : Rule<BinaryOp> {
  SinkLayoutBelowScalarBinary(mlir::MLIRContext *ctx, llvm::StringRef name)
      : Rule<BinaryOp>(ctx, name) {}
  mlir::LogicalResult apply(BinaryOp op, mlir::PatternRewriter &rewriter) const override {
    auto type = [](mlir::Value v) { return v.getType().cast<mlir::RankedTensorType>(); };
    for (unsigned side = 0; side < 2; ++side) {
      auto layout = op->getOperand(side).template getDefiningOp<LayoutOp>();
      mlir::Value other = op->getOperand(1 - side);
      if (!layout || !layout->hasOneUse() || other == op->getOperand(side))
        continue;
      mlir::Value x = layout->getOperand(0);
      if (type(other).getNumElements() != 1 || type(other).getRank() > type(x).getRank() ||
          type(op.getResult()).getShape() != type(layout->getResult(0)).getShape())
        continue;
      mlir::OperationState state(op->getLoc(), op->getName());
      state.addOperands(side == 0 ? mlir::ValueRange{x, other} : mlir::ValueRange{other, x});
      state.addTypes(mlir::RankedTensorType::get(type(x).getShape(),
                                                 type(op.getResult()).getElementType()));
      state.addAttributes(op->getAttrs());
      mlir::Value inner = rewriter.create(state)->getResult(0);
      mlir::Operation *moved = rewriter.clone(*layout);
      moved->setOperand(0, inner);
      moved->getResult(0).setType(op.getResult().getType());
      rewriter.replaceOp(op, moved->getResults());
      return mlir::success();
    }
    return rewriter.notifyMatchFailure(op, "no single-use layout operand beside a scalar");
  }
};

/// Adds both sinking rules for each elementwise binary op kind.
template <typename... BinaryOps>
void addScalarBinarySinks(mlir::RewritePatternSet &patterns, mlir::MLIRContext *ctx) {
  (patterns.add<SinkLayoutBelowScalarBinary<tg::ReshapeOp, BinaryOps>>(
       ctx, "SinkReshapeBelowScalarBinary"),
   ...);
  (patterns.add<SinkLayoutBelowScalarBinary<tg::TransposeOp, BinaryOps>>(
       ctx, "SinkTransposeBelowScalarBinary"),
   ...);
}

// layer_norm(transpose(x, p), axis a) -> transpose(layer_norm(x, axis a), p)  when p keeps the
// normalized dims [a, rank) in place and scale/bias span only those dims
struct SinkTransposeBelowLayerNorm : Rule<tg::LayerNormOp> {
  SinkTransposeBelowLayerNorm(mlir::MLIRContext *ctx)
      : Rule(ctx, "SinkTransposeBelowLayerNorm") {}
  mlir::LogicalResult apply(tg::LayerNormOp ln, mlir::PatternRewriter &rewriter) const override {
    auto tr = ln.getInput().getDefiningOp<tg::TransposeOp>();
    if (!tr)
      return rewriter.notifyMatchFailure(ln, "input is not a transpose");
    if (!tr->hasOneUse())
      return rewriter.notifyMatchFailure(ln, "the transpose has other users");
    int64_t rank = ln.getType().cast<mlir::RankedTensorType>().getRank();
    int64_t axis = ln.getAxisAttr().getInt();
    axis = axis < 0 ? axis + rank : axis;
    auto perm = tr.getPerm();
    for (int64_t i = axis; i < rank; ++i)
      if (perm[i].cast<mlir::IntegerAttr>().getInt() != i)
        return rewriter.notifyMatchFailure(ln, "the transpose moves a normalized dim");
    for (mlir::Value p : {ln.getScale(), ln.getBias()})
      if (p && p.getType().cast<mlir::RankedTensorType>().getRank() > rank - axis)
        return rewriter.notifyMatchFailure(ln, "scale/bias spans more than the normalized dims");
    auto norm = rewriter.create<tg::LayerNormOp>(ln.getLoc(), tr.getInput().getType(),
                                                 tr.getInput(), ln.getScale(), ln.getBias(),
                                                 ln.getAxisAttr(), ln.getEpsilonAttr());
    rewriter.replaceOpWithNewOp<tg::TransposeOp>(ln, ln.getType(), norm.getResult(),
                                                 tr.getPerm());
    return mlir::success();
  }
};

// reshape(linear(y), [e..., N]) -> linear(reshape(y, [e..., K]))  when the reshape only regroups
// the linear's rows (it keeps the last dim N); a reshape feeding y merges into the new one, and
// one that would not change y's shape is dropped. A linear takes any leading dims, so the
// flatten/unflatten pair around every ONNX Gemm goes away and the linear meets the ops after it
// directly (a residual add then joins the GEMM's epilogue). Never adds an op.
struct FoldReshapesAroundLinear : Rule<tg::ReshapeOp> {
  FoldReshapesAroundLinear(mlir::MLIRContext *ctx) : Rule(ctx, "FoldReshapesAroundLinear") {}
  mlir::LogicalResult apply(tg::ReshapeOp out, mlir::PatternRewriter &rewriter) const override {
    auto lin = out.getInput().getDefiningOp<tg::LinearOp>();
    if (!lin || !lin->hasOneUse())
      return rewriter.notifyMatchFailure(out, "input is not a linear read only here");
    auto type = [](mlir::Value v) { return v.getType().cast<mlir::RankedTensorType>(); };
    llvm::ArrayRef<int64_t> ys = type(out.getResult()).getShape();
    if (ys.empty() || ys.back() != type(lin.getResult()).getShape().back())
      return rewriter.notifyMatchFailure(out, "the reshape changes the last dim");
    mlir::Value src = lin.getInput();
    if (auto in = src.getDefiningOp<tg::ReshapeOp>())
      src = in.getInput();
    llvm::SmallVector<int64_t> xs(ys.begin(), ys.end());
    xs.back() = type(lin.getInput()).getShape().back();
    auto xt = mlir::RankedTensorType::get(xs, type(src).getElementType());
    if (type(src) != xt)
      src = rewriter.create<tg::ReshapeOp>(out.getLoc(), xt, src);
    rewriter.replaceOpWithNewOp<tg::LinearOp>(out, out.getType(), src, lin.getWeight(),
                                              lin.getBias());
    return mlir::success();
  }
};

struct SinkLayoutOpsPass : public SinkLayoutOpsBase<SinkLayoutOpsPass> {
  void runOnOperation() override {
    mlir::MLIRContext *ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    addUnarySinks<tg::NegOp, tg::AbsOp, tg::SignOp, tg::ExpOp, tg::LogOp, tg::SqrtOp, tg::RsqrtOp,
                  tg::ReciprocalOp, tg::TanhOp, tg::SigmoidOp, tg::ErfOp, tg::ReluOp, tg::SiluOp,
                  tg::SinOp, tg::CosOp, tg::FloorOp, tg::CeilOp, tg::RoundOp, tg::NotOp,
                  tg::GeluOp, tg::MathOp>(patterns, ctx);
    addScalarBinarySinks<tg::AddOp, tg::SubOp, tg::MulOp, tg::DivOp, tg::PowOp, tg::MaxOp,
                         tg::MinOp, tg::ModOp, tg::EqualOp, tg::LessOp, tg::LessEqualOp,
                         tg::GreaterOp, tg::GreaterEqualOp, tg::AndOp, tg::OrOp, tg::XorOp>(
        patterns, ctx);
    patterns.add<SinkTransposeBelowLayerNorm, FoldReshapesAroundLinear>(ctx);
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createSinkLayoutOpsPass() {
  return std::make_unique<SinkLayoutOpsPass>();
}

} // namespace tgc
