// RecognizeAttention.cpp — `tgc-recognize-attention`: decomposed SDPA → tg.attention.
//
// PyTorch exports scaled dot-product attention as matmul → (+ mask) → softmax → NaN guard →
// matmul, with the scale split as sqrt(scale) on q and on kᵀ, k arriving transposed (by a 4-d
// transpose, or reshape → transpose(0,2,1) → reshape from the dynamo exporter) and, for GQA,
// k/v heads repeated by unsqueeze → expand → reshape. One rule turns the chain into a
// tg.attention with the operands exactly as found (k = transpose(kᵀ), scale 1 or the scores'
// own scalar factor); small rules then move each piece into the op: scalar factors into
// `scale`, transposes of k composed away, the head repeat into the op's Hkv, a zero mask
// dropped, a causal constant mask into `causal`, and the [0,2,1,3] transposes around a
// multi-head block into layout "bshd" (q/k/v and the result in the projections' own
// [B, S, H, D] order, so those transposes no longer run as kernels). Each step keeps the graph's semantics, so the
// interpreter check after this pass holds whichever subset of the rules fired.
//
// The NaN guard where(isnan(P), 0, P) after the softmax is part of the recognized chain rather
// than a rule of its own: tg.attention defines rows whose softmax is undefined (all scores
// -inf, or a NaN/+inf score) to give 0, which is exactly what the guard computes, whereas
// dropping the guard on its own would only be sound if the softmax input were provably finite
// and not fully masked, which a graph rewrite cannot know about runtime activations. An
// unguarded softmax is recognized too; there tg.attention returns 0 where the source returned
// NaN (a fully masked row), a refinement of NaN.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "passes/attention/Passes.h"
#include "passes/common/Rules.h"

#include <optional>

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/attention/Passes.h.inc"

using mlir::failure;
using mlir::LogicalResult;
using mlir::PatternRewriter;
using mlir::success;
using mlir::Value;
using Shape = llvm::SmallVector<int64_t, 4>;

Shape shapeOf(Value v) {
  auto t = v.getType().cast<mlir::RankedTensorType>();
  return Shape(t.getShape().begin(), t.getShape().end());
}

mlir::Type elemOf(Value v) { return v.getType().cast<mlir::RankedTensorType>().getElementType(); }

int64_t product(llvm::ArrayRef<int64_t> s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// The dense value of a float constant, or null.
mlir::DenseElementsAttr floatConstant(Value v) {
  mlir::ElementsAttr attr;
  if (!mlir::matchPattern(v, mlir::m_Constant(&attr)))
    return {};
  auto dense = attr.dyn_cast<mlir::DenseElementsAttr>();
  if (!dense || !dense.getElementType().isa<mlir::FloatType>())
    return {};
  return dense;
}

double toDouble(llvm::APFloat f) {
  bool lost = false;
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return f.convertToDouble();
}

/// The value of a one-element float constant.
std::optional<double> scalarConstant(Value v) {
  auto dense = floatConstant(v);
  if (!dense || dense.getNumElements() != 1)
    return std::nullopt;
  return toDouble(*dense.getValues<llvm::APFloat>().begin());
}

/// `v` = x * c, c * x or x / c with c a scalar constant that does not broadcast x up.
struct Scaled {
  Value x;
  double factor;
};
std::optional<Scaled> matchScalarScale(Value v) {
  mlir::Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  auto pick = [&](Value x, Value c, bool divide) -> std::optional<Scaled> {
    auto f = scalarConstant(c);
    if (!f || shapeOf(x) != shapeOf(v) || (divide && *f == 0))
      return std::nullopt;
    return Scaled{x, divide ? 1.0 / *f : *f};
  };
  if (auto mul = llvm::dyn_cast<tg::MulOp>(def)) {
    if (auto s = pick(mul.getLhs(), mul.getRhs(), false))
      return s;
    return pick(mul.getRhs(), mul.getLhs(), false);
  }
  if (auto div = llvm::dyn_cast<tg::DivOp>(def))
    return pick(div.getLhs(), div.getRhs(), true);
  return std::nullopt;
}

bool isZeroScalar(Value v) {
  auto f = scalarConstant(v);
  return f && *f == 0.0;
}

std::vector<int64_t> permOf(tg::TransposeOp t) { return intsOf(t.getPerm()); }

bool isIdentity(llvm::ArrayRef<int64_t> perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i))
      return false;
  return true;
}

