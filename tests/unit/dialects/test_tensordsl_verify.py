"""tensordsl verifiers: ops built raw (``Op.build``) with wrong types fail with a clear message."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
from xdsl.dialects import test as test_dialect
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    TensorType,
    UnitAttr,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects import tensordsl as td

F16, F32, F64 = Float16Type(), Float32Type(), Float64Type()


def t(*shape: int, element: Attribute = F32) -> TensorType[Attribute]:
    return TensorType(element, shape)


def v(ty: Attribute) -> SSAValue:
    return test_dialect.TestOp(result_types=[ty]).results[0]


def binary(op_class: type[Operation], a: Attribute, b: Attribute, r: Attribute) -> Operation:
    return op_class.build(operands=[v(a), v(b)], result_types=[r])


def unary(op_class: type[Operation], a: Attribute, r: Attribute, **props: Attribute) -> Operation:
    return op_class.build(operands=[v(a)], result_types=[r], properties=props)


CASES: list[tuple[str, Callable[[], Operation], str]] = [
    (
        "broadcast",
        lambda: binary(td.AddOp, t(4, 8), t(5), t(4, 8)),
        "'tensordsl.add' op shapes 4x8 and 5 do not broadcast (dimension 8 vs 5) "
        "(tensor<4x8xf32>, tensor<5xf32>)",
    ),
    (
        "binary result shape",
        lambda: binary(td.SubOp, t(4, 8), t(8), t(8)),
        "'tensordsl.sub' op result has type tensor<8xf32>, expected shape 4x8",
    ),
    (
        "binary element types",
        lambda: binary(td.MulOp, t(4, 8), t(8, element=F64), t(4, 8)),
        "'tensordsl.mul' op operands and result must share one element type, got "
        "tensor<4x8xf32>, tensor<8xf64>, tensor<4x8xf32> "
        "(make promotion explicit with tensordsl.cast)",
    ),
    (
        "binary result element type",
        lambda: binary(td.DivOp, t(2, element=F16), t(2, element=F16), t(2)),
        "'tensordsl.div' op operands and result must share one element type",
    ),
    (
        "integers to a float-only op",
        lambda: binary(td.HypotOp, t(2, element=i32), t(2, element=i32), t(2, element=i32)),
        "'tensordsl.hypot' computes on floats, not integers",
    ),
    (
        "unary result type",
        lambda: unary(td.ExpOp, t(4, 8), t(8, 4)),
        "attribute tensor<4x8xf32> expected from variable 'T', but got tensor<8x4xf32>",
    ),
    (
        "unary integers to a float-only op",
        lambda: unary(td.ExpOp, t(4, element=i64), t(4, element=i64)),
        "'tensordsl.exp' computes on floats, not integers",
    ),
    (
        "matmul inner",
        lambda: binary(td.MatmulOp, t(4, 8), t(5, 3), t(4, 3)),
        "'tensordsl.matmul' op inner dimensions differ: 4x8 @ 5x3 (8 vs 5) "
        "(tensor<4x8xf32>, tensor<5x3xf32>)",
    ),
    (
        "matmul 0-d",
        lambda: binary(td.MatmulOp, t(), t(3), t(3)),
        "'tensordsl.matmul' op matmul operands must have rank >= 1, not 0-d tensors",
    ),
    (
        "matmul batch",
        lambda: binary(td.MatmulOp, t(2, 4, 8), t(3, 8, 2), t(2, 4, 2)),
        "'tensordsl.matmul' op batch dimensions of 2x4x8 @ 3x8x2 do not broadcast",
    ),
    (
        "matmul result",
        lambda: binary(td.MatmulOp, t(4, 8), t(8, 3), t(4, 4)),
        "'tensordsl.matmul' op result has type tensor<4x4xf32>, expected shape 4x3",
    ),
    (
        "matmul element types",
        lambda: binary(td.MatmulOp, t(4, 8), t(8, 3, element=F64), t(4, 3)),
        "'tensordsl.matmul' op operands and result must share one element type",
    ),
    (
        "softmax axis",
        lambda: unary(td.SoftmaxOp, t(4, 8), t(4, 8), axis=IntegerAttr(2, i64)),
        "'tensordsl.softmax' op axis 2 is out of range for rank 2 (expected -2 <= axis < 2) "
        "(tensor<4x8xf32>)",
    ),
    (
        "softmax 0-d",
        lambda: unary(td.SoftmaxOp, t(), t(), axis=IntegerAttr(-1, i64)),
        "'tensordsl.softmax' op axis -1 is out of range for a 0-d tensor (it has no axes)",
    ),
    (
        "sum axis",
        lambda: unary(td.SumOp, t(4, 8), t(4), axis=IntegerAttr(-3, i64)),
        "'tensordsl.sum' op axis -3 is out of range for rank 2 (expected -2 <= axis < 2)",
    ),
    (
        "sum result",
        lambda: unary(td.SumOp, t(4, 8), t(8), axis=IntegerAttr(1, i64)),
        "'tensordsl.sum' op result has type tensor<8xf32>, expected shape 4",
    ),
    (
        "max keepdims",
        lambda: unary(td.MaxOp, t(4, 8), t(4), axis=IntegerAttr(1, i64), keepdims=UnitAttr()),
        "'tensordsl.max' op result has type tensor<4xf32>, expected shape 4x1",
    ),
    (
        "mean all axes",
        lambda: unary(td.MeanOp, t(4, 8), t(1, 1)),
        "'tensordsl.mean' op result has type tensor<1x1xf32>, expected shape []",
    ),
    (
        "reduction element type",
        lambda: unary(td.MeanOp, t(4, 8), t(element=F64)),
        "attribute f32 expected from variable 'E', but got f64",
    ),
    (
        "transpose shape",
        lambda: unary(td.TransposeOp, t(2, 3, 4), t(4, 2, 3)),
        "'tensordsl.transpose' op result has type tensor<4x2x3xf32>, expected shape 4x3x2",
    ),
    (
        "transpose element type",
        lambda: unary(td.TransposeOp, t(4, 8), t(8, 4, element=F64)),
        "attribute f32 expected from variable 'E', but got f64",
    ),
    (
        "cast shape",
        lambda: unary(td.CastOp, t(4, 8), t(8, 4, element=F64)),
        "'tensordsl.cast' op result has type tensor<8x4xf64>, expected shape 4x8",
    ),
    (
        "cast to boolean",
        lambda: unary(td.CastOp, t(4), t(4, element=i1)),
        "tensordsl computes numbers as f16, f32, f64, i32, i64, ui8 or ui64",
    ),
]


@pytest.mark.parametrize("make,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_verify_error(make: Callable[[], Operation], message: str) -> None:
    op = make()
    with pytest.raises(VerifyException, match=re.escape(message)):
        op.verify()


def test_constant_result_must_match_value() -> None:
    value = td.dense_from_numpy(np.ones(4), F32)
    op = td.ConstantOp.build(properties={"value": value}, result_types=[t(3)])
    with pytest.raises(VerifyException, match=re.escape("expected from variable 'T'")):
        op.verify()


@pytest.mark.parametrize("op_class", [*td.UNARY_OPS, *td.BINARY_OPS], ids=lambda c: c.name)
def test_well_typed_raw_builds_verify(op_class: type[Operation]) -> None:
    operands = [v(t(2, 3))] * (2 if op_class in td.BINARY_OPS else 1)
    op_class.build(operands=operands, result_types=[t(2, 3)]).verify()
