// CudaGemv.cpp — a small matrix-vector product and its epilogue in one kernel: the
// squeeze-excitation layers of MobileNetV3 and EfficientNet (at batch 1, [C', C] times a
// [C, 1] vector, then ReLU / SiLU / sigmoid / hardsigmoid), which as a GEMM step are two
// launches: the library's GEMV (~2 µs on an H200, launch-bound), then the epilogue kernel
// (~1.3 µs). Here a group of G lanes (a power of two up to a warp) takes one output: each lane
// loads 16-byte chunks of the matrix row and the vector, the group sums its lanes' products
// through shuffles, and its first lane adds the bias, applies the epilogue to the unrounded
// float sum and stores. A matrix that is a weight is loaded into registers before the kernel
// waits for the one ahead of it (tg_pdl_begin), so those loads overlap that kernel's tail.
//
// Taken when the product is a GEMV in dot form — a matmul [.., M, K] · [.., K, 1] or a linear
// of one row (x [1, K] · W[N, K]ᵀ) — the matrix holds at most kGemvMaxMatrixBytes (beyond that
// the library's bandwidth-tuned kernels win, and no epilogue launch matters), the epilogue keeps
// the GEMM's shape, and the batch dims either repeat an operand or step through it. A GEMV
// without an epilogue stays a GEMM step, which the runtime tunes.
#include "codegen/cuda/CudaBuilder.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::cuda {

std::optional<KernelBuilder::Gemv> KernelBuilder::gemv(Operation *gemm, const FusedParts &parts,
                                                       Value out) {
  Value g = gemm->getResult(0);
  if (parts.result == g || shapeOf(out) != shapeOf(g) || !libraryGemm(gemm))
    return std::nullopt;
  for (const auto &l : parts.leaves)
    if (!l.second.gather.idx.empty())
      return std::nullopt;
  for (unsigned a : parts.gemmArgs)
    if (a >= inPtr.size() || inPtr[a].empty())
      return std::nullopt;
  auto dims = gemmOf(gemm);
  if (!dims) {
    llvm::consumeError(dims.takeError());
    return std::nullopt;
  }
  Gemv gv;
  gv.K = dims->K, gv.batch = dims->NB;
  if (auto lin = dyn_cast<tg::LinearOp>(gemm)) {
    if (dims->M != 1)
      return std::nullopt;
    gv.rows = dims->N, gv.matrix = 1, gv.vector = 0, gv.bias = lin.getBias() ? 2 : -1;
  } else {
    if (dims->N != 1)
      return std::nullopt;
    gv.rows = dims->M, gv.matrix = 0, gv.vector = 1;
    // Per batch: the whole operand repeated (stride 0) or one slice each.
    const int64_t la = product(dims->lhsBatch), lb = product(dims->rhsBatch);
    if ((la != 1 && la != gv.batch) || (lb != 1 && lb != gv.batch))
      return std::nullopt;
    gv.matrixStride = la == 1 ? 0 : gv.rows * gv.K;
    gv.vectorStride = lb == 1 ? 0 : gv.K;
  }
  // The kernel's operands the GEMM reads (its own operands are the fused body's arguments).
  Value mat = root->getOperand(parts.gemmArgs[gv.matrix]),
        vec = root->getOperand(parts.gemmArgs[gv.vector]);
  const int64_t es = tensorBytes(mat.getType()) / std::max<int64_t>(1, product(shapeOf(mat)));
  if (gv.K < 1 || tensorBytes(mat.getType()) > kGemvMaxMatrixBytes)
    return std::nullopt;
  // 16-byte chunks where every row starts on a 16-byte boundary.
  auto aligned = [&](Value v) {
    auto loc = em.plan_.locs.find(v);
    return loc != em.plan_.locs.end() && loc->second.kind != BufferLoc::Inline &&
           loc->second.offset % 16 == 0;
  };
  const int64_t V = 16 / es;
  gv.vec = gv.K % V == 0 && aligned(mat) && aligned(vec) ? V : 1;
  const int64_t chunks = (gv.K + gv.vec - 1) / gv.vec;
  gv.lanes = 1;
  while (gv.lanes < 32 && gv.lanes < chunks)
    gv.lanes *= 2;
  return gv;
}

