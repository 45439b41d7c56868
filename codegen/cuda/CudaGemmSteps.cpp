// CudaGemmSteps.cpp — GEMM steps of CUDA packages: the GemmDesc of a linear or matmul (cuBLASLt,
// tgc's tensor-core kernels or the CUTLASS plug-in choose at load), the transposes and splits a
// GEMM reads or writes through, and the QKV GEMM that writes its split's parts.
#include "codegen/cuda/CudaBuilder.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::cuda {

bool KernelBuilder::gemmReadsThrough(tg::TransposeOp t) const {
  if (!isBatchRowTranspose(t) || !t.getResult().hasOneUse())
    return false;
  Operation *user = *t.getResult().getUsers().begin();
  if (user != t->getNextNode())
    return false;
  // The matmul reading t as its lhs: the user itself, or the first op of a "gemm" kernel whose
  // argument for t has no other reader.
  auto mm = dyn_cast<tg::MatmulOp>(user);
  if (auto f = dyn_cast<tg::FusedOp>(user); f && f.getKind() == "gemm") {
    Block &body = f.getBody().front();
    for (Operation &inner : body.without_terminator())
      if (!isa<tg::ConstantOp>(inner)) {
        mm = dyn_cast<tg::MatmulOp>(inner);
        break;
      }
    auto arg = mm ? mm.getLhs().dyn_cast<BlockArgument>() : BlockArgument();
    if (!arg || arg.getOwner() != &body || !arg.hasOneUse() ||
        f->getOperand(arg.getArgNumber()) != t.getResult())
      return false;
  } else if (!mm || mm.getLhs() != t.getResult()) {
    return false;
  }
  if (!mm || !libraryGemm(mm)) // the loop GEMM reads its operands dense
    return false;
  // One strided-batch GEMM: the rhs has the lhs's batch or none.
  Shape a = shapeOf(mm.getLhs()), b = shapeOf(mm.getRhs());
  if (!(b.size() == 2 || (b.size() == 3 && b[0] == a[0])))
    return false;
  auto in = em.plan_.locs.find(t.getInput()), res = em.plan_.locs.find(user->getResult(0));
  return in != em.plan_.locs.end() && res != em.plan_.locs.end() &&
         in->second.kind != BufferLoc::Inline && !overlaps(in->second, res->second);
}

void KernelBuilder::foldOutputTranspose(Value v) {
  if (steps.empty() || !steps.back().gemm || !v.hasOneUse())
    return;
  auto t = dyn_cast<tg::TransposeOp>(*v.getUsers().begin());
  EmittedStep &s = steps.back();
  plan::GemmDesc &g = s.desc;
  if (!isBatchRowTranspose(t) || t.getOperation() != v.getDefiningOp()->getNextNode() ||
      g.residual() || g.batch() != shapeOf(v)[0] || g.stride_c() != g.m() * g.n() ||
      g.ldc() != g.n() || s.args[2].value != v || s.args[2].offset != 0)
    return;
  auto dst = em.plan_.locs.find(t.getResult());
  if (dst == em.plan_.locs.end() || dst->second.kind != BufferLoc::Arena)
    return;
  for (size_t i = 0; i < s.args.size(); ++i) {
    auto loc = i == 2 ? em.plan_.locs.end() : em.plan_.locs.find(s.args[i].value);
    if (i != 2 && (loc == em.plan_.locs.end() || overlaps(loc->second, dst->second)))
      return;
  }
  g.set_ldc(g.batch() * g.n());
  g.set_stride_c(g.n());
  s.args[2] = StepArg{t.getResult()};
  s.label += " + " + t->getName().getStringRef().str() + " (GEMM writes its layout)";
  em.writtenByGemm_.insert(t.getOperation());
}

bool KernelBuilder::castFoldsIntoTranspose(Operation *cast) const {
  if (!isa<tg::CastOp>(cast))
    return false;
  // Through single-use reshapes (views of the same bytes, no kernels) right after it.
  Operation *at = cast;
  while (at->getResult(0).hasOneUse() &&
         isa<tg::ReshapeOp>(*at->getResult(0).getUsers().begin()) &&
         *at->getResult(0).getUsers().begin() == at->getNextNode())
    at = at->getNextNode();
  if (!at->getResult(0).hasOneUse())
    return false;
  auto tr = dyn_cast<tg::TransposeOp>(*at->getResult(0).getUsers().begin());
  if (!tr || tr.getOperation() != at->getNextNode() || gemmReadsThrough(tr))
    return false;
  auto in = em.plan_.locs.find(cast->getOperand(0)), out = em.plan_.locs.find(tr.getResult());
  if (in == em.plan_.locs.end() || out == em.plan_.locs.end() ||
      in->second.kind == BufferLoc::Inline || overlaps(in->second, out->second))
    return false;
  for (Value v : {cast->getOperand(0), Value(cast->getResult(0))})
    if (auto t = ctypeOf(v, cast); !t) {
      llvm::consumeError(t.takeError());
      return false;
    }
  return true;
}

