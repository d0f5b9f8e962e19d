// The remarks explain the IR that tdsl-fuse saw, whatever runs after it
// (tiling), and with the budget the pipeline gave it; without a tdsl-fuse in
// the pipeline they explain what it would do.

// RUN: tdsl-opt %s --fuse=memory-budget=4096 --tile --explain-fusion 2>&1 >/dev/null | filecheck %s
// RUN: tdsl-opt %s --explain-fusion 2>&1 >/dev/null | filecheck %s

// CHECK:      explain-fusion-pipeline.mlir:[[# @LINE + 7]]:8: remark: group g0 in @main: 1 op (tensordsl.relu)
// CHECK:      explain-fusion-pipeline.mlir:[[# @LINE + 8]]:8: remark: group g1 in @main: 2 ops (tensordsl.matmul, tensordsl.add)
// CHECK:      explain-fusion-pipeline.mlir:[[# @LINE + 6]]:8: remark: not fused: %0 (tensordsl.relu, group g0) -> operand 1 of tensordsl.matmul (group g1): tensordsl.matmul operand 1 must be materialized (it is read whole from memory)
// CHECK:      remark: @main: 2 fusion groups; materialized between groups: %0 (tensor<16x8xf32>, 128 elements)
// CHECK-NOT:  remark

func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = tensordsl.relu %b : tensor<16x8xf32>
  %1 = tensordsl.matmul %a, %0 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %2 = tensordsl.add %1, %c : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %2 : tensor<8x8xf32>
}
