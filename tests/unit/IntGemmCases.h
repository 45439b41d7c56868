// IntGemmCases.h — the integer GEMM models of import_int_gemm_test (CPU) and cuda_int_gemm_test
// (NVRTC, and a GPU when there is one): MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv
// as small ONNX models with their inputs and the expected outputs, computed here exactly (int64
// sums) and, for the requantization, in float in ONNX Runtime's order
// (round_half_even(float(acc) * (a_scale * b_scale / y_scale)) + y_zero_point, saturated).
#ifndef TGC_TESTS_UNIT_INTGEMMCASES_H
#define TGC_TESTS_UNIT_INTGEMMCASES_H

#include "runtime/Tensor.h"
#include "tests/unit/OnnxModelBuilder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace tgc::test {

/// One model, its inputs and its one output's expected value (exact).
struct IntGemmCase {
  std::string name;
  OnnxModel model{21};
  std::vector<HostTensor> inputs;
  HostTensor want;
};

/// Deterministic pseudo-random integers in [lo, hi].
inline std::vector<int64_t> intValues(int64_t n, uint32_t seed, int64_t lo, int64_t hi) {
  std::vector<int64_t> v((size_t)n);
  uint32_t s = seed * 2654435761u + 11u;
  for (int64_t &x : v) {
    s = s * 1664525u + 1013904223u;
    x = lo + (int64_t)((s >> 8) % (uint32_t)(hi - lo + 1));
  }
  return v;
}

inline HostTensor tensorOf(DType t, const std::vector<int64_t> &shape,
                           const std::vector<int64_t> &v) {
  HostTensor h = HostTensor::zeros(t, shape);
  for (size_t i = 0; i < v.size(); ++i)
    h.set((int64_t)i, (double)v[i]);
  return h;
}

inline HostTensor floatsOf(DType t, const std::vector<int64_t> &shape,
                           const std::vector<float> &v) {
  HostTensor h = HostTensor::zeros(t, shape);
  for (size_t i = 0; i < v.size(); ++i)
    h.set((int64_t)i, (double)v[i]);
  return h;
}

/// Adds graph input `name` of `t`/`shape` holding `v` to the case.
inline void addInput(IntGemmCase &c, const std::string &name, DType t,
                     const std::vector<int64_t> &shape, const std::vector<int64_t> &v) {
  c.model.input(name, (int)t, shape);
  c.inputs.push_back(tensorOf(t, shape, v));
}
inline void addFloatInput(IntGemmCase &c, const std::string &name, DType t,
                          const std::vector<int64_t> &shape, const std::vector<float> &v) {
  c.model.input(name, (int)t, shape);
  c.inputs.push_back(floatsOf(t, shape, v));
}

/// Adds initializer `name` of `t`/`shape` holding `v` (converted to t) to the case's model.
inline void addInitializer(IntGemmCase &c, const std::string &name, DType t,
                           const std::vector<int64_t> &shape, const std::vector<double> &v) {
  HostTensor h = HostTensor::zeros(t, shape);
  for (size_t i = 0; i < v.size(); ++i)
    h.set((int64_t)i, v[i]);
  auto *p = c.model.g->add_initializer();
  p->set_name(name);
  p->set_data_type((int)t);
  for (int64_t d : shape)
    p->add_dims(d);
  p->set_raw_data(std::string(h.data.begin(), h.data.end()));
}

/// Exact batched matmul of A [B, M, K] and B [B or 1, K, N] (values already minus zero points).
inline std::vector<int64_t> exactMatMul(const std::vector<int64_t> &a,
                                        const std::vector<int64_t> &b, int64_t batches,
                                        bool bBatched, int64_t M, int64_t K, int64_t N) {
  std::vector<int64_t> y((size_t)(batches * M * N), 0);
  for (int64_t q = 0; q < batches; ++q)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a[(size_t)((q * M + i) * K + k)] * b[(size_t)(((bBatched ? q : 0) * K + k) * N + j)];
        y[(size_t)((q * M + i) * N + j)] = s;
      }
  return y;
}

/// saturate(round_half_even(float(acc) * scale) + zp) into [lo, hi] (ONNX Runtime's order).
inline int64_t requant(int64_t acc, float scale, int64_t zp, int64_t lo, int64_t hi) {
  const float v = std::nearbyint((float)acc * scale) + (float)zp;
  return (int64_t)std::min<float>(std::max<float>(v, (float)lo), (float)hi);
}

