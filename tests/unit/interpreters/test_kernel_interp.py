"""kernel.fused and kernel.tile, interpreted, compute what the un-fused ops compute."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.builder import ImplicitBuilder
from xdsl.dialects.builtin import Float32Type, Float64Type, TensorType
from xdsl.interpreter import Interpreter, OpCounter
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp, dim_map
from tdsl.interpreters.func import FuncFunctions
from tdsl.interpreters.kernel import KernelFunctions
from tdsl.interpreters.tensordsl import TensorDSLFunctions

Array = np.ndarray[Any, Any]
RunMain = Callable[..., tuple[Array, ...]]
Body = Callable[..., Any]
Dims = Sequence[int | None]
ELEMENTS: dict[np.dtype[Any], Attribute] = {
    np.dtype(np.float32): Float32Type(),
    np.dtype(np.float64): Float64Type(),
}


def as_values(built: Any) -> list[SSAValue]:
    """The values a body returns: one value, an op's results, or a sequence of values."""
    if isinstance(built, Operation):
        return list(built.results)
    return [SSAValue.get(v) for v in built] if isinstance(built, Sequence) else [built]


def fused(inputs: Sequence[SSAValue], body: Body, group: str | None = None) -> FusedOp:
    """A kernel.fused over ``inputs`` whose body is ``body`` applied to its block arguments."""
    block = Block(arg_types=[v.type for v in inputs])
    with ImplicitBuilder(block):
        outs = as_values(body(*block.args))
        YieldOp(*outs)
    return FusedOp(inputs, [v.type for v in outs], Region(block), group=group, budget=1000)


def full_tile_type(t: Attribute, dims: Dims, tiles: Sequence[int]) -> TensorType[Attribute]:
    assert isinstance(t, TensorType)
    shape = [e if d is None else min(tiles[d], e) for e, d in zip(t.get_shape(), dims, strict=True)]
    return TensorType(t.get_element_type(), shape)


def tiled(
    inputs: Sequence[SSAValue],
    result_types: Sequence[Attribute],
    body: Body,
    *,
    space: Sequence[int],
    tiles: Sequence[int],
    ins: Sequence[Dims],
    outs: Sequence[Dims],
) -> TileOp:
    """A kernel.tile over ``inputs``: ``body`` computes one full tile from the slices."""
    block = Block(
        arg_types=[full_tile_type(v.type, d, tiles) for v, d in zip(inputs, ins, strict=True)]
    )
    with ImplicitBuilder(block):
        YieldOp(*as_values(body(*block.args)))
    n = len(space)
    return TileOp.planned(
        inputs,
        result_types,
        Region(block),
        space=space,
        tiles=tiles,
        in_maps=[dim_map(n, d) for d in ins],
        out_maps=[dim_map(n, d) for d in outs],
        group="g0",
    )


def result_types_of(body: Body, arrays: Sequence[Array]) -> list[Attribute]:
    """The result types ``body`` has on whole tensors shaped like ``arrays``."""
    block = Block(arg_types=[TensorType(ELEMENTS[a.dtype], a.shape) for a in arrays])
    with ImplicitBuilder(block):
        return [v.type for v in as_values(body(*block.args))]


