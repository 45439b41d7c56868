// Constants.cpp — compile-time rewrites of dense constants that graph rules share.
#include "passes/common/Constants.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cstring>
#include <vector>

namespace tgc {

std::optional<mlir::DenseElementsAttr> transpose2d(mlir::DenseElementsAttr a) {
  auto type = a.getType().cast<mlir::RankedTensorType>();
  auto outType =
      mlir::RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, type.getElementType());
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

} // namespace tgc