/// MatMulInteger, uint8 x uint8, per-tensor zero points ([] and [1]), K = 4096 with values near
/// 250 after the zero points: the sums reach 2.6e8, beyond float's exact integers, and M, N are
/// no multiple of any tile.
inline IntGemmCase matMulIntegerLargeK() {
  IntGemmCase c;
  c.name = "mmi_u8_k4096";
  const int64_t M = 37, K = 4096, N = 19;
  auto a = intValues(M * K, 1, 200, 255), b = intValues(K * N, 2, 0, 7);
  addInput(c, "A", DType::U8, {M, K}, a);
  addInput(c, "B", DType::U8, {K, N}, b);
  addInput(c, "az", DType::U8, {}, {3});
  addInput(c, "bz", DType::U8, {1}, {251});
  c.model.node("MatMulInteger", {"A", "B", "az", "bz"}, {"Y"}, "mm");
  c.model.output("Y");
  for (auto &x : a)
    x -= 3;
  for (auto &x : b)
    x -= 251;
  c.want = tensorOf(DType::I32, {M, N}, exactMatMul(a, b, 1, false, M, K, N));
  return c;
}

/// MatMulInteger, int8 x int8 over the full range, A batched [2, 5, 33] against B [33, 7]: a
/// zero point per row of A ([5]) and per column of B ([7]).
inline IntGemmCase matMulIntegerPerRowColumn() {
  IntGemmCase c;
  c.name = "mmi_i8_row_col";
  const int64_t Bt = 2, M = 5, K = 33, N = 7;
  auto a = intValues(Bt * M * K, 3, -128, 127), b = intValues(K * N, 4, -128, 127);
  auto az = intValues(M, 5, -128, 127), bz = intValues(N, 6, -128, 127);
  addInput(c, "A", DType::I8, {Bt, M, K}, a);
  addInput(c, "B", DType::I8, {K, N}, b);
  addInput(c, "az", DType::I8, {M}, az);
  addInput(c, "bz", DType::I8, {N}, bz);
  c.model.node("MatMulInteger", {"A", "B", "az", "bz"}, {"Y"}, "mm");
  c.model.output("Y");
  for (int64_t i = 0; i < Bt * M * K; ++i)
    a[(size_t)i] -= az[(size_t)(i / K % M)];
  for (int64_t i = 0; i < K * N; ++i)
    b[(size_t)i] -= bz[(size_t)(i % N)];
  c.want = tensorOf(DType::I32, {Bt, M, N}, exactMatMul(a, b, Bt, false, M, K, N));
  return c;
}

/// MatMulInteger, uint8 A x int8 B, both batched [3, ...], zero points in ONNX's N-D form
/// ([3, M, 1] per row of A, [3, 1, N] per column of B).
inline IntGemmCase matMulIntegerNdZeroPoints() {
  IntGemmCase c;
  c.name = "mmi_u8_i8_nd";
  const int64_t Bt = 3, M = 4, K = 9, N = 6;
  auto a = intValues(Bt * M * K, 7, 0, 255), b = intValues(Bt * K * N, 8, -128, 127);
  auto az = intValues(Bt * M, 9, 0, 255), bz = intValues(Bt * N, 10, -128, 127);
  addInput(c, "A", DType::U8, {Bt, M, K}, a);
  addInput(c, "B", DType::I8, {Bt, K, N}, b);
  addInput(c, "az", DType::U8, {Bt, M, 1}, az);
  addInput(c, "bz", DType::I8, {Bt, 1, N}, bz);
  c.model.node("MatMulInteger", {"A", "B", "az", "bz"}, {"Y"}, "mm");
  c.model.output("Y");
  for (int64_t i = 0; i < Bt * M * K; ++i)
    a[(size_t)i] -= az[(size_t)(i / K)];
  for (int64_t i = 0; i < Bt * K * N; ++i)
    b[(size_t)i] -= bz[(size_t)(i / (K * N) * N + i % N)];
  c.want = tensorOf(DType::I32, {Bt, M, N}, exactMatMul(a, b, Bt, true, M, K, N));
  return c;
}

