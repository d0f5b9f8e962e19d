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

func.func @loops(%a: memref<4xf32>) {
// CHECK: numpy-wrong-stage.mlir:[[# @LINE + 1]]:8: error: numpy target: cannot emit 'arith.constant' in a function
  %0 = arith.constant 0 : index
  func.return
}
