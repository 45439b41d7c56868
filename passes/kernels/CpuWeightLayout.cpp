// CpuWeightLayout.cpp — `tgc-cpu-weight-layout`: linear weights stored [K, N] in 32-column
// strips, convolution weights blocked by 16 output channels, for the CPU.
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
//
// Its AVX-512 tiles compute 32 columns of C at a time from a K x 32 strip of B, which they
// copied out of B on every call (rows of B are ldb apart: 25 % of bert_tiny's GEMM time). A
// constant B is stored in those strips instead, once, at compile time:
//   matmul(x, W:const[K, N]) -> matmul(x, Ws:const[ceil(N/32), K, 32]) {weight_block = 32}
// (zeros past N), for an f32 W of at least one full strip (N >= 32) that only matmuls read as
// their rhs, each with an lhs of rank >= 2. Not without the tiles (gemm-tiles=false: x86-64-v2/v3
// targets), where the GEMM would be a cblas_sgemm call a strip.
//
// The CPU's direct convolution (tg_conv_lanes2d) keeps 16 output channels in a vector's lanes
// and loads one tap's 16 weights per step, so a convolution it runs gets its weight blocked:
//   conv(x, W:const[M, C, k...]) -> conv(x, Wb:const[ceil(M/16), C, k..., 16]) {weight_block = 16}
// (zeros past M). Which convolutions it runs is decided here (lanesConv); the backend follows
// the attribute.
//
// Its accumulators hold one output position's 16 channels; stored to NC[D]HW they are
// transposed in registers. A transpose right after that moves the channels last (a detection
// head's permute(0, 2, 3, 1)) would undo it in a kernel of its own, so it folds in:
//   transpose(conv{weight_block}(x, Wb), [0, 2, .., 1]) -> conv{weight_block, channels_last}(x, Wb)
// and the kernel stores each position's channel vector as it is.
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

/// A new f32 constant after `c`, of `shape`, holding the M x inner matrix `at(m, t)` blocked by
/// `block` rows: element [m / block, t, m % block] = at(m, t), zeros past M (shape's element
/// count is ceil(M / block) * inner * block). Both layouts below are this one: a conv weight's
/// output channels by 16 (m, t over [M, C·k...]), a matmul weight's columns by 32 (m, t over
/// its [N, K] transpose).
tg::ConstantOp blockedConstant(PatternRewriter &rewriter, tg::ConstantOp c,
                               llvm::ArrayRef<int64_t> shape, int64_t M, int64_t inner,
                               int64_t block, llvm::function_ref<float(int64_t, int64_t)> at) {
  std::vector<float> out((M + block - 1) / block * inner * block, 0.0f);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t t = 0; t < inner; ++t)
      out[((m / block) * inner + t) * block + m % block] = at(m, t);
  auto type = RankedTensorType::get(shape, rewriter.getF32Type());
  rewriter.setInsertionPointAfter(c);
  return rewriter.create<tg::ConstantOp>(
      c.getLoc(), type, mlir::DenseElementsAttr::get(type, llvm::makeArrayRef(out)));
}

/// Columns per strip of a matmul weight: the GEMM tile's width (kTgTileCols in the prelude).
constexpr int64_t kGemmStrip = 32;

/// True when every reader of `w` is a tg.matmul that takes it as its plain rhs, with an lhs of
/// rank >= 2 (each then reads the one copy in strips). Nothing here depends on the number of
/// rows, so every bucket of a bucketed or decode package (one weight merged across them) makes
/// the same choice.
bool onlyMatmulWeight(Value w) {
  for (mlir::OpOperand &use : w.getUses()) {
    auto mm = dyn_cast<tg::MatmulOp>(use.getOwner());
    if (!mm || use.getOperandNumber() != 1 || mm.getWeightBlock() ||
        mm.getLhs().getType().cast<RankedTensorType>().getRank() < 2)
      return false;
  }
  return true;
}

struct StoreMatmulWeightStrips : public Rule<tg::MatmulOp> {
  StoreMatmulWeightStrips(mlir::MLIRContext *ctx, bool gemmTiles)
      : Rule(ctx, "StoreMatmulWeightStrips"), gemmTiles(gemmTiles) {}
  /// Whether the target has the AVX-512 tiles (the pass's gemm-tiles option).
  bool gemmTiles;

