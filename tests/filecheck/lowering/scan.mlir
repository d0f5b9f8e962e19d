// Scans (cumsum, cumprod) tile along their axis like a reduction, but their
// results run along it: each tile starts from the running values the tile
// before left in a carry (one element per row), so a row longer than the
// budget runs in linear time.  Element-wise producers and consumers fuse into
// the scan's group.
// RUN: tdsl-opt %s -p 'tdsl-fuse{memory-budget=64},tdsl-tile' | filecheck %s --check-prefix=TILE
// RUN: tdsl-opt %s -p 'tdsl-fuse{memory-budget=64},tdsl-tile' -t numpy | filecheck %s --check-prefix=NUMPY
// RUN: tdsl-opt %s -p 'tdsl-fuse{memory-budget=64},tdsl-tile,tdsl-lower-to-loops' | filecheck %s --check-prefix=LOOPS
// RUN: tdsl-opt %s -p 'tdsl-fuse{memory-budget=100000},tdsl-tile' | filecheck %s --check-prefix=WHOLE
// RUN: tdsl-opt %s | tdsl-opt --print-op-generic | tdsl-opt | filecheck %s --check-prefix=ROUNDTRIP

func.func @scan(%x: tensor<4x1024xf32>) -> tensor<4x1024xf32> {
  %0 = tensordsl.exp %x : tensor<4x1024xf32>
  %1 = tensordsl.cumsum %0 axis = 1 : tensor<4x1024xf32> -> tensor<4x1024xf32>
  %2 = tensordsl.cumprod %x axis = -1 : tensor<4x1024xf32> -> tensor<4x1024xf32>
  %3 = tensordsl.mul %1, %2 : (tensor<4x1024xf32>, tensor<4x1024xf32>) -> tensor<4x1024xf32>
  func.return %3 : tensor<4x1024xf32>
}

// One group; the scan dim d1 is tiled (61 of 1024), with a carry of one
// element per scan and row in the scratch.
// TILE-LABEL: func.func @scan(
// TILE-NEXT:    kernel.tile(%x) group "g0" space [4, 1024] iterators ["parallel", "scan"] tiles [1, 61] scratch [memref<1xf32>, memref<1xf32>, memref<61xf32>]
// TILE:           tensordsl.exp
// TILE-NEXT:      tensordsl.cumsum {{.*}} axis = 1 : tensor<1x61xf32> -> tensor<1x61xf32>
// TILE-NEXT:      tensordsl.cumprod {{.*}} axis = -1 : tensor<1x61xf32> -> tensor<1x61xf32>
// TILE-NEXT:      tensordsl.mul
// TILE-NEXT:      kernel.yield

// The carries start at the identities (-0.0: x + -0.0 is x, also for -0.0),
// once per row tile, before the loop over the tiles of the scan dim.
// NUMPY:         # tensordsl.cumsum: carry
// NUMPY-NEXT:    [[C0:t[0-9_f]+]][...] = -0.0
// NUMPY-NEXT:    # tensordsl.cumprod: carry
// NUMPY-NEXT:    [[C1:t[0-9_f]+]][...] = 1.0
// NUMPY-NEXT:    for s1 in range(0, 1024, 61):
// NUMPY:           np.add([[C0]], [[X:o0]][:, 0:1], out=[[X]][:, 0:1])
// NUMPY:           np.add.accumulate([[X]], axis=1, out=[[X]])
// NUMPY-NEXT:      np.copyto([[C0]], [[X]][:, -1:])
// NUMPY:           np.multiply.accumulate({{.*}}, axis=1, out={{.*}})
// NUMPY-NEXT:      np.copyto([[C1]], {{.*}}[:, -1:])

// Native loops: a carry memref per scan, set to the identity before the
// sweep along the row, loaded, combined and stored at every point.
// (Each constant is made once, at the start of the function.)
// LOOPS:         func.func @scan_g0(
// LOOPS-DAG:       [[ONE:%[0-9]+]] = arith.constant 1.000000e+00 : f32
// LOOPS-DAG:       [[NEG0:%[0-9]+]] = arith.constant -0.000000e+00 : f32
// LOOPS:           memref.store [[NEG0]], {{.*}} : memref<1x1xf32>
// LOOPS:           memref.store [[ONE]], {{.*}} : memref<1x1xf32>
// LOOPS:           scf.for
// LOOPS:             math.exp
// LOOPS-NEXT:        arith.subi
// LOOPS-NEXT:        [[ACC:%[0-9]+]] = memref.load
// LOOPS-NEXT:        [[SUM:%[0-9]+]] = arith.addf [[ACC]]
// LOOPS:             memref.store [[SUM]]

// With room for whole rows, each scan runs as one accumulate per row tile.
// WHOLE:         kernel.tile(%x) group "g0" space [4, 1024] iterators ["parallel", "scan"] tiles [4, 1024]

// ROUNDTRIP:     tensordsl.cumsum %{{.*}} axis = 1 : tensor<4x1024xf32> -> tensor<4x1024xf32>
// ROUNDTRIP:     tensordsl.cumprod %{{.*}} axis = -1 : tensor<4x1024xf32> -> tensor<4x1024xf32>
