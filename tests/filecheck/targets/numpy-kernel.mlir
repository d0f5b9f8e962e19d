// RUN: tdsl-opt %s -t numpy | filecheck %s
// RUN: tdsl-opt %s -t 'numpy{threads=2}' | filecheck %s --check-prefix=THREADS

// The numpy target on kernel groups.  Comments name the IR group each block
// came from.  A group with several tiles becomes a loop function that
// allocates its scratch buffers once (flat, viewed in each value's tile
// shape), cuts the views for the last (smaller) tile, and writes the output
// tile by tile.

// CHECK:       _C0 = np.array(2.0, np.float32)
// CHECK:       _Z0 = np.zeros((3, 10), np.float32)

// CHECK-LABEL: def _tiled_g0(lo, hi, x, b, out0):
// CHECK-NEXT:      """Tiles [3, 10] of group g0 whose d0 start is in [lo, hi); writes out0 in place."""
// CHECK-NEXT:      t0 = np.empty(30, np.float32)
// CHECK-NEXT:      t1 = np.empty(3, np.float32)
// CHECK-NEXT:      t0_0f = t0[:30].reshape((3, 10))
// CHECK-NEXT:      z1f = _Z0
// CHECK-NEXT:      t1_2f = t1[:3].reshape((3, 1))
// CHECK-NEXT:      for s0 in range(lo, hi, 3):
// CHECK-NEXT:          e0 = min(s0 + 3, hi)
// CHECK-NEXT:          n0 = e0 - s0
// CHECK-NEXT:          t0_0c = t0_0f[:n0]
// CHECK-NEXT:          z1c = z1f[:n0]
// CHECK-NEXT:          t1_2c = t1_2f[:n0]
// CHECK-NEXT:          np.multiply(x[s0:e0], _C0, out=t0_0c)
// CHECK-NEXT:          np.add(t0_0c, b, out=t0_0c)
// CHECK-NEXT:          np.maximum(t0_0c, z1c, out=t0_0c)
// CHECK-NEXT:          # softmax along axis 1: exp(x - max) / sum
// CHECK-NEXT:          np.maximum.reduce(t0_0c, axis=1, keepdims=True, out=t1_2c)
// CHECK-NEXT:          np.subtract(t0_0c, t1_2c, out=t0_0c)
// CHECK-NEXT:          np.exp(t0_0c, out=t0_0c)
// CHECK-NEXT:          np.add.reduce(t0_0c, axis=1, keepdims=True, out=t1_2c)
// CHECK-NEXT:          np.divide(t0_0c, t1_2c, out=t0_0c)
// CHECK-NEXT:          np.add.reduce(t0_0c, axis=1, keepdims=True, out=out0[s0:e0])

// CHECK-LABEL: def tiled(x, b, *, out=None):
// CHECK-NEXT:      """func.func @tiled."""
// CHECK-NEXT:      # group g0: kernel.tile space [8, 10] (parallel, reduction) tiles [3, 10] scratch 33
// CHECK-NEXT:      [[M:[a-z][a-z0-9_]*]] = np.empty((8, 1), np.float32)
// CHECK-NEXT:      _tiled_g0(0, 8, x, b, [[M]])
// CHECK-NEXT:      return [[M]]
func.func @tiled(%x: tensor<8x10xf32>, %b: tensor<10xf32>) -> tensor<8x1xf32> {
  %r = kernel.tile(%x, %b) group "g0" space [8, 10] iterators ["parallel", "reduction"] tiles [3, 10] scratch [memref<30xf32>, memref<3xf32>]
    ins [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>]
    outs [affine_map<(d0, d1) -> (d0, 0)>] : (tensor<8x10xf32>, tensor<10xf32>) -> tensor<8x1xf32> {
  ^bb0(%xt: tensor<3x10xf32>, %bt: tensor<10xf32>):
    %c = tensordsl.constant dense<2.000000e+00> : tensor<f32>
    %0 = tensordsl.mul %xt, %c : (tensor<3x10xf32>, tensor<f32>) -> tensor<3x10xf32>
    %1 = tensordsl.add %0, %bt : (tensor<3x10xf32>, tensor<10xf32>) -> tensor<3x10xf32>
    %2 = tensordsl.relu %1 : tensor<3x10xf32>
    %3 = tensordsl.softmax %2 : tensor<3x10xf32>
    %4 = tensordsl.sum %3 axis = 1 keepdims : tensor<3x10xf32> -> tensor<3x1xf32>
    kernel.yield %4 : tensor<3x1xf32>
  }
  func.return %r : tensor<8x1xf32>
}


