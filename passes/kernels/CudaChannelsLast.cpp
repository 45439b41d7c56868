// CudaChannelsLast.cpp — `tgc-cuda-channels-last`: CUDA targets keep convolutional networks
// channels last (NHWC), the layout cuDNN's and the tensor cores' convolutions read natively.
//
// Given NC[D]HW tensors, cuDNN converts the input and the filter to NHWC and the result back on
// every call (ResNet-50 at batch 1: 73 conversion kernels, 186 of 626 µs on an H200). Here a
// convolution instead becomes an `nhwc` tg.conv between two transposes, its constant filter
// transposed at compile time; the transposes then sink below the elementwise ops that follow
// (bias, activation, residual add) until two of them meet and cancel. What is left is one
// transpose into the channels-last region and one out of it. A 1x1 convolution inside the region
// is a plain linear over [N, spatial..., C] (one GEMM, its bias and activation in the epilogue).
//
// Rules (one each):
//   ConvToChannelsLast       conv(x, w, b) -> T_first(conv{nhwc}(T_last(x), T_last(w), b))
//                            (1-D or 2-D, any group: depthwise too; a window or stride > 1, or
//                            an x that is already a T_first: a 1x1 convolution joins a region,
//                            never starts one)
//   SinkChannelsFirst        f(T_first(a), ...) -> T_first(f(a, ...)), f elementwise, its other
//                            operands T_first too, constants, broadcast scalars, or [N, C, 1..]
//                            values (a squeeze-excitation scale: reshaped, the same elements)
//   SinkChannelsFirstBelowPool    pool(T_first(a)) -> T_first(pool{nhwc}(a))
//   SinkChannelsFirstBelowReduce  reduce(T_first(a), spatial axes) -> reduce over a's spatial axes
//   CancelChannelsTransposes T_last(T_first(a)) -> a
//   LowerChannelsLastPointwiseConv  conv{nhwc} with a 1x1 window, stride 1, no padding ->
//                            linear(x, w as [M, C], b)
//   LowerChannelsLastConv1dToLinear  conv{nhwc} over one axis, one group, small window ->
//                            linear(columns of x gathered, w as [M, k·C], b)
// T_first = transpose [0, r-1, 1, .., r-2] (channels back to dim 1), T_last = its inverse. Only
// the T_first this pass writes (marked) sink or cancel, and only when every reader moves with
// them; convolutions need a constant filter (not a ViT patch grid: LowerPatchConvToLinear's).
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/common/Rules.h"
#include "passes/kernels/Passes.h"

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/kernels/Passes.h.inc"

using mlir::PatternRewriter;
using mlir::RankedTensorType;
using mlir::Value;

RankedTensorType typeOf(Value v) { return v.getType().cast<RankedTensorType>(); }

/// [0, r-1, 1, .., r-2]: channels-last to channels-first.
std::vector<int64_t> toFirst(int64_t r) {
  std::vector<int64_t> p{0, r - 1};
  for (int64_t d = 1; d + 1 < r; ++d)
    p.push_back(d);
  return p;
}

/// [0, 2, .., r-1, 1]: channels-first to channels-last.
std::vector<int64_t> toLast(int64_t r) {
  std::vector<int64_t> p{0};
  for (int64_t d = 2; d < r; ++d)
    p.push_back(d);
  p.push_back(1);
  return p;
}

/// `shape` permuted: result[i] = shape[perm[i]].
llvm::SmallVector<int64_t> permuted(llvm::ArrayRef<int64_t> shape, const std::vector<int64_t> &p) {
  llvm::SmallVector<int64_t> r;
  for (int64_t i : p)
    r.push_back(shape[(size_t)i]);
  return r;
}

/// Marks the T_first transposes this pass writes: only those sink and cancel. (At rank 3 T_first
/// and T_last are both [0, 2, 1], a permutation transformers use for other reasons; the mark
/// keeps the rules to the convolutions' regions.) Removed when the pass ends.
constexpr llvm::StringLiteral kMark = "tgc.channels_first";

