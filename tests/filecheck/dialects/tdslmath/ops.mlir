// RUN: tdsl-opt %s | tdsl-opt | filecheck %s
// RUN: %roundtrip-and-generic

// The scalar ops of tdslmath, in custom and generic form, on each float type.

func.func @scalars(%a: f32, %b: f32, %h: f16, %d: f64) -> (f32, f16, f64) {
  %0 = tdslmath.remf %a, %b : f32
  %1 = tdslmath.nextafter %h, %h : f16
  %2 = tdslmath.hypot %d, %d : f64
  func.return %0, %1, %2 : f32, f16, f64
}

// CHECK-LABEL: func.func @scalars(
// CHECK-NEXT:    %{{.*}} = tdslmath.remf %a, %b : f32
// CHECK-NEXT:    %{{.*}} = tdslmath.nextafter %h, %h : f16
// CHECK-NEXT:    %{{.*}} = tdslmath.hypot %d, %d : f64
// CHECK-GENERIC: "tdslmath.remf"(%a, %b) : (f32, f32) -> f32
// CHECK-GENERIC: "tdslmath.nextafter"(%h, %h) : (f16, f16) -> f16
// CHECK-GENERIC: "tdslmath.hypot"(%d, %d) : (f64, f64) -> f64
