// A math function is expanded once per module: each use calls a private function
// holding the expansion, which LLVM inlines (`alwaysinline`) before it vectorizes the
// loop.  (The expansion is converted once per process: tdsl/backend/llvm/math_outline.py.)
// RUN: tdsl-opt %s --convert-to-llvm | filecheck %s
// RUN: tdsl-opt %s --convert-to-llvm | tdsl-opt | filecheck %s
// RUN: tdsl-opt %s --convert-to-llvm -t llvm | filecheck %s --check-prefix=IR

func.func @f(%a: memref<16xf32>, %b: memref<16xf32>, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 16 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %a[%i] : memref<16xf32>
    %y = memref.load %b[%i] : memref<16xf32>
    %tx = math.tanh %x : f32
    %ty = math.tanh %y : f32
    %e = math.exp %x : f32
    %s = arith.addf %tx, %ty : f32
    %r = arith.addf %s, %e : f32
    memref.store %r, %out[%i] : memref<16xf32>
  }
  func.return
}

// CHECK:      llvm.func @f(
// CHECK:        llvm.call @__tdsl_math_tanh_f32({{%.*}}) : (f32) -> f32
// CHECK:        llvm.call @__tdsl_math_tanh_f32({{%.*}}) : (f32) -> f32
// CHECK:        llvm.call @__tdsl_math_exp_f32({{%.*}}) : (f32) -> f32
// CHECK-NOT:    llvm.call
// CHECK:        llvm.return
// CHECK:      llvm.func internal @__tdsl_math_tanh_f32(%{{.*}}: f32) -> f32 attributes {passthrough = ["alwaysinline"]} {
// CHECK:        llvm.return %{{.*}} : f32
// CHECK:      llvm.func internal @__tdsl_math_exp_f32(%{{.*}}: f32) -> f32 attributes {passthrough = ["alwaysinline"]} {
// CHECK:        llvm.return %{{.*}} : f32
// CHECK-NOT:  llvm.func

// IR:      define void @"f"(
// IR:        call ccc float @"__tdsl_math_tanh_f32"(
// IR:        call ccc float @"__tdsl_math_tanh_f32"(
// IR:        call ccc float @"__tdsl_math_exp_f32"(
// IR:      define internal float @"__tdsl_math_tanh_f32"(float %".1") alwaysinline
// IR:      define internal float @"__tdsl_math_exp_f32"(float %".1") alwaysinline
