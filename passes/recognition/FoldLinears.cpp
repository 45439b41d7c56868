// FoldLinears.cpp — `tgc-fold-linears`: MatMul-by-weight (+ bias Add) → one tg.linear.
//
// nn.Linear reaches us as MatMul(x, Wᵀ) + b (TorchScript exporter: the transposed weight is
// stored as the constant) or as Gemm → Reshape → Add (dynamo exporter). A single tg.linear
// with the bias as an operand is what kernel formation turns into one GEMM with a bias
// epilogue and what horizontal fusion merges, so every such chain is folded here. The weight
// transpose happens at compile time: the rule writes the transposed constant directly.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/common/Rules.h"
#include "passes/recognition/Match.h"
#include "passes/recognition/Passes.h"

#include <cstring>

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

/// The [K, N] → [N, K] transpose of a dense constant of a byte-sized element type.
std::optional<mlir::DenseElementsAttr> transpose2d(mlir::DenseElementsAttr a) {
  auto type = a.getType().cast<RankedTensorType>();
  auto outType =
      RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, type.getElementType());
  if (a.isSplat())
    return a.reshape(outType);
  mlir::Type e = type.getElementType();
  if (!e.isIntOrFloat() || e.getIntOrFloatBitWidth() % 8 != 0)
    return std::nullopt;
  size_t bytes = e.getIntOrFloatBitWidth() / 8;
  int64_t k = type.getDimSize(0), n = type.getDimSize(1);
  llvm::ArrayRef<char> raw = a.getRawData();
  if ((int64_t)raw.size() != k * n * (int64_t)bytes)
    return std::nullopt;
  std::vector<char> out(raw.size());
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(&out[(j * k + i) * bytes], &raw[(i * n + j) * bytes], bytes);
  return mlir::DenseElementsAttr::getFromRawBuffer(outType, out);
}

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

struct FoldLinearsPass : public FoldLinearsBase<FoldLinearsPass> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<FoldMatmulWeightToLinear, FoldBiasIntoLinear, FoldBiasIntoLinearThroughReshape>(
        &getContext());
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createFoldLinearsPass() { return std::make_unique<FoldLinearsPass>(); }

} // namespace tgc
