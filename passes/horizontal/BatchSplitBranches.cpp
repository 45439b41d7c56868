// BatchSplitBranches.cpp — `tgc-batch-split-branches`: fuse the parallel branches of a split.
//
// A split whose chunks each run the same op (a linear with same-shaped weights, a layer norm, an
// activation) is N small kernels where one batched kernel does. Following the seed, each rule
// moves one op kind in front of the split; applied to a fixed point they turn
//   split -> N x (linear -> layer_norm -> tanh -> linear) -> concat
// into batched matmul -> layer_norm -> tanh -> batched matmul, and the final split meets the
// concat and disappears (`EliminateSplitConcat`).
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

mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape, mlir::Type elem) {
  return mlir::RankedTensorType::get(shape, elem);
}

/// The equal chunk size of a split on the last axis into ≥ 2 results, or a failure reason.
mlir::FailureOr<int64_t> equalLastAxisChunks(tg::SplitOp split, const char *&why) {
  auto shape = typeOf(split.getInput()).getShape();
  int64_t rank = shape.size(), axis = split.getAxisAttr().getInt();
  if (axis < 0)
    axis += rank;
  if (axis != rank - 1) {
    why = "split is not on the last axis";
    return mlir::failure();
  }
  if (split.getNumResults() < 2) {
    why = "split has fewer than two results";
    return mlir::failure();
  }
  int64_t chunk = typeOf(split.getResult(0)).getShape().back();
  for (mlir::Value r : split.getResults())
    if (typeOf(r).getShape().back() != chunk) {
      why = "split into unequal chunks";
      return mlir::failure();
    }
  return chunk;
}

/// The single user of each split result, when every result has exactly one user of type OpT
/// taking it as operand 0.
template <typename OpT>
mlir::FailureOr<llvm::SmallVector<OpT>> soleUsers(tg::SplitOp split, const char *&why) {
  llvm::SmallVector<OpT> users;
  for (mlir::Value r : split.getResults()) {
    if (!r.hasOneUse()) {
      why = "a chunk has no user or several users";
      return mlir::failure();
    }
    auto user = llvm::dyn_cast<OpT>(*r.getUsers().begin());
    if (!user || user->getOperand(0) != r) {
      why = "a chunk feeds a different op";
      return mlir::failure();
    }
    users.push_back(user);
  }
  return users;
}

/// Replaces `ops` (one result each) by the results of a new split of `whole` on its last axis.
void replaceBySplit(mlir::PatternRewriter &rewriter, mlir::Location loc, mlir::Value whole,
                    llvm::ArrayRef<mlir::Operation *> ops) {
  llvm::SmallVector<mlir::Type> types;
  for (mlir::Operation *op : ops)
    types.push_back(op->getResult(0).getType());
  int64_t axis = typeOf(whole).getRank() - 1;
  auto split = rewriter.create<tg::SplitOp>(loc, types, whole, rewriter.getI64IntegerAttr(axis));
  for (auto [op, r] : llvm::zip(ops, split.getResults()))
    rewriter.replaceOp(op, r);
}

mlir::Location fusedLoc(mlir::PatternRewriter &rewriter, llvm::ArrayRef<mlir::Operation *> ops) {
  llvm::SmallVector<mlir::Location> locs;
  for (mlir::Operation *op : ops)
    locs.push_back(op->getLoc());
  return rewriter.getFusedLoc(locs);
}