/// transpose(x, perm), or x when perm is the identity.
Value transposed(PatternRewriter &rw, mlir::Location loc, Value x, llvm::ArrayRef<int64_t> perm) {
  if (isIdentity(perm))
    return x;
  Shape in = shapeOf(x), out;
  for (int64_t p : perm)
    out.push_back(in[p]);
  auto type = mlir::RankedTensorType::get(out, elemOf(x));
  return rw.create<tg::TransposeOp>(loc, type, x, rw.getI64ArrayAttr(perm));
}

/// x viewed as `shape`: x itself when it has that shape, else a reshape (of x's own reshape
/// source when x is a reshape, so no reshape chains build up).
Value reshaped(PatternRewriter &rw, mlir::Location loc, Value x, llvm::ArrayRef<int64_t> shape) {
  if (auto r = x.getDefiningOp<tg::ReshapeOp>())
    x = r.getInput();
  if (llvm::ArrayRef<int64_t>(shapeOf(x)) == shape)
    return x;
  auto type = mlir::RankedTensorType::get(shape, elemOf(x));
  return rw.create<tg::ReshapeOp>(loc, type, x);
}

/// Replaces `op` by an attention with the given operands and attributes (and op's layout).
void rebuild(PatternRewriter &rw, tg::AttentionOp op, Value q, Value k, Value v, Value mask,
             double scale, bool causal) {
  auto n = rw.create<tg::AttentionOp>(op.getLoc(), op.getResult().getType(), q, k, v, mask,
                                      rw.getF32FloatAttr(static_cast<float>(scale)),
                                      rw.getBoolAttr(causal), op.getLayoutAttr());
  rw.replaceOp(op, n.getResult());
}

bool isBshd(tg::AttentionOp op) { return op.getLayout() == "bshd"; }

/// Query length S and key length T of `op` in either layout.
std::pair<int64_t, int64_t> seqLengths(tg::AttentionOp op) {
  const int sd = isBshd(op) ? 1 : 2;
  return {shapeOf(op.getQ())[sd], shapeOf(op.getK())[sd]};
}

double scaleOf(tg::AttentionOp op) { return op.getScaleAttr().getValueAsDouble(); }

