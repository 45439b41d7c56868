// RUN: tgc-opt %s --split-input-file --tgc-eliminate-identities | FileCheck %s

// A reshape of a reshape becomes one reshape of the original value.
// CHECK-LABEL: func.func @fold_reshape_chain
// CHECK-SAME: (%[[X:.+]]: tensor<2x6xf32>)
func.func @fold_reshape_chain(%x: tensor<2x6xf32>) -> tensor<4x3xf32> {
  // CHECK: %[[R:.+]] = tg.reshape %[[X]] : tensor<2x6xf32> -> tensor<4x3xf32>
  // CHECK-NEXT: return %[[R]]
  %0 = tg.reshape %x : tensor<2x6xf32> -> tensor<12xf32>
  %1 = tg.reshape %0 : tensor<12xf32> -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}

// -----

// A reshape chain that comes back to the input's shape disappears.
// CHECK-LABEL: func.func @fold_identity_reshape
// CHECK-SAME: (%[[X:.+]]: tensor<2x6xf32>)
func.func @fold_identity_reshape(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  // CHECK-NOT: tg.reshape
  // CHECK: return %[[X]]
  %0 = tg.reshape %x : tensor<2x6xf32> -> tensor<3x4xf32>
  %1 = tg.reshape %0 : tensor<3x4xf32> -> tensor<2x6xf32>
  return %1 : tensor<2x6xf32>
}

// -----

// Two transposes compose into one.
// CHECK-LABEL: func.func @fold_transpose_pair
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
func.func @fold_transpose_pair(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  // CHECK: %[[T:.+]] = tg.transpose %[[X]] {perm = [2, 0, 1]} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  // CHECK-NEXT: return %[[T]]
  %0 = tg.transpose %x {perm = [1, 0, 2]} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = tg.transpose %0 {perm = [2, 1, 0]} : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  return %1 : tensor<4x2x3xf32>
}

// -----

