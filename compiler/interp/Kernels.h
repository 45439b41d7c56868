// Kernels.h — the interpreter's kernels: plain C++ over HostTensor, no MLIR (internal header).
//
// Interpreter.cpp maps each `tg` op to one call here. Keeping the numerics free of MLIR headers
// keeps them quick to compile and easy to read next to the op semantics in TgOps.td. Every kernel
// takes its result shape/dtype from the caller (the op's result type) and returns an llvm::Error on
// bad data (out-of-range index, integer division by zero) instead of touching memory it should not.
#ifndef TGC_COMPILER_INTERP_KERNELS_H
#define TGC_COMPILER_INTERP_KERNELS_H

#include "compiler/dialect/Shapes.h"
#include "runtime/Tensor.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <vector>

namespace tgc::interp {

//===----------------------------------------------------------------------===//
// Indexing helpers
//===----------------------------------------------------------------------===//

/// Strides of `in` (row-major) as seen from the broadcast shape `out`: 0 on broadcast dims and on
/// the leading dims `in` lacks. `in` must broadcast to `out`.
std::vector<int64_t> broadcastStrides(const Shape &in, const Shape &out);

/// Checks that `in` broadcasts to `out` (numpy rules, `out` fixed); names `what` in the error.
llvm::Error checkBroadcast(const Shape &in, const Shape &out, const char *what);

/// Product of dims (no overflow check: shapes come from verified types).
int64_t product(const Shape &s, size_t begin = 0, size_t end = SIZE_MAX);

/// Calls f(i, offsets) for every row-major index i of `shape`, where offsets[k] is
/// base[k] + sum_d idx[d] * strides[k][d]. The innermost dim is a plain loop, outer dims an odometer.
template <size_t N, typename F>
void forEachIndex(const Shape &shape, const std::array<std::vector<int64_t>, N> &strides,
                  const std::array<int64_t, N> &base, F &&f) {
  int64_t total = product(shape);
  if (total == 0)
    return;
  size_t rank = shape.size();
  int64_t inner = rank ? shape[rank - 1] : 1;
  std::array<int64_t, N> innerStride{}, off = base;
  for (size_t k = 0; k < N; ++k)
    innerStride[k] = rank ? strides[k][rank - 1] : 0;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < total; i += inner) {
    std::array<int64_t, N> o = off;
    for (int64_t j = 0; j < inner; ++j) {
      f(i + j, o);
      for (size_t k = 0; k < N; ++k)
        o[k] += innerStride[k];
    }
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k)
        off[k] += strides[k][d];
      if (++idx[d] < shape[d])
        break;
      for (size_t k = 0; k < N; ++k)
        off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
  }
}

/// All elements as double (f16/bf16 decoded).
std::vector<double> toF64(const HostTensor &t);
/// All elements as int64 (floats truncated toward zero, NaN as 0; a u64 keeps its bits, so a
/// value above INT64_MAX reads negative: callers that compare, divide or convert check
/// isUnsignedDType).
std::vector<int64_t> toI64(const HostTensor &t);
/// Stores doubles, rounded to the dtype; integer dtypes truncate toward zero and saturate (NaN → 0).
void storeF64(HostTensor &t, const std::vector<double> &v);
/// Stores int64 values (their low bits); narrower integer dtypes wrap, floats convert.
void storeI64(HostTensor &t, const std::vector<int64_t> &v);
/// True for the integer dtypes (i8..i64, u8..u64) and bool.
bool isIntegerLike(DType t);
/// An error with a message (the caller prefixes the op and location).
llvm::Error kernelError(const llvm::Twine &msg);

//===----------------------------------------------------------------------===//
// Elementwise (Elementwise.cpp)
//===----------------------------------------------------------------------===//

enum class Unary {
  Neg, Abs, Sign, Exp, Log, Sqrt, Rsqrt, Reciprocal, Tanh, Sigmoid, Erf, Relu, Silu,
  Sin, Cos, Floor, Ceil, Round, Not, Gelu, GeluTanh, IsNan,
  Acos, Asin, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, // tg.math
  BitNot // tg.bitwise_not (integers only)
};
enum class Binary {
  Add, Sub, Mul, Div, Pow, Max, Min, Mod, Equal, Less, LessEqual, Greater, GreaterEqual,
  And, Or, Xor,
  BitAnd, BitOr, BitXor, ShiftLeft, ShiftRight // tg.bitwise (integers only)
};

