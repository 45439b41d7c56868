// RUN: tgc-opt %s --split-input-file --tgc-recognize-attention | FileCheck %s

// RecognizeScaledDotProductAttention: softmax(q·kᵀ)·v with k given transposed.
// CHECK-LABEL: func.func @recognize_plain
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x8x16xf32>, %[[KT:.+]]: tensor<1x2x16x8xf32>, %[[V:.+]]: tensor<1x2x8x16xf32>)
func.func @recognize_plain(%q: tensor<1x2x8x16xf32>, %kt: tensor<1x2x16x8xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // CHECK: %[[K:.+]] = tg.transpose %[[KT]] {perm = [0, 1, 3, 2]} : tensor<1x2x16x8xf32> -> tensor<1x2x8x16xf32>
  // CHECK: %[[A:.+]] = tg.attention %[[Q]], %[[K]], %[[V]] {causal = false, scale = 1.000000e+00 : f32}
  // CHECK-NOT: tg.softmax
  // CHECK: return %[[A]]
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// RecognizeScaledDotProductAttention: the exporter's NaN guard and a runtime mask; the mask stays.
// CHECK-LABEL: func.func @recognize_guarded_masked
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x8x16xf32>, %[[KT:.+]]: tensor<1x2x16x8xf32>, %[[V:.+]]: tensor<1x2x8x16xf32>, %[[M:.+]]: tensor<1x1x8x8xf32>)
func.func @recognize_guarded_masked(%q: tensor<1x2x8x16xf32>, %kt: tensor<1x2x16x8xf32>, %v: tensor<1x2x8x16xf32>, %m: tensor<1x1x8x8xf32>) -> tensor<1x2x8x16xf32> {
  // CHECK: %[[K:.+]] = tg.transpose %[[KT]]
  // CHECK: %[[A:.+]] = tg.attention %[[Q]], %[[K]], %[[V]], %[[M]] {causal = false, scale = 1.000000e+00 : f32}
  // CHECK-NOT: tg.where
  // CHECK: return %[[A]]
  %zero = tg.constant dense<0.0> : tensor<1xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %sm = tg.add %s, %m : tensor<1x2x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %sm {axis = -1 : i64} : tensor<1x2x8x8xf32>
  %nan = tg.isnan %p : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xi1>
  %g = tg.where %nan, %zero, %p : tensor<1x2x8x8xi1>, tensor<1xf32>, tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
  %o = tg.matmul %g, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// RecognizeScaledDotProductAttention: a scalar factor on the scores becomes the scale.
// CHECK-LABEL: func.func @recognize_scaled_scores
func.func @recognize_scaled_scores(%q: tensor<1x2x8x16xf32>, %kt: tensor<1x2x16x8xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // CHECK: tg.attention {{.*}}scale = 1.250000e-01 : f32
  // CHECK-NOT: tg.div
  %c = tg.constant dense<8.0> : tensor<f32>
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %d = tg.div %s, %c : tensor<1x2x8x8xf32>, tensor<f32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %d {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Negative (RecognizeScaledDotProductAttention): softmax over the query axis is not attention.
// CHECK-LABEL: func.func @no_fuse_softmax_not_last_axis
func.func @no_fuse_softmax_not_last_axis(%q: tensor<1x2x8x16xf32>, %kt: tensor<1x2x16x8xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // CHECK-NOT: tg.attention
  // CHECK: tg.softmax
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %s {axis = 2 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Negative (RecognizeScaledDotProductAttention): the probabilities are also returned.
// CHECK-LABEL: func.func @no_fuse_probs_reused
func.func @no_fuse_probs_reused(%q: tensor<1x2x8x16xf32>, %kt: tensor<1x2x16x8xf32>, %v: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) {
  // CHECK-NOT: tg.attention
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o, %p : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
}

// -----

// Negative (RecognizeScaledDotProductAttention): where(isnan(p), 1, p) is not the 0-guard.
// CHECK-LABEL: func.func @no_fuse_guard_not_zero
func.func @no_fuse_guard_not_zero(%q: tensor<1x2x8x16xf32>, %kt: tensor<1x2x16x8xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // CHECK-NOT: tg.attention
  %one = tg.constant dense<1.0> : tensor<f32>
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %nan = tg.isnan %p : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xi1>
  %g = tg.where %nan, %one, %p : tensor<1x2x8x8xi1>, tensor<f32>, tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
  %o = tg.matmul %g, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// FoldQueryScaleIntoAttention, FoldKeyScaleIntoAttention, FoldKeyTransposeIntoAttention:
// torch's sqrt(scale) on q and on kᵀ (k: [B, T, H, D] → transpose(0,2,3,1)) fold into the op.
// CHECK-LABEL: func.func @fold_scales_and_key_transpose
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x8x16xf32>, %[[KR:.+]]: tensor<1x8x2x16xf32>, %[[V:.+]]: tensor<1x2x8x16xf32>)
func.func @fold_scales_and_key_transpose(%q: tensor<1x2x8x16xf32>, %kr: tensor<1x8x2x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // CHECK: %[[K:.+]] = tg.transpose %[[KR]] {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  // CHECK: %[[A:.+]] = tg.attention %[[Q]], %[[K]], %[[V]] {causal = false, scale = 2.500000e-01 : f32}
  // CHECK-NOT: tg.mul
  // CHECK: return %[[A]]
  %c = tg.constant dense<0.5> : tensor<f32>
  %kt = tg.transpose %kr {perm = [0, 2, 3, 1]} : tensor<1x8x2x16xf32> -> tensor<1x2x16x8xf32>
  %qs = tg.mul %q, %c : tensor<1x2x8x16xf32>, tensor<f32> -> tensor<1x2x8x16xf32>
  %ks = tg.mul %kt, %c : tensor<1x2x16x8xf32>, tensor<f32> -> tensor<1x2x16x8xf32>
  %s = tg.matmul %qs, %ks : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// FoldKeyTransposeIntoAttention: k = transpose(kᵀ) of a transpose(0,1,3,2) is k itself.
// CHECK-LABEL: func.func @fold_key_transpose_identity
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x8x16xf32>, %[[K:.+]]: tensor<1x2x8x16xf32>, %[[V:.+]]: tensor<1x2x8x16xf32>)
func.func @fold_key_transpose_identity(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // CHECK-NOT: tg.transpose
  // CHECK: tg.attention %[[Q]], %[[K]], %[[V]]
  %kt = tg.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x8x16xf32> -> tensor<1x2x16x8xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// FoldViewedQueryScaleIntoAttention: whisper's q_proj(x) · scaling before the heads are split
// (reshape, transpose) folds into the op's scale; the views apply to the unscaled q.
// CHECK-LABEL: func.func @fold_viewed_query_scale
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x32xf32>, %[[K:.+]]: tensor<1x2x8x16xf32>, %[[V:.+]]: tensor<1x2x8x16xf32>)
func.func @fold_viewed_query_scale(%x: tensor<1x8x32xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // CHECK-NOT: tg.mul
  // CHECK: %[[R:.+]] = tg.reshape %[[X]] : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
  // CHECK: tg.attention %{{.+}}, %[[K]], %[[V]] {{{.*}}scale = 2.500000e-01 : f32}
  // CHECK-NOT: tg.mul
  %c = tg.constant dense<0.5> : tensor<f32>
  %xs = tg.mul %x, %c : tensor<1x8x32xf32>, tensor<f32> -> tensor<1x8x32xf32>
  %r = tg.reshape %xs : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
  %q = tg.transpose %r {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  %kt = tg.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x8x16xf32> -> tensor<1x2x16x8xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %s2 = tg.mul %s, %c : tensor<1x2x8x8xf32>, tensor<f32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %s2 {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Negative (FoldViewedQueryScaleIntoAttention): the scaled q is also returned, so the mul stays
// and the scale with it.
// CHECK-LABEL: func.func @viewed_query_scale_shared
func.func @viewed_query_scale_shared(%x: tensor<1x8x32xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x8x32xf32>) {
  // CHECK: %[[XS:.+]] = tg.mul
  // CHECK: %[[R:.+]] = tg.reshape %[[XS]]
  // CHECK: tg.attention %{{.+}} {{{.*}}scale = 1.000000e+00 : f32}
  %c = tg.constant dense<0.5> : tensor<f32>
  %xs = tg.mul %x, %c : tensor<1x8x32xf32>, tensor<f32> -> tensor<1x8x32xf32>
  %r = tg.reshape %xs : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
  %q = tg.transpose %r {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  %kt = tg.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x8x16xf32> -> tensor<1x2x16x8xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o, %xs : tensor<1x2x8x16xf32>, tensor<1x8x32xf32>
}

// -----

// Negative (FoldQueryScaleIntoAttention, FoldKeyScaleIntoAttention): a runtime factor stays.
// CHECK-LABEL: func.func @no_fuse_nonconstant_scale
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x8x16xf32>, %[[K:.+]]: tensor<1x2x8x16xf32>, %[[V:.+]]: tensor<1x2x8x16xf32>, %[[C:.+]]: tensor<f32>)
func.func @no_fuse_nonconstant_scale(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %c: tensor<f32>) -> tensor<1x2x8x16xf32> {
  // CHECK: %[[QS:.+]] = tg.mul %[[Q]], %[[C]]
  // CHECK: %[[KS:.+]] = tg.mul %[[K]], %[[C]]
  // CHECK: tg.attention %[[QS]], %[[KS]], %[[V]] {causal = false, scale = 1.000000e+00 : f32}
  %qs = tg.mul %q, %c : tensor<1x2x8x16xf32>, tensor<f32> -> tensor<1x2x8x16xf32>
  %ks = tg.mul %k, %c : tensor<1x2x8x16xf32>, tensor<f32> -> tensor<1x2x8x16xf32>
  %kt = tg.transpose %ks {perm = [0, 1, 3, 2]} : tensor<1x2x8x16xf32> -> tensor<1x2x16x8xf32>
  %s = tg.matmul %qs, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// FoldBatchedKeyTransposeIntoAttention: the dynamo exporter's reshape → transpose(0,2,1) →
// reshape kᵀ is k itself.
// CHECK-LABEL: func.func @fold_batched_key_transpose
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x8x16xf32>, %[[K:.+]]: tensor<1x2x8x16xf32>, %[[V:.+]]: tensor<1x2x8x16xf32>)
func.func @fold_batched_key_transpose(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // CHECK-NOT: tg.transpose
  // CHECK: tg.attention %[[Q]], %[[K]], %[[V]]
  %r = tg.reshape %k : tensor<1x2x8x16xf32> -> tensor<2x8x16xf32>
  %t = tg.transpose %r {perm = [0, 2, 1]} : tensor<2x8x16xf32> -> tensor<2x16x8xf32>
  %kt = tg.reshape %t : tensor<2x16x8xf32> -> tensor<1x2x16x8xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Negative (FoldBatchedKeyTransposeIntoAttention): the first reshape mixes the transposed dims
// ([1, 2, 8, 16] → [2, 16, 8] is not a transpose), so k stays a transpose of kᵀ.
// CHECK-LABEL: func.func @no_fuse_batched_key_reshape_mixes_dims
func.func @no_fuse_batched_key_reshape_mixes_dims(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // CHECK: tg.transpose {{.*}} {perm = [0, 2, 1]}
  // CHECK: %[[K:.+]] = tg.transpose {{.*}} {perm = [0, 1, 3, 2]}
  // CHECK: tg.attention %{{.+}}, %[[K]], %{{.+}}
  %r = tg.reshape %k : tensor<1x2x8x16xf32> -> tensor<2x16x8xf32>
  %t = tg.transpose %r {perm = [0, 2, 1]} : tensor<2x16x8xf32> -> tensor<2x8x16xf32>
  %kt = tg.reshape %t : tensor<2x8x16xf32> -> tensor<1x2x16x8xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// FoldHeadRepeatIntoAttention: GQA with 4 query heads over 2 key/value heads repeated by
// unsqueeze → expand → reshape; the op reads the 2 heads directly.
// CHECK-LABEL: func.func @fold_head_repeat
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x8x16xf32>, %[[K:.+]]: tensor<1x2x8x16xf32>, %[[V:.+]]: tensor<1x2x8x16xf32>)
func.func @fold_head_repeat(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // CHECK-NOT: tg.expand
  // CHECK: tg.attention %[[Q]], %[[K]], %[[V]] {{.*}} : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
  %k1 = tg.reshape %k : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
  %k2 = tg.expand %k1 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
  %k3 = tg.reshape %k2 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
  %v1 = tg.reshape %v : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
  %v2 = tg.expand %v1 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
  %v3 = tg.reshape %v2 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
  %kt = tg.transpose %k3 {perm = [0, 1, 3, 2]} : tensor<1x4x8x16xf32> -> tensor<1x4x16x8xf32>
  %s = tg.matmul %q, %kt : tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32> -> tensor<1x4x8x8xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x4x8x8xf32>
  %o = tg.matmul %p, %v3 : tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Negative (FoldHeadRepeatIntoAttention): only k is repeated; v has 4 real heads.
// CHECK-LABEL: func.func @no_fuse_head_repeat_only_key
func.func @no_fuse_head_repeat_only_key(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // CHECK: tg.expand
  // CHECK: tg.attention {{.*}} : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
  %k1 = tg.reshape %k : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
  %k2 = tg.expand %k1 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
  %k3 = tg.reshape %k2 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
  %kt = tg.transpose %k3 {perm = [0, 1, 3, 2]} : tensor<1x4x8x16xf32> -> tensor<1x4x16x8xf32>
  %s = tg.matmul %q, %kt : tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32> -> tensor<1x4x8x8xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x4x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// DropZeroAttentionMask: adding a zero mask is a no-op.
// CHECK-LABEL: func.func @drop_zero_mask
func.func @drop_zero_mask(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // CHECK: tg.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}} {causal = false, scale = 1.000000e+00 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> ->
  %m = tg.constant dense<0.0> : tensor<1x1x8x8xf32>
  %kt = tg.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x8x16xf32> -> tensor<1x2x16x8xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %sm = tg.add %s, %m : tensor<1x2x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x2x8x8xf32>
  %p = tg.softmax %sm {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tg.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Negative (DropZeroAttentionMask, FoldCausalMaskIntoAttention): a constant padding mask
// (last key masked in every row) stays an operand.
// CHECK-LABEL: func.func @no_fuse_padding_mask
func.func @no_fuse_padding_mask(%q: tensor<1x2x2x16xf32>, %k: tensor<1x2x2x16xf32>, %v: tensor<1x2x2x16xf32>) -> tensor<1x2x2x16xf32> {
  // CHECK: %[[M:.+]] = tg.constant
  // CHECK: tg.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[M]] {causal = false
  %m = tg.constant dense<[[[[0.0, 0xFF800000], [0.0, 0xFF800000]]]]> : tensor<1x1x2x2xf32>
  %kt = tg.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x2x16xf32> -> tensor<1x2x16x2xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x2x16xf32>, tensor<1x2x16x2xf32> -> tensor<1x2x2x2xf32>
  %sm = tg.add %s, %m : tensor<1x2x2x2xf32>, tensor<1x1x2x2xf32> -> tensor<1x2x2x2xf32>
  %p = tg.softmax %sm {axis = 3 : i64} : tensor<1x2x2x2xf32>
  %o = tg.matmul %p, %v : tensor<1x2x2x2xf32>, tensor<1x2x2x16xf32> -> tensor<1x2x2x16xf32>
  return %o : tensor<1x2x2x16xf32>
}

// -----

// FoldCausalMaskIntoAttention: a -inf upper triangle is causal = true.
// CHECK-LABEL: func.func @fold_causal_mask_inf
func.func @fold_causal_mask_inf(%q: tensor<1x2x3x16xf32>, %k: tensor<1x2x3x16xf32>, %v: tensor<1x2x3x16xf32>) -> tensor<1x2x3x16xf32> {
  // CHECK-NOT: tg.constant
  // CHECK: tg.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}} {causal = true, scale = 1.000000e+00 : f32} : tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32> ->
  %m = tg.constant dense<[[[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]]]> : tensor<1x1x3x3xf32>
  %kt = tg.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x3x16xf32> -> tensor<1x2x16x3xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x3x16xf32>, tensor<1x2x16x3xf32> -> tensor<1x2x3x3xf32>
  %sm = tg.add %m, %s : tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %p = tg.softmax %sm {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = tg.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x16xf32> -> tensor<1x2x3x16xf32>
  return %o : tensor<1x2x3x16xf32>
}

// -----

// FoldCausalMaskIntoAttention: torch.finfo(float32).min above the diagonal (HF's mask), with
// one query against three keys (bottom-right aligned: the last query sees every key).
// CHECK-LABEL: func.func @fold_causal_mask_finfo_min
func.func @fold_causal_mask_finfo_min(%q: tensor<1x2x2x16xf32>, %k: tensor<1x2x3x16xf32>, %v: tensor<1x2x3x16xf32>) -> tensor<1x2x2x16xf32> {
  // CHECK: tg.attention {{.*}}causal = true
  %m = tg.constant dense<[[[[0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0]]]]> : tensor<1x1x2x3xf32>
  %kt = tg.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x3x16xf32> -> tensor<1x2x16x3xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x2x16xf32>, tensor<1x2x16x3xf32> -> tensor<1x2x2x3xf32>
  %sm = tg.add %s, %m : tensor<1x2x2x3xf32>, tensor<1x1x2x3xf32> -> tensor<1x2x2x3xf32>
  %p = tg.softmax %sm {axis = 3 : i64} : tensor<1x2x2x3xf32>
  %o = tg.matmul %p, %v : tensor<1x2x2x3xf32>, tensor<1x2x3x16xf32> -> tensor<1x2x2x16xf32>
  return %o : tensor<1x2x2x16xf32>
}

// -----

// FoldCausalMaskIntoAttention: the mask a dynamic-axes export expands over the batch, [B, 1, S, T],
// one causal matrix per batch row.
// CHECK-LABEL: func.func @fold_causal_mask_per_batch
func.func @fold_causal_mask_per_batch(%q: tensor<2x2x2x16xf32>, %k: tensor<2x2x2x16xf32>, %v: tensor<2x2x2x16xf32>) -> tensor<2x2x2x16xf32> {
  // CHECK-NOT: tg.constant
  // CHECK: tg.attention {{.*}}causal = true
  %m = tg.constant dense<[[[[0.0, 0xFF800000], [0.0, 0.0]]], [[[0.0, 0xFF800000], [0.0, 0.0]]]]> : tensor<2x1x2x2xf32>
  %kt = tg.transpose %k {perm = [0, 1, 3, 2]} : tensor<2x2x2x16xf32> -> tensor<2x2x16x2xf32>
  %s = tg.matmul %q, %kt : tensor<2x2x2x16xf32>, tensor<2x2x16x2xf32> -> tensor<2x2x2x2xf32>
  %sm = tg.add %s, %m : tensor<2x2x2x2xf32>, tensor<2x1x2x2xf32> -> tensor<2x2x2x2xf32>
  %p = tg.softmax %sm {axis = 3 : i64} : tensor<2x2x2x2xf32>
  %o = tg.matmul %p, %v : tensor<2x2x2x2xf32>, tensor<2x2x2x16xf32> -> tensor<2x2x2x16xf32>
  return %o : tensor<2x2x2x16xf32>
}

// -----

// Negative (FoldCausalMaskIntoAttention): per-batch matrices where the second row is not causal.
// CHECK-LABEL: func.func @no_fuse_causal_second_batch_differs
func.func @no_fuse_causal_second_batch_differs(%q: tensor<2x2x2x16xf32>, %k: tensor<2x2x2x16xf32>, %v: tensor<2x2x2x16xf32>) -> tensor<2x2x2x16xf32> {
  // CHECK: tg.attention {{.*}}causal = false
  %m = tg.constant dense<[[[[0.0, 0xFF800000], [0.0, 0.0]]], [[[0.0, 0.0], [0.0, 0.0]]]]> : tensor<2x1x2x2xf32>
  %kt = tg.transpose %k {perm = [0, 1, 3, 2]} : tensor<2x2x2x16xf32> -> tensor<2x2x16x2xf32>
  %s = tg.matmul %q, %kt : tensor<2x2x2x16xf32>, tensor<2x2x16x2xf32> -> tensor<2x2x2x2xf32>
  %sm = tg.add %s, %m : tensor<2x2x2x2xf32>, tensor<2x1x2x2xf32> -> tensor<2x2x2x2xf32>
  %p = tg.softmax %sm {axis = 3 : i64} : tensor<2x2x2x2xf32>
  %o = tg.matmul %p, %v : tensor<2x2x2x2xf32>, tensor<2x2x2x16xf32> -> tensor<2x2x2x16xf32>
  return %o : tensor<2x2x2x16xf32>
}

// -----

// Negative (FoldCausalMaskIntoAttention): -1 above the diagonal is a bias, not a causal mask.
// CHECK-LABEL: func.func @no_fuse_causal_small_bias
func.func @no_fuse_causal_small_bias(%q: tensor<1x2x2x16xf32>, %k: tensor<1x2x2x16xf32>, %v: tensor<1x2x2x16xf32>) -> tensor<1x2x2x16xf32> {
  // CHECK: %[[M:.+]] = tg.constant
  // CHECK: tg.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[M]] {causal = false
  %m = tg.constant dense<[[[[0.0, -1.0], [0.0, 0.0]]]]> : tensor<1x1x2x2xf32>
  %kt = tg.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x2x16xf32> -> tensor<1x2x16x2xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x2x16xf32>, tensor<1x2x16x2xf32> -> tensor<1x2x2x2xf32>
  %sm = tg.add %s, %m : tensor<1x2x2x2xf32>, tensor<1x1x2x2xf32> -> tensor<1x2x2x2xf32>
  %p = tg.softmax %sm {axis = 3 : i64} : tensor<1x2x2x2xf32>
  %o = tg.matmul %p, %v : tensor<1x2x2x2xf32>, tensor<1x2x2x16xf32> -> tensor<1x2x2x16xf32>
  return %o : tensor<1x2x2x16xf32>
}

// -----

// FoldLayoutTransposesIntoAttention: the [0,2,1,3] transposes of a multi-head block (q, k, v in
// [B, S, H, D] and the result back to it) become layout "bshd"; the mask stays [B, H, S, T].
// CHECK-LABEL: func.func @fold_layout_transposes
// CHECK-SAME: (%[[Q:.+]]: tensor<1x8x2x16xf32>, %[[K:.+]]: tensor<1x6x2x16xf32>, %[[V:.+]]: tensor<1x6x2x32xf32>, %[[M:.+]]: tensor<1x1x8x6xf32>)
func.func @fold_layout_transposes(%q: tensor<1x8x2x16xf32>, %k: tensor<1x6x2x16xf32>, %v: tensor<1x6x2x32xf32>, %m: tensor<1x1x8x6xf32>) -> tensor<1x8x2x32xf32> {
  // CHECK-NOT: tg.transpose
  // CHECK: %[[A:.+]] = tg.attention %[[Q]], %[[K]], %[[V]], %[[M]] {causal = false, layout = "bshd", scale = 2.500000e-01 : f32} : tensor<1x8x2x16xf32>, tensor<1x6x2x16xf32>, tensor<1x6x2x32xf32>, tensor<1x1x8x6xf32> -> tensor<1x8x2x32xf32>
  // CHECK-NOT: tg.transpose
  // CHECK: return %[[A]]
  %tq = tg.transpose %q {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  %tk = tg.transpose %k {perm = [0, 2, 1, 3]} : tensor<1x6x2x16xf32> -> tensor<1x2x6x16xf32>
  %tv = tg.transpose %v {perm = [0, 2, 1, 3]} : tensor<1x6x2x32xf32> -> tensor<1x2x6x32xf32>
  %a = tg.attention %tq, %tk, %tv, %m {causal = false, scale = 0.25 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x6x16xf32>, tensor<1x2x6x32xf32>, tensor<1x1x8x6xf32> -> tensor<1x2x8x32xf32>
  %o = tg.transpose %a {perm = [0, 2, 1, 3]} : tensor<1x2x8x32xf32> -> tensor<1x8x2x32xf32>
  return %o : tensor<1x8x2x32xf32>
}

// -----

// FoldLayoutTransposesIntoAttention with GQA (4 query heads, 2 key/value heads) and causal: both
// survive the layout change.
// CHECK-LABEL: func.func @fold_layout_transposes_gqa_causal
func.func @fold_layout_transposes_gqa_causal(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x16xf32>) -> tensor<2x8x4x16xf32> {
  // CHECK-NOT: tg.transpose
  // CHECK: tg.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^ ]+}} {causal = true, layout = "bshd", scale = 2.500000e-01 : f32} : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32> -> tensor<2x8x4x16xf32>
  // CHECK-NOT: tg.transpose
  %tq = tg.transpose %q {perm = [0, 2, 1, 3]} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %tk = tg.transpose %k {perm = [0, 2, 1, 3]} : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %tv = tg.transpose %v {perm = [0, 2, 1, 3]} : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %a = tg.attention %tq, %tk, %tv {causal = true, scale = 0.25 : f32} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  %o = tg.transpose %a {perm = [0, 2, 1, 3]} : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  return %o : tensor<2x8x4x16xf32>
}

// -----

// Negative (FoldLayoutTransposesIntoAttention): the output transpose is not [0,2,1,3].
// CHECK-LABEL: func.func @no_fuse_layout_other_perm
func.func @no_fuse_layout_other_perm(%q: tensor<1x8x2x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x16xf32>) -> tensor<1x2x16x8xf32> {
  // CHECK-COUNT-3: tg.transpose {{.*}}perm = [0, 2, 1, 3]
  // CHECK: %[[A:.+]] = tg.attention {{.*}}{causal = false, scale = 2.500000e-01 : f32}
  // CHECK: tg.transpose %[[A]] {perm = [0, 1, 3, 2]}
  %tq = tg.transpose %q {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  %tk = tg.transpose %k {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  %tv = tg.transpose %v {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  %a = tg.attention %tq, %tk, %tv {causal = false, scale = 0.25 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  %o = tg.transpose %a {perm = [0, 1, 3, 2]} : tensor<1x2x8x16xf32> -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}

// -----

// Negative (FoldLayoutTransposesIntoAttention): the bhsd result is also returned as is.
// CHECK-LABEL: func.func @no_fuse_layout_output_two_users
func.func @no_fuse_layout_output_two_users(%q: tensor<1x8x2x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x16xf32>) -> (tensor<1x8x2x16xf32>, tensor<1x2x8x16xf32>) {
  // CHECK: %[[A:.+]] = tg.attention {{.*}}{causal = false, scale = 2.500000e-01 : f32}
  // CHECK: %[[O:.+]] = tg.transpose %[[A]] {perm = [0, 2, 1, 3]}
  // CHECK: return %[[O]], %[[A]]
  %tq = tg.transpose %q {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  %tk = tg.transpose %k {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  %tv = tg.transpose %v {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  %a = tg.attention %tq, %tk, %tv {causal = false, scale = 0.25 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  %o = tg.transpose %a {perm = [0, 2, 1, 3]} : tensor<1x2x8x16xf32> -> tensor<1x8x2x16xf32>
  return %o, %a : tensor<1x8x2x16xf32>, tensor<1x2x8x16xf32>
}

// -----

// Negative (FoldLayoutTransposesIntoAttention): q arrives in [B, H, S, D] already.
// CHECK-LABEL: func.func @no_fuse_layout_q_not_transposed
func.func @no_fuse_layout_q_not_transposed(%q: tensor<1x2x8x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x16xf32>) -> tensor<1x8x2x16xf32> {
  // CHECK: %[[A:.+]] = tg.attention {{.*}}{causal = false, scale = 2.500000e-01 : f32}
  // CHECK: %[[O:.+]] = tg.transpose %[[A]] {perm = [0, 2, 1, 3]}
  // CHECK: return %[[O]]
  %tk = tg.transpose %k {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  %tv = tg.transpose %v {perm = [0, 2, 1, 3]} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  %a = tg.attention %q, %tk, %tv {causal = false, scale = 0.25 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  %o = tg.transpose %a {perm = [0, 2, 1, 3]} : tensor<1x2x8x16xf32> -> tensor<1x8x2x16xf32>
  return %o : tensor<1x8x2x16xf32>
}

// -----

// The head transpose moves below the rotary embedding (cos/sin permuted alike), so the layout
// fold can take q and k straight from the projections.
// CHECK-LABEL: func.func @sink_transpose_below_rotary
// CHECK-SAME: (%[[Q:.+]]: tensor<1x8x2x4xf32>, %[[K:.+]]: tensor<1x8x2x4xf32>, %[[V:.+]]: tensor<1x8x2x4xf32>, %[[C:.+]]: tensor<1x1x8x4xf32>, %[[S:.+]]: tensor<1x1x8x4xf32>)
// CHECK: %[[CT:.+]] = tg.transpose %[[C]] {perm = [0, 2, 1, 3]} : tensor<1x1x8x4xf32> -> tensor<1x8x1x4xf32>
// CHECK: %[[ST:.+]] = tg.transpose %[[S]] {perm = [0, 2, 1, 3]} : tensor<1x1x8x4xf32> -> tensor<1x8x1x4xf32>
// CHECK: %[[R:.+]] = tg.rotary %[[Q]], %[[CT]], %[[ST]]
// CHECK: %[[A:.+]] = tg.attention %[[R]], %[[K]], %[[V]] {layout = "bshd", scale = 5.000000e-01 : f32}
// CHECK-NOT: tg.transpose
// CHECK: return %[[A]]
func.func @sink_transpose_below_rotary(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xf32>, %c: tensor<1x1x8x4xf32>, %s: tensor<1x1x8x4xf32>) -> tensor<1x8x2x4xf32> {
  %qt = tg.transpose %q {perm = [0, 2, 1, 3]} : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %kt = tg.transpose %k {perm = [0, 2, 1, 3]} : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %vt = tg.transpose %v {perm = [0, 2, 1, 3]} : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %qr = tg.rotary %qt, %c, %s : tensor<1x2x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x2x8x4xf32>
  %a = tg.attention %qr, %kt, %vt {scale = 0.5 : f32} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %o = tg.transpose %a {perm = [0, 2, 1, 3]} : tensor<1x2x8x4xf32> -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}

// -----

// Negative: a rotary whose result is used twice keeps its input transpose.
// CHECK-LABEL: func.func @no_fuse_rotary_two_uses
// CHECK: %[[T:.+]] = tg.transpose %{{.+}} {perm = [0, 2, 1, 3]}
// CHECK: tg.rotary %[[T]]
func.func @no_fuse_rotary_two_uses(%q: tensor<1x8x2x4xf32>, %k: tensor<1x2x8x4xf32>, %c: tensor<1x1x8x4xf32>, %s: tensor<1x1x8x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %qt = tg.transpose %q {perm = [0, 2, 1, 3]} : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %qr = tg.rotary %qt, %c, %s : tensor<1x2x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x2x8x4xf32>
  %a = tg.attention %qr, %k, %k {scale = 0.5 : f32} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  return %a, %qr : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// Negative: a transpose that moves the rotated (last) dim does not commute with rotary.
// CHECK-LABEL: func.func @no_fuse_rotary_last_dim_moved
// CHECK: %[[T:.+]] = tg.transpose %{{.+}} {perm = [0, 1, 3, 2]}
// CHECK: tg.rotary %[[T]]
func.func @no_fuse_rotary_last_dim_moved(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x8x4xf32>, %c: tensor<1x1x8x4xf32>, %s: tensor<1x1x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %qt = tg.transpose %q {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %qr = tg.rotary %qt, %c, %s : tensor<1x2x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x2x8x4xf32>
  %a = tg.attention %qr, %k, %k {scale = 0.5 : f32} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  return %a : tensor<1x2x8x4xf32>
}
