// CpuKernels.cpp — emits one C++ kernel per top-level op of kernel-formed `tg` IR.
//
// Every kernel is `extern "C" void tgk_<n>_<ops>(void* const* args)` with the static shapes baked
// in as constants. Elementwise code (tg.fused "pointwise", gemm epilogues, standalone
// elementwise ops) is one loop nest over the output: operands are read through per-operand
// strides (0 on broadcast dims), dims that are contiguous for every operand are collapsed, and
// the outermost loop runs on the thread pool (tg_parallel_for) when the work is large. GEMMs and convolutions call the
// templates of the prelude (CpuPrelude.cpp), which use OpenBLAS for f32/f64.
#include "codegen/cpu/CpuBuilder.h"
#include "codegen/common/DynamicEmit.h"
#include "codegen/common/IndexEmit.h"
#include "codegen/common/ReduceEmit.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace tgc::cpu {


const codegen::CTarget &cpuTarget() {
  static const codegen::CTarget target{
      "CPU backend", /*halfTypes=*/true, "static const", /*roundsF32Literals=*/false,
      "std::numeric_limits<float>::quiet_NaN()", "std::numeric_limits<double>::quiet_NaN()",
      "std::numeric_limits<float>::infinity()", "std::numeric_limits<double>::infinity()",
      "std::numeric_limits<$>::infinity()", "std::numeric_limits<$>::lowest()",
      "std::numeric_limits<$>::max()", "tg_f16", "tg_bf16"};
  return target;
}

/// One loop over `result`'s elements computing `ops` (elementwise, in order) from `leaves`.
llvm::Error KernelBuilder::elementwise(llvm::ArrayRef<Operation *> ops,
                                       std::vector<std::pair<Value, Leaf>> leaves, Value result,
                                       const std::string &out) {
  if (auto e = checkElementwise(ops, leaves, result))
    return e;
  int64_t cost = 1;
  for (Operation *op : ops)
    if (isa<tg::ExpOp, tg::LogOp, tg::TanhOp, tg::ErfOp, tg::SigmoidOp, tg::SiluOp, tg::GeluOp,
            tg::PowOp, tg::SinOp, tg::CosOp>(op))
      cost += 8;
  std::vector<Shape> strides{contiguousStrides(shapeOf(result))};
  std::vector<std::string> bases{"0"};
  std::vector<size_t> operandOf(leaves.size()); // leaf -> its offset's index in the loop
  for (size_t k = 0; k < leaves.size(); ++k)
    if (!leaves[k].second.ptr.empty()) {
      operandOf[k] = strides.size();
      strides.push_back(broadcastStrides(leaves[k].second.shape, shapeOf(result)));
      bases.push_back("0");
    }
  llvm::Error error = llvm::Error::success();
  loop(shapeOf(result), strides, bases,
       [&](Code &c, const std::vector<std::string> &offs) {
         std::string r = elementLines(c, ops, leaves, result, [&](size_t k) {
           return leaves[k].second.ptr + "[" + offs[operandOf[k]] + "]";
         }, error);
         c.line(out + "[" + offs[0] + "] = " + r + ";");
       },
       cost);
  return error;
}