// matmul(where(isnan(P), 0, P) | P, v), P = softmax(matmul(q, kT) [* c] [+ mask], -1)
//   -> attention(q, transpose(kT, [0,1,3,2]), v, mask) {scale = c}
struct RecognizeScaledDotProductAttention : Rule<tg::MatmulOp> {
  using Rule::Rule;
  LogicalResult apply(tg::MatmulOp pv, PatternRewriter &rw) const override {
    Value probs = pv.getLhs(), v = pv.getRhs();
    if (shapeOf(probs).size() != 4 || shapeOf(v).size() != 4)
      return rw.notifyMatchFailure(pv, "not a rank-4 P·V product");
    tg::SoftmaxOp sm;
    if (auto guard = probs.getDefiningOp<tg::WhereOp>()) {
      auto isnan = guard.getCond().getDefiningOp<tg::IsNanOp>();
      if (!isnan || isnan.getInput() != guard.getRhs())
        return rw.notifyMatchFailure(pv, "where is not a NaN guard of its else branch");
      if (!isZeroScalar(guard.getLhs()))
        return rw.notifyMatchFailure(pv, "NaN guard does not substitute 0");
      sm = guard.getRhs().getDefiningOp<tg::SoftmaxOp>();
      if (!sm || shapeOf(guard.getResult()) != shapeOf(sm.getResult()))
        return rw.notifyMatchFailure(pv, "NaN guard does not guard a softmax");
      if (!guard->hasOneUse() || !isnan->hasOneUse() ||
          llvm::any_of(sm->getUsers(), [&](mlir::Operation *u) {
            return u != guard.getOperation() && u != isnan.getOperation();
          }))
        return rw.notifyMatchFailure(pv, "probabilities have other users");
    } else {
      sm = probs.getDefiningOp<tg::SoftmaxOp>();
      if (!sm)
        return rw.notifyMatchFailure(pv, "probabilities are not a softmax");
      if (!sm->hasOneUse())
        return rw.notifyMatchFailure(pv, "probabilities have other users");
    }
    if (sm.getLog())
      return rw.notifyMatchFailure(pv, "log-softmax");
    int64_t axis = sm.getAxisAttr().getInt();
    if (axis != 3 && axis != -1)
      return rw.notifyMatchFailure(pv, "softmax is not over the key axis");

    // scores [+ mask]: the mask may sit on either side of the add, and must not broadcast up.
    Value scores = sm.getInput(), mask;
    auto isScores = [](Value x) {
      if (auto s = matchScalarScale(x))
        x = s->x;
      return x.getDefiningOp<tg::MatmulOp>() != nullptr;
    };
    if (auto add = scores.getDefiningOp<tg::AddOp>()) {
      Value raw = isScores(add.getLhs()) ? add.getLhs() : add.getRhs();
      mask = raw == add.getLhs() ? add.getRhs() : add.getLhs();
      if (!isScores(raw))
        return rw.notifyMatchFailure(pv, "softmax input is an add without a Q·Kᵀ side");
      if (shapeOf(raw) != shapeOf(add.getResult()))
        return rw.notifyMatchFailure(pv, "mask broadcasts the scores up");
      if (!add->hasOneUse())
        return rw.notifyMatchFailure(pv, "masked scores have other users");
      scores = raw;
    }
    double scale = 1.0;
    if (auto s = matchScalarScale(scores)) {
      if (!scores.hasOneUse())
        return rw.notifyMatchFailure(pv, "scaled scores have other users");
      scale = s->factor;
      scores = s->x;
    }
    auto qk = scores.getDefiningOp<tg::MatmulOp>();
    if (!qk)
      return rw.notifyMatchFailure(pv, "scores are not a Q·Kᵀ product");
    if (!qk->hasOneUse())
      return rw.notifyMatchFailure(pv, "scores have other users");
    Value q = qk.getLhs(), kT = qk.getRhs();
    Shape qs = shapeOf(q), ks = shapeOf(kT), vs = shapeOf(v);
    if (qs.size() != 4 || ks.size() != 4)
      return rw.notifyMatchFailure(pv, "q or kᵀ is not rank 4");
    if (ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != vs[1] || ks[1] <= 0 || qs[1] % ks[1] != 0)
      return rw.notifyMatchFailure(pv, "batch/head dims of q, kᵀ, v do not line up");
    if (ks[3] != vs[2])
      return rw.notifyMatchFailure(pv, "key and value lengths differ");
    if (mask && elemOf(mask) != elemOf(q))
      return rw.notifyMatchFailure(pv, "mask element type differs");

    Value k = transposed(rw, qk.getLoc(), kT, {0, 1, 3, 2});
    auto att = rw.create<tg::AttentionOp>(
        rw.getFusedLoc({qk.getLoc(), sm.getLoc(), pv.getLoc()}), pv.getResult().getType(), q, k,
        v, mask, rw.getF32FloatAttr(static_cast<float>(scale)), rw.getBoolAttr(false),
        /*layout=*/mlir::StringAttr()); // the default, "bhsd"
    rw.replaceOp(pv, att.getResult());
    return success();
  }
};

// attention(x * c, k, v) {scale = s} -> attention(x, k, v) {scale = s * c}   (also c * x, x / c)
struct FoldQueryScaleIntoAttention : Rule<tg::AttentionOp> {
  using Rule::Rule;
  LogicalResult apply(tg::AttentionOp op, PatternRewriter &rw) const override {
    auto s = matchScalarScale(op.getQ());
    if (!s)
      return rw.notifyMatchFailure(op, "q is not scaled by a scalar constant");
    rebuild(rw, op, s->x, op.getK(), op.getV(), op.getMask(), scaleOf(op) * s->factor,
            op.getCausal());
    return success();
  }
};

