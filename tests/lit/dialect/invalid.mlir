// RUN: tgc-opt %s --split-input-file --verify-diagnostics

func.func @add_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{operand shapes 2x3 and 4 do not broadcast}}
  %0 = tg.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @add_wrong_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3x3xf32> {
  // expected-error @+1 {{result shape 3x3 should be 2x3}}
  %0 = tg.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @linear_bad_k(%x: tensor<4x8xf32>, %w: tensor<16x7xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{weight must be [N, K] with K = input's last dim}}
  %0 = tg.linear %x, %w : tensor<4x8xf32>, tensor<16x7xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{element count changes from 2x3 to 7}}
  %0 = tg.reshape %x : tensor<2x3xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @transpose_not_perm(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{perm is not a permutation}}
  %0 = tg.transpose %x {perm = [0, 0]} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @slice_out_of_bounds(%x: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{dim 0 reads outside the input}}
  %0 = tg.slice %x {starts = [2], steps = [1]} : tensor<4xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @split_sizes(%x: tensor<6xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{result sizes sum to 5, input has 6}}
  %0:2 = tg.split %x {axis = 0 : i64} : tensor<6xf32> -> tensor<2xf32>, tensor<3xf32>
  return %0#0 : tensor<2xf32>
}

// -----

func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{must be statically shaped tensor}}
  %0 = tg.neg %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @attention_gqa_heads(%q: tensor<1x3x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x3x8x16xf32> {
  // expected-error @+1 {{query heads (3) must be a multiple of key/value heads (2)}}
  %0 = tg.attention %q, %k, %v {scale = 1.0 : f32} : tensor<1x3x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x3x8x16xf32>
  return %0 : tensor<1x3x8x16xf32>
}

// -----

func.func @attention_head_dim(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x8xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{head dim of k (8) differs from q's (16)}}
  %0 = tg.attention %q, %k, %v {scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}

// -----

func.func @attention_mask(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>, %m: tensor<1x1x8x8xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{mask shape 1x1x8x8 does not broadcast to 1x2x8x4}}
  %0 = tg.attention %q, %k, %v, %m {scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1x1x8x8xf32> -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}

// -----

func.func @attention_bad_layout(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{layout must be "bhsd" or "bshd"; got "bhds"}}
  %0 = tg.attention %q, %k, %v {layout = "bhds", scale = 1.0 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}

// -----

// In bshd the mask still broadcasts to [B, Hq, S, T] = 1x2x8x4, not to the operands' order.
func.func @attention_bshd_mask(%q: tensor<1x8x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x16xf32>, %m: tensor<1x8x2x4xf32>) -> tensor<1x8x2x16xf32> {
  // expected-error @+1 {{mask shape 1x8x2x4 does not broadcast to 1x2x8x4}}
  %0 = tg.attention %q, %k, %v, %m {layout = "bshd", scale = 1.0 : f32} : tensor<1x8x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x8x2x4xf32> -> tensor<1x8x2x16xf32>
  return %0 : tensor<1x8x2x16xf32>
}

// -----

func.func @attention_bshd_result(%q: tensor<1x8x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{result shape 1x2x8x16 should be 1x8x2x16}}
  %0 = tg.attention %q, %k, %v {layout = "bshd", scale = 1.0 : f32} : tensor<1x8x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32> -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}

// -----

func.func @rms_norm_scale(%x: tensor<2x4x8xf32>, %s: tensor<4xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{scale shape 4 does not broadcast to the normalized dims}}
  %0 = tg.rms_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-05 : f32} : tensor<2x4x8xf32>, tensor<4xf32> -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

func.func @layer_norm_scale_type(%x: tensor<2x8xf16>, %s: tensor<8xf32>) -> tensor<2x8xf16> {
  // expected-error @+1 {{input, scale, bias and result must share one element type}}
  %0 = "tg.layer_norm"(%x, %s) {axis = 1 : i64, epsilon = 1.0e-05 : f32, operand_segment_sizes = dense<[1, 1, 0]> : vector<3xi32>} : (tensor<2x8xf16>, tensor<8xf32>) -> tensor<2x8xf16>
  return %0 : tensor<2x8xf16>
}

// -----

func.func @rotary_odd_dim(%x: tensor<2x4x7xf32>, %c: tensor<4x7xf32>) -> tensor<2x4x7xf32> {
  // expected-error @+1 {{input's last dim must be even}}
  %0 = tg.rotary %x, %c, %c : tensor<2x4x7xf32>, tensor<4x7xf32>, tensor<4x7xf32> -> tensor<2x4x7xf32>
  return %0 : tensor<2x4x7xf32>
}

// -----

func.func @rotary_cos_grows(%x: tensor<4x8xf32>, %c: tensor<2x4x8xf32>, %s: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{cos/sin shape 2x4x8 does not broadcast to the input shape 4x8}}
  %0 = tg.rotary %x, %c, %s : tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @swiglu_shape(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{result shape 3x8 should be 3x4}}
  %0 = tg.swiglu %x : tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @pool_bad_kind(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{kind must be "max" or "avg"}}
  %0 = tg.pool %x {kind = "lp", kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1]} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

