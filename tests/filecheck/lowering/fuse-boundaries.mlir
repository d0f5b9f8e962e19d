// tdsl-fuse boundaries: each edge that is not fused, and the reason the report
// gives; and the edges that fuse although their ops change the layout or the
// iteration space (views, reductions over any axis, smaller spaces).
// RUN: tdsl-opt %s --fuse | filecheck %s
// RUN: tdsl-opt %s --fuse --explain-fusion 2>&1 >/dev/null | filecheck %s --check-prefix=WHY

// A view (transpose) fuses on both sides: relu reads exp(a) transposed.
func.func @transpose(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = tensordsl.exp %a : tensor<4x8xf32>
  %1 = tensordsl.transpose %0 : tensor<4x8xf32> -> tensor<8x4xf32>
  %2 = tensordsl.relu %1 : tensor<8x4xf32>
  func.return %2 : tensor<8x4xf32>
}
// CHECK-LABEL: func.func @transpose(
// CHECK-NEXT:    [[R:%.*]] = kernel.fused(%a) group "g0"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.exp
// CHECK-NEXT:      tensordsl.transpose
// CHECK-NEXT:      tensordsl.relu
// CHECK-NEXT:      kernel.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return [[R]]
// WHY: remark: group g0 in @transpose: 3 ops (tensordsl.exp, tensordsl.transpose, tensordsl.relu) over 8x4 (d0 parallel, d1 parallel); inputs: %a; results: %2;
// WHY: remark: @transpose: 1 fusion group; nothing materialized between groups

// Reductions over any axis, and full reductions, accumulate over tiles: both
// read exp(a) in one group.
func.func @reductions(%a: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<f32>) {
  %0 = tensordsl.exp %a : tensor<4x8xf32>
  %1 = tensordsl.sum %0 axis = 0 : tensor<4x8xf32> -> tensor<8xf32>
  %2 = tensordsl.max %0 : tensor<4x8xf32> -> tensor<f32>
  func.return %1, %2 : tensor<8xf32>, tensor<f32>
}
// CHECK-LABEL: func.func @reductions(
// CHECK-NEXT:    [[S:%.*]], [[M:%.*]] = kernel.fused(%a) group "g0"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.exp
// CHECK-NEXT:      tensordsl.sum %{{.*}} axis = 0
// CHECK-NEXT:      tensordsl.max
// CHECK-NEXT:      kernel.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return [[S]], [[M]]
// WHY: remark: group g0 in @reductions: 3 ops (tensordsl.exp, tensordsl.sum, tensordsl.max) over 4x8 (d0 reduction, d1 reduction);
// WHY: remark: @reductions: 1 fusion group; nothing materialized between groups

// The right operand of a matmul is read whole from memory: relu(B) is its own group.
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
// WHY: fuse-boundaries.mlir:[[# @LINE - 10]]:8: remark: not fused: %0 (tensordsl.relu, group g0) -> operand 1 of tensordsl.matmul (group g1): tensordsl.matmul operand 1 must be materialized (it is read whole from memory)
// WHY: remark: @matmul_rhs: 2 fusion groups; materialized between groups: %0 (tensor<16x8xf32>, 128 elements): tensordsl.matmul operand 1 must be materialized (it is read whole from memory)

// A matmul's left operand may be a reduction's result: the row sums are
// accumulated inside the group.
func.func @matmul_lhs_reduced(%A: tensor<8x4xf32>, %W: tensor<8x3xf32>) -> tensor<3xf32> {
  %0 = tensordsl.exp %A : tensor<8x4xf32>
  %1 = tensordsl.sum %0 axis = 1 : tensor<8x4xf32> -> tensor<8xf32>
  %2 = tensordsl.matmul %1, %W : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32>
  func.return %2 : tensor<3xf32>
}
// CHECK-LABEL: func.func @matmul_lhs_reduced(
// CHECK-NEXT:    kernel.fused(%A, %W) group "g0"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.exp
// CHECK-NEXT:      tensordsl.sum
// CHECK-NEXT:      tensordsl.matmul
// CHECK-NEXT:      kernel.yield
// WHY: remark: group g0 in @matmul_lhs_reduced: 3 ops (tensordsl.exp, tensordsl.sum, tensordsl.matmul) over 4x3x8 (d0 reduction, d1 parallel, d2 reduction);

