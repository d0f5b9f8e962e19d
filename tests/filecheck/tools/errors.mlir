// Bad input of every kind: one clean `error:` message, exit status 1 (`not`),
// never a Python traceback.  The exact exit codes are checked in
// tests/unit/tools/test_tdsl_opt.py.

// RUN: not tdsl-opt %S/Inputs/syntax-error.mlir 2>&1 | filecheck %s --check-prefix=SYNTAX
// SYNTAX-NOT: Traceback
// SYNTAX:      syntax-error.mlir:2:26: error: Expected ':'
// SYNTAX-NEXT: {{^}}  %0 = tensordsl.relu %a tensor<4xf32>{{$}}
// SYNTAX-NEXT: {{^}}                         ^^^^^^{{$}}

// RUN: not tdsl-opt %S/Inputs/unknown-op.mlir 2>&1 | filecheck %s --check-prefix=UNKNOWN-OP
// UNKNOWN-OP-NOT: Traceback
// UNKNOWN-OP:      unknown-op.mlir:2:8: error: Operation tensordsl.frobnicate is not registered
// UNKNOWN-OP-NEXT: {{^}}  %0 = tensordsl.frobnicate %a : tensor<4xf32>{{$}}
// UNKNOWN-OP-NEXT: {{^}}       ^^^^^^^^^^^^^^^^^^^^{{$}}

// An integer beyond its type's width: located at the number (xDSL packed it unchecked:
// an internal error; then located at the token after it), and a tensor extent beyond
// int64 (it parsed, and the passes failed with an internal error).
// RUN: not tdsl-opt %S/Inputs/huge-integer.mlir 2>&1 | filecheck %s --check-prefix=HUGE-INT
// HUGE-INT-NOT: Traceback
// HUGE-INT:      huge-integer.mlir:2:91: error: an integer is out of range for its type ({{.*}}): i32 holds up to 2147483647, i64 up to 9223372036854775807
// HUGE-INT-NEXT: tiles [99999999999999999999, 8]
// HUGE-INT-NEXT: {{^}}                                                                                          ^^^^^^^^^^^^^^^^^^^^{{$}}
// RUN: not tdsl-opt %S/Inputs/huge-float.mlir 2>&1 | filecheck %s --check-prefix=HUGE-FLOAT
// HUGE-FLOAT-NOT: Traceback
// HUGE-FLOAT:      huge-float.mlir:2:33: error: a float is out of range for its type ({{.*}}): f16 holds up to 65504, f32 up to about 3.4e38
// HUGE-FLOAT-NEXT: {{^}}  %c = tensordsl.constant dense<1.0e39> : tensor<f32>{{$}}
// HUGE-FLOAT-NEXT: {{^}}                                ^^^^^^{{$}}
// RUN: not tdsl-opt %S/Inputs/huge-extent.mlir --fuse --tile 2>&1 | filecheck %s --check-prefix=HUGE-DIM
// HUGE-DIM-NOT: Traceback
// HUGE-DIM:      huge-extent.mlir:2:8: error: 'tensordsl.relu' op has a tensor of type tensor<99999999999999999999xf32>: an extent beyond int64
// HUGE-DIM-NEXT: {{^}}  %0 = tensordsl.relu %a : tensor<99999999999999999999xf32>{{$}}

// xDSL's parsers and verifiers that raise plain exceptions (a dense value of an i65,
// which xDSL cannot pack; memref.load's verifier for a wrong index count): located
// errors, not internal ones.
// RUN: not tdsl-opt %S/Inputs/odd-width-constant.mlir 2>&1 | filecheck %s --check-prefix=ODD-WIDTH
// ODD-WIDTH-NOT: internal error
// ODD-WIDTH:      odd-width-constant.mlir:2:9: error: 'tensordsl.constant' cannot be parsed: Format not implemented for i65
// ODD-WIDTH-NEXT: {{^}}  %1 = "tensordsl.constant"() <{value = dense<1> : tensor<i65>}> : () -> tensor<i64>{{$}}
// RUN: not tdsl-opt %S/Inputs/load-index-count.mlir --convert-to-llvm 2>&1 | filecheck %s --check-prefix=LOAD-INDEX
// LOAD-INDEX-NOT: internal error
// LOAD-INDEX:      load-index-count.mlir:3:8: error: 'memref.load' op expected an index for each dimension
// LOAD-INDEX-NEXT: {{^}}  %v = memref.load %a[%c0, %c0] : memref<3xi64>{{$}}

// An error of xDSL's type constraints is one line, the source line and its caret; the
// line xDSL adds ("Underlying verification failure") follows as a note.
// RUN: not tdsl-opt %S/Inputs/constraint-error.mlir 2>&1 | filecheck %s --check-prefix=CONSTRAINT
// CONSTRAINT:      constraint-error.mlir:2:8: error: 'tensordsl.relu' op tensordsl computes numbers as f16, f32, f64, i32, i64, ui8 or ui64
// CONSTRAINT-NEXT: {{^}}  %0 = tensordsl.relu %a : tensor<4xi1>{{$}}
// CONSTRAINT-NEXT: {{^}}       ^^^^^^^^^^^^^^{{$}}
// CONSTRAINT-NEXT: note: Underlying verification failure: Expected one of i32, i64, ui64, ui8, but got i1

