// RUN: tdsl-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: tdsl-opt %s --split-input-file --verify-expected-errors

// Every verifier error of the tensordsl dialect.
// The CHECK lines check each message whole; the expected-error annotations check
// the line each error points at (--verify-expected-errors).

%a, %b = "test.op"() : () -> (tensor<4x8xf32>, tensor<5xf32>)
// expected-error@+1 {{'tensordsl.add' op shapes 4x8 and 5 do not broadcast}}
%0 = tensordsl.add %a, %b : (tensor<4x8xf32>, tensor<5xf32>) -> tensor<4x8xf32>
// CHECK: 'tensordsl.add' op shapes 4x8 and 5 do not broadcast (dimension 8 vs 5) (tensor<4x8xf32>, tensor<5xf32>)

// -----

%a, %b = "test.op"() : () -> (tensor<2x3xf32>, tensor<3x3xf32>)
// expected-error@+1 {{'tensordsl.maximum' op shapes 2x3 and 3x3 do not broadcast}}
%0 = "tensordsl.maximum"(%a, %b) : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK: 'tensordsl.maximum' op shapes 2x3 and 3x3 do not broadcast (dimension 2 vs 3) (tensor<2x3xf32>, tensor<3x3xf32>)

// -----

%a, %b = "test.op"() : () -> (tensor<4x8xf32>, tensor<8xf32>)
// expected-error@+1 {{'tensordsl.sub' op result has type tensor<8xf32>, expected shape 4x8}}
%0 = tensordsl.sub %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK: 'tensordsl.sub' op result has type tensor<8xf32>, expected shape 4x8

// -----

%a, %b = "test.op"() : () -> (tensor<4x8xf32>, tensor<8xf64>)
// expected-error@+1 {{'tensordsl.mul' op operands and result must share one element type,}}
%0 = tensordsl.mul %a, %b : (tensor<4x8xf32>, tensor<8xf64>) -> tensor<4x8xf32>
// CHECK: 'tensordsl.mul' op operands and result must share one element type, got tensor<4x8xf32>, tensor<8xf64>, tensor<4x8xf32> (make promotion explicit with tensordsl.cast)

// -----

%a, %b = "test.op"() : () -> (tensor<4xf16>, tensor<4xf16>)
// expected-error@+1 {{'tensordsl.div' op operands and result must share one element type,}}
%0 = tensordsl.div %a, %b : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf32>
// CHECK: 'tensordsl.div' op operands and result must share one element type, got tensor<4xf16>, tensor<4xf16>, tensor<4xf32>

// -----

%a, %b = "test.op"() : () -> (tensor<4xi32>, tensor<4xi32>)
// expected-error@+1 {{'tensordsl.hypot' computes on floats, not integers}}
%0 = tensordsl.hypot %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
// CHECK: 'tensordsl.hypot' computes on floats, not integers (tensor<4xi32>, tensor<4xi32>): convert first with tensordsl.cast

// -----

