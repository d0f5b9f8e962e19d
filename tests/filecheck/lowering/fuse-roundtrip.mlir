// Fused IR prints, parses back (custom and generic form), verifies, and fusing
// it again changes nothing.
// RUN: tdsl-opt %s --fuse | filecheck %s
// RUN: tdsl-opt %s --fuse | tdsl-opt --print-op-generic | tdsl-opt | filecheck %s
// RUN: tdsl-opt %s --fuse | tdsl-opt --fuse | filecheck %s
// RUN: tdsl-opt %s --fuse --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @main(%A: tensor<8x16xf32>, %B: tensor<16x8xf32>, %C: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8xf32>) {
  %0 = tensordsl.relu %B : tensor<16x8xf32>
  %1 = tensordsl.matmul %A, %0 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %2 = tensordsl.softmax %C : tensor<8x8xf32>
  %3 = tensordsl.add %1, %2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %4 = tensordsl.mean %3 axis = 1 : tensor<8x8xf32> -> tensor<8xf32>
  func.return %3, %4 : tensor<8x8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @main(%A: tensor<8x16xf32>, %B: tensor<16x8xf32>, %C: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8xf32>) {
// CHECK-NEXT:    [[R:%.*]] = kernel.fused(%B) group "g0" budget 1000000 scratch 999872 : (tensor<16x8xf32>) -> tensor<16x8xf32> {
// CHECK-NEXT:    ^bb0([[B:%.*]]: tensor<16x8xf32>):
// CHECK-NEXT:      [[RB:%.*]] = tensordsl.relu [[B]] : tensor<16x8xf32>
// CHECK-NEXT:      kernel.yield [[RB]] : tensor<16x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    [[Y:%.*]], [[M:%.*]] = kernel.fused(%A, [[R]], %C) group "g1" budget 1000000 scratch 999872 : (tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8xf32>) {
// CHECK-NEXT:    ^bb0([[A:%.*]]: tensor<8x16xf32>, [[W:%.*]]: tensor<16x8xf32>, [[C:%.*]]: tensor<8x8xf32>):
// CHECK-NEXT:      [[MM:%.*]] = tensordsl.matmul [[A]], [[W]] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:      [[S:%.*]] = tensordsl.softmax [[C]] : tensor<8x8xf32>
// CHECK-NEXT:      [[Z:%.*]] = tensordsl.add [[MM]], [[S]] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:      [[MEAN:%.*]] = tensordsl.mean [[Z]] axis = 1 : tensor<8x8xf32> -> tensor<8xf32>
// CHECK-NEXT:      kernel.yield [[Z]], [[MEAN]] : tensor<8x8xf32>, tensor<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return [[Y]], [[M]] : tensor<8x8xf32>, tensor<8xf32>
// CHECK-NEXT:  }

// GENERIC:      "kernel.fused"(%B) <{group = "g0", budget = 1000000 : i64, scratch = 999872 : i64}> ({
// GENERIC:      "kernel.fused"(%A, %{{.*}}, %C) <{group = "g1", budget = 1000000 : i64, scratch = 999872 : i64}> ({
// GENERIC:        "kernel.yield"(%{{.*}}, %{{.*}}) : (tensor<8x8xf32>, tensor<8xf32>) -> ()
