// RUN: tdsl-opt %s | tdsl-opt | filecheck %s
// RUN: %roundtrip-and-generic

// expand_dims and squeeze: views that add or drop axes of extent 1, their axes
// recorded sorted and non-negative (custom -> custom, generic -> custom).

func.func @views(%a: tensor<4x8xf32>, %u: tensor<1x4x1xf16>) -> (tensor<1x4x1x8xf32>, tensor<4x1xf16>, tensor<4xf16>) {
  %0 = tensordsl.expand_dims %a axes [0, 2] : tensor<4x8xf32> -> tensor<1x4x1x8xf32>
  %1 = tensordsl.squeeze %u axes [0] : tensor<1x4x1xf16> -> tensor<4x1xf16>
  %2 = tensordsl.squeeze %u axes [0, 2] : tensor<1x4x1xf16> -> tensor<4xf16>
  func.return %0, %1, %2 : tensor<1x4x1x8xf32>, tensor<4x1xf16>, tensor<4xf16>
}

// CHECK-LABEL: func.func @views(
// CHECK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[U:%[a-z0-9_]+]]: tensor<1x4x1xf16>)
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.expand_dims [[A]] axes [0, 2] : tensor<4x8xf32> -> tensor<1x4x1x8xf32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.squeeze [[U]] axes [0] : tensor<1x4x1xf16> -> tensor<4x1xf16>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.squeeze [[U]] axes [0, 2] : tensor<1x4x1xf16> -> tensor<4xf16>
// CHECK-NEXT: func.return [[V0]], [[V1]], [[V2]]
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "views"
// CHECK-GENERIC: "tensordsl.expand_dims"({{%[a-z0-9_]+}}) <{axes = array<i64: 0, 2>}> : (tensor<4x8xf32>) -> tensor<1x4x1x8xf32>
// CHECK-GENERIC: "tensordsl.squeeze"({{%[a-z0-9_]+}}) <{axes = array<i64: 0>}> : (tensor<1x4x1xf16>) -> tensor<4x1xf16>
