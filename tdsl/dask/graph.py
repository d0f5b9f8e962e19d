"""Building the Dask graph of a compiled kernel called with Dask arrays.

:func:`call_dask` checks the arguments as the NumPy call path does, reads the
kernel's groups (in order) from its tiled IR, and plans each with
:func:`tdsl.dask.plan.plan_tile` over the chunks of the arrays it reads,
following the plan its ``kernel.tile`` records.
Each :class:`~tdsl.dask.plan.Step` becomes one layer of tasks, one per block
of its grid, each ``run_block(KernelSpec, *blocks)``; each
:class:`~tdsl.dask.plan.Reduction` becomes :func:`dask.array.reduction` over
the partials a step made, whose combine and aggregate steps are tdsl kernels
too.  Inputs are rechunked with Dask's own ``rechunk`` where a group needs
other chunks, NumPy inputs enter through ``da.from_array``, and a result is an
ordinary lazy ``dask.array.Array``.  Layer names start with ``tdsl_`` and the
group (``tdsl_g0``, ``tdsl_g1_pass3``, ``tdsl_g1_pass1_max-aggregate``), which
is how the dashboard and ``key_split`` name the tasks.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Sequence
from typing import Any, cast

import dask.array
import dask.highlevelgraph
import numpy as np
from dask.base import tokenize
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from tdsl.dask.items import Chunks, GroupPlan, Made, Read, Reduction, Step
from tdsl.dask.plan import plan_tile
from tdsl.dask.tasks import KernelSpec, combine_blocks, pass_block, run_block
from tdsl.dialects.kernel import TileOp
from tdsl.dialects.structured import constant_value, numpy_dtype, tensor_shape
from tdsl.dialects.tensordsl import ConcatenateOp, ReshapeOp, SliceOp, TakeOp, check_indices
from tdsl.errors import (
    SourceLocation,
    TdslCallError,
    TdslError,
    internal_error,
    with_source_line,
)
from tdsl.jit.calls import convert_argument
from tdsl.jit.compiled import ELEMENT_NAMES, ArgSpec, CompiledKernel, type_str
from tdsl.jit.compiler import COMPILE_LOCK
from tdsl.jit.options import JitOptions
from tdsl.transforms.locations import op_location

# Dask's annotations are partial: its modules and arrays are handled as Any here.
da: Any = dask.array
HighLevelGraph: Any = dask.highlevelgraph.HighLevelGraph
DaskArray = Any
"""A ``dask.array.Array``."""
Array = np.ndarray[Any, Any]


def chunk_options(kernel: CompiledKernel) -> JitOptions:
    """The options the kernels of ``kernel``'s tasks compile with: its budget and tile cap,
    one thread (the scheduler runs tasks in parallel), and the target the JIT picked for
    it (:attr:`~tdsl.jit.CompiledKernel.target`: ``native`` or ``numpy``, never ``auto``,
    so every chunk runs the code the whole kernel would have run, whatever its size).
    Explicit tile sizes, which name the iteration dims of the whole kernel's groups, are
    not carried over."""
    options = kernel.options
    return JitOptions(options.memory_budget, options.tile_size, (), 1, kernel.target)


def _describe(value: DaskArray) -> str:
    """``a Dask array of f32[4, 8]`` (``?`` for an unknown extent)."""
    dtype = cast(np.dtype[Any], value.dtype)
    name = ELEMENT_NAMES.get(dtype.name, dtype.str) if dtype.isnative else dtype.str
    dims = ", ".join("?" if d != d else str(int(d)) for d in cast(tuple[float, ...], value.shape))
    return f"a Dask array of {name}[{dims}]"


def _check_dask(kernel: CompiledKernel, spec: ArgSpec, value: DaskArray) -> DaskArray:
    where = f"argument `{spec.name}` of kernel `{kernel.name}`"
    if spec.weak:
        raise TdslCallError(f"{where} is a weak scalar: expected {spec.expected}, got a Dask array")
    expected = type_str(spec.dtype, spec.shape)
    if any(d != d for d in cast(tuple[float, ...], value.shape)):
        raise TdslCallError(
            f"{where} has unknown chunk sizes ({_describe(value)}): call "
            "`.compute_chunk_sizes()` first"
        )
    if tuple(value.shape) != spec.shape:
        raise TdslCallError(
            f"{where} has the wrong shape: expected {expected}, got {_describe(value)}"
        )
    if value.dtype != spec.dtype:
        swapped = " (non-native byte order)" if not value.dtype.isnative else ""
        raise TdslCallError(
            f"{where} has the wrong dtype: expected {expected}, got {_describe(value)}{swapped}"
        )
    meta = getattr(value, "_meta", None)
    if isinstance(meta, np.ma.MaskedArray):  # (found when computing: under an inner name)
        raise TdslCallError(
            f"{where} is a Dask array of numpy.ma.MaskedArray blocks: tdsl computes on plain "
            "arrays and would ignore the mask; pass `da.ma.filled(x, fill_value)`"
        )
    sizes = cast(tuple[tuple[int, ...], ...], value.chunks)
    if any(0 in dim for dim, n in zip(sizes, value.shape, strict=True) if n):
        # (empty blocks, which Dask's slicing leaves: a `max` of one has no identity)
        value = value.rechunk(tuple(tuple(c for c in dim if c) or dim for dim in sizes))
    return value


class _Graph:
    """The Dask arrays of a kernel's values, built group by group."""

    def __init__(self, kernel: CompiledKernel) -> None:
        self.kernel = kernel
        self.options = chunk_options(kernel)
        self.env: dict[SSAValue, DaskArray] = {}
        """The Dask array of each value computed or given as one."""
        self.held: dict[SSAValue, Array] = {}
        """NumPy arrays (inputs, constants), chunked where they are read."""
        self.partials: dict[SSAValue, DaskArray] = {}
        self._rechunked: dict[tuple[SSAValue, Chunks], DaskArray] = {}

    # -- values -----------------------------------------------------------------

    def chunks_of(self, value: SSAValue) -> Chunks | None:
        found = self.env.get(value)
        return None if found is None else found.chunks

    def array(self, value: SSAValue, chunks: Chunks) -> DaskArray:
        """``value`` as a Dask array of ``chunks`` (rechunked, or a NumPy array chunked)."""
        key = (value, chunks)
        found = self._rechunked.get(key)
        if found is None:
            if value in self.env:
                found = self.env[value]
                if found.chunks != chunks:
                    found = found.rechunk(chunks)
                if found.chunks != chunks and 0 in found.shape:  # (a rechunk keeps none of
                    # several empty chunks, ((0, 0),) is ((0,),): nothing to read, as many)
                    found = da.from_array(np.empty(found.shape, found.dtype), chunks=chunks)
            else:
                found = da.from_array(self.held[value], chunks=chunks)
            self._rechunked[key] = found
        return found

    def result(self, value: SSAValue) -> DaskArray:
        if value in self.env:
            return self.env[value]
        held = self.held[value]
        return da.from_array(held, chunks=held.shape)

    # -- groups -----------------------------------------------------------------

    def group(self, tile: TileOp) -> GroupPlan:
        with COMPILE_LOCK:  # planning builds IR (copies, kernels' text)
            plan = plan_tile(tile, self.chunks_of)
        for item in plan.items:
            if isinstance(item, Step):
                self.step(item)
            else:
                self.reduction(item)
        return plan

    def step(self, step: Step) -> None:
        spec = KernelSpec(step.source, self.options)
        inputs = [self.array(r.value, r.chunks) for r in step.reads]
        token = tokenize(spec, [a.name for a in inputs], step.grid)
        name = f"tdsl_{step.name}-{token}"
        dims = [d for d, _ in step.grid]
        blocks = [dict(zip(dims, idx, strict=True)) for idx in _grid(step.grid)]

        def args(b: dict[int, int]) -> list[Any]:
            return [(a.name, *_index(r, b)) for a, r in zip(inputs, step.reads, strict=True)]

        if len(step.made) == 1:
            (made,) = step.made
            dsk: dict[Any, Any] = {
                (name, *_index(made, b)): (run_block, spec, *args(b))
                for b in blocks
                if _owns(made, b)
            }
            graph = HighLevelGraph.from_collections(name, dsk, dependencies=inputs)
            self.keep(made, da.Array(graph, name, made.chunks, meta=_meta(made)))
            return
        tuples = {(name, *(b[d] for d in dims)): (run_block, spec, *args(b)) for b in blocks}
        graph = HighLevelGraph.from_collections(name, tuples, dependencies=inputs)
        layer = da.Array(
            graph, name, tuple((1,) * n for _, n in step.grid), meta=np.empty((0,) * len(dims))
        )
        for i, made in enumerate(step.made):
            out = f"tdsl_{step.name}_{i}-{token}"
            picks = {
                (out, *_index(made, b)): (operator.getitem, (name, *(b[d] for d in dims)), i)
                for b in blocks
                if _owns(made, b)
            }
            graph = HighLevelGraph.from_collections(out, picks, dependencies=[layer])
            self.keep(made, da.Array(graph, out, made.chunks, meta=_meta(made)))

    def passed_through(self, tile: TileOp) -> None:
        """The results of ``tile`` that no op of its body computes, which its steps do not
        make: a constant, an input or a value yielded a second time (the others' value)."""
        yielded = list(tile.body.block.last_op.operands)  # type: ignore[union-attr]
        for result, value in zip(tile.results, yielded, strict=True):
            if result in self.env or result in self.held:
                continue
            same = [r for r, v in zip(tile.results, yielded, strict=True) if v is value]
            made = next((r for r in same if r in self.env), None)
            producer = value.owner if isinstance(value.owner, Operation) else None
            const = None if producer is None else constant_value(producer)
            if made is not None:
                self.env[result] = self.env[made]
            elif const is not None:
                self.held[result] = np.broadcast_to(const, tensor_shape(result)).copy()
            elif producer is None:  # one of its inputs (the verifier checked the maps)
                source = tile.operands[tile.body.block.args.index(value)]
                if source in self.env:
                    self.env[result] = self.env[source]
                else:
                    self.held[result] = self.held[source]

    def keep(self, made: Made, array: DaskArray) -> None:
        if made.partial:
            self.partials[made.value] = array
        else:
            self.env[made.value] = array

    def reduction(self, red: Reduction) -> None:
        partials = self.partials.pop(red.value)
        dtype = numpy_dtype(red.value.type)
        result = da.reduction(
            partials,
            chunk=pass_block,
            combine=functools.partial(combine_blocks, KernelSpec(red.combine, self.options)),
            aggregate=functools.partial(combine_blocks, KernelSpec(red.aggregate, self.options)),
            axis=red.axes,
            keepdims=True,
            dtype=dtype,
            concatenate=True,
            name=f"tdsl_{red.name}",
            meta=np.empty((0,) * partials.ndim, dtype),
        )
        if red.squeeze:
            result = da.squeeze(result, axis=red.squeeze)
        if result.chunks != red.chunks:
            raise internal_error(
                f"dask: the reduction {red.name} gives the chunks {result.chunks}, "
                f"where its plan expects {red.chunks}"
            )
        self.env[red.value] = result


