// RUN: tdsl-opt %s | tdsl-opt | filecheck %s
// RUN: %roundtrip-and-generic

// kernel.fused, kernel.tile and kernel.yield in custom syntax: custom -> custom,
// generic -> custom, and the generic form itself.

func.func @fused(%x: tensor<64x128xf32>, %w: tensor<128x256xf32>, %b: tensor<256xf32>) -> tensor<64x256xf32> {
  %y = kernel.fused(%x, %w, %b) group "g0" budget 1000000 : (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<64x256xf32> {
  ^bb0(%x1: tensor<64x128xf32>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>):
    %0 = tensordsl.matmul %x1, %w1 : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
    %1 = tensordsl.add %0, %b1 : (tensor<64x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
    %2 = tensordsl.relu %1 : tensor<64x256xf32>
    kernel.yield %2 : tensor<64x256xf32>
  }
  func.return %y : tensor<64x256xf32>
}

// CHECK-LABEL: func.func @fused(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<64x128xf32>, [[W:%[a-z0-9_]+]]: tensor<128x256xf32>, [[B:%[a-z0-9_]+]]: tensor<256xf32>) -> tensor<64x256xf32> {
// CHECK-NEXT: [[Y:%[a-z0-9_]+]] = kernel.fused([[X]], [[W]], [[B]]) group "g0" budget 1000000 : (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<64x256xf32> {
// CHECK-NEXT: ^bb0([[X1:%[a-z0-9_]+]]: tensor<64x128xf32>, [[W1:%[a-z0-9_]+]]: tensor<128x256xf32>, [[B1:%[a-z0-9_]+]]: tensor<256xf32>):
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.matmul [[X1]], [[W1]] : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.add [[V0]], [[B1]] : (tensor<64x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.relu [[V1]] : tensor<64x256xf32>
// CHECK-NEXT: kernel.yield [[V2]] : tensor<64x256xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return [[Y]] : tensor<64x256xf32>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "fused"
// CHECK-GENERIC-SAME: , function_type = (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>}> ({
// CHECK-GENERIC-NEXT: ^bb0([[X:%[a-z0-9_]+]]: tensor<64x128xf32>, [[W:%[a-z0-9_]+]]: tensor<128x256xf32>, [[B:%[a-z0-9_]+]]: tensor<256xf32>):
// CHECK-GENERIC-NEXT: [[Y:%[a-z0-9_]+]] = "kernel.fused"([[X]], [[W]], [[B]]) <{group = "g0", budget = 1000000 : i64}> ({
// CHECK-GENERIC-NEXT: ^bb0([[X1:%[a-z0-9_]+]]: tensor<64x128xf32>, [[W1:%[a-z0-9_]+]]: tensor<128x256xf32>, [[B1:%[a-z0-9_]+]]: tensor<256xf32>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.matmul"([[X1]], [[W1]]) : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.add"([[V0]], [[B1]]) : (tensor<64x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
// CHECK-GENERIC-NEXT: [[V2:%[a-z0-9_]+]] = "tensordsl.relu"([[V1]]) : (tensor<64x256xf32>) -> tensor<64x256xf32>
// CHECK-GENERIC-NEXT: "kernel.yield"([[V2]]) : (tensor<64x256xf32>) -> ()
// CHECK-GENERIC-NEXT: }) : (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
// CHECK-GENERIC-NEXT: "func.return"([[Y]]) : (tensor<64x256xf32>) -> ()

func.func @fused_several_results(%x: tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4xf16>) {
  %r, %s = kernel.fused(%x) : (tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4xf16>) {
  ^bb0(%x1: tensor<4x8xf16>):
    %0 = tensordsl.exp %x1 : tensor<4x8xf16>
    %1 = tensordsl.sum %0 axis = 1 : tensor<4x8xf16> -> tensor<4xf16>
    kernel.yield %0, %1 : tensor<4x8xf16>, tensor<4xf16>
  }
  func.return %r, %s : tensor<4x8xf16>, tensor<4xf16>
}

// CHECK-LABEL: func.func @fused_several_results(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4xf16>) {
// CHECK-NEXT: [[R:%[a-z0-9_]+]], [[S:%[a-z0-9_]+]] = kernel.fused([[X]]) : (tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4xf16>) {
// CHECK-NEXT: ^bb0([[X1:%[a-z0-9_]+]]: tensor<4x8xf16>):
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.exp [[X1]] : tensor<4x8xf16>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.sum [[V0]] axis = 1 : tensor<4x8xf16> -> tensor<4xf16>
// CHECK-NEXT: kernel.yield [[V0]], [[V1]] : tensor<4x8xf16>, tensor<4xf16>
// CHECK-NEXT: }
// CHECK-NEXT: func.return [[R]], [[S]] : tensor<4x8xf16>, tensor<4xf16>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "fused_several_results"
// CHECK-GENERIC-SAME: , function_type = (tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4xf16>)}> ({
// CHECK-GENERIC-NEXT: ^bb0([[X:%[a-z0-9_]+]]: tensor<4x8xf16>):
// CHECK-GENERIC-NEXT: [[R:%[a-z0-9_]+]], [[S:%[a-z0-9_]+]] = "kernel.fused"([[X]]) ({
// CHECK-GENERIC-NEXT: ^bb0([[X1:%[a-z0-9_]+]]: tensor<4x8xf16>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.exp"([[X1]]) : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.sum"([[V0]]) <{axis = 1 : i64}> : (tensor<4x8xf16>) -> tensor<4xf16>
// CHECK-GENERIC-NEXT: "kernel.yield"([[V0]], [[V1]]) : (tensor<4x8xf16>, tensor<4xf16>) -> ()
// CHECK-GENERIC-NEXT: }) : (tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4xf16>)
// CHECK-GENERIC-NEXT: "func.return"([[R]], [[S]]) : (tensor<4x8xf16>, tensor<4xf16>) -> ()

func.func @fused_without_inputs() -> tensor<f64> {
  %c = kernel.fused() group "consts" : () -> tensor<f64> {
    %0 = tensordsl.constant dense<2.0> : tensor<f64>
    kernel.yield %0 : tensor<f64>
  }
  func.return %c : tensor<f64>
}

// CHECK-LABEL: func.func @fused_without_inputs(
// CHECK-SAME: ) -> tensor<f64> {
// CHECK-NEXT: [[C:%[a-z0-9_]+]] = kernel.fused() group "consts" : () -> tensor<f64> {
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.constant dense<2.000000e+00> : tensor<f64>
// CHECK-NEXT: kernel.yield [[V0]] : tensor<f64>
// CHECK-NEXT: }
// CHECK-NEXT: func.return [[C]] : tensor<f64>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "fused_without_inputs"
// CHECK-GENERIC-SAME: , function_type = () -> tensor<f64>}> ({
// CHECK-GENERIC-NEXT: [[C:%[a-z0-9_]+]] = "kernel.fused"() <{group = "consts"}> ({
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.constant"() <{value = dense<2.000000e+00> : tensor<f64>}> : () -> tensor<f64>
// CHECK-GENERIC-NEXT: "kernel.yield"([[V0]]) : (tensor<f64>) -> ()
// CHECK-GENERIC-NEXT: }) : () -> tensor<f64>
// CHECK-GENERIC-NEXT: "func.return"([[C]]) : (tensor<f64>) -> ()

func.func @tile(%x: tensor<64x128xf32>, %w: tensor<128x256xf32>, %b: tensor<256xf32>) -> tensor<64x256xf32> {
  %y = kernel.tile(%x, %w, %b) group "g0" space [64, 256, 128] iterators ["parallel", "parallel", "reduction"] tiles [16, 256, 128] scratch []
      ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d1)>]
      outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<64x256xf32> {
  ^bb0(%x1: tensor<16x128xf32>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>):
    %0 = tensordsl.matmul %x1, %w1 : (tensor<16x128xf32>, tensor<128x256xf32>) -> tensor<16x256xf32>
    %1 = tensordsl.add %0, %b1 : (tensor<16x256xf32>, tensor<256xf32>) -> tensor<16x256xf32>
    %2 = tensordsl.relu %1 : tensor<16x256xf32>
    kernel.yield %2 : tensor<16x256xf32>
  }
  func.return %y : tensor<64x256xf32>
}

// CHECK-LABEL: func.func @tile(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<64x128xf32>, [[W:%[a-z0-9_]+]]: tensor<128x256xf32>, [[B:%[a-z0-9_]+]]: tensor<256xf32>) -> tensor<64x256xf32> {
// CHECK-NEXT: [[Y:%[a-z0-9_]+]] = kernel.tile([[X]], [[W]], [[B]]) group "g0" space [64, 256, 128] iterators ["parallel", "parallel", "reduction"] tiles [16, 256, 128] scratch []
// CHECK-NEXT: ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d1)>]
// CHECK-NEXT: outs [affine_map<(d0, d1, d2) -> (d0, d1)>] : (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<64x256xf32> {
// CHECK-NEXT: ^bb0([[X1:%[a-z0-9_]+]]: tensor<16x128xf32>, [[W1:%[a-z0-9_]+]]: tensor<128x256xf32>, [[B1:%[a-z0-9_]+]]: tensor<256xf32>):
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.matmul [[X1]], [[W1]] : (tensor<16x128xf32>, tensor<128x256xf32>) -> tensor<16x256xf32>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.add [[V0]], [[B1]] : (tensor<16x256xf32>, tensor<256xf32>) -> tensor<16x256xf32>
// CHECK-NEXT: [[V2:%[a-z0-9_]+]] = tensordsl.relu [[V1]] : tensor<16x256xf32>
// CHECK-NEXT: kernel.yield [[V2]] : tensor<16x256xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return [[Y]] : tensor<64x256xf32>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "tile"
// CHECK-GENERIC-SAME: , function_type = (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>}> ({
// CHECK-GENERIC-NEXT: ^bb0([[X:%[a-z0-9_]+]]: tensor<64x128xf32>, [[W:%[a-z0-9_]+]]: tensor<128x256xf32>, [[B:%[a-z0-9_]+]]: tensor<256xf32>):
// CHECK-GENERIC-NEXT: [[Y:%[a-z0-9_]+]] = "kernel.tile"([[X]], [[W]], [[B]]) <{group = "g0", space = array<i64: 64, 256, 128>, iterators = ["parallel", "parallel", "reduction"], tiles = array<i64: 16, 256, 128>, scratch = [], in_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d1)>], out_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>]}> ({
// CHECK-GENERIC-NEXT: ^bb0([[X1:%[a-z0-9_]+]]: tensor<16x128xf32>, [[W1:%[a-z0-9_]+]]: tensor<128x256xf32>, [[B1:%[a-z0-9_]+]]: tensor<256xf32>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.matmul"([[X1]], [[W1]]) : (tensor<16x128xf32>, tensor<128x256xf32>) -> tensor<16x256xf32>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.add"([[V0]], [[B1]]) : (tensor<16x256xf32>, tensor<256xf32>) -> tensor<16x256xf32>
// CHECK-GENERIC-NEXT: [[V2:%[a-z0-9_]+]] = "tensordsl.relu"([[V1]]) : (tensor<16x256xf32>) -> tensor<16x256xf32>
// CHECK-GENERIC-NEXT: "kernel.yield"([[V2]]) : (tensor<16x256xf32>) -> ()
// CHECK-GENERIC-NEXT: }) : (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
// CHECK-GENERIC-NEXT: "func.return"([[Y]]) : (tensor<64x256xf32>) -> ()

// Remainder tiles (10 rows in tiles of 4), two results, and a reduction dim
// that stays whole: softmax writes its output in place and keeps its row
// statistics (4 rows) in the one scratch buffer.
func.func @tile_remainder_and_two_results(%x: tensor<10x6xf64>) -> (tensor<10x6xf64>, tensor<10xf64>) {
  %s, %m = kernel.tile(%x) space [10, 6] iterators ["parallel", "reduction"] tiles [4, 6] scratch [memref<4xf64>]
      ins [affine_map<(d0, d1) -> (d0, d1)>]
      outs [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>] : (tensor<10x6xf64>) -> (tensor<10x6xf64>, tensor<10xf64>) {
  ^bb0(%x1: tensor<4x6xf64>):
    %0 = tensordsl.softmax %x1 : tensor<4x6xf64>
    %1 = tensordsl.max %x1 axis = -1 : tensor<4x6xf64> -> tensor<4xf64>
    kernel.yield %0, %1 : tensor<4x6xf64>, tensor<4xf64>
  }
  func.return %s, %m : tensor<10x6xf64>, tensor<10xf64>
}

// CHECK-LABEL: func.func @tile_remainder_and_two_results(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<10x6xf64>) -> (tensor<10x6xf64>, tensor<10xf64>) {
// CHECK-NEXT: [[S:%[a-z0-9_]+]], [[M:%[a-z0-9_]+]] = kernel.tile([[X]]) space [10, 6] iterators ["parallel", "reduction"] tiles [4, 6] scratch [memref<4xf64>]
// CHECK-NEXT: ins [affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-NEXT: outs [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>] : (tensor<10x6xf64>) -> (tensor<10x6xf64>, tensor<10xf64>) {
// CHECK-NEXT: ^bb0([[X1:%[a-z0-9_]+]]: tensor<4x6xf64>):
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.softmax [[X1]] : tensor<4x6xf64>
// CHECK-NEXT: [[V1:%[a-z0-9_]+]] = tensordsl.max [[X1]] axis = -1 : tensor<4x6xf64> -> tensor<4xf64>
// CHECK-NEXT: kernel.yield [[V0]], [[V1]] : tensor<4x6xf64>, tensor<4xf64>
// CHECK-NEXT: }
// CHECK-NEXT: func.return [[S]], [[M]] : tensor<10x6xf64>, tensor<10xf64>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "tile_remainder_and_two_results"
// CHECK-GENERIC-SAME: , function_type = (tensor<10x6xf64>) -> (tensor<10x6xf64>, tensor<10xf64>)}> ({
// CHECK-GENERIC-NEXT: ^bb0([[X:%[a-z0-9_]+]]: tensor<10x6xf64>):
// CHECK-GENERIC-NEXT: [[S:%[a-z0-9_]+]], [[M:%[a-z0-9_]+]] = "kernel.tile"([[X]]) <{space = array<i64: 10, 6>, iterators = ["parallel", "reduction"], tiles = array<i64: 4, 6>, scratch = [memref<4xf64>], in_maps = [affine_map<(d0, d1) -> (d0, d1)>], out_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>]}> ({
// CHECK-GENERIC-NEXT: ^bb0([[X1:%[a-z0-9_]+]]: tensor<4x6xf64>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.softmax"([[X1]]) <{axis = -1 : i64}> : (tensor<4x6xf64>) -> tensor<4x6xf64>
// CHECK-GENERIC-NEXT: [[V1:%[a-z0-9_]+]] = "tensordsl.max"([[X1]]) <{axis = -1 : i64}> : (tensor<4x6xf64>) -> tensor<4xf64>
// CHECK-GENERIC-NEXT: "kernel.yield"([[V0]], [[V1]]) : (tensor<4x6xf64>, tensor<4xf64>) -> ()
// CHECK-GENERIC-NEXT: }) : (tensor<10x6xf64>) -> (tensor<10x6xf64>, tensor<10xf64>)
// CHECK-GENERIC-NEXT: "func.return"([[S]], [[M]]) : (tensor<10x6xf64>, tensor<10xf64>) -> ()

// A reduction dim tiled: the body runs in passes, the sum accumulates.
func.func @tile_accumulate(%x: tensor<8x100xf32>) -> tensor<8xf32> {
  %s = kernel.tile(%x) space [8, 100] iterators ["parallel", "reduction"] tiles [8, 25] scratch [memref<200xf32>, memref<8xf32>]
      ins [affine_map<(d0, d1) -> (d0, d1)>]
      outs [affine_map<(d0, d1) -> (d0)>] : (tensor<8x100xf32>) -> tensor<8xf32> {
  ^bb0(%x1: tensor<8x25xf32>):
    %0 = tensordsl.exp %x1 : tensor<8x25xf32>
    %1 = tensordsl.sum %0 axis = 1 : tensor<8x25xf32> -> tensor<8xf32>
    kernel.yield %1 : tensor<8xf32>
  }
  func.return %s : tensor<8xf32>
}

// CHECK-LABEL: func.func @tile_accumulate(
// CHECK: kernel.tile({{.*}}) space [8, 100] iterators ["parallel", "reduction"] tiles [8, 25] scratch [memref<200xf32>, memref<8xf32>]
// CHECK-NEXT: ins [affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-NEXT: outs [affine_map<(d0, d1) -> (d0)>] : (tensor<8x100xf32>) -> tensor<8xf32> {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "tile_accumulate"
// CHECK-GENERIC: "kernel.tile"({{.*}}) <{space = array<i64: 8, 100>, iterators = ["parallel", "reduction"], tiles = array<i64: 8, 25>, scratch = [memref<200xf32>, memref<8xf32>],

func.func @tile_0d(%x: tensor<f32>) -> tensor<f32> {
  %y = kernel.tile(%x) space [] iterators [] tiles [] scratch []
      ins [affine_map<() -> ()>]
      outs [affine_map<() -> ()>] : (tensor<f32>) -> tensor<f32> {
  ^bb0(%x1: tensor<f32>):
    %0 = tensordsl.neg %x1 : tensor<f32>
    kernel.yield %0 : tensor<f32>
  }
  func.return %y : tensor<f32>
}

// CHECK-LABEL: func.func @tile_0d(
// CHECK-SAME: [[X:%[a-z0-9_]+]]: tensor<f32>) -> tensor<f32> {
// CHECK-NEXT: [[Y:%[a-z0-9_]+]] = kernel.tile([[X]]) space [] iterators [] tiles [] scratch []
// CHECK-NEXT: ins [affine_map<() -> ()>]
// CHECK-NEXT: outs [affine_map<() -> ()>] : (tensor<f32>) -> tensor<f32> {
// CHECK-NEXT: ^bb0([[X1:%[a-z0-9_]+]]: tensor<f32>):
// CHECK-NEXT: [[V0:%[a-z0-9_]+]] = tensordsl.neg [[X1]] : tensor<f32>
// CHECK-NEXT: kernel.yield [[V0]] : tensor<f32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return [[Y]] : tensor<f32>
// CHECK-NEXT: }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "tile_0d"
// CHECK-GENERIC-SAME: , function_type = (tensor<f32>) -> tensor<f32>}> ({
// CHECK-GENERIC-NEXT: ^bb0([[X:%[a-z0-9_]+]]: tensor<f32>):
// CHECK-GENERIC-NEXT: [[Y:%[a-z0-9_]+]] = "kernel.tile"([[X]]) <{space = array<i64>, iterators = [], tiles = array<i64>, scratch = [], in_maps = [affine_map<() -> ()>], out_maps = [affine_map<() -> ()>]}> ({
// CHECK-GENERIC-NEXT: ^bb0([[X1:%[a-z0-9_]+]]: tensor<f32>):
// CHECK-GENERIC-NEXT: [[V0:%[a-z0-9_]+]] = "tensordsl.neg"([[X1]]) : (tensor<f32>) -> tensor<f32>
// CHECK-GENERIC-NEXT: "kernel.yield"([[V0]]) : (tensor<f32>) -> ()
// CHECK-GENERIC-NEXT: }) : (tensor<f32>) -> tensor<f32>
// CHECK-GENERIC-NEXT: "func.return"([[Y]]) : (tensor<f32>) -> ()
