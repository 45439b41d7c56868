// CudaTiledAttention.cpp — tg.attention as a tiled float kernel (any element type, head dims
// <= 128): one block per 16 query rows of a head, K/V tiles in shared memory, online softmax.
// The tensor-core kernel for f16/bf16 is CudaAttention.cpp's.
#include "codegen/cuda/CudaBuilder.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::cuda {

/// tg.attention, tiled (head dims <= 128): one block of 4 warps per (b, h, 16 query rows). The
/// block stages its scaled q rows and, tile by tile, KT keys of K (transposed, padded against
/// bank conflicts) and V in shared memory as float; each warp owns 4 query rows, each lane KT/32
/// keys of a tile for the scores and output dims d ≡ lane (mod 32) for the P·V product. Online
/// softmax per tile in float (warp max; per-lane partial sums, one warp sum at the end); causal
/// blocks stop at their last visible key. Undefined rows (all -inf, any NaN or +inf score) give
/// 0, like the one-warp-per-row kernel. With layout "bshd" a head's rows are Hq (q, output) or
/// Hkv (k, v) rows apart instead of adjacent; only the staging loads and the stores change.
llvm::Error tiledAttention(KernelBuilder &kb, tg::AttentionOp at, const CType &ct, const CType &mt,
                           const std::string &maskIdx, std::string &code) {
  Code &c = kb.c;
  const std::string &it = kb.it;
  const std::string &T = ct.name;
  const bool bshd = at.getLayout() == "bshd";
  const int hd = bshd ? 2 : 1, sd = bshd ? 1 : 2;
  Shape q = shapeOf(at.getQ()), k = shapeOf(at.getK()), v = shapeOf(at.getV());
  const int64_t B = q[0], Hq = q[hd], S = q[sd], D = q[3], Hkv = k[hd], L = k[sd], Dv = v[3];
  constexpr int64_t W = 4, R = 4, QT = W * R, NT = W * 32;
  const int64_t KT = std::max(D, Dv) <= 64 ? 64 : 32, KPL = KT / 32, NV = (Dv + 31) / 32;
  const int64_t nQT = (S + QT - 1) / QT;
  const bool q4 = D % 4 == 0;
  const std::string sQT = str(QT), sKT = str(KT), sD = str(D), sDv = str(Dv), sL = str(L),
                    sS = str(S);
  c.line("__shared__ __align__(16) float Qs[" + sQT + "][" + sD + "];");
  c.line("__shared__ float Ks[" + sD + "][" + str(KT + 1) + "];");
  c.line("__shared__ float Vs[" + sKT + "][" + str(NV * 32) + "];");
  c.line("__shared__ __align__(16) float Ps[" + str(W) + "][" + str(R) + "][" + sKT + "];");
  c.line("const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;");
  c.line("const " + it + " qt = (" + it + ")blockIdx.x % " + str(nQT) + ", bh = (" + it +
         ")blockIdx.x / " + str(nQT) + ";");
  c.line("const " + it + " h = bh % " + str(Hq) + ", b = bh / " + str(Hq) + ";");
  c.line("(void)h; (void)b;");
  c.line("const " + it + " s0 = qt * " + sQT + ";");
  if (bshd) {
    c.line("const " + it + " kh = b * " + str(L * Hkv) + " + h / " + str(Hq / Hkv) + ";");
    c.line("const " + T + " *qb = in0 + (b * " + str(S * Hq) + " + h) * " + sD + ";");
    c.line("const " + T + " *kb = in1 + kh * " + sD + ";");
    c.line("const " + T + " *vb = in2 + kh * " + sDv + ";");
  } else {
    c.line("const " + it + " kh = b * " + str(Hkv) + " + h / " + str(Hq / Hkv) + ";");
    c.line("const " + T + " *qb = in0 + bh * " + str(S * D) + ";");
    c.line("const " + T + " *kb = in1 + kh * " + str(L * D) + ";");
    c.line("const " + T + " *vb = in2 + kh * " + str(L * Dv) + ";");
  }
  c.line("const float scale = " + floatLiteral(at.getScaleAttr().getValueAsDouble(), true) + ";");
  c.open("for (int e = tid; e < " + str(QT * D) + "; e += " + str(NT) + ")");
  c.line("const int i = e / " + sD + ", d = e % " + sD + ";");
  c.line("Qs[i][d] = s0 + i < " + sS + " ? " +
         ct.ld("qb[(s0 + i) * " + (bshd ? str(Hq * D) : sD) + " + d]") + " * scale : 0.f;");
  c.close();
  c.line("float acc[" + str(R) + "][" + str(NV) + "], m[" + str(R) + "], l[" + str(R) + "];");
  c.line("bool bad[" + str(R) + "];");
  c.line("#pragma unroll");
  c.open("for (int i = 0; i < " + str(R) + "; ++i)");
  c.line("m[i] = -tg_inf_f(); l[i] = 0.f; bad[i] = false;");
  c.line("#pragma unroll");
  c.line("for (int u = 0; u < " + str(NV) + "; ++u) acc[i][u] = 0.f;");
  c.close();
  std::string tEnd = sL;
  if (at.getCausal()) {
    // Row s sees keys t < s + L - S + 1; the block's last row bounds the tiles.
    c.line("const " + it + " sl = s0 + " + sQT + " < " + sS + " ? s0 + " + sQT + " - 1 : " +
           str(S - 1) + ";");
    c.line("const " + it + " tEnd = sl + " + str(L - S + 1) + " < " + sL + " ? sl + " +
           str(L - S + 1) + " : " + sL + ";");
    tEnd = "tEnd";
  }
  c.open("for (" + it + " t0 = 0; t0 < " + tEnd + "; t0 += " + sKT + ")");
  c.line("__syncthreads();");
  c.open("for (int e = tid; e < " + str(KT * D) + "; e += " + str(NT) + ")");
  c.line("const int t = e / " + sD + ", d = e % " + sD + ";");
  c.line("Ks[d][t] = t0 + t < " + sL + " ? " +
         ct.ld(bshd ? "kb[(t0 + t) * " + str(Hkv * D) + " + d]" : "kb[t0 * " + sD + " + e]") +
         " : 0.f;");
  c.close();
  c.open("for (int e = tid; e < " + str(KT * Dv) + "; e += " + str(NT) + ")");
  c.line("const int t = e / " + sDv + ", d = e % " + sDv + ";");
  c.line("Vs[t][d] = t0 + t < " + sL + " ? " +
         ct.ld(bshd ? "vb[(t0 + t) * " + str(Hkv * Dv) + " + d]" : "vb[t0 * " + sDv + " + e]") +
         " : 0.f;");
  c.close();
  c.line("__syncthreads();");
  // Scores: x[i][c] = q_i · k_{t0 + lane + 32c}.
  c.line("float x[" + str(R) + "][" + str(KPL) + "];");
  c.line("#pragma unroll");
  c.line("for (int i = 0; i < " + str(R) + "; ++i) for (int cc = 0; cc < " + str(KPL) +
         "; ++cc) x[i][cc] = 0.f;");
  if (q4) {
    c.line("#pragma unroll 2");
    c.open("for (int d = 0; d < " + sD + "; d += 4)");
    c.line("float kk[4][" + str(KPL) + "];");
    c.line("#pragma unroll");
    c.line("for (int j = 0; j < 4; ++j) for (int cc = 0; cc < " + str(KPL) +
           "; ++cc) kk[j][cc] = Ks[d + j][lane + 32 * cc];");
    c.line("#pragma unroll");
    c.open("for (int i = 0; i < " + str(R) + "; ++i)");
    c.line("const float4 qq = *(const float4 *)&Qs[w * " + str(R) + " + i][d];");
    c.line("#pragma unroll");
    c.line("for (int cc = 0; cc < " + str(KPL) +
           "; ++cc) x[i][cc] += qq.x * kk[0][cc] + qq.y * kk[1][cc] + qq.z * kk[2][cc] + qq.w * "
           "kk[3][cc];");
    c.close();
    c.close();
  } else {
    c.line("#pragma unroll 4");
    c.open("for (int d = 0; d < " + sD + "; ++d)");
    c.line("float kk[" + str(KPL) + "];");
    c.line("#pragma unroll");
    c.line("for (int cc = 0; cc < " + str(KPL) + "; ++cc) kk[cc] = Ks[d][lane + 32 * cc];");
    c.line("#pragma unroll");
    c.line("for (int i = 0; i < " + str(R) + "; ++i) { const float qd = Qs[w * " + str(R) +
           " + i][d]; for (int cc = 0; cc < " + str(KPL) + "; ++cc) x[i][cc] += qd * kk[cc]; }");
    c.close();
  }
  // Online softmax per row.
  c.line("#pragma unroll");
  c.open("for (int i = 0; i < " + str(R) + "; ++i)");
  c.line("const " + it + " s = s0 + w * " + str(R) + " + i;");
  c.line("float mt = -tg_inf_f();");
  c.line("#pragma unroll");
  c.open("for (int cc = 0; cc < " + str(KPL) + "; ++cc)");
  c.line("const " + it + " t = t0 + lane + 32 * cc;");
  std::string vis = "s < " + sS + " && t < " + sL;
  if (at.getCausal())
    vis += " && t < s + " + str(L - S + 1);
  c.line("float xv = -tg_inf_f();");
  c.open("if (" + vis + ")");
  c.line("xv = x[i][cc];");
  if (!maskIdx.empty())
    c.line("xv += (float)" + mt.ld(kb.inPtr[3] + "[" + maskIdx + "]") + ";");
  c.line("if (xv != xv || xv == tg_inf_f()) { bad[i] = true; xv = -tg_inf_f(); }");
  c.close();
  c.line("x[i][cc] = xv;");
  c.line("mt = xv > mt ? xv : mt;");
  c.close();
  c.line("mt = tg_warp_max<float>(mt);");
  c.line("const float mn = mt > m[i] ? mt : m[i];");
  c.line("const bool none = mn == -tg_inf_f();");
  c.line("const float corr = none ? 1.f : tgf_exp(m[i] - mn);");
  c.line("float ps = 0.f;");
  c.line("#pragma unroll");
  c.open("for (int cc = 0; cc < " + str(KPL) + "; ++cc)");
  c.line("const float p = none || x[i][cc] == -tg_inf_f() ? 0.f : tgf_exp(x[i][cc] - mn);");
  c.line("ps += p;");
  c.line("Ps[w][i][lane + 32 * cc] = p;");
  c.close();
  c.line("l[i] = l[i] * corr + ps;");
  c.line("m[i] = mn;");
  c.line("#pragma unroll");
  c.line("for (int u = 0; u < " + str(NV) + "; ++u) acc[i][u] *= corr;");
  c.close();
  c.line("__syncwarp();");
  // acc[i][u] += Σ_j P[i][j] · V[j][lane + 32u].
  c.line("#pragma unroll 2");
  c.open("for (int j = 0; j < " + sKT + "; j += 4)");
  c.line("float vv[4][" + str(NV) + "];");
  c.line("#pragma unroll");
  c.line("for (int jj = 0; jj < 4; ++jj) for (int u = 0; u < " + str(NV) +
         "; ++u) vv[jj][u] = Vs[j + jj][lane + 32 * u];");
  c.line("#pragma unroll");
  c.open("for (int i = 0; i < " + str(R) + "; ++i)");
  c.line("const float4 p = *(const float4 *)&Ps[w][i][j];");
  c.line("#pragma unroll");
  c.line("for (int u = 0; u < " + str(NV) +
         "; ++u) acc[i][u] += p.x * vv[0][u] + p.y * vv[1][u] + p.z * vv[2][u] + p.w * vv[3][u];");
  c.close();
  c.close();
  c.line("__syncwarp();");
  c.close(); // key tiles
  c.line("#pragma unroll");
  c.open("for (int i = 0; i < " + str(R) + "; ++i)");
  c.line("const " + it + " s = s0 + w * " + str(R) + " + i;");
  c.line("if (s >= " + sS + ") continue;");
  c.line("const float lsum = tg_warp_sum<float>(l[i]);");
  c.line("const bool zero = __any_sync(0xffffffffu, bad[i]) || m[i] == -tg_inf_f();");
  c.line("const float inv = zero ? 0.f : 1.f / lsum;");
  if (bshd)
    c.line(T + " *o = out0 + ((b * " + sS + " + s) * " + str(Hq) + " + h) * " + sDv + ";");
  else
    c.line(T + " *o = out0 + (bh * " + sS + " + s) * " + sDv + ";");
  c.line("#pragma unroll");
  c.line("for (int u = 0; u < " + str(NV) + "; ++u) { const int d = lane + 32 * u; if (d < " +
         sDv + ") o[d] = " + ct.st("zero ? 0.f : acc[i][u] * inv") + "; }");
  c.close();
  kb.endKernel(code, B * Hq * nQT, NT);
  return llvm::Error::success();
}

} // namespace tgc::cuda
