// cuda_codegen_test.cpp — the CUDA backend without a GPU: every kernel of the ten test models
// compiles with NVRTC for sm_90 and sm_80 (fp32), for sm_90 at fp16 and bf16 and for sm_80 at
// fp16 (--precision), the kernel cache hits on recompilation, bad targets
// are refused, and the runtime refuses corrupt CUDA packages (and, on a machine without a GPU,
// reports the missing driver) before running anything.
#include "codegen/cuda/CudaBackend.h"
#include "runtime/schema/PlanUtil.h"
#include "driver/Compile.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "runtime/Session.h"
#include "runtime/cuda/CudaSession.h"
#include "tests/unit/OnnxModelBuilder.h"
#include "tests/unit/TestFiles.h"
#include "tests/unit/attention_edge_cases.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <tuple>

using namespace tgc;

namespace {

std::string modelsDir() {
  const char *d = std::getenv("TGC_MODELS_DIR");
  return d && *d ? d : "tests/data/models";
}

std::string tempDir(const std::string &tag) {
  llvm::SmallString<128> p;
  if (llvm::sys::fs::createUniqueDirectory("tgc_cuda_" + tag, p))
    return "/tmp/tgc_cuda_" + tag;
  return p.str().str();
}

using test::readFile;

llvm::Expected<CompileResult> compileModel(const std::string &model, const std::string &target,
                                           const std::string &out, const std::string &cache = "",
                                           const std::string &precision = "fp32") {
  CompileOptions o;
  o.precision = llvm::cantFail(parsePrecision(precision));
  // A bundled model's name, or the path of an .onnx file a test wrote.
  o.modelPath = llvm::StringRef(model).endswith(".onnx") ? model
                                                         : modelsDir() + "/" + model + "/model.onnx";
  o.outputPath = out;
  auto parsed = parseTarget(target); // bad targets are refused here, where text enters
  if (!parsed)
    return parsed.takeError();
  o.target = *parsed;
  o.cacheDir = cache;
  llvm::raw_null_ostream quiet;
  return compile(o, quiet);
}

/// Writes tg IR `ir` (a module with @main) as an sm_90 CUDA package and returns its kernels.cu
/// (and its plan in `plan`, when given); "" with `error` set when the IR does not parse, the
/// package is not written or its cubin is empty.
std::string irPackageSource(const std::string &ir, const std::string &tag, std::string &error,
                            plan::Plan *plan = nullptr) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  if (!module) {
    error = "the IR does not parse";
    return "";
  }
  const std::string dir = tempDir(tag);
  PackageInfo info;
  info.target = "cuda:sm_90";
  auto stats = writeCudaPackage(*module, dir + "/pkg", info, "");
  std::string src;
  if (!stats)
    error = llvm::toString(stats.takeError());
  else if (readFile(dir + "/pkg/kernels.cubin").empty())
    error = "empty cubin";
  else
    src = readFile(dir + "/pkg/kernels.cu");
  if (plan && !src.empty() && !plan->ParseFromString(readFile(dir + "/pkg/plan.pb")))
    error = "plan.pb does not parse";
  llvm::sys::fs::remove_directories(dir);
  return src;
}

const char *kModels[] = {"bert_tiny",    "bert_tiny_dynamo",    "gpt2_tiny", "gpt2_tiny_dynamo",
                         "llama_tiny",   "llama_tiny_dynamo",   "vit_tiny",  "vit_tiny_dynamo",
                         "parallel_mlp", "parallel_mlp_dynamo"};

class NvrtcAllKernels
    : public ::testing::TestWithParam<std::tuple<const char *, const char *, const char *>> {};

