// cutlass_plugin_test.cpp — the CUTLASS GEMM plug-in (libtgc_cutlass_sm90.so) as the runtime
// loads it, without a GPU: it is found and of this runtime's ABI, and its host-side check accepts
// the linears it implements and refuses, with a reason, everything else. Its kernels run in
// cuda_gemm_test (GPU).
#include "runtime/cuda/CudaApi.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <string>

using namespace tgc::cuda;

namespace {

const CutlassLib *plugin() {
  static const CutlassLib *lib = [] {
    char path[PATH_MAX];
    // Runfiles path of //runtime:libtgc_cutlass_sm90.so (the test's data).
    if (realpath("runtime/libtgc_cutlass_sm90.so", path))
      setenv("TGC_CUTLASS", path, 1);
    std::string err;
    const CutlassLib *l = loadCutlass(err);
    EXPECT_TRUE(l) << err;
    return l;
  }();
  return lib;
}

/// bert_base's FFN1 at f16: 128 tokens, 3072 outputs, 768 deep, bias and erf-GELU.
TgcCutlassGemmDesc ffn1() {
  TgcCutlassGemmDesc d{};
  d.abi = TGC_CUTLASS_ABI, d.dtype = 10, d.activation = 2;
  d.m = 128, d.n = 3072, d.k = 768, d.lda = 768, d.ldb = 768, d.ldc = 3072, d.batch = 1;
  d.splits = 1;
  d.a = reinterpret_cast<const void *>(0x10000);
  d.b = reinterpret_cast<const void *>(0x20000);
  d.bias = reinterpret_cast<const void *>(0x30000);
  d.c = reinterpret_cast<void *>(0x40000);
  return d;
}

std::string refusal(const TgcCutlassGemmDesc &d) {
  char err[512] = {0};
  return plugin()->check(&d, err, sizeof err) == 0 ? std::string() : std::string(err);
}

/// A descriptor edit and the words its refusal must contain.
struct Refusal {
  const char *why;
  void (*edit)(TgcCutlassGemmDesc &);
};

/// Each case applied to `base()` is refused with its words (and, with `namesGemm`, the GEMM's
/// extents).
void expectRefusals(TgcCutlassGemmDesc (*base)(), std::initializer_list<Refusal> cases,
                    bool namesGemm) {
  for (const Refusal &c : cases) {
    TgcCutlassGemmDesc d = base();
    c.edit(d);
    const std::string why = refusal(d);
    EXPECT_NE(why.find(c.why), std::string::npos) << c.why << ": got '" << why << "'";
    if (namesGemm)
      EXPECT_NE(why.find("m=128 n="), std::string::npos) << why;
  }
}

TEST(CutlassPlugin, LoadsWithThisRuntimesAbi) {
  ASSERT_TRUE(plugin());
  EXPECT_EQ(plugin()->abi(), TGC_CUTLASS_ABI);
  EXPECT_NE(plugin()->path.find("libtgc_cutlass_sm90.so"), std::string::npos);
}

TEST(CutlassPlugin, AcceptsTheLinearsItImplements) {
  ASSERT_TRUE(plugin());
  for (int tile = 0; tile < TGC_CUTLASS_TILES; ++tile) {
    TgcCutlassGemmDesc t = ffn1();
    t.tile = tile;
    EXPECT_EQ(refusal(t), "") << "tile " << tile;
  }
  TgcCutlassGemmDesc g = ffn1(); // GPT-2's FFN: tanh-GELU
  g.activation = 3;
  EXPECT_EQ(refusal(g), "");
  for (int act : {1, 4}) // ReLU (ResNet's 1x1 convolutions), SiLU (EfficientNet's), every tile
    for (int tile = 0; tile < TGC_CUTLASS_TILES; ++tile) {
      TgcCutlassGemmDesc a = ffn1();
      a.activation = act, a.tile = tile;
      EXPECT_EQ(refusal(a), "") << "activation " << act << ", tile " << tile;
    }
  TgcCutlassGemmDesc f2 = ffn1(); // the FFN down-projection in 4 slices of 768, with a residual
  f2.activation = 0, f2.n = 768, f2.k = 3072, f2.lda = 3072, f2.ldb = 3072, f2.ldc = 768;
  f2.splits = 4, f2.residual = reinterpret_cast<const void *>(0x50000);
  EXPECT_EQ(refusal(f2), "");
  TgcCutlassGemmDesc q = ffn1(); // the QKV GEMM: 3 batches of one A, per-batch weights and bias
  q.activation = 0, q.n = 768, q.ldc = 768, q.batch = 3, q.stride_a = 0, q.stride_b = 768 * 768;
  q.stride_c = 128 * 768, q.bias_stride = 768;
  EXPECT_EQ(refusal(q), "");
  TgcCutlassGemmDesc d = ffn1(); // bf16, no activation, bias and residual, 197 tokens
  d.dtype = 16, d.activation = 0, d.m = 197, d.n = 768, d.ldc = 768;
  d.residual = reinterpret_cast<const void *>(0x50000);
  EXPECT_EQ(refusal(d), "");
  d.bias = nullptr, d.residual = nullptr; // plain
  EXPECT_EQ(refusal(d), "");
}

/// bert_base's FFN2 in 4 slices with its residual, followed by a layer norm into its own buffer.
TgcCutlassGemmDesc ffn2Norm() {
  TgcCutlassGemmDesc d = ffn1();
  d.activation = 0, d.n = 768, d.k = 3072, d.lda = 3072, d.ldb = 3072, d.ldc = 768, d.splits = 4;
  d.residual = reinterpret_cast<const void *>(0x100000);
  d.norm = 1, d.eps = 1e-12f;
  d.gamma = reinterpret_cast<const void *>(0x300000);
  d.beta = reinterpret_cast<const void *>(0x310000);
  d.norm_out = reinterpret_cast<void *>(0x200000);
  return d;
}

TEST(CutlassPlugin, AcceptsNormsAfterSplitK) {
  ASSERT_TRUE(plugin());
  TgcCutlassGemmDesc d = ffn2Norm();
  EXPECT_EQ(refusal(d), "");
  d.norm = 2, d.beta = nullptr; // RMS norm (LLaMA), 3 slices
  d.splits = 3;
  EXPECT_EQ(refusal(d), "");
  d.gamma = nullptr; // no scale
  EXPECT_EQ(refusal(d), "");
  d = ffn2Norm(); // the norm written over the residual (the planner may reuse a dead buffer)...
  d.norm_out = const_cast<void *>(d.residual);
  EXPECT_EQ(refusal(d), "");
  d.norm_out = d.c; // ... or over C
  EXPECT_EQ(refusal(d), "");
  d = ffn2Norm(); // a float Y (the model's output: a cast folded into the norm) clear of both
  d.norm_out_f32 = 1;
  EXPECT_EQ(refusal(d), "");
  d.norm_out = static_cast<char *>(const_cast<void *>(d.residual)) - 128 * 768 * 4;
  EXPECT_EQ(refusal(d), "");
  d = ffn2Norm(); // without the norm its buffers are not looked at
  d.norm = 0, d.gamma = reinterpret_cast<const void *>(0x300004);
  d.norm_out = static_cast<char *>(d.c) + 8;
  EXPECT_EQ(refusal(d), "");
}

TEST(CutlassPlugin, RefusesNormsItCannotApply) {
  ASSERT_TRUE(plugin());
  expectRefusals(ffn2Norm, {
      {"norm 3", [](TgcCutlassGemmDesc &d) { d.norm = 3; }},
      {"a norm needs split-K", [](TgcCutlassGemmDesc &d) { d.splits = 1; }},
      {"a norm needs split-K", [](TgcCutlassGemmDesc &d) { d.norm_out = nullptr; }},
      {"a norm needs split-K", [](TgcCutlassGemmDesc &d) { d.eps = -1.f; }},
      {"a norm needs split-K", [](TgcCutlassGemmDesc &d) {
         d.n = 8200, d.ldc = 8200, d.norm_out = reinterpret_cast<void *>(0x10000000);
       }},
      {"overlaps C or the residual", [](TgcCutlassGemmDesc &d) {
         d.norm_out = static_cast<char *>(d.c) + 1536; // one row on
       }},
      {"overlaps C or the residual", [](TgcCutlassGemmDesc &d) {
         d.norm_out = static_cast<char *>(const_cast<void *>(d.residual)) - 1536;
       }},
      {"overlaps C or the residual", [](TgcCutlassGemmDesc &d) { // a float Y is twice as long
         d.norm_out_f32 = 1;
         d.norm_out = static_cast<char *>(const_cast<void *>(d.residual)) - 128 * 768 * 2;
       }},
      {"overlaps C or the residual", [](TgcCutlassGemmDesc &d) { // and never in place
         d.norm_out_f32 = 1, d.norm_out = d.c;
       }},
      {"norm_out_f32 2", [](TgcCutlassGemmDesc &d) { d.norm_out_f32 = 2; }},
      {"16-byte aligned", [](TgcCutlassGemmDesc &d) { d.gamma = reinterpret_cast<const void *>(0x300004); }},
      {"overlaps the bias", [](TgcCutlassGemmDesc &d) { d.bias = d.norm_out; }},
      {"overlaps the bias", [](TgcCutlassGemmDesc &d) {
         d.beta = static_cast<char *>(d.norm_out) + 128 * 768 * 2 - 16;
       }},
  }, false);
}

TEST(CutlassPlugin, RefusesWithAReason) {
  ASSERT_TRUE(plugin());
  expectRefusals(ffn1, {
      {"ABI", [](TgcCutlassGemmDesc &d) { d.abi = TGC_CUTLASS_ABI + 1; }},
      {"element type 1", [](TgcCutlassGemmDesc &d) { d.dtype = 1; }},
      {"activation 5", [](TgcCutlassGemmDesc &d) { d.activation = 5; }},
      {"activation -1", [](TgcCutlassGemmDesc &d) { d.activation = -1; }},
      {"activation with a residual",
       [](TgcCutlassGemmDesc &d) { d.residual = reinterpret_cast<const void *>(0x50000); }},
      {"extent", [](TgcCutlassGemmDesc &d) { d.k = 0; }},
      {"extent", [](TgcCutlassGemmDesc &d) { d.batch = 0; }},
      {": tile 99", [](TgcCutlassGemmDesc &d) { d.tile = 99; }},
      {": tile -1", [](TgcCutlassGemmDesc &d) { d.tile = -1; }},
      {"batch strides", [](TgcCutlassGemmDesc &d) { d.batch = 2, d.stride_c = 100; }},
      {"splits 0", [](TgcCutlassGemmDesc &d) { d.splits = 0; }},
      {"split-K needs", [](TgcCutlassGemmDesc &d) { d.splits = 5; }},         // 768 / 5
      {"split-K needs", [](TgcCutlassGemmDesc &d) { d.splits = 2, d.tile = 1; }},
      {"split-K needs", [](TgcCutlassGemmDesc &d) { d.splits = 2, d.batch = 3; }},
      {"row pitches", [](TgcCutlassGemmDesc &d) { d.lda = 770; }},
      {"row pitches", [](TgcCutlassGemmDesc &d) { d.ldc = 3000; }},
      {"16-byte aligned", [](TgcCutlassGemmDesc &d) { d.bias = reinterpret_cast<const void *>(0x30008); }},
      {"null operand", [](TgcCutlassGemmDesc &d) { d.a = nullptr; }},
  }, true); // each refusal names the GEMM
  char err[64] = {0};
  EXPECT_NE(plugin()->check(nullptr, err, sizeof err), 0);
  void *h = reinterpret_cast<void *>(1);
  TgcCutlassGemmDesc bad = ffn1();
  bad.dtype = 1;
  EXPECT_NE(plugin()->create(&bad, &h, err, sizeof err), 0); // refused before any CUDA call
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(plugin()->run(nullptr, nullptr, 0, err, sizeof err), 0);
}

} // namespace
