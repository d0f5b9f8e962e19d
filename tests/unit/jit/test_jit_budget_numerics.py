"""Compiled kernels compute NumPy's values at budgets 64, 4096 and 10**6, in f16, f32 and f64.

A fixed set of programs exercises what tiling under a small budget changes:
reductions over each axis and over all axes (at budget 64 they accumulate over
tiles of the reduced dims), softmax with rows longer than the budget (it then
runs decomposed, in passes over the row), a reduction whose value a second
pass needs (the element-wise producer is recomputed), and matmul with a
prologue and an epilogue.

f32 and f64 results are compared with NumPy on the same dtype.  tdsl's f16
reductions accumulate in f32 and round once, so f16 results are compared with
NumPy computed in f32 on the same (f16) inputs, cast to f16.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from tdsl.dialects.kernel import TileOp
from tdsl.frontend import to_tensordsl
from tdsl.jit import CompiledKernel, JITTensorKernel
from tdsl.transforms.fuse import fuse
from tdsl.transforms.tile import tile

run_function = pytest.importorskip("tdsl.interpreters.run").run_function

Array = np.ndarray[Any, Any]

BUDGETS = [64, 4096, 1_000_000]
DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def softmax(x: Array, axis: int = -1) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def centered_square_mean(e: Array, axis: int | None) -> Array:
    d = e - np.mean(e, axis=axis, keepdims=axis is not None)
    return np.mean(d * d, axis=axis)


# (id, kernel source with {t} for the element type, NumPy reference on the inputs)
PROGRAMS: list[tuple[str, str, Callable[..., Array]]] = [
    *[
        (
            f"{name}-axis-{axis}",
            f"def k(A: {{t}}[6, 50, 90], B: {{t}}[6, 50, 90]):\n"
            f"    return {name}(exp(A) * B, axis={axis})\n",
            lambda A, B, ref=ref, axis=axis: ref(np.exp(A) * B, axis=axis),
        )
        for name, ref in (("sum", np.sum), ("mean", np.mean), ("max", np.max))
        for axis in (0, 1, 2)
    ],
    *[
        (
            f"{name}-all",
            f"def k(A: {{t}}[6, 50, 90], B: {{t}}[6, 50, 90]):\n    return {name}(A - B)\n",
            lambda A, B, ref=ref: ref(A - B),
        )
        for name, ref in (("sum", np.sum), ("mean", np.mean), ("max", np.max))
    ],
    (
        "mean-keepdims-broadcast",
        "def k(A: {t}[40, 300]):\n    return A - mean(A, axis=1, keepdims=true)\n",
        lambda A: A - np.mean(A, axis=1, keepdims=True),
    ),
    (
        "softmax-long-rows",
        "def k(X: {t}[7, 300], Y: {t}[7, 300]):\n    return sum(softmax(X * 3) * Y, axis=1)\n",
        lambda X, Y: np.sum(softmax(X * 3) * Y, axis=1),
    ),
    (
        "softmax-long-columns",
        "def k(X: {t}[300, 7], Y: {t}[300, 7]):\n"
        "    return relu(sum(softmax(X, axis=0) * Y, axis=0))\n",
        lambda X, Y: np.maximum(np.sum(softmax(X, axis=0) * Y, axis=0), 0),
    ),
    (
        "second-pass-axis-0",
        "def k(A: {t}[300, 40]):\n    e = exp(A)\n    d = e - mean(e, axis=0)\n"
        "    return mean(d * d, axis=0)\n",
        lambda A: centered_square_mean(np.exp(A), 0),
    ),
    (
        "second-pass-axis-1",
        "def k(A: {t}[40, 300]):\n    e = exp(A)\n    d = e - mean(e, axis=1, keepdims=true)\n"
        "    return mean(d * d, axis=1)\n",
        lambda A: centered_square_mean(np.exp(A), 1),
    ),
    (
        "second-pass-all",
        "def k(A: {t}[40, 300]):\n    e = exp(A)\n    d = e - mean(e)\n    return mean(d * d)\n",
        lambda A: centered_square_mean(np.exp(A), None),
    ),
    (
        "matmul-prologue-epilogue",
        "def k(X: {t}[90, 50], W: {t}[50, 70], b: {t}[70]):\n    return relu(relu(X) @ W + b)\n",
        lambda X, W, b: np.maximum(np.maximum(X, 0) @ W + b, 0),
    ),
    (
        "matmul-softmax-row-sum",
        "def k(X: {t}[90, 50], W: {t}[50, 70]):\n"
        "    return sum(softmax(tanh(X) @ W) * 2, axis=1)\n",
        lambda X, W: np.sum(softmax(np.tanh(X) @ W) * 2, axis=1),
    ),
]


_COMPILED: dict[tuple[str, str, int, str | None], CompiledKernel] = {}


def compile_program(source: str, dtype: str, budget: int) -> CompiledKernel:
    """The program compiled for the default target (``jit_target``), once: the test of
    the paths below looks at the kernels the numerical test ran."""
    key = (source, dtype, budget, os.environ.get("TDSL_TARGET"))
    if key not in _COMPILED:
        _COMPILED[key] = JITTensorKernel(memory_budget=budget).compile(source.format(t=dtype))
    return _COMPILED[key]


def inputs(kernel: CompiledKernel, seed: int) -> list[Array]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, arg.shape).astype(arg.dtype) for arg in kernel.args]


def reference(ref: Callable[..., Array], args: list[Array]) -> Array:
    """NumPy's value; for f16 inputs computed in f32 and cast back (f32 accumulation)."""
    dtype = args[0].dtype
    if dtype == np.float16:
        return np.asarray(ref(*(a.astype(np.float32) for a in args))).astype(np.float16)
    return np.asarray(ref(*args))


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("source", "ref"), [p[1:] for p in PROGRAMS], ids=[p[0] for p in PROGRAMS])
def test_program_matches_numpy(
    source: str, ref: Callable[..., Array], dtype: str, budget: int, matches: Any
) -> None:
    kernel = compile_program(source, dtype, budget)
    args = inputs(kernel, seed=budget)
    matches(kernel(*args), reference(ref, args))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_longer_than_the_budget_run_decomposed(dtype: str) -> None:
    # the programs above reach the paths they are meant for
    source = dict((p[0], p[1]) for p in PROGRAMS)
    for name in ("softmax-long-rows", "softmax-long-columns"):
        ops = {op for g in compile_program(source[name], dtype, 64).groups for op in g.ops}
        assert "tensordsl.softmax" not in ops, f"{name} at budget 64: {ops}"
        ops = {op for g in compile_program(source[name], dtype, 4096).groups for op in g.ops}
        assert "tensordsl.softmax" in ops, f"{name} at budget 4096: {ops}"
    second = compile_program(source["second-pass-axis-0"], dtype, 64)
    assert "recomputing tensordsl.exp" in second.explain()