// Every generated kernel compiles (no cache), lands in the cubin, and the plan names it; at fp16
// and bf16 every GEMM is in that type and no kernel takes an f32 tensor except the edge casts.
TEST_P(NvrtcAllKernels, Compiles) {
  auto [model, arch, precision] = GetParam();
  std::string dir = tempDir(model);
  std::string pkg = dir + "/pkg";
  auto r = compileModel(model, std::string("cuda:") + arch, pkg, "", precision);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  std::string cubin = readFile(pkg + "/kernels.cubin"), ptx = readFile(pkg + "/kernels.ptx");
  std::string src = readFile(pkg + "/kernels.cu");
  ASSERT_FALSE(cubin.empty());
  EXPECT_NE(ptx.find(std::string(".target ") + arch), std::string::npos);
  plan::Plan p;
  ASSERT_TRUE(p.ParseFromString(readFile(pkg + "/plan.pb")));
  EXPECT_EQ(p.target(), std::string("cuda:") + arch);
  EXPECT_EQ(p.precision(), precision); // `tgc run` picks its default tolerance from it
  EXPECT_EQ(r->package.kernels, p.steps_size());
  int kernels = 0;
  for (const plan::Step &s : p.steps()) {
    if (s.kind() == plan::Step::GEMM) {
      EXPECT_GT(s.gemm().m() * s.gemm().n() * s.gemm().k(), 0) << s.label();
      EXPECT_EQ(s.gemm().dtype(), std::string(precision) == "fp16"   ? 10
                                  : std::string(precision) == "bf16" ? 16
                                                                     : 1)
          << s.label();
      continue;
    }
    ++kernels;
    ASSERT_EQ(s.kind(), plan::Step::KERNEL);
    EXPECT_EQ(s.grid_size(), 3);
    EXPECT_EQ(s.block_size(), 3);
    EXPECT_NE(src.find(" " + s.symbol() + "("), std::string::npos) << s.symbol();
    EXPECT_NE(cubin.find(s.symbol()), std::string::npos) << s.symbol() << " not in the cubin";
    // The tensor-core attention (f16/bf16) runs one block per multiprocessor; nothing else asks.
    const bool attention = s.symbol().find("_attention") != std::string::npos;
    EXPECT_EQ(s.one_block_per_sm(), attention && std::string(precision) != "fp32") << s.symbol();
  }
  EXPECT_GT(kernels, 0);
  // The QKV GEMM writes q, k and v itself (a batched GEMM into the split's results): no split
  // kernel where the three parts are equal (not Llama's GQA projection).
  const std::string mname = model;
  if (mname.find("bert") != std::string::npos || mname.find("gpt2") != std::string::npos ||
      mname.find("vit") != std::string::npos) {
    int qkv = 0;
    for (const plan::Step &s : p.steps()) {
      EXPECT_EQ(s.symbol().find("_split"), std::string::npos) << s.symbol() << ": " << s.label();
      qkv += s.kind() == plan::Step::GEMM && s.gemm().batch() == 3 && s.gemm().stride_a() == 0;
    }
    EXPECT_EQ(qkv, 2) << "one QKV GEMM writing q, k, v per layer";
  }
  // Llama's split of the GQA projection applies both rotaries while it moves q, k and v: no
  // rotary kernels, one split kernel per layer that writes the rotated q and k.
  if (mname.find("llama") != std::string::npos) {
    int rotaryKernels = 0, splitRotary = 0;
    for (const plan::Step &s : p.steps()) {
      rotaryKernels += s.symbol().find("_rotary") != std::string::npos;
      const size_t first = s.label().find("+ tg.rotary");
      splitRotary += s.symbol().find("_split") != std::string::npos &&
                     first != std::string::npos &&
                     s.label().find("+ tg.rotary", first + 1) != std::string::npos;
    }
    EXPECT_EQ(rotaryKernels, 0);
    EXPECT_EQ(splitRotary, 2) << "one split applying q's and k's rotary per layer";
  }
  // parallel_mlp's eight branches run as batched GEMMs that read the split input through the
  // [1, 0, 2] transpose (rows 8·K apart, batches K apart) instead of a transpose kernel; in the
  // TorchScript export at fp16/bf16 the second GEMM also writes the concat layout (rows 8·N
  // apart; at fp32 the planner puts the transpose's result over that GEMM's input, so the
  // transpose stays a kernel).
  if (mname.find("parallel_mlp") != std::string::npos) {
    int readThrough = 0, writeThrough = 0, transposes = 0;
    for (const plan::Step &s : p.steps()) {
      const plan::GemmDesc &g = s.gemm();
      readThrough += s.kind() == plan::Step::GEMM && g.batch() == 8 && g.lda() == 8 * g.k() &&
                     g.stride_a() == g.k() && g.bias_stride() == g.n();
      writeThrough += s.kind() == plan::Step::GEMM && g.batch() == 8 && g.ldc() == 8 * g.n() &&
                      g.stride_c() == g.n();
      transposes += s.symbol().find("transpose") != std::string::npos;
    }
    EXPECT_EQ(readThrough, 1);
    if (mname == "parallel_mlp" && std::string(precision) != "fp32") {
      EXPECT_EQ(writeThrough, 1);
      EXPECT_EQ(transposes, 0);
    }
  }
  // A normalization applies the elementwise op after it (normEpilogue): the transformers' last
  // layer/RMS norm writes the f32 output itself at fp16/bf16 (no cast kernel), and parallel_mlp's
  // layer norm applies its tanh (no tanh kernel).
  if (std::string(precision) != "fp32") {
    const plan::Step &last = p.steps(p.steps_size() - 1);
    if (mname.find("parallel_mlp") == std::string::npos) {
      EXPECT_NE(last.symbol().find("norm"), std::string::npos) << last.label();
      EXPECT_NE(last.label().find("+ tg.cast"), std::string::npos) << last.label();
    } else {
      int tanhKernels = 0, normTanh = 0;
      for (const plan::Step &s : p.steps()) {
        tanhKernels += s.symbol().find("tanh") != std::string::npos;
        normTanh += s.symbol().find("layer_norm") != std::string::npos &&
                    s.label().find("+ tg.tanh") != std::string::npos;
      }
      EXPECT_EQ(tanhKernels, 0);
      EXPECT_EQ(normTanh, 1);
    }
  }
  // The GELU step after an FFN GEMM reads and writes 16-byte vectors at fp16/bf16.
  if ((mname.find("bert") != std::string::npos || mname.find("vit") != std::string::npos) &&
      std::string(precision) != "fp32") {
    size_t gelu = src.find("_gemm_linear_gelu(");
    ASSERT_NE(gelu, std::string::npos);
    const size_t end = src.find("\n}\n", gelu);
    EXPECT_LT(src.find("reinterpret_cast<const uint4 *>", gelu), end)
        << "no vector loads in the GELU step";
  }
  // Every warp-per-row norm (all ten models: rows of whole 16-byte vectors, aligned buffers) loads
  // and stores 16-byte vectors: scalar 2-byte stores span twice the sectors per warp store.
  int norms = 0;
  for (const plan::Step &s : p.steps()) {
    if (s.symbol().find("_norm") == std::string::npos)
      continue;
    ++norms;
    const size_t at = src.find(" " + s.symbol() + "("), end = src.find("\n}\n", at);
    ASSERT_NE(at, std::string::npos) << s.symbol();
    EXPECT_LT(src.find("reinterpret_cast<const uint4 *>(xr)", at), end) << s.symbol();
    EXPECT_LT(src.find("reinterpret_cast<uint4 *>(yr", at), end) << s.symbol();
  }
  EXPECT_GT(norms, 0);
  // ViT's input cast is done by the patch transpose (it reads the f32 pixels and stores the
  // storage type): no cast kernel before the first GEMM.
  if (mname.find("vit") != std::string::npos && std::string(precision) != "fp32") {
    EXPECT_EQ(p.steps(0).symbol().find("_cast"), std::string::npos) << p.steps(0).label();
    EXPECT_NE(p.steps(0).label().find("tg.cast + tg.transpose"), std::string::npos)
        << p.steps(0).label();
  }
  // Identical kernels are emitted once: every symbol is defined once, and models with repeated
  // layers have fewer distinct kernels than kernel steps.
  std::set<std::string> symbols;
  for (const plan::Step &s : p.steps())
    if (s.kind() == plan::Step::KERNEL && symbols.insert(s.symbol()).second) {
      size_t first = src.find(" " + s.symbol() + "(");
      EXPECT_EQ(src.find(" " + s.symbol() + "(", first + 1), std::string::npos) << s.symbol();
    }
  if (std::string(model).find("parallel_mlp") == std::string::npos)
    EXPECT_LT(symbols.size(), (size_t)kernels) << "no kernel shared between layers";
  if (std::string(precision) != "fp32") {
    // tgc's tensor-core GEMMs are in the module, and GELU models' FFN GEMMs carry the activation,
    // followed by the activation step the runtime skips when that GEMM applies it.
    EXPECT_NE(cubin.find(std::string("tgk_mma_gemm_") + (std::string(precision) == "fp16" ? "f16" : "bf16")),
              std::string::npos);
    // Norm steps right after the GEMM that writes their input carry the norm (the CUTLASS
    // plug-in's split-K may apply it): every transformer layer has two residual GEMMs each
    // followed by a norm; the model's last norm also converts to the f32 output.
    int fused = 0, norms = 0, toF32 = 0;
    for (int i = 1; i < p.steps_size(); ++i)
      if (p.steps(i).skip_if_gemm_fused()) {
        EXPECT_EQ(p.steps(i - 1).kind(), plan::Step::GEMM);
        if (p.steps(i).norm().kind() != plan::NormDesc::NONE) {
          ++norms;
          EXPECT_EQ(plan::gemmNormProblem(p.steps(i - 1), p.steps(i)), "");
          EXPECT_TRUE(p.steps(i - 1).gemm().residual());
          if (p.steps(i).norm().out_f32()) {
            ++toF32;
            EXPECT_EQ(i, p.steps_size() - 1) << "only the output's norm stores f32";
            EXPECT_NE(p.steps(i).label().find("tg.cast"), std::string::npos) << p.steps(i).label();
          }
        } else {
          ++fused;
          EXPECT_NE(p.steps(i - 1).gemm().activation(), plan::GemmDesc::NONE);
        }
      } else {
        EXPECT_EQ(p.steps(i).norm().kind(), plan::NormDesc::NONE);
      }
    const std::string m = model;
    if (m.find("bert") != std::string::npos || m.find("gpt2") != std::string::npos ||
        m.find("vit") != std::string::npos)
      EXPECT_EQ(fused, 2) << "one GELU GEMM per layer";
    if (m.find("parallel_mlp") == std::string::npos) {
      EXPECT_EQ(norms, 4) << "two layers";
      EXPECT_EQ(toF32, 1);
    } else {
      EXPECT_EQ(norms, 0) << "its norms apply tanh";
    }
    const char *type = std::string(precision) == "fp16" ? "__half" : "__nv_bfloat16";
    EXPECT_NE(src.find("#include <cuda_fp16.h>"), std::string::npos);
    EXPECT_NE(src.find(std::string("const ") + type + " *in0"), std::string::npos);
    EXPECT_NE(cubin.find(std::string("tgk_gemm_") + (std::string(precision) == "fp16" ? "f16" : "bf16")),
              std::string::npos);
  } else {
    EXPECT_EQ(src.find("cuda_fp16.h"), std::string::npos);
  }
  llvm::sys::fs::remove_directories(dir);
}

INSTANTIATE_TEST_SUITE_P(TenModels, NvrtcAllKernels,
                         ::testing::Combine(::testing::ValuesIn(kModels),
                                            ::testing::Values("sm_90", "sm_80"),
                                            ::testing::Values("fp32")),
                         [](const auto &info) {
                           return std::string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });

// fp16 and bf16 (--precision): f16/bf16 storage, float math, fp32-accumulating GEMMs; fp16 and
// bf16 for sm_90, fp16 for sm_80.
std::vector<std::tuple<const char *, const char *, const char *>> lowPrecisionCases() {
  std::vector<std::tuple<const char *, const char *, const char *>> v;
  for (const char *m : kModels)
    for (auto [arch, precision] :
         {std::pair{"sm_90", "fp16"}, std::pair{"sm_90", "bf16"}, std::pair{"sm_80", "fp16"}})
      v.emplace_back(m, arch, precision);
  return v;
}

INSTANTIATE_TEST_SUITE_P(TenModelsLowPrecision, NvrtcAllKernels,
                         ::testing::ValuesIn(lowPrecisionCases()), [](const auto &info) {
                           return std::string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param) + "_" + std::get<2>(info.param);
                         });

// tg.attention with layout "bshd" in both kernels (tiled for head dims <= 128, one warp per row
// above), masked, causal and GQA, fp32 and fp16: NVRTC compiles them.
TEST(CudaCodegen, AttentionBshdCompiles) {
  for (const char *t : {"f32", "f16"}) {
    std::string ir = R"(
func.func @main(%q: tensor<2x5x4x64xT>, %k: tensor<2x7x2x64xT>, %v: tensor<2x7x2x48xT>, %m: tensor<2x1x5x7xT>, %wq: tensor<1x3x4x160xT>, %wk: tensor<1x6x2x160xT>) -> (tensor<2x5x4x48xT>, tensor<1x3x4x160xT>) {
  %0 = tg.attention %q, %k, %v, %m {layout = "bshd", scale = 0.35 : f32} : tensor<2x5x4x64xT>, tensor<2x7x2x64xT>, tensor<2x7x2x48xT>, tensor<2x1x5x7xT> -> tensor<2x5x4x48xT>
  %1 = tg.attention %wq, %wk, %wk {causal = true, layout = "bshd", scale = 0.25 : f32} : tensor<1x3x4x160xT>, tensor<1x6x2x160xT>, tensor<1x6x2x160xT> -> tensor<1x3x4x160xT>
  return %0, %1 : tensor<2x5x4x48xT>, tensor<1x3x4x160xT>
}
)";
    for (size_t at; (at = ir.find("xT>")) != std::string::npos;)
      ir.replace(at, 3, std::string("x") + t + ">");
    std::string error;
    const std::string src = irPackageSource(ir, "attention_bshd", error);
    ASSERT_TRUE(error.empty()) << t << ": " << error;
    EXPECT_NE(src.find("__shared__"), std::string::npos) << "no tiled attention kernel";
  }
}