// split(x[.., N*K], -1) -> N x linear(x_i, W_i [M, K], b_i)
//   ==> split(reshape(transpose(matmul(transpose(reshape(x)[rows, N, K]), stack(W_iᵀ)) + b)), -1)
struct BatchLinearsOnSplit : Rule<tg::SplitOp> {
  BatchLinearsOnSplit(mlir::MLIRContext *ctx) : Rule(ctx, "BatchLinearsOnSplit") {}
  mlir::LogicalResult apply(tg::SplitOp split, mlir::PatternRewriter &rewriter) const override {
    const char *why = "";
    auto chunk = equalLastAxisChunks(split, why);
    if (mlir::failed(chunk))
      return rewriter.notifyMatchFailure(split, why);
    auto linears = soleUsers<tg::LinearOp>(split, why);
    if (mlir::failed(linears))
      return rewriter.notifyMatchFailure(split, why);
    int64_t N = linears->size(), K = *chunk;
    auto w0 = typeOf((*linears)[0].getWeight());
    bool hasBias = (bool)(*linears)[0].getBias();
    llvm::SmallVector<mlir::ElementsAttr> weights, biases;
    for (tg::LinearOp lin : *linears) {
      if (typeOf(lin.getWeight()) != w0)
        return rewriter.notifyMatchFailure(split, "linears have different weight shapes");
      if ((bool)lin.getBias() != hasBias)
        return rewriter.notifyMatchFailure(split, "some linears have a bias and some do not");
      auto w = constantOf(lin.getWeight());
      if (!w)
        return rewriter.notifyMatchFailure(split, "a weight is not a constant");
      weights.push_back(*w);
      if (hasBias) {
        auto b = constantOf(lin.getBias());
        if (!b)
          return rewriter.notifyMatchFailure(split, "a bias is not a constant");
        biases.push_back(*b);
      }
    }
    auto xt = typeOf(split.getInput());
    mlir::Type elem = xt.getElementType();
    if (w0.getElementType() != elem)
      return rewriter.notifyMatchFailure(split, "weight and input element types differ");
    int64_t M = w0.getShape()[0];
    llvm::SmallVector<int64_t> lead = llvm::to_vector(xt.getShape().drop_back());
    int64_t rows = 1;
    for (int64_t d : lead)
      rows *= d;
    auto wType = tensorType({N, K, M}, elem);
    mlir::DenseElementsAttr stacked = stackTransposed(weights, wType), bias;
    if (!stacked)
      return rewriter.notifyMatchFailure(split, "weights could not be stacked");
    auto bType = tensorType({N, 1, M}, elem);
    if (hasBias && !(bias = concatConstants(biases, bType)))
      return rewriter.notifyMatchFailure(split, "biases could not be stacked");

    llvm::SmallVector<mlir::Operation *> ops(linears->begin(), linears->end());
    mlir::Location loc = fusedLoc(rewriter, ops);
    rewriter.setInsertionPointAfter(split);
    auto perm = rewriter.getI64ArrayAttr({1, 0, 2});
    mlir::Value v = rewriter.create<tg::ReshapeOp>(loc, tensorType({rows, N, K}, elem),
                                                   split.getInput());
    v = rewriter.create<tg::TransposeOp>(loc, tensorType({N, rows, K}, elem), v, perm);
    mlir::Value w = rewriter.create<tg::ConstantOp>(loc, wType, stacked);
    auto outType = tensorType({N, rows, M}, elem);
    v = rewriter.create<tg::MatmulOp>(loc, outType, v, w);
    if (hasBias) {
      mlir::Value b = rewriter.create<tg::ConstantOp>(loc, bType, bias);
      v = rewriter.create<tg::AddOp>(loc, outType, v, b);
    }
    v = rewriter.create<tg::TransposeOp>(loc, tensorType({rows, N, M}, elem), v, perm);
    llvm::SmallVector<int64_t> whole = lead;
    whole.push_back(N * M);
    v = rewriter.create<tg::ReshapeOp>(loc, tensorType(whole, elem), v);
    replaceBySplit(rewriter, loc, v, ops);
    rewriter.eraseOp(split);
    return mlir::success();
  }
};

// split(x[.., N*M], -1) -> N x layer_norm(x_i, s_i [M], b_i [M], axis -1)
//   ==> split(reshape(layer_norm(reshape(x)[.., N, M], stack(s_i) [N, M], stack(b_i), -1)), -1)
struct BatchLayerNormsOnSplit : Rule<tg::SplitOp> {
  BatchLayerNormsOnSplit(mlir::MLIRContext *ctx) : Rule(ctx, "BatchLayerNormsOnSplit") {}

