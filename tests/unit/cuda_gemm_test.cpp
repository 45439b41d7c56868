// cuda_gemm_test.cpp — tgc's tensor-core GEMM kernels (tgk_mma_gemm_*) on a GPU (skipped cleanly
// without one): small ONNX models (linear + bias + GELU with a row count that leaves a partial
// tile, linear + bias + residual, a batched two-input MatMul, linear + ReLU; each followed by a
// second linear) compiled at f16 and
// bf16 for the device, run with every tile/split-K configuration forced through $TGC_GEMM_MMA
// (and with the kernels off: cuBLASLt or the fallback kernel), and on sm_90 with the CUTLASS
// plug-in forced ($TGC_GEMM_CUTLASS=force), against an fp64 host reference; and a residual
// linear followed by a layer or RMS norm that the plug-in's split-K sum kernel applies.
#include "codegen/cuda/CudaBackend.h"
#include "driver/Compile.h"
#include "runtime/Session.h"
#include "runtime/cuda/CudaSession.h"
#include "tests/unit/OnnxModelBuilder.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

using namespace tgc;
using tgc::test::OnnxModel;

namespace {

std::vector<float> randomValues(int64_t n, uint32_t seed, float scale) {
  std::vector<float> v((size_t)n);
  uint32_t s = seed * 2654435761u + 7u;
  for (float &x : v) {
    s = s * 1664525u + 1013904223u;
    x = (float)(((s >> 8) & 0xffff) / 16384.0 - 2.0) * scale;
  }
  return v;
}

HostTensor hostTensor(const std::vector<int64_t> &shape, const std::vector<float> &v) {
  auto h = HostTensor::zeros(DType::F32, shape);
  for (int64_t i = 0; i < h.numel(); ++i)
    h.set(i, v[(size_t)i]);
  return h;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double geluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/// One GEMM model: Y[b] = act(X[b] (m×k) · W[b] (k×n) + bias) (+ R), W an initializer (a
/// linear) unless `twoInputs` (then a second graph input: a batched MatMul, or with `gemmTransB`
/// an ONNX Gemm(transB=1) — a linear whose weight is computed at run time). With `gemmTransB` and
/// a weight, an ONNX Gemm(x, Wᵀ initializer, bias, transB=1): the bias is Gemm's C operand, so the
/// linear carries it even when it is a graph input (`biasInput`), where MatMul + Add leaves a
/// computed bias to an add after the GEMM.
struct GemmCase {
  const char *name;
  int64_t batch, m, k, n;
  bool bias, residual, twoInputs;
  const char *act; // "", "Gelu", "GeluTanh" (Gelu, approximate="tanh"), "Relu", "Silu"
  std::vector<std::string> fittingConfigs; ///< $TGC_GEMM_MMA values that must take effect
  int cutlassGemms; ///< GEMMs of the model (of 2) the CUTLASS plug-in runs when forced
  /// Split the result into 3 equal column blocks q, k, v and go on with q·k + v (the QKV GEMM
  /// then writes the three blocks as a batched GEMM with a per-batch bias).
  bool splitQkv = false;
  bool gemmTransB = false;
  bool biasInput = false; ///< the bias a graph input, not a weight
};

class CudaGemm : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!cuda::cudaDeviceAvailable(why, arch_))
      GTEST_SKIP() << "no usable GPU: " << why;
    setenv("TGC_TUNE_CACHE", "off", 1); // every load tunes
    // The plug-in from the test's runfiles (bazel test); a copied binary finds it beside itself.
    char plugin[4096];
    if (!getenv("TGC_CUTLASS") && realpath("runtime/libtgc_cutlass_sm90.so", plugin))
      setenv("TGC_CUTLASS", plugin, 1);
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("tgc_cuda_gemm", dir));
    dir_ = dir.str().str();
  }
  void TearDown() override {
    unsetenv("TGC_GEMM_MMA");
    unsetenv("TGC_GEMM_CUTLASS");
    if (!dir_.empty())
      llvm::sys::fs::remove_directories(dir_);
  }
  std::string arch_, dir_;
};