// An enum property out of its range (arith.cmpf's predicate 99), which xDSL's verifier
// accepts and its printer and the LLVM conversion fail on: located at the op.
// RUN: not tdsl-opt %S/Inputs/enum-out-of-range.mlir 2>&1 | filecheck %s --check-prefix=ENUM
// RUN: not tdsl-opt %S/Inputs/enum-out-of-range.mlir --convert-to-llvm 2>&1 | filecheck %s --check-prefix=ENUM
// ENUM-NOT:   internal error
// ENUM:      enum-out-of-range.mlir:2:9: error: 'arith.cmpf' has a property out of its range (its printer fails: IndexError: list index out of range)

// The same in an llvm.func printed by -t llvm (llvm.fcmp's predicate 64), where xDSL's
// conversion to LLVM IR fails on it.
// RUN: not tdsl-opt %S/Inputs/llvm-enum-out-of-range.mlir -t llvm 2>&1 | filecheck %s --check-prefix=LLVM-ENUM
// LLVM-ENUM-NOT: conversion failed
// LLVM-ENUM:     llvm-enum-out-of-range.mlir:2:9: error: -t llvm: 'llvm.fcmp' has a property out of its range (its printer fails: IndexError: tuple index out of range)
// LLVM-ENUM-NEXT: {{^}}  %c = "llvm.fcmp"

// RUN: not tdsl-opt %S/Inputs/does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING-NOT: Traceback
// MISSING: error: cannot read '{{.*}}does-not-exist.mlir': No such file or directory

// RUN: not tdsl-opt %S/Inputs 2>&1 | filecheck %s --check-prefix=DIRECTORY
// DIRECTORY-NOT: Traceback
// DIRECTORY: error: cannot read '{{.*}}Inputs': Is a directory

// RUN: not tdsl-opt %S/Inputs/empty.mlir 2>&1 | filecheck %s --check-prefix=EMPTY
// EMPTY-NOT: Traceback
// EMPTY: empty.mlir:1:1: error: the input is empty

// RUN: printf 'func.func @f() {\n\377\376\n}\n' > %t.binary.mlir
// RUN: not tdsl-opt %t.binary.mlir 2>&1 | filecheck %s --check-prefix=BINARY
// BINARY-NOT: Traceback
// BINARY: binary.mlir:2:1: error: not a text file (invalid UTF-8 byte 0xff)

// A string left open: at its quote, at once (xDSL's lexer took minutes on such a line).
// RUN: printf 'func.func @f() {\n  "test.op"() {note = "open string left here and on and on} : () -> ()\n}\n' > %t.open.mlir
// RUN: not tdsl-opt %t.open.mlir 2>&1 | filecheck %s --check-prefix=OPEN
// OPEN-NOT: Traceback
// OPEN: open.mlir:2:23: error: this string does not end on its line: close it with `"`

// RUN: not tdsl-opt %S/Inputs/not-ir.txt 2>&1 | filecheck %s --check-prefix=EXTENSION
// EXTENSION-NOT: Traceback
// EXTENSION: error: {{.*}}not-ir.txt: unknown file extension '.txt' (known: {{.*}}.mlir{{.*}}); choose a frontend with -f

// RUN: not tdsl-opt %s -p canonicalise 2>&1 | filecheck %s --check-prefix=UNKNOWN-PASS
// UNKNOWN-PASS-NOT: Traceback
// UNKNOWN-PASS:      error: unknown pass 'canonicalise'; did you mean 'canonicalize'?
// UNKNOWN-PASS-NEXT: note: `tdsl-opt --help` lists the available passes

// RUN: not tdsl-opt %s --fsue 2>&1 | filecheck %s --check-prefix=UNKNOWN-FLAG
// UNKNOWN-FLAG-NOT: Traceback
// UNKNOWN-FLAG: error: unknown option '--fsue'; did you mean '--fuse'?

// RUN: not tdsl-opt %s --canonicalize=bogus=1 2>&1 | filecheck %s --check-prefix=BAD-OPTION
// BAD-OPTION-NOT: Traceback
// BAD-OPTION: error: pass 'canonicalize' has no option 'bogus'
// BAD-OPTION-NEXT: note: the options of 'canonicalize' are: {{.*}}

// RUN: not tdsl-opt %s -t 'numpy{threads=abc}' 2>&1 | filecheck %s --check-prefix=TARGET-OPTION
// TARGET-OPTION-NOT: internal error
// TARGET-OPTION: error: option 'threads' of target 'numpy' takes an integer, not `abc`

// RUN: not tdsl-opt %s -t 'numpy{thread=2}' 2>&1 | filecheck %s --check-prefix=TARGET-NEAR
// TARGET-NEAR: error: target 'numpy' has no option 'thread'; did you mean 'threads'?

// RUN: not tdsl-opt %s --fuse=memory-budgit=8 2>&1 | filecheck %s --check-prefix=NEAR-OPTION
// NEAR-OPTION: error: pass 'tdsl-fuse' has no option 'memory-budgit'; did you mean 'memory-budget'?
// NEAR-OPTION-NEXT: note: the options of 'tdsl-fuse' are: memory-budget

// RUN: not tdsl-opt %s -p 'canonicalize{' 2>&1 | filecheck %s --check-prefix=BAD-SPEC
// BAD-SPEC-NOT: Traceback
// BAD-SPEC:      pass-pipeline:1:14: error: Expected argument name here
// BAD-SPEC-NEXT: {{^}}canonicalize{{[{]$}}
// BAD-SPEC-NEXT: {{^}}             ^{{$}}

// RUN: not tdsl-opt %s -o %t.no-such-dir/out.mlir 2>&1 | filecheck %s --check-prefix=OUTPUT
// OUTPUT-NOT: Traceback
// OUTPUT: error: cannot write '{{.*}}out.mlir': No such file or directory

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