  /// The stacked [N, M] value of one operand of the layer norms (a norm without it contributes M
  /// copies of `fill`: 1 for a scale, 0 for a bias); a null attribute where the norms share one
  /// parameter (or none), which stays as it is. Creates nothing, so a failure leaves the IR as
  /// it was.
  static mlir::FailureOr<mlir::DenseElementsAttr>
  stackParam(mlir::PatternRewriter &rewriter, llvm::ArrayRef<mlir::Value> params, int64_t M,
             mlir::Type elem, double fill, const char *&why) {
    if (llvm::is_splat(params))
      return mlir::DenseElementsAttr();
    llvm::SmallVector<mlir::ElementsAttr> parts;
    for (mlir::Value p : params) {
      if (!p) {
        parts.push_back(mlir::DenseElementsAttr::get(tensorType({M}, elem),
                                                     rewriter.getFloatAttr(elem, fill)));
        continue;
      }
      auto c = constantOf(p);
      auto t = typeOf(p);
      if (!c || t.getNumElements() != M || t.getShape().back() != M) {
        why = "a scale/bias is not a constant with M elements";
        return mlir::failure();
      }
      parts.push_back(*c);
    }
    mlir::DenseElementsAttr attr =
        concatConstants(parts, tensorType({(int64_t)params.size(), M}, elem));
    if (!attr) {
      why = "scale/bias could not be stacked";
      return mlir::failure();
    }
    return attr;
  }

  mlir::LogicalResult apply(tg::SplitOp split, mlir::PatternRewriter &rewriter) const override {
    const char *why = "";
    auto chunk = equalLastAxisChunks(split, why);
    if (mlir::failed(chunk))
      return rewriter.notifyMatchFailure(split, why);
    auto norms = soleUsers<tg::LayerNormOp>(split, why);
    if (mlir::failed(norms))
      return rewriter.notifyMatchFailure(split, why);
    auto xt = typeOf(split.getInput());
    int64_t rank = xt.getRank(), M = *chunk, N = norms->size();
    tg::LayerNormOp first = (*norms)[0];
    llvm::SmallVector<mlir::Value> scales, biases;
    for (tg::LayerNormOp ln : *norms) {
      int64_t axis = ln.getAxisAttr().getInt();
      if ((axis < 0 ? axis + rank : axis) != rank - 1)
        return rewriter.notifyMatchFailure(split, "a layer norm is not over the last axis only");
      if (ln.getEpsilonAttr() != first.getEpsilonAttr())
        return rewriter.notifyMatchFailure(split, "layer norms have different epsilons");
      scales.push_back(ln.getScale());
      biases.push_back(ln.getBias());
    }
    llvm::SmallVector<mlir::Operation *> ops(norms->begin(), norms->end());
    mlir::Location loc = fusedLoc(rewriter, ops);
    mlir::Type elem = xt.getElementType();
    // Parameters are checked before anything is created, so a bail-out leaves the IR untouched.
    // A norm without a scale or bias (dropped as ones or zeros) stacks ones or zeros instead.
    for (auto *params : {&scales, &biases})
      if (!llvm::is_splat(*params))
        for (mlir::Value p : *params)
          if (p && (!constantOf(p) || typeOf(p).getNumElements() != M ||
                    typeOf(p).getShape().back() != M))
            return rewriter.notifyMatchFailure(split,
                                               "a scale/bias is not a constant with M elements");
    auto scaleAttr = stackParam(rewriter, scales, M, elem, 1.0, why);
    auto biasAttr = stackParam(rewriter, biases, M, elem, 0.0, why);
    if (mlir::failed(scaleAttr) || mlir::failed(biasAttr))
      return rewriter.notifyMatchFailure(split, why);
    rewriter.setInsertionPointAfter(split);
    auto materialize = [&](mlir::DenseElementsAttr a, mlir::Value shared) -> mlir::Value {
      return a ? rewriter.create<tg::ConstantOp>(loc, a.getType(), a).getResult() : shared;
    };
    const mlir::Value scale = materialize(*scaleAttr, scales[0]),
                      bias = materialize(*biasAttr, biases[0]);
    llvm::SmallVector<int64_t> shape = llvm::to_vector(xt.getShape().drop_back());
    shape.append({N, M});
    mlir::Value v = rewriter.create<tg::ReshapeOp>(loc, tensorType(shape, elem), split.getInput());
    v = rewriter.create<tg::LayerNormOp>(loc, v.getType(), v, scale, bias,
                                         rewriter.getI64IntegerAttr(rank),
                                         first.getEpsilonAttr());
    v = rewriter.create<tg::ReshapeOp>(loc, xt, v);
    replaceBySplit(rewriter, loc, v, ops);
    rewriter.eraseOp(split);
    return mlir::success();
  }
};

