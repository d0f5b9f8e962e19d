// RUN: tdsl-opt %s -p tdsl-plan-loops | filecheck %s
// RUN: tdsl-opt %s -p tdsl-plan-loops | tdsl-opt -p tdsl-plan-loops | filecheck %s
// RUN: tdsl-opt %s -p tdsl-plan-loops --print-op-generic | tdsl-opt | filecheck %s
// RUN: tdsl-opt %s -p tdsl-plan-loops,tdsl-lower-to-loops | filecheck %s --check-prefix=LOOPS

// The native loops' plan of relu(x) @ w: the loops take the contraction dim d2
// whole, cut the rows into tiles of one (threads share them), and keep relu(x)
// (value 0) in scratch, since the matmul's loops read it once per column; BLAS
// computes nothing (its operand is computed in the group).  Planning planned IR
// keeps the plan; the generic form parses back to it.
func.func @main(%x: tensor<32x16xf32>, %w: tensor<16x8xf32>) -> tensor<32x8xf32> {
  %0 = kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [memref<512xf32>] sweeps [0, 0]
    ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>]
    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32> {
  ^bb0(%x1: tensor<32x16xf32>, %w1: tensor<16x8xf32>):
    %1 = tensordsl.relu %x1 : tensor<32x16xf32>
    %2 = tensordsl.matmul %1, %w1 : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
    kernel.yield %2 : tensor<32x8xf32>
  }
  func.return %0 : tensor<32x8xf32>
}

// CHECK:      kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [memref<512xf32>] sweeps [0, 0] loops tiles [1, 8, 16] stored [0] blas []
// CHECK-NEXT:   ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>]

// The group function's scratch is one tile of relu(x): a row of 16.
// LOOPS:      func.func @main_g0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<32x16xf32>, %{{.*}}: memref<16x8xf32>, %{{.*}}: memref<32x8xf32>, %{{.*}}: memref<1x16xf32>)
// LOOPS-NOT:  func.call @tdsl_matmul
