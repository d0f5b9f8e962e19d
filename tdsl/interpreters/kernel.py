"""Interpreter implementations of the ``kernel`` ops.

``kernel.fused`` runs its body once on whole tensors.  ``kernel.tile`` runs
the schedule of :mod:`tdsl.dialects.kernel_plan` literally: for every tile of
the parallel dims (row-major), its stages once and its passes once per tile of
the tiled reduction dims, each op on the slices its maps select.  An op that
accumulates over a pass computes its partial result on each tile
(``evaluate_state``), merges it into an accumulator that starts at the
identity state (with the combiner's ufunc, or a tuple accumulator's
``scalar_merge`` run on arrays), and is finalized after the pass (``finalize``,
or ``scalar_finalize_state`` on arrays).  A scan
along a tiled dim computes each tile from the running values the tile before
left (``evaluate_scan``), starting from its identity.  Results
are allocated filled with ``nan``, so an element that no tile writes (a bug in
a schedule) shows up in a comparison instead of being left as uninitialized
memory.  Every value a tile computes is a NumPy array of the sizes of that
tile, so remainder tiles run the same ops on smaller slices.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import InterpretationError

from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp
from tdsl.dialects.kernel_plan import Dims, PlanError, iter_tiles
from tdsl.dialects.structured import (
    Reduction,
    Scan,
    element_of,
    fmt_shape,
    is_constant,
    numpy_dtype,
    reduction_of,
    structured,
    tensor_shape,
)
from tdsl.errors import internal_error
from tdsl.interpreters.scalar import ScalarFunction
from tdsl.interpreters.tensordsl import evaluate

Array = np.ndarray[Any, np.dtype[Any]]
Window = Mapping[int, tuple[int, int]]
"""The (start, stop) of the current tile along each looped space dim."""


def _region_name(op: FusedOp | TileOp) -> str:
    return op.name if op.group is None else f"{op.name} {op.group.data}"


def _slice(dims: Dims, window: Window) -> tuple[slice, ...]:
    """The slice of a value running along ``dims`` in the tile ``window``, for NumPy."""
    return tuple(slice(*window[d]) if d is not None and d in window else slice(None) for d in dims)


class _TileRun:
    """One ``kernel.tile`` run on whole operand arrays."""

    def __init__(self, op: TileOp, args: PythonValues) -> None:
        self.op = op
        self.sched = op.schedule()
        self.body = self.sched.body
        block = op.body.block
        self.args: dict[SSAValue, Array] = {
            arg: np.asarray(value) for arg, value in zip(block.args, args, strict=True)
        }
        self.outputs: list[Array] = [
            np.full(tensor_shape(r), np.nan, dtype=numpy_dtype(r.type)) for r in op.outputs
        ]
        self.constants = [c for c in op.body_ops()[0] if is_constant(c)]
        self.staged: dict[SSAValue, Array] = {}
        """The values of staged ops, whole (a pass writes each tile of them, later passes
        read them)."""

    def read(self, value: SSAValue, window: Window, env: Mapping[SSAValue, Array]) -> Array:
        found = env.get(value)
        if found is not None:
            return found
        whole = self.staged.get(value, self.args.get(value))
        if whole is None:
            raise InterpretationError(f"'{self.op.name}': a value is read before it is computed")
        # the trailing Ellipsis keeps 0-d values as 0-d views rather than scalars
        return whole[(*_slice(self.body.dims[value], window), ...)]

    def compute(self, op: Operation, window: Window, env: dict[SSAValue, Array]) -> None:
        args = tuple(self.read(v, window, env) for v in op.operands)
        env.update(zip(op.results, evaluate(op, args), strict=True))

    def write(self, value: SSAValue, window: Window, env: Mapping[SSAValue, Array]) -> None:
        for k, (out, yielded) in enumerate(zip(self.outputs, self.body.outputs, strict=True)):
            if yielded is not value:
                continue
            target = out[(*_slice(self.body.output_dims[k], window), ...)]
            data = np.asarray(self.read(value, window, env))
            if data.shape != target.shape:
                raise InterpretationError(
                    f"'{self.op.name}' tile at {dict(window)} yielded result #{k} of shape "
                    f"{fmt_shape(data.shape)}, but its slice of {self.op.outputs[k].type} has "
                    f"shape {fmt_shape(target.shape)}"
                )
            target[...] = data

    def stage(self, value: SSAValue, window: Window, env: Mapping[SSAValue, Array]) -> None:
        """Keep the tile of a staged ``value`` for the passes after this one."""
        whole = self.staged.get(value)
        if whole is None:
            dims = self.body.dims[value]
            shape = [
                n if d is None else self.body.extents[d]
                for n, d in zip(tensor_shape(value), dims, strict=True)
            ]
            whole = np.full(shape, np.nan, dtype=numpy_dtype(value.type))
            self.staged[value] = whole
        whole[(*_slice(self.body.dims[value], window), ...)] = env[value]

    def run(self) -> PythonValues:
        sched = self.sched
        extents, tiles = self.body.extents, sched.tiles
        for outer in iter_tiles(extents, tiles, sched.parallel_loops):
            env: dict[SSAValue, Array] = {}
            for c in self.constants:
                self.compute(c, outer, env)
                for r in c.results:
                    self.write(r, outer, env)
            for arg in self.args:
                if arg in self.body.outputs:
                    self.write(arg, outer, env)
            for step in sched.steps:
                if not step.is_pass:
                    for op in step.ops:
                        self.compute(op, outer, env)
                        for r in op.results:
                            self.write(r, outer, env)
                    continue
                self.run_pass(step.index, outer, env)
        return tuple(self.outputs)

    def run_pass(self, index: int, outer: Window, env: dict[SSAValue, Array]) -> None:
        sched = self.sched
        step = sched.step(index)
        accs: dict[Operation, tuple[Array, ...] | None] = {op: None for op in step.accumulating}
        carries: dict[Operation, Array | None] = {op: None for op in step.carrying}
        for inner in iter_tiles(self.body.extents, sched.tiles, sched.reduction_loops):
            window = {**outer, **inner}
            local: dict[SSAValue, Array] = dict(env)
            for op in step.ops:
                if op in accs:
                    red = reduction_of(op)
                    partial = red.evaluate_state(
                        *(self.read(v, window, local) for v in op.operands)
                    )
                    accs[op] = _combine(red, accs[op], partial)
                    continue
                if op in carries:  # a scan: this tile starts from the last one's values
                    s = structured(op)
                    if not isinstance(s, Scan):
                        raise internal_error(
                            f"interpreter: '{op.name}' carries a state but is no scan", op=op
                        )
                    args = (self.read(v, window, local) for v in op.operands)
                    value, carries[op] = s.evaluate_scan(carries[op], *args)
                    local[op.results[0]] = value
                    if op not in step.recomputed:
                        self.write(op.results[0], window, local)
                        if op in sched.staged:
                            self.stage(op.results[0], window, local)
                    continue
                self.compute(op, window, local)
                if op not in step.recomputed:
                    for r in op.results:
                        self.write(r, window, local)
                        if op in sched.staged:
                            self.stage(r, window, local)
        for op, acc in accs.items():
            if acc is None:
                raise internal_error(
                    f"interpreter: '{op.name}' accumulated over no tile of its pass", op=op
                )
            with np.errstate(all="ignore"):
                value = _finalize(reduction_of(op), op, acc, sched.count(op))
            (result,) = op.results
            env[result] = np.asarray(value, dtype=numpy_dtype(result.type))
            self.write(result, outer, env)


def _combine(
    s: Reduction, acc: tuple[Array, ...] | None, partial: tuple[Array, ...]
) -> tuple[Array, ...]:
    state = s.accumulator()
    if acc is None:
        acc = tuple(
            np.full(partial[0].shape, x, dtype=dt)
            for x, dt in zip(state.identities, state.dtypes, strict=True)
        )
    combiner = s.combiner()
    with np.errstate(all="ignore"):
        if combiner is not None:
            (a,), (p,) = acc, partial
            return (np.asarray(getattr(np, combiner.ufunc)(a, p), dtype=a.dtype),)
        merged = _merge_function(s)(*acc, *partial)
        return tuple(np.asarray(v, dtype=dt) for v, dt in zip(merged, state.dtypes, strict=True))


@functools.lru_cache(maxsize=64)
def _merge_function(s: Reduction) -> ScalarFunction:
    """A tuple accumulator's ``scalar_merge``, built once per op, run on arrays."""
    state = s.accumulator()
    k = state.size
    elements = [element_of(dt) for dt in state.dtypes]
    return ScalarFunction(
        [*elements, *elements], lambda b, xs: list(s.scalar_merge(b, xs[:k], xs[k:]))
    )


