"""Scans (``cumsum``, ``cumprod``) against NumPy: the interpreter, both targets, tiling.

A scan's axis is a ``scan`` dim: tiled like a reduction dim, each tile starting
from the running values the tile before left in a carry.  Within a tile the
carry enters the first element and the tile accumulates in order, so the
result is NumPy's bit for bit (the same additions in the same order, each
rounded to the result dtype: a float16 ``cumsum`` adds in float16, as NumPy's),
whatever the tiles, on the interpreter, the NumPy target and the native one.
"""

from __future__ import annotations

import math
import re
import time
from typing import Any

import numpy as np
import pytest
from peak_memory import measure_peak, numpy_buffers
from xdsl.dialects.builtin import ModuleOp

from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import TileOp
from tdsl.errors import TdslError
from tdsl.frontend import to_tensordsl
from tdsl.jit import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason
from tdsl.transforms.fuse import fuse
from tdsl.transforms.tile import tile

run_function = pytest.importorskip("tdsl.interpreters.run").run_function

Array = np.ndarray[Any, Any]

TARGETS = [
    "numpy",
    pytest.param(
        "native",
        marks=pytest.mark.skipif(
            native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
        ),
    ),
]
BUDGETS = [64, 10**6]
DTYPES = ["f16", "f32", "f64"]
NUMPY = {"cumsum": np.cumsum, "cumprod": np.cumprod}


def _data(shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> Array:
    """Values near 1 (products neither overflow nor vanish at once), with special values."""
    x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    flat = x.reshape(-1)
    if flat.size >= 40:
        flat[[3, 17, 29]] = [np.nan, np.inf, -np.inf]
        flat[[5, 11]] = [-0.0, 0.0]
    return x.astype(np.dtype({"f16": "float16", "f32": "float32", "f64": "float64"}[dtype]))


def _call(target: str, budget: int, text: str, **arrays: Array) -> Array:
    jit = JITTensorKernel(target=target, memory_budget=budget, threads=1)
    fn = jit.compile(
        text,
        shapes={k: v.shape for k, v in arrays.items()},
        dtypes={k: str(v.dtype).replace("float", "f") for k, v in arrays.items()},
    )
    with np.errstate(all="ignore"):
        return np.asarray(fn(**arrays))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize(
    "shape,axis", [((6, 150), -1), ((150, 6), 0), ((5, 7, 40), 1), ((300,), None), ((), None)]
)
def test_scans_are_numpys_bit_for_bit(
    target: str, budget: int, dtype: str, name: str, shape: tuple[int, ...], axis: int | None
) -> None:
    x = _data(shape, dtype, np.random.default_rng(len(shape) * 7 + budget % 97))
    text = f"{name}(x)" if axis is None else f"{name}(x, axis={axis})"
    got = _call(target, budget, text, x=x)
    with np.errstate(all="ignore"):
        want = NUMPY[name](x, axis=axis)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", BUDGETS)
def test_a_scan_read_broadcast_restarts_for_every_row(target: str, budget: int) -> None:
    # found by the differential test: on native, cumprod(x5) broadcast along the rows
    # of the group carried its running product on from one row to the next
    rng = np.random.default_rng(5)
    x = rng.uniform(0.5, 1.5, (3,)).astype(np.float32)
    y = rng.uniform(0.5, 1.5, (4, 3)).astype(np.float32)
    got = _call(target, budget, "cumprod(x, axis=0) + y", x=x, y=y)
    np.testing.assert_array_equal(got, np.cumprod(x) + y)
    c = rng.uniform(0.5, 1.5, (2, 1)).astype(np.float32)
    z = rng.uniform(0.5, 1.5, (1,)).astype(np.float32)
    text = "where(m, cumprod(c, axis=0), cumprod(z, axis=0))"
    got = _call(target, budget, text, m=np.bool_(False), c=c, z=z)
    np.testing.assert_array_equal(got, np.where(False, np.cumprod(c, axis=0), np.cumprod(z)))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("budget", [None, 8, 64])
def test_the_interpreter_runs_scans_whole_and_tiled(name: str, budget: int | None) -> None:
    x = _data((4, 100), "f32", np.random.default_rng(1))
    # two scans: one goes to scratch, so a small budget cuts the rows
    text = f"{name}(exp(x), axis=1) * cumsum(x, axis=1)"
    module = to_tensordsl(text, shapes={"x": x.shape}, dtypes={"x": "f32"})
    if budget is not None:
        module = tile(fuse(module, memory_budget=budget))
        tiles = [op for op in module.walk() if isinstance(op, TileOp)]
        assert [t.iterator_types[1] for t in tiles] == ["scan"]
        assert tiles[0].tiles_value[1] < 100  # the scan dim is cut
    with np.errstate(all="ignore"):
        (got,) = run_function(module, "main", x)
        want = NUMPY[name](np.exp(x), axis=1) * np.cumsum(x, axis=1)
    np.testing.assert_array_equal(got, want)


def test_overflow_and_special_values_propagate_as_in_numpy() -> None:
    x = np.array([6e4, 6e4, -np.inf, 1.0, np.nan, 2.0], np.float16)
    for target in ("numpy", "native") if native_unavailable_reason() is None else ("numpy",):
        for budget in (2, 10**6):
            with np.errstate(all="ignore"):  # NumPy warns of the overflow
                np.testing.assert_array_equal(_call(target, budget, "cumsum(x)", x=x), np.cumsum(x))
                np.testing.assert_array_equal(
                    _call(target, budget, "cumprod(x)", x=x), np.cumprod(x)
                )
    zero_inf = np.array([0.0, np.inf, 3.0, -0.0], np.float32)
    got = _call("numpy", 2, "cumprod(x)", x=zero_inf)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, np.cumprod(zero_inf))  # 0 * inf is nan
    neg_zero = np.array([-0.0, -0.0], np.float64)
    got = _call("numpy", 1, "cumsum(x)", x=neg_zero)
    assert np.signbit(got).all()  # -0.0 + -0.0 is -0.0: the carry starts at -0.0


