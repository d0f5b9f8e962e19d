"""NumPy functions the language lacks that a traced function may call: ``tdsl.trace``
writes each as the NumPy calls it stands for (``tdsl/jit/trace_compose.py``).  Each
equals NumPy element by element (nan, infinities and the sign of zero in place),
dtype and shape included, on each target; a bad argument is a located error."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tdsl
from tdsl.errors import TdslError

Array = np.ndarray[Any, Any]

rng = np.random.default_rng(0)
X = rng.standard_normal((6, 8)).astype(np.float32)
X[0, 0], X[1, 1], X[2, 2], X[3, 3], X[3, 4] = np.nan, np.inf, -np.inf, 0.0, -0.0
V = rng.standard_normal(8).astype(np.float32)
I = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)  # noqa: E741
B = rng.standard_normal((3, 5)) > 0
H = np.array([1.0, -0.0, 65504.0, -2.5], dtype=np.float16)

# several results per traced function: one compile for each group
GROUPS: dict[str, tuple[Callable[..., Any], tuple[Array, ...]]] = {
    "repeat and tile": (
        lambda x, i, b, v: (
            np.repeat(x, 2),
            np.repeat(x, 3, axis=0),
            np.repeat(x, 2, axis=-1),
            np.repeat(x, 0, axis=1),
            np.repeat(i, 2, axis=1),
            np.repeat(b, 2, axis=0),
            np.tile(v, (2, 1)),
            np.tile(x, 2),
            np.tile(x, (2, 1, 3)),
            np.tile(i, (1, 2)),
        ),
        (X, I, B, V),
    ),
    "outer, diff and ptp": (
        lambda x, i, b, v, h: (
            np.outer(v, v),
            np.outer(x[:2], x[0]),
            np.outer(i, v),
            np.diff(x),
            np.diff(x, axis=0),
            np.diff(x, n=2),
            np.diff(b),
            np.diff(i, axis=0),
            np.diff(x, prepend=0.0),
            np.diff(x, axis=0, append=x[:1]),
            np.diff(h),
            np.ptp(x),
            np.ptp(x, axis=0),
            np.ptp(i, axis=1, keepdims=True),
        ),
        (X, I, B, V, H),
    ),
    "flip and roll": (
        lambda x, v: (
            np.flip(x),
            np.flip(x, 1),
            np.flipud(x),
            np.fliplr(x),
            np.flip(x, (0, 1)),
            np.roll(x, 3),
            np.roll(x, -2, axis=1),
            np.roll(x, (1, 9), axis=(0, 1)),
            np.roll(v, 11),
        ),
        (X, V),
    ),
    "atleast and hsplit": (
        lambda x, i, b, v: (
            np.atleast_1d(x[0, 0]),
            np.atleast_1d(v),
            np.atleast_2d(v),
            np.atleast_2d(x),
            np.atleast_3d(x[0, 0]),
            np.atleast_3d(v),
            np.atleast_3d(i),
            *np.atleast_2d(b[0], x[1, 1]),
            *np.hsplit(v, 4),
            *np.hsplit(x, [1, 5]),
            *np.vsplit(i, 3),
            *np.dsplit(np.atleast_3d(x), 1),
            *np.dsplit(x.reshape(2, 3, 8), [3]),
        ),
        (X, I, B, V),
    ),
    # angle conversions bit for bit (NumPy's constants in NumPy's precision) and
    # np.select in NumPy 2's dtype (both refused before; found by fuzzing)
    "angles and select": (
        lambda x, i, b, h: (
            np.deg2rad(x),
            np.radians(i),
            np.rad2deg(h),
            np.degrees(b),
            np.rad2deg(x.astype(np.float64)),
            np.select([x > 0.5, x < -0.5], [x * 2, x / 2]),
            np.select([i > 2, b[:, :4], i < -3], [1, i, 2.5], default=-1),
            np.select([x > 0], [h[0]], default=np.float32(3)),
            np.select([b], [b], default=True),
        ),
        (X, I, B, H),
    ),
    # found by fuzzing constants: np.nan_to_num replaces what x holds (a nan replaced by
    # inf stayed inf only in NumPy: the trace then replaced that inf by the max); a
    # Python float bound of np.isclose stays weak (-1e308 is -inf in float32: close);
    # np.select's Python int beyond a signed dtype wraps, as NumPy's copyto (a raw
    # OverflowError)
    "constants of composed functions": (
        lambda x, i, h: (
            np.nan_to_num(np.where(x > 0.5, np.nan, x), nan=np.inf),
            np.nan_to_num(np.where(h > 0.5, np.nan, h / 0), nan=1e6),
            np.isclose(x, -1e308),
            np.isclose(x, 1e-320, atol=0),
            np.select([i > 0, i < 0], [i, 2**62], 2**62),
            np.select([i > 1], [-(2**40)], 7),
        ),
        (X, I, H),
    ),
    # np.heaviside: the step NumPy's loop takes, nan kept, either zero giving x2, in the
    # float loop NumPy resolves; np.divmod: floor_divide's and remainder's results, as
    # NumPy's loop gives both (refused before)
    "heaviside and divmod": (
        lambda x, i, b, h, v: (
            np.heaviside(x, 0.5),
            np.heaviside(x, x[::-1]),
            np.heaviside(x, v),
            np.heaviside(i, 0.5),
            np.heaviside(i, i),
            np.heaviside(h, np.float16(-0.0)),
            np.heaviside(0.0, v),
            np.heaviside(b, 2),
            *np.divmod(x, v),
            *np.divmod(i, 3),
            *np.divmod(i, i[::-1]),
            np.divmod(x, 0.75)[1],
        ),
        (X, I, B, H, V),
    ),
    # np.take's modes (refused before): the indices modulo the axis, or clipped to it
    # (negative ones to 0), by position, keyword and as a method
    "take modes": (
        lambda x, i, b, v: (
            np.take(x, i, axis=1, mode="wrap"),
            np.take(x, i, axis=0, mode="clip"),
            np.take(x, i[0], mode="wrap"),
            np.take(x, [9, -1, -100], -1, None, "clip"),
            np.take(b, 7, axis=1, mode="wrap"),
            x.take(i.astype(np.uint8), axis=1, mode="clip"),
            v.take(i % 8),  # (mode "raise": the language's take)
            np.take(x, i % 6, axis=0, mode="raise"),
        ),
        (X, I % 7 - 9, B, V),
    ),
    # reductions with `initial=` (refused before; found by fuzzing): integer sums and
    # products, whose order does not matter, and float extremes
    "reductions with initial": (
        lambda x, i, b: (
            np.sum(i, axis=0, initial=2.5),
            i.sum(axis=1, keepdims=True, initial=-1),
            np.prod(i[:, :2], axis=1, initial=3),
            np.max(x, initial=5.0),
            np.min(i, axis=1, initial=0),
            x.max(axis=0, initial=np.float32(0.5)),
            np.amin(x[1:], axis=1, initial=-np.inf),
            np.max(b, initial=0.5),
            np.sum(b, initial=1),
            np.max(x[:, :0], axis=1, initial=1.0),
            np.max(x, axis=1, initial=np.nan),
        ),
        (X, I, B),
    ),
    # a ufunc with dtype=: the loop NumPy resolves, its operands cast (refused before)
    "ufuncs with dtype": (
        lambda x, i, b: (
            np.add(x, 1, dtype=np.float64),
            np.multiply(i, 2.5, dtype=np.float32),
            np.sqrt(np.abs(i), dtype=np.float32),
            np.add(i, i, dtype=np.int64),
            np.maximum(x[:3, :4], i, dtype=np.float64),
            np.subtract(x, 0.5, dtype=np.float16),
            np.logical_and(b, b, dtype=bool),
        ),
        (X, I, B),
    ),
    # np.average, NumPy's algorithm with constant weights (refused before): of integers
    # and integer-valued floats, whose sums do not depend on their order
    "average": (
        lambda i: (
            np.average(i),
            np.average(i, axis=1, weights=np.array([1, 2, 3, 4])),
            *np.average(i, axis=0, weights=np.array([0.5, 1.0, 2.0]), returned=True),
            np.average(i.astype(np.float32), axis=(0, 1), keepdims=True),
            np.average(i.astype(np.float32), weights=np.arange(1, 13).reshape(3, 4)),
            *np.average(i.astype(np.float16), axis=-1, returned=True),
        ),
        (I,),
    ),
    "counts, nan_to_num, isclose and pad": (
        lambda x, i, b, v, h: (
            np.count_nonzero(x),
            np.count_nonzero(x, axis=0),
            np.count_nonzero(b, axis=1, keepdims=True),
            np.count_nonzero(i, axis=(0, 1)),
            np.nan_to_num(x),
            np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0),
            np.nan_to_num(h / 0),
            np.nan_to_num(i),
            np.isclose(x, x + 1e-6),
            np.isclose(x, v, rtol=0.5),
            np.isclose(x, x, equal_nan=True),
            np.isclose(x, 0.5, atol=1.0),
            np.isclose(i, 1),
            np.pad(x, 1),
            np.pad(x, ((1, 2), (0, 3)), constant_values=7.5),
            np.pad(i, (2, 0)),
            np.pad(v, (3, 1), constant_values=-1),
        ),
        (X, I, B, V, H),
    ),
    "take_along_axis and norm": (
        lambda x, i, t, idx, rows, flat, n: (
            np.take_along_axis(x, idx, axis=1),
            np.take_along_axis(x, rows, 0),
            np.take_along_axis(x, flat, None),
            np.take_along_axis(x, np.argmax(x, axis=1, keepdims=True), axis=-1),
            np.linalg.norm(n),
            np.linalg.norm(n, axis=0),
            np.linalg.norm(n, axis=1, keepdims=True),
            np.linalg.norm(x, np.inf, axis=1),
            np.linalg.norm(x, -np.inf, axis=1),
            np.linalg.norm(n, 0, axis=1),
            np.linalg.norm(n, "fro"),
            np.linalg.norm(t, axis=(1, 2)),
            np.linalg.norm(i, axis=1),
        ),
        (
            X,
            I,
            np.arange(24.0).reshape(2, 3, 4),
            rng.integers(-8, 8, (6, 3)),
            rng.integers(0, 6, (2, 8)),
            rng.integers(0, 48, 5),
            rng.integers(-4, 5, (2, 8)).astype(np.float32),
        ),
    ),
    "norms of empty vectors": (
        # (ord=inf is NumPy's max from 0: 0 of an empty vector; it was refused)
        lambda e, z: (
            np.linalg.norm(e, np.inf),
            np.linalg.norm(z, np.inf, axis=0),
            np.linalg.norm(z.T, np.inf, axis=-1, keepdims=True),
            np.linalg.norm(e),
            np.linalg.norm(z, 1, axis=0),
            np.linalg.norm(e, 0),
        ),
        (np.zeros(0, np.float32), np.zeros((0, 3))),
    ),
    "reductions with dtype= and .repeat": (
        lambda x, u, i, b: (
            np.sum(x, dtype=np.float64),
            np.sum(u, axis=1, dtype=np.uint8),
            (i * 100000).sum(dtype=np.int32),
            np.prod(i[:, :3] * 50, axis=1, dtype=np.uint8),
            np.cumsum(u, axis=0, dtype=np.uint8),
            np.cumprod(i, axis=1, dtype=np.float64),
            np.mean(i, dtype=np.float32),
            x.mean(axis=1, keepdims=True, dtype=np.float64),
            np.sum(b, axis=0, dtype=bool),
            np.prod(b, axis=1, dtype=bool),
            x.repeat(2, axis=1),
        ),
        (
            np.nan_to_num(X, posinf=3.0, neginf=-3.0),
            rng.integers(0, 255, (5, 7)).astype(np.uint8),
            rng.integers(-9, 9, (5, 7)).astype(np.int32),
            rng.standard_normal((5, 7)) > 0,
        ),
    ),
    "named clip bounds and concatenate(axis=None)": (
        lambda x, y: (
            np.clip(x, a_min=-0.5, a_max=0.5),
            np.clip(x, min=-0.5, max=0.5),
            np.clip(x, -0.5, a_max=0.5),
            np.clip(x, max=0.1),
            x.clip(min=0),
            np.concatenate([x, y], axis=None),
            np.concatenate((x, y.T[:3]), axis=None),
            np.concatenate([x, y], axis=-2),
        ),
        (X[3:], rng.standard_normal((2, 8)).astype(np.float32)),
    ),
    "clip of integers by Python ints beyond their dtype": (
        # (a bound beyond the dtype on its own side bounds nothing, as in NumPy 2; it
        # was refused as out of bounds)
        lambda u, w, i: (
            np.clip(u, -5, None),
            np.clip(u, -5, 300),
            np.clip(u, 3, 300),
            np.clip(w, -1, 2**64 + 5),
            np.clip(w, 7, 2**64),
            np.clip(i, -(2**63) - 1, 5),
            np.clip(i, min=-(2**70)),
        ),
        (
            np.arange(12, dtype=np.uint8),
            np.array([0, 5, 9, 2**64 - 1], dtype=np.uint64),
            np.arange(-6, 6, dtype=np.int64),
        ),
    ),
    "axis 0 or -1 of a 0-d array": (
        # (NumPy's reductions and scans take it as the whole array; it was refused)
        lambda s, i: (
            np.sum(s, axis=0),
            np.max(s, axis=-1),
            np.argmax(i, axis=0),
            np.cumsum(i, axis=0),
            np.cumprod(s, -1),
            i.min(axis=0),
            np.all(s, axis=0),
        ),
        (np.array(5.5, np.float32), np.array(-3, np.int32)),
    ),
    "keepdims given as an int": (
        # (NumPy takes its truth; the trace wrote `keepdims=1`, which the language refuses)
        lambda x: (
            np.sum(x, axis=1, keepdims=1),
            np.max(x, keepdims=0),
            x.mean(axis=0, keepdims=1),
            np.argmax(x, axis=0, keepdims=np.True_),
        ),
        (np.arange(-12.0, 12.0, dtype=np.float32).reshape(4, 6),),  # (sums exact in any order)
    ),
    "clip by Python bools": (
        # (a bool bound is 0 or 1 of numbers, and clips booleans; it was spelled `True`,
        # an unknown name; found by a fuzzer)
        lambda i, f, b: (
            np.clip(i, 0, True),
            np.clip(i, False, 3),
            np.clip(f, True, None),
            np.clip(b, False, True),
            np.clip(b, True, None),
            np.clip(b, None, False),
        ),
        (
            np.array([0, 1, -1, 5], np.int32),
            np.array([0.5, -2.0, 3.0], np.float32),
            np.array([True, False]),
        ),
    ),
    "zeros_like, ones_like, full_like": (
        lambda x, i, b, h: (
            np.zeros_like(x),
            np.zeros_like(i),
            np.zeros_like(b),
            np.zeros_like(x, dtype=np.int64),
            np.ones_like(x, dtype=np.int32),
            np.ones_like(b),
            np.full_like(x, 2.5),
            np.full_like(i, 2.7),
            np.full_like(x, np.nan),
            np.full_like(x, -0.0),
            np.full_like(b, 3),
            np.full_like(h, 1e6),
            np.full_like(x, -np.inf, dtype=np.float64),
            np.full_like(i, 7, dtype=np.uint8),
            np.full_like(x, x.max()),
        ),
        (
            X[3:],
            np.arange(12, dtype=np.int32).reshape(3, 4),
            np.arange(12).reshape(3, 4) > 4,
            H,
        ),
    ),
    "ufunc methods": (
        lambda x, b: (
            np.add.reduce(x),
            np.maximum.reduce(x, axis=1),
            np.add.reduce(x, axis=None),
            np.multiply.reduce(x, 0, keepdims=True),
            np.add.accumulate(x),
            np.multiply.accumulate(x, axis=1),
            np.logical_and.reduce(b, axis=1),
            np.logical_or.reduce(b),
            np.add.reduce(b, dtype=np.int32),
            np.minimum.reduce(x, axis=(0, 1)),
        ),
        (np.arange(12.0).reshape(3, 4), np.arange(12).reshape(3, 4) > 3),
    ),
    "ufuncs of the language's functions": (
        lambda x, i, u, b: (
            np.fabs(x),
            np.fabs(i),
            np.fabs(u),
            np.rint(x),
            np.rint(i),
            +x,
            np.positive(i),
            np.signbit(x),
            np.signbit(i),
            np.signbit(b),
            np.logical_and(x, i),
            np.logical_or(x, 0.0),
            np.logical_xor(b, x),
            np.logical_xor(b, b),
            np.logical_not(x),
            np.logical_not(b),
            np.round(x, 2),
            np.round(x, -1),
            np.around(x.astype(np.float64) * 1.005, 3),
            x.round(1),
            np.round(i, 2),
            # zero places spelled out: the language's round (it was refused; found by fuzzing)
            np.round(x, 0),
            np.around(x, decimals=0),
            x.round(0),
            np.round(i, 0),
        ),
        (
            np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, np.nan, -np.nan, np.inf, -1])
            .astype(np.float32)
            .reshape(3, 4),
            np.arange(-6, 6, dtype=np.int32).reshape(3, 4),
            np.arange(12, dtype=np.uint8).reshape(3, 4),
            np.arange(12).reshape(3, 4) % 3 == 0,
        ),
    ),
    "nan reductions": (
        lambda n, i, b, h: (
            np.nansum(n),
            np.nansum(n, axis=1),
            np.nansum(n, axis=0, keepdims=True),
            np.nansum(n, dtype=np.float64),
            np.nansum(i, axis=1),
            np.nansum(b),
            np.nanprod(n, axis=1),
            np.nanprod(i, 0),
            np.nanmax(n, axis=1),
            np.nanmax(n, 0, None, True),
            np.nanmax(n),
            np.nanmax(i, axis=0),
            np.nanmax(b, axis=1),
            np.nanmin(n, axis=1),
            np.nanmin(n.T, axis=-1),
            np.nanmin(h),
            np.nanmean(n, axis=1),
            np.nanmean(n),
            np.nanmean(n, axis=0, dtype=np.float64),
            np.nanmean(i, axis=1),
            np.nanmean(b),
        ),
        (
            # small integers (exact sums and products in any order), nan (a row of
            # nothing else), infinities and -0
            np.array(
                [
                    [np.nan] * 6,
                    [1, np.nan, -2, 3, 0, 2],
                    [-0.0, -0.0, np.nan, 1, -3, 2],
                    [np.inf, 2, -1, np.nan, 3, -2],
                    [2, -2, 1, 1, -1, 3],
                ],
                dtype=np.float32,
            ),
            np.arange(-6, 6, dtype=np.int32).reshape(3, 4),
            np.arange(12).reshape(3, 4) % 3 == 0,
            np.array([np.nan, -0.0, 2.5, np.nan], dtype=np.float16),
        ),
    ),
}
"""(The norms' sums are of small integers, which any order adds exactly: NumPy's
pairwise sum and a dot product for the whole array give the same bits; so are the nan
reductions'.)"""


def same(got: Any, want: Any) -> None:
    # a 0-d result is a NumPy scalar where NumPy gives one (`np.sum(x)`), and an array
    # where NumPy gives one (`np.where`'s)
    assert type(got) is type(want), (type(got), type(want))
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), (got, want)
    if want.dtype.kind == "f":
        numbers = ~np.isnan(want)
        assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


