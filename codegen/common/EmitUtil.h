// EmitUtil.h — small helpers shared by the CPU and CUDA kernel emitters: static shapes of values,
// (broadcast) strides and C/C++ literals.
#ifndef TGC_CODEGEN_COMMON_EMITUTIL_H
#define TGC_CODEGEN_COMMON_EMITUTIL_H

#include "compiler/dialect/Shapes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tgc::codegen {

/// Product of dims [from, to) of `s` (1 for an empty range).
int64_t product(const Shape &s, size_t from = 0, size_t to = SIZE_MAX);
/// The static shape of a ranked-tensor value.
Shape shapeOf(mlir::Value v);
/// Row-major strides (elements).
Shape contiguousStrides(const Shape &s);
/// Strides (elements) reading `in` at the coordinates of `out`, numpy-broadcast (right-aligned).
Shape broadcastStrides(const Shape &in, const Shape &out);
/// Integer literal valid in C++ and CUDA C++ (LL suffix where needed, INT64_MIN spelled safely).
std::string str(int64_t v);
/// The ONNX node names a location carries (NameLoc, FusedLoc, CallSiteLoc), deduplicated,
/// comma-separated: the label of the kernel an op (or a fused group) became.
std::string locationNames(mlir::Location loc);
/// "{a, b, c}" ("{0}" for an empty list, so the array is never zero-sized).
std::string intArray(const Shape &v);

/// How a reduce_* op (its operand 0 and "axes" attribute) walks its row-major input: the kept
/// dims and their input strides, the reduced dims of size > 1 as (size, stride) pairs with
/// adjacent contiguous ones merged, and the number of elements reduced per output.
struct ReduceLayout {
  Shape kept, keptStrides;
  std::vector<std::pair<int64_t, int64_t>> rdims;
  int64_t count = 1;
};
ReduceLayout reduceLayout(mlir::Operation *reduceOp);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_EMITUTIL_H
