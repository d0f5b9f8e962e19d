// RUN: tdsl-opt %s -p canonicalize | filecheck %s

// The canonicalization patterns attached to tensordsl ops, run through xDSL's
// own canonicalize pass (which also erases the ops left dead).

// CHECK-LABEL: func.func @relu_of_relu(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<4x8xf32>)
// CHECK-NEXT: [[R:%[a-z0-9_]+]] = tensordsl.relu [[X]] : tensor<4x8xf32>
// CHECK-NEXT: func.return [[R]], [[R]] : tensor<4x8xf32>, tensor<4x8xf32>
func.func @relu_of_relu(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = tensordsl.relu %x : tensor<4x8xf32>
  %1 = tensordsl.relu %0 : tensor<4x8xf32>
  %2 = tensordsl.relu %1 : tensor<4x8xf32>
  func.return %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @transpose_of_transpose(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<4x8xf32>)
// CHECK-NEXT: func.return [[X]] : tensor<4x8xf32>
func.func @transpose_of_transpose(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.transpose %x : tensor<4x8xf32> -> tensor<8x4xf32>
  %1 = tensordsl.transpose %0 : tensor<8x4xf32> -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @neg_of_neg(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<3xf16>)
// CHECK-NEXT: [[N:%[a-z0-9_]+]] = tensordsl.neg [[X]] : tensor<3xf16>
// CHECK-NEXT: func.return [[X]], [[N]] : tensor<3xf16>, tensor<3xf16>
func.func @neg_of_neg(%x: tensor<3xf16>) -> (tensor<3xf16>, tensor<3xf16>) {
  %0 = tensordsl.neg %x : tensor<3xf16>
  %1 = tensordsl.neg %0 : tensor<3xf16>
  %2 = tensordsl.neg %1 : tensor<3xf16>
  func.return %1, %2 : tensor<3xf16>, tensor<3xf16>
}

// x + -0.0 is x for every float (x + 0.0 is not: -0.0 + 0.0 is +0.0), and x + 0 for
// every integer.
// CHECK-LABEL: func.func @add_zero(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<4x8xf32>, [[I:%[a-z0-9_]+]]: tensor<4xi32>)
// CHECK-NEXT: func.return [[X]], [[X]], [[X]], [[I]] : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xi32>
func.func @add_zero(%x: tensor<4x8xf32>, %i: tensor<4xi32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xi32>) {
  %z = tensordsl.constant dense<-0.0> : tensor<f32>
  %zz = tensordsl.constant dense<-0.0> : tensor<4x8xf32>
  %iz = tensordsl.constant dense<0> : tensor<i32>
  %0 = tensordsl.add %x, %z : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = tensordsl.add %z, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tensordsl.add %x, %zz : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = tensordsl.add %i, %iz : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  func.return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xi32>
}

// CHECK-LABEL: func.func @sub_zero(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<4xf64>)
// CHECK-NEXT: func.return [[X]] : tensor<4xf64>
func.func @sub_zero(%x: tensor<4xf64>) -> tensor<4xf64> {
  %z = tensordsl.constant dense<0.0> : tensor<1xf64>
  %0 = tensordsl.sub %x, %z : (tensor<4xf64>, tensor<1xf64>) -> tensor<4xf64>
  func.return %0 : tensor<4xf64>
}

// CHECK-LABEL: func.func @mul_one(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<4x8xf32>)
// CHECK-NEXT: func.return [[X]], [[X]] : tensor<4x8xf32>, tensor<4x8xf32>
func.func @mul_one(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %one = tensordsl.constant dense<1.0> : tensor<8xf32>
  %0 = tensordsl.mul %x, %one : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tensordsl.mul %one, %x : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @div_one(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<2x2xf32>)
// CHECK-NEXT: func.return [[X]] : tensor<2x2xf32>
func.func @div_one(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %one = tensordsl.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %0 = tensordsl.div %x, %one : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}

// A zero that broadcasts the other operand to a larger shape changes the
// result type: x + 0 must stay.
// CHECK-LABEL: func.func @add_zero_that_broadcasts(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<8xf32>)
// CHECK-NEXT: [[Z:%[a-z0-9_]+]] = tensordsl.constant dense<0.000000e+00> : tensor<4x8xf32>
// CHECK-NEXT: [[A:%[a-z0-9_]+]] = tensordsl.add [[X]], [[Z]] : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: [[B:%[a-z0-9_]+]] = tensordsl.mul [[Z]], [[X]] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: func.return [[A]], [[B]] : tensor<4x8xf32>, tensor<4x8xf32>
func.func @add_zero_that_broadcasts(%x: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %z = tensordsl.constant dense<0.0> : tensor<4x8xf32>
  %0 = tensordsl.add %x, %z : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = tensordsl.mul %z, %x : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// Near misses that are not identities: 0 - x, 1 / x, x * 0, x + 1, x + [0, 1], and,
// for a float, x + 0.0 and x - -0.0 (each +0.0 where x is -0.0).
// CHECK-LABEL: func.func @not_identities(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<2xf32>)
// CHECK-DAG: [[Z:%[a-z0-9_]+]] = tensordsl.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: [[O:%[a-z0-9_]+]] = tensordsl.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: [[M:%[a-z0-9_]+]] = tensordsl.constant dense<[0.000000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK-DAG: [[N:%[a-z0-9_]+]] = tensordsl.constant dense<-0.000000e+00> : tensor<f32>
// CHECK: tensordsl.sub [[Z]], [[X]]
// CHECK-NEXT: tensordsl.div [[O]], [[X]]
// CHECK-NEXT: tensordsl.mul [[X]], [[Z]]
// CHECK-NEXT: tensordsl.add [[X]], [[O]]
// CHECK-NEXT: tensordsl.add [[X]], [[M]]
// CHECK-NEXT: tensordsl.add [[X]], [[Z]]
// CHECK-NEXT: tensordsl.sub [[X]], [[N]]
// CHECK-NEXT: func.return
func.func @not_identities(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %z = tensordsl.constant dense<0.0> : tensor<f32>
  %o = tensordsl.constant dense<1.0> : tensor<f32>
  %m = tensordsl.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %n = tensordsl.constant dense<-0.0> : tensor<f32>
  %0 = tensordsl.sub %z, %x : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = tensordsl.div %o, %x : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = tensordsl.mul %x, %z : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %3 = tensordsl.add %x, %o : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %4 = tensordsl.add %x, %m : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %5 = tensordsl.add %x, %z : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %6 = tensordsl.sub %x, %n : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  func.return %0, %1, %2, %3, %4, %5, %6 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// A cast of a one-element constant is the constant cast, as astype casts it: 1e-5
// rounds to f32's nearest (printed as the shortest f32 text, 1e-05), nan becomes
// int64's most negative; a constant of more elements keeps its cast (it would be
// stored twice).
// CHECK-LABEL: func.func @cast_of_constant(
// CHECK-NEXT: [[E:%[a-z0-9_]+]] = tensordsl.constant dense<1.000000e-05> : tensor<f32>
// CHECK-NEXT: [[A:%[a-z0-9_]+]] = tensordsl.add %x, [[E]] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT: [[N:%[a-z0-9_]+]] = tensordsl.constant dense<-9223372036854775808> : tensor<i64>
// CHECK-NEXT: [[W:%[a-z0-9_]+]] = tensordsl.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf64>
// CHECK-NEXT: [[C:%[a-z0-9_]+]] = tensordsl.cast [[W]] : tensor<2xf64> -> tensor<2xf32>
// CHECK-NEXT: func.return [[A]], [[N]], [[C]]
func.func @cast_of_constant(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<i64>, tensor<2xf32>) {
  %e = tensordsl.constant dense<1.000000e-05> : tensor<f64>
  %0 = tensordsl.cast %e : tensor<f64> -> tensor<f32>
  %1 = tensordsl.add %x, %0 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %n = tensordsl.constant dense<"0x000000000000F87F"> : tensor<f64>
  %2 = tensordsl.cast %n : tensor<f64> -> tensor<i64>
  %w = tensordsl.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf64>
  %3 = tensordsl.cast %w : tensor<2xf64> -> tensor<2xf32>
  func.return %1, %2, %3 : tensor<4xf32>, tensor<i64>, tensor<2xf32>
}
