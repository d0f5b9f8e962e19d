func.func @f() {
  %0 = arith.constant 18446744073709551616 : index
  func.return
}
