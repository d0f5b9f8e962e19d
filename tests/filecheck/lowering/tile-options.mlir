// RUN: tdsl-opt %s --tile='tile-size=32' | filecheck %s --check-prefix=CAP
// RUN: tdsl-opt %s -p 'tdsl-tile{memory-budget=1000 tile-size=64}' | filecheck %s --check-prefix=CAP-BUDGET
// RUN: tdsl-opt %s -p 'tdsl-tile{tile-sizes=25,40}' | filecheck %s --check-prefix=SIZES
// RUN: tdsl-opt %s -p 'tdsl-tile{tile-sizes=25,400}' | filecheck %s --check-prefix=CLAMP
// RUN: not tdsl-opt %s -p 'tdsl-tile{tile-sizes=25}' 2>&1 | filecheck %s --check-prefix=LENGTH
// RUN: not tdsl-opt %s -p 'tdsl-tile{tile-sizes=0,4}' 2>&1 | filecheck %s --check-prefix=POSITIVE
// RUN: not tdsl-opt %s -p 'tdsl-tile{memory-budget=0}' 2>&1 | filecheck %s --check-prefix=BUDGET
// RUN: not tdsl-opt %s -p 'tdsl-tile{tile-sizes=100,50 memory-budget=4999}' 2>&1 | filecheck %s --check-prefix=TOO-BIG

// The group needs one tile of scratch: x + y is still live when the result
// buffer holds (x + y) * z.

// tile-size caps every parallel dim after the budget has picked the tile.
// CAP:        kernel.tile(%a, %b, %c) group "g0" space [100, 100] iterators ["parallel", "parallel"] tiles [32, 32] scratch [memref<1024xf32>]
// CAP:        ^bb0(%{{.*}}: tensor<32x32xf32>, %{{.*}}: tensor<32x32xf32>, %{{.*}}: tensor<32x32xf32>):

// The budget still wins where it is tighter: 15 rows of 64 fit 1000 (16 would
// not), evened out to 7 tiles of at most 15 rows.
// CAP-BUDGET: kernel.tile(%a, %b, %c) group "g0" space [100, 100] iterators ["parallel", "parallel"] tiles [15, 64] scratch [memref<960xf32>]

// Explicit tile sizes, one per iteration dim; sizes beyond the extent are clamped.
// SIZES:      space [100, 100] iterators ["parallel", "parallel"] tiles [25, 40] scratch [memref<1000xf32>]
// SIZES:      ^bb0(%{{.*}}: tensor<25x40xf32>, %{{.*}}: tensor<25x40xf32>, %{{.*}}: tensor<25x40xf32>):
// CLAMP:      space [100, 100] iterators ["parallel", "parallel"] tiles [25, 100] scratch [memref<2500xf32>]

// Errors point at the group they are about.
// LENGTH:     tile-options.mlir:[[# @LINE + 9]]:8: error: tile-sizes gives 1 size(s), but group 'g0' has a 2-d iteration space [100, 100]
// POSITIVE:   error: tile-sizes must all be positive integers, got 0, 4
// BUDGET:     error: memory-budget must be a positive number of elements, not 0
// TOO-BIG:      tile-options.mlir:[[# @LINE + 6]]:8: error: tile sizes [100, 50] of group 'g0' need 5000 elements of scratch, more than the memory budget of 4999 elements
// TOO-BIG-NEXT:   %r = kernel.fused
// TOO-BIG-NEXT:        ^^^^^^^^^^^^
// TOO-BIG-NEXT: note: choose smaller tile-sizes or a larger memory-budget

func.func @main(%a: tensor<100x100xf32>, %b: tensor<100x100xf32>, %c: tensor<100x100xf32>) -> tensor<100x100xf32> {
  %r = kernel.fused(%a, %b, %c) group "g0" budget 1000000 : (tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32> {
  ^bb0(%x: tensor<100x100xf32>, %y: tensor<100x100xf32>, %z: tensor<100x100xf32>):
    %0 = tensordsl.add %x, %y : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
    %1 = tensordsl.mul %0, %z : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
    %2 = tensordsl.sub %1, %0 : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
    kernel.yield %2 : tensor<100x100xf32>
  }
  func.return %r : tensor<100x100xf32>
}
