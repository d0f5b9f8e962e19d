// RUN: tdsl-opt %s --tile | filecheck %s

// A group whose smallest legal tile (one row) does not fit the budget is split
// where its footprint peaks; the value at the cut is materialized between the
// two kernel.tile ops, and each part is tiled on its own.

// softmax(A + B) with rows of 5000 and a budget of 5000: one row needs the
// 5000-element sum plus softmax's row max/sum, 5001 elements.  Split: the sum
// is written out by the first tile, and each part fits one row at a time.
// CHECK-LABEL: func.func @softmax_of_sum
// CHECK:         %[[S:.*]] = kernel.tile(%a, %b) group "g.0" space [10, 5000] tiles [1, 5000] scratch 0
// CHECK:           tensordsl.add
// CHECK-NOT:       tensordsl.softmax
// CHECK:         %[[R:.*]] = kernel.tile(%[[S]]) group "g.1" space [10, 5000] tiles [1, 5000] scratch 1
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<1x5000xf32>):
// CHECK-NEXT:      tensordsl.softmax
// CHECK:         func.return %[[R]] : tensor<10x5000xf32>
func.func @softmax_of_sum(%a: tensor<10x5000xf32>, %b: tensor<10x5000xf32>) -> tensor<10x5000xf32> {
  %r = kernel.fused(%a, %b) group "g" budget 5000 : (tensor<10x5000xf32>, tensor<10x5000xf32>) -> tensor<10x5000xf32> {
  ^bb0(%x: tensor<10x5000xf32>, %y: tensor<10x5000xf32>):
    %0 = tensordsl.add %x, %y : (tensor<10x5000xf32>, tensor<10x5000xf32>) -> tensor<10x5000xf32>
    %1 = tensordsl.softmax %0 : tensor<10x5000xf32>
    kernel.yield %1 : tensor<10x5000xf32>
  }
  func.return %r : tensor<10x5000xf32>
}

// A full reduction cannot be tiled: fused with its producer, the whole
// 100x100 exp(A) would be scratch.  Split, exp is tiled by rows and the sum
// runs as a single tile over the materialized values.
// CHECK-LABEL: func.func @total
// CHECK:         %[[E:.*]] = kernel.tile(%a) group "g.0" space [100, 100] tiles [10, 100] scratch 0
// CHECK:         %[[T:.*]] = kernel.tile(%[[E]]) group "g.1" space [] tiles [] scratch 0
// CHECK-SAME:      ins [affine_map<() -> (0, 0)>] outs [affine_map<() -> ()>]
// CHECK:           tensordsl.sum %{{.*}} : tensor<100x100xf32> -> tensor<f32>
// CHECK:         func.return %[[T]] : tensor<f32>
func.func @total(%a: tensor<100x100xf32>) -> tensor<f32> {
  %r = kernel.fused(%a) group "g" budget 1000 : (tensor<100x100xf32>) -> tensor<f32> {
  ^bb0(%x: tensor<100x100xf32>):
    %0 = tensordsl.exp %x : tensor<100x100xf32>
    %1 = tensordsl.sum %0 : tensor<100x100xf32> -> tensor<f32>
    kernel.yield %1 : tensor<f32>
  }
  func.return %r : tensor<f32>
}

// The same with room for the whole intermediate: one untiled group.
// CHECK-LABEL: func.func @total_fits
// CHECK:         kernel.tile(%a) group "g" space [] tiles [] scratch 10000
// CHECK-NOT:     kernel.tile
func.func @total_fits(%a: tensor<100x100xf32>) -> tensor<f32> {
  %r = kernel.fused(%a) group "g" budget 10000 : (tensor<100x100xf32>) -> tensor<f32> {
  ^bb0(%x: tensor<100x100xf32>):
    %0 = tensordsl.exp %x : tensor<100x100xf32>
    %1 = tensordsl.sum %0 : tensor<100x100xf32> -> tensor<f32>
    kernel.yield %1 : tensor<f32>
  }
  func.return %r : tensor<f32>
}

// A matmul whose single result row does not fit is tiled along its columns
// too (rows first, columns only as a last resort).
// CHECK-LABEL: func.func @wide_matmul
// CHECK:         kernel.tile(%a, %w) space [4, 5000] tiles [1, 1000] scratch 1000
// CHECK-SAME:      ins [affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (0, d1)>]
func.func @wide_matmul(%a: tensor<4x8xf32>, %w: tensor<8x5000xf32>) -> tensor<4x5000xf32> {
  %r = kernel.fused(%a, %w) budget 1000 : (tensor<4x8xf32>, tensor<8x5000xf32>) -> tensor<4x5000xf32> {
  ^bb0(%x: tensor<4x8xf32>, %y: tensor<8x5000xf32>):
    %0 = tensordsl.matmul %x, %y : (tensor<4x8xf32>, tensor<8x5000xf32>) -> tensor<4x5000xf32>
    %1 = tensordsl.relu %0 : tensor<4x5000xf32>
    kernel.yield %1 : tensor<4x5000xf32>
  }
  func.return %r : tensor<4x5000xf32>
}