@pytest.mark.parametrize("group", GROUPS)
def test_composed_functions_are_numpys(jit_target: str, group: str) -> None:
    fn, args = GROUPS[group]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = fn(*args)
        traced = tdsl.trace(fn)
        got = traced(*args)
    assert traced.kernels[0].target == jit_target
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        try:
            same(g, w)
        except AssertionError as err:
            raise AssertionError(f"result {k} of {group}") from err


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda x: np.repeat(x, [1, 2, 1], axis=0), "count of `np.repeat` must be a Python int"),
        (lambda x: np.einsum(x, [0, 1, 2], []), "`np.einsum`'s interleaved form"),
        (lambda x: np.repeat(x, -1), "count of `np.repeat` must not be negative"),
        (lambda x: np.repeat(x, 2, axis=2), "axis 2 of `np.repeat` is out of bounds"),
        (lambda x: np.tile(x, (-1, 2)), "counts of `np.tile` must not be negative"),
        (lambda x: np.roll(x, 1, axis=5), "axis 5 of `np.roll` is out of bounds"),
        (lambda x: np.roll(x, (1, 2, 3), axis=(0, 1)), "must have the same length"),
        (lambda x: np.pad(x, 1, mode="edge"), "pads with constants only"),
        (lambda x: np.pad(x, -1), "a width of `np.pad` must not be negative"),
        (lambda x: np.pad(x, 1, constant_values=(1, 2)), "must be one number"),
        (lambda x: np.diff(x.sum()), "at least one dimension"),
        (lambda x: np.diff(x, n=-1), "order `n` of `np.diff` must not be negative"),
        (lambda x: np.flip(x, 3), "axis 3 of `np.flip` is out of bounds"),
        (lambda x: np.fliplr(x[0]), "at least two dimensions"),
        (lambda x: np.linalg.norm(x, 2), "ord=2 of a matrix is not supported"),
        (lambda x: np.take_along_axis(x, np.zeros(3, int), 1), "must have the same dims"),
        (lambda x: np.mean(x, dtype=np.float16), "dtype=float16 is not supported"),
        (lambda x: np.mean(x, dtype=np.int32), "dtype=int32 is not supported"),
        (lambda x: +(x > 0), r"`np.positive` \(unary `\+`\) of booleans"),
        (lambda x: np.round(x.astype(np.int32), -1), "integers to negative decimals"),
        (lambda x: np.add.reduce(x, initial=1.0), "`np.add.reduce` with `initial`"),
        (lambda x: np.maximum.accumulate(x), "`np.maximum.accumulate` is not supported"),
        (lambda x: np.add.accumulate(x, axis=None), "accumulate takes one axis"),
        (lambda x: np.flip(x, (0, -2)), r"repeated axis in \(0, -2\)"),
        (lambda x: np.clip(x, a_min=1), "takes both: give None for no bound"),
        (lambda x: np.clip(x.astype(np.uint8), None, -1), "-1 is out of bounds for uint8"),
        (lambda x: np.mean(x[0, 0], axis=0), "axis 0 is out of range for `mean`"),  # (NumPy's)
        (lambda x: np.vsplit(x[0], 2), r"`np.vsplit` only works on arrays of 2 or more"),
        (lambda x: np.hsplit(x[0, 0], 2), r"`np.hsplit` only works on arrays of 1 or more"),
        (lambda x: np.dsplit(x, 2), r"`np.dsplit` only works on arrays of 3 or more"),
        (lambda x: np.select([x > 0], [x, x]), "list of cases must be same length"),
        (lambda x: np.average(x, axis=0, weights=np.zeros(3)), "Weights sum to zero"),
        (lambda x: np.average(x, weights=np.ones(4)), "Axis must be specified when shapes"),
        (lambda x: np.average(x, 0, np.ones(4)), "Shape of weights must be consistent"),
        (lambda x: np.average(x, weights=x), "the weights of `np.average` are traced"),
        (lambda x: np.add(x, 1, dtype=np.int32), "Cannot cast ufunc 'add' input 0 from"),
        (lambda x: np.less(x, 1, dtype=np.float32), "No loop matching the specified signature"),
        (lambda x: np.max(x.astype(np.uint8), initial=-1), "`initial` -1 is out of bounds"),
        (lambda x: np.sum(x, initial=x[0]), r"`initial` must be a scalar, not an array of"),
        (lambda x: (x > 0) ** 3, r"booleans to an integer power .* int8 for `\*\* 2`"),
        (lambda x: np.select([x], [x]), "invalid entry 0 in condlist: should be boolean"),
        (lambda x: np.take(x, [0], mode="bad"), "clipmode must be one of 'clip', 'raise', or"),
        (lambda x: np.take(x, [0.5], mode="clip"), "indices of float64 are not integers"),
        (lambda x: np.take(x, [0], axis=3, mode="wrap"), "axis 3 of `np.take` is out of bounds"),
    ],
)
def test_bad_arguments_are_located_errors(fn: Callable[..., Any], message: str) -> None:
    with pytest.raises(TdslError) as caught:
        tdsl.trace(fn)(np.ones((3, 4), np.float32))
    # (the message alone: the error's text quotes the source line, this test's own)
    assert re.search(message, caught.value.message), caught.value.message
    assert caught.value.location is not None
    assert caught.value.location.file == __file__


