// EliminateIdentities.cpp — `tgc-eliminate-identities`: drop ops that return their input.
//
// Exporters and earlier rewrites leave reshape chains, transpose pairs, full slices, no-op
// arithmetic (x + 0, x * 1), norms scaled by ones, and selects on a constant condition behind.
// Each is one atomic rule; removing them early lets recognition and horizontal fusion see the
// ops that compute.
#include "compiler/dialect/Shapes.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "passes/cleanup/Passes.h"
#include "passes/common/Rules.h"

#include <type_traits>

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/cleanup/Passes.h.inc"

// reshape(reshape(x)) -> reshape(x)
struct FoldReshapeChain : Rule<tg::ReshapeOp> {
  FoldReshapeChain(mlir::MLIRContext *ctx) : Rule(ctx, "FoldReshapeChain") {}
  mlir::LogicalResult apply(tg::ReshapeOp op, mlir::PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<tg::ReshapeOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not a reshape");
    rewriter.replaceOpWithNewOp<tg::ReshapeOp>(op, op.getType(), inner.getInput());
    return mlir::success();
  }
};

// reshape(x : T) -> T  ==>  x
struct FoldIdentityReshape : Rule<tg::ReshapeOp> {
  FoldIdentityReshape(mlir::MLIRContext *ctx) : Rule(ctx, "FoldIdentityReshape") {}
  mlir::LogicalResult apply(tg::ReshapeOp op, mlir::PatternRewriter &rewriter) const override {
    if (op.getInput().getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "reshape changes the shape");
    rewriter.replaceOp(op, op.getInput());
    return mlir::success();
  }
};

// transpose(transpose(x, p), q) -> transpose(x, p∘q), or x when p∘q is the identity
struct FoldTransposePair : Rule<tg::TransposeOp> {
  FoldTransposePair(mlir::MLIRContext *ctx) : Rule(ctx, "FoldTransposePair") {}
  mlir::LogicalResult apply(tg::TransposeOp op, mlir::PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<tg::TransposeOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not a transpose");
    std::vector<int64_t> p = intsOf(inner.getPerm()), q = intsOf(op.getPerm()), c;
    bool identity = true;
    for (size_t i = 0; i < q.size(); ++i) {
      c.push_back(p[q[i]]);
      identity = identity && c.back() == (int64_t)i;
    }
    if (identity) {
      rewriter.replaceOp(op, inner.getInput());
      return mlir::success();
    }
    rewriter.replaceOpWithNewOp<tg::TransposeOp>(op, op.getType(), inner.getInput(),
                                                 rewriter.getI64ArrayAttr(c));
    return mlir::success();
  }
};

// transpose(x, [0, 1, ..., n-1]) -> x
struct FoldIdentityTranspose : Rule<tg::TransposeOp> {
  FoldIdentityTranspose(mlir::MLIRContext *ctx) : Rule(ctx, "FoldIdentityTranspose") {}
  mlir::LogicalResult apply(tg::TransposeOp op, mlir::PatternRewriter &rewriter) const override {
    std::vector<int64_t> perm = intsOf(op.getPerm());
    auto shape = op.getInput().getType().cast<mlir::RankedTensorType>().getShape();
    // Moving only size-1 dims keeps the element order, but changes the type: not ours.
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != (int64_t)i && shape[perm[i]] != 1)
        return rewriter.notifyMatchFailure(op, "perm moves a dim");
    if (op.getInput().getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "perm moves a unit dim (a reshape, not an identity)");
    rewriter.replaceOp(op, op.getInput());
    return mlir::success();
  }
};