// attention(V(x * c), k, v) {scale = s} -> attention(V(x), k, v) {scale = s * c}, V a chain of
// reshapes and transposes, each read only by the next: the scalar commutes with them. (Whisper's
// `q_proj(x) * scaling` before the heads are split: a kernel per layer; perf-log, thirty-third
// session.)
struct FoldViewedQueryScaleIntoAttention : Rule<tg::AttentionOp> {
  using Rule::Rule;
  LogicalResult apply(tg::AttentionOp op, PatternRewriter &rw) const override {
    llvm::SmallVector<mlir::Operation *> views; // from the attention's q up
    Value q = op.getQ();
    while (mlir::Operation *d = q.getDefiningOp()) {
      if (!llvm::isa<tg::ReshapeOp, tg::TransposeOp>(d) || !q.hasOneUse())
        break;
      views.push_back(d);
      q = d->getOperand(0);
    }
    if (views.empty())
      return rw.notifyMatchFailure(op, "q is no reshape or transpose (FoldQueryScaleIntoAttention's)");
    auto s = q.hasOneUse() ? matchScalarScale(q) : std::nullopt;
    if (!s)
      return rw.notifyMatchFailure(op, "the viewed q is not scaled by a scalar constant alone");
    Value x = s->x;
    for (mlir::Operation *v : llvm::reverse(views)) {
      mlir::Operation *c = rw.clone(*v);
      c->setOperand(0, x);
      x = c->getResult(0);
    }
    rebuild(rw, op, x, op.getK(), op.getV(), op.getMask(), scaleOf(op) * s->factor,
            op.getCausal());
    return success();
  }
};

// attention(q, [transpose](x * c), v) {scale = s} -> attention(q, [transpose](x), v) {scale = s * c}
struct FoldKeyScaleIntoAttention : Rule<tg::AttentionOp> {
  using Rule::Rule;
  LogicalResult apply(tg::AttentionOp op, PatternRewriter &rw) const override {
    if (auto s = matchScalarScale(op.getK())) {
      rebuild(rw, op, op.getQ(), s->x, op.getV(), op.getMask(), scaleOf(op) * s->factor,
              op.getCausal());
      return success();
    }
    // A scalar factor commutes with the layout change, so look through one transpose.
    auto t = op.getK().getDefiningOp<tg::TransposeOp>();
    std::optional<Scaled> s = t ? matchScalarScale(t.getInput()) : std::nullopt;
    if (!s)
      return rw.notifyMatchFailure(op, "k is not scaled by a scalar constant");
    Value k = transposed(rw, t.getLoc(), s->x, permOf(t));
    rebuild(rw, op, op.getQ(), k, op.getV(), op.getMask(), scaleOf(op) * s->factor,
            op.getCausal());
    return success();
  }
};

// attention(q, transpose(transpose(x, p1), p2), v) -> attention(q, transpose(x, p1∘p2), v)
//   (and transpose(x, identity) -> x)
struct FoldKeyTransposeIntoAttention : Rule<tg::AttentionOp> {
  using Rule::Rule;
  LogicalResult apply(tg::AttentionOp op, PatternRewriter &rw) const override {
    auto outer = op.getK().getDefiningOp<tg::TransposeOp>();
    if (!outer)
      return rw.notifyMatchFailure(op, "k is not a transpose");
    std::vector<int64_t> p2 = permOf(outer);
    if (isIdentity(p2)) {
      rebuild(rw, op, op.getQ(), outer.getInput(), op.getV(), op.getMask(), scaleOf(op),
              op.getCausal());
      return success();
    }
    auto inner = outer.getInput().getDefiningOp<tg::TransposeOp>();
    if (!inner)
      return rw.notifyMatchFailure(op, "k is a single transpose");
    std::vector<int64_t> p1 = permOf(inner), p(p2.size());
    for (size_t i = 0; i < p2.size(); ++i)
      p[i] = p1[p2[i]];
    Value k = transposed(rw, outer.getLoc(), inner.getInput(), p);
    rebuild(rw, op, op.getQ(), k, op.getV(), op.getMask(), scaleOf(op), op.getCausal());
    return success();
  }
};