def _grid(grid: Sequence[tuple[int, int]]) -> itertools.product[tuple[int, ...]]:
    return itertools.product(*(range(n) for _, n in grid))


def _index(value: Read | Made, b: dict[int, int]) -> tuple[int, ...]:
    """The block index of ``value`` in grid block ``b``."""
    return tuple(0 if d is None else b.get(d, 0) for d in value.dims)


def _owns(made: Made, b: dict[int, int]) -> bool:
    """Whether grid block ``b`` gives ``made``'s block: the first along grid dims it does not
    run along (every block along them computes the same)."""
    return all(i == 0 for d, i in b.items() if d not in made.dims)


def _meta(made: Made) -> Array:
    return np.empty((0,) * len(made.chunks), np.dtype(made.dtype))


# ---------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------


def call_dask(kernel: CompiledKernel, given: Sequence[Any], out: Any = None) -> Any:
    """``kernel`` on ``given`` (its arguments in signature order, some Dask arrays): a lazy
    Dask array, or a tuple of them for several results."""
    if out is not None:
        raise TdslCallError(
            f"`out` of kernel `{kernel.name}` cannot be given with Dask arrays: the result "
            "is a lazy Dask array; write it with `dask.array.store` (or `.to_zarr`)"
        )
    graph = _Graph(kernel)
    func_op = _function(kernel)
    for arg, spec, value in zip(func_op.args, kernel.args, given, strict=True):
        if isinstance(value, da.Array):
            graph.env[arg] = _check_dask(kernel, spec, value)
        else:
            graph.held[arg] = convert_argument(kernel, spec, value)
    term: Operation | None = None
    for op in func_op.body.block.ops:
        if isinstance(op, TileOp):
            graph.group(op)
            graph.passed_through(op)
            continue
        if isinstance(op, ReturnOp):
            term = op
            break
        if isinstance(op, SliceOp | ReshapeOp):  # Dask's own slicing and reshape
            source = op.input
            if source not in graph.env:
                graph.held[op.result] = op.evaluate_view(graph.held[source])
            elif isinstance(op, SliceOp):
                graph.env[op.result] = graph.env[source][op.index()]
            else:
                graph.env[op.result] = _reshape(kernel, graph.env[source], op)
            continue
        if isinstance(op, TakeOp):  # Dask's own take; NumPy indices are checked first
            # (an error in a task has no driver to locate it: where in the source it is)
            where = with_source_line(op_location(op), kernel.filename, kernel.expression)
            if op.indices in graph.held:
                check_indices(graph.held[op.indices], op.extent, op.axis_value, op, where)
            if op.input in graph.held and op.indices in graph.held:
                graph.held[op.result] = op.evaluate(graph.held[op.input], graph.held[op.indices])
            else:
                source = graph.result(op.input)
                # NumPy indices as they are (Dask's take of a Dask array of them lost a
                # block where the source has none); others are checked when computed, block
                # by block
                indices = graph.held.get(op.indices)
                if indices is None:
                    indices = graph.result(op.indices)
                    check = (_checked_indices, op.extent, op.axis_value, where)
                    indices = indices.map_blocks(*check, dtype=indices.dtype)
                graph.env[op.result] = _take(source, indices, op.axis_value)
            continue
        if isinstance(op, ConcatenateOp):  # Dask's own concatenate
            if all(v in graph.held for v in op.inputs):
                graph.held[op.result] = op.evaluate(*(graph.held[v] for v in op.inputs))
            else:
                parts = [graph.result(v) for v in op.inputs]
                graph.env[op.result] = da.concatenate(parts, axis=op.axis_value)
            continue
        const = constant_value(op)
        if const is None:  # pragma: no cover - the tiled stage groups every computing op
            raise TdslError(f"'{op.name}' is in no kernel.tile group")
        graph.held[op.results[0]] = const
    if not isinstance(term, ReturnOp):
        raise internal_error(f"dask: @{kernel.name} ends in no func.return", op=func_op)
    results = tuple(graph.result(v) for v in term.operands)
    return results[0] if len(results) == 1 else results


