// RUN: not tdsl-opt %s --tile='tile-sizes=10,5000 memory-budget=5' 2>&1 | filecheck %s
// RUN: tdsl-opt %s --tile='memory-budget=5' | filecheck %s --check-prefix=FITS
// RUN: tdsl-opt %s --tile='tile-sizes=2,1000 memory-budget=5000' | filecheck %s --check-prefix=CUT

// softmax needs its row statistics as scratch (one element per row of the
// tile; its result is written in place).  Explicit tile sizes whose scratch
// is over the budget are an error that says what they need, the budget, and
// points at the group's loc(...).
// CHECK:      model.tdsl:2:9: error: tile sizes [10, 5000] of group 'g0' need 10 elements of scratch, more than the memory budget of 5 elements
// CHECK-NEXT: note: choose smaller tile-sizes or a larger memory-budget
// CHECK-NOT:  Traceback

// Under a budget of 5 the default tiling takes 5 whole rows.
// FITS:       kernel.tile(%a) group "g0" space [10, 5000] iterators ["parallel", "normalize"] tiles [5, 5000] scratch [memref<5xf32>] sweeps [0]

// Tile sizes that cut the rows make softmax run decomposed, in passes over the
// row tiles: a running max and sum (one per row each), then the normalization.
// CUT:        kernel.tile(%a) group "g0" space [10, 5000] iterators ["parallel", "reduction"] tiles [2, 1000]
// CUT:          tensordsl.max
// CUT-NEXT:     tensordsl.sub
// CUT-NEXT:     tensordsl.exp
// CUT-NEXT:     tensordsl.sum
// CUT-NEXT:     tensordsl.div
// CUT-NEXT:     kernel.yield

func.func @main(%a: tensor<10x5000xf32>) -> tensor<10x5000xf32> {
  %r = kernel.fused(%a) group "g0" budget 1000 : (tensor<10x5000xf32>) -> tensor<10x5000xf32> {
  ^bb0(%x: tensor<10x5000xf32>):
    %0 = tensordsl.softmax %x : tensor<10x5000xf32>
    kernel.yield %0 : tensor<10x5000xf32>
  } loc("model.tdsl":2:9)
  func.return %r : tensor<10x5000xf32>
}