/// Linear or matmul writing `out`; `ptrs` are the op's operand pointers.
llvm::Error KernelBuilder::emitGemmInto(Operation *op, const std::vector<std::string> &ptrs,
                                        const std::string &out, const std::string &bias,
                                        int64_t biasStride) {
  auto ct = ctypeOf(op->getResult(0), op);
  if (!ct)
    return ct.takeError();
  const std::string &T = ct->name;
  auto dims = gemmOf(op);
  if (!dims)
    return dims.takeError();
  const int64_t M = dims->M, K = dims->K, N = dims->N, NB = dims->NB;
  if (auto lin = dyn_cast<tg::LinearOp>(op)) {
    std::string bias = lin.getBias() ? ptrs[2] : "nullptr";
    c.line("tg_linear<" + T + ">(" + ptrs[0] + ", " + ptrs[1] + ", " + bias + ", " + out + ", " +
           str(M) + ", " + str(N) + ", " + str(K) + ");");
    return llvm::Error::success();
  }
  const Shape &ab = dims->lhsBatch, &bb = dims->rhsBatch, *batch = &dims->batch;
  if (NB == 0) {
    c.line("// empty batch: nothing to do");
    return llvm::Error::success();
  }
  if (auto block = cast<tg::MatmulOp>(op).getWeightBlock()) {
    // A constant [K, N] weight in 32-column strips (tgc-cpu-weight-layout; an f32 lhs of rank
    // >= 2, so the batch is the lhs's): one GEMM of NB * M rows, or one a batch where each has
    // a bias of its own.
    if (*block != 32 || T != "float" || N <= 0 || K <= 0)
      return error(op, "a matmul weight in strips must be in strips of 32 (the GEMM tiles' "
                       "width), for an f32 GEMM of nonzero N and K");
    if (M == 0) {
      c.line("// no rows: nothing to do");
      return llvm::Error::success();
    }
    if (bias.empty() || biasStride == 0) {
      c.line("tg_gemm_strips(" + str(NB * M) + ", " + str(N) + ", " + str(K) + ", " + ptrs[0] +
             ", " + ptrs[1] + ", " + out + ", " + (bias.empty() ? "nullptr" : bias) + ");");
      return llvm::Error::success();
    }
    c.line("for (int64_t b = 0; b < " + str(NB) + "; ++b)");
    c.line("  tg_gemm_strips(" + str(M) + ", " + str(N) + ", " + str(K) + ", " + ptrs[0] +
           " + b * " + str(M * K) + ", " + ptrs[1] + ", " + out + " + b * " + str(M * N) + ", " +
           bias + " + b * " + str(biasStride) + ");");
    return llvm::Error::success();
  }
  if (product(bb) == 1 && product(ab) == NB && (bias.empty() || biasStride == 0)) {
    // One GEMM: the batch dims of the lhs fold into M.
    if (!bias.empty()) {
      c.line("static const int64_t aoff[1] = {0}, boff[1] = {0};");
      c.line("tg_matmul_bias(" + ptrs[0] + ", " + ptrs[1] + ", " + out + ", 1, aoff, boff, " +
             str(NB * M) + ", " + str(N) + ", " + str(K) + ", " + bias + ", 0);");
      return llvm::Error::success();
    }
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
  if (!bias.empty()) {
    c.line("tg_matmul_bias(" + ptrs[0] + ", " + ptrs[1] + ", " + out + ", " + str(NB) +
           ", aoff, boff, " + str(M) + ", " + str(N) + ", " + str(K) + ", " + bias + ", " +
           str(biasStride) + ");");
    return llvm::Error::success();
  }
  c.line("tg_matmul<" + T + ">(" + ptrs[0] + ", " + ptrs[1] + ", " + out + ", " + str(NB) +
         ", aoff, boff, " + str(M) + ", " + str(N) + ", " + str(K) + ");");
  return llvm::Error::success();
}

std::optional<std::pair<std::string, int64_t>>
KernelBuilder::matmulBias(const FusedParts &parts) {
  auto mm = dyn_cast_or_null<tg::MatmulOp>(parts.gemm);
  if (!mm || parts.ops.size() != 1 || !isa<tg::AddOp>(parts.ops[0]))
    return std::nullopt;
  Value g = mm.getResult(), sum = parts.ops[0]->getResult(0);
  Value lhs = parts.ops[0]->getOperand(0), rhs = parts.ops[0]->getOperand(1);
  Value other = lhs == g ? rhs : rhs == g ? lhs : Value();
  if (!other || other == g || parts.result != sum || sum.getType() != g.getType() ||
      !g.getType().cast<mlir::ShapedType>().getElementType().isF32())
    return std::nullopt;
  const Leaf *leaf = nullptr;
  for (const auto &[v, l] : parts.leaves)
    if (v == other)
      leaf = &l;
  if (!leaf || leaf->ptr.empty() || !leaf->gather.idx.empty() || leaf->ct.name != "float")
    return std::nullopt;
  auto dims = gemmOf(mm.getOperation());
  if (!dims) {
    llvm::consumeError(dims.takeError());
    return std::nullopt;
  }
  if (dims->M <= 0 || dims->N <= 0 || dims->K <= 0 || dims->NB <= 0)
    return std::nullopt;
  // With both operands of rank 2 or more, g is [batch..., M, N]; the bias, aligned right, must
  // be [1..., 1, N] (every batch) or [batch..., 1, N] (one per batch). (A 1-D operand drops M or
  // N from g, whose last two dims are then not M and N.)
  const Shape gs = shapeOf(g), &bs = leaf->shape;
  if (shapeOf(mm.getLhs()).size() < 2 || shapeOf(mm.getRhs()).size() < 2 || gs.size() < 2 ||
      gs[gs.size() - 2] != dims->M || gs.back() != dims->N || bs.empty() ||
      bs.size() > gs.size() || bs.back() != dims->N)
    return std::nullopt;
  Shape b(gs.size() - bs.size(), 1);
  b.insert(b.end(), bs.begin(), bs.end());
  if (b[b.size() - 2] != 1)
    return std::nullopt;
  bool ones = true, same = true;
  for (size_t d = 0; d + 2 < gs.size(); ++d) {
    ones = ones && b[d] == 1;
    same = same && b[d] == gs[d];
  }
  if (!ones && !same)
    return std::nullopt;
  return std::make_pair(leaf->ptr, ones ? int64_t(0) : dims->N);
}

llvm::Error KernelBuilder::emitFused(tg::FusedOp op) {
  auto parts = fusedParts(op);
  if (!parts)
    return parts.takeError();
  Operation *gemm = parts->gemm;
  if (!gemm)
    return elementwise(parts->ops, parts->leaves, parts->result, outPtr[0]);
  std::vector<std::string> ptrs;
  for (unsigned a : parts->gemmArgs)
    ptrs.push_back(inPtr[a]);
  Value g = gemm->getResult(0);
  auto gt = ctypeOf(g, gemm);
  if (!gt)
    return gt.takeError();
  // The contraction: a GEMM (BLAS) or a convolution ("conv" kernels), into `dst`.
  auto contract = [&](const std::string &dst) {
    return isa<tg::ConvOp>(gemm) ? emitConv(gemm, &*gt, ptrs, dst) : emitGemmInto(gemm, ptrs, dst);
  };
  if (parts->result == g)
    return contract(outPtr[0]);
  // The GEMM writes the output buffer when the epilogue keeps its shape and type (each
  // element is then read and rewritten in place); otherwise a temporary.
  std::string dst = outPtr[0];
  if (shapeOf(g) != shapeOf(op.getResult()) || g.getType() != op.getResult().getType()) {
    c.line("std::vector<" + gt->name + "> gemm_tmp(" + str(product(shapeOf(g))) + ");");
    dst = "gemm_tmp.data()";
  }
  // A convolution with a blocked weight (the lanes kernel) applies the epilogue as it stores,
  // as a functor of the value, when it reads nothing but the value and splats (an activation,
  // a clip) and the output is written in place. An epilogue that reads another tensor (a
  // residual add) keeps its own pass: fused, its loads interleaved with the stores to 16
  // channel planes measured slower (cnn_small's conv + add + ReLU 13.0 -> 14.0 us; ReLU alone
  // 15.1 -> 14.0).
  auto conv = dyn_cast<tg::ConvOp>(gemm);
  bool fuse = conv && conv.getWeightBlock() && dst == outPtr[0];
  for (const auto &[v, l] : parts->leaves)
    fuse = fuse && l.ptr.empty();
  if (fuse) {
    parts->leaves.push_back({g, Leaf{shapeOf(g), *gt, "acc", ""}});
    if (auto e = checkElementwise(parts->ops, parts->leaves, parts->result))
      return e;
    c.line(sourceComment("epilogue: " + std::to_string(parts->ops.size()) +
                         " elementwise op(s), applied as the convolution stores"));
    c.line("auto epi = [](float acc) -> float {");
    c.ind++;
    llvm::Error error = llvm::Error::success();
    // Every other leaf is a splat (written as a literal): only the value is loaded.
    std::string r = elementLines(c, parts->ops, parts->leaves, parts->result,
                                 [](size_t) { return std::string("acc"); }, error);
    if (error)
      return error;
    c.line("return " + r + ";");
    c.ind--;
    c.line("};");
    return emitConv(gemm, &*gt, ptrs, dst, "epi");
  }
  // An f32 matmul whose epilogue only adds a bias per column: added as the GEMM starts (the
  // tiles' initial accumulators) instead of in a pass over the output of its own.
  if (dst == outPtr[0])
    if (auto mb = matmulBias(*parts)) {
      c.line(sourceComment("epilogue: the bias, added as the GEMM starts"));
      return emitGemmInto(gemm, ptrs, dst, mb->first, mb->second);
    }
  if (auto e = contract(dst))
    return e;
  c.line(sourceComment("epilogue: " + std::to_string(parts->ops.size()) +
                       " elementwise op(s) per output element"));
  parts->leaves.push_back({g, Leaf{shapeOf(g), *gt, dst, ""}});
  return elementwise(parts->ops, parts->leaves, parts->result, outPtr[0]);
}

llvm::Error KernelBuilder::emitOp(Operation *op) {
  if (auto f = dyn_cast<tg::FusedOp>(op))
    return emitFused(f);
  if (isElementwiseOp(op)) {
    auto leaves = operandLeaves();
    if (!leaves)
      return leaves.takeError();
    return elementwise({op}, *leaves, op->getResult(0), outPtr[0]);
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
    return emitConv(op, &*ct, inPtr, outPtr[0]);
  if (isa<tg::LayerNormOp, tg::RmsNormOp, tg::SoftmaxOp>(op))
    return emitNorm(op, &*ct);
  if (isa<tg::AttentionOp, tg::RotaryOp, tg::SwigluOp>(op))
    return emitAttention(op, &*ct);
  if (codegen::isReduction(op))
    return codegen::emitReduction(*this, op, *ct);
  if (codegen::isIndexOp(op))
    return codegen::emitIndexOp(*this, op, *ct);
  if (codegen::isDynamicOp(op))
    return codegen::emitDynamicOp(*this, op);
  if (isa<tg::TransposeOp, tg::SliceOp, tg::ExpandOp, tg::PadOp, tg::ConcatOp, tg::SplitOp, tg::GatherOp, tg::GatherElementsOp>(op))
    return emitMovement(op, &*ct);

  return opError(op, "op not supported by the CPU backend");
}

llvm::Expected<std::string> lowerParallelLoops(const std::string &body) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < body.size();) {
    size_t end = body.find('\n', at);
    if (end == std::string::npos)
      end = body.size();
    lines.push_back(body.substr(at, end - at));
    at = end + 1;
  }
  auto indentOf = [](const std::string &l) { return l.find_first_not_of(' '); };
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string &l = lines[i];
    const size_t ind = indentOf(l);
    if (ind == std::string::npos || l.compare(ind, std::string::npos, kParallelMarker) != 0) {
      out += l + "\n";
      continue;
    }
    // for (int64_t v = 0; v < n; ++v) {
    auto bad = [&] {
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "CPU backend: a parallel loop marker without its loop");
    };
    if (i + 1 >= lines.size() || indentOf(lines[i + 1]) != ind)
      return bad();
    const std::string f = lines[i + 1].substr(ind);
    const std::string head = "for (int64_t ";
    size_t eq = f.find(" = 0; ");
    if (f.rfind(head, 0) != 0 || eq == std::string::npos)
      return bad();
    const std::string v = f.substr(head.size(), eq - head.size());
    const std::string cond = " = 0; " + v + " < ", tail = "; ++" + v + ") {";
    if (f.compare(eq, cond.size(), cond) != 0 || f.size() < eq + cond.size() + tail.size() ||
        f.compare(f.size() - tail.size(), tail.size(), tail) != 0)
      return bad();
    const std::string n = f.substr(eq + cond.size(), f.size() - tail.size() - eq - cond.size());
    size_t close = i + 2;
    while (close < lines.size() && (indentOf(lines[close]) == std::string::npos ||
                                    indentOf(lines[close]) > ind))
      ++close;
    if (close >= lines.size() || lines[close].substr(ind) != "}")
      return bad();
    const std::string pad(ind, ' ');
    out += pad + "tg_parallel_for(" + n + ", true, [&](int64_t " + v + "_lo, int64_t " + v +
           "_hi) { for (int64_t " + v + " = " + v + "_lo; " + v + " < " + v + "_hi; ++" + v +
           ") {\n";
    for (size_t k = i + 2; k < close; ++k)
      out += lines[k] + "\n";
    out += pad + "} });\n";
    i = close;
  }
  return out;
}

llvm::Expected<EmittedKernel> KernelEmitter::emit(Operation *op, int index, std::string &code) {
  KernelBuilder kb(*this, op);
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
  llvm::Expected<std::string> body = lowerParallelLoops(kb.body);
  if (!body)
    return body.takeError();
  code += kb.preamble(label);
  code += "extern \"C\" void " + k.symbol + "(void *const *args) {\n" + kb.decls + *body + "}\n";
  return k;
}

} // namespace tgc::cpu
