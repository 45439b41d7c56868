// CudaKernels.cpp — emits CUDA C++ kernels (and GEMM steps) for kernel-formed `tg` IR.
//
// Every kernel is `extern "C" __global__ void tgk_<n>_<ops>(T *in0, ..., T *out0)` with the
// static shapes baked in as constants, launched as a 1-D grid of kBlock threads. Elementwise code
// (tg.fused "pointwise", gemm epilogues, standalone elementwise ops) and data movement
// (transpose, slice, expand, pad, concat, split, gather) are grid-stride loops with one thread per
// output element: operands are read through per-operand strides (0 on broadcast dims), dims that
// are contiguous for every operand are collapsed, and the index type is 32-bit when every tensor
// of the kernel fits. GEMMs (tg.linear, tg.matmul, the GEMM of a tg.fused "gemm") become GEMM
// steps the runtime runs through cuBLASLt; a linear's bias rides in the cuBLASLt epilogue, and
// any other epilogue becomes one elementwise kernel after the GEMM. This file holds the builder's
// core (parameters, grid loops, leaves, gathers read through), elementwise and fused kernels and
// the dispatch; one op family per file beside it: CudaGemmSteps.cpp, CudaMovement.cpp,
// CudaRowKernels.cpp (norms, softmax, reductions, convolution), CudaAttention.cpp.
#include "codegen/cuda/CudaBuilder.h"
#include "codegen/cuda/CudaMmaGemm.h"

#include "compiler/dialect/TgDialect.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

using namespace mlir;

namespace tgc::cuda {

llvm::Error opError(Operation *op, const llvm::Twine &msg) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "op '" << op->getName() << "' at " << op->getLoc();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "CUDA backend: " + msg + " (" + os.str() + ")");
}

llvm::Expected<CType> ctypeOf(Type t, Operation *op) {
  if (t.isF32())
    return CType{"float", true, false};
  if (t.isF64())
    return CType{"double", true, false};
  if (t.isF16())
    return CType{"__half", true, false, true};
  if (t.isBF16())
    return CType{"__nv_bfloat16", true, false, true};
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
  if (std::isnan(v))
    return f32 ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(v))
    return std::string(v < 0 ? "-" : "") + (f32 ? "tg_inf_f()" : "tg_inf_d()");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", f32 ? (double)(float)v : v);
  return std::string(buf) + (f32 ? "f" : "");
}

namespace {

/// Literals of every element of a dense constant (one when splat); f16/bf16 values as float
/// literals (exact: both are subsets of f32).
llvm::Expected<std::vector<std::string>> literalsOf(DenseElementsAttr a, Operation *op) {
  auto out = codegen::denseLiterals(
      a, [](Type e) { return e.isF32() || e.isF64() || e.isF16() || e.isBF16(); }, floatLiteral);
  if (!out)
    return opError(op, "constant element type not supported");
  return std::move(*out);
}

} // namespace

int64_t KernelBuilder::gridFor(int64_t total, int64_t block) {
  int64_t g = (total + block - 1) / block;
  return std::max<int64_t>(1, std::min<int64_t>(g, 1 << 16));
}

void KernelBuilder::addParam(const std::string &decl, StepArg arg) {
  params.push_back(decl);
  kargs.push_back(arg);
}

llvm::Error KernelBuilder::beginKernel() {
  params.clear();
  kargs.clear();
  body.clear();
  sharedBytes = 0;
  oneBlockPerSm = false;
  vecWidth = 1;
  inPtr.clear();
  outPtr.clear();
  c.ind = 1;
  // 32-bit indices when every tensor of the op fits.
  int64_t biggest = 0;
  for (Value v : root->getOperands())
    biggest = std::max(biggest, product(shapeOf(v)));
  for (Value v : root->getResults())
    biggest = std::max(biggest, product(shapeOf(v)));
  it = biggest < (int64_t(1) << 30) ? "int" : "int64_t";
  for (Value v : root->getOperands()) {
    auto loc = em.plan_.locs.find(v);
    if (loc == em.plan_.locs.end())
      return opError(root, "operand has no planned storage");
    if (loc->second.kind == BufferLoc::Inline) {
      inPtr.push_back("");
      continue;
    }
    auto ct = ctypeOf(v, root);
    if (!ct)
      return ct.takeError();
    std::string name = "in" + std::to_string(inPtr.size());
    addParam("const " + ct->name + " *" + name, StepArg{v});
    inPtr.push_back(name);
  }
  for (Value v : root->getResults()) {
    auto ct = ctypeOf(v, root);
    if (!ct)
      return ct.takeError();
    std::string name = "out" + std::to_string(outPtr.size());
    addParam(ct->name + " *" + name, StepArg{v});
    outPtr.push_back(name);
  }
  return llvm::Error::success();
}

