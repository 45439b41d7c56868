// PlanBuffers.h — buffer planning: where every value of `@main` lives at run time.
//
// Shared by the CPU and CUDA package writers: values computed by kernels get offsets in one
// activation arena (reused once a value is dead), weights get offsets in one blob, graph inputs
// stay in the caller's buffers, reshapes are views, and scalar/small constants feeding only
// elementwise code are inlined by codegen as literals. See PlanBuffers.cpp for the decisions.
#ifndef TGC_CODEGEN_PLANNING_PLANBUFFERS_H
#define TGC_CODEGEN_PLANNING_PLANBUFFERS_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace mlir::func {
class FuncOp;
}

namespace tgc {

/// Where one value's bytes live.
struct BufferLoc {
  enum Kind {
    Input,  ///< the caller's input `index` (a @main argument), at `offset`
    Arena,  ///< the activation arena at `offset`
    Weight, ///< the weights blob at `offset`
    Inline, ///< a constant that codegen writes into the kernel as literals (no buffer)
    State,  ///< decode packages: persistent state `index` (an argument with `tg.state`)
  };
  Kind kind = Arena;
  int64_t index = 0;
  int64_t offset = 0;
  int64_t bytes = 0;
};

/// The live range of one arena allocation, in top-level op positions (for tests and dumps).
struct ArenaInterval {
  mlir::Value value;   ///< the value that owns the allocation (reshape views share it)
  int64_t begin = 0;   ///< position of the defining op
  int64_t end = 0;     ///< position of the last op that reads it or a view of it
  int64_t offset = 0;
  int64_t bytes = 0;
};

/// Result of planning `@main`.
struct BufferPlan {
  /// Every top-level value of @main (arguments and op results) except unused constants.
  llvm::DenseMap<mlir::Value, BufferLoc> locs;
  /// tg.constant ops stored in the weights blob, by increasing offset.
  std::vector<mlir::Operation *> weights;
  std::vector<ArenaInterval> intervals;
  int64_t arenaBytes = 0;      ///< peak arena size (a multiple of the alignment)
  int64_t weightBytes = 0;     ///< weights blob size (a multiple of the alignment)
  int64_t unsharedBytes = 0;   ///< what the arena would need without reuse
  /// tg.slice and tg.split ops planned as views (planBuffers' cpuViews): no kernel runs them.
  llvm::DenseSet<mlir::Operation *> views;
};

/// Byte alignment of every arena and weights offset.
constexpr int64_t kBufferAlignment = 64;

/// Plans `fn` (normally @main). Fails on a value whose size cannot be computed. With `cpuViews`
/// (the CPU backend), a slice or split whose every result is one contiguous range of its input
/// is a view like a reshape, each result at an offset into its input's storage (viewOffsets).
llvm::Expected<BufferPlan> planBuffers(mlir::func::FuncOp fn, bool cpuViews = false);

/// The element offset of each result of a tg.slice or tg.split in its input when every result
/// is one contiguous range of the input; nullopt otherwise. A slice: unit steps, every dim
/// before the last sliced one of extent 1 in the result, every dim after it whole. A split:
/// every dim before its axis of extent 1.
std::optional<std::vector<int64_t>> viewOffsets(mlir::Operation *op);

/// True for tg ops computed one element at a time with numpy broadcasting (the ops a
/// "pointwise" kernel may contain): unary, binary, compare, logic, where, cast, isnan, gelu.
bool isElementwiseOp(mlir::Operation *op);

/// Bytes of a statically shaped tensor type (i1 takes one byte); -1 if unknown or overflowing.
int64_t tensorBytes(mlir::Type type);

} // namespace tgc

#endif // TGC_CODEGEN_PLANNING_PLANBUFFERS_H
