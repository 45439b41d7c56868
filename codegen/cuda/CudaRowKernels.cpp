// CudaRowKernels.cpp — CUDA kernels for row-wise ops: layer_norm, rms_norm, softmax (one block
// per row, block reductions of the prelude), reduce_* and argmax (one thread per output; a block
// per output over many elements; middle dims: CudaColumnReduce.cpp),
// attention's dispatch and its one-warp-per-query-row kernel for head dims > 128 (the tiled and
// tensor-core kernels are CudaAttention.cpp's); convolutions are CudaConv.cpp's.
//
// Accumulation: norms and softmax accumulate in f32 for f32 tensors (f64 for f64) through
// pairwise block trees, which keeps rel-L2 near 1e-7 on the test models; reduce_* accumulate in
// f64 like the CPU backend.
#include "codegen/cuda/CudaBuilder.h"

#include "codegen/common/DynamicEmit.h"
#include "codegen/common/IndexEmit.h"
#include "codegen/common/PoolEmit.h"
#include "codegen/common/ReduceEmit.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::cuda {

/// Elements reduced per output from which a reduction takes a block per output.
constexpr int64_t kBlockReduceMin = 128;

namespace {

/// Block size for one row of `d` elements: a multiple of 32, at most kBlock.
int64_t rowBlock(int64_t d) {
  int64_t b = 32;
  while (b < d && b < kBlock)
    b *= 2;
  return b;
}


/// One normalization kernel: y = (x - mean) · rstd (· scale) (+ bias) over rows of D elements
/// (layer_norm; `center` false: mean 0, rms_norm). `scale`/`bias` are "" or index expressions in
/// j (the position in the row); `...Const`: the operand is a weight.
///  - Rows of D <= kWarpRowMax elements, f32/f16/bf16, scale/bias "<ptr>[j]" or "<ptr>[0]": one
///    warp per row, 4 rows per block. Each lane keeps its D/32 elements in registers (one read of
///    the row), the statistics are two warp reductions (no block barriers), and a weight
///    scale/bias is read before waiting for the previous kernel.
///  - Otherwise one block per row (block reductions, three passes over the row).
constexpr int64_t kWarpRowMax = 2048;
/// The store: `ot` is the output's type and `epi` the expression (in `t`, the normalized value)
/// that is stored: "t", or the elementwise op the kernel applies after the norm (normEpilogue).
struct NormStore {
  CType ot;
  std::string epi = "t";
  mlir::Operation *epiOp = nullptr; ///< the op `epi` applies (normEpilogue), if any
  GatherRead gather; ///< the rows are read through a gather (in0: its table)
};
void blockRowNorm(KernelBuilder &kb, const CType &ct, int64_t R, int64_t D, double eps,
                  bool center, const std::string &scale, const std::string &bias,
                  const NormStore &st, std::string &code);
/// `const T *xr`: row r of the norm's input in0, or, read through a gather, the table row r picks.
void rowPointer(KernelBuilder &kb, const std::string &T, int64_t D, const NormStore &st) {
  std::string row = "r";
  if (!st.gather.idx.empty())
    kb.gatherRowLines(st.gather, "r", row = "gx");
  kb.c.line("const " + T + " *xr = in0 + " + row + " * " + str(D) + ";");
}
void warpRowNorm(KernelBuilder &kb, const CType &ct, int64_t R, int64_t D, double eps,
                 bool center, const std::string &scale, bool scaleConst, const std::string &bias,
                 bool biasConst, const NormStore &st, int64_t V, std::string &code);
/// Elements per 16-byte vector of a type the warp norm moves in vectors (f16/bf16: 8, f32: 4),
/// else 0.
int64_t vecElems(const CType &t) { return t.lowp ? 8 : (t.name == "float" ? 4 : 0); }
void rowNorm(KernelBuilder &kb, const CType &ct, int64_t R, int64_t D, double eps, bool center,
             const std::string &scale, bool scaleConst, const std::string &bias, bool biasConst,
             bool warpIndexable, const NormStore &st, std::string &code) {
  if (ct.name != "double" && D <= kWarpRowMax && warpIndexable) {
    // 16-byte vectors when the row is whole vectors, every buffer is aligned and V output
    // elements fill whole vectors too (f16/bf16 in, f32 out: two per chunk; f32 in, f16 out
    // would be half a vector: scalar stores).
    const int64_t V = vecElems(ct), VO = vecElems(st.ot);
    const bool vec = V > 0 && D % V == 0 && VO > 0 && VO <= V && kb.argsAligned16();
    warpRowNorm(kb, ct, R, D, eps, center, scale, scaleConst, bias, biasConst, st, vec ? V : 1,
                code);
  } else {
    blockRowNorm(kb, ct, R, D, eps, center, scale, bias, st, code);
  }
}

void blockRowNorm(KernelBuilder &kb, const CType &ct, int64_t R, int64_t D, double eps,
                  bool center, const std::string &scale, const std::string &bias,
                  const NormStore &st, std::string &code) {
  Code &c = kb.c;
  const std::string &it = kb.it, &T = ct.name;
  const std::string A = T == "double" ? "double" : "float"; // accumulator
  const std::string loopJ = "for (" + it + " j = threadIdx.x; j < " + str(D) +
                            "; j += blockDim.x)";
  c.line("const " + it + " r = blockIdx.x;");
  rowPointer(kb, T, D, st);
  if (!st.gather.out.empty()) // later ops read the gathered rows
    c.line(loopJ + " " + st.gather.out + "[r * " + str(D) + " + j] = xr[j];");
  c.line(st.ot.name + " *yr = out0 + r * " + str(D) + ";");
  if (center) {
    c.line(A + " s = 0;");
    c.line(loopJ + " s += (" + A + ")" + ct.ld("xr[j]") + ";");
    c.line("const " + A + " mean = tg_block_sum<" + A + ">(s) / (" + A + ")" + str(D) + ";");
  } else {
    c.line("const " + A + " mean = 0;");
  }
  c.line(A + " q = 0;");
  c.line(loopJ + " { const " + A + " d = (" + A + ")" + ct.ld("xr[j]") + " - mean; q += d * d; }");
  c.line("const " + A + " rstd = (" + A + ")1 / tgf_sqrt(tg_block_sum<" + A + ">(q) / (" + A +
         ")" + str(D) + " + (" + A + ")" + floatLiteral(eps, false) + ");");
  c.open(loopJ);
  c.line(A + " t = ((" + A + ")" + ct.ld("xr[j]") + " - mean) * rstd;");
  if (!scale.empty())
    c.line("t *= (" + A + ")" + ct.ld(scale) + ";");
  if (!bias.empty())
    c.line("t += (" + A + ")" + ct.ld(bias) + ";");
  c.line("yr[j] = " + st.ot.st(st.epi) + ";");
  c.close();
  kb.endKernel(code, R, rowBlock(D));
}

void warpRowNorm(KernelBuilder &kb, const CType &ct, int64_t R, int64_t D, double eps,
                 bool center, const std::string &scale, bool scaleConst, const std::string &bias,
                 bool biasConst, const NormStore &st, int64_t V, std::string &code) {
  // Lane l holds chunks c = l + 32·i (i < NC) of V consecutive elements each: j = c·V + u. With
  // V > 1 every chunk is one 16-byte load and one (or, for a wider output type, two) 16-byte
  // stores; with V == 1 this is the scalar form (j = l + 32·i, coalesced 2- or 4-byte accesses).
  Code &c = kb.c;
  const std::string &it = kb.it;
  const int64_t NC = (D / V + 31) / 32, E = NC * V;
  const std::string sD = str(D), sE = str(E), sV = str(V), sNC = str(NC);
  c.line("const int lane = threadIdx.x & 31;");
  c.line("const " + it + " r = (" + it + ")blockIdx.x * 4 + (threadIdx.x >> 5);");
  // Loads `V` elements of chunk `ch` of `ptr` (a T pointer expression) as floats into
  // dst[i·V ...]; zeros past the row.
  auto loadChunks = [&](const std::string &dst, const std::string &ptr) {
    c.line("#pragma unroll");
    c.open("for (int i = 0; i < " + sNC + "; ++i)");
    c.line("const int ch = lane + 32 * i;");
    if (V == 1) {
      c.line(dst + "[i] = ch < " + sD + " ? (float)" + ct.ld(ptr + "[ch]") + " : 0.f;");
    } else {
      c.line("uint4 raw = make_uint4(0u, 0u, 0u, 0u);");
      c.line("if (ch * " + sV + " < " + sD + ") raw = reinterpret_cast<const uint4 *>(" + ptr +
             ")[ch];");
      c.line("const " + ct.name + " *p = reinterpret_cast<const " + ct.name + " *>(&raw);");
      c.line("#pragma unroll");
      c.line("for (int u = 0; u < " + sV + "; ++u) " + dst + "[i * " + sV + " + u] = (float)" +
             ct.ld("p[u]") + ";");
    }
    c.close();
  };
  // A scale/bias expression is "<ptr>[j]" (per element: loaded like the row) or "<ptr>[0]".
  auto loadParam = [&](const std::string &name, const std::string &expr) {
    const std::string ptr = expr.substr(0, expr.rfind('['));
    if (expr.size() > 3 && expr.compare(expr.size() - 3, 3, "[0]") == 0) {
      c.line("float " + name + "[" + sE + "];");
      c.line("{ const float p0 = (float)" + ct.ld(ptr + "[0]") + ";");
      c.line("#pragma unroll");
      c.line("for (int i = 0; i < " + sE + "; ++i) " + name + "[i] = p0; }");
      return;
    }
    c.line("float " + name + "[" + sE + "];");
    loadChunks(name, ptr);
  };
  if (!scale.empty() && scaleConst)
    loadParam("ga", scale);
  if (!bias.empty() && biasConst)
    loadParam("be", bias);
  c.line("tg_pdl_begin();");
  kb.bodyWaits = true;
  if (!scale.empty() && !scaleConst)
    loadParam("ga", scale);
  if (!bias.empty() && !biasConst)
    loadParam("be", bias);
  c.line("if (r >= " + str(R) + ") return;");
  rowPointer(kb, ct.name, D, st);
  c.line(st.ot.name + " *yr = out0 + r * " + sD + ";");
  c.line("float v[" + sE + "];");
  loadChunks("v", "xr");
  if (!st.gather.out.empty()) { // later ops read the gathered rows: stored as read (exact)
    c.line(ct.name + " *gr = " + st.gather.out + " + r * " + sD + ";");
    c.line("#pragma unroll");
    c.open("for (int i = 0; i < " + sNC + "; ++i)");
    c.line("const int ch = lane + 32 * i;");
    if (V == 1) {
      c.line("if (ch < " + sD + ") gr[ch] = " + ct.st("v[i]") + ";");
    } else {
      c.open("if (ch * " + sV + " < " + sD + ")");
      c.line("__align__(16) " + ct.name + " o[" + sV + "];");
      c.line("#pragma unroll");
      c.line("for (int u = 0; u < " + sV + "; ++u) o[u] = " + ct.st("v[i * " + sV + " + u]") + ";");
      c.line("reinterpret_cast<uint4 *>(gr)[ch] = *reinterpret_cast<const uint4 *>(o);");
      c.close();
    }
    c.close();
  }
  // Element e of the lane's arrays lies in the row when its chunk does.
  const std::string valid = "(lane + 32 * (e / " + sV + ")) * " + sV + " < " + sD;
  if (center) {
    c.line("float s = 0.f;");
    c.line("#pragma unroll");
    c.line("for (int e = 0; e < " + sE + "; ++e) s += v[e];");
    c.line("const float mean = tg_warp_sum<float>(s) / (float)" + sD + ";");
  } else {
    c.line("const float mean = 0.f;");
  }
  c.line("float q = 0.f;");
  c.line("#pragma unroll");
  c.line("for (int e = 0; e < " + sE + "; ++e) { const float d = " + valid +
         " ? v[e] - mean : 0.f; q += d * d; }");
  c.line("const float rstd = 1.f / tgf_sqrt(tg_warp_sum<float>(q) / (float)" + sD + " + (float)" +
         floatLiteral(eps, false) + ");");
  c.line("#pragma unroll");
  c.open("for (int i = 0; i < " + sNC + "; ++i)");
  c.line("const int ch = lane + 32 * i;");
  c.line("if (ch * " + sV + " >= " + sD + ") break;");
  if (V > 1)
    c.line("__align__(16) " + st.ot.name + " o[" + sV + "];");
  c.line("#pragma unroll");
  c.open("for (int u = 0; u < " + sV + "; ++u)");
  c.line("const int e = i * " + sV + " + u;");
  c.line("float t = (v[e] - mean) * rstd;");
  if (!scale.empty())
    c.line("t *= ga[e];");
  if (!bias.empty())
    c.line("t += be[e];");
  c.line((V > 1 ? "o[u]" : "yr[ch]") + std::string(" = ") + st.ot.st(st.epi) + ";");
  c.close();
  if (V > 1) {
    c.line("#pragma unroll");
    c.line("for (int w = 0; w < (int)(sizeof(o) / 16); ++w) reinterpret_cast<uint4 *>(yr + ch * " +
           sV + ")[w] = reinterpret_cast<const uint4 *>(o)[w];");
  }
  c.close();
  kb.endKernel(code, (R + 3) / 4, 128);
}

} // namespace

