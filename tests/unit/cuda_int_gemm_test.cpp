// cuda_int_gemm_test.cpp — the CUDA backend's GEMMs that no GEMM step takes (integers, f64), run
// as generated loop kernels (codegen/common/LoopGemmEmit): without a GPU, NVRTC compiles every
// model of IntGemmCases.h and f64/int64 matmuls (broadcast batches, a linear with a bias, a GEMM
// with an epilogue) for sm_90 and sm_80; on a GPU (skipped cleanly without one) each runs and
// matches its exact reference (f64 within 1e-12).
#include "codegen/cuda/CudaBackend.h"
#include "driver/Compile.h"
#include "runtime/Session.h"
#include "runtime/cuda/CudaSession.h"
#include "tests/unit/IntGemmCases.h"
#include "tests/unit/OnnxModelBuilder.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

using namespace tgc;
using test::IntGemmCase;

namespace {

/// An initializer of doubles on `m`.
void initF64(test::OnnxModel &m, const std::string &name, const std::vector<int64_t> &dims,
             const std::vector<double> &v) {
  auto *t = m.g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::DOUBLE);
  for (int64_t d : dims)
    t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char *>(v.data()), v.size() * 8));
}

std::vector<double> doubles(int64_t n, uint32_t seed) {
  std::vector<double> v;
  for (int64_t x : test::intValues(n, seed, -1000, 1000))
    v.push_back((double)x / 97.0);
  return v;
}

/// f64 MatMul with broadcast batches: A [2, 1, 3, 5] x B [3, 5, 4] -> [2, 3, 3, 4].
IntGemmCase f64BroadcastMatMul() {
  IntGemmCase c;
  c.name = "f64_matmul_broadcast";
  const int64_t M = 3, K = 5, N = 4;
  auto a = doubles(2 * M * K, 41), b = doubles(3 * K * N, 42);
  c.model.input("A", onnx::TensorProto::DOUBLE, {2, 1, M, K});
  c.model.input("B", onnx::TensorProto::DOUBLE, {3, K, N});
  HostTensor ta = HostTensor::zeros(DType::F64, {2, 1, M, K}),
             tb = HostTensor::zeros(DType::F64, {3, K, N});
  std::memcpy(ta.data.data(), a.data(), a.size() * 8);
  std::memcpy(tb.data.data(), b.data(), b.size() * 8);
  c.inputs = {ta, tb};
  c.model.node("MatMul", {"A", "B"}, {"Y"}, "mm64");
  c.model.output("Y");
  c.want = HostTensor::zeros(DType::F64, {2, 3, M, N});
  double *y = c.want.as<double>();
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t q = 0; q < 3; ++q)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k)
            s += a[(size_t)((p * M + i) * K + k)] * b[(size_t)((q * K + k) * N + j)];
          y[((p * 3 + q) * M + i) * N + j] = s;
        }
  return c;
}

/// f64 Gemm with a constant weight and bias (a tg.linear with its bias), then Tanh (an epilogue).
IntGemmCase f64LinearBiasTanh() {
  IntGemmCase c;
  c.name = "f64_linear_bias_tanh";
  const int64_t M = 7, K = 9, N = 6;
  auto x = doubles(M * K, 43), w = doubles(N * K, 44), b = doubles(N, 45);
  c.model.input("x", onnx::TensorProto::DOUBLE, {M, K});
  HostTensor tx = HostTensor::zeros(DType::F64, {M, K});
  std::memcpy(tx.data.data(), x.data(), x.size() * 8);
  c.inputs = {tx};
  initF64(c.model, "w", {N, K}, w);
  initF64(c.model, "b", {N}, b);
  test::attrInt(c.model.node("Gemm", {"x", "w", "b"}, {"g"}, "gemm64"), "transB", 1);
  c.model.node("Tanh", {"g"}, {"Y"}, "tanh64");
  c.model.output("Y");
  c.want = HostTensor::zeros(DType::F64, {M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = b[(size_t)j];
      for (int64_t k = 0; k < K; ++k)
        s += x[(size_t)(i * K + k)] * w[(size_t)(j * K + k)];
      c.want.as<double>()[i * N + j] = std::tanh(s);
    }
  return c;
}

std::vector<IntGemmCase> allCases() {
  std::vector<IntGemmCase> v = test::intGemmCases();
  v.push_back(f64BroadcastMatMul());
  v.push_back(f64LinearBiasTanh());
  return v;
}

std::string tempDir() {
  llvm::SmallString<128> p;
  if (llvm::sys::fs::createUniqueDirectory("tgc_cuda_int_gemm", p))
    return "/tmp";
  return p.str().str();
}

/// Compiles case `c` for `target` into `dir`: the package path, or "" with a test failure.
std::string compileFor(const IntGemmCase &c, const std::string &target, const std::string &dir) {
  const std::string model = dir + "/" + c.name + ".onnx";
  std::ofstream(model, std::ios::binary) << c.model.bytes();
  CompileOptions o;
  o.modelPath = model;
  o.outputPath = dir + "/" + c.name + "_" + target.substr(5) + ".tgpkg";
  o.target = llvm::cantFail(parseTarget(target));
  std::string log;
  llvm::raw_string_ostream os(log);
  auto r = compile(o, os);
  if (!r) {
    ADD_FAILURE() << c.name << " for " << target << ": " << llvm::toString(r.takeError());
    return "";
  }
  return o.outputPath;
}

TEST(CudaIntGemmCodegen, LoopKernelsCompileWithNvrtc) {
  const std::string dir = tempDir();
  for (const IntGemmCase &c : allCases())
    for (const char *target : {"cuda:sm_90", "cuda:sm_80"})
      EXPECT_FALSE(compileFor(c, target, dir).empty()) << c.name << " " << target;
  llvm::sys::fs::remove_directories(dir);
}

TEST(CudaIntGemmGpu, LoopKernelsMatchExactReferences) {
  std::string why, arch;
  if (!cuda::cudaDeviceAvailable(why, arch))
    GTEST_SKIP() << "no usable GPU: " << why;
  const std::string dir = tempDir();
  for (const IntGemmCase &c : allCases()) {
    SCOPED_TRACE(c.name);
    const std::string pkg = compileFor(c, "cuda:" + arch, dir);
    ASSERT_FALSE(pkg.empty());
    Status st;
    auto s = Session::load(pkg, st);
    ASSERT_TRUE(s) << st.message;
    std::vector<HostTensor> out;
    st = s->run(c.inputs, out);
    ASSERT_TRUE(st.ok) << st.message;
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dtype, c.want.dtype);
    EXPECT_EQ(out[0].shape, c.want.shape);
    if (c.want.dtype == DType::F64)
      EXPECT_LT(relativeL2(out[0], c.want), 1e-12);
    else
      EXPECT_EQ(integerMismatches(out[0], c.want), 0);
  }
  llvm::sys::fs::remove_directories(dir);
}

} // namespace
