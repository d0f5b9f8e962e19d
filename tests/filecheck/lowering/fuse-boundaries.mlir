// tdsl-fuse boundaries: each edge that is not fused, and the reason the report gives.
// RUN: tdsl-opt %s --fuse | filecheck %s
// RUN: tdsl-opt %s --fuse --explain-fusion 2>&1 >/dev/null | filecheck %s --check-prefix=WHY

// transpose is a boundary on both sides.
func.func @transpose(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = tensordsl.exp %a : tensor<4x8xf32>
  %1 = tensordsl.transpose %0 : tensor<4x8xf32> -> tensor<8x4xf32>
  %2 = tensordsl.relu %1 : tensor<8x4xf32>
  func.return %2 : tensor<8x4xf32>
}
// CHECK-LABEL: func.func @transpose(
// CHECK-NEXT:    [[E:%.*]] = kernel.fused(%a) group "g0"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.exp
// CHECK-NEXT:      kernel.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    [[T:%.*]] = kernel.fused([[E]]) group "g1"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.transpose
// CHECK-NEXT:      kernel.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    [[R:%.*]] = kernel.fused([[T]]) group "g2"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.relu
// WHY: fuse-boundaries.mlir:8:8: remark: not fused: %0 (tensordsl.exp, group g0) -> operand 0 of tensordsl.transpose (group g1): transpose is a fusion boundary
// WHY: fuse-boundaries.mlir:9:8: remark: not fused: %1 (tensordsl.transpose, group g1) -> operand 0 of tensordsl.relu (group g2): transpose is a fusion boundary
// WHY: remark: @transpose: 3 fusion groups; materialized between groups: %0 (tensor<4x8xf32>, 32 elements), %1 (tensor<8x4xf32>, 32 elements)

// Reductions over a non-innermost axis and full reductions are boundaries.
func.func @reductions(%a: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<f32>) {
  %0 = tensordsl.exp %a : tensor<4x8xf32>
  %1 = tensordsl.sum %0 axis = 0 : tensor<4x8xf32> -> tensor<8xf32>
  %2 = tensordsl.max %0 : tensor<4x8xf32> -> tensor<f32>
  func.return %1, %2 : tensor<8xf32>, tensor<f32>
}
// CHECK-LABEL: func.func @reductions(
// CHECK-NEXT:    [[E:%.*]] = kernel.fused(%a) group "g0"
// CHECK:         [[S:%.*]] = kernel.fused([[E]]) group "g1"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.sum %{{.*}} axis = 0
// CHECK:         [[M:%.*]] = kernel.fused([[E]]) group "g2"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.max
// CHECK:         func.return [[S]], [[M]]
// WHY: remark: not fused: %0 (tensordsl.exp, group g0) -> operand 0 of tensordsl.sum (group g1): reduction over non-innermost axis 0
// WHY: remark: not fused: %0 (tensordsl.exp, group g0) -> operand 0 of tensordsl.max (group g2): full reduction (no axis) of a rank-2 tensor is a fusion boundary

// The right operand of a matmul is materialized: relu(B) is its own group.
func.func @matmul_rhs(%A: tensor<8x16xf32>, %B: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %0 = tensordsl.relu %B : tensor<16x8xf32>
  %1 = tensordsl.matmul %A, %0 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  func.return %1 : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @matmul_rhs(
// CHECK-NEXT:    [[R:%.*]] = kernel.fused(%B) group "g0"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.relu
// CHECK-NEXT:      kernel.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    kernel.fused(%A, [[R]]) group "g1"
// WHY: remark: not fused: %0 (tensordsl.relu, group g0) -> operand 1 of tensordsl.matmul (group g1): matmul right operand must be materialized

// A matmul whose left operand is not row-local to the group: the vector
// sum(exp(A), axis=1) runs along the rows the group would tile.
func.func @matmul_lhs_not_row_local(%A: tensor<8x4xf32>, %W: tensor<8x3xf32>) -> tensor<3xf32> {
  %0 = tensordsl.exp %A : tensor<8x4xf32>
  %1 = tensordsl.sum %0 axis = 1 : tensor<8x4xf32> -> tensor<8xf32>
  %2 = tensordsl.matmul %1, %W : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32>
  func.return %2 : tensor<3xf32>
}
// CHECK-LABEL: func.func @matmul_lhs_not_row_local(
// CHECK-NEXT:    [[S:%.*]] = kernel.fused(%A) group "g0"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.exp
// CHECK-NEXT:      tensordsl.sum
// CHECK-NEXT:      kernel.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    kernel.fused([[S]], %W) group "g1"
// WHY: remark: not fused: %1 (tensordsl.sum, group g0) -> operand 0 of tensordsl.matmul (group g1): not row-local: tensordsl.matmul needs the whole of a dimension (extent 8) along which the group tiles a 8x4 value

// A row result broadcast along the rows' own dimension cannot share their space.
func.func @row_result_broadcast(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = tensordsl.exp %a : tensor<8x8xf32>
  %1 = tensordsl.sum %0 axis = 1 : tensor<8x8xf32> -> tensor<8xf32>
  %2 = tensordsl.add %0, %1 : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  func.return %2 : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @row_result_broadcast(
// CHECK-NEXT:    [[E:%.*]], [[S:%.*]] = kernel.fused(%a) group "g0"
// CHECK:         kernel.fused([[E]], [[S]]) group "g1"
// WHY: remark: not fused: %0 (tensordsl.exp, group g0) -> operand 0 of tensordsl.add (group g1): inconsistent iteration space: two dimensions of a 8x8 value would run along one dimension of the group
// WHY: remark: not fused: %1 (tensordsl.sum, group g0) -> operand 1 of tensordsl.add (group g1): inconsistent iteration space

// An op over a larger space does not absorb a smaller one (it would be recomputed per tile).
func.func @spaces(%v: tensor<8xf32>, %m: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %0 = tensordsl.exp %v : tensor<8xf32>
  %1 = tensordsl.add %0, %m : (tensor<8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  func.return %1 : tensor<16x8xf32>
}
// CHECK-LABEL: func.func @spaces(
// CHECK-NEXT:    [[E:%.*]] = kernel.fused(%v) group "g0"
// CHECK:         kernel.fused([[E]], %m) group "g1"
// WHY: remark: not fused: %0 (tensordsl.exp, group g0) -> operand 0 of tensordsl.add (group g1): different iteration space 8 vs 16x8

// Merging exp into add's group would make a cycle through the column sum.
func.func @cycle(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.exp %x : tensor<4x8xf32>
  %1 = tensordsl.sum %0 axis = 0 : tensor<4x8xf32> -> tensor<8xf32>
  %2 = tensordsl.add %0, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @cycle(
// CHECK-NEXT:    [[E:%.*]] = kernel.fused(%x) group "g0"
// CHECK:         [[S:%.*]] = kernel.fused([[E]]) group "g1"
// CHECK:         kernel.fused([[E]], [[S]]) group "g2"
// WHY: remark: not fused: %0 (tensordsl.exp, group g0) -> operand 0 of tensordsl.add (group g2): fusing would create a cycle between groups: a path leaves the group through tensordsl.sum and comes back
