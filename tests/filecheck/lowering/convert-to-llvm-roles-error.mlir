// RUN: not tdsl-opt %s --convert-to-llvm --split-input-file 2>&1 | filecheck %s
// A main function's tdsl.arg_roles (what the runtime passes each argument) names one
// known role per argument; anything else is a located error, not a silent pass.
// CHECK-NOT:  Traceback
// CHECK-NOT:  internal error

// CHECK:      convert-to-llvm-roles-error.mlir:[[# @LINE + 1]]:1: error: tdsl-convert-to-llvm: tdsl.arg_roles of @unknown names the unknown role 'bogus'; expected one role per argument (2), each one of in, out, tmp, scratch, const, view, error
func.func @unknown(%a: memref<4xf32>, %out0: memref<4xf32>) attributes {tdsl.arg_roles = ["in", "bogus"]} {
  func.return
}

// -----

// CHECK:      convert-to-llvm-roles-error.mlir:[[# @LINE + 1]]:1: error: tdsl-convert-to-llvm: tdsl.arg_roles of @short is ["in"]; expected one role per argument (2), each one of in, out, tmp, scratch, const, view, error
func.func @short(%a: memref<4xf32>, %out0: memref<4xf32>) attributes {tdsl.arg_roles = ["in"]} {
  func.return
}

// -----

// CHECK:      convert-to-llvm-roles-error.mlir:[[# @LINE + 1]]:1: error: tdsl-convert-to-llvm: tdsl.arg_roles of @number is 3 : i64; expected one role per argument (1), each one of in, out, tmp, scratch, const, view, error
func.func @number(%out0: memref<4xf32>) attributes {tdsl.arg_roles = 3} {
  func.return
}

// -----

// The roles the pipeline writes pass.
// CHECK: llvm.func @fine
func.func @fine(%a: memref<4xf32>, %out0: memref<4xf32>, %s: memref<1xf32>) attributes {tdsl.arg_roles = ["in", "out", "scratch"]} {
  func.return
}
