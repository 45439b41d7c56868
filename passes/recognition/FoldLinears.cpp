// FoldLinears.cpp — `tgc-fold-linears`: MatMul-by-weight (+ bias Add) → one tg.linear.
//
// nn.Linear reaches us as MatMul(x, Wᵀ) + b (TorchScript exporter: the transposed weight is
// stored as the constant) or as Gemm → Reshape → Add (dynamo exporter). A single tg.linear
// with the bias as an operand is what kernel formation turns into one GEMM with a bias
// epilogue and what horizontal fusion merges, so every such chain is folded here. The weight
// transpose happens at compile time: the rule writes the transposed constant directly.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/common/Constants.h"
#include "passes/common/Rules.h"
#include "passes/recognition/Match.h"
#include "passes/recognition/Passes.h"

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/recognition/Passes.h.inc"

using mlir::failure;
using mlir::LogicalResult;
using mlir::PatternRewriter;
using mlir::RankedTensorType;
using mlir::success;
using mlir::Value;

RankedTensorType typeOf(Value v) { return v.getType().cast<RankedTensorType>(); }

/// The bias `b` as a [N] value: `b` itself when it is [N], else a reshaped constant when `b` is a
/// constant of shape [1, ..., 1, N] that broadcasts like a bias into `resultType`.
Value biasAsVector(Value b, RankedTensorType resultType, PatternRewriter &rewriter,
                   mlir::Location loc) {
  RankedTensorType bt = typeOf(b);
  int64_t n = resultType.getShape().back();
  if (bt.getElementType() != resultType.getElementType() || bt.getRank() == 0 ||
      bt.getRank() > resultType.getRank() || bt.getShape().back() != n)
    return {};
  for (int64_t d : bt.getShape().drop_back())
    if (d != 1)
      return {};
  mlir::Attribute attr;
  if (!mlir::matchPattern(b, mlir::m_Constant(&attr)))
    return {};
  auto dense = attr.dyn_cast<mlir::DenseElementsAttr>();
  if (!dense)
    return {};
  if (bt.getRank() == 1)
    return b;
  auto vecType = RankedTensorType::get({n}, bt.getElementType());
  return rewriter.create<tg::ConstantOp>(loc, vecType, dense.reshape(vecType));
}

// matmul(x[..., K], W:const[K, N]) -> linear(x, Wᵀ) with Wᵀ computed at compile time
struct FoldMatmulWeightToLinear : public Rule<tg::MatmulOp> {
  explicit FoldMatmulWeightToLinear(mlir::MLIRContext *ctx)
      : Rule(ctx, "FoldMatmulWeightToLinear") {}

  LogicalResult apply(tg::MatmulOp op, PatternRewriter &rewriter) const override {
    mlir::Attribute attr;
    if (!mlir::matchPattern(op.getRhs(), mlir::m_Constant(&attr)))
      return rewriter.notifyMatchFailure(op, "weight is not a constant");
    auto dense = attr.dyn_cast<mlir::DenseElementsAttr>();
    if (!dense)
      return rewriter.notifyMatchFailure(op, "weight is not a dense constant");
    RankedTensorType wt = typeOf(op.getRhs()), xt = typeOf(op.getLhs());
    if (wt.getRank() != 2)
      return rewriter.notifyMatchFailure(op, "weight rank is not 2");
    if (xt.getRank() < 2)
      return rewriter.notifyMatchFailure(op, "input rank < 2 (vector promotion)");
    if (!wt.getElementType().isa<mlir::FloatType>())
      return rewriter.notifyMatchFailure(op, "weight is not floating point");
    auto transposed = transpose2d(dense);
    if (!transposed)
      return rewriter.notifyMatchFailure(op, "weight element type cannot be transposed");
    auto want = llvm::to_vector(xt.getShape());
    want.back() = wt.getDimSize(1);
    if (typeOf(op.getResult()).getShape() != llvm::ArrayRef<int64_t>(want))
      return rewriter.notifyMatchFailure(op, "result shape is not [..., N]");
    auto w = rewriter.create<tg::ConstantOp>(op.getLoc(), transposed->getType(), *transposed);
    rewriter.replaceOpWithNewOp<tg::LinearOp>(op, op.getType(), op.getLhs(), w.getResult(),
                                              Value());
    return success();
  }
};

// add(linear(x, w), b:const[N]) -> linear(x, w, b)
struct FoldBiasIntoLinear : public Rule<tg::AddOp> {
  explicit FoldBiasIntoLinear(mlir::MLIRContext *ctx) : Rule(ctx, "FoldBiasIntoLinear") {}

