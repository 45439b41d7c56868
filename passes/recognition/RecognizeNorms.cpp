// RecognizeNorms.cpp — `tgc-recognize-norms`: RMSNorm, LayerNorm and softmax from their parts.
//
// A normalization exported op by op costs two or three passes over the row plus a broadcast
// per step; as one op it is one kernel that reads the row once and accumulates in double.
// LLaMA's RMSNorm is always decomposed by both exporters (Pow/ReduceMean/Add/Sqrt then
// Div(1, ·) or Reciprocal); LayerNorm and softmax are decomposed by older opsets and custom
// modules. Rules first form the bare op (no scale/bias), then separate rules fold a following
// constant scale and bias into it, so association order does not matter.
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
using mlir::RankedTensorType;
using mlir::success;
using mlir::Value;

RankedTensorType typeOf(Value v) { return v.getType().cast<RankedTensorType>(); }

/// The sorted, normalized axes of a reduction with keepdims, or nothing.
template <typename ReduceOpT> std::optional<std::vector<int64_t>> keptAxes(ReduceOpT op) {
  if (!op.getKeepdims())
    return std::nullopt;
  int64_t rank = typeOf(op.getInput()).getRank();
  std::vector<int64_t> axes;
  for (mlir::Attribute a : op.getAxes()) {
    auto n = tgc::normalizeAxis(a.cast<mlir::IntegerAttr>().getInt(), rank);
    if (!n)
      return std::nullopt;
    axes.push_back(*n);
  }
  llvm::sort(axes);
  return axes;
}

/// For a keepdims reduction over exactly the trailing dims [a, rank): a.
template <typename ReduceOpT> std::optional<int64_t> trailingAxis(ReduceOpT op) {
  auto axes = keptAxes(op);
  int64_t rank = typeOf(op.getInput()).getRank();
  if (!axes || axes->empty())
    return std::nullopt;
  for (size_t i = 0; i < axes->size(); ++i)
    if ((*axes)[i] != rank - (int64_t)axes->size() + (int64_t)i)
      return std::nullopt;
  return axes->front();
}

/// When `m` is reduce_mean(x², trailing dims): (x, axis). The square may be pow(x, 2) or x·x.
std::optional<std::pair<Value, int64_t>> meanOfSquare(Value m) {
  auto mean = m.getDefiningOp<tg::ReduceMeanOp>();
  if (!mean)
    return std::nullopt;
  auto axis = trailingAxis(mean);
  if (!axis)
    return std::nullopt;
  Value sq = mean.getInput(), x;
  if (auto pow = sq.getDefiningOp<tg::PowOp>()) {
    if (isSplatNear(pow.getRhs(), 2.0) && isScalarShaped(pow.getRhs()))
      x = pow.getLhs();
  } else if (auto mul = sq.getDefiningOp<tg::MulOp>()) {
    if (mul.getLhs() == mul.getRhs())
      x = mul.getLhs();
  }
  if (!x || x.getType() != sq.getType())
    return std::nullopt;
  return std::make_pair(x, *axis);
}

/// When `s` is m + eps (either order, eps a scalar constant ≥ 0): (m, eps).
std::optional<std::pair<Value, double>> plusEpsilon(Value s) {
  auto add = s.getDefiningOp<tg::AddOp>();
  if (!add)
    return std::nullopt;
  for (auto [m, e] : {std::pair{add.getLhs(), add.getRhs()}, {add.getRhs(), add.getLhs()}}) {
    auto eps = splatValue(e);
    if (eps && *eps >= 0 && isScalarShaped(e) && m.getType() == add.getType())
      return std::make_pair(m, *eps);
  }
  return std::nullopt;
}

/// When `r` is 1/sqrt(s) — reciprocal(sqrt(s)), div(1, sqrt(s)), rsqrt(s) or pow(s, -0.5): s.
Value inverseSqrtOf(Value r) {
  if (auto rs = r.getDefiningOp<tg::RsqrtOp>())
    return rs.getInput();
  if (auto pow = r.getDefiningOp<tg::PowOp>())
    return isSplatNear(pow.getRhs(), -0.5) && isScalarShaped(pow.getRhs()) ? pow.getLhs() : Value();
  Value root;
  if (auto rec = r.getDefiningOp<tg::ReciprocalOp>())
    root = rec.getInput();
  else if (auto div = r.getDefiningOp<tg::DivOp>(); div && isSplatNear(div.getLhs(), 1.0) &&
                                                    isScalarShaped(div.getLhs()) &&
                                                    div.getType() == div.getRhs().getType())
    root = div.getRhs();
  auto sqrt = root ? root.getDefiningOp<tg::SqrtOp>() : tg::SqrtOp();
  return sqrt ? sqrt.getInput() : Value();
}

