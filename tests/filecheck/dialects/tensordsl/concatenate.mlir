// RUN: tdsl-opt %s | tdsl-opt | filecheck %s
// RUN: %roundtrip-and-generic
// RUN: tdsl-opt %s --fuse --tile -p tdsl-lower-to-loops | filecheck %s --check-prefix=LOOPS
// RUN: tdsl-opt %s --fuse --tile -t numpy | filecheck %s --check-prefix=NUMPY

// concatenate: its operands joined along `axis`, one buffer.

func.func @join(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.exp %b : tensor<4x5xf32>
  %1 = tensordsl.concatenate %a, %0 axis 1 : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @join(
// CHECK:      [[E:%[a-z0-9_]+]] = tensordsl.exp
// CHECK-NEXT: tensordsl.concatenate %a, [[E]] axis 1 : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC: "tensordsl.concatenate"(%{{.*}}, %{{.*}}) <{axis = 1 : i64}> : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>

// The group computing exp(b) writes into its slice of the output (a view at
// element offset 3, the output's strides); `a` is copied into its slice.
// LOOPS-LABEL: func.func @join(%a: memref<4x3xf32>, %b: memref<4x5xf32>, %out0: memref<4x8xf32>, %0: memref<4x5xf32, strided<[8, 1]>>, %1: memref<4x3xf32, strided<[8, 1]>>)
// LOOPS-SAME: tdsl.arg_roles = ["in", "in", "out", "view", "view"], tdsl.views = array<i64: 3, 2, 3, 4, 2, 0>
// LOOPS:      func.call @join_g0({{.*}}, %b, %0)
// LOOPS-NEXT: func.call @join_pack0(%a, %1)

// NUMPY-LABEL: def join(a, b, *, out=None):
// NUMPY:      [[BUF:v[0-9]+]] = np.empty((4, 8), np.float32) if out is None else out[0]
// NUMPY:      [[PART:v[0-9]+]] = [[BUF]][:, 3:8]
// NUMPY-NEXT: np.exp(b, out=[[PART]])
// NUMPY-NEXT: [[BUF]][:, 0:3] = a
// NUMPY-NEXT: return [[BUF]]
