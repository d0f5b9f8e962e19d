// RUN: tdsl-opt %s -p tdsl-plan-loops | filecheck %s
// RUN: tdsl-opt %s -p tdsl-plan-loops | tdsl-opt -p tdsl-plan-loops | filecheck %s
// RUN: tdsl-opt %s -p tdsl-plan-loops --print-op-generic | tdsl-opt | filecheck %s
// RUN: tdsl-opt %s -p tdsl-plan-loops,tdsl-lower-to-loops | filecheck %s --check-prefix=LOOPS
// RUN: tdsl-opt %s -p 'tdsl-plan-loops{memory-budget=100000}' --print-op-generic | tdsl-opt | filecheck %s --check-prefix=BUDGET

// The native loops' plan of relu(x) @ w: the loops take the contraction dim d2
// whole, cut the rows into two tiles (one per thread), keep relu(x) (value 0) in
// scratch, a tile of rows, and BLAS computes the matmul (op 1) from it, a tile at
// a time.  Planning planned IR keeps the plan; the generic form parses back to it.
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

// CHECK:      kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [memref<512xf32>] sweeps [0, 0] loops tiles [16, 8, 16] stored [0] blas [1]
// CHECK-NEXT:   ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>]

// The group function's scratch is one tile of relu(x) (16x16); the loops call BLAS's
// gemm on it, a tile of rows at a time, writing the product's rows into the result
// (%out0: the product is the group's output): A, B, C, then m, n, k, the three row
// strides, the three offsets, and whether A and B are transposed.
// LOOPS:      func.func @main_g0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<32x16xf32>, %{{.*}}: memref<16x8xf32>, %out0: memref<32x8xf32>, %{{.*}}: memref<16x16xf32>)
// LOOPS:      func.call @tdsl_gemm_f32_{{[0-9a-f]+}}(%{{.*}}, %w, %out0, {{.*}}) : (memref<16x16xf32>, memref<16x8xf32>, memref<32x8xf32>, index, index, index, index, index, index, index, index, index, index, index, index) -> ()
// LOOPS-NOT:  func.call @tdsl_matmul
// LOOPS:      func.func private @tdsl_gemm_f32_{{[0-9a-f]+}}(memref<16x16xf32>, memref<16x8xf32>, memref<32x8xf32>, index, index, index, index, index, index, index, index, index, index, index, index)

// In f16, which BLAS does not compute, the loops compute the matmul: rows in tiles
// of one (threads share them), relu(x) kept in scratch, since the matmul's loops
// read it once per column.
func.func @half(%x: tensor<32x16xf16>, %w: tensor<16x8xf16>) -> tensor<32x8xf16> {
  %0 = kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [memref<512xf16>] sweeps [0, 0]
    ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>]
    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<32x16xf16>, tensor<16x8xf16>) -> tensor<32x8xf16> {
  ^bb0(%x1: tensor<32x16xf16>, %w1: tensor<16x8xf16>):
    %1 = tensordsl.relu %x1 : tensor<32x16xf16>
    %2 = tensordsl.matmul %1, %w1 : (tensor<32x16xf16>, tensor<16x8xf16>) -> tensor<32x8xf16>
    kernel.yield %2 : tensor<32x8xf16>
  }
  func.return %0 : tensor<32x8xf16>
}

// CHECK:      kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [memref<512xf16>] sweeps [0, 0] loops tiles [1, 8, 16] stored [0] blas []

// LOOPS:      func.func @half_g0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<32x16xf16>, %{{.*}}: memref<16x8xf16>, %{{.*}}: memref<32x8xf16>, %{{.*}}: memref<1x16xf16>)
// LOOPS-NOT:  func.call @tdsl_

// A transpose's matmul: the numpy target reads x.T in place and records no scratch,
// and so do the loops: BLAS reads x's columns as they lie (its `trans_a`), a tile of
// 16 of them per call, whatever the budget; nothing is stored.
func.func @tmm(%x: tensor<16x32xf32>, %w: tensor<16x8xf32>) -> tensor<32x8xf32> {
  %0 = kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [] sweeps [0, 0]
    ins [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>]
    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<16x32xf32>, tensor<16x8xf32>) -> tensor<32x8xf32> {
  ^bb0(%x1: tensor<16x32xf32>, %w1: tensor<16x8xf32>):
    %1 = tensordsl.transpose %x1 : tensor<16x32xf32> -> tensor<32x16xf32>
    %2 = tensordsl.matmul %1, %w1 : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
    kernel.yield %2 : tensor<32x8xf32>
  }
  func.return %0 : tensor<32x8xf32>
}

// CHECK:      kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [] sweeps [0, 0] loops tiles [16, 8, 16] stored [] blas [1]
// CHECK-NOT:  limit
// BUDGET:     func.func @tmm
// BUDGET:     kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [] sweeps [0, 0] loops tiles [16, 8, 16] stored [] blas [1]
// BUDGET-NOT: limit
// A tile of rows of the product is BLAS's gemm with A transposed: A is %x itself (its
// row stride 32, the tile's first column as offset; trans_a is the call's next-to-last
// argument), and the group function has no scratch argument.
// LOOPS:      func.func @tmm_g0(%lo: index, %hi: index, %x: memref<16x32xf32>, %w: memref<16x8xf32>, %out0: memref<32x8xf32>) attributes {passthrough = ["noinline"]} {
// LOOPS:        func.call @tdsl_gemm_f32_{{[0-9a-f]+}}(%x, %w, %out0, {{(%[0-9]+, )+}}%{{[0-9]+}}) : (memref<16x32xf32>, memref<16x8xf32>, memref<32x8xf32>, index, index, index, index, index, index, index, index, index, index, index, index) -> ()
