"""Every tensordsl op through the numpy target, against NumPy, in plain, fused and tiled IR."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy_target_ir import (
    DTYPES,
    RTOL,
    check,
    const,
    fused,
    plain,
    rand,
    run,
    sigmoid_ref,
    softmax_ref,
    tiled,
    ttype,
)
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from tdsl.backend.numpy.target import emit_numpy
from tdsl.dialects import tensordsl as td

UNARY: list[tuple[type[td.UnaryOp], Callable[[np.ndarray], np.ndarray], float]] = [
    (td.ReluOp, lambda x: np.maximum(x, 0), -2),
    (td.ExpOp, np.exp, -2),
    (td.LogOp, np.log, 0.1),
    (td.SqrtOp, np.sqrt, 0.1),
    (td.TanhOp, np.tanh, -2),
    (td.SigmoidOp, sigmoid_ref, -2),
    (td.AbsOp, np.abs, -2),
    (td.NegOp, np.negative, -2),
]

BINARY: list[tuple[type[td.BinaryOp], Callable[[np.ndarray, np.ndarray], np.ndarray]]] = [
    (td.AddOp, np.add),
    (td.SubOp, np.subtract),
    (td.MulOp, np.multiply),
    (td.DivOp, np.divide),
    (td.MaximumOp, np.maximum),
    (td.MinimumOp, np.minimum),
]

STAGES = ["plain", "fused", "tiled"]


def build(stage: str, types: list[Any], body: Callable[..., Any], tile_rows: int = 3) -> ModuleOp:
    """``body`` as plain, fused or row-tiled IR (every operand and result tiled along d0)."""
    if stage == "plain":
        return plain(types, body)
    if stage == "fused":
        return fused(types, body)
    rows = types[0].get_shape()[0]
    cols = types[0].get_shape()[1]
    dims = [(0, 1) if len(t.get_shape()) == 2 else (1,) for t in types]
    return tiled(
        types,
        body,
        space=[rows, cols],
        tiles=[tile_rows, cols],
        in_dims=dims,
        out_dims=[(0, 1)],
    )


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("cls", "ref", "low"), UNARY, ids=[c.__name__ for c, _, _ in UNARY])
def test_unary(stage: str, dtype: Any, cls: type[td.UnaryOp], ref: Any, low: float) -> None:
    x = rand((7, 5), dtype, low=low)
    module = build(stage, [ttype(x.shape, dtype)], lambda a: cls(a).result)
    check(run(module, x), ref(x), dtype)


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("cls", "ref"), BINARY, ids=[c.__name__ for c, _ in BINARY])
def test_binary_broadcast(stage: str, dtype: Any, cls: type[td.BinaryOp], ref: Any) -> None:
    a = rand((7, 5), dtype, 1)
    b = rand((5,), dtype, 2, low=0.5, high=3)
    module = build(
        stage, [ttype(a.shape, dtype), ttype(b.shape, dtype)], lambda x, y: cls(x, y).result
    )
    check(run(module, a, b), ref(a, b), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("cls", "ref"), BINARY, ids=[c.__name__ for c, _ in BINARY])
def test_binary_with_literal(dtype: Any, cls: type[td.BinaryOp], ref: Any) -> None:
    a = rand((6, 4), dtype, 3)
    module = plain(
        [ttype(a.shape, dtype)], lambda x: cls(const(1.5, dtype), cls(x, const(2.5, dtype))).result
    )
    got = run(module, a)
    lit = np.array(1.5, dtype), np.array(2.5, dtype)
    check(got, ref(lit[0], ref(a, lit[1])), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", [6, 512])
def test_column_broadcast_division(dtype: Any, rows: int) -> None:
    a = rand((rows, 64), dtype, 3)
    s = rand((rows, 1), dtype, 4, low=0.5, high=2)
    module = plain(
        [ttype(a.shape, dtype), ttype(s.shape, dtype)], lambda x, y: td.DivOp(x, y).result
    )
    # NumPy's quotients bit for bit: a division, never a multiplication by a reciprocal
    assert "np.reciprocal" not in emit_numpy(module)
    np.testing.assert_array_equal(run(module, a, s), a / s)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize(
    ("divisor", "multiplies"),
    [(4.0, True), (0.125, True), (-2.0, True), (3.0, False), (0.1, False), (2.0**-149, False)],
)
def test_division_by_a_constant_multiplies_only_where_exact(
    dtype: Any, divisor: float, multiplies: bool
) -> None:
    # x * (1/d) is x / d rounded once only where 1/d is exact and finite: a power of two
    # whose reciprocal is a float of the dtype (2**-149's overflows in f16 and f32)
    d = np.array(divisor, dtype)
    exact = multiplies and bool(np.isfinite(np.reciprocal(d.astype(np.float64)).astype(dtype)))
    if divisor == 2.0**-149 and dtype == np.float64:
        exact = True
    info = np.finfo(dtype)
    specials = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -3.5, info.max, info.tiny, info.tiny / 8, 7e-3],
        dtype,
    )
    a = np.concatenate([specials, rand((64,), dtype, 3)]).astype(dtype)
    module = plain([ttype(a.shape, dtype)], lambda x: td.DivOp(x, const(divisor, dtype)).result)
    assert ("np.multiply" in emit_numpy(module)) == exact
    with np.errstate(all="ignore"):  # (the numpy target warns where NumPy warns)
        want = a / d
        got = run(module, a)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax(stage: str, dtype: Any, axis: int) -> None:
    if stage == "tiled" and axis == 0:
        pytest.skip("a row tiling cannot run a softmax over the rows")
    x = rand((7, 5), dtype, 5, low=-5, high=5)
    module = build(stage, [ttype(x.shape, dtype)], lambda a: td.SoftmaxOp(a, axis).result)
    check(run(module, x), softmax_ref(x, axis), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7, 5), (256, 300)])
def test_softmax_divides_as_its_reference(dtype: Any, shape: tuple[int, int]) -> None:
    # the quotients of softmax_array bit for bit, also on a tile of 32768 elements or
    # more, where the target used to multiply by the sum's reciprocal (1 ulp off)
    x = rand(shape, dtype, 9, low=-5, high=5)
    module = plain([ttype(x.shape, dtype)], lambda a: td.SoftmaxOp(a, 1).result)
    assert "np.reciprocal" not in emit_numpy(module)
    np.testing.assert_array_equal(run(module, x), td.softmax_array(x, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_and_sigmoid_are_stable(dtype: Any) -> None:
    x = np.array([[1000.0, -1000.0, 0.0], [-1e30, 50.0, 88.0]], dtype)
    module = plain(
        [ttype(x.shape, dtype)], lambda a: (td.SoftmaxOp(a).result, td.SigmoidOp(a).result)
    )
    soft, sig = run(module, x)  # warnings are errors: no overflow may be reported
    with np.errstate(over="ignore"):
        check((soft, sig), (softmax_ref(x), sigmoid_ref(x)), dtype)


REDUCTIONS: list[tuple[type[td.ReductionOp], Callable[..., np.ndarray]]] = [
    (td.SumOp, np.sum),
    (td.MaxOp, np.max),
    (td.MeanOp, np.mean),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize(("cls", "ref"), REDUCTIONS, ids=[c.__name__ for c, _ in REDUCTIONS])
def test_reductions(dtype: Any, axis: int | None, keepdims: bool, cls: Any, ref: Any) -> None:
    x = rand((7, 5), dtype, 6)
    for stage in ("plain", "fused"):
        module = build(stage, [ttype(x.shape, dtype)], lambda a: cls(a, axis, keepdims).result)
        check(run(module, x), ref(x, axis=axis, keepdims=keepdims), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_row_reductions_tiled(dtype: Any, keepdims: bool) -> None:
    x = rand((11, 6), dtype, 7)
    y = rand((11, 6), dtype, 8)
    out_dims = [(0, None)] if keepdims else [(0,)]

    def body(a: SSAValue, b: SSAValue) -> list[SSAValue]:
        prod = td.MulOp(td.ExpOp(a), b)
        return [
            td.SumOp(prod, 1, keepdims).result,
            td.MaxOp(a, -1, keepdims).result,
            td.MeanOp(b, 1, keepdims).result,
        ]

    t = ttype(x.shape, dtype)
    module = tiled(
        [t, t], body, space=[11, 6], tiles=[4, 6], in_dims=[(0, 1)] * 2, out_dims=out_dims * 3
    )
    source = emit_numpy(module)
    # the sum of products is one einsum, but for float16, whose products an einsum in the
    # float32 accumulator would never round to float16
    assert ("np.einsum" in source) == (dtype != np.float16)
    want = (
        np.sum(np.exp(x) * y, axis=1, keepdims=keepdims),
        np.max(x, axis=1, keepdims=keepdims),
        np.mean(y, axis=1, keepdims=keepdims),
    )
    check(run(module, x, y), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("sa", "sb"),
    [
        ((5, 3), (3, 4)),
        ((3,), (3, 4)),
        ((5, 3), (3,)),
        ((3,), (3,)),
        ((2, 5, 3), (3, 4)),
        ((2, 5, 3), (2, 3, 4)),
    ],
)
def test_matmul(dtype: Any, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    a, b = rand(sa, dtype, 9), rand(sb, dtype, 10)
    module = plain([ttype(sa, dtype), ttype(sb, dtype)], lambda x, y: td.MatmulOp(x, y).result)
    check(run(module, a, b), np.matmul(a, b), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_and_cast(dtype: Any) -> None:
    x = rand((4, 3), dtype, 11)
    others = [d for d in DTYPES if d != dtype]

    def body(a: SSAValue) -> list[SSAValue]:
        t = td.TransposeOp(a)
        return [t.result, *(td.CastOp(t, ttype((1,), d).get_element_type()).result for d in others)]

    got = run(plain([ttype(x.shape, dtype)], body), x)
    assert got[0].flags.c_contiguous
    check(got[0], x.T, dtype)
    for g, d in zip(got[1:], others, strict=True):
        check(g, x.T.astype(d), d if RTOL[d] > RTOL[dtype] else dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_constants(dtype: Any) -> None:
    values = np.array([[1.5, -0.0, np.inf], [np.nan, 1e-3, -7.0]], dtype)
    dense = td.dense_from_numpy(values, ttype((1,), dtype).get_element_type())
    big = np.arange(100, dtype=dtype).reshape(10, 10) / 7
    dense_big = td.dense_from_numpy(big, ttype((1,), dtype).get_element_type())
    module = plain(
        [],
        lambda: (td.ConstantOp(dense).result, td.ConstantOp(dense_big).result, const(0.1, dtype)),
    )
    got = run(module)
    np.testing.assert_array_equal(got[0], values)
    assert got[0].dtype == dtype
    np.testing.assert_array_equal(got[1], big)
    assert got[2].shape == () and got[2] == np.array(0.1, dtype)
    assert all(g.flags.owndata for g in got)
