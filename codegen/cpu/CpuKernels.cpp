// CpuKernels.cpp — emits one C++ kernel per top-level op of kernel-formed `tg` IR.
//
// Every kernel is `extern "C" void tgk_<n>_<ops>(void* const* args)` with the static shapes baked
// in as constants. Elementwise code (tg.fused "pointwise", gemm epilogues, standalone
// elementwise ops) is one loop nest over the output: operands are read through per-operand
// strides (0 on broadcast dims), dims that are contiguous for every operand are collapsed, and
// the outermost loop runs under OpenMP when the work is large. GEMMs and convolutions call the
// templates of the prelude (CpuPrelude.cpp), which use OpenBLAS for f32/f64.
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

using namespace mlir;

namespace tgc::cpu {

namespace {

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

std::string describeOp(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "op '" << op->getName() << "' at " << op->getLoc();
  return os.str();
}

llvm::Error opError(Operation *op, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "CPU backend: " + msg + " (" + describeOp(op) + ")");
}

/// C type of a tg element type.
struct CType {
  std::string name;
  bool isFloat = false, isBool = false;
};

llvm::Expected<CType> ctypeOf(Type t, Operation *op) {
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

llvm::Expected<CType> ctypeOf(Value v, Operation *op) {
  return ctypeOf(v.getType().cast<RankedTensorType>().getElementType(), op);
}

std::string floatLiteral(double v, bool f32) {
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
llvm::Expected<std::vector<std::string>> literalsOf(DenseElementsAttr a, Operation *op) {
  auto out = codegen::denseLiterals(
      a, [](Type e) { return e.isF32() || e.isF64(); }, floatLiteral);
  if (!out)
    return opError(op, "constant element type not supported");
  return std::move(*out);
}

using codegen::Code;

std::string pragma(int64_t work) {
  return work >= kParallelWork ? "#pragma omp parallel for num_threads(tgk_nt()) schedule(static)"
                               : "";
}

/// Emits a loop nest over `shape`; operand k is read at `bases[k] + Σ coord_d * strides[k][d]`.
/// `body` receives one offset expression per operand.
void loopNest(Code &c, const Shape &shape, const std::vector<Shape> &strides,
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

} // namespace

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
  llvm::Error emitFused(tg::FusedOp op);
  llvm::Error emitGemmInto(Operation *op, const std::vector<std::string> &ptrs,
                           const std::string &out);
};

llvm::Expected<std::string> KernelBuilder::elemExpr(Operation *op,
                                                    const std::vector<std::string> &a) {
  auto rt = ctypeOf(op->getResult(0), op);
  if (!rt)
    return rt.takeError();
  Value typed = isa<tg::WhereOp>(op) ? op->getOperand(1) : op->getOperand(0);
  auto it = ctypeOf(typed, op);
  if (!it)
    return it.takeError();
  std::string name = op->getName().stripDialect().str();
  if (auto g = dyn_cast<tg::GeluOp>(op))
    name = g.getTanhApprox() ? "gelu_tanh" : "gelu";
  std::string args;
  for (size_t i = 0; i < a.size(); ++i)
    args += (i ? ", " : "") + a[i];
  if (isa<tg::CastOp>(op))
    return "tg_cast<" + rt->name + ", " + (rt->isBool ? "true" : "false") + ", " + it->name +
           ">(" + args + ")";
  return "tg_" + name + "<" + it->name + ">(" + args + ")";
}

/// One loop over `result`'s elements computing `ops` (elementwise, in order) from `leaves`.
llvm::Error KernelBuilder::elementwise(llvm::ArrayRef<Operation *> ops,
                                       std::vector<std::pair<Value, Leaf>> leaves, Value result,
                                       const std::string &out) {
  Shape outShape = shapeOf(result);
  auto outT = ctypeOf(result, root);
  if (!outT)
    return outT.takeError();
  auto fits = [&](const Shape &s) {
    auto b = tgc::broadcastShapes(s, outShape);
    return b && *b == outShape;
  };
  for (auto &[v, l] : leaves)
    if (!fits(l.shape))
      return opError(root, "operand shape " + tgc::shapeToString(l.shape) +
                               " does not broadcast to the kernel's result " +
                               tgc::shapeToString(outShape));
  int64_t cost = 1;
  for (Operation *op : ops) {
    if (!fits(shapeOf(op->getResult(0))))
      return opError(op, "intermediate shape larger than the kernel's result");
    if (isa<tg::ExpOp, tg::LogOp, tg::TanhOp, tg::ErfOp, tg::SigmoidOp, tg::SiluOp, tg::GeluOp,
            tg::PowOp, tg::SinOp, tg::CosOp>(op))
      cost += 8;
  }
  std::vector<Shape> strides{contiguousStrides(outShape)};
  std::vector<std::string> bases{"0"};
  std::vector<size_t> loaded;
  for (size_t i = 0; i < leaves.size(); ++i)
    if (!leaves[i].second.ptr.empty()) {
      strides.push_back(broadcastStrides(leaves[i].second.shape, outShape));
      bases.push_back("0");
      loaded.push_back(i);
    }
  // Element expressions are computed before the loop body is written so errors surface early.
  llvm::Error error = llvm::Error::success();
  loopNest(
      c, outShape, strides, bases,
      [&](Code &c, const std::vector<std::string> &offs) {
        llvm::DenseMap<Value, std::string> names;
        size_t li = 0;
        for (size_t i = 0; i < leaves.size(); ++i) {
          const Leaf &l = leaves[i].second;
          std::string v = fresh("v");
          if (l.ptr.empty()) {
            c.line("const " + l.ct.name + " " + v + " = " + l.splat + ";");
          } else {
            c.line("const " + l.ct.name + " " + v + " = " + l.ptr + "[" + offs[1 + li] + "];");
            ++li;
          }
          names[leaves[i].first] = v;
        }
        for (Operation *op : ops) {
          std::vector<std::string> a;
          for (Value o : op->getOperands()) {
            auto n = names.find(o);
            if (n == names.end()) {
              if (!error)
                error = opError(op, "operand not available in the kernel");
              a.push_back("0");
            } else {
              a.push_back(n->second);
            }
          }
          auto e = elemExpr(op, a);
          if (!e) {
            if (!error)
              error = e.takeError();
            else
              llvm::consumeError(e.takeError());
            return;
          }
          auto rt = ctypeOf(op->getResult(0), op);
          if (!rt) {
            llvm::consumeError(rt.takeError());
            return;
          }
          std::string v = fresh("v");
          c.line("const " + rt->name + " " + v + " = " + *e + ";");
          names[op->getResult(0)] = v;
        }
        auto n = names.find(result);
        if (n == names.end()) {
          if (!error)
            error = opError(root, "kernel result is not computed by its ops");
          return;
        }
        c.line(out + "[" + offs[0] + "] = " + n->second + ";");
      },
      cost);
  (void)loaded;
  return error;
}

/// Linear or matmul writing `out`; `ptrs` are the op's operand pointers.
llvm::Error KernelBuilder::emitGemmInto(Operation *op, const std::vector<std::string> &ptrs,
                                        const std::string &out) {
  auto ct = ctypeOf(op->getResult(0), op);
  if (!ct)
    return ct.takeError();
  const std::string &T = ct->name;
  if (auto lin = dyn_cast<tg::LinearOp>(op)) {
    Shape x = shapeOf(lin.getInput()), w = shapeOf(lin.getWeight());
    int64_t K = x.back(), N = w[0], M = product(x) / std::max<int64_t>(K, 1);
    if (K == 0)
      M = product(x, 0, x.size() - 1);
    std::string bias = lin.getBias() ? ptrs[2] : "nullptr";
    c.line("tg_linear<" + T + ">(" + ptrs[0] + ", " + ptrs[1] + ", " + bias + ", " + out + ", " +
           str(M) + ", " + str(N) + ", " + str(K) + ");");
    return llvm::Error::success();
  }
  auto mm = dyn_cast<tg::MatmulOp>(op);
  if (!mm)
    return opError(op, "a gemm kernel must start with tg.linear or tg.matmul");
  Shape a = shapeOf(mm.getLhs()), b = shapeOf(mm.getRhs());
  int64_t M = a.size() >= 2 ? a[a.size() - 2] : 1, K = a.back();
  int64_t N = b.size() >= 2 ? b.back() : 1;
  Shape ab = a.size() > 2 ? Shape(a.begin(), a.end() - 2) : Shape{};
  Shape bb = b.size() > 2 ? Shape(b.begin(), b.end() - 2) : Shape{};
  auto batch = tgc::broadcastShapes(ab, bb);
  if (!batch)
    return opError(op, "batch dims do not broadcast");
  int64_t NB = product(*batch);
  if (NB == 0) {
    c.line("// empty batch: nothing to do");
    return llvm::Error::success();
  }
  if (product(bb) == 1 && product(ab) == NB) {
    // One GEMM: the batch dims of the lhs fold into M.
    c.line("tg_gemm<" + T + ">(false, " + str(NB * M) + ", " + str(N) + ", " + str(K) + ", " +
           ptrs[0] + ", " + str(K) + ", " + ptrs[1] + ", " + str(N) + ", " + out + ", " + str(N) +
           ");");
    return llvm::Error::success();
  }
  Shape as = broadcastStrides(ab, *batch), bs = broadcastStrides(bb, *batch);
  Shape aoff, boff, coord(batch->size(), 0);
  for (int64_t i = 0; i < NB; ++i) {
    int64_t ao = 0, bo = 0;
    for (size_t d = 0; d < batch->size(); ++d) {
      ao += coord[d] * as[d];
      bo += coord[d] * bs[d];
    }
    aoff.push_back(ao * M * K);
    boff.push_back(bo * K * N);
    for (int64_t d = (int64_t)batch->size() - 1; d >= 0; --d) {
      if (++coord[d] < (*batch)[d])
        break;
      coord[d] = 0;
    }
  }
  c.line("static const int64_t aoff[" + str(NB) + "] = " + intArray(aoff) + ";");
  c.line("static const int64_t boff[" + str(NB) + "] = " + intArray(boff) + ";");
  c.line("tg_matmul<" + T + ">(" + ptrs[0] + ", " + ptrs[1] + ", " + out + ", " + str(NB) +
         ", aoff, boff, " + str(M) + ", " + str(N) + ", " + str(K) + ");");
  return llvm::Error::success();
}

llvm::Error KernelBuilder::emitFused(tg::FusedOp op) {
  Block &body = op.getBody().front();
  auto yield = cast<tg::YieldOp>(body.getTerminator());
  Value result = yield.getValues()[0];
  std::vector<std::pair<Value, Leaf>> leaves;
  std::vector<Operation *> ops;
  Operation *first = nullptr; // the GEMM of a "gemm" kernel: its first non-constant op
  for (Operation &inner : body.without_terminator())
    if (!isa<tg::ConstantOp>(inner) && !first)
      first = &inner;
  for (unsigned i = 0; i < body.getNumArguments(); ++i) {
    // Arguments read only by the GEMM itself are not loaded by the epilogue loop.
    bool epilogueReads = false;
    for (Operation *user : body.getArgument(i).getUsers())
      epilogueReads = epilogueReads || !(op.getKind() == "gemm" && user == first);
    if (!epilogueReads)
      continue;
    auto l = operandLeaf(i);
    if (!l)
      return l.takeError();
    leaves.push_back({body.getArgument(i), *l});
  }
  Operation *gemm = nullptr;
  for (Operation &inner : body.without_terminator()) {
    if (isa<tg::ConstantOp>(inner)) {
      auto l = constantLeaf(inner.getResult(0), &inner);
      if (!l)
        return l.takeError();
      leaves.push_back({inner.getResult(0), *l});
      continue;
    }
    if (op.getKind() == "gemm" && !gemm) {
      if (!isa<tg::LinearOp, tg::MatmulOp>(inner))
        return opError(&inner, "a gemm kernel must start with tg.linear or tg.matmul");
      gemm = &inner;
      continue;
    }
    if (!isElementwiseOp(&inner))
      return opError(&inner, "op not supported inside a fused " + op.getKind().str() + " kernel");
    ops.push_back(&inner);
  }
  if (op.getKind() == "gemm") {
    if (!gemm)
      return opError(op, "gemm kernel without tg.linear or tg.matmul");
    std::vector<std::string> ptrs;
    for (Value v : gemm->getOperands()) {
      auto arg = v.dyn_cast<BlockArgument>();
      if (!arg || arg.getOwner() != &body || inPtr[arg.getArgNumber()].empty())
        return opError(gemm, "gemm operands must be kernel arguments held in buffers");
      ptrs.push_back(inPtr[arg.getArgNumber()]);
    }
    Value g = gemm->getResult(0);
    if (result == g)
      return emitGemmInto(gemm, ptrs, outPtr[0]);
    auto gt = ctypeOf(g, gemm);
    if (!gt)
      return gt.takeError();
    // The GEMM writes the output buffer when the epilogue keeps its shape and type (each
    // element is then read and rewritten in place); otherwise a temporary.
    std::string dst = outPtr[0];
    if (shapeOf(g) != shapeOf(op.getResult()) || g.getType() != op.getResult().getType()) {
      c.line("std::vector<" + gt->name + "> gemm_tmp(" + str(product(shapeOf(g))) + ");");
      dst = "gemm_tmp.data()";
    }
    if (auto e = emitGemmInto(gemm, ptrs, dst))
      return e;
    c.line(sourceComment("epilogue: " + std::to_string(ops.size()) + " elementwise op(s) per output element"));
    leaves.push_back({g, Leaf{shapeOf(g), *gt, dst, ""}});
    return elementwise(ops, leaves, result, outPtr[0]);
  }
  if (op.getKind() != "pointwise")
    return opError(op, "unknown fused kind '" + op.getKind().str() + "'");
  return elementwise(ops, leaves, result, outPtr[0]);
}

llvm::Error KernelBuilder::emitOp(Operation *op) {
  if (auto f = dyn_cast<tg::FusedOp>(op))
    return emitFused(f);
  if (isElementwiseOp(op)) {
    std::vector<std::pair<Value, Leaf>> leaves;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto l = operandLeaf(i);
      if (!l)
        return l.takeError();
      leaves.push_back({op->getOperand(i), *l});
    }
    return elementwise({op}, leaves, op->getResult(0), outPtr[0]);
  }
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    if (inPtr[i].empty())
      return opError(op, "operand " + std::to_string(i) + " was inlined but the op needs a buffer");
  auto ct = ctypeOf(op->getResult(0), op);
  if (!ct)
    return ct.takeError();
  const std::string T = ct->name;
  const std::string sz = "sizeof(" + T + ")";

  if (isa<tg::LinearOp, tg::MatmulOp>(op))
    return emitGemmInto(op, inPtr, outPtr[0]);

  if (auto conv = dyn_cast<tg::ConvOp>(op)) {
    Shape x = shapeOf(conv.getInput()), w = shapeOf(conv.getWeight()), y = shapeOf(conv.getResult());
    int sp = (int)x.size() - 2;
    if (sp > 8)
      return opError(op, "conv with more than 8 spatial dims");
    auto ints = [](ArrayAttr a) {
      Shape r;
      for (Attribute v : a)
        r.push_back(v.cast<IntegerAttr>().getInt());
      return r;
    };
    c.line("static const int64_t xs[] = " + intArray(x) + ", ws[] = " + intArray(w) +
           ", ys[] = " + intArray(y) + ";");
    c.line("static const int64_t st[] = " + intArray(ints(conv.getStrides())) +
           ", pads[] = " + intArray(ints(conv.getPads())) +
           ", dil[] = " + intArray(ints(conv.getDilations())) + ";");
    c.line("tg_conv<" + T + ">(in0, in1, " + (conv.getBias() ? inPtr[2] : "nullptr") +
           ", out0, " + std::to_string(sp) + ", xs, ws, ys, st, pads, dil, " +
           str(conv.getGroup()) + ");");
    return llvm::Error::success();
  }

  if (auto ln = dyn_cast<tg::LayerNormOp>(op)) {
    if (!ct->isFloat)
      return opError(op, "layer_norm needs a float type");
    Shape x = shapeOf(ln.getInput());
    int64_t axis = *tgc::normalizeAxis(ln.getAxis(), x.size());
    int64_t R = product(x, 0, axis), D = product(x, axis);
    // Index of scale/bias for position j of the normalized dims (r: the row).
    auto indexOf = [&](Value p, const std::string &name) -> llvm::Expected<std::string> {
      const NormParamIndex ix = normParamIndex(x, axis, shapeOf(p));
      if (ix.one)
        return name + "[0]";
      if (ix.perColumn)
        return name + "[j]";
      const std::string row = ix.rowDims ? ix.rowOff + " + " : "";
      if (ix.table.empty())
        return name + "[" + row + "j]";
      std::string t = fresh("idx");
      c.line("static const int64_t " + t + "[" + str(D) + "] = " + intArray(ix.table) + ";");
      return name + "[" + row + t + "[j]]";
    };
    std::string scale, bias;
    unsigned next = 1;
    if (ln.getScale()) {
      auto s = indexOf(ln.getScale(), inPtr[next++]);
      if (!s)
        return s.takeError();
      scale = *s;
    }
    if (ln.getBias()) {
      auto s = indexOf(ln.getBias(), inPtr[next++]);
      if (!s)
        return s.takeError();
      bias = *s;
    }
    double eps = ln.getEpsilon().convertToDouble();
    if (R * D == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    c.line("const double eps = " + floatLiteral(eps, false) + ";");
    std::string pr = pragma(R * D * 4);
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(R) + "; ++r)");
    c.line("const " + T + " *xr = in0 + r * " + str(D) + ";");
    c.line(T + " *yr = out0 + r * " + str(D) + ";");
    c.line("double s = 0;");
    c.line("for (int64_t j = 0; j < " + str(D) + "; ++j) s += xr[j];");
    c.line("const double mean = s / " + str(D) + ";");
    c.line("double q = 0;");
    c.line("for (int64_t j = 0; j < " + str(D) + "; ++j) { const double d = xr[j] - mean; q += d * d; }");
    c.line("const double rstd = 1.0 / std::sqrt(q / " + str(D) + " + eps);");
    c.open("for (int64_t j = 0; j < " + str(D) + "; ++j)");
    c.line("double t = (xr[j] - mean) * rstd;");
    if (!scale.empty())
      c.line("t *= " + scale + ";");
    if (!bias.empty())
      c.line("t += " + bias + ";");
    c.line("yr[j] = (" + T + ")t;");
    c.close();
    c.close();
    return llvm::Error::success();
  }

  // tg.attention: one (b, h, s) row per iteration, OpenMP over rows; scores, max, exp-sum and
  // the weighted sum of v in one pass over the keys. Undefined rows (all -inf, NaN, +inf) → 0.
  // With layout "bshd" rows run in (b, s, h) order, so q and the output stay contiguous rows,
  // and consecutive keys of one head are Hkv rows apart.
  if (auto at = dyn_cast<tg::AttentionOp>(op)) {
    if (!ct->isFloat)
      return opError(op, "attention needs a float type");
    const bool bshd = at.getLayout() == "bshd";
    const int hd = bshd ? 2 : 1, sd = bshd ? 1 : 2;
    Shape q = shapeOf(at.getQ()), k = shapeOf(at.getK()), v = shapeOf(at.getV());
    const int64_t B = q[0], Hq = q[hd], S = q[sd], D = q[3], Hkv = k[hd], L = k[sd], Dv = v[3];
    if (B * Hq * S * Dv == 0) {
      c.line("// empty result");
      return llvm::Error::success();
    }
    std::string maskIdx;
    if (at.getMask()) {
      Shape ms = broadcastStrides(shapeOf(at.getMask()), Shape{B, Hq, S, L});
      const char *vars[] = {"b", "h", "s", "t"};
      for (int d = 0; d < 4; ++d)
        if (ms[d] != 0)
          maskIdx += std::string(maskIdx.empty() ? "" : " + ") + vars[d] + " * " + str(ms[d]);
      if (maskIdx.empty())
        maskIdx = "0";
    }
    const int64_t rows = B * Hq * S;
    c.line("const " + T + " scale = (" + T + ")" +
           floatLiteral(at.getScaleAttr().getValueAsDouble(), T == "float") + ";");
    c.open("");
    if (rows * L * (D + Dv) >= kParallelWork)
      c.line("#pragma omp parallel num_threads(tgk_nt())");
    c.open("");
    c.line("std::vector<" + T + "> sc(" + str(L) + "), acc(" + str(Dv) + ");");
    c.line("#pragma omp for schedule(static)");
    c.open("for (int64_t r = 0; r < " + str(rows) + "; ++r)");
    if (bshd) {
      c.line("const int64_t h = r % " + str(Hq) + ", s = (r / " + str(Hq) + ") % " + str(S) +
             ", b = r / " + str(S * Hq) + ";");
      c.line("(void)b; (void)h; (void)s;");
      c.line("const int64_t kh = b * " + str(L * Hkv) + " + h / " + str(Hq / Hkv) + ";");
      c.line("const " + T + " *qr = in0 + r * " + str(D) + ";");
      c.line("const " + T + " *kb = in1 + kh * " + str(D) + ";");
      c.line("const " + T + " *vb = in2 + kh * " + str(Dv) + ";");
    } else {
      c.line("const int64_t s = r % " + str(S) + ", h = (r / " + str(S) + ") % " + str(Hq) +
             ", b = r / " + str(S * Hq) + ";");
      c.line("(void)b; (void)h; (void)s;");
      c.line("const int64_t kh = b * " + str(Hkv) + " + h / " + str(Hq / Hkv) + ";");
      c.line("const " + T + " *qr = in0 + r * " + str(D) + ";");
      c.line("const " + T + " *kb = in1 + kh * " + str(L * D) + ";");
      c.line("const " + T + " *vb = in2 + kh * " + str(L * Dv) + ";");
    }
    // Distance between consecutive keys (values) of one head.
    const int64_t kStep = bshd ? Hkv * D : D, vStep = bshd ? Hkv * Dv : Dv;
    c.line(T + " *o = out0 + r * " + str(Dv) + ";");
    c.line(T + " m = -std::numeric_limits<" + T + ">::infinity();");
    c.line("bool bad = false;");
    // Causal rows stop at their last visible key: the masked keys' exp(-inf) terms are 0.
    std::string tEnd = at.getCausal() ? "n" : str(L);
    if (at.getCausal())
      c.line("const int64_t n = std::min<int64_t>(s + " + str(L - S + 1) + ", " + str(L) + ");");
    c.open("for (int64_t t = 0; t < " + tEnd + "; ++t)");
    c.line(T + " x = 0;");
    c.line("const " + T + " *kr = kb + t * " + str(kStep) + ";");
    c.line("#pragma omp simd reduction(+ : x)");
    c.line("for (int64_t d = 0; d < " + str(D) + "; ++d) x += qr[d] * kr[d];");
    c.line("x *= scale;");
    if (!maskIdx.empty())
      c.line("x += in3[" + maskIdx + "];");
    c.line("if (x != x || x == std::numeric_limits<" + T + ">::infinity()) bad = true;");
    c.line("sc[t] = x;");
    c.line("if (x > m) m = x;");
    c.close();
    c.open("if (bad || m == -std::numeric_limits<" + T + ">::infinity())");
    c.line("for (int64_t j = 0; j < " + str(Dv) + "; ++j) o[j] = 0;");
    c.line("continue;");
    c.close();
    c.line("for (int64_t j = 0; j < " + str(Dv) + "; ++j) acc[j] = 0;");
    c.line("double sum = 0;");
    c.open("for (int64_t t = 0; t < " + tEnd + "; ++t)");
    c.line("const " + T + " e = std::exp(sc[t] - m);");
    c.line("sum += e;");
    c.line("const " + T + " *vr = vb + t * " + str(vStep) + ";");
    c.line("for (int64_t j = 0; j < " + str(Dv) + "; ++j) acc[j] += e * vr[j];");
    c.close();
    c.line("const " + T + " inv = (" + T + ")(1.0 / sum);");
    c.line("for (int64_t j = 0; j < " + str(Dv) + "; ++j) o[j] = acc[j] * inv;");
    c.close();
    c.close();
    c.close();
    return llvm::Error::success();
  }

  if (auto rn = dyn_cast<tg::RmsNormOp>(op)) {
    if (!ct->isFloat)
      return opError(op, "rms_norm needs a float type");
    Shape x = shapeOf(rn.getInput());
    int64_t axis = *tgc::normalizeAxis(rn.getAxisAttr().getInt(), x.size());
    int64_t R = product(x, 0, axis), D = product(x, axis);
    std::string scale;
    if (rn.getScale()) {
      // The scale covers the normalized dims exactly (leading 1s aside) or is one element.
      const NormParamIndex ix = normParamIndex(x, axis, shapeOf(rn.getScale()));
      if (!ix.perColumn && !ix.one)
        return opError(op, "rms_norm scale must cover the normalized dims exactly");
      scale = inPtr[1] + (ix.one ? "[0]" : "[j]");
    }
    if (R * D == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    c.line("const double eps = " + floatLiteral(rn.getEpsilon().convertToDouble(), false) + ";");
    std::string pr = pragma(R * D * 3);
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(R) + "; ++r)");
    c.line("const " + T + " *xr = in0 + r * " + str(D) + ";");
    c.line(T + " *yr = out0 + r * " + str(D) + ";");
    c.line("double q = 0;");
    c.line("for (int64_t j = 0; j < " + str(D) + "; ++j) q += (double)xr[j] * xr[j];");
    c.line("const double rstd = 1.0 / std::sqrt(q / " + str(D) + " + eps);");
    c.open("for (int64_t j = 0; j < " + str(D) + "; ++j)");
    c.line("double t = xr[j] * rstd;");
    if (!scale.empty())
      c.line("t *= " + scale + ";");
    c.line("yr[j] = (" + T + ")t;");
    c.close();
    c.close();
    return llvm::Error::success();
  }

  if (auto sm = dyn_cast<tg::SoftmaxOp>(op)) {
    if (!ct->isFloat)
      return opError(op, "softmax needs a float type");
    Shape x = shapeOf(sm.getInput());
    int64_t axis = *tgc::normalizeAxis(sm.getAxis(), x.size());
    int64_t O = product(x, 0, axis), L = x[axis], I = product(x, axis + 1);
    if (O * L * I == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    std::string pr = pragma(O * L * I * 8);
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(O * I) + "; ++r)");
    c.line("const int64_t base = (r / " + str(I) + ") * " + str(L * I) + " + r % " + str(I) + ";");
    c.line("const " + T + " *xr = in0 + base;");
    c.line(T + " *yr = out0 + base;");
    c.line(T + " m = -std::numeric_limits<" + T + ">::infinity();");
    c.line("for (int64_t k = 0; k < " + str(L) + "; ++k) { const " + T + " v = xr[k * " + str(I) +
           "]; if (v > m || v != v) m = v; }");
    c.line("double s = 0;");
    c.line("for (int64_t k = 0; k < " + str(L) + "; ++k) { const " + T + " e = std::exp(xr[k * " +
           str(I) + "] - m); yr[k * " + str(I) + "] = e; s += e; }");
    if (sm.getLog()) {
      c.line("const double ls = std::log(s);");
      c.line("for (int64_t k = 0; k < " + str(L) + "; ++k) yr[k * " + str(I) + "] = (" + T +
             ")((double)xr[k * " + str(I) + "] - (double)m - ls);");
    } else {
      c.line("const double inv = 1.0 / s;");
      c.line("for (int64_t k = 0; k < " + str(L) + "; ++k) yr[k * " + str(I) + "] = (" + T +
             ")(yr[k * " + str(I) + "] * inv);");
    }
    c.close();
    return llvm::Error::success();
  }

  if (isa<tg::ReduceSumOp, tg::ReduceMeanOp, tg::ReduceMaxOp, tg::ReduceMinOp, tg::ReduceProdOp>(
          op)) {
    Shape x = shapeOf(op->getOperand(0));
    const ReduceLayout rl = reduceLayout(op);
    const Shape &kept = rl.kept, &keptStrides = rl.keptStrides;
    const auto &rdims = rl.rdims; // (dim, stride), collapsed
    const int64_t R = rl.count;
    std::string acc = ct->isFloat ? "double" : (ct->isBool ? "int64_t" : "int64_t");
    std::string init, step, fin;
    if (isa<tg::ReduceSumOp, tg::ReduceMeanOp>(op)) {
      init = acc + " acc = 0;";
      step = "acc += v;";
      fin = isa<tg::ReduceMeanOp>(op) ? "(" + T + ")(acc / " + (ct->isFloat ? "(double)" : "") +
                                            str(std::max<int64_t>(R, 1)) + ")"
                                      : "(" + T + ")acc";
      if (isa<tg::ReduceMeanOp>(op) && R == 0)
        fin = ct->isFloat ? "std::numeric_limits<" + T + ">::quiet_NaN()" : "(" + T + ")0";
    } else if (isa<tg::ReduceProdOp>(op)) {
      init = acc + " acc = 1;";
      step = "acc *= v;";
      fin = "(" + T + ")acc";
    } else {
      bool mx = isa<tg::ReduceMaxOp>(op);
      std::string lim = ct->isFloat ? std::string(mx ? "-" : "") + "std::numeric_limits<" + T +
                                          ">::infinity()"
                                    : "std::numeric_limits<" + T + ">::" + (mx ? "lowest()" : "max()");
      init = T + " acc = " + lim + ";";
      step = std::string("acc = tg_") + (mx ? "max" : "min") + "<" + T + ">(acc, v);";
      fin = "acc";
    }
    loopNest(
        c, kept, {contiguousStrides(kept), keptStrides}, {"0", "0"},
        [&](Code &c, const std::vector<std::string> &offs) {
          c.line(init);
          std::string idx = offs[1];
          for (size_t k = 0; k < rdims.size(); ++k) {
            std::string kv = "k" + std::to_string(k);
            c.open("for (int64_t " + kv + " = 0; " + kv + " < " + str(rdims[k].first) + "; ++" +
                   kv + ")");
            idx = offsetExpr(idx, kv, rdims[k].second);
          }
          c.line("const " + T + " v = in0[" + idx + "];");
          c.line(step);
          for (size_t k = 0; k < rdims.size(); ++k)
            c.close();
          c.line("out0[" + offs[0] + "] = " + fin + ";");
        },
        std::max<int64_t>(R, 1));
    return llvm::Error::success();
  }

  if (auto am = dyn_cast<tg::ArgMaxOp>(op)) {
    Shape x = shapeOf(am.getInput());
    auto it = ctypeOf(am.getInput(), op);
    if (!it)
      return it.takeError();
    int64_t axis = *tgc::normalizeAxis(am.getAxis(), x.size());
    int64_t O = product(x, 0, axis), L = x[axis], I = product(x, axis + 1);
    if (O * I == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    std::string pr = pragma(O * L * I);
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(O * I) + "; ++r)");
    c.line("const " + it->name + " *xr = in0 + (r / " + str(I) + ") * " + str(L * I) + " + r % " +
           str(I) + ";");
    c.line("int64_t best = 0;");
    if (L > 0) {
      c.line(it->name + " bv = xr[0];");
      c.line("for (int64_t k = 1; k < " + str(L) + "; ++k) { const " + it->name + " v = xr[k * " +
             str(I) + "]; if (" + (am.getSelectLast() ? "v >= bv" : "v > bv") +
             ") { bv = v; best = k; } }");
    }
    c.line("out0[r] = best;");
    c.close();
    return llvm::Error::success();
  }

  if (auto ro = dyn_cast<tg::RotaryOp>(op)) {
    if (!ct->isFloat)
      return opError(op, "rotary needs a float type");
    // One pass over the rows of x: y = x * cos + rotate(x) * sin, reading the partner element
    // of x directly (no rotated copy); cos/sin are read through broadcast strides.
    Shape x = shapeOf(ro.getInput());
    int64_t D = x.back(), H = D / 2;
    Shape cs = broadcastStrides(shapeOf(ro.getCos()), x),
          ss = broadcastStrides(shapeOf(ro.getSin()), x), xs = contiguousStrides(x);
    int64_t cj = cs.back(), sj = ss.back();
    cs.pop_back();
    ss.pop_back();
    xs.pop_back();
    Shape rows(x.begin(), x.end() - 1);
    auto at = [](const std::string &p, const std::string &k, int64_t stride) {
      return p + "[" +
             (stride == 0   ? std::string("0")
              : stride == 1 ? k
                            : k + " * " + str(stride)) +
             "]";
    };
    c.line(sourceComment(std::string("rotary (") + (ro.getInterleaved() ? "interleaved" : "rotate_half") +
           "): y = x * cos + rotate(x) * sin over the last dim (" + str(D) + ")"));
    loopNest(
        c, rows, {xs, cs, ss}, {"0", "0", "0"},
        [&](Code &c, const std::vector<std::string> &o) {
          c.line("const " + T + " *xr = in0 + " + o[0] + ";");
          c.line(T + " *yr = out0 + " + o[0] + ";");
          c.line("const " + T + " *cr = in1 + " + o[1] + ";");
          c.line("const " + T + " *sr = in2 + " + o[2] + ";");
          if (!ro.getInterleaved()) {
            c.line("for (int64_t k = 0; k < " + str(H) + "; ++k) yr[k] = (" + T + ")(xr[k] * " +
                   at("cr", "k", cj) + " - xr[k + " + str(H) + "] * " + at("sr", "k", sj) + ");");
            c.line("for (int64_t k = " + str(H) + "; k < " + str(D) + "; ++k) yr[k] = (" + T +
                   ")(xr[k] * " + at("cr", "k", cj) + " + xr[k - " + str(H) + "] * " +
                   at("sr", "k", sj) + ");");
          } else {
            c.open("for (int64_t k = 0; k < " + str(D) + "; k += 2)");
            c.line("yr[k] = (" + T + ")(xr[k] * " + at("cr", "k", cj) + " - xr[k + 1] * " +
                   at("sr", "k", sj) + ");");
            c.line("yr[k + 1] = (" + T + ")(xr[k + 1] * " + at("cr", "(k + 1)", cj) +
                   " + xr[k] * " + at("sr", "(k + 1)", sj) + ");");
            c.close();
          }
        },
        D);
    return llvm::Error::success();
  }

  if (isa<tg::SwigluOp>(op)) {
    if (!ct->isFloat)
      return opError(op, "swiglu needs a float type");
    // y[r, k] = silu(x[r, k]) * x[r, N + k], one pass over the rows of x.
    Shape x = shapeOf(op->getOperand(0));
    int64_t N = x.back() / 2, R = product(x, 0, x.size() - 1);
    if (R * N == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    std::string pr = pragma(R * N * 9);
    if (!pr.empty() && R > 1)
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(R) + "; ++r)");
    c.line("const " + T + " *xr = in0 + r * " + str(2 * N) + ";");
    c.line(T + " *yr = out0 + r * " + str(N) + ";");
    c.line("for (int64_t k = 0; k < " + str(N) + "; ++k) yr[k] = tg_mul<" + T + ">(tg_silu<" + T +
           ">(xr[k]), xr[k + " + str(N) + "]);");
    c.close();
    return llvm::Error::success();
  }

  if (auto tr = dyn_cast<tg::TransposeOp>(op)) {
    Shape x = shapeOf(tr.getInput()), y = shapeOf(tr.getResult()), xs = contiguousStrides(x), st;
    for (Attribute p : tr.getPerm())
      st.push_back(xs[p.cast<IntegerAttr>().getInt()]);
    loopNest(c, y, {contiguousStrides(y), st}, {"0", "0"},
             [&](Code &c, const std::vector<std::string> &o) {
               c.line("out0[" + o[0] + "] = in0[" + o[1] + "];");
             });
    return llvm::Error::success();
  }

  if (auto sl = dyn_cast<tg::SliceOp>(op)) {
    Shape x = shapeOf(sl.getInput()), y = shapeOf(sl.getResult()), xs = contiguousStrides(x), st;
    int64_t base = 0;
    size_t d = 0;
    for (auto [s, k] : llvm::zip(sl.getStarts(), sl.getSteps())) {
      int64_t start = s.cast<IntegerAttr>().getInt(), step = k.cast<IntegerAttr>().getInt();
      if (y[d] > 0)
        base += start * xs[d];
      st.push_back(step * xs[d]);
      ++d;
    }
    loopNest(c, y, {contiguousStrides(y), st}, {"0", str(base)},
             [&](Code &c, const std::vector<std::string> &o) {
               c.line("out0[" + o[0] + "] = in0[" + o[1] + "];");
             });
    return llvm::Error::success();
  }

  if (auto ex = dyn_cast<tg::ExpandOp>(op)) {
    Shape x = shapeOf(ex.getInput()), y = shapeOf(ex.getResult());
    loopNest(c, y, {contiguousStrides(y), broadcastStrides(x, y)}, {"0", "0"},
             [&](Code &c, const std::vector<std::string> &o) {
               c.line("out0[" + o[0] + "] = in0[" + o[1] + "];");
             });
    return llvm::Error::success();
  }

  if (auto pad = dyn_cast<tg::PadOp>(op)) {
    Shape x = shapeOf(pad.getInput()), y = shapeOf(pad.getResult()), p;
    for (Attribute a : pad.getPads())
      p.push_back(a.cast<IntegerAttr>().getInt());
    double value = pad.getValue().convertToDouble();
    std::string lit = ct->isFloat ? floatLiteral(value, T == "float")
                                  : (ct->isBool ? (value != 0 ? "1" : "0")
                                                : str(static_cast<int64_t>(value)));
    c.line("std::fill(out0, out0 + " + str(product(y)) + ", (" + T + ")" + lit + ");");
    size_t r = x.size();
    Shape region(r), ys = contiguousStrides(y), xs = contiguousStrides(x);
    int64_t ob = 0, ib = 0;
    for (size_t d = 0; d < r; ++d) {
      int64_t begin = p[d], end = p[d + r];
      int64_t skipIn = std::max<int64_t>(-begin, 0), cutIn = std::max<int64_t>(-end, 0);
      region[d] = std::max<int64_t>(x[d] - skipIn - cutIn, 0);
      ob += std::max<int64_t>(begin, 0) * ys[d];
      ib += skipIn * xs[d];
    }
    loopNest(c, region, {ys, xs}, {str(ob), str(ib)},
             [&](Code &c, const std::vector<std::string> &o) {
               c.line("out0[" + o[0] + "] = in0[" + o[1] + "];");
             });
    return llvm::Error::success();
  }

  if (auto cat = dyn_cast<tg::ConcatOp>(op)) {
    Shape y = shapeOf(cat.getResult());
    int64_t axis = *tgc::normalizeAxis(cat.getAxis(), y.size());
    int64_t outer = product(y, 0, axis), row = product(y, axis);
    if (outer * row == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    std::string pr = pragma(outer * row);
    if (!pr.empty() && outer > 1)
      c.line(pr);
    c.open("for (int64_t o = 0; o < " + str(outer) + "; ++o)");
    int64_t off = 0;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      int64_t chunk = product(shapeOf(op->getOperand(i)), axis);
      if (chunk > 0)
        c.line("std::memcpy(out0 + o * " + str(row) + " + " + str(off) + ", " + inPtr[i] +
               " + o * " + str(chunk) + ", " + str(chunk) + " * " + sz + ");");
      off += chunk;
    }
    c.close();
    return llvm::Error::success();
  }

  if (auto sp = dyn_cast<tg::SplitOp>(op)) {
    Shape x = shapeOf(sp.getInput());
    int64_t axis = *tgc::normalizeAxis(sp.getAxis(), x.size());
    int64_t outer = product(x, 0, axis), row = product(x, axis);
    if (outer * row == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    std::string pr = pragma(outer * row);
    if (!pr.empty() && outer > 1)
      c.line(pr);
    c.open("for (int64_t o = 0; o < " + str(outer) + "; ++o)");
    int64_t off = 0;
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      int64_t chunk = product(shapeOf(op->getResult(i)), axis);
      if (chunk > 0)
        c.line("std::memcpy(" + outPtr[i] + " + o * " + str(chunk) + ", in0 + o * " + str(row) +
               " + " + str(off) + ", " + str(chunk) + " * " + sz + ");");
      off += chunk;
    }
    c.close();
    return llvm::Error::success();
  }

  if (auto g = dyn_cast<tg::GatherOp>(op)) {
    Shape d = shapeOf(g.getData()), idx = shapeOf(g.getIndices());
    int64_t axis = *tgc::normalizeAxis(g.getAxis(), d.size());
    int64_t outer = product(d, 0, axis), A = d[axis], inner = product(d, axis + 1),
            NI = product(idx);
    int64_t total = outer * NI * inner;
    if (total == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    if (A == 0) {
      c.line("std::fill(out0, out0 + " + str(total) + ", (" + T + ")0); // no data to gather");
      return llvm::Error::success();
    }
    c.line(sourceComment("indices are wrapped (negative + " + str(A) + ") and clamped to [0, " +
           str(A - 1) + "]: an out-of-range index never reads out of bounds"));
    std::string pr = pragma(total);
    if (!pr.empty())
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(outer * NI) + "; ++r)");
    c.line("const int64_t o = r / " + str(NI) + ", k = r % " + str(NI) + ";");
    c.line("int64_t i = (int64_t)in1[k];");
    c.line("if (i < 0) i += " + str(A) + ";");
    c.line("i = i < 0 ? 0 : (i >= " + str(A) + " ? " + str(A - 1) + " : i);");
    if (inner == 1)
      c.line("out0[r] = in0[o * " + str(A) + " + i];");
    else
      c.line("std::memcpy(out0 + r * " + str(inner) + ", in0 + (o * " + str(A) + " + i) * " +
             str(inner) + ", " + str(inner) + " * " + sz + ");");
    c.close();
    return llvm::Error::success();
  }

  if (auto ge = dyn_cast<tg::GatherElementsOp>(op)) {
    Shape d = shapeOf(ge.getData()), idx = shapeOf(ge.getIndices());
    int64_t axis = *tgc::normalizeAxis(ge.getAxis(), d.size());
    Shape ds = contiguousStrides(d), st = ds;
    st[axis] = 0;
    int64_t A = d[axis];
    if (A == 0) {
      c.line("std::fill(out0, out0 + " + str(product(idx)) + ", (" + T + ")0);");
      return llvm::Error::success();
    }
    for (size_t k = 0; k < d.size(); ++k)
      if (k != (size_t)axis && idx[k] > d[k])
        return opError(op, "indices dim " + std::to_string(k) + " exceeds the data's");
    c.line(sourceComment("indices wrap and are clamped to [0, " + str(A - 1) + "]"));
    loopNest(c, idx, {contiguousStrides(idx), contiguousStrides(idx), st}, {"0", "0", "0"},
             [&](Code &c, const std::vector<std::string> &o) {
               c.line("int64_t i = (int64_t)in1[" + o[1] + "];");
               c.line("if (i < 0) i += " + str(A) + ";");
               c.line("i = i < 0 ? 0 : (i >= " + str(A) + " ? " + str(A - 1) + " : i);");
               c.line("out0[" + o[0] + "] = in0[" + o[2] + " + i * " + str(ds[axis]) + "];");
             });
    return llvm::Error::success();
  }

  return opError(op, "op not supported by the CPU backend");
}

llvm::Expected<EmittedKernel> KernelEmitter::emit(Operation *op, int index, std::string &code) {
  KernelBuilder kb{*this, op};
  // Name and label: the op kinds it computes and the ONNX nodes it came from.
  std::string kinds, names = locationNames(op->getLoc());
  if (auto f = dyn_cast<tg::FusedOp>(op)) {
    kinds = f.getKind().str();
    std::string inner;
    for (Operation &o : f.getBody().front().without_terminator()) {
      if (isa<tg::ConstantOp>(o))
        continue;
      kinds += "_" + o.getName().stripDialect().str();
      inner += (inner.empty() ? "" : ", ") + o.getName().stripDialect().str();
      std::string n = locationNames(o.getLoc());
      if (!n.empty() && names.find(n) == std::string::npos)
        names += (names.empty() ? "" : ", ") + n;
    }
    kinds = kinds.substr(0, 48);
  } else {
    kinds = op->getName().stripDialect().str();
  }
  std::string label = op->getName().getStringRef().str();
  if (auto f = dyn_cast<tg::FusedOp>(op)) {
    label += " \"" + f.getKind().str() + "\" [";
    bool first = true;
    for (Operation &o : f.getBody().front().without_terminator()) {
      label += (first ? "" : ", ") + o.getName().stripDialect().str();
      first = false;
    }
    label += "]";
  }
  if (!names.empty())
    label += " <- " + names;
  EmittedKernel k;
  k.symbol = "tgk_" + std::to_string(index) + "_" + kinds;
  for (char &ch : k.symbol)
    if (!isalnum((unsigned char)ch) && ch != '_')
      ch = '_';
  k.label = label;
  if (auto e = kb.bindArgs())
    return std::move(e);
  if (auto e = kb.emitOp(op))
    return std::move(e);
  k.args = kb.args;
  std::string shapes;
  for (Value v : op->getOperands()) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << v.getType();
    shapes += (shapes.empty() ? "" : ", ") + os.str();
  }
  code += "\n" + kb.globals;
  code += sourceComment(label) + "\n";
  code += sourceComment("  operands: " + (shapes.empty() ? std::string("none") : shapes)) + "\n";
  code += "extern \"C\" void " + k.symbol + "(void *const *args) {\n" + kb.decls + kb.body + "}\n";
  return k;
}

} // namespace tgc::cpu
