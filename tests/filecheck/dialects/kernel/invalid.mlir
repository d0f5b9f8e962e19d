// RUN: tdsl-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: tdsl-opt %s --split-input-file --verify-expected-errors

// Every verifier error of the kernel dialect.
// The CHECK lines check each message whole; the expected-error annotations check
// the line each error points at (--verify-expected-errors).

%x = "test.op"() : () -> tensor<4xf32>
// expected-error@+1 {{'kernel.fused' op memory budget 0 must be positive}}
%0 = kernel.fused(%x) budget 0 : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: tensor<4xf32>):
  kernel.yield %a : tensor<4xf32>
}
// CHECK: 'kernel.fused' op memory budget 0 must be positive

// -----

%x = "test.op"() : () -> tensor<4xf32>
// expected-error@+1 {{'kernel.fused' op body arguments}}
%0 = kernel.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: tensor<4xf64>):
  %c = tensordsl.cast %a : tensor<4xf64> -> tensor<4xf32>
  kernel.yield %c : tensor<4xf32>
}
// CHECK: 'kernel.fused' op body arguments (tensor<4xf64>) do not match the operands (tensor<4xf32>)

// -----

// Groups are isolated from above: everything the body reads is an operand.
%x = "test.op"() : () -> tensor<4xf32>
%0 = kernel.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: tensor<4xf32>):
  // expected-error@+1 {{'tensordsl.add' op operand #1 is defined outside the 'kernel.fused'}}
  %s = tensordsl.add %a, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  kernel.yield %s : tensor<4xf32>
}
// CHECK: 'tensordsl.add' op operand #1 is defined outside the 'kernel.fused' op holding it, which is isolated from above (pass the value in as an operand)

// -----

%x = "test.op"() : () -> tensor<4xf32>
// expected-error@+1 {{'kernel.fused' op body arguments}}
%0 = kernel.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
  kernel.yield %a : tensor<4xf32>
}
// CHECK: 'kernel.fused' op body arguments (tensor<4xf32>, tensor<4xf32>) do not match the operands (tensor<4xf32>)

// -----

%x = "test.op"() : () -> tensor<4xf32>
// expected-error@+1 {{'kernel.fused' op body must end in kernel.yield}}
%0 = kernel.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: tensor<4xf32>):
  "test.termop"() : () -> ()
}
// CHECK: 'kernel.fused' op body must end in kernel.yield

// -----

%x = "test.op"() : () -> tensor<4xf32>
%0 = kernel.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: tensor<4xf32>):
  // expected-error@+1 {{Operation tensordsl.relu terminates block in single-block region but}}
  %1 = tensordsl.relu %a : tensor<4xf32>
}
// CHECK: Operation tensordsl.relu terminates block in single-block region but is not a terminator

// -----

%x = "test.op"() : () -> tensor<4xf32>
// expected-error@+1 {{'kernel.fused' op body yields}}
%0 = kernel.fused(%x) : (tensor<4xf32>) -> tensor<4xf64> {
^bb0(%a: tensor<4xf32>):
  kernel.yield %a : tensor<4xf32>
}
// CHECK: 'kernel.fused' op body yields (tensor<4xf32>) but the op expects (tensor<4xf64>)

// -----

%x = "test.op"() : () -> tensor<4xf32>
// expected-error@+1 {{'kernel.fused' op body yields}}
%0, %1 = kernel.fused(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
^bb0(%a: tensor<4xf32>):
  kernel.yield %a : tensor<4xf32>
}
// CHECK: 'kernel.fused' op body yields (tensor<4xf32>) but the op expects (tensor<4xf32>, tensor<4xf32>)

// -----

%x = "test.op"() : () -> tensor<4xf32>
// expected-error@+1 {{'kernel.yield' expects parent op to be one of 'kernel.fused',}}
kernel.yield %x : tensor<4xf32>
// CHECK: 'kernel.yield' expects parent op to be one of 'kernel.fused', 'kernel.tile'

// -----

%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op has 1 tile sizes for a 2-d iteration space}}
%0 = kernel.tile(%x) space [8, 4] iterators ["parallel", "parallel"] tiles [2] scratch [] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<8x4xf32>) -> tensor<8x4xf32> {
^bb0(%a: tensor<2x4xf32>):
  kernel.yield %a : tensor<2x4xf32>
}
// CHECK: 'kernel.tile' op has 1 tile sizes for a 2-d iteration space

