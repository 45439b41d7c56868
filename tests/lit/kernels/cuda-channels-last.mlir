// RUN: tgc-opt %s --split-input-file --tgc-cuda-channels-last | FileCheck %s

// Two 3x3 convolutions, a ReLU between them, a residual add and a per-channel scale: one
// transpose into channels last, one out; the filters transposed to [M, kh, kw, C] and the
// [C, 1, 1] scale to [1, 1, 1, C] (constants, folded later).
// CHECK-LABEL: func.func @chain
// CHECK: %[[X:.+]] = tg.transpose %arg0 {perm = [0, 2, 3, 1]} : tensor<1x4x8x8xf32> -> tensor<1x8x8x4xf32>
// CHECK: %[[W1:.+]] = tg.transpose %{{.+}} {perm = [0, 2, 3, 1]} : tensor<4x4x3x3xf32> -> tensor<4x3x3x4xf32>
// CHECK: %[[C1:.+]] = tg.conv %[[X]], %[[W1]], %{{.+}} {{{.*}}nhwc{{.*}}} : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32> -> tensor<1x8x8x4xf32>
// CHECK: %[[R:.+]] = tg.relu %[[C1]] : tensor<1x8x8x4xf32>
// CHECK: %[[C2:.+]] = tg.conv %[[R]], %{{.+}} {{{.*}}nhwc{{.*}}} : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<1x8x8x4xf32>
// CHECK: %[[A:.+]] = tg.add %[[C2]], %[[R]] : tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>
// CHECK: %[[S:.+]] = tg.transpose %{{.+}} {perm = [0, 2, 3, 1]} : tensor<1x4x1x1xf32> -> tensor<1x1x1x4xf32>
// CHECK: %[[M:.+]] = tg.mul %[[A]], %[[S]] : tensor<1x8x8x4xf32>, tensor<1x1x1x4xf32> -> tensor<1x8x8x4xf32>
// CHECK: %[[Y:.+]] = tg.transpose %[[M]] {perm = [0, 3, 1, 2]} : tensor<1x8x8x4xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @chain(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w1 = tg.constant dense<0.5> : tensor<4x4x3x3xf32>
  %b1 = tg.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %w2 = tg.constant dense<0.25> : tensor<4x4x3x3xf32>
  %0 = tg.conv %x, %w1, %b1 {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.relu %0 : tensor<1x4x8x8xf32>
  %2 = tg.conv %1, %w2 {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  %3 = tg.add %2, %1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %c = tg.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %4 = tg.mul %3, %c : tensor<1x4x8x8xf32>, tensor<4x1x1xf32> -> tensor<1x4x8x8xf32>
  return %4 : tensor<1x4x8x8xf32>
}

// -----

// Negative: a 1x1 convolution on a channels-first input stays (tgc-fold-linears makes it a
// channels-first GEMM).
// CHECK-LABEL: func.func @pointwise_alone
// CHECK-NOT: tg.transpose
// CHECK: tg.conv %arg0, %{{.+}} {dilations = [1, 1], group = 1 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : tensor<1x4x8x8xf32>
func.func @pointwise_alone(%x: tensor<1x4x8x8xf32>) -> tensor<1x6x8x8xf32> {
  %w = tg.constant dense<0.5> : tensor<6x4x1x1xf32>
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<6x4x1x1xf32> -> tensor<1x6x8x8xf32>
  return %0 : tensor<1x6x8x8xf32>
}

// -----

// A depthwise convolution (group = channels) goes channels last, its filter [M, kh, kw, 1].
// CHECK-LABEL: func.func @depthwise
// CHECK: %[[X:.+]] = tg.transpose %arg0 {perm = [0, 2, 3, 1]}
// CHECK: %[[W:.+]] = tg.transpose %{{.+}} {perm = [0, 2, 3, 1]} : tensor<4x1x3x3xf32> -> tensor<4x3x3x1xf32>
// CHECK: %[[C:.+]] = tg.conv %[[X]], %[[W]] {{{.*}}group = 4 : i64, nhwc{{.*}}} : tensor<1x8x8x4xf32>, tensor<4x3x3x1xf32> -> tensor<1x8x8x4xf32>
// CHECK: tg.transpose %[[C]] {perm = [0, 3, 1, 2]}
func.func @depthwise(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = tg.constant dense<0.5> : tensor<4x1x3x3xf32>
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 4 : i64} : tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

// A squeeze-excitation block: the global mean reduces the channels-last dims; its scale s
// ([N, C, 1, 1], computed channels first by the two 1x1 convolutions) multiplies the
// channels-last x after a reshape (the same elements), so the region goes on to the last
// convolution and one transpose leaves it.
// CHECK-LABEL: func.func @squeeze_excitation
// CHECK: %[[D:.+]] = tg.conv %{{.+}} {{{.*}}group = 4 : i64, nhwc{{.*}}} : tensor<1x8x8x4xf32>, tensor<4x3x3x1xf32> -> tensor<1x8x8x4xf32>
// CHECK: %[[R:.+]] = tg.relu %[[D]] : tensor<1x8x8x4xf32>
// CHECK: %[[M:.+]] = tg.reduce_mean %[[R]] {axes = [1, 2], keepdims = true} : tensor<1x8x8x4xf32> -> tensor<1x1x1x4xf32>
// CHECK: %[[S:.+]] = tg.sigmoid
// CHECK: %[[SL:.+]] = tg.reshape %[[S]] : tensor<1x4x1x1xf32> -> tensor<1x1x1x4xf32>
// CHECK: %[[X:.+]] = tg.mul %[[R]], %[[SL]] : tensor<1x8x8x4xf32>, tensor<1x1x1x4xf32> -> tensor<1x8x8x4xf32>
// CHECK: %[[L:.+]] = tg.linear %[[X]], %{{.+}} : tensor<1x8x8x4xf32>, tensor<6x4xf32> -> tensor<1x8x8x6xf32>
// CHECK: tg.transpose %[[L]] {perm = [0, 3, 1, 2]}
// CHECK-NOT: tg.transpose
func.func @squeeze_excitation(%x: tensor<1x4x8x8xf32>) -> tensor<1x6x8x8xf32> {
  %wd = tg.constant dense<0.5> : tensor<4x1x3x3xf32>
  %w1 = tg.constant dense<0.5> : tensor<2x4x1x1xf32>
  %w2 = tg.constant dense<0.5> : tensor<4x2x1x1xf32>
  %wp = tg.constant dense<0.5> : tensor<6x4x1x1xf32>
  %0 = tg.conv %x, %wd {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 4 : i64} : tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.relu %0 : tensor<1x4x8x8xf32>
  %2 = tg.reduce_mean %1 {axes = [2, 3], keepdims = true} : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
  %3 = tg.conv %2, %w1 {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x4x1x1xf32>, tensor<2x4x1x1xf32> -> tensor<1x2x1x1xf32>
  %4 = tg.relu %3 : tensor<1x2x1x1xf32>
  %5 = tg.conv %4, %w2 {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x2x1x1xf32>, tensor<4x2x1x1xf32> -> tensor<1x4x1x1xf32>
  %6 = tg.sigmoid %5 : tensor<1x4x1x1xf32>
  %7 = tg.mul %1, %6 : tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32> -> tensor<1x4x8x8xf32>
  %8 = tg.conv %7, %wp {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<6x4x1x1xf32> -> tensor<1x6x8x8xf32>
  return %8 : tensor<1x6x8x8xf32>
}

// -----

// Negative: a [N, C, H, W] operand that broadcasts only along H (not [N, C, 1..]) keeps the
// transpose back above the mul.
// CHECK-LABEL: func.func @partial_broadcast_stays
// CHECK: %[[C:.+]] = tg.conv {{.*}}nhwc
// CHECK: %[[T:.+]] = tg.transpose %[[C]] {perm = [0, 3, 1, 2]}
// CHECK: tg.mul %[[T]], %arg1 : tensor<1x4x8x8xf32>, tensor<1x4x1x8xf32>
func.func @partial_broadcast_stays(%x: tensor<1x4x8x8xf32>, %s: tensor<1x4x1x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = tg.constant dense<0.5> : tensor<4x4x3x3xf32>
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.mul %0, %s : tensor<1x4x8x8xf32>, tensor<1x4x1x8xf32> -> tensor<1x4x8x8xf32>
  return %1 : tensor<1x4x8x8xf32>
}

// -----

// Negative (sinking): the add's other operand is a channels-first value that is no constant, so
// the transpose back stays above the add.
// CHECK-LABEL: func.func @stays_for_nchw_operand
// CHECK: %[[C:.+]] = tg.conv {{.*}}nhwc
// CHECK: %[[T:.+]] = tg.transpose %[[C]] {perm = [0, 3, 1, 2]}
// CHECK: tg.add %[[T]], %arg1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
func.func @stays_for_nchw_operand(%x: tensor<1x4x8x8xf32>, %z: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = tg.constant dense<0.5> : tensor<4x4x3x3xf32>
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.add %0, %z : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  return %1 : tensor<1x4x8x8xf32>
}

// -----

// A max pool joins the region (nhwc); a 1x1 convolution reading it there is a linear over
// [N, H, W, C]; a global mean over H and W reduces the channels-last dims and a reshape (size-1
// dims only) restores [N, C, 1, 1]. Negative: a mean over the channels stays channels first,
// and the transpose back stays for it and the sub.
// CHECK-LABEL: func.func @pool_reduce_pointwise
// CHECK: %[[C:.+]] = tg.conv {{.*}}nhwc
// CHECK: %[[P:.+]] = tg.pool %[[C]] {{{.*}}nhwc{{.*}}} : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
// CHECK: %[[PT:.+]] = tg.transpose %[[P]] {perm = [0, 3, 1, 2]}
// CHECK: %[[L:.+]] = tg.linear %[[P]], %{{.+}}, %{{.+}} : tensor<1x4x4x4xf32>, tensor<6x4xf32>, tensor<6xf32> -> tensor<1x4x4x6xf32>
// CHECK: %[[G:.+]] = tg.reduce_mean %[[L]] {axes = [1, 2], keepdims = true} : tensor<1x4x4x6xf32> -> tensor<1x1x1x6xf32>
// CHECK: tg.reshape %[[G]] : tensor<1x1x1x6xf32> -> tensor<1x6x1x1xf32>
// CHECK: %[[R:.+]] = tg.reduce_mean %[[PT]] {axes = [1], keepdims = true}
// CHECK: tg.sub %[[PT]], %[[R]]
func.func @pool_reduce_pointwise(%x: tensor<1x4x8x8xf32>) -> (tensor<1x6x1x1xf32>, tensor<1x4x4x4xf32>) {
  %w = tg.constant dense<0.5> : tensor<4x4x3x3xf32>
  %w1 = tg.constant dense<0.5> : tensor<6x4x1x1xf32>
  %b1 = tg.constant dense<0.5> : tensor<6xf32>
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.pool %0 {kind = "max", kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1]} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %2 = tg.conv %1, %w1, %b1 {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x4x4x4xf32>, tensor<6x4x1x1xf32>, tensor<6xf32> -> tensor<1x6x4x4xf32>
  %3 = tg.reduce_mean %2 {axes = [2, 3], keepdims = true} : tensor<1x6x4x4xf32> -> tensor<1x6x1x1xf32>
  %4 = tg.reduce_mean %1 {axes = [1], keepdims = true} : tensor<1x4x4x4xf32> -> tensor<1x1x4x4xf32>
  %5 = tg.sub %1, %4 : tensor<1x4x4x4xf32>, tensor<1x1x4x4xf32> -> tensor<1x4x4x4xf32>
  return %3, %5 : tensor<1x6x1x1xf32>, tensor<1x4x4x4xf32>
}

// -----

// A strided 1x1 convolution inside the region stays a convolution (nhwc), not a linear.
// CHECK-LABEL: func.func @strided_pointwise
// CHECK: %[[C:.+]] = tg.conv {{.*}}nhwc{{.*}} -> tensor<1x8x8x4xf32>
// CHECK: tg.conv %[[C]], %{{.+}} {{{.*}}nhwc{{.*}}strides = [2, 2]} : tensor<1x8x8x4xf32>, tensor<6x1x1x4xf32> -> tensor<1x4x4x6xf32>
// CHECK-NOT: tg.linear
func.func @strided_pointwise(%x: tensor<1x4x8x8xf32>) -> tensor<1x6x4x4xf32> {
  %w = tg.constant dense<0.5> : tensor<4x4x3x3xf32>
  %w1 = tg.constant dense<0.5> : tensor<6x4x1x1xf32>
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.conv %0, %w1 {strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<6x4x1x1xf32> -> tensor<1x6x4x4xf32>
  return %1 : tensor<1x6x4x4xf32>
}

// -----

// A 1-D convolution (an audio front end): [N, L, C], the GELU below it channels last too. The
// convolution becomes one GEMM over its columns (LowerChannelsLastConv1dToLinear): the padded
// input's rows t·2 + j gathered for output t and window row j, side by side in the filter's
// [M, k, C] order.
// CHECK-LABEL: func.func @conv1d
// CHECK-DAG: %[[I:.+]] = tg.constant dense<{{\[}}[0, 1, 2], [2, 3, 4], [4, 5, 6], [6, 7, 8], [8, 9, 10], [10, 11, 12], [12, 13, 14], [14, 15, 16]]> : tensor<8x3xi64>
// CHECK-DAG: %[[X:.+]] = tg.transpose %arg0 {perm = [0, 2, 1]} : tensor<1x3x16xf32> -> tensor<1x16x3xf32>
// CHECK-DAG: %[[W:.+]] = tg.transpose %{{.+}} {perm = [0, 2, 1]} : tensor<8x3x3xf32> -> tensor<8x3x3xf32>
// CHECK: %[[P:.+]] = tg.pad %[[X]] {pads = [0, 1, 0, 0, 1, 0], value = 0.000000e+00 : f64} : tensor<1x16x3xf32> -> tensor<1x18x3xf32>
// CHECK: %[[G:.+]] = tg.gather %[[P]], %[[I]] {axis = 1 : i64} : tensor<1x18x3xf32>, tensor<8x3xi64> -> tensor<1x8x3x3xf32>
// CHECK: %[[COLS:.+]] = tg.reshape %[[G]] : tensor<1x8x3x3xf32> -> tensor<1x8x9xf32>
// CHECK: %[[WR:.+]] = tg.reshape %[[W]] : tensor<8x3x3xf32> -> tensor<8x9xf32>
// CHECK: %[[L:.+]] = tg.linear %[[COLS]], %[[WR]] : tensor<1x8x9xf32>, tensor<8x9xf32> -> tensor<1x8x8xf32>
// CHECK: %[[A:.+]] = tg.gelu %[[L]]
// CHECK: tg.transpose %[[A]] {perm = [0, 2, 1]}
// CHECK-NOT: tg.conv
func.func @conv1d(%x: tensor<1x3x16xf32>) -> tensor<1x8x8xf32> {
  %w = tg.constant dense<0.5> : tensor<8x3x3xf32>
  %0 = tg.conv %x, %w {strides = [2], pads = [1, 1], dilations = [1], group = 1 : i64} : tensor<1x3x16xf32>, tensor<8x3x3xf32> -> tensor<1x8x8xf32>
  %1 = tg.gelu %0 : tensor<1x8x8xf32>
  return %1 : tensor<1x8x8xf32>
}

// -----

// An unpadded 1-D convolution with its bias: no pad, the bias in the linear.
// CHECK-LABEL: func.func @conv1d_unpadded
// CHECK-NOT: tg.pad
// CHECK: %[[G:.+]] = tg.gather %{{.+}}, %{{.+}} {axis = 1 : i64} : tensor<2x16x4xf32>, tensor<14x3xi64> -> tensor<2x14x3x4xf32>
// CHECK: %[[COLS:.+]] = tg.reshape %[[G]] : tensor<2x14x3x4xf32> -> tensor<2x14x12xf32>
// CHECK: tg.linear %[[COLS]], %{{.+}}, %{{.+}} : tensor<2x14x12xf32>, tensor<6x12xf32>, tensor<6xf32> -> tensor<2x14x6xf32>
// CHECK-NOT: tg.conv
func.func @conv1d_unpadded(%x: tensor<2x4x16xf32>) -> tensor<2x6x14xf32> {
  %w = tg.constant dense<0.5> : tensor<6x4x3xf32>
  %b = tg.constant dense<1.0> : tensor<6xf32>
  %0 = tg.conv %x, %w, %b {strides = [1], pads = [0, 0], dilations = [1], group = 1 : i64} : tensor<2x4x16xf32>, tensor<6x4x3xf32>, tensor<6xf32> -> tensor<2x6x14xf32>
  return %0 : tensor<2x6x14xf32>
}

// -----

// Negative: 1-D convolutions that stay convolutions: dilated, grouped (depthwise), and a window
// of 9 over stride 2 (columns 4.5 times the input).
// CHECK-LABEL: func.func @conv1d_stays
// CHECK-NOT: tg.gather
// CHECK: tg.conv {{.*}}dilations = [2]{{.*}}nhwc
// CHECK: tg.conv {{.*}}group = 4 : i64, nhwc
// CHECK: tg.conv {{.*}}nhwc{{.*}}strides = [2]
// CHECK-NOT: tg.linear
func.func @conv1d_stays(%x: tensor<1x4x32xf32>) -> (tensor<1x4x28xf32>, tensor<1x4x32xf32>, tensor<1x4x12xf32>) {
  %w = tg.constant dense<0.5> : tensor<4x4x3xf32>
  %wd = tg.constant dense<0.5> : tensor<4x1x3xf32>
  %w9 = tg.constant dense<0.5> : tensor<4x4x9xf32>
  %0 = tg.conv %x, %w {strides = [1], pads = [0, 0], dilations = [2], group = 1 : i64} : tensor<1x4x32xf32>, tensor<4x4x3xf32> -> tensor<1x4x28xf32>
  %1 = tg.conv %x, %wd {strides = [1], pads = [1, 1], dilations = [1], group = 4 : i64} : tensor<1x4x32xf32>, tensor<4x1x3xf32> -> tensor<1x4x32xf32>
  %2 = tg.conv %x, %w9 {strides = [2], pads = [0, 0], dilations = [1], group = 1 : i64} : tensor<1x4x32xf32>, tensor<4x4x9xf32> -> tensor<1x4x12xf32>
  return %0, %1, %2 : tensor<1x4x28xf32>, tensor<1x4x32xf32>, tensor<1x4x12xf32>
}

// -----

// Negative (fan-out): one reader of the transpose back (the div by a channels-first value) cannot
// move below it, so none does: sinking the mul alone would leave two transposes for one.
// CHECK-LABEL: func.func @fan_out_stays
// CHECK: %[[T:.+]] = tg.transpose %{{.+}} {perm = [0, 3, 1, 2]}
// CHECK: tg.mul %[[T]], %[[T]] : tensor<1x4x8x8xf32>
// CHECK-NOT: {perm = [0, 3, 1, 2]}
// CHECK: tg.div %[[T]], %arg1 : tensor<1x4x8x8xf32>
func.func @fan_out_stays(%x: tensor<1x4x8x8xf32>, %d: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %w = tg.constant dense<0.5> : tensor<4x4x3x3xf32>
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.mul %0, %0 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %2 = tg.div %0, %d : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  return %1, %2 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// -----

// Negative: a [0, 2, 1] transpose the pass did not write (a transformer's) is left alone, though
// at rank 3 it is the same permutation as a channels-first one.
// CHECK-LABEL: func.func @no_conv_rank3
// CHECK: %[[T:.+]] = tg.transpose %arg0 {perm = [0, 2, 1]}
// CHECK: %[[R:.+]] = tg.relu %[[T]] : tensor<2x16x8xf32>
// CHECK: tg.reduce_mean %[[R]] {axes = [2], keepdims = true}
func.func @no_conv_rank3(%x: tensor<2x8x16xf32>) -> tensor<2x16x1xf32> {
  %0 = tg.transpose %x {perm = [0, 2, 1]} : tensor<2x8x16xf32> -> tensor<2x16x8xf32>
  %1 = tg.relu %0 : tensor<2x16x8xf32>
  %2 = tg.reduce_mean %1 {axes = [2], keepdims = true} : tensor<2x16x8xf32> -> tensor<2x16x1xf32>
  return %2 : tensor<2x16x1xf32>
}

// -----

// Negative: a weight that is no constant would need its transpose on every call.
// CHECK-LABEL: func.func @weight_input
// CHECK-NOT: tg.transpose
// CHECK-NOT: nhwc
func.func @weight_input(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

// A global sum without keepdims, axes in any order: [N, C] straight from the channels-last dims.
// CHECK-LABEL: func.func @global_sum
// CHECK: %[[C:.+]] = tg.conv {{.*}}nhwc
// CHECK: %[[S:.+]] = tg.reduce_sum %[[C]] {axes = [1, 2], keepdims = false} : tensor<1x8x8x4xf32> -> tensor<1x4xf32>
// CHECK: return %[[S]]
func.func @global_sum(%x: tensor<1x4x8x8xf32>) -> tensor<1x4xf32> {
  %w = tg.constant dense<0.5> : tensor<4x4x3x3xf32>
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.reduce_sum %0 {axes = [3, 2], keepdims = false} : tensor<1x4x8x8xf32> -> tensor<1x4xf32>
  return %1 : tensor<1x4xf32>
}

// -----

// Negative (two levels): the mul could move below the first transpose back, but that transpose's
// other reader, the add, waits on a second transpose whose div stays; so nothing moves (moving
// the mul alone would leave the first transpose for the add and add one after the mul).
// CHECK-LABEL: func.func @second_transpose_stays
// CHECK: %[[T1:.+]] = tg.transpose %{{.+}} {perm = [0, 3, 1, 2]}
// CHECK: %[[T2:.+]] = tg.transpose %{{.+}} {perm = [0, 3, 1, 2]}
// CHECK: tg.mul %[[T1]], %{{.+}} : tensor<1x4x8x8xf32>
// CHECK: tg.add %[[T1]], %[[T2]] : tensor<1x4x8x8xf32>
// CHECK: tg.div %[[T2]], %arg1 : tensor<1x4x8x8xf32>
func.func @second_transpose_stays(%x: tensor<1x4x8x8xf32>, %d: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %w = tg.constant dense<0.5> : tensor<4x4x3x3xf32>
  %w2 = tg.constant dense<0.25> : tensor<4x4x3x3xf32>
  %c = tg.constant dense<2.0> : tensor<1x4x8x8xf32>
  %0 = tg.conv %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = tg.conv %x, %w2 {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  %2 = tg.mul %0, %c : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %3 = tg.add %0, %1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %4 = tg.div %1, %d : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  return %2, %3, %4 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}
