"""Planning a fusion group over chunked arrays: the steps and reductions of its Dask graph.

This module knows nothing of Dask: it turns one fusion group (a ``kernel.tile`` of the
kernel's tiled IR: its ops, with their :class:`~tdsl.dialects.kernel_plan.GroupBody`,
and the plan it records) and the chunks of the values it reads into a list of
:class:`~tdsl.dask.items.Step` and :class:`~tdsl.dask.items.Reduction` items, which
:mod:`tdsl.dask.graph` turns into Dask layers.  :func:`plan_tile` says how the recorded
plan is followed.

Chunks are tiles
----------------

The chunks of the group's inputs give each space dim of the group a chunking
(:func:`choose_chunks`: along each dim, the chunks of the largest input that
runs along it; the other inputs are rechunked to match).  A dim cut into
several chunks is *cut*; a chunk of the group's space is then exactly a tile
of ``tdsl-tile``'s model, and :func:`tdsl.dialects.kernel_plan.schedule`
says what runs when, with the cut dims as the tiled ones:

* a **stage** becomes one task per chunk of the cut parallel dims: a blockwise map,
  each task a tdsl kernel compiled for its chunk's shape;
* a **pass** becomes one task per chunk of the cut parallel and reduction dims;
  an op accumulating over the cut reduction dims computes its *partial* there
  (:meth:`~tdsl.dialects.structured.PartialOps.partial_ops`), and a
  :class:`Reduction` combines the partials across chunks with a tree of tdsl
  kernels (the same ops on concatenated partials) whose last step also
  finalizes (:meth:`~tdsl.dialects.structured.PartialOps.finalize_ops`:
  a mean divides at the end, a float16 sum accumulates in float32).  Ops of a
  later pass that need per-chunk values of an earlier one compute them again,
  as the schedule says, instead of keeping them, except an op whose values
  depend on the order it adds in (:func:`_step_ops`): that one is made by its
  pass and read by the later ones.

What must be whole is made whole: a dim along which an op reduces without
partial ops (a matmul's contraction) has one chunk, and the inputs are
rechunked to it; a matmul's right operand is thus whole along its
contraction, and chunked along its columns if the group's columns are.  A
scan's axis (``cumsum``) is whole too: its chunks would each need the running
values of all chunks before it.
A row-normalizing op (``softmax``, ``layernorm``, ``log_softmax``) whose rows
are cut runs as its decomposition (``decompose``), the multi-pass plan: its
row statistics are reductions across chunks, then a normalizing map.

When the schedule refuses the chunks (a matmul whose result a later pass would need
again, an op that keeps one cut reduction dim while accumulating over another), the
group is planned in *parts*: the longest prefix of its ops (program order) that
schedules, then the rest; the values between parts are chunked Dask arrays, never whole
ones.  A single op that still cannot run takes its reduction dims whole, and failing
that its whole space.

Each step's kernel is the step's ops as a ``func.func`` of tensordsl IR, typed for the
first chunk; :meth:`tdsl.jit.JITTensorKernel.compile_ir` re-types it for each chunk."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue

from tdsl.dask.items import Chunks, ChunksOf, GroupPlan, Made, Read, Reduction, Step
from tdsl.dask.step_kernels import (
    acc_type,
    block_shape,
    module_text,
    partial_ops_of,
    reduction_kernel,
)
from tdsl.dialects.kernel import TileOp
from tdsl.dialects.kernel_plan import (
    Dims,
    GroupBody,
    PlanError,
    TileSchedule,
    carried_dims,
    schedule,
)
from tdsl.dialects.kernel_plan import Step as ScheduleStep
from tdsl.dialects.structured import (
    IteratorType,
    PartialOps,
    element_type,
    is_constant,
    map_dims,
    numpy_dtype,
    reduction_of,
    structured,
    tensor_shape,
)
from tdsl.errors import TdslIRError, internal_error
from tdsl.transforms.iteration_space import Inconsistent, analyze, require_structured
from tdsl.transforms.tile import decomposed_copy

# ---------------------------------------------------------------------------
# Chunks of the space dims
# ---------------------------------------------------------------------------


def _is_computed(body: GroupBody, value: SSAValue) -> bool:
    return body.producer(value) is not None


def choose_chunks(
    body: GroupBody, chunks_of: ChunksOf, whole: frozenset[int] = frozenset()
) -> list[tuple[int, ...]]:
    """The chunks of each space dim of ``body``: along each dim, those of the largest
    chunked input running along it (the first of equals, in program order); one chunk
    along dims no chunked input runs along and along the dims of ``whole``."""
    best: dict[int, tuple[int, tuple[int, ...]]] = {}
    for (op, i), dims in body.reads.items():
        value = op.operands[i]
        if _is_computed(body, value) or value in body.constants:
            continue
        known = chunks_of(value)
        if known is None:
            continue
        size = math.prod(tensor_shape(value))
        for axis, d in enumerate(dims):
            if d is not None and (d not in best or size > best[d][0]):
                best[d] = (size, known[axis])
    return [
        best[d][1] if d in best and d not in whole else (extent,)
        for d, extent in enumerate(body.extents)
    ]


def _reduced_axes(op: Operation) -> tuple[int, ...]:
    """The axes of ``op``'s first operand that it reduces."""
    s = require_structured(op)
    kinds = s.iterator_types()
    return tuple(
        axis
        for axis, loop in enumerate(map_dims(s.indexing_maps()[0]))
        if loop is not None and kinds[loop] is IteratorType.REDUCTION
    )