  LogicalResult apply(tg::MatmulOp op, PatternRewriter &rewriter) const override {
    // Without the tiles each strip would be a cblas_sgemm call of its own (x86-64-v3 kernels
    // here: bert_tiny's 32-row GEMMs 24 % faster, kws_gru's one-row steps 7-11 % slower; a
    // choice by rows would differ between a decode package's prefill buckets and its one-row
    // step and store their weights twice), so those targets keep [K, N].
    if (!gemmTiles)
      return rewriter.notifyMatchFailure(op, "the target has no AVX-512 GEMM tiles");
    if (op.getWeightBlock())
      return rewriter.notifyMatchFailure(op, "weight already in strips");
    auto c = op.getRhs().getDefiningOp<tg::ConstantOp>();
    if (!c)
      return rewriter.notifyMatchFailure(op, "weight is not a constant");
    auto dense = c.getValue().dyn_cast<mlir::DenseElementsAttr>();
    auto wt = op.getRhs().getType().cast<RankedTensorType>();
    if (!dense || wt.getRank() != 2 || !wt.getElementType().isF32() ||
        wt.getDimSize(0) < 1 || wt.getDimSize(1) < kGemmStrip)
      return rewriter.notifyMatchFailure(op, "weight is not a dense f32 [K, N] constant, N >= 32");
    if (!onlyMatmulWeight(op.getRhs()))
      return rewriter.notifyMatchFailure(op, "another op reads the weight, or an lhs is a vector");
    const int64_t K = wt.getDimSize(0), N = wt.getDimSize(1);
    const int64_t strips = (N + kGemmStrip - 1) / kGemmStrip;
    // [n / 32, k, n % 32] = w[k, n]; zeros past N.
    auto values = dense.getValues<float>();
    auto w = blockedConstant(rewriter, c, {strips, K, kGemmStrip}, N, K, kGemmStrip,
                             [&](int64_t n, int64_t k) {
                               return values[dense.isSplat() ? 0 : k * N + n];
                             });
    for (mlir::Operation *user : llvm::to_vector(op.getRhs().getUsers())) {
      auto mm = cast<tg::MatmulOp>(user);
      rewriter.updateRootInPlace(mm, [&] {
        mm.getRhsMutable().assign(w);
        mm.setWeightBlockAttr(rewriter.getI64IntegerAttr(kGemmStrip));
      });
    }
    return mlir::success();
  }
};

/// Output channels per block of a blocked conv weight: one 16-float vector.
constexpr int64_t kConvBlock = 16;
/// Fewest output channels the lanes kernel takes: from 13 the positions-in-lanes kernel
/// (tg_conv_direct2d, 4 channels per block) computes 16 channels too, so the lanes kernel
/// wastes no more (detector_tiny's 15-channel heads: 207 -> 191 us); at 12 it computes 12
/// against 16 (its 12-channel heads: 159 direct, 189 in lanes). Storing channels last (a
/// transpose folded in) it takes 8 and up: the stores are masked vectors either way.
constexpr int64_t kMinLanesOutputs = 13, kMinLanesOutputsLast = 8;

/// True for a permutation that moves dim 1 last and keeps the others in order: [0, 2, .., 1].
bool movesChannelsLast(const std::vector<int64_t> &perm) {
  const size_t r = perm.size();
  if (r < 3 || perm[0] != 0 || perm[r - 1] != 1)
    return false;
  for (size_t i = 1; i + 1 < r; ++i)
    if (perm[i] != (int64_t)i + 1)
      return false;
  return true;
}

/// True when a transpose that moves the channels last is `op`'s only reader
/// (StoreConvChannelsLast folds it in).
bool feedsChannelsLast(tg::ConvOp op) {
  if (!op.getResult().hasOneUse())
    return false;
  auto t = dyn_cast<tg::TransposeOp>(*op.getResult().getUsers().begin());
  return t && movesChannelsLast(intsOf(t.getPerm()));
}

/// The convolutions the CPU's lanes kernel (tg_conv_lanes2d) runs: f32, group 1, 1-D or 2-D,
/// at least 13 output channels (8 when it stores channels last), a window of 2 to 49 taps (unstrided 1x1 convolutions are
/// GEMMs; strided ones run here) with strides and dilations up to 4. Strided stems with few input channels too: no stride phases
/// to build (cnn_small's 19 -> 16 us, detector_tiny's 73 -> 53).
bool lanesConv(tg::ConvOp op) {
  auto x = op.getInput().getType().cast<RankedTensorType>();
  auto w = op.getWeight().getType().cast<RankedTensorType>();
  auto y = op.getType().cast<RankedTensorType>();
  if (op.getWeightBlock() || op.getGroup() != 1 || !x.getElementType().isF32() ||
      !w.getElementType().isF32() || !y.getElementType().isF32() || x.getRank() < 3 ||
      x.getRank() > 4 ||
      y.getDimSize(1) < (feedsChannelsLast(op) ? kMinLanesOutputsLast : kMinLanesOutputs))
    return false;
  int64_t taps = 1;
  for (int64_t d = 2; d < w.getRank(); ++d)
    taps *= w.getDimSize(d);
  auto within = [](mlir::ArrayAttr a) {
    return llvm::all_of(a.getAsValueRange<mlir::IntegerAttr>(),
                        [](const llvm::APInt &v) { return v.sge(1) && v.sle(4); });
  };
  // A 1x1 window runs as a GEMM, unless strided (a downsampling shortcut: the generic loops
  // took 4.5 µs for cnn_small's 32k multiply-adds).
  const bool strided = llvm::any_of(op.getStrides().getAsValueRange<mlir::IntegerAttr>(),
                                    [](const llvm::APInt &v) { return v.sgt(1); });
  return (taps >= 2 || strided) && taps <= 49 && within(op.getStrides()) &&
         within(op.getDilations());
}

