// RUN: tgc-opt %s --split-input-file | tgc-opt --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xi1> {
  // CHECK: %[[S:.+]] = tg.add %{{.+}}, %{{.+}} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %0 = tg.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: %[[T:.+]] = tg.tanh %[[S]] : tensor<2x3xf32>
  %1 = tg.tanh %0 : tensor<2x3xf32>
  // CHECK: tg.gelu %[[T]] {tanh_approx = true} : tensor<2x3xf32>
  %2 = tg.gelu %1 {tanh_approx = true} : tensor<2x3xf32>
  // CHECK: tg.isnan %{{.+}} : tensor<2x3xf32> -> tensor<2x3xi1>
  %3 = tg.isnan %2 : tensor<2x3xf32> -> tensor<2x3xi1>
  return %3 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @contractions
func.func @contractions(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %m: tensor<2x8x5xf32>) -> (tensor<4x16xf32>, tensor<2x4x5xf32>) {
  // CHECK: tg.linear %{{.+}}, %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %0 = tg.linear %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
  // CHECK: tg.matmul %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<2x8x5xf32> -> tensor<2x4x5xf32>
  %1 = tg.matmul %x, %m : tensor<4x8xf32>, tensor<2x8x5xf32> -> tensor<2x4x5xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<2x4x5xf32>
}

// -----

// CHECK-LABEL: func.func @movement
func.func @movement(%x: tensor<2x3x4xf32>, %i: tensor<5xi64>) -> (tensor<4x3x2xf32>, tensor<2x2x4xf32>, tensor<5x3x4xf32>, tensor<24xf32>) {
  // CHECK: tg.transpose %{{.+}} {perm = [2, 1, 0]}
  %0 = tg.transpose %x {perm = [2, 1, 0]} : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  // CHECK: tg.slice %{{.+}} {starts = [0, 2, 0], steps = [1, -1, 1]}
  %1 = tg.slice %x {starts = [0, 2, 0], steps = [1, -1, 1]} : tensor<2x3x4xf32> -> tensor<2x2x4xf32>
  // CHECK: tg.gather %{{.+}}, %{{.+}} {axis = 0 : i64}
  %2 = tg.gather %x, %i {axis = 0 : i64} : tensor<2x3x4xf32>, tensor<5xi64> -> tensor<5x3x4xf32>
  // CHECK: tg.reshape %{{.+}} : tensor<2x3x4xf32> -> tensor<24xf32>
  %3 = tg.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  return %0, %1, %2, %3 : tensor<4x3x2xf32>, tensor<2x2x4xf32>, tensor<5x3x4xf32>, tensor<24xf32>
}