void KernelBuilder::endKernel(std::string &code, int64_t grid, int64_t block) {
  EmittedStep s;
  s.symbol = symbolBase;
  s.label = label;
  s.args = kargs;
  s.grid = grid;
  s.block = block;
  s.sharedBytes = sharedBytes;
  s.oneBlockPerSm = oneBlockPerSm;
  s.norm = norm;
  norm.Clear();
  std::string ps;
  for (size_t i = 0; i < params.size(); ++i)
    ps += (i ? ", " : "") + params[i];
  std::string shapes;
  for (Value v : root->getOperands()) {
    std::string t;
    llvm::raw_string_ostream os(t);
    os << v.getType();
    shapes += (shapes.empty() ? "" : ", ") + os.str();
  }
  // Identical kernels (the same op on the same shapes in every transformer layer) are emitted
  // once and shared by their steps: NVRTC time grows with the text, not with the layer count.
  std::string key = globals + std::to_string(block) + "/" + std::to_string(sharedBytes) + "(" + ps +
                    ") {\n" + body;
  auto [known, fresh] = em.kernelBySource_.try_emplace(std::move(key), s.symbol);
  if (!fresh) {
    s.symbol = known->second;
  } else {
    code += "\n" + globals;
    code += sourceComment(label) + "\n";
    code += sourceComment("  operands: " + (shapes.empty() ? std::string("none") : shapes)) + "\n";
    code += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " +
            s.symbol + "(" + ps + ") {\n" + (bodyWaits ? "" : "  tg_pdl_begin();\n") + body +
            "}\n";
  }
  globals.clear();
  bodyWaits = false;
  steps.push_back(std::move(s));
}

void KernelBuilder::gridLoop(
    const Shape &shape, const std::vector<Shape> &strides, const std::vector<std::string> &bases,
    const std::function<void(Code &, const std::vector<std::string> &)> &body) {
  size_t n = strides.size();
  int64_t total = product(shape);
  const std::vector<std::pair<int64_t, Shape>> dims = codegen::mergeLoopDims(shape, strides);
  c.open("for (" + it + " i = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x; i < " +
         str(total) + "; i += (" + it + ")gridDim.x * blockDim.x)");
  std::vector<std::string> offs(n);
  c.line(it + " rem = i;");
  for (size_t k = 0; k < n; ++k) {
    offs[k] = "o" + std::to_string(k);
    c.line(it + " " + offs[k] + " = " + bases[k] + ";");
  }
  for (int64_t d = (int64_t)dims.size() - 1; d >= 0; --d) {
    std::string cd = "c" + std::to_string(d);
    if (d == 0) {
      c.line("const " + it + " " + cd + " = rem;");
    } else {
      c.line("const " + it + " " + cd + " = rem % " + str(dims[d].first) + ";");
      c.line("rem /= " + str(dims[d].first) + ";");
    }
    for (size_t k = 0; k < n; ++k)
      if (dims[d].second[k] != 0)
        c.line(offs[k] + " += " + offsetExpr("0", cd, dims[d].second[k]) + ";");
  }
  c.line("(void)rem;");
  body(c, offs);
  c.close();
}

llvm::Expected<Leaf> KernelBuilder::constantLeaf(Value v, Operation *owner) {
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
    l.splat = "(" + ct->calc() + ")" + lits->front();
    return l;
  }
  // f16/bf16 arrays are kept as their (exact) float values: no conversion on load.
  if (ct->lowp)
    l.ct = CType{"float", true, false};
  std::string name = "tgc_k" + std::to_string(em.constants_++);
  std::string s = "__device__ const " + l.ct.name + " " + name + "[" +
                  std::to_string(lits->size()) + "] = {";
  for (size_t i = 0; i < lits->size(); ++i)
    s += (i ? ", " : "") + (*lits)[i];
  globals += s + "};\n";
  l.ptr = name;
  return l;
}

