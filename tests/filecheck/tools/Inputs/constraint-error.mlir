func.func @main(%a: tensor<4xi1>) -> tensor<4xi1> {
  %0 = tensordsl.relu %a : tensor<4xi1>
  func.return %0 : tensor<4xi1>
}
