// RUN: tgc-opt %s --split-input-file --tgc-recognize-activations | FileCheck %s

// BERT/ViT TorchScript order: Div(√2), Erf, Add 1, Mul x, Mul 0.5.
// CHECK-LABEL: func.func @gelu_erf
func.func @gelu_erf(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %sqrt2 = tg.constant dense<1.41421354> : tensor<f32>
  // CHECK: %[[G:.+]] = tg.gelu %{{.+}} {tanh_approx = false} : tensor<2x8xf32>
  // CHECK-NOT: tg.erf
  // CHECK: return %[[G]]
  %0 = tg.div %x, %sqrt2 : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %1 = tg.erf %0 : tensor<2x8xf32>
  %2 = tg.add %1, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %3 = tg.mul %x, %2 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %4 = tg.mul %3, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  return %4 : tensor<2x8xf32>
}

// -----

// Other association: (0.5 * x) * (1 + erf(x * 0.70710677)), constants on the left.
// CHECK-LABEL: func.func @gelu_erf_reassociated
func.func @gelu_erf_reassociated(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %half = tg.constant dense<5.000000e-01> : tensor<1xf32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %rsqrt2 = tg.constant dense<0.707106769> : tensor<f32>
  // CHECK: %[[G:.+]] = tg.gelu %{{.+}} {tanh_approx = false} : tensor<2x8xf32>
  // CHECK: return %[[G]]
  %0 = tg.mul %rsqrt2, %x : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %1 = tg.erf %0 : tensor<2x8xf32>
  %2 = tg.add %one, %1 : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %3 = tg.mul %half, %x : tensor<1xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %4 = tg.mul %3, %2 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %4 : tensor<2x8xf32>
}

// -----

// Negative: the wrong scale (0.6 instead of 0.5) is not GELU.
// CHECK-LABEL: func.func @no_fuse_gelu_wrong_constant
func.func @no_fuse_gelu_wrong_constant(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %c = tg.constant dense<6.000000e-01> : tensor<f32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %sqrt2 = tg.constant dense<1.41421354> : tensor<f32>
  // CHECK-NOT: tg.gelu
  // CHECK: tg.erf
  %0 = tg.div %x, %sqrt2 : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %1 = tg.erf %0 : tensor<2x8xf32>
  %2 = tg.add %1, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %3 = tg.mul %x, %2 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %4 = tg.mul %3, %c : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  return %4 : tensor<2x8xf32>
}

// -----

// Negative: erf of a different value than the one multiplied.
// CHECK-LABEL: func.func @no_fuse_gelu_two_inputs
func.func @no_fuse_gelu_two_inputs(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %sqrt2 = tg.constant dense<1.41421354> : tensor<f32>
  // CHECK-NOT: tg.gelu
  %0 = tg.div %y, %sqrt2 : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %1 = tg.erf %0 : tensor<2x8xf32>
  %2 = tg.add %1, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %3 = tg.mul %x, %2 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %4 = tg.mul %3, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  return %4 : tensor<2x8xf32>
}

// -----

// GPT-2 order: Mul 0.5, Pow 3, Mul 0.044715, Add x, Mul √(2/π), Tanh, Add 1, Mul.
// CHECK-LABEL: func.func @gelu_tanh
func.func @gelu_tanh(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %k = tg.constant dense<0.797884583> : tensor<f32>
  %c = tg.constant dense<4.471500e-02> : tensor<f32>
  %three = tg.constant dense<3.000000e+00> : tensor<f32>
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  // CHECK: %[[G:.+]] = tg.gelu %{{.+}} {tanh_approx = true} : tensor<2x8xf32>
  // CHECK-NOT: tg.tanh
  // CHECK: return %[[G]]
  %0 = tg.mul %x, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %1 = tg.pow %x, %three : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %2 = tg.mul %1, %c : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %3 = tg.add %x, %2 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %4 = tg.mul %3, %k : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %5 = tg.tanh %4 : tensor<2x8xf32>
  %6 = tg.add %5, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %7 = tg.mul %0, %6 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %7 : tensor<2x8xf32>
}

// -----

// The cube written as x * x * x, the scale applied last.
// CHECK-LABEL: func.func @gelu_tanh_cube_as_products
func.func @gelu_tanh_cube_as_products(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %k = tg.constant dense<0.797884583> : tensor<f32>
  %c = tg.constant dense<4.471500e-02> : tensor<f32>
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  // CHECK: %[[G:.+]] = tg.gelu %{{.+}} {tanh_approx = true} : tensor<2x8xf32>
  // CHECK: return %[[G]]
  %0 = tg.mul %x, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %1 = tg.mul %0, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %2 = tg.mul %c, %1 : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %3 = tg.add %2, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %4 = tg.mul %k, %3 : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %5 = tg.tanh %4 : tensor<2x8xf32>
  %6 = tg.add %one, %5 : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %7 = tg.mul %x, %6 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %8 = tg.mul %7, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  return %8 : tensor<2x8xf32>
}

// -----

// Negative: x² instead of x³ inside the tanh.
// CHECK-LABEL: func.func @no_fuse_gelu_tanh_square
func.func @no_fuse_gelu_tanh_square(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %k = tg.constant dense<0.797884583> : tensor<f32>
  %c = tg.constant dense<4.471500e-02> : tensor<f32>
  %two = tg.constant dense<2.000000e+00> : tensor<f32>
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  // CHECK-NOT: tg.gelu
  // CHECK: tg.tanh
  %0 = tg.mul %x, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %1 = tg.pow %x, %two : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %2 = tg.mul %1, %c : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %3 = tg.add %x, %2 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %4 = tg.mul %3, %k : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %5 = tg.tanh %4 : tensor<2x8xf32>
  %6 = tg.add %5, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %7 = tg.mul %0, %6 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %7 : tensor<2x8xf32>
}

// -----

// LLaMA MLP: x * sigmoid(x), in either operand order.
// CHECK-LABEL: func.func @silu
func.func @silu(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  // CHECK: %[[S1:.+]] = tg.silu %{{.+}} : tensor<2x8xf32>
  // CHECK: %[[S2:.+]] = tg.silu %{{.+}} : tensor<2x8xf32>
  // CHECK-NOT: tg.mul
  // CHECK: return %[[S1]], %[[S2]]
  %0 = tg.sigmoid %x : tensor<2x8xf32>
  %1 = tg.mul %x, %0 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %2 = tg.mul %0, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %1, %2 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Negative: sigmoid of another value (a gate) is SwiGLU-like, not SiLU.
// CHECK-LABEL: func.func @no_fuse_silu_other_input
func.func @no_fuse_silu_other_input(%x: tensor<2x8xf32>, %g: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // CHECK-NOT: tg.silu
  // CHECK: tg.mul
  %0 = tg.sigmoid %g : tensor<2x8xf32>
  %1 = tg.mul %x, %0 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %1 : tensor<2x8xf32>
}