// attention(q, transpose(reshape(transpose(reshape(x: [..., a, b]) : [N, a, b], [0,2,1])
//                        : [B, H, b, a], [0,1,3,2]), v)  ->  attention(q, reshape(x): [B, H, a, b], v)
// (the dynamo exporter's batched kᵀ: the reshapes only merge/split dims before the swapped pair)
struct FoldBatchedKeyTransposeIntoAttention : Rule<tg::AttentionOp> {
  using Rule::Rule;
  LogicalResult apply(tg::AttentionOp op, PatternRewriter &rw) const override {
    auto swap = op.getK().getDefiningOp<tg::TransposeOp>();
    if (!swap || permOf(swap) != std::vector<int64_t>{0, 1, 3, 2})
      return rw.notifyMatchFailure(op, "k is not a swap of the last two dims");
    auto split = swap.getInput().getDefiningOp<tg::ReshapeOp>();
    auto t3 = split ? split.getInput().getDefiningOp<tg::TransposeOp>() : nullptr;
    auto merge = t3 ? t3.getInput().getDefiningOp<tg::ReshapeOp>() : nullptr;
    if (!merge || permOf(t3) != std::vector<int64_t>{0, 2, 1})
      return rw.notifyMatchFailure(op, "kᵀ is not reshape → transpose(0,2,1) → reshape");
    Value x = merge.getInput();
    Shape xs = shapeOf(x), ms = shapeOf(merge.getResult()), ss = shapeOf(split.getResult());
    if (xs.size() < 2 || ms.size() != 3 || xs[xs.size() - 2] != ms[1] || xs.back() != ms[2])
      return rw.notifyMatchFailure(op, "the first reshape does not keep the last two dims");
    if (ss[2] != ms[2] || ss[3] != ms[1])
      return rw.notifyMatchFailure(op, "the second reshape does not keep the last two dims");
    Value k = reshaped(rw, swap.getLoc(), x, {ss[0], ss[1], ms[1], ms[2]});
    rebuild(rw, op, op.getQ(), k, op.getV(), op.getMask(), scaleOf(op), op.getCausal());
    return success();
  }
};

/// The un-repeated source and repeat count of reshape(expand(u: [B,H,1,T,D]) : [B,H,n,T,D])
/// : [B, H*n, T, D] (torch's repeat_kv: unsqueeze → expand → reshape).
struct HeadRepeat {
  Value source; ///< [B, H, 1, T, D] (whatever produced it)
  Shape base;   ///< [B, H, T, D]
  int64_t n;
};
std::optional<HeadRepeat> matchHeadRepeat(Value x) {
  auto r = x.getDefiningOp<tg::ReshapeOp>();
  auto e = r ? r.getInput().getDefiningOp<tg::ExpandOp>() : nullptr;
  if (!e)
    return std::nullopt;
  Shape out = shapeOf(x), es = shapeOf(e.getResult()), us = shapeOf(e.getInput());
  if (out.size() != 4 || es.size() != 5 || us.size() != 5)
    return std::nullopt;
  if (us[0] != es[0] || us[1] != es[1] || us[2] != 1 || us[3] != es[3] || us[4] != es[4])
    return std::nullopt;
  if (out[0] != es[0] || out[1] != es[1] * es[2] || out[2] != es[3] || out[3] != es[4])
    return std::nullopt;
  return HeadRepeat{e.getInput(), {es[0], es[1], es[3], es[4]}, es[2]};
}

// attention(q, repeat_kv(k0, n), repeat_kv(v0, n)) -> attention(q, k0, v0)
//   (query head h reads key head h / (Hq / Hkv), and h / (Hq / (n Hkv)) / n = h / (Hq / Hkv))
struct FoldHeadRepeatIntoAttention : Rule<tg::AttentionOp> {
  using Rule::Rule;
  LogicalResult apply(tg::AttentionOp op, PatternRewriter &rw) const override {
    if (isBshd(op))
      return rw.notifyMatchFailure(op, "head repeats are matched in the bhsd layout only");
    auto k = matchHeadRepeat(op.getK()), v = matchHeadRepeat(op.getV());
    if (!k || !v)
      return rw.notifyMatchFailure(op, "k and v are not both head repeats");
    if (k->n != v->n || k->base[1] != v->base[1])
      return rw.notifyMatchFailure(op, "k and v repeat heads differently");
    Value k0 = reshaped(rw, op.getLoc(), k->source, k->base);
    Value v0 = reshaped(rw, op.getLoc(), v->source, v->base);
    rebuild(rw, op, op.getQ(), k0, v0, op.getMask(), scaleOf(op), op.getCausal());
    return success();
  }
};

