llvm.func @f(%a: f32, %b: f32) -> i1 {
  %c = "llvm.fcmp"(%a, %b) <{predicate = 64 : i64, fastmathFlags = #llvm.fastmath<none>}> : (f32, f32) -> i1
  llvm.return %c : i1
}
