"""Helpers of the numpy target tests: hand-built tensordsl / kernel IR, inputs, and checks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue

from tdsl.backend.numpy.target import emit_numpy, load_numpy
from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp, dim_map

Body = Callable[..., Sequence[SSAValue] | SSAValue]

ELEMENT = {
    np.dtype(np.float16): Float16Type(),
    np.dtype(np.float32): Float32Type(),
    np.dtype(np.float64): Float64Type(),
}


def ttype(
    shape: Sequence[int], dtype: type | np.dtype[np.floating] = np.float32
) -> TensorType[Attribute]:
    return TensorType(ELEMENT[np.dtype(dtype)], list(shape))


def _results(values: Sequence[SSAValue] | SSAValue) -> list[SSAValue]:
    return [values] if isinstance(values, SSAValue) else list(values)


def _result_types(arg_types: Sequence[Attribute], body: Body) -> list[Attribute]:
    block = Block(arg_types=list(arg_types))
    with ImplicitBuilder(block) as args:
        results = _results(body(*args))
    return [r.type for r in results]


def _module(f: func.FuncOp) -> ModuleOp:
    module = ModuleOp([f])
    module.verify()
    return module


def plain(arg_types: Sequence[Attribute], body: Body, name: str = "main") -> ModuleOp:
    """A func.func whose body is straight-line tensordsl ops."""
    result_types = _result_types(arg_types, body)
    f = func.FuncOp(name, (list(arg_types), result_types))
    with ImplicitBuilder(f.body) as args:
        func.ReturnOp(*_results(body(*args)))
    return _module(f)


def fused(
    arg_types: Sequence[Attribute], body: Body, name: str = "main", group: str = "g0"
) -> ModuleOp:
    """A func.func running ``body`` as one kernel.fused group."""
    result_types = _result_types(arg_types, body)
    f = func.FuncOp(name, (list(arg_types), result_types))
    with ImplicitBuilder(f.body) as args:
        block = Block(arg_types=list(arg_types))
        with ImplicitBuilder(block) as bargs:
            YieldOp(*_results(body(*bargs)))
        op = FusedOp(list(args), result_types, Region(block), group=group, budget=1_000_000)
        func.ReturnOp(*op.results)
    return _module(f)


def _full_tile(t: Attribute, dims: Sequence[int | None], tiles: Sequence[int]) -> Attribute:
    assert isinstance(t, TensorType)
    shape = [n if d is None else min(tiles[d], n) for n, d in zip(t.get_shape(), dims, strict=True)]
    return TensorType(t.get_element_type(), shape)


def tiled(
    arg_types: Sequence[Attribute],
    body: Body,
    *,
    space: Sequence[int],
    tiles: Sequence[int],
    in_dims: Sequence[Sequence[int | None]],
    out_dims: Sequence[Sequence[int | None]],
    name: str = "main",
    group: str = "g0",
) -> ModuleOp:
    """A func.func running ``body`` as one kernel.tile group (iterators and scratch as
    ``tdsl-tile`` would record them)."""
    result_types = _result_types(arg_types, body)
    f = func.FuncOp(name, (list(arg_types), result_types))
    with ImplicitBuilder(f.body) as args:
        tile_args = [_full_tile(t, d, tiles) for t, d in zip(arg_types, in_dims, strict=True)]
        block = Block(arg_types=tile_args)
        with ImplicitBuilder(block) as bargs:
            YieldOp(*_results(body(*bargs)))
        rank = len(space)
        op = TileOp.planned(
            list(args),
            result_types,
            Region(block),
            space=space,
            tiles=tiles,
            in_maps=[dim_map(rank, d) for d in in_dims],
            out_maps=[dim_map(rank, d) for d in out_dims],
            group=group,
        )
        func.ReturnOp(*op.results)
    return _module(f)


def const(value: float, dtype: type = np.float32) -> SSAValue:
    """A 0-d splat constant (built inside an ImplicitBuilder)."""
    return td.ConstantOp.splat(value, ELEMENT[np.dtype(dtype)]).result


DTYPES = [np.float16, np.float32, np.float64]
RTOL = {np.float16: 1e-2, np.float32: 1e-4, np.float64: 1e-9}


def run(module: ModuleOp, *arrays: np.ndarray, threads: int = 1, name: str = "main") -> Any:
    """Emit, load and call ``name``; check that the inputs were not written."""
    fn = load_numpy(emit_numpy(module, threads))[name]
    copies = [a.copy() for a in arrays]
    out = fn(*arrays)
    for a, c in zip(arrays, copies, strict=True):
        np.testing.assert_array_equal(a, c)  # inputs are never written
    return out


def check(got: Any, want: Any, dtype: Any) -> None:
    """Same dtypes, shapes and values (to the dtype's tolerance); every result a fresh array."""
    got_t = got if isinstance(got, tuple) else (got,)
    want_t = want if isinstance(want, tuple) else (want,)
    assert len(got_t) == len(want_t)
    for g, w in zip(got_t, want_t, strict=True):
        w = np.asarray(w)
        assert isinstance(g, np.ndarray)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape
        assert g.flags.owndata  # a fresh array
        atol = 1e-3 if dtype == np.float16 else 1e-12
        np.testing.assert_allclose(g, w, rtol=RTOL[dtype], atol=atol)


def rand(
    shape: Sequence[int], dtype: Any, seed: int = 0, low: float = -2, high: float = 2
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, size=tuple(shape)).astype(dtype)


def sigmoid_ref(x: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def softmax_ref(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