def test_float16_adds_in_float16_within_numpys_own_error() -> None:
    """NumPy's float16 ``cumsum`` rounds every partial sum to float16; tdsl does the same
    (its error against a float64 reference is NumPy's own)."""
    x = np.full(4096, 0.1, np.float16)
    got = _call("numpy", 64, "cumsum(x)", x=x)
    np.testing.assert_array_equal(got, np.cumsum(x))
    reference = np.cumsum(x.astype(np.float64))
    ours = np.abs(got.astype(np.float64) - reference).max()
    assert ours == np.abs(np.cumsum(x).astype(np.float64) - reference).max()


def test_booleans_count_in_int64_and_no_axis_scans_the_flattened_tensor() -> None:
    b = np.array([[True, False, True], [True, True, False]])
    x = np.arange(1.0, 7.0).reshape(2, 3)
    for target in ("numpy", "native") if native_unavailable_reason() is None else ("numpy",):
        jit = JITTensorKernel(target=target)
        got = jit("cumsum(b, axis=0)", b=b)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.cumsum(b, axis=0))
        np.testing.assert_array_equal(jit("cumprod(x)", x=x), np.cumprod(x))
    with pytest.raises(TdslError, match="axis 2 is out of range"):
        to_tensordsl("cumsum(x, axis=2)", shapes={"x": (4, 5)})


@pytest.mark.parametrize("budget", BUDGETS)
def test_producers_and_consumers_fuse_into_the_scans_group(budget: int) -> None:
    text = "tanh(cumsum(exp(x) * y, axis=-1)) + cumprod(x, axis=-1) / 2"
    module = to_tensordsl(
        text, shapes={"x": (8, 500), "y": (500,)}, dtypes={"x": "f32", "y": "f32"}
    )
    tiled = tile(fuse(module, memory_budget=budget))
    tiles = [op for op in tiled.walk() if isinstance(op, TileOp)]
    assert len(tiles) == 1
    (group,) = tiles
    assert group.iterator_types == ("parallel", "scan")
    assert sum(b.elements for b in group.scratch_buffers) <= max(budget, 1)
    rng = np.random.default_rng(5)
    x, y = _data((8, 500), "f32", rng), _data((500,), "f32", rng)
    with np.errstate(all="ignore"):
        (got,) = run_function(tiled, "main", x, y)
        want = np.tanh(np.cumsum(np.exp(x) * y, axis=-1)) + np.cumprod(x, axis=-1) / np.float32(2)
    np.testing.assert_array_equal(got, want)


