// RUN: tdsl-opt %s -p tdsl-lower-to-loops | filecheck %s
// RUN: tdsl-opt %s --print-op-generic | tdsl-opt | filecheck %s --check-prefix=PLAN
// RUN: tdsl-opt %s --print-op-generic | tdsl-opt -p tdsl-lower-to-loops | filecheck %s

// A matmul's contraction in tiles (tdsl/backend/llvm/loops_split.py): the recorded
// loops plan cuts d2, the contraction of `relu(x) @ w`, into tiles of 4. The loops run
// d2 in a loop of its own inside each row tile: per tile of it, relu's tile into
// scratch, then one BLAS call that adds that tile's product into the result (its last
// argument, `acc`, is the tile's start: 0 for the first tile, BLAS's beta = 0; then 1).
// (tdsl-plan-loops cuts a contraction like this from 512 elements on: an MLP's hidden dim.)

// PLAN: loops tiles [1, 8, 4] stored [0] blas [1]

// CHECK:       func.func @main_g0(%lo: index, %hi: index, %x: memref<32x16xf32>, %w: memref<16x8xf32>, %out0: memref<32x8xf32>, %0: memref<1x4xf32>) attributes {passthrough = ["noinline"]} {
// CHECK-DAG:       %[[FOUR:[0-9]+]] = arith.constant 4 : index
// CHECK-DAG:       %[[SIXTEEN:[0-9]+]] = arith.constant 16 : index
// CHECK:         scf.for %[[T:[0-9]+]] = %lo to %hi step
// CHECK:           scf.for %[[K:[0-9]+]] = %{{[0-9]+}} to %[[SIXTEEN]] step %[[FOUR]] {
// CHECK:             scf.for
// CHECK-NEXT:          scf.for %{{[0-9]+}} = %[[K]] to
// CHECK:                 arith.select
// CHECK:                 memref.store %{{[0-9]+}}, %0[
// CHECK:           func.call @tdsl_gemm_f32_{{[0-9a-f]+}}(%0, %w, %out0, {{(%[0-9]+, )+}}%[[K]]) :
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return

func.func @main(%x: tensor<32x16xf32>, %w: tensor<16x8xf32>) -> tensor<32x8xf32> {
  %0 = kernel.tile(%x, %w) group "g0" space [32, 8, 16] iterators ["parallel", "parallel", "reduction"] tiles [32, 8, 16] scratch [memref<512xf32>] sweeps [0, 0] loops tiles [1, 8, 4] stored [0] blas [1]
    ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>]
    outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32> {
  ^bb0(%x1: tensor<32x16xf32>, %w1: tensor<16x8xf32>):
    %1 = tensordsl.relu %x1 : tensor<32x16xf32>
    %2 = tensordsl.matmul %1, %w1 : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
    kernel.yield %2 : tensor<32x8xf32>
  }
  func.return %0 : tensor<32x8xf32>
}