// -----

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x1xf32>) {
  // CHECK: tg.layer_norm %{{.+}}, %{{.+}} {axis = -1 : i64, epsilon = 9.99999974E-6 : f32}
  %0 = "tg.layer_norm"(%x, %g) {axis = -1 : i64, epsilon = 1.0e-5 : f32, operand_segment_sizes = dense<[1, 1, 0]> : vector<3xi32>} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK: tg.softmax %{{.+}} {axis = 1 : i64} : tensor<2x8xf32>
  %1 = tg.softmax %x {axis = 1 : i64} : tensor<2x8xf32>
  // CHECK: tg.reduce_mean %{{.+}} {axes = [1], keepdims = true}
  %2 = tg.reduce_mean %x {axes = [1], keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  return %0, %1, %2 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x1xf32>
}

// -----

// CHECK-LABEL: func.func @constants
func.func @constants() -> tensor<2xi64> {
  // CHECK: tg.constant dense<[1, 2]> : tensor<2xi64>
  %0 = tg.constant dense<[1, 2]> : tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x32xf32>, %m: tensor<8x8xf32>) -> tensor<1x4x8x32xf32> {
  // CHECK: tg.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal = true, scale = 2.500000e-01 : f32} : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x32xf32>, tensor<8x8xf32> -> tensor<1x4x8x32xf32>
  %0 = tg.attention %q, %k, %v, %m {causal = true, scale = 0.25 : f32} : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x32xf32>, tensor<8x8xf32> -> tensor<1x4x8x32xf32>
  return %0 : tensor<1x4x8x32xf32>
}

// -----

// layout = "bshd": q [B, S, Hq, D], k/v [B, T, Hkv, D], result [B, S, Hq, Dv]; mask [B, Hq, S, T].
// CHECK-LABEL: func.func @attention_bshd
func.func @attention_bshd(%q: tensor<1x8x4x16xf32>, %k: tensor<1x6x2x16xf32>, %v: tensor<1x6x2x32xf32>, %m: tensor<1x4x8x6xf32>) -> tensor<1x8x4x32xf32> {
  // CHECK: tg.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal = false, layout = "bshd", scale = 2.500000e-01 : f32} : tensor<1x8x4x16xf32>, tensor<1x6x2x16xf32>, tensor<1x6x2x32xf32>, tensor<1x4x8x6xf32> -> tensor<1x8x4x32xf32>
  %0 = tg.attention %q, %k, %v, %m {causal = false, layout = "bshd", scale = 0.25 : f32} : tensor<1x8x4x16xf32>, tensor<1x6x2x16xf32>, tensor<1x6x2x32xf32>, tensor<1x4x8x6xf32> -> tensor<1x8x4x32xf32>
  return %0 : tensor<1x8x4x32xf32>
}

// -----

// CHECK-LABEL: func.func @rms_norm
func.func @rms_norm(%x: tensor<2x4x8xf32>, %s: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  // CHECK: tg.rms_norm %{{.+}}, %{{.+}} {axis = -1 : i64, epsilon = 9.99999997E-7 : f32} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %0 = tg.rms_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  // CHECK: tg.rms_norm %{{[^,]+}} {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %1 = tg.rms_norm %x {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %0, %1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @rotary_and_swiglu
func.func @rotary_and_swiglu(%q: tensor<1x4x8x32xf32>, %cos: tensor<1x1x8x32xf32>, %sin: tensor<8x32xf32>, %g: tensor<2x8x64xf32>) -> (tensor<1x4x8x32xf32>, tensor<1x4x8x32xf32>, tensor<2x8x32xf32>) {
  // CHECK: tg.rotary %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} : tensor<1x4x8x32xf32>, tensor<1x1x8x32xf32>, tensor<8x32xf32> -> tensor<1x4x8x32xf32>
  %0 = tg.rotary %q, %cos, %sin : tensor<1x4x8x32xf32>, tensor<1x1x8x32xf32>, tensor<8x32xf32> -> tensor<1x4x8x32xf32>
  // CHECK: tg.rotary %{{.+}}, %{{.+}}, %{{.+}} {interleaved = true}
  %1 = tg.rotary %q, %cos, %sin {interleaved = true} : tensor<1x4x8x32xf32>, tensor<1x1x8x32xf32>, tensor<8x32xf32> -> tensor<1x4x8x32xf32>
  // CHECK: tg.swiglu %{{.+}} : tensor<2x8x64xf32> -> tensor<2x8x32xf32>
  %2 = tg.swiglu %g : tensor<2x8x64xf32> -> tensor<2x8x32xf32>
  return %0, %1, %2 : tensor<1x4x8x32xf32>, tensor<1x4x8x32xf32>, tensor<2x8x32xf32>
}

// -----

// CHECK-LABEL: func.func @pool
// CHECK: tg.pool %{{.*}} {count_include_pad = true, dilations = [1, 1], kernel = [3, 3], kind = "avg", pads = [1, 1, 1, 1], strides = [2, 2]} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
func.func @pool(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %0 = tg.pool %x {kind = "avg", kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], count_include_pad = true} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @math
// CHECK: tg.math "acosh" %{{.*}} : tensor<4xf32>
func.func @math(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.math "acosh" %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @indexing
// CHECK: tg.cumsum %{{.*}} {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x3xf32>
// CHECK: tg.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} {axis = 0 : i64, reduction = "max"} : tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32> -> tensor<4x3xf32>
// CHECK: tg.topk %{{.*}} {axis = 1 : i64, largest = false} : tensor<2x3xf32> -> tensor<2x2xf32>, tensor<2x2xi64>
func.func @indexing(%x: tensor<2x3xf32>, %d: tensor<4x3xf32>, %i: tensor<2x3xi64>) -> (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x2xf32>, tensor<2x2xi64>) {
  %0 = tg.cumsum %x {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x3xf32>
  %1 = tg.scatter_elements %d, %i, %x {axis = 0 : i64, reduction = "max"} : tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32> -> tensor<4x3xf32>
  %2:2 = tg.topk %x {axis = 1 : i64, largest = false} : tensor<2x3xf32> -> tensor<2x2xf32>, tensor<2x2xi64>
  return %0, %1, %2#0, %2#1 : tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x2xf32>, tensor<2x2xi64>
}

// -----

// CHECK-LABEL: func.func @bitwise
// CHECK: tg.bitwise "xor" %{{.*}}, %{{.*}} : tensor<2x3xi8>, tensor<3xi8> -> tensor<2x3xi8>
// CHECK: tg.bitwise "shift_right" %{{.*}}, %{{.*}} : tensor<4xui32>, tensor<4xui32> -> tensor<4xui32>
// CHECK: tg.bitwise_not %{{.*}} : tensor<2x3xi8>
func.func @bitwise(%a: tensor<2x3xi8>, %b: tensor<3xi8>, %u: tensor<4xui32>) -> (tensor<2x3xi8>, tensor<4xui32>, tensor<2x3xi8>) {
  %0 = tg.bitwise "xor" %a, %b : tensor<2x3xi8>, tensor<3xi8> -> tensor<2x3xi8>
  %1 = tg.bitwise "shift_right" %u, %u : tensor<4xui32>, tensor<4xui32> -> tensor<4xui32>
  %2 = tg.bitwise_not %a : tensor<2x3xi8>
  return %0, %1, %2 : tensor<2x3xi8>, tensor<4xui32>, tensor<2x3xi8>
}

// -----

// CHECK-LABEL: func.func @dynamic_extent
// CHECK: tg.nonzero %{{.*}} : tensor<2x3xf32> -> tensor<2x6xi64>, tensor<i64>
// CHECK: tg.unique %{{.*}} {axis = 0 : i64, sorted = false} : tensor<2x3xf32> -> tensor<2x3xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<i64>
// CHECK: tg.nms %{{.*}}, %{{.*}} {center_point_box = false, has_score_threshold = true, iou_threshold = 5.000000e-01 : f64, max_per_class = 2 : i64, score_threshold = 0.000000e+00 : f64} : tensor<1x3x4xf32>, tensor<1x2x3xf32> -> tensor<4x3xi64>, tensor<i64>
func.func @dynamic_extent(%x: tensor<2x3xf32>, %b: tensor<1x3x4xf32>, %s: tensor<1x2x3xf32>) -> (tensor<2x6xi64>, tensor<2x3xf32>, tensor<4x3xi64>, tensor<i64>) {
  %0:2 = tg.nonzero %x : tensor<2x3xf32> -> tensor<2x6xi64>, tensor<i64>
  %1:5 = tg.unique %x {axis = 0 : i64, sorted = false} : tensor<2x3xf32> -> tensor<2x3xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<i64>
  %2:2 = tg.nms %b, %s {center_point_box = false, has_score_threshold = true, iou_threshold = 0.5 : f64, max_per_class = 2 : i64, score_threshold = 0.0 : f64} : tensor<1x3x4xf32>, tensor<1x2x3xf32> -> tensor<4x3xi64>, tensor<i64>
  return %0#0, %1#0, %2#0, %2#1 : tensor<2x6xi64>, tensor<2x3xf32>, tensor<4x3xi64>, tensor<i64>
}

// -----

// Float8 element types (opaque `!tg.*` types) and tg.cast's saturate attribute; int4 is i4/ui4.
// CHECK-LABEL: func.func @float8_int4
// CHECK: tg.cast %{{.+}} {saturate = false} : tensor<4xf32> -> tensor<4x!tg.f8e4m3fn>
// CHECK: tg.cast %{{.+}} : tensor<4x!tg.f8e4m3fn> -> tensor<4x!tg.f8e5m2fnuz>
// CHECK: tg.cast %{{.+}} : tensor<4x!tg.f8e5m2fnuz> -> tensor<4xi4>
func.func @float8_int4(%a: tensor<4xf32>)
    -> (tensor<4x!tg.f8e4m3fn>, tensor<4xi4>, tensor<4x!tg.f8e4m3fnuz>, tensor<4x!tg.f8e5m2>) {
  %0 = tg.cast %a {saturate = false} : tensor<4xf32> -> tensor<4x!tg.f8e4m3fn>
  %1 = tg.cast %0 : tensor<4x!tg.f8e4m3fn> -> tensor<4x!tg.f8e5m2fnuz>
  %2 = tg.cast %1 : tensor<4x!tg.f8e5m2fnuz> -> tensor<4xi4>
  %3 = tg.cast %a : tensor<4xf32> -> tensor<4x!tg.f8e4m3fnuz>
  %4 = tg.cast %a : tensor<4xf32> -> tensor<4x!tg.f8e5m2>
  return %0, %2, %3, %4 : tensor<4x!tg.f8e4m3fn>, tensor<4xi4>, tensor<4x!tg.f8e4m3fnuz>, tensor<4x!tg.f8e5m2>
}