// A matmul weight in 32-column strips (tg.matmul's weight_block) is the CPU's layout: the CUDA
// backend refuses it, naming it, alone and as a fused GEMM's, instead of reading the strips as
// a [K, N] matrix.
TEST(CudaCodegen, RefusesMatmulWeightInStrips) {
  const std::string alone = R"(
func.func @main(%x: tensor<4x8xf32>, %w: tensor<2x8x32xf32>) -> tensor<4x40xf32> {
  %0 = tg.matmul %x, %w {weight_block = 32 : i64} : tensor<4x8xf32>, tensor<2x8x32xf32> -> tensor<4x40xf32>
  return %0 : tensor<4x40xf32>
}
)";
  const std::string fused = R"(
func.func @main(%x: tensor<4x8xf32>, %w: tensor<2x8x32xf32>, %b: tensor<40xf32>) -> tensor<4x40xf32> {
  %0 = tg.fused "gemm" (%x, %w, %b) : (tensor<4x8xf32>, tensor<2x8x32xf32>, tensor<40xf32>) -> tensor<4x40xf32> {
  ^bb0(%p: tensor<4x8xf32>, %q: tensor<2x8x32xf32>, %e: tensor<40xf32>):
    %t0 = tg.matmul %p, %q {weight_block = 32 : i64} : tensor<4x8xf32>, tensor<2x8x32xf32> -> tensor<4x40xf32>
    %t1 = tg.add %t0, %e : tensor<4x40xf32>, tensor<40xf32> -> tensor<4x40xf32>
    tg.yield %t1 : tensor<4x40xf32>
  }
  return %0 : tensor<4x40xf32>
}
)";
  for (const std::string *ir : {&alone, &fused}) {
    std::string error;
    irPackageSource(*ir, "matmul_strips", error);
    EXPECT_NE(error.find("a matmul weight in strips (weight_block) is the CPU's layout"),
              std::string::npos)
        << (ir == &alone ? "alone" : "fused") << ": " << error;
  }
}

// The indexing ops (codegen/common/IndexEmit) in f32, f16, f64 and i64: cumsum, every scatter
// reduction with i32 and i64 indices, top-k largest and smallest; NVRTC compiles them.
TEST(CudaCodegen, IndexOpsCompile) {
  for (const char *t : {"f32", "f16", "f64", "i64"}) {
    std::string ir = R"(
func.func @main(%x: tensor<3x5xT>, %d: tensor<6x5xT>, %i: tensor<2x4xi32>, %j: tensor<2x4xi64>, %u: tensor<2x4xT>) -> (tensor<3x5xT>, tensor<6x5xT>, tensor<6x5xT>, tensor<6x5xT>, tensor<6x5xT>, tensor<6x5xT>, tensor<3x2xT>, tensor<3x2xi64>, tensor<2x5xT>, tensor<2x5xi64>) {
  %0 = tg.cumsum %x {axis = 1 : i64, exclusive = true, reverse = true} : tensor<3x5xT>
  %1 = tg.scatter_elements %d, %i, %u {axis = 0 : i64} : tensor<6x5xT>, tensor<2x4xi32>, tensor<2x4xT> -> tensor<6x5xT>
  %2 = tg.scatter_elements %d, %j, %u {axis = 1 : i64, reduction = "add"} : tensor<6x5xT>, tensor<2x4xi64>, tensor<2x4xT> -> tensor<6x5xT>
  %3 = tg.scatter_elements %d, %j, %u {axis = 0 : i64, reduction = "mul"} : tensor<6x5xT>, tensor<2x4xi64>, tensor<2x4xT> -> tensor<6x5xT>
  %4 = tg.scatter_elements %d, %i, %u {axis = 1 : i64, reduction = "max"} : tensor<6x5xT>, tensor<2x4xi32>, tensor<2x4xT> -> tensor<6x5xT>
  %5 = tg.scatter_elements %d, %j, %u {axis = -1 : i64, reduction = "min"} : tensor<6x5xT>, tensor<2x4xi64>, tensor<2x4xT> -> tensor<6x5xT>
  %6:2 = tg.topk %x {axis = 1 : i64} : tensor<3x5xT> -> tensor<3x2xT>, tensor<3x2xi64>
  %7:2 = tg.topk %x {axis = 0 : i64, largest = false} : tensor<3x5xT> -> tensor<2x5xT>, tensor<2x5xi64>
  return %0, %1, %2, %3, %4, %5, %6#0, %6#1, %7#0, %7#1 : tensor<3x5xT>, tensor<6x5xT>, tensor<6x5xT>, tensor<6x5xT>, tensor<6x5xT>, tensor<6x5xT>, tensor<3x2xT>, tensor<3x2xi64>, tensor<2x5xT>, tensor<2x5xi64>
}
)";
    for (size_t at; (at = ir.find("xT>")) != std::string::npos;)
      ir.replace(at, 3, std::string("x") + t + ">");
    std::string error;
    const std::string src = irPackageSource(ir, "index_ops", error);
    ASSERT_TRUE(error.empty()) << t << ": " << error;
    EXPECT_NE(src.find("tg_max<"), std::string::npos) << t << ": no scatter max";
  }
}

// SwiGLU moves 8 outputs per thread (two 16-byte loads, one store, 8x fewer blocks) for f16/bf16
// halves of a multiple of 8; other halves (12 here) and f32 keep one element per thread.
TEST(CudaCodegen, SwigluVectorsOnlyForWholeVectorHalves) {
  struct Case {
    const char *type;
    int width; // of the gate/up input: twice the half
    bool vector;
  } cases[] = {{"f16", 64, true}, {"bf16", 64, true}, {"f16", 24, false}, {"f32", 64, false}};
  for (const Case &k : cases) {
    const std::string t = k.type, w = std::to_string(k.width), h = std::to_string(k.width / 2);
    const std::string ir = "func.func @main(%x: tensor<4x" + w + "x" + t + ">) -> tensor<4x" + h +
                           "x" + t + "> {\n  %0 = tg.swiglu %x : tensor<4x" + w + "x" + t +
                           "> -> tensor<4x" + h + "x" + t + ">\n  return %0 : tensor<4x" + h +
                           "x" + t + ">\n}\n";
    std::string error;
    const std::string src = irPackageSource(ir, "swiglu_vectors", error);
    ASSERT_TRUE(error.empty()) << t << " " << w << ": " << error;
    const size_t at = src.find("_swiglu(");
    ASSERT_NE(at, std::string::npos) << src;
    const std::string body = src.substr(at, src.find("\n}\n", at) - at);
    EXPECT_EQ(body.find("const uint4 gv") != std::string::npos, k.vector) << t << " " << w << body;
    EXPECT_EQ(body.find("i < " + std::to_string(4 * k.width / 2 / (k.vector ? 8 : 1)) + ";") !=
                  std::string::npos,
              true)
        << "one loop iteration per " << (k.vector ? "8 outputs" : "output") << body;
  }
}

// Pad and gather move 16-byte vectors only where whole rows move: a gather of f16 rows of 32
// (64 bytes) and a pad of the middle axis use them; rows of 12 (24 bytes) and a pad of the last
// axis keep one element per thread.
TEST(CudaCodegen, PadAndGatherVectorsOnlyForWholeRows) {
  struct Case {
    const char *name, *ir, *kernel;
    int64_t loopEnd; // elements, or vectors of 8
  } cases[] = {
      {"gather_rows32",
       "func.func @main(%d: tensor<10x32xf16>, %i: tensor<6xi64>) -> tensor<6x32xf16> {\n"
       "  %0 = tg.gather %d, %i {axis = 0 : i64} : tensor<10x32xf16>, tensor<6xi64> -> "
       "tensor<6x32xf16>\n  return %0 : tensor<6x32xf16>\n}\n",
       "_gather(", 6 * 32 / 8},
      {"gather_rows12",
       "func.func @main(%d: tensor<10x12xf16>, %i: tensor<6xi64>) -> tensor<6x12xf16> {\n"
       "  %0 = tg.gather %d, %i {axis = 0 : i64} : tensor<10x12xf16>, tensor<6xi64> -> "
       "tensor<6x12xf16>\n  return %0 : tensor<6x12xf16>\n}\n",
       "_gather(", 6 * 12},
      {"pad_middle",
       "func.func @main(%x: tensor<1x16x32xf16>) -> tensor<1x18x32xf16> {\n"
       "  %0 = tg.pad %x {pads = [0, 1, 0, 0, 1, 0], value = 0.0 : f64} : tensor<1x16x32xf16> -> "
       "tensor<1x18x32xf16>\n  return %0 : tensor<1x18x32xf16>\n}\n",
       "_pad(", 18 * 32 / 8},
      {"pad_last",
       "func.func @main(%x: tensor<1x16x32xf16>) -> tensor<1x16x40xf16> {\n"
       "  %0 = tg.pad %x {pads = [0, 0, 0, 0, 0, 8], value = 0.0 : f64} : tensor<1x16x32xf16> -> "
       "tensor<1x16x40xf16>\n  return %0 : tensor<1x16x40xf16>\n}\n",
       "_pad(", 16 * 40},
  };
  for (const Case &k : cases) {
    std::string error;
    const std::string src = irPackageSource(k.ir, k.name, error);
    ASSERT_TRUE(error.empty()) << k.name << ": " << error;
    const size_t at = src.find(k.kernel);
    ASSERT_NE(at, std::string::npos) << src;
    const std::string body = src.substr(at, src.find("\n}\n", at) - at);
    const bool vector = std::string(k.name) == "gather_rows32" || std::string(k.name) == "pad_middle";
    EXPECT_EQ(body.find("reinterpret_cast<uint4 *>(out0)[i]") != std::string::npos, vector)
        << k.name << body;
    EXPECT_NE(body.find("i < " + std::to_string(k.loopEnd) + ";"), std::string::npos)
        << k.name << ": one loop iteration per " << (vector ? "vector" : "element") << body;
  }
}

