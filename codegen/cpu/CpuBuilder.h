// CpuBuilder.h — the CPU kernel builder, shared by the files that emit its op families (one family
// per file, as onnx-mlir's Conversion/ONNXToKrnl/<Family>/): CpuKernels.cpp (elementwise, GEMMs,
// fused kernels, dispatch), CpuConv.cpp, CpuNorms.cpp, CpuAttention.cpp and CpuMovement.cpp; the
// families written once for both backends are codegen/common's *Emit files. Private to codegen/cpu.
#ifndef TGC_CODEGEN_CPU_CPUBUILDER_H
#define TGC_CODEGEN_CPU_CPUBUILDER_H

#include "codegen/cpu/CpuEmit.h"
#include "codegen/common/CStyle.h"
#include "codegen/common/EmitUtil.h"
#include "compiler/dialect/Shapes.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tgc::cpu {

using namespace mlir;

/// Work (elements × rough cost) above which a loop runs in parallel.
constexpr int64_t kParallelWork = 1 << 15;


// The shared emitter helpers (EmitUtil.h) and the C-family kernel (CStyle.h) by their own names.
using namespace codegen;

/// The CPU's spelling of C-family code (codegen/common/CStyle.h): C++17, parallel loops on the
/// prelude's thread pool, f32/f64 and integers, no half types.
const codegen::CTarget &cpuTarget();


inline llvm::Error opError(Operation *op, const llvm::Twine &msg) {
  return codegen::opError(cpuTarget(), op, msg);
}
inline llvm::Expected<CType> ctypeOf(Type t, Operation *op) {
  return codegen::ctypeOf(cpuTarget(), t, op);
}
inline llvm::Expected<CType> ctypeOf(Value v, Operation *op) {
  return codegen::ctypeOf(cpuTarget(), v, op);
}

inline std::string floatLiteral(double v, bool f32) { return cpuTarget().floatLiteral(v, f32); }


/// The line that marks the loop after it, `for (int64_t v = 0; v < n; ++v) {`, as parallel:
/// lowerParallelLoops (CpuKernels.cpp) turns the pair into a tg_parallel_for over the thread
/// pool (the prelude's tg_pool) once the kernel is written.
constexpr const char *kParallelMarker = "// tg: parallel loop";

/// kParallelMarker when `work` is enough for several threads, else "".
inline std::string pragma(int64_t work) { return work >= kParallelWork ? kParallelMarker : ""; }

/// Rewrites every kParallelMarker line of a kernel body and the loop after it,
/// `for (int64_t v = 0; v < n; ++v) {` ... `}` (the `}` at the loop's own indentation), into
/// `tg_parallel_for(n, true, [&](int64_t v_lo, int64_t v_hi) { for (int64_t v = v_lo; ...) {`
/// ... `} });`. An error when a marker is not followed by such a loop.
llvm::Expected<std::string> lowerParallelLoops(const std::string &body);

/// Emits a loop nest over `shape`; operand k is read at `bases[k] + Σ coord_d * strides[k][d]`.
/// `body` receives one offset expression per operand.
inline void loopNest(Code &c, const Shape &shape, const std::vector<Shape> &strides,
              const std::vector<std::string> &bases,
              const std::function<void(Code &, const std::vector<std::string> &)> &body,
              int64_t cost = 1) {
  size_t n = strides.size();
  int64_t total = product(shape);
  if (total == 0) {
    c.line("// empty tensor: nothing to do");
    return;
  }
  const std::vector<std::pair<int64_t, Shape>> dims = codegen::mergeLoopDims(shape, strides);
  std::vector<std::string> offs(n);
  if (dims.empty()) {
    c.open("");
    body(c, bases);
    c.close();
    return;
  }
  const auto &inner = dims.back();
  int64_t rows = total / inner.first;
  std::string pr = pragma(total * cost);
  c.open("");
  if (rows == 1) {
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t j = 0; j < " + str(inner.first) + "; ++j)");
    for (size_t k = 0; k < n; ++k)
      offs[k] = offsetExpr(bases[k], "j", inner.second[k]);
    body(c, offs);
    c.close();
  } else {
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(rows) + "; ++r)");
    c.line("int64_t rem = r;");
    std::vector<std::string> b(n);
    for (size_t k = 0; k < n; ++k) {
      b[k] = "b" + std::to_string(k);
      c.line("int64_t " + b[k] + " = " + bases[k] + ";");
    }
    for (int64_t d = (int64_t)dims.size() - 2; d >= 0; --d) {
      if (d == 0) {
        c.line("const int64_t c0 = rem;");
      } else {
        std::string cd = "c" + std::to_string(d);
        c.line("const int64_t " + cd + " = rem % " + str(dims[d].first) + ";");
        c.line("rem /= " + str(dims[d].first) + ";");
      }
      for (size_t k = 0; k < n; ++k)
        if (dims[d].second[k] != 0)
          c.line(b[k] + " += c" + std::to_string(d) + " * " + str(dims[d].second[k]) + ";");
    }
    c.line("(void)rem;");
    c.open("for (int64_t j = 0; j < " + str(inner.first) + "; ++j)");
    for (size_t k = 0; k < n; ++k)
      offs[k] = offsetExpr(b[k], "j", inner.second[k]);
    body(c, offs);
    c.close();
    c.close();
  }
  c.close();
}

