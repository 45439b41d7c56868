// CStyle.cpp — the target-independent half of a kernel being written (see CStyle.h).
#include "codegen/common/CStyle.h"

#include "compiler/dialect/TgDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace tgc::codegen {

std::string CTarget::spell(const char *pattern, const std::string &T) {
  std::string out;
  for (const char *p = pattern; *p; ++p)
    out += *p == '$' ? T : std::string(1, *p);
  return out;
}

std::string CTarget::floatLiteral(double v, bool f32) const {
  if (std::isnan(v))
    return f32 ? nanF32 : nanF64;
  if (std::isinf(v))
    return std::string(v < 0 ? "-" : "") + (f32 ? infF32 : infF64);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", f32 && roundsF32Literals ? (double)(float)v : v);
  return std::string(buf) + (f32 ? "f" : "");
}

llvm::Error opError(const CTarget &t, Operation *op, const llvm::Twine &msg) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "op '" << op->getName() << "' at " << op->getLoc();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 std::string(t.backend) + ": " + msg + " (" + os.str() + ")");
}

llvm::Expected<CType> ctypeOf(const CTarget &t, Type type, Operation *op) {
  if (type.isF32())
    return CType{"float", true, false};
  if (type.isF64())
    return CType{"double", true, false};
  if (t.halfTypes && type.isF16())
    return CType{t.f16Type, true, false, true};
  if (t.halfTypes && type.isBF16())
    return CType{t.bf16Type, true, false, true};
  if (type.isInteger(1))
    return CType{"uint8_t", false, true};
  if (std::string n = integerCTypeName(type); !n.empty())
    return CType{n};
  if (tg::isFloat8(type)) // its bits; only tg.cast computes with them (castExpr)
    return CType{"uint8_t"};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return opError(t, op, os.str() + " not supported");
}

llvm::Expected<CType> ctypeOf(const CTarget &t, Value v, Operation *op) {
  return ctypeOf(t, v.getType().cast<RankedTensorType>().getElementType(), op);
}

llvm::Expected<std::vector<std::string>> literalsOf(const CTarget &t, DenseElementsAttr a,
                                                    Operation *op) {
  const bool half = t.halfTypes;
  auto out = denseLiterals(
      a, [&](Type e) { return e.isF32() || e.isF64() || (half && (e.isF16() || e.isBF16())); },
      [&](double v, bool f32) { return t.floatLiteral(v, f32); });
  if (!out)
    return opError(t, op, "constant element type not supported");
  return std::move(*out);
}

std::string valueLiteral(const CTarget &t, const CType &ct, double value) {
  if (ct.isFloat)
    return t.floatLiteral(value, ct.name != "double");
  if (ct.isBool)
    return value != 0 ? "1" : "0";
  if (value >= 9223372036854775808.0) // a u64 value above INT64_MAX (saturated at 2^64 - 1)
    return std::to_string(value >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)value) + "ULL";
  return str(static_cast<int64_t>(value));
}

llvm::Error CKernel::bindOperands(
    const std::function<void(const std::string &, Value, const CType &, bool)> &bind) {
  for (Value v : root->getOperands()) {
    auto loc = plan.locs.find(v);
    if (loc == plan.locs.end())
      return error(root, "operand has no planned storage");
    if (loc->second.kind == BufferLoc::Inline) {
      inPtr.push_back("");
      continue;
    }
    auto ct = ctype(v, root);
    if (!ct)
      return ct.takeError();
    inPtr.push_back("in" + std::to_string(inPtr.size()));
    bind(inPtr.back(), v, *ct, false);
  }
  for (Value v : root->getResults()) {
    auto ct = ctype(v, root);
    if (!ct)
      return ct.takeError();
    outPtr.push_back("out" + std::to_string(outPtr.size()));
    bind(outPtr.back(), v, *ct, true);
  }
  return llvm::Error::success();
}

