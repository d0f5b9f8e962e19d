// RUN: tdsl-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The operands and the result of a tdslmath op share one float type.

%a, %d = "test.op"() : () -> (f32, f64)
%0 = "tdslmath.remf"(%a, %d) : (f32, f64) -> f32
// CHECK: attribute f32 expected from variable 'T', but got f64

// -----

%i = "test.op"() : () -> i32
%0 = "tdslmath.hypot"(%i, %i) : (i32, i32) -> i32
// CHECK: operand 'lhs' at position 0 does not verify:
// CHECK-NEXT: Unexpected attribute i32
