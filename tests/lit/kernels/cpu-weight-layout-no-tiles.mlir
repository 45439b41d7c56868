// RUN: tgc-opt %s --tgc-cpu-weight-layout=gemm-tiles=false | FileCheck %s

// Without the AVX-512 tiles (x86-64-v2/v3 targets) each strip would be a cblas_sgemm call of its
// own: matmul weights keep [K, N], whatever the rows (a choice by rows would differ between a
// decode package's prefill buckets and its one-row step, storing a weight twice). Linears still
// become matmuls by their transposes, and convolutions are still blocked.
// CHECK-LABEL: func.func @no_strips
func.func @no_strips(%h: tensor<1x3xf32>, %x: tensor<64x3xf32>, %img: tensor<1x2x5x5xf32>) -> (tensor<1x32xf32>, tensor<64x32xf32>, tensor<1x16x3x3xf32>) {
  %w = tg.constant dense<1.0> : tensor<3x32xf32>
  %v = tg.constant dense<2.0> : tensor<32x3xf32>
  %cw = tg.constant dense<3.0> : tensor<16x2x3x3xf32>
  // CHECK: tg.constant dense<2.000000e+00> : tensor<3x32xf32>
  // CHECK-NOT: weight_block = 32
  // CHECK: tg.matmul
  // CHECK-NOT: weight_block = 32
  // CHECK: tg.matmul
  // CHECK-NOT: weight_block = 32
  // CHECK: tg.conv {{.*}}weight_block = 16
  %0 = tg.matmul %h, %w : tensor<1x3xf32>, tensor<3x32xf32> -> tensor<1x32xf32>
  %1 = tg.linear %x, %v : tensor<64x3xf32>, tensor<32x3xf32> -> tensor<64x32xf32>
  %2 = tg.conv %img, %cw {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x2x5x5xf32>, tensor<16x2x3x3xf32> -> tensor<1x16x3x3xf32>
  return %0, %1, %2 : tensor<1x32xf32>, tensor<64x32xf32>, tensor<1x16x3x3xf32>
}
