// Constants that xDSL 0.75 would print lossily (inf, nan, 1234567.0, a -0.0
// next to a 0.0) print in MLIR's hex-string form, custom and generic, and
// read back to the same bits.
// RUN: tdsl-opt %s | tdsl-opt | filecheck %s
// RUN: tdsl-opt %s --print-op-generic | tdsl-opt | filecheck %s
// RUN: tdsl-opt %s --print-op-generic | tdsl-opt --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @hard() -> (tensor<f32>, tensor<f64>, tensor<2xf64>, tensor<f32>, tensor<f32>) {
  %inf = tensordsl.constant dense<"0x0000807F"> : tensor<f32>
  %big = tensordsl.constant dense<"0x0000000087D63241"> : tensor<f64>
  %zeros = tensordsl.constant dense<"0x00000000000000000000000000000080"> : tensor<2xf64>
  %nan = tensordsl.constant dense<"0x0000C07F"> : tensor<f32>
  %plain = tensordsl.constant dense<2.5> : tensor<f32>
  func.return %inf, %big, %zeros, %nan, %plain : tensor<f32>, tensor<f64>, tensor<2xf64>, tensor<f32>, tensor<f32>
}

// CHECK:      tensordsl.constant dense<"0x0000807F"> : tensor<f32>
// CHECK-NEXT: tensordsl.constant dense<"0x0000000087D63241"> : tensor<f64>
// CHECK-NEXT: tensordsl.constant dense<"0x00000000000000000000000000000080"> : tensor<2xf64>
// CHECK-NEXT: tensordsl.constant dense<"0x0000C07F"> : tensor<f32>
// CHECK-NEXT: tensordsl.constant dense<2.500000e+00> : tensor<f32>

// GENERIC:      "tensordsl.constant"() <{value = dense<"0x0000807F"> : tensor<f32>}>
// GENERIC-NEXT: "tensordsl.constant"() <{value = dense<"0x0000000087D63241"> : tensor<f64>}>
// GENERIC-NEXT: "tensordsl.constant"() <{value = dense<"0x00000000000000000000000000000080"> : tensor<2xf64>}>
// GENERIC-NEXT: "tensordsl.constant"() <{value = dense<"0x0000C07F"> : tensor<f32>}>
// GENERIC-NEXT: "tensordsl.constant"() <{value = dense<2.500000e+00> : tensor<f32>}>