// -----

%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op has 1 iterator kinds for a 2-d iteration space}}
%0 = kernel.tile(%x) space [8, 4] iterators ["parallel"] tiles [2, 4] scratch [] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<8x4xf32>) -> tensor<8x4xf32> {
^bb0(%a: tensor<2x4xf32>):
  kernel.yield %a : tensor<2x4xf32>
}
// CHECK: 'kernel.tile' op has 1 iterator kinds for a 2-d iteration space

// -----

%x = "test.op"() : () -> tensor<8xf32>
// expected-error@+1 {{'kernel.tile' op iterator kind "sideways" must be "parallel",}}
%0 = kernel.tile(%x) space [8] iterators ["sideways"] tiles [2] scratch [] ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0)>] : (tensor<8xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2xf32>):
  kernel.yield %a : tensor<2xf32>
}
// CHECK: 'kernel.tile' op iterator kind "sideways" must be "parallel", "reduction", "normalize" or "scan"

// -----

%x = "test.op"() : () -> tensor<8xf32>
// expected-error@+1 {{'kernel.tile' op space extent -8 is negative}}
%0 = kernel.tile(%x) space [-8] iterators ["parallel"] tiles [2] scratch [] ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0)>] : (tensor<8xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<8xf32>):
  kernel.yield %a : tensor<8xf32>
}
// CHECK: 'kernel.tile' op space extent -8 is negative

// -----

%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op tile size 0 along d1 must be positive}}
%0 = kernel.tile(%x) space [8, 4] iterators ["parallel", "parallel"] tiles [2, 0] scratch [] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<8x4xf32>) -> tensor<8x4xf32> {
^bb0(%a: tensor<2x4xf32>):
  kernel.yield %a : tensor<2x4xf32>
}
// CHECK: 'kernel.tile' op tile size 0 along d1 must be positive

// -----

%x = "test.op"() : () -> tensor<8xf32>
// expected-error@+1 {{'kernel.tile' op scratch buffer memref<?xf32> must be a plain 1-d memref of}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [2] scratch [memref<?xf32>] ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0)>] : (tensor<8xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2xf32>):
  kernel.yield %a : tensor<2xf32>
}
// CHECK: 'kernel.tile' op scratch buffer memref<?xf32> must be a plain 1-d memref of static size and of a tensor element type (memref<4096xf32>)

// -----

%x = "test.op"() : () -> tensor<8xf32>
// expected-error@+1 {{'kernel.tile' op has 0 input maps for 1 operands}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [2] scratch [] ins [] outs [affine_map<(d0) -> (d0)>] : (tensor<8xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2xf32>):
  kernel.yield %a : tensor<2xf32>
}
// CHECK: 'kernel.tile' op has 0 input maps for 1 operands

// -----

%x = "test.op"() : () -> tensor<8xf32>
// expected-error@+1 {{'kernel.tile' op has 2 output maps for 1 results}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [2] scratch [] ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>] : (tensor<8xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2xf32>):
  kernel.yield %a : tensor<2xf32>
}
// CHECK: 'kernel.tile' op has 2 output maps for 1 results

// -----

// The constant 0 is for broadcast dims of extent 1: a whole dim is an iteration dim.
%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op operand #0}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [2] scratch [] ins [affine_map<(d0) -> (d0, 0)>] outs [affine_map<(d0) -> (d0, 0)>] : (tensor<8x4xf32>) -> tensor<8x4xf32> {
^bb0(%a: tensor<2x4xf32>):
  kernel.yield %a : tensor<2x4xf32>
}
// CHECK: 'kernel.tile' op operand #0 (tensor<8x4xf32>) maps a dim of extent 4 to 0: only broadcast dims of extent 1 may

// -----

// A result must follow the dims its value runs along: a sum over d0 has none.
%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op iterators do not match its body, which needs}}
%0 = kernel.tile(%x) space [8, 4] iterators ["reduction", "parallel"] tiles [8, 4] scratch [] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d1)>] : (tensor<8x4xf32>) -> tensor<4xf32> {
^bb0(%a: tensor<8x4xf32>):
  %s = tensordsl.sum %a axis = 1 : tensor<8x4xf32> -> tensor<8xf32>
  %t = tensordsl.sum %a axis = 0 : tensor<8x4xf32> -> tensor<4xf32>
  kernel.yield %t : tensor<4xf32>
}
// CHECK: 'kernel.tile' op iterators do not match its body, which needs ["reduction", "reduction"]