// A chain of reshapes and transposes, each read only by the next, that leaves every element
// where it was (e.g. [B,HW,M] -> [B,H,W,M] -> transpose -> [B,M,H,W] -> [B,M,HW] -> transpose
// -> [B,HW,M]): the last transpose -> reshape(x). Decided exactly, by moving an index array
// through the chain (chains of at most kMaxChainElements elements).
constexpr int64_t kMaxChainElements = int64_t(1) << 22;
struct FoldLayoutChainToReshape : Rule<tg::TransposeOp> {
  FoldLayoutChainToReshape(mlir::MLIRContext *ctx) : Rule(ctx, "FoldLayoutChainToReshape") {}
  mlir::LogicalResult apply(tg::TransposeOp op, mlir::PatternRewriter &rewriter) const override {
    std::vector<mlir::Operation *> chain = {op};
    mlir::Value src = op.getInput();
    while (mlir::Operation *d = src.getDefiningOp()) {
      if (!mlir::isa<tg::ReshapeOp, tg::TransposeOp>(d) || !d->getResult(0).hasOneUse())
        break;
      chain.push_back(d);
      src = d->getOperand(0);
    }
    if (chain.size() < 2)
      return rewriter.notifyMatchFailure(op, "no layout chain above the transpose");
    auto type = src.getType().cast<mlir::RankedTensorType>();
    if (!type.hasStaticShape() || type.getNumElements() > kMaxChainElements)
      return rewriter.notifyMatchFailure(op, "chain too large to check");
    std::vector<int64_t> idx((size_t)type.getNumElements()), next(idx.size());
    for (size_t i = 0; i < idx.size(); ++i)
      idx[i] = (int64_t)i;
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      auto tr = mlir::dyn_cast<tg::TransposeOp>(*it);
      if (!tr) { // a reshape keeps the order
        auto s = (*it)->getResult(0).getType().cast<mlir::RankedTensorType>().getShape();
        shape.assign(s.begin(), s.end());
        continue;
      }
      std::vector<int64_t> perm = intsOf(tr.getPerm()), stride = stridesOf(shape), out, coord;
      for (int64_t p : perm)
        out.push_back(shape[p]);
      coord.assign(out.size(), 0);
      for (size_t j = 0; j < next.size(); ++j) { // out[coord] = in[coord through perm]
        int64_t from = 0;
        for (size_t d = 0; d < out.size(); ++d)
          from += coord[d] * stride[perm[d]];
        next[j] = idx[(size_t)from];
        for (int64_t d = (int64_t)out.size() - 1; d >= 0 && ++coord[d] == out[d]; --d)
          coord[d] = 0;
      }
      idx.swap(next);
      shape = out;
    }
    for (size_t i = 0; i < idx.size(); ++i)
      if (idx[i] != (int64_t)i)
        return rewriter.notifyMatchFailure(op, "the chain moves elements");
    if (src.getType() == op.getType())
      rewriter.replaceOp(op, src);
    else
      rewriter.replaceOpWithNewOp<tg::ReshapeOp>(op, op.getType(), src);
    return mlir::success();
  }
};

// expand(x : T) -> T  ==>  x
struct FoldIdentityExpand : Rule<tg::ExpandOp> {
  FoldIdentityExpand(mlir::MLIRContext *ctx) : Rule(ctx, "FoldIdentityExpand") {}
  mlir::LogicalResult apply(tg::ExpandOp op, mlir::PatternRewriter &rewriter) const override {
    if (op.getInput().getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "expand broadcasts");
    rewriter.replaceOp(op, op.getInput());
    return mlir::success();
  }
};

// slice(x, starts = 0, steps = 1) : shape(x) -> shape(x)  ==>  x
struct FoldFullSlice : Rule<tg::SliceOp> {
  FoldFullSlice(mlir::MLIRContext *ctx) : Rule(ctx, "FoldFullSlice") {}
  mlir::LogicalResult apply(tg::SliceOp op, mlir::PatternRewriter &rewriter) const override {
    if (op.getInput().getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "slice changes the shape");
    std::vector<int64_t> starts = intsOf(op.getStarts()), steps = intsOf(op.getSteps());
    auto shape = op.getType().cast<mlir::RankedTensorType>().getShape();
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] > 1 && (starts[i] != 0 || steps[i] != 1))
        return rewriter.notifyMatchFailure(op, "slice reorders or offsets a dim");
    rewriter.replaceOp(op, op.getInput());
    return mlir::success();
  }
};

// where(true, a, b) -> a;  where(false, a, b) -> b  (expanded to the result shape if needed)
struct FoldWhereConstantCondition : Rule<tg::WhereOp> {
  FoldWhereConstantCondition(mlir::MLIRContext *ctx) : Rule(ctx, "FoldWhereConstantCondition") {}
  mlir::LogicalResult apply(tg::WhereOp op, mlir::PatternRewriter &rewriter) const override {
    mlir::Attribute attr;
    if (!mlir::matchPattern(op.getCond(), mlir::m_Constant(&attr)))
      return rewriter.notifyMatchFailure(op, "condition is not a constant");
    auto cond = attr.dyn_cast<mlir::DenseElementsAttr>();
    if (!cond || cond.empty())
      return rewriter.notifyMatchFailure(op, "condition is not a dense non-empty constant");
    auto values = cond.getValues<bool>();
    bool first = *values.begin();
    for (bool v : values)
      if (v != first)
        return rewriter.notifyMatchFailure(op, "condition mixes true and false");
    mlir::Value taken = first ? op.getLhs() : op.getRhs();
    if (taken.getType() != op.getType()) {
      auto tt = taken.getType().cast<mlir::RankedTensorType>();
      auto rt = op.getType().cast<mlir::RankedTensorType>();
      if (tt.getElementType() != rt.getElementType())
        return rewriter.notifyMatchFailure(op, "branch element type differs from the result");
      rewriter.replaceOpWithNewOp<tg::ExpandOp>(op, rt, taken);
      return mlir::success();
    }
    rewriter.replaceOp(op, taken);
    return mlir::success();
  }
};

/// True when `v` is a constant whose elements all equal `want`.
bool isSplatOf(mlir::Value v, double want) {
  mlir::Attribute attr;
  if (!mlir::matchPattern(v, mlir::m_Constant(&attr)))
    return false;
  auto dense = attr.dyn_cast<mlir::DenseElementsAttr>();
  if (!dense || !dense.isSplat())
    return false;
  mlir::Type et = dense.getElementType();
  if (et.isa<mlir::FloatType>())
    return dense.getSplatValue<llvm::APFloat>().convertToDouble() == want;
  if (et.isa<mlir::IntegerType>() && !et.isInteger(1))
    return (double)dense.getSplatValue<llvm::APInt>().getSExtValue() == want;
  return false;
}