llvm::Expected<Leaf> KernelBuilder::operandLeaf(unsigned i) {
  Value v = root->getOperand(i);
  if (inPtr[i].empty())
    return constantLeaf(v, root);
  auto ct = ctypeOf(v, root);
  if (!ct)
    return ct.takeError();
  return Leaf{shapeOf(v), *ct, inPtr[i], "", readThroughGather(i)};
}

bool KernelBuilder::gatherReadable(tg::GatherOp g) const {
  const Value r = g.getResult();
  const Shape d = shapeOf(g.getData());
  auto axis = tgc::normalizeAxis(g.getAxis(), d.size());
  Operation *user = g->getNextNode();
  if (!axis || *axis != 0 || d.size() != 2 || d[0] == 0 || d[1] == 0 || !user ||
      user->getNumResults() != 1 || llvm::count(user->getOperands(), r) != 1)
    return false;
  // The kernel's writes (its results, the op it applies after a norm) clear of what it reads.
  std::vector<Value> written(user->getResults().begin(), user->getResults().end());
  if (Operation *epi = isa<tg::LayerNormOp, tg::RmsNormOp>(user) ? normEpilogue(user) : nullptr)
    written.push_back(epi->getResult(0));
  for (Value v : {g.getData(), g.getIndices()}) {
    auto loc = em.plan_.locs.find(v);
    if (loc == em.plan_.locs.end() || loc->second.kind == BufferLoc::Inline)
      return false;
    for (Value w : written) {
      auto wl = em.plan_.locs.find(w);
      if (wl == em.plan_.locs.end() || overlaps(loc->second, wl->second))
        return false;
    }
  }
  if (castFoldsIntoTranspose(user))
    return false; // the transpose after the cast would read the gather's unwritten result
  const Shape rs = shapeOf(r);
  if (isa<tg::LayerNormOp, tg::RmsNormOp>(user)) {
    const int64_t ax = isa<tg::LayerNormOp>(user)
                           ? cast<tg::LayerNormOp>(user).getAxis()
                           : cast<tg::RmsNormOp>(user).getAxisAttr().getInt();
    auto a = tgc::normalizeAxis(ax, rs.size());
    return user->getOperand(0) == r && a && *a == (int64_t)rs.size() - 1;
  }
  auto f = dyn_cast<tg::FusedOp>(user);
  return r.hasOneUse() && ((f && f.getKind() == "pointwise") || isElementwiseOp(user)) &&
         shapeOf(user->getResult(0)) == rs;
}

GatherRead KernelBuilder::readThroughGather(unsigned i) {
  const Value v = root->getOperand(i);
  auto g = v.getDefiningOp<tg::GatherOp>();
  // (Later readers of a norm's gathered rows read the rows the norm kernel stored.)
  if (!g || !em.readThrough_.count(g) || g->getNextNode() != root || inPtr[i].empty())
    return {};
  auto ict = ctypeOf(g.getIndices(), g);
  auto rct = ctypeOf(v, g);
  if (!ict || !rct) {
    llvm::consumeError(ict.takeError());
    llvm::consumeError(rct.takeError());
    return {};
  }
  // in<i> reads the table: the operands' parameters come first, inlined operands have none.
  kargs[(size_t)llvm::count_if(llvm::makeArrayRef(inPtr).take_front(i),
                               [](const std::string &p) { return !p.empty(); })] =
      StepArg{g.getData()};
  GatherRead r;
  r.idx = "gidx" + std::to_string(i);
  addParam("const " + ict->name + " *" + r.idx, StepArg{g.getIndices()});
  if (!v.hasOneUse()) { // (a norm: gatherReadable)
    r.out = "gout" + std::to_string(i);
    addParam(rct->name + " *" + r.out, StepArg{v});
  }
  const Shape d = shapeOf(g.getData());
  r.rows = d[0], r.cols = d[1];
  const std::string names = locationNames(g->getLoc());
  label += " + tg.gather" + std::string(r.out.empty() ? "" : " (rows stored)") +
           (names.empty() ? "" : " <- " + names);
  return r;
}

void KernelBuilder::gatherRowLines(const GatherRead &g, const std::string &row,
                                   const std::string &var) {
  c.line("int64_t " + var + " = (int64_t)" + g.idx + "[" + row + "];");
  c.line("if (" + var + " < 0) " + var + " += " + str(g.rows) + ";");
  c.line(var + " = " + var + " < 0 ? 0 : (" + var + " >= " + str(g.rows) + " ? " +
         str(g.rows - 1) + " : " + var + ");");
}

