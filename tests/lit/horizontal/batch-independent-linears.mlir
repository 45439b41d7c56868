// RUN: tgc-opt %s --split-input-file --tgc-batch-independent-linears | FileCheck %s
// RUN: tgc-opt %s --split-input-file --tgc-batch-independent-linears=min-set-size=3 | FileCheck %s --check-prefix=MIN3

// Two independent linears with equal shapes on different inputs become one batched matmul.
// CHECK-LABEL: func.func @batch_independent
// CHECK-SAME: (%[[A:.+]]: tensor<3x2xf32>, %[[B:.+]]: tensor<3x2xf32>)
// MIN3-LABEL: func.func @batch_independent
// MIN3-COUNT-2: tg.linear
func.func @batch_independent(%a: tensor<3x2xf32>, %b: tensor<3x2xf32>) -> (tensor<3x1xf32>, tensor<3x1xf32>) {
  // CHECK: %[[RA:.+]] = tg.reshape %[[A]] : tensor<3x2xf32> -> tensor<1x3x2xf32>
  // CHECK: %[[RB:.+]] = tg.reshape %[[B]] : tensor<3x2xf32> -> tensor<1x3x2xf32>
  // CHECK: %[[C:.+]] = tg.concat %[[RA]], %[[RB]] {axis = 0 : i64} : tensor<1x3x2xf32>, tensor<1x3x2xf32> -> tensor<2x3x2xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<{{\[\[\[}}1.000000e+00], [2.000000e+00]], {{\[\[}}3.000000e+00], [4.000000e+00]]]> : tensor<2x2x1xf32>
  // CHECK: %[[M:.+]] = tg.matmul %[[C]], %[[W]] : tensor<2x3x2xf32>, tensor<2x2x1xf32> -> tensor<2x3x1xf32>
  // CHECK: %[[S:.+]]:2 = tg.split %[[M]] {axis = 0 : i64}
  // CHECK: %[[OA:.+]] = tg.reshape %[[S]]#0 : tensor<1x3x1xf32> -> tensor<3x1xf32>
  // CHECK: %[[OB:.+]] = tg.reshape %[[S]]#1 : tensor<1x3x1xf32> -> tensor<3x1xf32>
  // CHECK-NOT: tg.linear
  // CHECK: return %[[OA]], %[[OB]]
  %w0 = tg.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %w1 = tg.constant dense<[[3.0, 4.0]]> : tensor<1x2xf32>
  %0 = tg.linear %a, %w0 : tensor<3x2xf32>, tensor<1x2xf32> -> tensor<3x1xf32>
  %1 = tg.linear %b, %w1 : tensor<3x2xf32>, tensor<1x2xf32> -> tensor<3x1xf32>
  return %0, %1 : tensor<3x1xf32>, tensor<3x1xf32>
}

// -----

// Negative: the second linear reads the first one's result (through a tanh): dependent.
// CHECK-LABEL: func.func @no_fuse_dependent_linears
func.func @no_fuse_dependent_linears(%a: tensor<3x2xf32>) -> tensor<3x2xf32> {
  // CHECK: tg.linear
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %w = tg.constant dense<1.0> : tensor<2x2xf32>
  %0 = tg.linear %a, %w : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  %1 = tg.tanh %0 : tensor<3x2xf32>
  %2 = tg.linear %1, %w : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  return %2 : tensor<3x2xf32>
}

// -----

// Negative: linears with different weight shapes are different candidates.
// CHECK-LABEL: func.func @no_fuse_different_shapes
func.func @no_fuse_different_shapes(%a: tensor<3x2xf32>, %b: tensor<3x2xf32>) -> (tensor<3x1xf32>, tensor<3x2xf32>) {
  // CHECK: tg.linear
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %w0 = tg.constant dense<1.0> : tensor<1x2xf32>
  %w1 = tg.constant dense<1.0> : tensor<2x2xf32>
  %0 = tg.linear %a, %w0 : tensor<3x2xf32>, tensor<1x2xf32> -> tensor<3x1xf32>
  %1 = tg.linear %b, %w1 : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  return %0, %1 : tensor<3x1xf32>, tensor<3x2xf32>
}

// -----

// Negative: the first result is used before the second input is computed; batching would need
// the second input before the first use, so the set cannot be placed without a cycle.
// CHECK-LABEL: func.func @no_fuse_unplaceable
func.func @no_fuse_unplaceable(%a: tensor<3x2xf32>, %b: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  // CHECK: tg.linear
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %w = tg.constant dense<1.0> : tensor<2x2xf32>
  %0 = tg.linear %a, %w : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  %1 = tg.tanh %0 : tensor<3x2xf32>
  %2 = tg.exp %b : tensor<3x2xf32>
  %3 = tg.linear %2, %w : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  return %1, %3 : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// The split results feed the linears directly: the batched ops go right after the split, in
// front of the linears they replace.
// CHECK-LABEL: func.func @batch_after_split
// CHECK-SAME: (%[[X:.+]]: tensor<3x4xf32>)
func.func @batch_after_split(%x: tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  // CHECK: %[[S:.+]]:2 = tg.split %[[X]]
  // CHECK: %[[R0:.+]] = tg.reshape %[[S]]#0 : tensor<3x2xf32> -> tensor<1x3x2xf32>
  // CHECK: %[[R1:.+]] = tg.reshape %[[S]]#1 : tensor<3x2xf32> -> tensor<1x3x2xf32>
  // CHECK: %[[C:.+]] = tg.concat %[[R0]], %[[R1]] {axis = 0 : i64}
  // CHECK: %[[M:.+]] = tg.matmul %[[C]], %{{.+}} : tensor<2x3x2xf32>, tensor<2x2x2xf32> -> tensor<2x3x2xf32>
  // CHECK: %[[A:.+]] = tg.add %[[M]], %{{.+}} : tensor<2x3x2xf32>, tensor<2x1x2xf32> -> tensor<2x3x2xf32>
  // CHECK: tg.split %[[A]] {axis = 0 : i64}
  // CHECK-NOT: tg.linear
  %w0 = tg.constant dense<1.0> : tensor<2x2xf32>
  %w1 = tg.constant dense<2.0> : tensor<2x2xf32>
  %b = tg.constant dense<0.5> : tensor<2xf32>
  %s:2 = tg.split %x {axis = 1 : i64} : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xf32>
  %0 = tg.linear %s#0, %w0, %b : tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32> -> tensor<3x2xf32>
  %1 = tg.linear %s#1, %w1, %b : tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32> -> tensor<3x2xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<3x2xf32>
}
