"""Tiled groups through the numpy target: remainders, tiny tiles, threads, empty tensors, memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_target_ir import check, const, fused, plain, rand, softmax_ref, tiled, ttype
from peak_memory import measure_peak, numpy_buffers
from xdsl.ir import SSAValue

from tdsl.backend.numpy import blocking
from tdsl.backend.numpy.target import emit_numpy, load_numpy
from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import TileOp


def ew_body(a: SSAValue, b: SSAValue, c: SSAValue, d: SSAValue) -> SSAValue:
    """relu(a) + b * c - d."""
    return td.SubOp(td.AddOp(td.ReluOp(a), td.MulOp(b, c)), d).result


def ew_ref(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.maximum(a, 0) + b * c - d


def ew_module(rows: int, cols: int, tiles: Sequence[int], dtype: Any = np.float32) -> Any:
    t = ttype((rows, cols), dtype)
    return tiled(
        [t] * 4,
        ew_body,
        space=[rows, cols],
        tiles=tiles,
        in_dims=[(0, 1)] * 4,
        out_dims=[(0, 1)],
    )


def recorded_scratch(module: Any) -> int:
    """The scratch the module's kernel.tile records (elements)."""
    (op,) = [o for o in module.walk() if isinstance(o, TileOp)]
    return op.scratch_value


def call(module: Any, *arrays: np.ndarray, threads: int = 1) -> Any:
    fn = load_numpy(emit_numpy(module, threads))["main"]
    copies = [a.copy() for a in arrays]
    out = fn(*arrays)
    for a, c in zip(arrays, copies, strict=True):
        np.testing.assert_array_equal(a, c)
    return out


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("tiles", [(1, 9), (3, 9), (4, 2), (13, 9), (5, 4), (100, 100)])
def test_elementwise_remainder_tiles(dtype: Any, tiles: tuple[int, int]) -> None:
    arrays = [rand((13, 9), dtype, seed) for seed in range(4)]
    check(call(ew_module(13, 9, tiles, dtype), *arrays), ew_ref(*arrays), dtype)


def test_single_tile_is_straight_line() -> None:
    source = emit_numpy(ew_module(64, 64, (64, 64)))
    assert "for " not in source and "def _" not in source
    assert "np.maximum(arg0, _Z0, out=v0)" in source


def test_cache_blocking_cuts_big_tiles() -> None:
    source = emit_numpy(ew_module(512, 2048, (512, 2048)))
    rows = blocking.CACHE_BLOCK_BYTES // (2048 * 4)
    assert f"for s0 in range(lo, hi, {rows}):" in source
    arrays = [rand((512, 2048), np.float32, seed) for seed in range(4)]
    check(call(ew_module(512, 2048, (512, 2048)), *arrays), ew_ref(*arrays), np.float32)


@pytest.mark.parametrize("tiles", [(2, 9), (5, 9), (16, 9)])
def test_threads_split_tiles(monkeypatch: pytest.MonkeyPatch, tiles: tuple[int, int]) -> None:
    monkeypatch.setattr(blocking, "THREAD_MIN_BYTES", 0)
    module = ew_module(13, 9, tiles)
    source = emit_numpy(module, threads=2)
    assert "_parallel(" in source
    arrays = [rand((13, 9), np.float32, seed) for seed in range(4)]
    for _ in range(3):  # the pool is created once and reused
        check(call(module, *arrays, threads=2), ew_ref(*arrays), np.float32)


def test_threads_only_for_enough_work() -> None:
    assert "_parallel(" not in emit_numpy(ew_module(64, 64, (8, 64)), threads=2)
    big = ew_module(1024, 512, (1024, 512))
    source = emit_numpy(big, threads=2)
    assert "_parallel(" in source
    arrays = [rand((1024, 512), np.float32, seed) for seed in range(4)]
    check(call(big, *arrays, threads=2), ew_ref(*arrays), np.float32)


def mlp_module(m: int, k: int, n: int, rows: int, prologue: bool = False) -> Any:
    def body(x: SSAValue, w: SSAValue, b: SSAValue) -> SSAValue:
        lhs = td.ReluOp(x).result if prologue else x
        return td.ReluOp(td.AddOp(td.MatmulOp(lhs, w), b)).result

    return tiled(
        [ttype((m, k)), ttype((k, n)), ttype((n,))],
        body,
        space=[m, n, k],
        tiles=[rows, n, k],
        in_dims=[(0, 2), (2, 1), (1,)],
        out_dims=[(0, 1)],
    )


def mlp_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, prologue: bool = False) -> np.ndarray:
    return np.maximum((np.maximum(x, 0) if prologue else x) @ w + b, 0)


