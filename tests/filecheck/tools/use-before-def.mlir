// xDSL's verifier does not check that values are defined before their uses;
// tdsl-opt does, and points at the op.  Without the check the passes would
// crash on such IR.
// RUN: not tdsl-opt %s --split-input-file --fuse --tile 2>&1 | filecheck %s
// CHECK-NOT: internal error

func.func @self_use(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.relu %a : tensor<4x8xf32>
  %1 = tensordsl.add %1, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}
// CHECK: use-before-def.mlir:[[# @LINE - 3]]:8: error: 'tensordsl.add' op operand #0 is used before it is defined
// CHECK-NEXT: %1 = tensordsl.add %1, %b

// -----

func.func @result_in_own_region(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = kernel.fused(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %0 = tensordsl.add %x, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    kernel.yield %0 : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
// CHECK: use-before-def.mlir:[[# @LINE - 5]]:10: error: 'tensordsl.add' op operand #1 is used before it is defined
