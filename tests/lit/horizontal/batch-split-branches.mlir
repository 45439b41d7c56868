// RUN: tgc-opt %s --split-input-file --tgc-batch-split-branches | FileCheck %s

// Equal chunks each into a same-shaped linear become one batched matmul.
// CHECK-LABEL: func.func @batch_linears_on_split
// CHECK-SAME: (%[[X:.+]]: tensor<3x4xf32>)
func.func @batch_linears_on_split(%x: tensor<3x4xf32>) -> (tensor<3x1xf32>, tensor<3x1xf32>) {
  // CHECK-DAG: %[[W:.+]] = tg.constant dense<{{\[\[\[}}1.000000e+00], [2.000000e+00]], {{\[\[}}3.000000e+00], [4.000000e+00]]]> : tensor<2x2x1xf32>
  // CHECK-DAG: %[[B:.+]] = tg.constant dense<{{\[\[\[}}5.000000e-01]], {{\[\[}}-5.000000e-01]]]> : tensor<2x1x1xf32>
  // CHECK: %[[R:.+]] = tg.reshape %[[X]] : tensor<3x4xf32> -> tensor<3x2x2xf32>
  // CHECK: %[[T:.+]] = tg.transpose %[[R]] {perm = [1, 0, 2]} : tensor<3x2x2xf32> -> tensor<2x3x2xf32>
  // CHECK: %[[M:.+]] = tg.matmul %[[T]], %[[W]] : tensor<2x3x2xf32>, tensor<2x2x1xf32> -> tensor<2x3x1xf32>
  // CHECK: %[[A:.+]] = tg.add %[[M]], %[[B]]
  // CHECK: %[[T2:.+]] = tg.transpose %[[A]] {perm = [1, 0, 2]} : tensor<2x3x1xf32> -> tensor<3x2x1xf32>
  // CHECK: %[[R2:.+]] = tg.reshape %[[T2]] : tensor<3x2x1xf32> -> tensor<3x2xf32>
  // CHECK: %[[S:.+]]:2 = tg.split %[[R2]] {axis = 1 : i64} : tensor<3x2xf32> -> tensor<3x1xf32>, tensor<3x1xf32>
  // CHECK-NOT: tg.linear
  // CHECK: return %[[S]]#0, %[[S]]#1
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %w0 = tg.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %b0 = tg.constant dense<[0.5]> : tensor<1xf32>
  %w1 = tg.constant dense<[[3.0, 4.0]]> : tensor<1x2xf32>
  %b1 = tg.constant dense<[-0.5]> : tensor<1xf32>
  %0 = tg.linear %s#0, %w0, %b0 : tensor<3x2xf32>, tensor<1x2xf32>, tensor<1xf32> -> tensor<3x1xf32>
  %1 = tg.linear %s#1, %w1, %b1 : tensor<3x2xf32>, tensor<1x2xf32>, tensor<1xf32> -> tensor<3x1xf32>
  return %0, %1 : tensor<3x1xf32>, tensor<3x1xf32>
}

// -----

// Negative: unequal chunks are not batched.
// CHECK-LABEL: func.func @no_fuse_unequal_chunks
func.func @no_fuse_unequal_chunks(%x: tensor<3x5xf32>) -> (tensor<3x1xf32>, tensor<3x1xf32>) {
  // CHECK: tg.split
  // CHECK: tg.linear
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<3x5xf32> -> tensor<3x2xf32>, tensor<3x3xf32>
  %w0 = tg.constant dense<1.0> : tensor<1x2xf32>
  %w1 = tg.constant dense<1.0> : tensor<1x3xf32>
  %0 = tg.linear %s#0, %w0 : tensor<3x2xf32>, tensor<1x2xf32> -> tensor<3x1xf32>
  %1 = tg.linear %s#1, %w1 : tensor<3x3xf32>, tensor<1x3xf32> -> tensor<3x1xf32>
  return %0, %1 : tensor<3x1xf32>, tensor<3x1xf32>
}

// -----

// Negative: a chunk with two users is not batched.
// CHECK-LABEL: func.func @no_fuse_chunk_two_users
func.func @no_fuse_chunk_two_users(%x: tensor<3x4xf32>) -> (tensor<3x1xf32>, tensor<3x1xf32>, tensor<3x2xf32>) {
  // CHECK: tg.linear
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %w = tg.constant dense<1.0> : tensor<1x2xf32>
  %0 = tg.linear %s#0, %w : tensor<3x2xf32>, tensor<1x2xf32> -> tensor<3x1xf32>
  %1 = tg.linear %s#1, %w : tensor<3x2xf32>, tensor<1x2xf32> -> tensor<3x1xf32>
  return %0, %1, %s#0 : tensor<3x1xf32>, tensor<3x1xf32>, tensor<3x2xf32>
}

// -----