Value transpose(PatternRewriter &rewriter, mlir::Location loc, Value v,
                const std::vector<int64_t> &perm) {
  RankedTensorType t = typeOf(v);
  return rewriter.create<tg::TransposeOp>(
      loc, RankedTensorType::get(permuted(t.getShape(), perm), t.getElementType()), v,
      rewriter.getI64ArrayAttr(perm));
}

/// T_first(v), marked as this pass's.
Value backToFirst(PatternRewriter &rewriter, mlir::Location loc, Value v) {
  Value t = transpose(rewriter, loc, v, toFirst(typeOf(v).getRank()));
  t.getDefiningOp()->setAttr(kMark, rewriter.getUnitAttr());
  return t;
}

/// The channels-last value `v` stands for when it is one of this pass's T_first (else null).
Value channelsLastSource(Value v) {
  auto t = v.getDefiningOp<tg::TransposeOp>();
  if (!t || !t->hasAttr(kMark) || intsOf(t.getPerm()) != toFirst(typeOf(v).getRank()))
    return {};
  return t.getInput();
}

/// Elements tgc-fold-constants folds at most (its `max-elements` default): a constant this pass
/// transposes must fold, or the transpose would run on every call.
constexpr int64_t kMaxFoldElements = int64_t(1) << 24;

bool foldableConstant(Value v) {
  return v.getDefiningOp<tg::ConstantOp>() && typeOf(v).getNumElements() <= kMaxFoldElements;
}

/// True for the 1-D and 2-D float convolutions the rule takes (`nhwc` or not), of any group: a
/// depthwise convolution's channels-last filter is [M, k..., 1], its threads reading neighbouring
/// channels of one pixel.
bool channelsLastCandidate(tg::ConvOp conv) {
  RankedTensorType x = typeOf(conv.getInput());
  return !conv.getWeightBlock() && !conv.getChannelsLast() &&
         (x.getRank() == 3 || x.getRank() == 4) && x.getElementType().isa<mlir::FloatType>();
}

/// True for a 2-D convolution whose window equals its stride and tiles the unpadded image (a ViT
/// patch embedding): tgc-fold-linears makes it one GEMM over the patches (LowerPatchConvToLinear,
/// whose conditions these are).
bool patchGrid(tg::ConvOp conv) {
  auto xs = typeOf(conv.getInput()).getShape(), ws = typeOf(conv.getWeight()).getShape();
  if (xs.size() != 4 || ws.size() != 4 || conv.getGroup() != 1 || ws[2] * ws[3] == 1)
    return false;
  return intsOf(conv.getStrides()) == std::vector<int64_t>{ws[2], ws[3]} &&
         intsOf(conv.getDilations()) == std::vector<int64_t>{1, 1} &&
         llvm::all_of(intsOf(conv.getPads()), [](int64_t p) { return p == 0; }) &&
         xs[2] % ws[2] == 0 && xs[3] % ws[3] == 0;
}

// conv(x, w, b) -> T_first(conv{nhwc}(T_last(x), T_last(w), b))
struct ConvToChannelsLast : public Rule<tg::ConvOp> {
  explicit ConvToChannelsLast(mlir::MLIRContext *ctx) : Rule(ctx, "ConvToChannelsLast") {}
  mlir::LogicalResult apply(tg::ConvOp conv, PatternRewriter &rewriter) const override {
    if (conv.getNhwc() || !channelsLastCandidate(conv))
      return rewriter.notifyMatchFailure(conv, "not a float 1-D/2-D convolution");
    const int64_t r = typeOf(conv.getInput()).getRank();
    auto ws = typeOf(conv.getWeight()).getShape();
    if (patchGrid(conv))
      return rewriter.notifyMatchFailure(conv, "a patch embedding (LowerPatchConvToLinear's GEMM)");
    if (!foldableConstant(conv.getWeight()))
      return rewriter.notifyMatchFailure(
          conv, "the weight is no constant tgc-fold-constants transposes at compile time");
    const bool window = llvm::any_of(ws.drop_front(2), [](int64_t k) { return k > 1; }) ||
                        llvm::any_of(intsOf(conv.getStrides()), [](int64_t s) { return s > 1; });
    if (!window && !channelsLastSource(conv.getInput()))
      return rewriter.notifyMatchFailure(
          conv, "a 1x1 convolution on a channels-first input (it stays a channels-first GEMM)");
    mlir::Location loc = conv.getLoc();
    Value x = transpose(rewriter, loc, conv.getInput(), toLast(r));
    Value w = transpose(rewriter, loc, conv.getWeight(), toLast(r));
    RankedTensorType y = typeOf(conv.getResult());
    auto last = rewriter.create<tg::ConvOp>(
        loc, RankedTensorType::get(permuted(y.getShape(), toLast(r)), y.getElementType()), x, w,
        conv.getBias(), conv.getStrides(), conv.getPads(), conv.getDilations(),
        (uint64_t)conv.getGroup(), /*weight_block=*/nullptr, /*channels_last=*/false, /*nhwc=*/true);
    rewriter.replaceOp(conv, backToFirst(rewriter, loc, last.getResult()));
    return mlir::success();
  }
};