llvm::Expected<std::string> KernelBuilder::elemExpr(Operation *op,
                                                    const std::vector<std::string> &a) {
  auto rt = ctypeOf(op->getResult(0), op);
  if (!rt)
    return rt.takeError();
  Value typed = isa<tg::WhereOp>(op) ? op->getOperand(1) : op->getOperand(0);
  auto t = ctypeOf(typed, op);
  if (!t)
    return t.takeError();
  std::string name = op->getName().stripDialect().str();
  if (auto g = dyn_cast<tg::GeluOp>(op))
    name = g.getTanhApprox() ? "gelu_tanh" : "gelu";
  std::string args;
  for (size_t i = 0; i < a.size(); ++i)
    args += (i ? ", " : "") + a[i];
  if (isa<tg::CastOp>(op))
    return "tg_cast<" + rt->calc() + ", " + (rt->isBool ? "true" : "false") + ", " + t->calc() +
           ">(" + args + ")";
  return "tg_" + name + "<" + t->calc() + ">(" + args + ")";
}

llvm::Error KernelBuilder::elementwise(llvm::ArrayRef<Operation *> ops,
                                       std::vector<std::pair<Value, Leaf>> leaves, Value result,
                                       const std::string &out) {
  Shape outShape = shapeOf(result);
  auto fits = [&](const Shape &s) {
    auto b = tgc::broadcastShapes(s, outShape);
    return b && *b == outShape;
  };
  for (auto &[v, l] : leaves)
    if (!fits(l.shape))
      return opError(root, "operand shape " + tgc::shapeToString(l.shape) +
                               " does not broadcast to the kernel's result " +
                               tgc::shapeToString(outShape));
  for (Operation *op : ops)
    if (!fits(shapeOf(op->getResult(0))))
      return opError(op, "intermediate shape larger than the kernel's result");
  // Element expressions are checked before the loop is written so errors surface early.
  for (Operation *op : ops) {
    auto e = elemExpr(op, std::vector<std::string>(op->getNumOperands(), "x"));
    if (!e)
      return e.takeError();
  }
  // One output element: the leaves (loaded through `load(leaf index)`, splats as literals), the
  // ops in order, and the result converted to the storage type (returned).
  llvm::Error error = llvm::Error::success();
  CType rct = llvm::cantFail(ctypeOf(result, root));
  auto element = [&](Code &c, const std::function<std::string(size_t)> &load) -> std::string {
    llvm::DenseMap<Value, std::string> names;
    for (size_t k = 0; k < leaves.size(); ++k) {
      const auto &[v, l] = leaves[k];
      std::string name = fresh("v");
      c.line("const " + l.ct.calc() + " " + name + " = " + (l.ptr.empty() ? l.splat : load(k)) +
             ";");
      names[v] = name;
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
      std::string e = llvm::cantFail(elemExpr(op, a));
      std::string rt = llvm::cantFail(ctypeOf(op->getResult(0), op)).calc();
      std::string name = fresh("v");
      c.line("const " + rt + " " + name + " = " + e + ";");
      names[op->getResult(0)] = name;
    }
    auto n = names.find(result);
    if (n == names.end()) {
      if (!error)
        error = opError(root, "kernel result is not computed by its ops");
      return "0";
    }
    return rct.lowp ? rct.st(n->second) : n->second;
  };
  // Every buffer read in the output's own layout, one storage type of 2 or 4 bytes, 16-byte
  // aligned buffers, a multiple of 16 bytes: each thread moves 16-byte vectors (8 or 4 elements).
  const int64_t total = product(outShape);
  const int64_t V = rct.lowp ? 8 : (rct.name == "float" ? 4 : 0);
  bool vec = V > 0 && total % V == 0 && total > 0;
  for (auto &[v, l] : leaves)
    vec = vec && (l.ptr.empty() || (l.shape == outShape && l.ct.name == rct.name)) &&
          (l.gather.idx.empty() || l.gather.cols % V == 0);
  vec = vec && argsAligned16();
  if (vec) {
    vecWidth = V;
    c.open("for (" + it + " i = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x; i < " +
           str(total / V) + "; i += (" + it + ")gridDim.x * blockDim.x)");
    std::vector<std::string> vecs(leaves.size()); // each leaf's loaded vector, as elements
    for (size_t k = 0; k < leaves.size(); ++k)
      if (!leaves[k].second.ptr.empty()) {
        const Leaf &l = leaves[k].second;
        std::string r = fresh("r");
        if (!l.gather.idx.empty()) { // the vector lies in one gathered row
          const std::string gx = fresh("gx"), cols = str(l.gather.cols);
          gatherRowLines(l.gather, "(int64_t)i * " + str(V) + " / " + cols, gx);
          c.line("const uint4 " + r + " = *reinterpret_cast<const uint4 *>(" + l.ptr + " + " + gx +
                 " * " + cols + " + (int64_t)i * " + str(V) + " % " + cols + ");");
        } else {
          c.line("const uint4 " + r + " = reinterpret_cast<const uint4 *>(" + l.ptr + ")[i];");
        }
        vecs[k] = "reinterpret_cast<const " + leaves[k].second.ct.name + " *>(&" + r + ")";
      }
    c.line("uint4 w;");
    c.line(rct.name + " *wp = reinterpret_cast<" + rct.name + " *>(&w);");
    c.line("#pragma unroll");
    c.open("for (int u = 0; u < " + str(V) + "; ++u)");
    std::string r = element(c, [&](size_t k) { return leaves[k].second.ct.ld(vecs[k] + "[u]"); });
    c.line("wp[u] = " + r + ";");
    c.close();
    c.line("reinterpret_cast<uint4 *>(" + out + ")[i] = w;");
    c.close();
    return error;
  }
  std::vector<Shape> strides{contiguousStrides(outShape)};
  std::vector<std::string> bases{"0"};
  std::vector<size_t> operandOf(leaves.size()); // leaf -> its offset's index in the loop
  for (size_t k = 0; k < leaves.size(); ++k)
    if (!leaves[k].second.ptr.empty()) {
      operandOf[k] = strides.size();
      strides.push_back(broadcastStrides(leaves[k].second.shape, outShape));
      bases.push_back("0");
    }
  gridLoop(outShape, strides, bases, [&](Code &c, const std::vector<std::string> &offs) {
    std::string r = element(c, [&](size_t k) {
      const Leaf &l = leaves[k].second;
      const std::string &off = offs[operandOf[k]];
      if (l.gather.idx.empty())
        return l.ct.ld(l.ptr + "[" + off + "]");
      // The leaf has the result's shape: its offset is the element's, row off / cols.
      const std::string gx = fresh("gx"), cols = str(l.gather.cols);
      gatherRowLines(l.gather, off + " / " + cols, gx);
      return l.ct.ld(l.ptr + "[" + gx + " * " + cols + " + " + off + " % " + cols + "]");
    });
    c.line(out + "[" + offs[0] + "] = " + r + ";");
  });
  return error;
}