F16_CASES: list[tuple[str, Array, float]] = [
    # (60000 + 60000 + 1) / 3 rounds to 40000 in f16; an f16 accumulator overflows to inf
    ("mean(A)", np.array([60000, 60000, 1], np.float16), 40000),
    ("sum(A)", np.array([60000, 60000, -60000], np.float16), 60000),
    # over tiles of the vector at budget 64: accumulators carry f32 partial sums
    ("mean(abs(A))", np.tile(np.array([60000, 60000, 1], np.float16), 100), 40000),
    # 19200 ones: an f16 accumulator would stop at 2048
    ("sum(abs(A))", np.ones((64, 300), np.float16), 19200),
]


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize(("expr", "a", "want"), F16_CASES, ids=[c[0] for c in F16_CASES])
def test_f16_sums_and_means_accumulate_in_f32(
    expr: str, a: Array, want: float, budget: int
) -> None:
    got = JITTensorKernel(memory_budget=budget)(expr, A=a)
    assert got.dtype == np.float16 and got == np.float16(want)


@pytest.mark.parametrize("budget", [64, 1_000_000])
@pytest.mark.parametrize(("expr", "a", "want"), F16_CASES, ids=[c[0] for c in F16_CASES])
def test_f16_sums_and_means_in_the_interpreter(
    expr: str, a: Array, want: float, budget: int
) -> None:
    module = to_tensordsl(expr, shapes={"A": a.shape}, dtypes="float16")
    tiled = tile(fuse(module, budget))
    if budget == 64 and "abs" in expr:  # the tiled IR accumulates over tiles
        assert "pass" in explain_tiles(tiled)
    for stage in (module, tiled):
        (got,) = run_function(stage, "main", a)
        assert got.dtype == np.float16 and got == np.float16(want)