bool allOnes(Value v) {
  return llvm::all_of(typeOf(v).getShape(), [](int64_t d) { return d == 1; });
}

/// True for a value [N, C, 1..] of rank `r` (a squeeze-excitation scale): its channels-last form
/// [N, 1.., C] holds the same elements in the same order, a reshape rather than a transpose.
bool spatialOnes(Value v, int64_t r) {
  auto s = typeOf(v).getShape();
  return (int64_t)s.size() == r && r >= 3 &&
         llvm::all_of(s.drop_front(2), [](int64_t d) { return d == 1; });
}

/// True for a reduce_mean/sum/max over every spatial dim of `v`, its input
/// (SinkChannelsFirstBelowReduce's case).
bool spatialReduction(mlir::Operation *op, Value v) {
  if (!llvm::isa<tg::ReduceMeanOp, tg::ReduceSumOp, tg::ReduceMaxOp>(op) ||
      op->getOperand(0) != v)
    return false;
  const int64_t r = typeOf(v).getRank();
  std::vector<int64_t> axes = intsOf(op->getAttrOfType<mlir::ArrayAttr>("axes")), spatial;
  for (int64_t &x : axes)
    x = x < 0 ? x + r : x;
  llvm::sort(axes);
  for (int64_t d = 2; d < r; ++d)
    spatial.push_back(d);
  return axes == spatial;
}

/// True when elementwise `op` can move below its channels-first operands: one of them is this
/// pass's T_first of the result's rank (broadcasting permutes with it), and every operand is
/// such a T_first, a broadcast scalar, a [N, C, 1..] value (reshaped) or a constant of no higher
/// rank (rearranged at compile time).
bool sinkableElementwise(mlir::Operation *op) {
  if (!isPointwiseOp(op) || llvm::isa<tg::ExpandOp>(op))
    return false;
  RankedTensorType rt = typeOf(op->getResult(0));
  if (rt.getRank() < 3)
    return false;
  bool any = false;
  for (Value o : op->getOperands()) {
    if (channelsLastSource(o)) {
      if (typeOf(o).getRank() != rt.getRank())
        return false; // a transposed operand of lower rank: broadcasting would not permute
      any = true;
    } else if (!allOnes(o) && !spatialOnes(o, rt.getRank()) &&
               !(foldableConstant(o) && typeOf(o).getRank() <= rt.getRank())) {
      return false;
    }
  }
  return any;
}

/// `o` as an operand of f in the channels-last layout (sinkableElementwise said it has one): a
/// T_first's source, a broadcast scalar as it is, a [N, C, 1..] value reshaped, or a constant
/// rearranged to match.
Value channelsLastOperand(PatternRewriter &rewriter, mlir::Location loc, Value o, int64_t r) {
  if (Value src = channelsLastSource(o))
    return src;
  RankedTensorType t = typeOf(o);
  if (allOnes(o))
    return o; // a scalar broadcasts the same way in either layout
  if (spatialOnes(o, r))
    return rewriter.create<tg::ReshapeOp>(
        loc, RankedTensorType::get(permuted(t.getShape(), toLast(r)), t.getElementType()), o);
  // A constant (a bias [C, 1, 1], say): padded to rank r with leading 1s, then T_last (both
  // folded at compile time by tgc-fold-constants).
  if (t.getRank() < r) {
    llvm::SmallVector<int64_t> s((size_t)(r - t.getRank()), 1);
    s.append(t.getShape().begin(), t.getShape().end());
    o = rewriter.create<tg::ReshapeOp>(loc, RankedTensorType::get(s, t.getElementType()), o);
  }
  return transpose(rewriter, loc, o, toLast(r));
}

