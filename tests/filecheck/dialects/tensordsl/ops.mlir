// RUN: tdsl-opt %s | tdsl-opt | filecheck %s
// RUN: %roundtrip-and-generic

// Every tensordsl op in its custom syntax: custom -> custom, generic -> custom,
// and the generic form itself.  Covers every element type, 0-d and zero-size
// tensors, broadcasting, 1-D and batched matmul, negative and default axes,
// keepdims.

func.func @constant() -> (tensor<f32>, tensor<2x3xf64>, tensor<4xf16>, tensor<0xf32>) {
  %0 = tensordsl.constant dense<2.5> : tensor<f32>
  %1 = tensordsl.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf64>
  %2 = tensordsl.constant dense<0.0> : tensor<4xf16>
  %3 = tensordsl.constant dense<> : tensor<0xf32>
  func.return %0, %1, %2, %3 : tensor<f32>, tensor<2x3xf64>, tensor<4xf16>, tensor<0xf32>
}

// CHECK-LABEL: func.func @constant(
// CHECK-SAME: ) -> (tensor<f32>, tensor<2x3xf64>, tensor<4xf16>, tensor<0xf32>) {
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.constant dense<2.500000e+00> : tensor<f32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00{{\]\]}}> : tensor<2x3xf64>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.constant dense<0.000000e+00> : tensor<4xf16>
// CHECK-NEXT: [[V3:%[a-z0-9_]+]] = tensordsl.constant dense<> : tensor<0xf32>
// CHECK-NEXT: func.return [[V0]], [[V1]], [[V2]], [[V3]] : tensor<f32>, tensor<2x3xf64>, tensor<4xf16>, tensor<0xf32>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "constant"
// CHECK-GENERIC-SAME: , function_type = () -> (tensor<f32>, tensor<2x3xf64>, tensor<4xf16>, tensor<0xf32>)}> ({
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.constant"() <{value = dense<2.500000e+00> : tensor<f32>}> : () -> tensor<f32>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.constant"() <{value = dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00{{\]\]}}> : tensor<2x3xf64>}> : () -> tensor<2x3xf64>
// CHECK-GENERIC-NEXT: [[V2:%[a-z0-9_]+]] = "tensordsl.constant"() <{value = dense<0.000000e+00> : tensor<4xf16>}> : () -> tensor<4xf16>
// CHECK-GENERIC-NEXT: [[V3:%[a-z0-9_]+]] = "tensordsl.constant"() <{value = dense<> : tensor<0xf32>}> : () -> tensor<0xf32>
// CHECK-GENERIC-NEXT: "func.return"([[V0]], [[V1]], [[V2]], [[V3]]) : (tensor<f32>, tensor<2x3xf64>, tensor<4xf16>, tensor<0xf32>) -> ()

func.func @unary(%a: tensor<4x8xf32>, %h: tensor<f16>, %e: tensor<0x3xf64>) -> (tensor<4x8xf32>, tensor<f16>, tensor<0x3xf64>) {
  %0 = tensordsl.relu %a : tensor<4x8xf32>
  %1 = tensordsl.exp %0 : tensor<4x8xf32>
  %2 = tensordsl.log %1 : tensor<4x8xf32>
  %3 = tensordsl.sqrt %2 : tensor<4x8xf32>
  %4 = tensordsl.tanh %3 : tensor<4x8xf32>
  %5 = tensordsl.sigmoid %4 : tensor<4x8xf32>
  %6 = tensordsl.abs %5 : tensor<4x8xf32>
  %7 = tensordsl.neg %6 : tensor<4x8xf32>
  %8 = tensordsl.exp %h : tensor<f16>
  %9 = tensordsl.sigmoid %e : tensor<0x3xf64>
  func.return %7, %8, %9 : tensor<4x8xf32>, tensor<f16>, tensor<0x3xf64>
}