/// Applies `kind` elementwise; the result has `outType` (bool for not/isnan, else the input's).
HostTensor unary(Unary kind, const HostTensor &x, DType outType);
/// Numpy-broadcasting binary op into a tensor of `outType` and `outShape`.
llvm::Expected<HostTensor> binary(Binary kind, const HostTensor &a, const HostTensor &b,
                                  DType outType, const Shape &outShape);
/// cond ? a : b with all three broadcast to `outShape`.
llvm::Expected<HostTensor> where(const HostTensor &cond, const HostTensor &a, const HostTensor &b,
                                 const Shape &outShape);
/// Element type conversion (float→int truncates toward zero, →bool is != 0).
/// Element type conversion; `saturate` (float8 results) as tg.cast's attribute.
HostTensor cast(const HostTensor &x, DType to, bool saturate = true);
/// Rotary embedding (see tg.rotary): x * cos + rotate(x) * sin, cos/sin broadcast to x; rotate
/// is rotate_half (-x2, x1) or, when `interleaved`, the pairwise (-x[2i+1], x[2i]).
llvm::Expected<HostTensor> rotary(const HostTensor &x, const HostTensor &cos, const HostTensor &sin,
                                  bool interleaved);
/// SwiGLU (see tg.swiglu): [..., 2N] → [..., N], silu(first half) * second half.
llvm::Expected<HostTensor> swiglu(const HostTensor &x);

//===----------------------------------------------------------------------===//
// Contractions (Contractions.cpp)
//===----------------------------------------------------------------------===//

/// Numpy matmul with rank-1 promotion and batch broadcasting.
llvm::Expected<HostTensor> matmul(const HostTensor &a, const HostTensor &b, const Shape &outShape);
/// x · wᵀ (+ bias), w [N, K]; `bias` may be null.
llvm::Expected<HostTensor> linear(const HostTensor &x, const HostTensor &w, const HostTensor *bias,
                                  const Shape &outShape);
struct ConvParams {
  std::vector<int64_t> strides, pads, dilations; ///< pads: [begins..., ends...]
  int64_t group = 1;
};
struct PoolParams {
  bool max = true; ///< else average
  std::vector<int64_t> kernel, strides, pads, dilations; ///< pads: [begins..., ends...]
  bool countIncludePad = false;
};
/// N-d max/average pooling, NC[D]HW (tg.pool).
llvm::Expected<HostTensor> pool(const HostTensor &x, const PoolParams &p, const Shape &outShape);
/// N-d convolution, NC[D]HW, weight [M, C/group, k...]; `bias` may be null.
llvm::Expected<HostTensor> conv(const HostTensor &x, const HostTensor &w, const HostTensor *bias,
                                const ConvParams &p, const Shape &outShape);

//===----------------------------------------------------------------------===//
// Normalizations and reductions (Reductions.cpp)
//===----------------------------------------------------------------------===//

enum class Reduce { Sum, Mean, Max, Min, Prod };

/// Reduces over `axes` (normalized, distinct); an empty list copies the input.
llvm::Expected<HostTensor> reduce(Reduce kind, const HostTensor &x, const std::vector<int64_t> &axes,
                                  const Shape &outShape);
/// Index of the first (or last) maximum along `axis`, as i64.
llvm::Expected<HostTensor> argmax(const HostTensor &x, int64_t axis, bool selectLast,
                                  const Shape &outShape);
/// Softmax (or log-softmax) along `axis`, max-subtracted.
llvm::Expected<HostTensor> softmax(const HostTensor &x, int64_t axis, bool log);
/// Layer normalization over dims [axis, rank); scale/bias may be null.
llvm::Expected<HostTensor> layerNorm(const HostTensor &x, const HostTensor *scale,
                                     const HostTensor *bias, int64_t axis, double epsilon);
/// RMS normalization over dims [axis, rank): x / sqrt(mean(x²) + eps) * scale (scale may be null).
llvm::Expected<HostTensor> rmsNorm(const HostTensor &x, const HostTensor *scale, int64_t axis,
                                   double epsilon);