Operation *KernelBuilder::normEpilogue(Operation *norm) const {
  Value y = norm->getResult(0);
  if (!y.hasOneUse())
    return nullptr;
  Operation *user = *y.getUsers().begin();
  if (user != norm->getNextNode() || user->getNumOperands() != 1 || user->getNumResults() != 1 ||
      !isElementwiseOp(user) || shapeOf(user->getResult(0)) != shapeOf(y))
    return nullptr;
  auto out = em.plan_.locs.find(user->getResult(0));
  if (out == em.plan_.locs.end() || out->second.kind != BufferLoc::Arena)
    return nullptr;
  // Clear of the norm's operands, except exactly in place of its input with the same element
  // type (each row is read by the threads that write it, element j before j is written).
  for (Value v : norm->getOperands()) {
    auto loc = em.plan_.locs.find(v);
    const bool inPlace = v == norm->getOperand(0) && loc != em.plan_.locs.end() &&
                         loc->second.kind == out->second.kind &&
                         loc->second.offset == out->second.offset &&
                         loc->second.bytes == out->second.bytes &&
                         v.getType() == user->getResult(0).getType();
    if (loc != em.plan_.locs.end() && overlaps(loc->second, out->second) && !inPlace)
      return nullptr;
  }
  return user;
}




llvm::Error KernelBuilder::emitFused(Operation *rootOp, std::string &code) {
  auto op = cast<tg::FusedOp>(rootOp);
  Block &body = op.getBody().front();
  auto yield = cast<tg::YieldOp>(body.getTerminator());
  Value result = yield.getValues()[0];
  if (auto e = beginKernel())
    return e;
  Operation *first = nullptr; // the GEMM of a "gemm" kernel: its first non-constant op
  for (Operation &inner : body.without_terminator())
    if (!isa<tg::ConstantOp>(inner) && !first)
      first = &inner;
  bool isGemm = op.getKind() == "gemm";
  if (!isGemm && op.getKind() != "pointwise")
    return opError(op, "unknown fused kind '" + op.getKind().str() + "'");
  std::vector<std::pair<Value, Leaf>> leaves;
  for (unsigned i = 0; i < body.getNumArguments(); ++i) {
    bool epilogueReads = false;
    for (Operation *user : body.getArgument(i).getUsers())
      epilogueReads = epilogueReads || !(isGemm && user == first);
    if (!epilogueReads)
      continue;
    auto l = operandLeaf(i);
    if (!l)
      return l.takeError();
    leaves.push_back({body.getArgument(i), *l});
  }
  Operation *gemm = nullptr;
  std::vector<Operation *> ops;
  for (Operation &inner : body.without_terminator()) {
    if (isa<tg::ConstantOp>(inner)) {
      auto l = constantLeaf(inner.getResult(0), &inner);
      if (!l)
        return l.takeError();
      leaves.push_back({inner.getResult(0), *l});
      continue;
    }
    if (isGemm && !gemm) {
      if (!isa<tg::LinearOp, tg::MatmulOp>(inner))
        return opError(&inner, "a gemm kernel must start with tg.linear or tg.matmul");
      gemm = &inner;
      continue;
    }
    if (!isElementwiseOp(&inner))
      return opError(&inner, "op not supported inside a fused " + op.getKind().str() + " kernel");
    ops.push_back(&inner);
  }
  Value out = op.getResult();
  if (product(shapeOf(out)) == 0)
    return llvm::Error::success();
  if (!isGemm) {
    if (auto e = elementwise(ops, leaves, result, outPtr[0]))
      return e;
    endKernel(code, gridFor(product(shapeOf(out)) / vecWidth), kBlock);
    return llvm::Error::success();
  }
  if (!gemm)
    return opError(op, "gemm kernel without tg.linear or tg.matmul");
  std::vector<StepArg> gargs;
  for (Value v : gemm->getOperands()) {
    auto arg = v.dyn_cast<BlockArgument>();
    if (!arg || arg.getOwner() != &body || inPtr[arg.getArgNumber()].empty())
      return opError(gemm, "gemm operands must be kernel arguments held in buffers");
    gargs.push_back(StepArg{op->getOperand(arg.getArgNumber())});
  }
  Value g = gemm->getResult(0);
  if (result == g) {
    if (auto e = emitGemm(gemm, gargs, StepArg{out}, true))
      return e;
    foldOutputTranspose(out);
    return llvm::Error::success();
  }
  // gemm + residual (one add of a same-shaped buffer): the GEMM adds it, no epilogue kernel.
  if (ops.size() == 1 && isa<tg::AddOp>(ops[0]) && ops[0]->getResult(0) == result &&
      g.getType() == out.getType()) {
    Value other = ops[0]->getOperand(0) == g ? ops[0]->getOperand(1) : ops[0]->getOperand(0);
    auto arg = other.dyn_cast<BlockArgument>();
    if (other != g && (ops[0]->getOperand(0) == g || ops[0]->getOperand(1) == g) && arg &&
        arg.getOwner() == &body && !inPtr[arg.getArgNumber()].empty() &&
        other.getType() == out.getType())
      return emitGemm(gemm, gargs, StepArg{out}, true, StepArg{op->getOperand(arg.getArgNumber())});
  }
  // matmul + bias: an add of a buffer laid out [batch..., 1, N] (the same for every batch, or
  // one row per batch) rides in the GEMM's bias epilogue (per-batch bias stride).
  if (auto mm = dyn_cast<tg::MatmulOp>(gemm); mm && ops.size() == 1 &&
                                              isa<tg::AddOp>(ops[0]) &&
                                              ops[0]->getResult(0) == result &&
                                              g.getType() == out.getType()) {
    Value other = ops[0]->getOperand(0) == g ? ops[0]->getOperand(1) : ops[0]->getOperand(0);
    auto arg = other.dyn_cast<BlockArgument>();
    const Shape os = shapeOf(out);
    if (other != g && arg && arg.getOwner() == &body && !inPtr[arg.getArgNumber()].empty() &&
        other.getType().cast<RankedTensorType>().getElementType() ==
            g.getType().cast<RankedTensorType>().getElementType() &&
        os.size() >= 2) {
      const Shape bs = broadcastStrides(shapeOf(other), os);
      const Shape batchShape(os.begin(), os.end() - 2);
      const Shape cs = contiguousStrides(batchShape);
      const int64_t N = os.back();
      bool shared = true, perBatch = true;
      for (size_t d = 0; d < batchShape.size(); ++d) {
        shared = shared && bs[d] == 0;
        perBatch = perBatch && bs[d] == cs[d] * N;
      }
      const size_t stepsBefore = steps.size();
      if (bs[os.size() - 2] == 0 && bs.back() == 1 && (shared || perBatch)) {
        if (auto e = emitGemm(gemm, gargs, StepArg{out}, true))
          return e;
        if (steps.size() == stepsBefore + 1 &&
            (shared || steps.back().desc.batch() == product(batchShape))) {
          plan::GemmDesc &d = steps.back().desc;
          d.set_bias(true);
          d.set_bias_stride(shared ? 0 : N);
          steps.back().args.push_back(StepArg{op->getOperand(arg.getArgNumber())});
          foldOutputTranspose(out);
          return llvm::Error::success();
        }
        steps.resize(stepsBefore); // one GEMM per batch: the epilogue kernel below adds it
      }
    }
  }
  // linear (+ bias) + one activation, f16/bf16, on a shape tgc's tensor-core GEMM takes: the
  // GEMM step carries the activation, and the epilogue kernel below is marked to be skipped when
  // the runtime runs that GEMM on a kernel that applies it (cuBLASLt does not: then it runs).
  int fusedAct = 0;
  if (auto lin = dyn_cast<tg::LinearOp>(gemm);
      lin && ops.size() == 1 && ops[0]->getResult(0) == result && ops[0]->getOperand(0) == g &&
      g.getType() == out.getType()) {
    int act = isa<tg::ReluOp>(ops[0]) ? 1 : isa<tg::SiluOp>(ops[0]) ? 4 : 0;
    if (auto ge = dyn_cast<tg::GeluOp>(ops[0]))
      act = ge.getTanhApprox() ? 3 : 2;
    Type et = g.getType().cast<RankedTensorType>().getElementType();
    const int64_t K = shapeOf(lin.getInput()).back(), N = shapeOf(lin.getWeight())[0];
    if (act && mmaGemmShapeFits(et.isF16() ? 10 : (et.isBF16() ? 16 : 1), N, K, K, K, N, 0, 0, 0))
      fusedAct = act;
  }
  auto gt = ctypeOf(g, gemm);
  if (!gt)
    return gt.takeError();
  // The GEMM writes the output buffer when the epilogue keeps its shape and type (each element
  // is then read and rewritten in place by one thread); otherwise the scratch area.
  StepArg dst{out};
  std::string ptr = outPtr[0];
  if (shapeOf(g) != shapeOf(out) || g.getType() != out.getType()) {
    int64_t bytes = tensorBytes(g.getType());
    em.scratch_ = std::max(em.scratch_, (bytes + kBufferAlignment - 1) / kBufferAlignment *
                                            kBufferAlignment);
    dst = StepArg{Value(), 0, bytes};
    addParam("const " + gt->name + " *gtmp", dst);
    ptr = "gtmp";
  }
  // A bias feeding only the linear rides in the cuBLASLt epilogue.
  if (auto e = emitGemm(gemm, gargs, dst, true, std::nullopt, fusedAct))
    return e;
  c.line(sourceComment("epilogue: " + std::to_string(ops.size()) + " elementwise op(s) per output element"));
  leaves.push_back({g, Leaf{shapeOf(g), *gt, ptr, ""}});
  if (auto e = elementwise(ops, leaves, result, outPtr[0]))
    return e;
  endKernel(code, gridFor(product(shapeOf(out)) / vecWidth), kBlock);
  steps.back().skipIfGemmFused = fusedAct != 0;
  return llvm::Error::success();
}