struct BlockConvWeight : public Rule<tg::ConvOp> {
  explicit BlockConvWeight(mlir::MLIRContext *ctx) : Rule(ctx, "BlockConvWeight") {}

  LogicalResult apply(tg::ConvOp op, PatternRewriter &rewriter) const override {
    if (!lanesConv(op))
      return rewriter.notifyMatchFailure(op, "not an f32 group-1 1-D/2-D convolution with >= 13 "
                                             "outputs (8 storing channels last) and a 2-49 tap "
                                             "window");
    auto c = op.getWeight().getDefiningOp<tg::ConstantOp>();
    if (!c || !op.getWeight().hasOneUse())
      return rewriter.notifyMatchFailure(op, "weight is not a constant only this conv reads");
    auto dense = c.getValue().dyn_cast<mlir::DenseElementsAttr>();
    if (!dense)
      return rewriter.notifyMatchFailure(op, "weight is not dense");
    auto wt = op.getWeight().getType().cast<RankedTensorType>();
    const int64_t M = wt.getDimSize(0), inner = wt.getNumElements() / M;
    const int64_t blocks = (M + kConvBlock - 1) / kConvBlock;
    llvm::SmallVector<int64_t> shape(wt.getShape().begin(), wt.getShape().end());
    shape[0] = blocks;
    shape.push_back(kConvBlock);
    // [m / 16, c, k..., m % 16] = w[m, c, k...]; zeros past M.
    auto values = dense.getValues<float>();
    auto w = blockedConstant(rewriter, c, shape, M, inner, kConvBlock, [&](int64_t m, int64_t t) {
      return values[dense.isSplat() ? 0 : m * inner + t];
    });
    rewriter.updateRootInPlace(op, [&] {
      op.getWeightMutable().assign(w);
      op.setWeightBlockAttr(rewriter.getI64IntegerAttr(kConvBlock));
    });
    return mlir::success();
  }
};

struct StoreConvChannelsLast : public Rule<tg::TransposeOp> {
  explicit StoreConvChannelsLast(mlir::MLIRContext *ctx) : Rule(ctx, "StoreConvChannelsLast") {}

  LogicalResult apply(tg::TransposeOp op, PatternRewriter &rewriter) const override {
    auto conv = op.getInput().getDefiningOp<tg::ConvOp>();
    if (!conv || !conv.getWeightBlock() || conv.getChannelsLast())
      return rewriter.notifyMatchFailure(op, "input is not a blocked (lanes kernel) convolution");
    if (!feedsChannelsLast(conv))
      return rewriter.notifyMatchFailure(op, "not a channels-last permutation, or another op "
                                             "reads the convolution's NCHW result");
    rewriter.setInsertionPoint(op);
    auto last = rewriter.create<tg::ConvOp>(conv.getLoc(), op.getType(), conv->getOperands(),
                                            conv->getAttrs());
    last.setChannelsLastAttr(rewriter.getUnitAttr());
    rewriter.replaceOp(op, last.getResult());
    rewriter.eraseOp(conv);
    return mlir::success();
  }
};

struct CpuWeightLayoutPass : public CpuWeightLayoutBase<CpuWeightLayoutPass> {
  CpuWeightLayoutPass() = default;
  explicit CpuWeightLayoutPass(bool tiles) { gemmTiles = tiles; }

  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<StoreLinearWeightKN, BlockConvWeight, StoreConvChannelsLast>(&getContext());
    patterns.add<StoreMatmulWeightStrips>(&getContext(), gemmTiles);
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createCpuWeightLayoutPass() {
  return std::make_unique<CpuWeightLayoutPass>();
}

std::unique_ptr<mlir::Pass> createCpuWeightLayoutPass(bool gemmTiles) {
  return std::make_unique<CpuWeightLayoutPass>(gemmTiles);
}

} // namespace tgc