def rand(*shape: int, seed: int = 0, dtype: Any = np.float32) -> Array:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def assert_same(got: Sequence[Array], want: Sequence[Array]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def epilogue(x: Any, w: Any, b: Any) -> Any:
    return td.ReluOp(td.AddOp(td.MatmulOp(x, w), b))


def np_epilogue(x: Array, w: Array, b: Array) -> Array:
    return np.maximum(x @ w + b, 0)


# -- kernel.fused -------------------------------------------------------------------


def test_fused_equals_unfused(run_main: RunMain) -> None:
    x, w, b = rand(8, 6, seed=1), rand(6, 5, seed=2), rand(5, seed=3)
    want = run_main(epilogue, x, w, b)
    got = run_main(lambda *a: fused(a, epilogue, group="g0"), x, w, b)
    assert_same(got, want)
    assert_same(got, [np_epilogue(x, w, b)])


def test_fused_with_several_results_and_outside_use(run_main: RunMain) -> None:
    x = rand(4, 6)

    def body(a: Any) -> Any:
        r = td.ReluOp(a)
        return (r, td.SumOp(r, 1))

    def main(a: Any) -> Any:
        f = fused([a], body)
        return (f.results[0], td.NegOp(f.results[1]))

    relu, neg_sum = run_main(main, x)
    assert_same([relu, neg_sum], [np.maximum(x, 0), -np.maximum(x, 0).sum(axis=1)])


def test_fused_runs_its_body_once(main_module: Callable[..., Any]) -> None:
    x = rand(4, 4)
    module = main_module([TensorType(Float32Type(), [4, 4])], lambda a: fused([a], td.ExpOp))
    counter = OpCounter()
    interpreter = Interpreter(module, listeners=(counter,))
    for functions in (FuncFunctions(), TensorDSLFunctions(), KernelFunctions()):
        interpreter.register_implementations(functions)
    (got,) = interpreter.call_op("main", (x,))
    np.testing.assert_allclose(got, np.exp(x), rtol=1e-6)
    assert counter.ops["kernel.fused"] == 1 and counter.ops["tensordsl.exp"] == 1


# -- kernel.tile ------------------------------------------------------------------


def run_tiled(
    run_main: RunMain,
    body: Body,
    arrays: Sequence[Array],
    **schedule: Any,
) -> tuple[tuple[Array, ...], tuple[Array, ...]]:
    """(tiled results, un-fused results) of ``body`` on ``arrays``."""
    result_types = result_types_of(body, arrays)
    got = run_main(lambda *a: tiled(a, result_types, body, **schedule), *arrays)
    return got, run_main(body, *arrays)


@pytest.mark.parametrize("tiles", [(4, 5), (10, 5), (3, 2), (1, 1), (16, 16), (10, 4)], ids=str)
def test_tiled_matmul_epilogue_with_remainder_tiles(
    run_main: RunMain, tiles: tuple[int, int]
) -> None:
    x, w, b = rand(10, 6, seed=1), rand(6, 5, seed=2), rand(5, seed=3)
    got, unfused = run_tiled(
        run_main,
        epilogue,
        [x, w, b],
        space=[10, 5, 6],
        tiles=[*tiles, 6],
        ins=[(0, 2), (2, 1), (1,)],
        outs=[(0, 1)],
    )
    assert_same(got, unfused)
    assert_same(got, [np_epilogue(x, w, b)])


@pytest.mark.parametrize("k_tile", [1, 4, 5])
def test_tiled_matmul_accumulates_over_its_contraction(run_main: RunMain, k_tile: int) -> None:
    x, w, b = rand(10, 6, seed=1), rand(6, 5, seed=2), rand(5, seed=3)
    got, unfused = run_tiled(
        run_main,
        epilogue,
        [x, w, b],
        space=[10, 5, 6],
        tiles=[4, 5, k_tile],
        ins=[(0, 2), (2, 1), (1,)],
        outs=[(0, 1)],
    )
    assert_same(got, unfused)
    assert_same(got, [np_epilogue(x, w, b)])


def test_tiled_row_softmax(run_main: RunMain) -> None:
    x = rand(7, 5)
    got, unfused = run_tiled(
        run_main,
        lambda a: td.SoftmaxOp(a),
        [x],
        space=[7, 5],
        tiles=[3, 5],
        ins=[(0, 1)],
        outs=[(0, 1)],
    )
    assert_same(got, unfused)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    assert_same(got, [e / e.sum(axis=1, keepdims=True)])


@pytest.mark.parametrize("b_shape,b_dims", [((1, 4), (None, 1)), ((), ()), ((6, 1), (0, None))])
def test_tiled_broadcast_maps(
    run_main: RunMain,
    b_shape: tuple[int, ...],
    b_dims: Dims,
) -> None:
    x, b = rand(6, 4, seed=1), rand(*b_shape, seed=2)
    got, unfused = run_tiled(
        run_main,
        lambda a, c: td.MulOp(a, c),
        [x, b],
        space=[6, 4],
        tiles=[4, 3],
        ins=[(0, 1), b_dims],
        outs=[(0, 1)],
    )
    assert_same(got, unfused)
    assert_same(got, [x * b])


def test_tiled_reduction_and_two_results(run_main: RunMain) -> None:
    x = rand(7, 5)

    def body(a: Any) -> Any:
        r = td.ReluOp(a)
        return (r, td.SumOp(r, 1, True), td.MaxOp(a, -1))

    got, unfused = run_tiled(
        run_main,
        body,
        [x],
        space=[7, 5],
        tiles=[2, 5],
        ins=[(0, 1)],
        outs=[(0, 1), (0, None), (0,)],
    )
    assert_same(got, unfused)
    r = np.maximum(x, 0)
    assert_same(got, [r, r.sum(axis=1, keepdims=True), x.max(axis=1)])


@pytest.mark.parametrize("tiles", [(2, 3), (7, 2), (1, 1)], ids=str)
def test_tiled_reduction_dims_accumulate_in_passes(
    run_main: RunMain, tiles: tuple[int, int]
) -> None:
    x = rand(7, 5)

    def body(a: Any) -> Any:  # mean along the tiled rows, then a second pass subtracts it
        m = td.MeanOp(a, 0, True)
        d = td.SubOp(a, m)
        return (d, td.SumOp(td.MulOp(d, d), 0))

    got, unfused = run_tiled(
        run_main,
        body,
        [x],
        space=[7, 5],
        tiles=list(tiles),
        ins=[(0, 1)],
        outs=[(0, 1), (1,)],
    )
    assert_same(got, unfused)
    d = x - x.mean(axis=0, keepdims=True)
    assert_same(got, [d, (d * d).sum(axis=0)])


def test_tiled_batched_matmul(run_main: RunMain) -> None:
    x, w = rand(3, 5, 4, seed=1), rand(3, 4, 2, seed=2)
    got, unfused = run_tiled(
        run_main,
        lambda a, c: td.MatmulOp(a, c),
        [x, w],
        space=[3, 5, 2, 4],
        tiles=[2, 2, 2, 3],
        ins=[(0, 1, 3), (0, 3, 2)],
        outs=[(0, 1, 2)],
    )
    assert_same(got, unfused)
    assert_same(got, [x @ w])


def test_tiled_zero_extent_still_writes_results_that_do_not_follow_it(run_main: RunMain) -> None:
    x, b = rand(0, 4, seed=1), rand(4, seed=2)
    got, unfused = run_tiled(
        run_main,
        lambda a, c: (td.AddOp(a, c), td.ReluOp(c)),
        [x, b],
        space=[0, 4],
        tiles=[2, 4],
        ins=[(0, 1), (1,)],
        outs=[(0, 1), (1,)],
    )
    assert_same(got, unfused)
    assert_same(got, [x + b, np.maximum(b, 0)])


def test_tiled_0d_space(run_main: RunMain) -> None:
    x, y = np.array(2.0, np.float64), np.array(3.0, np.float64)
    got, unfused = run_tiled(
        run_main,
        lambda a, c: td.SubOp(a, c),
        [x, y],
        space=[],
        tiles=[],
        ins=[(), ()],
        outs=[()],
    )
    assert_same(got, unfused)
    assert_same(got, [np.asarray(x - y)])


def test_tile_body_yielding_a_value_not_following_its_map_is_refused(run_main: RunMain) -> None:
    x = rand(5, 2)

    def main(a: Any) -> Any:
        def body(_: Any) -> Any:  # a constant is the same for every tile: it cannot fill them
            return td.ConstantOp.splat(0.0, td.element_type(a), (4, 2))

        return tiled([a], [a.type], body, space=[5, 2], tiles=[4, 2], ins=[(0, 1)], outs=[(0, 1)])

    with pytest.raises(VerifyException, match=r"result #0 map .* does not follow the dims"):
        run_main(main, x)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(0, 9),
    cols=st.integers(2, 6),
    inner=st.integers(2, 4),
    row_tile=st.integers(1, 10),
    col_tile=st.integers(1, 7),
    k_tile=st.integers(1, 5),
)
def test_tiled_epilogue_property(
    run_main: RunMain, rows: int, cols: int, inner: int, row_tile: int, col_tile: int, k_tile: int
) -> None:
    x, w, b = rand(rows, inner, seed=1), rand(inner, cols, seed=2), rand(cols, seed=3)
    got, unfused = run_tiled(
        run_main,
        epilogue,
        [x, w, b],
        space=[rows, cols, inner],
        tiles=[row_tile, col_tile, k_tile],
        ins=[(0, 2), (2, 1), (1,)],
        outs=[(0, 1)],
    )
    assert_same(got, unfused)
    assert_same(got, [np_epilogue(x, w, b)])


def test_mean_over_an_empty_axis_on_a_remainder_tile() -> None:
    # The nan result takes the tile's shape, not the op's full-tile type.
    from tdsl.frontend import to_tensordsl
    from tdsl.interpreters.run import run_function
    from tdsl.transforms.fuse import fuse
    from tdsl.transforms.tile import tile

    tiled = tile(fuse(to_tensordsl("mean(A, axis=1)", shapes={"A": (5, 0)})), tile_size=2)
    (got,) = run_function(tiled, "main", np.zeros((5, 0)))
    assert got.shape == (5,) and bool(np.all(np.isnan(got)))