// Negative: a runtime weight is not stacked.
// CHECK-LABEL: func.func @no_fuse_runtime_weight
func.func @no_fuse_runtime_weight(%x: tensor<3x4xf32>, %w1: tensor<1x2xf32>) -> (tensor<3x1xf32>, tensor<3x1xf32>) {
  // CHECK: tg.linear
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %w0 = tg.constant dense<1.0> : tensor<1x2xf32>
  %0 = tg.linear %s#0, %w0 : tensor<3x2xf32>, tensor<1x2xf32> -> tensor<3x1xf32>
  %1 = tg.linear %s#1, %w1 : tensor<3x2xf32>, tensor<1x2xf32> -> tensor<3x1xf32>
  return %0, %1 : tensor<3x1xf32>, tensor<3x1xf32>
}

// -----

// Chunks each into a last-axis layer norm become one layer norm with stacked scale/bias.
// CHECK-LABEL: func.func @batch_layer_norms_on_split
// CHECK-SAME: (%[[X:.+]]: tensor<3x4xf32>)
func.func @batch_layer_norms_on_split(%x: tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  // CHECK-DAG: %[[SC:.+]] = tg.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  // CHECK-DAG: %[[BI:.+]] = tg.constant dense<{{\[\[}}0.000000e+00, 1.000000e+00], [2.000000e+00, 3.000000e+00]]> : tensor<2x2xf32>
  // CHECK: %[[R:.+]] = tg.reshape %[[X]] : tensor<3x4xf32> -> tensor<3x2x2xf32>
  // CHECK: %[[L:.+]] = tg.layer_norm %[[R]], %[[SC]], %[[BI]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32}
  // CHECK: %[[R2:.+]] = tg.reshape %[[L]] : tensor<3x2x2xf32> -> tensor<3x4xf32>
  // CHECK: %[[S:.+]]:2 = tg.split %[[R2]] {axis = 1 : i64}
  // CHECK: return %[[S]]#0, %[[S]]#1
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %g0 = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b0 = tg.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %g1 = tg.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %b1 = tg.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %0 = tg.layer_norm %s#0, %g0, %b0 {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<3x2xf32>
  %1 = tg.layer_norm %s#1, %g1, %b1 {axis = -1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<3x2xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// Norms that kept different parameters (a scale of ones or a shift of zeros was dropped): the
// missing ones stack as ones and zeros.
// CHECK-LABEL: func.func @batch_layer_norms_mixed_affine
func.func @batch_layer_norms_mixed_affine(%x: tensor<3x6xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  // CHECK-DAG: %[[SC:.+]] = tg.constant dense<{{\[\[}}2.000000e+00, 3.000000e+00], [1.000000e+00, 1.000000e+00], [1.000000e+00, 1.000000e+00]]> : tensor<3x2xf32>
  // CHECK-DAG: %[[BI:.+]] = tg.constant dense<{{\[\[}}0.000000e+00, 0.000000e+00], [5.000000e-01, -5.000000e-01], [0.000000e+00, 0.000000e+00]]> : tensor<3x2xf32>
  // CHECK: tg.layer_norm %{{[^,]+}}, %[[SC]], %[[BI]] {axis = 2 : i64
  // CHECK-NOT: tg.layer_norm
  %s:3 = tg.split %x {axis = 1 : i64} : tensor<3x6xf32> -> tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
  %g0 = tg.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %b1 = tg.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %0 = tg.layer_norm %s#0, %g0 {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2xf32>, tensor<2xf32> -> tensor<3x2xf32>
  %1 = tg.layer_norm %s#1, bias %b1 {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2xf32>, tensor<2xf32> -> tensor<3x2xf32>
  %2 = tg.layer_norm %s#2 {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2xf32> -> tensor<3x2xf32>
  return %0, %1, %2 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// A scale shared by every branch stays one [M] operand.
// CHECK-LABEL: func.func @batch_layer_norms_shared_scale
func.func @batch_layer_norms_shared_scale(%x: tensor<3x4xf32>, %g: tensor<2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  // CHECK: %[[R:.+]] = tg.reshape %{{.+}} : tensor<3x4xf32> -> tensor<3x2x2xf32>
  // CHECK: tg.layer_norm %[[R]], %{{.+}} {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : tensor<3x2x2xf32>, tensor<2xf32> -> tensor<3x2x2xf32>
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %0 = tg.layer_norm %s#0, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2xf32>, tensor<2xf32> -> tensor<3x2xf32>
  %1 = tg.layer_norm %s#1, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2xf32>, tensor<2xf32> -> tensor<3x2xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// Negative: layer norms with different epsilons are not batched.
// CHECK-LABEL: func.func @no_fuse_different_epsilon
func.func @no_fuse_different_epsilon(%x: tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  // CHECK: tg.layer_norm
  // CHECK: tg.layer_norm
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %0 = tg.layer_norm %s#0 {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2xf32> -> tensor<3x2xf32>
  %1 = tg.layer_norm %s#1 {axis = 1 : i64, epsilon = 1.0e-6 : f32} : tensor<3x2xf32> -> tensor<3x2xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// Negative: a layer norm over more than the last axis is not batched.
// CHECK-LABEL: func.func @no_fuse_norm_over_two_axes
func.func @no_fuse_norm_over_two_axes(%x: tensor<3x2x4xf32>) -> (tensor<3x2x2xf32>, tensor<3x2x2xf32>) {
  // CHECK: tg.layer_norm
  // CHECK: tg.layer_norm
  %s:2 = tg.split %x {axis = 2 : i64} : tensor<3x2x4xf32> -> tensor<3x2x2xf32>, tensor<3x2x2xf32>
  %0 = tg.layer_norm %s#0 {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2x2xf32> -> tensor<3x2x2xf32>
  %1 = tg.layer_norm %s#1 {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2x2xf32> -> tensor<3x2x2xf32>
  return %0, %1 : tensor<3x2x2xf32>, tensor<3x2x2xf32>
}

// -----

// Every chunk into the same activation: one activation before the split.
// CHECK-LABEL: func.func @batch_unary_on_split
// CHECK-SAME: (%[[X:.+]]: tensor<2x6xf32>)
func.func @batch_unary_on_split(%x: tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>) {
  // CHECK: %[[T:.+]] = tg.tanh %[[X]] : tensor<2x6xf32>
  // CHECK: %[[S:.+]]:2 = tg.split %[[T]] {axis = 1 : i64} : tensor<2x6xf32> -> tensor<2x2xf32>, tensor<2x4xf32>
  // CHECK-NOT: tg.tanh
  // CHECK: return %[[S]]#0, %[[S]]#1
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<2x6xf32> -> tensor<2x2xf32>, tensor<2x4xf32>
  %0 = tg.tanh %s#0 : tensor<2x2xf32>
  %1 = tg.tanh %s#1 : tensor<2x4xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<2x4xf32>
}

// -----

// Negative: different activations (or gelu variants) are not batched.
// CHECK-LABEL: func.func @no_fuse_different_unary
func.func @no_fuse_different_unary(%x: tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  // CHECK: tg.split
  // CHECK: tg.gelu
  // CHECK: tg.gelu
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<2x6xf32> -> tensor<2x3xf32>, tensor<2x3xf32>
  %0 = tg.gelu %s#0 : tensor<2x3xf32>
  %1 = tg.gelu %s#1 {tanh_approx = true} : tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// concat of all split results in order on the split axis is the split's input.
// CHECK-LABEL: func.func @eliminate_split_concat
// CHECK-SAME: (%[[X:.+]]: tensor<2x6xf32>)
func.func @eliminate_split_concat(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  // CHECK-NOT: tg.concat
  // CHECK: return %[[X]]
  %s:3 = tg.split %x {axis = -1 : i64} : tensor<2x6xf32> -> tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>
  %0 = tg.concat %s#0, %s#1, %s#2 {axis = 1 : i64} : tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// Negative: a concat out of order, or on another axis, stays.
// CHECK-LABEL: func.func @no_fuse_concat_out_of_order
func.func @no_fuse_concat_out_of_order(%x: tensor<2x6xf32>) -> (tensor<2x6xf32>, tensor<4x3xf32>) {
  // CHECK: tg.concat
  // CHECK: tg.concat
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<2x6xf32> -> tensor<2x3xf32>, tensor<2x3xf32>
  %0 = tg.concat %s#1, %s#0 {axis = 1 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  %1 = tg.concat %s#0, %s#1 {axis = 0 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  return %0, %1 : tensor<2x6xf32>, tensor<4x3xf32>
}

// -----

// The rules chain: split -> linear -> tanh -> linear -> concat becomes one batched MLP.
// CHECK-LABEL: func.func @parallel_mlp
func.func @parallel_mlp(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  // CHECK: tg.matmul
  // CHECK: tg.tanh %{{.+}} : tensor<3x4xf32>
  // CHECK: tg.matmul
  // CHECK-NOT: tg.split
  // CHECK-NOT: tg.concat
  // CHECK: return
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %w = tg.constant dense<1.0> : tensor<2x2xf32>
  %v = tg.constant dense<0.5> : tensor<1x2xf32>
  %0 = tg.linear %s#0, %w : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  %1 = tg.linear %s#1, %w : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  %2 = tg.tanh %0 : tensor<3x2xf32>
  %3 = tg.tanh %1 : tensor<3x2xf32>
  %4 = tg.linear %2, %v : tensor<3x2xf32>, tensor<1x2xf32> -> tensor<3x1xf32>
  %5 = tg.linear %3, %v : tensor<3x2xf32>, tensor<1x2xf32> -> tensor<3x1xf32>
  %6 = tg.concat %4, %5 {axis = 1 : i64} : tensor<3x1xf32>, tensor<3x1xf32> -> tensor<3x2xf32>
  return %6 : tensor<3x2xf32>
}