/// A normalization statistic: sqrt(stat(x) + eps) is the denominator.
struct Stat {
  Value x;
  int64_t axis;
  double eps;
};

/// When `s` is mean(x², trailing dims) + eps: the statistic.
std::optional<Stat> meanSquarePlusEps(Value s) {
  auto pe = plusEpsilon(s);
  if (!pe)
    return std::nullopt;
  auto ms = meanOfSquare(pe->first);
  if (!ms)
    return std::nullopt;
  return Stat{ms->first, ms->second, pe->second};
}

/// When `d` is x - reduce_mean(x, trailing dims [axis, rank)): (x, axis).
std::optional<std::pair<Value, int64_t>> centered(Value d) {
  auto sub = d.getDefiningOp<tg::SubOp>();
  if (!sub)
    return std::nullopt;
  auto mean = sub.getRhs().getDefiningOp<tg::ReduceMeanOp>();
  if (!mean || mean.getInput() != sub.getLhs() || sub.getType() != sub.getLhs().getType())
    return std::nullopt;
  auto axis = trailingAxis(mean);
  if (!axis)
    return std::nullopt;
  return std::make_pair(sub.getLhs(), *axis);
}

/// When `d / sqrt(s)` is a layer norm — d = x - mean(x), s = mean(d²) + eps over the same
/// trailing dims: the statistic of x.
std::optional<Stat> layerNormOf(Value d, Value s) {
  auto c = centered(d);
  auto st = meanSquarePlusEps(s);
  if (!c || !st || st->x != d || st->axis != c->second)
    return std::nullopt;
  return Stat{c->first, c->second, st->eps};
}

/// The dense constant behind `w` when it can act as a scale/bias of the normalized dims
/// [axis, rank) of `x`: of exactly those dims once leading 1s are dropped, or a splat that
/// broadcasts to them.
std::optional<mlir::DenseElementsAttr> normParamAttr(Value w, Value x, int64_t axis) {
  mlir::Attribute attr;
  if (!mlir::matchPattern(w, mlir::m_Constant(&attr)))
    return std::nullopt;
  auto dense = attr.dyn_cast<mlir::DenseElementsAttr>();
  RankedTensorType xt = typeOf(x), wt = typeOf(w);
  if (!dense || wt.getElementType() != xt.getElementType() || wt.getRank() > xt.getRank())
    return std::nullopt;
  auto normShape = xt.getShape().drop_front(axis);
  auto ws = wt.getShape();
  while (ws.size() > normShape.size() && ws.front() == 1)
    ws = ws.drop_front();
  if (ws == normShape)
    return dense;
  if (!dense.isSplat() || ws.size() > normShape.size())
    return std::nullopt;
  auto bcast = tgc::broadcastShapes(tgc::Shape(normShape.begin(), normShape.end()),
                                    tgc::Shape(ws.begin(), ws.end()));
  if (!bcast || llvm::ArrayRef<int64_t>(*bcast) != normShape)
    return std::nullopt;
  return dense;
}

/// True when `w` could become a scale/bias of the normalized dims (see normParamAttr).
bool isNormParam(Value w, Value x, int64_t axis) { return normParamAttr(w, x, axis).has_value(); }

/// `w` (accepted by isNormParam) as a constant of exactly the normalized dims of `x`.
Value normParam(Value w, Value x, int64_t axis, PatternRewriter &rewriter, mlir::Location loc) {
  auto dense = normParamAttr(w, x, axis);
  if (!dense)
    return {};
  RankedTensorType xt = typeOf(x);
  auto normType = RankedTensorType::get(xt.getShape().drop_front(axis), xt.getElementType());
  if (w.getType() == normType)
    return w;
  mlir::DenseElementsAttr value =
      dense->isSplat()
          ? mlir::DenseElementsAttr::get(normType, dense->getSplatValue<mlir::Attribute>())
          : dense->reshape(normType);
  return rewriter.create<tg::ConstantOp>(loc, normType, value);
}