/// Exact 2-D convolution of x [N, C, H, W] by w [M, C, kh, kw] (values minus zero points),
/// strides and pads (top, left, bottom, right), plus bias[m] (empty: none).
inline std::vector<int64_t> exactConv(const std::vector<int64_t> &x, const std::vector<int64_t> &w,
                                      const std::vector<int64_t> &bias, int64_t N, int64_t C,
                                      int64_t H, int64_t W, int64_t M, int64_t kh, int64_t kw,
                                      int64_t sh, int64_t sw, const std::vector<int64_t> &pads,
                                      int64_t &OH, int64_t &OW) {
  OH = (H + pads[0] + pads[2] - kh) / sh + 1;
  OW = (W + pads[1] + pads[3] - kw) / sw + 1;
  std::vector<int64_t> y((size_t)(N * M * OH * OW), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t s = bias.empty() ? 0 : bias[(size_t)m];
          for (int64_t ci = 0; ci < C; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t ih = oh * sh - pads[0] + i, iw = ow * sw - pads[1] + j;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                  continue; // padding: the zero point, 0 after subtracting it
                s += x[(size_t)(((n * C + ci) * H + ih) * W + iw)] *
                     w[(size_t)(((m * C + ci) * kh + i) * kw + j)];
              }
          y[(size_t)(((n * M + m) * OH + oh) * OW + ow)] = s;
        }
  return y;
}

/// ConvInteger, uint8, asymmetric pads and strides, x's zero point per tensor and w's per output
/// channel ([4]).
inline IntGemmCase convIntegerPerChannel() {
  IntGemmCase c;
  c.name = "convint_per_channel";
  const int64_t N = 2, C = 3, H = 7, W = 6, M = 4, kh = 3, kw = 2;
  auto x = intValues(N * C * H * W, 11, 0, 255), w = intValues(M * C * kh * kw, 12, 0, 255);
  auto wz = intValues(M, 13, 0, 255);
  addInput(c, "x", DType::U8, {N, C, H, W}, x);
  addInput(c, "w", DType::U8, {M, C, kh, kw}, w);
  addInput(c, "xz", DType::U8, {}, {131});
  addInput(c, "wz", DType::U8, {M}, wz);
  auto *n = c.model.node("ConvInteger", {"x", "w", "xz", "wz"}, {"Y"}, "conv");
  attrInts(n, "pads", {1, 0, 2, 1});
  attrInts(n, "strides", {2, 1});
  c.model.output("Y");
  for (auto &v : x)
    v -= 131;
  for (int64_t i = 0; i < M * C * kh * kw; ++i)
    w[(size_t)i] -= wz[(size_t)(i / (C * kh * kw))];
  int64_t OH = 0, OW = 0;
  auto y = exactConv(x, w, {}, N, C, H, W, M, kh, kw, 2, 1, {1, 0, 2, 1}, OH, OW);
  c.want = tensorOf(DType::I32, {N, M, OH, OW}, y);
  return c;
}

/// QLinearMatMul whose products land on rounding ties: a is the identity, so acc = b, and
/// a_scale 0.5 gives acc · 0.5 = ±0.5, 1.5, 2.5, 63.5 (to even: 0, 2, 2, 64); y's zero point
/// then pushes some past the type's range (saturated). `isSigned`: int8 throughout, else uint8
/// (b stored with zero point 128).
inline IntGemmCase qlinearMatMulTies(bool isSigned) {
  IntGemmCase c;
  c.name = isSigned ? "qlmm_ties_i8" : "qlmm_ties_u8";
  const DType q = isSigned ? DType::I8 : DType::U8;
  const int64_t bz = isSigned ? 0 : 128, yz = isSigned ? 100 : 250;
  std::vector<int64_t> acc = {1, 3, 5, -1, -3, -5, 127, -128};
  std::vector<int64_t> b;
  for (int64_t v : acc)
    b.push_back(v + bz);
  addInput(c, "a", q, {2, 2}, {1, 0, 0, 1});
  addFloatInput(c, "as", DType::F32, {}, {0.5f});
  addInput(c, "az", q, {}, {0});
  addInput(c, "b", q, {2, 4}, b);
  addFloatInput(c, "bs", DType::F32, {}, {1.0f});
  addInput(c, "bz", q, {}, {bz});
  addFloatInput(c, "ys", DType::F32, {}, {1.0f});
  addInput(c, "yz", q, {}, {yz});
  c.model.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "qmm");
  c.model.output("y");
  // round(acc/2) to even: 0, 2, 2, -0, -2, -2, 64, -64.
  const std::vector<int64_t> rounded = {0, 2, 2, 0, -2, -2, 64, -64};
  std::vector<int64_t> y;
  for (int64_t r : rounded)
    y.push_back(std::clamp<int64_t>(r + yz, isSigned ? -128 : 0, isSigned ? 127 : 255));
  c.want = tensorOf(q, {2, 4}, y);
  return c;
}

