"""Strength reduction, the canonicalization the standard pipeline runs first: ``x ** n``
for an integer constant ``2 <= |n| <= 8`` is multiplications (a sanctioned deviation
from NumPy's ``pow``, within ``|n| - 1`` ulp of the exact power, ``2|n| - 1`` for a
negative ``n``), ``x ** 0.5``, ``x ** 1`` and ``x ** -1`` are NumPy's own fast paths
(the same values), and a division by a power of two is a multiplication by its exact
reciprocal (the same values).  Checked on both targets (the JIT tests' ``jit_target``) against the exact power
(computed in a wider float), with NumPy's special values and the overflow and
underflow boundaries."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tdsl
from tdsl import JITTensorKernel

Array = np.ndarray[Any, Any]

WIDER = {np.float16: np.float64, np.float32: np.float64, np.float64: np.longdouble}


def ulps(got: Array, exact: Array, dtype: Any) -> Array:
    """|got - exact| in ulp of the dtype at ``exact`` (the wider float's value)."""
    spacing = np.spacing(np.abs(exact).astype(dtype)).astype(exact.dtype)
    return np.abs(got.astype(exact.dtype) - exact) / spacing


def inputs(dtype: Any, n: int) -> Array:
    info = np.finfo(dtype)
    rng = np.random.default_rng(abs(n))
    # the largest finite power: |x| near max ** (1/n); the smallest normal one near
    # tiny ** (1/n); and their neighbours, beside random values and special ones
    top = np.array(float(info.max) ** (1 / abs(n)), dtype)
    low = np.array(float(info.tiny) ** (1 / abs(n)), dtype)
    near = [np.nextafter(v, np.array(s, dtype)) for v in (top, low) for s in (0, np.inf)]
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2e19, -2e19, 7.5e-3]
    values = np.concatenate(
        [
            rng.uniform(-4, 4, 200),
            rng.uniform(-1, 1, 50) * 1e-3,
            np.array(special),
            np.array([top, -top, low, -low, *near], dtype),
        ]
    )
    with np.errstate(over="ignore"):
        return values.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8, -2, -3, -5, -8])
def test_integer_powers_are_products_within_the_stated_bound(dtype: Any, n: int) -> None:
    x = inputs(dtype, n)
    kernel = JITTensorKernel().compile(f"x ** {n}", {"x": x.shape}, {"x": np.dtype(dtype).name})
    assert "tensordsl.power" not in kernel.ir["canonical"]
    with np.errstate(all="ignore"):
        got = kernel(x=x)
        want = x**n  # NumPy's pow, to within an ulp
        exact = x.astype(WIDER[dtype]) ** n
    assert got.dtype == want.dtype
    # nan, ±0 and ±inf where the exact power is one of them, with NumPy's signs
    same = ~np.isfinite(exact) | (exact == 0)
    np.testing.assert_array_equal(got[same], want[same])
    info = np.finfo(dtype)
    finite = np.isfinite(got) & ~same
    bound = abs(n) - 1 if n > 0 else 2 * abs(n) - 1
    # where the exact power is normal: within the bound
    normal = finite & (np.abs(exact) >= info.tiny) & (np.abs(exact) <= info.max)
    assert np.all(ulps(got[normal], exact[normal], dtype) <= bound)
    # at the overflow boundary, inf only for a power within the bound of the largest
    overflowed = np.isinf(got) & np.isfinite(exact)
    assert np.all(np.abs(exact[overflowed]) >= float(info.max) * (1 - (bound + 1) * info.eps))
    # below it: as NumPy, within the bound in ulp of the subnormals (or 0 for less)
    small = finite & (np.abs(exact) < info.tiny)
    smallest = float(info.smallest_subnormal)
    assert np.all(np.abs(got[small].astype(exact.dtype) - exact[small]) <= (bound + 1) * smallest)


@pytest.mark.parametrize("n", [3, 5, -2, -3])
def test_f16_powers_are_multiplied_in_f32_and_rounded_once(n: int) -> None:
    """An f16 power is multiplied out in f32 and rounded to f16 once, as NumPy computes
    f16 ``pow``: over every f16 value it is NumPy's (products rounded to f16 at each
    step flushed ``0.003101 ** 3`` to 0 where NumPy gives the smallest subnormal)."""
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    kernel = JITTensorKernel().compile(f"x ** {n}", {"x": x.shape}, "f16")
    assert "tensordsl.power" not in kernel.ir["canonical"]
    with np.errstate(all="ignore"):
        got, want = kernel(x=x), x**n
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


def test_a_negative_power_takes_the_reciprocal_first() -> None:
    # (1/x)**2 keeps f32's 2.5e-39 at x = 2e19, where 1/(x*x) overflows to 0
    x = np.array([2e19, -2e19], np.float32)
    got = JITTensorKernel()("x ** -2", x=x)
    assert got[0] == got[1] and 2.4e-39 < float(got[0]) < 2.6e-39


@pytest.mark.parametrize(
    ("expr", "ops"),
    [
        ("x ** 0.5", "tensordsl.sqrt"),
        ("x ** -1", "tensordsl.reciprocal"),
        ("x ** 2", "tensordsl.square"),
        ("x / 4", "tensordsl.mul"),
        ("x / 0.125", "tensordsl.mul"),
    ],
)
def test_numpys_fast_paths_and_exact_reciprocals_give_numpys_values(expr: str, ops: str) -> None:
    for dtype in (np.float32, np.float64):
        x = inputs(dtype, 2)
        kernel = JITTensorKernel().compile(expr, {"x": x.shape}, {"x": np.dtype(dtype).name})
        assert ops in kernel.ir["canonical"]
        assert "tensordsl.power" not in kernel.ir["canonical"]
        assert "tensordsl.div" not in kernel.ir["canonical"]
        with np.errstate(all="ignore"):
            want = eval(expr, {"x": x})
            got = kernel(x=x)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("expr", ["x ** 2.5", "x ** 9", "x / 3", "x ** y"])
def test_other_powers_and_divisions_are_left_alone(expr: str) -> None:
    shapes = {"x": (4,), "y": (4,)} if "y" in expr else {"x": (4,)}
    kernel = JITTensorKernel().compile(expr, shapes)
    op = "tensordsl.div" if "/" in expr else "tensordsl.power"
    assert op in kernel.ir["canonical"]


def test_an_infinite_or_nan_exponent_is_numpys_power() -> None:
    """``x ** inf`` is ``power``: the rewrite asked ``int(inf)`` and raised an
    ``OverflowError`` from inside the compiler (found by fuzzing ``tdsl.trace``)."""
    x = np.array([0.5, 1.0, 2.0, -3.0, 0.0, -0.0, np.nan], np.float32)
    for fn in (lambda x: x**np.inf, lambda x: np.power(x, -np.inf), lambda x: x ** float("nan")):
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(tdsl.trace(fn)(x), fn(x))


def test_integer_powers_stay_exact() -> None:
    x = np.arange(-40, 40, dtype=np.int32) * 12345
    got = JITTensorKernel()("x ** 7", x=x)
    np.testing.assert_array_equal(got, x**7)  # wrapping, as NumPy's power does