llvm::Error KernelBuilder::emitOp(Operation *op, std::string &code) {
  if (auto g = dyn_cast<tg::GatherOp>(op); g && gatherReadable(g)) {
    em.readThrough_.insert(op); // the kernel after it reads the table's rows itself
    return llvm::Error::success();
  }
  if (isa<tg::FusedOp>(op))
    return emitFused(op, code);
  if (em.appliedByNorm_.count(op) || em.appliedBySplit_.count(op) || castFoldsIntoTranspose(op))
    return llvm::Error::success(); // the normalization or split before it / the transpose after
  if (auto e = beginKernel())
    return e;
  for (Value r : op->getResults())
    if (product(shapeOf(r)) == 0 && op->getNumResults() == 1)
      return llvm::Error::success(); // empty result: nothing to launch
  if (isElementwiseOp(op)) {
    std::vector<std::pair<Value, Leaf>> leaves;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto l = operandLeaf(i);
      if (!l)
        return l.takeError();
      leaves.push_back({op->getOperand(i), *l});
    }
    if (auto e = elementwise({op}, leaves, op->getResult(0), outPtr[0]))
      return e;
    endKernel(code, gridFor(product(shapeOf(op->getResult(0))) / vecWidth), kBlock);
    return llvm::Error::success();
  }
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    if (inPtr[i].empty())
      return opError(op, "operand " + std::to_string(i) + " was inlined but the op needs a buffer");
  if (isa<tg::LinearOp, tg::MatmulOp>(op)) {
    std::vector<StepArg> args;
    for (Value v : op->getOperands())
      args.push_back(StepArg{v});
    int64_t stride = 0;
    if (auto lin = dyn_cast<tg::LinearOp>(op))
      if (tg::SplitOp sp = splitWrittenBy(lin, &stride))
        return emitSplitGemm(lin, sp, stride, args);
    if (auto e = emitGemm(op, args, StepArg{op->getResult(0)}, true))
      return e;
    if (isa<tg::MatmulOp>(op))
      foldOutputTranspose(op->getResult(0));
    return llvm::Error::success();
  }
  if (auto sp = dyn_cast<tg::SplitOp>(op)) {
    Value in = sp.getInput();
    while (auto r = in.getDefiningOp<tg::ReshapeOp>())
      in = r.getInput();
    auto lin = in.getDefiningOp<tg::LinearOp>();
    const bool byGemm = lin && splitWrittenBy(lin) == sp; // the GEMM before wrote every result
    std::vector<tg::RotaryOp> rot = splitRotaries(sp);
    if (!rot.empty())
      return emitSplitRotary(sp, rot, byGemm, code);
    if (byGemm)
      return llvm::Error::success();
  }
  if (auto tr = dyn_cast<tg::TransposeOp>(op);
      tr && (gemmReadsThrough(tr) || em.writtenByGemm_.count(op)))
    return llvm::Error::success(); // the GEMM next to it moves the rows
  auto ct = ctypeOf(op->getResult(0), op);
  if (!ct)
    return ct.takeError();
  bool handled = false;
  if (auto e = emitRowKernel(op, *ct, code, handled))
    return e;
  if (handled)
    return llvm::Error::success();
  if (auto e = emitMovement(op, *ct))
    return e;
  int64_t total = 0;
  if (auto sp = dyn_cast<tg::SplitOp>(op))
    total = product(shapeOf(sp.getInput()));
  else
    total = product(shapeOf(op->getResult(0)));
  if (total == 0)
    return llvm::Error::success();
  endKernel(code, gridFor(total), kBlock);
  return llvm::Error::success();
}