def _take(source: DaskArray, indices: DaskArray | Array, axis: int) -> DaskArray:
    """NumPy's ``take`` on Dask arrays (the indices a Dask or NumPy array): Dask's, which
    takes a 1-D index array only; a multi-dimensional one (a batch of tokens) is taken
    flat, in one chunk, and its dims restored (index arrays are small beside what they
    gather)."""
    if indices.ndim == 1:
        return da.take(source, indices, axis=axis)
    if isinstance(indices, np.ndarray):
        flat_indices: DaskArray | Array = indices.reshape(-1)
    else:
        flat_indices = indices.rechunk(-1).ravel()
    flat = da.take(source, flat_indices, axis=axis).rechunk({axis: -1})
    shape = (*source.shape[:axis], *indices.shape, *source.shape[axis + 1 :])
    if math.prod(shape) == 0:  # Dask cannot reshape no elements: NumPy's reshape of one
        # empty block, which still depends on the indices' check (dims dropped or added
        # where the rank changes: a 0-d index array)
        rank, ndim = len(shape), flat.ndim
        return flat.rechunk(-1).map_blocks(
            np.reshape,
            shape,
            chunks=tuple((n,) for n in shape),
            drop_axis=list(range(rank, ndim)),
            new_axis=list(range(ndim, rank)),
            meta=np.empty((0,) * rank, flat.dtype),
        )
    return flat.reshape(shape)


