// Stacking.cpp — stacked/concatenated weight constants for horizontal fusion (see Stacking.h).
#include "passes/horizontal/Stacking.h"

#include "compiler/interp/Interpreter.h"
#include "mlir/IR/Matchers.h"

#include <cstring>

namespace tgc {

std::optional<mlir::ElementsAttr> constantOf(mlir::Value v) {
  mlir::Attribute attr;
  if (!v || !mlir::matchPattern(v, mlir::m_Constant(&attr)))
    return std::nullopt;
  if (auto e = attr.dyn_cast<mlir::ElementsAttr>())
    return e;
  return std::nullopt;
}

mlir::DenseElementsAttr concatConstants(llvm::ArrayRef<mlir::ElementsAttr> parts,
                                        mlir::RankedTensorType type, int64_t zeroElems) {
  auto dtype = dtypeOf(type.getElementType());
  if (!dtype) {
    llvm::consumeError(dtype.takeError());
    return {};
  }
  HostTensor out = HostTensor::zeros(*dtype, type.getShape().vec());
  size_t at = 0, elem = dtypeSize(*dtype);
  for (mlir::ElementsAttr p : parts) {
    if (!p) {
      at += zeroElems * elem; // zeros() already filled them
      continue;
    }
    HostTensor t = tensorFromAttr(p);
    if (t.dtype != *dtype || at + t.data.size() > out.data.size())
      return {};
    std::memcpy(out.data.data() + at, t.data.data(), t.data.size());
    at += t.data.size();
  }
  if (at != out.data.size())
    return {};
  return attrFromTensor(out, type);
}

mlir::DenseElementsAttr stackTransposed(llvm::ArrayRef<mlir::ElementsAttr> weights,
                                        mlir::RankedTensorType type) {
  auto dtype = dtypeOf(type.getElementType());
  if (!dtype) {
    llvm::consumeError(dtype.takeError());
    return {};
  }
  auto shape = type.getShape();
  if (shape.size() != 3 || (int64_t)weights.size() != shape[0])
    return {};
  int64_t K = shape[1], M = shape[2];
  size_t elem = dtypeSize(*dtype);
  HostTensor out = HostTensor::zeros(*dtype, shape.vec());
  for (size_t s = 0; s < weights.size(); ++s) {
    HostTensor w = tensorFromAttr(weights[s]);
    if (w.dtype != *dtype || w.numel() != K * M)
      return {};
    uint8_t *dst = out.data.data() + s * K * M * elem;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k)
        std::memcpy(dst + (k * M + m) * elem, w.data.data() + (m * K + k) * elem, elem);
  }
  return attrFromTensor(out, type);
}

} // namespace tgc
