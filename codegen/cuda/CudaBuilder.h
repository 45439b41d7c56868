// CudaBuilder.h — internal: shape helpers and the per-op kernel builder shared by the CUDA
// emitter files (CudaKernels.cpp: elementwise, GEMM and data movement; CudaRowKernels.cpp:
// normalizations, reductions, attention and convolution).
#ifndef TGC_CODEGEN_CUDA_CUDABUILDER_H
#define TGC_CODEGEN_CUDA_CUDABUILDER_H

#include "codegen/cuda/CudaEmit.h"
#include "compiler/dialect/Shapes.h"
#include "compiler/dialect/TgDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/common/CStyle.h"
#include "codegen/common/EmitUtil.h"

namespace tgc::cuda {

// The shared emitter helpers (EmitUtil.h) and the C-family kernel (CStyle.h) by their own names.
using namespace codegen;

/// The CUDA spelling of C-family code (codegen/common/CStyle.h): CUDA C++ for NVRTC, with f16/bf16
/// storage types.
const codegen::CTarget &cudaTarget();


inline llvm::Error opError(mlir::Operation *op, const llvm::Twine &msg) {
  return codegen::opError(cudaTarget(), op, msg);
}
inline llvm::Expected<CType> ctypeOf(mlir::Type t, mlir::Operation *op) {
  return codegen::ctypeOf(cudaTarget(), t, op);
}
inline llvm::Expected<CType> ctypeOf(mlir::Value v, mlir::Operation *op) {
  return codegen::ctypeOf(cudaTarget(), v, op);
}
/// Exact literal of `v` as float (f32) or double, NaN/inf included.
inline std::string floatLiteral(double v, bool f32) { return cudaTarget().floatLiteral(v, f32); }

/// Indented code appended to a string.

/// The body of a rotary's grid loop over its input's shape, with `q` the offsets of (result, x,
/// cos, sin) (CudaKernels.cpp).
void rotaryElement(Code &c, tg::RotaryOp ro, const std::string &it, const std::string &out,
                   const std::string &x, const std::string &cs, const std::string &sn,
                   const std::vector<std::string> &q);

/// State of one op being lowered: its steps, and the kernel being written (a C-family kernel,
/// codegen::CKernel, whose loops are grid-stride loops).
struct KernelBuilder : codegen::CKernel {
  KernelEmitter &em;
  int index;
  std::string symbolBase, label;
  std::vector<EmittedStep> steps;

  // The kernel being written.
  std::vector<std::string> params;
  std::vector<StepArg> kargs;
  /// The body calls tg_pdl_begin() itself (after prefetching weights); otherwise endKernel puts
  /// the call first.
  bool bodyWaits = false;

  KernelBuilder(KernelEmitter &em, mlir::Operation *root, int index)
      : CKernel(cudaTarget(), em.plan_, root, em.constants_), em(em), index(index) {}

  void writeLoop(const Shape &shape, const std::vector<Shape> &strides,
                 const std::vector<std::string> &bases, const Body &body, int64_t) override {
    gridLoop(shape, strides, bases, body);
  }
  void writeOpenParallel(const std::string &var, int64_t n, int64_t) override {
    c.open("for (" + it + " " + var + " = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x; " +
           var + " < " + str(n) + "; " + var + " += (" + it + ")gridDim.x * blockDim.x)");
  }

  /// Dynamic shared memory per block: the body uses `extern __shared__ ... tg_dsm[]` (the runtime
  /// allows sizes over 48 KB per kernel).
  int64_t sharedBytes = 0;
  /// Blocks spread one per multiprocessor when the grid fits (plan.proto Step.one_block_per_sm).
  bool oneBlockPerSm = false;
  /// Blocks each multiprocessor should hold at once (__launch_bounds__' second argument: caps
  /// the registers per thread); 0 leaves it to the compiler.
  int64_t minBlocksPerSm = 0;
  /// Blocks per thread-block cluster along x (__cluster_dims__; sm_90 and later), 1 for none.
  int64_t clusterX = 1;
  /// Elements per thread of the last elementwise() loop (16-byte vectors: 8 f16/bf16, 4 f32).
  int64_t vecWidth = 1;
  /// The norm this kernel computes, when a GEMM might apply it instead (EmittedStep::norm).
  plan::NormDesc norm;
  /// The attention this kernel computes, when cuDNN might run it instead (EmittedStep).
  plan::AttentionDesc attention;

