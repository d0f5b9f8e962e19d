// RUN: not tdsl-opt %s --fuse --tile='tile-sizes=4,8 memory-budget=1' 2>&1 | filecheck %s

// Without a loc(...), an error about a group tdsl-fuse built points at the
// group's last op in this file.
// CHECK:      tile-budget-error-located.mlir:[[# @LINE + 7]]:8: error: tile sizes [4, 8] of group 'g0' need 4 elements of scratch, more than the memory budget of 1 element
// CHECK-NEXT:   %0 = tensordsl.softmax %a : tensor<4x8xf32>
// CHECK-NEXT:        ^^^^^^^^^^^^^^^^^
// CHECK-NEXT: note: choose smaller tile-sizes or a larger memory-budget
// CHECK-NOT:  Traceback

func.func @main(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.softmax %a : tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