llvm::Error KernelBuilder::emitGemm(Operation *op, const std::vector<StepArg> &args, StepArg out,
                                    bool withBias, std::optional<StepArg> residual, int act) {
  Type et = op->getResult(0).getType().cast<RankedTensorType>().getElementType();
  if (!(et.isF32() || et.isF16() || et.isBF16()))
    return opError(op, "GEMMs are fp32/fp16/bf16 only in this version");
  for (Value v : op->getOperands())
    if (v.getType().cast<RankedTensorType>().getElementType() != et)
      return opError(op, "GEMM operands must all have the result's element type");
  const int64_t es = et.isF32() ? 4 : 2; // element bytes
  EmittedStep s;
  s.gemm = true;
  s.symbol = "gemm";
  s.label = label;
  plan::GemmDesc &g = s.desc;
  g.set_dtype(et.isF32() ? 1 : (et.isF16() ? 10 : 16)); // ONNX dtypes; fp32 accumulation
  g.set_batch(1);
  g.set_activation((plan::GemmDesc::Activation)act);
  auto dims = gemmOf(op);
  if (!dims)
    return dims.takeError();
  const int64_t M = dims->M, K = dims->K, N = dims->N, NB = dims->NB;
  if (auto lin = dyn_cast<tg::LinearOp>(op)) {
    g.set_m(M), g.set_n(N), g.set_k(K), g.set_trans_b(true);
    g.set_lda(K), g.set_ldb(K), g.set_ldc(N);
    s.args = {args[0], args[1], out};
    if (lin.getBias() && withBias) {
      if (product(shapeOf(lin.getBias())) != N)
        return opError(op, "linear bias must have N elements");
      g.set_bias(true);
      s.args.push_back(args[2]);
    }
    if (residual) {
      g.set_residual(true);
      s.args.push_back(*residual);
    }
    if (M * N > 0)
      steps.push_back(s);
    return llvm::Error::success();
  }
  const Shape &ab = dims->lhsBatch, &bb = dims->rhsBatch, *batch = &dims->batch;
  if (NB * M * N == 0)
    return llvm::Error::success();
  g.set_k(K), g.set_n(N), g.set_trans_b(false);
  g.set_lda(K), g.set_ldb(N), g.set_ldc(N);
  s.args = {args[0], args[1], out};
  if (residual) {
    g.set_residual(true);
    s.args.push_back(*residual);
  }
  if (auto t = args[0].value ? args[0].value.getDefiningOp<tg::TransposeOp>() : nullptr;
      t && gemmReadsThrough(t)) {
    // lhs [B, M, K] is the transpose of [M, B, K]: rows B·K apart, batches K apart.
    s.args[0] = StepArg{t.getInput()};
    g.set_m(M), g.set_lda(NB * K), g.set_batch(NB);
    g.set_stride_a(K), g.set_stride_b(product(bb) == 1 ? 0 : K * N), g.set_stride_c(M * N);
    s.label += " + " + t->getName().getStringRef().str() + " (GEMM reads its input)";
    steps.push_back(s);
    return llvm::Error::success();
  }
  if (product(bb) == 1 && product(ab) == NB) {
    g.set_m(NB * M); // one GEMM: the lhs batch folds into M
    steps.push_back(s);
    return llvm::Error::success();
  }
  g.set_m(M);
  // An operand whose batch has NB elements covers the batch without broadcasting.
  bool aNone = product(ab) == 1, bNone = product(bb) == 1;
  if ((product(ab) == NB || aNone) && (product(bb) == NB || bNone)) {
    // One strided-batch GEMM; a broadcast operand has stride 0.
    g.set_batch(NB);
    g.set_stride_a(aNone ? 0 : M * K);
    g.set_stride_b(bNone ? 0 : K * N);
    g.set_stride_c(M * N);
    steps.push_back(s);
    return llvm::Error::success();
  }
  // General broadcast: one GEMM per batch on byte sub-ranges.
  Shape as = broadcastStrides(ab, *batch), bs = broadcastStrides(bb, *batch);
  Shape coord(batch->size(), 0);
  for (int64_t i = 0; i < NB; ++i) {
    int64_t ao = 0, bo = 0;
    for (size_t d = 0; d < batch->size(); ++d) {
      ao += coord[d] * as[d];
      bo += coord[d] * bs[d];
    }
    EmittedStep one = s;
    one.args[0].offset += ao * M * K * es, one.args[0].bytes = M * K * es;
    one.args[1].offset += bo * K * N * es, one.args[1].bytes = K * N * es;
    for (size_t c = 2; c < one.args.size(); c += 1) // C and the residual share C's layout
      one.args[c].offset += i * M * N * es, one.args[c].bytes = M * N * es;
    steps.push_back(one);
    for (int64_t d = (int64_t)batch->size() - 1; d >= 0; --d) {
      if (++coord[d] < (*batch)[d])
        break;
      coord[d] = 0;
    }
  }
  return llvm::Error::success();
}

