"""Building tensordsl ops from Python: result type inference and the shape helpers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects import test as test_dialect
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, TensorType
from xdsl.ir import Attribute, SSAValue

from tdsl.dialects import tensordsl as td

F16, F32, F64 = Float16Type(), Float32Type(), Float64Type()


def value(shape: tuple[int, ...], element: Attribute = F32) -> SSAValue:
    """A fresh SSA value of type ``tensor<shape x element>``."""
    return test_dialect.TestOp(result_types=[TensorType(element, shape)]).results[0]


def result_type(op: Any) -> TensorType[Attribute]:
    t = op.result.type
    assert isinstance(t, TensorType)
    return t


def np_shape(fn: Any, *shapes: tuple[int, ...], **kwargs: Any) -> tuple[int, ...]:
    """The shape NumPy gives ``fn`` on arrays of ``shapes``."""
    return np.shape(fn(*(np.zeros(s) for s in shapes), **kwargs))


# -- result type inference ------------------------------------------------------------


@pytest.mark.parametrize("op_class", td.UNARY_OPS, ids=lambda c: c.name)
@pytest.mark.parametrize("shape", [(), (0,), (4, 8), (2, 0, 3)], ids=str)
@pytest.mark.parametrize("element", [F16, F32, F64], ids=str)
def test_unary_result_type(
    op_class: type[td.UnaryOp], shape: tuple[int, ...], element: Attribute
) -> None:
    op = op_class(value(shape, element))
    assert result_type(op) == TensorType(element, shape)
    op.verify()


BROADCASTS = [((4, 8), (8,)), ((4, 1), (1, 5)), ((), (3, 2)), ((2, 1, 3), (4, 1)), ((0, 3), (1,))]


@pytest.mark.parametrize("op_class", td.BINARY_OPS, ids=lambda c: c.name)
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
def test_binary_result_type_broadcasts(
    op_class: type[td.BinaryOp], shapes: tuple[tuple[int, ...], tuple[int, ...]]
) -> None:
    a, b = shapes
    op = op_class(value(a, F64), value(b, F64))
    assert result_type(op) == TensorType(F64, np_shape(np.add, a, b))
    op.verify()


@pytest.mark.parametrize("op_class", td.BINARY_OPS, ids=lambda c: c.name)
def test_binary_build_rejects_shapes_that_do_not_broadcast(op_class: type[td.BinaryOp]) -> None:
    with pytest.raises(
        td.ShapeError, match=r"shapes 4x8 and 5 do not broadcast \(dimension 8 vs 5\)"
    ):
        op_class(value((4, 8)), value((5,)))


MATMULS = [
    ((8, 16), (16, 4)),
    ((16,), (16, 4)),
    ((8, 16), (16,)),
    ((16,), (16,)),
    ((2, 8, 16), (16, 4)),
    ((3, 1, 8, 16), (2, 16, 4)),
    ((16,), (5, 16, 4)),
    ((0, 3), (3, 0)),
]


@pytest.mark.parametrize("shapes", MATMULS, ids=str)
def test_matmul_result_type(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    a, b = shapes
    op = td.MatmulOp(value(a), value(b))
    assert result_type(op) == TensorType(F32, np_shape(np.matmul, a, b))
    assert td.matmul_shape(a, b) == np_shape(np.matmul, a, b)
    op.verify()


@pytest.mark.parametrize(
    "shapes,message",
    [
        (((4, 8), (5, 3)), r"inner dimensions differ: 4x8 @ 5x3 \(8 vs 5\)"),
        (((8,), (4,)), r"inner dimensions differ: 8 @ 4"),
        (((), (3, 3)), "rank >= 1, not 0-d"),
        (((3,), ()), "rank >= 1, not 0-d"),
        (((2, 4, 8), (3, 8, 2)), "batch dimensions of 2x4x8 @ 3x8x2 do not broadcast"),
    ],
)
def test_matmul_shape_errors(shapes: tuple[tuple[int, ...], ...], message: str) -> None:
    a, b = shapes
    with pytest.raises(td.ShapeError, match=message):
        td.MatmulOp(value(a), value(b))
    with pytest.raises(ValueError):  # NumPy refuses the same shapes
        np.matmul(np.zeros(a), np.zeros(b))


@pytest.mark.parametrize("shape", [(), (5,), (4, 8), (2, 3, 4)], ids=str)
def test_transpose_result_type(shape: tuple[int, ...]) -> None:
    op = td.TransposeOp(value(shape, F16))
    assert result_type(op) == TensorType(F16, np_shape(np.transpose, shape))
    op.verify()


@pytest.mark.parametrize(
    "shape,axis,normalized", [((4, 8), -1, 1), ((4, 8), 0, 0), ((2, 3, 4), -2, 1), ((5,), 0, 0)]
)
def test_softmax_result_type_and_axis(shape: tuple[int, ...], axis: int, normalized: int) -> None:
    op = td.SoftmaxOp(value(shape), axis)
    assert result_type(op) == TensorType(F32, shape)
    assert op.axis_value == normalized
    assert op.axis.value.data == axis
    op.verify()


def test_softmax_default_axis_is_last() -> None:
    op = td.SoftmaxOp(value((3, 4)))
    assert op.axis.value.data == -1 and op.axis_value == 1


@pytest.mark.parametrize("op_class", td.REDUCTION_OPS, ids=lambda c: c.name)
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, -3], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_result_type(
    op_class: type[td.ReductionOp], axis: int | None, keepdims: bool
) -> None:
    shape = (2, 3, 4)
    op = op_class(value(shape, F64), axis, keepdims)
    want = np_shape(np.sum, shape, axis=axis, keepdims=keepdims)
    assert result_type(op) == TensorType(F64, want)
    assert op.axis_value == (None if axis is None else axis % 3)
    assert op.keepdims_value is keepdims
    assert td.reduce_shape(shape, axis, keepdims) == want
    op.verify()


@pytest.mark.parametrize("op_class", td.REDUCTION_OPS, ids=lambda c: c.name)
def test_reduction_of_0d_tensor(op_class: type[td.ReductionOp]) -> None:
    op = op_class(value(()), None, True)
    assert result_type(op) == TensorType(F32, ())
    with pytest.raises(td.ShapeError, match="0-d tensor"):
        op_class(value(()), 0)


@pytest.mark.parametrize("axis", [2, -3])
def test_bad_axis(axis: int) -> None:
    with pytest.raises(td.ShapeError, match=rf"axis {axis} is out of range for rank 2"):
        td.SumOp(value((4, 8)), axis)
    with pytest.raises(td.ShapeError, match=rf"axis {axis} is out of range for rank 2"):
        td.SoftmaxOp(value((4, 8)), axis)


@pytest.mark.parametrize("src,dst", [(F32, F64), (F64, F16), (F16, F32), (F32, F32)], ids=str)
def test_cast_result_type(src: Attribute, dst: Attribute) -> None:
    op = td.CastOp(value((3, 0, 2), src), dst)
    assert result_type(op) == TensorType(dst, (3, 0, 2))
    op.verify()


@pytest.mark.parametrize("element", [F16, F32, F64], ids=str)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 4)], ids=str)
def test_constant_result_type_and_value(element: Attribute, shape: tuple[int, ...]) -> None:
    dtype = td.numpy_dtype(element)
    data = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) - 1.5
    op = td.ConstantOp(td.dense_from_numpy(data, element))
    assert result_type(op) == TensorType(element, shape)
    got = op.as_numpy()
    assert got.dtype == dtype and got.shape == shape
    np.testing.assert_array_equal(got, data)
    op.verify()


def test_constant_splat() -> None:
    op = td.ConstantOp.splat(2.5, F16, (2, 3))
    assert result_type(op) == TensorType(F16, (2, 3))
    assert op.splat_value() == 2.5
    np.testing.assert_array_equal(op.as_numpy(), np.full((2, 3), 2.5, np.float16))
    assert td.ConstantOp.splat(0.0, F32).splat_value() == 0.0
    assert result_type(td.ConstantOp.splat(0.0, F32)) == TensorType(F32, ())


def test_splat_value_of_non_splats() -> None:
    mixed = td.ConstantOp(td.dense_from_numpy(np.array([1.0, 2.0]), F64))
    empty = td.ConstantOp(td.dense_from_numpy(np.zeros((0,)), F64))
    assert mixed.splat_value() is None
    assert empty.splat_value() is None


def test_dense_to_numpy_expands_a_parsed_splat() -> None:
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin, DenseIntOrFPElementsAttr
    from xdsl.parser import Parser

    ctx = Context()
    ctx.load_dialect(Builtin)
    attr = Parser(ctx, "dense<1.5> : tensor<2x3xf16>").parse_attribute()
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    got = td.dense_to_numpy(attr)
    np.testing.assert_array_equal(got, np.full((2, 3), 1.5, np.float16))
    assert got.dtype == np.float16


# -- the shape helpers against NumPy --------------------------------------------------


@pytest.mark.parametrize("shapes", [*BROADCASTS, ((), ()), ((3, 1), (3, 0))], ids=str)
def test_broadcast_shapes_matches_numpy(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    assert td.broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)


def test_normalize_axis() -> None:
    assert td.normalize_axis(-1, 3) == 2
    assert td.normalize_axis(0, 1) == 0
    with pytest.raises(td.ShapeError, match=r"expected -3 <= axis < 3"):
        td.normalize_axis(3, 3)
    with pytest.raises(td.ShapeError, match="0-d tensor"):
        td.normalize_axis(0, 0)


def test_transpose_shape_and_fmt_shape() -> None:
    assert td.transpose_shape((2, 3, 4)) == (4, 3, 2)
    assert td.fmt_shape((4, 8)) == "4x8"
    assert td.fmt_shape(()) == "[]"


def test_op_groups_and_numpy_names() -> None:
    assert {td.ExpOp, td.LogOp, td.AbsOp, td.NegOp, td.SinOp} <= set(td.UNARY_OPS)
    assert {td.SoftmaxOp, td.LayerNormOp} <= set(td.ROW_LOCAL_OPS)
    for op_class in (*td.BINARY_OPS, *td.REDUCTION_OPS, *td.UNARY_OPS, *td.SCAN_OPS):
        ufunc = getattr(op_class, "NUMPY_UFUNC", None)  # relu, sigmoid lower themselves
        assert ufunc is None or isinstance(getattr(np, ufunc), np.ufunc), op_class.name
    ops = [op.name for op in td.TensorDSL.operations]
    assert len(ops) == len(set(ops))
    assert set(ops) == {
        "tensordsl.constant",
        *(
            c.name
            for c in (
                *td.UNARY_OPS,
                *td.CLASSIFY_OPS,
                *td.BINARY_OPS,
                *td.COMPARISON_OPS,
                *td.LOGICAL_OPS,
                *td.INTEGER_ONLY,
                *td.REDUCTION_OPS,
                *td.LOGICAL_REDUCTION_OPS,
                *td.ROW_LOCAL_OPS,
                *td.SCAN_OPS,
            )
        ),
        "tensordsl.cast",
        "tensordsl.matmul",
        "tensordsl.softmax_matmul",
        "tensordsl.transpose",
        "tensordsl.where",
        "tensordsl.clip",
        "tensordsl.expand_dims",
        "tensordsl.squeeze",
        "tensordsl.slice",
        "tensordsl.reshape",
        "tensordsl.concatenate",
        "tensordsl.take",
    }