llvm::Error KernelBuilder::emitRowKernel(Operation *op, const CType &ct, std::string &code,
                                         bool &handled) {
  handled = true;
  // A normalization stores its output, or applies the elementwise op after it (normEpilogue):
  // then the kernel writes that op's result (its type) and the op emits nothing.
  auto normStore = [&](Operation *norm, const CType &ct) -> llvm::Expected<NormStore> {
    NormStore st{ct};
    Operation *epi = normEpilogue(norm);
    if (!epi)
      return st;
    auto ot = ctypeOf(epi->getResult(0), epi);
    auto e = ot ? elemExpr(epi, {"t"}) : llvm::Expected<std::string>(ot.takeError());
    if (!e)
      return e.takeError();
    st.ot = *ot;
    st.epi = *e;
    st.epiOp = epi;
    params.back() = st.ot.name + " *out0";
    kargs.back() = StepArg{epi->getResult(0)};
    const std::string names = locationNames(epi->getLoc());
    label += " + " + epi->getName().getStringRef().str() + (names.empty() ? "" : " <- " + names);
    em.appliedByNorm_.insert(epi);
    return st;
  };
  // A norm the GEMM before it might apply (EmittedStep::norm): f16/bf16 stored as read (no
  // epilogue op) or cast to f32 (the model's output, often), a scale and a bias that are absent
  // or weights with one value per column (the sum kernel reads them before it waits for the
  // GEMM).
  auto gemmMayApply = [&](plan::NormDesc::Kind kind, double eps, int64_t D,
                          const std::string &scale, const std::string &bias, const NormStore &st) {
    for (unsigned i = 1; i < op->getNumOperands(); ++i)
      if (!isWeight(op->getOperand(i)))
        return;
    const bool perColumn = (scale.empty() || scale == inPtr[1] + "[j]") &&
                           (bias.empty() || bias == inPtr[scale.empty() ? 1 : 2] + "[j]");
    const bool asRead = st.epi == "t" && st.ot.name == ct.name;
    const bool toF32 = st.ot.name == "float" && isa_and_nonnull<tg::CastOp>(st.epiOp);
    if (!ct.lowp || !(asRead || toF32) || !perColumn)
      return;
    norm.set_out_f32(toF32);
    norm.set_kind(kind);
    norm.set_epsilon((float)eps);
    norm.set_scale(!scale.empty());
    norm.set_bias(!bias.empty());
    norm.set_cols(D);
  };
  const std::string &T = ct.name;
  const std::string A = T == "double" ? "double" : "float"; // accumulator of softmax

  if (auto ln = dyn_cast<tg::LayerNormOp>(op)) {
    auto rows = normRows(op, ct);
    if (!rows)
      return rows.takeError();
    const int64_t R = rows->R, D = rows->D;
    const std::string &scale = rows->scale, &bias = rows->bias;
    if (R * D == 0)
      return llvm::Error::success();
    auto simple = [&](const std::string &e, unsigned i) {
      return e.empty() || e == inPtr[i] + "[j]" || e == inPtr[i] + "[0]";
    };
    auto st = normStore(op, ct);
    if (!st)
      return st.takeError();
    st->gather = readThroughGather(0);
    if (st->gather.idx.empty()) // (a GEMM before it wrote something else)
      gemmMayApply(plan::NormDesc::LAYER_NORM, ln.getEpsilon().convertToDouble(), D, scale, bias,
                   *st);
    rowNorm(*this, ct, R, D, ln.getEpsilon().convertToDouble(), true, scale,
            ln.getScale() && isWeight(ln.getScale()), bias, ln.getBias() && isWeight(ln.getBias()),
            simple(scale, 1) && simple(bias, ln.getScale() ? 2 : 1), *st, code);
    return llvm::Error::success();
  }

  if (auto rn = dyn_cast<tg::RmsNormOp>(op)) {
    auto rows = normRows(op, ct);
    if (!rows)
      return rows.takeError();
    const int64_t R = rows->R, D = rows->D;
    const std::string &scale = rows->scale;
    if (R * D == 0)
      return llvm::Error::success();
    auto st = normStore(op, ct);
    if (!st)
      return st.takeError();
    st->gather = readThroughGather(0);
    if (st->gather.idx.empty())
      gemmMayApply(plan::NormDesc::RMS_NORM, rn.getEpsilon().convertToDouble(), D, scale, "", *st);
    rowNorm(*this, ct, R, D, rn.getEpsilon().convertToDouble(), false, scale,
            rn.getScale() && isWeight(rn.getScale()), "", false, true, *st, code);
    return llvm::Error::success();
  }

  if (auto sm = dyn_cast<tg::SoftmaxOp>(op)) {
    if (!ct.isFloat)
      return opError(op, "softmax needs a float type");
    Shape x = shapeOf(sm.getInput());
    int64_t axis = *tgc::normalizeAxis(sm.getAxis(), x.size());
    int64_t O = product(x, 0, axis), L = x[axis], I = product(x, axis + 1);
    if (O * L * I == 0)
      return llvm::Error::success();
    std::string at = "[k * " + str(I) + "]";
    c.line("const " + it + " r = blockIdx.x;");
    c.line("const " + it + " base = (r / " + str(I) + ") * " + str(L * I) + " + r % " + str(I) +
           ";");
    c.line("const " + T + " *xr = in0 + base;");
    c.line(T + " *yr = out0 + base;");
    std::string loopK = "for (" + it + " k = threadIdx.x; k < " + str(L) + "; k += blockDim.x)";
    // Max, sum and output in the accumulator type (float for f16/bf16/f32, double for f64).
    const std::string xv = "(" + A + ")" + ct.ld("xr" + at);
    c.line(A + " m = -tg_inf<" + A + ">();");
    c.line(loopK + " m = tg_max<" + A + ">(m, " + xv + ");");
    c.line("m = tg_block_max<" + A + ">(m);");
    c.line(A + " s = 0;");
    c.line(loopK + " s += tgf_exp(" + xv + " - m);");
    c.line("s = tg_block_sum<" + A + ">(s);");
    if (sm.getLog()) {
      c.line("const " + A + " ls = tgf_log(s);");
      c.line(loopK + " yr" + at + " = " + ct.st(xv + " - m - ls") + ";");
    } else {
      c.line("const " + A + " inv = (" + A + ")1 / s;");
      c.line(loopK + " yr" + at + " = " + ct.st("tgf_exp(" + xv + " - m) * inv") + ";");
    }
    endKernel(code, O * I, rowBlock(L));
    return llvm::Error::success();
  }

  // A float sum/mean/max/min over middle dims, the innermost kept (a channels-last global pool):
  // CudaColumnReduce.cpp.
  if (ct.isFloat)
    if (const std::optional<ColumnReduce> cr = columnReduce(op))
      return emitColumnReduce(op, *cr, ct, code);

  // A float sum/mean/max/min over many elements per output (a global average pool: hundreds
  // per channel): one block per output, its threads striding over the reduced elements, then a
  // block reduction (sums in double, as the one-thread version). One thread per output would
  // read them one by one.
  if (isa<tg::ReduceSumOp, tg::ReduceMeanOp, tg::ReduceMaxOp, tg::ReduceMinOp>(op) && ct.isFloat)
    if (const codegen::ReduceLayout rl = codegen::reduceLayout(op); rl.count >= kBlockReduceMin) {
      const int64_t K = product(rl.kept), R = rl.count;
      const std::string C = ct.calc();
      const bool sum = isa<tg::ReduceSumOp, tg::ReduceMeanOp>(op), mn = isa<tg::ReduceMinOp>(op);
      const std::string acc = sum ? "double" : C;
      c.open("for (" + it + " o = blockIdx.x; o < " + str(K) + "; o += gridDim.x)");
      c.line(it + " rem = o, base = 0;");
      for (int64_t d = (int64_t)rl.kept.size() - 1; d >= 0; --d) {
        c.line("base += rem % " + str(rl.kept[d]) + " * " + str(rl.keptStrides[d]) + ";");
        c.line("rem /= " + str(rl.kept[d]) + ";");
      }
      c.line(acc + " acc = " + (sum ? "0" : "-" + cudaTarget().infinity(C)) + ";");
      c.open("for (" + it + " r = threadIdx.x; r < " + str(R) + "; r += blockDim.x)");
      c.line(it + " q = r, off = base;");
      for (int64_t k = (int64_t)rl.rdims.size() - 1; k >= 0; --k) {
        c.line("off += q % " + str(rl.rdims[k].first) + " * " + str(rl.rdims[k].second) + ";");
        c.line("q /= " + str(rl.rdims[k].first) + ";");
      }
      // min is the max of the negated values (NaN propagates through tg_max either way).
      const std::string v = "(" + C + ")" + ct.ld("in0[off]");
      c.line(sum ? "acc += (double)" + v + ";"
                 : "acc = tg_max<" + C + ">(acc, " + (mn ? "-" : "") + v + ");");
      c.close();
      c.line("acc = " + std::string(sum ? "tg_block_sum<double>" : "tg_block_max<" + C + ">") +
             "(acc);");
      std::string fin = sum ? (isa<tg::ReduceMeanOp>(op) ? "(" + C + ")(acc / " + str(R) + ".0)"
                                                         : "(" + C + ")acc")
                            : (mn ? "-acc" : "acc");
      c.line("if (threadIdx.x == 0) out0[o] = " + ct.st(fin) + ";");
      c.close();
      endKernel(code, std::min<int64_t>(K, 65535), kBlock);
      return llvm::Error::success();
    }

  if (codegen::isReduction(op)) { // one thread per output (codegen/common/ReduceEmit)
    if (auto e = codegen::emitReduction(*this, op, ct))
      return e;
    if (items > 0)
      endKernel(code, gridFor(items), kBlock);
    return llvm::Error::success();
  }

  if (codegen::isDynamicOp(op)) { // one item (codegen/common/DynamicEmit): always launched
    if (auto e = codegen::emitDynamicOp(*this, op))
      return e;
    endKernel(code, gridFor(1), kBlock);
    return llvm::Error::success();
  }

  if (codegen::isIndexOp(op)) { // cumsum, scatter, top-k (codegen/common/IndexEmit)
    if (auto e = codegen::emitIndexOp(*this, op, ct))
      return e;
    if (items > 0)
      endKernel(code, gridFor(items), kBlock);
    return llvm::Error::success();
  }

  // tg.attention: one warp per (b, h, s) query row, 4 rows per block. Each lane holds the q and
  // output dims d ≡ lane (mod 32); per key, a warp sum gives the score, and an online softmax
  // rescales the running output. Undefined rows (all -inf, any NaN or +inf) give 0.
  if (auto at = dyn_cast<tg::AttentionOp>(op)) {
    if (T != "float" && !ct.lowp)
      return opError(op, "attention is fp32/fp16/bf16 only in this version");
    // Scores, softmax statistics and the output accumulate in float whatever the storage type.
    CType mt = ct;
    if (at.getMask()) {
      auto m = ctypeOf(at.getMask(), op);
      if (!m)
        return m.takeError();
      mt = *m;
    }
    const bool bshd = at.getLayout() == "bshd";
    const int hd = bshd ? 2 : 1, sd = bshd ? 1 : 2;
    Shape q = shapeOf(at.getQ()), k = shapeOf(at.getK()), v = shapeOf(at.getV());
    const int64_t B = q[0], Hq = q[hd], S = q[sd], D = q[3], Hkv = k[hd], L = k[sd], Dv = v[3];
    const int64_t rows = B * Hq * S;
    if (rows * Dv == 0)
      return llvm::Error::success();
    const std::string maskIdx =
        at.getMask() ? codegen::attentionMaskIndex(shapeOf(at.getMask()), {B, Hq, S, L}) : "";
    const int64_t nq = (D + 31) / 32, nv = (Dv + 31) / 32;
    if (D <= 128 && Dv <= 128 && (!at.getMask() || !inPtr[3].empty())) {
      if (ct.lowp && D % 16 == 0 && Dv % 8 == 0)
        return mmaAttention(*this, at, ct, mt, maskIdx, code);
      return tiledAttention(*this, at, ct, mt, maskIdx, code);
    }
    c.line("const int lane = threadIdx.x & 31;");
    c.line("const " + it + " r = (" + it + ")blockIdx.x * 4 + (threadIdx.x >> 5);");
    c.line("if (r >= " + str(rows) + ") return;");
    // Rows run in the layout's own order ((b, h, s) or (b, s, h)), so q and out stay rows.
    if (bshd) {
      c.line("const " + it + " h = r % " + str(Hq) + ", s = (r / " + str(Hq) + ") % " +
             str(S) + ", b = r / " + str(S * Hq) + ";");
      c.line("(void)b; (void)h; (void)s;");
      c.line("const " + it + " kh = b * " + str(L * Hkv) + " + h / " + str(Hq / Hkv) + ";");
      c.line("const " + T + " *qr = in0 + r * " + str(D) + ";");
      c.line("const " + T + " *kb = in1 + kh * " + str(D) + ";");
      c.line("const " + T + " *vb = in2 + kh * " + str(Dv) + ";");
    } else {
      c.line("const " + it + " s = r % " + str(S) + ", h = (r / " + str(S) + ") % " + str(Hq) +
             ", b = r / " + str(S * Hq) + ";");
      c.line("(void)b; (void)h; (void)s;");
      c.line("const " + it + " kh = b * " + str(Hkv) + " + h / " + str(Hq / Hkv) + ";");
      c.line("const " + T + " *qr = in0 + r * " + str(D) + ";");
      c.line("const " + T + " *kb = in1 + kh * " + str(L * D) + ";");
      c.line("const " + T + " *vb = in2 + kh * " + str(L * Dv) + ";");
    }
    const int64_t kStep = bshd ? Hkv * D : D, vStep = bshd ? Hkv * Dv : Dv;
    c.line("const float scale = " +
           floatLiteral(at.getScaleAttr().getValueAsDouble(), true) + ";");
    c.line("float qv[" + str(nq) + "], acc[" + str(nv) + "];");
    c.line("#pragma unroll");
    c.line("for (int u = 0; u < " + str(nq) + "; ++u) { const int d = lane + 32 * u; qv[u] = d < " +
           str(D) + " ? " + ct.ld("qr[d]") + " : 0.f; }");
    c.line("#pragma unroll");
    c.line("for (int u = 0; u < " + str(nv) + "; ++u) acc[u] = 0.f;");
    c.line("float m = -tg_inf_f(), l = 0.f;");
    c.line("bool bad = false;");
    std::string tEnd = str(L);
    if (at.getCausal()) {
      c.line("const " + it + " n = s + " + str(L - S + 1) + " < " + str(L) + " ? s + " +
             str(L - S + 1) + " : " + str(L) + ";");
      tEnd = "n";
    }
    c.open("for (" + it + " t = 0; t < " + tEnd + "; ++t)");
    c.line("const " + T + " *kr = kb + t * " + str(kStep) + ";");
    c.line("float x = 0.f;");
    c.line("#pragma unroll");
    c.line("for (int u = 0; u < " + str(nq) + "; ++u) { const int d = lane + 32 * u; if (d < " +
           str(D) + ") x += qv[u] * " + ct.ld("kr[d]") + "; }");
    c.line("x = tg_warp_sum<float>(x) * scale;");
    if (!maskIdx.empty())
      c.line("x += (float)" + mt.ld("in3[" + maskIdx + "]") + ";");
    c.line("if (x != x || x == tg_inf_f()) bad = true;");
    c.line("if (bad || x == -tg_inf_f()) continue;");
    c.line("const float mn = x > m ? x : m;");
    c.line("const float corr = tgf_exp(m - mn), p = tgf_exp(x - mn);");
    c.line("l = l * corr + p;");
    c.line("const " + T + " *vr = vb + t * " + str(vStep) + ";");
    c.line("#pragma unroll");
    c.line("for (int u = 0; u < " + str(nv) + "; ++u) { const int d = lane + 32 * u; if (d < " +
           str(Dv) + ") acc[u] = acc[u] * corr + p * " + ct.ld("vr[d]") + "; }");
    c.line("m = mn;");
    c.close();
    c.line(T + " *o = out0 + r * " + str(Dv) + ";");
    c.line("const bool zero = bad || m == -tg_inf_f();");
    c.line("const float inv = zero ? 0.f : 1.f / l;");
    c.line("#pragma unroll");
    c.line("for (int u = 0; u < " + str(nv) + "; ++u) { const int d = lane + 32 * u; if (d < " +
           str(Dv) + ") o[d] = " + ct.st("zero ? 0.f : acc[u] * inv") + "; }");
    endKernel(code, (rows + 3) / 4, 128);
    return llvm::Error::success();
  }

  if (auto ro = dyn_cast<tg::RotaryOp>(op)) {
    if (!ct.isFloat)
      return opError(op, "rotary needs a float type");
    // One thread per element; cos/sin through broadcast strides (rotaryElement).
    Shape x = shapeOf(ro.getInput());
    if (product(x) == 0)
      return llvm::Error::success();
    gridLoop(x, {contiguousStrides(x), contiguousStrides(x),
                 broadcastStrides(shapeOf(ro.getCos()), x), broadcastStrides(shapeOf(ro.getSin()), x)},
             {"0", "0", "0", "0"}, [&](Code &c, const std::vector<std::string> &q) {
               rotaryElement(c, ro, it, "out0", "in0", "in1", "in2", q);
             });
    endKernel(code, gridFor(product(x)), kBlock);
    return llvm::Error::success();
  }

  if (isa<tg::SwigluOp>(op)) {
    if (!ct.isFloat)
      return opError(op, "swiglu needs a float type");
    // y[r, k] = silu(x[r, k]) * x[r, N + k]. f16/bf16 rows of a multiple of 8 in 16-byte
    // aligned buffers: 8 outputs per thread from two 16-byte loads. Besides the wider accesses,
    // that is 8× fewer blocks: the whole grid becomes resident while the gate/up GEMM still runs,
    // so it triggers the down projection's launch at once, and as the GEMM's CTAs leave, the
    // down projection's CTAs (not more SwiGLU blocks) take their multiprocessors and load their
    // weights while this kernel runs (perf-log, tenth session).
    Shape x = shapeOf(op->getOperand(0));
    int64_t N = x.back() / 2, total = product(x) / 2;
    if (total == 0)
      return llvm::Error::success();
    const std::string C = ct.calc();
    auto y = [&](const std::string &g, const std::string &u) {
      return ct.st("tg_mul<" + C + ">(tg_silu<" + C + ">(" + ct.ld(g) + "), " + ct.ld(u) + ")");
    };
    const bool vec = ct.lowp && N % 8 == 0 && argsAligned16();
    const int64_t V = vec ? 8 : 1; // outputs per loop iteration
    c.open("for (" + it + " i = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x; i < " +
           str(total / V) + "; i += (" + it + ")gridDim.x * blockDim.x)");
    c.line("const " + it + " r = i / " + str(N / V) + ", k = i % " + str(N / V) +
           (vec ? " * 8;" : ";"));
    c.line("const " + T + " *xr = in0 + r * " + str(2 * N) + ";");
    if (vec) {
      c.line("const uint4 gv = *reinterpret_cast<const uint4 *>(xr + k), uv = "
             "*reinterpret_cast<const uint4 *>(xr + k + " + str(N) + ");");
      c.line("const " + T + " *g = reinterpret_cast<const " + T + " *>(&gv), *u = "
             "reinterpret_cast<const " + T + " *>(&uv);");
      c.line("uint4 w;");
      c.line(T + " *wp = reinterpret_cast<" + T + " *>(&w);");
      c.line("#pragma unroll");
      c.line("for (int q = 0; q < 8; ++q) wp[q] = " + y("g[q]", "u[q]") + ";");
      c.line("*reinterpret_cast<uint4 *>(out0 + i * 8) = w;");
    } else {
      c.line("out0[i] = " + y("xr[k]", "xr[k + " + str(N) + "]") + ";");
    }
    c.close();
    endKernel(code, gridFor(total / V), kBlock);
    return llvm::Error::success();
  }

  if (auto conv = dyn_cast<tg::ConvOp>(op)) // a CONV step (CudaConv.cpp)
    return emitConv(op, conv, nullptr, code);

  if (auto pool = dyn_cast<tg::PoolOp>(op)) { // one thread per output (codegen/common/PoolEmit)
    const int64_t total = product(shapeOf(pool.getResult()));
    if (total == 0)
      return llvm::Error::success();
    codegen::PoolSpelling sp;
    sp.index = it;
    sp.acc = ct.calc();
    sp.lowest = ct.isFloat ? "-tg_inf<" + ct.calc() + ">()" : "tg_lo<" + T + ">()";
    sp.load = [&](const std::string &e) { return ct.ld(e); };
    sp.store = [&](const std::string &e) { return ct.st(e); };
    c.open("for (" + it + " i = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x; i < " +
           str(total) + "; i += (" + it + ")gridDim.x * blockDim.x)");
    codegen::emitPoolElement(c, pool, sp, inPtr[0], "out0");
    c.close();
    endKernel(code, gridFor(total), kBlock);
    return llvm::Error::success();
  }

  handled = false;
  return llvm::Error::success();
}

} // namespace tgc::cuda