def test_a_traced_initial_value_is_cast_in_the_kernel(jit_target: str) -> None:
    """``initial=`` of a reduction may be a Python-number argument or a traced scalar: cast
    to the result's dtype in the kernel, as NumPy casts it (it was refused with the
    message for a NumPy array indexed by a traced one; found by fuzzing), over an empty
    axis too (the initial value, its -0 kept)."""
    x = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], np.float32)
    empty = np.zeros((0, 3), np.float32)
    ints = np.array([1, -2, 3], np.int32)
    cases: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
        (lambda x, s: np.max(x, initial=s), (x, 9.5)),
        (lambda x, s: np.sum(x, axis=1, initial=s), (x, 0.5)),
        (lambda x, s: np.prod(x, initial=s), (x, -2)),
        (lambda x, s: np.min(x, axis=0, initial=s, keepdims=True), (x, 0.5)),
        (lambda x, s: x.sum(initial=s.sum()), (x, x)),
        (lambda x, s: np.sum(x, axis=0, initial=s), (empty, -0.0)),
        (lambda x, s: np.max(x, initial=s), (ints, 2.7)),  # (2.7 in int32 is 2)
        (lambda x, s: np.sum(x, initial=s), (ints, 7)),
    ]
    for fn, args in cases:
        same(tdsl.trace(fn)(*args), fn(*args))


