"""Generated functions write their results into caller-given arrays: ``f(..., out=(buf,))``."""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import pytest
from numpy_target_ir import const, fused, plain, rand, ttype
from test_numpy_pipeline import CASES, pipeline
from xdsl.ir import SSAValue

from tdsl.backend.numpy.target import emit_numpy, load_numpy
from tdsl.dialects import tensordsl as td
from tdsl.frontend import to_tensordsl
from tdsl.transforms.fuse import fuse
from tdsl.transforms.tile import tile


def strided_like(a: np.ndarray) -> np.ndarray:
    """An uninitialized non-contiguous view with the shape and dtype of ``a`` (0-d: a 0-d array)."""
    if a.ndim == 0:
        return np.full((), np.nan, a.dtype)
    base = np.full((*a.shape[:-1], 2 * a.shape[-1] + 1), np.nan, a.dtype)
    view = base[..., 1::2]
    assert view.shape == a.shape and (a.size <= 1 or not view.flags.c_contiguous)
    return view


def call_with_out(fn: Any, args: list[np.ndarray], outs: tuple[np.ndarray, ...]) -> None:
    """``fn(*args, out=outs)`` returns exactly the out arrays, in order."""
    got = fn(*args, out=outs)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(outs)
    assert all(g is o for g, o in zip(got, outs, strict=True))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("budget", [64, 1000, 1_000_000])
@pytest.mark.parametrize(("expr", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_results_go_into_the_given_arrays(
    expr: str, shapes: dict[str, tuple[int, ...]], budget: int, threads: int
) -> None:
    source = emit_numpy(pipeline(expr, shapes, np.float32, budget), threads=threads)
    fn = load_numpy(source)["main"]
    args = [rand(shape, np.float32, i) for i, shape in enumerate(shapes.values())]
    want = fn(*args)
    for make in (np.empty_like, strided_like):
        out = make(want)
        call_with_out(fn, args, (out,))
        np.testing.assert_array_equal(out, want)
    # a group computes each result straight into its out array: nothing is copied in
    assert "np.copyto(out[" not in source


def test_arguments_views_constants_and_repeats_are_copied_in() -> None:
    def body(a: SSAValue, b: SSAValue) -> list[SSAValue]:
        s = td.AddOp(a, b).result
        t = td.TransposeOp(a).result
        return [a, s, s, t, const(2.0), td.ConstantOp.splat(1.0, td.element_type(a), (2,)).result]

    t = ttype((2, 3))
    x, y = rand((2, 3), np.float32, 3), rand((2, 3), np.float32, 4)
    want = [x, x + y, x + y, x.T, np.float32(2.0), np.ones(2, np.float32)]
    for build in (plain, fused):
        fn = load_numpy(emit_numpy(build([t, t], body)))["main"]
        outs = tuple(strided_like(np.asarray(w)) for w in want)
        call_with_out(fn, [x, y], outs)
        for got, expected in zip(outs, want, strict=True):
            assert got.dtype == np.float32
            np.testing.assert_array_equal(got, expected)
        assert not any(np.shares_memory(o, v) for o in outs for v in (x, y))


def test_several_results_from_one_tiled_group() -> None:
    program = "def k(x: f64[300, 40], c: f64[40]):\n    h = relu(x) + c\n    return softmax(h), h\n"
    tiled_module = tile(fuse(to_tensordsl(program), memory_budget=2000))
    fn = load_numpy(emit_numpy(tiled_module, threads=2))["k"]
    x, c = rand((300, 40), np.float64, 0), rand((40,), np.float64, 1)
    first, second = fn(x, c)
    outs = (strided_like(first), np.empty_like(second))
    call_with_out(fn, [x, c], outs)
    np.testing.assert_array_equal(outs[0], first)
    np.testing.assert_array_equal(outs[1], second)


def test_out_saves_the_result_allocation() -> None:
    shape = (512, 512)
    module = pipeline("relu(A) * B - A", {"A": shape, "B": shape}, np.float64, 100_000)
    fn = load_numpy(emit_numpy(module))["main"]
    a, b = rand(shape, np.float64, 0), rand(shape, np.float64, 1)
    out = np.empty(shape)
    fn(a, b, out=(out,))  # warm up

    def peak(call: Any) -> int:
        tracemalloc.start()
        try:
            call()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    fresh = peak(lambda: fn(a, b))
    given = peak(lambda: fn(a, b, out=(out,)))
    assert fresh >= out.nbytes
    assert given < out.nbytes // 4, (fresh, given)
    np.testing.assert_array_equal(out, np.maximum(a, 0) * b - a)


def test_threads_write_their_tiles_into_the_given_array() -> None:
    shape = (1024, 1024)
    shapes = {"x": shape, "w": shape, "b": (1024,), "y": shape}
    module = pipeline("relu(x @ w + b) * y", shapes, np.float32, 1_000_000)
    source = emit_numpy(module, threads=2)
    assert "_parallel(" in source
    fn = load_numpy(source)["main"]
    args = [rand(s, np.float32, i) for i, s in enumerate([shape, shape, (1024,), shape])]
    want = fn(*args)
    out = strided_like(want)
    call_with_out(fn, args, (out,))
    np.testing.assert_array_equal(out, want)