llvm::Expected<Leaf> CKernel::constantLeaf(Value v, Operation *owner) {
  auto cop = v.getDefiningOp<tg::ConstantOp>();
  if (!cop)
    return error(owner, "inlined operand is not a constant");
  auto dense = cop.getValue().dyn_cast<DenseElementsAttr>();
  if (!dense)
    return error(owner, "inlined constant is not dense");
  auto ct = ctype(v, owner);
  if (!ct)
    return ct.takeError();
  auto lits = literalsOf(target, dense, owner);
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
  std::string name = "tgc_k" + std::to_string(constants++);
  std::string s = std::string(target.constArray) + " " + l.ct.name + " " + name + "[" +
                  std::to_string(lits->size()) + "] = {";
  for (size_t i = 0; i < lits->size(); ++i)
    s += (i ? ", " : "") + (*lits)[i];
  globals += s + "};\n";
  l.ptr = name;
  return l;
}

std::string CKernel::preamble(const std::string &label) const {
  std::string shapes;
  for (Value v : root->getOperands()) {
    std::string t;
    llvm::raw_string_ostream os(t);
    os << v.getType();
    shapes += (shapes.empty() ? "" : ", ") + os.str();
  }
  return "\n" + globals + sourceComment(label) + "\n" +
         sourceComment("  operands: " + (shapes.empty() ? std::string("none") : shapes)) + "\n";
}

llvm::Expected<Leaf> CKernel::operandLeaf(unsigned i) {
  Value v = root->getOperand(i);
  if (inPtr[i].empty())
    return constantLeaf(v, root);
  auto ct = ctype(v, root);
  if (!ct)
    return ct.takeError();
  return Leaf{shapeOf(v), *ct, inPtr[i], "", readThroughGather(i)};
}

llvm::Expected<std::vector<std::pair<Value, Leaf>>> CKernel::operandLeaves() {
  std::vector<std::pair<Value, Leaf>> leaves;
  for (unsigned i = 0; i < root->getNumOperands(); ++i) {
    auto l = operandLeaf(i);
    if (!l)
      return l.takeError();
    leaves.push_back({root->getOperand(i), *l});
  }
  return leaves;
}

llvm::Expected<FusedParts> CKernel::fusedParts(Operation *fused) {
  auto op = cast<tg::FusedOp>(fused);
  const bool isConv = op.getKind() == "conv";
  const bool isGemm = op.getKind() == "gemm" || isConv; // a contraction, then an epilogue
  if (!isGemm && op.getKind() != "pointwise")
    return error(op, "unknown fused kind '" + op.getKind().str() + "'");
  Block &body = op.getBody().front();
  FusedParts parts;
  parts.result = cast<tg::YieldOp>(body.getTerminator()).getValues()[0];
  Operation *first = nullptr; // the GEMM of a "gemm" kernel: its first non-constant op
  for (Operation &inner : body.without_terminator())
    if (!isa<tg::ConstantOp>(inner) && !first)
      first = &inner;
  for (unsigned i = 0; i < body.getNumArguments(); ++i) {
    bool epilogueReads = false;
    for (Operation *user : body.getArgument(i).getUsers())
      epilogueReads = epilogueReads || !(isGemm && user == first);
    if (!epilogueReads)
      continue;
    auto l = operandLeaf(i);
    if (!l)
      return l.takeError();
    parts.leaves.push_back({body.getArgument(i), *l});
  }
  for (Operation &inner : body.without_terminator()) {
    if (isa<tg::ConstantOp>(inner)) {
      auto l = constantLeaf(inner.getResult(0), &inner);
      if (!l)
        return l.takeError();
      parts.leaves.push_back({inner.getResult(0), *l});
      continue;
    }
    if (isGemm && !parts.gemm) {
      if (isConv ? !isa<tg::ConvOp>(inner) : !isa<tg::LinearOp, tg::MatmulOp>(inner))
        return error(&inner, isConv ? "a conv kernel must start with tg.conv"
                                    : "a gemm kernel must start with tg.linear or tg.matmul");
      parts.gemm = &inner;
      continue;
    }
    if (!isElementwiseOp(&inner))
      return error(&inner, "op not supported inside a fused " + op.getKind().str() + " kernel");
    parts.ops.push_back(&inner);
  }
  if (!isGemm)
    return parts;
  if (!parts.gemm)
    return error(op, isConv ? "conv kernel without tg.conv" : "gemm kernel without tg.linear or tg.matmul");
  for (Value v : parts.gemm->getOperands()) {
    auto arg = v.dyn_cast<BlockArgument>();
    if (!arg || arg.getOwner() != &body || inPtr[arg.getArgNumber()].empty())
      return error(parts.gemm, std::string(isConv ? "conv" : "gemm") +
                                   " operands must be kernel arguments held in buffers");
    parts.gemmArgs.push_back(arg.getArgNumber());
  }
  return parts;
}