%a = "test.op"() : () -> tensor<4xbf16>
// expected-error@+1 {{'tensordsl.exp' op operand 'input' at position 0 does not verify:}}
%0 = "tensordsl.exp"(%a) : (tensor<4xbf16>) -> tensor<4xbf16>
// CHECK: tensordsl computes numbers as f16, f32, f64, i32, i64, ui8 or ui64

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.relu' op result 'result' at position 0 does not verify:}}
%0 = "tensordsl.relu"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf64>
// CHECK: attribute tensor<4x8xf32> expected from variable 'T', but got tensor<4x8xf64>

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.sigmoid' op result 'result' at position 0 does not verify:}}
%0 = "tensordsl.sigmoid"(%a) : (tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK: attribute tensor<4x8xf32> expected from variable 'T', but got tensor<8x4xf32>

// -----

%a, %b = "test.op"() : () -> (tensor<4x8xf32>, tensor<5x3xf32>)
// expected-error@+1 {{'tensordsl.matmul' op inner dimensions differ}}
%0 = tensordsl.matmul %a, %b : (tensor<4x8xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
// CHECK: 'tensordsl.matmul' op inner dimensions differ: 4x8 @ 5x3 (8 vs 5) (tensor<4x8xf32>, tensor<5x3xf32>)

// -----

%a, %b = "test.op"() : () -> (tensor<8xf32>, tensor<4xf32>)
// expected-error@+1 {{'tensordsl.matmul' op inner dimensions differ}}
%0 = tensordsl.matmul %a, %b : (tensor<8xf32>, tensor<4xf32>) -> tensor<f32>
// CHECK: 'tensordsl.matmul' op inner dimensions differ: 8 @ 4 (8 vs 4)

// -----

%a, %b = "test.op"() : () -> (tensor<f32>, tensor<5x3xf32>)
// expected-error@+1 {{'tensordsl.matmul' op matmul operands must have rank >= 1, not 0-d}}
%0 = tensordsl.matmul %a, %b : (tensor<f32>, tensor<5x3xf32>) -> tensor<5x3xf32>
// CHECK: 'tensordsl.matmul' op matmul operands must have rank >= 1, not 0-d tensors (tensor<f32>, tensor<5x3xf32>)

// -----

%a, %b = "test.op"() : () -> (tensor<2x4x8xf32>, tensor<3x8x3xf32>)
// expected-error@+1 {{'tensordsl.matmul' op batch dimensions of 2x4x8 @ 3x8x3 do not}}
%0 = tensordsl.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x3xf32>) -> tensor<2x4x3xf32>
// CHECK: 'tensordsl.matmul' op batch dimensions of 2x4x8 @ 3x8x3 do not broadcast (tensor<2x4x8xf32>, tensor<3x8x3xf32>)

// -----

%a, %b = "test.op"() : () -> (tensor<4x8xf32>, tensor<8x3xf32>)
// expected-error@+1 {{'tensordsl.matmul' op result has type tensor<4x4xf32>, expected shape}}
%0 = tensordsl.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x4xf32>
// CHECK: 'tensordsl.matmul' op result has type tensor<4x4xf32>, expected shape 4x3

// -----

%a, %b = "test.op"() : () -> (tensor<4x8xf32>, tensor<8x3xf64>)
// expected-error@+1 {{'tensordsl.matmul' op operands and result must share one element}}
%0 = tensordsl.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf64>) -> tensor<4x3xf32>
// CHECK: 'tensordsl.matmul' op operands and result must share one element type, got tensor<4x8xf32>, tensor<8x3xf64>, tensor<4x3xf32>

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.softmax' op axis 2 is out of range for rank 2}}
%0 = tensordsl.softmax %a axis = 2 : tensor<4x8xf32>
// CHECK: 'tensordsl.softmax' op axis 2 is out of range for rank 2 (expected -2 <= axis < 2) (tensor<4x8xf32>)

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.softmax' op axis -3 is out of range for rank 2}}
%0 = tensordsl.softmax %a axis = -3 : tensor<4x8xf32>
// CHECK: 'tensordsl.softmax' op axis -3 is out of range for rank 2 (expected -2 <= axis < 2) (tensor<4x8xf32>)

// -----

