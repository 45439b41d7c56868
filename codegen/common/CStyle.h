// CStyle.h — the C-family kernel writer both backends derive from, in the manner of tinygrad's
// renderer/cstyle.py: one `CKernel` holding what a kernel being written needs on any target
// (its parameters' pointers, constants, leaves, element expressions, the element body of an
// elementwise loop) and a `CTarget` naming how a target spells what differs (the error prefix,
// half types, constant arrays, literals, limits). The CPU emitter (C++ with OpenMP) and the CUDA
// emitter (CUDA C++ for NVRTC) are thin subclasses: each adds its loops and its kernel frame.
// An op family written against CKernel (codegen/common/*Emit.cpp) is written once for both.
#ifndef TGC_CODEGEN_COMMON_CSTYLE_H
#define TGC_CODEGEN_COMMON_CSTYLE_H

#include "codegen/common/EmitUtil.h"
#include "codegen/planning/PlanBuffers.h"
#include "compiler/dialect/Shapes.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tgc::codegen {

/// How one C-family target spells what the shared emitters write: plain data, one constant per
/// backend (cpuTarget(), cudaTarget()). In the spellings of limits, `$` stands for the C type.
struct CTarget {
  const char *backend;     ///< prefix of every error ("CPU backend")
  bool halfTypes;          ///< f16/bf16 are storage types here (f16Type, bf16Type)
  const char *constArray;  ///< declaration prefix of a constant array at file scope
  bool roundsF32Literals;  ///< f32 literals are rounded to float before printing
  const char *nanF32, *nanF64, *infF32, *infF64; ///< NaN and +infinity literals
  const char *infinityOf;  ///< +infinity of a float type `$`
  const char *lowestOf;    ///< the lowest value of an integer type `$`
  const char *highestOf;   ///< the highest value of an integer type `$`
  const char *f16Type = "__half";         ///< the f16 storage type, where halfTypes
  const char *bf16Type = "__nv_bfloat16"; ///< the bf16 storage type, where halfTypes

  /// Exact literal of `v` as float (f32) or double, NaN and infinities included ("%a" hex).
  std::string floatLiteral(double v, bool f32) const;
  std::string infinity(const std::string &T) const { return spell(infinityOf, T); }
  std::string lowest(const std::string &T) const { return spell(lowestOf, T); }
  std::string highest(const std::string &T) const { return spell(highestOf, T); }
  /// `pattern` with `$` replaced by `T`.
  static std::string spell(const char *pattern, const std::string &T);
};

/// "<backend>: msg (op 'tg.x' at loc)".
llvm::Error opError(const CTarget &t, mlir::Operation *op, const llvm::Twine &msg);

/// C type of a tg element type. f16/bf16 (CUDA's `__half`, `__nv_bfloat16`; the CPU prelude's
/// `tg_f16`, `tg_bf16`)
/// are storage types only: values are loaded into float (`ld`), computed in float, and rounded
/// to nearest even on store (`st`).
struct CType {
  std::string name;
  bool isFloat = false, isBool = false;
  bool lowp = false; ///< f16 or bf16
  /// Type that element math runs in: float for f16/bf16, else the type itself.
  std::string calc() const { return lowp ? "float" : name; }
  /// Expression `e` (of this type) as a `calc()` value.
  std::string ld(const std::string &e) const { return lowp ? "tg_ld(" + e + ")" : e; }
  /// `calc()` expression `e` converted to this type.
  std::string st(const std::string &e) const {
    return lowp ? "tg_st<" + name + ">(" + e + ")" : "(" + name + ")(" + e + ")";
  }
};
llvm::Expected<CType> ctypeOf(const CTarget &t, mlir::Type type, mlir::Operation *op);
llvm::Expected<CType> ctypeOf(const CTarget &t, mlir::Value v, mlir::Operation *op);
/// Literals of every element of a dense constant (one when splat); f16/bf16 values as float
/// literals where the target has those types (exact: both are subsets of f32).
llvm::Expected<std::vector<std::string>> literalsOf(const CTarget &t, mlir::DenseElementsAttr a,
                                                    mlir::Operation *op);