llvm::Expected<NormRows> CKernel::normRows(Operation *op, const CType &ct) {
  const std::string kind = op->getName().stripDialect().str();
  if (!ct.isFloat)
    return error(op, kind + " needs a float type");
  auto ln = dyn_cast<tg::LayerNormOp>(op);
  NormRows n;
  n.x = shapeOf(op->getOperand(0));
  n.axis = *tgc::normalizeAxis(
      ln ? ln.getAxis() : cast<tg::RmsNormOp>(op).getAxisAttr().getInt(), n.x.size());
  n.R = product(n.x, 0, n.axis), n.D = product(n.x, n.axis);
  // Operands: input, then scale and bias where present.
  Value scale = ln ? ln.getScale() : cast<tg::RmsNormOp>(op).getScale();
  Value bias = ln ? ln.getBias() : Value();
  unsigned next = 1;
  auto indexOf = [&](Value p) -> std::string {
    const std::string name = inPtr[next++];
    const NormParamIndex ix = normParamIndex(n.x, n.axis, shapeOf(p));
    if (ix.one)
      return name + "[0]";
    if (ix.perColumn)
      return name + "[j]";
    const std::string row = ix.rowDims ? ix.rowOff + " + " : "";
    if (ix.table.empty())
      return name + "[" + row + "j]";
    const std::string t = "tgc_idx" + std::to_string(constants++);
    globals += std::string(target.constArray) + " int64_t " + t + "[" + str(n.D) +
               "] = " + intArray(ix.table) + ";\n";
    return name + "[" + row + t + "[j]]";
  };
  if (scale && !ln) {
    // The rms_norm kernels read the scale per column or as one element.
    const NormParamIndex ix = normParamIndex(n.x, n.axis, shapeOf(scale));
    if (!ix.perColumn && !ix.one)
      return error(op, "rms_norm scale must cover the normalized dims exactly");
  }
  if (scale)
    n.scale = indexOf(scale);
  if (bias)
    n.bias = indexOf(bias);
  return n;
}

llvm::Expected<MatmulDims> CKernel::gemmOf(Operation *op) {
  if (auto lin = dyn_cast<tg::LinearOp>(op)) {
    const Shape x = shapeOf(lin.getInput());
    MatmulDims d;
    d.K = x.back(), d.N = shapeOf(lin.getWeight())[0], d.M = product(x, 0, x.size() - 1);
    return d;
  }
  auto mm = dyn_cast<tg::MatmulOp>(op);
  if (!mm)
    return error(op, "a gemm kernel must start with tg.linear or tg.matmul");
  Shape rhs = shapeOf(mm.getRhs());
  if (mm.getWeightBlock()) { // strips [ceil(N/b), K, b] of the [K, N] it stands for (verified)
    if (!readsWeightStrips())
      return error(op, "a matmul weight in strips (weight_block) is the CPU's layout");
    rhs = {rhs[1], shapeOf(mm.getResult()).back()};
  }
  auto dims = matmulDims(shapeOf(mm.getLhs()), rhs);
  if (!dims)
    return error(op, "batch dims do not broadcast");
  return *dims;
}

