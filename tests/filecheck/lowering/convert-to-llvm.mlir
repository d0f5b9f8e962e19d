// RUN: tdsl-opt %s --convert-to-llvm=noalias=true | filecheck %s
// The output prints, parses back and prints the same, in custom and generic form:
// RUN: tdsl-opt %s --convert-to-llvm > %t.mlir
// RUN: tdsl-opt %t.mlir | diff %t.mlir -
// RUN: tdsl-opt %t.mlir --print-op-generic | tdsl-opt | diff %t.mlir -

// A memref argument is one pointer to its element 0 (noalias on request); index
// becomes i64; a strided memref is addressed with its strides, its offset being
// already applied by the caller.

// CHECK-LABEL: llvm.func @relu_add(%a: !llvm.ptr {llvm.noalias}, %b: !llvm.ptr {llvm.noalias}, %out: !llvm.ptr {llvm.noalias}) {
// CHECK:         %[[ZERO:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK:       ^bb4:
// CHECK-NEXT:    %[[ROW:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[IOFF:.*]] = llvm.mul %i, %[[ROW]] : i64
// CHECK-NEXT:    %[[OFF:.*]] = llvm.add %[[IOFF]], %j : i64
// CHECK-NEXT:    %[[PA:.*]] = llvm.getelementptr inbounds %a[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %x = llvm.load %[[PA]] : !llvm.ptr -> f32
// CHECK-NEXT:    %[[STRIDE:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[BOFF:.*]] = llvm.mul %j, %[[STRIDE]] : i64
// CHECK-NEXT:    %[[PB:.*]] = llvm.getelementptr inbounds %b[%[[BOFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %y = llvm.load %[[PB]] : !llvm.ptr -> f32
// maximumf propagates nan: llvm.maximum, not maxnum
// CHECK-NEXT:    %r = llvm.call_intrinsic "llvm.maximum.f32"(%x, %[[ZERO]]) : (f32, f32) -> f32
// No fast-math flags are added: NumPy's rounding, overflow and nan.
// CHECK-NEXT:    %s = llvm.fadd %r, %y : f32
// CHECK:         llvm.store %s, %{{.*}} : f32, !llvm.ptr
// CHECK:         llvm.return
func.func @relu_add(%a: memref<4x8xf32>, %b: memref<8xf32, strided<[2], offset: 1>>, %out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %j] : memref<4x8xf32>
      %y = memref.load %b[%j] : memref<8xf32, strided<[2], offset: 1>>
      %r = arith.maximumf %x, %zero : f32
      %s = arith.addf %r, %y : f32
      memref.store %s, %out[%i, %j] : memref<4x8xf32>
    }
  }
  func.return
}

// The loop-carried accumulator becomes a block argument of the loop header; the
// reassoc flag tdsl-lower-to-loops puts on a sum's accumulator is kept.

// CHECK-LABEL: llvm.func @row_sum(
// CHECK:         llvm.br ^bb3(%{{.*}}, %init : i64, f64)
// CHECK-NEXT:  ^bb3(%{{.*}}: i64, %acc: f64):
// CHECK:         %n = llvm.fadd %acc, %v {fastmathFlags = #llvm.fastmath<reassoc>} : f64
// CHECK:         llvm.br ^bb3(%{{.*}}, %n : i64, f64)
// CHECK:       ^bb5:
// CHECK:         llvm.store %acc, %{{.*}} : f64, !llvm.ptr
func.func @row_sum(%a: memref<4x8xf64>, %out: memref<4xf64>) {
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

// f16 is computed in f32; a libm function is declared and called; a nan it makes
// of a number is -nan (NumPy's).

// CHECK-LABEL: llvm.func @half_tan(
// CHECK:         %[[H:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f16
// CHECK-NEXT:    %[[W:.*]] = llvm.fpext %[[H]] : f16 to f32
// CHECK-NEXT:    %[[T:.*]] = llvm.call @tanf(%[[W]]) : (f32) -> f32
// CHECK-NEXT:    %[[NAN:.*]] = llvm.fcmp "uno" %[[T]], %[[T]] : f32
// CHECK-NEXT:    %[[NUM:.*]] = llvm.fcmp "ord" %[[W]], %[[W]] : f32
// CHECK-NEXT:    %[[MADE:.*]] = llvm.and %[[NAN]], %[[NUM]] : i1
// CHECK-NEXT:    %[[NEG:.*]] = llvm.mlir.constant(0xffc00000 : f32) : f32
// CHECK-NEXT:    %[[R:.*]] = llvm.select %[[MADE]], %[[NEG]], %[[T]] : i1, f32
// CHECK-NEXT:    %t = llvm.fptrunc %[[R]] : f32 to f16
// CHECK:         llvm.store %t, %{{.*}} : f16, !llvm.ptr
// CHECK:       llvm.func @tanf(f32) -> f32
func.func @half_tan(%a: memref<4xf16>, %out: memref<4xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %a[%i] : memref<4xf16>
    %t = math.tan %x : f16
    memref.store %t, %out[%i] : memref<4xf16>
  }
  func.return
}
