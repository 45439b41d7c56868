// RUN: tgc-opt %s --split-input-file --tgc-sink-layout-ops | FileCheck %s

// An elementwise op moves above the reshape that feeds it.
// CHECK-LABEL: func.func @sink_reshape_below_unary
// CHECK-SAME: (%[[X:.+]]: tensor<2x6xf32>)
func.func @sink_reshape_below_unary(%x: tensor<2x6xf32>) -> tensor<2x3x2xf32> {
  // CHECK: %[[T:.+]] = tg.tanh %[[X]] : tensor<2x6xf32>
  // CHECK: %[[R:.+]] = tg.reshape %[[T]] : tensor<2x6xf32> -> tensor<2x3x2xf32>
  // CHECK: return %[[R]]
  %0 = tg.reshape %x : tensor<2x6xf32> -> tensor<2x3x2xf32>
  %1 = tg.tanh %0 : tensor<2x3x2xf32>
  return %1 : tensor<2x3x2xf32>
}

// -----

// A transpose sinks below a unary op and a last-axis layer norm.
// CHECK-LABEL: func.func @sink_transpose_below_norm_and_unary
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>, %[[S:.+]]: tensor<4xf32>)
func.func @sink_transpose_below_norm_and_unary(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>) -> tensor<3x2x4xf32> {
  // CHECK: %[[N:.+]] = tg.layer_norm %[[X]], %[[S]] {axis = -1 : i64, epsilon = 9.99999974E-6 : f32} : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  // CHECK: %[[G:.+]] = tg.gelu %[[N]] {tanh_approx = true} : tensor<2x3x4xf32>
  // CHECK: %[[T:.+]] = tg.transpose %[[G]] {perm = [1, 0, 2]} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  // CHECK: return %[[T]]
  %0 = tg.transpose %x {perm = [1, 0, 2]} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = tg.layer_norm %0, %s {axis = -1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2x4xf32>, tensor<4xf32> -> tensor<3x2x4xf32>
  %2 = tg.gelu %1 {tanh_approx = true} : tensor<3x2x4xf32>
  return %2 : tensor<3x2x4xf32>
}

// -----

// Negative: a transpose that moves the normalized dim, or whose result has another user, stays.
// CHECK-LABEL: func.func @no_sink_moved_norm_dim
func.func @no_sink_moved_norm_dim(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  // CHECK: tg.transpose
  // CHECK-NEXT: tg.layer_norm
  // CHECK: tg.transpose
  // CHECK-NEXT: tg.exp
  %0 = tg.transpose %x {perm = [1, 0]} : tensor<2x3xf32> -> tensor<3x2xf32>
  %1 = tg.layer_norm %0 {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2xf32> -> tensor<3x2xf32>
  %2 = tg.transpose %x {perm = [1, 0]} : tensor<2x3xf32> -> tensor<3x2xf32>
  %3 = tg.exp %2 : tensor<3x2xf32>
  %4 = tg.add %3, %2 : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x2xf32>
  return %1, %4 : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// Negative: a stacked [N, M] scale spans a dim the transpose moves.
// CHECK-LABEL: func.func @no_sink_stacked_scale
func.func @no_sink_stacked_scale(%x: tensor<2x3x4xf32>, %s: tensor<2x4xf32>) -> tensor<3x2x4xf32> {
  // CHECK: tg.transpose
  // CHECK-NEXT: tg.layer_norm
  %0 = tg.transpose %x {perm = [1, 0, 2]} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = tg.layer_norm %0, %s {axis = 2 : i64, epsilon = 1.0e-5 : f32} : tensor<3x2x4xf32>, tensor<2x4xf32> -> tensor<3x2x4xf32>
  return %1 : tensor<3x2x4xf32>
}