// -----

%x = "test.op"() : () -> tensor<8x8xf32>
// expected-error@+1 {{'kernel.tile' op result #0 map}}
%0 = kernel.tile(%x) space [8, 8] iterators ["parallel", "parallel"] tiles [8, 8] scratch [] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d1, d0)>] : (tensor<8x8xf32>) -> tensor<8x8xf32> {
^bb0(%a: tensor<8x8xf32>):
  %e = tensordsl.exp %a : tensor<8x8xf32>
  kernel.yield %e : tensor<8x8xf32>
}
// CHECK: 'kernel.tile' op result #0 map (d0, d1) -> (d1, d0) does not follow the dims its value runs along (d0, d1)

// -----

// The recorded scratch must be what the recorded plan needs.
%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op records scratch [] but its plan needs [memref<8xf32>]}}
%0 = kernel.tile(%x) space [8, 4] iterators ["parallel", "parallel"] tiles [2, 4] scratch [] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<8x4xf32>) -> tensor<8x4xf32> {
^bb0(%a: tensor<2x4xf32>):
  %e = tensordsl.exp %a : tensor<2x4xf32>
  %t = tensordsl.tanh %a : tensor<2x4xf32>
  %s = tensordsl.add %e, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  kernel.yield %s : tensor<2x4xf32>
}
// CHECK: 'kernel.tile' op records scratch [] but its plan needs [memref<8xf32>]

// -----

// A scratch buffer is a 1-d memref of static size, of a type tdsl computes on.
%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op scratch buffer memref<8xbf16> must be a plain 1-d memref}}
%0 = kernel.tile(%x) space [8, 4] iterators ["parallel", "parallel"] tiles [2, 4] scratch [memref<8xbf16>] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<8x4xf32>) -> tensor<8x4xf32> {
^bb0(%a: tensor<2x4xf32>):
  %e = tensordsl.exp %a : tensor<2x4xf32>
  %t = tensordsl.tanh %a : tensor<2x4xf32>
  %s = tensordsl.add %e, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  kernel.yield %s : tensor<2x4xf32>
}
// CHECK: 'kernel.tile' op scratch buffer memref<8xbf16> must be a plain 1-d memref of static size and of a tensor element type (memref<4096xf32>)

// -----

%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op scratch buffer memref<2x4xf32> must be a plain 1-d memref}}
%0 = kernel.tile(%x) space [8, 4] iterators ["parallel", "parallel"] tiles [2, 4] scratch [memref<2x4xf32>] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<8x4xf32>) -> tensor<8x4xf32> {
^bb0(%a: tensor<2x4xf32>):
  %e = tensordsl.exp %a : tensor<2x4xf32>
  %t = tensordsl.tanh %a : tensor<2x4xf32>
  %s = tensordsl.add %e, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  kernel.yield %s : tensor<2x4xf32>
}
// CHECK: 'kernel.tile' op scratch buffer memref<2x4xf32> must be a plain 1-d memref of static size and of a tensor element type (memref<4096xf32>)

// -----

// A scratch buffer with a layout or a memory space (the targets allocate plain ones).
%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op scratch buffer memref<8xf32, strided<[2]>> must be a plain 1-d memref}}
%0 = kernel.tile(%x) space [8, 4] iterators ["parallel", "parallel"] tiles [2, 4] scratch [memref<8xf32, strided<[2]>>] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<8x4xf32>) -> tensor<8x4xf32> {
^bb0(%a: tensor<2x4xf32>):
  %e = tensordsl.exp %a : tensor<2x4xf32>
  %t = tensordsl.tanh %a : tensor<2x4xf32>
  %s = tensordsl.add %e, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  kernel.yield %s : tensor<2x4xf32>
}
// CHECK: 'kernel.tile' op scratch buffer memref<8xf32, strided<[2]>> must be a plain 1-d memref of static size and of a tensor element type (memref<4096xf32>)

// -----

// A softmax tile must hold whole rows.
%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op cannot run its recorded plan}}
%0 = kernel.tile(%x) space [8, 4] iterators ["parallel", "normalize"] tiles [8, 2] scratch [] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<8x4xf32>) -> tensor<8x4xf32> {
^bb0(%a: tensor<8x2xf32>):
  %s = tensordsl.softmax %a : tensor<8x2xf32>
  kernel.yield %s : tensor<8x2xf32>
}
// CHECK: 'kernel.tile' op cannot run its recorded plan: 'tensordsl.softmax' normalizes along d1, which is tiled: the tile would not hold whole rows