/// Reading through a row gather (CUDA's gatherReadable): row r of the operand is row idx[r] of a
/// table of `rows` rows of `cols` elements, which the leaf's `ptr` then points at.
struct GatherRead {
  std::string idx; ///< the index parameter; empty: not a gather
  std::string out; ///< a norm's parameter to store the gathered rows to (later ops read them)
  int64_t rows = 0, cols = 0;
};

/// A value read by elementwise code: a buffer (kernel argument, constant array or a temporary)
/// or a splat literal.
struct Leaf {
  Shape shape;
  CType ct;
  std::string ptr;   ///< pointer expression; empty for splats
  std::string splat; ///< literal when splat
  GatherRead gather; ///< read through a row gather (ptr: its table)
};

/// A tg.fused kernel taken apart (CKernel::fusedParts).
struct FusedParts {
  std::vector<std::pair<mlir::Value, Leaf>> leaves; ///< arguments the ops read, constants
  mlir::Operation *gemm = nullptr;  ///< "gemm"/"conv" kind: its first op (linear, matmul / conv)
  std::vector<unsigned> gemmArgs;   ///< the kernel operand each GEMM operand is
  std::vector<mlir::Operation *> ops; ///< the elementwise ops, in order
  mlir::Value result;               ///< what the kernel yields
};

/// The rows of a row normalization (layer_norm, rms_norm over dims [axis, rank) of x): R rows of D
/// elements, and its scale's and bias's reads of element j of row r ("" when absent).
struct NormRows {
  Shape x;
  int64_t axis = 0, R = 0, D = 0;
  std::string scale, bias;
};

/// One kernel being written: the target-independent half of both backends' builders.
struct CKernel {
  using Body = std::function<void(Code &, const std::vector<std::string> &)>;

  CKernel(const CTarget &target, const BufferPlan &plan, mlir::Operation *root, int &constants)
      : target(target), plan(plan), root(root), constants(constants) {}
  virtual ~CKernel() = default;

  const CTarget &target;
  const BufferPlan &plan; ///< where every value of the function lives
  mlir::Operation *root;
  int &constants; ///< constant arrays written by the emitter so far (their names: tgc_k<n>)
  std::string globals, body;
  Code c{body};
  std::vector<std::string> inPtr, outPtr; ///< per operand / result; "" for inlined constants
  std::string it = "int64_t";             ///< index type of the kernel
  int vars = 0;

  std::string fresh(const std::string &p) { return p + std::to_string(vars++); }
  llvm::Error error(mlir::Operation *op, const llvm::Twine &msg) const {
    return opError(target, op, msg);
  }
  llvm::Expected<CType> ctype(mlir::Value v, mlir::Operation *op) const {
    return ctypeOf(target, v, op);
  }

  /// Items of the last loop()/openParallel() (CUDA: one thread each, its grid's size).
  int64_t items = 0;

  /// A loop over every element of `shape`, spread over the target's threads; operand k is read
  /// at `bases[k] + Σ coord_d * strides[k][d]`, and `body` receives one offset per operand.
  /// `cost` is a rough per-element cost (the CPU's parallel threshold).
  void loop(const Shape &shape, const std::vector<Shape> &strides,
            const std::vector<std::string> &bases, const Body &body, int64_t cost = 1) {
    items = product(shape);
    writeLoop(shape, strides, bases, body, cost);
  }
  /// Opens `for (var in [0, n))` spread over the target's threads (`work`: the whole loop's
  /// rough cost); the caller writes the body and closes it.
  void openParallel(const std::string &var, int64_t n, int64_t work) {
    items = n;
    writeOpenParallel(var, n, work);
  }
  /// The targets' spellings of the two loops.
  virtual void writeLoop(const Shape &shape, const std::vector<Shape> &strides,
                         const std::vector<std::string> &bases, const Body &body,
                         int64_t cost) = 0;
  virtual void writeOpenParallel(const std::string &var, int64_t n, int64_t work) = 0;

