// RUN: not tdsl-opt %s --convert-to-llvm 2>&1 | filecheck %s
// A loops-stage function returns at most one scalar: two is a located error, not
// an internal one.
// CHECK:      convert-to-llvm-results-error.mlir:[[# @LINE + 4]]:1: error: tdsl-convert-to-llvm: @two returns 2 values; a function returns at most one scalar (write results through memref arguments)
// CHECK-NOT:  Traceback
// CHECK-NOT:  internal error

func.func @two(%x: f32) -> (f32, f32) {
  %y = arith.addf %x, %x : f32
  func.return %x, %y : f32, f32
}
