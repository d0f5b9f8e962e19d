// tdsl-run interprets a function at any stage; fusing and tiling first must
// not change the results.

// RUN: tdsl-run %s --args 'dense<[[1.0, -2.0], [-3.0, 4.0]]> : tensor<2x2xf32>, dense<[0.5, 1.0]> : tensor<2xf32>' \
// RUN:   | filecheck %s
// RUN: tdsl-run %s --fuse --tile=memory-budget=2 \
// RUN:   --args 'dense<[[1.0, -2.0], [-3.0, 4.0]]> : tensor<2x2xf32>, dense<[0.5, 1.0]> : tensor<2xf32>' \
// RUN:   | filecheck %s
// CHECK:      result #0: tensor<2x2xf32>
// CHECK-NEXT: {{^\[\[}}1.5 1. ]{{$}}
// CHECK-NEXT: {{^}} [0.5 5. ]]{{$}}

// RUN: tdsl-run %s --random-args 0 --print-args | filecheck %s --check-prefix=RANDOM
// RANDOM:      arg #0: tensor<2x2xf32>
// RANDOM:      arg #1: tensor<2xf32>
// RANDOM:      result #0: tensor<2x2xf32>

// RUN: not tdsl-run %s --args 'dense<1.0> : tensor<2x2xf32>, dense<1.0> : tensor<3xf32>' 2>&1 \
// RUN:   | filecheck %s --check-prefix=TYPE
// TYPE:      args:1:31: error: argument #1 of @main has type tensor<2xf32>, not tensor<3xf32>
// TYPE-NEXT: {{^}}dense<1.0> : tensor<2x2xf32>, dense<1.0> : tensor<3xf32>{{$}}
// TYPE-NEXT: {{^}}                              ^^^^^^^^^^^^^^^^^^^^^^^^^^{{$}}

// A float beyond its type (xDSL packs it unchecked: an internal error), located in the
// arguments, with how to write infinity instead (which runs).
// RUN: not tdsl-run %s --args 'dense<1.0> : tensor<2x2xf32>, dense<[1.0e50, 1.0]> : tensor<2xf32>' 2>&1 \
// RUN:   | filecheck %s --check-prefix=HUGE
// HUGE-NOT:  Traceback
// HUGE:      args:1:31: error: a float is out of range for its type ({{.*}}): f16 holds up to 65504, f32 up to about 3.4e38 (write infinity as its bytes: dense<"0x007C"> in f16, dense<"0x0000807F"> in f32)
// HUGE-NEXT: {{^}}dense<1.0> : tensor<2x2xf32>, dense<[1.0e50, 1.0]> : tensor<2xf32>{{$}}
// RUN: tdsl-run %s --args 'dense<1.0> : tensor<2x2xf32>, dense<"0x0000807F0000803F"> : tensor<2xf32>' \
// RUN:   | filecheck %s --check-prefix=INF
// INF:      result #0: tensor<2x2xf32>
// INF-NEXT: {{\[\[}}inf  2.]

// An op the interpreter has no function for: named and located (it was xDSL's
// interpreter error, with no location).
// RUN: not tdsl-run %S/Inputs/arith-only.mlir 2>&1 | filecheck %s --check-prefix=NO-INTERP
// NO-INTERP:      arith-only.mlir:2:8: error: the interpreter cannot run 'arith.constant': it runs the tensordsl, kernel and func ops
// NO-INTERP-NEXT: {{^}}  %0 = arith.constant 1 : index{{$}}

// An index out of bounds at run time: NumPy's words, at the gather in the source.
// RUN: not tdsl-run %S/Inputs/take-out-of-bounds.tdsl --args 'dense<1.0> : tensor<4xf32>, dense<7> : tensor<3xi64>' 2>&1 \
// RUN:   | filecheck %s --check-prefix=TAKE
// TAKE:      take-out-of-bounds.tdsl:2:13: error: index 7 is out of bounds for axis 0 with size 4
// TAKE-NEXT: {{^}}    return A[B] * 2{{$}}

// RUN: not tdsl-run %s --symbol nope 2>&1 | filecheck %s --check-prefix=SYMBOL
// RUN: not tdsl-run %s --symbol @nope 2>&1 | filecheck %s --check-prefix=SYMBOL
// RUN: tdsl-run %s --symbol @main --random-args 0 --print-args | filecheck %s --check-prefix=RANDOM
// SYMBOL: error: no function @nope in the module (it defines @main)

func.func @main(%a: tensor<2x2xf32>, %b: tensor<2xf32>) -> tensor<2x2xf32> {
  %0 = tensordsl.relu %a : tensor<2x2xf32>
  %1 = tensordsl.add %0, %b : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  func.return %1 : tensor<2x2xf32>
}
