// RUN: not tdsl-opt %s --tile 2>&1 | filecheck %s
// RUN: not tdsl-opt %s --tile='memory-budget=4999' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: tdsl-opt %s --tile='memory-budget=5000' | filecheck %s --check-prefix=FITS

// One op alone cannot fit: a softmax row (5000 elements) cannot be cut, and
// the budget is 1000 elements.  The error says what the op needs, the budget,
// why the dim cannot be tiled, and points at the op's source location.
// CHECK:      model.tdsl:2:9: error: 'tensordsl.softmax' needs 5000 elements for its smallest tile (a tensor<1x5000xf32> slice of its result tensor<10x5000xf32>), more than the memory budget of 1000 elements
// CHECK-NEXT: note: d1 (extent 5000) cannot be tiled: softmax normalizes along it; raise the memory budget to at least 5000
// CHECK-NOT:  Traceback

// OPTION:     error: 'tensordsl.softmax' needs 5000 elements {{.*}} more than the memory budget of 4999 elements

// FITS:       kernel.tile(%a) group "g0" space [10, 5000] tiles [1, 5000] scratch 1

func.func @main(%a: tensor<10x5000xf32>) -> tensor<10x5000xf32> {
  %r = kernel.fused(%a) group "g0" budget 1000 : (tensor<10x5000xf32>) -> tensor<10x5000xf32> {
  ^bb0(%x: tensor<10x5000xf32>):
    %0 = tensordsl.softmax %x : tensor<10x5000xf32> loc("model.tdsl":2:9)
    kernel.yield %0 : tensor<10x5000xf32>
  }
  func.return %r : tensor<10x5000xf32>
}