bool allReadersSink(tg::TransposeOp t, llvm::SmallPtrSetImpl<mlir::Operation *> &seen);

/// True when `v` is, or will be once the transposes below have sunk, available channels last:
/// this pass's T_first whose readers all sink, a broadcast scalar, a [N, C, 1..] value, a
/// constant of no higher rank than `rank`, or an elementwise op of such values (up to `depth` ops deep: hardswish reads x
/// twice, x * f(x)).
bool eventuallyChannelsLast(Value v, int64_t rank, llvm::SmallPtrSetImpl<mlir::Operation *> &seen,
                            int depth = 8) {
  if (channelsLastSource(v))
    return allReadersSink(v.getDefiningOp<tg::TransposeOp>(), seen);
  if (allOnes(v) || spatialOnes(v, rank) || (foldableConstant(v) && typeOf(v).getRank() <= rank))
    return true;
  mlir::Operation *op = v.getDefiningOp();
  if (!op || depth == 0 || !isPointwiseOp(op) || llvm::isa<tg::ExpandOp>(op) ||
      typeOf(v).getRank() != rank)
    return false;
  return llvm::all_of(op->getOperands(), [&](Value o) {
    return eventuallyChannelsLast(o, rank, seen, depth - 1);
  });
}

/// True when every reader of T_first `t` moves below it (an elementwise op that can now or once
/// its other operands have sunk, a pool, a spatial reduction, a convolution the rule above
/// takes) or cancels it:
/// sinking then never leaves `t` behind for a reader that stays. The transposes an elementwise
/// reader's other operands come from must pass too (`seen`: those already being asked about
/// count as passing, so a cycle of transposes that only wait on each other moves together).
bool allReadersSink(tg::TransposeOp t, llvm::SmallPtrSetImpl<mlir::Operation *> &seen) {
  if (!seen.insert(t).second)
    return true;
  const int64_t rank = typeOf(t.getResult()).getRank();
  for (mlir::Operation *user : t->getUsers()) {
    // An elementwise reader whose other operands are, or will be, channels last too.
    if (isPointwiseOp(user) && !llvm::isa<tg::ExpandOp>(user) &&
        typeOf(user->getResult(0)).getRank() == rank &&
        llvm::all_of(user->getOperands(),
                     [&](Value o) { return eventuallyChannelsLast(o, rank, seen); }))
      continue;
    if (auto conv = llvm::dyn_cast<tg::ConvOp>(user))
      if (!conv.getNhwc() && channelsLastCandidate(conv) && !patchGrid(conv) &&
          foldableConstant(conv.getWeight()) && conv.getInput() == t.getResult())
        continue;
    if (auto pool = llvm::dyn_cast<tg::PoolOp>(user))
      if (!pool.getNhwc())
        continue;
    if (spatialReduction(user, t.getResult()))
      continue;
    if (auto back = llvm::dyn_cast<tg::TransposeOp>(user))
      if (intsOf(back.getPerm()) == toLast(typeOf(t.getResult()).getRank()))
        continue;
    return false;
  }
  return true;
}

bool allReadersSink(tg::TransposeOp t) {
  llvm::SmallPtrSet<mlir::Operation *, 8> seen;
  return allReadersSink(t, seen);
}