// -----

%x = "test.op"() : () -> tensor<8xf32>
// expected-error@+1 {{'kernel.tile' op body holds 'test.op', which does not implement the}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [2] scratch [] ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0)>] : (tensor<8xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2xf32>):
  %r = "test.op"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  kernel.yield %r : tensor<2xf32>
}
// CHECK: 'kernel.tile' op body holds 'test.op', which does not implement the structured-op interface

// -----

%x = "test.op"() : () -> tensor<8xf32>
// expected-error@+1 {{'kernel.tile' op operand #0 map}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [2] scratch [] ins [affine_map<(d0, d1) -> (d0)>] outs [affine_map<(d0) -> (d0)>] : (tensor<8xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2xf32>):
  kernel.yield %a : tensor<2xf32>
}
// CHECK: 'kernel.tile' op operand #0 map (d0, d1) -> (d0) must have 1 dims and no symbols

// -----

%x = "test.op"() : () -> tensor<8xf32>
// expected-error@+1 {{'kernel.tile' op operand #0 map}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [2] scratch [] ins [affine_map<(d0)[s0] -> (d0)>] outs [affine_map<(d0) -> (d0)>] : (tensor<8xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2xf32>):
  kernel.yield %a : tensor<2xf32>
}
// CHECK: 'kernel.tile' op operand #0 map (d0)[s0] -> (d0) must have 1 dims and no symbols

// -----

%x = "test.op"() : () -> tensor<8xf32>
// expected-error@+1 {{'kernel.tile' op operand #0}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [2] scratch [] ins [affine_map<(d0) -> (d0 + 1)>] outs [affine_map<(d0) -> (d0)>] : (tensor<8xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2xf32>):
  kernel.yield %a : tensor<2xf32>
}
// CHECK: 'kernel.tile' op operand #0: unsupported tile map result (d0 + 1) in (d0) -> ((d0 + 1))

// -----

%x = "test.op"() : () -> tensor<8xf32>
// expected-error@+1 {{'kernel.tile' op result #0 map}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [2] scratch [] ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0, 0)>] : (tensor<8xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2xf32>):
  kernel.yield %a : tensor<2xf32>
}
// CHECK: 'kernel.tile' op result #0 map (d0) -> (d0, 0) has 2 results for tensor<8xf32> of rank 1

// -----

%x = "test.op"() : () -> tensor<6xf32>
// expected-error@+1 {{'kernel.tile' op operand #0}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [2] scratch [] ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0)>] : (tensor<6xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2xf32>):
  kernel.yield %a : tensor<2xf32>
}
// CHECK: 'kernel.tile' op operand #0 (tensor<6xf32>) runs along d0 with extent 6, but the iteration space has 8

// -----

%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op body arguments}}
%0 = kernel.tile(%x) space [8, 4] iterators ["parallel", "parallel"] tiles [2, 4] scratch [] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<8x4xf32>) -> tensor<8x4xf32> {
^bb0(%a: tensor<8x4xf32>):
  kernel.yield %a : tensor<8x4xf32>
}
// CHECK: 'kernel.tile' op body arguments (tensor<8x4xf32>) do not match the full-tile operand slices (tensor<2x4xf32>)

// -----

%x = "test.op"() : () -> tensor<8x4xf32>
// expected-error@+1 {{'kernel.tile' op body yields}}
%0 = kernel.tile(%x) space [8, 4] iterators ["parallel", "reduction"] tiles [2, 4] scratch [] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0)>] : (tensor<8x4xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2x4xf32>):
  %s = tensordsl.sum %a : tensor<2x4xf32> -> tensor<f32>
  kernel.yield %s : tensor<f32>
}
// CHECK: 'kernel.tile' op body yields (tensor<f32>) but the op expects (tensor<2xf32>)

// -----

%x = "test.op"() : () -> tensor<8xf32>
// expected-error@+1 {{'kernel.tile' op body must end in kernel.yield}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [2] scratch [] ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0)>] : (tensor<8xf32>) -> tensor<8xf32> {
^bb0(%a: tensor<2xf32>):
  "test.termop"() : () -> ()
}
// CHECK: 'kernel.tile' op body must end in kernel.yield

// -----

