func.func @main() {
  %0 = arith.constant 1 : index
  func.return
}