  /// Whether `v` lives in the weights blob (never written by any step: may be read before the
  /// kernel waits for its predecessor).
  bool isWeight(mlir::Value v) const {
    auto it = em.plan_.locs.find(v);
    return it != em.plan_.locs.end() && it->second.kind == BufferLoc::Weight;
  }

  /// Whether every buffer bound to the kernel so far (kargs) starts on a 16-byte boundary.
  bool argsAligned16() const {
    for (const StepArg &a : kargs) {
      auto loc = a.value ? em.plan_.locs.find(a.value) : em.plan_.locs.end();
      if (loc == em.plan_.locs.end() || (loc->second.offset + a.offset) % 16)
        return false;
    }
    return true;
  }

  /// Starts a kernel whose parameters are the root's buffered operands (in0...) and results
  /// (out0...).
  llvm::Error beginKernel();
  /// Adds a parameter `decl` (e.g. "const float *g") bound to `arg`.
  void addParam(const std::string &decl, StepArg arg);
  /// Finishes the kernel: appends its text to `code` and a launch step of `grid` × `block`.
  void endKernel(std::string &code, int64_t grid, int64_t block);
  /// Blocks for a grid-stride loop over `total` items.
  static int64_t gridFor(int64_t total, int64_t block = kBlock);

  /// Grid-stride loop over `shape`; operand k is read at `bases[k] + Σ coord_d·strides[k][d]`.
  /// `body` receives one offset expression per operand.
  void gridLoop(const Shape &shape, const std::vector<Shape> &strides,
                const std::vector<std::string> &bases,
                const std::function<void(Code &, const std::vector<std::string> &)> &body);

  llvm::Error elementwise(llvm::ArrayRef<mlir::Operation *> ops,
                          std::vector<std::pair<mlir::Value, Leaf>> leaves, mlir::Value result,
                          const std::string &out);

