"""numexpr's own float test expressions, compiled by tdsl, equal NumPy.

The expressions are the ``tests``, ``optests``, ``cmptests``, ``func1tests``,
``func2tests`` and ``powtests`` lists of numexpr's ``tests/test_numexpr.py``
(numexpr 2.x), with its inputs: ``a``, ``b``, ``c``, ``d``, ``e`` ranges of 100
and ``a2`` a 100x100 zero matrix; ``a`` or ``b`` replaced by a NumPy scalar in
two of the three variants.  Each runs through the JIT on float32 and float64
inputs, under a tight and the default memory budget, and is compared with
NumPy evaluating the same text, by numexpr's own criterion (``equal``: the
same values within 1e-5 (float32) or 1e-8, or the same count of ``nan`` and
``inf``) and the same dtype.

Not compiled, by design (asserted below, so the list stays honest):
``(a-10).real`` (attribute access: complex numbers are out of scope).  The
integer-valued ones, ``1`` and ``1+1``, are Python ints in NumPy and int64 arrays
here, as ``np.asarray`` makes them (integer literals are weak Python ints).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest
from numpy import (  # noqa: F401  (names the expressions use, for eval)
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    ceil,
    conj,
    copy,
    copysign,
    cos,
    cosh,
    exp,
    expm1,
    floor,
    fmod,
    hypot,
    log,
    log1p,
    log2,
    log10,
    nextafter,
    ones_like,
    round,
    sign,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
    where,
)

from tdsl import JITTensorKernel, TdslError

MISC = [
    "b*c+d*e",
    "2*a+3*b",
    "-a",
    "sinh(a)",
    "2*a + (cos(3)+5)*sinh(cos(b))",
    "2*a + arctan2(a, b)",
    "arcsin(0.5)",
    "where(a != 0.0, 2, a)",
    "where(a > 10, b < a, b > a)",
    "where((a-10).real != 0.0, a, 2)",
    "0.25 * (a < 5) + 0.33 * (a >= 5)",
    "cos(1+1)",
    "1+1",
    "1",
    "cos(a2)",
]
OPERATIONS = [
    template % op
    for op in [*"+-*/%", "**"]
    for template in (
        "(a+1) %s (b+3)",
        "3 %s (b+3)",
        "(a+1) %s 4",
        "2 %s (b+3)",
        "(a+1) %s 2",
        "(a+1) %s -1",
        "(a+1) %s 0.5",
        "(a+1) %s 0",
    )
]
COMPARISONS = [
    template % op
    for op in ["<", "<=", "==", ">=", ">", "!="]
    for template in ("a/2+5 %s b", "a/2+5 %s 7", "7 %s b", "7.0 %s 5")
]
FUNCS_1 = [
    f"a + {f}(b+c)"
    for f in [
        *("copy", "ones_like", "sqrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan"),
        *("sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "log", "log1p", "log10"),
        *("log2", "exp", "expm1", "abs", "conj", "ceil", "floor", "round", "trunc", "sign"),
    ]
]
FUNCS_2 = [
    template % f
    for f in ["arctan2", "fmod", "hypot", "nextafter", "copysign"]
    for template in ("a + %s(b+c, d+1)", "a + %s(b+c, 1)", "a + %s(1, d+1)")
]
POWERS = [f"(a+1)**{n}" for n in (-7, -2.5, -1.5, -1.3, -0.5, 0, 0.0, 1, 2.3, 2.5, 3)]
EXPRESSIONS = [*MISC, *OPERATIONS, *COMPARISONS, *FUNCS_1, *FUNCS_2, *POWERS]

REFUSED = {
    "where((a-10).real != 0.0, a, 2)": "attribute `.real` is not in the language; a real "
    "float is its own real part: drop `.real`"
}
"""Expressions the language does not accept, and why."""
INTEGER_IN_NUMPY = {"1+1", "1"}
"""Expressions whose NumPy value is a Python int: tdsl gives its int64 array."""


def _inputs(dtype: Any, scalar: int) -> dict[str, Any]:
    n = 100
    a: Any = np.arange(2 * n, dtype=dtype)[::2]
    b: Any = np.arange(n, dtype=dtype) / n
    if scalar == 1:
        a = a[n // 2]
    if scalar == 2:
        b = b[n // 2]
    return {
        "a": a,
        "a2": np.zeros([n, n], dtype=dtype),
        "b": b,
        "c": np.arange(n, dtype=dtype),
        "d": np.arange(n, dtype=dtype),
        "e": np.arange(n, dtype=dtype),
    }


def _equal(a: Any, b: Any) -> bool:
    """numexpr's ``equal`` (not exact)."""
    a, b = np.asarray(a), np.asarray(b)
    if np.array_equal(a, b):
        return True
    if a.dtype in (np.float32, np.float64):
        nans = int(np.isnan(a).sum())
        if nans > 0:
            return nans == int(np.isnan(b).sum())
        infs = int(np.isinf(a).sum())
        if infs > 0:
            return infs == int(np.isinf(b).sum())
    atol = 1e-5 if a.dtype == np.float32 else 1e-8
    return a.shape == b.shape and bool(np.allclose(a.ravel(), b.ravel(), atol=atol))


@pytest.fixture(scope="module")
def kernels() -> dict[tuple[int, str], JITTensorKernel]:
    """JITs by (budget, target), shared by the module's tests."""
    return {}


@pytest.mark.parametrize("budget", [64, 1_000_000])
@pytest.mark.parametrize("scalar", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_numexpr_expressions_equal_numpy(
    kernels: dict[tuple[int, str], JITTensorKernel],
    dtype: Any,
    scalar: int,
    budget: int,
    jit_target: str,
) -> None:
    if jit_target == "native" and (scalar, budget) != (0, 1_000_000):
        pytest.skip("native: one input variant and budget (each kernel compiles in ~0.1 s)")
    # native: each expression in one dtype (alternately f32 and f64), so every expression
    # and both dtypes' code run natively at half the compile time (the numpy target runs
    # every expression in both)
    half = 0 if dtype == np.float32 else 1
    if (budget, jit_target) not in kernels:
        kernels[budget, jit_target] = JITTensorKernel(memory_budget=budget, target=jit_target)
    jit = kernels[budget, jit_target]
    env = _inputs(dtype, scalar)
    wrong: list[str] = []
    for index, expr in enumerate(EXPRESSIONS):
        if jit_target == "native" and index % 2 != half:
            continue
        used = {k: v for k, v in env.items() if re.search(rf"\b{k}\b", expr)}
        if expr in REFUSED:
            with pytest.raises(TdslError, match=re.escape(REFUSED[expr])):
                jit(expr, **used)
            continue
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expected = eval(expr, globals(), dict(used))
            got = jit(expr, **used)
        if expr in INTEGER_IN_NUMPY:
            assert isinstance(expected, int) and np.asarray(got).dtype == np.int64
            assert got == expected
            continue
        if not _equal(expected, got) or np.asarray(got).dtype != np.asarray(expected).dtype:
            wrong.append(f"{expr}: got {got!r}, NumPy {expected!r}")
    assert not wrong, "\n".join(wrong)
