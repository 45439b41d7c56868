// RUN: tgc-opt %s --split-input-file --tgc-fold-linears | FileCheck %s

// A matmul by a constant [K, N] weight becomes a linear with the [N, K] weight folded.
// CHECK-LABEL: func.func @matmul_weight_to_linear
func.func @matmul_weight_to_linear(%x: tensor<1x4x2xf32>) -> tensor<1x4x3xf32> {
  %w = tg.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
  // CHECK: %[[Y:.+]] = tg.linear %{{.+}}, %[[W]] : tensor<1x4x2xf32>, tensor<3x2xf32> -> tensor<1x4x3xf32>
  // CHECK-NOT: tg.matmul
  // CHECK: return %[[Y]]
  %y = tg.matmul %x, %w : tensor<1x4x2xf32>, tensor<2x3xf32> -> tensor<1x4x3xf32>
  return %y : tensor<1x4x3xf32>
}

// -----

// Negative: a runtime weight stays a matmul.
// CHECK-LABEL: func.func @no_fuse_runtime_weight
func.func @no_fuse_runtime_weight(%x: tensor<4x2xf32>, %w: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // CHECK: tg.matmul
  // CHECK-NOT: tg.linear
  %y = tg.matmul %x, %w : tensor<4x2xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// Negative: a batched (rank-3) constant weight is not a linear weight.
// CHECK-LABEL: func.func @no_fuse_rank3_weight
func.func @no_fuse_rank3_weight(%x: tensor<2x4x2xf32>) -> tensor<2x4x3xf32> {
  %w = tg.constant dense<1.0> : tensor<2x2x3xf32>
  // CHECK: tg.matmul
  // CHECK-NOT: tg.linear
  %y = tg.matmul %x, %w : tensor<2x4x2xf32>, tensor<2x2x3xf32> -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// TorchScript order: the bias comes first in the add; the weight transpose and the bias fold.
// CHECK-LABEL: func.func @bias_into_linear
func.func @bias_into_linear(%x: tensor<1x4x2xf32>) -> tensor<1x4x3xf32> {
  %w = tg.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = tg.constant dense<[0.5, 1.5, 2.5]> : tensor<3xf32>
  // CHECK-DAG: %[[W:.+]] = tg.constant dense<{{.+}}> : tensor<3x2xf32>
  // CHECK-DAG: %[[B:.+]] = tg.constant dense<[5.000000e-01, 1.500000e+00, 2.500000e+00]> : tensor<3xf32>
  // CHECK: %[[Y:.+]] = tg.linear %{{.+}}, %[[W]], %[[B]] : tensor<1x4x2xf32>, tensor<3x2xf32>, tensor<3xf32> -> tensor<1x4x3xf32>
  // CHECK-NOT: tg.add
  // CHECK: return %[[Y]]
  %m = tg.matmul %x, %w : tensor<1x4x2xf32>, tensor<2x3xf32> -> tensor<1x4x3xf32>
  %y = tg.add %b, %m : tensor<3xf32>, tensor<1x4x3xf32> -> tensor<1x4x3xf32>
  return %y : tensor<1x4x3xf32>
}

// -----

// A [1, 1, N] bias is reshaped to [N].
// CHECK-LABEL: func.func @bias_broadcast_shape
func.func @bias_broadcast_shape(%x: tensor<1x4x2xf32>, %w: tensor<3x2xf32>) -> tensor<1x4x3xf32> {
  %b = tg.constant dense<[[[0.5, 1.5, 2.5]]]> : tensor<1x1x3xf32>
  // CHECK: %[[B:.+]] = tg.constant dense<[5.000000e-01, 1.500000e+00, 2.500000e+00]> : tensor<3xf32>
  // CHECK: tg.linear %{{.+}}, %{{.+}}, %[[B]]
  // CHECK-NOT: tg.add
  %l = tg.linear %x, %w : tensor<1x4x2xf32>, tensor<3x2xf32> -> tensor<1x4x3xf32>
  %y = tg.add %l, %b : tensor<1x4x3xf32>, tensor<1x1x3xf32> -> tensor<1x4x3xf32>
  return %y : tensor<1x4x3xf32>
}

// -----

// Negative: a linear with another use keeps its add (folding would duplicate the GEMM).
// CHECK-LABEL: func.func @no_fuse_linear_multi_use
func.func @no_fuse_linear_multi_use(%x: tensor<4x2xf32>, %w: tensor<3x2xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %b = tg.constant dense<[0.5, 1.5, 2.5]> : tensor<3xf32>
  // CHECK: %[[L:.+]] = tg.linear %{{[^,]+}}, %{{[^,]+}} : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  // CHECK: tg.add %[[L]]
  %l = tg.linear %x, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  %y = tg.add %l, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %y, %l : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Negative: a per-row ([M, 1]) addend is not a bias.
// CHECK-LABEL: func.func @no_fuse_row_addend
func.func @no_fuse_row_addend(%x: tensor<4x2xf32>, %w: tensor<3x2xf32>) -> tensor<4x3xf32> {
  %b = tg.constant dense<[[1.0], [2.0], [3.0], [4.0]]> : tensor<4x1xf32>
  // CHECK: tg.linear
  // CHECK: tg.add
  %l = tg.linear %x, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  %y = tg.add %l, %b : tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// Dynamo order: Gemm -> Reshape -> Add(bias); the bias moves into the linear.
// CHECK-LABEL: func.func @bias_through_reshape
func.func @bias_through_reshape(%x: tensor<4x2xf32>, %w: tensor<3x2xf32>) -> tensor<1x4x3xf32> {
  %b = tg.constant dense<[0.5, 1.5, 2.5]> : tensor<3xf32>
  // CHECK: %[[L:.+]] = tg.linear %{{.+}}, %{{.+}}, %{{.+}} : tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32> -> tensor<4x3xf32>
  // CHECK: %[[R:.+]] = tg.reshape %[[L]] : tensor<4x3xf32> -> tensor<1x4x3xf32>
  // CHECK-NOT: tg.add
  // CHECK: return %[[R]]
  %l = tg.linear %x, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  %r = tg.reshape %l : tensor<4x3xf32> -> tensor<1x4x3xf32>
  %y = tg.add %r, %b : tensor<1x4x3xf32>, tensor<3xf32> -> tensor<1x4x3xf32>
  return %y : tensor<1x4x3xf32>
}

// -----

// Negative: a reshape that splits the last dim moves the bias's columns.
// CHECK-LABEL: func.func @no_fuse_reshape_changes_last_dim
func.func @no_fuse_reshape_changes_last_dim(%x: tensor<4x2xf32>, %w: tensor<6x2xf32>) -> tensor<4x2x3xf32> {
  %b = tg.constant dense<[0.5, 1.5, 2.5]> : tensor<3xf32>
  // CHECK: tg.reshape
  // CHECK: tg.add
  %l = tg.linear %x, %w : tensor<4x2xf32>, tensor<6x2xf32> -> tensor<4x6xf32>
  %r = tg.reshape %l : tensor<4x6xf32> -> tensor<4x2x3xf32>
  %y = tg.add %r, %b : tensor<4x2x3xf32>, tensor<3xf32> -> tensor<4x2x3xf32>
  return %y : tensor<4x2x3xf32>
}

// -----

// A patch-embedding conv (kernel = stride, no padding) becomes patches -> linear -> map.
// CHECK-LABEL: func.func @lower_patch_conv_to_linear
// CHECK-SAME: (%[[X:.+]]: tensor<1x3x8x8xf32>, %[[W:.+]]: tensor<5x3x4x4xf32>, %[[B:.+]]: tensor<5xf32>)
func.func @lower_patch_conv_to_linear(%x: tensor<1x3x8x8xf32>, %w: tensor<5x3x4x4xf32>, %b: tensor<5xf32>) -> tensor<1x5x2x2xf32> {
  // CHECK-NOT: tg.conv
  // CHECK: %[[R:.+]] = tg.reshape %[[X]] : tensor<1x3x8x8xf32> -> tensor<1x3x2x4x2x4xf32>
  // CHECK: %[[T:.+]] = tg.transpose %[[R]] {perm = [0, 2, 4, 1, 3, 5]} : tensor<1x3x2x4x2x4xf32> -> tensor<1x2x2x3x4x4xf32>
  // CHECK: %[[P:.+]] = tg.reshape %[[T]] : tensor<1x2x2x3x4x4xf32> -> tensor<1x4x48xf32>
  // CHECK: %[[WR:.+]] = tg.reshape %[[W]] : tensor<5x3x4x4xf32> -> tensor<5x48xf32>
  // CHECK: %[[L:.+]] = tg.linear %[[P]], %[[WR]], %[[B]] : tensor<1x4x48xf32>, tensor<5x48xf32>, tensor<5xf32> -> tensor<1x4x5xf32>
  // CHECK: %[[M:.+]] = tg.reshape %[[L]] : tensor<1x4x5xf32> -> tensor<1x2x2x5xf32>
  // CHECK: %[[O:.+]] = tg.transpose %[[M]] {perm = [0, 3, 1, 2]} : tensor<1x2x2x5xf32> -> tensor<1x5x2x2xf32>
  // CHECK: return %[[O]]
  %0 = tg.conv %x, %w, %b {dilations = [1, 1], group = 1 : i64, pads = [0, 0, 0, 0], strides = [4, 4]} : tensor<1x3x8x8xf32>, tensor<5x3x4x4xf32>, tensor<5xf32> -> tensor<1x5x2x2xf32>
  return %0 : tensor<1x5x2x2xf32>
}

// -----

// @no_fold_overlapping_conv: stride 2 with a 4×4 kernel (patches overlap): stays a conv.
// CHECK-LABEL: func.func @no_fold_overlapping_conv
func.func @no_fold_overlapping_conv(%x: tensor<1x3x8x8xf32>, %w: tensor<5x3x4x4xf32>) -> tensor<1x5x3x3xf32> {
  // CHECK: tg.conv
  // CHECK-NOT: tg.linear
  %0 = tg.conv %x, %w {dilations = [1, 1], group = 1 : i64, pads = [0, 0, 0, 0], strides = [2, 2]} : tensor<1x3x8x8xf32>, tensor<5x3x4x4xf32> -> tensor<1x5x3x3xf32>
  return %0 : tensor<1x5x3x3xf32>
}

// -----

// A 1x1 convolution (stride 1, unpadded, one group) becomes the weight times the image in its
// own channels-first layout: no transposes.
// CHECK-LABEL: func.func @lower_pointwise_conv_to_matmul
// CHECK-SAME: (%[[X:.+]]: tensor<2x6x4x5xf32>, %[[W:.+]]: tensor<8x6x1x1xf32>, %[[B:.+]]: tensor<8xf32>)
func.func @lower_pointwise_conv_to_matmul(%x: tensor<2x6x4x5xf32>, %w: tensor<8x6x1x1xf32>, %b: tensor<8xf32>) -> tensor<2x8x4x5xf32> {
  // CHECK-NOT: tg.conv
  // CHECK-NOT: tg.transpose
  // CHECK: %[[XR:.+]] = tg.reshape %[[X]] : tensor<2x6x4x5xf32> -> tensor<2x6x20xf32>
  // CHECK: %[[WR:.+]] = tg.reshape %[[W]] : tensor<8x6x1x1xf32> -> tensor<8x6xf32>
  // CHECK: %[[M:.+]] = tg.matmul %[[WR]], %[[XR]] : tensor<8x6xf32>, tensor<2x6x20xf32> -> tensor<2x8x20xf32>
  // CHECK: %[[BR:.+]] = tg.reshape %[[B]] : tensor<8xf32> -> tensor<8x1xf32>
  // CHECK: %[[A:.+]] = tg.add %[[M]], %[[BR]] : tensor<2x8x20xf32>, tensor<8x1xf32> -> tensor<2x8x20xf32>
  // CHECK: %[[O:.+]] = tg.reshape %[[A]] : tensor<2x8x20xf32> -> tensor<2x8x4x5xf32>
  // CHECK: return %[[O]]
  %0 = tg.conv %x, %w, %b {dilations = [1, 1], group = 1 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : tensor<2x6x4x5xf32>, tensor<8x6x1x1xf32>, tensor<8xf32> -> tensor<2x8x4x5xf32>
  return %0 : tensor<2x8x4x5xf32>
}

// -----

// Negative: a 1x1 convolution at stride 2, and a grouped one, stay convolutions.
// CHECK-LABEL: func.func @no_lower_strided_or_grouped_pointwise
func.func @no_lower_strided_or_grouped_pointwise(%x: tensor<1x6x4x4xf32>, %w: tensor<8x6x1x1xf32>, %g: tensor<8x3x1x1xf32>) -> (tensor<1x8x2x2xf32>, tensor<1x8x4x4xf32>) {
  // CHECK: tg.conv
  // CHECK: tg.conv
  // CHECK-NOT: tg.matmul
  %0 = tg.conv %x, %w {dilations = [1, 1], group = 1 : i64, pads = [0, 0, 0, 0], strides = [2, 2]} : tensor<1x6x4x4xf32>, tensor<8x6x1x1xf32> -> tensor<1x8x2x2xf32>
  %1 = tg.conv %x, %g {dilations = [1, 1], group = 2 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : tensor<1x6x4x4xf32>, tensor<8x3x1x1xf32> -> tensor<1x8x4x4xf32>
  return %0, %1 : tensor<1x8x2x2xf32>, tensor<1x8x4x4xf32>
}
