func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = tensordsl.constant dense<1.0e39> : tensor<f32>
  %0 = tensordsl.add %a, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