// Two transposes that cancel disappear.
// CHECK-LABEL: func.func @fold_transpose_pair_cancels
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
func.func @fold_transpose_pair_cancels(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NOT: tg.transpose
  // CHECK: return %[[X]]
  %0 = tg.transpose %x {perm = [1, 0]} : tensor<2x3xf32> -> tensor<3x2xf32>
  %1 = tg.transpose %0 {perm = [1, 0]} : tensor<3x2xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @fold_identity_transpose
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
func.func @fold_identity_transpose(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NOT: tg.transpose
  // CHECK: return %[[X]]
  %0 = tg.transpose %x {perm = [0, 1]} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Negative: a transpose that moves a dim stays.
// CHECK-LABEL: func.func @no_fold_real_transpose
func.func @no_fold_real_transpose(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // CHECK: tg.transpose
  %0 = tg.transpose %x {perm = [1, 0]} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @fold_identity_expand
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
func.func @fold_identity_expand(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NOT: tg.expand
  // CHECK: return %[[X]]
  %0 = tg.expand %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Negative: an expand that broadcasts stays.
// CHECK-LABEL: func.func @no_fold_broadcasting_expand
func.func @no_fold_broadcasting_expand(%x: tensor<1x3xf32>) -> tensor<2x3xf32> {
  // CHECK: tg.expand
  %0 = tg.expand %x : tensor<1x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @fold_full_slice
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
func.func @fold_full_slice(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NOT: tg.slice
  // CHECK: return %[[X]]
  %0 = tg.slice %x {starts = [0, 0], steps = [1, 1]} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Negative: a reversing slice keeps the shape but not the order.
// CHECK-LABEL: func.func @no_fold_reversing_slice
func.func @no_fold_reversing_slice(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: tg.slice
  %0 = tg.slice %x {starts = [0, 2], steps = [1, -1]} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @fold_where_true
// CHECK-SAME: (%[[A:.+]]: tensor<4xf32>, %[[B:.+]]: tensor<4xf32>)
func.func @fold_where_true(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NOT: tg.where
  // CHECK: return %[[A]]
  %c = tg.constant dense<true> : tensor<4xi1>
  %0 = tg.where %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A constant false condition picks the other branch, broadcast to the result.
// CHECK-LABEL: func.func @fold_where_false_broadcast
// CHECK-SAME: (%[[A:.+]]: tensor<4xf32>, %[[B:.+]]: tensor<1xf32>)
func.func @fold_where_false_broadcast(%a: tensor<4xf32>, %b: tensor<1xf32>) -> tensor<4xf32> {
  // CHECK: %[[E:.+]] = tg.expand %[[B]] : tensor<1xf32> -> tensor<4xf32>
  // CHECK: return %[[E]]
  %c = tg.constant dense<false> : tensor<1xi1>
  %0 = tg.where %c, %a, %b : tensor<1xi1>, tensor<4xf32>, tensor<1xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Negative: a condition that mixes true and false stays.
// CHECK-LABEL: func.func @no_fold_where_mixed
func.func @no_fold_where_mixed(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  // CHECK: tg.where
  %c = tg.constant dense<[true, false]> : tensor<2xi1>
  %0 = tg.where %c, %a, %b : tensor<2xi1>, tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// x + 0, 1 * x, x / 1 and x - 0 are x.
// CHECK-LABEL: func.func @fold_no_op_arithmetic
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
func.func @fold_no_op_arithmetic(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NOT: tg.add
  // CHECK-NOT: tg.mul
  // CHECK-NOT: tg.div
  // CHECK-NOT: tg.sub
  // CHECK: return %[[X]]
  %zero = tg.constant dense<0.0> : tensor<3xf32>
  %one = tg.constant dense<1.0> : tensor<1xf32>
  %0 = tg.add %x, %zero : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %1 = tg.mul %one, %0 : tensor<1xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = tg.div %1, %one : tensor<2x3xf32>, tensor<1xf32> -> tensor<2x3xf32>
  %3 = tg.sub %2, %zero : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}

// -----

// Negative: x + 0 where the zero broadcasts x to a larger shape, and 0 - x, stay.
// CHECK-LABEL: func.func @no_fold_broadcasting_zero
func.func @no_fold_broadcasting_zero(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  // CHECK: tg.add
  // CHECK: tg.sub
  %zero = tg.constant dense<0.0> : tensor<2x3xf32>
  %z = tg.constant dense<0.0> : tensor<3xf32>
  %0 = tg.add %x, %zero : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = tg.sub %z, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<3xf32>
}

// -----

// Negative: multiplying by a non-one splat stays.
// CHECK-LABEL: func.func @no_fold_mul_by_two
func.func @no_fold_mul_by_two(%x: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: tg.mul
  %two = tg.constant dense<2.0> : tensor<3xf32>
  %0 = tg.mul %x, %two : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// ViT's patch map back to tokens: reshape, transpose, reshape, transpose that put every element
// back where it was -> nothing left.
// CHECK-LABEL: func.func @fold_layout_chain_to_reshape
// CHECK-SAME: (%[[X:.+]]: tensor<1x4x5xf32>)
func.func @fold_layout_chain_to_reshape(%x: tensor<1x4x5xf32>) -> tensor<1x4x5xf32> {
  // CHECK-NOT: tg.transpose
  // CHECK-NOT: tg.reshape
  // CHECK: return %[[X]]
  %0 = tg.reshape %x : tensor<1x4x5xf32> -> tensor<1x2x2x5xf32>
  %1 = tg.transpose %0 {perm = [0, 3, 1, 2]} : tensor<1x2x2x5xf32> -> tensor<1x5x2x2xf32>
  %2 = tg.reshape %1 : tensor<1x5x2x2xf32> -> tensor<1x5x4xf32>
  %3 = tg.transpose %2 {perm = [0, 2, 1]} : tensor<1x5x4xf32> -> tensor<1x4x5xf32>
  return %3 : tensor<1x4x5xf32>
}

// -----

// @no_fold_layout_chain: the first transpose also swaps the two patch dims, so the chain moves
// elements: everything stays.
// CHECK-LABEL: func.func @no_fold_layout_chain
func.func @no_fold_layout_chain(%x: tensor<1x4x5xf32>) -> tensor<1x4x5xf32> {
  // CHECK: tg.transpose %{{.+}} {perm = [0, 3, 2, 1]}
  // CHECK: tg.transpose %{{.+}} {perm = [0, 2, 1]}
  %0 = tg.reshape %x : tensor<1x4x5xf32> -> tensor<1x2x2x5xf32>
  %1 = tg.transpose %0 {perm = [0, 3, 2, 1]} : tensor<1x2x2x5xf32> -> tensor<1x5x2x2xf32>
  %2 = tg.reshape %1 : tensor<1x5x2x2xf32> -> tensor<1x5x4xf32>
  %3 = tg.transpose %2 {perm = [0, 2, 1]} : tensor<1x5x4xf32> -> tensor<1x4x5xf32>
  return %3 : tensor<1x4x5xf32>
}

// -----

// A layer norm's scale of ones and shift of zeros are dropped (+0 and -0 alike: the shift is not
// a splat).
// CHECK-LABEL: func.func @layer_norm_unit_affine
func.func @layer_norm_unit_affine(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %g = tg.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %b = tg.constant dense<[0.0, -0.0]> : tensor<2xf32>
  // CHECK: %[[N:.+]] = tg.layer_norm %{{[^,]+}} {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : tensor<4x2xf32> -> tensor<4x2xf32>
  // CHECK: return %[[N]]
  %n = tg.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  return %n : tensor<4x2xf32>
}

// -----

// Only the shift is zero: the scale stays.
// CHECK-LABEL: func.func @layer_norm_keeps_scale
func.func @layer_norm_keeps_scale(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %g = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %b = tg.constant dense<0.0> : tensor<2xf32>
  // CHECK: %[[G:.+]] = tg.constant dense<[2.000000e+00, 1.000000e+00]>
  // CHECK: tg.layer_norm %{{[^,]+}}, %[[G]] {axis = 1 : i64
  %n = tg.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  return %n : tensor<4x2xf32>
}

// -----

// An RMS norm's scale of ones is dropped; a scale of twos is not.
// CHECK-LABEL: func.func @rms_norm_unit_scale
func.func @rms_norm_unit_scale(%x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %one = tg.constant dense<1.0> : tensor<2xf32>
  %two = tg.constant dense<2.0> : tensor<2xf32>
  // CHECK-DAG: tg.rms_norm %{{[^,]+}} {axis = 1 : i64, epsilon = 9.99999997E-7 : f32} : tensor<4x2xf32> -> tensor<4x2xf32>
  // CHECK-DAG: tg.rms_norm %{{[^,]+}}, %{{.+}} {axis = 1 : i64
  %a = tg.rms_norm %x, %one {axis = 1 : i64, epsilon = 1.0e-6 : f32} : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %b = tg.rms_norm %x, %two {axis = 1 : i64, epsilon = 1.0e-6 : f32} : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  return %a, %b : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// A scale of ones goes while a shift stays (printed `bias %b`); a scale and shift that do
// something stay; so does a scale that is not a constant.
// CHECK-LABEL: func.func @layer_norm_affine_stays
func.func @layer_norm_affine_stays(%x: tensor<4x2xf32>, %s: tensor<2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %one = tg.constant dense<1.0> : tensor<2xf32>
  %g = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %b = tg.constant dense<[0.5, 0.0]> : tensor<2xf32>
  // CHECK: tg.layer_norm %{{[^,]+}}, bias %{{[^ ]+}} {axis = 1 : i64{{.*}}} : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  // CHECK: tg.layer_norm %{{[^,]+}}, %{{[^,]+}}, %{{[^ ]+}} {axis = 1 : i64
  // CHECK: tg.layer_norm %{{[^,]+}}, %{{[^ ]+}} {axis = 1 : i64
  %n1 = tg.layer_norm %x, %one, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %n2 = tg.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %n3 = tg.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  return %n1, %n2, %n3 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// Any float type: an f16 RMS norm's scale of ones is dropped.
// CHECK-LABEL: func.func @rms_norm_f16_unit_scale
func.func @rms_norm_f16_unit_scale(%x: tensor<4x2xf16>) -> tensor<4x2xf16> {
  %one = tg.constant dense<1.0> : tensor<2xf16>
  // CHECK: tg.rms_norm %{{[^,]+}} {axis = 1 : i64, epsilon = 9.99999997E-7 : f32} : tensor<4x2xf16> -> tensor<4x2xf16>
  %n = tg.rms_norm %x, %one {axis = 1 : i64, epsilon = 1.0e-6 : f32} : tensor<4x2xf16>, tensor<2xf16> -> tensor<4x2xf16>
  return %n : tensor<4x2xf16>
}
