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
#include "codegen/common/MovementEmit.h"

#include "compiler/dialect/TgDialect.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

using namespace mlir;

namespace tgc::cuda {

const codegen::CTarget &cudaTarget() {
  static const codegen::CTarget target{
      "CUDA backend", /*halfTypes=*/true, "__device__ const", /*roundsF32Literals=*/true,
      "__int_as_float(0x7fc00000)", "__longlong_as_double(0x7ff8000000000000LL)", "tg_inf_f()",
      "tg_inf_d()", "tg_inf<$>()", "tg_lo<$>()", "tg_hi<$>()"};
  return target;
}

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
  attention.Clear();
  minBlocksPerSm = 0;
  clusterX = 1;
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
  return bindOperands([&](const std::string &name, Value v, const CType &ct, bool out) {
    addParam((out ? "" : "const ") + ct.name + " *" + name, StepArg{v});
  });
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
  s.attention = attention;
  attention.Clear();
  std::string ps;
  for (size_t i = 0; i < params.size(); ++i)
    ps += (i ? ", " : "") + params[i];
  // Identical kernels (the same op on the same shapes in every transformer layer) are emitted
  // once and shared by their steps: NVRTC time grows with the text, not with the layer count.
  const std::string bounds =
      std::to_string(block) + (minBlocksPerSm > 0 ? ", " + std::to_string(minBlocksPerSm) : "");
  const std::string cluster =
      clusterX > 1 ? "__cluster_dims__(" + std::to_string(clusterX) + ", 1, 1) " : "";
  std::string key =
      globals + cluster + bounds + "/" + std::to_string(sharedBytes) + "(" + ps + ") {\n" + body;
  auto [known, fresh] = em.kernelBySource_.try_emplace(std::move(key), s.symbol);
  if (!fresh) {
    s.symbol = known->second;
  } else {
    code += preamble(label);
    code += "extern \"C\" __global__ void " + cluster + "__launch_bounds__(" + bounds + ") " +
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
  codegen::clampedIndexLines(c, var, g.idx + "[" + row + "]", g.rows);
}

llvm::Error KernelBuilder::elementwise(llvm::ArrayRef<Operation *> ops,
                                       std::vector<std::pair<Value, Leaf>> leaves, Value result,
                                       const std::string &out) {
  if (auto e = checkElementwise(ops, leaves, result))
    return e;
  const Shape outShape = shapeOf(result);
  llvm::Error error = llvm::Error::success();
  CType rct = llvm::cantFail(ctypeOf(result, root));
  auto element = [&](Code &c, const std::function<std::string(size_t)> &load) {
    return elementLines(c, ops, leaves, result, load, error);
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
  if (auto e = beginKernel())
    return e;
  auto parts = fusedParts(op);
  if (!parts)
    return parts.takeError();
  const bool isGemm = parts->gemm != nullptr;
  std::vector<std::pair<Value, Leaf>> &leaves = parts->leaves;
  const std::vector<Operation *> &ops = parts->ops;
  Operation *gemm = parts->gemm;
  const Value result = parts->result;
  Value out = op.getResult();
  if (product(shapeOf(out)) == 0)
    return llvm::Error::success();
  if (!isGemm) {
    if (auto e = elementwise(ops, leaves, result, outPtr[0]))
      return e;
    endKernel(code, gridFor(product(shapeOf(out)) / vecWidth), kBlock);
    return llvm::Error::success();
  }
  if (auto conv = dyn_cast<tg::ConvOp>(gemm))
    return emitConv(op, conv, &*parts, code);
  if (!libraryGemm(gemm))
    return emitLoopGemmKernels(gemm, &*parts, code);
  if (auto gv = gemv(gemm, *parts, out))
    return emitGemv(op, gemm, *parts, *gv, code);
  std::vector<StepArg> gargs;
  for (unsigned a : parts->gemmArgs)
    gargs.push_back(StepArg{op->getOperand(a)});
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
  // matmul + an addend per row (shape [..., M, 1]: a 1x1 convolution's bias) at f16/bf16: the
  // GEMM writes float into the scratch area and the epilogue adds in float before its one
  // rounding. (A BatchNorm-folded bias cancels most of the product; rounding the product first
  // would lose the low bits of what remains.)
  if (isa<tg::MatmulOp>(gemm) && !ops.empty() && isa<tg::AddOp>(ops[0]) &&
      !g.getType().cast<RankedTensorType>().getElementType().isF32()) {
    Value other = ops[0]->getOperand(0) == g ? ops[0]->getOperand(1) : ops[0]->getOperand(0);
    const Shape gs = shapeOf(g), os = shapeOf(other);
    if ((ops[0]->getOperand(0) == g || ops[0]->getOperand(1) == g) && other != g &&
        gs.size() >= 2 && gs.back() > 1 && !os.empty() && os.back() == 1 &&
        (os.size() < 2 || os[os.size() - 2] == gs[gs.size() - 2])) {
      const size_t before = steps.size();
      const int64_t bytes = product(gs) * 4;
      const StepArg tmp{Value(), 0, bytes};
      if (auto e = emitGemm(gemm, gargs, tmp, true))
        return e;
      auto ft = ctypeOf(Float32Type::get(gemm->getContext()), gemm);
      if (!ft)
        return ft.takeError();
      if (steps.size() == before + 1) {
        em.scratch_ = std::max(em.scratch_, (bytes + kBufferAlignment - 1) / kBufferAlignment *
                                                kBufferAlignment);
        steps.back().desc.set_out_f32(true);
        addParam("const float *gtmp", tmp);
        c.line(sourceComment("epilogue: " + std::to_string(ops.size()) +
                             " elementwise op(s) per output element, the GEMM's float result"));
        leaves.push_back({g, Leaf{gs, *ft, "gtmp", ""}});
        if (auto e = elementwise(ops, leaves, result, outPtr[0]))
          return e;
        endKernel(code, gridFor(product(shapeOf(out)) / vecWidth), kBlock);
        return llvm::Error::success();
      }
      steps.resize(before); // one GEMM per batch: the usual path below
    }
  }
  // linear (+ bias) + one activation, f16/bf16, on a shape tgc's tensor-core GEMM or the CUTLASS
  // plug-in takes (its TMA loads need rows of whole 16-byte units): the GEMM step carries the
  // activation, and the epilogue kernel below is marked to be skipped when the runtime runs that
  // GEMM on a kernel that applies it (cuBLASLt only for ReLU and tanh-GELU: else it runs).
  int fusedAct = 0;
  if (auto lin = dyn_cast<tg::LinearOp>(gemm);
      lin && ops.size() == 1 && ops[0]->getResult(0) == result && ops[0]->getOperand(0) == g &&
      g.getType() == out.getType()) {
    int act = isa<tg::ReluOp>(ops[0]) ? 1 : isa<tg::SiluOp>(ops[0]) ? 4 : 0;
    if (auto ge = dyn_cast<tg::GeluOp>(ops[0]))
      act = ge.getTanhApprox() ? 3 : 2;
    Type et = g.getType().cast<RankedTensorType>().getElementType();
    const int64_t K = shapeOf(lin.getInput()).back(), N = shapeOf(lin.getWeight())[0];
    const int dtype = et.isF16() ? 10 : (et.isBF16() ? 16 : 1);
    if (act && (mmaGemmShapeFits(dtype, N, K, K, K, N, 0, 0, 0) ||
                (dtype != 1 && N % 8 == 0 && K % 8 == 0)))
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
    auto leaves = operandLeaves();
    if (!leaves)
      return leaves.takeError();
    if (auto e = elementwise({op}, *leaves, op->getResult(0), outPtr[0]))
      return e;
    endKernel(code, gridFor(product(shapeOf(op->getResult(0))) / vecWidth), kBlock);
    return llvm::Error::success();
  }
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    if (inPtr[i].empty())
      return opError(op, "operand " + std::to_string(i) + " was inlined but the op needs a buffer");
  if (isa<tg::LinearOp, tg::MatmulOp>(op) && !libraryGemm(op))
    return emitLoopGemmKernels(op, nullptr, code);
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
  endKernel(code, gridFor(total / vecWidth), kBlock); // (vecWidth: a pad or gather by vectors)
  return llvm::Error::success();
}


llvm::Expected<std::vector<EmittedStep>> KernelEmitter::emit(Operation *op, int index,
                                                             std::string &code) {
  KernelBuilder kb(*this, op, index);
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
