// RUN: tgc-opt %s --split-input-file --verify-diagnostics --tgc-use-static-kv-cache | FileCheck %s

// A step: Concat(past, new) becomes the token's write into the cache state at its position;
// attention reads the whole cache; the present result is the state, still marked.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[POS:[^:]+]]: tensor<1x1xi64> {tg.name = "position_ids"}, %[[NEW:[^:]+]]: tensor<1x2x1x4xf32>, %[[STATE:[^:]+]]: tensor<1x2x8x4xf32> {tg.name = "past.0", tg.state = 0 : i64})
// CHECK-SAME: -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> {tg.state = 0 : i64})
func.func @step(%pos: tensor<1x1xi64> {tg.name = "position_ids"}, %past: tensor<1x2x7x4xf32> {tg.name = "past.0", tg.state = 0 : i64}, %new: tensor<1x2x1x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> {tg.state = 0 : i64})
    attributes {tg.decode = "step", tg.max_seq = 8 : i64} {
  // CHECK: %[[SLOT:.+]] = tg.reshape %[[POS]] : tensor<1x1xi64> -> tensor<1x1x1x1xi64>
  // CHECK: %[[IDX:.+]] = tg.expand %[[SLOT]] : tensor<1x1x1x1xi64> -> tensor<1x2x1x4xi64>
  // CHECK: %[[W:.+]] = tg.scatter_elements %[[STATE]], %[[IDX]], %[[NEW]] {axis = 2 : i64, reduction = "none"}
  // CHECK-NOT: tg.concat
  // CHECK: %[[E:.+]] = tg.exp %[[W]]
  // CHECK: return %[[E]], %[[W]]
  %c = tg.concat %past, %new {axis = 2 : i64} : tensor<1x2x7x4xf32>, tensor<1x2x1x4xf32> -> tensor<1x2x8x4xf32>
  %e = tg.exp %c : tensor<1x2x8x4xf32>
  return %e, %c : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// Prefill: an empty past; the prompt's keys go to slots 0..S-1 (not by position_ids, which
// padding fills with zeros), and the model keeps reading them as before.
// CHECK-LABEL: func.func @prefill
// CHECK-SAME: -> (tensor<1x2x3x4xf32>, tensor<1x2x8x4xf32> {tg.state = 0 : i64})
func.func @prefill(%past: tensor<1x2x0x4xf32> {tg.name = "past.0", tg.state = 0 : i64}, %new: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> {tg.state = 0 : i64})
    attributes {tg.decode = "prefill", tg.max_seq = 8 : i64} {
  // CHECK: tg.constant dense<{{\[\[\[\[}}0], [1], [2]]]]> : tensor<1x1x3x1xi64>
  // CHECK: tg.scatter_elements
  %c = tg.concat %past, %new {axis = 2 : i64} : tensor<1x2x0x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  %e = tg.exp %c : tensor<1x2x3x4xf32>
  return %e, %c : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}

// -----

// Negative: a step whose present is not Concat(past, new) is refused, naming the state.
// expected-error @+1 {{cannot use a static cache for state 0: its present is not Concat(past, new) along the positions axis}}
func.func @not_a_concat(%pos: tensor<1x1xi64> {tg.name = "position_ids"}, %past: tensor<1x2x7x4xf32> {tg.name = "past.0", tg.state = 0 : i64}) -> (tensor<1x2x7x4xf32> {tg.state = 0 : i64})
    attributes {tg.decode = "step", tg.max_seq = 8 : i64} {
  %e = tg.exp %past : tensor<1x2x7x4xf32>
  return %e : tensor<1x2x7x4xf32>
}

// -----

// Without tg.decode the pass changes nothing.
// CHECK-LABEL: func.func @not_decode
// CHECK: tg.concat
func.func @not_decode(%past: tensor<1x2x7x4xf32> {tg.state = 0 : i64}, %new: tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32> {
  %c = tg.concat %past, %new {axis = 2 : i64} : tensor<1x2x7x4xf32>, tensor<1x2x1x4xf32> -> tensor<1x2x8x4xf32>
  return %c : tensor<1x2x8x4xf32>
}