TEST_F(CudaGemm, TensorCoreKernelsMatchReferenceInEveryConfiguration) {
  const std::vector<GemmCase> cases = {
      {"linear_bias_gelu_m197", 1, 197, 256, 192, true, false, false, "Gelu",
       {"64x32x1", "64x32x2", "64x32x4", "64x64x1", "64x64x2", "128x64x1", "128x64x4"}, 2},
      // k = 512: split-K in 2 fits (slices of 256), so its sum kernel applies the GELU. (The tanh
      // and erf forms differ by less than f16/bf16 resolution: this checks that the tanh path
      // runs and is accurate, not which of the two forms it computes.)
      {"linear_bias_gelu_tanh", 1, 128, 512, 192, true, false, false, "GeluTanh", {}, 2},
      {"linear_bias_gelu_k512_m197", 1, 197, 512, 192, true, false, false, "Gelu", {}, 2},
      // k = 1024: split-K in 2 and 4 fit.
      {"linear_bias_residual", 1, 128, 1024, 128, true, true, false, "",
       {"64x32x1", "64x32x16", "64x64x8", "128x64x1", "128x64x8"}, 2},
      // Not on CUTLASS: a batched MatMul (B is k×n).
      {"batched_matmul_nn", 4, 64, 96, 128, false, false, true, "", {"64x32x1", "64x32x3"}, 1},
      // ReLU: cuBLASLt, tgc's kernels and CUTLASS all apply it.
      {"linear_relu", 1, 64, 128, 256, false, false, false, "Relu", {"64x32x4", "64x64x2", "128x64x2"},
       2},
      // SiLU (x·sigmoid(x)) on 200 outputs: tgc's kernels need multiples of 64, so CUTLASS applies
      // it or cuBLASLt leaves it to the epilogue kernel after the GEMM.
      {"linear_bias_silu_n200", 1, 197, 256, 200, true, false, false, "Silu", {}, 2},
      {"qkv_split_bias", 1, 197, 256, 192, true, false, false, "", {"64x32x1", "64x64x4", "128x64x2"},
       2, true},
      // n = 200: a last tile of 8 weight rows, with its bias.
      {"linear_bias_n200", 1, 128, 256, 200, true, false, false, "", {}, 2},
      // Never on CUTLASS: its B is not a weight (the kernel reads B before waiting for the
      // kernel ahead).
      {"linear_runtime_weight", 1, 128, 256, 192, false, false, true, "", {}, 1, false, true},
      // A linear whose bias is a graph input (ONNX Gemm's C): not on CUTLASS either, the kernel
      // reads the bias before that wait too.
      {"linear_runtime_bias", 1, 128, 256, 192, true, false, false, "", {}, 1, false, true, true},
      // MatMul + Add of a graph input: the linear takes no computed bias (FoldBiasIntoLinear
      // folds constants only), so its GEMM has none and may run on CUTLASS; the epilogue kernel
      // after it adds the bias.
      {"matmul_add_runtime_bias", 1, 128, 256, 192, true, false, false, "", {}, 2, false, false,
       true},
  };
  const std::vector<std::string> configs = {
      "off",     "",        "64x32x1", "64x32x2",  "64x32x3",  "64x32x4",  "64x32x16", "64x64x1",
      "64x64x2", "64x64x8", "128x64x1", "128x64x2", "128x64x4", "128x64x8",
      "cutlass64x64x128", "cutlass64x128x64", "cutlass64x32x128", "cutlass64x64x128/s2",
      "cutlass64x64x128/s4", "cutlass128x128x64pp", "cutlass64x128x64pp", "cutlass192x128x64co",
      "cutlass192x64x64pp", "cutlass96x64x64pp"};
  for (const GemmCase &c : cases) {
    OnnxModel m(20);
    std::vector<int64_t> xs = {c.batch, c.m, c.k}, ws = {c.batch, c.k, c.n}, ys = {c.batch, c.m, c.n};
    if (c.batch == 1)
      xs.erase(xs.begin()), ws.erase(ws.begin()), ys.erase(ys.begin());
    const int64_t nx = c.batch * c.m * c.k, nw = c.batch * c.k * c.n, ny = c.batch * c.m * c.n;
    auto x = randomValues(nx, 1, 1.f), w = randomValues(nw, 2, 0.08f), b = randomValues(c.n, 3, 0.5f),
         r = randomValues(ny, 4, 1.f);
    m.input("x", 1, xs);
    std::vector<HostTensor> inputs = {hostTensor(xs, x)};
    if (c.gemmTransB) { // w as [n, k]
      std::vector<float> wt((size_t)(c.n * c.k));
      for (int64_t kk = 0; kk < c.k; ++kk)
        for (int64_t j = 0; j < c.n; ++j)
          wt[(size_t)(j * c.k + kk)] = w[(size_t)(kk * c.n + j)];
      if (c.twoInputs) {
        m.input("w", 1, {c.n, c.k});
        inputs.push_back(hostTensor({c.n, c.k}, wt));
      } else {
        m.initF32("w", {c.n, c.k}, wt);
      }
    } else if (c.twoInputs) {
      m.input("w", 1, ws);
      inputs.push_back(hostTensor(ws, w));
    } else {
      m.initF32("w", ws, w);
    }
    if (c.bias) {
      if (c.biasInput) {
        m.input("b", 1, {c.n});
        inputs.push_back(hostTensor({c.n}, b));
      } else {
        m.initF32("b", {c.n}, b);
      }
    }
    std::string y = "mm";
    const bool biasInGemm = c.bias && c.gemmTransB && !c.twoInputs; // Gemm's C operand
    if (c.gemmTransB)
      test::attrInt(m.node("Gemm", biasInGemm ? std::vector<std::string>{"x", "w", "b"}
                                               : std::vector<std::string>{"x", "w"},
                           {y}),
                    "transB", 1);
    else
      m.node("MatMul", {"x", "w"}, {y});
    if (c.bias && !biasInGemm) {
      m.node("Add", {y, "b"}, {"biased"});
      y = "biased";
    }
    if (std::string(c.act) == "GeluTanh") {
      test::attrString(m.node("Gelu", {y}, {"activated"}), "approximate", "tanh");
      y = "activated";
    } else if (std::string(c.act) == "Silu") {
      m.node("Sigmoid", {y}, {"gate"});
      m.node("Mul", {y, "gate"}, {"activated"});
      y = "activated";
    } else if (*c.act) {
      m.node(c.act, {y}, {"activated"});
      y = "activated";
    }
    int64_t width = c.n; // columns the second GEMM reads
    if (c.splitQkv) {
      auto *sp = m.node("Split", {y}, {"q", "k", "v"});
      test::attrInt(sp, "axis", -1);
      test::attrInt(sp, "num_outputs", 3);
      m.node("Mul", {"q", "k"}, {"qk"});
      m.node("Add", {"qk", "v"}, {"qkv"});
      y = "qkv";
      width = c.n / 3;
    }
    if (c.residual) {
      m.input("r", 1, ys);
      inputs.push_back(hostTensor(ys, r));
      m.node("Add", {y, "r"}, {"res"});
      y = "res";
    }
    // A second GEMM reads the result, so the epilogue above stays the first GEMM's own (the
    // output cast to f32 would otherwise join it in an epilogue kernel).
    const int64_t n2 = 128;
    auto w2 = randomValues(width * n2, 5, 0.08f);
    m.initF32("w2", {width, n2}, w2);
    m.node("MatMul", {y, "w2"}, {"y"});
    m.output("y");
    // fp64 reference from the fp32 inputs.
    std::vector<double> z((size_t)ny), want((size_t)(c.batch * c.m * n2));
    for (int64_t bb = 0; bb < c.batch; ++bb)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double acc = 0;
          for (int64_t kk = 0; kk < c.k; ++kk)
            acc += (double)x[(size_t)((bb * c.m + i) * c.k + kk)] *
                   w[(size_t)((bb * c.k + kk) * c.n + j)];
          if (c.bias)
            acc += b[(size_t)j];
          if (std::string(c.act) == "Gelu")
            acc = gelu(acc);
          if (std::string(c.act) == "GeluTanh")
            acc = geluTanh(acc);
          if (std::string(c.act) == "Relu")
            acc = std::max(acc, 0.0);
          if (std::string(c.act) == "Silu")
            acc = acc / (1.0 + std::exp(-acc));
          const size_t o = (size_t)((bb * c.m + i) * c.n + j);
          if (c.residual)
            acc += r[o];
          z[o] = acc;
        }
    if (c.splitQkv) // z[i][j] = q·k + v, j < n/3
      for (int64_t i = 0; i < c.batch * c.m; ++i)
        for (int64_t j = 0; j < width; ++j) {
          const double *row = &z[(size_t)(i * c.n)];
          z[(size_t)(i * c.n + j)] = row[j] * row[width + j] + row[2 * width + j];
        }
    for (int64_t i = 0; i < c.batch * c.m; ++i)
      for (int64_t j = 0; j < n2; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < width; ++kk)
          acc += z[(size_t)(i * c.n + kk)] * w2[(size_t)(kk * n2 + j)];
        want[(size_t)(i * n2 + j)] = acc;
      }
    const int64_t nOut = c.batch * c.m * n2;
    const std::string model = dir_ + "/" + c.name + ".onnx";
    std::ofstream(model, std::ios::binary) << m.bytes();
    for (const char *precision : {"fp16", "bf16"}) {
      CompileOptions o;
      o.modelPath = model;
      o.outputPath = dir_ + "/" + c.name + "_" + precision;
      o.target = llvm::cantFail(parseTarget("cuda:" + arch_));
      o.precision = llvm::cantFail(parsePrecision(precision));
      std::string log;
      llvm::raw_string_ostream os(log);
      auto res = compile(o, os);
      ASSERT_TRUE(bool(res)) << c.name << " " << precision << ": "
                             << llvm::toString(res.takeError()) << "\n" << os.str();
      for (const std::string &cfg : configs) {
        SCOPED_TRACE(std::string(c.name) + " " + precision + " TGC_GEMM_MMA=" + cfg);
        const bool cutlass = cfg.rfind("cutlass", 0) == 0; // a CUTLASS configuration forced
        setenv("TGC_GEMM_MMA", cutlass ? "off" : cfg.c_str(), 1);
        setenv("TGC_GEMM_CUTLASS", cutlass ? cfg.c_str() : "off", 1);
        Status st;
        auto s = Session::load(o.outputPath, st);
        ASSERT_TRUE(s) << st.message;
        const std::string about = s->describe();
        if (cutlass && arch_ == "sm_90") {
          // All the GEMMs it can run on the forced configuration. Split-K in S: the first GEMM
          // when its slices are at least 256 deep (the second GEMM's k is at most 200); the tuner
          // chooses for the others, which may be CUTLASS too.
          const size_t sp = cfg.find("/s");
          const int64_t S = sp == std::string::npos ? 1 : std::stoll(cfg.substr(sp + 2));
          if (S == 1) {
            const std::string n = std::to_string(c.cutlassGemms);
            EXPECT_NE(about.find("; " + n + " on CUTLASS ("), std::string::npos) << about;
            // (Followed by "," or ")": cutlass64x128x64 is a prefix of cutlass64x128x64pp.)
            EXPECT_TRUE(about.find(n + " × " + cfg + ",") != std::string::npos ||
                        about.find(n + " × " + cfg + ")") != std::string::npos)
                << about;
          } else if (c.k % S == 0 && c.k / S >= 256 && !c.twoInputs && c.batch == 1) {
            EXPECT_NE(about.find("1 × " + cfg), std::string::npos) << about;
          } else {
            EXPECT_EQ(about.find(cfg), std::string::npos) << about;
          }
        } else if (cutlass) {
          EXPECT_NE(about.find("CUTLASS unavailable: its kernels are for sm_90 only"),
                    std::string::npos) << about;
        }
        bool fits = false;
        for (const std::string &f : c.fittingConfigs)
          fits = fits || f == cfg;
        if (fits)
          EXPECT_NE(about.find(" × " + cfg), std::string::npos) << about;
        if (cfg == "off")
          EXPECT_NE(about.find("(0 on tgc tensor-core kernels"), std::string::npos) << about;
        std::vector<HostTensor> got;
        for (int rep = 0; rep < 2; ++rep) { // the second run replays the graph (counters reset)
          st = s->run(inputs, got);
          ASSERT_TRUE(st.ok) << st.message;
          ASSERT_EQ(got.size(), 1u);
          ASSERT_EQ(got[0].numel(), nOut);
          double num = 0, den = 0;
          for (int64_t i = 0; i < nOut; ++i) {
            const double d = got[0].get(i) - want[(size_t)i];
            num += d * d, den += want[(size_t)i] * want[(size_t)i];
          }
          EXPECT_LT(std::sqrt(num / den), 1e-2) << "run " << rep;
        }
      }
    }
  }
}