@st.composite
def compositions(draw: st.DrawFn) -> tuple[str, Callable[..., Any], Array]:
    """One composed function with drawn static arguments, and an input of a drawn shape
    (extents from 0) and dtype, with special values among its floats."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32, np.bool_]))
    values = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 3.0, 7.0])
    seed = draw(st.integers(0, 2**16))
    chosen = np.random.default_rng(seed).choice(values, size=shape)
    if dtype is np.bool_:
        x = chosen > 0
    elif dtype is np.int32:
        x = np.where(np.isfinite(chosen), chosen, 5).astype(np.int32)
    else:
        x = chosen.astype(dtype)
    axis = draw(st.integers(-rank, rank - 1))
    n = draw(st.integers(0, 3))
    kind = draw(st.sampled_from(["repeat", "tile", "roll", "diff", "pad", "flip", "take"]))
    if kind == "repeat":
        return kind, lambda a: np.repeat(a, n, axis=axis), x
    if kind == "tile":
        reps = tuple(draw(st.lists(st.integers(0, 2), min_size=1, max_size=3)))
        return f"tile {reps}", lambda a: np.tile(a, reps), x
    if kind == "roll":
        shift = draw(st.integers(-6, 6))
        return f"roll {shift} {axis}", lambda a: np.roll(a, shift, axis=axis), x
    if kind == "diff":
        if dtype is np.bool_ or shape[axis] == 0:
            return kind, lambda a: np.diff(a, n=n, axis=axis), x
        return kind, lambda a: np.diff(a, n=n, axis=axis, prepend=-1), x
    if kind == "pad":
        widths = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in shape)
        return f"pad {widths}", lambda a: np.pad(a, widths), x
    if kind == "flip":
        return kind, lambda a: np.flip(a, axis), x
    rows = draw(st.integers(0, 3))
    index_shape = tuple(rows if d == axis % rank else s for d, s in enumerate(shape))
    k = shape[axis]
    index = np.random.default_rng(seed).integers(-k, k, size=index_shape) if k else None
    if index is None:
        return "flip", lambda a: np.flip(a), x
    return "take", lambda a: np.take_along_axis(a, index, axis), x


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(compositions())
def test_any_composition_is_numpys(case: tuple[str, Any, Array]) -> None:
    """Each composed function, with any static arguments, on any shape (empty ones too)
    and dtype, equals NumPy element by element."""
    name, fn, x = case
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = fn(x)
        got = tdsl.trace(fn)(x)
    try:
        same(got, want)
    except AssertionError as err:
        raise AssertionError(f"{name} of {x.dtype}{x.shape}") from err


def test_tensordot_and_inner_are_numpys_to_rounding(jit_target: str) -> None:
    """``np.tensordot`` (a count of axes, pairs of axis lists, 0 for the outer product),
    ``np.inner`` and ``np.dot`` of any ranks, as one matrix product of the operands reshaped as NumPy reshapes
    them: NumPy's values to float32 rounding (its products sum in another order), its
    shapes and dtypes."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5, 2)).astype(np.float32)
    c = rng.standard_normal((6, 5)).astype(np.float32)
    v = rng.standard_normal(5).astype(np.float32)

    def fn(a: Any, b: Any, c: Any, v: Any) -> Any:
        return (
            np.tensordot(a, b),
            np.tensordot(a, b, axes=([2, 1], [1, 0])),
            np.tensordot(a, c, axes=([2], [1])),
            np.tensordot(c, v, axes=1),
            np.tensordot(v, v, axes=0),
            np.einsum("ij,jk->ik", c, c.T, optimize=True),
            np.inner(c, v),
            np.inner(a, c),
            np.inner(v, 2.0),
            np.dot(a, b),  # N-d: a's last axis with b's second-to-last, not matmul's
            np.dot(c, a.transpose(1, 2, 0)),
            a.dot(v),
            np.dot(v, b),
            np.dot(np.float32(2), c),
            c.dot(v, out=None),
        )

    # NumPy's bundled OpenBLAS (0.3.31, SkylakeX kernels) now and then raises FE_INVALID
    # in ``c.dot(v)`` on these finite inputs, which NumPy reports as "invalid value
    # encountered in dot" (seen once in a full run on an Intel AVX-512 machine; not
    # reproduced alone): the reference ignores it, and its values must be finite
    with np.errstate(invalid="ignore"):
        wants = fn(a, b, c, v)
    assert all(np.isfinite(w).all() for w in wants)
    for got, want in zip(tdsl.trace(fn)(a, b, c, v), wants, strict=True):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(TdslError, match="summed axes of the two operands differ"):
        tdsl.trace(lambda a, c: np.tensordot(a, c, axes=([1], [1])))(a, c)