tg::SplitOp KernelBuilder::splitWrittenBy(tg::LinearOp lin, int64_t *strideBytes) const {
  if (!libraryGemm(lin))
    return nullptr; // a loop GEMM writes its result dense; the split copies the parts
  Value y = lin.getResult();
  while (y.hasOneUse() && isa<tg::ReshapeOp>(*y.getUsers().begin())) // views: same bytes
    y = y.getUsers().begin()->getResult(0);
  if (!y.hasOneUse())
    return nullptr;
  auto sp = dyn_cast<tg::SplitOp>(*y.getUsers().begin());
  Shape ys = shapeOf(y);
  if (!sp || sp->getNumResults() < 2 || ys.empty() ||
      ys.back() != shapeOf(lin.getResult()).back() ||
      *tgc::normalizeAxis(sp.getAxis(), ys.size()) != (int64_t)ys.size() - 1)
    return nullptr;
  // Equal parts in the arena, one stride apart (the planner keeps a split's results together).
  const int64_t G = sp->getNumResults(), es = tensorBytes(y.getType()) / product(ys);
  std::vector<BufferLoc> parts;
  for (Value r : sp->getResults()) {
    auto loc = em.plan_.locs.find(r);
    if (r.getType() != sp->getResult(0).getType() || loc == em.plan_.locs.end() ||
        loc->second.kind != BufferLoc::Arena)
      return nullptr;
    parts.push_back(loc->second);
  }
  const int64_t stride = parts[1].offset - parts[0].offset;
  if (ys.back() % G || stride < parts[0].bytes || stride % es)
    return nullptr;
  for (int64_t i = 2; i < G; ++i)
    if (parts[i].offset != parts[0].offset + i * stride)
      return nullptr;
  // The parts must not overlap what the GEMM reads (the planner keeps them apart).
  const int64_t lo = parts[0].offset, hi = lo + (G - 1) * stride + parts[0].bytes;
  for (Value v : lin->getOperands()) {
    auto loc = em.plan_.locs.find(v);
    if (loc == em.plan_.locs.end() ||
        (loc->second.kind == BufferLoc::Arena && loc->second.offset < hi &&
         lo < loc->second.offset + loc->second.bytes))
      return nullptr;
  }
  if (strideBytes)
    *strideBytes = stride;
  return sp;
}

// The linear's G equal column blocks as one batched GEMM, batch b writing split result b
// (`stride` bytes apart): C[b] (M×n, ldc n) = X · W[b·n : (b+1)·n]ᵀ (+ bias[b·n : (b+1)·n]).
llvm::Error KernelBuilder::emitSplitGemm(tg::LinearOp lin, tg::SplitOp sp, int64_t stride,
                                         const std::vector<StepArg> &args) {
  const int64_t G = sp->getNumResults();
  const int64_t partBytes = tensorBytes(sp->getResult(0).getType());
  const int64_t es = partBytes / product(shapeOf(sp->getResult(0)));
  if (auto e = emitGemm(lin, args, StepArg{sp->getResult(0), 0, (G - 1) * stride + partBytes},
                        true))
    return e;
  if (steps.empty() || !steps.back().gemm)
    return llvm::Error::success(); // empty GEMM: nothing to write
  plan::GemmDesc &g = steps.back().desc;
  const int64_t n = g.n() / G;
  g.set_n(n), g.set_ldc(n), g.set_batch(G);
  g.set_stride_a(0), g.set_stride_b(n * g.ldb()), g.set_stride_c(stride / es);
  if (g.bias())
    g.set_bias_stride(n);
  steps.back().label += " + " + std::string(sp->getName().getStringRef()) + " (GEMM writes its " +
                        std::to_string(G) + " results)";
  return llvm::Error::success();
}

} // namespace tgc::cuda
