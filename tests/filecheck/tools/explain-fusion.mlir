// --explain-fusion prints the fusion remarks on stderr, located in the input;
// the IR still goes to stdout.

// RUN: tdsl-opt %s --fuse --explain-fusion 2>&1 >/dev/null | filecheck %s
// CHECK: explain-fusion.mlir:[[# @LINE + 5]]:{{[0-9]+}}: remark:
// CHECK-NOT: error

func.func @main(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.relu %a : tensor<4x8xf32>
  %1 = tensordsl.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}
