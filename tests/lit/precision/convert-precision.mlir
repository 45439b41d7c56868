// RUN: tgc-opt %s --split-input-file --tgc-convert-precision | FileCheck %s
// RUN: tgc-opt %s --split-input-file --tgc-convert-precision=precision=bf16 | FileCheck %s --check-prefix=BF16

// f32 inside becomes f16; the weight is converted at compile time; casts only at the edges.
// CHECK-LABEL: func.func @linear_tanh
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>) -> tensor<2x3xf32>
// CHECK: %[[XI:.+]] = tg.cast %[[X]] : tensor<2x4xf32> -> tensor<2x4xf16>
// CHECK: %[[W:.+]] = tg.constant dense<9.997550e-02> : tensor<3x4xf16>
// CHECK: %[[L:.+]] = tg.linear %[[XI]], %[[W]] : tensor<2x4xf16>, tensor<3x4xf16> -> tensor<2x3xf16>
// CHECK: %[[T:.+]] = tg.tanh %[[L]] : tensor<2x3xf16>
// CHECK: %[[O:.+]] = tg.cast %[[T]] : tensor<2x3xf16> -> tensor<2x3xf32>
// CHECK: return %[[O]]
// BF16-LABEL: func.func @linear_tanh
// BF16: tg.linear {{.+}} -> tensor<2x3xbf16>
func.func @linear_tanh(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = tg.constant dense<0.1> : tensor<3x4xf32>
  %0 = tg.linear %x, %w : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
  %1 = tg.tanh %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// Negative: integer values and integer interfaces are left alone.
// CHECK-LABEL: func.func @no_convert_integers
// CHECK-NOT: tg.cast
// CHECK: tg.add {{.+}} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
func.func @no_convert_integers(%x: tensor<4xi64>) -> tensor<4xi64> {
  %0 = tg.add %x, %x : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// A gather from an f32 table with integer ids: the table converts, the ids do not.
// CHECK-LABEL: func.func @embedding
// CHECK: tg.constant dense<{{.+}}> : tensor<10x4xf16>
// CHECK: tg.gather {{.+}} : tensor<10x4xf16>, tensor<3xi64> -> tensor<3x4xf16>
// CHECK: tg.cast {{.+}} : tensor<3x4xf16> -> tensor<3x4xf32>
func.func @embedding(%ids: tensor<3xi64>) -> tensor<3x4xf32> {
  %t = tg.constant dense<0.5> : tensor<10x4xf32>
  %0 = tg.gather %t, %ids {axis = 0 : i64} : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