// A group that fits in one tile runs straight-line, without a loop, in its
// output.
// CHECK-LABEL: def single(a, b, *, out=None):
// CHECK-NEXT:      """func.func @single."""
// CHECK-NEXT:      # group g1: kernel.tile space [16, 16] (parallel, parallel) tiles [16, 16] scratch 0
// CHECK-NEXT:      [[R:[a-z][a-z0-9_]*]] = np.empty((16, 16), np.float64)
// CHECK-NEXT:      np.tanh(a, out=[[R]])
// CHECK-NEXT:      np.subtract([[R]], b, out=[[R]])
// CHECK-NEXT:      return [[R]]
func.func @single(%a: tensor<16x16xf64>, %b: tensor<16x16xf64>) -> tensor<16x16xf64> {
  %r = kernel.tile(%a, %b) group "g1" space [16, 16] iterators ["parallel", "parallel"] tiles [16, 16] scratch []
    ins [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
    outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<16x16xf64>, tensor<16x16xf64>) -> tensor<16x16xf64> {
  ^bb0(%x: tensor<16x16xf64>, %y: tensor<16x16xf64>):
    %0 = tensordsl.tanh %x : tensor<16x16xf64>
    %1 = tensordsl.sub %0, %y : (tensor<16x16xf64>, tensor<16x16xf64>) -> tensor<16x16xf64>
    kernel.yield %1 : tensor<16x16xf64>
  }
  func.return %r : tensor<16x16xf64>
}


// relu(x @ w + b): one BLAS call on the whole matrix, straight into the
// output, then the epilogue tile by tile, in place (the output's tile window
// bound once per tile, as it is used more than once); with threads=2 the
// epilogue is split across the pool while BLAS keeps its own threads.
// CHECK-LABEL: def _mlp_g2(lo, hi, b, out0):
// CHECK:           for s0 in range(lo, hi, 64):
// CHECK-NEXT:          e0 = s0 + 64
// CHECK-NEXT:          o0 = out0[s0:e0]
// CHECK-NEXT:          np.add(o0, b, out=o0)
// CHECK-NEXT:          np.maximum(o0, _Z{{[0-9]+}}, out=o0)
// CHECK-LABEL: def mlp(x, w, b, *, out=None):
// CHECK:           # group g2: kernel.tile space [1024, 1024, 128] (parallel, parallel, reduction) tiles [1024, 1024, 128] scratch 0
// CHECK-NEXT:      # runs tiles [64, 1024, 128], scratch 0 elements per thread; cache blocking: d0 cut to 64
// CHECK-NEXT:      [[Y:[a-z][a-z0-9_]*]] = np.empty((1024, 1024), np.float32)
// CHECK-NEXT:      np.matmul(x, w, out=[[Y]])
// CHECK-NEXT:      _mlp_g2(0, 1024, b, [[Y]])
// THREADS-LABEL: def mlp(x, w, b, *, out=None):
// THREADS:         # runs tiles [64, 1024, 128] on 2 threads, scratch 0 elements per thread; cache blocking: d0 cut to 64
// THREADS-NEXT:    [[Y:[a-z][a-z0-9_]*]] = np.empty((1024, 1024), np.float32)
// THREADS-NEXT:    np.matmul(x, w, out=[[Y]])
// THREADS-NEXT:    _parallel(_mlp_g2, 1024, 64, 2, b, [[Y]])
func.func @mlp(%x: tensor<1024x128xf32>, %w: tensor<128x1024xf32>, %b: tensor<1024xf32>) -> tensor<1024x1024xf32> {
  %r = kernel.tile(%x, %w, %b) group "g2" space [1024, 1024, 128] iterators ["parallel", "parallel", "reduction"] tiles [1024, 1024, 128] scratch []
    ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d1)>]
    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<1024x128xf32>, tensor<128x1024xf32>, tensor<1024xf32>) -> tensor<1024x1024xf32> {
  ^bb0(%xt: tensor<1024x128xf32>, %wt: tensor<128x1024xf32>, %bt: tensor<1024xf32>):
    %0 = tensordsl.matmul %xt, %wt : (tensor<1024x128xf32>, tensor<128x1024xf32>) -> tensor<1024x1024xf32>
    %1 = tensordsl.add %0, %bt : (tensor<1024x1024xf32>, tensor<1024xf32>) -> tensor<1024x1024xf32>
    %2 = tensordsl.relu %1 : tensor<1024x1024xf32>
    kernel.yield %2 : tensor<1024x1024xf32>
  }
  func.return %r : tensor<1024x1024xf32>
}