def _reshape(kernel: CompiledKernel, array: DaskArray, op: ReshapeOp) -> DaskArray:
    """Dask's reshape of ``array``, or a :class:`TdslCallError` where its chunks do not
    allow one (Dask reshapes by merging or splitting whole dimensions only)."""
    shape = tensor_shape(op.result)
    if math.prod(shape) == 0:  # (Dask's reshape of no elements fails in functools.reduce)
        return da.zeros(shape, dtype=array.dtype)
    try:
        return da.reshape(array, shape)
    except (NotImplementedError, ValueError) as err:
        reason = str(err).strip().splitlines()[0]
        raise TdslCallError(
            f"kernel `{kernel.name}`: Dask cannot reshape a value of shape "
            f"{tuple(array.shape)} in chunks {array.chunks} into {shape} ({reason}); "
            "call it on NumPy arrays, or give chunks whole along the reshaped dimensions"
        ) from None


def _function(kernel: CompiledKernel) -> FuncOp:
    """The kernel's function in its tiled IR: the groups, their order and recorded plans."""
    for op in kernel.ir.module("tiled").ops:
        if isinstance(op, FuncOp) and op.sym_name.data == kernel.name:
            return op
    raise TdslError(f"kernel `{kernel.name}` has no function in its tiled IR")  # pragma: no cover


def _checked_indices(block: Any, extent: int, axis: int, where: SourceLocation | None) -> Any:
    """``block`` of a gather's indices, or a :class:`~tdsl.errors.TdslIndexError` for its
    first index outside the axis, as NumPy words it (Dask's take, given one, failed with
    an ``IndexError`` about a chunk: "index 0 is out of bounds for axis 0 with size 0")."""
    check_indices(block, extent, axis, location=where)
    return block


__all__ = ["call_dask", "chunk_options"]