def _has_partials(op: Operation) -> bool:
    """Whether ``op`` gives partial ops (implements :class:`PartialOps`)."""
    return isinstance(op, PartialOps)


def must_be_whole(body: GroupBody) -> frozenset[int]:
    """Space dims that take one chunk: reduced by an op without partial ops (a matmul's
    contraction) or whose partials would reorder it (``prod``), or scanned (``cumsum``'s axis: a chunk would need the running values
    of the chunks before it, which the graph does not carry yet)."""
    whole: set[int] = set()
    for op in body.ops:
        s = require_structured(op)
        kinds = s.iterator_types()
        whole.update(carried_dims(body, op))
        reduced = [
            d
            for d, kind in zip(body.loop_dims(op), kinds, strict=True)
            if d is not None and kind is IteratorType.REDUCTION
        ]
        if reduced and (not _has_partials(op) or getattr(op, "ORDERED", False)):
            whole.update(reduced)  # (a product: NumPy's order, not a tree of partials)
    return frozenset(whole)


def _cuts_a_row(body: GroupBody, chunks: Sequence[tuple[int, ...]]) -> bool:
    """Whether a row-normalizing op of ``body`` has its normalized dim cut."""
    for op in body.ops:
        kinds = require_structured(op).iterator_types()
        for d, kind in zip(body.loop_dims(op), kinds, strict=True):
            if kind is IteratorType.NORMALIZE and d is not None and len(chunks[d]) > 1:
                return True
    return False


# ---------------------------------------------------------------------------
# Parts
# ---------------------------------------------------------------------------


@dataclass
class _Part:
    ops: list[Operation]
    """Computing ops and the constants they use, program order."""
    inputs: list[SSAValue]
    outputs: list[SSAValue]
    body: GroupBody
    chunks: list[tuple[int, ...]]
    sched: TileSchedule
    recorded: bool = False
    """Whether ``sched`` is the plan the group's ``kernel.tile`` records."""


