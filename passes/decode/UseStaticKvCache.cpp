// UseStaticKvCache.cpp — `tgc-use-static-kv-cache`: past/present key-value tensors → states.
//
// A decoder exported "with past" takes each layer's cache as an input and returns it grown by
// the new tokens (Concat(past, new) along the sequence axis). Generation then copies the cache
// through the host every token and grows every shape. A static cache of N positions kept by the
// runtime (a *state*) makes every step the same plan — one CUDA graph replayed per token. This
// pass rewrites one decode plan (prefill or step, see Passes.td) onto the states.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "passes/decode/Passes.h"

#include <map>

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/decode/Passes.h.inc"

using mlir::Value;

llvm::SmallVector<int64_t, 4> shapeOf(Value v) {
  auto t = v.getType().cast<mlir::RankedTensorType>();
  return {t.getShape().begin(), t.getShape().end()};
}

class UseStaticKvCachePass : public UseStaticKvCacheBase<UseStaticKvCachePass> {
public:
  void runOnOperation() override;

private:
  /// Rewrites state `k` (argument `past`, result `ri`); "" or why it cannot.
  std::string rewrite(int64_t k, mlir::BlockArgument past, unsigned ri, bool step, int64_t maxSeq,
                      Value positions);
};

std::string UseStaticKvCachePass::rewrite(int64_t k, mlir::BlockArgument past, unsigned ri,
                                          bool step, int64_t maxSeq, Value positions) {
  mlir::func::FuncOp fn = getOperation();
  mlir::Operation *ret = fn.getBody().front().getTerminator();
  Value present = ret->getOperand(ri);
  const auto ps = shapeOf(past);
  if (ps.size() != 4)
    return "the past cache is not [batch, heads, positions, head_dim]";
  // The new positions: Concat(past, new)'s second operand, or (prefill, an empty past folded
  // away) the present itself.
  auto cat = present.getDefiningOp<tg::ConcatOp>();
  const bool isCat = cat && cat.getInputs().size() == 2 && cat.getInputs()[0] == past &&
                     (cat.getAxis() == 2 || cat.getAxis() == -2);
  if (step && !isCat)
    return "its present is not Concat(past, new) along the positions axis";
  Value update = isCat ? cat.getInputs()[1] : present;
  const auto us = shapeOf(update);
  if (us.size() != 4 || us[0] != ps[0] || us[1] != ps[1] || us[3] != ps[3])
    return "the new keys/values do not match the cache's shape";
  const int64_t S = us[2];
  if ((step && ps[2] + S != maxSeq) || (!step && (ps[2] != 0 || S > maxSeq)))
    return "the cache length does not match --max-seq";

  mlir::OpBuilder b(ret);
  const mlir::Location loc = ret->getLoc();
  auto elem = past.getType().cast<mlir::RankedTensorType>().getElementType();
  auto stateType = mlir::RankedTensorType::get({ps[0], ps[1], maxSeq, ps[3]}, elem);
  const unsigned index = fn.getNumArguments();
  mlir::NamedAttribute attrs[] = {
      b.getNamedAttr("tg.name", fn.getArgAttr(past.getArgNumber(), "tg.name")),
      b.getNamedAttr("tg.state", b.getI64IntegerAttr(k))};
  fn.insertArgument(index, stateType, b.getDictionaryAttr(attrs), loc);
  Value state = fn.getArgument(index);

  // Slots: the position_ids value of each new token (a step), or 0..S-1 (prefill: padded
  // prompt positions carry position 0 and must not land on slot 0).
  auto i64 = b.getI64Type();
  auto column = mlir::RankedTensorType::get({1, 1, S, 1}, i64);
  Value slots;
  if (step) {
    b.setInsertionPoint(cat);
    slots = b.create<tg::ReshapeOp>(loc, column, positions);
  } else {
    llvm::SmallVector<int64_t> iota(S);
    for (int64_t s = 0; s < S; ++s)
      iota[(size_t)s] = s;
    slots = b.create<tg::ConstantOp>(loc, column,
                                     mlir::DenseElementsAttr::get(column, llvm::ArrayRef<int64_t>(iota)));
  }
  auto idxType = mlir::RankedTensorType::get(us, i64);
  Value idx = b.create<tg::ExpandOp>(loc, idxType, slots);
  Value written = b.create<tg::ScatterElementsOp>(loc, stateType, state, idx, update,
                                                  b.getI64IntegerAttr(2), b.getStringAttr("none"));
  if (step) {
    cat.getResult().replaceAllUsesWith(written);
    cat->erase();
  } else {
    ret->setOperand(ri, written);
  }
  fn.removeResultAttr(ri, b.getStringAttr("tg.dim_symbols"));
  // The past argument's last readers (a prefill's concat with the empty past) read zeros.
  if (!past.use_empty()) {
    b.setInsertionPointToStart(&fn.getBody().front());
    auto pastType = past.getType().cast<mlir::RankedTensorType>();
    Value empty = b.create<tg::ConstantOp>(
        loc, pastType, mlir::DenseElementsAttr::get(pastType, b.getZeroAttr(elem)));
    past.replaceAllUsesWith(empty);
  }
  fn.eraseArgument(past.getArgNumber());
  return "";
}

void UseStaticKvCachePass::runOnOperation() {
  mlir::func::FuncOp fn = getOperation();
  auto mode = fn->getAttrOfType<mlir::StringAttr>("tg.decode");
  auto maxSeq = fn->getAttrOfType<mlir::IntegerAttr>("tg.max_seq");
  if (!mode || !maxSeq)
    return;
  const bool step = mode.getValue() == "step";
  std::map<int64_t, mlir::BlockArgument> pasts;
  std::map<int64_t, unsigned> presents;
  Value positions;
  for (mlir::BlockArgument a : fn.getArguments()) {
    if (auto k = fn.getArgAttrOfType<mlir::IntegerAttr>(a.getArgNumber(), "tg.state"))
      pasts[k.getInt()] = a;
    auto name = fn.getArgAttrOfType<mlir::StringAttr>(a.getArgNumber(), "tg.name");
    if (name && name.getValue() == "position_ids")
      positions = a;
  }
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (auto k = fn.getResultAttrOfType<mlir::IntegerAttr>(i, "tg.state"))
      presents[k.getInt()] = i;
  if (step && (!positions || shapeOf(positions) != llvm::SmallVector<int64_t, 4>{1, 1})) {
    fn.emitError("a decode step needs a position_ids input of shape [1, 1]");
    return signalPassFailure();
  }
  for (auto &[k, past] : pasts) {
    auto it = presents.find(k);
    std::string why = it == presents.end() ? "it has no present output"
                                           : rewrite(k, past, it->second, step, maxSeq.getInt(),
                                                     positions);
    if (!why.empty()) {
      fn.emitError() << "cannot use a static cache for state " << k << ": " << why;
      return signalPassFailure();
    }
  }
  // The state results are whole caches now.
  mlir::Operation *ret = fn.getBody().front().getTerminator();
  fn.setType(mlir::FunctionType::get(fn.getContext(), fn.getArgumentTypes(),
                                     ret->getOperandTypes()));
}

} // namespace

std::unique_ptr<mlir::Pass> createUseStaticKvCachePass() {
  return std::make_unique<UseStaticKvCachePass>();
}

} // namespace tgc