// A row result broadcast along the rows' own dimension cannot share their
// space: sum(exp(a), axis=1)[j] is added to column j of exp(a).
func.func @row_result_broadcast(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = tensordsl.exp %a : tensor<8x8xf32>
  %1 = tensordsl.sum %0 axis = 1 : tensor<8x8xf32> -> tensor<8xf32>
  %2 = tensordsl.add %0, %1 : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  func.return %2 : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @row_result_broadcast(
// CHECK-NEXT:    [[E:%.*]], [[S:%.*]] = kernel.fused(%a) group "g0"
// CHECK:         kernel.fused([[E]], [[S]]) group "g1"
// WHY: remark: not fused: %0 (tensordsl.exp, group g0) -> operand 0 of tensordsl.add (group g1): inconsistent iteration space: two dimensions of a 8x8 value would run along one dimension of the group (a value needed in two layouts, e.g. with its transpose, or broadcast along its own dimension)
// WHY: remark: not fused: %1 (tensordsl.sum, group g0) -> operand 1 of tensordsl.add (group g1): inconsistent iteration space

// A computed value needed in two layouts is materialized; an input is read in
// as many layouts as its readers need.
func.func @two_layouts(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = tensordsl.exp %a : tensor<8x8xf32>
  %1 = tensordsl.transpose %0 : tensor<8x8xf32> -> tensor<8x8xf32>
  %2 = tensordsl.add %0, %1 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %2 : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @two_layouts(
// CHECK-NEXT:    [[E:%.*]], [[T:%.*]] = kernel.fused(%a) group "g0"
// CHECK:         kernel.fused([[E]], [[T]]) group "g1"
// WHY: remark: not fused: %0 (tensordsl.exp, group g0) -> operand 0 of tensordsl.add (group g1): inconsistent iteration space
func.func @input_two_layouts(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = tensordsl.transpose %a : tensor<8x8xf32> -> tensor<8x8xf32>
  %1 = tensordsl.add %a, %0 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %1 : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @input_two_layouts(
// CHECK-NEXT:    kernel.fused(%a) group "g0"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.transpose
// CHECK-NEXT:      tensordsl.add
// CHECK-NEXT:      kernel.yield

// An op over a larger space absorbs one over a smaller space (exp(v) is
// computed per tile of the rows of m).
func.func @spaces(%v: tensor<8xf32>, %m: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %0 = tensordsl.exp %v : tensor<8xf32>
  %1 = tensordsl.add %0, %m : (tensor<8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  func.return %1 : tensor<16x8xf32>
}
// CHECK-LABEL: func.func @spaces(
// CHECK-NEXT:    kernel.fused(%v, %m) group "g0"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.exp
// CHECK-NEXT:      tensordsl.add
// CHECK-NEXT:      kernel.yield

// Merging exp into add's group would make a cycle through the matmul, which
// needs exp(x) materialized.
func.func @cycle(%A: tensor<8x8xf32>, %x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = tensordsl.exp %x : tensor<8x8xf32>
  %1 = tensordsl.matmul %A, %0 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %2 = tensordsl.add %0, %1 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %2 : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @cycle(
// CHECK-NEXT:    [[E:%.*]] = kernel.fused(%x) group "g0"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.exp
// CHECK-NEXT:      kernel.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    kernel.fused(%A, [[E]]) group "g1"
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tensordsl.matmul
// CHECK-NEXT:      tensordsl.add
// CHECK-NEXT:      kernel.yield
// WHY: remark: not fused: %0 (tensordsl.exp, group g0) -> operand 1 of tensordsl.matmul (group g1): tensordsl.matmul operand 1 must be materialized
// WHY: remark: not fused: %0 (tensordsl.exp, group g0) -> operand 0 of tensordsl.add (group g1): fusing would create a cycle between groups: a path leaves the group through tensordsl.matmul and comes back
