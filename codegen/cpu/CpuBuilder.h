// CpuBuilder.h — the CPU kernel builder, shared by the files that emit its op families (one family
// per file, as onnx-mlir's Conversion/ONNXToKrnl/<Family>/): CpuKernels.cpp (elementwise, GEMMs,
// fused kernels, dispatch), CpuConv.cpp, CpuNorms.cpp, CpuAttention.cpp, CpuReductions.cpp and
// CpuMovement.cpp. Private to codegen/cpu.
#ifndef TGC_CODEGEN_CPU_CPUBUILDER_H
#define TGC_CODEGEN_CPU_CPUBUILDER_H

#include "codegen/cpu/CpuEmit.h"
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
#include <string>
#include <vector>

namespace tgc::cpu {

using namespace mlir;

/// Work (elements × rough cost) above which a loop runs in parallel.
constexpr int64_t kParallelWork = 1 << 15;

using codegen::broadcastStrides;
using codegen::contiguousStrides;
using codegen::intArray;
using codegen::NormParamIndex;
using codegen::normParamIndex;
using codegen::offsetExpr;
using codegen::product;
using codegen::ReduceLayout;
using codegen::reduceLayout;
using codegen::sourceComment;
using codegen::shapeOf;
using codegen::str;

inline std::string describeOp(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "op '" << op->getName() << "' at " << op->getLoc();
  return os.str();
}

inline llvm::Error opError(Operation *op, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "CPU backend: " + msg + " (" + describeOp(op) + ")");
}

/// C type of a tg element type.
struct CType {
  std::string name;
  bool isFloat = false, isBool = false;
};

inline llvm::Expected<CType> ctypeOf(Type t, Operation *op) {
  if (t.isF32())
    return CType{"float", true, false};
  if (t.isF64())
    return CType{"double", true, false};
  if (t.isInteger(1))
    return CType{"uint8_t", false, true};
  if (std::string n = codegen::integerCTypeName(t); !n.empty())
    return CType{n};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return opError(op, os.str() + " not supported");
}

inline llvm::Expected<CType> ctypeOf(Value v, Operation *op) {
  return ctypeOf(v.getType().cast<RankedTensorType>().getElementType(), op);
}

inline std::string floatLiteral(double v, bool f32) {
  std::string T = f32 ? "float" : "double";
  if (std::isnan(v))
    return "std::numeric_limits<" + T + ">::quiet_NaN()";
  if (std::isinf(v))
    return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + T + ">::infinity()";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return std::string(buf) + (f32 ? "f" : "");
}

/// Literals of every element of a dense constant (one when splat).
inline llvm::Expected<std::vector<std::string>> literalsOf(DenseElementsAttr a, Operation *op) {
  auto out = codegen::denseLiterals(
      a, [](Type e) { return e.isF32() || e.isF64(); }, floatLiteral);
  if (!out)
    return opError(op, "constant element type not supported");
  return std::move(*out);
}

using codegen::Code;

inline std::string pragma(int64_t work) {
  return work >= kParallelWork ? "#pragma omp parallel for num_threads(tgk_nt()) schedule(static)"
                               : "";
}

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

/// A value read by elementwise code: a buffer (kernel argument, constant array or a temporary)
/// or a splat literal.
struct Leaf {
  Shape shape;
  CType ct;
  std::string ptr;   ///< pointer expression; empty for splats
  std::string splat; ///< literal when splat
};

/// State of one kernel being emitted.
struct KernelBuilder {
  KernelEmitter &em;
  Operation *root;
  std::vector<Value> args;
  std::string decls, globals, body;
  Code c{body};
  std::vector<std::string> inPtr, outPtr; ///< per operand / result; "" for inlined constants
  int vars = 0;

  std::string fresh(const std::string &p) { return p + std::to_string(vars++); }

  llvm::Error bindArgs() {
    for (Value v : root->getOperands()) {
      auto it = em.plan_.locs.find(v);
      if (it == em.plan_.locs.end())
        return opError(root, "operand has no planned storage");
      if (it->second.kind == BufferLoc::Inline) {
        inPtr.push_back("");
        continue;
      }
      auto ct = ctypeOf(v, root);
      if (!ct)
        return ct.takeError();
      std::string name = "in" + std::to_string(inPtr.size());
      decls += "  const " + ct->name + " *const " + name + " = static_cast<const " + ct->name +
               " *>(args[" + std::to_string(args.size()) + "]);\n";
      args.push_back(v);
      inPtr.push_back(name);
    }
    for (Value v : root->getResults()) {
      auto ct = ctypeOf(v, root);
      if (!ct)
        return ct.takeError();
      std::string name = "out" + std::to_string(outPtr.size());
      decls += "  " + ct->name + " *const " + name + " = static_cast<" + ct->name + " *>(args[" +
               std::to_string(args.size()) + "]);\n";
      args.push_back(v);
      outPtr.push_back(name);
    }
    return llvm::Error::success();
  }

  /// Leaf for a constant written into the kernel (splat literal or a static array).
  llvm::Expected<Leaf> constantLeaf(Value v, Operation *owner) {
    auto cop = v.getDefiningOp<tg::ConstantOp>();
    if (!cop)
      return opError(owner, "inlined operand is not a constant");
    auto dense = cop.getValue().dyn_cast<DenseElementsAttr>();
    if (!dense)
      return opError(owner, "inlined constant is not dense");
    auto ct = ctypeOf(v, owner);
    if (!ct)
      return ct.takeError();
    auto lits = literalsOf(dense, owner);
    if (!lits)
      return lits.takeError();
    Leaf l;
    l.shape = shapeOf(v);
    l.ct = *ct;
    if (dense.isSplat()) {
      l.splat = "(" + ct->name + ")" + lits->front();
      return l;
    }
    std::string name = "tgc_k" + std::to_string(em.constants_++);
    std::string s = "static const " + ct->name + " " + name + "[" + std::to_string(lits->size()) +
                    "] = {";
    for (size_t i = 0; i < lits->size(); ++i)
      s += (i ? ", " : "") + (*lits)[i];
    globals += s + "};\n";
    l.ptr = name;
    return l;
  }

  /// Leaf for operand `i` of the root op.
  llvm::Expected<Leaf> operandLeaf(unsigned i) {
    Value v = root->getOperand(i);
    if (inPtr[i].empty())
      return constantLeaf(v, root);
    auto ct = ctypeOf(v, root);
    if (!ct)
      return ct.takeError();
    return Leaf{shapeOf(v), *ct, inPtr[i], ""};
  }

  llvm::Expected<std::string> elemExpr(Operation *op, const std::vector<std::string> &a);
  llvm::Error elementwise(llvm::ArrayRef<Operation *> ops,
                          std::vector<std::pair<Value, Leaf>> leaves, Value result,
                          const std::string &out);

  llvm::Error emitOp(Operation *op);
  // One op family each (CpuConv.cpp, CpuNorms.cpp, CpuAttention.cpp, CpuReductions.cpp,
  // CpuMovement.cpp); `ct` is the C type of the op's result.
  llvm::Error emitConv(Operation *op, const CType *ct);
  llvm::Error emitNorm(Operation *op, const CType *ct);
  llvm::Error emitAttention(Operation *op, const CType *ct);
  llvm::Error emitReduction(Operation *op, const CType *ct);
  llvm::Error emitMovement(Operation *op, const CType *ct);
  llvm::Error emitFused(tg::FusedOp op);
  llvm::Error emitGemmInto(Operation *op, const std::vector<std::string> &ptrs,
                           const std::string &out);
};

} // namespace tgc::cpu

#endif // TGC_CODEGEN_CPU_CPUBUILDER_H