// attention(q, k, v, zeros) -> attention(q, k, v)
struct DropZeroAttentionMask : Rule<tg::AttentionOp> {
  using Rule::Rule;
  LogicalResult apply(tg::AttentionOp op, PatternRewriter &rw) const override {
    if (!op.getMask())
      return rw.notifyMatchFailure(op, "no mask");
    auto dense = floatConstant(op.getMask());
    if (!dense)
      return rw.notifyMatchFailure(op, "mask is not a constant");
    for (const llvm::APFloat &f : dense.getValues<llvm::APFloat>())
      if (!f.isZero())
        return rw.notifyMatchFailure(op, "mask has a non-zero element");
    rebuild(rw, op, op.getQ(), op.getK(), op.getV(), Value(), scaleOf(op), op.getCausal());
    return success();
  }
};

/// Masked entries of a causal mask: -inf, or so negative (≤ -1e30, e.g. torch.finfo.min) that
/// exp(score - max) underflows to exactly 0 like -inf does, for any finite scores of smaller
/// magnitude. Every row keeps its diagonal (S <= T), so no row is fully masked either way.
constexpr double kMaskedBelow = -1e30;

// attention(q, k, v, M) with M[..., s, t] = 0 if t <= s + T - S else -inf (or ≤ -1e30)
//   -> attention(q, k, v) {causal}
struct FoldCausalMaskIntoAttention : Rule<tg::AttentionOp> {
  using Rule::Rule;
  LogicalResult apply(tg::AttentionOp op, PatternRewriter &rw) const override {
    if (!op.getMask())
      return rw.notifyMatchFailure(op, "no mask");
    if (op.getCausal())
      return rw.notifyMatchFailure(op, "already causal");
    auto dense = floatConstant(op.getMask());
    if (!dense)
      return rw.notifyMatchFailure(op, "mask is not a constant");
    Shape ms = shapeOf(op.getMask());
    auto [S, T] = seqLengths(op);
    if (ms.size() < 2 || ms[ms.size() - 2] != S || ms.back() != T)
      return rw.notifyMatchFailure(op, "mask is not [..., S, T] matrices");
    if (S > T)
      return rw.notifyMatchFailure(op, "more queries than keys");
    // Every [S, T] matrix (one, or one per batch/head as a dynamic-axes export expands it).
    int64_t i = 0;
    for (const llvm::APFloat &f : dense.getValues<llvm::APFloat>()) {
      int64_t s = (i / T) % S, t = i % T;
      ++i;
      double x = toDouble(f);
      bool ok = t <= s + (T - S) ? x == 0.0 : (x <= kMaskedBelow);
      if (!ok)
        return rw.notifyMatchFailure(op, "mask is not a causal pattern");
    }
    rebuild(rw, op, op.getQ(), op.getK(), op.getV(), Value(), scaleOf(op), /*causal=*/true);
    return success();
  }
};

// transpose(attention(transpose(q, P), transpose(k, P), transpose(v, P), m), P), P = [0,2,1,3]
//   -> attention(q, k, v, m) {layout = "bshd"}   (bshd is bhsd with dims 1 and 2 swapped)
struct FoldLayoutTransposesIntoAttention : Rule<tg::AttentionOp> {
  using Rule::Rule;
  LogicalResult apply(tg::AttentionOp op, PatternRewriter &rw) const override {
    static const std::vector<int64_t> kSwap{0, 2, 1, 3};
    auto isSwap = [](tg::TransposeOp t) { return t && permOf(t) == kSwap; };
    if (isBshd(op))
      return rw.notifyMatchFailure(op, "already bshd");
    auto tq = op.getQ().getDefiningOp<tg::TransposeOp>();
    auto tk = op.getK().getDefiningOp<tg::TransposeOp>();
    auto tv = op.getV().getDefiningOp<tg::TransposeOp>();
    if (!isSwap(tq) || !isSwap(tk) || !isSwap(tv))
      return rw.notifyMatchFailure(op, "q, k and v are not all transposes with perm [0,2,1,3]");
    if (!op->hasOneUse())
      return rw.notifyMatchFailure(op, "result does not have exactly one user");
    auto out = llvm::dyn_cast<tg::TransposeOp>(*op->user_begin());
    if (!isSwap(out))
      return rw.notifyMatchFailure(op, "the user is not a transpose with perm [0,2,1,3]");
    auto n = rw.create<tg::AttentionOp>(
        op.getLoc(), out.getResult().getType(), tq.getInput(), tk.getInput(), tv.getInput(),
        op.getMask(), op.getScaleAttr(), op.getCausalAttr(), rw.getStringAttr("bshd"));
    rw.replaceOp(out, n.getResult());
    rw.eraseOp(op);
    return success();
  }
};