def _finalize(s: Reduction, op: Operation, acc: tuple[Array, ...], count: int) -> Array:
    """The result from the final state: ``finalize`` of one component, or a tuple
    accumulator's ``scalar_finalize_state`` run on the arrays."""
    if len(acc) == 1:
        return s.finalize(acc[0], count)
    state = s.accumulator()
    elements = [element_of(dt) for dt in state.dtypes]
    fin = ScalarFunction(elements, lambda b, xs: [s.scalar_finalize_state(b, xs, count)])
    (value,) = fin(*acc)
    return np.asarray(value, dtype=numpy_dtype(op.results[0].type))


@register_impls
class KernelFunctions(InterpreterFunctions):
    """NumPy implementations of ``kernel.fused``, ``kernel.tile`` and ``kernel.yield``."""

    @impl(FusedOp)
    def run_fused(self, interpreter: Interpreter, op: FusedOp, args: PythonValues) -> PythonValues:
        return interpreter.run_ssacfg_region(op.body, args, _region_name(op))

    @impl(TileOp)
    def run_tile(self, interpreter: Interpreter, op: TileOp, args: PythonValues) -> PythonValues:
        try:
            return _TileRun(op, args).run()
        except PlanError as err:
            raise InterpretationError(f"'{op.name}' cannot run: {err}") from None

    @impl_terminator(YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()


__all__ = ["KernelFunctions"]
