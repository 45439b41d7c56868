// RUN: tgc-opt %s --split-input-file --tgc-recognize-norms | FileCheck %s

// LLaMA TorchScript: Pow 2, ReduceMean, Add eps, Sqrt, Div(1, ·), Mul x, then Mul weight.
// CHECK-LABEL: func.func @rms_norm_div_one
func.func @rms_norm_div_one(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %two = tg.constant dense<2.000000e+00> : tensor<f32>
  %eps = tg.constant dense<9.99999997E-7> : tensor<f32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %w = tg.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<[1.000000e+00, {{.+}}]> : tensor<8xf32>
  // CHECK: %[[N:.+]] = tg.rms_norm %{{[^,]+}}, %[[W]] {axis = 2 : i64, epsilon = 9.99999997E-7 : f32} : tensor<1x4x8xf32>, tensor<8xf32> -> tensor<1x4x8xf32>
  // CHECK-NOT: tg.reduce_mean
  // CHECK: return %[[N]]
  %0 = tg.pow %x, %two : tensor<1x4x8xf32>, tensor<f32> -> tensor<1x4x8xf32>
  %1 = tg.reduce_mean %0 {axes = [2], keepdims = true} : tensor<1x4x8xf32> -> tensor<1x4x1xf32>
  %2 = tg.add %1, %eps : tensor<1x4x1xf32>, tensor<f32> -> tensor<1x4x1xf32>
  %3 = tg.sqrt %2 : tensor<1x4x1xf32>
  %4 = tg.div %one, %3 : tensor<f32>, tensor<1x4x1xf32> -> tensor<1x4x1xf32>
  %5 = tg.mul %x, %4 : tensor<1x4x8xf32>, tensor<1x4x1xf32> -> tensor<1x4x8xf32>
  %6 = tg.mul %w, %5 : tensor<8xf32>, tensor<1x4x8xf32> -> tensor<1x4x8xf32>
  return %6 : tensor<1x4x8xf32>
}

// -----

