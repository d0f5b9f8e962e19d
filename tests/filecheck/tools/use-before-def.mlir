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

// -----

// In a region of several blocks (the llvm stage), a value is visible in the blocks
// its block dominates: here the load comes after its use in the same block.
llvm.func @later_in_block(%p: !llvm.ptr) {
  llvm.br ^bb1
^bb1:
  %0 = llvm.fadd %1, %1 : f32
  %1 = llvm.load %p : !llvm.ptr -> f32
  llvm.store %0, %p : f32, !llvm.ptr
  llvm.return
}
// CHECK: use-before-def.mlir:[[# @LINE - 5]]:8: error: 'llvm.fadd' op operand #0 is used before it is defined

// -----

// ^bb3 is reached from ^bb2 too, so ^bb1's load does not dominate it.
llvm.func @not_dominated(%p: !llvm.ptr, %c: i1) {
  llvm.cond_br %c, ^bb1, ^bb2
^bb1:
  %0 = llvm.load %p : !llvm.ptr -> f32
  llvm.br ^bb3
^bb2:
  llvm.br ^bb3
^bb3:
  llvm.store %0, %p : f32, !llvm.ptr
  llvm.return
}
// CHECK: use-before-def.mlir:[[# @LINE - 3]]:3: error: 'llvm.store' op operand #0 is used before it is defined

// -----

// A loop: the header's value is used in the body and on the back edge, as a
// lowered kernel's loops use theirs; this verifies and prints.
llvm.func @loop(%p: !llvm.ptr, %n: i64) {
  %zero = llvm.mlir.constant(0 : i64) : i64
  llvm.br ^head(%zero : i64)
^head(%i: i64):
  %more = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %more, ^body, ^exit
^body:
  %one = llvm.mlir.constant(1 : i64) : i64
  %next = llvm.add %i, %one : i64
  llvm.br ^head(%next : i64)
^exit:
  llvm.return
}
// CHECK-LABEL: llvm.func @loop
// CHECK: llvm.add
