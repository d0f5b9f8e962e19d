// RUN: tdsl-opt %s --tile | filecheck %s
// RUN: tdsl-opt %s -p 'tdsl-tile{memory-budget=1000000}' | filecheck %s --check-prefix=BIG

// tdsl-tile turns each kernel.fused into a kernel.tile whose scratch (the
// buffers one tile allocates beyond its inputs and outputs, after reuse) fits
// the memory budget the group records, or the pass's memory-budget option.
// The op records its iterator kinds and its scratch buffers; the verifier
// checks both against the schedule.

// An element-wise chain runs in its output: no scratch, one tile, whatever
// the budget.
// CHECK-LABEL: func.func @add3
// CHECK:         %[[R:.*]] = kernel.tile(%a, %b, %c) group "g0" space [100, 100] iterators ["parallel", "parallel"] tiles [100, 100] scratch []
// CHECK-NEXT:      ins [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-NEXT:      outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<100x100xf32>, %[[Y:.*]]: tensor<100x100xf32>, %[[Z:.*]]: tensor<100x100xf32>):
// CHECK-NEXT:      %[[S:.*]] = tensordsl.add %[[X]], %[[Y]] : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
// CHECK-NEXT:      %[[T:.*]] = tensordsl.add %[[S]], %[[Z]] : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
// CHECK-NEXT:      kernel.yield %[[T]] : tensor<100x100xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]] : tensor<100x100xf32>
func.func @add3(%a: tensor<100x100xf32>, %b: tensor<100x100xf32>, %c: tensor<100x100xf32>) -> tensor<100x100xf32> {
  %r = kernel.fused(%a, %b, %c) group "g0" budget 1000 : (tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32> {
  ^bb0(%x: tensor<100x100xf32>, %y: tensor<100x100xf32>, %z: tensor<100x100xf32>):
    %0 = tensordsl.add %x, %y : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
    %1 = tensordsl.add %0, %z : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
    kernel.yield %1 : tensor<100x100xf32>
  }
  func.return %r : tensor<100x100xf32>
}

// x + y is still live when the output holds (x + y) * z: one buffer of
// scratch, so a budget of 1000 elements gives tiles of 10 whole rows.
// CHECK-LABEL: func.func @live_across
// CHECK:         kernel.tile(%a, %b, %c) group "g1" space [100, 100] iterators ["parallel", "parallel"] tiles [10, 100] scratch [memref<1000xf32>]
// CHECK:         ^bb0(%{{.*}}: tensor<10x100xf32>, %{{.*}}: tensor<10x100xf32>, %{{.*}}: tensor<10x100xf32>):
// BIG-LABEL:   func.func @live_across
// BIG:           kernel.tile(%a, %b, %c) group "g1" space [100, 100] iterators ["parallel", "parallel"] tiles [100, 100] scratch [memref<10000xf32>]
func.func @live_across(%a: tensor<100x100xf32>, %b: tensor<100x100xf32>, %c: tensor<100x100xf32>) -> tensor<100x100xf32> {
  %r = kernel.fused(%a, %b, %c) group "g1" budget 1000 : (tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32> {
  ^bb0(%x: tensor<100x100xf32>, %y: tensor<100x100xf32>, %z: tensor<100x100xf32>):
    %0 = tensordsl.add %x, %y : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
    %1 = tensordsl.mul %0, %z : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
    %2 = tensordsl.sub %1, %0 : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
    kernel.yield %2 : tensor<100x100xf32>
  }
  func.return %r : tensor<100x100xf32>
}

// relu(x @ w + b): the matmul writes the output, add and relu run in place:
// no scratch.  The space is (rows, columns, contraction): the layout of the
// largest value (x and the result), with the contraction last.
// CHECK-LABEL: func.func @mlp
// CHECK:         kernel.tile(%x, %w, %b) group "g2" space [512, 256, 128] iterators ["parallel", "parallel", "reduction"] tiles [512, 256, 128] scratch []
// CHECK-NEXT:      ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d1)>]
// CHECK-NEXT:      outs [affine_map<(d0, d1, d2) -> (d0, d1)>]
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<512x128xf32>, %{{.*}}: tensor<128x256xf32>, %{{.*}}: tensor<256xf32>):
// CHECK-NEXT:      tensordsl.matmul
// CHECK-NEXT:      tensordsl.add
// CHECK-NEXT:      tensordsl.relu
func.func @mlp(%x: tensor<512x128xf32>, %w: tensor<128x256xf32>, %b: tensor<256xf32>) -> tensor<512x256xf32> {
  %y = kernel.fused(%x, %w, %b) group "g2" budget 1000 : (tensor<512x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<512x256xf32> {
  ^bb0(%x1: tensor<512x128xf32>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>):
    %0 = tensordsl.matmul %x1, %w1 : (tensor<512x128xf32>, tensor<128x256xf32>) -> tensor<512x256xf32>
    %1 = tensordsl.add %0, %b1 : (tensor<512x256xf32>, tensor<256xf32>) -> tensor<512x256xf32>
    %2 = tensordsl.relu %1 : tensor<512x256xf32>
    kernel.yield %2 : tensor<512x256xf32>
  }
  func.return %y : tensor<512x256xf32>
}

// softmax(x) @ w: the softmax rows (74 x 128) and their statistics (74) are
// scratch; 74 rows fit 10000 (75 would not), 7 tiles.
// CHECK-LABEL: func.func @prologue
// CHECK:         kernel.tile(%x, %w) group "g3" space [512, 256, 128] iterators ["parallel", "parallel", "reduction"] tiles [74, 256, 128] scratch [memref<9472xf32>, memref<74xf32>]
// CHECK:         ^bb0(%{{.*}}: tensor<74x128xf32>, %{{.*}}: tensor<128x256xf32>):
// CHECK-NEXT:      tensordsl.softmax {{.*}} : tensor<74x128xf32>
// CHECK-NEXT:      tensordsl.matmul {{.*}} : (tensor<74x128xf32>, tensor<128x256xf32>) -> tensor<74x256xf32>
func.func @prologue(%x: tensor<512x128xf32>, %w: tensor<128x256xf32>) -> tensor<512x256xf32> {
  %y = kernel.fused(%x, %w) group "g3" budget 10000 : (tensor<512x128xf32>, tensor<128x256xf32>) -> tensor<512x256xf32> {
  ^bb0(%x1: tensor<512x128xf32>, %w1: tensor<128x256xf32>):
    %s = tensordsl.softmax %x1 : tensor<512x128xf32>
    %0 = tensordsl.matmul %s, %w1 : (tensor<512x128xf32>, tensor<128x256xf32>) -> tensor<512x256xf32>
    kernel.yield %0 : tensor<512x256xf32>
  }
  func.return %y : tensor<512x256xf32>
}

// sum(exp(A) * B, axis=1): exp(A) is the one intermediate (mul runs in place,
// the sum accumulates in the output): 3 rows of 300 fit 1000.
// CHECK-LABEL: func.func @rowsum
// CHECK:         kernel.tile(%a, %b) group "g4" space [64, 300] iterators ["parallel", "reduction"] tiles [3, 300] scratch [memref<900xf32>]
// CHECK-NEXT:      ins [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-NEXT:      outs [affine_map<(d0, d1) -> (d0)>]
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<3x300xf32>, %{{.*}}: tensor<3x300xf32>):
// CHECK:           tensordsl.sum {{.*}} axis = 1 : tensor<3x300xf32> -> tensor<3xf32>
// BIG-LABEL:   func.func @rowsum
// BIG:           space [64, 300] iterators ["parallel", "reduction"] tiles [64, 300] scratch [memref<19200xf32>]
func.func @rowsum(%a: tensor<64x300xf32>, %b: tensor<64x300xf32>) -> tensor<64xf32> {
  %r = kernel.fused(%a, %b) group "g4" budget 1000 : (tensor<64x300xf32>, tensor<64x300xf32>) -> tensor<64xf32> {
  ^bb0(%x: tensor<64x300xf32>, %y: tensor<64x300xf32>):
    %0 = tensordsl.exp %x : tensor<64x300xf32>
    %1 = tensordsl.mul %0, %y : (tensor<64x300xf32>, tensor<64x300xf32>) -> tensor<64x300xf32>
    %2 = tensordsl.sum %1 axis = 1 : tensor<64x300xf32> -> tensor<64xf32>
    kernel.yield %2 : tensor<64xf32>
  }
  func.return %r : tensor<64xf32>
}

// sum(exp(A), axis=0): the reduced dim is tiled; each tile of 2 rows adds its
// partial sums (300) into the output.  Scratch: exp of the tile and the partial.
// CHECK-LABEL: func.func @colsum
// CHECK:         kernel.tile(%a) group "g5" space [64, 300] iterators ["reduction", "parallel"] tiles [2, 300] scratch [memref<600xf32>, memref<300xf32>]
// CHECK-NEXT:      ins [affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-NEXT:      outs [affine_map<(d0, d1) -> (d1)>]
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<2x300xf32>):
// CHECK-NEXT:      tensordsl.exp
// CHECK-NEXT:      tensordsl.sum {{.*}} axis = 0 : tensor<2x300xf32> -> tensor<300xf32>
func.func @colsum(%a: tensor<64x300xf32>) -> tensor<300xf32> {
  %r = kernel.fused(%a) group "g5" budget 1000 : (tensor<64x300xf32>) -> tensor<300xf32> {
  ^bb0(%x: tensor<64x300xf32>):
    %0 = tensordsl.exp %x : tensor<64x300xf32>
    %1 = tensordsl.sum %0 axis = 0 : tensor<64x300xf32> -> tensor<300xf32>
    kernel.yield %1 : tensor<300xf32>
  }
  func.return %r : tensor<300xf32>
}

