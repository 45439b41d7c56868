// EliminateCasts.cpp — `tgc-eliminate-casts`: remove casts that change nothing.
//
// Exporters cast to the type a value already has, widen and narrow back (f16 -> f32 -> f16 around
// an op that was folded away), and cast one value to the same type in several places. Every
// removed cast is a kernel launch and a round trip through memory saved. Round trips are removed
// only where the first cast is exact (a widening), never f32 -> f16 -> f32, which rounds.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/cleanup/Passes.h"
#include "passes/common/Rules.h"

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/cleanup/Passes.h.inc"

mlir::Type elementOf(mlir::Value v) {
  return v.getType().cast<mlir::ShapedType>().getElementType();
}

/// Bits of precision a type holds exactly: mantissa bits (with the implicit one) for floats,
/// magnitude bits for integers. -1 for types this pass does not reason about.
int exactBits(mlir::Type t) {
  if (t.isF16())
    return 11;
  if (t.isBF16())
    return 8;
  if (t.isF32())
    return 24;
  if (t.isF64())
    return 53;
  if (auto i = t.dyn_cast<mlir::IntegerType>())
    return i.getWidth() == 1 ? 1 : (int)i.getWidth() - (i.isUnsigned() ? 0 : 1);
  return -1;
}

/// True when every value of `from` converts to `to` and back unchanged.
bool isExactWidening(mlir::Type from, mlir::Type to) {
  if (from == to)
    return true;
  auto fi = from.dyn_cast<mlir::IntegerType>(), ti = to.dyn_cast<mlir::IntegerType>();
  bool ff = from.isa<mlir::FloatType>(), tf = to.isa<mlir::FloatType>();
  if (ff && tf) {
    // f16 <-> bf16 differ in range and precision both ways; otherwise wider mantissa and range.
    if ((from.isF16() && to.isBF16()) || (from.isBF16() && to.isF16()))
      return false;
    return exactBits(to) >= exactBits(from) &&
           from.cast<mlir::FloatType>().getWidth() <= to.cast<mlir::FloatType>().getWidth();
  }
  if (fi && ti) {
    if (fi.getWidth() == 1)
      return true; // 0/1 round-trips through any integer (nonzero -> true)
    if (ti.getWidth() == 1)
      return false;
    // Signless counts as signed. unsigned -> signed needs one more bit; signed -> unsigned
    // loses the negatives.
    if (fi.isUnsigned() == ti.isUnsigned())
      return ti.getWidth() >= fi.getWidth();
    return fi.isUnsigned() && ti.getWidth() > fi.getWidth();
  }
  if (fi && tf) // integers whose magnitude fits the mantissa convert exactly
    return fi.getWidth() == 1 || exactBits(to) >= exactBits(from);
  return false; // float -> integer truncates
}

// cast(x : T) -> T  ==>  x
struct FoldCastToSameType : Rule<tg::CastOp> {
  FoldCastToSameType(mlir::MLIRContext *ctx) : Rule(ctx, "FoldCastToSameType") {}
  mlir::LogicalResult apply(tg::CastOp op, mlir::PatternRewriter &rewriter) const override {
    if (op.getInput().getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "cast changes the element type");
    rewriter.replaceOp(op, op.getInput());
    return mlir::success();
  }
};

// cast(cast(x : A) : B) : A  ==>  x   when A -> B is exact (f16->f32->f16, i32->i64->i32, ...)
struct FoldCastRoundTrip : Rule<tg::CastOp> {
  FoldCastRoundTrip(mlir::MLIRContext *ctx) : Rule(ctx, "FoldCastRoundTrip") {}
  mlir::LogicalResult apply(tg::CastOp op, mlir::PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<tg::CastOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not a cast");
    if (inner.getInput().getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "not a round trip back to the original type");
    if (!isExactWidening(elementOf(inner.getInput()), elementOf(inner.getResult())))
      return rewriter.notifyMatchFailure(op, "the first cast rounds: the round trip is not exact");
    rewriter.replaceOp(op, inner.getInput());
    return mlir::success();
  }
};

// cast(x) : T, cast(x) : T  ==>  one cast(x) : T (the first in the block)
struct MergeDuplicateCasts : Rule<tg::CastOp> {
  MergeDuplicateCasts(mlir::MLIRContext *ctx) : Rule(ctx, "MergeDuplicateCasts") {}
  mlir::LogicalResult apply(tg::CastOp op, mlir::PatternRewriter &rewriter) const override {
    tg::CastOp first = op;
    for (mlir::Operation *user : op.getInput().getUsers()) {
      auto other = llvm::dyn_cast<tg::CastOp>(user);
      if (other && other != op && other.getType() == op.getType() &&
          other->getAttrDictionary() == op->getAttrDictionary() && // (saturate)
          other->getBlock() == op->getBlock() && other->isBeforeInBlock(first))
        first = other;
    }
    if (first == op)
      return rewriter.notifyMatchFailure(op, "no earlier cast of the input to the same type");
    rewriter.replaceOp(op, first.getResult());
    return mlir::success();
  }
};

struct EliminateCastsPass : public EliminateCastsBase<EliminateCastsPass> {
  void runOnOperation() override {
    mlir::MLIRContext *ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    patterns.add<FoldCastToSameType, FoldCastRoundTrip, MergeDuplicateCasts>(ctx);
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createEliminateCastsPass() {
  return std::make_unique<EliminateCastsPass>();
}

} // namespace tgc