/// QLinearMatMul, uint8 a x int8 b, 3-D a against 2-D b, a's scale and zero point per row ([M]),
/// b's per column ([N]), y int8 per tensor.
inline IntGemmCase qlinearMatMulPerRowColumn() {
  IntGemmCase c;
  c.name = "qlmm_row_col";
  const int64_t Bt = 2, M = 3, K = 17, N = 5;
  auto a = intValues(Bt * M * K, 21, 0, 255), b = intValues(K * N, 22, -128, 127);
  auto az = intValues(M, 23, 100, 150), bz = intValues(N, 24, -10, 10);
  const std::vector<float> as = {0.02f, 0.013f, 0.031f},
                           bs = {0.011f, 0.007f, 0.019f, 0.003f, 0.023f};
  const float ys = 0.37f;
  const int64_t yz = -7;
  addInput(c, "a", DType::U8, {Bt, M, K}, a);
  addFloatInput(c, "as", DType::F32, {M}, as);
  addInput(c, "az", DType::U8, {M}, az);
  addInput(c, "b", DType::I8, {K, N}, b);
  addFloatInput(c, "bs", DType::F32, {N}, bs);
  addInput(c, "bz", DType::I8, {N}, bz);
  addFloatInput(c, "ys", DType::F32, {}, {ys});
  addInput(c, "yz", DType::I8, {}, {yz});
  c.model.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "qmm");
  c.model.output("y");
  for (int64_t i = 0; i < Bt * M * K; ++i)
    a[(size_t)i] -= az[(size_t)(i / K % M)];
  for (int64_t i = 0; i < K * N; ++i)
    b[(size_t)i] -= bz[(size_t)(i % N)];
  auto acc = exactMatMul(a, b, Bt, false, M, K, N);
  std::vector<int64_t> y(acc.size());
  for (size_t e = 0; e < acc.size(); ++e) {
    const int64_t i = (int64_t)e / N % M, j = (int64_t)e % N;
    const float s = as[(size_t)i] * bs[(size_t)j] / ys;
    y[e] = requant(acc[e], s, yz, -128, 127);
  }
  c.want = tensorOf(DType::I8, {Bt, M, N}, y);
  return c;
}

/// QLinearConv, uint8 x with int8 w, w's scale and zero point per output channel, an int32 bias,
/// uint8 y; pads 1 all round.
inline IntGemmCase qlinearConvPerChannel() {
  IntGemmCase c;
  c.name = "qlconv_per_channel";
  const int64_t N = 1, C = 2, H = 5, W = 6, M = 3, k = 3;
  auto x = intValues(N * C * H * W, 31, 0, 255), w = intValues(M * C * k * k, 32, -128, 127);
  auto wz = intValues(M, 33, -5, 5), bias = intValues(M, 34, -3000, 3000);
  const std::vector<float> ws = {0.004f, 0.0021f, 0.0093f};
  const float xs = 0.05f, ys = 0.7f;
  const int64_t xz = 120, yz = 128;
  addInput(c, "x", DType::U8, {N, C, H, W}, x);
  addFloatInput(c, "xs", DType::F32, {}, {xs});
  addInput(c, "xz", DType::U8, {}, {xz});
  addInput(c, "w", DType::I8, {M, C, k, k}, w);
  addFloatInput(c, "ws", DType::F32, {M}, ws);
  addInput(c, "wz", DType::I8, {M}, wz);
  addFloatInput(c, "ys", DType::F32, {}, {ys});
  addInput(c, "yz", DType::U8, {}, {yz});
  addInput(c, "B", DType::I32, {M}, bias);
  auto *n = c.model.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"}, {"y"},
                         "qconv");
  attrInts(n, "pads", {1, 1, 1, 1});
  c.model.output("y");
  for (auto &v : x)
    v -= xz;
  for (int64_t i = 0; i < M * C * k * k; ++i)
    w[(size_t)i] -= wz[(size_t)(i / (C * k * k))];
  int64_t OH = 0, OW = 0;
  auto acc = exactConv(x, w, bias, N, C, H, W, M, k, k, 1, 1, {1, 1, 1, 1}, OH, OW);
  std::vector<int64_t> y(acc.size());
  for (size_t e = 0; e < acc.size(); ++e) {
    const int64_t m = (int64_t)e / (OH * OW) % M;
    y[e] = requant(acc[e], xs * ws[(size_t)m] / ys, yz, 0, 255);
  }
  c.want = tensorOf(DType::U8, {N, M, OH, OW}, y);
  return c;
}