func.func @pool_channels(%x: tensor<1x4x8x8xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{same N and C}}
  %0 = tg.pool %x {kind = "max", kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1]} : tensor<1x4x8x8xf32> -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

func.func @math_unknown(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown function 'tan2'}}
  %0 = tg.math "tan2" %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @math_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{needs a float tensor}}
  %0 = tg.math "sinh" %x : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @cumsum_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis out of range}}
  %0 = tg.cumsum %x {axis = 2 : i64} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @scatter_bad_reduction(%d: tensor<4x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{reduction must be none, add, mul, max or min}}
  %0 = tg.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = "sub"} : tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @scatter_indices_too_wide(%d: tensor<4x3xf32>, %i: tensor<2x5xi64>, %u: tensor<2x5xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{indices dim 1 exceeds the data's}}
  %0 = tg.scatter_elements %d, %i, %u {axis = 0 : i64} : tensor<4x3xf32>, tensor<2x5xi64>, tensor<2x5xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @scatter_float_indices(%d: tensor<4x3xf32>, %i: tensor<2x3xf32>, %u: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{indices must be i32 or i64}}
  %0 = tg.scatter_elements %d, %i, %u {axis = 0 : i64} : tensor<4x3xf32>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @topk_k_too_large(%x: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>) {
  // expected-error @+1 {{k = 4 exceeds the axis's size 3}}
  %0:2 = tg.topk %x {axis = 1 : i64} : tensor<2x3xf32> -> tensor<2x4xf32>, tensor<2x4xi64>
  return %0#0, %0#1 : tensor<2x4xf32>, tensor<2x4xi64>
}

// -----

func.func @topk_index_type(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>) {
  // expected-error @+1 {{values must have the input's type and indices i64}}
  %0:2 = tg.topk %x {axis = 1 : i64} : tensor<2x3xf32> -> tensor<2x2xf32>, tensor<2x2xi32>
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x2xi32>
}

// -----

func.func @bitwise_unknown_fn(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{unknown function 'nand'}}
  %0 = tg.bitwise "nand" %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @bitwise_float(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs an integer element type (not i1)}}
  %0 = tg.bitwise "and" %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @bitwise_shift_signed(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{shifts need an unsigned integer element type}}
  %0 = tg.bitwise "shift_left" %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @bitwise_no_broadcast(%a: tensor<2x3xui8>, %b: tensor<2xui8>) -> tensor<2x3xui8> {
  // expected-error @+1 {{operand shapes 2x3 and 2 do not broadcast}}
  %0 = tg.bitwise "or" %a, %b : tensor<2x3xui8>, tensor<2xui8> -> tensor<2x3xui8>
  return %0 : tensor<2x3xui8>
}

// -----

func.func @bitwise_not_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{needs an integer element type (not i1)}}
  %0 = tg.bitwise_not %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @nonzero_bound(%x: tensor<2x3xf32>) -> tensor<2x5xi64> {
  // expected-error @+1 {{indices must be i64 of shape 2x6}}
  %0:2 = tg.nonzero %x : tensor<2x3xf32> -> tensor<2x5xi64>, tensor<i64>
  return %0#0 : tensor<2x5xi64>
}

