// CpuKernels.cpp — emits one C++ kernel per top-level op of kernel-formed `tg` IR.
//
// Every kernel is `extern "C" void tgk_<n>_<ops>(void* const* args)` with the static shapes baked
// in as constants. Elementwise code (tg.fused "pointwise", gemm epilogues, standalone
// elementwise ops) is one loop nest over the output: operands are read through per-operand
// strides (0 on broadcast dims), dims that are contiguous for every operand are collapsed, and
// the outermost loop runs under OpenMP when the work is large. GEMMs and convolutions call the
// templates of the prelude (CpuPrelude.cpp), which use OpenBLAS for f32/f64.
#include "codegen/cpu/CpuBuilder.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace tgc::cpu {


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

  if (isa<tg::ConvOp, tg::PoolOp>(op))
    return emitConv(op, &*ct);
  if (isa<tg::LayerNormOp, tg::RmsNormOp, tg::SoftmaxOp>(op))
    return emitNorm(op, &*ct);
  if (isa<tg::AttentionOp, tg::RotaryOp, tg::SwigluOp>(op))
    return emitAttention(op, &*ct);
  if (isa<tg::ReduceSumOp, tg::ReduceMeanOp, tg::ReduceMaxOp, tg::ReduceMinOp, tg::ReduceProdOp, tg::ArgMaxOp>(op))
    return emitReduction(op, &*ct);
  if (isa<tg::TransposeOp, tg::SliceOp, tg::ExpandOp, tg::PadOp, tg::ConcatOp, tg::SplitOp, tg::GatherOp, tg::GatherElementsOp>(op))
    return emitMovement(op, &*ct);

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