  LogicalResult apply(tg::AddOp op, PatternRewriter &rewriter) const override {
    tg::LinearOp linear = op.getLhs().getDefiningOp<tg::LinearOp>();
    Value b = op.getRhs();
    if (!linear) {
      linear = op.getRhs().getDefiningOp<tg::LinearOp>();
      b = op.getLhs();
    }
    if (!linear)
      return rewriter.notifyMatchFailure(op, "no operand is a tg.linear");
    if (linear.getBias())
      return rewriter.notifyMatchFailure(op, "linear already has a bias");
    if (!linear->hasOneUse())
      return rewriter.notifyMatchFailure(op, "linear has other uses");
    if (op.getType() != linear.getType())
      return rewriter.notifyMatchFailure(op, "add broadcasts beyond the linear's result");
    Value bias = biasAsVector(b, typeOf(linear.getResult()), rewriter, op.getLoc());
    if (!bias)
      return rewriter.notifyMatchFailure(op, "addend is not a constant [N] bias");
    rewriter.replaceOpWithNewOp<tg::LinearOp>(op, linear.getType(), linear.getInput(),
                                              linear.getWeight(), bias);
    return success();
  }
};

// add(reshape(linear(x, w)), b:const[N]) -> reshape(linear(x, w, b)) when the reshape keeps N last
struct FoldBiasIntoLinearThroughReshape : public Rule<tg::AddOp> {
  explicit FoldBiasIntoLinearThroughReshape(mlir::MLIRContext *ctx)
      : Rule(ctx, "FoldBiasIntoLinearThroughReshape") {}

  LogicalResult apply(tg::AddOp op, PatternRewriter &rewriter) const override {
    tg::ReshapeOp reshape = op.getLhs().getDefiningOp<tg::ReshapeOp>();
    Value b = op.getRhs();
    if (!reshape || !reshape.getInput().getDefiningOp<tg::LinearOp>()) {
      reshape = op.getRhs().getDefiningOp<tg::ReshapeOp>();
      b = op.getLhs();
    }
    if (!reshape)
      return rewriter.notifyMatchFailure(op, "no operand is a tg.reshape");
    auto linear = reshape.getInput().getDefiningOp<tg::LinearOp>();
    if (!linear)
      return rewriter.notifyMatchFailure(op, "reshape input is not a tg.linear");
    if (linear.getBias())
      return rewriter.notifyMatchFailure(op, "linear already has a bias");
    if (!linear->hasOneUse() || !reshape->hasOneUse())
      return rewriter.notifyMatchFailure(op, "linear or reshape has other uses");
    RankedTensorType lt = typeOf(linear.getResult()), rt = typeOf(reshape.getResult());
    if (rt.getRank() == 0 || rt.getShape().back() != lt.getShape().back())
      return rewriter.notifyMatchFailure(op, "reshape changes the last dim");
    if (op.getType() != rt)
      return rewriter.notifyMatchFailure(op, "add broadcasts beyond the reshape's result");
    Value bias = biasAsVector(b, rt, rewriter, op.getLoc());
    if (!bias)
      return rewriter.notifyMatchFailure(op, "addend is not a constant [N] bias");
    auto fused = rewriter.create<tg::LinearOp>(linear.getLoc(), lt, linear.getInput(),
                                               linear.getWeight(), bias);
    rewriter.replaceOpWithNewOp<tg::ReshapeOp>(op, rt, fused.getResult());
    return success();
  }
};

// conv(x, w, b) whose 2-D kernel equals its strides, with no padding, no dilation and one group
// (a ViT patch embedding) is one GEMM over the image cut into patches:
//   x [B,C,H,W] -> reshape [B,C,H/p,p,W/q,q] -> transpose [0,2,4,1,3,5]
//   -> reshape [B, H/p·W/q, C·p·q] -> linear(·, reshape(w, [M, C·p·q]), b)
//   -> reshape [B, H/p, W/q, M] -> transpose [0,3,1,2]   (= the conv's [B, M, H/p, W/q])
// The weight reshape of a constant is free (a view, or folded), the two transposes are data
// movement, and the GEMM replaces a direct convolution that re-reads the image per channel.
struct LowerPatchConvToLinear : public Rule<tg::ConvOp> {
  explicit LowerPatchConvToLinear(mlir::MLIRContext *ctx) : Rule(ctx, "LowerPatchConvToLinear") {}
  LogicalResult apply(tg::ConvOp conv, PatternRewriter &rewriter) const override {
    auto xs = typeOf(conv.getInput()).getShape(), ws = typeOf(conv.getWeight()).getShape();
    if (conv.getNhwc() || conv.getWeightBlock() || conv.getChannelsLast())
      return rewriter.notifyMatchFailure(conv, "not the NC[D]HW layout");
    if (xs.size() != 4 || ws.size() != 4 || conv.getGroup() != 1)
      return rewriter.notifyMatchFailure(conv, "not a 2-D convolution with one group");
    std::vector<int64_t> st = intsOf(conv.getStrides()), pads = intsOf(conv.getPads()),
                         dil = intsOf(conv.getDilations());
    const int64_t B = xs[0], C = xs[1], H = xs[2], W = xs[3], M = ws[0], p = ws[2], q = ws[3];
    if (st != std::vector<int64_t>{p, q} || dil != std::vector<int64_t>{1, 1} ||
        llvm::any_of(pads, [](int64_t x) { return x != 0; }) || ws[1] != C || H % p || W % q)
      return rewriter.notifyMatchFailure(conv, "the kernel is not a non-overlapping patch grid");
    if (p * q == 1)
      return rewriter.notifyMatchFailure(conv, "a 1x1 kernel: LowerPointwiseConvToMatmul");
    const int64_t hp = H / p, wq = W / q;
    auto et = typeOf(conv.getInput()).getElementType();
    auto ty = [&](llvm::ArrayRef<int64_t> s) { return RankedTensorType::get(s, et); };
    mlir::Location loc = conv.getLoc();
    Value x = rewriter.create<tg::ReshapeOp>(loc, ty({B, C, hp, p, wq, q}), conv.getInput());
    x = rewriter.create<tg::TransposeOp>(loc, ty({B, hp, wq, C, p, q}), x,
                                         rewriter.getI64ArrayAttr({0, 2, 4, 1, 3, 5}));
    x = rewriter.create<tg::ReshapeOp>(loc, ty({B, hp * wq, C * p * q}), x);
    Value w = rewriter.create<tg::ReshapeOp>(
        loc, RankedTensorType::get({M, C * p * q}, typeOf(conv.getWeight()).getElementType()),
        conv.getWeight());
    Value y = rewriter.create<tg::LinearOp>(loc, ty({B, hp * wq, M}), x, w, conv.getBias());
    y = rewriter.create<tg::ReshapeOp>(loc, ty({B, hp, wq, M}), y);
    rewriter.replaceOpWithNewOp<tg::TransposeOp>(conv, conv.getType(), y,
                                                 rewriter.getI64ArrayAttr({0, 3, 1, 2}));
    return success();
  }
};