// -----

func.func @nonzero_count(%x: tensor<2x3xf32>) -> tensor<2x6xi64> {
  // expected-error @+1 {{count must be a tensor<i64> scalar}}
  %0:2 = tg.nonzero %x : tensor<2x3xf32> -> tensor<2x6xi64>, tensor<1xi64>
  return %0#0 : tensor<2x6xi64>
}

// -----

func.func @unique_counts(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{indices, inverse and counts must be i64 of shape 4}}
  %0:5 = tg.unique %x {axis = 0 : i64} : tensor<4xf32> -> tensor<4xf32>, tensor<4xi64>, tensor<3xi64>, tensor<4xi64>, tensor<i64>
  return %0#0 : tensor<4xf32>
}

// -----

func.func @nms_rows(%b: tensor<1x3x4xf32>, %s: tensor<1x2x3xf32>) -> tensor<6x3xi64> {
  // expected-error @+1 {{selected must be i64 of shape 4x3}}
  %0:2 = tg.nms %b, %s {center_point_box = false, has_score_threshold = false, iou_threshold = 0.5 : f64, max_per_class = 2 : i64, score_threshold = 0.0 : f64} : tensor<1x3x4xf32>, tensor<1x2x3xf32> -> tensor<6x3xi64>, tensor<i64>
  return %0#0 : tensor<6x3xi64>
}

// -----

func.func @nms_boxes(%b: tensor<1x3x5xf32>, %s: tensor<1x2x3xf32>) -> tensor<4x3xi64> {
  // expected-error @+1 {{boxes must be [B, N, 4] and scores [B, C, N]}}
  %0:2 = tg.nms %b, %s {center_point_box = false, has_score_threshold = false, iou_threshold = 0.5 : f64, max_per_class = 2 : i64, score_threshold = 0.0 : f64} : tensor<1x3x5xf32>, tensor<1x2x3xf32> -> tensor<4x3xi64>, tensor<i64>
  return %0#0 : tensor<4x3xi64>
}

// -----

// expected-error @+1 {{unknown tg type 'f8e4m3'}}
func.func @float8_unknown(%a: tensor<4x!tg.f8e4m3>) {
  return
}

// -----

func.func @conv_weight_block_shape(%x: tensor<1x8x5x5xf32>, %w: tensor<1x8x3x3x16xf32>) -> tensor<1x17x3x3xf32> {
  // expected-error @+1 {{a weight blocked by 16 must be [ceil(M/16), C/group, k..., 16], got 1x8x3x3x16}}
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64} : tensor<1x8x5x5xf32>, tensor<1x8x3x3x16xf32> -> tensor<1x17x3x3xf32>
  return %0 : tensor<1x17x3x3xf32>
}

// -----

// A blocked weight with an input of rank < 3 is refused (not read past its dims).
func.func @conv_weight_block_rank(%x: tensor<f32>, %w: tensor<16xf32>) -> tensor<1x250xf32> {
  // expected-error @+1 {{a weight blocked by 16 must be [ceil(M/16), C/group, k..., 16], got 16}}
  %0 = tg.conv %x, %w {strides = [], pads = [], dilations = [], group = 1 : i64, weight_block = 16 : i64} : tensor<f32>, tensor<16xf32> -> tensor<1x250xf32>
  return %0 : tensor<1x250xf32>
}

// -----

