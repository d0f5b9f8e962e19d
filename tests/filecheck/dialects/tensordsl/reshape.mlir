// RUN: tdsl-opt %s | tdsl-opt | filecheck %s
// RUN: %roundtrip-and-generic
// RUN: tdsl-opt %s -p tdsl-sink-views | filecheck %s --check-prefix=SINK
// RUN: tdsl-opt %s --fuse --tile -p tdsl-lower-to-loops | filecheck %s --check-prefix=LOOPS

// reshape: the operand's elements in row-major order, in the result's shape.

func.func @reshape(%a: tensor<4x6xf32>, %b: tensor<4x6xf32>) -> tensor<2x12xf32> {
  %0 = tensordsl.mul %a, %b : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %1 = tensordsl.reshape %0 : tensor<4x6xf32> -> tensor<3x8xf32>
  %2 = tensordsl.reshape %1 : tensor<3x8xf32> -> tensor<2x12xf32>
  func.return %2 : tensor<2x12xf32>
}

// CHECK-LABEL: func.func @reshape(
// CHECK:      [[R1:%[a-z0-9_]+]] = tensordsl.reshape {{%[a-z0-9_]+}} : tensor<4x6xf32> -> tensor<3x8xf32>
// CHECK-NEXT: tensordsl.reshape [[R1]] : tensor<3x8xf32> -> tensor<2x12xf32>
// CHECK-GENERIC: "tensordsl.reshape"({{%[a-z0-9_]+}}) : (tensor<4x6xf32>) -> tensor<3x8xf32>

// tdsl-sink-views: one reshape, moved onto the operands of the element-wise op.
// SINK-LABEL: func.func @reshape(
// SINK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x6xf32>, [[B:%[a-z0-9_]+]]: tensor<4x6xf32>)
// SINK-NEXT: [[RA:%[a-z0-9_]+]] = tensordsl.reshape [[A]] : tensor<4x6xf32> -> tensor<2x12xf32>
// SINK-NEXT: [[RB:%[a-z0-9_]+]] = tensordsl.reshape [[B]] : tensor<4x6xf32> -> tensor<2x12xf32>
// SINK-NEXT: [[M:%[a-z0-9_]+]] = tensordsl.mul [[RA]], [[RB]] : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
// SINK-NEXT: func.return [[M]]

// The loops read each reshaped argument in place: a view whose strides are
// row-major, so its memref type is the plain one.
// LOOPS-LABEL: func.func @reshape(
// LOOPS-SAME: %{{.*}}: memref<2x12xf32>, %{{.*}}: memref<2x12xf32>)
// LOOPS-SAME: tdsl.arg_roles = ["in", "in", "out", "view", "view"], tdsl.views = array<i64: 3, 0, 0, 4, 1, 0>

// A reshape of a window whose layout allows no view copies the window row-major
// first (a `tmp` argument and a copy), then reads the copy in place.
func.func @copied(%a: tensor<4x6xf32>) -> tensor<12xf32> {
  %0 = tensordsl.slice %a offsets [0, 1] strides [1, 1] : tensor<4x6xf32> -> tensor<4x3xf32>
  %1 = tensordsl.reshape %0 : tensor<4x3xf32> -> tensor<12xf32>
  %2 = tensordsl.exp %1 : tensor<12xf32>
  func.return %2 : tensor<12xf32>
}
// LOOPS-LABEL: func.func @copied(
// LOOPS-SAME: tdsl.arg_roles = ["in", "out", "view", "tmp", "view"], tdsl.views = array<i64: 2, 0, 1, 4, 3, 0>
// LOOPS:      func.call @copied_pack0(%0, %1) : (memref<4x3xf32, strided<[6, 1]>>, memref<4x3xf32>) -> ()
// LOOPS-NEXT: func.call @copied_g0(

// A reshape of a 0-d element-wise result stays where it is: its operands are 0-d,
// and none would take the result's shape.
func.func @of_0d(%a: tensor<f32>, %b: tensor<f32>) -> tensor<1x1xf32> {
  %0 = tensordsl.add %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %1 = tensordsl.reshape %0 : tensor<f32> -> tensor<1x1xf32>
  func.return %1 : tensor<1x1xf32>
}

// SINK-LABEL: func.func @of_0d(
// SINK-NEXT: [[S:%[a-z0-9_]+]] = tensordsl.add {{%[a-z0-9_]+}}, {{%[a-z0-9_]+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// SINK-NEXT: [[R:%[a-z0-9_]+]] = tensordsl.reshape [[S]] : tensor<f32> -> tensor<1x1xf32>
// SINK-NEXT: func.return [[R]] : tensor<1x1xf32>
