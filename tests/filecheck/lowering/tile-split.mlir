// RUN: tdsl-opt %s --tile | filecheck %s

// A group whose smallest legal tile does not fit the budget, as written or
// with its row-normalizing ops decomposed, is split where the need of its
// parts is smallest; the value at the cut is materialized between the two
// kernel.tile ops, and each part is tiled on its own (decomposed only if it
// must be).

// softmax(q @ k) @ v under a budget of 16: a row of the softmax (16) is the
// second matmul's left operand, and with its statistics it needs 17.  Split
// after the softmax: the first part keeps softmax whole and needs only the
// statistics of its 16 rows; the second is a lone matmul.
// CHECK-LABEL: func.func @attention
// CHECK:         %[[S:.*]] = kernel.tile(%q, %k) group "g.0" space [16, 16, 8] iterators ["parallel", "normalize", "reduction"] tiles [16, 16, 8] scratch [memref<16xf32>] sweeps [0, 0]
// CHECK:         ^bb0(
// CHECK-NEXT:      tensordsl.matmul
// CHECK-NEXT:      tensordsl.softmax
// CHECK-NEXT:      kernel.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R:.*]] = kernel.tile(%[[S]], %v) group "g.1" space [16, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [16, 8, 16] scratch []
// CHECK:         ^bb0(
// CHECK-NEXT:      tensordsl.matmul
// CHECK-NEXT:      kernel.yield
// CHECK:         func.return %[[R]] : tensor<16x8xf32>
func.func @attention(%q: tensor<16x8xf32>, %k: tensor<8x16xf32>, %v: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %r = kernel.fused(%q, %k, %v) group "g" budget 16 : (tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<16x8xf32> {
  ^bb0(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16x8xf32>):
    %0 = tensordsl.matmul %a, %b : (tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
    %1 = tensordsl.softmax %0 : tensor<16x16xf32>
    %2 = tensordsl.matmul %1, %c : (tensor<16x16xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
    kernel.yield %2 : tensor<16x8xf32>
  }
  func.return %r : tensor<16x8xf32>
}

// softmax(exp(x)) @ w under a budget of 2: split after the softmax, which
// then runs in its output, two rows at a time (their statistics are the
// scratch).
// CHECK-LABEL: func.func @rows
// CHECK:         %[[S:.*]] = kernel.tile(%x) group "g.0" space [4, 64] iterators ["parallel", "normalize"] tiles [2, 64] scratch [memref<2xf32>]
// CHECK:         ^bb0(
// CHECK-NEXT:      tensordsl.exp
// CHECK-NEXT:      tensordsl.softmax
// CHECK-NEXT:      kernel.yield
// CHECK:         kernel.tile(%[[S]], %w) group "g.1" space [8, 4, 64] iterators ["parallel", "parallel", "reduction"] tiles [8, 4, 64] scratch []
func.func @rows(%x: tensor<4x64xf32>, %w: tensor<64x8xf32>) -> tensor<4x8xf32> {
  %r = kernel.fused(%x, %w) group "g" budget 2 : (tensor<4x64xf32>, tensor<64x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x64xf32>, %b: tensor<64x8xf32>):
    %0 = tensordsl.exp %a : tensor<4x64xf32>
    %1 = tensordsl.softmax %0 : tensor<4x64xf32>
    %2 = tensordsl.matmul %1, %b : (tensor<4x64xf32>, tensor<64x8xf32>) -> tensor<4x8xf32>
    kernel.yield %2 : tensor<4x8xf32>
  }
  func.return %r : tensor<4x8xf32>
}

// A full reduction no longer needs a split: its dims are tiled, and each tile
// adds its partial sum into the output (the scratch: exp of 9 rows and the
// partial).
// CHECK-LABEL: func.func @total
// CHECK:         kernel.tile(%a) group "g" space [100, 100] iterators ["reduction", "reduction"] tiles [9, 100] scratch [memref<900xf32>, memref<1xf32>]
// CHECK-NEXT:      ins [affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-NEXT:      outs [affine_map<(d0, d1) -> ()>]
// CHECK-NOT:     kernel.tile
func.func @total(%a: tensor<100x100xf32>) -> tensor<f32> {
  %r = kernel.fused(%a) group "g" budget 1000 : (tensor<100x100xf32>) -> tensor<f32> {
  ^bb0(%x: tensor<100x100xf32>):
    %0 = tensordsl.exp %x : tensor<100x100xf32>
    %1 = tensordsl.sum %0 : tensor<100x100xf32> -> tensor<f32>
    kernel.yield %1 : tensor<f32>
  }
  func.return %r : tensor<f32>
}