// x * (1 / sqrt(mean(x², [a, rank)) + eps)) [* w] -> rms_norm(x [, w])
struct RecognizeRmsNorm : public Rule<tg::MulOp> {
  explicit RecognizeRmsNorm(mlir::MLIRContext *ctx) : Rule(ctx, "RecognizeRmsNorm") {}

  LogicalResult apply(tg::MulOp op, PatternRewriter &rewriter) const override {
    Product p = splitProduct(op.getResult());
    if (!near(p.constant, 1.0))
      return rewriter.notifyMatchFailure(op, "product has an extra scalar factor");
    if (p.others.size() < 2 || p.others.size() > 3)
      return rewriter.notifyMatchFailure(op, "not x * rsqrt(...) [* w]");
    for (size_t i = 0; i < p.others.size(); ++i) {
      Value s = inverseSqrtOf(p.others[i]);
      auto st = s ? meanSquarePlusEps(s) : std::nullopt;
      if (!st)
        continue;
      if (st->x.getType() != op.getType())
        return rewriter.notifyMatchFailure(op, "product broadcasts beyond x");
      if (centered(st->x))
        return rewriter.notifyMatchFailure(op, "x is centered: a layer norm");
      Value w;
      int xs = 0;
      bool ok = true;
      for (size_t j = 0; j < p.others.size(); ++j) {
        if (j == i)
          continue;
        if (p.others[j] == st->x && xs == 0)
          ++xs;
        else if (!w && isNormParam(p.others[j], st->x, st->axis))
          w = p.others[j];
        else
          ok = false;
      }
      if (!ok || xs != 1)
        return rewriter.notifyMatchFailure(op, "other factors are not x and a constant scale");
      Value scale = w ? normParam(w, st->x, st->axis, rewriter, op.getLoc()) : Value();
      rewriter.replaceOpWithNewOp<tg::RmsNormOp>(op, op.getType(), st->x, scale,
                                                 rewriter.getI64IntegerAttr(st->axis),
                                                 rewriter.getF32FloatAttr(st->eps));
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no factor is 1 / sqrt(mean(x^2) + eps)");
  }
};

// x / sqrt(mean(x², [a, rank)) + eps) -> rms_norm(x)
struct RecognizeRmsNormDiv : public Rule<tg::DivOp> {
  explicit RecognizeRmsNormDiv(mlir::MLIRContext *ctx) : Rule(ctx, "RecognizeRmsNormDiv") {}

  LogicalResult apply(tg::DivOp op, PatternRewriter &rewriter) const override {
    auto sqrt = op.getRhs().getDefiningOp<tg::SqrtOp>();
    auto st = sqrt ? meanSquarePlusEps(sqrt.getInput()) : std::nullopt;
    if (!st || st->x != op.getLhs())
      return rewriter.notifyMatchFailure(op, "not x / sqrt(mean(x^2) + eps)");
    if (op.getLhs().getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "division broadcasts beyond x");
    if (centered(st->x))
      return rewriter.notifyMatchFailure(op, "x is centered: a layer norm");
    rewriter.replaceOpWithNewOp<tg::RmsNormOp>(op, op.getType(), st->x, Value(),
                                               rewriter.getI64IntegerAttr(st->axis),
                                               rewriter.getF32FloatAttr(st->eps));
    return success();
  }
};

// rms_norm(x) * w:const -> rms_norm(x, w)
struct FoldScaleIntoRmsNorm : public Rule<tg::MulOp> {
  explicit FoldScaleIntoRmsNorm(mlir::MLIRContext *ctx) : Rule(ctx, "FoldScaleIntoRmsNorm") {}

