// RUN: tdsl-opt %s | tdsl-opt | filecheck %s
// RUN: %roundtrip-and-generic
// RUN: tdsl-opt %s --fuse --tile -p tdsl-lower-to-loops | filecheck %s --check-prefix=LOOPS
// RUN: tdsl-opt %s --fuse --tile -p tdsl-lower-to-loops,tdsl-convert-to-llvm | filecheck %s --check-prefix=LLVM

// Integers (i32, i64, ui8, ui64) computed exactly: the ops that take them, and the bodies
// that never trap where NumPy gives a result (x // 0 is 0, MIN // -1 is MIN).

func.func @arith(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %0 = tensordsl.add %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %1 = tensordsl.floor_divide %0, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %2 = tensordsl.remainder %1, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %3 = tensordsl.left_shift %2, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %4 = tensordsl.right_shift %3, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %5 = tensordsl.bitwise_and %4, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %6 = tensordsl.bitwise_or %5, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %7 = tensordsl.bitwise_xor %6, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %8 = tensordsl.invert %7 : tensor<4xi64>
  func.return %8 : tensor<4xi64>
}

// CHECK-LABEL: func.func @arith(
// CHECK-NEXT: %0 = tensordsl.add %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT: %1 = tensordsl.floor_divide %0, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT: %2 = tensordsl.remainder %1, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT: %3 = tensordsl.left_shift %2, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT: %4 = tensordsl.right_shift %3, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT: %5 = tensordsl.bitwise_and %4, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT: %6 = tensordsl.bitwise_or %5, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT: %7 = tensordsl.bitwise_xor %6, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT: %8 = tensordsl.invert %7 : tensor<4xi64>
// CHECK-GENERIC: "tensordsl.floor_divide"(%{{.*}}, %{{.*}}) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-GENERIC: "tensordsl.invert"(%{{.*}}) : (tensor<4xi64>) -> tensor<4xi64>

// One fused loop.  The divisor of `//` and `%` is 1 where it is 0 or where the
// dividend is MIN and the divisor -1, and a shift count outside [0, 64) is
// replaced before the shift.  (Each constant is made once, at the start.)
// LOOPS-LABEL: func.func @arith_g0(
// LOOPS-DAG:     %[[W:.*]] = arith.constant 64 : i64
// LOOPS-DAG:     %[[NEG1:.*]] = arith.constant -1 : i64
// LOOPS-DAG:     %[[MIN:.*]] = arith.constant -9223372036854775808 : i64
// LOOPS-DAG:     %[[NONE:.*]] = arith.constant 0 : i64
// LOOPS:         arith.addi
// LOOPS-NEXT:    %[[ZERO:.*]] = arith.cmpi eq, %{{.*}}, %[[NONE]] : i64
// LOOPS-NEXT:    %[[ISMIN:.*]] = arith.cmpi eq, %{{.*}}, %[[MIN]] : i64
// LOOPS-NEXT:    %[[ISNEG1:.*]] = arith.cmpi eq, %{{.*}}, %[[NEG1]] : i64
// LOOPS-NEXT:    %[[OVER:.*]] = arith.andi %[[ISMIN]], %[[ISNEG1]] : i1
// LOOPS-NEXT:    %[[BAD:.*]] = arith.ori %[[ZERO]], %[[OVER]] : i1
// LOOPS-NEXT:    %[[SAFE:.*]] = arith.select %[[BAD]], %{{.*}}, %{{.*}} : i64
// LOOPS-NEXT:    arith.divsi %{{.*}}, %[[SAFE]] : i64
// LOOPS:         arith.remsi
// LOOPS:         %[[OK:.*]] = arith.cmpi ult, %{{.*}}, %[[W]] : i64
// LOOPS-NEXT:    arith.select %[[OK]]
// LOOPS-NEXT:    arith.shli
// LOOPS:         arith.shrsi
// LOOPS:         arith.andi
// LOOPS:         arith.ori
// LOOPS:         arith.xori
// LOOPS-NEXT:    arith.xori %{{.*}}, %[[NEG1]] : i64
// LOOPS:         memref.store %{{.*}}, %out0[%{{.*}}] : memref<4xi64>

