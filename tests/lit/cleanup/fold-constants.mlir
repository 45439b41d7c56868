// RUN: tgc-opt %s --split-input-file --tgc-fold-constants | FileCheck %s

// Shape arithmetic on constants folds to one constant.
// CHECK-LABEL: func.func @fold_shape_chain
func.func @fold_shape_chain() -> tensor<2xi64> {
  %0 = tg.constant dense<[1, 32, 128]> : tensor<3xi64>
  %1 = tg.constant dense<[0, 2]> : tensor<2xi64>
  %2 = tg.gather %0, %1 {axis = 0 : i64} : tensor<3xi64>, tensor<2xi64> -> tensor<2xi64>
  %3 = tg.constant dense<2> : tensor<2xi64>
  %4 = tg.mul %2, %3 : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
  // CHECK: %[[C:.+]] = tg.constant dense<[2, 256]> : tensor<2xi64>
  // CHECK-NOT: tg.gather
  // CHECK-NOT: tg.mul
  // CHECK: return %[[C]]
  return %4 : tensor<2xi64>
}

// -----

// A transposed weight folds at compile time.
// CHECK-LABEL: func.func @fold_weight_transpose
func.func @fold_weight_transpose(%x: tensor<1x2xf32>) -> tensor<1x3xf32> {
  %w = tg.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %t = tg.transpose %w {perm = [1, 0]} : tensor<2x3xf32> -> tensor<3x2xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
  // CHECK: tg.linear %{{.+}}, %[[W]]
  %y = tg.linear %x, %t : tensor<1x2xf32>, tensor<3x2xf32> -> tensor<1x3xf32>
  return %y : tensor<1x3xf32>
}

// -----

// Negative: an op with a non-constant operand stays.
// CHECK-LABEL: func.func @no_fold_runtime_operand
func.func @no_fold_runtime_operand(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = tg.constant dense<1.0> : tensor<2xf32>
  // CHECK: tg.add
  %0 = tg.add %x, %c : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Negative: folding is bounded by max-elements.
// RUN: tgc-opt %s --split-input-file --tgc-fold-constants=max-elements=2 | FileCheck %s --check-prefix=SMALL
// SMALL-LABEL: func.func @no_fold_large
// CHECK-LABEL: func.func @no_fold_large
func.func @no_fold_large() -> tensor<4xf32> {
  %c = tg.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  // SMALL: tg.neg
  // CHECK-NOT: tg.neg
  %0 = tg.neg %c : tensor<4xf32>
  return %0 : tensor<4xf32>
}
