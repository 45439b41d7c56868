// CudaColumnReduce.cpp — a float sum/mean/max/min over the middle dims of its input, the
// innermost dims kept: [outer, R, inner] -> [outer, inner]. A channels-last global pool is one
// ([N, H·W, C] -> [N, C]: the squeeze-excitation means of MobileNet and EfficientNet).
//
// A block per output would read its R elements `inner` apart (one sector per element). Here a
// block takes 32 neighbouring outputs (a warp reads 32 contiguous elements of a row) and 8 rows
// at a time; the rows are split over S blocks so that even [1, 112·112, 32] fills the GPU. Each
// block writes its partial result to the scratch area; the last of a tile's S blocks to finish
// (an atomic count, reset by that block, kept in a __device__ array of the module) combines the
// S partials and writes the outputs: the threadFenceReduction pattern of the CUDA samples, one
// kernel instead of a second pass. Grids run one after another (tg_pdl_begin waits for the grid
// before), so the count is 0 again whenever a grid starts. Sums accumulate in double, as the
// other reductions here.
#include "codegen/cuda/CudaBuilder.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::cuda {

std::optional<KernelBuilder::ColumnReduce> KernelBuilder::columnReduce(Operation *op) const {
  if (!isa<tg::ReduceSumOp, tg::ReduceMeanOp, tg::ReduceMaxOp, tg::ReduceMinOp>(op))
    return std::nullopt;
  const Shape x = shapeOf(op->getOperand(0));
  std::vector<bool> red(x.size(), false);
  for (Attribute a : op->getAttrOfType<ArrayAttr>("axes"))
    red[(size_t)*tgc::normalizeAxis(a.cast<IntegerAttr>().getInt(), x.size())] = true;
  // The reduced dims of size > 1 must be one run [a, b) of dims (size-1 dims anywhere).
  int64_t a = -1, b = -1;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!red[d] || x[d] == 1)
      continue;
    if (b >= 0 && b != (int64_t)d)
      for (size_t e = (size_t)b; e < d; ++e)
        if (x[e] != 1)
          return std::nullopt; // a kept dim of size > 1 between two reduced ones
    a = a < 0 ? (int64_t)d : a;
    b = (int64_t)d + 1;
  }
  if (a < 0)
    return std::nullopt;
  ColumnReduce cr;
  cr.outer = product(x, 0, a);
  cr.rows = product(x, a, b);
  cr.inner = product(x, b, (int64_t)x.size());
  if (cr.inner < kColumnReduceMinInner || cr.rows < kColumnReduceMinRows)
    return std::nullopt;
  const int64_t tiles = cr.outer * ((cr.inner + 31) / 32);
  // About two blocks per SM of the largest GPUs, at least 64 rows (8 per thread) a block.
  cr.splits = std::max<int64_t>(
      1, std::min({(kColumnReduceBlocks + tiles - 1) / tiles, cr.rows / 64, int64_t(64)}));
  return cr;
}

llvm::Error KernelBuilder::emitColumnReduce(Operation *op, const ColumnReduce &cr,
                                            const CType &ct, std::string &code) {
  const bool sum = isa<tg::ReduceSumOp, tg::ReduceMeanOp>(op), mn = isa<tg::ReduceMinOp>(op);
  const std::string C = ct.calc(), A = sum ? "double" : C;
  const int64_t tilesPerRow = (cr.inner + 31) / 32, tiles = cr.outer * tilesPerRow,
                S = cr.splits, K = cr.outer * cr.inner, R = cr.rows;
  const std::string init = sum ? "0" : "-" + cudaTarget().infinity(C);
  // min is the max of the negated values (NaN propagates through tg_max either way).
  auto combine = [&](const std::string &v) {
    return sum ? "acc += " + v + ";" : "acc = tg_max<" + C + ">(acc, " + v + ");";
  };
  const std::string count = symbolBase + "_done";
  if (S > 1) {
    globals += "__device__ unsigned int " + count + "[" + str(tiles) + "];\n";
    const int64_t bytes = S * K * (A == "double" ? 8 : 4);
    em.scratch_ = std::max(em.scratch_, (bytes + kBufferAlignment - 1) / kBufferAlignment *
                                            kBufferAlignment);
    addParam(A + " *part", StepArg{Value(), 0, bytes});
  }
  c.line("__shared__ " + A + " sh[8][33];");
  c.line("const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;");
  c.line("const " + it + " tile = blockIdx.x % " + str(tiles) + ", split = blockIdx.x / " +
         str(tiles) + ";");
  c.line("const " + it + " o = tile / " + str(tilesPerRow) + ", c = (tile % " + str(tilesPerRow) +
         ") * 32 + tx;");
  c.line(A + " acc = " + init + ";");
  c.open("if (c < " + str(cr.inner) + ")");
  c.line("const " + ct.name + " *x = in0 + o * " + str(R * cr.inner) + " + c;");
  c.open("for (" + it + " r = split * 8 + ty; r < " + str(R) + "; r += " + str(8 * S) + ")");
  const std::string v = "(" + C + ")" + ct.ld("x[r * " + str(cr.inner) + "]");
  c.line(combine(sum ? "(double)" + v : (mn ? "-" : "") + v));
  c.close();
  c.close();
  // The block's 8 rows of partial results, combined by the first row of threads.
  auto combineRows = [&] {
    c.line("sh[ty][tx] = acc;");
    c.line("__syncthreads();");
    c.open("if (ty == 0)");
    c.line("for (int k = 1; k < 8; ++k) " + combine("sh[k][tx]"));
    c.close();
  };
  combineRows();
  const std::string fin = sum ? (isa<tg::ReduceMeanOp>(op) ? "(" + C + ")(acc / " + str(R) + ".0)"
                                                           : "(" + C + ")acc")
                              : (mn ? "-acc" : "acc");
  const std::string store =
      "if (ty == 0 && c < " + str(cr.inner) + ") out0[o * " + str(cr.inner) + " + c] = " +
      ct.st(fin) + ";";
  if (S == 1) {
    c.line(store);
  } else {
    c.line("if (ty == 0 && c < " + str(cr.inner) + ") part[split * " + str(K) + " + o * " +
           str(cr.inner) + " + c] = acc;");
    c.line("__threadfence();");
    c.line("__shared__ bool last;");
    c.line("__syncthreads();");
    c.line("if (threadIdx.x == 0) last = atomicAdd(&" + count + "[tile], 1u) == " + str(S - 1) +
           ";");
    c.line("__syncthreads();");
    c.line("if (!last) return;");
    // The last block of the tile: its S partials, 8 rows at a time.
    c.line("acc = " + init + ";");
    c.open("if (c < " + str(cr.inner) + ")");
    c.line("for (int s = ty; s < " + str(S) + "; s += 8) " +
           combine("((volatile " + A + " *)part)[s * " + str(K) + " + o * " + str(cr.inner) +
                   " + c]"));
    c.close();
    combineRows();
    c.line(store);
    c.line("if (threadIdx.x == 0) " + count + "[tile] = 0;");
  }
  endKernel(code, tiles * S, 256);
  return llvm::Error::success();
}

} // namespace tgc::cuda