class _Planner:
    """Plans one group; see the module docstring."""

    def __init__(
        self,
        name: str,
        ops: Sequence[Operation],
        inputs: Sequence[SSAValue],
        results: Sequence[SSAValue],
        chunks_of: ChunksOf,
        tile: TileOp | None = None,
        alias: Mapping[SSAValue, SSAValue] | None = None,
    ) -> None:
        self.plan = GroupPlan(name)
        self.outer_chunks = chunks_of
        self.ops: list[Operation] = list(ops)
        self.inputs: list[SSAValue] = list(inputs)
        self.results: list[SSAValue] = list(results)
        self.alias: dict[SSAValue, SSAValue] = dict(alias or {})
        """Values of a copy (decomposed, or of a tile's body) -> the values they stand for."""
        self.tile = tile
        """The ``kernel.tile`` whose recorded plan the group follows where its chunks allow."""

    def key(self, value: SSAValue) -> SSAValue:
        """The value as the graph knows it (a copy's input or result: the original)."""
        value = self.alias.get(value, value)
        return self.alias.get(value, value)

    def chunks_of(self, value: SSAValue) -> Chunks | None:
        value = self.key(value)
        if value in self.plan.produced:
            return self.plan.produced[value]
        return self.outer_chunks(value)

    # -- the group ---------------------------------------------------------------

    def run(self) -> GroupPlan:
        body = analyze(self.ops, self.results, self.inputs)
        if isinstance(body, Inconsistent):  # pragma: no cover - tdsl-fuse formed the group
            raise PlanError(body.reason)
        if self.tile is not None and tuple(body.extents) != tuple(self.tile.space_value):
            raise TdslIRError(  # (a hand-written tile op: its dims in another order)
                f"Dask runs group {self.plan.name} over the dims of its ops in the order "
                f"tdsl-tile gives them, {list(body.extents)}, and its kernel.tile records the "
                f"space {list(self.tile.space_value)}: tile the group again (`tdsl-tile`), "
                "or call the kernel on NumPy arrays",
                op=self.tile,
            )
        chunks = choose_chunks(body, self.chunks_of, must_be_whole(body))
        if _cuts_a_row(body, chunks):
            copy = decomposed_copy(self.ops, self.results, self.inputs)
            if copy is not None:
                ops, outputs, args = copy
                self.alias.update(zip(args, self.inputs, strict=True))
                self.alias.update(zip(outputs, self.results, strict=True))
                self.ops, self.results, self.inputs = list(ops), list(outputs), list(args)
                self.plan.decomposed = True
        parts = self.split()
        self.plan.parts = len(parts)
        self.plan.recorded = len(parts) == 1 and parts[0].recorded
        for index, part in enumerate(parts):
            label = self.plan.name if len(parts) == 1 else f"{self.plan.name}.{index}"
            self.emit(part, label)
        return self.plan

    def split(self) -> list[_Part]:
        """The group's ops as parts that each schedule (see the module docstring)."""
        compute = [op for op in self.ops if not is_constant(op)]
        parts: list[_Part] = []
        start = 0
        while start < len(compute):
            found: _Part | None = None
            stop = len(compute)
            while stop > start:
                found = self.part(compute[start:stop], compute[stop:])
                if found is not None:
                    break
                stop -= 1
            if found is None:  # one op that cannot run over its chunks: make dims whole
                rest = compute[start + 1 :]
                found = self.part(compute[start : start + 1], rest, reductions_whole=True)
                found = found or self.part(compute[start : start + 1], rest, all_whole=True)
                if found is None:
                    raise internal_error(
                        f"dask: cannot plan '{compute[start].name}' over one chunk",
                        op=compute[start],
                    )
                stop = start + 1
            parts.append(found)
            # later parts read this one's outputs with the chunks it gives them
            for v in found.outputs:
                self.plan.produced[self.key(v)] = self._chunks(found, v, found.body.dims[v])
            start = stop
        return parts

    def part(
        self,
        seq: Sequence[Operation],
        later: Sequence[Operation],
        reductions_whole: bool = False,
        all_whole: bool = False,
    ) -> _Part | None:
        """``seq`` as one part, scheduled over its chunks, or None if it cannot be."""
        inside = set(seq)
        after = set(later)
        defined = {r for op in seq for r in op.results}
        results = set(self.results)
        outputs: list[SSAValue] = [
            r
            for op in seq
            for r in op.results
            if r in results or any(u.operation in after for u in r.uses)
        ]
        constants = [
            op
            for op in self.ops
            if is_constant(op) and any(u.operation in inside for r in op.results for u in r.uses)
        ]
        const_values = {r for op in constants for r in op.results}
        inputs = list(
            dict.fromkeys(
                v for op in seq for v in op.operands if v not in defined and v not in const_values
            )
        )
        ordered = [op for op in self.ops if op in inside or op in constants]
        body = analyze(ordered, outputs, inputs)
        if isinstance(body, Inconsistent):
            return None
        whole = set(must_be_whole(body))
        if reductions_whole:
            whole.update(d for d in range(body.rank) if body.is_reduction(d))
        if all_whole:
            whole.update(range(body.rank))
        chunks = choose_chunks(body, self.chunks_of, frozenset(whole))
        follow = (  # the kernel.tile whose recorded plan this part follows, if any
            self.tile
            if not self.plan.decomposed and len(seq) + len(constants) == len(self.ops)
            else None
        )
        if follow is not None:
            # (the inputs' blocks count: 64 column chunks made var(x, axis=0) 27,456 tasks)
            recorded = follow.tiles_value
            room = max(1, MAX_CUT_BLOCKS // math.prod(len(c) for c in chunks))
            for d, extent in enumerate(body.extents):
                # a reduction dim the plan cuts is cut, at its tiles if no chunks cut it
                cut = body.is_reduction(d) and recorded[d] < extent
                if cut and len(chunks[d]) == 1 and d not in whole:
                    # (MAX_CUT_BLOCKS in all: a least-memory plan's tiles made 243k tasks)
                    size = max(recorded[d], -(-extent // room))
                    chunks[d] = _split(extent, size)
                    room = max(1, room // len(chunks[d]))
        tiles = [
            max(c) if len(c) > 1 else max(1, extent)
            for c, extent in zip(chunks, body.extents, strict=True)
        ]
        sched: TileSchedule | None = None
        if follow is not None:
            try:
                staged, sweeps = follow.recorded_plan(body)
                sched = schedule(body, tiles, staged, sweeps)
            except PlanError:
                sched = None  # the chunks cut other dims than the plan: schedule them
        recorded_followed = sched is not None
        if sched is None:
            try:
                sched = schedule(body, tiles)
            except PlanError:
                return None
        part = _Part(ordered, inputs, outputs, body, chunks, sched, recorded_followed)
        try:
            self.check(part)
        except PlanError:
            return None
        return part

    def check(self, part: _Part) -> None:
        """Raise PlanError if a step would read a per-block value along a dim it does not
        iterate (the schedule's rules exclude it; this keeps the planner honest)."""
        reduction = set(part.sched.reduction_loops)
        for step in part.sched.steps:
            if step.is_pass:
                continue
            for op in step.ops:
                for i, _ in enumerate(op.operands):
                    dims = part.body.reads[(op, i)]
                    if any(d in reduction for d in dims if d is not None):
                        raise PlanError(f"a stage reads '{op.name}' operand {i} along a cut dim")

    # -- steps of a part -----------------------------------------------------------

    def _chunks(self, part: _Part, value: SSAValue, dims: Dims) -> Chunks:
        return tuple(
            (extent,) if d is None else part.chunks[d]
            for extent, d in zip(tensor_shape(value), dims, strict=True)
        )

    def emit(self, part: _Part, label: str) -> None:
        body, sched = part.body, part.sched
        cut = {d for d, c in enumerate(part.chunks) if len(c) > 1}
        reduction = set(sched.reduction_loops)
        steps = sched.steps
        single = len(steps) == 1 and not steps[0].is_pass
        ops_of = _step_ops(steps)
        # the values each step reads from outside itself
        external: dict[int, list[tuple[SSAValue, Dims]]] = {}
        needed: set[SSAValue] = set(part.outputs)
        for step in steps:
            inside = {op for op in ops_of[step.index] if op not in step.accumulating}
            reads: list[tuple[SSAValue, Dims]] = []
            for op in ops_of[step.index]:
                for i, v in enumerate(op.operands):
                    p = body.producer(v)
                    if v in body.constants or (p is not None and p in inside):
                        continue
                    if (v, body.reads[(op, i)]) not in reads:
                        reads.append((v, body.reads[(op, i)]))
                    if p is not None:
                        needed.add(v)
            external[step.index] = reads
        for step in steps:
            grid_dims = sorted(cut if step.is_pass else cut - reduction)
            grid = tuple((d, len(part.chunks[d])) for d in grid_dims)
            kind = "pass" if step.is_pass else "stage"
            name = label if single else f"{label}_{kind}{step.index}"
            made: list[tuple[Made, SSAValue]] = []  # (what, the value in the kernel)
            block = Block()
            args: dict[tuple[SSAValue, Dims], SSAValue] = {}
            taken: list[Read] = []
            for v, dims in external[step.index]:
                t = TensorType(element_type(v), block_shape(v, dims, part.chunks))
                args[(v, dims)] = block.insert_arg(t, len(block.args))
                args[(v, dims)].name_hint = f"a{len(taken)}"
                taken.append(Read(self.key(v), dims, self._chunks(part, v, dims)))
            inner: dict[SSAValue, SSAValue] = {}
            for op in ops_of[step.index]:
                operands: list[SSAValue] = []
                for i, v in enumerate(op.operands):
                    if v in inner:
                        operands.append(inner[v])
                    elif v in body.constants:
                        const = v.owner
                        if not isinstance(const, Operation):
                            raise internal_error("dask: a constant of a group that no op makes")
                        clone = const.clone()
                        block.add_op(clone)
                        inner[v] = clone.results[0]
                        operands.append(inner[v])
                    else:
                        operands.append(args[(v, body.reads[(op, i)])])
                if op in step.accumulating:
                    new_ops, partial = partial_ops_of(op).partial_ops(operands)
                    for new in new_ops:
                        block.add_op(new)
                    dims = body.reads[(op, 0)]
                    reduced = set(_reduced_axes(op))
                    chunks = tuple(
                        (1,) * (len(part.chunks[d]) if d is not None else 1)
                        if axis in reduced
                        else ((1,) if d is None else part.chunks[d])
                        for axis, d in enumerate(dims)
                    )
                    acc = reduction_of(op).accumulator_dtype().name
                    made.append((Made(self.key(op.results[0]), dims, chunks, True, acc), partial))
                    continue
                new = require_structured(op).retyped(operands)
                block.add_op(new)
                inner.update(zip(op.results, new.results, strict=True))
                if sched.step_of[op] != step.index:
                    continue  # recomputed here: its own step gives it
                for r in op.results:
                    if r in needed:
                        dims = body.dims[r]
                        value = Made(
                            self.key(r), dims, self._chunks(part, r, dims), dtype=_dtype(r)
                        )
                        made.append((value, inner[r]))
                        self.plan.produced[self.key(r)] = value.chunks
            source = module_text(block, [v for _, v in made])
            self.plan.items.append(
                Step(name, grid, source, tuple(taken), tuple(m for m, _ in made))
            )
            for op in step.accumulating:
                self.plan.items.append(self.reduction(part, op, f"{name}_{_short(op)}"))

    def reduction(self, part: _Part, op: Operation, name: str) -> Reduction:
        body = part.body
        dims = body.reads[(op, 0)]
        reduced = _reduced_axes(op)
        cut = {d for d, c in enumerate(part.chunks) if len(c) > 1}
        axes = tuple(axis for axis in reduced if dims[axis] in cut)
        acc = tensor_shape(acc_type(op))
        shape = [2 if axis in axes else extent for axis, extent in enumerate(acc)]
        count = part.sched.count(op)
        result = op.results[0]
        squeeze = reduced if len(tensor_shape(result)) < len(dims) else ()
        chunks = self._chunks(part, result, body.dims[result])
        self.plan.produced[self.key(result)] = chunks
        return Reduction(
            name,
            self.key(result),
            axes,
            reduction_kernel(op, shape, None),
            reduction_kernel(op, shape, count),
            squeeze,
            chunks,
        )


def _order_dependent(op: Operation) -> bool:
    """Whether ``op``'s values depend on the order it combines elements in: it reduces,
    normalizes or scans along some dim (a kernel that tiles that dim adds in another order
    than one that keeps it whole)."""
    kinds = require_structured(op).iterator_types()
    return any(k is not IteratorType.PARALLEL for k in kinds)


def _step_ops(steps: Sequence[ScheduleStep]) -> dict[int, list[Operation]]:
    """The ops each step's kernel runs: the schedule's, except that a pass does not compute
    again an order-dependent op of an earlier step (nor what only that op reads), and reads
    its value instead, which the earlier step makes.

    Each step's kernel tiles its block under the budget by itself, so a sum over a dim
    inside the block can add in another order in a later pass than in the pass that first
    computed it, and give a value an ulp apart.  Most ops would not notice; a comparison
    of a value with its own maximum does (``argmax`` is one): in the later pass nothing
    equals the maximum.  Element-wise ops computed again from the same values give the
    same bits, so they are still computed again, as the plan says."""
    ops_of: dict[int, list[Operation]] = {}
    for step in steps:
        shared = {op for op in step.recomputed if _order_dependent(op)}
        if not shared:
            ops_of[step.index] = list(step.ops)
            continue
        keep: set[Operation] = set()
        for op in reversed(step.ops):  # (program order: readers after what they read)
            if op in step.recomputed:
                if op in shared:
                    continue
                if not any(u.operation in keep for r in op.results for u in r.uses):
                    continue
            keep.add(op)
        ops_of[step.index] = [op for op in step.ops if op in keep]
    return ops_of


def _dtype(value: SSAValue) -> str:
    return numpy_dtype(value.type).name


MAX_CUT_BLOCKS = 64
"""The most blocks the reduction dims the recorded plan cuts are cut into, all together,
with the inputs' chunks' blocks: its tiles, or larger blocks where they are more (each
block's kernel tiles itself under the budget, so none takes more memory)."""


def _split(extent: int, size: int) -> tuple[int, ...]:
    """``extent`` in chunks of ``size`` (the last may be smaller)."""
    full, rest = divmod(extent, size)
    return (size,) * full + ((rest,) if rest else ())


def _short(op: Operation) -> str:
    return op.name.split(".", 1)[-1]


def plan_tile(tile: TileOp, chunks_of: ChunksOf) -> GroupPlan:
    """Plan the group of ``tile`` over the chunks ``chunks_of`` gives its operands, following
    the plan ``tile`` records.

    The planner works on a copy of the body at the shapes of the tile's operands (the IR
    is not changed); its values stand for the tile's operands and results.  A reduction
    dim the recorded plan cuts is cut, at the recorded tile size where no input's chunks
    cut it (in at most :data:`MAX_CUT_BLOCKS` blocks), and the steps are the recorded
    sweeps, the staged values kept as chunked arrays between passes (:attr:`GroupPlan.recorded`).
    Chunks finer than the plan (a reduction dim it keeps whole, cut by the inputs'
    chunks: Dask's blocks are a level above the tiles) make a schedule of their own,
    by the same rules.  Along parallel dims, the chunks are the blocks, and each
    block's kernel tiles itself under the budget.
    """
    ops, yielded = tile.body_ops()
    block = Block(arg_types=[v.type for v in tile.inputs])
    alias: dict[SSAValue, SSAValue] = dict(zip(block.args, tile.inputs, strict=True))
    mapping: dict[SSAValue, SSAValue] = dict(zip(tile.body.block.args, block.args, strict=True))
    copies: list[Operation] = []
    for op in ops:
        if is_constant(op):
            new = op.clone()
        else:
            new = require_structured(op).retyped([mapping[v] for v in op.operands])
        block.add_op(new)
        copies.append(new)
        mapping.update(zip(op.results, new.results, strict=True))
    results = [mapping[v] for v in yielded]
    # (an input yielded stays itself, a value yielded twice is its first output: the
    # graph passes the others through)
    for result, output in zip(results, tile.outputs, strict=True):
        alias.setdefault(result, output)
    name = tile.group.data if tile.group is not None else "g"
    for op in copies:
        if not is_constant(op) and structured(op) is None:
            require_structured(op)
    return _Planner(name, copies, list(block.args), results, chunks_of, tile, alias).run()


__all__ = [
    "choose_chunks",
    "must_be_whole",
    "plan_tile",
]
