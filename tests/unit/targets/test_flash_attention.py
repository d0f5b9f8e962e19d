"""Flash-style attention: ``softmax(q @ k.T * s + mask) @ v`` whose key rows do not fit
the memory budget runs as one group whose key dim is tiled, with an online softmax
(``tensordsl.softmax_matmul``: a running maximum, a running sum and a rescaled
accumulator), on every target, against NumPy.

The references are NumPy's own ``softmax(scores) @ v``; tdsl divides once per result
element after the sum, so results agree to f32 (f64) rounding, not bit for bit.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest
from all_targets import COMPILED_TARGETS, TARGETS, run_on
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from peak_memory import measure_peak, numpy_buffers

from tdsl import JITTensorKernel
from tdsl.errors import TdslBudgetWarning, TdslError, TdslLoopsBudgetWarning

Array = np.ndarray[Any, Any]

MASKED = "softmax(q @ swapaxes(k, -1, -2) * 0.125 + mask) @ v"
"""An attention head with its mask given (batch and head dims lead, when drawn)."""
CAUSAL = "softmax(where(tri({n}, {m}, {off}) > 0, q @ swapaxes(k, -1, -2) * 0.125, -inf)) @ v"
"""The causal mask built in the program from ``tri`` and ``where`` (2-D heads only)."""


def softmax(x: Array) -> Array:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def head(
    lead: tuple[int, ...], rows: int, keys: int, d: int, dtype: Any, seed: int
) -> dict[str, Array]:
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((*lead, n, d)).astype(dtype) for n in (rows, keys, keys))
    masked = -1e4 if dtype == np.float16 else -1e9  # (-1e9 overflows float16)
    mask = np.where(rng.random((rows, keys)) < 0.2, masked, 0.0).astype(dtype)
    return {"q": q, "k": k, "mask": mask, "v": v}


def want_masked(a: dict[str, Array]) -> Array:
    scale = a["q"].dtype.type(0.125)
    return softmax(a["q"] @ np.swapaxes(a["k"], -1, -2) * scale + a["mask"]) @ a["v"]


def close(got: Array, want: Array, dtype: Any) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-11 if dtype == np.float64 else 3e-5
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("target", TARGETS)
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    lead=st.sampled_from([(), (2,), (2, 3)]),
    rows=st.integers(1, 24),
    keys=st.integers(1, 160),
    d=st.integers(1, 12),
    budget=st.sampled_from([64, 256, 1000, 4096, 1_000_000]),
    double=st.booleans(),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
# a tile of 3 keys, as many as the head's columns: the exp buffer (the scores' shape) once
# took the result's layout, so the last tile of 2 keys met a buffer of 3
@example(lead=(2, 3), rows=21, keys=122, d=3, budget=64, double=True, causal=True, seed=576)
def test_attention_matches_numpy_at_every_budget(
    target: str,
    lead: tuple[int, ...],
    rows: int,
    keys: int,
    d: int,
    budget: int,
    double: bool,
    causal: bool,
    seed: int,
) -> None:
    dtype = np.float64 if double else np.float32
    a = head(lead, rows, keys, d, dtype, seed)
    if causal:  # the mask from tri and where: rows see the keys up to their position
        off = keys - rows
        text = CAUSAL.format(n=rows, m=keys, off=off)
        del a["mask"]
        tri = np.tri(rows, keys, off, dtype=bool)
        scale = dtype(0.125)
        with np.errstate(all="ignore"):
            want = softmax(np.where(tri, a["q"] @ np.swapaxes(a["k"], -1, -2) * scale, -np.inf))
            want = want @ a["v"]
    else:
        text = MASKED
        want = want_masked(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)
        got = run_on(target, budget, text, **a)
    close(got, want, dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("s_shape, v_shape", [((5, 70), (3, 70, 4)), ((2, 5, 70), (70, 4))])
def test_scores_broadcast_against_the_values_run_online(
    target: str, s_shape: tuple[int, ...], v_shape: tuple[int, ...]
) -> None:
    """``softmax(s) @ v`` where one of the two has a batch dim the other broadcasts along,
    at a budget below a row: the online softmax over key tiles (whose rows are the
    scores' or the state's, a tile's state then merged, not updated in place)."""
    rng = np.random.default_rng(4)
    a = {"s": rng.standard_normal(s_shape), "v": rng.standard_normal(v_shape)}
    a = {n: x.astype(np.float32) for n, x in a.items()}
    got = run_on(target, 64, "softmax(s) @ v", **a)
    close(got, softmax(a["s"]) @ a["v"], np.float32)
    if target != "interpreter":
        assert "softmax_matmul" in tiled("softmax(s) @ v", target, 64, a)[1]


def tiled(text: str, target: str, budget: int, a: dict[str, Array]) -> tuple[Any, str]:
    kernel = JITTensorKernel(target=target, memory_budget=budget, threads=1).compile(
        text, {n: x.shape for n, x in a.items()}, {n: x.dtype.name for n, x in a.items()}
    )
    return kernel, kernel.ir["tiled"]


@pytest.mark.parametrize("target", COMPILED_TARGETS)
@pytest.mark.parametrize("budget", [128, 384])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
def test_key_rows_longer_than_the_budget_run_online_within_it(
    target: str, budget: int, dtype: Any
) -> None:
    """At S=512, a budget below one key row: the key dim is tiled (``softmax_matmul`` over
    key tiles shorter than S), the plan fits the budget (no budget warning), and a call's
    extra memory stays within budget * itemsize + 4 * S * d * itemsize, the itemsize the
    state's (float32 for float16: the budget counts elements).

    The native loops run the key dim in tiles too (``loops tiles``: at most the plan's
    and :data:`~tdsl.backend.llvm.loops_flash.KEY_TILE`; the value columns whole),
    within the scratch the plan records: no :class:`TdslLoopsBudgetWarning`."""
    s, d = 512, 16
    a = head((), s, s, d, dtype, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel, ir = tiled(MASKED, target, budget, a)
    kinds = {type(w.message) for w in caught}
    assert not kinds, kinds
    assert "tensordsl.softmax_matmul" in ir and "tensordsl.softmax " not in ir
    (tiles,) = re.findall(r"tiles \[([^\]]*)\]", ir)
    rows, _, keys, _ = (int(t) for t in tiles.split(","))
    assert keys < s and rows * keys < budget
    if target == "native":
        (loops,) = re.findall(r"loops tiles \[([^\]]*)\]", kernel.ir["planned"])
        # the keys in tiles; the value columns whole (a tile of them would compute the
        # scores again)
        _, columns, key_tile, _ = (int(t) for t in loops.split(","))
        assert 1 <= key_tile <= keys and columns == d, loops
    peak, got = measure_peak(lambda *xs: kernel(*xs), *a.values())
    if dtype == np.float16:
        assert np.asarray(got).dtype == np.float16
        within_numpys_error(np.asarray(got), a)
    else:
        close(np.asarray(got), want_masked(a), np.float32)
    extra = peak - got.nbytes
    assert extra <= budget * 4 + 4 * s * d * 4 + numpy_buffers(1), extra


def test_the_native_loops_run_an_edited_key_tile() -> None:
    """The native loops' key tile is part of the plan ``tdsl-plan-loops`` records: a hand
    edit to 7 keys (a tile that does not divide the 300 keys) still runs the online
    softmax, to NumPy's result; a tile larger than the tile op's own is refused by the
    verifier with a located error."""
    a = head((2,), 9, 300, 5, np.float32, 6)
    kernel, _ = tiled(MASKED, "native", 256, a)
    planned = kernel.ir["planned"]
    (loops,) = re.findall(r"loops tiles \[([^\]]*)\]", planned)
    (own,) = re.findall(r" tiles \[([^\]]*)\] scratch", planned)
    tiles = [int(t) for t in loops.split(",")]
    keys = int(own.split(",")[3])
    assert tiles[3] <= keys < 300
    for edit, ok in ((7, True), (keys + 1, False)):
        text = planned.replace(
            f"loops tiles [{loops}]",
            "loops tiles [" + ", ".join(map(str, [*tiles[:3], edit, *tiles[4:]])) + "]",
        )
        if ok:
            edited = JITTensorKernel(target="native").compile_ir(text)
            assert f"loops tiles [{tiles[0]}, {tiles[1]}, {tiles[2]}, 7" in edited.ir["planned"]
            close(np.asarray(edited(*a.values())), want_masked(a), np.float32)
        else:
            with pytest.raises(TdslError, match=rf"loops tile {edit} along d3 must be 300 or"):
                JITTensorKernel(target="native").compile_ir(text)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
def test_native_loops_run_few_whole_rows_as_flash_attention(dtype: Any) -> None:
    """Where the tile plan keeps whole key rows (600 keys) but only a few of them per
    tile (3 rows at budget 2000), the native loops take the softmax and its matmul as one
    ``softmax_matmul`` anyway and run its keys in tiles (the plain form would read all of
    ``k`` and ``v`` again for every few rows): the plan records the key tile, the tiled
    IR keeps the softmax, nothing warns, and the result is NumPy's; the recorded plan
    lowers to the same loops when read back."""
    a = head((), 64, 600, 16, dtype, 7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel, ir = tiled(MASKED, "native", 2000, a)
    assert not caught, [str(w.message) for w in caught]
    assert "tensordsl.softmax " in ir and "softmax_matmul" not in ir
    (loops,) = re.findall(r"loops tiles \[([^\]]*)\]", kernel.ir["planned"])
    rows, columns, keys, _ = (int(t) for t in loops.split(","))
    assert rows < 16 and columns == 16 and keys <= 256, loops
    got = np.asarray(kernel(*a.values()))
    if dtype == np.float16:
        within_numpys_error(got, a)
    else:
        close(got, want_masked(a), np.float32)
    again = JITTensorKernel(target="native").compile_ir(kernel.ir["planned"])
    assert again.ir["loops"] == kernel.ir["loops"]


@pytest.mark.parametrize("budget, blas_calls", [(2000, 1), (8000, 2)])
def test_native_flash_tiles_of_enough_rows_give_p_at_v_to_blas(
    budget: int, blas_calls: int
) -> None:
    """A flash key tile of at least ``FLASH_BLAS_ROWS`` (8) query rows computes its
    ``exp(s - max) @ v`` by BLAS (a second ``tdsl_gemm`` call beside ``q @ k.T``'s);
    fewer rows (3 at budget 2000), by loops. Both give NumPy's result."""
    a = head((), 64, 600, 16, np.float32, 8)
    kernel, _ = tiled(MASKED, "native", budget, a)
    (loops,) = re.findall(r"loops tiles \[([^\]]*)\]", kernel.ir["planned"])
    rows = int(loops.split(",")[0])
    assert (rows >= 8) == (blas_calls == 2), loops
    assert kernel.ir["loops"].count("func.call @tdsl_gemm") == blas_calls
    close(np.asarray(kernel(*a.values())), want_masked(a), np.float32)


def within_numpys_error(got: Array, a: dict[str, Array]) -> None:
    """``got`` (float16 attention of ``a``) is at least as close to the exact result
    (float64) as NumPy's own float16 result, which rounds each probability to float16."""
    wide = {n: x.astype(np.float64) for n, x in a.items()}
    exact = want_masked(wide)
    scale = max(1.0, float(np.abs(exact).max(initial=0.0)))
    error = float(np.abs(got.astype(np.float64) - exact).max(initial=0.0)) / scale
    numpys = float(np.abs(want_masked(a).astype(np.float64) - exact).max(initial=0.0)) / scale
    assert error <= max(numpys, 1e-3), f"error {error:.3g}, NumPy's {numpys:.3g}"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", [64, 256, 4096, 1_000_000])
def test_float16_attention_is_as_close_as_numpys(target: str, budget: int) -> None:
    """float16 heads (batched, keys not a multiple of the tiles) at budgets from a few key
    tiles to whole rows: online (float32 state) where rows do not fit, as written where
    they do; never further from the exact result than NumPy's float16 computation."""
    a = head((2,), 19, 203, 7, np.float16, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)
        got = run_on(target, budget, MASKED, **a)
    assert got.dtype == np.float16 and got.shape == (2, 19, 7)
    within_numpys_error(got, a)


def test_rows_that_fit_keep_the_softmax_and_its_matmul() -> None:
    """Where a key row fits, the group runs as written: the matmul of the probabilities
    stays a matmul (BLAS on both targets); the online softmax is for rows that do not."""
    a = head((), 64, 64, 16, np.float32, 1)
    _, ir = tiled(MASKED, "numpy", 1_000_000, a)
    assert "tensordsl.softmax " in ir and "softmax_matmul" not in ir


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("keys, budget", [(96, 64), (300, 2000)])
def test_special_values_are_numpys(target: str, keys: int, budget: int) -> None:
    """A row masked entirely with -inf is nan (0/0), as NumPy's softmax makes it; a row
    with +inf or nan is nan; -0.0 and huge finite scores are taken as NumPy takes them.
    At budget 64 the 96 keys run in tiles, so the states of tiles merge; at 2000 the
    tile plan keeps 300 whole keys, and the native loops take them in tiles of 256 (few
    rows: flash attention)."""
    rows, d = 6, 4
    a = head((), rows, keys, d, np.float32, 2)
    mask = np.zeros((rows, keys), np.float32)
    mask[0] = -np.inf  # nothing to attend to
    mask[1, 50] = np.inf
    mask[2, 7] = np.nan
    mask[3, :] = -0.0
    mask[4, 90] = 3e38  # one huge score: its tile's maximum, the others' weights vanish
    mask[5, :48] = -np.inf  # the first key tiles empty, the later ones not
    a["mask"] = mask
    with np.errstate(all="ignore"):
        want = want_masked(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)
        got = run_on(target, budget, MASKED, **a)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=3e-5, atol=3e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("target", COMPILED_TARGETS)
def test_dask_arrays_chunked_along_the_query_rows(dtype: Any, target: str) -> None:
    """Query rows in chunks of 16, keys and values whole: each chunk runs the flash plan
    (natively, the loops' flash attention)."""
    da = pytest.importorskip("dask.array")
    import tdsl.dask  # noqa: F401  (the JIT's call path takes Dask arrays)

    s, d = 64, 8
    a = head((), s, 300, d, dtype, 3)
    kernel, ir = tiled(MASKED, target, 256, a)
    assert "tensordsl.softmax_matmul" in ir
    lazy = {
        "q": da.from_array(a["q"], chunks=(16, d)),
        "k": da.from_array(a["k"], chunks=a["k"].shape),
        "mask": da.from_array(a["mask"], chunks=(16, 300)),
        "v": da.from_array(a["v"], chunks=a["v"].shape),
    }
    got = kernel(**lazy)
    assert isinstance(got, da.Array)
    if dtype == np.float16:
        within_numpys_error(np.asarray(got.compute()), a)
    else:
        close(np.asarray(got.compute()), want_masked(a), np.float32)


def test_auto_says_how_the_loops_run_the_online_softmax() -> None:
    """Under ``auto``, a native head whose keys run in tiles says so in its
    ``target_reason``: BLAS computes ``q @ k.T``, and the online softmax's
    ``exp(s - max) @ v`` runs a key tile at a time (it said "compiled loops the rest")."""
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    a = head((), 64, 600, 16, np.float32, 9)
    kernel, _ = tiled(MASKED, "auto", 2000, a)
    assert kernel.target == "native", kernel.target_reason
    assert (
        "BLAS computes 1 of its 2 matmuls; the online softmax's `exp(s - max) @ v` runs a "
        "key tile at a time (by BLAS where a tile holds 8 rows or more);"
    ) in (kernel.target_reason or "")
    close(np.asarray(kernel(*a.values())), want_masked(a), np.float32)


def test_attention_summed_over_its_rows_runs_the_plans_passes() -> None:
    """Attention summed over its query rows at budget 2000: the loops took the query
    rows whole and needed 8704 elements, more than the plan's 2000; they warned, then
    the lowering refused the plan they had recorded (its `limit` was capped at 2000: a
    `TdslIRError`; found by fuzzing the native target), and then ran it over the limit,
    as the warning said.  They now run the plan's passes over tiles of its rows, flash
    attention's key tiles inside each, within the plan."""
    pytest.importorskip("llvmlite")

    rng = np.random.default_rng(4)
    q = rng.standard_normal((64, 33)).astype(np.float32)
    k = rng.standard_normal((257, 33)).astype(np.float32)
    v = rng.standard_normal((257, 33)).astype(np.float32)
    shapes = {"q": q.shape, "k": k.shape, "v": v.shape}
    with warnings.catch_warnings():
        warnings.simplefilter("error", TdslLoopsBudgetWarning)
        fn = JITTensorKernel(target="native", threads=1, memory_budget=2000).compile(
            "sum(softmax(q @ k.T, axis=-1) @ v, axis=0)", shapes=shapes, dtypes="f32"
        )
    loops = re.search(r"loops tiles \[(\d+),", fn.ir["planned"])
    assert loops is not None and int(loops.group(1)) < 64
    s = q @ k.T
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    want = (e / e.sum(axis=-1, keepdims=True) @ v).sum(axis=0)
    np.testing.assert_allclose(fn(q, k, v), want, rtol=1e-4, atol=1e-4)


def test_native_runs_a_plan_over_its_limit_that_it_warned_of() -> None:
    """A plan the loops cannot keep (a row scan of a matmul summed over its rows, times
    another, into a matmul and a scan along its columns, at budget 4096): they need
    8918 elements, more than the plan's 4096, and warn; the plan records what they
    need (`limit`), and runs as the warning says (a recorded limit capped at the
    budget was refused by the lowering; found by fuzzing)."""
    pytest.importorskip("llvmlite")

    rng = np.random.default_rng(4)
    a = rng.standard_normal((128, 100)).astype(np.float32)
    c, b = (rng.standard_normal((100, 128)).astype(np.float32) / 10 for _ in range(2))
    d = rng.standard_normal((128, 16)).astype(np.float32)
    text = (
        "cumsum(((sum((cumsum((a @ c), axis=1) + (exp(a / 4) @ c)), axis=0, keepdims=True)"
        " * relu((exp(a / 4) @ b))) @ d), axis=1)"
    )
    shapes = {"a": a.shape, "c": c.shape, "b": b.shape, "d": d.shape}
    with pytest.warns(TdslLoopsBudgetWarning, match="native loops need 8918 elements"):
        fn = JITTensorKernel(target="native", threads=1, memory_budget=4096).compile(
            text, shapes=shapes, dtypes="f32"
        )
    assert "limit 8918" in fn.ir["planned"]
    e = np.exp(a / 4)
    rows = (np.cumsum(a @ c, axis=1) + e @ c).sum(axis=0, keepdims=True)
    want = np.cumsum((rows * np.maximum(e @ b, 0)) @ d, axis=1)
    np.testing.assert_allclose(fn(a, c, b, d), want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(("rows", "keys"), [(64, 300), (48, 300), (64, 280)])
def test_f16_attention_summed_over_its_rows_matches_numpy(rows: int, keys: int) -> None:
    """In float16 the loops, not BLAS, compute ``q @ k.T``, reading ``k.T`` stored
    by the plan's first step; flash attention's key loop in the second runs the keys
    in tiles of 128.  Kept from the first step, ``k.T``'s slot held its last key tile
    only, and every tile read it: 0.5-0.9 off (found by fuzzing).  Now the key loop
    computes its own tile of it, within the plan's budget."""
    pytest.importorskip("llvmlite")
    rng = np.random.default_rng(0)
    q = (rng.standard_normal((rows, 16)) * 0.7).astype(np.float16)
    k = (rng.standard_normal((keys, 16)) * 0.7).astype(np.float16)
    v = (rng.standard_normal((keys, 33)) / 8).astype(np.float16)
    shapes = {"q": q.shape, "k": k.shape, "v": v.shape}
    with warnings.catch_warnings():
        warnings.simplefilter("error", TdslLoopsBudgetWarning)  # (within the plan)
        fn = JITTensorKernel(target="native", threads=1, memory_budget=1024).compile(
            "sum(softmax(q @ k.T, axis=-1) @ v, axis=0)", shapes=shapes, dtypes="f16"
        )
    assert "loops tiles [2, 33, 128, 16] stored [0] blas []" in fn.ir["planned"]
    s = q.astype(np.float64) @ k.T.astype(np.float64)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    want = (e / e.sum(axis=-1, keepdims=True) @ v.astype(np.float64)).sum(axis=0)
    np.testing.assert_allclose(fn(q, k, v), want, rtol=5e-3, atol=5e-3 * np.abs(want).max())


@pytest.mark.parametrize(
    ("text", "rows", "width", "head", "budget", "tol"),
    [
        ("sum(softmax(q @ k.T) @ v, axis=1)", 2, 65, 24, 256, 5e-2),
        ("min(softmax(q @ transpose(k) * 0.125) @ v, axis=1, keepdims=True)", 8, 64, 64, 256, 1e-2),
    ],
)
def test_f16_scores_of_a_step_before_flash_attentions_are_not_its_last_key_tile(
    text: str, rows: int, width: int, head: int, budget: int, tol: float
) -> None:
    """A pass over the value width (a reduction along it, cut) runs flash attention in
    its keys' tiles of 256; the scores ``q @ k.T`` (float16: the loops', not BLAS's)
    came from the step before, whose accumulator held the last key tile only, read
    directly or through ``* 0.125``: 2.4 and 0.1 off (found by fuzzing).  Such a plan
    now takes the value width whole."""
    pytest.importorskip("llvmlite")
    rng = np.random.default_rng(1)
    q = (rng.standard_normal((rows, head)) * 0.5).astype(np.float16)
    k = rng.standard_normal((300, head)).astype(np.float16)
    v = (rng.standard_normal((300, width)) / np.sqrt(300)).astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TdslBudgetWarning)  # (the loops take it whole)
        fn = JITTensorKernel(target="native", threads=1, memory_budget=budget).compile(
            text, shapes={"q": q.shape, "k": k.shape, "v": v.shape}, dtypes="f16"
        )
    qd, kd, vd = (x.astype(np.float64) for x in (q, k, v))
    s = qd @ kd.T * (0.125 if "0.125" in text else 1)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    o = p / p.sum(axis=1, keepdims=True) @ vd
    want = o.min(axis=1, keepdims=True) if "min" in text else o.sum(axis=1)
    got = np.asarray(fn(q, k, v)).astype(np.float64)
    assert np.abs(got - want).max() <= tol * np.abs(want).max()