// CHECK-LABEL: func.func @unary(
// CHECK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[H:%[a-z0-9_]+]]: tensor<f16>, [[E:%[a-z0-9_]+]]: tensor<0x3xf64>) -> (tensor<4x8xf32>, tensor<f16>, tensor<0x3xf64>) {
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.relu [[A]] : tensor<4x8xf32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.exp [[V0]] : tensor<4x8xf32>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.log [[V1]] : tensor<4x8xf32>
// CHECK-NEXT: [[V3:%[a-z0-9_]+]] = tensordsl.sqrt [[V2]] : tensor<4x8xf32>
// CHECK-NEXT: [[V4:%[a-z0-9_]+]] = tensordsl.tanh [[V3]] : tensor<4x8xf32>
// CHECK-NEXT: [[V5:%[a-z0-9_]+]] = tensordsl.sigmoid [[V4]] : tensor<4x8xf32>
// CHECK-NEXT: [[V6:%[a-z0-9_]+]] = tensordsl.abs [[V5]] : tensor<4x8xf32>
// CHECK-NEXT: [[V7:%[a-z0-9_]+]] = tensordsl.neg [[V6]] : tensor<4x8xf32>
// CHECK-NEXT: [[V8:%[a-z0-9_]+]] = tensordsl.exp [[H]] : tensor<f16>
// CHECK-NEXT: [[V9:%[a-z0-9_]+]] = tensordsl.sigmoid [[E]] : tensor<0x3xf64>
// CHECK-NEXT: func.return [[V7]], [[V8]], [[V9]] : tensor<4x8xf32>, tensor<f16>, tensor<0x3xf64>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "unary"
// CHECK-GENERIC-SAME: , function_type = (tensor<4x8xf32>, tensor<f16>, tensor<0x3xf64>) -> (tensor<4x8xf32>, tensor<f16>, tensor<0x3xf64>)}> ({
// CHECK-GENERIC-NEXT: ^bb0([[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[H:%[a-z0-9_]+]]: tensor<f16>, [[E:%[a-z0-9_]+]]: tensor<0x3xf64>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.relu"([[A]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.exp"([[V0]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V2:%[a-z0-9_]+]] = "tensordsl.log"([[V1]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V3:%[a-z0-9_]+]] = "tensordsl.sqrt"([[V2]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V4:%[a-z0-9_]+]] = "tensordsl.tanh"([[V3]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V5:%[a-z0-9_]+]] = "tensordsl.sigmoid"([[V4]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V6:%[a-z0-9_]+]] = "tensordsl.abs"([[V5]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V7:%[a-z0-9_]+]] = "tensordsl.neg"([[V6]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V8:%[a-z0-9_]+]] = "tensordsl.exp"([[H]]) : (tensor<f16>) -> tensor<f16>
// CHECK-GENERIC-NEXT: [[V9:%[a-z0-9_]+]] = "tensordsl.sigmoid"([[E]]) : (tensor<0x3xf64>) -> tensor<0x3xf64>
// CHECK-GENERIC-NEXT: "func.return"([[V7]], [[V8]], [[V9]]) : (tensor<4x8xf32>, tensor<f16>, tensor<0x3xf64>) -> ()

