// RUN: not tdsl-opt %s -t numpy --split-input-file 2>&1 | filecheck %s
// The numpy target takes tensordsl, fused or tiled IR: IR past it (llvm.func, or a
// loops-stage function of memrefs) is one located error, never an empty module.
// CHECK-NOT: TDSL_FUNCTIONS
// CHECK-NOT: internal error

// CHECK: numpy-wrong-stage.mlir:[[# @LINE + 1]]:1: error: numpy target: cannot emit 'llvm.func': it takes tensordsl IR, fused or tiled (func.func of tensors)
llvm.func @main(%a: !llvm.ptr) {
  llvm.return
}

// -----

// CHECK: numpy-wrong-stage.mlir:[[# @LINE + 2]]:1: error: numpy target: @loops is loops-stage IR (memref arguments, after tdsl-lower-to-loops); the numpy target takes tensordsl IR, fused or tiled (func.func of tensors)
// CHECK-NEXT: func.func @loops(%a: memref<4xf32>) {
func.func @loops(%a: memref<4xf32>) {
  %0 = arith.constant 0 : index
  func.return
}
// CHECK: note: drop --lower-to-loops for -t numpy, or compile the loops natively: --convert-to-llvm -t llvm
