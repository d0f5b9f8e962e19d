// RUN: not tdsl-opt %s --fuse=memory-budget=4 --tile 2>&1 | filecheck %s

// Without a loc(...), the budget error points at the op's line in this file.
// CHECK:      tile-budget-error-located.mlir:[[# @LINE + 7]]:8: error: 'tensordsl.softmax' needs 8 elements for its smallest tile (a tensor<1x8xf32> slice of its result tensor<4x8xf32>), more than the memory budget of 4 elements
// CHECK-NEXT:   %0 = tensordsl.softmax %a : tensor<4x8xf32>
// CHECK-NEXT:        ^^^^^^^^^^^^^^^^^
// CHECK-NEXT: note: d1 (extent 8) cannot be tiled: softmax normalizes along it; raise the memory budget to at least 8
// CHECK-NOT:  Traceback

func.func @main(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.softmax %a : tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