// Long non-causal keys at f16 on sm_90: the attention splits its keys across a cluster of two
// blocks (the chooser's tiling), whose states merge through distributed shared memory.
TEST(CudaCodegen, LongKeyAttentionSplitsAcrossACluster) {
  const std::string t = "tensor<1x6x1500x64xf16>";
  const std::string ir = "func.func @main(%q: " + t + ", %k: " + t + ", %v: " + t + ") -> " + t +
                         " {\n  %0 = tg.attention %q, %k, %v {causal = false, scale = 1.25e-01 : "
                         "f32} : " + t + ", " + t + ", " + t + " -> " + t + "\n  return %0 : " +
                         t + "\n}\n";
  std::string error;
  const std::string src = irPackageSource(ir, "attention_cluster", error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_NE(src.find("__cluster_dims__(2, 1, 1)"), std::string::npos) << src;
  EXPECT_NE(src.find("mapa.u64"), std::string::npos);
  EXPECT_NE(src.find("barrier.cluster.arrive.release.aligned"), std::string::npos);
}

// Causal attention over many rows: 64-key tiles from 512 keys on (gpt2 at sequence 512), 32-key
// tiles below (the causal diagonal wastes less of a smaller tile).
TEST(CudaCodegen, LongCausalAttentionTakes64KeyTiles) {
  for (int L : {512, 384}) {
    const std::string t = "tensor<1x12x" + std::to_string(L) + "x64xf16>";
    const std::string ir = "func.func @main(%q: " + t + ", %k: " + t + ", %v: " + t + ") -> " +
                           t + " {\n  %0 = tg.attention %q, %k, %v {causal = true, scale = " +
                           "1.25e-01 : f32} : " + t + ", " + t + ", " + t + " -> " + t +
                           "\n  return %0 : " + t + "\n}\n";
    std::string error;
    const std::string src = irPackageSource(ir, "attention_causal", error);
    ASSERT_TRUE(error.empty()) << L << ": " << error;
    const std::string tile = L >= 512 ? "(*Ks)[64][72]" : "(*Ks)[32][72]";
    EXPECT_NE(src.find(tile), std::string::npos) << L << " keys: no " << tile << "\n" << src;
  }
}

// An f16/bf16 tg.attention without a mask carries its shape for cuDNN (plan.proto AttentionDesc):
// heads, GQA's key/value heads, both sequence lengths, head dims, layout, scale, causality, dtype
// and the args of q, k, v and o. A masked one does not, nor an f32 one.
TEST(CudaCodegen, UnmaskedAttentionCarriesItsShapeForCudnn) {
  const std::string ir = R"(
func.func @main(%q: tensor<2x17x4x64xT>, %k: tensor<2x70x2x64xT>, %v: tensor<2x70x2x32xT>, %m: tensor<2x1x17x70xT>) -> (tensor<2x17x4x32xT>, tensor<2x17x4x32xT>) {
  %0 = tg.attention %q, %k, %v {causal = true, layout = "bshd", scale = 0.125 : f32} : tensor<2x17x4x64xT>, tensor<2x70x2x64xT>, tensor<2x70x2x32xT> -> tensor<2x17x4x32xT>
  %1 = tg.attention %q, %k, %v, %m {layout = "bshd", scale = 0.125 : f32} : tensor<2x17x4x64xT>, tensor<2x70x2x64xT>, tensor<2x70x2x32xT>, tensor<2x1x17x70xT> -> tensor<2x17x4x32xT>
  return %0, %1 : tensor<2x17x4x32xT>, tensor<2x17x4x32xT>
}
)";
  for (const char *t : {"f16", "bf16", "f32"}) {
    std::string text = ir;
    for (size_t at; (at = text.find("xT>")) != std::string::npos;)
      text.replace(at, 3, std::string("x") + t + ">");
    std::string error;
    plan::Plan p;
    irPackageSource(text, std::string("attention_desc_") + t, error, &p);
    ASSERT_TRUE(error.empty()) << t << ": " << error;
    std::vector<const plan::Step *> withDesc;
    int attentionSteps = 0;
    for (const plan::Step &s : p.steps()) {
      attentionSteps += s.label().find("tg.attention") != std::string::npos;
      if (s.has_attention())
        withDesc.push_back(&s);
    }
    EXPECT_EQ(attentionSteps, 2) << t;
    if (std::string(t) == "f32") {
      EXPECT_TRUE(withDesc.empty()) << "an f32 attention carries a shape for cuDNN";
      continue;
    }
    ASSERT_EQ(withDesc.size(), 1u) << t << ": only the unmasked causal 17 x 70 attention";
    const plan::Step &s = *withDesc[0];
    const plan::AttentionDesc &a = s.attention();
    EXPECT_EQ(s.kind(), plan::Step::KERNEL);
    EXPECT_EQ(a.batch(), 2);
    EXPECT_EQ(a.heads(), 4);
    EXPECT_EQ(a.kv_heads(), 2);
    EXPECT_EQ(a.seq_q(), 17);
    EXPECT_EQ(a.seq_kv(), 70);
    EXPECT_EQ(a.head_dim(), 64);
    EXPECT_EQ(a.head_dim_v(), 32);
    EXPECT_TRUE(a.bshd());
    EXPECT_TRUE(a.causal());
    EXPECT_FLOAT_EQ(a.scale(), 0.125f);
    EXPECT_EQ(a.dtype(), std::string(t) == "bf16" ? 16 : 10);
    // q, k, v and o are the step's args 0..3, each as large as its packed tensor.
    const int64_t es = 2;
    EXPECT_EQ(s.args(a.q_arg()).bytes(), 2 * 17 * 4 * 64 * es);
    EXPECT_EQ(s.args(a.k_arg()).bytes(), 2 * 70 * 2 * 64 * es);
    EXPECT_EQ(s.args(a.v_arg()).bytes(), 2 * 70 * 2 * 32 * es);
    EXPECT_EQ(s.args(a.o_arg()).bytes(), 2 * 17 * 4 * 32 * es);
    EXPECT_NE(a.k_arg(), a.v_arg());
  }
}

// A warp-per-row norm moves 16-byte vectors only when a lane's chunk of outputs fills them too:
// an f32 layer norm whose f16 cast rides in its store (8 bytes per 4-element chunk) keeps the
// scalar form; the same norm with an f32 result (its tanh riding in the store) uses vectors.
TEST(CudaCodegen, NormVectorStoresOnlyWhenOutputsFillVectors) {
  for (const char *outType : {"f16", "f32"}) {
    std::string ir = R"(
func.func @main(%x: tensor<4x64xf32>, %g: tensor<64xf32>) -> tensor<4x64xO> {
  %0 = tg.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>
  %1 = tg.cast %0 : tensor<4x64xf32> -> tensor<4x64xO>
  %2 = tg.add %1, %1 : tensor<4x64xO>, tensor<4x64xO> -> tensor<4x64xO>
  return %2 : tensor<4x64xO>
}
)";
    if (std::string(outType) == "f32") // no cast: the norm stores its own f32 result
      ir.replace(ir.find("  %1 = tg.cast"), ir.find("  %2") - ir.find("  %1 = tg.cast"),
                 "  %1 = tg.tanh %0 : tensor<4x64xf32>\n");
    for (size_t at; (at = ir.find("xO>")) != std::string::npos;)
      ir.replace(at, 3, std::string("x") + outType + ">");
    std::string error;
    const std::string src = irPackageSource(ir, "norm_vectors", error);
    ASSERT_TRUE(error.empty()) << outType << ": " << error;
    const size_t at = src.find("_layer_norm("), end = src.find("\n}\n", at);
    ASSERT_NE(at, std::string::npos);
    const std::string kernel = src.substr(at, end - at);
    // The epilogue op rides in the norm's store either way.
    const bool f16 = std::string(outType) == "f16";
    EXPECT_NE(kernel.find(f16 ? "tg_st<__half>" : "tg_tanh"), std::string::npos) << kernel;
    EXPECT_EQ(kernel.find("uint4") == std::string::npos, f16) << kernel;
    if (f16)
      EXPECT_NE(kernel.find("yr[ch] = "), std::string::npos) << kernel;
    else
      EXPECT_NE(kernel.find("reinterpret_cast<uint4 *>(yr"), std::string::npos) << kernel;
  }
}

