// RUN: tdsl-opt %s | tdsl-opt | filecheck %s
// RUN: %roundtrip-and-generic
// RUN: tdsl-opt %s -p tdsl-sink-views | filecheck %s --check-prefix=SINK

// slice: a strided window of its operand, an offset and a stride per axis (a
// negative stride reads backwards); the result's shape is the window's.

func.func @windows(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x7xf32>, tensor<2x4xf32>, tensor<0x8xf32>) {
  %0 = tensordsl.slice %a offsets [0, 1] strides [1, 1] : tensor<4x8xf32> -> tensor<4x7xf32>
  %1 = tensordsl.slice %a offsets [3, 7] strides [-2, -2] : tensor<4x8xf32> -> tensor<2x4xf32>
  %2 = tensordsl.slice %a offsets [0, 0] strides [1, 1] : tensor<4x8xf32> -> tensor<0x8xf32>
  func.return %0, %1, %2 : tensor<4x7xf32>, tensor<2x4xf32>, tensor<0x8xf32>
}

// CHECK-LABEL: func.func @windows(
// CHECK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x8xf32>
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.slice [[A]] offsets [0, 1] strides [1, 1] : tensor<4x8xf32> -> tensor<4x7xf32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.slice [[A]] offsets [3, 7] strides [-2, -2] : tensor<4x8xf32> -> tensor<2x4xf32>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.slice [[A]] offsets [0, 0] strides [1, 1] : tensor<4x8xf32> -> tensor<0x8xf32>
// CHECK-NEXT: func.return [[V0]], [[V1]], [[V2]]
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "windows"
// CHECK-GENERIC: "tensordsl.slice"({{%[a-z0-9_]+}}) <{offsets = array<i64: 0, 1>, strides = array<i64: 1, 1>}> : (tensor<4x8xf32>) -> tensor<4x7xf32>

// tdsl-sink-views: a window of an element-wise result windows its operands (an
// operand that broadcasts keeps that axis whole); a window of a window is one.

func.func @sink(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<2x3xf32> {
  %0 = tensordsl.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tensordsl.exp %0 : tensor<4x8xf32>
  %2 = tensordsl.slice %1 offsets [1, 0] strides [1, 2] : tensor<4x8xf32> -> tensor<3x4xf32>
  %3 = tensordsl.slice %2 offsets [2, 3] strides [-1, -1] : tensor<3x4xf32> -> tensor<2x3xf32>
  func.return %3 : tensor<2x3xf32>
}

// SINK-LABEL: func.func @sink(
// SINK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[B:%[a-z0-9_]+]]: tensor<8xf32>)
// SINK-NEXT: [[SA:%[a-z0-9_]+]] = tensordsl.slice [[A]] offsets [3, 6] strides [-1, -2] : tensor<4x8xf32> -> tensor<2x3xf32>
// SINK-NEXT: [[SB:%[a-z0-9_]+]] = tensordsl.slice [[B]] offsets [6] strides [-2] : tensor<8xf32> -> tensor<3xf32>
// SINK-NEXT: [[ADD:%[a-z0-9_]+]] = tensordsl.add [[SA]], [[SB]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// SINK-NEXT: [[EXP:%[a-z0-9_]+]] = tensordsl.exp [[ADD]] : tensor<2x3xf32>
// SINK-NEXT: func.return [[EXP]] : tensor<2x3xf32>
