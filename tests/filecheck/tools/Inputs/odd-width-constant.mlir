func.func @main(%a: tensor<4xi64>) -> tensor<4xi64> {
  %1 = "tensordsl.constant"() <{value = dense<1> : tensor<i65>}> : () -> tensor<i64>
  %2 = tensordsl.add %a, %1 : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  func.return %2 : tensor<4xi64>
}
