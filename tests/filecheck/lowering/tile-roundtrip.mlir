// RUN: tdsl-opt %s --tile | filecheck %s
// RUN: tdsl-opt %s --tile --print-op-generic | tdsl-opt | filecheck %s
// RUN: tdsl-opt %s --tile | tdsl-opt --tile | filecheck %s

// Tiled IR prints, parses back (custom and generic form) to the same text, and
// tiling tiled IR again changes nothing.  The matmul's result feeds softmax
// and mean, so it is scratch (16 x 32) besides softmax's row statistics (16):
// 528 elements fit 600 (32 rows would not); 4 tiles of 16 rows.

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R0:.*]], %[[R1:.*]] = kernel.tile(%x, %w) group "g0" space [64, 48, 32] iterators ["parallel", "reduction", "reduction"] tiles [16, 48, 32] scratch [memref<512xf32>, memref<16xf32>]
// CHECK-NEXT:      ins [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>]
// CHECK-NEXT:      outs [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0)>] : (tensor<64x48xf32>, tensor<48x32xf32>) -> (tensor<64x32xf32>, tensor<64xf32>) {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<16x48xf32>, %[[W:.*]]: tensor<48x32xf32>):
// CHECK-NEXT:      %[[M:.*]] = tensordsl.matmul %[[X]], %[[W]] : (tensor<16x48xf32>, tensor<48x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:      %[[S:.*]] = tensordsl.softmax %[[M]] : tensor<16x32xf32>
// CHECK-NEXT:      %[[T:.*]] = tensordsl.mean %[[M]] axis = 1 : tensor<16x32xf32> -> tensor<16xf32>
// CHECK-NEXT:      kernel.yield %[[S]], %[[T]] : tensor<16x32xf32>, tensor<16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R0]], %[[R1]] : tensor<64x32xf32>, tensor<64xf32>
func.func @main(%x: tensor<64x48xf32>, %w: tensor<48x32xf32>) -> (tensor<64x32xf32>, tensor<64xf32>) {
  %r:2 = kernel.fused(%x, %w) group "g0" budget 600 : (tensor<64x48xf32>, tensor<48x32xf32>) -> (tensor<64x32xf32>, tensor<64xf32>) {
  ^bb0(%a: tensor<64x48xf32>, %b: tensor<48x32xf32>):
    %0 = tensordsl.matmul %a, %b : (tensor<64x48xf32>, tensor<48x32xf32>) -> tensor<64x32xf32>
    %1 = tensordsl.softmax %0 : tensor<64x32xf32>
    %2 = tensordsl.mean %0 axis = 1 : tensor<64x32xf32> -> tensor<64xf32>
    kernel.yield %1, %2 : tensor<64x32xf32>, tensor<64xf32>
  }
  func.return %r#0, %r#1 : tensor<64x32xf32>, tensor<64xf32>
}