// An embedding gather emits no kernel when the op right after it reads through it
// (gatherReadable): an elementwise op that is its only reader, or a norm of its rows, which also
// stores the rows when later ops read them (those ops read the stored rows, not the table).
// Otherwise the gather keeps its own kernel: a second reader of an elementwise op's gathered
// rows, an op in between, a gather along axis 1 (and a cast the transpose after it applies).
TEST(CudaCodegen, EmbeddingGatherReadThroughOnlyByTheOpRightAfterIt) {
  const std::string base = R"(
func.func @main(%t: tensor<10x64xf32>, %ids: tensor<6xi64>, %p: tensor<6x64xf32>) -> (tensor<6x64xf32>, tensor<6x64xf32>) {
  %0 = tg.gather %t, %ids {axis = 0 : i64} : tensor<10x64xf32>, tensor<6xi64> -> tensor<6x64xf32>
  BODY
}
)";
  struct Case {
    const char *name, *body;
    bool readThrough, rowsStored;
  } cases[] = {
      {"add, its only reader",
       "%1 = tg.add %0, %p : tensor<6x64xf32>, tensor<6x64xf32> -> tensor<6x64xf32>\n"
       "  %2 = tg.tanh %1 : tensor<6x64xf32>\n  return %1, %2 : tensor<6x64xf32>, tensor<6x64xf32>",
       true, false},
      {"norm, rows read later too",
       "%1 = tg.layer_norm %0 {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<6x64xf32> -> tensor<6x64xf32>\n"
       "  %2 = tg.add %1, %0 : tensor<6x64xf32>, tensor<6x64xf32> -> tensor<6x64xf32>\n"
       "  return %1, %2 : tensor<6x64xf32>, tensor<6x64xf32>",
       true, true},
      {"add with a second reader",
       "%1 = tg.add %0, %p : tensor<6x64xf32>, tensor<6x64xf32> -> tensor<6x64xf32>\n"
       "  %2 = tg.mul %0, %p : tensor<6x64xf32>, tensor<6x64xf32> -> tensor<6x64xf32>\n"
       "  return %1, %2 : tensor<6x64xf32>, tensor<6x64xf32>",
       false, false},
      {"an op in between",
       "%1 = tg.tanh %p : tensor<6x64xf32>\n"
       "  %2 = tg.add %0, %1 : tensor<6x64xf32>, tensor<6x64xf32> -> tensor<6x64xf32>\n"
       "  return %1, %2 : tensor<6x64xf32>, tensor<6x64xf32>",
       false, false},
  };
  for (const Case &c : cases) {
    std::string ir = base;
    ir.replace(ir.find("BODY"), 4, c.body);
    std::string error;
    const std::string src = irPackageSource(ir, "gather_read_through", error);
    ASSERT_TRUE(error.empty()) << c.name << ": " << error;
    EXPECT_EQ(src.find("_gather(") == std::string::npos, c.readThrough) << c.name << ":\n" << src;
    EXPECT_EQ(src.find("gidx0[") != std::string::npos, c.readThrough) << c.name;
    EXPECT_EQ(src.find("gout0") != std::string::npos, c.rowsStored) << c.name;
    // Only the kernel right after the gather reads the table through the indices.
    size_t kernels = 0;
    for (size_t at = src.find("*gidx"); at != std::string::npos; at = src.find("*gidx", at + 1))
      ++kernels;
    EXPECT_EQ(kernels, c.readThrough ? 1u : 0u) << c.name << ":\n" << src;
  }
  // A cast followed by a transpose that may convert while it moves (castFoldsIntoTranspose,
  // when the planner keeps the cast's input clear of the transpose's result): that transpose
  // reads the cast's operand, so the gather must then write it.
  const std::string castT = R"(
func.func @main(%t: tensor<10x64xf32>, %ids: tensor<6xi64>) -> tensor<6x8x8xf16> {
  %0 = tg.gather %t, %ids {axis = 0 : i64} : tensor<10x64xf32>, tensor<6xi64> -> tensor<6x64xf32>
  %1 = tg.cast %0 : tensor<6x64xf32> -> tensor<6x64xf16>
  %2 = tg.reshape %1 : tensor<6x64xf16> -> tensor<6x8x8xf16>
  %3 = tg.transpose %2 {perm = [0, 2, 1]} : tensor<6x8x8xf16> -> tensor<6x8x8xf16>
  return %3 : tensor<6x8x8xf16>
}
)";
  {
    std::string error;
    const std::string src = irPackageSource(castT, "gather_cast_transpose", error);
    ASSERT_TRUE(error.empty()) << error;
    // Whichever the planner allows: the cast read through the gather (its own kernel), or the
    // transpose converting (then the gather writes what the transpose reads).
    const bool castKernel = src.find("_cast(") != std::string::npos;
    EXPECT_EQ(src.find("_gather(") != std::string::npos, !castKernel) << src;
    EXPECT_EQ(src.find("gidx0[") != std::string::npos, castKernel) << src;
  }
  // Along axis 1 (not an embedding's rows): its own kernel.
  const std::string axis1 = R"(
func.func @main(%t: tensor<6x10xf32>, %ids: tensor<4xi64>, %p: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %0 = tg.gather %t, %ids {axis = 1 : i64} : tensor<6x10xf32>, tensor<4xi64> -> tensor<6x4xf32>
  %1 = tg.add %0, %p : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x4xf32>
  return %1 : tensor<6x4xf32>
}
)";
  std::string error;
  const std::string src = irPackageSource(axis1, "gather_axis1", error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_NE(src.find("_gather("), std::string::npos);
  EXPECT_EQ(src.find("gidx0["), std::string::npos);
}

// A split applies the rotaries right after it (splitRotaries) only when nothing else runs in
// between and it is each part's only reader; otherwise the rotary keeps its own kernel.
TEST(CudaCodegen, SplitAppliesRotaryOnlyWhenRightAfterIt) {
  const std::string base = R"(
func.func @main(%x: tensor<4x16xf32>, %c: tensor<4x8xf32>, %s: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = tg.exp %x : tensor<4x16xf32>
  %1, %2 = tg.split %0 {axis = 1 : i64} : tensor<4x16xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  BETWEEN
  %4 = tg.rotary %1, %c, %s : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %5 = tg.add %4, OTHER : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %5, %2 : tensor<4x8xf32>, tensor<4x8xf32>
}
)";
  struct Case {
    const char *name, *between, *other;
    bool fused;
  } cases[] = {{"right after", "", "%4", true},
               {"an op between", "%3 = tg.tanh %2 : tensor<4x8xf32>", "%3", false},
               {"a second reader", "", "%1", false}};
  for (const Case &c : cases) {
    std::string ir = base;
    ir.replace(ir.find("BETWEEN"), 7, c.between);
    ir.replace(ir.find("OTHER"), 5, c.other);
    std::string error;
    const std::string src = irPackageSource(ir, "split_rotary", error);
    ASSERT_TRUE(error.empty()) << c.name << ": " << error;
    EXPECT_EQ(src.find("_rotary(") == std::string::npos, c.fused) << c.name;
    EXPECT_EQ(src.find("rc0[") != std::string::npos, c.fused) << c.name << ":\n" << src;
  }
}

// The rotaries' cos/sin are read by the fused kernel while it writes every rotary's result: cos
// and sin computed for each rotary (dead after it) stay clear of the later results (planner), so
// the kernel still fuses; a cos that is itself a part of the split keeps the rotary's own kernel.
TEST(CudaCodegen, SplitRotaryKeepsCosSinClearOfItsResults) {
  const std::string ownCosSin = R"(
func.func @main(%x: tensor<4x16xf32>, %a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %cq = tg.cos %a : tensor<4x8xf32>
  %sq = tg.sin %a : tensor<4x8xf32>
  %ck = tg.cos %b : tensor<4x8xf32>
  %sk = tg.sin %b : tensor<4x8xf32>
  %0 = tg.exp %x : tensor<4x16xf32>
  %1, %2 = tg.split %0 {axis = 1 : i64} : tensor<4x16xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  %4 = tg.rotary %1, %cq, %sq : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %5 = tg.rotary %2, %ck, %sk : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %4, %5 : tensor<4x8xf32>, tensor<4x8xf32>
}
)";
  const std::string cosIsPart = R"(