/// State of one kernel being emitted: a C-family kernel (codegen::CKernel) whose loops are
/// loop nests (parallel ones on the prelude's pool), plus the `args` array it is called with.
struct KernelBuilder : codegen::CKernel {
  KernelEmitter &em;
  std::vector<Value> args;
  std::string decls;

  KernelBuilder(KernelEmitter &em, Operation *root)
      : CKernel(cpuTarget(), em.plan_, root, em.constants_), em(em) {}

  /// tg_gemm_strips reads a matmul weight in strips (tgc-cpu-weight-layout writes them).
  bool readsWeightStrips() const override { return true; }

  void writeLoop(const Shape &shape, const std::vector<Shape> &strides,
                 const std::vector<std::string> &bases, const Body &body, int64_t cost) override {
    loopNest(c, shape, strides, bases, body, cost);
  }
  void writeOpenParallel(const std::string &var, int64_t n, int64_t work) override {
    if (std::string pr = pragma(work); !pr.empty())
      c.line(pr);
    c.open("for (int64_t " + var + " = 0; " + var + " < " + str(n) + "; ++" + var + ")");
  }

  /// Binds the root's operands and results to args[0...] (constants inlined).
  llvm::Error bindArgs() {
    return bindOperands([&](const std::string &name, Value v, const CType &ct, bool out) {
      const std::string T = out ? ct.name : "const " + ct.name;
      decls += "  " + T + " *const " + name + " = static_cast<" + T + " *>(args[" +
               std::to_string(args.size()) + "]);\n";
      args.push_back(v);
    });
  }

  llvm::Error elementwise(llvm::ArrayRef<Operation *> ops,
                          std::vector<std::pair<Value, Leaf>> leaves, Value result,
                          const std::string &out);

  llvm::Error emitOp(Operation *op);
  // One op family each (CpuConv.cpp, CpuNorms.cpp, CpuAttention.cpp, CpuMovement.cpp); `ct` is
  // the C type of the op's result.
  /// tg.conv / tg.pool reading the buffers named `in` (operand order), writing `out`. `epi`
  /// names an elementwise epilogue functor (float(float v)) a convolution with a
  /// blocked weight applies as it stores (emitFused decides; other kernels take none).
  llvm::Error emitConv(Operation *op, const CType *ct, const std::vector<std::string> &in,
                       const std::string &out, const std::string &epi = "");
  llvm::Error emitNorm(Operation *op, const CType *ct);
  llvm::Error emitAttention(Operation *op, const CType *ct);
  llvm::Error emitMovement(Operation *op, const CType *ct);
  llvm::Error emitFused(tg::FusedOp op);
  /// The GEMM of `op` into `out`; with `bias` (f32 matmuls), plus bias[b * biasStride + j] per
  /// column j of batch b, added as the GEMM starts.
  llvm::Error emitGemmInto(Operation *op, const std::vector<std::string> &ptrs,
                           const std::string &out, const std::string &bias = "",
                           int64_t biasStride = 0);
  /// When a "gemm" kernel is an f32 matmul whose only epilogue adds a bias per column (the same
  /// for every batch, or one per batch), that bias's pointer and batch stride.
  std::optional<std::pair<std::string, int64_t>> matmulBias(const FusedParts &parts);
};

} // namespace tgc::cpu

#endif // TGC_CODEGEN_CPU_CPUBUILDER_H
