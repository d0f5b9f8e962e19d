// mlir-opt's habits: `-` reads standard input, an anchored --pass-pipeline,
// IR dumps on stderr (after the last pass too), so stdout stays the output.

// RUN: cat %s | tdsl-opt - --pass-pipeline='builtin.module(tdsl-fuse{memory-budget=64}, tdsl-tile)' \
// RUN:   | filecheck %s --check-prefix=OUT
// OUT: kernel.tile(%a, %b) group "g0"

// RUN: cat %s | tdsl-opt - --fuse --tile --print-ir-after=fuse --print-ir-after=tile 2>&1 >/dev/null \
// RUN:   | filecheck %s --check-prefix=DUMP
// DUMP:      // -----// IR Dump After tdsl-fuse //----- //
// DUMP:      kernel.fused(%a, %b) group "g0"
// DUMP:      // -----// IR Dump After tdsl-tile //----- //
// DUMP:      kernel.tile(%a, %b) group "g0"

// RUN: not tdsl-opt %s -t x86-asm 2>&1 | filecheck %s --check-prefix=TARGET
// TARGET: error: target 'x86-asm' cannot take tdsl IR ('tensordsl.relu' at {{.*}}mlir-habits.mlir:{{[0-9]+}}:8); tdsl's targets are mlir, numpy, llvm, dot

func.func @main(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.relu %a : tensor<4x8xf32>
  %1 = tensordsl.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}
