// tensordsl's canonicalization patterns run from the --canonicalize flag, and
// --cse merges what they leave behind, in the order given.

// RUN: tdsl-opt %s --canonicalize --cse | filecheck %s
// RUN: tdsl-opt %s --cse --canonicalize | filecheck %s
// RUN: tdsl-opt %s -p canonicalize | filecheck %s --check-prefix=NO-CSE

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = tensordsl.relu %a : tensor<4x8xf32>
// CHECK-NEXT:    %[[S:.*]] = tensordsl.add %[[R]], %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[P:.*]] = tensordsl.mul %[[S]], %[[S]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[P]] : tensor<4x8xf32>

// NO-CSE-LABEL: func.func @main
// NO-CSE:         tensordsl.add
// NO-CSE:         tensordsl.add
// NO-CSE:         tensordsl.mul

func.func @main(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.relu %a : tensor<4x8xf32>
  %1 = tensordsl.relu %0 : tensor<4x8xf32>
  %2 = tensordsl.add %1, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = tensordsl.add %1, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %4 = tensordsl.mul %2, %3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %4 : tensor<4x8xf32>
}