llvm::Expected<std::vector<EmittedStep>> KernelEmitter::emit(Operation *op, int index,
                                                             std::string &code) {
  KernelBuilder kb{*this, op, index};
  std::string kinds, names = locationNames(op->getLoc());
  std::string label = op->getName().getStringRef().str();
  if (auto f = dyn_cast<tg::FusedOp>(op)) {
    kinds = f.getKind().str();
    label += " \"" + f.getKind().str() + "\" [";
    bool first = true;
    for (Operation &o : f.getBody().front().without_terminator()) {
      label += (first ? "" : ", ") + o.getName().stripDialect().str();
      first = false;
      if (isa<tg::ConstantOp>(o))
        continue;
      kinds += "_" + o.getName().stripDialect().str();
      std::string n = locationNames(o.getLoc());
      if (!n.empty() && names.find(n) == std::string::npos)
        names += (names.empty() ? "" : ", ") + n;
    }
    label += "]";
    kinds = kinds.substr(0, 48);
  } else {
    kinds = op->getName().stripDialect().str();
  }
  if (!names.empty())
    label += " <- " + names;
  kb.symbolBase = "tgk_" + std::to_string(index) + "_" + kinds;
  for (char &ch : kb.symbolBase)
    if (!isalnum((unsigned char)ch) && ch != '_')
      ch = '_';
  kb.label = label;
  if (auto e = kb.emitOp(op, code))
    return std::move(e);
  return std::move(kb.steps);
}

} // namespace tgc::cuda
