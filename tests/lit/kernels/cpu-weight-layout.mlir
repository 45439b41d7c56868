// RUN: tgc-opt %s --split-input-file --tgc-cpu-weight-layout | FileCheck %s

// A linear by a constant [N, K] weight becomes a matmul by its [K, N] transpose, written at
// compile time, and the bias an add.
// CHECK-LABEL: func.func @linear_to_matmul
func.func @linear_to_matmul(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %w = tg.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %b = tg.constant dense<[0.5, 1.5, 2.5]> : tensor<3xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
  // CHECK: %[[Y:.+]] = tg.matmul %{{.+}}, %[[W]] : tensor<4x2xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  // CHECK: %[[Z:.+]] = tg.add %[[Y]], %{{.+}} : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  // CHECK: return %[[Z]]
  // CHECK-NOT: tg.linear
  %0 = tg.linear %x, %w, %b : tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A weight read by several linears (a recurrent weight, one per step) gets one transpose that
// every one of them multiplies by.
// CHECK-LABEL: func.func @shared_by_linears
func.func @shared_by_linears(%x: tensor<4x2xf32>, %h: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %w = tg.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
  // CHECK-NOT: tg.constant
  // CHECK: tg.matmul %{{.+}}, %[[W]]
  // CHECK: tg.matmul %{{.+}}, %[[W]]
  // CHECK-NOT: tg.linear
  %0 = tg.linear %x, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  %1 = tg.linear %h, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Negative: a weight another op reads (a tied embedding) stays one [N, K] constant.
// CHECK-LABEL: func.func @shared_weight
func.func @shared_weight(%x: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<3x2xf32>) {
  %w = tg.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %0 = tg.linear %x, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  %1 = tg.neg %w : tensor<3x2xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<3x2xf32>
}

// -----

// Negative: a weight computed at run time (not a constant) is left alone.
// CHECK-LABEL: func.func @runtime_weight
func.func @runtime_weight(%x: tensor<4x2xf32>, %w: tensor<3x2xf32>) -> tensor<4x3xf32> {
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %0 = tg.linear %x, %w : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Negative: an f16 weight stays [N, K] (the f16 GEMM copies B to float anyway).
// CHECK-LABEL: func.func @f16_weight
func.func @f16_weight(%x: tensor<4x2xf16>) -> tensor<4x3xf16> {
  %w = tg.constant dense<1.0> : tensor<3x2xf16>
  // CHECK: tg.linear
  // CHECK-NOT: tg.matmul
  %0 = tg.linear %x, %w : tensor<4x2xf16>, tensor<3x2xf16> -> tensor<4x3xf16>
  return %0 : tensor<4x3xf16>
}

// -----

// An f32 convolution of group 1 with >= 13 outputs gets its constant weight
// blocked by 16 output channels, [ceil(M/16), C, k..., 16], zeros past M (17 outputs: the
// second block holds one channel; 2.0 is 00000040 in the printed little-endian hex).
// CHECK-LABEL: func.func @conv_blocked
func.func @conv_blocked(%x: tensor<1x8x5x5xf32>) -> tensor<1x17x5x4xf32> {
  %w = tg.constant dense<2.0> : tensor<17x8x1x2xf32>
  %b = tg.constant dense<0.5> : tensor<17xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<"0x{{((00000040){128}){2}(00000040000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000){16}"}}> : tensor<2x8x1x2x16xf32>
  // CHECK: tg.conv %{{.+}}, %[[W]], %{{.+}} {dilations = [1, 1], group = 1 : i64, pads = [0, 0, 0, 0], strides = [1, 1], weight_block = 16 : i64} : tensor<1x8x5x5xf32>, tensor<2x8x1x2x16xf32>, tensor<17xf32> -> tensor<1x17x5x4xf32>
  %0 = tg.conv %x, %w, %b {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x5x5xf32>, tensor<17x8x1x2xf32>, tensor<17xf32> -> tensor<1x17x5x4xf32>
  return %0 : tensor<1x17x5x4xf32>
}

// -----

// A strided 3-channel stem, and 1-D too.
// CHECK-LABEL: func.func @stem_blocked
func.func @stem_blocked(%x: tensor<1x3x9x9xf32>) -> tensor<1x16x4x4xf32> {
  %w = tg.constant dense<1.0> : tensor<16x3x3x3xf32>
  // CHECK: tg.conv {{.*}}weight_block = 16 : i64{{.*}} : tensor<1x3x9x9xf32>, tensor<1x3x3x3x16xf32> -> tensor<1x16x4x4xf32>
  %0 = tg.conv %x, %w {strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x3x9x9xf32>, tensor<16x3x3x3xf32> -> tensor<1x16x4x4xf32>
  return %0 : tensor<1x16x4x4xf32>
}
// CHECK-LABEL: func.func @conv1d_blocked
func.func @conv1d_blocked(%x: tensor<1x8x9xf32>) -> tensor<1x32x7xf32> {
  %w = tg.constant dense<1.0> : tensor<32x8x3xf32>
  // CHECK: tg.conv {{.*}}weight_block = 16 : i64{{.*}} : tensor<1x8x9xf32>, tensor<2x8x3x16xf32> -> tensor<1x32x7xf32>
  %0 = tg.conv %x, %w {strides = [1], pads = [0, 0], dilations = [1], group = 1 : i64} : tensor<1x8x9xf32>, tensor<32x8x3xf32> -> tensor<1x32x7xf32>
  return %0 : tensor<1x32x7xf32>
}

// A strided 1x1 window (a downsampling shortcut; no GEMM takes it).
// CHECK-LABEL: func.func @strided_1x1_blocked
func.func @strided_1x1_blocked(%x: tensor<1x8x8x8xf32>) -> tensor<1x32x4x4xf32> {
  %w = tg.constant dense<1.0> : tensor<32x8x1x1xf32>
  // CHECK: tg.conv {{.*}}weight_block = 16 : i64{{.*}} : tensor<1x8x8x8xf32>, tensor<2x8x1x1x16xf32> -> tensor<1x32x4x4xf32>
  %0 = tg.conv %x, %w {strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x8x8xf32>, tensor<32x8x1x1xf32> -> tensor<1x32x4x4xf32>
  return %0 : tensor<1x32x4x4xf32>
}

// -----

// Negative: 12 outputs (the positions-in-lanes kernel computes exactly 12), an unstrided 1x1
// window (a GEMM), a grouped convolution, a stride above 4, a weight
// computed at run time, a weight another op reads, and f16.
// CHECK-LABEL: func.func @conv_not_blocked
func.func @conv_not_blocked(%x: tensor<1x8x9x9xf32>, %wr: tensor<16x8x3x3xf32>, %h: tensor<1x8x9x9xf16>) -> (tensor<1x12x7x7xf32>, tensor<1x16x9x9xf32>, tensor<1x16x7x7xf32>, tensor<1x16x2x2xf32>, tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>, tensor<16x8x3x3xf32>, tensor<1x16x7x7xf16>) {
  %w12 = tg.constant dense<1.0> : tensor<12x8x3x3xf32>
  %w1 = tg.constant dense<1.0> : tensor<16x8x1x1xf32>
  %wg = tg.constant dense<1.0> : tensor<16x4x3x3xf32>
  %ws = tg.constant dense<3.0> : tensor<16x8x3x3xf32>
  %wt = tg.constant dense<4.0> : tensor<16x8x3x3xf32>
  %wh = tg.constant dense<1.0> : tensor<16x8x3x3xf16>
  // CHECK-NOT: weight_block
  %0 = tg.conv %x, %w12 {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x9x9xf32>, tensor<12x8x3x3xf32> -> tensor<1x12x7x7xf32>
  %2 = tg.conv %x, %w1 {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x9x9xf32>, tensor<16x8x1x1xf32> -> tensor<1x16x9x9xf32>
  %3 = tg.conv %x, %wg {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 2 : i64} : tensor<1x8x9x9xf32>, tensor<16x4x3x3xf32> -> tensor<1x16x7x7xf32>
  %4 = tg.conv %x, %ws {strides = [5, 5], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x9x9xf32>, tensor<16x8x3x3xf32> -> tensor<1x16x2x2xf32>
  %5 = tg.conv %x, %wr {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x9x9xf32>, tensor<16x8x3x3xf32> -> tensor<1x16x7x7xf32>
  %6 = tg.conv %x, %wt {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x9x9xf32>, tensor<16x8x3x3xf32> -> tensor<1x16x7x7xf32>
  %7 = tg.neg %wt : tensor<16x8x3x3xf32>
  %8 = tg.conv %h, %wh {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x9x9xf16>, tensor<16x8x3x3xf16> -> tensor<1x16x7x7xf16>
  return %0, %2, %3, %4, %5, %6, %7, %8 : tensor<1x12x7x7xf32>, tensor<1x16x9x9xf32>, tensor<1x16x7x7xf32>, tensor<1x16x2x2xf32>, tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>, tensor<16x8x3x3xf32>, tensor<1x16x7x7xf16>
}

// -----

// From 13 outputs (the positions-in-lanes kernel computes 16 channels there too), over wide
// planes as well.
// CHECK-LABEL: func.func @conv_13_outputs
func.func @conv_13_outputs(%x: tensor<1x8x34x34xf32>) -> tensor<1x13x32x32xf32> {
  %w = tg.constant dense<1.0> : tensor<13x8x3x3xf32>
  // CHECK: tg.conv {{.*}}weight_block = 16 : i64{{.*}} : tensor<1x8x34x34xf32>, tensor<1x8x3x3x16xf32> -> tensor<1x13x32x32xf32>
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x34x34xf32>, tensor<13x8x3x3xf32> -> tensor<1x13x32x32xf32>
  return %0 : tensor<1x13x32x32xf32>
}

// -----

// A transpose moving a blocked convolution's channels last (a detection head's
// permute(0, 2, 3, 1); 1-D too) folds into it: the kernel stores channels last. Storing so, the
// lanes kernel takes 12 outputs too (from 8; NCHW from 13).
// CHECK-LABEL: func.func @conv_channels_last
func.func @conv_channels_last(%x: tensor<1x8x6x6xf32>, %y: tensor<1x8x9xf32>) -> (tensor<1x4x4x15xf32>, tensor<1x7x32xf32>, tensor<1x4x4x12xf32>) {
  %w = tg.constant dense<1.0> : tensor<15x8x3x3xf32>
  %b = tg.constant dense<0.5> : tensor<15xf32>
  %v = tg.constant dense<1.0> : tensor<32x8x3xf32>
  // CHECK: %[[A:.+]] = tg.conv {{.*}}channels_last{{.*}}weight_block = 16 : i64{{.*}} : tensor<1x8x6x6xf32>, tensor<1x8x3x3x16xf32>, tensor<15xf32> -> tensor<1x4x4x15xf32>
  // CHECK: %[[B:.+]] = tg.conv {{.*}}channels_last{{.*}}weight_block = 16 : i64{{.*}} : tensor<1x8x9xf32>, tensor<2x8x3x16xf32> -> tensor<1x7x32xf32>
  // CHECK: %[[C:.+]] = tg.conv {{.*}}channels_last{{.*}}weight_block = 16 : i64{{.*}} : tensor<1x8x6x6xf32>, tensor<1x8x3x3x16xf32> -> tensor<1x4x4x12xf32>
  // CHECK-NOT: tg.transpose
  // CHECK: return %[[A]], %[[B]], %[[C]]
  %0 = tg.conv %x, %w, %b {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x6x6xf32>, tensor<15x8x3x3xf32>, tensor<15xf32> -> tensor<1x15x4x4xf32>
  %1 = tg.transpose %0 {perm = [0, 2, 3, 1]} : tensor<1x15x4x4xf32> -> tensor<1x4x4x15xf32>
  %2 = tg.conv %y, %v {strides = [1], pads = [0, 0], dilations = [1], group = 1 : i64} : tensor<1x8x9xf32>, tensor<32x8x3xf32> -> tensor<1x32x7xf32>
  %3 = tg.transpose %2 {perm = [0, 2, 1]} : tensor<1x32x7xf32> -> tensor<1x7x32xf32>
  %u = tg.constant dense<1.0> : tensor<12x8x3x3xf32>
  %4 = tg.conv %x, %u {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x6x6xf32>, tensor<12x8x3x3xf32> -> tensor<1x12x4x4xf32>
  %5 = tg.transpose %4 {perm = [0, 2, 3, 1]} : tensor<1x12x4x4xf32> -> tensor<1x4x4x12xf32>
  return %1, %3, %5 : tensor<1x4x4x15xf32>, tensor<1x7x32xf32>, tensor<1x4x4x12xf32>
}

// -----

// Negative: another permutation, a convolution whose NCHW result is read elsewhere too, and
// one the lanes kernel does not run (7 outputs) keep their transposes.
// CHECK-LABEL: func.func @conv_channels_last_not
func.func @conv_channels_last_not(%x: tensor<1x8x6x6xf32>) -> (tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>, tensor<1x16x4x4xf32>, tensor<1x4x4x7xf32>) {
  %w = tg.constant dense<1.0> : tensor<16x8x3x3xf32>
  %u = tg.constant dense<2.0> : tensor<16x8x3x3xf32>
  %s = tg.constant dense<1.0> : tensor<7x8x3x3xf32>
  // CHECK-NOT: channels_last
  // CHECK-COUNT-3: tg.transpose
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x6x6xf32>, tensor<16x8x3x3xf32> -> tensor<1x16x4x4xf32>
  %1 = tg.transpose %0 {perm = [0, 3, 2, 1]} : tensor<1x16x4x4xf32> -> tensor<1x4x4x16xf32>
  %2 = tg.conv %x, %u {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x6x6xf32>, tensor<16x8x3x3xf32> -> tensor<1x16x4x4xf32>
  %3 = tg.transpose %2 {perm = [0, 2, 3, 1]} : tensor<1x16x4x4xf32> -> tensor<1x4x4x16xf32>
  %4 = tg.conv %x, %s {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x8x6x6xf32>, tensor<7x8x3x3xf32> -> tensor<1x7x4x4xf32>
  %5 = tg.transpose %4 {perm = [0, 2, 3, 1]} : tensor<1x7x4x4xf32> -> tensor<1x4x4x7xf32>
  return %1, %3, %2, %5 : tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>, tensor<1x16x4x4xf32>, tensor<1x4x4x7xf32>
}

// -----

// A matmul by a constant f32 [K, N] weight of N >= 32 gets it stored in 32-column strips,
// [ceil(N/32), K, 32] with zeros past N (here N = 33: a full strip and one of a single column).
// CHECK-LABEL: func.func @matmul_strips
func.func @matmul_strips(%x: tensor<4x1xf32>) -> tensor<4x33xf32> {
  %w = tg.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0]]> : tensor<1x33xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<{{\[\[\[}}0.000000e+00, 1.000000e+00, {{.*}}, 3.100000e+01]], {{\[\[}}3.200000e+01, 0.000000e+00, {{.*}}, 0.000000e+00]]]> : tensor<2x1x32xf32>
  // CHECK: tg.matmul %{{.+}}, %[[W]] {weight_block = 32 : i64} : tensor<4x1xf32>, tensor<2x1x32xf32> -> tensor<4x33xf32>
  %0 = tg.matmul %x, %w : tensor<4x1xf32>, tensor<1x33xf32> -> tensor<4x33xf32>
  return %0 : tensor<4x33xf32>
}

// -----

// A linear becomes a matmul by its transpose, which is then stored in strips; two matmuls
// reading one weight share one copy in strips.
// CHECK-LABEL: func.func @linear_to_strips
func.func @linear_to_strips(%x: tensor<3x1xf32>, %h: tensor<5x1xf32>) -> (tensor<3x32xf32>, tensor<5x32xf32>) {
  %w = tg.constant dense<1.5> : tensor<32x1xf32>
  // CHECK: %[[W:.+]] = tg.constant dense<1.500000e+00> : tensor<1x1x32xf32>
  // CHECK-NOT: tg.constant
  // CHECK: tg.matmul %{{.+}}, %[[W]] {weight_block = 32 : i64} : tensor<3x1xf32>, tensor<1x1x32xf32> -> tensor<3x32xf32>
  // CHECK: tg.matmul %{{.+}}, %[[W]] {weight_block = 32 : i64} : tensor<5x1xf32>, tensor<1x1x32xf32> -> tensor<5x32xf32>
  // CHECK-NOT: tg.linear
  %0 = tg.linear %x, %w : tensor<3x1xf32>, tensor<32x1xf32> -> tensor<3x32xf32>
  %1 = tg.linear %h, %w : tensor<5x1xf32>, tensor<32x1xf32> -> tensor<5x32xf32>
  return %0, %1 : tensor<3x32xf32>, tensor<5x32xf32>
}

// -----

// Negative: fewer than 32 columns (no full strip: the tiles do not take it), a weight another
// op reads too, a vector lhs, and an f16 weight all stay [K, N].
// CHECK-LABEL: func.func @matmul_not_strips
func.func @matmul_not_strips(%x: tensor<4x2xf32>, %v: tensor<2xf32>, %xh: tensor<4x2xf16>) -> (tensor<4x31xf32>, tensor<4x32xf32>, tensor<2x32xf32>, tensor<32xf32>, tensor<4x32xf16>) {
  %w31 = tg.constant dense<1.0> : tensor<2x31xf32>
  %w = tg.constant dense<2.0> : tensor<2x32xf32>
  %wv = tg.constant dense<3.0> : tensor<2x32xf32>
  %wh = tg.constant dense<4.0> : tensor<2x32xf16>
  // CHECK-NOT: weight_block
  %0 = tg.matmul %x, %w31 : tensor<4x2xf32>, tensor<2x31xf32> -> tensor<4x31xf32>
  %1 = tg.matmul %x, %w : tensor<4x2xf32>, tensor<2x32xf32> -> tensor<4x32xf32>
  %2 = tg.neg %w : tensor<2x32xf32>
  %3 = tg.matmul %v, %wv : tensor<2xf32>, tensor<2x32xf32> -> tensor<32xf32>
  %4 = tg.matmul %xh, %wh : tensor<4x2xf16>, tensor<2x32xf16> -> tensor<4x32xf16>
  return %0, %1, %2, %3, %4 : tensor<4x31xf32>, tensor<4x32xf32>, tensor<2x32xf32>, tensor<32xf32>, tensor<4x32xf16>
}