// x + 0 -> x,  0 + x -> x,  x - 0 -> x,  x * 1 -> x,  1 * x -> x,  x / 1 -> x
// (only when x already has the result's type: the splat must not broadcast x; x + 0 maps -0 to
// +0 in IEEE arithmetic, which no consumer tells apart)
template <typename OpT> struct FoldNoOpArithmetic : Rule<OpT> {
  FoldNoOpArithmetic(mlir::MLIRContext *ctx) : Rule<OpT>(ctx, "FoldNoOpArithmetic") {}
  mlir::LogicalResult apply(OpT op, mlir::PatternRewriter &rewriter) const override {
    constexpr bool commutes = std::is_same_v<OpT, tg::AddOp> || std::is_same_v<OpT, tg::MulOp>;
    constexpr double neutral =
        std::is_same_v<OpT, tg::AddOp> || std::is_same_v<OpT, tg::SubOp> ? 0.0 : 1.0;
    mlir::Value keep;
    if (isSplatOf(op.getRhs(), neutral))
      keep = op.getLhs();
    else if (commutes && isSplatOf(op.getLhs(), neutral))
      keep = op.getRhs();
    else
      return rewriter.notifyMatchFailure(op, "no neutral splat operand");
    if (keep.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "the neutral operand broadcasts the other one");
    rewriter.replaceOp(op, keep);
    return mlir::success();
  }
};

/// True when `v` is a float constant whose elements all equal `want` (+0 and -0 both equal 0;
/// the splat form covers any constant whose elements have identical bits).
bool allFloatsEqual(mlir::Value v, double want) {
  mlir::Attribute attr;
  if (!v || !mlir::matchPattern(v, mlir::m_Constant(&attr)))
    return false;
  auto dense = attr.dyn_cast<mlir::DenseElementsAttr>();
  if (!dense || !dense.getElementType().isa<mlir::FloatType>())
    return false;
  for (const llvm::APFloat &x : dense.getValues<llvm::APFloat>())
    if (x.convertToDouble() != want)
      return false;
  return true;
}

// layer_norm(x, 1, 0) -> layer_norm(x);  layer_norm(x, γ, 0) -> layer_norm(x, γ);
// layer_norm(x, 1, β) -> layer_norm(x, bias β)
struct DropUnitLayerNormAffine : Rule<tg::LayerNormOp> {
  DropUnitLayerNormAffine(mlir::MLIRContext *ctx) : Rule(ctx, "DropUnitLayerNormAffine") {}
  mlir::LogicalResult apply(tg::LayerNormOp op, mlir::PatternRewriter &rewriter) const override {
    mlir::Value scale = op.getScale(), bias = op.getBias();
    const bool dropBias = allFloatsEqual(bias, 0.0);
    const bool dropScale = allFloatsEqual(scale, 1.0);
    if (!dropScale && !dropBias)
      return rewriter.notifyMatchFailure(op, "no scale of ones or shift of zeros");
    rewriter.replaceOpWithNewOp<tg::LayerNormOp>(
        op, op.getType(), op.getInput(), dropScale ? mlir::Value() : scale,
        dropBias ? mlir::Value() : bias, op.getAxisAttr(), op.getEpsilonAttr());
    return mlir::success();
  }
};

// rms_norm(x, 1) -> rms_norm(x)
struct DropUnitRmsNormScale : Rule<tg::RmsNormOp> {
  DropUnitRmsNormScale(mlir::MLIRContext *ctx) : Rule(ctx, "DropUnitRmsNormScale") {}
  mlir::LogicalResult apply(tg::RmsNormOp op, mlir::PatternRewriter &rewriter) const override {
    if (!allFloatsEqual(op.getScale(), 1.0))
      return rewriter.notifyMatchFailure(op, "no scale of ones");
    rewriter.replaceOpWithNewOp<tg::RmsNormOp>(op, op.getType(), op.getInput(), mlir::Value(),
                                               op.getAxisAttr(), op.getEpsilonAttr());
    return mlir::success();
  }
};

struct EliminateIdentitiesPass : public EliminateIdentitiesBase<EliminateIdentitiesPass> {
  void runOnOperation() override {
    mlir::MLIRContext *ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    patterns.add<FoldReshapeChain, FoldIdentityReshape, FoldTransposePair, FoldIdentityTranspose,
                 FoldLayoutChainToReshape, FoldIdentityExpand, FoldFullSlice, FoldWhereConstantCondition,
                 FoldNoOpArithmetic<tg::AddOp>, FoldNoOpArithmetic<tg::SubOp>,
                 FoldNoOpArithmetic<tg::MulOp>, FoldNoOpArithmetic<tg::DivOp>,
                 DropUnitLayerNormAffine, DropUnitRmsNormScale>(ctx);
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createEliminateIdentitiesPass() {
  return std::make_unique<EliminateIdentitiesPass>();
}

} // namespace tgc