// f(T_first(a), ...) -> T_first(f(a, ...)), f elementwise
struct SinkChannelsFirst : public AnyOpRule {
  explicit SinkChannelsFirst(mlir::MLIRContext *ctx) : AnyOpRule(ctx, "SinkChannelsFirst") {}
  mlir::LogicalResult apply(mlir::Operation *op, PatternRewriter &rewriter) const override {
    if (!sinkableElementwise(op))
      return rewriter.notifyMatchFailure(
          op, "not an elementwise op on channels-first transposes, constants and scalars");
    for (Value o : op->getOperands())
      if (channelsLastSource(o) && !allReadersSink(o.getDefiningOp<tg::TransposeOp>()))
        return rewriter.notifyMatchFailure(op, "a transpose has readers that stay");
    RankedTensorType rt = typeOf(op->getResult(0));
    const int64_t r = rt.getRank();
    llvm::SmallVector<Value> operands(op->getOperands().begin(), op->getOperands().end());
    for (Value &o : operands)
      o = channelsLastOperand(rewriter, op->getLoc(), o, r);
    mlir::OperationState state(op->getLoc(), op->getName());
    state.addOperands(operands);
    state.addTypes(RankedTensorType::get(permuted(rt.getShape(), toLast(r)), rt.getElementType()));
    state.addAttributes(op->getAttrs());
    mlir::Operation *last = rewriter.create(state);
    rewriter.replaceOp(op, backToFirst(rewriter, op->getLoc(), last->getResult(0)));
    return mlir::success();
  }
};

// pool(T_first(a)) -> T_first(pool{nhwc}(a))
struct SinkChannelsFirstBelowPool : public Rule<tg::PoolOp> {
  explicit SinkChannelsFirstBelowPool(mlir::MLIRContext *ctx)
      : Rule(ctx, "SinkChannelsFirstBelowPool") {}
  mlir::LogicalResult apply(tg::PoolOp op, PatternRewriter &rewriter) const override {
    Value a = channelsLastSource(op.getInput());
    if (op.getNhwc() || !a ||
        !allReadersSink(op.getInput().getDefiningOp<tg::TransposeOp>()))
      return rewriter.notifyMatchFailure(op, "input is not a channels-first transpose that sinks");
    RankedTensorType rt = typeOf(op.getResult());
    const int64_t r = rt.getRank();
    auto last = rewriter.create<tg::PoolOp>(
        op.getLoc(), RankedTensorType::get(permuted(rt.getShape(), toLast(r)), rt.getElementType()),
        a, op.getKindAttr(), op.getKernelAttr(), op.getStridesAttr(), op.getPadsAttr(),
        op.getDilationsAttr(), op.getCountIncludePadAttr(), rewriter.getUnitAttr());
    rewriter.replaceOp(op, backToFirst(rewriter, op.getLoc(), last.getResult()));
    return mlir::success();
  }
};

// reduce(T_first(a), axes = every spatial dim) -> the same reduction over a's spatial dims
// (keepdims: [N, 1.., C] reshaped to [N, C, 1..], the same elements in the same order)
template <typename ReduceOp> struct SinkChannelsFirstBelowReduce : public Rule<ReduceOp> {
  explicit SinkChannelsFirstBelowReduce(mlir::MLIRContext *ctx)
      : Rule<ReduceOp>(ctx, "SinkChannelsFirstBelowReduce") {}
  mlir::LogicalResult apply(ReduceOp op, PatternRewriter &rewriter) const override {
    Value a = channelsLastSource(op.getInput());
    if (!a || !spatialReduction(op, op.getInput()))
      return rewriter.notifyMatchFailure(
          op, "not a reduction over every spatial dim of a channels-first transpose");
    if (!allReadersSink(op.getInput().template getDefiningOp<tg::TransposeOp>()))
      return rewriter.notifyMatchFailure(op, "the transpose has readers that stay");
    const int64_t r = typeOf(a).getRank();
    std::vector<int64_t> lastSpatial;
    for (int64_t d = 2; d < r; ++d)
      lastSpatial.push_back(d - 1);
    RankedTensorType rt = typeOf(op.getResult());
    const bool keep = op.getKeepdims();
    llvm::SmallVector<int64_t> s{rt.getDimSize(0)};
    if (keep)
      s.append((size_t)(r - 2), 1);
    s.push_back(rt.getDimSize(1));
    Value y = rewriter.create<ReduceOp>(op.getLoc(), RankedTensorType::get(s, rt.getElementType()),
                                        a, rewriter.getI64ArrayAttr(lastSpatial),
                                        rewriter.getBoolAttr(keep));
    if (keep)
      y = rewriter.create<tg::ReshapeOp>(op.getLoc(), rt, y);
    rewriter.replaceOp(op, y);
    return mlir::success();
  }
};