  LogicalResult apply(tg::MulOp op, PatternRewriter &rewriter) const override {
    for (auto [n, w] : {std::pair{op.getLhs(), op.getRhs()}, {op.getRhs(), op.getLhs()}}) {
      auto norm = n.getDefiningOp<tg::RmsNormOp>();
      if (!norm || norm.getScale())
        continue;
      if (!norm->hasOneUse())
        return rewriter.notifyMatchFailure(op, "rms_norm has other uses");
      int64_t axis = *tgc::normalizeAxis(norm.getAxisAttr().getInt(),
                                         op.getType().cast<RankedTensorType>().getRank());
      if (norm.getType() != op.getType() || !isNormParam(w, norm.getInput(), axis))
        return rewriter.notifyMatchFailure(op, "factor is not a constant of the normalized dims");
      Value scale = normParam(w, norm.getInput(), axis, rewriter, op.getLoc());
      rewriter.replaceOpWithNewOp<tg::RmsNormOp>(op, op.getType(), norm.getInput(), scale,
                                                 norm.getAxisAttr(), norm.getEpsilonAttr());
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no operand is a scale-free rms_norm");
  }
};

// (x - mean(x)) / sqrt(mean((x - mean(x))²) + eps) -> layer_norm(x)
struct RecognizeLayerNorm : public Rule<tg::DivOp> {
  // Outranks RecognizeRmsNormDiv, which would see the rms norm of the centered x.
  explicit RecognizeLayerNorm(mlir::MLIRContext *ctx) : Rule(ctx, "RecognizeLayerNorm", 2) {}

  LogicalResult apply(tg::DivOp op, PatternRewriter &rewriter) const override {
    auto sqrt = op.getRhs().getDefiningOp<tg::SqrtOp>();
    auto st = sqrt ? layerNormOf(op.getLhs(), sqrt.getInput()) : std::nullopt;
    if (!st)
      return rewriter.notifyMatchFailure(op, "not (x - mean) / sqrt(var + eps)");
    if (st->x.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "division broadcasts beyond x");
    rewriter.replaceOpWithNewOp<tg::LayerNormOp>(op, op.getType(), st->x, Value(), Value(),
                                                 rewriter.getI64IntegerAttr(st->axis),
                                                 rewriter.getF32FloatAttr(st->eps));
    return success();
  }
};

// (x - mean(x)) * (1 / sqrt(var + eps)) -> layer_norm(x)
struct RecognizeLayerNormMul : public Rule<tg::MulOp> {
  // Outranks RecognizeRmsNorm, which would see the rms norm of the centered x.
  explicit RecognizeLayerNormMul(mlir::MLIRContext *ctx) : Rule(ctx, "RecognizeLayerNormMul", 2) {}

  LogicalResult apply(tg::MulOp op, PatternRewriter &rewriter) const override {
    for (auto [d, r] : {std::pair{op.getLhs(), op.getRhs()}, {op.getRhs(), op.getLhs()}}) {
      Value s = inverseSqrtOf(r);
      auto st = s ? layerNormOf(d, s) : std::nullopt;
      if (!st)
        continue;
      if (st->x.getType() != op.getType())
        return rewriter.notifyMatchFailure(op, "product broadcasts beyond x");
      rewriter.replaceOpWithNewOp<tg::LayerNormOp>(op, op.getType(), st->x, Value(), Value(),
                                                   rewriter.getI64IntegerAttr(st->axis),
                                                   rewriter.getF32FloatAttr(st->eps));
      return success();
    }
    return rewriter.notifyMatchFailure(op, "not (x - mean) * rsqrt(var + eps)");
  }
};

// layer_norm(x) * w:const -> layer_norm(x, w)
struct FoldScaleIntoLayerNorm : public Rule<tg::MulOp> {
  explicit FoldScaleIntoLayerNorm(mlir::MLIRContext *ctx) : Rule(ctx, "FoldScaleIntoLayerNorm") {}

  LogicalResult apply(tg::MulOp op, PatternRewriter &rewriter) const override {
    for (auto [n, w] : {std::pair{op.getLhs(), op.getRhs()}, {op.getRhs(), op.getLhs()}}) {
      auto norm = n.getDefiningOp<tg::LayerNormOp>();
      if (!norm || norm.getScale() || norm.getBias())
        continue;
      if (!norm->hasOneUse())
        return rewriter.notifyMatchFailure(op, "layer_norm has other uses");
      int64_t axis = *tgc::normalizeAxis(norm.getAxisAttr().getInt(),
                                         op.getType().cast<RankedTensorType>().getRank());
      if (norm.getType() != op.getType() || !isNormParam(w, norm.getInput(), axis))
        return rewriter.notifyMatchFailure(op, "factor is not a constant of the normalized dims");
      Value scale = normParam(w, norm.getInput(), axis, rewriter, op.getLoc());
      rewriter.replaceOpWithNewOp<tg::LayerNormOp>(op, op.getType(), norm.getInput(), scale,
                                                   Value(), norm.getAxisAttr(),
                                                   norm.getEpsilonAttr());
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no operand is a scale- and bias-free layer_norm");
  }
};

// layer_norm(x [, w]) + b:const -> layer_norm(x, w, b)
struct FoldBiasIntoLayerNorm : public Rule<tg::AddOp> {
  explicit FoldBiasIntoLayerNorm(mlir::MLIRContext *ctx) : Rule(ctx, "FoldBiasIntoLayerNorm") {}

