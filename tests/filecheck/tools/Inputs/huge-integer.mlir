func.func @main(%a: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %0 = kernel.tile(%a) group "g0" space [16, 8] iterators ["parallel", "parallel"] tiles [99999999999999999999, 8] scratch [] sweeps [0]
    ins [affine_map<(d0, d1) -> (d0, d1)>]
    outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<16x8xf32>) -> tensor<16x8xf32> {
  ^bb0(%x: tensor<16x8xf32>):
    %1 = tensordsl.relu %x : tensor<16x8xf32>
    kernel.yield %1 : tensor<16x8xf32>
  }
  func.return %0 : tensor<16x8xf32>
}
