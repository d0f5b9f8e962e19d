"""Every tensordsl op, interpreted, against NumPy: values, dtype and shape."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type

from tdsl.dialects import tensordsl as td
from tdsl.dialects.tensordsl import dense_from_numpy

Array = np.ndarray[Any, Any]
RunMain = Callable[..., tuple[Array, ...]]

DTYPES = [np.float16, np.float32, np.float64]
RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-9}
ELEMENT = {
    np.dtype(np.float16): Float16Type(),
    np.dtype(np.float32): Float32Type(),
    np.dtype(np.float64): Float64Type(),
}


def data(shape: tuple[int, ...], dtype: Any, seed: int = 0, positive: bool = False) -> Array:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 2
    if positive:
        x = np.abs(x) + 0.25
    return np.asarray(x, dtype=dtype)


def assert_numpy(got: Array, want: Any) -> None:
    """``got`` equals NumPy's ``want`` in dtype, shape and value (per-dtype tolerance)."""
    want = np.asarray(want)
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    tol = RTOL[want.dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def np_sigmoid(x: Array) -> Array:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


UNARY: list[tuple[type[td.UnaryOp], Callable[[Array], Any], bool]] = [
    (td.ReluOp, lambda x: np.maximum(x, 0), False),
    (td.ExpOp, np.exp, False),
    (td.LogOp, np.log, True),
    (td.SqrtOp, np.sqrt, True),
    (td.TanhOp, np.tanh, False),
    (td.SigmoidOp, np_sigmoid, False),
    (td.AbsOp, np.abs, False),
    (td.NegOp, np.negative, False),
]
SHAPES = [(), (0,), (5,), (2, 3, 4), (0, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op_class,ref,positive", UNARY, ids=lambda c: getattr(c, "name", ""))
def test_unary(
    run_main: RunMain,
    op_class: type[td.UnaryOp],
    ref: Callable[[Array], Any],
    positive: bool,
    dtype: Any,
    shape: tuple[int, ...],
) -> None:
    x = data(shape, dtype, positive=positive)
    (got,) = run_main(lambda a: op_class(a), x)
    assert_numpy(got, ref(x))


BINARY: list[tuple[type[td.BinaryOp], Callable[[Array, Array], Any]]] = [
    (td.AddOp, np.add),
    (td.SubOp, np.subtract),
    (td.MulOp, np.multiply),
    (td.DivOp, np.divide),
    (td.MaximumOp, np.maximum),
    (td.MinimumOp, np.minimum),
]
BROADCAST = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((4,), (3, 4)),
    ((2, 1, 4), (3, 1)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((), ()),
    ((0, 3), (3,)),
    ((1, 3), (0, 1)),
]


@pytest.mark.parametrize("shapes", BROADCAST, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op_class,ref", BINARY, ids=lambda c: getattr(c, "name", ""))
def test_binary_broadcasting(
    run_main: RunMain,
    op_class: type[td.BinaryOp],
    ref: Callable[[Array, Array], Any],
    dtype: Any,
    shapes: tuple[tuple[int, ...], tuple[int, ...]],
) -> None:
    a = data(shapes[0], dtype, seed=1)
    b = data(shapes[1], dtype, seed=2, positive=op_class is td.DivOp)
    (got,) = run_main(lambda x, y: op_class(x, y), a, b)
    assert_numpy(got, ref(a, b))


def test_binary_same_value_twice(run_main: RunMain) -> None:
    a = data((3, 3), np.float32)
    (got,) = run_main(lambda x: td.MulOp(x, x), a)
    assert_numpy(got, a * a)


MATMUL = [
    ((2, 3), (3, 4)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((3,), (3,)),
    ((2, 2, 3), (3, 4)),
    ((3,), (2, 3, 4)),
    ((2, 1, 2, 3), (3, 3, 2)),
    ((2, 0), (0, 3)),
    ((0, 3), (3, 2)),
]


@pytest.mark.parametrize("shapes", MATMUL, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_matmul(run_main: RunMain, dtype: Any, shapes: tuple[tuple[int, ...], ...]) -> None:
    a = data(shapes[0], dtype, seed=3)
    b = data(shapes[1], dtype, seed=4)
    (got,) = run_main(lambda x, y: td.MatmulOp(x, y), a, b)
    assert_numpy(got, np.matmul(a, b))


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (0, 2)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_transpose(run_main: RunMain, dtype: Any, shape: tuple[int, ...]) -> None:
    x = data(shape, dtype)
    (got,) = run_main(lambda a: td.TransposeOp(a), x)
    assert_numpy(got, np.transpose(x))
    np.testing.assert_array_equal(got, x.T)


def np_softmax(x: Array, axis: int) -> Array:
    """The textbook definition, in float64 (inputs are small enough not to overflow)."""
    e = np.exp(x.astype(np.float64))
    return e / e.sum(axis=axis, keepdims=True)


SOFTMAX = [((4, 5), -1), ((4, 5), 0), ((4, 5), 1), ((2, 3, 4), 1), ((2, 3, 4), -3), ((3,), 0)]


@pytest.mark.parametrize("shape,axis", SOFTMAX, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_softmax(run_main: RunMain, dtype: Any, shape: tuple[int, ...], axis: int) -> None:
    x = data(shape, dtype)
    (got,) = run_main(lambda a: td.SoftmaxOp(a, axis), x)
    assert_numpy(got, np_softmax(x, axis).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_softmax_is_stable_for_large_inputs(run_main: RunMain, dtype: Any) -> None:
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, 0.0]]).astype(dtype)
    (got,) = run_main(lambda a: td.SoftmaxOp(a), x)
    shifted = x.astype(np.float64) - x.astype(np.float64).max(axis=-1, keepdims=True)
    assert_numpy(got, np_softmax(shifted, -1).astype(dtype))
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("shape", [(0, 4), (3, 0), (0, 0)], ids=str)
def test_softmax_of_empty_tensors(run_main: RunMain, shape: tuple[int, ...]) -> None:
    x = np.zeros(shape, np.float32)
    (got,) = run_main(lambda a: td.SoftmaxOp(a), x)
    assert got.shape == shape and got.dtype == np.float32


REDUCTIONS: list[tuple[type[td.ReductionOp], Callable[..., Any]]] = [
    (td.SumOp, np.sum),
    (td.MaxOp, np.max),
    (td.MeanOp, np.mean),
]
AXES = [None, 0, 1, -1, -3, 2]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op_class,ref", REDUCTIONS, ids=lambda c: getattr(c, "name", ""))
def test_reduction(
    run_main: RunMain,
    op_class: type[td.ReductionOp],
    ref: Callable[..., Any],
    dtype: Any,
    axis: int | None,
    keepdims: bool,
) -> None:
    x = data((2, 3, 4), dtype)
    (got,) = run_main(lambda a: op_class(a, axis, keepdims), x)
    assert_numpy(got, ref(x, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("op_class,ref", REDUCTIONS, ids=lambda c: getattr(c, "name", ""))
def test_reduction_of_0d_tensor(
    run_main: RunMain, op_class: type[td.ReductionOp], ref: Callable[..., Any]
) -> None:
    x = np.array(2.5, np.float32)
    (got,) = run_main(lambda a: op_class(a), x)
    assert_numpy(got, ref(x))
    (kept,) = run_main(lambda a: op_class(a, None, True), x)
    assert_numpy(kept, ref(x, keepdims=True))


@pytest.mark.parametrize("axis", [None, 0, 1], ids=str)
def test_sum_and_mean_of_empty_axis(run_main: RunMain, axis: int | None) -> None:
    x = np.zeros((0, 3), np.float32)
    (total,) = run_main(lambda a: td.SumOp(a, axis), x)
    assert_numpy(total, np.sum(x, axis=axis))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # "Mean of empty slice"
        want = np.mean(x, axis=axis)
    (mean,) = run_main(lambda a: td.MeanOp(a, axis), x)
    assert_numpy(mean, want)


def test_max_over_nonempty_axis_of_empty_tensor(run_main: RunMain) -> None:
    x = np.zeros((0, 3), np.float64)
    (got,) = run_main(lambda a: td.MaxOp(a, 1, True), x)
    assert_numpy(got, np.max(x, axis=1, keepdims=True))


@pytest.mark.parametrize(
    "shape,axis", [((0, 3), 0), ((0, 3), None), ((3, 0), -1), ((0, 0), 1)], ids=str
)
def test_max_over_empty_axis_is_refused_when_built(
    run_main: RunMain, shape: tuple[int, ...], axis: int | None
) -> None:
    # NumPy refuses at run time; shapes are static, so tensordsl refuses the op.
    x = np.zeros(shape, np.float32)
    with pytest.raises(ValueError):
        np.max(x, axis=axis)
    with pytest.raises(td.ShapeError, match=r"`max` over .* reduces zero elements"):
        run_main(lambda a: td.MaxOp(a, axis), x)


def test_mean_of_f16_is_f16(run_main: RunMain) -> None:
    x = np.full((1000,), 60.0, np.float16)  # the sum overflows f16; np.mean does not
    (got,) = run_main(lambda a: td.MeanOp(a), x)
    assert_numpy(got, np.mean(x))
    assert got.dtype == np.float16 and got == 60.0


CASTS = [
    (np.float32, np.float64),
    (np.float64, np.float32),
    (np.float64, np.float16),
    (np.float16, np.float32),
    (np.float32, np.float32),
]


@pytest.mark.parametrize("src,dst", CASTS, ids=str)
def test_cast(run_main: RunMain, src: Any, dst: Any) -> None:
    x = data((3, 2), src)
    (got,) = run_main(lambda a: td.CastOp(a, ELEMENT[np.dtype(dst)]), x)
    assert_numpy(got, x.astype(dst))


def test_cast_overflow_gives_inf_without_error(run_main: RunMain) -> None:
    x = np.array([1e6, -1e6, 1.0])
    (got,) = run_main(lambda a: td.CastOp(a, Float16Type()), x)
    with np.errstate(over="ignore"):
        assert_numpy(got, x.astype(np.float16))
    assert np.isinf(got[0]) and np.isinf(got[1])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (3,), (2, 2), (0, 2)], ids=str)
def test_constant(run_main: RunMain, shape: tuple[int, ...], dtype: Any) -> None:
    value = data(shape, dtype, seed=7)
    element = ELEMENT[np.dtype(dtype)]
    (got,) = run_main(lambda: td.ConstantOp(dense_from_numpy(value, element)))
    assert_numpy(got, value)
    (splat,) = run_main(lambda: td.ConstantOp.splat(1.5, element, shape))
    assert_numpy(splat, np.full(shape, 1.5, dtype))


def test_constant_result_is_fresh(run_main: RunMain) -> None:
    (a, b) = run_main(lambda: (c := td.ConstantOp.splat(1.0, Float32Type(), (2,)), c))
    a[0] = 5.0
    assert b[0] == 1.0


# -- IEEE semantics: inf and nan, never an exception (pytest runs with -W error) --


def test_floating_point_exceptions_give_inf_and_nan(run_main: RunMain) -> None:
    x = np.array([-1.0, 0.0, 1000.0], np.float32)
    zero = np.zeros(3, np.float32)
    log, sqrt, exp, div = run_main(
        lambda a, z: (td.LogOp(a), td.SqrtOp(a), td.ExpOp(a), td.DivOp(a, z)), x, zero
    )
    with np.errstate(all="ignore"):
        assert_numpy(log, np.log(x))
        assert_numpy(sqrt, np.sqrt(x))
        assert_numpy(exp, np.exp(x))
        assert_numpy(div, x / zero)
    assert np.isnan(log[0]) and np.isneginf(log[1])
    assert np.isnan(div[1]) and np.isinf(div[2])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_sigmoid_is_stable(run_main: RunMain, dtype: Any) -> None:
    x = np.array([-1000.0, -20.0, 0.0, 20.0, 1000.0, np.inf, -np.inf]).astype(dtype)
    (got,) = run_main(lambda a: td.SigmoidOp(a), x)
    assert_numpy(got, np_sigmoid(x))
    assert np.all(np.isfinite(got))
    assert got[0] == 0 and got[2] == 0.5 and got[4] == 1


def test_nan_propagates(run_main: RunMain) -> None:
    x = np.array([np.nan, 1.0], np.float64)
    y = np.array([0.0, np.nan], np.float64)
    relu, sig, mx, mn = run_main(
        lambda a, b: (td.ReluOp(a), td.SigmoidOp(a), td.MaximumOp(a, b), td.MinimumOp(a, b)),
        x,
        y,
    )
    assert np.isnan(relu[0]) and np.isnan(sig[0])
    assert np.all(np.isnan(mx)) and np.all(np.isnan(mn))


def test_chain_of_ops_matches_numpy(run_main: RunMain) -> None:
    a = data((8, 16), np.float32, seed=1)
    b = data((16, 8), np.float32, seed=2)
    c = data((8, 8), np.float32, seed=3)

    def body(x: Any, y: Any, z: Any) -> Any:
        return td.AddOp(td.MatmulOp(x, td.ReluOp(y)), td.SoftmaxOp(z, 1))

    (got,) = run_main(body, a, b, c)
    assert_numpy(got, a @ np.maximum(b, 0) + np_softmax(c, 1).astype(np.float32))