// conv(x, w, b) with a window of 1 in every spatial dim, stride 1, no padding and one group (a
// pointwise convolution: ResNet's and MobileNet's 1x1 layers) is one matmul of the weight by the
// image, in the image's own layout (channels first), so no transpose is needed:
//   x [N,C,d...] -> reshape [N,C,P] ; matmul(reshape(w, [M,C]), ·) -> [N,M,P]
//   (+ reshape(b, [M,1])) -> reshape [N,M,d...]
// The bias and what follows the conv (an activation, a residual add) become the GEMM's
// epilogue in kernel formation.
struct LowerPointwiseConvToMatmul : public Rule<tg::ConvOp> {
  explicit LowerPointwiseConvToMatmul(mlir::MLIRContext *ctx)
      : Rule(ctx, "LowerPointwiseConvToMatmul") {}
  LogicalResult apply(tg::ConvOp conv, PatternRewriter &rewriter) const override {
    auto xs = typeOf(conv.getInput()).getShape(), ws = typeOf(conv.getWeight()).getShape();
    if (conv.getNhwc() || conv.getWeightBlock() || conv.getChannelsLast())
      return rewriter.notifyMatchFailure(conv, "not the NC[D]HW layout");
    if (xs.size() < 3 || ws.size() != xs.size() || conv.getGroup() != 1 || ws[1] != xs[1])
      return rewriter.notifyMatchFailure(conv, "not a convolution with one group");
    const std::vector<int64_t> st = intsOf(conv.getStrides()), pads = intsOf(conv.getPads());
    for (size_t d = 2; d < ws.size(); ++d)
      if (ws[d] != 1 || st[d - 2] != 1)
        return rewriter.notifyMatchFailure(conv, "a window or stride other than 1");
    if (llvm::any_of(pads, [](int64_t x) { return x != 0; }))
      return rewriter.notifyMatchFailure(conv, "padded");
    const int64_t N = xs[0], C = xs[1], M = ws[0];
    int64_t P = 1;
    for (size_t d = 2; d < xs.size(); ++d)
      P *= xs[d];
    auto et = typeOf(conv.getInput()).getElementType();
    auto ty = [&](llvm::ArrayRef<int64_t> s) { return RankedTensorType::get(s, et); };
    mlir::Location loc = conv.getLoc();
    Value x = rewriter.create<tg::ReshapeOp>(loc, ty({N, C, P}), conv.getInput());
    Value w = rewriter.create<tg::ReshapeOp>(
        loc, RankedTensorType::get({M, C}, typeOf(conv.getWeight()).getElementType()),
        conv.getWeight());
    Value y = rewriter.create<tg::MatmulOp>(loc, ty({N, M, P}), w, x);
    if (Value b = conv.getBias()) {
      Value col = rewriter.create<tg::ReshapeOp>(
          loc, RankedTensorType::get({M, 1}, typeOf(b).getElementType()), b);
      y = rewriter.create<tg::AddOp>(loc, ty({N, M, P}), y, col);
    }
    rewriter.replaceOpWithNewOp<tg::ReshapeOp>(conv, conv.getType(), y);
    return success();
  }
};

struct FoldLinearsPass : public FoldLinearsBase<FoldLinearsPass> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<FoldMatmulWeightToLinear, FoldBiasIntoLinear, FoldBiasIntoLinearThroughReshape,
                 LowerPatchConvToLinear, LowerPointwiseConvToMatmul>(&getContext());
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createFoldLinearsPass() { return std::make_unique<FoldLinearsPass>(); }

} // namespace tgc
