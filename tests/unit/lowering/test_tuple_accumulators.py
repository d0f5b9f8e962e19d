"""Reductions whose accumulator is a tuple, against float64 references: ``logsumexp``
(a running maximum and a sum of exponentials rescaled to it), ``var`` and ``std``
(Welford's count, mean and sum of squared deviations, merged by Chan's formula).

NumPy has no ``logsumexp``; the reference is SciPy's definition computed in float64:
``m + log(sum(exp(x - m)))`` with ``m`` the maximum (0 where it is not finite), so a
row of ``-inf`` (or nothing) gives ``-inf``, one with ``+inf`` gives ``inf`` and one
with ``nan`` gives ``nan``.  Each target is checked against it, whole and tiled along
the reduced axis: the interpreter (from the op's scalar accumulate, merge and
finalize), the NumPy target and the native loops.  ``var`` and ``std`` are checked
against NumPy's own, computed in float64.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from all_targets import TARGETS

from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import TileOp
from tdsl.dialects.structured import checked_decomposition
from tdsl.frontend import to_tensordsl
from tdsl.jit import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason
from tdsl.transforms.fuse import fuse
from tdsl.transforms.tile import tile

run_function = pytest.importorskip("tdsl.interpreters.run").run_function

Array = np.ndarray[Any, Any]

BUDGETS = [64, 10**6]
DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def reference(x: Array, axis: int | None = None, keepdims: bool = False) -> Array:
    """``scipy.special.logsumexp`` in float64."""
    w = x.astype(np.float64)
    with np.errstate(all="ignore"):
        m = np.max(w, axis=axis, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0.0)
        r = np.log(np.sum(np.exp(w - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


def _run(target: str, budget: int, text: str, **arrays: Array) -> Array:
    shapes = {k: v.shape for k, v in arrays.items()}
    dtypes = {k: str(v.dtype).replace("float", "f") for k, v in arrays.items()}
    if target == "interpreter":
        module = tile(fuse(to_tensordsl(text, shapes=shapes, dtypes=dtypes), memory_budget=budget))
        with np.errstate(all="ignore"):
            (got,) = run_function(module, "main", *arrays.values())
        return np.asarray(got)
    jit = JITTensorKernel(target=target, memory_budget=budget, threads=1)
    fn = jit.compile(text, shapes=shapes, dtypes=dtypes)
    with np.errstate(all="ignore"):  # the numpy target warns where NumPy would (var, ddof=n)
        return np.asarray(fn(**arrays))


def _data(shape: tuple[int, ...], dtype: str, seed: int) -> Array:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 4).astype(DTYPES[dtype])


def _assert_close(got: Array, want: Array, dtype: str, n: int) -> None:
    """Within 2 ulp of the float64 reference for f16 (it accumulates in f32 and rounds
    once, as NumPy's f16 ufuncs), and a summation's error for f32/f64."""
    assert got.dtype == np.dtype(DTYPES[dtype]) and got.shape == want.shape
    with np.errstate(over="ignore"):  # the f64 reference may overflow the dtype: inf
        exact = want.astype(DTYPES[dtype])
    assert np.array_equal(np.isnan(got), np.isnan(exact))
    finite = np.isfinite(exact)
    assert np.array_equal(got[~finite & ~np.isnan(exact)], exact[~finite & ~np.isnan(exact)])
    g, w = got[finite].astype(np.float64), want[finite]
    if dtype == "f16":
        ulp = np.spacing(np.abs(exact[finite])).astype(np.float64)
        assert np.all(np.abs(g - w) <= 2 * ulp), np.max(np.abs(g - w) / ulp)
    else:
        eps = float(np.finfo(DTYPES[dtype]).eps)
        assert np.all(np.abs(g - w) <= eps * (4 * np.abs(w) + n)), np.max(np.abs(g - w))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize(
    "shape,axis,keepdims",
    [((6, 300), 1, False), ((300, 5), 0, True), ((3, 7, 40), -2, False), ((500,), None, False)],
)
def test_logsumexp_matches_the_float64_reference(
    target: str,
    budget: int,
    dtype: str,
    shape: tuple[int, ...],
    axis: int | None,
    keepdims: bool,
) -> None:
    x = _data(shape, dtype, seed=len(shape) + budget % 7)
    args = "" if axis is None else f", axis={axis}"
    args += ", keepdims=true" if keepdims else ""
    got = _run(target, budget, f"logsumexp(x{args})", x=x)
    n = x.size if axis is None else shape[axis]
    _assert_close(got, reference(x, axis, keepdims), dtype, n)


def var_reference(
    x: Array, axis: int | None = None, keepdims: bool = False, ddof: float = 0
) -> Array:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "Degrees of freedom <= 0"
        return np.asarray(np.var(x.astype(np.float64), axis=axis, keepdims=keepdims, ddof=ddof))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize(
    "shape,axis,keepdims,ddof",
    [
        ((6, 300), 1, False, 0),
        ((300, 5), 0, True, 1),
        ((3, 7, 40), -2, False, 0),
        ((500,), None, False, 2.5),
    ],
)
def test_var_and_std_match_numpy_in_float64(
    target: str,
    budget: int,
    dtype: str,
    name: str,
    shape: tuple[int, ...],
    axis: int | None,
    keepdims: bool,
    ddof: float,
) -> None:
    x = _data(shape, dtype, seed=len(shape) + budget % 5) + DTYPES[dtype](3)  # a mean far from 0
    args = "" if axis is None else f", axis={axis}"
    args += ", keepdims=true" if keepdims else ""
    args += f", ddof={ddof}" if ddof else ""
    got = _run(target, budget, f"{name}(x{args})", x=x)
    want = var_reference(x, axis, keepdims, ddof)
    if name == "std":
        want = np.sqrt(want)
    n = x.size if axis is None else shape[axis]
    _assert_close(got, want, dtype, n)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", [4, 10**6])
def test_var_of_special_values_and_too_few_elements_is_numpys(target: str, budget: int) -> None:
    x = np.array(
        [
            [1.0, 2.0, np.inf, 4.0],
            [1.0, np.nan, 3.0, 4.0],
            [5.0, 5.0, 5.0, 5.0],
            [1e30, -1e30, 1e30, -1e30],
        ],
        np.float32,
    )
    for text, want in [
        ("var(x, axis=1)", var_reference(x, 1)),
        ("var(x, axis=1, ddof=4)", var_reference(x, 1, ddof=4)),  # n - ddof = 0: inf or nan
        ("std(x, axis=1, ddof=6)", np.sqrt(var_reference(x, 1, ddof=6))),
    ]:
        got = _run(target, budget, text, x=x)
        _assert_close(got, want, "f32", 4)
    empty = np.zeros((3, 0), np.float32)
    np.testing.assert_array_equal(
        _run(target, 10**6, "var(x, axis=1)", x=empty), np.full(3, np.nan, np.float32)
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", [4, 64, 10**6])
def test_special_values_give_scipys_results(target: str, budget: int) -> None:
    inf, nan = np.inf, np.nan
    rows = [
        [-inf] * 8,  # nothing but -inf: -inf
        [1.0, 2.0, inf, 3.0, -inf, 0.0, 1.0, 2.0],  # inf wins over -inf
        [1.0, nan, inf, 3.0, 0.0, 0.0, 1.0, 2.0],  # nan wins over everything
        [inf, inf, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0],  # inf - inf never appears
        [-1000.0, -1000.0, -1001.0, -inf, -1000.0, -1002.0, -1000.0, -1003.0],  # no underflow
        [88.0, 89.0, 90.0, 87.0, 88.5, 89.5, 80.0, 70.0],  # exp would overflow f32
        [-0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0],
        [1e-40, -1e-40, 3e-39, 0.0, 0.0, 0.0, 0.0, 0.0],  # subnormals
    ]
    x = np.array(rows, np.float32)
    want = reference(x, 1)
    got = _run(target, budget, "logsumexp(x, axis=1)", x=x)
    _assert_close(got, want, "f32", 8)
    assert np.isneginf(got[0]) and np.isposinf(got[1]) and np.isnan(got[2])
    assert np.isposinf(got[3])
    # down a column, across tiles of the reduced axis, the same
    got = _run(target, budget, "logsumexp(x, axis=0)", x=np.ascontiguousarray(x.T))
    _assert_close(got, want, "f32", 8)


@pytest.mark.parametrize("target", TARGETS)
def test_reducing_nothing_is_minus_infinity(target: str) -> None:
    x = np.zeros((3, 0), np.float32)
    got = _run(target, 10**6, "logsumexp(x, axis=1)", x=x)
    np.testing.assert_array_equal(got, np.full(3, -np.inf, np.float32))


@pytest.mark.parametrize("budget", [64, 10**6])
def test_it_fuses_with_its_producers_and_consumers_and_tiles_its_axis(budget: int) -> None:
    text = "logsumexp(x * 0.5 + y, axis=1, keepdims=true) - x"
    shapes = {"x": (8, 1000), "y": (1000,)}
    module = tile(fuse(to_tensordsl(text, shapes=shapes), memory_budget=budget))
    tiles = [op for op in module.walk() if isinstance(op, TileOp)]
    assert len(tiles) == 1
    (group,) = tiles
    assert any(isinstance(op, td.LogSumExpOp) for op in group.walk())
    assert sum(b.elements for b in group.scratch_buffers) <= max(budget, 1)
    if budget == 64:
        assert group.iterator_types[1] == "reduction"
        assert group.tiles_value[1] < 1000  # the reduced axis is cut: states merge
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 1000)).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    want = reference(x * np.float32(0.5) + y, 1, True) - x
    for target in ["interpreter", "numpy"] + (
        ["native"] if native_unavailable_reason() is None else []
    ):
        got = _run(target, budget, text, x=x, y=y)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-5)


def test_the_tuple_accumulator_is_the_interface_not_a_special_case() -> None:
    module = to_tensordsl("logsumexp(x, axis=0)", shapes={"x": (4, 5)})
    (op,) = [o for o in module.walk() if isinstance(o, td.LogSumExpOp)]
    state = op.accumulator()
    assert state.size == 2 and state.identities == (-np.inf, 0.0)
    assert op.combiner() is None  # states merge through scalar_merge, not one ufunc


def test_dask_chunks_along_the_reduced_axis_give_the_same_results() -> None:
    """``logsumexp`` combines chunks' partials by its own ``logsumexp``; ``var`` and ``std``
    have no partial ops, so Dask takes their reduced dims whole."""
    da = pytest.importorskip("dask.array")
    x = _data((64, 1000), "f32", seed=11)
    chunked = da.from_array(x, chunks=(16, 250))
    jit = JITTensorKernel(target="numpy")
    text = "logsumexp(x, axis=1) + std(x, axis=1) - var(x, axis=1, ddof=1)"
    want = reference(x, 1) + np.sqrt(var_reference(x, 1)) - var_reference(x, 1, ddof=1)
    got = np.asarray(jit(text, x=chunked))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_the_native_loops_take_logsumexp_as_a_maximum_then_a_sum_of_exponentials() -> None:
    """Where they take its reduced dim whole, the native loops compute ``logsumexp`` as its
    sweeps (:meth:`~tdsl.dialects.tensordsl.LogSumExpOp.decompose_sweeps`): a maximum, then
    a sum LLVM vectorizes.  The one-pass online state (``exp`` and selects on every
    element, one after the other) took 10.6 ms for 256x4096 f32 here, the sweeps 0.46 ms.
    The tile op keeps the op itself (its one pass tiles the reduced dim)."""
    if native_unavailable_reason() is not None:
        pytest.skip(native_unavailable_reason())
    jit = JITTensorKernel(target="native", threads=1)
    k = jit.compile("logsumexp(x, axis=1)", shapes={"x": (16, 512)}, dtypes="f32")
    assert "tensordsl.logsumexp" in k.ir["tiled"]
    loops = k.ir["loops"]
    assert "arith.cmpf oeq" not in loops  # (the online step's "an equal element" test)
    assert loops.count("math.exp") == 1 and loops.count("arith.maximumf") == 2
    assert "fastmath<reassoc>" in loops  # (the sum's accumulator: a reduction to vectorize)
    x = _data((16, 512), "f32", seed=5)
    _assert_close(np.asarray(k(x)), reference(x, 1), "f32", 512)


def test_the_sweeps_of_logsumexp_are_checked_and_only_asked_for() -> None:
    module = to_tensordsl("logsumexp(x, axis=1)", shapes={"x": (4, 5)})
    (op,) = [o for o in module.walk() if isinstance(o, td.LogSumExpOp)]
    assert checked_decomposition(op) is None  # (the planners keep the op)
    ops, value = checked_decomposition(op, sweeps=True) or ([], None)
    names = [o.name for o in ops]
    assert names.count("tensordsl.max") == 2 and names.count("tensordsl.sum") == 1
    assert value is not None and value.type == op.result.type
    for o in ops:  # (built, not inserted: nothing keeps a use of the operand)
        o.erase(safe_erase=False)
    empty = to_tensordsl("logsumexp(x, axis=1)", shapes={"x": (4, 0)})
    (op,) = [o for o in empty.walk() if isinstance(o, td.LogSumExpOp)]
    assert not op.decomposes_in_sweeps() and checked_decomposition(op, sweeps=True) is None


def _f32(seed: int, shape: tuple[int, ...]) -> Array:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _native_within_budget(text: str, arrays: dict[str, Array], budget: int | None) -> Any:
    """``text`` compiled natively (one thread, f32) under ``budget``; the loops breaking
    it (``TdslLoopsBudgetWarning``) is an error."""
    if native_unavailable_reason() is not None:
        pytest.skip(native_unavailable_reason())
    from tdsl.errors import TdslLoopsBudgetWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", TdslLoopsBudgetWarning)
        jit = JITTensorKernel(target="native", memory_budget=budget, threads=1)
        return jit.compile(text, {n: v.shape for n, v in arrays.items()}, "f32")


def test_logsumexp_of_a_matmul_keeps_its_one_pass_within_the_budget() -> None:
    """The sweeps read the operand twice: a matmul's product would be held whole along the
    reduced dim (1,027 elements at budget 1024, a ``TdslLoopsBudgetWarning``; found by
    checking the change).  Its operand computed other than element-wise, ``logsumexp``
    keeps its online state in the loops, and the plan's passes."""
    a, b = _f32(4, (512, 64)), _f32(5, (64, 32))
    k = _native_within_budget("logsumexp(relu(a) @ b, axis=0)", {"a": a, "b": b}, 1024)
    assert "arith.cmpf oeq" in k.ir["loops"]  # (the online step)
    want = reference(np.maximum(a, 0).astype(np.float64) @ b.astype(np.float64), 0)
    np.testing.assert_allclose(np.asarray(k(a, b)), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("budget", [None, 256])
def test_logsumexp_of_a_matmuls_columns_runs_as_sweeps_where_the_plan_holds_them(
    budget: int | None,
) -> None:
    """``logsumexp(x @ w, axis=1)``: the product's tile of rows is in scratch for BLAS, the
    columns whole, so the sweeps read it twice (512x768 by 768x4096, one thread: 38.8 ms
    in one pass, 18.8 ms in sweeps: ``benchmarks/logsumexp.py``).  Where the plan cuts the columns (budget 256), the
    one pass stays: the sweeps would hold whole rows of the product."""
    x, w = _f32(6, (40, 96)), _f32(7, (96, 300))
    k = _native_within_budget("logsumexp(x @ w, axis=1)", {"x": x, "w": w}, budget)
    assert ("arith.cmpf oeq" in k.ir["loops"]) == (budget is not None)
    want = reference(x.astype(np.float64) @ w.astype(np.float64), 1)
    np.testing.assert_allclose(np.asarray(k(x, w)), want, rtol=1e-5, atol=1e-4)
