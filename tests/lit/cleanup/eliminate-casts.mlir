// RUN: tgc-opt %s --split-input-file --tgc-eliminate-casts | FileCheck %s

// CHECK-LABEL: func.func @fold_cast_to_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
func.func @fold_cast_to_same_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NOT: tg.cast
  // CHECK: return %[[X]]
  %0 = tg.cast %x : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// f16 -> f32 -> f16, bf16 -> f32 -> bf16 and i32 -> i64 -> i32 are exact round trips.
// CHECK-LABEL: func.func @fold_cast_round_trip
// CHECK-SAME: (%[[H:.+]]: tensor<4xf16>, %[[B:.+]]: tensor<4xbf16>, %[[I:.+]]: tensor<4xi32>)
func.func @fold_cast_round_trip(%h: tensor<4xf16>, %b: tensor<4xbf16>, %i: tensor<4xi32>)
    -> (tensor<4xf16>, tensor<4xbf16>, tensor<4xi32>) {
  // CHECK-NOT: tg.cast
  // CHECK: return %[[H]], %[[B]], %[[I]]
  %0 = tg.cast %h : tensor<4xf16> -> tensor<4xf32>
  %1 = tg.cast %0 : tensor<4xf32> -> tensor<4xf16>
  %2 = tg.cast %b : tensor<4xbf16> -> tensor<4xf32>
  %3 = tg.cast %2 : tensor<4xf32> -> tensor<4xbf16>
  %4 = tg.cast %i : tensor<4xi32> -> tensor<4xi64>
  %5 = tg.cast %4 : tensor<4xi64> -> tensor<4xi32>
  return %1, %3, %5 : tensor<4xf16>, tensor<4xbf16>, tensor<4xi32>
}

// -----

// Negative: f32 -> f16 -> f32 rounds, and i64 -> i32 -> i64 wraps; both stay.
// CHECK-LABEL: func.func @no_fold_narrowing_round_trip
func.func @no_fold_narrowing_round_trip(%x: tensor<4xf32>, %i: tensor<4xi64>)
    -> (tensor<4xf32>, tensor<4xi64>) {
  // CHECK: tg.cast %{{.+}} : tensor<4xf32> -> tensor<4xf16>
  // CHECK: tg.cast %{{.+}} : tensor<4xf16> -> tensor<4xf32>
  // CHECK: tg.cast %{{.+}} : tensor<4xi64> -> tensor<4xi32>
  // CHECK: tg.cast %{{.+}} : tensor<4xi32> -> tensor<4xi64>
  %0 = tg.cast %x : tensor<4xf32> -> tensor<4xf16>
  %1 = tg.cast %0 : tensor<4xf16> -> tensor<4xf32>
  %2 = tg.cast %i : tensor<4xi64> -> tensor<4xi32>
  %3 = tg.cast %2 : tensor<4xi32> -> tensor<4xi64>
  return %1, %3 : tensor<4xf32>, tensor<4xi64>
}

// -----

// Two casts of one value to one type become one.
// CHECK-LABEL: func.func @merge_duplicate_casts
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
func.func @merge_duplicate_casts(%x: tensor<4xf32>) -> (tensor<4xf16>, tensor<4xf16>) {
  // CHECK: %[[C:.+]] = tg.cast %[[X]] : tensor<4xf32> -> tensor<4xf16>
  // CHECK-NOT: tg.cast
  // CHECK: return %[[C]], %[[C]]
  %0 = tg.cast %x : tensor<4xf32> -> tensor<4xf16>
  %1 = tg.cast %x : tensor<4xf32> -> tensor<4xf16>
  return %0, %1 : tensor<4xf16>, tensor<4xf16>
}

// -----

// Negative: casts of one value to different types both stay.
// CHECK-LABEL: func.func @no_merge_different_types
func.func @no_merge_different_types(%x: tensor<4xf32>) -> (tensor<4xf16>, tensor<4xbf16>) {
  // CHECK: tg.cast %{{.+}} : tensor<4xf32> -> tensor<4xf16>
  // CHECK: tg.cast %{{.+}} : tensor<4xf32> -> tensor<4xbf16>
  %0 = tg.cast %x : tensor<4xf32> -> tensor<4xf16>
  %1 = tg.cast %x : tensor<4xf32> -> tensor<4xbf16>
  return %0, %1 : tensor<4xf16>, tensor<4xbf16>
}
