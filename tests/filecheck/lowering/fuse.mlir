// tdsl-fuse: what fuses with what.  Each function shows one rule.
// RUN: tdsl-opt %s --fuse | filecheck %s
// RUN: tdsl-opt %s -p tdsl-fuse | filecheck %s
// RUN: xdsl-opt %s -p tdsl-fuse | filecheck %s

// Element-wise chains with broadcasting and a 0-d literal form one group; the
// literal is cloned into the group, not passed in.
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf64> {
  %c = tensordsl.constant dense<2.0> : tensor<f32>
  %0 = tensordsl.mul %a, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = tensordsl.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = tensordsl.cast %1 : tensor<4x8xf32> -> tensor<4x8xf64>
  %3 = tensordsl.tanh %2 : tensor<4x8xf64>
  func.return %3 : tensor<4x8xf64>
}
// CHECK-LABEL: func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf64> {
// CHECK-NEXT:    [[R:%.*]] = kernel.fused(%a, %b) group "g0" budget 1000000 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf64> {
// CHECK-NEXT:    ^bb0([[A:%.*]]: tensor<4x8xf32>, [[B:%.*]]: tensor<8xf32>):
// CHECK-NEXT:      [[C:%.*]] = tensordsl.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:      [[M:%.*]] = tensordsl.mul [[A]], [[C]] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT:      [[S:%.*]] = tensordsl.add [[M]], [[B]] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:      [[W:%.*]] = tensordsl.cast [[S]] : tensor<4x8xf32> -> tensor<4x8xf64>
// CHECK-NEXT:      [[T:%.*]] = tensordsl.tanh [[W]] : tensor<4x8xf64>
// CHECK-NEXT:      kernel.yield [[T]] : tensor<4x8xf64>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return [[R]] : tensor<4x8xf64>
// CHECK-NEXT:  }

// Row-normalizing ops (softmax) and reductions join the chain.
func.func @row_local(%a: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %0 = tensordsl.exp %a : tensor<4x8xf32>
  %1 = tensordsl.softmax %0 : tensor<4x8xf32>
  %2 = tensordsl.max %1 axis = -1 keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %3 = tensordsl.neg %2 : tensor<4x1xf32>
  func.return %3 : tensor<4x1xf32>
}
// CHECK-LABEL: func.func @row_local(
// CHECK-NEXT:    [[R:%.*]] = kernel.fused(%a) group "g0" budget 1000000 : (tensor<4x8xf32>) -> tensor<4x1xf32> {
// CHECK-NEXT:    ^bb0([[A:%.*]]: tensor<4x8xf32>):
// CHECK-NEXT:      [[E:%.*]] = tensordsl.exp [[A]]
// CHECK-NEXT:      [[S:%.*]] = tensordsl.softmax [[E]]
// CHECK-NEXT:      [[M:%.*]] = tensordsl.max [[S]] axis = -1 keepdims
// CHECK-NEXT:      [[N:%.*]] = tensordsl.neg [[M]]
// CHECK-NEXT:      kernel.yield [[N]] : tensor<4x1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return [[R]]

// softmax alone is one group.
func.func @softmax_alone(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.softmax %a : tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @softmax_alone(
// CHECK-NEXT:    [[R:%.*]] = kernel.fused(%a) group "g0" budget 1000000 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0([[A:%.*]]: tensor<4x8xf32>):
// CHECK-NEXT:      [[S:%.*]] = tensordsl.softmax [[A]] : tensor<4x8xf32>
// CHECK-NEXT:      kernel.yield [[S]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return [[R]]

// A matmul fuses a prologue on its left operand (even a row-normalizing one)
// and its epilogue.
func.func @matmul_prologue_epilogue(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>, %b: tensor<5xf32>) -> tensor<4x5xf32> {
  %0 = tensordsl.softmax %x : tensor<4x6xf32>
  %1 = tensordsl.matmul %0, %w : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %2 = tensordsl.add %1, %b : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %3 = tensordsl.relu %2 : tensor<4x5xf32>
  func.return %3 : tensor<4x5xf32>
}
// CHECK-LABEL: func.func @matmul_prologue_epilogue(
// CHECK-NEXT:    [[R:%.*]] = kernel.fused(%x, %w, %b) group "g0" budget 1000000
// CHECK-NEXT:    ^bb0([[X:%.*]]: tensor<4x6xf32>, [[W:%.*]]: tensor<6x5xf32>, [[B:%.*]]: tensor<5xf32>):
// CHECK-NEXT:      [[S:%.*]] = tensordsl.softmax [[X]]
// CHECK-NEXT:      [[M:%.*]] = tensordsl.matmul [[S]], [[W]]
// CHECK-NEXT:      [[A:%.*]] = tensordsl.add [[M]], [[B]]
// CHECK-NEXT:      [[Y:%.*]] = tensordsl.relu [[A]]
// CHECK-NEXT:      kernel.yield [[Y]] : tensor<4x5xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return [[R]]

// A value used outside its group is a result of the group (several results,
// in program order): exp(a) is returned, and everything that reads it (a row
// sum, a transposed view, a column mean) runs in the same group.
func.func @multi_result(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>, tensor<8xf32>) {
  %0 = tensordsl.exp %a : tensor<4x8xf32>
  %1 = tensordsl.sum %0 axis = 1 : tensor<4x8xf32> -> tensor<4xf32>
  %2 = tensordsl.transpose %0 : tensor<4x8xf32> -> tensor<8x4xf32>
  %3 = tensordsl.mean %0 axis = 0 : tensor<4x8xf32> -> tensor<8xf32>
  %4 = tensordsl.mul %2, %1 : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  func.return %0, %4, %3 : tensor<4x8xf32>, tensor<8x4xf32>, tensor<8xf32>
}
// CHECK-LABEL: func.func @multi_result(
// CHECK-NEXT:    [[E:%.*]], [[M:%.*]], [[P:%.*]] = kernel.fused(%a) group "g0" budget 1000000 : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8x4xf32>) {
// CHECK-NEXT:    ^bb0([[A:%.*]]: tensor<4x8xf32>):
// CHECK-NEXT:      [[E1:%.*]] = tensordsl.exp [[A]]
// CHECK-NEXT:      [[S1:%.*]] = tensordsl.sum [[E1]] axis = 1
// CHECK-NEXT:      [[T1:%.*]] = tensordsl.transpose [[E1]]
// CHECK-NEXT:      [[M1:%.*]] = tensordsl.mean [[E1]] axis = 0
// CHECK-NEXT:      [[P1:%.*]] = tensordsl.mul [[T1]], [[S1]]
// CHECK-NEXT:      kernel.yield [[E1]], [[M1]], [[P1]] : tensor<4x8xf32>, tensor<8xf32>, tensor<8x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return [[E]], [[P]], [[M]] : tensor<4x8xf32>, tensor<8x4xf32>, tensor<8xf32>

// A function argument returned as it is needs no group; a dead op is erased.
func.func @pass_through(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tensordsl.exp %a : tensor<4xf32>
  func.return %a : tensor<4xf32>
}
// CHECK-LABEL: func.func @pass_through(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    func.return %a : tensor<4xf32>
// CHECK-NEXT:  }
