// RUN: tgc-opt %s --split-input-file --verify-diagnostics

// `bias` names an operand: it needs one.
func.func @bias_without_operand(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{expected SSA operand}}
  %0 = tg.layer_norm %x, bias {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// After a scale the bias is positional: `bias` is only for a bias without a scale.
func.func @named_bias_after_scale(%x: tensor<2x8xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{expected SSA operand}}
  %0 = tg.layer_norm %x, %s, bias %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
