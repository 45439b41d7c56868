// LoopGemmEmit.cpp — tg.linear / tg.matmul as plain loops, one output element per item, for both
// backends (see LoopGemmEmit.h). Correctness first: no tiling; the library GEMMs stay the fast
// path for the float types they take.
#include "codegen/common/LoopGemmEmit.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::codegen {

llvm::Error emitLoopGemm(CKernel &k, Operation *op, const std::vector<std::string> &ptrs,
                         const std::string &out, bool withBias) {
  auto ct = k.ctype(op->getResult(0), op);
  if (!ct)
    return ct.takeError();
  if (ct->isBool)
    return k.error(op, "a GEMM of booleans is not supported");
  const Type et = op->getResult(0).getType().cast<RankedTensorType>().getElementType();
  for (Value v : op->getOperands())
    if (v.getType().cast<RankedTensorType>().getElementType() != et)
      return k.error(op, "GEMM operands must all have the result's element type");
  auto dims = k.gemmOf(op);
  if (!dims)
    return dims.takeError();
  const int64_t M = dims->M, K = dims->K, N = dims->N, NB = dims->NB;
  const int64_t total = NB * M * N;
  k.items = 0;
  if (total == 0)
    return llvm::Error::success();
  auto lin = dyn_cast<tg::LinearOp>(op);
  // Per-batch element offsets of A and B ("0" for one batch).
  std::string aoff = "0", boff = "0";
  if (!lin && NB > 1) {
    const Shape &ab = dims->lhsBatch, &bb = dims->rhsBatch;
    const bool aAll = product(ab) == NB, bAll = product(bb) == NB;
    const bool aNone = product(ab) == 1, bNone = product(bb) == 1;
    if ((aAll || aNone) && (bAll || bNone)) {
      aoff = aNone ? "0" : "b * " + str(M * K);
      boff = bNone ? "0" : "b * " + str(K * N);
    } else { // general broadcast: tables of offsets
      Shape as = broadcastStrides(ab, dims->batch), bs = broadcastStrides(bb, dims->batch);
      Shape at, bt, coord(dims->batch.size(), 0);
      for (int64_t i = 0; i < NB; ++i) {
        int64_t ao = 0, bo = 0;
        for (size_t d = 0; d < coord.size(); ++d)
          ao += coord[d] * as[d], bo += coord[d] * bs[d];
        at.push_back(ao * M * K), bt.push_back(bo * K * N);
        for (int64_t d = (int64_t)coord.size() - 1; d >= 0; --d) {
          if (++coord[d] < dims->batch[d])
            break;
          coord[d] = 0;
        }
      }
      const std::string ta = "tgc_idx" + std::to_string(k.constants++);
      const std::string tb = "tgc_idx" + std::to_string(k.constants++);
      k.globals += std::string(k.target.constArray) + " int64_t " + ta + "[" + str(NB) +
                   "] = " + intArray(at) + ";\n";
      k.globals += std::string(k.target.constArray) + " int64_t " + tb + "[" + str(NB) +
                   "] = " + intArray(bt) + ";\n";
      aoff = ta + "[b]", boff = tb + "[b]";
    }
  }
  const bool isInt = !ct->isFloat;
  const std::string acc = isInt ? "uint64_t" : ct->calc();
  auto term = [&](const std::string &e) {
    return isInt ? "(uint64_t)(int64_t)" + e : "(" + acc + ")" + ct->ld(e);
  };
  Code &c = k.c;
  c.line(sourceComment("GEMM as loops: one output element per item, " +
                       std::string(isInt ? "exact integer sums (modulo 2^64)" : acc + " sums")));
  k.openParallel("e", total, total * std::max<int64_t>(K, 1));
  c.line("const int64_t j = (int64_t)e % " + str(N) + ", i = (int64_t)e / " + str(N) + " % " +
         str(M) + ", b = (int64_t)e / " + str(M * N) + ";");
  c.line("(void)b;");
  c.line(acc + " s = 0;");
  const std::string a = ptrs[0] + "[" + aoff + " + i * " + str(K) + " + kk]";
  const std::string bv = lin ? ptrs[1] + "[j * " + str(K) + " + kk]"
                             : ptrs[1] + "[" + boff + " + kk * " + str(N) + " + j]";
  c.open("for (int64_t kk = 0; kk < " + str(K) + "; ++kk)");
  c.line("s += " + term(a) + " * " + term(bv) + ";");
  c.close();
  if (lin && lin.getBias() && withBias)
    c.line("s += " + term(ptrs[2] + "[j]") + ";");
  c.line(out + "[e] = " + ct->st("s") + ";");
  c.close();
  return llvm::Error::success();
}

} // namespace tgc::codegen
