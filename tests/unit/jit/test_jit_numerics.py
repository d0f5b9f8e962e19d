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


VIEW_PROGRAMS: list[tuple[str, Callable[[Array], tuple[Array, ...]]]] = [
    (
        "r = relu(x)\n    return transpose(r), softmax(r, axis=0)",
        lambda x: (np.maximum(x, 0).T, softmax(np.maximum(x, 0), axis=0)),
    ),
    (
        "r = relu(x)\n    return transpose(r), exp(r)",
        lambda x: (np.maximum(x, 0).T, np.exp(np.maximum(x, 0))),
    ),
]


@pytest.mark.parametrize(("body", "ref"), VIEW_PROGRAMS, ids=["softmax", "exp"])
@pytest.mark.parametrize("budget", [16, 1_000_000])
def test_a_value_read_through_a_view_is_not_overwritten(
    body: str, ref: Callable[[Array], tuple[Array, ...]], budget: int, matches: Any
) -> None:
    # The transpose (a view of r) is copied into its output after the group's last op,
    # which must not have computed in place over r.
    x = np.random.default_rng(2).uniform(-2, 2, (M, N))
    kernel = JITTensorKernel(memory_budget=budget).compile(
        f"def k(x: f64[{M}, {N}]):\n    {body}\n"
    )
    for got, want in zip(kernel(x), ref(x), strict=True):
        matches(got, want)


@pytest.mark.parametrize("threads", [1, 2])
def test_target_does_not_cut_a_dim_the_matmul_does_not_run_along(
    threads: int, monkeypatch: pytest.MonkeyPatch, matches: Any
) -> None:
    # One group over (3, 200, 200, 50): the matmul runs along the last three dims only.
    # Cache blocking (threads=1) or the thread split (threads=2) must cut d1, not d0.
    from tdsl.backend.numpy import blocking

    monkeypatch.setattr(blocking, "THREAD_MIN_BYTES", 0)
    rng = np.random.default_rng(4)
    x, w = rng.uniform(-1, 1, (200, 50)), rng.uniform(-1, 1, (50, 200))
    y = rng.uniform(-1, 1, (3, 200, 200))
    source = """
def k(x: f64[200, 50], w: f64[50, 200], y: f64[3, 200, 200]):
    m = x @ w
    return m, m + y
"""
    kernel = JITTensorKernel(threads=threads).compile(source)
    m, s = kernel(x, w, y)
    matches(m, x @ w)
    matches(s, x @ w + y)


@pytest.mark.parametrize("budget", [16, 1_000_000])
def test_a_pass_adds_each_partial_result_once(budget: int, matches: Any) -> None:
    # Two full reductions over different dims of one group: with both dims tiled, a pass
    # loops over the tiles of both, and each sum would add its partials once per tile of
    # the dim it does not run along.
    rng = np.random.default_rng(6)
    x, y = rng.uniform(-2, 2, 362), rng.uniform(-2, 2, 362)
    source = "def k(x: f64[362], y: f64[362]):\n    return sum(y + sum(relu(x)))\n"
    kernel = JITTensorKernel(memory_budget=budget).compile(source)
    matches(kernel(x, y), np.sum(y + np.sum(np.maximum(x, 0))))


@pytest.mark.parametrize(("dtype", "n", "tile"), [("f32", 181, 4), ("f64", 177, 8)])
def test_negation_on_a_remainder_tile(dtype: str, n: int, tile: int, matches: Any) -> None:
    # The last tile's values are (n, 1) column slices of (n, tile) scratch buffers: a
    # stride of 16 (f32) or 64 (f64) bytes, where NumPy 2.4's in-place np.negative
    # computes wrong values. sigmoid and neg negate in place.
    source = (
        f"def k(x: {dtype}[{n}, {n}]):\n    r = relu(x)\n"
        "    return transpose(sigmoid(r)), transpose(-exp(r)), sum(r)\n"
    )
    kernel = JITTensorKernel(tile_sizes=(tile, n), threads=1).compile(source)
    assert [g.tiles for g in kernel.groups] == [(tile, n)]
    x = (
        np.random.default_rng(9)
        .uniform(-2, 2, (n, n))
        .astype({"f32": np.float32, "f64": np.float64}[dtype])
    )
    r = np.maximum(x, 0)
    sig, neg, total = kernel(x)
    matches(sig, (1 / (1 + np.exp(-r))).T)
    matches(neg, (-np.exp(r)).T)
    matches(total, np.sum(r))


def test_mean_in_a_tiled_reduction_divides_by_its_full_extent(matches: Any) -> None:
    # At budget 64 the mean's axis (4 long) is cut into tiles of 2: the mean feeding
    # the max must still divide by 4 (the native target once divided by the tile's 2).
    x = np.random.default_rng(1).random((4, 1, 3, 5)).astype(np.float32)
    jit = JITTensorKernel(memory_budget=64, threads=1)
    matches(jit("max(mean(abs(x), axis=0), axis=0)", x=x), np.abs(x).mean(axis=0).max(axis=0))


@pytest.mark.parametrize("budget", [64, 1_000_000])
def test_layernorm_of_a_vector(budget: int, matches: Any) -> None:
    # one row: the numpy target's variance einsum writes a 0-d view of its row buffer
    x = np.random.default_rng(2).uniform(-2, 2, 7)
    want = (x - x.mean()) / np.sqrt(x.var() + 1e-5)
    matches(JITTensorKernel(memory_budget=budget, threads=1)("layernorm(x)", x=x), want)


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


@pytest.mark.parametrize("func", ["sum", "max", "min", "prod", "mean"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_reduction_of_a_zero_d_operand(func: str, dtype: Any) -> None:
    # A 0-d operand has no dim to reduce: the op's loop dims are all parallel, and the
    # native loops took it for an element-wise op without a body (NotImplementedError,
    # even under auto once a larger tensor made the kernel native). NumPy's reduce starts
    # from the identity: the sum and mean of -0.0 are 0.0.
    for value in (-2.5, -0.0, np.nan, -np.inf):
        s = np.array(value, dtype)
        want = getattr(np, func)(s)
        got = JITTensorKernel(memory_budget=16)(f"{func}(s)", s=s)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert np.signbit(got) == np.signbit(want)
    x = np.ones((200, 100), dtype)
    s = np.array(-2.5, dtype)
    got = JITTensorKernel()(f"x * {func}(s)", x=x, s=s)
    np.testing.assert_array_equal(got, x * getattr(np, func)(s))


@pytest.mark.parametrize("keepdims", [False, True])
def test_a_float16_sum_of_products_rounds_each_product_to_float16(
    jit_target: str, keepdims: bool
) -> None:
    """NumPy's ``sum(x * y, axis=-1)`` of float16 adds float16 products: 300 * 300
    overflows to inf and ``inf + -inf`` is nan.  (The numpy target computed it as one
    einsum in float32, whose products never rounded to float16: 0.  Found by fuzzing.)"""
    x = np.array([[300, 300], [0.1, 3.0]], np.float16)
    y = np.array([[300, -300], [0.3, 7.0]], np.float16)
    kernel = JITTensorKernel(target=jit_target).compile(
        f"sum(x * y, axis=1, keepdims={keepdims})",
        {"x": (2, 2), "y": (2, 2)},
        {"x": "f16", "y": "f16"},
    )
    with np.errstate(over="ignore", invalid="ignore"):  # (NumPy's warnings, as NumPy's)
        got, want = kernel(x, y), np.sum(x * y, axis=1, keepdims=keepdims)
    assert got.dtype == want.dtype and np.isnan(got.flat[0])
    np.testing.assert_array_equal(got, want)
