// RUN: tgc-opt %s --split-input-file --tgc-recognize-swiglu | FileCheck %s

// LLaMA after tgc-merge-parallel-linears: one gate+up linear, a split, silu(gate) * up.
// CHECK-LABEL: func.func @swiglu_split
// CHECK-SAME: (%[[X:.+]]: tensor<1x4x16xf32>, %[[W:.+]]: tensor<24x16xf32>)
func.func @swiglu_split(%x: tensor<1x4x16xf32>, %w: tensor<24x16xf32>) -> tensor<1x4x12xf32> {
  // CHECK: %[[L:.+]] = tg.linear %[[X]], %[[W]]
  // CHECK: %[[S:.+]] = tg.swiglu %[[L]] : tensor<1x4x24xf32> -> tensor<1x4x12xf32>
  // CHECK-NOT: tg.split
  // CHECK-NOT: tg.silu
  // CHECK: return %[[S]]
  %0 = tg.linear %x, %w : tensor<1x4x16xf32>, tensor<24x16xf32> -> tensor<1x4x24xf32>
  %1:2 = tg.split %0 {axis = 2 : i64} : tensor<1x4x24xf32> -> tensor<1x4x12xf32>, tensor<1x4x12xf32>
  %2 = tg.silu %1#0 : tensor<1x4x12xf32>
  %3 = tg.mul %2, %1#1 : tensor<1x4x12xf32>, tensor<1x4x12xf32> -> tensor<1x4x12xf32>
  return %3 : tensor<1x4x12xf32>
}

// -----

// Factors commuted, halves written as two slices.
// CHECK-LABEL: func.func @swiglu_slices_commuted
// CHECK-SAME: (%[[X:.+]]: tensor<3x8xf32>)
func.func @swiglu_slices_commuted(%x: tensor<3x8xf32>) -> tensor<3x4xf32> {
  // CHECK: %[[S:.+]] = tg.swiglu %[[X]] : tensor<3x8xf32> -> tensor<3x4xf32>
  // CHECK: return %[[S]]
  %a = tg.slice %x {starts = [0, 0], steps = [1, 1]} : tensor<3x8xf32> -> tensor<3x4xf32>
  %b = tg.slice %x {starts = [0, 4], steps = [1, 1]} : tensor<3x8xf32> -> tensor<3x4xf32>
  %s = tg.silu %a : tensor<3x4xf32>
  %m = tg.mul %b, %s : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  return %m : tensor<3x4xf32>
}

// -----

// Negative: silu of the upper half times the lower half is not this layout.
// CHECK-LABEL: func.func @no_fuse_swiglu_silu_on_upper_half
func.func @no_fuse_swiglu_silu_on_upper_half(%x: tensor<3x8xf32>) -> tensor<3x4xf32> {
  // CHECK-NOT: tg.swiglu
  // CHECK: tg.silu
  %0:2 = tg.split %x {axis = 1 : i64} : tensor<3x8xf32> -> tensor<3x4xf32>, tensor<3x4xf32>
  %1 = tg.silu %0#1 : tensor<3x4xf32>
  %2 = tg.mul %1, %0#0 : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  return %2 : tensor<3x4xf32>
}

// -----

// Negative: the halves come from two different tensors.
// CHECK-LABEL: func.func @no_fuse_swiglu_two_tensors
func.func @no_fuse_swiglu_two_tensors(%x: tensor<3x8xf32>, %y: tensor<3x8xf32>) -> tensor<3x4xf32> {
  // CHECK-NOT: tg.swiglu
  // CHECK: tg.silu
  %0:2 = tg.split %x {axis = 1 : i64} : tensor<3x8xf32> -> tensor<3x4xf32>, tensor<3x4xf32>
  %1:2 = tg.split %y {axis = 1 : i64} : tensor<3x8xf32> -> tensor<3x4xf32>, tensor<3x4xf32>
  %2 = tg.silu %0#0 : tensor<3x4xf32>
  %3 = tg.mul %2, %1#1 : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  return %3 : tensor<3x4xf32>
}

// -----

// Negative: a split on another axis than the last has no last-dim halves.
// CHECK-LABEL: func.func @no_fuse_swiglu_split_not_last_axis
func.func @no_fuse_swiglu_split_not_last_axis(%x: tensor<6x4xf32>) -> tensor<3x4xf32> {
  // CHECK-NOT: tg.swiglu
  // CHECK: tg.silu
  %0:2 = tg.split %x {axis = 0 : i64} : tensor<6x4xf32> -> tensor<3x4xf32>, tensor<3x4xf32>
  %1 = tg.silu %0#0 : tensor<3x4xf32>
  %2 = tg.mul %1, %0#1 : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  return %2 : tensor<3x4xf32>
}