// T_last(T_first(a)) -> a
struct CancelChannelsTransposes : public Rule<tg::TransposeOp> {
  explicit CancelChannelsTransposes(mlir::MLIRContext *ctx)
      : Rule(ctx, "CancelChannelsTransposes") {}
  mlir::LogicalResult apply(tg::TransposeOp op, PatternRewriter &rewriter) const override {
    Value a = channelsLastSource(op.getInput());
    if (!a || intsOf(op.getPerm()) != toLast(typeOf(a).getRank()))
      return rewriter.notifyMatchFailure(op, "not T_last of a channels-first transpose");
    rewriter.replaceOp(op, a);
    return mlir::success();
  }
};

// conv{nhwc}(x, w, b), a 1x1 window, stride 1, no padding -> linear(x, w as [M, C], b)
struct LowerChannelsLastPointwiseConv : public Rule<tg::ConvOp> {
  explicit LowerChannelsLastPointwiseConv(mlir::MLIRContext *ctx)
      : Rule(ctx, "LowerChannelsLastPointwiseConv") {}
  mlir::LogicalResult apply(tg::ConvOp conv, PatternRewriter &rewriter) const override {
    if (!conv.getNhwc() || conv.getGroup() != 1)
      return rewriter.notifyMatchFailure(conv, "not an nhwc convolution of one group");
    auto ws = typeOf(conv.getWeight()).getShape();
    if (llvm::any_of(ws.drop_front().drop_back(), [](int64_t k) { return k != 1; }) ||
        llvm::any_of(intsOf(conv.getStrides()), [](int64_t s) { return s != 1; }) ||
        llvm::any_of(intsOf(conv.getPads()), [](int64_t p) { return p != 0; }))
      return rewriter.notifyMatchFailure(conv, "a window, stride or padding");
    RankedTensorType wt = typeOf(conv.getWeight());
    Value w = rewriter.create<tg::ReshapeOp>(
        conv.getLoc(), RankedTensorType::get({ws.front(), ws.back()}, wt.getElementType()),
        conv.getWeight());
    rewriter.replaceOpWithNewOp<tg::LinearOp>(conv, conv.getType(), conv.getInput(), w,
                                              conv.getBias());
    return mlir::success();
  }
};

/// conv{nhwc} over one spatial axis ([N, W, C], filter [M, k, C]), one group, no dilation, a
/// window or stride (not LowerChannelsLastPointwiseConv's), whose columns stay small: window k at
/// most kConv1dMaxWindow and at most kConv1dMaxExpansion times its stride, so the column matrix
/// is at most that many times the input.
constexpr int64_t kConv1dMaxWindow = 16;
constexpr int64_t kConv1dMaxExpansion = 4;

