"""Every op of the numexpr/NumPy op set against NumPy, at budgets 64, 4096 and 1e6,
for float16, float32 and float64 inputs.

Each expression mixes a few new ops with the pipeline's hard cases (reductions
over either axis, rows longer than a budget of 64, broadcasting, booleans), so
the ops are fused and tiled, not only run alone.  The reference is NumPy on the
same inputs; float16 reductions accumulate in float32 (``np.mean``'s rule,
which tdsl applies to ``sum``, ``prod`` and ``mean`` alike), so their reference
is computed in float32 and rounded to float16.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tdsl import JITTensorKernel

Array = np.ndarray[Any, Any]


def _log_softmax(x: Array, axis: int = -1) -> Array:
    s = x - x.max(axis=axis, keepdims=True)
    total = np.exp(s).sum(axis=axis, keepdims=True, dtype=_wide(x.dtype))
    return (s - np.log(total)).astype(x.dtype)


def _wide(dtype: np.dtype[Any]) -> Any:
    return np.float32 if dtype == np.float16 else dtype


CASES: list[tuple[str, Callable[[Array, Array, Array], Array]]] = [
    (
        "sin(a) * cos(b) + tan(a / 4) - arctan(a) + sinh(a / 8) - cosh(b / 8)",
        lambda a, b, c: (
            np.sin(a) * np.cos(b) + np.tan(a / 4) - np.arctan(a) + np.sinh(a / 8) - np.cosh(b / 8)
        ),
    ),
    (
        "arcsin(c) + arccos(c) + arcsinh(a) + arccosh(abs(a) + 1) + arctanh(c / 2)",
        lambda a, b, c: (
            np.arcsin(c)
            + np.arccos(c)
            + np.arcsinh(a)
            + np.arccosh(np.abs(a) + 1)
            + np.arctanh(c / 2)
        ),
    ),
    (
        "log1p(abs(a)) + log10(abs(b) + 1) + log2(abs(a) + 2) + expm1(c)",
        lambda a, b, c: (
            np.log1p(np.abs(a)) + np.log10(np.abs(b) + 1) + np.log2(np.abs(a) + 2) + np.expm1(c)
        ),
    ),
    (
        "ceil(a) + floor(b) + round(a * 2) + trunc(b) + sign(a) + square(c) + reciprocal(b + 5)",
        lambda a, b, c: (
            np.ceil(a)
            + np.floor(b)
            + np.round(a * 2)
            + np.trunc(b)
            + np.sign(a)
            + np.square(c)
            + np.reciprocal(b + 5)
        ),
    ),
    (
        "(a ** 2) % 3 + fmod(a, 1.5) - power(abs(b), c) + arctan2(a, b) + hypot(a, b)",
        lambda a, b, c: (
            (a**2) % 3
            + np.fmod(a, 1.5)
            - np.power(np.abs(b), c)
            + np.arctan2(a, b)
            + np.hypot(a, b)
        ),
    ),
    (
        "copysign(a, b) + nextafter(a, b) - copy(b) * conj(c) + ones_like(a)",
        lambda a, b, c: (
            np.copysign(a, b) + np.nextafter(a, b) - np.copy(b) * np.conj(c) + np.ones_like(a)
        ),
    ),
    (
        "where((a > 0) & ~(b < -1) | (c == 0.5), a, b) + 0.25 * (a >= b) - (a != c)",
        lambda a, b, c: (
            np.where((a > 0) & ~(b < -1) | (c == 0.5), a, b) + 0.25 * (a >= b) - (a != c)
        ),
    ),
    ("min(exp(a), axis=0) + prod(b / 4 + 1, axis=0)", None),  # reference: _min_prod
    (
        "log_softmax(a) + log_softmax(b, axis=0)",
        lambda a, b, c: _log_softmax(a) + _log_softmax(b, 0),
    ),
]


def _min_prod(a: Array, b: Array, c: Array) -> Array:
    wide = _wide(a.dtype)
    prod = np.prod((b / 4 + 1).astype(wide), axis=0).astype(a.dtype)
    return np.min(np.exp(a), axis=0) + prod


@pytest.mark.parametrize("budget", [64, 4096, 1_000_000])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=["f16", "f32", "f64"])
def test_op_set_equals_numpy(dtype: Any, budget: int) -> None:
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((24, 80)) * 2).astype(dtype)
    b = (rng.standard_normal((24, 80)) * 2).astype(dtype)
    c = rng.uniform(-0.9, 0.9, (24, 80)).astype(dtype)
    c[0, :4] = 0.5  # where's equality branch
    jit = JITTensorKernel(memory_budget=budget)
    tol = {np.float16: 2e-2, np.float32: 2e-5, np.float64: 1e-12}[dtype]
    for expr, reference in CASES:
        if reference is None:
            reference = _min_prod
        env = {n: v for n, v in {"a": a, "b": b, "c": c}.items() if re.search(rf"\b{n}\b", expr)}
        with np.errstate(all="ignore"):
            expected = np.asarray(reference(a, b, c))
            got = jit(expr, **env)
        assert got.dtype == expected.dtype, expr
        np.testing.assert_allclose(
            got.astype(np.float64),
            expected.astype(np.float64),
            rtol=tol,
            atol=tol,
            equal_nan=True,
            err_msg=f"{expr} (budget {budget})",
        )
