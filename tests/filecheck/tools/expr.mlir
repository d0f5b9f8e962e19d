// --expr compiles a one-line expression, typed by --shape; pass flags apply.

// RUN: tdsl-opt --expr 'relu(A)+B' --shape A=4x4xf32 --shape B=4xf32 | filecheck %s
// CHECK-LABEL: func.func @main(%A: tensor<4x4xf32>, %B: tensor<4xf32>) -> tensor<4x4xf32> {
// CHECK-NEXT:    %[[R:.*]] = tensordsl.relu %A : tensor<4x4xf32>
// CHECK-NEXT:    %[[S:.*]] = tensordsl.add %[[R]], %B : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    func.return %[[S]] : tensor<4x4xf32>

// RUN: tdsl-opt --expr 'relu(A)+B' --shape A=4x4xf32 --shape B=4xf32 --fuse | filecheck %s --check-prefix=FUSED
// FUSED: kernel.fused(%A, %B)

// RUN: not tdsl-opt --expr 'relu(A)+C' --shape A=4x4xf32 2>&1 | filecheck %s --check-prefix=NAME
// NAME:      <expr>:1:9: error: {{.*}}`C`
// NAME-NEXT: {{^}}relu(A)+C{{$}}
// NAME-NEXT: {{^}}        ^{{$}}

// RUN: not tdsl-opt --expr 'relu(A)' 2>&1 | filecheck %s --check-prefix=SHAPE
// SHAPE: <expr>:1:6: error: {{.*}}`A`

// RUN: not tdsl-opt %s --expr 'A' --shape A=2xf32 2>&1 | filecheck %s --check-prefix=BOTH
// BOTH: error: give either an input file or --expr, not both

// RUN: not tdsl-opt %s --shape A=2xf32 2>&1 | filecheck %s --check-prefix=STRAY
// STRAY: error: --shape is only meaningful together with --expr
