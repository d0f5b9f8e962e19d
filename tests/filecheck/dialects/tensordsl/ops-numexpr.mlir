// RUN: tdsl-opt %s | tdsl-opt | filecheck %s
// RUN: %roundtrip-and-generic

// The ops of the numexpr and NumPy op set: every one in custom syntax (custom ->
// custom, generic -> custom) and in generic form.

func.func @unary(%a: tensor<4x8xf32>, %h: tensor<3xf16>) {
  %0 = tensordsl.cos %a : tensor<4x8xf32>
  %1 = tensordsl.tan %h : tensor<3xf16>
  %2 = tensordsl.arcsin %a : tensor<4x8xf32>
  %3 = tensordsl.arccos %h : tensor<3xf16>
  %4 = tensordsl.arctan %a : tensor<4x8xf32>
  %5 = tensordsl.sinh %h : tensor<3xf16>
  %6 = tensordsl.cosh %a : tensor<4x8xf32>
  %7 = tensordsl.arcsinh %h : tensor<3xf16>
  %8 = tensordsl.arccosh %a : tensor<4x8xf32>
  %9 = tensordsl.arctanh %h : tensor<3xf16>
  %10 = tensordsl.log1p %a : tensor<4x8xf32>
  %11 = tensordsl.log10 %h : tensor<3xf16>
  %12 = tensordsl.log2 %a : tensor<4x8xf32>
  %13 = tensordsl.expm1 %h : tensor<3xf16>
  %14 = tensordsl.ceil %a : tensor<4x8xf32>
  %15 = tensordsl.floor %h : tensor<3xf16>
  %16 = tensordsl.round %a : tensor<4x8xf32>
  %17 = tensordsl.trunc %h : tensor<3xf16>
  %18 = tensordsl.sign %a : tensor<4x8xf32>
  %19 = tensordsl.square %h : tensor<3xf16>
  %20 = tensordsl.reciprocal %a : tensor<4x8xf32>
  %21 = tensordsl.copy %h : tensor<3xf16>
  %22 = tensordsl.conj %a : tensor<4x8xf32>
  %23 = tensordsl.ones_like %h : tensor<3xf16>
  func.return
}

// CHECK-LABEL: func.func @unary(%a: tensor<4x8xf32>, %h: tensor<3xf16>) {
// CHECK-NEXT: %{{.*}} = tensordsl.cos %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.tan %h : tensor<3xf16>
// CHECK-NEXT: %{{.*}} = tensordsl.arcsin %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.arccos %h : tensor<3xf16>
// CHECK-NEXT: %{{.*}} = tensordsl.arctan %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.sinh %h : tensor<3xf16>
// CHECK-NEXT: %{{.*}} = tensordsl.cosh %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.arcsinh %h : tensor<3xf16>
// CHECK-NEXT: %{{.*}} = tensordsl.arccosh %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.arctanh %h : tensor<3xf16>
// CHECK-NEXT: %{{.*}} = tensordsl.log1p %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.log10 %h : tensor<3xf16>
// CHECK-NEXT: %{{.*}} = tensordsl.log2 %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.expm1 %h : tensor<3xf16>
// CHECK-NEXT: %{{.*}} = tensordsl.ceil %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.floor %h : tensor<3xf16>
// CHECK-NEXT: %{{.*}} = tensordsl.round %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.trunc %h : tensor<3xf16>
// CHECK-NEXT: %{{.*}} = tensordsl.sign %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.square %h : tensor<3xf16>
// CHECK-NEXT: %{{.*}} = tensordsl.reciprocal %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.copy %h : tensor<3xf16>
// CHECK-NEXT: %{{.*}} = tensordsl.conj %a : tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = tensordsl.ones_like %h : tensor<3xf16>
// CHECK-NEXT: func.return
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "unary"
// CHECK-GENERIC-NEXT: ^bb0(%a: tensor<4x8xf32>, %h: tensor<3xf16>):
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.cos"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.tan"(%h) : (tensor<3xf16>) -> tensor<3xf16>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.arcsin"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.arccos"(%h) : (tensor<3xf16>) -> tensor<3xf16>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.arctan"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.sinh"(%h) : (tensor<3xf16>) -> tensor<3xf16>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.cosh"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.arcsinh"(%h) : (tensor<3xf16>) -> tensor<3xf16>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.arccosh"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.arctanh"(%h) : (tensor<3xf16>) -> tensor<3xf16>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.log1p"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.log10"(%h) : (tensor<3xf16>) -> tensor<3xf16>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.log2"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.expm1"(%h) : (tensor<3xf16>) -> tensor<3xf16>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.ceil"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.floor"(%h) : (tensor<3xf16>) -> tensor<3xf16>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.round"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.trunc"(%h) : (tensor<3xf16>) -> tensor<3xf16>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.sign"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.square"(%h) : (tensor<3xf16>) -> tensor<3xf16>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.reciprocal"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.copy"(%h) : (tensor<3xf16>) -> tensor<3xf16>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.conj"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.ones_like"(%h) : (tensor<3xf16>) -> tensor<3xf16>