// conv{nhwc}(x [N, W, C], w [M, k, C], b), stride s, pads [p0, p1] ->
//   linear(reshape(gather(pad(x), axis 1, [t·s + j]_{t,j})) [N, Wo, k·C], reshape(w) [M, k·C], b)
// A 1-D convolution as one GEMM over its column matrix: row t of the columns is the window of
// output t, k rows of x side by side, in the filter's (j, c) order; one gather kernel writes
// them (and one pad kernel the borders first, where the convolution pads). (Whisper's two audio
// convolutions: cuDNN took 19.7 and 12.6 µs on an H200 for 0.55 and 1.3 GFLOP; perf-log,
// thirty-third session.)
struct LowerChannelsLastConv1dToLinear : public Rule<tg::ConvOp> {
  explicit LowerChannelsLastConv1dToLinear(mlir::MLIRContext *ctx)
      : Rule(ctx, "LowerChannelsLastConv1dToLinear") {}
  mlir::LogicalResult apply(tg::ConvOp conv, PatternRewriter &rewriter) const override {
    RankedTensorType xt = typeOf(conv.getInput()), wt = typeOf(conv.getWeight());
    if (!conv.getNhwc() || conv.getGroup() != 1 || xt.getRank() != 3 || wt.getRank() != 3)
      return rewriter.notifyMatchFailure(conv, "not a 1-D nhwc convolution of one group");
    if (!xt.hasStaticShape() || !typeOf(conv.getResult()).hasStaticShape())
      return rewriter.notifyMatchFailure(conv, "a dynamic shape");
    const int64_t k = wt.getShape()[1], c = wt.getShape()[2], m = wt.getShape()[0];
    const int64_t s = intsOf(conv.getStrides())[0];
    const std::vector<int64_t> pads = intsOf(conv.getPads());
    if (intsOf(conv.getDilations())[0] != 1)
      return rewriter.notifyMatchFailure(conv, "a dilation");
    if (k == 1 && s == 1 && pads[0] == 0 && pads[1] == 0)
      return rewriter.notifyMatchFailure(conv, "a pointwise convolution (a linear as it is)");
    if (k > kConv1dMaxWindow || k > kConv1dMaxExpansion * s || pads[0] < 0 || pads[1] < 0)
      return rewriter.notifyMatchFailure(conv, "a column matrix too large for its input");
    mlir::Location loc = conv.getLoc();
    const mlir::Type et = xt.getElementType();
    const int64_t n = xt.getShape()[0], w = xt.getShape()[1];
    const int64_t wo = typeOf(conv.getResult()).getShape()[1];
    Value x = conv.getInput();
    if (pads[0] || pads[1])
      x = rewriter.create<tg::PadOp>(
          loc, RankedTensorType::get({n, w + pads[0] + pads[1], c}, et), x,
          rewriter.getI64ArrayAttr({0, pads[0], 0, 0, pads[1], 0}), rewriter.getF64FloatAttr(0.0));
    // One gather of the k rows of each window: indices [Wo, k], t·s + j.
    std::vector<int64_t> index;
    for (int64_t t = 0; t < wo; ++t)
      for (int64_t j = 0; j < k; ++j)
        index.push_back(t * s + j);
    auto it = RankedTensorType::get({wo, k}, rewriter.getI64Type());
    Value idx = rewriter.create<tg::ConstantOp>(
        loc, it, mlir::DenseElementsAttr::get(it, llvm::makeArrayRef(index)));
    Value windows = rewriter.create<tg::GatherOp>(
        loc, RankedTensorType::get({n, wo, k, c}, et), x, idx, rewriter.getI64IntegerAttr(1));
    Value cols = rewriter.create<tg::ReshapeOp>(
        loc, RankedTensorType::get({n, wo, k * c}, et), windows);
    Value filter = rewriter.create<tg::ReshapeOp>(
        loc, RankedTensorType::get({m, k * c}, wt.getElementType()), conv.getWeight());
    rewriter.replaceOpWithNewOp<tg::LinearOp>(conv, conv.getType(), cols, filter, conv.getBias());
    return mlir::success();
  }
};

struct CudaChannelsLastPass : public CudaChannelsLastBase<CudaChannelsLastPass> {
  void runOnOperation() override {
    mlir::MLIRContext *ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    patterns.add<ConvToChannelsLast, SinkChannelsFirst, SinkChannelsFirstBelowPool,
                 CancelChannelsTransposes,
                 LowerChannelsLastPointwiseConv, LowerChannelsLastConv1dToLinear,
                 SinkChannelsFirstBelowReduce<tg::ReduceMeanOp>,
                 SinkChannelsFirstBelowReduce<tg::ReduceSumOp>,
                 SinkChannelsFirstBelowReduce<tg::ReduceMaxOp>>(ctx);
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
    getOperation().walk([](tg::TransposeOp t) { t->removeAttr(kMark); });
  }
};

} // namespace

std::unique_ptr<mlir::Pass> createCudaChannelsLastPass() {
  return std::make_unique<CudaChannelsLastPass>();
}

} // namespace tgc
