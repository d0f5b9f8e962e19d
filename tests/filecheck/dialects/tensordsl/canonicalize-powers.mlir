// RUN: tdsl-opt %s -p canonicalize | filecheck %s

// Strength reduction (PowerByConstant, DivByExactReciprocal): integer powers by a
// constant become squarings and multiplications (of the reciprocal first for a
// negative power), x ** 0.5 sqrt (f32, f64: NumPy's fast path), a division by a
// power of two a multiplication by its exact reciprocal; the rest stays.

// CHECK-LABEL: func.func @cube
// CHECK-NEXT:    %0 = tensordsl.square %x : tensor<4xf32>
// CHECK-NEXT:    %1 = tensordsl.mul %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %1
func.func @cube(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = tensordsl.constant dense<3.000000e+00> : tensor<f32>
  %0 = tensordsl.power %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @inverse_seventh
// CHECK-NEXT:    %0 = tensordsl.reciprocal %x : tensor<4xf64>
// CHECK-NEXT:    %1 = tensordsl.square %0 : tensor<4xf64>
// CHECK-NEXT:    %2 = tensordsl.mul %1, %0 : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
// CHECK-NEXT:    %3 = tensordsl.square %2 : tensor<4xf64>
// CHECK-NEXT:    %4 = tensordsl.mul %3, %0 : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
// CHECK-NEXT:    func.return %4
func.func @inverse_seventh(%x: tensor<4xf64>) -> tensor<4xf64> {
  %c = tensordsl.constant dense<-7.000000e+00> : tensor<f64>
  %0 = tensordsl.power %x, %c : (tensor<4xf64>, tensor<f64>) -> tensor<4xf64>
  func.return %0 : tensor<4xf64>
}

// An f16 power is multiplied out in f32 and rounded to f16 once, as NumPy's f16 pow.
// CHECK-LABEL: func.func @half_inverse_cube
// CHECK-NEXT:    %0 = tensordsl.cast %x : tensor<4xf16> -> tensor<4xf32>
// CHECK-NEXT:    %1 = tensordsl.reciprocal %0 : tensor<4xf32>
// CHECK-NEXT:    %2 = tensordsl.square %1 : tensor<4xf32>
// CHECK-NEXT:    %3 = tensordsl.mul %2, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %4 = tensordsl.cast %3 : tensor<4xf32> -> tensor<4xf16>
// CHECK-NEXT:    func.return %4
func.func @half_inverse_cube(%x: tensor<4xf16>) -> tensor<4xf16> {
  %c = tensordsl.constant dense<-3.000000e+00> : tensor<f16>
  %0 = tensordsl.power %x, %c : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
  func.return %0 : tensor<4xf16>
}

// CHECK-LABEL: func.func @root
// CHECK-NEXT:    %0 = tensordsl.sqrt %x : tensor<4xf32>
func.func @root(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = tensordsl.constant dense<5.000000e-01> : tensor<f32>
  %0 = tensordsl.power %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// f16's x ** 0.5 is NumPy's pow (no fast path), x ** 9 and x ** 2.5 too.
// CHECK-LABEL: func.func @left_alone
// CHECK:         tensordsl.power %x, %{{.*}} : (tensor<4xf16>, tensor<f16>)
// CHECK:         tensordsl.power %y, %{{.*}} : (tensor<4xf32>, tensor<f32>)
// CHECK:         tensordsl.power %y, %{{.*}} : (tensor<4xf32>, tensor<f32>)
func.func @left_alone(%x: tensor<4xf16>, %y: tensor<4xf32>) -> (tensor<4xf16>, tensor<4xf32>, tensor<4xf32>) {
  %h = tensordsl.constant dense<5.000000e-01> : tensor<f16>
  %n = tensordsl.constant dense<9.000000e+00> : tensor<f32>
  %f = tensordsl.constant dense<2.500000e+00> : tensor<f32>
  %0 = tensordsl.power %x, %h : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
  %1 = tensordsl.power %y, %n : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = tensordsl.power %y, %f : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %0, %1, %2 : tensor<4xf16>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @quarter
// CHECK-NEXT:    %0 = tensordsl.constant dense<2.500000e-01> : tensor<f32>
// CHECK-NEXT:    %1 = tensordsl.mul %x, %0 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-LABEL: func.func @third
// CHECK:         tensordsl.div %x
func.func @quarter(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = tensordsl.constant dense<4.000000e+00> : tensor<f32>
  %0 = tensordsl.div %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @third(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = tensordsl.constant dense<3.000000e+00> : tensor<f32>
  %0 = tensordsl.div %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
