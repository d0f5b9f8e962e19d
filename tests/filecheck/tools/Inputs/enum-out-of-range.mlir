func.func @f(%a: f32, %b: f32) -> i1 {
  %c = "arith.cmpf"(%a, %b) <{predicate = 99 : i64, fastmath = #arith.fastmath<none>}> : (f32, f32) -> i1
  func.return %c : i1
}
