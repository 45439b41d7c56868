// RUN: tgc-opt %s --split-input-file --tgc-recognize-rotary | FileCheck %s

// LLaMA (both exporters): q*cos + cat(-q[..., 16:], q[..., :16])*sin, cos/sin [1, 1, S, D].
// CHECK-LABEL: func.func @rotary_slices
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x8x32xf32>, %[[COS:.+]]: tensor<1x1x8x32xf32>, %[[SIN:.+]]: tensor<1x1x8x32xf32>)
func.func @rotary_slices(%q: tensor<1x4x8x32xf32>, %cos: tensor<1x1x8x32xf32>, %sin: tensor<1x1x8x32xf32>) -> tensor<1x4x8x32xf32> {
  // CHECK: %[[R:.+]] = tg.rotary %[[Q]], %[[COS]], %[[SIN]] {interleaved = false} : tensor<1x4x8x32xf32>, tensor<1x1x8x32xf32>, tensor<1x1x8x32xf32> -> tensor<1x4x8x32xf32>
  // CHECK-NOT: tg.concat
  // CHECK-NOT: tg.neg
  // CHECK: return %[[R]]
  %0 = tg.mul %q, %cos : tensor<1x4x8x32xf32>, tensor<1x1x8x32xf32> -> tensor<1x4x8x32xf32>
  %1 = tg.slice %q {starts = [0, 0, 0, 0], steps = [1, 1, 1, 1]} : tensor<1x4x8x32xf32> -> tensor<1x4x8x16xf32>
  %2 = tg.slice %q {starts = [0, 0, 0, 16], steps = [1, 1, 1, 1]} : tensor<1x4x8x32xf32> -> tensor<1x4x8x16xf32>
  %3 = tg.neg %2 : tensor<1x4x8x16xf32>
  %4 = tg.concat %3, %1 {axis = 3 : i64} : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x32xf32>
  %5 = tg.mul %4, %sin : tensor<1x4x8x32xf32>, tensor<1x1x8x32xf32> -> tensor<1x4x8x32xf32>
  %6 = tg.add %0, %5 : tensor<1x4x8x32xf32>, tensor<1x4x8x32xf32> -> tensor<1x4x8x32xf32>
  return %6 : tensor<1x4x8x32xf32>
}

// -----

// Operands in the other order everywhere, halves from one split, the negation a product with
// -1, a negative concat axis and cos/sin of lower rank.
// CHECK-LABEL: func.func @rotary_split_commuted
// CHECK-SAME: (%[[Q:.+]]: tensor<2x8x16xf32>, %[[COS:.+]]: tensor<8x16xf32>, %[[SIN:.+]]: tensor<8x16xf32>)
func.func @rotary_split_commuted(%q: tensor<2x8x16xf32>, %cos: tensor<8x16xf32>, %sin: tensor<8x16xf32>) -> tensor<2x8x16xf32> {
  %m1 = tg.constant dense<-1.000000e+00> : tensor<f32>
  // CHECK: %[[R:.+]] = tg.rotary %[[Q]], %[[COS]], %[[SIN]] {interleaved = false}
  // CHECK: return %[[R]]
  %lo, %hi = tg.split %q {axis = 2 : i64} : tensor<2x8x16xf32> -> tensor<2x8x8xf32>, tensor<2x8x8xf32>
  %n = tg.mul %m1, %hi : tensor<f32>, tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %c = tg.concat %n, %lo {axis = -1 : i64} : tensor<2x8x8xf32>, tensor<2x8x8xf32> -> tensor<2x8x16xf32>
  %s = tg.mul %sin, %c : tensor<8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  %d = tg.mul %cos, %q : tensor<8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  %r = tg.add %s, %d : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  return %r : tensor<2x8x16xf32>
}

// -----

// Negative: the slices are not the two halves ([0, 16) and [12, 28) of 32).
// CHECK-LABEL: func.func @no_fuse_rotary_not_halves
func.func @no_fuse_rotary_not_halves(%q: tensor<4x32xf32>, %cos: tensor<4x32xf32>, %sin: tensor<4x32xf32>) -> tensor<4x32xf32> {
  // CHECK-NOT: tg.rotary
  // CHECK: tg.concat
  %0 = tg.mul %q, %cos : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  %1 = tg.slice %q {starts = [0, 0], steps = [1, 1]} : tensor<4x32xf32> -> tensor<4x16xf32>
  %2 = tg.slice %q {starts = [0, 12], steps = [1, 1]} : tensor<4x32xf32> -> tensor<4x16xf32>
  %3 = tg.neg %2 : tensor<4x16xf32>
  %4 = tg.concat %3, %1 {axis = 1 : i64} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x32xf32>
  %5 = tg.mul %4, %sin : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  %6 = tg.add %0, %5 : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  return %6 : tensor<4x32xf32>
}

