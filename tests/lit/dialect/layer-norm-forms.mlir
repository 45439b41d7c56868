// RUN: tgc-opt %s | tgc-opt | FileCheck %s
// RUN: tgc-opt %s | tgc-opt --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// tg.layer_norm's four operand forms print and read back as themselves: a bias without a scale
// is named (`bias %b`), so it does not read back as a scale.
// CHECK-LABEL: func.func @forms
func.func @forms(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  // CHECK: tg.layer_norm %{{[^ ,]+}} {axis = 1 : i64{{.*}}} : tensor<2x8xf32> -> tensor<2x8xf32>
  // GENERIC: "tg.layer_norm"(%{{[^ ,]+}}) {{.*}}operand_segment_sizes = dense<[1, 0, 0]>
  %0 = tg.layer_norm %x {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: tg.layer_norm %{{[^ ,]+}}, %{{[^ ,]+}} {axis = 1 : i64{{.*}}} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  // GENERIC: operand_segment_sizes = dense<[1, 1, 0]>
  %1 = tg.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  // CHECK: tg.layer_norm %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} {axis = 1 : i64{{.*}}} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  // GENERIC: operand_segment_sizes = dense<1> : vector<3xi32>
  %2 = tg.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  // CHECK: tg.layer_norm %{{[^ ,]+}}, bias %{{[^ ,]+}} {axis = 1 : i64{{.*}}} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  // GENERIC: operand_segment_sizes = dense<[1, 0, 1]>
  %3 = tg.layer_norm %x, bias %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return %0, %1, %2, %3 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}


// A bias written as the generic form prints named.
// CHECK-LABEL: func.func @generic_bias
func.func @generic_bias(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  // CHECK: tg.layer_norm %{{[^ ,]+}}, bias %{{[^ ,]+}} {axis
  %0 = "tg.layer_norm"(%x, %b) {axis = 1 : i64, epsilon = 1.0e-5 : f32, operand_segment_sizes = dense<[1, 0, 1]> : vector<3xi32>} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// An SSA value named %bias is an operand like any other: here the scale.
// CHECK-LABEL: func.func @value_named_bias
func.func @value_named_bias(%x: tensor<2x8xf32>, %bias: tensor<8xf32>) -> tensor<2x8xf32> {
  // CHECK: tg.layer_norm %{{[^ ,]+}}, %{{[^ ,]+}} {axis
  // GENERIC: operand_segment_sizes = dense<[1, 1, 0]>
  %0 = tg.layer_norm %x, %bias {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