def test_empty_like_is_an_array_of_its_shape_and_dtype() -> None:
    """``np.empty_like`` leaves its values unset in NumPy (they are zeros here): only its
    shape and dtype are NumPy's to compare."""
    b = np.arange(6).reshape(2, 3) > 2
    got = tdsl.trace(lambda b: np.empty_like(b, dtype=np.float32))(b)
    assert (got.dtype, got.shape) == (np.float32, (2, 3))


def test_the_fuzzers_cases_are_numpys(jit_target: str) -> None:
    """Found by an independent fuzzer of ``tdsl.trace``, each was another value, dtype or
    a raw exception: ``np.round`` to 23 places (NumPy's power of ten is 1e9 times 10.0,
    rounded each step: not ``10.0 ** 23``) and to 400 (a raw ``OverflowError``); a pad
    value out of the dtype's range (NumPy casts it: -1 is 255 in uint8); ``np.tensordot``
    and ``np.inner`` summing an axis of length 0; ``np.nan_to_num`` with a NumPy float64
    replacement (float32 stays float32); ``np.maximum.reduce``/``np.logical_or.reduce``
    with ``dtype=``; ``np.inner`` of a Python-number argument (an array: strong) and
    ``np.concatenate(axis=None)`` of a Python number (weak, as NumPy 2 joins it)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(16)
    x[:4] = [0.1, -0.0, np.inf, np.nan]
    u = np.arange(4, dtype=np.uint8)
    f = X[0, 1:].copy()
    e = np.ones((3, 0), np.float32)

    def fn(x: Any, u: Any, f: Any, e: Any, s: Any, n: Any) -> Any:
        return (
            np.round(x, 23),
            np.round(x, 9),
            np.round(x, -12),
            np.round(x, 400),
            np.round(x, -400),
            np.pad(u, 1, constant_values=-1),
            np.pad(u, (2, 0), constant_values=300),
            np.pad(f, 1, constant_values=2.7),
            np.tensordot(e, np.ones((0, 4), np.float32), axes=1),
            np.inner(e, e),
            np.nan_to_num(f, nan=np.float64(2.5), posinf=np.float64(1e300), neginf=np.array(-3.0)),
            np.maximum.reduce(u, dtype=np.float64),
            np.minimum.reduce(f, dtype=np.float64),
            np.logical_or.reduce(f, dtype=bool),
            np.inner(u, n),
            np.inner(f, s),
            np.concatenate([u, 3], axis=None),
            np.concatenate([f, 0.1, u], axis=None),
            np.concatenate([u, n, 300], axis=None),
            np.concatenate([u, [3, 4], 5], axis=None),  # (a list: an array, strong)
        )

    with np.errstate(all="ignore"):
        want = fn(x, u, f, e, 0.5, 3)
        got = tdsl.trace(fn)(x, u, f, e, 0.5, 3)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        try:
            same(g, w)
        except AssertionError as err:
            raise AssertionError(f"result {k}") from err
    with pytest.raises(TdslError, match="dtype=float64: NumPy has no such loop"):
        tdsl.trace(lambda f: np.logical_and.reduce(f, dtype=np.float64))(f)
    for empty in (lambda b: np.max(b), lambda b: np.min(b, axis=0), lambda b: np.ptp(b)):
        with pytest.raises(TdslError, match="reduces zero elements, and it has no identity"):
            tdsl.trace(empty)(np.zeros((0, 3), bool))  # NumPy: "zero-size array to reduction"


def test_the_fuzzers_second_cases_are_numpys(jit_target: str) -> None:
    """The same fuzzer's later finds: lists and Python numbers as operands of
    ``np.tensordot``, ``np.inner`` and ``np.diff`` (a raw ``AttributeError``); what returns
    a Python-number argument unchanged (``np.round(n, 1)``, ``np.nan_to_num(n)``,
    ``np.positive(n)``, ``np.pad(s, 0)``) is strong, as NumPy's; ``np.linalg.norm`` with a
    NumPy scalar ``ord`` keeps float32; ``np.isclose(x, s)`` of a Python number compares in
    x's dtype (it was float64); bad pad widths and fills are located errors."""
    f = np.array([1.0, 1e8, -2.0, 3.0], np.float32)
    u = np.arange(4, dtype=np.uint8)

    def fn(f: Any, u: Any, n: Any, s: Any) -> Any:
        return (
            np.tensordot(f, 2.0, axes=0),
            np.tensordot(f, [1.0, 2.0, 3.0, 4.0], axes=1),
            np.inner(f, [1.0, 2.0, 3.0, 4.0]),
            np.diff([1.0, 4.0, 9.0], prepend=f[:1]),
            np.round(n, 1) * u,
            np.nan_to_num(n) * f,
            np.positive(n) * u,
            np.pad(s, 0) * f,
            np.linalg.norm(f, ord=np.float64(3)),
            np.linalg.norm(f, ord=np.int64(1)),
            np.isclose(f, n, rtol=0, atol=0),
            np.isclose(f, s),
        )

    with np.errstate(all="ignore"):
        want = fn(f, u, 100000001, 3.0)
        got = tdsl.trace(fn)(f, u, 100000001, 3.0)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert (np.asarray(g).dtype, np.shape(g)) == (np.asarray(w).dtype, np.shape(w)), k
        np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=f"result {k}")
    bad = [
        (lambda f: np.pad(f, ((1, 2), (3, 4))), "must be a \\(before, after\\) pair for each"),
        (lambda f: np.full_like(f, np.ones((2, 4))), "does not broadcast to \\(4,\\)"),
        (lambda f: np.full_like(f, 300, dtype=np.uint8), "300 .* out of bounds for uint8"),
    ]
    for fn_bad, message in bad:
        with pytest.raises(TdslError, match=message):
            tdsl.trace(fn_bad)(f)
    with pytest.raises(TdslError, match=r"a Python int in \[0, 9223372036854775807\]"):
        tdsl.trace(lambda x, s: x + s)(np.arange(3, dtype=np.uint64), -1)  # NumPy: OverflowError


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 3)])
def test_a_value_that_also_feeds_an_op_over_an_empty_axis_is_computed(
    jit_target: str, shape: tuple[int, ...]
) -> None:
    # v fed `a + v` over the empty axis in one group: the native loops ran no iteration
    # of it and returned v's buffer unwritten (2.0 for 6.0, found by fuzzing)
    def fn(a: Any, s: Any) -> Any:
        v = np.where(s > 0, s, -s) * 2
        return v, a + v, a.sum(axis=-1) + v

    a, s = np.zeros(shape, np.float32), np.array(-3.0, np.float32)
    for g, w in zip(tdsl.trace(fn)(a, s), fn(a, s), strict=True):
        assert (np.asarray(g).dtype, np.shape(g)) == (np.asarray(w).dtype, np.shape(w))
        np.testing.assert_array_equal(g, w)