def test_a_scan_after_a_reduction_and_a_reduction_over_a_scan() -> None:
    text = "cumsum(x - max(x, axis=1, keepdims=true), axis=1) + sum(cumprod(x, axis=1), axis=1, keepdims=true)"
    x = _data((3, 200), "f64", np.random.default_rng(9))
    x[~np.isfinite(x)] = 1.0
    want = np.cumsum(x - x.max(1, keepdims=True), 1) + np.cumprod(x, 1).sum(1, keepdims=True)
    for target in ("numpy", "native") if native_unavailable_reason() is None else ("numpy",):
        for budget in BUDGETS:
            np.testing.assert_allclose(_call(target, budget, text, x=x), want, rtol=1e-12)


# ---------------------------------------------------------------------------
# A row of 2**20 elements at a budget of 64: tiled along the scan, linear time
# ---------------------------------------------------------------------------

LONG = 1 << 20
LONG_TEXT = "cumsum(x) * 0.5 + cumsum(exp(x))"
"""Two scans of one row: one is computed into scratch, so the row must be tiled."""


def _long_row() -> Array:
    return np.random.default_rng(3).uniform(-1, 1, LONG).astype(np.float32)


def test_a_long_row_is_tiled_along_the_scan_within_the_budget() -> None:
    module = to_tensordsl(LONG_TEXT, shapes={"x": (LONG,)}, dtypes={"x": "f32"})
    tiled = tile(fuse(module, memory_budget=64))
    tiles = [op for op in tiled.walk() if isinstance(op, TileOp)]
    assert tiles and all(t.iterator_types == ("scan",) for t in tiles)
    for t in tiles:
        assert t.tiles_value[0] <= 64
        assert sum(b.elements for b in t.scratch_buffers) <= 64
    # one carry per scan: a constant number of steps per element, whatever the row
    text = str(tiled)
    assert len(re.findall(r"tensordsl\.cumsum", text)) == 2


@pytest.mark.parametrize("target", TARGETS)
def test_a_long_row_at_budget_64_is_numpys_cumsum(target: str) -> None:
    x = _long_row()
    jit = JITTensorKernel(target=target, memory_budget=64, threads=1)
    fn = jit.compile(LONG_TEXT, shapes={"x": x.shape}, dtypes={"x": "f32"})
    assert all(g.tiles[0] <= 64 for g in fn.groups)
    start = time.perf_counter()
    peak, got = measure_peak(fn, x)
    elapsed = time.perf_counter() - start
    want = np.cumsum(x) * np.float32(0.5) + np.cumsum(np.exp(x))
    # the same additions in the same order as NumPy's (exp may differ in the last bit
    # natively): within the error of a sequential float32 sum
    scale = np.cumsum(np.abs(x).astype(np.float64) + np.exp(x.astype(np.float64)))
    assert np.all(np.abs(got.astype(np.float64) - want) <= 1e-6 * scale + 1e-6)
    if target == "numpy":
        np.testing.assert_array_equal(got, want)
    assert peak - got.nbytes <= 64 * 4 + numpy_buffers(1)
    assert elapsed < 600  # measured once for the record; linearity is the tiling above


def test_scans_on_dask_take_the_scan_dim_whole() -> None:
    da = pytest.importorskip("dask.array")
    x = _data((6, 40), "f64", np.random.default_rng(2))
    chunked = da.from_array(x, chunks=(2, 10))
    jit = JITTensorKernel(target="numpy", memory_budget=64)
    fn = jit.compile("tanh(cumsum(x, axis=1))", shapes={"x": x.shape})
    got = fn(x=chunked)
    assert got.chunks == ((2, 2, 2), (40,))
    np.testing.assert_array_equal(got.compute(), np.tanh(np.cumsum(x, axis=1)))
    fn = jit.compile("cumprod(x, axis=0) + sum(x, axis=1, keepdims=true)", shapes={"x": x.shape})
    with np.errstate(all="ignore"):
        want = np.cumprod(x, axis=0) + x.sum(axis=1, keepdims=True)
        # (the sum adds across chunks in another order than NumPy's pairwise sum)
        np.testing.assert_allclose(fn(x=chunked).compute(), want, rtol=1e-12)


