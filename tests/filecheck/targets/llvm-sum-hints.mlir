// REQUIRES: llvmlite
// RUN: tdsl-opt %s --convert-to-llvm=noalias=true -t 'llvm{triple="x86_64-unknown-linux-gnu"}' | filecheck %s

// The reassoc flag tdsl-lower-to-loops puts on a sum's accumulator update (and on
// nothing else) becomes its loop's llvm.loop.vectorize.enable hint in LLVM IR: the
// loop vectorizer may reorder the loop's sum, and InstCombine, seeing no flag, keeps
// the sum's terms in NumPy's order.

// An accumulator in memory (the output row), loaded and stored back in the loop.
// CHECK-LABEL: define void @"memory_sum"(
// CHECK:         %[[P:.*]] = fmul float
// CHECK:         %[[T:.*]] = fmul float %[[P]], %{{.*}}
// CHECK:         fadd float %{{.*}}, %[[T]]
// CHECK:         br label %{{.*}}, !llvm.loop ![[L1:[0-9]+]]
// CHECK:         ret void
func.func @memory_sum(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %zero, %out[%i] : memref<4xf32>
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %j] : memref<4x8xf32>
      %y = memref.load %b[%i, %j] : memref<4x8xf32>
      %p = arith.mulf %x, %y : f32
      %m = arith.negf %y : f32
      %t = arith.mulf %p, %m : f32
      %acc = memref.load %out[%i] : memref<4xf32>
      %n = arith.addf %acc, %t fastmath<reassoc> : f32
      memref.store %n, %out[%i] : memref<4xf32>
    }
  }
  func.return
}

// An accumulator carried by the loop (a phi of its header).
// CHECK-LABEL: define void @"carried_sum"(
// CHECK:         fadd double
// CHECK:         br label %{{.*}}, !llvm.loop ![[L2:[0-9]+]]
// CHECK:         ret void
func.func @carried_sum(%a: memref<4x8xf64>, %out: memref<4xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %init = arith.constant 0.000000e+00 : f64
  scf.for %i = %c0 to %c4 step %c1 {
    %sum = scf.for %j = %c0 to %c8 step %c1 iter_args(%acc = %init) -> (f64) {
      %v = memref.load %a[%i, %j] : memref<4x8xf64>
      %n = arith.addf %acc, %v fastmath<reassoc> : f64
      scf.yield %n : f64
    }
    memref.store %sum, %out[%i] : memref<4xf64>
  }
  func.return
}

// A product in the same loop keeps its order, so the loop gets no hint, and the
// sum adds in order too.
// CHECK-LABEL: define void @"sum_and_product"(
// CHECK:         fadd float
// CHECK:         fmul float
// CHECK-NOT:     !llvm.loop
// CHECK:         ret void
func.func @sum_and_product(%a: memref<8xf32>, %out: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  memref.store %zero, %out[%c0] : memref<2xf32>
  memref.store %one, %out[%c1] : memref<2xf32>
  scf.for %j = %c0 to %c8 step %c1 {
    %v = memref.load %a[%j] : memref<8xf32>
    %s = memref.load %out[%c0] : memref<2xf32>
    %n = arith.addf %s, %v fastmath<reassoc> : f32
    memref.store %n, %out[%c0] : memref<2xf32>
    %p = memref.load %out[%c1] : memref<2xf32>
    %q = arith.mulf %p, %v : f32
    memref.store %q, %out[%c1] : memref<2xf32>
  }
  func.return
}

// Each hinted loop has its own distinct, self-referencing loop ID.
// CHECK-NOT:   reassoc
// CHECK:       ![[H:[0-9]+]] = !{ !"llvm.loop.vectorize.enable", i1 1 }
// CHECK-DAG:   ![[L1]] = distinct !{ ![[L1]], ![[H]] }
// CHECK-DAG:   ![[L2]] = distinct !{ ![[L2]], ![[H]] }
