// RUN: tdsl-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: tdsl-opt %s --split-input-file --verify-expected-errors

// The operands and the result of a tdslmath op share one float type.
// The CHECK lines check each message whole; the expected-error annotations check
// the line each error points at (--verify-expected-errors).

%a, %d = "test.op"() : () -> (f32, f64)
// expected-error@+1 {{'tdslmath.remf' op operand 'rhs' at position 1 does not verify:}}
%0 = "tdslmath.remf"(%a, %d) : (f32, f64) -> f32
// CHECK: attribute f32 expected from variable 'T', but got f64

// -----

%i = "test.op"() : () -> i32
// expected-error@+1 {{'tdslmath.hypot' op operand 'lhs' at position 0 does not verify:}}
%0 = "tdslmath.hypot"(%i, %i) : (i32, i32) -> i32
// CHECK: operand 'lhs' at position 0 does not verify:
// CHECK-NEXT: Unexpected attribute i32