// A linear + bias + residual followed by a layer norm (BERT, GPT-2, ViT) or an RMS norm (LLaMA):
// with the CUTLASS plug-in's split-K forced, its sum kernel applies the norm and the norm step is
// skipped; out = norm(h) · W2 + h checks the norm and h (the GEMM's own result) both, at f16 and
// bf16, against an fp64 reference, on every path (tuned, forced split-K in 2 and 4, CUTLASS off).
// Rows of 256 (one warp per row in the sum kernel) and of 1000 (four warps, three threads idle);
// the residual r + r is computed in the graph, so the norm's output may take its buffer. With the
// norm as the model's output (out = norm(h), f32), the sum kernel stores the norm as float.
TEST_F(CudaGemm, SplitKSumKernelAppliesTheNorm) {
  const int64_t m = 128, k = 1024;
  const double eps = 1e-5;
  for (const int64_t n : {256, 1000}) {
    for (const bool rms : {false, true}) {
      for (const bool last : {false, true}) { // the norm is the f32 output: it stores float
        const std::string name = std::string(rms ? "linear_residual_rmsnorm" : "linear_residual_layernorm") +
                                 "_" + std::to_string(n) + (last ? "_out" : "");
        OnnxModel om(20);
        auto x = randomValues(m * k, 11, 1.f), w = randomValues(k * n, 12, 0.08f),
             b = randomValues(n, 13, 0.5f), r = randomValues(m * n, 14, 1.f),
             g = randomValues(n, 15, 0.5f), be = randomValues(n, 16, 0.5f),
             w2 = randomValues(n * n, 17, 0.08f);
        for (float &v : g)
          v += 1.f;
        om.input("x", 1, {m, k});
        om.input("r", 1, {m, n});
        om.initF32("w", {k, n}, w);
        om.initF32("b", {n}, b);
        om.initF32("g", {n}, g);
        om.initF32("w2", {n, n}, w2);
        om.node("MatMul", {"x", "w"}, {"mm"});
        om.node("Add", {"mm", "b"}, {"biased"});
        om.node("Add", {"r", "r"}, {"r2"});
        om.node("Add", {"biased", "r2"}, {"h"});
        if (rms) { // LLaMA's decomposed form, as the exporters write it
          om.initF32("two", {}, {2.f});
          om.initF32("eps", {}, {(float)eps});
          om.initI64("axes", {-1});
          om.node("Pow", {"h", "two"}, {"sq"});
          test::attrInt(om.node("ReduceMean", {"sq", "axes"}, {"ms"}), "keepdims", 1);
          om.node("Add", {"ms", "eps"}, {"mse"});
          om.node("Sqrt", {"mse"}, {"rt"});
          om.node("Div", {"h", "rt"}, {"hn"});
          om.node("Mul", {"hn", "g"}, {"normed"});
        } else {
          om.initF32("be", {n}, be);
          auto *ln = om.node("LayerNormalization", {"h", "g", "be"}, {"normed"});
          test::attrInt(ln, "axis", -1);
          test::attrFloat(ln, "epsilon", (float)eps);
        }
        if (last) {
          om.output("normed");
        } else {
          om.node("MatMul", {"normed", "w2"}, {"proj"});
          om.node("Add", {"proj", "h"}, {"y"});
          om.output("y");
        }
        std::vector<double> h((size_t)(m * n)), want((size_t)(m * n));
        for (int64_t i = 0; i < m; ++i) {
          double sum = 0, sq = 0;
          for (int64_t j = 0; j < n; ++j) {
            double acc = b[(size_t)j] + 2.0 * r[(size_t)(i * n + j)];
            for (int64_t kk = 0; kk < k; ++kk)
              acc += (double)x[(size_t)(i * k + kk)] * w[(size_t)(kk * n + j)];
            h[(size_t)(i * n + j)] = acc;
            sum += acc;
          }
          const double mean = rms ? 0 : sum / n;
          for (int64_t j = 0; j < n; ++j)
            sq += (h[(size_t)(i * n + j)] - mean) * (h[(size_t)(i * n + j)] - mean);
          const double rstd = 1 / std::sqrt(sq / n + eps);
          std::vector<double> nr((size_t)n);
          for (int64_t j = 0; j < n; ++j)
            nr[(size_t)j] = (h[(size_t)(i * n + j)] - mean) * rstd * g[(size_t)j] + (rms ? 0 : be[(size_t)j]);
          for (int64_t j = 0; j < n; ++j) {
            double acc = last ? nr[(size_t)j] : h[(size_t)(i * n + j)];
            for (int64_t kk = 0; !last && kk < n; ++kk)
              acc += nr[(size_t)kk] * w2[(size_t)(kk * n + j)];
            want[(size_t)(i * n + j)] = acc;
          }
        }
        const std::string model = dir_ + "/" + name + ".onnx";
        std::ofstream(model, std::ios::binary) << om.bytes();
        const std::vector<HostTensor> inputs = {hostTensor({m, k}, x), hostTensor({m, n}, r)};
        for (const char *precision : {"fp16", "bf16"}) {
          CompileOptions o;
          o.modelPath = model;
          o.outputPath = dir_ + "/" + name + "_" + precision;
          o.target = llvm::cantFail(parseTarget("cuda:" + arch_));
          o.precision = llvm::cantFail(parsePrecision(precision));
          std::string log;
          llvm::raw_string_ostream os(log);
          auto res = compile(o, os);
          ASSERT_TRUE(bool(res)) << name << " " << precision << ": "
                                 << llvm::toString(res.takeError()) << "\n" << os.str();
          for (const std::string cfg : {"", "cutlass64x64x128/s2", "cutlass64x64x128/s4", "off"}) {
            SCOPED_TRACE(name + " " + precision + " TGC_GEMM_CUTLASS=" + cfg);
            setenv("TGC_GEMM_CUTLASS", cfg.c_str(), 1);
            Status st;
            auto s = Session::load(o.outputPath, st);
            ASSERT_TRUE(s) << st.message;
            const std::string about = s->describe();
            EXPECT_NE(about.find(rms ? "rms_norm[unless the GEMM applied it]"
                                     : "layer_norm[unless the GEMM applied it]"),
                      std::string::npos) << about;
            const bool split = cfg.find("/s") != std::string::npos;
            if (split && arch_ == "sm_90") {
              EXPECT_NE(about.find("1 × " + cfg), std::string::npos) << about;
              EXPECT_NE(about.find("1 norm steps fused into GEMMs"), std::string::npos) << about;
            } else if (cfg == "off" || arch_ != "sm_90") {
              EXPECT_EQ(about.find("norm steps fused"), std::string::npos) << about;
            }
            std::vector<HostTensor> got;
            for (int rep = 0; rep < 2; ++rep) {
              st = s->run(inputs, got);
              ASSERT_TRUE(st.ok) << st.message;
              ASSERT_EQ(got.size(), 1u);
              ASSERT_EQ(got[0].numel(), m * n);
              double num = 0, den = 0;
              for (int64_t i = 0; i < m * n; ++i) {
                const double d = got[0].get(i) - want[(size_t)i];
                num += d * d, den += want[(size_t)i] * want[(size_t)i];
              }
              EXPECT_LT(std::sqrt(num / den), 1e-2) << "run " << rep;
            }
          }
        }
      }
    }
  }
}

} // namespace
