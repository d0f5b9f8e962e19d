"""Matmuls inside fused groups, at budgets from 64 elements to 10**6, on every
compiled target, against NumPy.

On the native target a 2-D f32/f64 matmul whose right operand is a group input (or
its transpose: ``k.T`` in attention) is computed by BLAS a tile of rows at a time
(``tdsl_gemm_*`` calls inside the group's loops), whatever computes its left operand
(a layernorm, a softmax, another matmul) and whatever reads its result.  The tiles,
and so the calls' row counts, offsets and strides, follow the budget; the last tile
is short where the rows do not divide evenly.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from all_targets import COMPILED_TARGETS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tdsl import JITTensorKernel
from tdsl.errors import TdslBudgetWarning
from tdsl.runtime.plan import FunctionPlan

Array = np.ndarray[Any, Any]

BUDGETS = [64, 256, 4096, 100_000, 1_000_000]

CHAINS: dict[str, tuple[str, Any]] = {
    # a layernorm before the matmul, gelu's tanh between two matmuls (a GPT-2 MLP)
    "mlp": (
        "x + tanh((x - mean(x, axis=-1, keepdims=True)) * g @ w1 + b) @ w2",
        lambda a: (
            a["x"]
            + np.tanh((a["x"] - a["x"].mean(axis=-1, keepdims=True)) * a["g"] @ a["w1"] + a["b"])
            @ a["w2"]
        ),
    ),
    # an attention head: the transpose of an input, a softmax between the matmuls
    "attention": (
        "softmax(q @ transpose(k) * 0.125 + m) @ v",
        lambda a: _softmax(a["q"] @ a["k"].T * 0.125 + a["m"]) @ a["v"],
    ),
    # attention heads: batched matmuls (a call per head), the keys' transpose of the
    # last two axes
    "heads": (
        "softmax(q @ swapaxes(k, -1, -2) * 0.125 + m) @ v",
        lambda a: _softmax(a["q"] @ np.swapaxes(a["k"], -1, -2) * 0.125 + a["m"]) @ a["v"],
    ),
    # a batched left operand times one 2-D matrix for every batch index
    "batched-weights": (
        "relu(x * 2.0 @ w1) @ transpose(w1)",
        lambda a: np.maximum(a["x"] * 2 @ a["w1"], 0) @ a["w1"].T,
    ),
    # two products multiplied element by element into a third matmul's operand (SwiGLU)
    "swiglu": (
        "((relu(x) @ w1) * tanh(relu(x) @ w2)) @ w3",
        lambda a: (
            ((np.maximum(a["x"], 0) @ a["w1"]) * np.tanh(np.maximum(a["x"], 0) @ a["w2"])) @ a["w3"]
        ),
    ),
    # the transpose of an input as a left operand (BLAS reads it as it lies)
    "transposed-left": (
        "relu(transpose(x) @ w1 + 1.0) @ transpose(w1)",
        lambda a: np.maximum(a["x"].T @ a["w1"] + 1, 0) @ a["w1"].T,
    ),
    # a matmul's result read by a reduction and a row-wise op
    "reduced": (
        "sum(exp(x @ w1), axis=-1, keepdims=True) * (x @ w1)",
        lambda a: np.exp(a["x"] @ a["w1"]).sum(axis=-1, keepdims=True) * (a["x"] @ a["w1"]),
    ),
}


def _softmax(x: Array) -> Array:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def arrays(
    name: str, rows: int, inner: int, hidden: int, dtype: Any, seed: int
) -> dict[str, Array]:
    rng = np.random.default_rng(seed)

    def draw(*shape: int) -> Array:
        return rng.standard_normal(shape).astype(dtype)

    if name == "mlp":
        return {
            "x": draw(rows, inner),
            "g": draw(inner),
            "w1": draw(inner, hidden) / np.sqrt(inner).astype(dtype),
            "b": draw(hidden),
            "w2": draw(hidden, inner) / np.sqrt(hidden).astype(dtype),
        }
    if name == "attention":
        keys = hidden
        mask = np.where(np.tri(rows, keys, dtype=bool), 0, -1e9).astype(dtype)
        return {"q": draw(rows, inner), "k": draw(keys, inner), "m": mask, "v": draw(keys, inner)}
    if name == "heads":
        keys = hidden
        mask = np.where(np.tri(rows, keys, dtype=bool), 0, -1e9).astype(dtype)
        heads = 1 + seed % 3
        return {
            "q": draw(heads, rows, inner),
            "k": draw(heads, keys, inner),
            "m": mask,
            "v": draw(heads, keys, inner),
        }
    if name == "batched-weights":
        return {
            "x": draw(1 + seed % 3, rows, inner),
            "w1": draw(inner, hidden) / np.sqrt(inner).astype(dtype),
        }
    if name == "swiglu":
        return {
            "x": draw(rows, inner),
            "w1": draw(inner, hidden) / np.sqrt(inner).astype(dtype),
            "w2": draw(inner, hidden) / np.sqrt(inner).astype(dtype),
            "w3": draw(hidden, inner) / np.sqrt(hidden).astype(dtype),
        }
    if name == "transposed-left":
        return {
            "x": draw(inner, rows),
            "w1": draw(inner, hidden) / np.sqrt(inner).astype(dtype),
        }
    return {"x": draw(rows, inner), "w1": draw(inner, hidden) / np.sqrt(inner).astype(dtype)}


def run(target: str, budget: int, name: str, args: dict[str, Array]) -> Array:
    kernel = JITTensorKernel(target=target, memory_budget=budget)
    compiled = kernel.compile(
        CHAINS[name][0],
        {k: v.shape for k, v in args.items()},
        {k: str(v.dtype).replace("float", "f") for k, v in args.items()},
    )
    return np.asarray(compiled(**args))


@pytest.mark.parametrize("target", COMPILED_TARGETS)
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    name=st.sampled_from(sorted(CHAINS)),
    rows=st.integers(1, 70),
    inner=st.integers(1, 24),
    # (and over 512: the native loops then run a matmul's contraction in tiles)
    hidden=st.one_of(st.integers(1, 80), st.integers(500, 620)),
    budget=st.sampled_from(BUDGETS),
    double=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_matmul_chains_match_numpy_at_every_budget(
    target: str, name: str, rows: int, inner: int, hidden: int, budget: int, double: bool, seed: int
) -> None:
    dtype = np.float64 if double else np.float32
    args = arrays(name, rows, inner, hidden, dtype, seed)
    with np.errstate(all="ignore"):
        want = CHAINS[name][1](args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)
        got = run(target, budget, name, args)
    assert got.dtype == dtype
    tol = 1e-10 if double else 2e-4
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


def test_native_calls_blas_a_tile_at_a_time() -> None:
    """An attention head, the MLP and batched heads call BLAS inside their group's
    loops (two ``tdsl_gemm`` calls each), with the keys' transpose read as it lies."""
    pytest.importorskip("llvmlite")
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    for name in ("attention", "mlp", "heads"):
        args = arrays(name, 96, 16, 64, np.float32, 0)
        kernel = JITTensorKernel(target="native", memory_budget=4096).compile(
            CHAINS[name][0], {k: v.shape for k, v in args.items()}, "f32"
        )
        assert len(kernel.groups) == 1, name
        loops = kernel.ir["loops"]
        assert loops.count("func.call @tdsl_gemm_f32_") == 2, name
        assert "tdsl_matmul" not in loops
        # the loops plan records both matmuls as BLAS's
        assert "blas []" not in kernel.ir["planned"]
        # BLAS has the threads: the runtime runs the group's tiles on one
        assert "tdsl.serial" in loops
        plan = kernel.function.plan  # pyright: ignore[reportAttributeAccessIssue]
        assert [c.serial for c in plan.calls if c.group] == [True]
        # and so does a kernel loaded from the cache on disk (the plan's data)
        again = FunctionPlan.from_data(plan.to_data())
        assert again == plan and [c.serial for c in again.calls if c.group] == [True]


