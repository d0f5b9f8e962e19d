func.func @main(%a: tensor<99999999999999999999xf32>) -> tensor<99999999999999999999xf32> {
  %0 = tensordsl.relu %a : tensor<99999999999999999999xf32>
  func.return %0 : tensor<99999999999999999999xf32>
}
