// RUN: tgc-opt %s --split-input-file --tgc-cpu-weight-layout | FileCheck %s

// A linear by a constant [N, K] weight becomes a matmul by its [K, N] transpose, written at
// compile time, and the bias an add.
// CHECK-LABEL: func.func @linear_to_matmul
func.func @linear_to_matmul(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %w = tg.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %b = tg.constant dense<[0.5, 1.5, 2.5]> : tensor<3xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
  // CHECK: %[[Y:.+]] = tg.matmul %{{.+}}, %[[W]] : tensor<4x2xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  // CHECK: %[[Z:.+]] = tg.add %[[Y]], %{{.+}} : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  // CHECK: return %[[Z]]
  // CHECK-NOT: tg.linear
  %0 = tg.linear %x, %w, %b : tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A weight read by several linears (a recurrent weight, one per step) gets one transpose that
// every one of them multiplies by.
// CHECK-LABEL: func.func @shared_by_linears
func.func @shared_by_linears(%x: tensor<4x2xf32>, %h: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %w = tg.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
  // CHECK-NOT: tg.constant
  // CHECK: tg.matmul %{{.+}}, %[[W]]
  // CHECK: tg.matmul %{{.+}}, %[[W]]
  // CHECK-NOT: tg.linear
  %0 = tg.linear %x, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  %1 = tg.linear %h, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Negative: a weight another op reads (a tied embedding) stays one [N, K] constant.
// CHECK-LABEL: func.func @shared_weight
func.func @shared_weight(%x: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<3x2xf32>) {
  %w = tg.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %0 = tg.linear %x, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  %1 = tg.neg %w : tensor<3x2xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<3x2xf32>
}

// -----

// Negative: a weight computed at run time (not a constant) is left alone.
// CHECK-LABEL: func.func @runtime_weight
func.func @runtime_weight(%x: tensor<4x2xf32>, %w: tensor<3x2xf32>) -> tensor<4x3xf32> {
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %0 = tg.linear %x, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Negative: an f16 weight stays [N, K] (the f16 GEMM copies B to float anyway).
// CHECK-LABEL: func.func @f16_weight
func.func @f16_weight(%x: tensor<4x2xf16>) -> tensor<4x3xf16> {
  %w = tg.constant dense<1.0> : tensor<3x2xf16>
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %0 = tg.linear %x, %w : tensor<4x2xf16>, tensor<3x2xf16> -> tensor<4x3xf16>
  return %0 : tensor<4x3xf16>
}