func.func @main(%x: tensor<4x24xf32>, %s: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.exp %x : tensor<4x24xf32>
  %1, %2, %3 = tg.split %0 {axis = 1 : i64} : tensor<4x24xf32> -> tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  %4 = tg.rotary %1, %2, %s : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %5 = tg.add %4, %3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %5 : tensor<4x8xf32>
}
)";
  for (const auto &[ir, fused] : {std::pair{ownCosSin, true}, std::pair{cosIsPart, false}}) {
    std::string error;
    const std::string src = irPackageSource(ir, "split_rotary_cos", error);
    ASSERT_TRUE(error.empty()) << error;
    EXPECT_EQ(src.find("_rotary(") == std::string::npos, fused) << src;
  }
}

// When the QKV GEMM writes the split's equal parts itself (no split kernel), the rotaries after
// the split still share one kernel, which reads the rotated parts the GEMM wrote.
TEST(CudaCodegen, RotariesAfterGemmWrittenSplitShareOneKernel) {
  const std::string ir = R"(
func.func @main(%x: tensor<4x16xf16>, %w: tensor<48x16xf16>, %c: tensor<4x16xf16>, %s: tensor<4x16xf16>) -> (tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>) {
  %0 = tg.linear %x, %w : tensor<4x16xf16>, tensor<48x16xf16> -> tensor<4x48xf16>
  %1, %2, %3 = tg.split %0 {axis = 1 : i64} : tensor<4x48xf16> -> tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>
  %4 = tg.rotary %1, %c, %s : tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16> -> tensor<4x16xf16>
  %5 = tg.rotary %2, %c, %s : tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16> -> tensor<4x16xf16>
  return %4, %5, %3 : tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>
}
)";
  std::string error;
  const std::string src = irPackageSource(ir, "gemm_split_rotary", error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(src.find("_rotary("), std::string::npos) << src;
  const size_t at = src.find("_split("), end = src.find("\n}\n", at);
  ASSERT_NE(at, std::string::npos) << "no kernel applying the rotaries";
  const std::string kernel = src.substr(at, end - at);
  EXPECT_NE(kernel.find("rx0["), std::string::npos) << kernel; // reads the GEMM-written parts
  EXPECT_NE(kernel.find("rx1["), std::string::npos) << kernel;
  EXPECT_EQ(kernel.find("out2["), std::string::npos) << kernel; // v: written by the GEMM only
}

// The attention edge cases the GPU test runs (tests/unit/attention_edge_cases.h): NVRTC compiles
// them for sm_90 at f32 and f16 without a GPU.
TEST(CudaCodegen, AttentionEdgeCasesCompile) {
  for (const char *t : {"f32", "f16"})
    for (const attn_cases::AttentionEdgeCase &c : attn_cases::attentionEdgeCases()) {
      std::string error;
      irPackageSource(attn_cases::instantiate(c.ir, t), "attention_edge", error);
      EXPECT_TRUE(error.empty()) << c.name << " at " << t << ": " << error;
    }
}

TEST(CudaCodegen, KernelCacheHitsOnRecompile) {
  std::string dir = tempDir("cache");
  auto a = compileModel("gpt2_tiny", "cuda:sm_90", dir + "/a", dir + "/cache");
  ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
  EXPECT_FALSE(a->package.kernelCacheHit);
  auto b = compileModel("gpt2_tiny", "cuda:sm_90", dir + "/b", dir + "/cache");
  ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
  EXPECT_TRUE(b->package.kernelCacheHit);
  EXPECT_EQ(readFile(dir + "/a/kernels.cubin"), readFile(dir + "/b/kernels.cubin"));
  llvm::sys::fs::remove_directories(dir);
}

TEST(CudaCodegen, RefusesBadTargets) {
  std::string dir = tempDir("target");
  // sm_75 has the form but not the instructions the kernels use (bf16, sm_80's tensor cores).
  for (const char *t : {"cuda:gfx90a", "cuda:sm_", "cuda", "tpu", "cuda:sm_75", "cuda:sm_100"}) {
    auto r = compileModel("gpt2_tiny", t, dir + "/pkg");
    ASSERT_FALSE(bool(r)) << t;
    EXPECT_NE(llvm::toString(r.takeError()).find("is not supported"), std::string::npos) << t;
  }
  llvm::sys::fs::remove_directories(dir);
}

// The runtime validates a CUDA package before touching the GPU: a flipped byte in the cubin or a
// truncated weights file is refused by name; an intact package loads (GPU) or reports the missing
// driver/device (no GPU) — never a crash.
TEST(CudaRuntimeNoGpu, RefusesCorruptPackagesAndReportsMissingGpu) {
  std::string dir = tempDir("corrupt");
  std::string pkg = dir + "/pkg";
  auto r = compileModel("bert_tiny", "cuda:sm_90", pkg);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());

  Status st;
  auto s = Session::load(pkg, st);
  std::string why, arch;
  if (cuda::cudaDeviceAvailable(why, arch)) {
    EXPECT_TRUE(st.ok) << st.message;
  } else {
    EXPECT_FALSE(s);
    EXPECT_FALSE(st.message.empty());
    EXPECT_NE(st.message.find(pkg), std::string::npos) << st.message;
  }

  std::string cubin = readFile(pkg + "/kernels.cubin");
  cubin[cubin.size() / 2] ^= 0x5a;
  std::ofstream(pkg + "/kernels.cubin", std::ios::binary) << cubin;
  s = Session::load(pkg, st);
  EXPECT_FALSE(s);
  EXPECT_NE(st.message.find("kernels.cubin checksum mismatch"), std::string::npos) << st.message;

  std::string w = readFile(pkg + "/weights.bin");
  std::ofstream(pkg + "/weights.bin", std::ios::binary) << w.substr(0, w.size() / 2);
  s = Session::load(pkg, st);
  EXPECT_FALSE(s);
  EXPECT_NE(st.message.find("weights.bin"), std::string::npos) << st.message;
  llvm::sys::fs::remove_directories(dir);
}

/// Writes `p` as `pkg`'s plan and expects the load to be refused naming step `step` and `why`.
/// Compiles tests/data model `name` (or an .onnx path) for cuda:sm_90 at `precision` into `pkg`
/// and reads its plan.
::testing::AssertionResult compilePlan(const std::string &name, const std::string &precision,
                                       const std::string &pkg, plan::Plan &p) {
  auto r = compileModel(name, "cuda:sm_90", pkg, "", precision);
  if (!r)
    return ::testing::AssertionFailure() << llvm::toString(r.takeError());
  if (!p.ParseFromString(readFile(pkg + "/plan.pb")))
    return ::testing::AssertionFailure() << pkg << "/plan.pb does not parse";
  return ::testing::AssertionSuccess();
}

void expectPlanRefused(const std::string &pkg, const plan::Plan &p, int step,
                       const std::string &why) {
  std::string bytes;
  ASSERT_TRUE(plan::serializePlan(p, bytes));
  std::ofstream(pkg + "/plan.pb", std::ios::binary | std::ios::trunc) << bytes;
  Status st;
  EXPECT_FALSE(Session::load(pkg, st));
  EXPECT_NE(st.message.find("step " + std::to_string(step)), std::string::npos)
      << "expected '" << why << "': " << st.message;
  EXPECT_NE(st.message.find(why), std::string::npos) << st.message;
}

// A well-formed plan (checksum recomputed) whose activation step does not follow a GEMM that
// carries an activation is refused before any GPU work, naming the step.
TEST(CudaRuntimeNoGpu, RefusesSkipIfFusedWithoutActivationGemm) {
  std::string dir = tempDir("skipflag");
  std::string pkg = dir + "/pkg";
  plan::Plan p;
  ASSERT_TRUE(compilePlan("bert_tiny", "fp16", pkg, p));
  int flagged = -1;
  for (int i = 1; i < p.steps_size() && flagged < 0; ++i)
    if (p.steps(i).kind() == plan::Step::KERNEL && p.steps(i - 1).kind() == plan::Step::KERNEL)
      flagged = i;
  ASSERT_GE(flagged, 0);
  p.mutable_steps(flagged)->set_skip_if_gemm_fused(true);
  expectPlanRefused(pkg, p, flagged, "skip_if_gemm_fused needs a GEMM step with an activation");
  llvm::sys::fs::remove_directories(dir);
}