// -----

func.func @convert(%x: tensor<4xf64>) -> tensor<4xi32> {
  %0 = tensordsl.cast %x : tensor<4xf64> -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// CHECK-LABEL: func.func @convert(
// CHECK-NEXT: %0 = tensordsl.cast %x : tensor<4xf64> -> tensor<4xi32>

// A float converts only where it is in range (nan compares false); elsewhere the
// result is NumPy's INT_MIN.  LLVM has the conversion as a saturating intrinsic.
// LOOPS-LABEL: func.func @convert_g0(
// LOOPS:         %[[MIN:.*]] = arith.constant -2147483648 : i32
// LOOPS:         arith.cmpf ogt, %{{.*}}, %{{.*}} : f64
// LOOPS:         arith.cmpf olt, %{{.*}}, %{{.*}} : f64
// LOOPS:         %[[IN:.*]] = arith.andi
// LOOPS:         arith.select %[[IN]], %{{.*}}, %{{.*}} : f64
// LOOPS-NEXT:    %[[INT:.*]] = arith.fptosi %{{.*}} : f64 to i32
// LOOPS-NEXT:    arith.select %[[IN]], %[[INT]], %[[MIN]] : i32
// LLVM:          llvm.call_intrinsic "llvm.fptosi.sat.i32.f64"(%{{.*}}) : (f64) -> i32

// -----

func.func @unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xi1> {
  %0 = tensordsl.floor_divide %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = tensordsl.right_shift %0, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %2 = tensordsl.less %1, %a : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  func.return %2 : tensor<4xi1>
}

// CHECK-LABEL: func.func @unsigned(
// CHECK-NEXT: %0 = tensordsl.floor_divide %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
// CHECK-NEXT: %1 = tensordsl.right_shift %0, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
// CHECK-NEXT: %2 = tensordsl.less %1, %a : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
// CHECK-GENERIC: "tensordsl.floor_divide"(%{{.*}}, %{{.*}}) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>

// uint8 (ui8): the bodies choose the unsigned ops by the operands' type (divui,
// remui, shrui, cmpi ult; a zero divisor is 1, and no MIN / -1 case), and the loops
// stage writes ui8 as i8 (arith.constant and LLVM take signless integers only).
// LOOPS-LABEL: func.func @unsigned_g0(
// LOOPS-SAME:    %a: memref<4xi8>, %b: memref<4xi8>, %out0: memref<4xi1>
// LOOPS:         %[[ONE:.*]] = arith.constant 1 : i8
// LOOPS:         %[[ZERO:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : i8
// LOOPS-NEXT:    %[[SAFE:.*]] = arith.select %[[ZERO]], %[[ONE]], %{{.*}} : i8
// LOOPS-NEXT:    arith.divui %{{.*}}, %[[SAFE]] : i8
// LOOPS-NEXT:    arith.remui %{{.*}}, %[[SAFE]] : i8
// LOOPS:         arith.cmpi ult, %{{.*}}, %{{.*}} : i8
// LOOPS:         arith.shrui %{{.*}}, %{{.*}} : i8
// LOOPS:         arith.cmpi ult, %{{.*}}, %{{.*}} : i8
// LOOPS-NEXT:    memref.store %{{.*}}, %out0[%{{.*}}] : memref<4xi1>
// LLVM-LABEL:    llvm.func @unsigned_g0(
// LLVM:          llvm.udiv %{{.*}}, %{{.*}} : i8
// LLVM:          llvm.urem %{{.*}}, %{{.*}} : i8
// LLVM:          llvm.lshr %{{.*}}, %{{.*}} : i8
// LLVM:          llvm.icmp "ult" %{{.*}}, %{{.*}} : i8
