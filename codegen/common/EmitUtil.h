// EmitUtil.h — small helpers shared by the CPU and CUDA kernel emitters: static shapes of values,
// (broadcast) strides and C/C++ literals.
#ifndef TGC_CODEGEN_COMMON_EMITUTIL_H
#define TGC_CODEGEN_COMMON_EMITUTIL_H

#include "compiler/dialect/Shapes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
class DenseElementsAttr;
} // namespace mlir

namespace tgc::codegen {

/// Indented code being appended to a string: how both emitters write a kernel's body.
struct Code {
  std::string &s;
  int ind = 1;
  void line(const std::string &t) {
    s.append(ind * 2, ' ');
    s += t;
    s += '\n';
  }
  void open(const std::string &t) {
    line(t.empty() ? "{" : t + " {");
    ++ind;
  }
  void close(const std::string &t = "}") {
    --ind;
    line(t);
  }
};

/// Product of dims [from, to) of `s` (1 for an empty range).
int64_t product(const Shape &s, size_t from = 0, size_t to = SIZE_MAX);
/// The static shape of a ranked-tensor value.
Shape shapeOf(mlir::Value v);
/// Row-major strides (elements).
Shape contiguousStrides(const Shape &s);
/// Strides (elements) reading `in` at the coordinates of `out`, numpy-broadcast (right-aligned).
Shape broadcastStrides(const Shape &in, const Shape &out);
/// The expression of the offset in `in` (numpy-broadcast to `out`) of the element of `out` at
/// flat index `idx` (an expression).
std::string broadcastIndex(const std::string &idx, const Shape &out, const Shape &in);
/// Integer literal valid in C++ and CUDA C++ (LL suffix where needed, INT64_MIN spelled safely).
std::string str(int64_t v);
/// `base + var * stride` as C, without the terms that vanish ("0" base, stride 0 or 1).
std::string offsetExpr(const std::string &base, const std::string &var, int64_t stride);
/// The ONNX node names a location carries (NameLoc, FusedLoc, CallSiteLoc), deduplicated,
/// comma-separated, each escaped (escapeText): the label of the kernel an op (or a fused group)
/// became. Model text reaches the emitters only through this and the plan's tensor names.
std::string locationNames(mlir::Location loc);
/// `// text` for generated source, with `text` made safe (safeText: escaped unless it already is),
/// so that no byte of it can end the comment. The one way an emitter writes a comment whose text
/// is not a literal (tests/lit/security checks the emitters for others).
std::string sourceComment(llvm::StringRef text);
/// A compiler's log (host compiler or NVRTC) cut to what a user needs: the first error with up to
/// four lines after it, and a count of the rest (warnings dropped); the whole log (at most 8 KB)
/// when it names no error.
std::string firstCompilerError(const std::string &log);
/// The integers of an I64ArrayAttr (strides, pads, kernel sizes of a tg op).
Shape intsOf(mlir::ArrayAttr a);
/// "{a, b, c}" ("{0}" for an empty list, so the array is never zero-sized).
std::string intArray(const Shape &v);
/// C name of an integer element type of 1 (as uint8_t) or 8 to 64 bits, signed or unsigned; ""
/// for any other type.
std::string integerCTypeName(mlir::Type t);
/// Literals of every element of a dense constant (one when splat): a float element type that
/// `floatOk` accepts through `floatLit(value, f32)` (f32: not f64), integers exactly (i1 as 0/1,
/// unsigned with ULL). Nullopt for any other element type.
std::optional<std::vector<std::string>>
denseLiterals(const mlir::DenseElementsAttr &a, const std::function<bool(mlir::Type)> &floatOk,
              const std::function<std::string(double, bool)> &floatLit);

/// The loop dims of an elementwise walk over `shape` reading operand k with `strides[k]`: unit
/// dims dropped and neighbours that are contiguous for every operand merged, outermost first,
/// as (extent, one stride per operand).
std::vector<std::pair<int64_t, Shape>> mergeLoopDims(const Shape &shape,
                                                     const std::vector<Shape> &strides);

/// How a reduce_* op (its operand 0 and "axes" attribute) walks its row-major input: the kept
/// dims and their input strides, the reduced dims of size > 1 as (size, stride) pairs with
/// adjacent contiguous ones merged, and the number of elements reduced per output.
struct ReduceLayout {
  Shape kept, keptStrides;
  std::vector<std::pair<int64_t, int64_t>> rdims;
  int64_t count = 1;
};
ReduceLayout reduceLayout(mlir::Operation *reduceOp);

/// Where a norm reads its scale or bias (shape `param`, leading 1s ignored) for element j of row
/// r of an input of shape `x` normalized over dims [axis, rank):
///  - `one`: a single element, [0];
///  - `perColumn`: one per position of the row, [j] (also a parameter of fewer dims that reads
///    the same way, e.g. [M] over normalized dims [1, M]);
///  - otherwise [rowOff + j] when `table` is empty, else [rowOff + table[j]]: `rowOff` is "0" plus
///    one "((r / a) % b) * c" term per row dim the parameter varies along (a parameter with more
///    dims than the normalized ones broadcasts against the whole input, e.g. [N, M] on
///    [rows, N, M] with axis -1; `rowDims`: it does).
struct NormParamIndex {
  bool one = false, perColumn = false, rowDims = false;
  std::string rowOff = "0";
  Shape table;
};
NormParamIndex normParamIndex(const Shape &x, int64_t axis, Shape param);

/// A matmul's problem, numpy-style: lhs [..., M, K] times rhs [..., K, N] (a 1-D operand has no
/// M or N), the batch dims broadcast (`batch`, NB = its product).
struct MatmulDims {
  int64_t M = 1, K = 0, N = 1, NB = 1;
  Shape lhsBatch, rhsBatch, batch;
};
/// Nullopt when the batch dims do not broadcast.
std::optional<MatmulDims> matmulDims(const Shape &lhs, const Shape &rhs);

/// The index of an attention mask of shape `mask` broadcast to [B, H, S, L], over the variables
/// b, h, s and t ("0" for a single element).
std::string attentionMaskIndex(const Shape &mask, const Shape &bhsl);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_EMITUTIL_H