_F16_RNG = np.random.default_rng(16)
F16_ROWS: list[tuple[str, Array]] = [
    # 300 ** 2 overflows float16: squared there, the variance is inf and every value 0
    ("layernorm(A)", np.tile(np.array([300, -300, 1, 0], np.float16), (4, 8))),
    # 70,000 exps of 0 overflow a float16 sum: each value is 1/70000, not 0
    ("softmax(A)", np.zeros((1, 70_000), np.float16)),
    ("log_softmax(A)", np.zeros((1, 70_000), np.float16)),
    # a float16 sum rounded before the division rounds a fifth of the quotients twice
    ("softmax(A)", (_F16_RNG.standard_normal((8, 64)) * 3).astype(np.float16)),
    ("log_softmax(A)", (_F16_RNG.standard_normal((8, 64)) * 3).astype(np.float16)),
    ("layernorm(A)", (_F16_RNG.standard_normal((8, 64)) * 100).astype(np.float16)),
]


@pytest.mark.parametrize("budget", [16, 1_000_000])
@pytest.mark.parametrize(("expr", "a"), F16_ROWS, ids=[f"{c[0]}-{c[1].shape}" for c in F16_ROWS])
def test_f16_row_statistics_are_float32_as_the_op_says(expr: str, a: Array, budget: int) -> None:
    """A float16 ``softmax``, ``log_softmax`` or ``layernorm`` keeps its row statistics
    in float32 and rounds once (``tdsl.lang``, the ops' one semantics), on every target
    at every budget.  Their decomposition, which the native loops always run and the
    numpy target runs for rows longer than the budget, once computed them in float16
    (found by fuzzing the native target)."""
    import tdsl.lang

    want = getattr(tdsl.lang, expr.split("(")[0])(a)
    with np.errstate(all="ignore"):
        got = JITTensorKernel(memory_budget=budget)(expr, A=a)
    assert got.dtype == np.float16 and np.isfinite(got).all()
    # sums in another order may round a rare quotient the other way, by one ulp
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=6e-8)
    assert np.mean(got != want) < 0.01


@pytest.mark.parametrize("target", ["interpreter", "numpy"])
@pytest.mark.parametrize("budget", [16, 1_000_000])
def test_an_f16_matmul_tiled_along_its_contraction_adds_in_f32(target: str, budget: int) -> None:
    """Each tile's product into the float32 accumulator is computed in float32, as NumPy's
    float16 matmul adds: rounded to float16 first, a tile's 8 * 90000 - 90000 overflowed
    and the result was nan where NumPy gives 300 (found by fuzzing; the native loops,
    tested by the autouse target too, already added in float32)."""
    from all_targets import run_on

    v = np.full(17, 300.0, np.float16)
    b = np.full((17, 2), 300.0, np.float16)
    b[8:16] *= -1
    b[16] = 1.0
    want = np.maximum(v, 0) @ b
    np.testing.assert_array_equal(want, [300, 300])
    np.testing.assert_array_equal(run_on(target, budget, "relu(v) @ b", v=v, b=b), want)
    got = JITTensorKernel(memory_budget=budget)("relu(v) @ b", v=v, b=b)
    np.testing.assert_array_equal(got, want)


def explain_tiles(module: ModuleOp) -> str:
    return "; ".join(op.schedule().describe() for op in module.walk() if isinstance(op, TileOp))
