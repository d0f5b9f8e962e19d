"""A property of ``tdsl.trace``: any chain of NumPy calls from a menu, traced and
compiled, returns what NumPy returns for the same function: the same shape and dtype,
and the same values (to rounding on the native target)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tdsl

Step = tuple[str, Callable[..., Any], int]

UNARY: list[tuple[str, Callable[[Any], Any]]] = [
    ("tanh", np.tanh),
    ("relu", lambda x: np.maximum(x, 0)),
    ("abs", np.abs),
    ("sqrt|x|", lambda x: np.sqrt(np.abs(x))),
    ("half", lambda x: x * 0.5),
    ("plus2", lambda x: x + 2),
    ("f32 scale", lambda x: x * np.float32(1.5)),
    ("f64 shift", lambda x: x - np.float64(0.25)),
    ("exp", lambda x: np.exp(np.minimum(x, 10))),
    ("T", lambda x: x.T),
    # (a reduction along an axis, of a 2-d value: a total's 0-d one has no axis)
    ("row sum", lambda x: x.sum(axis=-1, keepdims=True) if np.ndim(x) else x),
    ("col mean", lambda x: np.mean(x, axis=0, keepdims=True) if np.ndim(x) else x),
    ("max", lambda x: x.max(axis=-1, keepdims=True) if np.ndim(x) else x),
    ("var", lambda x: np.var(x, axis=-1, keepdims=True) if np.ndim(x) else x),
    ("slice", lambda x: x[..., ::-1] if np.ndim(x) else x),
    ("total", lambda x: x.sum()),  # (a NumPy scalar, and where(s > x, s, x) a 0-d array)
    ("cast32", lambda x: x.astype(np.float32)),
]
BINARY: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("add", lambda x, y: x + y),
    ("mul", lambda x, y: x * y),
    ("div", lambda x, y: x / (np.abs(y) + 1)),
    ("maximum", np.maximum),
    ("where", lambda x, y: np.where(x > y, x, y)),
]


@st.composite
def programs(draw: st.DrawFn) -> tuple[list[tuple[int, int, int]], list[Any]]:
    """Steps (kind, op index, operand indices packed) over a pool that starts with the
    inputs, and the inputs: square arrays, so that a transpose keeps shapes compatible."""
    n = draw(st.sampled_from([3, 5]))
    dtypes = [draw(st.sampled_from([np.float32, np.float64])) for _ in range(2)]
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    inputs = [
        rng.standard_normal((n, n)).astype(dtypes[0]),
        rng.standard_normal((n, n)).astype(dtypes[1]),
    ]
    steps: list[tuple[int, int, int]] = []
    for length in range(draw(st.integers(1, 6))):
        pool = len(inputs) + length
        if draw(st.booleans()):
            steps.append((0, draw(st.integers(0, len(UNARY) - 1)), draw(st.integers(0, pool - 1))))
        else:
            a, b = draw(st.integers(0, pool - 1)), draw(st.integers(0, pool - 1))
            steps.append((1, draw(st.integers(0, len(BINARY) - 1)), a * 64 + b))
    return steps, inputs


def _function(steps: list[tuple[int, int, int]]) -> Callable[..., Any]:
    def fn(x: Any, y: Any) -> Any:
        pool = [x, y]
        for kind, op, operands in steps:
            if kind == 0:
                pool.append(UNARY[op][1](pool[operands]))
            else:
                pool.append(BINARY[op][1](pool[operands // 64], pool[operands % 64]))
        return pool[-1]

    return fn


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_a_traced_chain_returns_what_numpy_returns(
    program: tuple[list[tuple[int, int, int]], list[Any]],
) -> None:
    steps, inputs = program
    fn = _function(steps)
    expected = fn(*inputs)
    got = tdsl.trace(fn)(*inputs)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert type(got) is type(expected)  # (a NumPy scalar where NumPy gives one)
    # an f32 value on the way (native's f32 tanh and exp are within a few ulps of
    # NumPy's) may reach an f64 result: the tolerance is the narrowest value's, an f32
    # input's or a `cast32` step's (f64 inputs made f32: found with a fresh seed)
    f32 = any(a.dtype == np.float32 for a in inputs) or any(
        kind == 0 and UNARY[op][0] == "cast32" for kind, op, _ in steps
    )
    tol = 2e-5 if f32 else 1e-12
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale)
