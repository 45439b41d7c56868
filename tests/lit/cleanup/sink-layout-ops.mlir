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

// -----

// The flatten/unflatten pair around a linear (the ONNX Gemm form) folds away: the linear reads
// x directly, and the result has x's leading dims.
// CHECK-LABEL: func.func @fold_reshapes_around_linear
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x4xf32>, %[[W:.+]]: tensor<6x4xf32>, %[[B:.+]]: tensor<6xf32>)
func.func @fold_reshapes_around_linear(%x: tensor<1x8x4xf32>, %w: tensor<6x4xf32>, %b: tensor<6xf32>) -> tensor<1x8x6xf32> {
  // CHECK-NOT: tg.reshape
  // CHECK: %[[L:.+]] = tg.linear %[[X]], %[[W]], %[[B]] : tensor<1x8x4xf32>, tensor<6x4xf32>, tensor<6xf32> -> tensor<1x8x6xf32>
  // CHECK-NOT: tg.reshape
  // CHECK: return %[[L]]
  %0 = tg.reshape %x : tensor<1x8x4xf32> -> tensor<8x4xf32>
  %1 = tg.linear %0, %w, %b : tensor<8x4xf32>, tensor<6x4xf32>, tensor<6xf32> -> tensor<8x6xf32>
  %2 = tg.reshape %1 : tensor<8x6xf32> -> tensor<1x8x6xf32>
  return %2 : tensor<1x8x6xf32>
}

// -----

// The attention output [1, 8, 2, 2] flattened to [8, 4] for a Gemm, then restored to [1, 8, 6]:
// one reshape to [1, 8, 4] stays (a view) and the linear's result needs none.
// CHECK-LABEL: func.func @fold_reshapes_around_linear_regroup
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x2x2xf32>, %[[W:.+]]: tensor<6x4xf32>)
func.func @fold_reshapes_around_linear_regroup(%x: tensor<1x8x2x2xf32>, %w: tensor<6x4xf32>) -> tensor<1x8x6xf32> {
  // CHECK: %[[R:.+]] = tg.reshape %[[X]] : tensor<1x8x2x2xf32> -> tensor<1x8x4xf32>
  // CHECK: %[[L:.+]] = tg.linear %[[R]], %[[W]] : tensor<1x8x4xf32>, tensor<6x4xf32> -> tensor<1x8x6xf32>
  // CHECK: return %[[L]]
  %0 = tg.reshape %x : tensor<1x8x2x2xf32> -> tensor<8x4xf32>
  %1 = tg.linear %0, %w : tensor<8x4xf32>, tensor<6x4xf32> -> tensor<8x6xf32>
  %2 = tg.reshape %1 : tensor<8x6xf32> -> tensor<1x8x6xf32>
  return %2 : tensor<1x8x6xf32>
}

// -----

// @no_fold_reshapes_around_linear: the outer reshape splits the last dim ([8, 6] -> [8, 2, 3]):
// the linear's rows are not just regrouped, so nothing moves.
// CHECK-LABEL: func.func @no_fold_reshapes_around_linear
func.func @no_fold_reshapes_around_linear(%x: tensor<1x8x4xf32>, %w: tensor<6x4xf32>) -> tensor<8x2x3xf32> {
  // CHECK: tg.reshape %{{.+}} : tensor<1x8x4xf32> -> tensor<8x4xf32>
  // CHECK: tg.linear
  // CHECK: tg.reshape %{{.+}} : tensor<8x6xf32> -> tensor<8x2x3xf32>
  %0 = tg.reshape %x : tensor<1x8x4xf32> -> tensor<8x4xf32>
  %1 = tg.linear %0, %w : tensor<8x4xf32>, tensor<6x4xf32> -> tensor<8x6xf32>
  %2 = tg.reshape %1 : tensor<8x6xf32> -> tensor<8x2x3xf32>
  return %2 : tensor<8x2x3xf32>
}

// -----

// Binary ops with a one-element operand sink a reshape (either operand order) and a transpose:
// the hardsigmoid of a squeeze-excitation vector, x·c + d
// clipped, thus follows its GEMM directly.
// CHECK-LABEL: func.func @sink_layout_below_scalar_binary
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x1xf16>, %[[C:.+]]: tensor<f16>, %[[D:.+]]: tensor<1xf16>, %[[Y:.+]]: tensor<2x3xf32>, %[[E:.+]]: tensor<1x1xf32>)
func.func @sink_layout_below_scalar_binary(%x: tensor<1x8x1xf16>, %c: tensor<f16>, %d: tensor<1xf16>, %y: tensor<2x3xf32>, %e: tensor<1x1xf32>) -> (tensor<1x8x1x1xf16>, tensor<3x2xi1>) {
  // CHECK: %[[M:.+]] = tg.mul %[[X]], %[[C]] : tensor<1x8x1xf16>, tensor<f16> -> tensor<1x8x1xf16>
  // CHECK: %[[A:.+]] = tg.add %[[D]], %[[M]] : tensor<1xf16>, tensor<1x8x1xf16> -> tensor<1x8x1xf16>
  // CHECK: %[[R:.+]] = tg.reshape %[[A]] : tensor<1x8x1xf16> -> tensor<1x8x1x1xf16>
  // CHECK: %[[L:.+]] = tg.less %[[Y]], %[[E]] : tensor<2x3xf32>, tensor<1x1xf32> -> tensor<2x3xi1>
  // CHECK: %[[T:.+]] = tg.transpose %[[L]] {perm = [1, 0]} : tensor<2x3xi1> -> tensor<3x2xi1>
  // CHECK: return %[[R]], %[[T]]
  %0 = tg.reshape %x : tensor<1x8x1xf16> -> tensor<1x8x1x1xf16>
  %1 = tg.mul %0, %c : tensor<1x8x1x1xf16>, tensor<f16> -> tensor<1x8x1x1xf16>
  %2 = tg.add %d, %1 : tensor<1xf16>, tensor<1x8x1x1xf16> -> tensor<1x8x1x1xf16>
  %3 = tg.transpose %y {perm = [1, 0]} : tensor<2x3xf32> -> tensor<3x2xf32>
  %4 = tg.less %3, %e : tensor<3x2xf32>, tensor<1x1xf32> -> tensor<3x2xi1>
  return %2, %4 : tensor<1x8x1x1xf16>, tensor<3x2xi1>
}

// -----

// Negative: an operand of more than one element, a one-element operand of higher rank than the
// reshape's input (the result would change rank), and a reshape with another reader all stay.
// CHECK-LABEL: func.func @no_sink_below_binary
func.func @no_sink_below_binary(%x: tensor<8xf32>, %v: tensor<2xf32>, %s: tensor<1x1x1xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  // CHECK: %[[R:.+]] = tg.reshape
  // CHECK-NEXT: tg.mul %[[R]]
  // CHECK-NEXT: tg.add %[[R]]
  // CHECK: %[[R2:.+]] = tg.reshape
  // CHECK-NEXT: tg.sub %[[R2]]
  %0 = tg.reshape %x : tensor<8xf32> -> tensor<4x2xf32>
  %1 = tg.mul %0, %v : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %2 = tg.add %0, %1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %3 = tg.reshape %x : tensor<8xf32> -> tensor<4x2xf32>
  %4 = tg.sub %3, %s : tensor<4x2xf32>, tensor<1x1x1xf32> -> tensor<1x4x2xf32>
  %5 = tg.reshape %4 : tensor<1x4x2xf32> -> tensor<4x2xf32>
  return %1, %2, %5 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}
