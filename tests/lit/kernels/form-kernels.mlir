// RUN: tgc-opt %s --split-input-file --tgc-form-kernels | FileCheck %s

// A pointwise chain becomes one kernel; the splat constant is inlined.
// CHECK-LABEL: func.func @pointwise_chain
func.func @pointwise_chain(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[K:.+]] = tg.fused "pointwise"(%{{.+}}, %{{.+}}) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK:   tg.add
  // CHECK:   tg.constant dense<5.000000e-01>
  // CHECK:   tg.mul
  // CHECK:   tg.tanh
  // CHECK:   tg.yield
  // CHECK: return %[[K]]
  %c = tg.constant dense<0.5> : tensor<4x8xf32>
  %0 = tg.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %1 = tg.mul %0, %c : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = tg.tanh %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// A linear followed by bias-add and GELU becomes one gemm kernel with an epilogue.
// CHECK-LABEL: func.func @gemm_epilogue
func.func @gemm_epilogue(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK: tg.fused "gemm"
  // CHECK:   tg.linear
  // CHECK:   tg.add
  // CHECK:   tg.gelu
  // CHECK:   tg.yield
  %0 = tg.linear %x, %w : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %1 = tg.add %0, %b : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %2 = tg.gelu %1 : tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}

// -----

// Negative: a producer with two uses stays its own kernel (no recomputation).
// CHECK-LABEL: func.func @no_fuse_multi_use
func.func @no_fuse_multi_use(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK: %[[E:.+]] = tg.exp
  // CHECK-NOT: tg.fused
  // CHECK: tg.neg %[[E]]
  // CHECK: tg.tanh %[[E]]
  %0 = tg.exp %a : tensor<8xf32>
  %1 = tg.neg %0 : tensor<8xf32>
  %2 = tg.tanh %0 : tensor<8xf32>
  return %1, %2 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Negative: a broadcast that grows the iteration space starts a new kernel.
// CHECK-LABEL: func.func @no_fuse_shape_change
func.func @no_fuse_shape_change(%a: tensor<8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: tg.exp
  // CHECK-NOT: tg.fused
  // CHECK: tg.add
  %0 = tg.exp %a : tensor<8xf32>
  %1 = tg.add %0, %b : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Negative: a GEMM without an elementwise consumer stays a plain op.
// CHECK-LABEL: func.func @no_fuse_gemm_alone
func.func @no_fuse_gemm_alone(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // CHECK-NOT: tg.fused
  // CHECK: tg.linear
  %0 = tg.linear %x, %w : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// A splat bias of a linear stays a kernel input: the GEMM reads it from a buffer.
// CHECK-LABEL: func.func @gemm_splat_bias_not_inlined
func.func @gemm_splat_bias_not_inlined(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // CHECK: %[[B:.+]] = tg.constant dense<2.500000e-01> : tensor<16xf32>
  // CHECK: tg.fused "gemm"(%{{.+}}, %{{.+}}, %[[B]])
  // CHECK-NOT: tg.constant
  // CHECK:   tg.linear
  // CHECK:   tg.relu
  %b = tg.constant dense<0.25> : tensor<16xf32>
  %0 = tg.linear %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %1 = tg.relu %0 : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

// A convolution followed by a residual add and ReLU becomes one conv kernel with an epilogue
// (the CUDA backend hands the whole of it to cuDNN).
// CHECK-LABEL: func.func @conv_epilogue
func.func @conv_epilogue(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>, %z: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  // CHECK: %[[K:.+]] = tg.fused "conv"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK:   tg.conv
  // CHECK:   tg.add
  // CHECK:   tg.relu
  // CHECK:   tg.yield
  // CHECK: return %[[K]]
  %0 = tg.conv %x, %w, %b {dilations = [1, 1], group = 1 : i64, pads = [1, 1, 1, 1], strides = [1, 1]} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.add %0, %z : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %2 = tg.relu %1 : tensor<1x4x8x8xf32>
  return %2 : tensor<1x4x8x8xf32>
}

// -----

// Negative: a convolution read by two ops, or read by a pooling, keeps no epilogue.
// CHECK-LABEL: func.func @conv_no_epilogue
func.func @conv_no_epilogue(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>) {
  // CHECK-NOT: tg.fused "conv"
  // CHECK: %[[C:.+]] = tg.conv
  // CHECK: tg.relu %[[C]]
  // CHECK: tg.sigmoid %[[C]]
  // CHECK: %[[D:.+]] = tg.conv
  // CHECK: tg.pool %[[D]]
  %0 = tg.conv %x, %w {dilations = [1, 1], group = 1 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.relu %0 : tensor<1x4x8x8xf32>
  %2 = tg.sigmoid %0 : tensor<1x4x8x8xf32>
  %3 = tg.conv %x, %w {dilations = [1, 1], group = 1 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x8x8xf32>
  %4 = tg.pool %3 {count_include_pad = false, dilations = [1, 1], kernel = [2, 2], kind = "max", pads = [0, 0, 0, 0], strides = [2, 2]} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return %1, %2, %4 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>
}

// -----

// A convolution's output read twice by its hardswish (x * clamp(x / 6 + 1/2, 0, 1)): every
// reader is elementwise and joins, so the convolution and the hardswish are one kernel.
// CHECK-LABEL: func.func @conv_hardswish
// CHECK: %[[K:.+]] = tg.fused "conv"
// CHECK:   tg.conv
// CHECK:   tg.mul
// CHECK:   tg.add
// CHECK:   tg.min
// CHECK:   tg.max
// CHECK:   tg.mul
// CHECK:   tg.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]
func.func @conv_hardswish(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %s = tg.constant dense<0.1666666> : tensor<f32>
  %h = tg.constant dense<0.5> : tensor<f32>
  %one = tg.constant dense<1.0> : tensor<f32>
  %zero = tg.constant dense<0.0> : tensor<f32>
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 4 : i64} : tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.mul %0, %s : tensor<1x4x8x8xf32>, tensor<f32> -> tensor<1x4x8x8xf32>
  %2 = tg.add %1, %h : tensor<1x4x8x8xf32>, tensor<f32> -> tensor<1x4x8x8xf32>
  %3 = tg.min %2, %one : tensor<1x4x8x8xf32>, tensor<f32> -> tensor<1x4x8x8xf32>
  %4 = tg.max %3, %zero : tensor<1x4x8x8xf32>, tensor<f32> -> tensor<1x4x8x8xf32>
  %5 = tg.mul %0, %4 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  return %5 : tensor<1x4x8x8xf32>
}

// -----

// Negative: the convolution's output feeds two branches that end apart (a relu and a sigmoid,
// both returned): they cannot both join, so the convolution stays alone and each branch keeps
// its own op.
// CHECK-LABEL: func.func @conv_two_branches
// CHECK-NOT: tg.fused
// CHECK: %[[C:.+]] = tg.conv
// CHECK: tg.relu %[[C]]
// CHECK: tg.sigmoid %[[C]]
func.func @conv_two_branches(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 4 : i64} : tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.relu %0 : tensor<1x4x8x8xf32>
  %2 = tg.sigmoid %0 : tensor<1x4x8x8xf32>
  return %1, %2 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}
