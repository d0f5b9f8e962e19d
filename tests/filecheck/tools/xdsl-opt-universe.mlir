// Plain xdsl-opt loads tensordsl through the `xdsl.universe` entry point: it
// parses, verifies and canonicalizes tensordsl IR, lists tdsl's passes and the
// numpy target, and reads the round trip through tdsl-opt.

// RUN: xdsl-opt %s | filecheck %s
// RUN: xdsl-opt %s -p canonicalize | filecheck %s --check-prefix=CANON
// RUN: xdsl-opt %s --print-op-generic | tdsl-opt | filecheck %s
// RUN: env COLUMNS=100000 xdsl-opt --help | filecheck %s --check-prefix=HELP

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %0 = tensordsl.relu %a : tensor<4xf32>
// CHECK-NEXT:    %1 = tensordsl.relu %0 : tensor<4xf32>
// CHECK-NEXT:    func.return %1 : tensor<4xf32>

// CANON-LABEL: func.func @main
// CANON-NEXT:    %0 = tensordsl.relu %a : tensor<4xf32>
// CANON-NEXT:    func.return %0 : tensor<4xf32>

// HELP: Available targets are:{{.*}}numpy
// HELP: Available passes are:{{.*}}tdsl-fuse
// HELP-SAME: tdsl-tile

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tensordsl.relu %a : tensor<4xf32>
  %1 = tensordsl.relu %0 : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