def test_a_numpy_bool_given_by_position_is_an_operand(jit_target: str) -> None:
    # `np.clip(x, np.True_, 5)` was written `clip(x, True, 5)`, which the language reads as
    # an unknown name `True` (found by fuzzing)
    x = np.array([0, 2, 9], np.uint8)

    def fn(x: Any, b: Any) -> Any:
        return np.clip(x, np.True_, 5), np.clip(x, np.False_, 5), np.clip(b, b, 3)

    b = np.array([True, False])
    for g, w in zip(tdsl.trace(fn)(x, b), fn(x, b), strict=True):
        assert (np.asarray(g).dtype, np.shape(g)) == (np.asarray(w).dtype, np.shape(w))
        np.testing.assert_array_equal(g, w)


def test_isclose_raises_no_floating_point_error_where_numpy_raises_none(jit_target: str) -> None:
    """NumPy's ``isclose`` ignores invalid operations (``inf - inf``, ``0 * inf``): the
    composition never computes them, so under ``np.errstate(all="raise")`` it returns
    NumPy's values on every pairing of infinities, nan, zeros and numbers (the numpy
    target raised ``FloatingPointError`` on ``inf - inf``; found by fuzzing)."""
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0, 3e38], np.float32)
    a, b = (v.ravel() for v in np.meshgrid(special, special))

    def fn(x: Array, y: Array) -> tuple[Array, ...]:
        return (
            np.isclose(x, y),
            np.isclose(x, y, rtol=0.0),
            np.isclose(x, y, equal_nan=True),
            np.isclose(x, np.inf),
        )

    with np.errstate(all="raise"):
        want = fn(a, b)
        traced = tdsl.trace(fn)
        got = traced(a, b)
    assert traced.kernels[0].target == jit_target
    for g, w in zip(got, want, strict=True):
        same(g, w)