@pytest.mark.parametrize("threads", [1, 2])
def test_matmul_is_hoisted_out_of_the_tile_loop(
    monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    monkeypatch.setattr(blocking, "THREAD_MIN_BYTES", 0)
    module = mlp_module(37, 6, 5, 4)
    source = emit_numpy(module, threads)
    main = source[source.index("def main") :]
    assert "np.matmul(arg0, arg1, out=v0)" in main  # one BLAS call on the whole matrix
    assert ("_parallel(" in main) == (threads == 2)
    x, w, b = rand((37, 6), np.float32, 1), rand((6, 5), np.float32, 2), rand((5,), np.float32, 3)
    check(call(module, x, w, b, threads=threads), mlp_ref(x, w, b), np.float32)


def test_matmul_with_prologue_stays_in_the_loop_single_threaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(blocking, "THREAD_MIN_BYTES", 0)
    module = mlp_module(37, 6, 5, 4, prologue=True)
    source = emit_numpy(module, threads=2)
    assert "_parallel(" not in source and "keeps BLAS threads" in source
    loop = source[source.index("def _main_g0") : source.index("def main")]
    assert "np.matmul(" in loop
    x, w, b = rand((37, 6), np.float32, 1), rand((6, 5), np.float32, 2), rand((5,), np.float32, 3)
    check(call(module, x, w, b, threads=2), mlp_ref(x, w, b, True), np.float32)


def softmax_rows_module(rows: int, cols: int, tile: int) -> Any:
    return tiled(
        [ttype((rows, cols))],
        lambda a: td.SoftmaxOp(td.MulOp(a, const(2.0))).result,
        space=[rows, cols],
        tiles=[tile, cols],
        in_dims=[(0, 1)],
        out_dims=[(0, 1)],
    )


def test_softmax_tiled_over_rows() -> None:
    x = rand((23, 17), np.float32, 4, -10, 10)
    check(call(softmax_rows_module(23, 17, 5), x), softmax_ref(2 * x), np.float32)


def test_reduction_dim_is_not_cut() -> None:
    # softmax over axis 0 tiled along d1: its rows (d0) are never cut, even for cache blocking
    n, m = 4096, 3
    module = tiled(
        [ttype((n, m))],
        lambda a: td.SoftmaxOp(a, 0).result,
        space=[n, m],
        tiles=[n, 1],
        in_dims=[(0, 1)],
        out_dims=[(0, 1)],
    )
    source = emit_numpy(module)
    assert "range(0, 4096" not in source and "range(lo, hi, 1)" in source
    x = rand((n, m), np.float32, 5)
    check(call(module, x), softmax_ref(x, 0), np.float32)


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0)])
def test_empty_tensors(shape: tuple[int, int]) -> None:
    arrays = [np.zeros(shape, np.float32) for _ in range(4)]
    for tiles in ((2, 2), (max(1, shape[0]), max(1, shape[1]))):
        out = call(ew_module(*shape, tiles), *arrays)
        check(out, ew_ref(*arrays), np.float32)
    t = ttype(shape)

    def body(a: SSAValue) -> list[SSAValue]:
        return [td.SoftmaxOp(a).result, td.SumOp(a, 1).result, td.SigmoidOp(a).result]

    x = np.zeros(shape, np.float32)
    for build in (plain, fused):
        got = call(build([t], body), x)
        check(got, (np.empty(shape, np.float32), x.sum(axis=1), x), np.float32)


def test_zero_d_and_one_d() -> None:
    s, v = ttype(()), ttype((5,))

    def body(a: SSAValue, b: SSAValue) -> list[SSAValue]:
        r = td.AddOp(td.SigmoidOp(a), td.ReluOp(b))
        return [
            td.SoftmaxOp(r).result,
            td.MeanOp(r).result,
            td.MulOp(a, a).result,
            td.MatmulOp(b, b).result,
        ]

    a, b = np.array(0.3, np.float32), rand((5,), np.float32, 6)
    r = 1 / (1 + np.exp(-a)) + np.maximum(b, 0)
    want = (softmax_ref(r), np.mean(r), a * a, b @ b)
    for build in (plain, fused):
        check(call(build([s, v], body), a, b), want, np.float32)
    one_d = tiled(
        [v, v],
        lambda x, y: td.TanhOp(td.SubOp(x, y)).result,
        space=[5],
        tiles=[2],
        in_dims=[(0,), (0,)],
        out_dims=[(0,)],
    )
    check(call(one_d, b, b[::-1].copy()), np.tanh(b - b[::-1]), np.float32)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("tile_rows", [1, 8, 128])
def test_peak_memory_within_recorded_scratch(threads: int, tile_rows: int) -> None:
    rows, cols = 256, 512
    module = ew_module(rows, cols, (tile_rows, cols))
    scratch = recorded_scratch(module)
    assert scratch == tile_rows * cols  # b * c: the one intermediate
    fn = load_numpy(emit_numpy(module, threads))["main"]
    arrays = [rand((rows, cols), np.float32, seed) for seed in range(4)]
    peak, out = measure_peak(fn, *arrays)
    np.testing.assert_allclose(out, ew_ref(*arrays), rtol=1e-6)
    eager_extra = 3 * out.nbytes  # what eager NumPy allocates beyond its output
    assert peak <= out.nbytes + scratch * 4 + numpy_buffers(threads) < out.nbytes + eager_extra