func.func @binary(%a: tensor<4x8xf64>, %b: tensor<8xf64>) {
  %0 = tensordsl.power %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %1 = tensordsl.remainder %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %2 = tensordsl.fmod %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %3 = tensordsl.arctan2 %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %4 = tensordsl.hypot %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %5 = tensordsl.copysign %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %6 = tensordsl.nextafter %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  func.return
}

// CHECK-LABEL: func.func @binary(%a: tensor<4x8xf64>, %b: tensor<8xf64>) {
// CHECK-NEXT: %{{.*}} = tensordsl.power %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-NEXT: %{{.*}} = tensordsl.remainder %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-NEXT: %{{.*}} = tensordsl.fmod %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-NEXT: %{{.*}} = tensordsl.arctan2 %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-NEXT: %{{.*}} = tensordsl.hypot %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-NEXT: %{{.*}} = tensordsl.copysign %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-NEXT: %{{.*}} = tensordsl.nextafter %a, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-NEXT: func.return
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "binary"
// CHECK-GENERIC-NEXT: ^bb0(%a: tensor<4x8xf64>, %b: tensor<8xf64>):
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.power"(%a, %b) : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.remainder"(%a, %b) : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.fmod"(%a, %b) : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.arctan2"(%a, %b) : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.hypot"(%a, %b) : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.copysign"(%a, %b) : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
// CHECK-GENERIC-NEXT: %{{.*}} = "tensordsl.nextafter"(%a, %b) : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>

func.func @booleans(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %m: tensor<4x8xi1>) -> (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8x4xi1>) {
  %0 = tensordsl.less %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %1 = tensordsl.less_equal %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %2 = tensordsl.equal %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %3 = tensordsl.not_equal %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %4 = tensordsl.greater_equal %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %5 = tensordsl.greater %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %6 = tensordsl.and %0, %m : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
  %7 = tensordsl.or %6, %5 : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
  %8 = tensordsl.not %7 : tensor<4x8xi1>
  %9 = tensordsl.where %8, %a, %b : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %10 = tensordsl.cast %m : tensor<4x8xi1> -> tensor<4x8xf32>
  %11 = tensordsl.transpose %m : tensor<4x8xi1> -> tensor<8x4xi1>
  func.return %8, %9, %11 : tensor<4x8xi1>, tensor<4x8xf32>, tensor<8x4xi1>
}

// CHECK-LABEL: func.func @booleans(
// CHECK-NEXT: [[LT:%.*]] = tensordsl.less %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT: tensordsl.less_equal
// CHECK-NEXT: tensordsl.equal
// CHECK-NEXT: tensordsl.not_equal
// CHECK-NEXT: tensordsl.greater_equal
// CHECK-NEXT: [[GT:%.*]] = tensordsl.greater %a, %b
// CHECK-NEXT: [[AND:%.*]] = tensordsl.and [[LT]], %m : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
// CHECK-NEXT: [[OR:%.*]] = tensordsl.or [[AND]], [[GT]]
// CHECK-NEXT: [[NOT:%.*]] = tensordsl.not [[OR]] : tensor<4x8xi1>
// CHECK-NEXT: tensordsl.where [[NOT]], %a, %b : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: tensordsl.cast %m : tensor<4x8xi1> -> tensor<4x8xf32>
// CHECK-NEXT: tensordsl.transpose %m : tensor<4x8xi1> -> tensor<8x4xi1>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "booleans"
// CHECK-GENERIC: "tensordsl.where"(%{{.*}}, %a, %b) : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>

func.func @reductions(%a: tensor<4x8xf16>) -> (tensor<8xf16>, tensor<4x1xf16>, tensor<4x8xf16>) {
  %0 = tensordsl.min %a axis = 0 : tensor<4x8xf16> -> tensor<8xf16>
  %1 = tensordsl.prod %a axis = -1 keepdims : tensor<4x8xf16> -> tensor<4x1xf16>
  %2 = tensordsl.log_softmax %a axis = 0 : tensor<4x8xf16>
  func.return %0, %1, %2 : tensor<8xf16>, tensor<4x1xf16>, tensor<4x8xf16>
}

// CHECK-LABEL: func.func @reductions(
// CHECK-NEXT: tensordsl.min %a axis = 0 : tensor<4x8xf16> -> tensor<8xf16>
// CHECK-NEXT: tensordsl.prod %a axis = -1 keepdims : tensor<4x8xf16> -> tensor<4x1xf16>
// CHECK-NEXT: tensordsl.log_softmax %a axis = 0 : tensor<4x8xf16>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "reductions"
// CHECK-GENERIC: "tensordsl.log_softmax"(%a) <{axis = 0 : i64}> : (tensor<4x8xf16>) -> tensor<4x8xf16>