@pytest.mark.parametrize("target", COMPILED_TARGETS)
def test_strided_operands_of_a_tile_gemm(target: str) -> None:
    """A transposed and a column-sliced argument (views, not copies) as the operands of
    matmuls BLAS computes tile by tile: the native runtime copies them row-major."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 12)).astype(np.float32)
    wt = rng.standard_normal((30, 12)).astype(np.float32)  # w = wt.T: a strided view
    v = rng.standard_normal((30, 16)).astype(np.float32)[:, ::2]
    text = "relu(x * 2.0 @ w) @ v"
    kernel = JITTensorKernel(target=target, memory_budget=600).compile(
        text, {"x": x.shape, "w": (12, 30), "v": v.shape}, "f32"
    )
    got = kernel(x=x, w=wt.T, v=v)
    np.testing.assert_allclose(got, np.maximum(x * 2 @ wt.T, 0) @ v, rtol=2e-5, atol=2e-5)


def _gpt2_mlp(x: Array, w1: Array, b: Array, w2: Array) -> Array:
    """picoGPT's MLP (its layer norm without gain and bias): gelu's tanh form."""
    f32 = np.float32
    n = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + f32(1e-5))
    h = n @ w1 + b
    gelu = f32(0.5) * h * (1 + np.tanh(f32(np.sqrt(2 / np.pi)) * (h + f32(0.044715) * h**3)))
    return x + gelu @ w2


def test_blas_tiles_are_as_tall_as_the_budget_allows() -> None:
    """A GPT-2 MLP's shapes (512 rows, 768 -> 3072 -> 768) at budget 10**6: the first
    matmul BLAS computes a tile at a time writes its tile into the slot of gelu's output,
    which gelu overwrites in place, and the second adds its tile's product into the
    result (the residual's addition runs in place over it, after the last): the loops run
    the hidden dim (the second matmul's contraction) in tiles, so one row takes 768 + a
    hidden tile's elements of scratch, and two for the layer norm.  The loops take one
    tile of rows per thread (BLAS is faster on taller tiles, which it packs its weights
    for fewer times), at least the NumPy target's plan, and cut the hidden dim into tiles
    that fit what the budget allows, so the hidden layer is never held whole.  On two
    threads, each runs its tile in a scratch of its own (both within the budget), with
    BLAS on one thread while they do, and BLAS's count is restored."""
    pytest.importorskip("llvmlite")
    from tdsl import trace
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
    from tdsl.dialects.kernel import TileOp
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    a = arrays("mlp", 512, 768, 3072, np.float32, 0)
    args = (a["x"], a["w1"], a["b"], a["w2"])
    want = _gpt2_mlp(*args)
    for threads in (1, 2):
        traced = trace(_gpt2_mlp, target="native", memory_budget=10**6, threads=threads)
        kernel = traced.compile(*args)
        (tiled,) = [op for op in kernel.ir.module("tiled").walk() if isinstance(op, TileOp)]
        (tile,) = [op for op in kernel.ir.module("planned").walk() if isinstance(op, TileOp)]
        plan = _GroupPlan(tile, threads=threads)  # as recorded
        rows = plan.tiles[0]
        first, second = plan.gemm
        assert second in plan.in_output and first not in plan.in_output
        (gelu,) = [v for v in plan.slot_values if v.type == first.results[0].type]
        assert plan.shared == {first: plan.slots[gelu]}
        assert rows * threads == 512, rows
        assert plan.split == {second: 2}  # the hidden dim, in tiles
        hidden = plan.tiles[2]
        assert 256 <= hidden < 3072 and rows * threads * hidden < 512 * 3072  # never whole
        scratch = sum(math.prod(t.get_shape()) for t in plan.scratch_types())
        assert scratch == rows * (768 + hidden + 2)  # and the layer norm's two row statistics
        # on two threads each has a scratch of its own, BLAS on that thread alone
        assert scratch * threads <= 10**6
        assert rows >= tiled.tiles_value[0], (rows, tiled.tiles_value)
        assert kernel.function._threads == [threads]  # pyright: ignore[reportAttributeAccessIssue]
        before = threadpool_counts()
        np.testing.assert_allclose(traced(*args), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
        assert threadpool_counts() == before  # BLAS's own threads are back


def _head(q: Array, k: Array, v: Array) -> Array:
    s = q @ k.T * np.float32(0.125)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def test_a_blas_group_in_one_tile_per_thread_runs_on_both() -> None:
    """An attention head at S=512 fits its scratch twice in the default budget in two
    tiles of 256 rows: each of two threads runs one, BLAS on that thread alone, and
    together they stay within what the plan records (a streaming group needs two tiles
    a thread before it splits; a BLAS group's plan cut its tiles for the threads)."""
    pytest.importorskip("llvmlite")
    from tdsl import trace
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((512, 64)).astype(np.float32) for _ in range(3))
    traced = trace(_head, target="native", threads=2)
    kernel = traced.compile(q, k, v)
    assert "loops tiles [256, 64, 512, 64]" in kernel.ir["planned"]
    assert kernel.function._threads == [2]  # pyright: ignore[reportAttributeAccessIssue]
    want = _head(q, k, v)
    np.testing.assert_allclose(traced(q, k, v), want, rtol=1e-5, atol=1e-6)


def _chain(x: Array, w1: Array, b: Array, w2: Array) -> Array:
    h = np.maximum(x, 0) @ w1 + b
    return (np.tanh(h) * h) @ w2


def _chain_and_scaled_product(x: Array, w1: Array, b: Array, w2: Array) -> tuple[Array, Array]:
    h = np.maximum(x, 0) @ w1 + b
    return (np.tanh(h) * h) @ w2, h / h.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("budget", [4096, 10**5])
@pytest.mark.parametrize(
    ("fn", "in_place"),
    [(_chain, True), (_chain_and_scaled_product, False)],
    ids=["chain", "read-in-a-later-sweep"],
)
def test_a_tile_matmul_is_overwritten_only_where_nothing_else_reads_it(
    fn: Any, in_place: bool, budget: int
) -> None:
    """A matmul BLAS computes a tile at a time writes its tile into the slot of the value
    an element-wise chain computes from it (which overwrites it as it goes) only where
    nothing else reads the product: not where a later sweep reads it again (``h`` over its
    row sums, which the chain's sweep computes; taken as in place, that result was off by
    6.9)."""
    pytest.importorskip("llvmlite")
    from tdsl import trace
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
    from tdsl.dialects.kernel import TileOp
    from tdsl.dialects.structured import tensor_shape
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    a = arrays("mlp", 96, 40, 120, np.float32, 1)
    args = (a["x"], a["w1"], a["b"], a["w2"])
    traced = trace(fn, target="native", memory_budget=budget, threads=2)
    kernel = traced.compile(*args)
    plans = [
        _GroupPlan(op, threads=2)
        for op in kernel.ir.module("planned").walk()
        if isinstance(op, TileOp)
    ]
    first = next(op for p in plans for op in p.gemm if tensor_shape(op.operands[0])[1] == 40)
    (plan,) = [p for p in plans if first in p.gemm]
    assert (first in plan.shared) is in_place
    got, want = traced(*args), fn(*args)
    for g, w in zip(*((got, want) if isinstance(want, tuple) else ((got,), (want,))), strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5 * np.abs(w).max())


def _swiglu(x: Array, w1: Array, w2: Array, w3: Array) -> Array:
    n = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + np.float32(1e-5))
    a = n @ w1
    return ((a / (1 + np.exp(-a))) * (n @ w2)) @ w3


@pytest.mark.parametrize("budget", [4096, None])
def test_two_products_of_one_chain_do_not_share_its_slot(budget: int | None) -> None:
    """SwiGLU multiplies two products element by element into the value the last matmul
    reads: one of them may be overwritten in place, not both (both written into the one
    slot, the result was off by 3.9)."""
    pytest.importorskip("llvmlite")
    from tdsl import trace
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
    from tdsl.dialects.kernel import TileOp
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    rng = np.random.default_rng(2)
    x = rng.standard_normal((96, 40)).astype(np.float32)
    w1, w2 = ((rng.standard_normal((40, 120)) / 7).astype(np.float32) for _ in range(2))
    w3 = (rng.standard_normal((120, 40)) / 11).astype(np.float32)
    traced = trace(_swiglu, target="native", memory_budget=budget, threads=2)
    kernel = traced.compile(x, w1, w2, w3)
    (plan,) = [
        _GroupPlan(op, threads=2)
        for op in kernel.ir.module("planned").walk()
        if isinstance(op, TileOp)
    ]
    assert len(plan.gemm) == 3 and len(plan.shared) == 1
    want = _swiglu(x, w1, w2, w3)
    np.testing.assert_allclose(traced(x, w1, w2, w3), want, rtol=1e-5, atol=1e-5)


def threadpool_counts() -> list[int]:
    from tdsl.runtime.blas import find_gemm

    gemm = find_gemm()
    set_threads = None if isinstance(gemm, str) else gemm.set_threads
    if set_threads is None:
        return []
    count = set_threads(1)
    set_threads(count)
    return [count]


def _native_group_plan(
    fn: Any, arrays: tuple[Array, ...], stage: str, threads: int | None = None
) -> tuple[Any, Any, Any]:
    """``fn`` traced natively (skipped where native code cannot build), compiled for
    ``arrays``, with its one ``kernel.tile`` at ``stage`` (``tiled``: the loops plan it
    again; ``planned``: as recorded) and the loops' plan of it."""
    pytest.importorskip("llvmlite")
    from tdsl import trace
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
    from tdsl.dialects.kernel import TileOp
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    traced = trace(fn, target="native", threads=threads)
    kernel = traced.compile(*arrays)
    (tile,) = [op for op in kernel.ir.module(stage).walk() if isinstance(op, TileOp)]
    return traced, tile, _GroupPlan(tile, threads=threads or 1)


def _head(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ k.T * np.float32(0.125)
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ v


def _head_reading_exp_again(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ k.T * np.float32(0.125)
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    o = (e / np.sum(e, axis=-1, keepdims=True)) @ v
    return (e * np.sum(o, axis=-1, keepdims=True)) @ v


@pytest.mark.parametrize(("fn", "in_place"), [(_head, True), (_head_reading_exp_again, False)])
def test_the_quotients_overwrite_the_exponentials_they_divide(fn: Any, in_place: bool) -> None:
    """An attention head natively, at the default budget: the quotients of softmax
    overwrite the tile of exponentials they are computed from (the division is their
    last reader, element by element), so the loops keep one tile of scores, not two,
    and take taller tiles.  Where another op reads the exponentials after the division
    (scaled by row sums of the head's output), they keep their own buffer.  Both
    compute NumPy's values."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((512, 64)).astype(np.float32) for _ in range(3))
    traced, tile, plan = _native_group_plan(fn, (q, k, v), "tiled")
    slot = {x.owner.name.split(".")[-1]: plan.slots[x] for x in plan.stored}
    assert (slot["div"] == slot["exp"]) == in_place, plan.slots
    scratch = sum(math.prod(t.get_shape()) for t in plan.scratch_types())
    assert scratch <= tile.scratch_value
    want = fn(q, k, v)
    np.testing.assert_allclose(traced(q, k, v), want, rtol=2e-5, atol=2e-6 * np.abs(want).max())


def _masked_head(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray) -> np.ndarray:
    s = q @ k.T * np.float32(0.125) + mask
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ v


def _masked_head_reading_scores_late(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    s = q @ k.T * np.float32(0.125) + mask
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    p = e / np.sum(e, axis=-1, keepdims=True)
    return (p @ v) * np.max(s * p, axis=-1, keepdims=True)


@pytest.mark.parametrize(
    ("fn", "in_place"), [(_masked_head, True), (_masked_head_reading_scores_late, False)]
)
def test_the_exponentials_overwrite_the_scores_blas_wrote(fn: Any, in_place: bool) -> None:
    """A masked attention head natively (S=1024, d=64, the benchmark's), at the default
    budget: BLAS writes each tile of scores into the slot of the exponentials, which
    overwrite them element by element in the sweep after the one that takes the rows'
    maximum (a reduction done with the scores before they are overwritten); the
    quotients then overwrite the exponentials.  One tile of scores in scratch, not two,
    so the tiles are twice as tall (256 rows, not 171: fewer, larger BLAS calls).  Where
    a reduction reads the scores in a later sweep, they keep their own buffer.  Both
    compute NumPy's values."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((1024, 64)).astype(np.float32) for _ in range(3))
    mask = np.triu(np.full((1024, 1024), -1e10, np.float32), 1)
    traced, _, plan = _native_group_plan(fn, (q, k, v, mask), "planned", threads=2)
    scores = plan.body.ops[1]
    assert scores.name == "tensordsl.matmul" and scores in plan.gemm
    (exp,) = [x for x in plan.stored if x.owner.name == "tensordsl.exp"]
    assert (plan.shared.get(scores) == plan.slots[exp]) == in_place, (plan.shared, plan.slots)
    rows = plan.tiles[0]
    scratch = sum(math.prod(t.get_shape()) for t in plan.scratch_types())
    assert scratch * 2 <= 10**6
    if in_place:
        assert rows == 256 and scratch == rows * (1024 + 2)  # a tile of scores, maxima, sums
    want = fn(q, k, v, mask)
    np.testing.assert_allclose(
        traced(q, k, v, mask), want, rtol=2e-5, atol=2e-6 * np.abs(want).max()
    )


@pytest.mark.parametrize("text", ["matmul(zeros((3, 4)), x) + 1", "matmul(x.T, ones((4, 2)))"])
@pytest.mark.parametrize("target", COMPILED_TARGETS)
def test_a_constant_operand_of_a_matmul(target: str, text: str) -> None:
    """A matmul of a constant (``zeros``, ``ones``) and an input: the native target runs
    it as loops (a constant is no input it hands BLAS; it once raised a KeyError)."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    kernel = JITTensorKernel(target=target, memory_budget=64).compile(text, {"x": x.shape}, "f32")
    want = np.zeros((3, 4)) @ x + 1 if text.startswith("matmul(zeros") else x.T @ np.ones((4, 2))
    np.testing.assert_allclose(kernel(x=x), want, rtol=1e-6)


RESULTS_READ_BACK = {
    # a matmul's left operand, computed a tile of rows at a time, that is also a result:
    # BLAS reads it from the result (f32), the loops compute the matmul from it (f16)
    "scaled": (
        "def main(x: {t}[40, 24], w: {t}[24, 8]):\n    y = exp(x) * 2.0\n    return y @ w, y\n",
        lambda x, w: ((y := np.exp(x) * x.dtype.type(2)) @ w, y),
    ),
    # normalized over its columns (the rows the loops would cut), then multiplied
    "columns": (
        "def main(x: {t}[40, 24], w: {t}[24, 8]):\n"
        "    s = softmax(x, axis=0)\n    return matmul(s, w), s\n",
        lambda x, w: ((s := _softmax(x.T).T) @ w, s),
    ),
}


@pytest.mark.parametrize("name", RESULTS_READ_BACK)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("budget", [64, 1_000_000])
def test_a_stored_value_that_is_a_result_is_read_back_from_it(
    name: str, dtype: Any, budget: int
) -> None:
    """A value the native loops store for a later sweep (a matmul's computed operand)
    that the group also yields is kept in its result's slice, which its sweep writes
    anyway, not in scratch too; later sweeps read it back from there."""
    pytest.importorskip("llvmlite")
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
    from tdsl.dialects.kernel import TileOp
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    text, reference = RESULTS_READ_BACK[name]
    t = "f32" if dtype == np.float32 else "f16"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)  # no fusion plan fits 64
        kernel = JITTensorKernel(target="native", memory_budget=budget, threads=2).compile(
            text.format(t=t)
        )
    plans = [_GroupPlan(op) for op in kernel.ir.module("planned").walk() if isinstance(op, TileOp)]
    kept = [v for plan in plans for v in plan.stored_in_output]
    assert kept, "no stored value kept in its result"
    assert all(v not in plan.slots for plan in plans for v in plan.stored_in_output)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((40, 24)) / 4).astype(dtype)
    w = (rng.standard_normal((24, 8)) / 4).astype(dtype)
    got = kernel(x, w)
    want = reference(x.astype(np.float64), w.astype(np.float64))
    tol = 2e-2 if dtype == np.float16 else 2e-5
    for g, r in zip(got, want, strict=True):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol * np.abs(r).max())


@pytest.mark.parametrize("rows", [32, 128])
def test_small_blas_groups_plan_their_tiles_for_the_threads_that_run_them(rows: int) -> None:
    """An attention head of a few rows on two threads: its operands are too small for
    the runtime to split its tiles over threads (MIN_BLAS_BYTES_PER_THREAD), so its plan
    fits its tiles to the whole recorded scratch, as on one thread, not to half of it
    (S=32 made twice the BLAS calls, on tiles of 4 rows instead of 8)."""
    pytest.importorskip("llvmlite")
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
    from tdsl.defaults import MIN_BLAS_BYTES_PER_THREAD
    from tdsl.dialects.kernel import TileOp
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    a = arrays("attention", rows, 64, rows, np.float32, 0)
    plans = {}
    for threads in (1, 2):
        kernel = JITTensorKernel(target="native", threads=threads).compile(
            CHAINS["attention"][0], {k: v.shape for k, v in a.items()}, "f32"
        )
        (tile,) = [op for op in kernel.ir.module("planned").walk() if isinstance(op, TileOp)]
        assert tile.scratch_value * 4 < 2 * MIN_BLAS_BYTES_PER_THREAD  # small: no split
        plans[threads] = _GroupPlan(tile, threads=threads).tiles
        assert kernel.function._threads == [1]  # pyright: ignore[reportAttributeAccessIssue]
        want = CHAINS["attention"][1](a)
        np.testing.assert_allclose(kernel(**a), want, rtol=2e-5, atol=2e-6 * np.abs(want).max())
    assert plans[1] == plans[2]


@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("Q @ K.T", lambda q, k: q @ k.T),
        ("matmul(Q, K.T) + 1", lambda q, k: q @ k.T + 1),
        ("exp(Q @ transpose(K) * 0.125) * 2", lambda q, k: np.exp(q @ k.T * 0.125) * 2),
    ],
)
def test_a_matmul_into_its_result_needs_no_scratch(text: str, reference: Any) -> None:
    """A matmul BLAS computes a tile at a time (its right operand a transpose, computed
    in the group) whose result only an output's element-wise chain reads writes its tiles
    into that output, the chain in place over them.  Its tile op records no scratch (the
    numpy target needs none), and the loops, which kept its tile in scratch, cut the
    result into tiles of one element: a BLAS call per element, 120x slower than NumPy at
    128x128, and what `auto` picked from 128x128 on."""
    pytest.importorskip("llvmlite")
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
    from tdsl.dialects.kernel import TileOp
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    rng = np.random.default_rng(7)
    q, k = (rng.standard_normal((96, 64)).astype(np.float32) for _ in range(2))
    kernel = JITTensorKernel(target="native", threads=1).compile(
        text, {"Q": q.shape, "K": k.shape}, "f32"
    )
    (tile,) = [op for op in kernel.ir.module("planned").walk() if isinstance(op, TileOp)]
    plan = _GroupPlan(tile)
    assert tile.scratch_value == 0 and plan.tiles[:2] == (96, 96)
    assert list(plan.gemm) == list(plan.in_output)  # its tile written into the result
    want = reference(q, k)
    np.testing.assert_allclose(kernel(q, k), want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


@pytest.mark.parametrize(
    ("text", "reference"),
    [("softmax(X @ W)", lambda x, w: _softmax(x @ w))],
)
def test_the_loops_may_use_what_the_budget_leaves(text: str, reference: Any) -> None:
    """The numpy target writes x @ w into the result it normalizes: its tile op records
    little scratch.  The loops keep a tile of rows of it for BLAS, and within that
    scratch took tiles of one row (a BLAS call per row: 4.6 ms against 0.2-0.5 ms on the
    numpy target at 256x256, where auto picked native).  Planned under the kernel's
    budget, they use what it leaves (the plan records how much, as `limit`), and keep
    the memory promise.  (``transpose(x) @ w`` did the same: its left operand is now
    read as it lies, below.)"""
    pytest.importorskip("llvmlite")
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
    from tdsl.dialects.kernel import TileOp
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    rng = np.random.default_rng(11)
    x, w = (rng.standard_normal((256, 256)).astype(np.float32) / 16 for _ in range(2))
    for budget, tall in ((None, True), (64, False)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TdslBudgetWarning)
            kernel = JITTensorKernel(target="native", memory_budget=budget).compile(
                text, {"X": x.shape, "W": w.shape}, "f32"
            )
        (tile,) = [op for op in kernel.ir.module("planned").walk() if isinstance(op, TileOp)]
        plan = _GroupPlan(tile)
        recorded = tile.loops_plan
        assert recorded is not None
        if tall:  # the default budget leaves room for tiles of many rows
            assert plan.tiles[0] >= 64 and recorded.limit is not None
            assert f"memory-budget={1_000_000}" in kernel.pipeline
        # (within the limit the plan records, or the tile op's scratch)
        scratch = sum(math.prod(t.get_shape()) for t in plan.scratch_types())
        assert scratch <= (recorded.limit or tile.scratch_value) or plan.tiles[0] == 1
        want = reference(x, w)
        np.testing.assert_allclose(kernel(x, w), want, rtol=2e-5, atol=2e-6 * np.abs(want).max())


@pytest.mark.parametrize("budget", [None, 64])
@pytest.mark.parametrize(
    ("text", "shapes", "reference"),
    [
        ("matmul(transpose(X), W)", ((96, 80), (96, 40)), lambda x, w: x.T @ w),
        (
            "relu(transpose(X) @ W + 1.0)",
            ((96, 80), (96, 40)),
            lambda x, w: np.maximum(x.T @ w + 1, 0),
        ),
        ("softmax(transpose(X) @ W)", ((96, 80), (96, 40)), lambda x, w: _softmax(x.T @ w)),
        (
            "swapaxes(X, -1, -2) @ W",
            ((3, 96, 80), (3, 96, 40)),
            lambda x, w: np.swapaxes(x, -1, -2) @ w,
        ),
        (
            "swapaxes(X, -1, -2) @ W",
            ((3, 96, 80), (96, 40)),
            lambda x, w: np.swapaxes(x, -1, -2) @ w,
        ),
    ],
)
def test_a_transposed_left_operand_is_read_as_it_lies(
    text: str, shapes: tuple[Any, Any], reference: Any, budget: int | None
) -> None:
    """``transpose(x) @ w``: BLAS reads x's columns as they lie (gemm's ``trans_a``), a
    tile of them per call.  The loops store nothing for it, so where the product goes
    into the result their tiles need no scratch, and are as tall at a budget of 64
    elements as without one.  Before, they
    copied a tile of x.T's rows into scratch (one row per BLAS call at budget 64), and
    the kernel ran at 35 ms where the numpy target took 24 (512x768 by 768x3072)."""
    pytest.importorskip("llvmlite")
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
    from tdsl.dialects.kernel import TileOp
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    rng = np.random.default_rng(5)
    x, w = (rng.standard_normal(s).astype(np.float32) / 8 for s in shapes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)
        kernel = JITTensorKernel(target="native", memory_budget=budget).compile(
            text, {"X": x.shape, "W": w.shape}, "f32"
        )
    tiles = [op for op in kernel.ir.module("planned").walk() if isinstance(op, TileOp)]
    plans = [_GroupPlan(t) for t in tiles]
    gemms = [g for p in plans for g in p.gemm.values()]
    assert gemms and all(g.trans_a for g in gemms)
    assert not any(p.stored for p in plans)  # nothing of x.T is copied
    # the product's tiles are tall wherever it goes into the result (a softmax keeps a
    # tile of its rows in scratch, one row at budget 64)
    assert all(p.tiles[0] > 1 for p in plans if p.gemm and list(p.gemm) == list(p.in_output))
    assert "softmax" in text or any(list(p.gemm) == list(p.in_output) for p in plans if p.gemm)
    want = reference(x, w)
    np.testing.assert_allclose(kernel(x, w), want, rtol=2e-5, atol=2e-5 * np.abs(want).max())
    # x given as a view (a transpose's transpose: column-major): copied row-major first
    xv = np.ascontiguousarray(np.swapaxes(x, -1, -2))
    xv = np.swapaxes(xv, -1, -2)
    assert not xv.flags.c_contiguous
    np.testing.assert_allclose(kernel(xv, w), want, rtol=2e-5, atol=2e-5 * np.abs(want).max())
