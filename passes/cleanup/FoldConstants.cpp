// FoldConstants.cpp — `tgc-fold-constants`: evaluate all-constant ops with the interpreter.
//
// Folding through the reference interpreter (instead of a second set of folders) means every op
// the interpreter knows can be folded, with exactly the semantics the oracle checks against.
#include "compiler/dialect/TgDialect.h"
#include "compiler/interp/Interpreter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/cleanup/Passes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/cleanup/Passes.h.inc"

bool isFoldable(mlir::Operation *op, int64_t maxElements) {
  if (op->getDialect() == nullptr || op->getDialect()->getNamespace() != "tg")
    return false;
  // A loop is never folded: its trip count may be anything (the interpreter would run it).
  if (llvm::isa<tg::ConstantOp, tg::FusedOp, tg::YieldOp, tg::LoopOp>(op) ||
      op->getNumOperands() == 0)
    return false;
  if (!llvm::all_of(op->getOperands(), [](mlir::Value v) {
        return v.getDefiningOp<tg::ConstantOp>() != nullptr;
      }))
    return false;
  return llvm::all_of(op->getResultTypes(), [&](mlir::Type t) {
    auto rt = t.cast<mlir::RankedTensorType>(); // (no constant holds a float8 element)
    return rt.getNumElements() <= maxElements && !tg::isFloat8(rt.getElementType());
  });
}

struct FoldConstantsPass : public FoldConstantsBase<FoldConstantsPass> {
  void runOnOperation() override {
    // Program order: a chain of constant ops folds front to back in one sweep.
    for (mlir::Block &block : getOperation().getBody()) {
      for (mlir::Operation &opRef : llvm::make_early_inc_range(block)) {
        mlir::Operation *op = &opRef;
        if (!isFoldable(op, maxElements))
          continue;
        std::vector<HostTensor> operands;
        for (mlir::Value v : op->getOperands())
          operands.push_back(tensorFromAttr(v.getDefiningOp<tg::ConstantOp>().getValue()));
        auto results = evaluateOp(op, operands);
        if (!results) {
          op->emitError() << "constant folding failed: " << llvm::toString(results.takeError());
          return signalPassFailure();
        }
        mlir::OpBuilder b(op);
        for (auto [res, value] : llvm::zip(op->getResults(), *results)) {
          auto type = res.getType().cast<mlir::RankedTensorType>();
          auto c = b.create<tg::ConstantOp>(op->getLoc(), type, attrFromTensor(value, type));
          res.replaceAllUsesWith(c.getResult());
        }
        // Drop operands that only fed this op.
        llvm::SetVector<mlir::Operation *> defs;
        for (mlir::Value v : op->getOperands())
          defs.insert(v.getDefiningOp());
        op->erase();
        for (mlir::Operation *def : defs)
          if (def->use_empty())
            def->erase();
      }
    }
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createFoldConstantsPass() {
  return std::make_unique<FoldConstantsPass>();
}

} // namespace tgc