//===----------------------------------------------------------------------===//
// Attention (Attention.cpp)
//===----------------------------------------------------------------------===//

/// Scaled dot-product attention (see tg.attention): q [B,Hq,S,D], k [B,Hkv,T,D],
/// v [B,Hkv,T,Dv] (with `bshd`: q [B,S,Hq,D], k [B,T,Hkv,D], v [B,T,Hkv,Dv], result
/// [B,S,Hq,Dv]), optional additive `mask` broadcasting to [B,Hq,S,T]; rows whose softmax is
/// undefined give 0. Accumulates in double with a max-subtracted softmax.
llvm::Expected<HostTensor> attention(const HostTensor &q, const HostTensor &k, const HostTensor &v,
                                     const HostTensor *mask, double scale, bool causal,
                                     bool bshd = false);

//===----------------------------------------------------------------------===//
// Data movement (Movement.cpp)
//===----------------------------------------------------------------------===//

llvm::Expected<HostTensor> reshape(const HostTensor &x, const Shape &outShape);
llvm::Expected<HostTensor> transpose(const HostTensor &x, const std::vector<int64_t> &perm);
llvm::Expected<HostTensor> slice(const HostTensor &x, const std::vector<int64_t> &starts,
                                 const std::vector<int64_t> &steps, const Shape &outShape);
llvm::Expected<HostTensor> concat(const std::vector<const HostTensor *> &xs, int64_t axis,
                                  const Shape &outShape);
llvm::Expected<std::vector<HostTensor>> split(const HostTensor &x, int64_t axis,
                                              const std::vector<Shape> &outShapes);
llvm::Expected<HostTensor> gather(const HostTensor &data, const HostTensor &indices, int64_t axis);
llvm::Expected<HostTensor> gatherElements(const HostTensor &data, const HostTensor &indices,
                                          int64_t axis);
llvm::Expected<HostTensor> expand(const HostTensor &x, const Shape &outShape);
llvm::Expected<HostTensor> pad(const HostTensor &x, const std::vector<int64_t> &pads, double value,
                               const Shape &outShape);

//===----------------------------------------------------------------------===//
// Indexing (Indexing.cpp)
//===----------------------------------------------------------------------===//

/// Running sum along `axis` (tg.cumsum); `exclusive` leaves the element out, `reverse` sums from
/// the end.
llvm::Expected<HostTensor> cumsum(const HostTensor &x, int64_t axis, bool exclusive, bool reverse);
enum class Scatter { None, Add, Mul, Max, Min };
/// data with each update combined into the element its index names along `axis`, in row-major
/// order of the indices (tg.scatter_elements); indices outside [-dim, dim) write nothing.
llvm::Expected<HostTensor> scatterElements(const HostTensor &data, const HostTensor &indices,
                                           const HostTensor &updates, int64_t axis,
                                           Scatter reduction);
/// The k largest (or smallest) elements along `axis` in order, lower index first among equals
/// (NaN larger than every number), and their i64 indices (tg.topk).
llvm::Expected<std::vector<HostTensor>> topk(const HostTensor &x, int64_t axis, int64_t k,
                                             bool largest);

//===----------------------------------------------------------------------===//
// Data-dependent extents (Dynamic.cpp): results at their upper bound, zero-padded, then count
//===----------------------------------------------------------------------===//

/// tg.nonzero: [rank, numel] i64 coordinates of the nonzero elements (row-major), then count.
llvm::Expected<std::vector<HostTensor>> nonzero(const HostTensor &x);
/// tg.unique along `axis`: y, indices, inverse, counts, count (see TgOps.td).
llvm::Expected<std::vector<HostTensor>> unique(const HostTensor &x, int64_t axis, bool sorted);
struct NmsParams {
  int64_t maxPerClass = 0;
  double iouThreshold = 0, scoreThreshold = 0;
  bool hasScoreThreshold = false, centerPointBox = false;
};
/// tg.nms: the selected [batch, class, box] rows, then count.
llvm::Expected<std::vector<HostTensor>> nms(const HostTensor &boxes, const HostTensor &scores,
                                            const NmsParams &p);

} // namespace tgc::interp

#endif // TGC_COMPILER_INTERP_KERNELS_H
