// CudaLoopGemm.cpp — the CUDA kernels of GEMMs that no GEMM step takes: integer GEMMs (the int32
// products of MatMulInteger, ConvInteger's and QLinear*'s decompositions, any integer matmul)
// and f64 ones, as generated loops (codegen/common/LoopGemmEmit: one thread per output element,
// exact integer sums, f64 sums in double). cuBLASLt's f32/f16/bf16 steps stay the fast path.
#include "codegen/cuda/CudaBuilder.h"

#include "codegen/common/LoopGemmEmit.h"

using namespace mlir;

namespace tgc::cuda {

llvm::Error KernelBuilder::emitLoopGemmKernels(Operation *gemm, FusedParts *parts,
                                               std::string &code) {
  if (!parts) { // a standalone linear/matmul: the kernel begun by emitOp
    if (auto e = codegen::emitLoopGemm(*this, gemm, inPtr, outPtr[0], true))
      return e;
    if (items > 0)
      endKernel(code, gridFor(items), kBlock);
    return llvm::Error::success();
  }
  std::vector<std::string> ptrs;
  for (unsigned a : parts->gemmArgs)
    ptrs.push_back(inPtr[a]);
  Value g = gemm->getResult(0);
  if (parts->result == g) {
    if (auto e = codegen::emitLoopGemm(*this, gemm, ptrs, outPtr[0], true))
      return e;
    if (items > 0)
      endKernel(code, gridFor(items), kBlock);
    return llvm::Error::success();
  }
  // The GEMM into the scratch area (its own kernel, with its own constant arrays), then the
  // epilogue reading it.
  auto gt = ctypeOf(g, gemm);
  if (!gt)
    return gt.takeError();
  const int64_t bytes = tensorBytes(g.getType());
  em.scratch_ =
      std::max(em.scratch_, (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment);
  const StepArg tmp{Value(), 0, bytes};
  const std::string epilogueGlobals = globals;
  globals.clear();
  addParam(gt->name + " *gtmp", tmp);
  if (auto e = codegen::emitLoopGemm(*this, gemm, ptrs, "gtmp", true))
    return e;
  if (items > 0) {
    const std::string base = symbolBase;
    symbolBase += "_gemm";
    endKernel(code, gridFor(items), kBlock);
    symbolBase = base;
  }
  std::vector<std::pair<Value, Leaf>> leaves = parts->leaves;
  if (auto e = beginKernel())
    return e;
  globals = epilogueGlobals;
  addParam("const " + gt->name + " *gtmp", tmp);
  c.line(sourceComment("epilogue: " + std::to_string(parts->ops.size()) +
                       " elementwise op(s) per output element"));
  leaves.push_back({g, Leaf{shapeOf(g), *gt, "gtmp", ""}});
  Value out = root->getResult(0);
  if (auto e = elementwise(parts->ops, leaves, parts->result, outPtr[0]))
    return e;
  endKernel(code, gridFor(product(shapeOf(out)) / vecWidth), kBlock);
  return llvm::Error::success();
}

} // namespace tgc::cuda