// A plan whose norm step (Step.norm) does not read exactly what the GEMM before it writes is
// refused before any GPU work, naming the step.
TEST(CudaRuntimeNoGpu, RefusesNormStepNotReadingItsGemm) {
  std::string dir = tempDir("normflag");
  std::string pkg = dir + "/pkg";
  plan::Plan p;
  ASSERT_TRUE(compilePlan("gpt2_tiny", "bf16", pkg, p));
  int norm = -1;
  for (int i = 1; i < p.steps_size() && norm < 0; ++i)
    if (p.steps(i).norm().kind() == plan::NormDesc::RMS_NORM ||
        p.steps(i).norm().kind() == plan::NormDesc::LAYER_NORM)
      norm = i;
  ASSERT_GE(norm, 0);
  EXPECT_TRUE(p.steps(norm).skip_if_gemm_fused());
  const plan::Plan good = p;
  auto refused = [&](const plan::Plan &bad, const std::string &why) {
    expectPlanRefused(pkg, bad, norm, why);
  };
  p.mutable_steps(norm)->mutable_args(0)->set_bytes(p.steps(norm).args(0).bytes() - 64);
  refused(p, "the norm must read exactly the GEMM's result");
  p = good;
  p.mutable_steps(norm)->mutable_norm()->set_kind(plan::NormDesc::RMS_NORM);
  p.mutable_steps(norm)->mutable_norm()->set_bias(true);
  refused(p, "an RMS norm has no bias");
  p = good;
  p.mutable_steps(norm)->mutable_norm()->set_cols(p.steps(norm).norm().cols() / 2);
  refused(p, "rows of n = cols");
  p = good;
  p.mutable_steps(norm)->set_skip_if_gemm_fused(false);
  refused(p, "a norm step needs skip_if_gemm_fused");
  // A scale must be a weight: the sum kernel reads it before the GEMM ends.
  p = good;
  {
    plan::Step *s = p.mutable_steps(norm);
    s->mutable_norm()->set_scale(true);
    const plan::BufferArg y = s->args(s->args_size() - 1);
    plan::BufferArg sc = s->args(0);
    sc.set_bytes(s->norm().cols() * 2);
    *s->mutable_args(s->args_size() - 1) = sc;
    *s->add_args() = y;
  }
  refused(p, "the norm's scale and bias need to be weights");
  p.mutable_steps(norm)->mutable_args(1)->set_kind(plan::WEIGHT);
  p.mutable_steps(norm)->mutable_args(1)->set_offset(0);
  EXPECT_EQ(plan::gemmNormProblem(p.steps(norm - 1), p.steps(norm)), "") << "a weight scale";
  p = good;
  p.mutable_steps(norm - 1)->mutable_gemm()->set_activation(plan::GemmDesc::GELU);
  refused(p, "without an activation");
  // A norm (or the skip flag) on the GEMM step itself: the runtime would take the GEMM's own
  // arguments for the norm's.
  p = good;
  *p.mutable_steps(norm - 1)->mutable_norm() = p.steps(norm).norm();
  expectPlanRefused(pkg, p, norm - 1, "skip_if_gemm_fused and norm are for kernel steps");
  llvm::sys::fs::remove_directories(dir);
}

// vit_tiny at fp16: its attentions (no mask) carry their shape for cuDNN (AttentionDesc). A plan
// whose attention shape disagrees with itself or with its arguments is refused before any GPU
// work, naming the step.
TEST(CudaRuntimeNoGpu, AttentionShapesAreChecked) {
  std::string dir = tempDir("attnstep");
  std::string pkg = dir + "/pkg";
  plan::Plan p;
  ASSERT_TRUE(compilePlan("vit_tiny", "fp16", pkg, p));
  int step = -1, gemm = -1;
  for (int i = 0; i < p.steps_size(); ++i) {
    if (p.steps(i).has_attention() && step < 0)
      step = i;
    if (p.steps(i).kind() == plan::Step::GEMM && gemm < 0)
      gemm = i;
  }
  ASSERT_GE(step, 0) << "no attention step carries its shape";
  ASSERT_GE(gemm, 0);
  const plan::AttentionDesc &a = p.steps(step).attention();
  EXPECT_EQ(a.dtype(), 10);
  EXPECT_FALSE(a.causal());
  EXPECT_EQ(a.heads() % a.kv_heads(), 0);
  const plan::Plan good = p;
  auto refused = [&](const std::function<void(plan::AttentionDesc &)> &spoil,
                     const std::string &why) {
    p = good;
    spoil(*p.mutable_steps(step)->mutable_attention());
    expectPlanRefused(pkg, p, step, why);
  };
  refused([](plan::AttentionDesc &d) { d.set_kv_heads(0); }, "dimension out of range");
  refused([](plan::AttentionDesc &d) { d.set_kv_heads(d.heads() + 1); }, "not a multiple");
  refused([](plan::AttentionDesc &d) { d.set_dtype(1); }, "is not f16 or bf16");
  refused([](plan::AttentionDesc &d) { d.set_q_arg(99); }, "q arg 99 out of range");
  refused([](plan::AttentionDesc &d) { d.set_seq_kv(d.seq_kv() * 2); }, "k needs");
  refused([](plan::AttentionDesc &d) { d.set_head_dim_v(d.head_dim_v() * 2); }, "v needs");
  refused([](plan::AttentionDesc &d) { d.set_seq_q(d.seq_q() * 2); }, "q needs");
  refused([](plan::AttentionDesc &d) { d.set_scale(std::nanf("")); }, "scale is not finite");
  p = good;
  *p.mutable_steps(gemm)->mutable_attention() = a;
  expectPlanRefused(pkg, p, gemm, "an attention shape is for kernel steps");
  llvm::sys::fs::remove_directories(dir);
}

// A convolution is a CONV step (cuDNN or its own kernel at run time); a ReLU and a residual add
// after it ride in its ConvDesc, and the epilogue kernel after it is marked to be skipped when
// cuDNN ran it. A CONV step whose description disagrees with itself or its arguments is refused
// before any GPU work, naming the step.
TEST(CudaRuntimeNoGpu, ConvStepsCarryTheirEpilogueAndAreChecked) {
  std::string dir = tempDir("convstep");
  std::string pkg = dir + "/pkg";
  plan::Plan p;
  ASSERT_TRUE(compilePlan("cnn_small", "fp16", pkg, p));
  int convs = 0, relu = -1, residual = -1, plain = -1;
  for (int i = 0; i < p.steps_size(); ++i) {
    const plan::Step &s = p.steps(i);
    if (s.kind() != plan::Step::CONV)
      continue;
    ++convs;
    const plan::ConvDesc &c = s.conv();
    EXPECT_EQ(c.dtype(), 10);
    EXPECT_EQ(c.w_size(), 4);
    const bool epilogue = c.activation() != plan::GemmDesc::NONE || c.residual();
    ASSERT_LT(i + 1, p.steps_size());
    // The epilogue step is skippable when cuDNN can apply it or the own kernel does (a lone
    // ReLU: ConvDesc.own_epilogue; never with a residual, which applied twice would differ).
    EXPECT_EQ(p.steps(i + 1).skip_if_gemm_fused(), epilogue || c.own_epilogue())
        << "step " << i + 1;
    if (c.residual())
      EXPECT_FALSE(c.own_epilogue()) << "step " << i;
    if (c.residual() && c.activation() == plan::GemmDesc::RELU)
      residual = i;
    else if (c.activation() == plan::GemmDesc::RELU && relu < 0)
      relu = i;
    else if (!epilogue)
      plain = i;
  }
  EXPECT_EQ(convs, 9); // cnn_small: 9 convolutions, 2 of them with an add + ReLU after them
  ASSERT_GE(relu, 0);
  ASSERT_GE(residual, 0);
  ASSERT_GE(plain, 0);
  // The stem: 3 -> 16 channels, 3x3 at stride 2 over 64x64, ReLU after it.
  // tgc-cuda-channels-last stores it channels last: x [1, 64, 64, 3], w [16, 3, 3, 3]
  // ([M, kh, kw, C]), y [1, 32, 32, 16].
  const plan::ConvDesc &stem = p.steps(relu).conv();
  EXPECT_TRUE(stem.nhwc());
  EXPECT_EQ(std::vector<int64_t>(stem.x().begin(), stem.x().end()),
            (std::vector<int64_t>{1, 64, 64, 3}));
  EXPECT_EQ(std::vector<int64_t>(stem.w().begin(), stem.w().end()),
            (std::vector<int64_t>{16, 3, 3, 3}));
  EXPECT_EQ(std::vector<int64_t>(stem.y().begin(), stem.y().end()),
            (std::vector<int64_t>{1, 32, 32, 16}));
  EXPECT_TRUE(stem.bias());
  EXPECT_TRUE(stem.own_epilogue()); // its ReLU is in the own kernel too
  const plan::Plan good = p;
  auto refused = [&](int step, const std::function<void(plan::ConvDesc &)> &spoil,
                     const std::string &why) {
    p = good;
    spoil(*p.mutable_steps(step)->mutable_conv());
    expectPlanRefused(pkg, p, step, why);
  };
  refused(relu, [](plan::ConvDesc &c) { c.set_y(2, 31); }, "does not follow from the input");
  // Read as NCHW, the channels-last shapes do not agree.
  refused(relu, [](plan::ConvDesc &c) { c.set_nhwc(false); }, "channels, groups and batch");
  refused(relu, [](plan::ConvDesc &c) { c.set_x_arg(99); }, "x arg 99 out of range");
  refused(relu, [](plan::ConvDesc &c) { c.set_activation(plan::GemmDesc::GELU); },
          "activation must be NONE or RELU");
  refused(relu, [](plan::ConvDesc &c) { c.set_group(2); }, "channels, groups and batch");
  refused(relu, [](plan::ConvDesc &c) { c.set_dtype(11); }, "dtype 11 is not supported");
  refused(relu, [](plan::ConvDesc &c) { c.clear_pads(); }, "do not agree in rank");
  refused(residual, [](plan::ConvDesc &c) { c.set_residual_arg(c.bias_arg()); },
          "residual needs");
  // An own kernel applying the epilogue needs the epilogue step after it to be skippable.
  p = good;
  p.mutable_steps(relu + 1)->set_skip_if_gemm_fused(false);
  expectPlanRefused(pkg, p, relu, "own_epilogue needs a kernel step marked skip_if_gemm_fused");
  // The skip flag after a CONV step that carries no epilogue.
  p = good;
  p.mutable_steps(relu)->mutable_conv()->set_activation(plan::GemmDesc::NONE);
  p.mutable_steps(relu)->mutable_conv()->set_own_epilogue(false);
  ASSERT_EQ(p.steps(relu + 1).kind(), plan::Step::KERNEL);
  ASSERT_TRUE(p.steps(relu + 1).skip_if_gemm_fused());
  expectPlanRefused(pkg, p, relu + 1, "skip_if_gemm_fused needs a GEMM step");
  // ...or on the CONV step itself.
  p = good;
  p.mutable_steps(relu)->set_skip_if_gemm_fused(true);
  expectPlanRefused(pkg, p, relu, "skip_if_gemm_fused and norm are for kernel steps");
  llvm::sys::fs::remove_directories(dir);
}

