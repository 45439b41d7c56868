// RUN: tgc-opt %s --split-input-file --verify-diagnostics --tgc-mask-padding | FileCheck %s

// Attention over padded keys (not causal): an additive mask from the run's length, read from a
// new argument the runtime fills (tg.length_of = symbol + 1); the output's axes are labelled.
// CHECK-LABEL: func.func @mask_keys
// CHECK-SAME: %[[LEN:[^:]+]]: tensor<1xi64> {tg.length_of = 2 : i64, tg.name = "tgc.length.seq"}
// CHECK-SAME: -> (tensor<2x8x2x4xf32> {tg.dim_symbols = [0, 1, -1, -1]})
func.func @mask_keys(%x: tensor<2x8x2x4xf32> {tg.dim_symbols = [0, 1, -1, -1]}) -> tensor<2x8x2x4xf32>
    attributes {tg.symbol_names = ["batch", "seq"]} {
  // CHECK: %[[IOTA:.+]] = tg.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
  // CHECK: %[[VALID:.+]] = tg.less %[[IOTA]], %[[LEN]]
  // CHECK: %[[ROW:.+]] = tg.where %[[VALID]]
  // CHECK: %[[MASK:.+]] = tg.reshape %[[ROW]] : tensor<8xf32> -> tensor<1x1x1x8xf32>
  // CHECK: tg.attention %{{.+}}, %{{.+}}, %{{.+}}, %[[MASK]] {causal = false, layout = "bshd"
  %a = tg.attention %x, %x, %x {causal = false, layout = "bshd", scale = 0.5 : f32} : tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x8x2x4xf32>
  return %a : tensor<2x8x2x4xf32>
}

// -----

// Causal attention with queries and keys padded along one dim (S = T): the causal mask already
// hides every padded key from every valid query, so nothing is added.
// CHECK-LABEL: func.func @causal_needs_no_mask
// CHECK-NOT: tg.length_of
// CHECK: tg.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}} {causal = true
func.func @causal_needs_no_mask(%x: tensor<1x8x2x4xf32> {tg.dim_symbols = [-1, 0, -1, -1]}) -> tensor<1x8x2x4xf32> {
  %a = tg.attention %x, %x, %x {causal = true, layout = "bshd", scale = 0.5 : f32} : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32> -> tensor<1x8x2x4xf32>
  return %a : tensor<1x8x2x4xf32>
}

// -----

// Rows of a padded grid: a reshape merges batch and seq for a linear and splits them back, so
// the output keeps both labels.
// CHECK-LABEL: func.func @rows_through_reshape
// CHECK-SAME: -> (tensor<2x8x3xf32> {tg.dim_symbols = [0, 1, -1]})
func.func @rows_through_reshape(%x: tensor<2x8x4xf32> {tg.dim_symbols = [0, 1, -1]}, %w: tensor<3x4xf32>) -> tensor<2x8x3xf32>
    attributes {tg.symbol_names = ["batch", "seq"]} {
  %r = tg.reshape %x : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %l = tg.linear %r, %w : tensor<16x4xf32>, tensor<3x4xf32> -> tensor<16x3xf32>
  %o = tg.reshape %l : tensor<16x3xf32> -> tensor<2x8x3xf32>
  %n = tg.layer_norm %o {axis = 2 : i64, epsilon = 1.0e-5 : f32} : tensor<2x8x3xf32> -> tensor<2x8x3xf32>
  return %n : tensor<2x8x3xf32>
}

// -----

// Negative: a mean over the padded axis would average padding in; refused, naming the dim.
func.func @refuse_mean_over_seq(%x: tensor<2x8x4xf32> {tg.dim_symbols = [0, 1, -1]}) -> tensor<2x4xf32>
    attributes {tg.symbol_names = ["batch", "seq"]} {
  // expected-error @+1 {{a bucketed package cannot pad this: tg.reduce_mean (the reduction along axis 1 mixes the padded 'seq' positions into valid ones)}}
  %m = tg.reduce_mean %x {axes = [1], keepdims = false} : tensor<2x8x4xf32> -> tensor<2x4xf32>
  return %m : tensor<2x4xf32>
}