def test_nanmean_of_a_slice_of_nan_raises_no_floating_point_error(jit_target: str) -> None:
    """NumPy's ``nanmean`` of a slice of nan only is nan, with a warning and no
    ``FloatingPointError`` under ``np.errstate(all="raise")``: the composition divides
    only where it counted an element (the numpy target raised on its ``0 / 0``)."""
    x = np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, 2.5], [-0.0, 3.0, np.nan]], np.float32)

    def fn(v: Array) -> tuple[Array, ...]:
        return np.nanmean(v, axis=1), np.nanmean(v, axis=0, keepdims=True), np.nanmean(v[:1])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy's "Mean of empty slice")
        want = fn(x)
    with np.errstate(all="raise"):
        traced = tdsl.trace(fn)
        got = traced(x)
    assert traced.kernels[0].target == jit_target
    for g, w in zip(got, want, strict=True):
        same(g, w)


def test_float_power_is_pow_in_float64(jit_target: str) -> None:
    """``np.float_power`` is the language's ``float_power``, ``pow`` in float64 for real
    operands: NumPy's dtype, shape, nan and infinities, its signs of zero (``+0`` for
    ``-0 ** 0.5``, where ``power`` of a scalar 0.5 takes ``sqrt``: the trace wrote it as
    ``power``, found by fuzzing), and its values within the native ``pow``'s bound of
    1 ulp in float64 (docs/native.md)."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-3, 3, 64).astype(np.float32)
    y = rng.uniform(-3, 3, 64).astype(np.float32)
    x[:6], y[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, -2.0], [2.0, -1.0, 0.5, 3.0, 1.0, 0.5]
    i = rng.integers(-5, 5, 64)

    def fn(x: Any, y: Any, i: Any) -> Any:
        half = np.float_power(x, 0.5), np.float_power(x, np.float32(0.5))
        return np.float_power(x, y), np.float_power(x, i), np.float_power(i, 2), *half

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        results = zip(tdsl.trace(fn)(x, y, i), fn(x, y, i), strict=True)
        for got, want in results:
            assert (got.dtype, got.shape) == (np.float64, want.shape)
            finite = np.isfinite(want)
            assert np.array_equal(got[~finite], want[~finite], equal_nan=True)
            assert np.array_equal(np.signbit(got), np.signbit(want))
            ulps = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))
            assert ulps.max() <= 1.0