/// The text of kernel `symbol` (256 threads a block) in a package's kernels.cu; empty if absent.
std::string kernelBody(const std::string &src, const std::string &symbol) {
  const size_t at = src.find("void __launch_bounds__(256) " + symbol + "(");
  return at == std::string::npos ? std::string() : src.substr(at, src.find("\n}\n", at) - at);
}

// An epilogue cuDNN cannot apply (mobilenet_v3_tiny's hardswish after its depthwise
// convolutions) runs inside the own kernel: the CONV step says so and its epilogue step, which
// runs only after cuDNN, is marked skippable; the own kernel's source computes the hardswish.
TEST(CudaRuntimeNoGpu, ConvOwnKernelAppliesEpilogue) {
  std::string dir = tempDir("owne");
  std::string pkg = dir + "/pkg";
  plan::Plan p;
  ASSERT_TRUE(compilePlan("mobilenet_v3_tiny", "fp16", pkg, p));
  const std::string src = readFile(pkg + "/kernels.cu");
  int own = 0;
  for (int i = 0; i + 1 < p.steps_size(); ++i) {
    const plan::Step &s = p.steps(i);
    if (s.kind() != plan::Step::CONV || !s.conv().own_epilogue() ||
        s.conv().activation() != plan::GemmDesc::NONE)
      continue;
    ++own;
    EXPECT_TRUE(p.steps(i + 1).skip_if_gemm_fused()) << "step " << i + 1;
    // The own kernel: its body computes the epilogue (hardswish's min) before it stores.
    const std::string body = kernelBody(src, s.symbol());
    ASSERT_FALSE(body.empty()) << s.symbol();
    EXPECT_NE(body.find("gv"), std::string::npos) << s.symbol();
    EXPECT_NE(body.find("tg_min<float>"), std::string::npos) << body;
  }
  EXPECT_GE(own, 5);
  llvm::sys::fs::remove_directories(dir);
}

// MobileNetV3's squeeze-excitation: the channels-last pool is the column reduction (rows split
// over blocks, the last block of a tile combining them through its `_done` count), and each of
// its two 1x1 convolutions on the pooled vector is one kernel, the GEMV with its epilogue
// (codegen/cuda/CudaGemv.cpp): no GEMM step, the hardsigmoid's clip inside fc2's kernel.
TEST(CudaRuntimeNoGpu, SqueezeExcitationGemvsAreOneKernelEach) {
  std::string dir = tempDir("segv");
  std::string pkg = dir + "/pkg";
  plan::Plan p;
  ASSERT_TRUE(compilePlan("mobilenet_v3_tiny", "fp16", pkg, p));
  const std::string src = readFile(pkg + "/kernels.cu");
  int fc1 = 0, fc2 = 0, pools = 0;
  for (const plan::Step &s : p.steps()) {
    const bool first = s.label().find("/fc1/Conv") != std::string::npos;
    const bool second = s.label().find("/fc2/Conv") != std::string::npos;
    if (s.label().find("/avgpool/") != std::string::npos) {
      pools += kernelBody(src, s.symbol()).find(s.symbol() + "_done[tile] = 0") !=
               std::string::npos;
      continue;
    }
    if (!first && !second)
      continue;
    ASSERT_EQ(s.kind(), plan::Step::KERNEL) << s.label();
    const std::string b = kernelBody(src, s.symbol());
    EXPECT_NE(b.find("// GEMV: "), std::string::npos) << s.symbol();
    if (second)
      EXPECT_NE(b.find("tg_min<float>"), std::string::npos) << b;
    fc1 += first, fc2 += second;
  }
  EXPECT_GE(fc1, 3);
  EXPECT_EQ(fc1, fc2);
  EXPECT_GE(pools, 1);
  llvm::sys::fs::remove_directories(dir);
}

// A 1x1 convolution at f16 on a channels-first input (outside a channels-last region: no
// convolution with a window before it) is a matmul whose GEMM writes float (GemmDesc.out_f32) for
// the epilogue that adds the bias before the one rounding; its C range holds 4 bytes per
// element, and such a GEMM with a bias, a residual or an activation of its own is refused.
TEST(CudaRuntimeNoGpu, PointwiseConvGemmWritesFloat) {
  std::string dir = tempDir("f32c");
  std::string pkg = dir + "/pkg";
  // x [1, 16, 8, 8] -> 1x1 conv (24, bias) -> ReLU -> 1x1 conv (8, bias) -> y
  test::OnnxModel m;
  m.input("x", onnx::TensorProto::FLOAT, {1, 16, 8, 8});
  std::vector<float> w1(24 * 16), w2(8 * 24), b1(24), b2(8);
  for (size_t i = 0; i < w1.size(); ++i)
    w1[i] = 0.01f * (float)(i % 17) - 0.08f;
  for (size_t i = 0; i < w2.size(); ++i)
    w2[i] = 0.02f * (float)(i % 13) - 0.12f;
  for (size_t i = 0; i < b1.size(); ++i)
    b1[i] = 0.1f * (float)i;
  for (size_t i = 0; i < b2.size(); ++i)
    b2[i] = -0.05f * (float)i;
  m.initF32("w1", {24, 16, 1, 1}, w1);
  m.initF32("b1", {24}, b1);
  m.initF32("w2", {8, 24, 1, 1}, w2);
  m.initF32("b2", {8}, b2);
  m.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  m.node("Conv", {"r1", "w2", "b2"}, {"y"}, "conv2");
  m.output("y");
  const std::string model = dir + "/pointwise.onnx";
  {
    std::ofstream f(model, std::ios::binary);
    ASSERT_TRUE(m.model.SerializeToOstream(&f));
  }
  plan::Plan p;
  ASSERT_TRUE(compilePlan(model, "fp16", pkg, p));
  int f32c = -1, count = 0;
  for (int i = 0; i < p.steps_size(); ++i)
    if (p.steps(i).kind() == plan::Step::GEMM && p.steps(i).gemm().out_f32()) {
      ++count;
      const plan::GemmDesc &g = p.steps(i).gemm();
      EXPECT_EQ(g.dtype(), 10);
      EXPECT_EQ(p.steps(i).args(2).bytes(), g.m() * g.n() * g.batch() * 4) << "step " << i;
      ASSERT_LT(i + 1, p.steps_size());
      EXPECT_EQ(p.steps(i + 1).args(p.steps(i + 1).args_size() - 1).bytes(),
                p.steps(i).args(2).bytes()) << "the epilogue reads the GEMM's float result";
      if (f32c < 0)
        f32c = i;
    }
  EXPECT_EQ(count, 2);
  ASSERT_GE(f32c, 0);
  const plan::Plan good = p;
  p.mutable_steps(f32c)->mutable_gemm()->set_activation(plan::GemmDesc::RELU);
  expectPlanRefused(pkg, p, f32c, "an f32-result GEMM takes f16/bf16 operands");
  p = good;
  p.mutable_steps(f32c)->mutable_args(2)->set_bytes(p.steps(f32c).args(2).bytes() / 2);
  expectPlanRefused(pkg, p, f32c, "GEMM operand 2 needs");
  llvm::sys::fs::remove_directories(dir);
}

} // namespace