// attention(rotary(transpose(x, p), c, s), ...) with p keeping the last dim ->
// attention(transpose(rotary(x, transpose(c, p⁻¹), transpose(s, p⁻¹)), p), ...)
// Rotary works along the last dim and broadcasts c/s elementwise, so it commutes with any
// permutation of the other dims; moving the transpose to the attention input lets
// FoldLayoutTransposesIntoAttention absorb it (Llama's q and k).
struct SinkTransposeBelowRotary : Rule<tg::RotaryOp> {
  using Rule::Rule;
  LogicalResult apply(tg::RotaryOp op, PatternRewriter &rw) const override {
    auto t = op.getInput().getDefiningOp<tg::TransposeOp>();
    if (!t)
      return rw.notifyMatchFailure(op, "input is not a transpose");
    std::vector<int64_t> p = permOf(t);
    if (p.empty() || p.back() != (int64_t)p.size() - 1)
      return rw.notifyMatchFailure(op, "the transpose moves the last (rotated) dim");
    if (!op->hasOneUse() || !llvm::isa<tg::AttentionOp>(*op->user_begin()))
      return rw.notifyMatchFailure(op, "result does not feed exactly one attention");
    if (shapeOf(op.getCos()).size() != p.size() || shapeOf(op.getSin()).size() != p.size())
      return rw.notifyMatchFailure(op, "cos/sin rank differs from the input's");
    std::vector<int64_t> inv(p.size());
    for (size_t i = 0; i < p.size(); ++i)
      inv[p[i]] = (int64_t)i;
    mlir::Location loc = op.getLoc();
    Value c = transposed(rw, loc, op.getCos(), inv), sn = transposed(rw, loc, op.getSin(), inv);
    auto r = rw.create<tg::RotaryOp>(loc, t.getInput().getType(), t.getInput(), c, sn,
                                     op.getInterleavedAttr());
    rw.replaceOp(op, transposed(rw, loc, r.getResult(), p));
    return success();
  }
};

struct RecognizeAttentionPass : public RecognizeAttentionBase<RecognizeAttentionPass> {
  void runOnOperation() override {
    mlir::MLIRContext *ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    patterns.add<RecognizeScaledDotProductAttention>(ctx, "RecognizeScaledDotProductAttention");
    patterns.add<FoldQueryScaleIntoAttention>(ctx, "FoldQueryScaleIntoAttention");
    patterns.add<FoldViewedQueryScaleIntoAttention>(ctx, "FoldViewedQueryScaleIntoAttention");
    patterns.add<FoldKeyScaleIntoAttention>(ctx, "FoldKeyScaleIntoAttention");
    patterns.add<FoldKeyTransposeIntoAttention>(ctx, "FoldKeyTransposeIntoAttention");
    patterns.add<FoldBatchedKeyTransposeIntoAttention>(ctx,
                                                       "FoldBatchedKeyTransposeIntoAttention");
    patterns.add<FoldHeadRepeatIntoAttention>(ctx, "FoldHeadRepeatIntoAttention");
    patterns.add<DropZeroAttentionMask>(ctx, "DropZeroAttentionMask");
    patterns.add<FoldCausalMaskIntoAttention>(ctx, "FoldCausalMaskIntoAttention");
    patterns.add<FoldLayoutTransposesIntoAttention>(ctx, "FoldLayoutTransposesIntoAttention");
    patterns.add<SinkTransposeBelowRotary>(ctx, "SinkTransposeBelowRotary");
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<mlir::Pass> createRecognizeAttentionPass() {
  return std::make_unique<RecognizeAttentionPass>();
}

} // namespace tgc