%x = "test.op"() : () -> tensor<8x8xf32>
// expected-error@+1 {{'kernel.tile' op operand #0 map}}
%0 = kernel.tile(%x) space [8] iterators ["parallel"] tiles [4] scratch [] ins [affine_map<(d0) -> (d0, d0)>] outs [affine_map<(d0) -> (d0, d0)>] : (tensor<8x8xf32>) -> tensor<8x8xf32> {
^bb0(%a: tensor<4x4xf32>):
  kernel.yield %a : tensor<4x4xf32>
}
// CHECK: 'kernel.tile' op operand #0 map (d0) -> (d0, d0) names the tiled dim d0 twice: its tile would be a diagonal, not a slice

// -----

%x = "test.op"() : () -> tensor<8xi16>
// expected-error@+1 {{'kernel.fused' op tensordsl computes on tensors of i1}}
%0 = kernel.fused(%x) : (tensor<8xi16>) -> tensor<8xi16> {
^bb0(%a: tensor<8xi16>):
  kernel.yield %a : tensor<8xi16>
}
// CHECK: tensordsl computes on tensors of i1 (booleans), f16, f32, f64, i32, i64, ui8 or ui64

// -----

// A recorded plan that cannot run: the subtraction reads the max, ready only
// after pass 1, so it cannot be in pass 1 itself.
%x = "test.op"() : () -> tensor<16x300xf64>
// expected-error@+1 {{'kernel.tile' op cannot run its recorded plan}}
%0 = kernel.tile(%x) space [16, 300] iterators ["parallel", "reduction"] tiles [8, 100] scratch [] sweeps [1, 1, 1] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<16x300xf64>) -> tensor<16x300xf64> {
^bb0(%a: tensor<8x100xf64>):
  %1 = tensordsl.exp %a : tensor<8x100xf64>
  %2 = tensordsl.max %1 axis = 1 keepdims : tensor<8x100xf64> -> tensor<8x1xf64>
  %3 = tensordsl.sub %1, %2 : (tensor<8x100xf64>, tensor<8x1xf64>) -> tensor<8x100xf64>
  kernel.yield %3 : tensor<8x100xf64>
}
// CHECK: 'kernel.tile' op cannot run its recorded plan: 'tensordsl.sub' is recorded in sweep 1, but what it reads is ready only in sweep 3

// -----

// A sweep past the last a plan can need (a plan of n ops needs at most 2n): refused at
// once, where the schedule counted up to it (sweeps [1099511627776] hung tdsl-opt).
%x = "test.op"() : () -> tensor<4xf32>
// expected-error@+1 {{'kernel.tile' op cannot run its recorded plan}}
%0 = kernel.tile(%x) space [4] iterators ["parallel"] tiles [4] scratch [] sweeps [1099511627776] ins [affine_map<(d0) -> (d0)>] outs [affine_map<(d0) -> (d0)>] : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: tensor<4xf32>):
  %1 = tensordsl.relu %a : tensor<4xf32>
  kernel.yield %1 : tensor<4xf32>
}
// CHECK: 'kernel.tile' op cannot run its recorded plan: 'tensordsl.relu' is recorded in sweep 1099511627776, past the last a plan of 1 ops can need (2)

// -----

// Only a value a pass computes tile by tile can be staged: not the max, which is
// whole after its pass.
%x = "test.op"() : () -> tensor<16x300xf64>
// expected-error@+1 {{'kernel.tile' op cannot run its recorded plan}}
%0 = kernel.tile(%x) space [16, 300] iterators ["parallel", "reduction"] tiles [8, 100] scratch [] sweeps [1, 1, 3] staged [1] ins [affine_map<(d0, d1) -> (d0, d1)>] outs [affine_map<(d0, d1) -> (d0, d1)>] : (tensor<16x300xf64>) -> tensor<16x300xf64> {
^bb0(%a: tensor<8x100xf64>):
  %1 = tensordsl.exp %a : tensor<8x100xf64>
  %2 = tensordsl.max %1 axis = 1 keepdims : tensor<8x100xf64> -> tensor<8x1xf64>
  %3 = tensordsl.sub %1, %2 : (tensor<8x100xf64>, tensor<8x1xf64>) -> tensor<8x100xf64>
  kernel.yield %3 : tensor<8x100xf64>
}
// CHECK: 'kernel.tile' op cannot run its recorded plan: 'tensordsl.max' is staged, but it is computed whole once per parallel tile (a reduction over the passes): only a value a pass computes tile by tile can be staged
