// RUN: tdsl-opt %s --tile | filecheck %s
// RUN: tdsl-opt %s -p 'tdsl-tile{memory-budget=1000000}' | filecheck %s --check-prefix=BIG

// tdsl-tile turns each kernel.fused into a kernel.tile whose scratch (the
// intermediates of one tile, after buffer reuse) fits the memory budget the
// group records, or the pass's memory-budget option.

// (A + B) + C: one 100-element intermediate per row, so a budget of 1000
// elements gives tiles of 10 whole rows.
// CHECK-LABEL: func.func @add3
// CHECK:         %[[R:.*]] = kernel.tile(%a, %b, %c) group "g0" space [100, 100] tiles [10, 100] scratch 1000
// CHECK-SAME:      ins [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME:      outs [affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME:      : (tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<10x100xf32>, %[[Y:.*]]: tensor<10x100xf32>, %[[Z:.*]]: tensor<10x100xf32>):
// CHECK-NEXT:      %[[S:.*]] = tensordsl.add %[[X]], %[[Y]] : (tensor<10x100xf32>, tensor<10x100xf32>) -> tensor<10x100xf32>
// CHECK-NEXT:      %[[T:.*]] = tensordsl.add %[[S]], %[[Z]] : (tensor<10x100xf32>, tensor<10x100xf32>) -> tensor<10x100xf32>
// CHECK-NEXT:      kernel.yield %[[T]] : tensor<10x100xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]] : tensor<100x100xf32>
// With a budget of 1e6 the whole 100x100 intermediate fits: one tile.
// BIG-LABEL:   func.func @add3
// BIG:           kernel.tile(%a, %b, %c) group "g0" space [100, 100] tiles [100, 100] scratch 10000
func.func @add3(%a: tensor<100x100xf32>, %b: tensor<100x100xf32>, %c: tensor<100x100xf32>) -> tensor<100x100xf32> {
  %r = kernel.fused(%a, %b, %c) group "g0" budget 1000 : (tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32> {
  ^bb0(%x: tensor<100x100xf32>, %y: tensor<100x100xf32>, %z: tensor<100x100xf32>):
    %0 = tensordsl.add %x, %y : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
    %1 = tensordsl.add %0, %z : (tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<100x100xf32>
    kernel.yield %1 : tensor<100x100xf32>
  }
  func.return %r : tensor<100x100xf32>
}

// relu(x @ w + b): tiled by rows of x; w is taken whole, b runs along the
// columns.  The matmul result is the one intermediate (add and relu run in
// place): 390 rows of 256 would fit 100000, evened out to 2 tiles of 256.
// CHECK-LABEL: func.func @mlp
// CHECK:         kernel.tile(%x, %w, %b) group "g1" space [512, 256] tiles [256, 256] scratch 65536
// CHECK-SAME:      ins [affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d1)>]
// CHECK-SAME:      outs [affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<256x128xf32>, %{{.*}}: tensor<128x256xf32>, %{{.*}}: tensor<256xf32>):
// CHECK-NEXT:      tensordsl.matmul {{.*}} : (tensor<256x128xf32>, tensor<128x256xf32>) -> tensor<256x256xf32>
// CHECK-NEXT:      tensordsl.add {{.*}} : (tensor<256x256xf32>, tensor<256xf32>) -> tensor<256x256xf32>
// CHECK-NEXT:      tensordsl.relu {{.*}} : tensor<256x256xf32>
// BIG-LABEL:   func.func @mlp
// BIG:           space [512, 256] tiles [512, 256] scratch 131072
func.func @mlp(%x: tensor<512x128xf32>, %w: tensor<128x256xf32>, %b: tensor<256xf32>) -> tensor<512x256xf32> {
  %y = kernel.fused(%x, %w, %b) group "g1" budget 100000 : (tensor<512x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<512x256xf32> {
  ^bb0(%x1: tensor<512x128xf32>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>):
    %0 = tensordsl.matmul %x1, %w1 : (tensor<512x128xf32>, tensor<128x256xf32>) -> tensor<512x256xf32>
    %1 = tensordsl.add %0, %b1 : (tensor<512x256xf32>, tensor<256xf32>) -> tensor<512x256xf32>
    %2 = tensordsl.relu %1 : tensor<512x256xf32>
    kernel.yield %2 : tensor<512x256xf32>
  }
  func.return %y : tensor<512x256xf32>
}

// sum(exp(A) * B, axis=1): the reduced axis is taken whole, the iteration
// space is the result's rows.  exp(A) is the one intermediate (mul runs in
// place): 3 rows of 300 fit 1000 (22 tiles, evened out to 3 rows).
// CHECK-LABEL: func.func @rowsum
// CHECK:         kernel.tile(%a, %b) group "g2" space [64] tiles [3] scratch 900
// CHECK-SAME:      ins [affine_map<(d0) -> (d0, 0)>, affine_map<(d0) -> (d0, 0)>] outs [affine_map<(d0) -> (d0)>]
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<3x300xf32>, %{{.*}}: tensor<3x300xf32>):
// CHECK:           tensordsl.sum {{.*}} axis = 1 : tensor<3x300xf32> -> tensor<3xf32>
// BIG-LABEL:   func.func @rowsum
// BIG:           space [64] tiles [64] scratch 19200
func.func @rowsum(%a: tensor<64x300xf32>, %b: tensor<64x300xf32>) -> tensor<64xf32> {
  %r = kernel.fused(%a, %b) group "g2" budget 1000 : (tensor<64x300xf32>, tensor<64x300xf32>) -> tensor<64xf32> {
  ^bb0(%x: tensor<64x300xf32>, %y: tensor<64x300xf32>):
    %0 = tensordsl.exp %x : tensor<64x300xf32>
    %1 = tensordsl.mul %0, %y : (tensor<64x300xf32>, tensor<64x300xf32>) -> tensor<64x300xf32>
    %2 = tensordsl.sum %1 axis = 1 : tensor<64x300xf32> -> tensor<64xf32>
    kernel.yield %2 : tensor<64xf32>
  }
  func.return %r : tensor<64xf32>
}

// Broadcast operands: a size-1 dim is taken whole (map result 0), a missing
// dim is simply absent.  A constant of more than one element is hoisted in
// front of the tile and sliced like an input; a one-element constant stays.
// softmax(x) needs its row max/sum (1 element per row) besides the
// intermediate: 4 rows x (8 + 1) = 36 <= 40.
// CHECK-LABEL: func.func @broadcast
// CHECK:         %[[C:.*]] = tensordsl.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]> : tensor<8xf32>
// CHECK-NEXT:    kernel.tile(%a, %v, %s, %[[C]]) space [16, 8] tiles [4, 8] scratch 36
// CHECK-SAME:      ins [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d1)>]
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<1x8xf32>, %{{.*}}: tensor<4x1xf32>, %{{.*}}: tensor<8xf32>):
// CHECK:           tensordsl.constant dense<2.000000e+00> : tensor<f32>
// CHECK:           tensordsl.softmax {{.*}} : tensor<4x8xf32>
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

// Several results: a dim one result does not run along cannot be tiled (the
// tiles would write that result more than once); here d1 is also reduced.
// CHECK-LABEL: func.func @two_results
// CHECK:         kernel.tile(%a) space [32, 50] tiles [8, 50] scratch 400
// CHECK-SAME:      outs [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>]
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
// CHECK-NEXT:    kernel.tile(%[[E]]) space [4] tiles [2] scratch 0
func.func @untouched(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensordsl.exp %a : tensor<4xf32>
  %r = kernel.tile(%e) space [4] tiles [2] scratch 0 ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0)>] : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<2xf32>):
    %0 = tensordsl.relu %x : tensor<2xf32>
    kernel.yield %0 : tensor<2xf32>
  }
  func.return %r : tensor<4xf32>
}