// A tiled reduction dim: one pass over it, each tile's partial sums added
// into the output (the accumulator), initialized before the pass.
// CHECK-LABEL: def _colsum_g4(lo, hi, a, out0):
// CHECK:           # tensordsl.sum: accumulate
// CHECK-NEXT:      out0[...] = 0.0
// CHECK-NEXT:      for s0 in range(0, 64, 2):
// CHECK-NEXT:          e0 = s0 + 2
// CHECK-NEXT:          np.exp(a[s0:e0], out=[[E:[a-z0-9_]+]])
// CHECK-NEXT:          np.add.reduce([[E]], axis=0, out=[[P:[a-z0-9_]+]])
// CHECK-NEXT:          np.add(out0, [[P]], out=out0)
// CHECK-LABEL: def colsum(a, *, out=None):
// CHECK:           # group g4: kernel.tile space [64, 300] (reduction, parallel) tiles [2, 300] scratch 900
// CHECK-NEXT:      # 1 pass over d0
func.func @colsum(%a: tensor<64x300xf32>) -> tensor<300xf32> {
  %r = kernel.tile(%a) group "g4" space [64, 300] iterators ["reduction", "parallel"] tiles [2, 300] scratch [memref<600xf32>, memref<300xf32>]
    ins [affine_map<(d0, d1) -> (d0, d1)>]
    outs [affine_map<(d0, d1) -> (d1)>] : (tensor<64x300xf32>) -> tensor<300xf32> {
  ^bb0(%x: tensor<2x300xf32>):
    %0 = tensordsl.exp %x : tensor<2x300xf32>
    %1 = tensordsl.sum %0 axis = 0 : tensor<2x300xf32> -> tensor<300xf32>
    kernel.yield %1 : tensor<300xf32>
  }
  func.return %r : tensor<300xf32>
}


// exp(x) - mean(exp(x), axis=0) in one tile: the mean reads exp(x) from the
// output buffer, the subtraction runs in place; the scratch is freed after.
// CHECK-LABEL: def centered(a, *, out=None):
// CHECK:           np.exp(a, out=[[R:[a-z][a-z0-9_]*]])
// CHECK-NEXT:      np.add.reduce([[R]], axis=0, keepdims=True, out=[[M:[a-z0-9_]+]])
// CHECK-NEXT:      # mean
// CHECK-NEXT:      np.divide([[M]], _C{{[0-9]+}}, out=[[M]])
// CHECK-NEXT:      np.subtract([[R]], [[M]], out=[[R]])
// CHECK-NEXT:      del t0, [[M]]
// CHECK-NEXT:      return [[R]]
func.func @centered(%a: tensor<64x30xf32>) -> tensor<64x30xf32> {
  %r = kernel.tile(%a) group "g5" space [64, 30] iterators ["reduction", "parallel"] tiles [64, 30] scratch [memref<30xf32>]
    ins [affine_map<(d0, d1) -> (d0, d1)>]
    outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<64x30xf32>) -> tensor<64x30xf32> {
  ^bb0(%x: tensor<64x30xf32>):
    %0 = tensordsl.exp %x : tensor<64x30xf32>
    %1 = tensordsl.mean %0 axis = 0 keepdims : tensor<64x30xf32> -> tensor<1x30xf32>
    %2 = tensordsl.sub %0, %1 : (tensor<64x30xf32>, tensor<1x30xf32>) -> tensor<64x30xf32>
    kernel.yield %2 : tensor<64x30xf32>
  }
  func.return %r : tensor<64x30xf32>
}


// kernel.fused: whole-array code; the two results are fresh arrays.
// CHECK-LABEL: def fused(a, *, out=None):
// CHECK-NEXT:      """func.func @fused."""
// CHECK-NEXT:      # group g3: kernel.fused budget 4096
// CHECK-NEXT:      [[E:[a-z][a-z0-9_]*]] = np.empty((4, 4), np.float64)
// CHECK-NEXT:      [[S:[a-z][a-z0-9_]*]] = np.empty((4,), np.float64)
// CHECK-NEXT:      np.exp(a, out=[[E]])
// CHECK-NEXT:      np.add.reduce([[E]], axis=0, out=[[S]])
// CHECK-NEXT:      return [[E]], [[S]]
func.func @fused(%a: tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4xf64>) {
  %e, %s = kernel.fused(%a) group "g3" budget 4096 : (tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4xf64>) {
  ^bb0(%x: tensor<4x4xf64>):
    %0 = tensordsl.exp %x : tensor<4x4xf64>
    %1 = tensordsl.sum %0 axis = 0 : tensor<4x4xf64> -> tensor<4xf64>
    kernel.yield %0, %1 : tensor<4x4xf64>, tensor<4xf64>
  }
  func.return %e, %s : tensor<4x4xf64>, tensor<4xf64>
}

// THREADS: TDSL_FUNCTIONS = {'tiled': tiled, 'single': single, 'mlp': mlp, 'colsum': colsum, 'centered': centered, 'fused': fused}
