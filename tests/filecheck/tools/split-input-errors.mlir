// With --split-input-file every chunk is processed; each error is reported at
// its line in the whole file, and the status is 1 if any chunk failed.

// RUN: not tdsl-opt %s --split-input-file > %t.out 2> %t.err
// RUN: filecheck %s --check-prefix=ERR < %t.err
// RUN: filecheck %s --check-prefix=OUT < %t.out

// OUT: func.func @first
// OUT: // -----
// OUT: // -----
// OUT: // -----
// OUT: func.func @last
func.func @first() {
  func.return
}

// -----

// ERR: split-input-errors.mlir:[[# @LINE + 1]]:20: error: Expected argument or type
func.func @broken( {
}

// -----

func.func @undefined() {
  // ERR: split-input-errors.mlir:[[# @LINE + 1]]:23: error: use of undefined value '%x'
  %0 = tensordsl.relu %x : tensor<f32>
  func.return
}

// -----

func.func @last() {
  func.return
}
