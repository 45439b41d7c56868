// RUN: tgc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: tgc-opt %s --split-input-file --verify-diagnostics --tgc-fold-constants | FileCheck %s --check-prefix=FOLD

// A Loop run on the device (frontends/onnx/ImportDeviceLoop.cpp): the body is a private function
// taking (i, cond, carried..., captures...) and returning (cond, carried...).
// CHECK-LABEL: func.func @main
// CHECK: tg.loop @body(%{{.+}}, %{{.+}}, %{{.+}}) {has_cond = false, has_trip_count = true, num_carried = 1 : i64}
// FOLD-LABEL: func.func @main
// Never folded, even with constant operands: its trip count may be anything.
// FOLD: tg.loop @body
func.func @main(%w: tensor<3xf32>) -> tensor<3xf32> {
  %m = tg.constant dense<4> : tensor<i64>
  %a0 = tg.constant dense<1.0> : tensor<3xf32>
  %0 = tg.loop @body(%m, %a0, %w) {has_cond = false, has_trip_count = true, num_carried = 1 : i64} : (tensor<i64>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @body(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<3xf32>, %w: tensor<3xf32>) -> (tensor<i1>, tensor<3xf32>) {
  %0 = tg.mul %acc, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return %c, %0 : tensor<i1>, tensor<3xf32>
}

// -----

func.func @carried_type(%a: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{loop-carried value 0 and its result differ in type}}
  %0 = tg.loop @body(%a) {has_cond = false, has_trip_count = false, num_carried = 1 : i64} : (tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @body(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<3xf32>) -> (tensor<i1>, tensor<3xf32>) {
  return %c, %acc : tensor<i1>, tensor<3xf32>
}

// -----

func.func @trip_type(%m: tensor<f32>, %a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{trip count must be one i64}}
  %0 = tg.loop @body(%m, %a) {has_cond = false, has_trip_count = true, num_carried = 1 : i64} : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @body(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<3xf32>) -> (tensor<i1>, tensor<3xf32>) {
  return %c, %acc : tensor<i1>, tensor<3xf32>
}

// -----

func.func @no_body(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{body 'missing' is not a function of this module}}
  %0 = tg.loop @missing(%a) {has_cond = false, has_trip_count = false, num_carried = 1 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @body_signature(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{body's loop-carried value 0 changes type}}
  %0 = tg.loop @body(%a) {has_cond = false, has_trip_count = false, num_carried = 1 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @body(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<3xf32>) -> (tensor<i1>, tensor<3xf16>) {
  %0 = tg.cast %acc : tensor<3xf32> -> tensor<3xf16>
  return %c, %0 : tensor<i1>, tensor<3xf16>
}
