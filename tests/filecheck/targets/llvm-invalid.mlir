// IR that xDSL parses and verifies but cannot become LLVM IR: each is one error at
// the op, not an exception of xDSL's converter or llvmlite's IR builder.
// RUN: not tdsl-opt %s --split-input-file -t llvm 2>&1 | filecheck %s
// CHECK-NOT: conversion failed
// CHECK-NOT: internal error

llvm.func @f() {
}
llvm.return
// CHECK: llvm-invalid.mlir:[[# @LINE - 1]]:1: error: -t llvm: 'llvm.return' stands at the module's top level, which holds only 'llvm.func' and 'llvm.mlir.global' ops

// -----

llvm.func @g(%a: i64) {
  llvm.return
}
llvm.func @f(%x: f16) {
  llvm.call @g(%x) : (f16) -> ()
  llvm.return
}
// CHECK: llvm-invalid.mlir:[[# @LINE - 3]]:3: error: -t llvm: 'llvm.call' passes (f16) to @g, which takes (i64)

// -----

llvm.func @h() -> i64 {
  %0 = llvm.mlir.constant(0 : i64) : i64
  llvm.return %0 : i64
}
llvm.func @f() {
  %r = llvm.call @h() : () -> f32
  llvm.return
}
// CHECK: llvm-invalid.mlir:[[# @LINE - 3]]:8: error: -t llvm: 'llvm.call' expects (f32) from @h, which returns (i64)

// An index constant beyond 64 bits parses (xDSL bounds no index), and its
// conversion to llvm is an error at the constant.
// RUN: not tdsl-opt %S/Inputs/huge-index.mlir -p tdsl-convert-to-llvm 2>&1 | filecheck %s --check-prefix=INDEX
// INDEX-NOT: in pass
// INDEX: huge-index.mlir:2:8: error: tdsl-convert-to-llvm: the constant 18446744073709551616 does not fit in 64 bits (an index is 64 bits in LLVM: a value in [-2**63, 2**64))

// The generic form of an llvm.func with LLVM function attributes prints back the
// same: `passthrough` is a property whether the custom or the generic form was read.
// RUN: tdsl-opt %S/Inputs/passthrough.mlir --print-op-generic > %t.generic.mlir
// RUN: tdsl-opt %t.generic.mlir --print-op-generic | diff %t.generic.mlir -
// RUN: tdsl-opt %S/Inputs/passthrough.mlir > %t.custom.mlir
// RUN: tdsl-opt %t.custom.mlir | diff %t.custom.mlir -
// RUN: filecheck %s --check-prefix=GENERIC < %t.generic.mlir
// GENERIC: "llvm.func"() <{{{.*}}passthrough = ["noinline"]
// GENERIC-NOT: {passthrough