llvm::Expected<std::string> CKernel::elemExpr(Operation *op, const std::vector<std::string> &a) {
  auto rt = ctype(op->getResult(0), op);
  if (!rt)
    return rt.takeError();
  Value typed = isa<tg::WhereOp>(op) ? op->getOperand(1) : op->getOperand(0);
  auto t = ctype(typed, op);
  if (!t)
    return t.takeError();
  std::string name = op->getName().stripDialect().str();
  if (auto g = dyn_cast<tg::GeluOp>(op))
    name = g.getTanhApprox() ? "gelu_tanh" : "gelu";
  if (auto m = dyn_cast<tg::MathOp>(op))
    name = m.getFn().str(); // (the verifier checked it against the preludes' tg_<fn>)
  if (auto b = dyn_cast<tg::BitwiseOp>(op))
    name = "bitwise_" + b.getFn().str(); // tg_bitwise_and ... tg_bitwise_shift_right
  std::string args;
  for (size_t i = 0; i < a.size(); ++i)
    args += (i ? ", " : "") + a[i];
  if (auto c = dyn_cast<tg::CastOp>(op)) {
    // float8 through f32: tg_f8_to_float decodes, tg_f8_from_float encodes (rounding to nearest
    // even; `saturate` as the op's attribute), both in the preludes (ElementPrelude.cpp).
    auto elem = [](Value v) { return v.getType().cast<ShapedType>().getElementType(); };
    const int from = tg::float8Kind(elem(c.getInput())), to = tg::float8Kind(elem(c));
    std::string src = t->calc();
    if (from) {
      args = "tg_f8_to_float(" + args + ", " + std::to_string(from) + ")";
      src = "float";
    }
    if (to)
      return "tg_f8_from_float(tg_cast<float, false, " + src + ">(" + args + "), " +
             std::to_string(to) + ", " + (c.getSaturate().value_or(true) ? "true" : "false") + ")";
    return "tg_cast<" + rt->calc() + ", " + (rt->isBool ? "true" : "false") + ", " + src + ">(" +
           args + ")";
  }
  return "tg_" + name + "<" + t->calc() + ">(" + args + ")";
}

llvm::Error CKernel::checkElementwise(llvm::ArrayRef<Operation *> ops,
                                      const std::vector<std::pair<Value, Leaf>> &leaves,
                                      Value result) {
  const Shape outShape = shapeOf(result);
  if (auto rt = ctype(result, root); !rt)
    return rt.takeError();
  auto fits = [&](const Shape &s) {
    auto b = tgc::broadcastShapes(s, outShape);
    return b && *b == outShape;
  };
  for (auto &[v, l] : leaves)
    if (!fits(l.shape))
      return error(root, "operand shape " + tgc::shapeToString(l.shape) +
                             " does not broadcast to the kernel's result " +
                             tgc::shapeToString(outShape));
  for (Operation *op : ops)
    if (!fits(shapeOf(op->getResult(0))))
      return error(op, "intermediate shape larger than the kernel's result");
  for (Operation *op : ops) {
    auto e = elemExpr(op, std::vector<std::string>(op->getNumOperands(), "x"));
    if (!e)
      return e.takeError();
  }
  return llvm::Error::success();
}

std::string CKernel::elementLines(Code &c, llvm::ArrayRef<Operation *> ops,
                                  const std::vector<std::pair<Value, Leaf>> &leaves, Value result,
                                  const std::function<std::string(size_t)> &load,
                                  llvm::Error &error) {
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
          error = this->error(op, "operand not available in the kernel");
        a.push_back("0");
      } else {
        a.push_back(n->second);
      }
    }
    // (checkElementwise wrote every expression once: these cannot fail.)
    std::string e = llvm::cantFail(elemExpr(op, a));
    std::string rt = llvm::cantFail(ctype(op->getResult(0), op)).calc();
    std::string name = fresh("v");
    c.line("const " + rt + " " + name + " = " + e + ";");
    names[op->getResult(0)] = name;
  }
  auto n = names.find(result);
  if (n == names.end()) {
    if (!error)
      error = this->error(root, "kernel result is not computed by its ops");
    return "0";
  }
  const CType rct = llvm::cantFail(ctype(result, root));
  return rct.lowp ? rct.st(n->second) : n->second;
}

} // namespace tgc::codegen