/// Elementwise ops of one operand whose result has the operand's type.
bool isUnaryPointwise(mlir::Operation *op) {
  return llvm::isa<tg::NegOp, tg::AbsOp, tg::SignOp, tg::ExpOp, tg::LogOp, tg::SqrtOp,
                   tg::RsqrtOp, tg::ReciprocalOp, tg::TanhOp, tg::SigmoidOp, tg::ErfOp,
                   tg::ReluOp, tg::SiluOp, tg::SinOp, tg::CosOp, tg::FloorOp, tg::CeilOp,
                   tg::RoundOp, tg::NotOp, tg::GeluOp, tg::MathOp>(op);
}

// split(x) -> N x f(x_i), f elementwise  ==>  split(f(x))
struct BatchUnaryOnSplit : Rule<tg::SplitOp> {
  BatchUnaryOnSplit(mlir::MLIRContext *ctx) : Rule(ctx, "BatchUnaryOnSplit") {}
  mlir::LogicalResult apply(tg::SplitOp split, mlir::PatternRewriter &rewriter) const override {
    llvm::SmallVector<mlir::Operation *> ops;
    for (mlir::Value r : split.getResults()) {
      if (!r.hasOneUse())
        return rewriter.notifyMatchFailure(split, "a chunk has no user or several users");
      mlir::Operation *user = *r.getUsers().begin();
      if (!isUnaryPointwise(user))
        return rewriter.notifyMatchFailure(split, "a chunk feeds a non-elementwise op");
      if (!ops.empty() && (user->getName() != ops[0]->getName() ||
                           user->getAttrDictionary() != ops[0]->getAttrDictionary()))
        return rewriter.notifyMatchFailure(split, "chunks feed different elementwise ops");
      ops.push_back(user);
    }
    if (ops.size() < 2)
      return rewriter.notifyMatchFailure(split, "split has fewer than two results");
    rewriter.setInsertionPointAfter(split);
    mlir::Location loc = fusedLoc(rewriter, ops);
    mlir::OperationState state(loc, ops[0]->getName());
    state.addOperands(split.getInput());
    state.addTypes(split.getInput().getType());
    state.addAttributes(ops[0]->getAttrs());
    mlir::Operation *whole = rewriter.create(state);
    llvm::SmallVector<mlir::Type> types(split.getResultTypes());
    auto newSplit = rewriter.create<tg::SplitOp>(loc, types, whole->getResult(0),
                                                 split.getAxisAttr());
    for (auto [op, r] : llvm::zip(ops, newSplit.getResults()))
      rewriter.replaceOp(op, r);
    rewriter.eraseOp(split);
    return mlir::success();
  }
};

// concat(split(x, a)#0, ..., split(x, a)#n-1, a) -> x
struct EliminateSplitConcat : Rule<tg::ConcatOp> {
  EliminateSplitConcat(mlir::MLIRContext *ctx) : Rule(ctx, "EliminateSplitConcat") {}
  mlir::LogicalResult apply(tg::ConcatOp cat, mlir::PatternRewriter &rewriter) const override {
    auto split = cat.getInputs()[0].getDefiningOp<tg::SplitOp>();
    if (!split)
      return rewriter.notifyMatchFailure(cat, "first input is not a split result");
    if (cat.getInputs().size() != split.getNumResults())
      return rewriter.notifyMatchFailure(cat, "concat does not take every split result");
    for (auto [in, r] : llvm::zip(cat.getInputs(), split.getResults()))
      if (in != r)
        return rewriter.notifyMatchFailure(cat, "concat takes the split results out of order");
    int64_t rank = typeOf(split.getInput()).getRank();
    int64_t a = cat.getAxisAttr().getInt(), b = split.getAxisAttr().getInt();
    if ((a < 0 ? a + rank : a) != (b < 0 ? b + rank : b))
      return rewriter.notifyMatchFailure(cat, "concat and split use different axes");
    if (split.getInput().getType() != cat.getType())
      return rewriter.notifyMatchFailure(cat, "types differ");
    rewriter.replaceOp(cat, split.getInput());
    return mlir::success();
  }
};

struct BatchSplitBranchesPass : public BatchSplitBranchesBase<BatchSplitBranchesPass> {
  void runOnOperation() override {
    mlir::MLIRContext *ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    patterns.add<BatchLinearsOnSplit, BatchLayerNormsOnSplit, BatchUnaryOnSplit,
                 EliminateSplitConcat>(ctx);
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createBatchSplitBranchesPass() {
  return std::make_unique<BatchSplitBranchesPass>();
}

} // namespace tgc