/// QLinearMatMul with b, its per-column scale and zero point and y's as initializers (as in
/// real quantized models): b minus its zero point folds to an int32 constant at import, and the
/// per-column scale product to a constant array the requantization epilogue reads.
inline IntGemmCase qlinearMatMulConstantB() {
  IntGemmCase c;
  c.name = "qlmm_constant_b";
  const int64_t Bt = 3, M = 5, K = 64, N = 33;
  auto a = intValues(Bt * M * K, 51, 0, 255), b = intValues(K * N, 52, 0, 255);
  auto bz = intValues(N, 53, 100, 150);
  std::vector<float> bs((size_t)N);
  for (int64_t j = 0; j < N; ++j)
    bs[(size_t)j] = 0.001f + 0.0007f * (float)j;
  const float as = 0.03f, ys = 0.5f;
  const int64_t az = 120, yz = 3;
  addInput(c, "a", DType::U8, {Bt, M, K}, a);
  addInitializer(c, "as", DType::F32, {}, {as});
  addInitializer(c, "az", DType::U8, {}, {(double)az});
  addInitializer(c, "b", DType::U8, {K, N}, std::vector<double>(b.begin(), b.end()));
  addInitializer(c, "bs", DType::F32, {N}, std::vector<double>(bs.begin(), bs.end()));
  addInitializer(c, "bz", DType::U8, {N}, std::vector<double>(bz.begin(), bz.end()));
  addInitializer(c, "ys", DType::F32, {}, {ys});
  addInitializer(c, "yz", DType::U8, {}, {(double)yz});
  c.model.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "qmm");
  c.model.output("y");
  for (auto &v : a)
    v -= az;
  for (int64_t i = 0; i < K * N; ++i)
    b[(size_t)i] -= bz[(size_t)(i % N)];
  auto acc = exactMatMul(a, b, Bt, false, M, K, N);
  std::vector<int64_t> y(acc.size());
  for (size_t e = 0; e < acc.size(); ++e)
    y[e] = requant(acc[e], as * bs[(size_t)(e % N)] / ys, yz, 0, 255);
  c.want = tensorOf(DType::U8, {Bt, M, N}, y);
  return c;
}

/// int64 MatMul whose products and sums wrap modulo 2^64 (values up to 2^41 times 2^33);
/// `constant`: A and B are initializers, so the importer folds the product (the reference
/// interpreter computes it; no graph input).
inline IntGemmCase i64WrappingMatMul(bool constant) {
  IntGemmCase c;
  c.name = constant ? "i64_matmul_wrap_folded" : "i64_matmul_wrap";
  const int64_t M = 2, K = 3, N = 2;
  const std::vector<int64_t> a = {int64_t(1) << 40, -5, 7, 3, int64_t(1) << 41, -1};
  const std::vector<int64_t> b = {int64_t(1) << 30, 2, -3, 5, 11, int64_t(1) << 33};
  auto add = [&](const std::string &name, const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &v) {
    if (!constant) {
      c.model.input(name, (int)DType::I64, shape);
      HostTensor h = HostTensor::zeros(DType::I64, shape);
      std::memcpy(h.data.data(), v.data(), v.size() * 8);
      c.inputs.push_back(h);
      return;
    }
    auto *t = c.model.g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : shape)
      t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char *>(v.data()), v.size() * 8));
  };
  add("A", {M, K}, a);
  add("B", {K, N}, b);
  c.model.node("MatMul", {"A", "B"}, {"Y"}, "mm_i64");
  c.model.output("Y");
  c.want = HostTensor::zeros(DType::I64, {M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      uint64_t s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += (uint64_t)a[(size_t)(i * K + k)] * (uint64_t)b[(size_t)(k * N + j)];
      std::memcpy(&c.want.as<int64_t>()[i * N + j], &s, 8);
    }
  return c;
}

/// Every case above.
inline std::vector<IntGemmCase> intGemmCases() {
  std::vector<IntGemmCase> v;
  v.push_back(matMulIntegerLargeK());
  v.push_back(matMulIntegerPerRowColumn());
  v.push_back(matMulIntegerNdZeroPoints());
  v.push_back(convIntegerPerChannel());
  v.push_back(qlinearMatMulTies(true));
  v.push_back(qlinearMatMulTies(false));
  v.push_back(qlinearMatMulPerRowColumn());
  v.push_back(qlinearConvPerChannel());
  v.push_back(qlinearMatMulConstantB());
  v.push_back(i64WrappingMatMul(false));
  return v;
}

} // namespace tgc::test

#endif // TGC_TESTS_UNIT_INTGEMMCASES_H
