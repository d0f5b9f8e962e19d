// RUN: tdsl-opt %s --fuse --tile -t numpy | filecheck %s
// RUN: tdsl-opt %s -p 'tdsl-fuse{memory-budget=16},tdsl-tile' -t numpy | filecheck %s --check-prefix=SMALL

// softmax(relu(x @ w + b)) through the whole pipeline.  With the default
// budget the group is one tile: straight-line code, in the output, with the
// softmax row statistics (64) as the only scratch.  With a budget of 16
// elements it is a loop over tiles of 16 rows; the matmul still runs once, on
// the whole matrix, straight into the output, and the epilogue runs per tile.

// CHECK-LABEL: def mlp(x, w, b, *, out=None):
// CHECK:           # group g0: kernel.tile space [64, 32, 16] (parallel, reduction, normalize) tiles [64, 32, 16] scratch 64
// CHECK-NEXT:      [[Y:v0]] = np.empty((64, 16), np.float32)
// CHECK-NOT:       for
// CHECK:           np.matmul(x, w, out=[[Y]])
// CHECK-NEXT:      np.add([[Y]], b, out=[[Y]])
// CHECK-NEXT:      np.maximum([[Y]], _Z0, out=[[Y]])
// CHECK:           return [[Y]]

// SMALL-LABEL: def _mlp_g0(lo, hi, b, out0):
// SMALL:           for s0 in range(lo, hi, 16):
// SMALL-NEXT:          e0 = s0 + 16
// SMALL-NEXT:          o0 = out0[s0:e0]
// SMALL-NEXT:          np.add(o0, b, out=o0)
// SMALL-NOT:           np.matmul
// SMALL-LABEL: def mlp(x, w, b, *, out=None):
// SMALL:           # group g0: kernel.tile space [64, 32, 16] (parallel, reduction, normalize) tiles [16, 32, 16] scratch 16
// SMALL-NEXT:      [[Y:v0]] = np.empty((64, 16), np.float32)
// SMALL-NEXT:      np.matmul(x, w, out=[[Y]])
// SMALL-NEXT:      _mlp_g0(0, 64, b, [[Y]])
// SMALL-NEXT:      return [[Y]]
func.func @mlp(%x: tensor<64x32xf32>, %w: tensor<32x16xf32>, %b: tensor<16xf32>) -> tensor<64x16xf32> {
  %0 = tensordsl.matmul %x, %w : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
  %1 = tensordsl.add %0, %b : (tensor<64x16xf32>, tensor<16xf32>) -> tensor<64x16xf32>
  %2 = tensordsl.relu %1 : tensor<64x16xf32>
  %3 = tensordsl.softmax %2 : tensor<64x16xf32>
  func.return %3 : tensor<64x16xf32>
}
