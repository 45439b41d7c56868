// RUN: tgc-opt %s --split-input-file --tgc-cpu-weight-layout=gemm-tiles=false | FileCheck %s

// Without the AVX-512 tiles (x86-64-v2/v3 targets) each strip is a cblas_sgemm call of its
// own: a weight goes into strips only where every GEMM reading it has 8 rows or more.
// CHECK-LABEL: func.func @eight_rows
func.func @eight_rows(%x: tensor<2x4x3xf32>) -> tensor<2x4x32xf32> {
  %w = tg.constant dense<1.0> : tensor<3x32xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<1.000000e+00> : tensor<1x3x32xf32>
  // CHECK: tg.matmul %{{.+}}, %[[W]] {weight_block = 32 : i64}
  %0 = tg.matmul %x, %w : tensor<2x4x3xf32>, tensor<3x32xf32> -> tensor<2x4x32xf32>
  return %0 : tensor<2x4x32xf32>
}

// -----

// Negative: a one-row step (a recurrent cell's), and a weight one of whose readers has 7 rows,
// keep their [K, N] weights.
// CHECK-LABEL: func.func @few_rows
func.func @few_rows(%h: tensor<1x3xf32>, %x: tensor<8x3xf32>, %y: tensor<7x3xf32>) -> (tensor<1x32xf32>, tensor<8x32xf32>, tensor<7x32xf32>) {
  %w = tg.constant dense<1.0> : tensor<3x32xf32>
  %v = tg.constant dense<2.0> : tensor<3x32xf32>
  // CHECK-NOT: weight_block
  %0 = tg.matmul %h, %w : tensor<1x3xf32>, tensor<3x32xf32> -> tensor<1x32xf32>
  %1 = tg.matmul %x, %v : tensor<8x3xf32>, tensor<3x32xf32> -> tensor<8x32xf32>
  %2 = tg.matmul %y, %v : tensor<7x3xf32>, tensor<3x32xf32> -> tensor<7x32xf32>
  return %0, %1, %2 : tensor<1x32xf32>, tensor<8x32xf32>, tensor<7x32xf32>
}
