// RUN: tdsl-opt %s | tdsl-opt | filecheck %s
// RUN: %roundtrip-and-generic
// RUN: tdsl-opt %s --fuse --tile -p tdsl-lower-to-loops | filecheck %s --check-prefix=LOOPS

// take: the elements of its operand at integer indices along `axis` (a gather).

func.func @embed(%w: tensor<10x4xf32>, %t: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = tensordsl.take %w, %t axis 0 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @embed(
// CHECK-NEXT: tensordsl.take %w, %t axis 0 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
// CHECK-GENERIC: "tensordsl.take"(%{{.*}}, %{{.*}}) <{axis = 0 : i64}> : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>

// A loop nest of its own: per index, wrapped if negative, checked (a bad one is
// read as 0 and recorded in the `error` argument, a flag and the index), then a row.
// LOOPS-LABEL: func.func @embed(%w: memref<10x4xf32>, %t: memref<3xi64>, %out0: memref<3x4xf32>, %0: memref<2xi64>)
// LOOPS-SAME: tdsl.arg_roles = ["in", "in", "out", "error"], tdsl.errors = array<i64: 3, 0, 10>
// LOOPS-NEXT: func.call @embed_take0(%w, %t, %out0, %0)
// LOOPS:      func.func @embed_take0(
// LOOPS:        memref.load %{{.*}}[%{{.*}}] : memref<3xi64>
// LOOPS:        arith.cmpi sge
// LOOPS:        arith.select
// LOOPS:        memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<2xi64>
// LOOPS:        arith.index_cast
// LOOPS:        scf.for
// LOOPS-NEXT:     memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<10x4xf32>
