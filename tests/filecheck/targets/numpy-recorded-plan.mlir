// RUN: tdsl-opt %s | filecheck %s
// RUN: %roundtrip-and-generic
// RUN: tdsl-opt %s -t numpy | filecheck %s --check-prefix=NUMPY

// A plan edited by hand: e = exp(x), then e - max(e) with the rows cut into
// tiles of 100.  tdsl-tile records sweeps [1, 1, 3]: the max in pass 1, the
// subtraction in pass 3, which would compute exp again; here exp is staged
// instead (staged [0]): pass 1 keeps its rows (8 x 300) in a buffer of their
// own, pass 3 reads its tile of them, and the recorded scratch is what that
// plan needs (the verifier checks it).
func.func @main(%x: tensor<16x300xf64>) -> tensor<16x300xf64> {
  %0 = kernel.tile(%x) group "g0" space [16, 300] iterators ["parallel", "reduction"] tiles [8, 100] scratch [memref<8xf64>, memref<2400xf64>, memref<8xf64>] sweeps [1, 1, 3] staged [0]
    ins [affine_map<(d0, d1) -> (d0, d1)>]
    outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<16x300xf64>) -> tensor<16x300xf64> {
  ^bb0(%x1: tensor<8x100xf64>):
    %1 = tensordsl.exp %x1 : tensor<8x100xf64>
    %2 = tensordsl.max %1 axis = 1 keepdims : tensor<8x100xf64> -> tensor<8x1xf64>
    %3 = tensordsl.sub %1, %2 : (tensor<8x100xf64>, tensor<8x1xf64>) -> tensor<8x100xf64>
    kernel.yield %3 : tensor<8x100xf64>
  }
  func.return %0 : tensor<16x300xf64>
}

// CHECK: kernel.tile(%x) group "g0" space [16, 300] iterators ["parallel", "reduction"] tiles [8, 100] scratch [memref<8xf64>, memref<2400xf64>, memref<8xf64>] sweeps [1, 1, 3] staged [0]

// CHECK-GENERIC: "kernel.tile"(%{{.*}}) <{group = "g0", space = array<i64: 16, 300>, iterators = ["parallel", "reduction"], tiles = array<i64: 8, 100>, scratch = [memref<8xf64>, memref<2400xf64>, memref<8xf64>], sweeps = array<i64: 1, 1, 3>, staged = array<i64: 0>,

// NUMPY:       def _main_g0(lo, hi, x, out0):
// NUMPY:         [[ROWS:t[0-9]+_[0-9]+s]] = t{{[0-9]+}}[:2400].reshape((8, 300))
// NUMPY:         for s1 in range(0, 300, 100):
// NUMPY:           np.exp(x[s0:e0, s1:e1], out=[[ROWS]][:, s1:e1])
// NUMPY-NOT:     np.exp(
// NUMPY:         for s1 in range(0, 300, 100):
// NUMPY:           np.subtract([[ROWS]][:, s1:e1],
// NUMPY:       # group g0: kernel.tile space [16, 300] (parallel, reduction) tiles [8, 100] scratch 2416
// NUMPY-NEXT:  # 2 passes over d1 (staging tensordsl.exp)