// -----

// Negative: concat in the wrong order, cat(x1, -x2), is not rotate_half.
// CHECK-LABEL: func.func @no_fuse_rotary_concat_order
func.func @no_fuse_rotary_concat_order(%q: tensor<4x32xf32>, %cos: tensor<4x32xf32>, %sin: tensor<4x32xf32>) -> tensor<4x32xf32> {
  // CHECK-NOT: tg.rotary
  // CHECK: tg.concat
  %0 = tg.mul %q, %cos : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  %1 = tg.slice %q {starts = [0, 0], steps = [1, 1]} : tensor<4x32xf32> -> tensor<4x16xf32>
  %2 = tg.slice %q {starts = [0, 16], steps = [1, 1]} : tensor<4x32xf32> -> tensor<4x16xf32>
  %3 = tg.neg %2 : tensor<4x16xf32>
  %4 = tg.concat %1, %3 {axis = 1 : i64} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x32xf32>
  %5 = tg.mul %4, %sin : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  %6 = tg.add %0, %5 : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  return %6 : tensor<4x32xf32>
}

// -----

// Negative: the negation is on the wrong half, cat(-x1, x2): not rotate_half.
// CHECK-LABEL: func.func @no_fuse_rotary_neg_wrong_half
func.func @no_fuse_rotary_neg_wrong_half(%q: tensor<4x32xf32>, %cos: tensor<4x32xf32>, %sin: tensor<4x32xf32>) -> tensor<4x32xf32> {
  // CHECK-NOT: tg.rotary
  // CHECK: tg.neg
  %0 = tg.mul %q, %cos : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  %1 = tg.slice %q {starts = [0, 0], steps = [1, 1]} : tensor<4x32xf32> -> tensor<4x16xf32>
  %2 = tg.slice %q {starts = [0, 16], steps = [1, 1]} : tensor<4x32xf32> -> tensor<4x16xf32>
  %3 = tg.neg %1 : tensor<4x16xf32>
  %4 = tg.concat %3, %2 {axis = 1 : i64} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x32xf32>
  %5 = tg.mul %4, %sin : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  %6 = tg.add %0, %5 : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  return %6 : tensor<4x32xf32>
}

// -----

// Negative: the direct product multiplies a different tensor than the rotated one.
// CHECK-LABEL: func.func @no_fuse_rotary_two_inputs
func.func @no_fuse_rotary_two_inputs(%q: tensor<4x32xf32>, %k: tensor<4x32xf32>, %cos: tensor<4x32xf32>, %sin: tensor<4x32xf32>) -> tensor<4x32xf32> {
  // CHECK-NOT: tg.rotary
  // CHECK: tg.concat
  %0 = tg.mul %k, %cos : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  %1 = tg.slice %q {starts = [0, 0], steps = [1, 1]} : tensor<4x32xf32> -> tensor<4x16xf32>
  %2 = tg.slice %q {starts = [0, 16], steps = [1, 1]} : tensor<4x32xf32> -> tensor<4x16xf32>
  %3 = tg.neg %2 : tensor<4x16xf32>
  %4 = tg.concat %3, %1 {axis = 1 : i64} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x32xf32>
  %5 = tg.mul %4, %sin : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  %6 = tg.add %0, %5 : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  return %6 : tensor<4x32xf32>
}

// -----

// Negative: cos broadcasts the result beyond x's shape (x [4, 32], cos [2, 4, 32]).
// CHECK-LABEL: func.func @no_fuse_rotary_cos_grows
func.func @no_fuse_rotary_cos_grows(%q: tensor<4x32xf32>, %cos: tensor<2x4x32xf32>, %sin: tensor<4x32xf32>) -> tensor<2x4x32xf32> {
  // CHECK-NOT: tg.rotary
  // CHECK: tg.concat
  %0 = tg.mul %q, %cos : tensor<4x32xf32>, tensor<2x4x32xf32> -> tensor<2x4x32xf32>
  %1 = tg.slice %q {starts = [0, 0], steps = [1, 1]} : tensor<4x32xf32> -> tensor<4x16xf32>
  %2 = tg.slice %q {starts = [0, 16], steps = [1, 1]} : tensor<4x32xf32> -> tensor<4x16xf32>
  %3 = tg.neg %2 : tensor<4x16xf32>
  %4 = tg.concat %3, %1 {axis = 1 : i64} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x32xf32>
  %5 = tg.mul %4, %sin : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  %6 = tg.add %0, %5 : tensor<2x4x32xf32>, tensor<4x32xf32> -> tensor<2x4x32xf32>
  return %6 : tensor<2x4x32xf32>
}
