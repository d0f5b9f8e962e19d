// REQUIRES: llvmlite
// RUN: tdsl-opt %s --convert-to-llvm=noalias=true -t 'llvm{triple="x86_64-unknown-linux-gnu"}' | filecheck %s
// RUN: tdsl-opt %s --convert-to-llvm | xdsl-opt -t tdsl-llvm | filecheck %s --check-prefix=XDSL
// RUN: not tdsl-opt %s -t llvm 2>&1 | filecheck %s --check-prefix=ERR

// -t llvm prints LLVM IR: noalias pointers, i64 indices, no fast-math flags (none
// are added by default), and the nan-propagating llvm.maximum intrinsic.

// CHECK:       target triple = "x86_64-unknown-linux-gnu"
// CHECK-LABEL: define void @"relu_scale"(ptr noalias %".1", ptr noalias %".2")
// CHECK:         phi i64
// CHECK:         getelementptr inbounds float, ptr %".1", i64
// CHECK:         load float, ptr
// CHECK:         call float @"llvm.maximum.f32"(float
// CHECK:         fmul float
// CHECK:         store float
// CHECK:         ret void
// CHECK:       declare float @"llvm.maximum.f32"(float {{.*}}, float {{.*}})
// CHECK-NOT:   reassoc
// CHECK-NOT:   contract
// CHECK-NOT:   nnan
// CHECK-NOT:   ninf

// XDSL: define void @"relu_scale"(ptr %".1", ptr %".2")

// ERR: error: -t llvm: 'func.func' is not in the llvm dialect
// ERR: note: run tdsl-convert-to-llvm (--convert-to-llvm) first

func.func @relu_scale(%a: memref<16xf32>, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 16 : index
  %zero = arith.constant 0.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %a[%i] : memref<16xf32>
    %r = arith.maximumf %x, %zero : f32
    %s = arith.mulf %r, %half : f32
    memref.store %s, %out[%i] : memref<16xf32>
  }
  func.return
}
