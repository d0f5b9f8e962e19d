// A verifier error names the op and points at its line in the input, in
// custom and in generic form; the rest of the module is not dumped.

// RUN: not tdsl-opt %s 2>&1 | filecheck %s
// RUN: tdsl-opt %s --print-op-generic --disable-verify | not tdsl-opt 2>&1 \
// RUN:   | filecheck %s --check-prefix=GENERIC

func.func @main(%a: tensor<4x8xf32>, %b: tensor<3xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.relu %a : tensor<4x8xf32>
  // CHECK-NOT: Traceback
  // CHECK:      verify-error.mlir:[[# @LINE + 2]]:8: error: 'tensordsl.add' op {{.*}}
  // CHECK-NEXT: {{^}}  %1 = tensordsl.add %0, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>{{$}}
  %1 = tensordsl.add %0, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: {{^}}       ^^^^^^^^^^^^^{{$}}
  // CHECK-NOT: builtin.module
  func.return %1 : tensor<4x8xf32>
}

// GENERIC-NOT: Traceback
// GENERIC:      stdin:5:11: error: 'tensordsl.add' op {{.*}}
// GENERIC-NEXT: {{^}}    %1 = "tensordsl.add"(%0, %b) : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>{{$}}
// GENERIC-NEXT: {{^}}          ^^^^^^^^^^^^^{{$}}