  llvm::Error emitOp(mlir::Operation *op, std::string &code);
  llvm::Error emitFused(mlir::Operation *op, std::string &code);
  /// GEMM steps computing linear/matmul `op` from `args` (its operands) into `out`.
  /// With `residual`, the GEMM also adds it (cuBLASLt's beta·C with beta = 1); `act` is a
  /// plan::GemmDesc::Activation applied in the GEMM's epilogue.
  llvm::Error emitGemm(mlir::Operation *op, const std::vector<StepArg> &args, StepArg out,
                       bool withBias, std::optional<StepArg> residual = std::nullopt, int act = 0);
  /// The tg.split that is the only reader of `lin` when it cuts the last axis into equal parts
  /// the planner placed one stride apart (returned in `strideBytes`), clear of `lin`'s operands:
  /// the GEMM then writes every part (emitSplitGemm) and the split emits nothing. Null otherwise.
  tg::SplitOp splitWrittenBy(tg::LinearOp lin, int64_t *strideBytes = nullptr) const;
  /// Kernels of a GEMM whose type no GEMM step takes (integers, f64; libraryGemm false), as
  /// loops (codegen/common/LoopGemmEmit): a standalone linear/matmul (`parts` null) as one
  /// kernel; a "gemm" tg.fused (`parts` its parts, the kernel begun) as the GEMM into its output
  /// or the scratch area, then, when it has an epilogue, a second kernel applying it
  /// (CudaLoopGemm.cpp).
  llvm::Error emitLoopGemmKernels(mlir::Operation *gemm, FusedParts *parts, std::string &code);
  /// A convolution: a CONV step (its own kernel, which the runtime may replace with cuDNN) into
  /// the output, or the scratch area when the epilogue changes shape or type; for a "conv"
  /// tg.fused (`parts`, the kernel begun) with an epilogue, a second kernel applying it
  /// (CudaConv.cpp).
  llvm::Error emitConv(mlir::Operation *root, tg::ConvOp conv, FusedParts *parts,
                       std::string &code);
  /// Writes the lines storing output element `idx` (a flat index) of a convolution, given its
  /// sum `acc` (in the accumulator type).
  using ConvStore = std::function<void(const std::string &idx, const std::string &acc)>;
  /// The loop of tgc's own convolution kernel: one thread per output element of `conv` (either
  /// layout: NC[D]HW or `nhwc`).
  void emitConvLoop(tg::ConvOp conv, const CType &ct, const std::string &x, const std::string &w,
                    const std::string &b, const ConvStore &store);
  /// A 2-D `nhwc` depthwise convolution (one input and one output channel a group): its loop,
  /// a thread per channel and strip of depthwiseStrip() outputs along W (CudaConv.cpp).
  static bool depthwiseNhwc(tg::ConvOp conv) {
    auto xt = conv.getInput().getType().cast<mlir::RankedTensorType>();
    auto wt = conv.getWeight().getType().cast<mlir::RankedTensorType>();
    return conv.getNhwc() && xt.getRank() == 4 && (int64_t)conv.getGroup() == xt.getDimSize(3) &&
           wt.getDimSize(0) == xt.getDimSize(3);
  }
  static int64_t depthwiseStrip(tg::ConvOp conv);
  void emitDepthwiseNhwcLoop(tg::ConvOp conv, const CType &ct, const std::string &x,
                             const std::string &w, const std::string &b, const ConvStore &store);
  llvm::Error emitSplitGemm(tg::LinearOp lin, tg::SplitOp sp, int64_t stride,
                            const std::vector<StepArg> &args);
  llvm::Error emitMovement(mlir::Operation *op, const CType &ct);
  /// A [1, 0, 2] transpose of a rank-3 tensor only moves rows between batches, so a batched GEMM
  /// can read its input in place of the copy (lhs rows B·K apart, batches K apart) when it is the
  /// only reader, right after it, and its output is clear of the input's buffer. The transpose
  /// then emits nothing.
  bool gemmReadsThrough(tg::TransposeOp t) const;
  /// After a batched GEMM step computing `v` (no epilogue kernel, no residual): when `v`'s only
  /// reader is the next op, a [1, 0, 2] transpose whose buffer is clear of the GEMM's operands, the
  /// GEMM writes the transposed layout (rows B·N apart, batches N apart) and the transpose emits
  /// nothing.
  void foldOutputTranspose(mlir::Value v);
  /// The op a normalization kernel applies to its output before storing it, in place of that
  /// op's own kernel: the norm's only reader, right after it, elementwise on the norm's result
  /// alone (tanh, a cast, an activation), writing a buffer clear of the norm's operands. Null
  /// otherwise.
  mlir::Operation *normEpilogue(mlir::Operation *norm) const;
  /// Whether the kernel of the op right after `g` reads through it, so `g` emits nothing: `g`
  /// takes rows of a 2-D table (axis 0; an embedding lookup), and the op is a layer/RMS norm
  /// over those rows (which also stores them where later ops read them: LLaMA's first residual)
  /// or, as the gather's only reader, an elementwise op or pointwise kernel whose result has the
  /// gather's shape (GPT-2's and BERT's position adds) — not a cast the transpose after it
  /// applies (that transpose would read the gather's result) — and what that kernel writes is
  /// clear of the table and the indices (the planner may reuse their bytes after the gather).
  /// The embedding and the kernel after it then take one kernel instead of two.
  bool gatherReadable(tg::GatherOp g) const;
  /// For operand `i` of the kernel, a gather read through (gatherReadable) right before it:
  /// binds in<i> to the gather's table and adds its indices as parameter gidx<i> (and, when
  /// later ops read the gather's result too, that result as gout<i>, which those ops then read
  /// as usual). Empty when operand `i` is not one.
  GatherRead readThroughGather(unsigned i) override;
  /// Lines that set int64_t `var` to the table row gathered row `row` reads: its index, wrapped
  /// if negative and clamped to the table, as the gather kernel reads it.
  void gatherRowLines(const GatherRead &g, const std::string &row, const std::string &var);
  /// The tg.rotary ops applied in the split's kernel while it moves the parts, or, when the GEMM
  /// before wrote the parts (`byGemm`), in one kernel in place of the split (emitSplitRotary): for
  /// each result of `sp`, the rotary that is its only reader (through reshape views), when the
  /// ops right after the split are just such rotaries and views, every rotary's part is a whole
  /// number of its rows, and every buffer the kernel writes is clear of the others and of what it
  /// reads (the planner keeps the split's input and parts and the rotaries' cos/sin live until
  /// the last rotary).
  /// Null for a result without one; empty when the rotaries keep their own kernels.
  std::vector<tg::RotaryOp> splitRotaries(tg::SplitOp sp) const;
  llvm::Error emitSplitRotary(tg::SplitOp sp, const std::vector<tg::RotaryOp> &rot, bool byGemm,
                              std::string &code);
  /// A tg.cast whose only reader is the transpose right after it, reading a buffer clear of the
  /// transpose's result: the transpose kernel converts while it moves, the cast emits nothing.
  bool castFoldsIntoTranspose(mlir::Operation *cast) const;
  /// A float reduce_* over one run of middle dims, [outer, rows, inner] -> [outer, inner], with
  /// at least kColumnReduceMinInner kept innermost elements and kColumnReduceMinRows rows (a
  /// channels-last global pool), and the number of blocks its rows are split over.
  struct ColumnReduce {
    int64_t outer = 1, rows = 1, inner = 1, splits = 1;
  };
  static constexpr int64_t kColumnReduceMinInner = 8, kColumnReduceMinRows = 32,
                           kColumnReduceBlocks = 264;
  std::optional<ColumnReduce> columnReduce(mlir::Operation *op) const;
  /// Its kernel: 32 outputs by 8 rows a block, the last block of a tile combining the splits'
  /// partials (CudaColumnReduce.cpp). The kernel is begun by emitOp.
  llvm::Error emitColumnReduce(mlir::Operation *op, const ColumnReduce &cr, const CType &ct,
                               std::string &code);
  /// A matrix-vector product in dot form (a matmul [.., M, K] · [.., K, 1], or a linear of one
  /// row) whose "gemm" kernel has an epilogue of the GEMM's shape: one kernel computes both
  /// (CudaGemv.cpp). `matrix`, `vector`, `bias`: GEMM operand numbers (bias -1: none); strides
  /// per batch in elements (0: the operand repeats); `lanes` per output, `vec` elements a load.
  struct Gemv {
    int64_t rows = 0, K = 0, batch = 1, matrixStride = 0, vectorStride = 0, lanes = 1, vec = 1;
    int matrix = 0, vector = 1, bias = -1;
  };
  /// Matrices beyond this many bytes stay GEMM steps: streaming them is what the library's
  /// kernels are tuned for, and the launch an epilogue kernel adds no longer matters.
  static constexpr int64_t kGemvMaxMatrixBytes = 1 << 20;
  std::optional<Gemv> gemv(mlir::Operation *gemm, const FusedParts &parts, mlir::Value out);
  /// Its kernel (begun by emitFused): G lanes an output, the epilogue on the float sum.
  llvm::Error emitGemv(mlir::Operation *root, mlir::Operation *gemm, FusedParts &parts,
                       const Gemv &gv, std::string &code);
  /// Row kernels (CudaRowKernels.cpp); `handled` is false when `op` is none of them.
  llvm::Error emitRowKernel(mlir::Operation *op, const CType &ct, std::string &code,
                            bool &handled);
};

/// Whether GEMM `op` (linear/matmul) runs as a GEMM step (cuBLASLt, tgc's tensor-core kernels,
/// CUTLASS): its result is f32, f16 or bf16. Integer and f64 GEMMs run as generated loops.
inline bool libraryGemm(mlir::Operation *op) {
  mlir::Type et = op->getResult(0).getType().cast<mlir::RankedTensorType>().getElementType();
  return et.isF32() || et.isF16() || et.isBF16();
}

/// A transpose that swaps the first two of three dims ([B, S, D] -> [S, B, D]).
inline bool isBatchRowTranspose(tg::TransposeOp t) {
  if (!t || shapeOf(t.getInput()).size() != 3)
    return false;
  Shape perm;
  for (mlir::Attribute p : t.getPerm())
    perm.push_back(p.cast<mlir::IntegerAttr>().getInt());
  return perm == Shape{1, 0, 2};
}
/// Whether two planned buffers share bytes (only arena buffers can).
inline bool overlaps(const BufferLoc &a, const BufferLoc &b) {
  return a.kind == BufferLoc::Arena && b.kind == BufferLoc::Arena && a.offset < b.offset + b.bytes &&
         b.offset < a.offset + a.bytes;
}

/// tg.attention kernels (CudaAttention.cpp): tiled in float (head dims <= 128), and on tensor
/// cores for f16/bf16. `mt` is the mask's type, `maskIdx` its index expression.
llvm::Error tiledAttention(KernelBuilder &kb, tg::AttentionOp at, const CType &ct,
                           const CType &mt, const std::string &maskIdx, std::string &code);
llvm::Error mmaAttention(KernelBuilder &kb, tg::AttentionOp at, const CType &ct,
                         const CType &mt, const std::string &maskIdx, std::string &code);

} // namespace tgc::cuda

#endif // TGC_CODEGEN_CUDA_CUDABUILDER_H