// Broadcast operands: a size-1 dim is taken whole (map result 0), a missing
// dim is simply absent.  A constant of more than one element is hoisted in
// front of the tile and sliced like an input; a one-element constant stays.
// softmax runs in the output; its row statistics (16) are the scratch.
// CHECK-LABEL: func.func @broadcast
// CHECK:         %[[C:.*]] = tensordsl.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]> : tensor<8xf32>
// CHECK-NEXT:    kernel.tile(%a, %v, %s, %[[C]]) space [16, 8] iterators ["parallel", "normalize"] tiles [16, 8] scratch [memref<16xf32>]
// CHECK-NEXT:      ins [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d1)>]
// CHECK:         ^bb0(%{{.*}}: tensor<16x8xf32>, %{{.*}}: tensor<1x8xf32>, %{{.*}}: tensor<16x1xf32>, %{{.*}}: tensor<8xf32>):
// CHECK:           tensordsl.constant dense<2.000000e+00> : tensor<f32>
// CHECK:           tensordsl.softmax {{.*}} : tensor<16x8xf32>
func.func @broadcast(%a: tensor<16x8xf32>, %v: tensor<1x8xf32>, %s: tensor<16x1xf32>) -> tensor<16x8xf32> {
  %r = kernel.fused(%a, %v, %s) budget 40 : (tensor<16x8xf32>, tensor<1x8xf32>, tensor<16x1xf32>) -> tensor<16x8xf32> {
  ^bb0(%x: tensor<16x8xf32>, %y: tensor<1x8xf32>, %z: tensor<16x1xf32>):
    %c = tensordsl.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
    %k = tensordsl.constant dense<2.0> : tensor<f32>
    %0 = tensordsl.add %x, %y : (tensor<16x8xf32>, tensor<1x8xf32>) -> tensor<16x8xf32>
    %1 = tensordsl.mul %0, %z : (tensor<16x8xf32>, tensor<16x1xf32>) -> tensor<16x8xf32>
    %2 = tensordsl.sub %1, %c : (tensor<16x8xf32>, tensor<8xf32>) -> tensor<16x8xf32>
    %3 = tensordsl.mul %2, %k : (tensor<16x8xf32>, tensor<f32>) -> tensor<16x8xf32>
    %4 = tensordsl.softmax %3 : tensor<16x8xf32>
    kernel.yield %4 : tensor<16x8xf32>
  }
  func.return %r : tensor<16x8xf32>
}

