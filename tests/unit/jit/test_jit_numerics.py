"""Compiled kernels compute what NumPy computes, for every op and combinations of them.

Results must equal NumPy's (rtol 1e-9 for float64, 1e-4 for float32) and have
NumPy's result dtype, at budgets from tiny (64 elements) to large, on shapes
that are not multiples of any tile size, with 1 and 2 threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tdsl.jit import JITTensorKernel

Array = np.ndarray[Any, Any]


def softmax(x: Array, axis: int = -1) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid(x: Array) -> Array:
    return 1 / (1 + np.exp(-x))


# Inputs: A, B, C: (M, N); b: (N,); W: (N, P); c: (M, 1); all drawn in [-2, 2].
M, N, P = 37, 13, 11

CASES: list[tuple[str, Callable[..., Array]]] = [
    # unary
    ("relu(A)", lambda A: np.maximum(A, 0)),
    ("exp(A)", lambda A: np.exp(A)),
    ("log(abs(A) + 1)", lambda A: np.log(np.abs(A) + 1)),
    ("sqrt(abs(A))", lambda A: np.sqrt(np.abs(A))),
    ("tanh(A)", lambda A: np.tanh(A)),
    ("sigmoid(A)", lambda A: sigmoid(A)),
    ("abs(A)", lambda A: np.abs(A)),
    ("neg(A)", lambda A: -A),
    ("-A", lambda A: -A),
    # binary, with broadcasting and literals
    ("A + B", lambda A, B: A + B),
    ("A - B", lambda A, B: A - B),
    ("A * B", lambda A, B: A * B),
    ("A / (abs(B) + 1)", lambda A, B: A / (np.abs(B) + 1)),
    ("maximum(A, B)", lambda A, B: np.maximum(A, B)),
    ("minimum(A, B)", lambda A, B: np.minimum(A, B)),
    ("A + b", lambda A, b: A + b),
    ("A * c - b", lambda A, b, c: A * c - b),
    ("2 * A - 0.5", lambda A: 2 * A - 0.5),
    ("A / (1 + exp(-A))", lambda A: A / (1 + np.exp(-A))),
    # matmul, transpose
    ("matmul(A, W)", lambda A, W: A @ W),
    ("A @ W + 1", lambda A, W: A @ W + 1),
    ("relu(A @ W - 0.25)", lambda A, W: np.maximum(A @ W - 0.25, 0)),
    ("transpose(A)", lambda A: A.T),
    ("transpose(A) @ B", lambda A, B: A.T @ B),
    # row-local and reductions
    ("softmax(A)", lambda A: softmax(A)),
    ("softmax(A, axis=0)", lambda A: softmax(A, axis=0)),
    ("sum(A)", lambda A: np.sum(A)),
    ("sum(A, axis=1)", lambda A: np.sum(A, axis=1)),
    ("sum(A, axis=0, keepdims=true)", lambda A: np.sum(A, axis=0, keepdims=True)),
    ("max(A, axis=-1)", lambda A: np.max(A, axis=-1)),
    ("max(A)", lambda A: np.max(A)),
    ("mean(A, axis=1, keepdims=true)", lambda A: np.mean(A, axis=1, keepdims=True)),
    ("mean(A, axis=0)", lambda A: np.mean(A, axis=0)),
    # combinations
    ("relu(A)+B*C-A", lambda A, B, C: np.maximum(A, 0) + B * C - A),
    ("sum(exp(A)*B, axis=1)", lambda A, B: np.sum(np.exp(A) * B, axis=1)),
    ("softmax(A) * B + relu(A)", lambda A, B: softmax(A) * B + np.maximum(A, 0)),
    ("A - mean(A, axis=1, keepdims=true)", lambda A: A - np.mean(A, axis=1, keepdims=True)),
    ("softmax(relu(A @ W + 1))", lambda A, W: softmax(np.maximum(A @ W + 1, 0))),
    (
        "tanh(A) * sigmoid(B) + sqrt(abs(C))",
        lambda A, B, C: np.tanh(A) * sigmoid(B) + np.sqrt(np.abs(C)),
    ),
    ("sum(A * B) + max(C)", lambda A, B, C: np.sum(A * B) + np.max(C)),
    (
        "exp(A - max(A, axis=1, keepdims=true))",
        lambda A: np.exp(A - np.max(A, axis=1, keepdims=True)),
    ),
]

SHAPES = {"A": (M, N), "B": (M, N), "C": (M, N), "b": (N,), "W": (N, P), "c": (M, 1)}


def inputs_for(fn: Callable[..., Array], dtype: type[Any], seed: int = 0) -> dict[str, Array]:
    rng = np.random.default_rng(seed)
    names = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    return {n: rng.uniform(-2, 2, SHAPES[n]).astype(dtype) for n in names}


@pytest.mark.parametrize(("expr", "ref"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_every_op_matches_numpy(
    expr: str, ref: Callable[..., Array], dtype: type[Any], matches: Any
) -> None:
    ins = inputs_for(ref, dtype)
    want = ref(**ins)
    for budget, threads in ((64, 1), (1_000, 2), (1_000_000, 1), (1_000_000, 2)):
        jit = JITTensorKernel(memory_budget=budget, threads=threads)
        matches(jit(expr, **ins), want)


@pytest.mark.parametrize("tile_size", [1, 3, 8])
def test_explicit_tile_sizes_that_do_not_divide_the_shape(tile_size: int, matches: Any) -> None:
    ref = CASES[[c[0] for c in CASES].index("softmax(A) * B + relu(A)")][1]
    ins = inputs_for(ref, np.float64, seed=3)
    for threads in (1, 2):
        jit = JITTensorKernel(memory_budget=10_000, tile_size=tile_size, threads=threads)
        matches(jit("softmax(A) * B + relu(A)", **ins), ref(**ins))


def test_mixed_precision_follows_numpy(matches: Any) -> None:
    rng = np.random.default_rng(5)
    a16 = rng.uniform(-2, 2, (M, N)).astype(np.float16)
    b32 = rng.uniform(-2, 2, (M, N)).astype(np.float32)
    c64 = rng.uniform(-2, 2, (N,)).astype(np.float64)
    jit = JITTensorKernel(memory_budget=64, threads=2)
    matches(jit("A * B", A=a16, B=b32), a16 * b32)
    matches(jit("A * B + c", A=a16, B=b32, c=c64), a16 * b32 + c64)
    matches(jit("relu(B) * 0.1", B=b32), np.maximum(b32, 0) * 0.1)


EXPRESSIONS: list[tuple[str, Callable[..., Array]]] = [
    ("relu(A)+B*C-A", lambda A, B, C: np.maximum(A, 0) + B * C - A),
    ("softmax(A) * B", lambda A, B: softmax(A) * B),
    ("sum(exp(A)*B, axis=1)", lambda A, B: np.sum(np.exp(A) * B, axis=1)),
    ("relu(A @ W + 1)", lambda A, W: np.maximum(A @ W + 1, 0)),
]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    case=st.sampled_from(EXPRESSIONS),
    m=st.integers(0, 70),
    n=st.integers(1, 40),
    p=st.integers(1, 20),
    budget=st.sampled_from([64, 100, 333, 4_096, 1_000_000]),
    threads=st.sampled_from([1, 2]),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_random_shapes_and_budgets(
    case: tuple[str, Callable[..., Array]],
    m: int,
    n: int,
    p: int,
    budget: int,
    threads: int,
    dtype: type[Any],
    matches: Any,
) -> None:
    expr, ref = case
    shapes = {"A": (m, n), "B": (m, n), "C": (m, n), "W": (n, p)}
    rng = np.random.default_rng(m * 10_000 + n * 100 + p)
    names = ref.__code__.co_varnames[: ref.__code__.co_argcount]
    ins = {k: rng.uniform(-2, 2, shapes[k]).astype(dtype) for k in names}
    jit = JITTensorKernel(memory_budget=budget, threads=threads)
    matches(jit(expr, **ins), ref(**ins))


@pytest.mark.parametrize(
    ("expr", "ref"),
    [
        ("transpose(relu(A)) + -s + B", lambda A, s, B: np.maximum(A, 0).T - s + B),
        ("transpose(exp(A)) * exp(s) + B", lambda A, s, B: np.exp(A).T * np.exp(s) + B),
        ("transpose(exp(A)) + exp(B) * s", lambda A, s, B: np.exp(A).T + np.exp(B) * s),
    ],
)
@pytest.mark.parametrize("shape", [(1, 1), (3, 4)])
def test_a_view_keeps_its_buffer_alive(
    expr: str, ref: Callable[..., Array], shape: tuple[int, int], matches: Any
) -> None:
    """The buffer behind a transposed view is neither reused nor written in place while
    the view is live (it was: the scratch of ``neg(s)`` overwrote ``relu(A)``)."""
    rng = np.random.default_rng(8)
    A = rng.uniform(-2, 2, shape)
    B = rng.uniform(-2, 2, shape[::-1])
    s = np.float64(0.5)
    matches(JITTensorKernel(threads=1)(expr, A=A, s=s, B=B), ref(A, s, B))