llvm::Error KernelBuilder::emitGemv(Operation *rootOp, Operation *gemm, FusedParts &parts,
                                    const Gemv &gv, std::string &code) {
  Value g = gemm->getResult(0), out = rootOp->getResult(0);
  auto gt = ctypeOf(g, gemm);
  if (!gt)
    return gt.takeError();
  auto ft = ctypeOf(Float32Type::get(gemm->getContext()), gemm);
  if (!ft)
    return ft.takeError();
  // The epilogue reads the float sum `gs` as the GEMM's result.
  std::vector<std::pair<Value, Leaf>> leaves = parts.leaves;
  leaves.push_back({g, Leaf{shapeOf(g), *ft, "gs", ""}});
  if (auto e = checkElementwise(parts.ops, leaves, parts.result))
    return e;
  const std::string &T = gt->name, A = gt->calc();
  const std::string mat = inPtr[parts.gemmArgs[gv.matrix]],
                    vec = inPtr[parts.gemmArgs[gv.vector]];
  const int64_t G = gv.lanes, V = gv.vec, total = gv.batch * gv.rows;
  const int64_t per = (gv.K + G * V - 1) / (G * V); // chunks a lane takes
  // Chunks a lane holds in registers before waiting: all of them, when they are few.
  const bool preload = isWeight(rootOp->getOperand(parts.gemmArgs[gv.matrix])) && per <= 8;
  const std::string chunkT = V > 1 ? "uint4" : T;
  c.line(sourceComment("GEMV: " + str(total) + " dot products of " + str(gv.K) + " (" + str(G) +
                       " lanes each, " + str(V) + " elements a load), then the epilogue"));
  c.line("const int lane = threadIdx.x % " + str(G) + ";");
  c.line("const " + it + " o = ((" + it + ")blockIdx.x * blockDim.x + threadIdx.x) / " + str(G) +
         ";");
  c.line("const bool valid = o < " + str(total) + ";");
  c.line("const " + it + " b = valid ? o / " + str(gv.rows) + " : 0, r = valid ? o % " +
         str(gv.rows) + " : 0;");
  c.line("(void)b;");
  c.line("const " + T + " *mrow = " + mat + " + b * " + str(gv.matrixStride) + " + r * " +
         str(gv.K) + ";");
  c.line("const " + T + " *x = " + vec + " + b * " + str(gv.vectorStride) + ";");
  c.line(A + " acc = 0;");
  auto products = [&](const std::string &w, const std::string &k) {
    if (V == 1) {
      c.line("acc += (" + A + ")" + gt->ld(w) + " * (" + A + ")" + gt->ld("x[" + k + "]") + ";");
      return;
    }
    c.line("const uint4 xv = *reinterpret_cast<const uint4 *>(x + " + k + ");");
    c.line("const " + T + " *wp = reinterpret_cast<const " + T + " *>(&" + w +
           "), *xp = reinterpret_cast<const " + T + " *>(&xv);");
    c.line("#pragma unroll");
    c.line("for (int e = 0; e < " + str(V) + "; ++e) acc += (" + A + ")" + gt->ld("wp[e]") +
           " * (" + A + ")" + gt->ld("xp[e]") + ";");
  };
  const std::string load = V > 1 ? "*reinterpret_cast<const uint4 *>(mrow + k)" : "mrow[k]";
  if (preload) {
    c.line(chunkT + " wr[" + str(per) + "];");
    c.line("#pragma unroll");
    c.open("for (int q = 0; q < " + str(per) + "; ++q)");
    c.line("const " + it + " k = ((" + it + ")q * " + str(G) + " + lane) * " + str(V) + ";");
    c.line("if (valid && k < " + str(gv.K) + ") wr[q] = " + load + ";");
    c.close();
    c.line("tg_pdl_begin();");
    bodyWaits = true;
    c.line("#pragma unroll");
    c.open("for (int q = 0; q < " + str(per) + "; ++q)");
    c.line("const " + it + " k = ((" + it + ")q * " + str(G) + " + lane) * " + str(V) + ";");
    c.open("if (valid && k < " + str(gv.K) + ")");
    products("wr[q]", "k");
    c.close();
    c.close();
  } else {
    c.line("#pragma unroll 4");
    c.open("for (" + it + " k = (" + it + ")lane * " + str(V) + "; valid && k < " + str(gv.K) +
           "; k += " + str(G * V) + ")");
    c.line("const " + chunkT + " w = " + load + ";");
    products("w", "k");
    c.close();
  }
  for (int64_t s = G / 2; s > 0; s /= 2)
    c.line("acc += __shfl_xor_sync(0xffffffffu, acc, " + str(s) + ");");
  c.open("if (lane == 0 && valid)");
  if (gv.bias >= 0)
    c.line("acc += (" + A + ")" + gt->ld(inPtr[parts.gemmArgs[gv.bias]] + "[r]") + ";");
  c.line("const float gs = (float)acc;");
  const Shape os = shapeOf(out);
  llvm::Error err = llvm::Error::success();
  std::string r = elementLines(
      c, parts.ops, leaves, parts.result,
      [&](size_t k) {
        const Leaf &l = leaves[k].second;
        if (k + 1 == leaves.size())
          return std::string("gs");
        return l.ct.ld(l.ptr + "[" + broadcastIndex("o", os, l.shape) + "]");
      },
      err);
  if (err)
    return err;
  c.line(outPtr[0] + "[o] = " + r + ";");
  c.close();
  endKernel(code, (total * G + kBlock - 1) / kBlock, kBlock);
  return llvm::Error::success();
}

} // namespace tgc::cuda