// channels_last is the CPU lanes kernel's layout: only with a blocked weight.
func.func @conv_channels_last_unblocked(%x: tensor<1x8x5x5xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x3x3x16xf32> {
  // expected-error @+1 {{channels_last is the CPU lanes kernel's layout: it needs weight_block}}
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64, channels_last} : tensor<1x8x5x5xf32>, tensor<16x8x3x3xf32> -> tensor<1x3x3x16xf32>
  return %0 : tensor<1x3x3x16xf32>
}

// -----

// With channels_last the result is [N, spatial..., M]: an NCHW result type is refused.
func.func @conv_channels_last_shape(%x: tensor<1x8x5x5xf32>, %w: tensor<1x8x3x3x16xf32>) -> tensor<1x16x3x3xf32> {
  // expected-error @+1 {{result}}
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64, channels_last} : tensor<1x8x5x5xf32>, tensor<1x8x3x3x16xf32> -> tensor<1x16x3x3xf32>
  return %0 : tensor<1x16x3x3xf32>
}

// -----

// nhwc (every operand channels last) excludes the CPU's blocked weight.
func.func @conv_nhwc_blocked(%x: tensor<1x5x5x8xf32>, %w: tensor<1x8x3x3x16xf32>) -> tensor<1x3x3x16xf32> {
  // expected-error @+1 {{nhwc (every operand channels last) excludes weight_block and channels_last}}
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64, weight_block = 16 : i64, nhwc} : tensor<1x5x5x8xf32>, tensor<1x8x3x3x16xf32> -> tensor<1x3x3x16xf32>
  return %0 : tensor<1x3x3x16xf32>
}

// -----

// With nhwc the weight is [M, k..., C/group]: an [M, C, k...] weight is refused.
func.func @conv_nhwc_weight_layout(%x: tensor<1x5x5x8xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x3x3x16xf32> {
  // expected-error @+1 {{do not match weight}}
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64, nhwc} : tensor<1x5x5x8xf32>, tensor<16x8x3x3xf32> -> tensor<1x3x3x16xf32>
  return %0 : tensor<1x3x3x16xf32>
}

// -----

// An nhwc pool keeps N and C: [N, spatial..., C] in and out.
func.func @pool_nhwc_channels(%x: tensor<1x8x8x4xf32>) -> tensor<1x4x4x8xf32> {
  // expected-error @+1 {{same N and C}}
  %0 = tg.pool %x {kind = "max", kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], nhwc} : tensor<1x8x8x4xf32> -> tensor<1x4x4x8xf32>
  return %0 : tensor<1x4x4x8xf32>
}

// -----

// A matmul weight in strips of 32 is [ceil(N/32), K, 32]: N = 65 needs three strips.
func.func @matmul_weight_strips_count(%x: tensor<4x8xf32>, %w: tensor<2x8x32xf32>) -> tensor<4x65xf32> {
  // expected-error @+1 {{a weight in strips of 32 must be [ceil(N/32), K, 32] with an lhs of rank >= 2, got lhs 4x8, weight 2x8x32}}
  %0 = tg.matmul %x, %w {weight_block = 32 : i64} : tensor<4x8xf32>, tensor<2x8x32xf32> -> tensor<4x65xf32>
  return %0 : tensor<4x65xf32>
}

// -----

// ... and needs an lhs of rank >= 2 (a vector lhs drops M from the result).
func.func @matmul_weight_strips_vector(%x: tensor<8xf32>, %w: tensor<1x8x32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{a weight in strips of 32 must be [ceil(N/32), K, 32] with an lhs of rank >= 2, got lhs 8, weight 1x8x32}}
  %0 = tg.matmul %x, %w {weight_block = 32 : i64} : tensor<8xf32>, tensor<1x8x32xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

// K is the strips' middle dim: it must be the lhs's last.
func.func @matmul_weight_strips_k(%x: tensor<4x8xf32>, %w: tensor<1x9x32xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{shapes 4x8 and 9x32 do not contract}}
  %0 = tg.matmul %x, %w {weight_block = 32 : i64} : tensor<4x8xf32>, tensor<1x9x32xf32> -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}