  LogicalResult apply(tg::AddOp op, PatternRewriter &rewriter) const override {
    for (auto [n, b] : {std::pair{op.getLhs(), op.getRhs()}, {op.getRhs(), op.getLhs()}}) {
      auto norm = n.getDefiningOp<tg::LayerNormOp>();
      if (!norm || norm.getBias())
        continue;
      if (!norm->hasOneUse())
        return rewriter.notifyMatchFailure(op, "layer_norm has other uses");
      int64_t axis = *tgc::normalizeAxis(norm.getAxisAttr().getInt(),
                                         op.getType().cast<RankedTensorType>().getRank());
      if (norm.getType() != op.getType() || !isNormParam(b, norm.getInput(), axis))
        return rewriter.notifyMatchFailure(op, "addend is not a constant of the normalized dims");
      Value bias = normParam(b, norm.getInput(), axis, rewriter, op.getLoc());
      rewriter.replaceOpWithNewOp<tg::LayerNormOp>(op, op.getType(), norm.getInput(),
                                                   norm.getScale(), bias, norm.getAxisAttr(),
                                                   norm.getEpsilonAttr());
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no operand is a bias-free layer_norm");
  }
};

// exp(x - max(x, a)) / sum(exp(x - max(x, a)), a) -> softmax(x, a)
struct RecognizeSoftmax : public Rule<tg::DivOp> {
  explicit RecognizeSoftmax(mlir::MLIRContext *ctx) : Rule(ctx, "RecognizeSoftmax") {}

  LogicalResult apply(tg::DivOp op, PatternRewriter &rewriter) const override {
    auto sum = op.getRhs().getDefiningOp<tg::ReduceSumOp>();
    auto exp = op.getLhs().getDefiningOp<tg::ExpOp>();
    if (!sum || !exp || sum.getInput() != exp.getResult())
      return rewriter.notifyMatchFailure(op, "not e / reduce_sum(e) with e = exp(...)");
    auto sumAxes = keptAxes(sum);
    if (!sumAxes || sumAxes->size() != 1)
      return rewriter.notifyMatchFailure(op, "sum is not over one axis with keepdims");
    auto sub = exp.getInput().getDefiningOp<tg::SubOp>();
    auto max = sub ? sub.getRhs().getDefiningOp<tg::ReduceMaxOp>() : tg::ReduceMaxOp();
    if (!max || max.getInput() != sub.getLhs())
      return rewriter.notifyMatchFailure(op, "exponent is not x - reduce_max(x)");
    auto maxAxes = keptAxes(max);
    if (!maxAxes || *maxAxes != *sumAxes)
      return rewriter.notifyMatchFailure(op, "max and sum reduce different axes");
    Value x = sub.getLhs();
    if (x.getType() != op.getType() || sub.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "softmax operands broadcast beyond x");
    rewriter.replaceOpWithNewOp<tg::SoftmaxOp>(op, op.getType(), x,
                                               rewriter.getI64IntegerAttr(sumAxes->front()),
                                               rewriter.getBoolAttr(false));
    return success();
  }
};

struct RecognizeNormsPass : public RecognizeNormsBase<RecognizeNormsPass> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<RecognizeRmsNorm, RecognizeRmsNormDiv, FoldScaleIntoRmsNorm, RecognizeLayerNorm,
                 RecognizeLayerNormMul, FoldScaleIntoLayerNorm, FoldBiasIntoLayerNorm,
                 RecognizeSoftmax>(&getContext());
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createRecognizeNormsPass() {
  return std::make_unique<RecognizeNormsPass>();
}

} // namespace tgc