// -----

// Negative: softmax along the padded axis outside attention.
func.func @refuse_softmax_over_seq(%x: tensor<2x8xf32> {tg.dim_symbols = [-1, 0]}) -> tensor<2x8xf32>
    attributes {tg.symbol_names = ["seq"]} {
  // expected-error @+1 {{softmax along axis 1 mixes the padded 'seq' positions into valid ones}}
  %s = tg.softmax %x {axis = 1 : i64} : tensor<2x8xf32>
  return %s : tensor<2x8xf32>
}

// -----

// Negative: the last position (x[:, -1]) of a padded axis is padding in a shorter run.
func.func @refuse_last_position(%x: tensor<2x8x4xf32> {tg.dim_symbols = [-1, 0, -1]}) -> tensor<2x1x4xf32>
    attributes {tg.symbol_names = ["seq"]} {
  // expected-error @+1 {{it slices along axis 1, whose padded 'seq' positions it would keep or shift}}
  %s = tg.slice %x {starts = [0, 7, 0], steps = [1, 1, 1]} : tensor<2x8x4xf32> -> tensor<2x1x4xf32>
  return %s : tensor<2x1x4xf32>
}

// -----

// Without tg.dim_symbols (every single-shape compile) the pass changes nothing.
// CHECK-LABEL: func.func @not_bucketed
// CHECK-NOT: tg.dim_symbols
// CHECK: tg.reduce_mean
func.func @not_bucketed(%x: tensor<2x8x4xf32>) -> tensor<2x4xf32> {
  %m = tg.reduce_mean %x {axes = [1], keepdims = false} : tensor<2x8x4xf32> -> tensor<2x4xf32>
  return %m : tensor<2x4xf32>
}

// -----

// A per-position lookup (constant indices 0..n-1 along the padded axis: position i reads
// position i) and a concat with an empty operand (an empty past cache) keep positions apart.
// CHECK-LABEL: func.func @lookup_and_empty_concat
// CHECK-SAME: -> (tensor<1x1x8xi1> {tg.dim_symbols = [-1, -1, 0]}, tensor<1x8x4xf32> {tg.dim_symbols = [-1, 0, -1]})
func.func @lookup_and_empty_concat(%m: tensor<8x1xi1> {tg.dim_symbols = [0, -1]}, %x: tensor<1x8x4xf32> {tg.dim_symbols = [-1, 0, -1]}, %past: tensor<1x0x4xf32>) -> (tensor<1x1x8xi1>, tensor<1x8x4xf32>)
    attributes {tg.symbol_names = ["seq"]} {
  %i = tg.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
  %g = tg.gather %m, %i {axis = 0 : i64} : tensor<8x1xi1>, tensor<1x8xi64> -> tensor<1x8x1xi1>
  %r = tg.reshape %g : tensor<1x8x1xi1> -> tensor<1x1x8xi1>
  %c = tg.concat %past, %x {axis = 1 : i64} : tensor<1x0x4xf32>, tensor<1x8x4xf32> -> tensor<1x8x4xf32>
  return %r, %c : tensor<1x1x8xi1>, tensor<1x8x4xf32>
}

// -----

// Negative: indices that are not the identity (a reversal) read padded positions.
func.func @refuse_reversed_lookup(%m: tensor<4x1xi1> {tg.dim_symbols = [0, -1]}) -> tensor<4x1xi1>
    attributes {tg.symbol_names = ["seq"]} {
  %i = tg.constant dense<[3, 2, 1, 0]> : tensor<4xi64>
  // expected-error @+1 {{it gathers along axis 0, which is padded}}
  %g = tg.gather %m, %i {axis = 0 : i64} : tensor<4x1xi1>, tensor<4xi64> -> tensor<4x1xi1>
  return %g : tensor<4x1xi1>
}