// Several results, one of them a reduction accumulated in its output: exp(x)
// feeds both neg and max, so it is scratch: 8 rows of 50 fit 400.
// CHECK-LABEL: func.func @two_results
// CHECK:         kernel.tile(%a) space [32, 50] iterators ["parallel", "reduction"] tiles [8, 50] scratch [memref<400xf32>]
// CHECK-NEXT:      ins [affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-NEXT:      outs [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>]
// CHECK-SAME:      -> (tensor<32x50xf32>, tensor<32x1xf32>)
func.func @two_results(%a: tensor<32x50xf32>) -> (tensor<32x50xf32>, tensor<32x1xf32>) {
  %r:2 = kernel.fused(%a) budget 400 : (tensor<32x50xf32>) -> (tensor<32x50xf32>, tensor<32x1xf32>) {
  ^bb0(%x: tensor<32x50xf32>):
    %0 = tensordsl.exp %x : tensor<32x50xf32>
    %1 = tensordsl.neg %0 : tensor<32x50xf32>
    %2 = tensordsl.max %0 axis = 1 keepdims : tensor<32x50xf32> -> tensor<32x1xf32>
    kernel.yield %1, %2 : tensor<32x50xf32>, tensor<32x1xf32>
  }
  func.return %r#0, %r#1 : tensor<32x50xf32>, tensor<32x1xf32>
}

// Ops outside fused groups and existing kernel.tile ops are left alone.
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT:    %[[E:.*]] = tensordsl.exp %a : tensor<4xf32>
// CHECK-NEXT:    kernel.tile(%[[E]]) space [4] iterators ["parallel"] tiles [2] scratch []
func.func @untouched(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensordsl.exp %a : tensor<4xf32>
  %r = kernel.tile(%e) space [4] iterators ["parallel"] tiles [2] scratch []
    ins [affine_map<(d0) -> (d0)>]
    outs [affine_map<(d0) -> (d0)>] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<2xf32>):
    %0 = tensordsl.relu %x : tensor<2xf32>
    kernel.yield %0 : tensor<2xf32>
  }
  func.return %r : tensor<4xf32>
}