def test_the_scan_ops_round_trip_and_build() -> None:
    module = to_tensordsl("cumsum(x, axis=0) + cumprod(x, axis=-1)", shapes={"x": (3, 4)})
    ops = [op for op in module.walk() if isinstance(op, td.ScanOp)]
    assert [op.name for op in ops] == ["tensordsl.cumsum", "tensordsl.cumprod"]
    assert isinstance(module, ModuleOp)
    assert math.prod(td.tensor_shape(ops[0].result)) == 12


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", BUDGETS)
def test_a_scan_along_an_axis_of_one_restarts_for_every_broadcast_row(
    target: str, budget: int
) -> None:
    # found by the differential test (seed 0): cumprod along an axis of extent 1 is in no
    # space dim, and on native its carry ran on from one row of the broadcast to the next
    rng = np.random.default_rng(0)
    x0 = rng.uniform(0.5, 1.5, (1, 3)).astype(np.float32)
    x1 = rng.uniform(0.5, 1.5, (1, 1, 3)).astype(np.float32)
    x2 = rng.uniform(-2, 2, (2, 1, 3)).astype(np.float32)
    x3 = np.float32(1.5)
    text = "where(greater(cumprod(x0, axis=0), sum(x1, axis=0)), x2, x3)"
    got = _call(target, budget, text, x0=x0, x1=x1, x2=x2, x3=x3)
    want = np.where(np.cumprod(x0, axis=0) > np.sum(x1, axis=0), x2, x3)
    np.testing.assert_array_equal(got, want)
    got = _call(target, budget, "cumsum(x0, axis=0) + x2", x0=x0, x2=x2)
    np.testing.assert_array_equal(got, np.cumsum(x0, axis=0) + x2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", BUDGETS)
def test_a_scan_read_through_an_element_wise_op_restarts_for_every_broadcast_column(
    target: str, budget: int
) -> None:
    # ``greater`` (or ``* 2``) runs along the scan's dims only, but ``where`` (or ``+``)
    # reads it along one more, inside the scan dim: on native the sweep of ``where``
    # computed the scan again and its carry ran on from one column to the next
    rng = np.random.default_rng(1)
    for s0, s2 in (((3, 1), (3, 4)), ((2, 1, 3), (2, 4, 3))):
        x0 = rng.uniform(0.5, 1.5, s0)
        x2 = rng.uniform(-2, 2, s2)
        text = "where(greater(cumprod(x0, axis=0), 1.0), x2, 0.0)"
        want = np.where(np.cumprod(x0, axis=0) > 1.0, x2, 0.0)
        np.testing.assert_array_equal(_call(target, budget, text, x0=x0, x2=x2), want)
        text = "cumsum(x0, axis=0) * 2 + x2"
        want = np.cumsum(x0, axis=0) * 2 + x2
        np.testing.assert_array_equal(_call(target, budget, text, x0=x0, x2=x2), want)


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
@pytest.mark.parametrize(("shape", "axis", "tiles"), [((6, 5), 0, (6, 2)), ((5, 6), 1, (2, 6))])
def test_the_interpreter_scans_a_partial_tile(
    fn: str, shape: tuple[int, int], axis: int, tiles: tuple[int, int]
) -> None:
    """A scan whose dim runs whole, in the last tile of the other dim, which the extent
    leaves narrower (the interpreter reshaped it to a whole tile: NumPy's ValueError;
    found by fuzzing `tdsl-run`)."""
    from tdsl.interpreters.run import run_function

    module = to_tensordsl(f"{fn}(a, axis={axis})", shapes={"a": shape}, dtypes={"a": "f64"})
    tiled = tile(fuse(module), tile_sizes=tiles)
    a = np.random.default_rng(1).standard_normal(shape)
    (got,) = run_function(tiled, "main", a)
    np.testing.assert_array_equal(got, getattr(np, fn)(a, axis=axis))