@pytest.mark.parametrize("threads", [1, 2])
def test_peak_memory_softmax_and_matmul(threads: int) -> None:
    rows, cols = 512, 256
    module = softmax_rows_module(rows, cols, 64)
    scratch = recorded_scratch(module)
    assert scratch == 64  # the row statistics: x * 2 is computed in the output, softmax in place
    fn = load_numpy(emit_numpy(module, threads))["main"]
    x = rand((rows, cols), np.float32, 7)
    peak, out = measure_peak(fn, x)
    np.testing.assert_allclose(out, softmax_ref(2 * x), rtol=1e-5)
    assert peak <= out.nbytes + scratch * 4 + numpy_buffers(threads)

    fn = load_numpy(emit_numpy(mlp_module(512, 64, 256, 32), threads))["main"]
    x, w, b = (
        rand((512, 64), np.float32, 1),
        rand((64, 256), np.float32, 2),
        rand((256,), np.float32, 3),
    )
    peak, out = measure_peak(fn, x, w, b)
    np.testing.assert_allclose(out, mlp_ref(x, w, b), rtol=1e-4, atol=1e-5)
    assert peak <= out.nbytes + numpy_buffers(threads)  # the epilogue runs in place in the output


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(0, 19),
    cols=st.integers(1, 9),
    tile=st.integers(1, 8),
    dtype=st.sampled_from([np.float32, np.float64]),
    threads=st.sampled_from([1, 2]),
)
def test_tiled_matches_numpy(rows: int, cols: int, tile: int, dtype: Any, threads: int) -> None:
    """softmax(relu(a) * b + c) and a row sum, tiled by rows, for any shape and tile."""

    def body(a: SSAValue, b: SSAValue, c: SSAValue) -> list[SSAValue]:
        h = td.AddOp(td.MulOp(td.ReluOp(a), b), c)
        return [td.SoftmaxOp(h).result, td.SumOp(td.MulOp(h, a), 1, True).result]

    module = tiled(
        [ttype((rows, cols), dtype), ttype((cols,), dtype), ttype((rows, 1), dtype)],
        body,
        space=[rows, cols],
        tiles=[tile, cols],
        in_dims=[(0, 1), (1,), (0, None)],
        out_dims=[(0, 1), (0, None)],
    )
    a, b, c = rand((rows, cols), dtype, 1), rand((cols,), dtype, 2), rand((rows, 1), dtype, 3)
    h = np.maximum(a, 0) * b + c
    want = (softmax_ref(h) if rows else h.copy(), np.sum(h * a, axis=1, keepdims=True))
    check(call(module, a, b, c, threads=threads), want, dtype)


def test_matmul_in_the_loop_keeps_the_recorded_tiles() -> None:
    # cache blocking would cut 256-row tiles to a few rows: BLAS calls must stay large
    source = emit_numpy(mlp_module(1024, 64, 2048, 256, prologue=True))
    assert "for s0 in range(lo, hi, 256):" in source and "cache blocking" not in source
    assert "for s0 in range(lo, hi, 32):" in emit_numpy(mlp_module(1024, 64, 2048, 256))


@pytest.mark.parametrize("threads", [1, 2])
def test_a_dim_an_op_does_not_run_along_is_not_cut(
    monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    # One group over (rows of x + s, rows of x in the sum, its reduction): the sum does not
    # run along d0. Cutting d0 (cache blocking, threads) would compute the whole sum again on
    # every tile, and on two threads write `s` from both at once.
    from tdsl.frontend import to_tensordsl
    from tdsl.transforms.fuse import fuse
    from tdsl.transforms.tile import tile

    monkeypatch.setattr(blocking, "THREAD_MIN_BYTES", 0)
    source = "def k(x: f64[300, 300]):\n    s = sum(x, axis=1)\n    return x + s, s\n"
    module = tile(fuse(to_tensordsl(source)))
    (op,) = [o for o in module.walk() if isinstance(o, TileOp)]
    run = blocking.plan_run(op.group_body(), op.tiles_value, op.scratch_value, threads)
    (sum_op,) = [o for o in op.body.block.ops if isinstance(o, td.SumOp)]
    assert 0 not in op.group_body().loop_dims(sum_op)
    assert run.tiles[0] == 300
    x = rand((300, 300), np.float64, 8)
    for _ in range(3):
        y, s = load_numpy(emit_numpy(module, threads))["k"](x)
        np.testing.assert_allclose(s, x.sum(axis=1), rtol=1e-12)
        np.testing.assert_allclose(y, x + x.sum(axis=1), rtol=1e-12)
