// RUN: tdsl-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: tdsl-opt %s --split-input-file --verify-expected-errors -p tdsl-lower-to-loops

// What the verifier refuses of a recorded loops plan (tdsl-plan-loops writes it
// whole; a hand edit may not), and what tdsl-lower-to-loops refuses: each error
// where the expected-error annotations say (--verify-expected-errors checks the
// line and the message).

// Verifies (a reduction dim may take tiles within the tile op's: a softmax_matmul's
// keys, a matmul's contraction), but the loops cut no other reduction dim: here the
// matmul reads an input, not a value computed along d2, so tdsl-lower-to-loops says so.
func.func @main(%x: tensor<32x16xf32>, %w: tensor<16x8xf32>) -> tensor<32x8xf32> {
  // expected-error@+1 {{the loops plan cuts d2 into tiles of 4, a reduction dim the loops run whole}}
  %0 = kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [] sweeps [0, 0] loops tiles [1, 8, 4] stored [] blas []
    ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>]
    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32> {
  ^bb0(%x1: tensor<32x16xf32>, %w1: tensor<16x8xf32>):
    %1 = tensordsl.matmul %x1, %w1 : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
    %2 = tensordsl.relu %1 : tensor<32x8xf32>
    kernel.yield %2 : tensor<32x8xf32>
  }
  func.return %0 : tensor<32x8xf32>
}
// CHECK: func.func @main

// -----

// The loops may cut the contraction of a matmul whose left operand the group computes
// along it (an MLP's hidden dim: tdsl-plan-loops cuts it from 512 on), adding each
// tile's product into the result by BLAS; a plan that cuts it must give that matmul
// BLAS (with `blas [1]` this group lowers).
func.func @main(%x: tensor<32x16xf32>, %w: tensor<16x8xf32>) -> tensor<32x8xf32> {
  // expected-error@+1 {{the loops plan cuts d2, the contraction of 'tensordsl.matmul' (op 1 of the group), but does not give it BLAS: add 1 to `blas`, or give d2 whole}}
  %0 = kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [memref<512xf32>] sweeps [0, 0] loops tiles [1, 8, 4] stored [0] blas []
    ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>]
    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32> {
  ^bb0(%x1: tensor<32x16xf32>, %w1: tensor<16x8xf32>):
    %1 = tensordsl.relu %x1 : tensor<32x16xf32>
    %2 = tensordsl.matmul %1, %w1 : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
    kernel.yield %2 : tensor<32x8xf32>
  }
  func.return %0 : tensor<32x8xf32>
}
// CHECK: func.func @main

// -----

func.func @main(%x: tensor<32x16xf32>, %w: tensor<16x8xf32>) -> tensor<32x8xf32> {
  // expected-error@+1 {{loops stored [1, 1] must be distinct}}
  %0 = kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [memref<512xf32>] sweeps [0, 0] loops tiles [1, 8, 16] stored [1, 1] blas []
    ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>]
    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32> {
  ^bb0(%x1: tensor<32x16xf32>, %w1: tensor<16x8xf32>):
    %1 = tensordsl.relu %x1 : tensor<32x16xf32>
    %2 = tensordsl.matmul %1, %w1 : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
    kernel.yield %2 : tensor<32x8xf32>
  }
  func.return %0 : tensor<32x8xf32>
}
// CHECK: 'kernel.tile' op loops stored [1, 1] must be distinct non-negative numbers

// -----

// Verifies, but the loops need relu(x) stored: tdsl-lower-to-loops says so, at the op.
func.func @main(%x: tensor<32x16xf32>, %w: tensor<16x8xf32>) -> tensor<32x8xf32> {
  // expected-error@+1 {{the loops plan does not store value 0 ('tensordsl.relu'), which the loops need stored}}
  %0 = kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [memref<512xf32>] sweeps [0, 0] loops tiles [1, 8, 16] stored [] blas []
    ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>]
    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32> {
  ^bb0(%x1: tensor<32x16xf32>, %w1: tensor<16x8xf32>):
    %1 = tensordsl.relu %x1 : tensor<32x16xf32>
    %2 = tensordsl.matmul %1, %w1 : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
    kernel.yield %2 : tensor<32x8xf32>
  }
  func.return %0 : tensor<32x8xf32>
}
// CHECK: func.func @main