// LLaMA dynamo: Reciprocal(Sqrt), negative axis; x·x as the square; no weight.
// CHECK-LABEL: func.func @rms_norm_reciprocal
func.func @rms_norm_reciprocal(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %eps = tg.constant dense<1.000000e-05> : tensor<f32>
  // CHECK: %[[N:.+]] = tg.rms_norm %{{[^,]+}} {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: return %[[N]]
  %0 = tg.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = tg.reduce_mean %0 {axes = [-1], keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %2 = tg.add %eps, %1 : tensor<f32>, tensor<4x1xf32> -> tensor<4x1xf32>
  %3 = tg.sqrt %2 : tensor<4x1xf32>
  %4 = tg.reciprocal %3 : tensor<4x1xf32>
  %5 = tg.mul %4, %x : tensor<4x1xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %5 : tensor<4x8xf32>
}

// -----

// Rsqrt, and a splat weight applied after the norm formed (FoldScaleIntoRmsNorm).
// CHECK-LABEL: func.func @rms_norm_rsqrt_splat_weight
func.func @rms_norm_rsqrt_splat_weight(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = tg.constant dense<2.000000e+00> : tensor<f32>
  %eps = tg.constant dense<1.000000e-05> : tensor<f32>
  %w = tg.constant dense<1.500000e+00> : tensor<8xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<1.500000e+00> : tensor<8xf32>
  // CHECK: %[[N:.+]] = tg.rms_norm %{{[^,]+}}, %[[W]] {axis = 1 : i64, {{.+}}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: return %[[N]]
  %0 = tg.pow %x, %two : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = tg.reduce_mean %0 {axes = [1], keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %2 = tg.add %1, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %3 = tg.rsqrt %2 : tensor<4x1xf32>
  %4 = tg.mul %x, %3 : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %5 = tg.mul %4, %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %5 : tensor<4x8xf32>
}

// -----

// x / sqrt(mean(x²) + eps) (RecognizeRmsNormDiv).
// CHECK-LABEL: func.func @rms_norm_div
func.func @rms_norm_div(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = tg.constant dense<2.000000e+00> : tensor<f32>
  %eps = tg.constant dense<1.000000e-05> : tensor<f32>
  // CHECK: %[[N:.+]] = tg.rms_norm %{{[^,]+}} {axis = 1 : i64, {{.+}}} : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: return %[[N]]
  %0 = tg.pow %x, %two : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = tg.reduce_mean %0 {axes = [1], keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %2 = tg.add %1, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %3 = tg.sqrt %2 : tensor<4x1xf32>
  %4 = tg.div %x, %3 : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// Negative: the mean runs over a leading dim, not the trailing ones.
// CHECK-LABEL: func.func @no_fuse_rms_norm_leading_axis
func.func @no_fuse_rms_norm_leading_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = tg.constant dense<2.000000e+00> : tensor<f32>
  %eps = tg.constant dense<1.000000e-05> : tensor<f32>
  // CHECK-NOT: tg.rms_norm
  // CHECK: tg.reduce_mean
  %0 = tg.pow %x, %two : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = tg.reduce_mean %0 {axes = [0], keepdims = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  %2 = tg.add %1, %eps : tensor<1x8xf32>, tensor<f32> -> tensor<1x8xf32>
  %3 = tg.rsqrt %2 : tensor<1x8xf32>
  %4 = tg.mul %x, %3 : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// Negative: a runtime weight does not fold into the norm (the norm itself still forms).
// CHECK-LABEL: func.func @no_fuse_rms_scale_runtime_weight
func.func @no_fuse_rms_scale_runtime_weight(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %two = tg.constant dense<2.000000e+00> : tensor<f32>
  %eps = tg.constant dense<1.000000e-05> : tensor<f32>
  // CHECK: %[[N:.+]] = tg.rms_norm %{{[^,]+}} {axis = 1 : i64, {{.+}}} : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: tg.mul %[[N]]
  %0 = tg.pow %x, %two : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = tg.reduce_mean %0 {axes = [1], keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %2 = tg.add %1, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %3 = tg.rsqrt %2 : tensor<4x1xf32>
  %4 = tg.mul %x, %3 : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %5 = tg.mul %4, %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %5 : tensor<4x8xf32>
}

// -----

// Negative: x / sqrt(mean(x²)) with x³ in the mean is not an RMS norm.
// CHECK-LABEL: func.func @no_fuse_rms_norm_div_cube
func.func @no_fuse_rms_norm_div_cube(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %three = tg.constant dense<3.000000e+00> : tensor<f32>
  %eps = tg.constant dense<1.000000e-05> : tensor<f32>
  // CHECK-NOT: tg.rms_norm
  // CHECK: tg.div
  %0 = tg.pow %x, %three : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = tg.reduce_mean %0 {axes = [1], keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %2 = tg.add %1, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %3 = tg.sqrt %2 : tensor<4x1xf32>
  %4 = tg.div %x, %3 : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// Decomposed LayerNorm: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add.
// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %two = tg.constant dense<2.000000e+00> : tensor<f32>
  %eps = tg.constant dense<1.000000e-05> : tensor<f32>
  %w = tg.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %b = tg.constant dense<[0.5, 0.5, 0.5, 0.5, 1.5, 1.5, 1.5, 1.5]> : tensor<8xf32>
  // CHECK-DAG: %[[W:.+]] = tg.constant dense<[1.000000e+00, {{.+}}]> : tensor<8xf32>
  // CHECK-DAG: %[[B:.+]] = tg.constant dense<[5.000000e-01, {{.+}}]> : tensor<8xf32>
  // CHECK: %[[N:.+]] = tg.layer_norm %{{[^,]+}}, %[[W]], %[[B]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  // CHECK-NOT: tg.reduce_mean
  // CHECK: return %[[N]]
  %0 = tg.reduce_mean %x {axes = [2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %1 = tg.sub %x, %0 : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %2 = tg.pow %1, %two : tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  %3 = tg.reduce_mean %2 {axes = [2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %4 = tg.add %3, %eps : tensor<2x4x1xf32>, tensor<f32> -> tensor<2x4x1xf32>
  %5 = tg.sqrt %4 : tensor<2x4x1xf32>
  %6 = tg.div %1, %5 : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %7 = tg.mul %6, %w : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %8 = tg.add %7, %b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  return %8 : tensor<2x4x8xf32>
}

// -----

// The multiplied-inverse form, over the two trailing dims (RecognizeLayerNormMul), bias only.
// CHECK-LABEL: func.func @layer_norm_rsqrt_two_axes
func.func @layer_norm_rsqrt_two_axes(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %eps = tg.constant dense<1.000000e-05> : tensor<f32>
  %b = tg.constant dense<2.500000e-01> : tensor<1x4x8xf32>
  // CHECK: %[[B:.+]] = tg.constant dense<2.500000e-01> : tensor<4x8xf32>
  // CHECK: %[[N:.+]] = tg.layer_norm %{{[^,]+}}, bias %[[B]] {axis = 1 : i64, {{.+}}} : tensor<2x4x8xf32>, tensor<4x8xf32> -> tensor<2x4x8xf32>
  // CHECK: return %[[N]]
  %0 = tg.reduce_mean %x {axes = [1, 2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
  %1 = tg.sub %x, %0 : tensor<2x4x8xf32>, tensor<2x1x1xf32> -> tensor<2x4x8xf32>
  %2 = tg.mul %1, %1 : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %3 = tg.reduce_mean %2 {axes = [-1, -2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
  %4 = tg.add %3, %eps : tensor<2x1x1xf32>, tensor<f32> -> tensor<2x1x1xf32>
  %5 = tg.rsqrt %4 : tensor<2x1x1xf32>
  %6 = tg.mul %5, %1 : tensor<2x1x1xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %7 = tg.add %b, %6 : tensor<1x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %7 : tensor<2x4x8xf32>
}

// -----

// Negative: variance and mean over different axes.
// CHECK-LABEL: func.func @no_fuse_layer_norm_axis_mismatch
func.func @no_fuse_layer_norm_axis_mismatch(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %two = tg.constant dense<2.000000e+00> : tensor<f32>
  %eps = tg.constant dense<1.000000e-05> : tensor<f32>
  // CHECK-NOT: tg.layer_norm
  // CHECK-NOT: tg.rms_norm
  // CHECK: tg.div
  %0 = tg.reduce_mean %x {axes = [2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %1 = tg.sub %x, %0 : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %2 = tg.pow %1, %two : tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  %3 = tg.reduce_mean %2 {axes = [1, 2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
  %4 = tg.add %3, %eps : tensor<2x1x1xf32>, tensor<f32> -> tensor<2x1x1xf32>
  %5 = tg.sqrt %4 : tensor<2x1x1xf32>
  %6 = tg.div %1, %5 : tensor<2x4x8xf32>, tensor<2x1x1xf32> -> tensor<2x4x8xf32>
  return %6 : tensor<2x4x8xf32>
}

// -----

// Negative: a layer_norm with another use keeps its scale multiply; a scale after a bias
// does not fold either ((n + b) * w != n * w + b).
// CHECK-LABEL: func.func @no_fuse_layer_norm_scale
func.func @no_fuse_layer_norm_scale(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %w = tg.constant dense<2.000000e+00> : tensor<8xf32>
  %c = tg.constant dense<5.000000e-01> : tensor<8xf32>
  // CHECK: %[[N:.+]] = tg.layer_norm %{{[^,]+}} {axis = 1 : i64
  // CHECK: tg.mul %[[N]]
  // CHECK: %[[M:.+]] = tg.layer_norm %{{[^,]+}}, %{{[^,]+}}, %{{[^ ]+}} {axis = 1 : i64
  // CHECK: tg.mul %[[M]]
  %n = tg.layer_norm %x {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<4x8xf32> -> tensor<4x8xf32>
  %0 = tg.mul %n, %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %m = tg.layer_norm %x, %w, %c {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %1 = tg.mul %m, %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %0, %n, %1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Softmax from exp(x - max) / sum, on a middle axis.
// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: tensor<2x5x3xf32>) -> tensor<2x5x3xf32> {
  // CHECK: %[[S:.+]] = tg.softmax %{{.+}} {axis = 1 : i64, log = false} : tensor<2x5x3xf32>
  // CHECK-NOT: tg.exp
  // CHECK: return %[[S]]
  %0 = tg.reduce_max %x {axes = [1], keepdims = true} : tensor<2x5x3xf32> -> tensor<2x1x3xf32>
  %1 = tg.sub %x, %0 : tensor<2x5x3xf32>, tensor<2x1x3xf32> -> tensor<2x5x3xf32>
  %2 = tg.exp %1 : tensor<2x5x3xf32>
  %3 = tg.reduce_sum %2 {axes = [-2], keepdims = true} : tensor<2x5x3xf32> -> tensor<2x1x3xf32>
  %4 = tg.div %2, %3 : tensor<2x5x3xf32>, tensor<2x1x3xf32> -> tensor<2x5x3xf32>
  return %4 : tensor<2x5x3xf32>
}

// -----

// Negative: max and sum over different axes.
// CHECK-LABEL: func.func @no_fuse_softmax_axis_mismatch
func.func @no_fuse_softmax_axis_mismatch(%x: tensor<2x5x3xf32>) -> tensor<2x5x3xf32> {
  // CHECK-NOT: tg.softmax
  // CHECK: tg.exp
  %0 = tg.reduce_max %x {axes = [1], keepdims = true} : tensor<2x5x3xf32> -> tensor<2x1x3xf32>
  %1 = tg.sub %x, %0 : tensor<2x5x3xf32>, tensor<2x1x3xf32> -> tensor<2x5x3xf32>
  %2 = tg.exp %1 : tensor<2x5x3xf32>
  %3 = tg.reduce_sum %2 {axes = [2], keepdims = true} : tensor<2x5x3xf32> -> tensor<2x5x1xf32>
  %4 = tg.div %2, %3 : tensor<2x5x3xf32>, tensor<2x5x1xf32> -> tensor<2x5x3xf32>
  return %4 : tensor<2x5x3xf32>
}
