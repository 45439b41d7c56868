// CudaAttention.cpp — tg.attention on tensor cores for f16/bf16 (mma.sync m16n8k16; key tiles
// split across warps, for many query rows 64-row blocks sharing each K/V tile, and for long
// non-causal keys on sm_90 blocks of a cluster splitting the keys). The tiled float kernel is
// CudaTiledAttention.cpp's; one warp per query row for head dims > 128 stays in
// CudaRowKernels.cpp.
#include "codegen/cuda/CudaBuilder.h"

#include "compiler/dialect/TgDialect.h"
#include "runtime/Env.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>

using namespace mlir;

namespace tgc::cuda {

namespace {
/// How the tensor-core attention splits its work: query warps per block (16 rows each, sharing
/// each K/V tile), key groups per block (group g walks key tiles g, g + keyGroups, ...), keys
/// per tile.
struct AttentionTiling {
  int64_t queryWarps, keyGroups, keyTile;
  /// Blocks of one thread-block cluster that split the keys of the same query rows (sm_90+):
  /// block r of the cluster walks key tiles r·KG + g, r·KG + g + CL·KG, ...; the CL·KG groups'
  /// states merge through distributed shared memory. 1: no cluster.
  int64_t clusterSplit = 1;
};

/// Few query rows (batch-1 transformers: B·H·S < 4096, e.g. 12 heads × 128): one query warp per
/// block and up to 8 key groups of one warp each, so that even a dozen heads fill the GPU with
/// short, latency-bound blocks. Many rows (long sequences, batches): 64-row blocks whose 4 query
/// warps share every K/V tile (a quarter of the K/V reads of 16-row blocks), in key groups when
/// there are enough tiles to split (4+ a group): up to 2 groups of 64-key tiles, or when causal
/// (diagonal tiles are partly wasted; the last rows walk every key) up to 4 of 32-key tiles;
/// not causal over 1,024+ keys, 32-row blocks (2 query warps) in 2 groups of 64-key tiles.
/// Measured on an H200 (perf-log, twenty-seventh and thirty-second sessions): whisper's 6 heads ×
/// 1500 48 → 29 µs, gpt2's 12 × 512 causal 9.8 → 8.2 µs, 96 heads × 128 13.4 → 4.9 µs an
/// attention. TGC_ATTN_TILE=QW,KG,KT forces a tiling (tests and tuning sweeps; docs/cuda.md).
AttentionTiling attentionTiling(int64_t rows, int64_t S, int64_t L, bool causal, int sm) {
  if (const char *e = tgc::envValue(tgc::Env::AttnTile); e && *e) {
    AttentionTiling t;
    int used = 0;
    const int n = std::sscanf(e, "%" SCNd64 ",%" SCNd64 ",%" SCNd64 "%n", &t.queryWarps,
                              &t.keyGroups, &t.keyTile, &used);
    if (n == 3 && e[used] == ',') { // the optional cluster split
      int more = 0;
      if (std::sscanf(e + used + 1, "%" SCNd64 "%n", &t.clusterSplit, &more) == 1)
        used += 1 + more;
      else
        used = 0;
    }
    if (n == 3 && used > 0 && e[used] == '\0' &&
        (t.queryWarps == 1 || t.queryWarps == 2 || t.queryWarps == 4 || t.queryWarps == 8) &&
        t.keyGroups >= 1 && t.queryWarps * t.keyGroups <= 16 &&
        (t.keyTile == 16 || t.keyTile == 32 || t.keyTile == 64) &&
        (t.clusterSplit == 1 ||
         ((t.clusterSplit == 2 || t.clusterSplit == 4) && t.queryWarps > 1 && sm >= 90)))
      return t;
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      llvm::errs() << "tgc: TGC_ATTN_TILE=" << e
                   << " ignored (expected QW,KG,KT[,CL]: QW 1, 2, 4 or 8; KG >= 1 with QW * KG <= "
                      "16; KT 16, 32 or 64; CL 1, or 2 or 4 with QW > 1 on sm_90 and later)\n";
  }
  if (rows < 4096 || S < 64)
    // Key tiles of 16 when that gives every warp (at most 8) a single tile: twice the warps of
    // 32-key tiles, each with half the dependent work (attention at batch 1 is latency-bound at
    // about one warp per scheduler).
    return {1, 8, (L + 15) / 16 <= 8 ? 16 : 32};
  // Long keys without causality (whisper's 1,500): 2 query warps × 2 groups of 64-key tiles,
  // 29.0 µs an attention against 32.6 for 2 × 4 × 32 and 30.6 for 4 × 2 × 64 (perf-log,
  // thirty-second session); on sm_90, 64-row blocks of one key group in clusters of 2 that split
  // the keys: 288 blocks where 2 × 2 × 64 has 282 in 1.07 waves, 25.9 µs against 29.2 (2 × 2 ×
  // 64 split in 2: 30.7; 4 × 2 × 64 split in 2: 29.9; perf-log, thirty-third session).
  if (!causal && L >= 1024)
    return sm >= 90 ? AttentionTiling{4, 1, 64, 2} : AttentionTiling{2, 2, 64};
  // Causal keys from 512 on take 64-key tiles too (gpt2_s512: 4 × 2 × 64 467.6 µs against 4 × 4 ×
  // 32's 473.5 in one sweep; attention in the graph 89.1 → 85.7 µs; perf-log, thirty-fourth
  // session).
  const int64_t KT = causal && L < 512 ? 32 : 64, tiles = (L + KT - 1) / KT;
  return {4, std::clamp<int64_t>(tiles / 4, 1, causal ? 4 : 2), KT};
}
} // namespace

/// tg.attention on tensor cores (f16/bf16, D % 16 == 0, Dv % 8 == 0, both <= 128): one block per
/// (b, h, QW·16 query rows) of QW query warps × KG key groups (attentionTiling). Key group g
/// walks key tiles g, g + KG, ... of KT keys, staged in the group's own shared memory (cp.async,
/// two stages when they fit); its QW query warps, 16 rows each, share every tile (with QW = 1 a
/// group is one warp and runs without barriers; with more, the group's warps load a tile
/// together and meet at named barrier 1 + g). At the end the groups' partial softmax states
/// (row max m, row sum l, unnormalized output o) merge through shared memory (with one query
/// warp, each warp's state in its own stage area when it fits, so no barrier before the
/// writes): F_g = e^(m_g - M) / Σ_h l_h · e^(m_h - M) once per row, M = max_g m_g, then
/// o = Σ_g o_g · F_g. Q·Kᵀ and P·V run as mma.sync m16n8k16
/// (f16/bf16 operands, f32 accumulators); q stays in registers as A fragments; K and V fragments
/// come from shared memory through ldmatrix (V transposed). Scores are scaled in f32, in the
/// log2 domain (scale · log2 e, the mask times log2 e), so exponentials are ex2.approx; the online
/// softmax runs in f32 registers (each lane holds 2 rows × 8 keys of a tile, row max/sum over the 4
/// lanes of a quad); a tile's mask values are loaded before its K/V wait; P is rounded to the
/// storage type for the P·V product, the row sums use the unrounded values. Masking, causality
/// and undefined rows (all -inf, any NaN or +inf score → 0) follow the float kernel.
llvm::Error mmaAttention(KernelBuilder &kb, tg::AttentionOp at, const CType &ct, const CType &mt,
                         const std::string &maskIdx, std::string &code) {
  Code &c = kb.c;
  const std::string &it = kb.it;
  const std::string &T = ct.name;
  const bool bf = T == "__nv_bfloat16";
  const std::string ab = bf ? "bf16" : "f16";
  const bool bshd = at.getLayout() == "bshd";
  const int hd = bshd ? 2 : 1, sd = bshd ? 1 : 2;
  Shape q = shapeOf(at.getQ()), k = shapeOf(at.getK()), v = shapeOf(at.getV());
  const int64_t B = q[0], Hq = q[hd], S = q[sd], D = q[3], Hkv = k[hd], L = k[sd], Dv = v[3];
  const AttentionTiling tl = attentionTiling(B * Hq * S, S, L, at.getCausal(), kb.em.sm);
  const int64_t QW = tl.queryWarps, KT = tl.keyTile, QT = 16 * QW, GN = 32 * QW;
  const int64_t KP = D + 8, VP = Dv + 8, NK = D / 16, NO = Dv / 8;
  const int64_t nQT = (S + QT - 1) / QT, nKT = (L + KT - 1) / KT;
  // Key groups: one per key tile up to tl.keyGroups, as many as one stage each (and, with
  // several query warps, the packed merge states below) fit in kSmemMax of (dynamic) shared
  // memory, which every sm_80+ GPU grants a block (sm_86/89: 99 KB) and leaves room for two
  // blocks per SM on sm_80/90; a second stage per group when that fits too.
  const int64_t stageBytes = KT * (KP + VP) * 2, kSmemMax = 99 * 1024;
  const int64_t stateFloats = 16 * (Dv + 4);
  int64_t KG = std::min<int64_t>(tl.keyGroups, std::max<int64_t>(1, nKT));
  while (KG > 1 && (KG * stageBytes > kSmemMax || (QW > 1 && QW * KG * stateFloats * 4 > kSmemMax)))
    --KG;
  const int64_t CL = tl.clusterSplit, CKG = CL * KG; // blocks per cluster; key groups in all
  const int64_t STG = nKT > CKG && 2 * KG * stageBytes <= kSmemMax ? 2 : 1;
  const int64_t W = QW * KG, NT = 32 * W, kvBytes = KG * STG * stageBytes;
  // Each warp's partial state for the merge (o [16][Dv], then m, l, z and its weight f per row)
  // goes, with one query warp, in the warp's own stage area when it fits there (no other warp
  // touches it: no barrier before the writes); else (and always with several query warps, whose
  // group shares its stages) packed from the start of shared memory over the stages, after a
  // block barrier. One key group merges nothing.
  const bool ownArea = QW == 1 && stateFloats * 4 <= STG * stageBytes;
  const int64_t XS = ownArea ? STG * stageBytes / 4 : stateFloats; // floats between warps' states
  const int64_t mergeBytes = (KG > 1 || CL > 1) && !ownArea ? W * stateFloats * 4 : 0;
  const int64_t QS = bshd ? Hq * D : D, KS = bshd ? Hkv * D : D, VS = bshd ? Hkv * Dv : Dv;
  const std::string sS = str(S), sL = str(L), sKG = str(KG);
  // With one query warp a key group is one warp ("w", its lanes, __syncwarp); with more, the
  // group's threads share its stages and meet at named barrier 1 + kg.
  const std::string kgS = QW > 1 ? "kg" : "w", glS = QW > 1 ? "gl" : "lane",
                    sbS = QW > 1 ? "sb" : "s0", gsync = QW > 1 ? "gsync();" : "__syncwarp();";
  kb.sharedBytes = std::max(kvBytes, mergeBytes);
  // One block per multiprocessor: launched early (programmatic launch) beside the GEMM before
  // it, two blocks would share one multiprocessor for good while others free up; each block is
  // a latency-bound chain (perf-log, tenth session: gpt2 −16 µs).
  kb.oneBlockPerSm = QW == 1;
  kb.clusterX = CL;
  // Without a mask, the shape for cuDNN's fused attention, which the runtime may run instead
  // (causal needs S <= L, the verifier's rule: every row sees a key).
  if (!at.getMask()) {
    auto argOf = [&](Value v) {
      for (size_t i = 0; i < kb.kargs.size(); ++i)
        if (kb.kargs[i].value == v && kb.kargs[i].offset == 0 && kb.kargs[i].bytes < 0)
          return (int)i;
      return -1;
    };
    const int qa = argOf(at.getQ()), ka = argOf(at.getK()), va = argOf(at.getV()),
              oa = argOf(at.getResult());
    if (qa >= 0 && ka >= 0 && va >= 0 && oa >= 0) {
      plan::AttentionDesc &d = kb.attention;
      d.set_batch(B), d.set_heads(Hq), d.set_kv_heads(Hkv), d.set_seq_q(S), d.set_seq_kv(L);
      d.set_head_dim(D), d.set_head_dim_v(Dv), d.set_bshd(bshd);
      d.set_scale((float)at.getScaleAttr().getValueAsDouble());
      d.set_causal(at.getCausal()), d.set_dtype(bf ? 16 : 10);
      d.set_q_arg(qa), d.set_k_arg(ka), d.set_v_arg(va), d.set_o_arg(oa);
    }
  }
  // Query-split blocks: aim at 16 warps per multiprocessor (at most 128 registers a thread;
  // head dims up to 64 only: at 128 the fragments alone fill that, and shared memory would not
  // hold the blocks anyway).
  if (QW > 1 && std::max(D, Dv) <= 64)
    kb.minBlocksPerSm = std::max<int64_t>(1, 16 / W);
  c.line("extern __shared__ __align__(16) unsigned char tg_dsm[];");
  c.line("unsigned char *sm = tg_dsm;");
  c.line("const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g = lane >> 2, tq = lane "
         "& 3;");
  c.line("(void)tid;");
  if (QW > 1) {
    c.line("const int qw = w % " + str(QW) + ", kg = w / " + str(QW) + ", gl = tid % " + str(GN) +
           ";");
    c.line("auto gsync = [&]() { asm volatile(\"bar.sync %0, %1;\" :: \"r\"(1 + kg), \"r\"(" +
           str(GN) + ") : \"memory\"); };");
  }
  // This key group's stages: Ks[st][t][d], Vs[st][t][d] (rows padded by 16 bytes: conflict-free
  // ldmatrix).
  c.line("unsigned short (*Ks)[" + str(KT) + "][" + str(KP) + "] = (unsigned short (*)[" +
         str(KT) + "][" + str(KP) + "])(sm + " + kgS + " * " + str(STG * stageBytes) + ");");
  c.line("unsigned short (*Vs)[" + str(KT) + "][" + str(VP) + "] = (unsigned short (*)[" +
         str(KT) + "][" + str(VP) + "])(sm + " + kgS + " * " + str(STG * stageBytes) + " + " +
         str(STG * KT * KP * 2) + ");");
  // With a cluster split, the CL blocks of cluster blockIdx.x / CL share their query rows; the
  // block's rank in it picks its key tiles.
  const std::string bx = CL > 1 ? "(blockIdx.x / " + str(CL) + ")" : "blockIdx.x";
  if (CL > 1)
    c.line("const int crank = (int)(blockIdx.x % " + str(CL) + ");");
  c.line("const " + it + " qt = (" + it + ")" + bx + " % " + str(nQT) + ", bh = (" + it + ")" +
         bx + " / " + str(nQT) + ";");
  c.line("const " + it + " h = bh % " + str(Hq) + ", b = bh / " + str(Hq) + ";");
  c.line("(void)h; (void)b;");
  if (bshd) {
    c.line("const " + it + " kh = b * " + str(L * Hkv) + " + h / " + str(Hq / Hkv) + ";");
    c.line("const " + T + " *qb = in0 + (b * " + str(S * Hq) + " + h) * " + str(D) + ";");
    c.line("const " + T + " *kb = in1 + kh * " + str(D) + ";");
    c.line("const " + T + " *vb = in2 + kh * " + str(Dv) + ";");
  } else {
    c.line("const " + it + " kh = b * " + str(Hkv) + " + h / " + str(Hq / Hkv) + ";");
    c.line("const " + T + " *qb = in0 + bh * " + str(S * D) + ";");
    c.line("const " + T + " *kb = in1 + kh * " + str(L * D) + ";");
    c.line("const " + T + " *vb = in2 + kh * " + str(L * Dv) + ";");
  }
  c.line("const unsigned short *kr16 = (const unsigned short *)kb, *vr16 = (const unsigned short "
         "*)vb;");
  c.line("const bool al = (((size_t)kb | (size_t)vb) & 15) == 0;");
  // Scores in the log2 domain (scale · log2 e folded in), so every exponential is one ex2.approx
  // (relative error ~2^-22, far below the f16/bf16 rounding of P and of the output).
  const double scale = at.getScaleAttr().getValueAsDouble();
  c.line("const float scale = " + floatLiteral(maskIdx.empty() ? scale * M_LOG2E : scale, true) +
         ";");
  c.line("auto ex2 = [](float x) { float y; asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : "
         "\"f\"(x)); return y; };");
  if (QW > 1) {
    c.line("const " + it + " sb = qt * " + str(QT) + ", s0 = sb + qw * 16;");
  } else {
    c.line("const " + it + " s0 = qt * 16;");
  }
  c.line("auto mma = [](float *d, const unsigned *a, unsigned b0, unsigned b1) {");
  c.line("  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32." + ab + "." + ab +
         ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(d[0]), "
         "\"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), "
         "\"r\"(a[3]), \"r\"(b0), \"r\"(b1));");
  c.line("};");
  // ldmatrix: lane l gives the row address of 8×8 matrix l / 8 (x4; x2 reads lanes 0-15 only).
  c.line("auto ldsm4 = [](unsigned *r, const void *p, bool tr) {");
  c.line("  const unsigned a = (unsigned)__cvta_generic_to_shared(p);");
  c.line("  if (tr) asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, "
         "[%4];\" : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));");
  c.line("  else asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\" "
         ": \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));");
  c.line("};");
  if (NO % 2)
    c.line("auto ldsm2t = [](unsigned *r, const void *p) { asm volatile(\"ldmatrix.sync.aligned."
           "m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\" : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"((unsigned)"
           "__cvta_generic_to_shared(p))); };");
  if (bf)
    c.line("auto pack = [](float lo, float hi) { __nv_bfloat162 r = __floats2bfloat162_rn(lo, "
           "hi); return *(unsigned *)&r; };");
  else
    c.line("auto pack = [](float lo, float hi) { __half2 r = __floats2half2_rn(lo, hi); return "
           "*(unsigned *)&r; };");
  std::string tEnd = sL;
  if (at.getCausal()) {
    c.line("const " + it + " sl = " + sbS + " + " + str(QT) + " < " + sS + " ? " + sbS + " + " +
           str(QT - 1) + " : " + str(S - 1) + ";");
    c.line("const " + it + " tEnd = sl + " + str(L - S + 1) + " < " + sL + " ? sl + " +
           str(L - S + 1) + " : " + sL + ";");
    tEnd = "tEnd";
  }
  c.line("const int nT = (int)((" + tEnd + " + " + str(KT - 1) + ") / " + str(KT) + ");");
  // K/V tiles (16-byte-aligned bases) stream in with cp.async, every load of a tile in flight at
  // once, zero-filled past L. When the group's threads split a tile's 16-byte chunks evenly, in
  // whole rows, each thread's chunks are a fixed number of rows apart: one global and one shared
  // base per tile, the chunks at constant offsets from them, and no per-chunk test on a tile
  // inside the keys (all but the last); else each chunk computes its row and column.
  c.line("auto cp16 = [](unsigned d, const void *s, int n) { asm volatile(\"cp.async.cg.shared."
         "global [%0], [%1], 16, %2;\" :: \"r\"(d), \"l\"(s), \"r\"(n)); };");
  auto evenChunks = [&](int64_t DD) { return (KT * DD / 8) % GN == 0 && GN % (DD / 8) == 0; };
  for (int pass = 0; pass < 2; ++pass) {
    const int64_t DD = pass ? Dv : D;
    const std::string x = pass ? "v" : "k";
    if (evenChunks(DD))
      c.line("const int " + x + "tb = " + glS + " / " + str(DD / 8) + ", " + x + "db = " + glS +
             " % " + str(DD / 8) + " * 8;");
  }
  c.line("auto loadKV = [&](int st, " + it + " t0) {");
  c.ind++;
  for (int pass = 0; pass < 2; ++pass) {
    const int64_t DD = pass ? Dv : D, RS = pass ? VS : KS, PAD = pass ? VP : KP;
    const std::string src = pass ? "vr16" : "kr16", dst = pass ? "Vs" : "Ks", x = pass ? "v" : "k";
    if (evenChunks(DD)) {
      // Chunk i of this thread: row xtb + i·step, dims xdb .. xdb + 7.
      const int64_t n = KT * DD / 8 / GN, step = GN / (DD / 8);
      const std::string sOff = "i * " + str(step * PAD * 2), gOff = "i * " + str(step * RS);
      c.open("");
      c.line("const unsigned short *gp = " + src + " + (t0 + " + x + "tb) * " + str(RS) + " + " +
             x + "db;");
      c.line("const unsigned sp = (unsigned)__cvta_generic_to_shared(&" + dst + "[st][" + x +
             "tb][" + x + "db]);");
      c.open("if (t0 + " + str(KT) + " <= " + sL + ")");
      c.line("#pragma unroll");
      c.line("for (int i = 0; i < " + str(n) + "; ++i) cp16(sp + " + sOff + ", gp + " + gOff +
             ", 16);");
      c.close();
      c.open("else");
      c.line("#pragma unroll");
      c.line("for (int i = 0; i < " + str(n) + "; ++i) { const bool in = t0 + " + x + "tb + i * " +
             str(step) + " < " + sL + "; cp16(sp + " + sOff + ", in ? gp + " + gOff + " : " + src +
             ", in ? 16 : 0); }");
      c.close();
      c.close();
      continue;
    }
    c.line("#pragma unroll");
    c.open("for (int e = " + glS + "; e < " + str(KT * DD / 8) + "; e += " + str(GN) + ")");
    c.line("const int t = e / " + str(DD / 8) + ", d = e % " + str(DD / 8) + " * 8;");
    c.line("const bool in = t0 + t < " + sL + ";");
    c.line("cp16((unsigned)__cvta_generic_to_shared(&" + dst + "[st][t][d]), " + src +
           " + (in ? t0 + t : 0) * " + str(RS) + " + d, in ? 16 : 0);");
    c.close();
  }
  c.ind--;
  c.line("};");
  // This group's first key tile: its index among the cluster's CL·KG groups.
  const std::string firstTile = CL > 1 ? "(crank * " + sKG + " + " + kgS + ")" : kgS;
  if (STG == 2)
    c.line("if (al && " + firstTile + " < nT) { loadKV(0, (" + it + ")" + firstTile + " * " +
           str(KT) + "); asm volatile(\"cp.async.commit_group;\" ::: \"memory\"); }");
  // q as A fragments: a[r] holds rows g (+8 for odd r), dims 2tq, 2tq+1 (+8 for r >= 2).
  c.line("unsigned qa[" + str(NK) + "][4];");
  c.line("#pragma unroll");
  c.open("for (int kk = 0; kk < " + str(NK) + "; ++kk)");
  c.line("#pragma unroll");
  c.open("for (int r = 0; r < 4; ++r)");
  c.line("const " + it + " s = s0 + g + 8 * (r & 1);");
  c.line("const int d = kk * 16 + 2 * tq + 8 * (r >> 1);");
  c.line("qa[kk][r] = s < " + sS + " ? *(const unsigned *)(qb + s * " + str(QS) + " + d) : 0u;");
  c.close();
  c.close();
  c.line("float o[" + str(NO) + "][4], m[2], l[2];");
  c.line("#pragma unroll");
  c.line("for (int u = 0; u < " + str(NO) + "; ++u) o[u][0] = o[u][1] = o[u][2] = o[u][3] = 0.f;");
  c.line("m[0] = m[1] = -tg_inf_f(); l[0] = l[1] = 0.f;");
  c.line("int kti = 0;");
  c.open("for (int ti = " + firstTile + "; ti < nT; ti += " + str(CKG) + ", ++kti)");
  c.line("const " + it + " t0 = (" + it + ")ti * " + str(KT) + ";");
  c.line(QW > 1 ? "gsync(); // every thread of the group is done with the stage refilled below"
                : "__syncwarp(); // every lane is done with the stage refilled below");
  c.open("if (al)");
  if (STG == 2) {
    c.line("if (ti + " + str(CKG) + " < nT) loadKV((kti + 1) & 1, t0 + " + str(CKG * KT) + ");");
    c.line("asm volatile(\"cp.async.commit_group;\" ::: \"memory\");");
  } else {
    c.line("loadKV(0, t0);");
    c.line("asm volatile(\"cp.async.commit_group;\" ::: \"memory\");");
  }
  c.close();
  c.open("else");
  for (int pass = 0; pass < 2; ++pass) {
    const int64_t DD = pass ? Dv : D, RS = pass ? VS : KS;
    const std::string src = pass ? "vr16" : "kr16", dst = pass ? "Vs" : "Ks";
    c.open("for (int e = " + glS + "; e < " + str(KT * DD) + "; e += " + str(GN) + ")");
    c.line("const int t = e / " + str(DD) + ", d = e % " + str(DD) + ";");
    c.line(dst + "[0][t][d] = t0 + t < " + sL + " ? " + src + "[(t0 + t) * " + str(RS) +
           " + d] : (unsigned short)0;");
    c.close();
  }
  c.close();
  // This tile's mask values, loaded while its K/V are in flight.
  std::string vis = "s < " + sS + " && t < " + sL;
  if (at.getCausal())
    vis += " && t < s + " + str(L - S + 1);
  if (!maskIdx.empty()) {
    c.line("float mk[" + str(KT / 8) + "][4];");
    c.line("#pragma unroll");
    c.open("for (int j = 0; j < " + str(KT / 8) + "; ++j)");
    c.line("#pragma unroll");
    c.open("for (int r = 0; r < 4; ++r)");
    c.line("const " + it + " s = s0 + g + 8 * (r >> 1), t = t0 + j * 8 + 2 * tq + (r & 1);");
    c.line("mk[j][r] = " + vis + " ? (float)" + mt.ld(kb.inPtr[3] + "[" + maskIdx + "]") +
           " : 0.f;");
    c.close();
    c.close();
  }
  c.line("if (al) asm volatile(\"cp.async.wait_group " + std::string(STG == 2 ? "1" : "0") +
         ";\" ::: \"memory\");");
  c.line(gsync);
  c.line("const int st = " + std::string(STG == 2 ? "al ? (kti & 1) : 0" : "0") + ";");
  // The tile's scores, softmax and P·V, emitted twice: without per-score checks for a tile
  // wholly inside the keys (and, when causal, below the diagonal for every row of this warp), and
  // with them for the others. The warp branches as one; a single copy would pay the checks,
  // predicated, on every tile.
  const bool fused = maskIdx.empty() && !bf && scale > 0 && scale < 1e20;
  auto emitTileMath = [&](bool checked) {
    // Scores: sc[j][r] = q_{g + 8(r>>1)} · k_{t0 + 8j + 2tq + (r&1)}. One ldmatrix.x4 gives the
    // B fragments of key groups j, j + 1 for one 16-dim step.
    c.line("float sc[" + str(KT / 8) + "][4];");
    c.line("#pragma unroll");
    c.line("for (int j = 0; j < " + str(KT / 8) +
           "; ++j) sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.f;");
    c.line("#pragma unroll");
    c.open("for (int kk = 0; kk < " + str(NK) + "; ++kk)");
    c.line("#pragma unroll");
    c.open("for (int j = 0; j < " + str(KT / 8) + "; j += 2)");
    c.line("unsigned r[4];");
    c.line("ldsm4(r, &Ks[st][j * 8 + (lane >> 4) * 8 + (lane & 7)][kk * 16 + ((lane >> 3) & 1) * 8], "
           "false);");
    c.line("mma(sc[j], qa[kk], r[0], r[1]);");
    c.line("mma(sc[j + 1], qa[kk], r[2], r[3]);");
    c.close();
    c.close();
    // Online softmax, rows g (rh = 0) and g + 8 (rh = 1). In the unchecked copy, rows past S score
    // against q = 0 and are never stored. A NaN or +inf score is not looked for per score:
    // it makes its p, so the row sum l, NaN (ex2(NaN) and ex2(+inf - +inf) are NaN; fmaxf skips
    // NaN), and a NaN l marks the row undefined at the end. Without a mask, at f16 and with a
    // positive scale below 1e20 the max runs over the raw scores and one FFMA scales and
    // subtracts: an f16 score (at most D · 65504²) times such a scale cannot overflow, so a
    // finite score never becomes +inf there (at bf16 it could: the row max would be +inf with
    // every p 0, l 0, not NaN; the scaled path makes that score +inf, so p and l NaN).
    c.line("float cr[2];");
    c.line("#pragma unroll");
    c.open("for (int rh = 0; rh < 2; ++rh)");
    c.line("const " + it + " s = s0 + g + 8 * rh;");
    c.line("(void)s;");
    c.line("float mx = -tg_inf_f();");
    c.line("#pragma unroll");
    c.open("for (int j = 0; j < " + str(KT / 8) + "; ++j)");
    c.line("#pragma unroll");
    c.open("for (int cc = 0; cc < 2; ++cc)");
    if (fused) {
      c.line("float xv = sc[j][2 * rh + cc];");
    } else if (maskIdx.empty()) {
      c.line("float xv = sc[j][2 * rh + cc] * scale;");
    } else {
      // A finite score stays finite in the log2 domain (a mask of float's lowest, as Hugging Face
      // exports, must not become -inf: a row masked only so is uniform, as in the float kernel).
      c.line("const float xn = sc[j][2 * rh + cc] * scale + mk[j][2 * rh + cc];");
      c.line("float xv = xn * " + floatLiteral(M_LOG2E, true) + ";");
      c.line("if (fabsf(xn) < tg_inf_f()) xv = fminf(fmaxf(xv, -0x1.fffffep+127f), 0x1.fffffep+127f);");
    }
    if (checked) {
      c.line("const " + it + " t = t0 + j * 8 + 2 * tq + cc;");
      c.line("if (!(" + vis + ")) xv = -tg_inf_f();");
    }
    c.line("sc[j][2 * rh + cc] = xv;");
    c.line("mx = fmaxf(mx, xv);");
    c.close();
    c.close();
    c.line("mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));");
    c.line("mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));");
    if (fused)
      c.line("mx *= scale;");
    c.line("const float mn = mx > m[rh] ? mx : m[rh];");
    // With no finite score yet (mn = -inf) every p and the correction are 0 (ex2(-inf) = 0; l and
    // o are still 0 then), so the exponentials need no guards: subtract 0 instead of -inf.
    c.line("const float ms = mn == -tg_inf_f() ? 0.f : mn;");
    c.line("const float corr = ex2(m[rh] - ms);");
    c.line("float ps = 0.f;");
    c.line("#pragma unroll");
    c.open("for (int j = 0; j < " + str(KT / 8) + "; ++j)");
    c.line("#pragma unroll");
    c.open("for (int cc = 0; cc < 2; ++cc)");
    c.line("const float x = sc[j][2 * rh + cc];");
    c.line(fused ? "const float p = ex2(fmaf(x, scale, -ms));" : "const float p = ex2(x - ms);");
    c.line("ps += p;");
    c.line("sc[j][2 * rh + cc] = p;");
    c.close();
    c.close();
    c.line("l[rh] = l[rh] * corr + ps;");
    c.line("m[rh] = mn;");
    c.line("cr[rh] = corr;");
    c.close();
    // o is rescaled only when a row max of the warp moved: after the first tiles it mostly stays,
    // and corr is then exactly 1. (o is still 0 on the warp's first tile.)
    c.open("if (kti && __any_sync(0xffffffffu, cr[0] != 1.f || cr[1] != 1.f))");
    c.line("#pragma unroll");
    c.line("for (int u = 0; u < " + str(NO) + "; ++u) { o[u][0] *= cr[0]; o[u][1] *= cr[0]; o[u][2] "
           "*= cr[1]; o[u][3] *= cr[1]; }");
    c.close();
    // o += P · V: P's C fragments of key groups 2kk, 2kk+1 form the A fragment of k-step kk; one
    // ldmatrix.x4.trans gives the B fragments of output groups u, u + 1.
    c.line("#pragma unroll");
    c.open("for (int kk = 0; kk < " + str(KT / 16) + "; ++kk)");
    c.line("const unsigned pa[4] = {pack(sc[2 * kk][0], sc[2 * kk][1]), pack(sc[2 * kk][2], "
           "sc[2 * kk][3]), pack(sc[2 * kk + 1][0], sc[2 * kk + 1][1]), pack(sc[2 * kk + 1][2], "
           "sc[2 * kk + 1][3])};");
    c.line("#pragma unroll");
    c.open("for (int u = 0; u + 1 < " + str(NO) + "; u += 2)");
    c.line("unsigned r[4];");
    c.line("ldsm4(r, &Vs[st][kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)][(u + (lane >> 4)) * 8], "
           "true);");
    c.line("mma(o[u], pa, r[0], r[1]);");
    c.line("mma(o[u + 1], pa, r[2], r[3]);");
    c.close();
    if (NO % 2) {
      c.open("");
      c.line("unsigned r[2];");
      c.line("ldsm2t(r, &Vs[st][kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)][" + str(NO - 1) +
             " * 8]);");
      c.line("mma(o[" + str(NO - 1) + "], pa, r[0], r[1]);");
      c.close();
    }
    c.close();
  };
  std::string full = "t0 + " + str(KT) + " <= " + sL;
  if (at.getCausal())
    full += " && t0 + " + str(KT) + " <= s0 + " + str(L - S + 1);
  c.open("if (" + full + ")");
  emitTileMath(false);
  c.close();
  c.open("else");
  emitTileMath(true);
  c.close();
  c.close(); // key tiles
  if (STG == 2)
    c.line("if (al) asm volatile(\"cp.async.wait_group 0;\" ::: \"memory\");");
  // Row sums over the quad; a NaN sum marks an undefined row (a NaN or +inf score).
  c.line("bool bad[2];");
  c.line("#pragma unroll");
  c.open("for (int rh = 0; rh < 2; ++rh)");
  c.line("l[rh] += __shfl_xor_sync(0xffffffffu, l[rh], 1);");
  c.line("l[rh] += __shfl_xor_sync(0xffffffffu, l[rh], 2);");
  c.line("bad[rh] = l[rh] != l[rh];");
  c.close();
  auto outRow = [&](const std::string &s) {
    return bshd ? "out0 + ((b * " + sS + " + " + s + ") * " + str(Hq) + " + h) * " + str(Dv)
                : "out0 + (bh * " + sS + " + " + s + ") * " + str(Dv);
  };
  if (KG == 1 && CL == 1) {
    c.line("#pragma unroll");
    c.open("for (int rh = 0; rh < 2; ++rh)");
    c.line("const " + it + " s = s0 + g + 8 * rh;");
    c.line("const bool zero = bad[rh] || m[rh] == -tg_inf_f();");
    c.line("const float inv = zero ? 0.f : 1.f / l[rh];");
    c.line("if (s >= " + sS + ") continue;");
    c.line(T + " *op = " + outRow("s") + ";");
    c.line("#pragma unroll");
    c.line("for (int u = 0; u < " + str(NO) + "; ++u) *(unsigned *)(op + u * 8 + 2 * tq) = "
           "pack(zero ? 0.f : o[u][2 * rh] * inv, zero ? 0.f : o[u][2 * rh + 1] * inv);");
    c.close();
  } else {
    // Merge the key groups' partial states through shared memory: warp w's state at Ws + w·XS;
    // query warp qx of group x is warp x·QW + qx. With a cluster split (CL > 1) the CL·KG groups
    // of the cluster's blocks merge: each block's states in its own shared memory, read across
    // the cluster through distributed shared memory (mapa); group x is local group x % KG of rank
    // x / KG, and each rank merges QT / CL of the rows. Cluster barriers: the states are all
    // written before any is read, the weights before the outputs, and no block leaves while
    // another may still read its shared memory.
    c.line(ownArea ? "__syncwarp(); // this warp's copies are done (waited for): its area is free"
                   : "__syncthreads(); // the states overlap other warps' stages");
    const std::string M0 = str(16 * Dv), L0 = str(16 * Dv + 16), Z0 = str(16 * Dv + 32),
                      F0 = str(16 * Dv + 48), xs = str(XS);
    const std::string wx = QW > 1 ? "(x * " + str(QW) + " + qx) * " + xs : "x * " + xs,
                      row = QW > 1 ? "r" : "tid";
    c.line("float *Ws = (float *)sm, *St = Ws + w * " + xs + ";");
    c.line("#pragma unroll");
    c.open("for (int rh = 0; rh < 2; ++rh)");
    c.line("const int r = g + 8 * rh;");
    c.line("#pragma unroll");
    c.line("for (int u = 0; u < " + str(NO) + "; ++u) *(float2 *)&St[r * " + str(Dv) +
           " + u * 8 + 2 * tq] = bad[rh] ? make_float2(0.f, 0.f) : make_float2(o[u][2 * rh], "
           "o[u][2 * rh + 1]);");
    c.line("if (tq == 0) { St[" + M0 + " + r] = m[rh]; St[" + L0 + " + r] = l[rh]; St[" + Z0 +
           " + r] = bad[rh] ? 1.f : 0.f; }");
    c.close();
    if (CL > 1) {
      const int64_t RB = QT / CL;
      const std::string clusterSync = "asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\t"
                                      "barrier.cluster.wait.acquire.aligned;\" ::: \"memory\");";
      const std::string px = "Wr[x / " + sKG + "] + ((x % " + sKG + ") * " + str(QW) + " + qx) * " +
                             xs;
      c.line(clusterSync);
      c.line("float *Wr[" + str(CL) + "];");
      c.line("#pragma unroll");
      c.line("for (int x = 0; x < " + str(CL) + "; ++x) { unsigned long long a; asm volatile(\"mapa."
             "u64 %0, %1, %2;\" : \"=l\"(a) : \"l\"(Ws), \"r\"(x)); Wr[x] = (float *)a; }");
      // Each group's weight in a row's output, F_g = e^(m_g - M) / Σ_h l_h e^(m_h - M) (0 for an
      // undefined row), into the group's own state.
      c.open("if (tid < " + str(RB) + ")");
      c.line("const int R = crank * " + str(RB) + " + tid, qx = R >> 4, r = R & 15;");
      c.line("float M = -tg_inf_f(), Z = 0.f, sum = 0.f, f[" + str(CKG) + "];");
      c.line("#pragma unroll");
      c.line("for (int x = 0; x < " + str(CKG) + "; ++x) { const float *p = " + px +
             "; M = fmaxf(M, p[" + M0 + " + r]); Z += p[" + Z0 + " + r]; }");
      c.line("#pragma unroll");
      c.line("for (int x = 0; x < " + str(CKG) + "; ++x) { const float *p = " + px +
             "; const float mw = p[" + M0 + " + r]; f[x] = mw == -tg_inf_f() ? 0.f : ex2(mw - M); "
             "sum += p[" + L0 + " + r] * f[x]; }");
      c.line("const float inv = Z != 0.f || M == -tg_inf_f() ? 0.f : 1.f / sum;");
      c.line("#pragma unroll");
      c.line("for (int x = 0; x < " + str(CKG) + "; ++x) (" + px + ")[" + F0 +
             " + r] = inv == 0.f ? 0.f : f[x] * inv;");
      c.close();
      c.line(clusterSync);
      c.open("for (int e = tid; e < " + str(RB * Dv / 2) + "; e += " + str(NT) + ")");
      c.line("const int R = crank * " + str(RB) + " + e / " + str(Dv / 2) + ", d = e % " +
             str(Dv / 2) + " * 2, qx = R >> 4, r = R & 15;");
      c.line("const " + it + " s = sb + R;");
      c.line("if (s >= " + sS + ") continue;");
      c.line("float a0 = 0.f, a1 = 0.f;");
      c.line("#pragma unroll");
      c.open("for (int x = 0; x < " + str(CKG) + "; ++x)");
      c.line("const float *p = " + px + ";");
      c.line("const float f = p[" + F0 + " + r];");
      c.line("const float2 ov = *(const float2 *)&p[r * " + str(Dv) + " + d];");
      c.line("a0 += ov.x * f;");
      c.line("a1 += ov.y * f;");
      c.close();
      c.line("*(unsigned *)(" + outRow("s") + " + d) = pack(a0, a1);");
      c.close();
      c.line(clusterSync);
    } else {
      c.line("__syncthreads();");
      // Each key group's weight in a row's output, once per row (QT threads): F_g = e^(m_g - M) /
      // Σ_h l_h e^(m_h - M), 0 for an undefined row; then every output element is Σ_g o_g · F_g.
      c.open("if (tid < " + str(QT) + ")");
      if (QW > 1)
        c.line("const int qx = tid >> 4, r = tid & 15;");
      c.line("float M = -tg_inf_f(), Z = 0.f, sum = 0.f, f[" + sKG + "];");
      c.line("#pragma unroll");
      c.line("for (int x = 0; x < " + sKG + "; ++x) { M = fmaxf(M, Ws[" + wx + " + " + M0 + " + " +
             row + "]); Z += Ws[" + wx + " + " + Z0 + " + " + row + "]; }");
      c.line("#pragma unroll");
      c.line("for (int x = 0; x < " + sKG + "; ++x) { const float mw = Ws[" + wx + " + " + M0 +
             " + " + row + "]; f[x] = mw == -tg_inf_f() ? 0.f : ex2(mw - M); sum += Ws[" + wx +
             " + " + L0 + " + " + row + "] * f[x]; }");
      c.line("const float inv = Z != 0.f || M == -tg_inf_f() ? 0.f : 1.f / sum;");
      c.line("#pragma unroll");
      // (An undefined row's f may be NaN: ex2(+inf - +inf).)
      c.line("for (int x = 0; x < " + sKG + "; ++x) Ws[" + wx + " + " + F0 + " + " + row +
             "] = inv == 0.f ? 0.f : f[x] * inv;");
      c.close();
      c.line("__syncthreads();");
      c.open("for (int e = tid; e < " + str(QT * Dv / 2) + "; e += " + str(NT) + ")");
      if (QW > 1) {
        c.line("const int R = e / " + str(Dv / 2) + ", d = e % " + str(Dv / 2) +
               " * 2, qx = R >> 4, r = R & 15;");
        c.line("const " + it + " s = sb + R;");
      } else {
        c.line("const int r = e / " + str(Dv / 2) + ", d = e % " + str(Dv / 2) + " * 2;");
        c.line("const " + it + " s = s0 + r;");
      }
      c.line("if (s >= " + sS + ") continue;");
      c.line("float a0 = 0.f, a1 = 0.f;");
      c.line("#pragma unroll");
      c.open("for (int x = 0; x < " + sKG + "; ++x)");
      c.line("const float f = Ws[" + wx + " + " + F0 + " + r];");
      c.line("const float2 ov = *(const float2 *)&Ws[" + wx + " + r * " + str(Dv) + " + d];");
      c.line("a0 += ov.x * f;");
      c.line("a1 += ov.y * f;");
      c.close();
      c.line("*(unsigned *)(" + outRow("s") + " + d) = pack(a0, a1);");
      c.close();
    }
  }
  kb.endKernel(code, B * Hq * nQT * CL, NT);
  return llvm::Error::success();
}

} // namespace tgc::cuda