func.func @binary(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>, %c: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tensordsl.sub %0, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = tensordsl.mul %s, %1 : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = tensordsl.div %2, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %4 = tensordsl.maximum %3, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = tensordsl.minimum %c, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %6 = tensordsl.add %4, %5 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %6 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @binary(
// CHECK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[B:%[a-z0-9_]+]]: tensor<8xf32>, [[S:%[a-z0-9_]+]]: tensor<f32>, [[C:%[a-z0-9_]+]]: tensor<4x1xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.add [[A]], [[B]] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.sub [[V0]], [[S]] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.mul [[S]], [[V1]] : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: [[V3:%[a-z0-9_]+]] = tensordsl.div [[V2]], [[C]] : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: [[V4:%[a-z0-9_]+]] = tensordsl.maximum [[V3]], [[A]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: [[V5:%[a-z0-9_]+]] = tensordsl.minimum [[C]], [[B]] : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: [[V6:%[a-z0-9_]+]] = tensordsl.add [[V4]], [[V5]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: func.return [[V6]] : tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "binary"
// CHECK-GENERIC-SAME: , function_type = (tensor<4x8xf32>, tensor<8xf32>, tensor<f32>, tensor<4x1xf32>) -> tensor<4x8xf32>}> ({
// CHECK-GENERIC-NEXT: ^bb0([[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[B:%[a-z0-9_]+]]: tensor<8xf32>, [[S:%[a-z0-9_]+]]: tensor<f32>, [[C:%[a-z0-9_]+]]: tensor<4x1xf32>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.add"([[A]], [[B]]) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.sub"([[V0]], [[S]]) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V2:%[a-z0-9_]+]] = "tensordsl.mul"([[S]], [[V1]]) : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V3:%[a-z0-9_]+]] = "tensordsl.div"([[V2]], [[C]]) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V4:%[a-z0-9_]+]] = "tensordsl.maximum"([[V3]], [[A]]) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V5:%[a-z0-9_]+]] = "tensordsl.minimum"([[C]], [[B]]) : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V6:%[a-z0-9_]+]] = "tensordsl.add"([[V4]], [[V5]]) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: "func.return"([[V6]]) : (tensor<4x8xf32>) -> ()

func.func @cast(%a: tensor<4x8xf32>, %s: tensor<f64>) -> (tensor<4x8xf16>, tensor<f32>) {
  %0 = tensordsl.cast %a : tensor<4x8xf32> -> tensor<4x8xf16>
  %1 = tensordsl.cast %s : tensor<f64> -> tensor<f32>
  func.return %0, %1 : tensor<4x8xf16>, tensor<f32>
}

// CHECK-LABEL: func.func @cast(
// CHECK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[S:%[a-z0-9_]+]]: tensor<f64>) -> (tensor<4x8xf16>, tensor<f32>) {
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.cast [[A]] : tensor<4x8xf32> -> tensor<4x8xf16>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.cast [[S]] : tensor<f64> -> tensor<f32>
// CHECK-NEXT: func.return [[V0]], [[V1]] : tensor<4x8xf16>, tensor<f32>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "cast"
// CHECK-GENERIC-SAME: , function_type = (tensor<4x8xf32>, tensor<f64>) -> (tensor<4x8xf16>, tensor<f32>)}> ({
// CHECK-GENERIC-NEXT: ^bb0([[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[S:%[a-z0-9_]+]]: tensor<f64>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.cast"([[A]]) : (tensor<4x8xf32>) -> tensor<4x8xf16>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.cast"([[S]]) : (tensor<f64>) -> tensor<f32>
// CHECK-GENERIC-NEXT: "func.return"([[V0]], [[V1]]) : (tensor<4x8xf16>, tensor<f32>) -> ()

func.func @matmul(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %v: tensor<16xf32>, %batch: tensor<2x8x16xf64>, %w: tensor<16x4xf64>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<2x8x4xf64>) {
  %0 = tensordsl.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = tensordsl.matmul %v, %b : (tensor<16xf32>, tensor<16x4xf32>) -> tensor<4xf32>
  %2 = tensordsl.matmul %a, %v : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8xf32>
  %3 = tensordsl.matmul %v, %v : (tensor<16xf32>, tensor<16xf32>) -> tensor<f32>
  %4 = tensordsl.matmul %batch, %w : (tensor<2x8x16xf64>, tensor<16x4xf64>) -> tensor<2x8x4xf64>
  func.return %0, %1, %2, %3, %4 : tensor<8x4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<2x8x4xf64>
}

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: [[A:%[a-z0-9_]+]]: tensor<8x16xf32>, [[B:%[a-z0-9_]+]]: tensor<16x4xf32>, [[V:%[a-z0-9_]+]]: tensor<16xf32>, [[BATCH:%[a-z0-9_]+]]: tensor<2x8x16xf64>, [[W:%[a-z0-9_]+]]: tensor<16x4xf64>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<2x8x4xf64>) {
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.matmul [[A]], [[B]] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.matmul [[V]], [[B]] : (tensor<16xf32>, tensor<16x4xf32>) -> tensor<4xf32>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.matmul [[A]], [[V]] : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8xf32>
// CHECK-NEXT: [[V3:%[a-z0-9_]+]] = tensordsl.matmul [[V]], [[V]] : (tensor<16xf32>, tensor<16xf32>) -> tensor<f32>
// CHECK-NEXT: [[V4:%[a-z0-9_]+]] = tensordsl.matmul [[BATCH]], [[W]] : (tensor<2x8x16xf64>, tensor<16x4xf64>) -> tensor<2x8x4xf64>
// CHECK-NEXT: func.return [[V0]], [[V1]], [[V2]], [[V3]], [[V4]] : tensor<8x4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<2x8x4xf64>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "matmul"
// CHECK-GENERIC-SAME: , function_type = (tensor<8x16xf32>, tensor<16x4xf32>, tensor<16xf32>, tensor<2x8x16xf64>, tensor<16x4xf64>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<2x8x4xf64>)}> ({
// CHECK-GENERIC-NEXT: ^bb0([[A:%[a-z0-9_]+]]: tensor<8x16xf32>, [[B:%[a-z0-9_]+]]: tensor<16x4xf32>, [[V:%[a-z0-9_]+]]: tensor<16xf32>, [[BATCH:%[a-z0-9_]+]]: tensor<2x8x16xf64>, [[W:%[a-z0-9_]+]]: tensor<16x4xf64>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.matmul"([[A]], [[B]]) : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.matmul"([[V]], [[B]]) : (tensor<16xf32>, tensor<16x4xf32>) -> tensor<4xf32>
// CHECK-GENERIC-NEXT: [[V2:%[a-z0-9_]+]] = "tensordsl.matmul"([[A]], [[V]]) : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8xf32>
// CHECK-GENERIC-NEXT: [[V3:%[a-z0-9_]+]] = "tensordsl.matmul"([[V]], [[V]]) : (tensor<16xf32>, tensor<16xf32>) -> tensor<f32>
// CHECK-GENERIC-NEXT: [[V4:%[a-z0-9_]+]] = "tensordsl.matmul"([[BATCH]], [[W]]) : (tensor<2x8x16xf64>, tensor<16x4xf64>) -> tensor<2x8x4xf64>
// CHECK-GENERIC-NEXT: "func.return"([[V0]], [[V1]], [[V2]], [[V3]], [[V4]]) : (tensor<8x4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<2x8x4xf64>) -> ()

func.func @transpose(%a: tensor<4x8xf32>, %b: tensor<2x3x5xf16>, %s: tensor<f32>) -> (tensor<8x4xf32>, tensor<5x3x2xf16>, tensor<f32>) {
  %0 = tensordsl.transpose %a : tensor<4x8xf32> -> tensor<8x4xf32>
  %1 = tensordsl.transpose %b : tensor<2x3x5xf16> -> tensor<5x3x2xf16>
  %2 = tensordsl.transpose %s : tensor<f32> -> tensor<f32>
  func.return %0, %1, %2 : tensor<8x4xf32>, tensor<5x3x2xf16>, tensor<f32>
}

// CHECK-LABEL: func.func @transpose(
// CHECK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[B:%[a-z0-9_]+]]: tensor<2x3x5xf16>, [[S:%[a-z0-9_]+]]: tensor<f32>) -> (tensor<8x4xf32>, tensor<5x3x2xf16>, tensor<f32>) {
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.transpose [[A]] : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.transpose [[B]] : tensor<2x3x5xf16> -> tensor<5x3x2xf16>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.transpose [[S]] : tensor<f32> -> tensor<f32>
// CHECK-NEXT: func.return [[V0]], [[V1]], [[V2]] : tensor<8x4xf32>, tensor<5x3x2xf16>, tensor<f32>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "transpose"
// CHECK-GENERIC-SAME: , function_type = (tensor<4x8xf32>, tensor<2x3x5xf16>, tensor<f32>) -> (tensor<8x4xf32>, tensor<5x3x2xf16>, tensor<f32>)}> ({
// CHECK-GENERIC-NEXT: ^bb0([[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[B:%[a-z0-9_]+]]: tensor<2x3x5xf16>, [[S:%[a-z0-9_]+]]: tensor<f32>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.transpose"([[A]]) : (tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.transpose"([[B]]) : (tensor<2x3x5xf16>) -> tensor<5x3x2xf16>
// CHECK-GENERIC-NEXT: [[V2:%[a-z0-9_]+]] = "tensordsl.transpose"([[S]]) : (tensor<f32>) -> tensor<f32>
// CHECK-GENERIC-NEXT: "func.return"([[V0]], [[V1]], [[V2]]) : (tensor<8x4xf32>, tensor<5x3x2xf16>, tensor<f32>) -> ()

func.func @softmax(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = tensordsl.softmax %a : tensor<4x8xf32>
  %1 = tensordsl.softmax %a axis = -1 : tensor<4x8xf32>
  %2 = tensordsl.softmax %a axis = 0 : tensor<4x8xf32>
  %3 = tensordsl.softmax %a axis = -2 : tensor<4x8xf32>
  func.return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.softmax [[A]] : tensor<4x8xf32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.softmax [[A]] : tensor<4x8xf32>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.softmax [[A]] axis = 0 : tensor<4x8xf32>
// CHECK-NEXT: [[V3:%[a-z0-9_]+]] = tensordsl.softmax [[A]] axis = -2 : tensor<4x8xf32>
// CHECK-NEXT: func.return [[V0]], [[V1]], [[V2]], [[V3]] : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "softmax"
// CHECK-GENERIC-SAME: , function_type = (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)}> ({
// CHECK-GENERIC-NEXT: ^bb0([[A:%[a-z0-9_]+]]: tensor<4x8xf32>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.softmax"([[A]]) <{axis = -1 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.softmax"([[A]]) <{axis = -1 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V2:%[a-z0-9_]+]] = "tensordsl.softmax"([[A]]) <{axis = 0 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: [[V3:%[a-z0-9_]+]] = "tensordsl.softmax"([[A]]) <{axis = -2 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: "func.return"([[V0]], [[V1]], [[V2]], [[V3]]) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()

func.func @reductions(%a: tensor<4x8xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4x1xf32>, tensor<1x1xf32>, tensor<8xf32>) {
  %0 = tensordsl.sum %a : tensor<4x8xf32> -> tensor<f32>
  %1 = tensordsl.max %a axis = 1 : tensor<4x8xf32> -> tensor<4xf32>
  %2 = tensordsl.mean %a axis = -1 keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %3 = tensordsl.sum %a keepdims : tensor<4x8xf32> -> tensor<1x1xf32>
  %4 = tensordsl.max %a axis = 0 : tensor<4x8xf32> -> tensor<8xf32>
  func.return %0, %1, %2, %3, %4 : tensor<f32>, tensor<4xf32>, tensor<4x1xf32>, tensor<1x1xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @reductions(
// CHECK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x8xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4x1xf32>, tensor<1x1xf32>, tensor<8xf32>) {
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.sum [[A]] : tensor<4x8xf32> -> tensor<f32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.max [[A]] axis = 1 : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.mean [[A]] axis = -1 keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT: [[V3:%[a-z0-9_]+]] = tensordsl.sum [[A]] keepdims : tensor<4x8xf32> -> tensor<1x1xf32>
// CHECK-NEXT: [[V4:%[a-z0-9_]+]] = tensordsl.max [[A]] axis = 0 : tensor<4x8xf32> -> tensor<8xf32>
// CHECK-NEXT: func.return [[V0]], [[V1]], [[V2]], [[V3]], [[V4]] : tensor<f32>, tensor<4xf32>, tensor<4x1xf32>, tensor<1x1xf32>, tensor<8xf32>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "reductions"
// CHECK-GENERIC-SAME: , function_type = (tensor<4x8xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4x1xf32>, tensor<1x1xf32>, tensor<8xf32>)}> ({
// CHECK-GENERIC-NEXT: ^bb0([[A:%[a-z0-9_]+]]: tensor<4x8xf32>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.sum"([[A]]) : (tensor<4x8xf32>) -> tensor<f32>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.max"([[A]]) <{axis = 1 : i64}> : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK-GENERIC-NEXT: [[V2:%[a-z0-9_]+]] = "tensordsl.mean"([[A]]) <{axis = -1 : i64, keepdims}> : (tensor<4x8xf32>) -> tensor<4x1xf32>
// CHECK-GENERIC-NEXT: [[V3:%[a-z0-9_]+]] = "tensordsl.sum"([[A]]) <{keepdims}> : (tensor<4x8xf32>) -> tensor<1x1xf32>
// CHECK-GENERIC-NEXT: [[V4:%[a-z0-9_]+]] = "tensordsl.max"([[A]]) <{axis = 0 : i64}> : (tensor<4x8xf32>) -> tensor<8xf32>
// CHECK-GENERIC-NEXT: "func.return"([[V0]], [[V1]], [[V2]], [[V3]], [[V4]]) : (tensor<f32>, tensor<4xf32>, tensor<4x1xf32>, tensor<1x1xf32>, tensor<8xf32>) -> ()


func.func @sin_layernorm(%a: tensor<4x8xf32>, %h: tensor<2x3xf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x3xf16>) {
  %0 = tensordsl.sin %a : tensor<4x8xf32>
  %1 = tensordsl.layernorm %a : tensor<4x8xf32>
  %2 = tensordsl.layernorm %a axis = 0 eps = 0.001234567890123 : tensor<4x8xf32>
  %3 = tensordsl.layernorm %h eps = 1.000000e-05 : tensor<2x3xf16>
  func.return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x3xf16>
}

// The default eps (1e-5) is not printed; any other prints exactly.
// CHECK-LABEL: func.func @sin_layernorm(
// CHECK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[H:%[a-z0-9_]+]]: tensor<2x3xf16>)
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.sin [[A]] : tensor<4x8xf32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.layernorm [[A]] : tensor<4x8xf32>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.layernorm [[A]] axis = 0 eps = 0.001234567890123 : tensor<4x8xf32>
// CHECK-NEXT: [[V3:%[a-z0-9_]+]] = tensordsl.layernorm [[H]] : tensor<2x3xf16>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "sin_layernorm"
// CHECK-GENERIC: "tensordsl.sin"([[A:%[a-z0-9_]+]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: "tensordsl.layernorm"([[A]]) <{eps = 1.000000e-05 : f64, axis = -1 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: "tensordsl.layernorm"([[A]]) <{axis = 0 : i64, eps = 0.001234567890123 : f64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>


// The classifications (floats in, booleans out), clip (keep_ties: a tie with a
// bound keeps the operand, as NumPy's scalar-bounds and float16 loops do), and
// all/any (booleans in and out).
func.func @classify_clip_truth(%a: tensor<4x8xf32>, %lo: tensor<8xf32>, %hi: tensor<f32>, %b: tensor<4x8xi1>) -> (tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xi1>, tensor<i1>) {
  %0 = tensordsl.isnan %a : tensor<4x8xf32> -> tensor<4x8xi1>
  %1 = tensordsl.isinf %a : tensor<4x8xf32> -> tensor<4x8xi1>
  %2 = tensordsl.isfinite %a : tensor<4x8xf32> -> tensor<4x8xi1>
  %3 = tensordsl.clip %a, %lo, %hi : (tensor<4x8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %4 = tensordsl.clip %a, %hi, %hi keep_ties : (tensor<4x8xf32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  %5 = tensordsl.all %b axis = 1 : tensor<4x8xi1> -> tensor<4xi1>
  %6 = tensordsl.any %0 : tensor<4x8xi1> -> tensor<i1>
  func.return %0, %1, %2, %3, %4, %5, %6 : tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xi1>, tensor<i1>
}

// CHECK-LABEL: func.func @classify_clip_truth(
// CHECK-SAME: [[A:%[a-z0-9_]+]]: tensor<4x8xf32>, [[LO:%[a-z0-9_]+]]: tensor<8xf32>, [[HI:%[a-z0-9_]+]]: tensor<f32>, [[B:%[a-z0-9_]+]]: tensor<4x8xi1>)
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.isnan [[A]] : tensor<4x8xf32> -> tensor<4x8xi1>
// CHECK-NEXT: tensordsl.isinf [[A]] : tensor<4x8xf32> -> tensor<4x8xi1>
// CHECK-NEXT: tensordsl.isfinite [[A]] : tensor<4x8xf32> -> tensor<4x8xi1>
// CHECK-NEXT: tensordsl.clip [[A]], [[LO]], [[HI]] : (tensor<4x8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT: tensordsl.clip [[A]], [[HI]], [[HI]] keep_ties : (tensor<4x8xf32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT: tensordsl.all [[B]] axis = 1 : tensor<4x8xi1> -> tensor<4xi1>
// CHECK-NEXT: tensordsl.any [[V0]] : tensor<4x8xi1> -> tensor<i1>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "classify_clip_truth"
// CHECK-GENERIC: "tensordsl.isnan"([[A:%[a-z0-9_]+]]) : (tensor<4x8xf32>) -> tensor<4x8xi1>
// CHECK-GENERIC: "tensordsl.clip"([[A]], {{%[a-z0-9_]+}}, {{%[a-z0-9_]+}}) <{keep_ties}> : (tensor<4x8xf32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: "tensordsl.all"({{%[a-z0-9_]+}}) <{axis = 1 : i64}> : (tensor<4x8xi1>) -> tensor<4xi1>


// A transpose by any permutation records it (perm); the reversal records none.
func.func @transpose_perm(%b: tensor<2x3x5xf16>) -> (tensor<2x5x3xf16>, tensor<5x2x3xf16>) {
  %0 = tensordsl.transpose %b perm [0, 2, 1] : tensor<2x3x5xf16> -> tensor<2x5x3xf16>
  %1 = tensordsl.transpose %b perm [2, 0, 1] : tensor<2x3x5xf16> -> tensor<5x2x3xf16>
  func.return %0, %1 : tensor<2x5x3xf16>, tensor<5x2x3xf16>
}

// CHECK-LABEL: func.func @transpose_perm(
// CHECK-NEXT: tensordsl.transpose [[B:%[a-z0-9_]+]] perm [0, 2, 1] : tensor<2x3x5xf16> -> tensor<2x5x3xf16>
// CHECK-NEXT: tensordsl.transpose [[B]] perm [2, 0, 1] : tensor<2x3x5xf16> -> tensor<5x2x3xf16>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "transpose_perm"
// CHECK-GENERIC: "tensordsl.transpose"([[B:%[a-z0-9_]+]]) <{perm = array<i64: 0, 2, 1>}> : (tensor<2x3x5xf16>) -> tensor<2x5x3xf16>
