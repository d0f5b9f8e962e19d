func.func @main(%a: memref<3xi64>, %out: memref<3xi64>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0, %c0] : memref<3xi64>
  memref.store %v, %out[%c0] : memref<3xi64>
  func.return
}