  /// Names the root's operands in0, in1, ... and its results out0, ... (inPtr, outPtr; "" for an
  /// operand the plan inlines, a constant written into the kernel) and calls `bind(name, value,
  /// its C type, whether a result)` for each named one. An operand without storage is an error.
  llvm::Error bindOperands(
      const std::function<void(const std::string &, mlir::Value, const CType &, bool)> &bind);
  /// What goes before the kernel's signature: its constant arrays, then comments naming it
  /// (`label`) and its operands' types.
  std::string preamble(const std::string &label) const;
  /// Leaf for operand `i` of the root op (its buffer, or a constant written into the kernel).
  llvm::Expected<Leaf> operandLeaf(unsigned i);
  /// Leaves of all the root's operands (an elementwise op's).
  llvm::Expected<std::vector<std::pair<mlir::Value, Leaf>>> operandLeaves();
  /// Where operand `i` is read through a row gather (CUDA); not one by default.
  virtual GatherRead readThroughGather(unsigned i) { return {}; }
  /// The parts of tg.fused kernel `fused` ("pointwise", or "gemm": a GEMM whose operands are
  /// buffered kernel operands, then its epilogue); arguments only the GEMM reads are no leaves.
  llvm::Expected<FusedParts> fusedParts(mlir::Operation *fused);
  /// `op`'s rows and parameter reads (a parameter indexed through a table adds a constant array);
  /// refuses a non-float type, and an rms_norm scale that is neither per column nor one element.
  llvm::Expected<NormRows> normRows(mlir::Operation *op, const CType &ct);
  /// Whether the target's GEMMs read a matmul weight stored in strips (tg.matmul's
  /// weight_block, the CPU's layout); gemmOf refuses one where they do not.
  virtual bool readsWeightStrips() const { return false; }
  /// The problem of GEMM `op`: a linear (x [..., K] times w [N, K]ᵀ: M the product of x's
  /// leading dims, one batch) or a matmul (matmulDims; a weight in strips as the [K, N] it
  /// stands for). Refused when it is neither, a matmul's batch dims do not broadcast, or its
  /// weight is in strips the target does not read.
  llvm::Expected<MatmulDims> gemmOf(mlir::Operation *op);
  /// Leaf for a constant written into the kernel (splat literal or a constant array).
  llvm::Expected<Leaf> constantLeaf(mlir::Value v, mlir::Operation *owner);
  /// `op` (elementwise) applied to the expressions `a` of its operands, in `calc()` types.
  llvm::Expected<std::string> elemExpr(mlir::Operation *op, const std::vector<std::string> &a);
  /// Refuses `ops` computing `result` from `leaves` when a shape does not broadcast to the result
  /// or an element expression cannot be written, before any loop is.
  llvm::Error checkElementwise(llvm::ArrayRef<mlir::Operation *> ops,
                               const std::vector<std::pair<mlir::Value, Leaf>> &leaves,
                               mlir::Value result);
  /// Lines computing one element of `result`: the leaves (buffers read through `load(leaf
  /// index)`, splats as literals), then the ops in order. Returns the result's expression in its
  /// storage type; a missing operand sets `error`.
  std::string elementLines(Code &c, llvm::ArrayRef<mlir::Operation *> ops,
                           const std::vector<std::pair<mlir::Value, Leaf>> &leaves,
                           mlir::Value result, const std::function<std::string(size_t)> &load,
                           llvm::Error &error);
};

/// The literal of `value` in type `ct` (a pad or fill value): a float literal, 0/1 for bool,
/// else the integer.
std::string valueLiteral(const CTarget &t, const CType &ct, double value);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_CSTYLE_H
