// ConvertPrecision.cpp — `tgc-convert-precision`: f32 → f16/bf16 inside, f32 at the edges.
//
// A whole-function type change, not a rule set: every f32 tensor type in the body is swapped for
// the target type in place (results, block arguments of tg.fused regions, constants' values),
// then casts are put at the boundary. Doing it as one sweep keeps every intermediate IR valid
// (no op ever sees mixed f32/f16 operands) and leaves cleanup to the cast rules.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "passes/precision/Passes.h"
#include "runtime/Tensor.h"

#include <cstring>
#include <vector>

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/precision/Passes.h.inc"

/// `t` with its element type replaced when it is f32; otherwise `t`.
mlir::Type convert(mlir::Type t, mlir::FloatType to) {
  auto tensor = t.dyn_cast<mlir::RankedTensorType>();
  if (!tensor || !tensor.getElementType().isF32())
    return t;
  return mlir::RankedTensorType::get(tensor.getShape(), to);
}

/// The constant's values converted to `to` (round to nearest even). Works on raw bytes: a
/// per-element APFloat conversion took ~10 s for bert_base's 110 M weights.
mlir::DenseElementsAttr convertConstant(mlir::DenseElementsAttr value, mlir::FloatType to) {
  auto type = convert(value.getType(), to).cast<mlir::ShapedType>();
  bool bf16 = to.isBF16();
  if (value.isSplat()) {
    float f = value.getSplatValue<float>();
    uint16_t bits = bf16 ? floatToBf16(f) : floatToHalf(f);
    return mlir::DenseElementsAttr::get(
        type, llvm::APFloat(to.getFloatSemantics(), llvm::APInt(16, bits)));
  }
  llvm::ArrayRef<char> raw = value.getRawData();
  size_t n = raw.size() / sizeof(float);
  std::vector<uint16_t> out(n);
  const char *src = raw.data();
  for (size_t i = 0; i < n; ++i) {
    float f;
    std::memcpy(&f, src + i * sizeof(float), sizeof(float));
    out[i] = bf16 ? floatToBf16(f) : floatToHalf(f);
  }
  return mlir::DenseElementsAttr::getFromRawBuffer(
      type, llvm::ArrayRef<char>(reinterpret_cast<const char *>(out.data()), n * 2));
}

struct ConvertPrecisionPass : public ConvertPrecisionBase<ConvertPrecisionPass> {
  ConvertPrecisionPass() = default;
  explicit ConvertPrecisionPass(const std::string &p) { precision = p; }

  void runOnOperation() override {
    mlir::func::FuncOp fn = getOperation();
    mlir::MLIRContext *ctx = &getContext();
    mlir::FloatType to;
    if (precision == "fp16")
      to = mlir::FloatType::getF16(ctx);
    else if (precision == "bf16")
      to = mlir::FloatType::getBF16(ctx);
    else {
      fn.emitError() << "tgc-convert-precision: precision must be fp16 or bf16, not '"
                     << precision << "'";
      return signalPassFailure();
    }

    // 1. Retype everything in the body (constants get converted values).
    bool failed = false;
    fn.getBody().walk([&](mlir::Operation *op) {
      if (auto c = llvm::dyn_cast<tg::ConstantOp>(op)) {
        auto dense = c.getValue().dyn_cast<mlir::DenseElementsAttr>();
        if (!dense) {
          failed = true;
          op->emitError() << "tgc-convert-precision: constant is not dense";
          return;
        }
        if (dense.getType().getElementType().isF32())
          c.setValueAttr(convertConstant(dense, to));
      }
      for (mlir::Region &r : op->getRegions())
        for (mlir::Block &b : r)
          for (mlir::BlockArgument a : b.getArguments())
            a.setType(convert(a.getType(), to));
      for (mlir::OpResult r : op->getResults())
        r.setType(convert(r.getType(), to));
    });
    if (failed)
      return signalPassFailure();

    // 2. The edges: f32 arguments are cast in, f32 results cast out. A decode package's states
    // (`tg.state`, passes/decode) are not edges: the runtime keeps them between runs, so they
    // are stored at the inner precision (an f16 KV cache), neither cast in nor out.
    mlir::Block &entry = fn.getBody().front();
    mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(&entry);
    for (mlir::BlockArgument arg : entry.getArguments()) {
      mlir::Type inner = convert(arg.getType(), to);
      if (fn.getArgAttr(arg.getArgNumber(), "tg.state")) {
        arg.setType(inner);
        continue;
      }
      if (inner == arg.getType() || arg.use_empty())
        continue;
      auto cast = b.create<tg::CastOp>(arg.getLoc(), inner, arg);
      arg.replaceAllUsesExcept(cast.getResult(), cast);
    }
    auto ret = llvm::cast<mlir::func::ReturnOp>(entry.getTerminator());
    b.setInsertionPoint(ret);
    auto declared = fn.getFunctionType().getResults();
    llvm::SmallVector<mlir::Type> resultTypes(declared.begin(), declared.end());
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      mlir::Value v = ret.getOperand(i);
      if (fn.getResultAttr(i, "tg.state"))
        resultTypes[i] = v.getType();
      if (v.getType() == resultTypes[i])
        continue;
      ret.setOperand(i, b.create<tg::CastOp>(ret.getLoc(), resultTypes[i], v).getResult());
    }
    fn.setType(mlir::FunctionType::get(fn.getContext(), entry.getArgumentTypes(), resultTypes));
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createConvertPrecisionPass() {
  return std::make_unique<ConvertPrecisionPass>();
}

std::unique_ptr<mlir::Pass> createConvertPrecisionPass(const std::string &precision) {
  return std::make_unique<ConvertPrecisionPass>(precision);
}

} // namespace tgc
