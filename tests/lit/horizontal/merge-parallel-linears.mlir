// RUN: tgc-opt %s --split-input-file --tgc-merge-parallel-linears | FileCheck %s

// Q, K and V projections of one input become one linear and a split.
// CHECK-LABEL: func.func @merge_qkv
// CHECK-SAME: (%[[X:.+]]: tensor<4x2xf32>)
func.func @merge_qkv(%x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  // CHECK-DAG: %[[W:.+]] = tg.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<4x2xf32>
  // CHECK-DAG: %[[B:.+]] = tg.constant dense<[1.000000e+00, 2.000000e+00, 0.000000e+00, 3.000000e+00]> : tensor<4xf32>
  // CHECK: %[[L:.+]] = tg.linear %[[X]], %[[W]], %[[B]] : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32> -> tensor<4x4xf32>
  // CHECK: %[[S:.+]]:3 = tg.split %[[L]] {axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x1xf32>, tensor<4x1xf32>
  // CHECK-NOT: tg.linear
  // CHECK: return %[[S]]#0, %[[S]]#1, %[[S]]#2
  %wq = tg.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %bq = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %wk = tg.constant dense<[[5.0, 6.0]]> : tensor<1x2xf32>
  %wv = tg.constant dense<[[7.0, 8.0]]> : tensor<1x2xf32>
  %bv = tg.constant dense<[3.0]> : tensor<1xf32>
  %q = tg.linear %x, %wq, %bq : tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %k = tg.linear %x, %wk : tensor<4x2xf32>, tensor<1x2xf32> -> tensor<4x1xf32>
  %v = tg.linear %x, %wv, %bv : tensor<4x2xf32>, tensor<1x2xf32>, tensor<1xf32> -> tensor<4x1xf32>
  return %q, %k, %v : tensor<4x2xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// Negative: a linear with a runtime weight does not join; one mergeable linear is left alone.
// CHECK-LABEL: func.func @no_fuse_runtime_weight
func.func @no_fuse_runtime_weight(%x: tensor<4x2xf32>, %w: tensor<3x2xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  // CHECK: tg.linear
  // CHECK: tg.linear
  // CHECK-NOT: tg.split
  %c = tg.constant dense<1.0> : tensor<3x2xf32>
  %0 = tg.linear %x, %c : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  %1 = tg.linear %x, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Negative: linears on different inputs are not parallel.
// CHECK-LABEL: func.func @no_fuse_different_inputs
func.func @no_fuse_different_inputs(%x: tensor<4x2xf32>, %y: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  // CHECK: tg.linear
  // CHECK: tg.linear
  // CHECK-NOT: tg.split
  %c = tg.constant dense<1.0> : tensor<3x2xf32>
  %d = tg.constant dense<2.0> : tensor<3x2xf32>
  %0 = tg.linear %x, %c : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  %1 = tg.linear %y, %d : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
}
