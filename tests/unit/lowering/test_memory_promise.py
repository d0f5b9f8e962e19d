"""The memory promise, on random programs: a compiled call allocates, beyond its
outputs, at most the memory budget plus NumPy's own iterator buffers, except the
values the fusion report lists as materialized between groups.

Random DAGs of tensordsl ops (the generator of ``test_fuse_properties``:
element-wise ops with broadcasting and literals, reductions over any axis and
over all axes, softmax along any axis, matmul, transpose, casts), in f32 or
f64, on shapes large enough that a value held whole shows above the slack, go
through ``tdsl-fuse``, ``tdsl-tile`` and the NumPy target under a random budget
from 16 to 10**6 elements, run on one or two threads, and must

* compute what the interpreter computes on the unfused program, and
* allocate during the call (tracemalloc's peak above the memory before it,
  minus the outputs) no more than ``budget * itemsize`` plus
  :func:`peak_memory.numpy_buffers` plus the bytes of each value the fusion
  report lists as materialized between groups (a value the function returns
  lives in its output array and is not counted again).

The design promises more: that only a layout change materializes a value, and
that a tighter budget never allocates more.  A budget refusal breaks both; the
last test pins the smallest such program found (xfail until the planner cuts
groups where the held values are smallest).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from matches_numpy import assert_matches
from peak_memory import measure_peak, numpy_buffers
from test_fuse_properties import random_functions
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, f64
from xdsl.dialects.func import ReturnOp

from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import TileOp
from tdsl.jit import JITTensorKernel
from tdsl.lowering.fuse import fuse, fusion_report
from tdsl.lowering.numpy_emit import blocking
from tdsl.lowering.numpy_target import emit_numpy, load_numpy
from tdsl.lowering.tile import tile

run_function = pytest.importorskip("tdsl.interpreters.run").run_function

Array = np.ndarray[Any, Any]

MAX_ELEMENTS = 1 << 17
"""No value of a program has more elements (512 KiB in f32, 1 MiB in f64): the
slack for NumPy's buffers is 112 KiB to 416 KiB, so a value held whole shows."""


def base_shapes() -> st.SearchStrategy[list[int]]:
    """Base shapes for :func:`random_functions` whose values have at most
    ``MAX_ELEMENTS`` elements (a value has rank at most ``max(2, rank)``)."""

    def of_rank(rank: int) -> st.SearchStrategy[list[int]]:
        largest = math.floor(MAX_ELEMENTS ** (1 / max(2, rank)))
        dims = st.sampled_from([largest, largest // 2, largest // 5, 1])
        return st.lists(dims, min_size=rank, max_size=rank)

    return st.sampled_from([2, 3, 1, 2, 3]).flatmap(of_rank)


class Program:
    """A random module and its arguments; shown as IR text and argument shapes."""

    def __init__(self, module: ModuleOp, arrays: list[Array]) -> None:
        self.module = module
        self.arrays = arrays

    def __repr__(self) -> str:
        shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in self.arrays)
        return f"Program(arguments {shapes}):\n{self.module}"


@st.composite
def programs(draw: st.DrawFn) -> Program:
    element = draw(st.sampled_from([f32, f64]))
    return Program(*draw(random_functions(element, base_shapes(), whole_first=True)))


def widest_itemsize(module: ModuleOp) -> int:
    """The largest element size of any tensor of ``module`` (a cast can widen f32 to f64)."""
    sizes = [
        td.numpy_dtype(v.type).itemsize
        for op in module.walk()
        for v in (*op.results, *op.operands)
        if isinstance(v.type, TensorType)
    ]
    return max(sizes, default=4)


def materialized_bytes(module: ModuleOp, budget: int) -> int:
    """Bytes of the values held whole between groups that the function does not return."""
    (ret,) = [op for op in module.walk() if isinstance(op, ReturnOp)]
    returned = set(ret.operands)
    return sum(
        math.prod(td.tensor_shape(v)) * td.numpy_dtype(v.type).itemsize
        for v in fusion_report(module, budget).materialized
        if v not in returned
    )


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    program=programs(),
    budget=st.one_of(st.integers(16, 256), st.integers(16, 10_000), st.integers(16, 1_000_000)),
    threads=st.sampled_from([1, 2]),
)
def test_a_call_allocates_at_most_the_budget_beyond_its_outputs(
    program: Program, budget: int, threads: int
) -> None:
    module, arrays = program.module, program.arrays
    tiled = tile(fuse(module, budget))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(blocking, "THREAD_MIN_BYTES", 0)  # split small groups over threads too
        fn = load_numpy(emit_numpy(tiled, threads))["main"]
    with np.errstate(all="ignore"):
        want = run_function(module, "main", *arrays)
        peak, got = measure_peak(fn, *arrays)
    results = got if isinstance(got, tuple) else (got,)
    for g, w in zip(results, want, strict=True):
        assert_matches(g, w)

    tiles = [op for op in tiled.walk() if isinstance(op, TileOp)]
    event(f"{len(tiles)} group(s)")
    event(f"largest input 10**{int(math.log10(max(a.size for a in arrays)))}")
    event("passes over a reduction" if any(t.schedule().passes for t in tiles) else "no passes")
    held = materialized_bytes(module, budget)
    event("values materialized between groups" if held else "nothing materialized")
    itemsize = widest_itemsize(module)
    extra = peak - sum(r.nbytes for r in results)
    allowed = budget * itemsize + numpy_buffers(threads, itemsize) + held
    assert extra <= allowed, (
        f"the call allocated {extra} bytes beyond its outputs, more than {allowed}: "
        f"budget {budget} x {itemsize} bytes + NumPy's buffers "
        f"{numpy_buffers(threads, itemsize)} + materialized {held}"
    )


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="a budget refusal materializes a whole value that is no layout change: at budget 16 "
    "the 362x362 f32 `x - mean(x, axis=0)` (524 KB) is held between two groups, the call "
    "allocates ~0.56 MB beyond its output against 64 B + 115 KB of NumPy buffers allowed, "
    "while at budget 4096 it allocates ~0.03 MB (the planner cuts after the subtraction; a "
    "cut after the first mean would hold 362 column means)",
)
def test_a_tighter_budget_never_allocates_more() -> None:
    source = "def k(x: f32[362, 362]):\n    return mean(x - mean(x, axis=0), axis=1)\n"
    x = np.random.default_rng(0).uniform(-2, 2, (362, 362)).astype(np.float32)
    extra: dict[int, int] = {}
    for budget in (16, 4096):
        kernel = JITTensorKernel(memory_budget=budget, threads=1).compile(source)
        peak, out = measure_peak(kernel, x)
        extra[budget] = peak - out.nbytes
    assert extra[16] <= 16 * 4 + numpy_buffers(1), f"{extra[16]} bytes at budget 16"
    assert extra[16] <= extra[4096] + numpy_buffers(1), f"{extra} bytes per budget"