%a = "test.op"() : () -> tensor<f32>
// expected-error@+1 {{'tensordsl.softmax' op axis -1 is out of range for a 0-d tensor}}
%0 = tensordsl.softmax %a : tensor<f32>
// CHECK: 'tensordsl.softmax' op axis -1 is out of range for a 0-d tensor (it has no axes) (tensor<f32>)

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.softmax' op result 'result' at position 0 does not verify:}}
%0 = "tensordsl.softmax"(%a) <{axis = 0 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf64>
// CHECK: attribute tensor<4x8xf32> expected from variable 'T', but got tensor<4x8xf64>

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.sum' op axis 2 is out of range for rank 2}}
%0 = tensordsl.sum %a axis = 2 : tensor<4x8xf32> -> tensor<4xf32>
// CHECK: 'tensordsl.sum' op axis 2 is out of range for rank 2 (expected -2 <= axis < 2) (tensor<4x8xf32>)

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.mean' op axis -3 is out of range for rank 2}}
%0 = tensordsl.mean %a axis = -3 : tensor<4x8xf32> -> tensor<4xf32>
// CHECK: 'tensordsl.mean' op axis -3 is out of range for rank 2 (expected -2 <= axis < 2) (tensor<4x8xf32>)

// -----

%a = "test.op"() : () -> tensor<f32>
// expected-error@+1 {{'tensordsl.max' op axis 0 is out of range for a 0-d tensor}}
%0 = tensordsl.max %a axis = 0 : tensor<f32> -> tensor<f32>
// CHECK: 'tensordsl.max' op axis 0 is out of range for a 0-d tensor (it has no axes) (tensor<f32>)

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.sum' op result has type tensor<8xf32>, expected shape 4}}
%0 = tensordsl.sum %a axis = 1 : tensor<4x8xf32> -> tensor<8xf32>
// CHECK: 'tensordsl.sum' op result has type tensor<8xf32>, expected shape 4

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.max' op result has type tensor<4xf32>, expected shape 4x1}}
%0 = tensordsl.max %a axis = 1 keepdims : tensor<4x8xf32> -> tensor<4xf32>
// CHECK: 'tensordsl.max' op result has type tensor<4xf32>, expected shape 4x1

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.sum' op result has type tensor<1x1xf32>, expected shape []}}
%0 = tensordsl.sum %a : tensor<4x8xf32> -> tensor<1x1xf32>
// CHECK: 'tensordsl.sum' op result has type tensor<1x1xf32>, expected shape []

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.mean' op attribute f32 expected from variable 'E', but got}}
%0 = tensordsl.mean %a : tensor<4x8xf32> -> tensor<f64>
// CHECK: attribute f32 expected from variable 'E', but got f64

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.sum' op Expected attribute i64 but got i32}}
%0 = "tensordsl.sum"(%a) <{axis = 1 : i32}> : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK: Expected attribute i64 but got i32

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.transpose' op result has type tensor<4x8xf32>, expected}}
%0 = tensordsl.transpose %a : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: 'tensordsl.transpose' op result has type tensor<4x8xf32>, expected shape 8x4

// -----

%a = "test.op"() : () -> tensor<2x3x4xf32>
// expected-error@+1 {{'tensordsl.transpose' op result has type tensor<4x2x3xf32>, expected}}
%0 = tensordsl.transpose %a : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK: 'tensordsl.transpose' op result has type tensor<4x2x3xf32>, expected shape 4x3x2

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.transpose' op attribute f32 expected from variable 'E',}}
%0 = tensordsl.transpose %a : tensor<4x8xf32> -> tensor<8x4xf64>
// CHECK: attribute f32 expected from variable 'E', but got f64

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.cast' op result has type tensor<8x4xf64>, expected shape}}
%0 = tensordsl.cast %a : tensor<4x8xf32> -> tensor<8x4xf64>
// CHECK: 'tensordsl.cast' op result has type tensor<8x4xf64>, expected shape 4x8

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.cast' op tensordsl computes numbers as f16, f32, f64, i32,}}
%0 = tensordsl.cast %a : tensor<4x8xf32> -> tensor<4x8xi16>
// CHECK: tensordsl computes numbers as f16, f32, f64, i32, i64, ui8 or ui64

// -----

// expected-error@+1 {{'tensordsl.constant' op attribute tensor<3xf32> expected from}}
%0 = "tensordsl.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<3xf32>
// CHECK: attribute tensor<3xf32> expected from variable 'T', but got tensor<4xf32>

// -----

// expected-error@+1 {{'tensordsl.constant' op result 'result' at position 0 does not verify:}}
%0 = tensordsl.constant dense<1> : tensor<4xi8>
// CHECK: tensordsl computes numbers as f16, f32, f64, i32, i64, ui8 or ui64

// -----

%a, %b = "test.op"() : () -> (tensor<4xf32>, tensor<4xf32>)
// expected-error@+1 {{'tensordsl.left_shift' op expected integers}}
%0 = tensordsl.left_shift %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: expected integers (i32, i64, ui8 or ui64)

// -----

%a = "test.op"() : () -> tensor<0x3xf32>
// expected-error@+1 {{'tensordsl.max' op `max` over axis 0 of a tensor of shape (0, 3) reduces zero}}
%0 = tensordsl.max %a axis = 0 : tensor<0x3xf32> -> tensor<3xf32>
// CHECK: 'tensordsl.max' op `max` over axis 0 of a tensor of shape (0, 3) reduces zero elements, and it has no identity (tensor<0x3xf32>)

// -----

%a = "test.op"() : () -> tensor<?x3xf32>
// expected-error@+1 {{'tensordsl.relu' op tensordsl computes on tensors of static shape}}
%0 = tensordsl.relu %a : tensor<?x3xf32>
// CHECK: tensordsl computes on tensors of static shape (no ? dimensions)

// -----

%a, %b = "test.op"() : () -> (tensor<4xf32>, tensor<4xf64>)
// expected-error@+1 {{'tensordsl.clip' op the operands of clip have different element types}}
%0 = tensordsl.clip %a, %b, %a : (tensor<4xf32>, tensor<4xf64>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: 'tensordsl.clip' op the operands of clip have different element types f32, f64, f32 (make promotion explicit with tensordsl.cast)

// -----

%a = "test.op"() : () -> tensor<4xf32>
// expected-error@+1 {{'tensordsl.all' op expected booleans}}
%0 = tensordsl.all %a : tensor<4xf32> -> tensor<i1>
// CHECK: expected booleans (i1)
// CHECK-NEXT: Underlying verification failure: Expected attribute i1 but got f32

// -----

%a = "test.op"() : () -> tensor<4xi1>
// expected-error@+1 {{'tensordsl.isnan' op tensordsl computes on tensors of f16, f32 or f64}}
%0 = tensordsl.isnan %a : tensor<4xi1> -> tensor<4xi1>
// CHECK: tensordsl computes on tensors of f16, f32 or f64
// CHECK-NEXT: Underlying verification failure: Unexpected attribute i1

// -----

%a = "test.op"() : () -> tensor<2x3x4xf32>
// expected-error@+1 {{'tensordsl.transpose' op axes}}
%0 = tensordsl.transpose %a perm [0, 0, 1] : tensor<2x3x4xf32> -> tensor<2x2x3xf32>
// CHECK: 'tensordsl.transpose' op axes (0, 0, 1) of transpose are not a permutation of 3 axes

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.squeeze' op cannot squeeze axis 0 of a tensor of shape 4x8}}
%0 = tensordsl.squeeze %a axes [0] : tensor<4x8xf32> -> tensor<8xf32>
// CHECK: 'tensordsl.squeeze' op cannot squeeze axis 0 of a tensor of shape 4x8: its extent is 4, not 1

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.expand_dims' op axes [2, 0] are not sorted, each once}}
%0 = tensordsl.expand_dims %a axes [2, 0] : tensor<4x8xf32> -> tensor<1x4x1x8xf32>
// CHECK: 'tensordsl.expand_dims' op axes [2, 0] are not sorted, each once

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.expand_dims' op result has type tensor<4x1x8xf32>,}}
%0 = tensordsl.expand_dims %a axes [0] : tensor<4x8xf32> -> tensor<4x1x8xf32>
// CHECK: 'tensordsl.expand_dims' op result has type tensor<4x1x8xf32>, expected shape 1x4x8

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.slice' op reads indices 2 to 8 along axis 1, outside its}}
%0 = tensordsl.slice %a offsets [0, 2] strides [1, 1] : tensor<4x8xf32> -> tensor<4x7xf32>
// CHECK: 'tensordsl.slice' op reads indices 2 to 8 along axis 1, outside its extent 8 (operand shape 4x8)

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.slice' op has stride 0 along axis 0; a stride is nonzero}}
%0 = tensordsl.slice %a offsets [0, 0] strides [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: 'tensordsl.slice' op has stride 0 along axis 0; a stride is nonzero

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.slice' op has 1 offsets and 1 strides for a rank-2 operand}}
%0 = tensordsl.slice %a offsets [0] strides [1] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: 'tensordsl.slice' op has 1 offsets and 1 strides for a rank-2 operand and a rank-2 result; give one per axis

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.slice' op attribute f32 expected from variable 'E', but}}
%0 = tensordsl.slice %a offsets [0, 0] strides [1, 1] : tensor<4x8xf32> -> tensor<4x8xf16>
// CHECK: attribute f32 expected from variable 'E', but got f16

// -----

%a = "test.op"() : () -> tensor<4x8xf32>
// expected-error@+1 {{'tensordsl.reshape' op cannot reshape 4x8}}
%0 = tensordsl.reshape %a : tensor<4x8xf32> -> tensor<5x6xf32>
// CHECK: 'tensordsl.reshape' op cannot reshape 4x8 (32 elements) into 5x6 (30 elements)

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%b = "test.op"() : () -> tensor<2x5xf32>
// expected-error@+1 {{'tensordsl.concatenate' op the operands' extents must match except}}
%0 = tensordsl.concatenate %a, %b axis 1 : (tensor<4x3xf32>, tensor<2x5xf32>) -> tensor<4x8xf32>
// CHECK: 'tensordsl.concatenate' op the operands' extents must match except along axis 1: operand 0 has shape 4x3, operand 1 has shape 2x5

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
// expected-error@+1 {{'tensordsl.concatenate' op result has shape 4x7, expected 4x6}}
%0 = tensordsl.concatenate %a, %a axis 1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x7xf32>
// CHECK: 'tensordsl.concatenate' op result has shape 4x7, expected 4x6

// -----

%a = "test.op"() : () -> tensor<10x4xf32>
%t = "test.op"() : () -> tensor<3xf32>
// expected-error@+1 {{'tensordsl.take' op indices are i32 or i64}}
%0 = tensordsl.take %a, %t axis 0 : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
// CHECK: indices are i32 or i64

// -----

%a = "test.op"() : () -> tensor<10x4xf32>
%t = "test.op"() : () -> tensor<3xi64>
// expected-error@+1 {{'tensordsl.take' op result has shape 3x4, expected 10x3}}
%0 = tensordsl.take %a, %t axis 1 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
// CHECK: 'tensordsl.take' op result has shape 3x4, expected 10x3
