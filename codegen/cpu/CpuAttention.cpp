// CpuAttention.cpp — CPU kernels for attention and the ops recognized around it: scaled dot-product
// attention, rotary embedding and SwiGLU.
#include "codegen/cpu/CpuBuilder.h"

namespace tgc::cpu {

/// Query rows from which f32 attention runs as blocks of rows: the block kernel transposes each
/// head's keys once (D·L copies), which a single row's scores (D·L multiply-adds) would not repay.
constexpr int64_t kAttentionBlockMinRows = 4;

llvm::Error KernelBuilder::emitAttention(Operation *op, const CType *ct) {
  const std::string T = ct->name;
  const std::string sz = "sizeof(" + T + ")";
  (void)sz;

  // tg.attention in f32 over at least kAttentionBlockMinRows query rows: the prelude's
  // tg_attention_f32 (blocks of rows as small GEMMs). Otherwise (f16/bf16, or a decoding step's
  // one row, where transposing the keys would cost as much as the scores) one (b, h, s) row per
  // iteration, rows on the pool; scores, max, exp-sum and the weighted sum of v in one pass over
  // the keys. Undefined rows (all -inf, NaN, +inf) → 0.
  // With layout "bshd" rows run in (b, s, h) order, so q and the output stay contiguous rows,
  // and consecutive keys of one head are Hkv rows apart.
  if (auto at = dyn_cast<tg::AttentionOp>(op)) {
    if (!ct->isFloat)
      return opError(op, "attention needs a float type");
    const bool bshd = at.getLayout() == "bshd";
    const int hd = bshd ? 2 : 1, sd = bshd ? 1 : 2;
    Shape q = shapeOf(at.getQ()), k = shapeOf(at.getK()), v = shapeOf(at.getV());
    const int64_t B = q[0], Hq = q[hd], S = q[sd], D = q[3], Hkv = k[hd], L = k[sd], Dv = v[3];
    if (B * Hq * S * Dv == 0) {
      c.line("// empty result");
      return llvm::Error::success();
    }
    const std::string maskIdx =
        at.getMask() ? codegen::attentionMaskIndex(shapeOf(at.getMask()), {B, Hq, S, L}) : "";
    const int64_t rows = B * Hq * S;
    const bool par = rows * L * (D + Dv) >= kParallelWork;
    if (T == "float" && S >= kAttentionBlockMinRows) {
      // f32 over several query rows: blocks of rows as small GEMMs (the prelude's
      // tg_attention_f32), the mask by its broadcast strides over [B, Hq, S, L].
      Shape ms = {0, 0, 0, 0};
      if (at.getMask())
        ms = broadcastStrides(shapeOf(at.getMask()), {B, Hq, S, L});
      c.line("tg_attention_f32(in0, in1, in2, out0, " + str(B) + ", " + str(Hq) + ", " + str(Hkv) +
             ", " + str(S) + ", " + str(L) + ", " + str(D) + ", " + str(Dv) + ", " +
             (bshd ? "true" : "false") + ", " + (at.getCausal() ? "true" : "false") + ", " +
             floatLiteral(at.getScaleAttr().getValueAsDouble(), true) + ", " +
             (at.getMask() ? "in3" : "nullptr") + ", " + str(ms[0]) + ", " + str(ms[1]) + ", " +
             str(ms[2]) + ", " + str(ms[3]) + ", " + (par ? "true" : "false") + ");");
      return llvm::Error::success();
    }
    const std::string A = ct->calc(); // scores and sums: float for f16/bf16
    c.line("const " + A + " scale = (" + A + ")" +
           floatLiteral(at.getScaleAttr().getValueAsDouble(), A == "float") + ";");
    c.open("");
    // Rows [r_lo, r_hi) per chunk of the pool, with their own scores and accumulators.
    c.open(par ? "tg_parallel_for(" + str(rows) + ", true, [&](int64_t r_lo, int64_t r_hi)" : "");
    if (!par)
      c.line("const int64_t r_lo = 0, r_hi = " + str(rows) + ";");
    // Scores and accumulators in a per-thread buffer kept across calls: no allocation per run.
    c.line("static thread_local std::vector<" + A + "> tg_buf;");
    c.line("if (tg_buf.size() < " + str(L + Dv) + ") tg_buf.resize(" + str(L + Dv) + ");");
    c.line(A + " *const sc = tg_buf.data(), *const acc = sc + " + str(L) + ";");
    c.open("for (int64_t r = r_lo; r < r_hi; ++r)");
    if (bshd) {
      c.line("const int64_t h = r % " + str(Hq) + ", s = (r / " + str(Hq) + ") % " + str(S) +
             ", b = r / " + str(S * Hq) + ";");
      c.line("(void)b; (void)h; (void)s;");
      c.line("const int64_t kh = b * " + str(L * Hkv) + " + h / " + str(Hq / Hkv) + ";");
      c.line("const " + T + " *qr = in0 + r * " + str(D) + ";");
      c.line("const " + T + " *kb = in1 + kh * " + str(D) + ";");
      c.line("const " + T + " *vb = in2 + kh * " + str(Dv) + ";");
    } else {
      c.line("const int64_t s = r % " + str(S) + ", h = (r / " + str(S) + ") % " + str(Hq) +
             ", b = r / " + str(S * Hq) + ";");
      c.line("(void)b; (void)h; (void)s;");
      c.line("const int64_t kh = b * " + str(Hkv) + " + h / " + str(Hq / Hkv) + ";");
      c.line("const " + T + " *qr = in0 + r * " + str(D) + ";");
      c.line("const " + T + " *kb = in1 + kh * " + str(L * D) + ";");
      c.line("const " + T + " *vb = in2 + kh * " + str(L * Dv) + ";");
    }
    // Distance between consecutive keys (values) of one head.
    const int64_t kStep = bshd ? Hkv * D : D, vStep = bshd ? Hkv * Dv : Dv;
    c.line(T + " *o = out0 + r * " + str(Dv) + ";");
    c.line(A + " m = -std::numeric_limits<" + A + ">::infinity();");
    c.line("bool bad = false;");
    // Causal rows stop at their last visible key: the masked keys' exp(-inf) terms are 0.
    std::string tEnd = at.getCausal() ? "n" : str(L);
    if (at.getCausal())
      c.line("const int64_t n = std::min<int64_t>(s + " + str(L - S + 1) + ", " + str(L) + ");");
    c.open("for (int64_t t = 0; t < " + tEnd + "; ++t)");
    c.line(A + " x = 0;");
    c.line("const " + T + " *kr = kb + t * " + str(kStep) + ";");
    c.line("#pragma omp simd reduction(+ : x)");
    c.line("for (int64_t d = 0; d < " + str(D) + "; ++d) x += qr[d] * kr[d];");
    c.line("x *= scale;");
    if (!maskIdx.empty())
      c.line("x += in3[" + maskIdx + "];");
    c.line("if (x != x || x == std::numeric_limits<" + A + ">::infinity()) bad = true;");
    c.line("sc[t] = x;");
    c.line("if (x > m) m = x;");
    c.close();
    c.open("if (bad || m == -std::numeric_limits<" + A + ">::infinity())");
    c.line("for (int64_t j = 0; j < " + str(Dv) + "; ++j) o[j] = 0;");
    c.line("continue;");
    c.close();
    c.line("for (int64_t j = 0; j < " + str(Dv) + "; ++j) acc[j] = 0;");
    // The exponentials first, as one SIMD loop (tg_exp's polynomial), then the weighted sum.
    c.line("double sum = 0;");
    c.line("#pragma omp simd reduction(+ : sum)");
    c.line("for (int64_t t = 0; t < " + tEnd + "; ++t) { sc[t] = tg_exp<" + A +
           ">(sc[t] - m); sum += sc[t]; }");
    c.open("for (int64_t t = 0; t < " + tEnd + "; ++t)");
    c.line("const " + A + " e = sc[t];");
    c.line("const " + T + " *vr = vb + t * " + str(vStep) + ";");
    c.line("for (int64_t j = 0; j < " + str(Dv) + "; ++j) acc[j] += e * vr[j];");
    c.close();
    c.line("const " + A + " inv = (" + A + ")(1.0 / sum);");
    c.line("for (int64_t j = 0; j < " + str(Dv) + "; ++j) o[j] = acc[j] * inv;");
    c.close();
    c.close(par ? "});" : "}");
    c.close();
    return llvm::Error::success();
  }

  if (auto ro = dyn_cast<tg::RotaryOp>(op)) {
    if (!ct->isFloat)
      return opError(op, "rotary needs a float type");
    // One pass over the rows of x: y = x * cos + rotate(x) * sin, reading the partner element
    // of x directly (no rotated copy); cos/sin are read through broadcast strides.
    Shape x = shapeOf(ro.getInput());
    int64_t D = x.back(), H = D / 2;
    Shape cs = broadcastStrides(shapeOf(ro.getCos()), x),
          ss = broadcastStrides(shapeOf(ro.getSin()), x), xs = contiguousStrides(x);
    int64_t cj = cs.back(), sj = ss.back();
    cs.pop_back();
    ss.pop_back();
    xs.pop_back();
    Shape rows(x.begin(), x.end() - 1);
    auto at = [](const std::string &p, const std::string &k, int64_t stride) {
      return p + "[" +
             (stride == 0   ? std::string("0")
              : stride == 1 ? k
                            : k + " * " + str(stride)) +
             "]";
    };
    c.line(sourceComment(std::string("rotary (") + (ro.getInterleaved() ? "interleaved" : "rotate_half") +
           "): y = x * cos + rotate(x) * sin over the last dim (" + str(D) + ")"));
    loopNest(
        c, rows, {xs, cs, ss}, {"0", "0", "0"},
        [&](Code &c, const std::vector<std::string> &o) {
          c.line("const " + T + " *xr = in0 + " + o[0] + ";");
          c.line(T + " *yr = out0 + " + o[0] + ";");
          c.line("const " + T + " *cr = in1 + " + o[1] + ";");
          c.line("const " + T + " *sr = in2 + " + o[2] + ";");
          if (!ro.getInterleaved()) {
            c.line("for (int64_t k = 0; k < " + str(H) + "; ++k) yr[k] = (" + T + ")(xr[k] * " +
                   at("cr", "k", cj) + " - xr[k + " + str(H) + "] * " + at("sr", "k", sj) + ");");
            c.line("for (int64_t k = " + str(H) + "; k < " + str(D) + "; ++k) yr[k] = (" + T +
                   ")(xr[k] * " + at("cr", "k", cj) + " + xr[k - " + str(H) + "] * " +
                   at("sr", "k", sj) + ");");
          } else {
            c.open("for (int64_t k = 0; k < " + str(D) + "; k += 2)");
            c.line("yr[k] = (" + T + ")(xr[k] * " + at("cr", "k", cj) + " - xr[k + 1] * " +
                   at("sr", "k", sj) + ");");
            c.line("yr[k + 1] = (" + T + ")(xr[k + 1] * " + at("cr", "(k + 1)", cj) +
                   " + xr[k] * " + at("sr", "(k + 1)", sj) + ");");
            c.close();
          }
        },
        D);
    return llvm::Error::success();
  }

  if (isa<tg::SwigluOp>(op)) {
    if (!ct->isFloat)
      return opError(op, "swiglu needs a float type");
    // y[r, k] = silu(x[r, k]) * x[r, N + k], one pass over the rows of x.
    Shape x = shapeOf(op->getOperand(0));
    int64_t N = x.back() / 2, R = product(x, 0, x.size() - 1);
    if (R * N == 0) {
      c.line("// empty tensor");
      return llvm::Error::success();
    }
    std::string pr = pragma(R * N * 9);
    if (!pr.empty() && R > 1)
      c.line(pr);
    c.open("for (int64_t r = 0; r < " + str(R) + "; ++r)");
    c.line("const " + T + " *xr = in0 + r * " + str(2 * N) + ";");
    c.line(T + " *yr = out0 + r * " + str(N) + ";");
    if (ct->lowp) // in float, rounded once
      c.line("for (int64_t k = 0; k < " + str(N) + "; ++k) yr[k] = " +
             ct->st("tg_mul<float>(tg_silu<float>(" + ct->ld("xr[k]") + "), " +
                    ct->ld("xr[k + " + str(N) + "]") + ")") +
             ";");
    else
      c.line("for (int64_t k = 0; k < " + str(N) + "; ++k) yr[k] = tg_mul<" + T + ">(tg_silu<" +
             T + ">(xr[k]), xr[k + " + str(N) + "]);");
    c.close();
    return llvm::Error::success();
  }

  return opError(op, "op not supported by the CPU backend");
}

} // namespace tgc::cpu
