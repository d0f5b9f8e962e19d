"""How a tiled group runs: its schedule of passes, and the one scratch model.

A group (the body of a ``kernel.tile``, or of a ``kernel.fused`` being
planned) is described by a :class:`GroupBody`: its ops, the extent and kind of
each dimension of its iteration space, and for every value the space dim each
of its dims runs along (``None``: taken whole).  Given tile sizes,

* :func:`schedule` says what runs when (a :class:`TileSchedule`), and
* :func:`plan_scratch` says which buffers one tile allocates (a
  :class:`ScratchPlan`).

``tdsl-tile`` records both outcomes in the IR (the iterator kinds and the
scratch buffers), the ``kernel.tile`` verifier checks the recorded plan
against this model, and the interpreter and the NumPy target run this
schedule with these buffers: one model, so they cannot disagree.

The schedule
------------

Dims are ``parallel`` (no op of the group reduces along them),
``reduction`` (some op reduces or normalizes along them) or ``scan`` (some op
scans along them, as ``cumsum`` does, and none reduces); scan dims are tiled
and looped like reduction dims (below, "reduction dims" means both).  The tiles along the
parallel dims are independent: they are the outer loops.  For each parallel
tile the group runs a sequence of *steps*:

* a **stage** runs ops once per parallel tile: ops that iterate no tiled
  reduction dim;
* a **pass** loops over the tiles of the tiled reduction dims and runs its ops
  on each.  An op that reduces along a tiled dim *accumulates*: each tile
  computes a partial result (the target's partial lowering), combined into an
  accumulator with the op's :class:`~tdsl.dialects.structured.Combiner`; the
  result is final (``finalize``) after the pass.

A **scan** along a tiled dim runs in a pass too, but its result is ready per
tile, as an element-wise op's is: it *carries* the running values of each row
(its result's tile, extent 1 along the scan dim) from one tile of the pass to
the next, in a buffer set to its identity when the pass starts
(the op's ``carried_loops``: its own tiling of that dim); each tile starts from
them and leaves its last ones.  A
later pass that needs it again recomputes it from a fresh carry.

An op runs in the earliest step after the values it reads are ready: a value
an op accumulates is ready after its pass, others at once.  So
``x - mean(x, axis=0)`` with rows tiled runs the mean in pass 1 and the
subtraction in pass 3, after the stage 2 that finalizes nothing new.  A value
a later pass needs that an earlier pass computed tile by tile (``exp(x)`` in
``exp(x) - max(exp(x))``) is *recomputed* in the later pass, which is only
allowed for ops that may be recomputed (never a matmul).  With no reduction dim
tiled there is one stage: the classic tile, rows whole.

Four rules keep the schedule cheap and every accumulation local to its
pass: an op may not keep a tiled reduction dim while accumulating over another
(its partial results would be needed across tiles of the kept dim), nor
accumulate without running along every tiled reduction dim (a pass loops over
all of them, so it would add each partial result once per tile of a dim it
does not run along); an op with
a ``normalize`` dim may not have it tiled (it is decomposed first, see
``decompose``); and a parallel dim an op that is never recomputed (a matmul)
does not run along may not be tiled (every tile along it would compute the op
again).  A scan along a tiled dim may not run along another tiled reduction
dim, nor miss one (its carry would be needed across their tiles).  A tiling
that breaks them is refused with the reason.

The scratch model
-----------------

:func:`plan_scratch` walks the schedule in order, the loop body of a pass
once (its buffers are reused by every tile).  Group inputs are views of the
operands, outputs are written in place, constants are literals, views
(``transpose``) are views: none takes scratch, and a view keeps its operand
alive while the view is used.  Every other value takes a buffer when it is
defined and frees it after its last use; a value used in a pass but defined
before it lives to the pass's end, and one copied into an output (a view, a
value yielded twice) lives past the end of its step.  An op that may compute
in place (``IN_PLACE``) writes over an operand of its shape and dtype that dies
at it.  A value the group yields is computed straight into its output slice,
and so is the element-wise chain of dying operands behind it.  An
accumulating op takes an accumulator (its result's shape, in the accumulator
dtype; the output itself when the group yields the result and the dtypes
agree) for the whole pass and a partial buffer per tile; a scan along a tiled
dim takes its carry for the whole pass.  Each op's workspace
(``numpy_workspace``) lives while the op runs.  A new value takes the smallest
free buffer of its dtype that fits, else the largest free one, grown; failing
that a new buffer.  The scratch of a tile is the sum of its buffers'
elements.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.ir import Operation, SSAValue

from tdsl.dialects.structured import (
    IteratorType,
    StructuredOpInterface,
    constant_value,
    map_dims,
    numpy_dtype,
    structured,
    tensor_shape,
)

Dims = tuple[int | None, ...]
"""Per dim of a value: the space dim it runs along, or None when every tile takes it whole."""


RECOMPUTE_FACTOR = 4
RECOMPUTE_MIN = 256
"""A schedule's passes may compute at most ``RECOMPUTE_FACTOR * ops + RECOMPUTE_MIN`` ops
again in all (see :func:`schedule`); more is a :class:`PlanError`."""


class PlanError(Exception):
    """A group that cannot run with the given tiles; the message says why."""


# ---------------------------------------------------------------------------
# Group bodies
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupBody:
    """A group's ops and the dims of every value in its iteration space."""

    extents: tuple[int, ...]
    """The extent of each space dim."""
    kinds: tuple[IteratorType, ...]
    """``parallel``, ``reduction`` or ``scan``, per space dim (see :func:`derived_kinds`)."""
    ops: tuple[Operation, ...]
    """The structured ops, in program order (constants excluded)."""
    dims: Mapping[SSAValue, Dims]
    """The dims of every value an op computes, and of every input value read with one map."""
    reads: Mapping[tuple[Operation, int], Dims]
    """The dims each operand of each op is read with."""
    outputs: tuple[SSAValue, ...]
    """The values the group yields, in order (a value may repeat, or be an input)."""
    output_dims: tuple[Dims, ...]
    """The dims of each yielded value in its output."""
    constants: frozenset[SSAValue] = frozenset()
    """Values that are compile-time constants (literals in generated code)."""
    prefer_whole: frozenset[int] = frozenset()
    """Space dims tiling should cut last (a matmul's columns and contraction)."""
    known_loop_dims: Mapping[Operation, tuple[int | None, ...]] = field(
        default_factory=dict[Operation, tuple[int | None, ...]], repr=False, compare=False
    )
    """Ops' loop dims already found (by :func:`propagate_dims`), else computed on demand."""
    members: frozenset[Operation] = field(init=False, repr=False, compare=False)
    position: Mapping[Operation, int] = field(init=False, repr=False, compare=False)
    """Each op's index in ``ops``."""
    # what the planners ask of every op and value many times: computed once per body
    _loop_dims: dict[Operation, tuple[int | None, ...]] = field(
        init=False, repr=False, compare=False
    )
    _value_shapes: dict[SSAValue, tuple[int, ...]] = field(init=False, repr=False, compare=False)
    _schedules: dict[tuple[int, ...], TileSchedule | PlanError] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", frozenset(self.ops))
        object.__setattr__(self, "position", {op: i for i, op in enumerate(self.ops)})
        object.__setattr__(self, "_loop_dims", dict(self.known_loop_dims))
        object.__setattr__(self, "_value_shapes", {})
        object.__setattr__(self, "_schedules", {})

    @property
    def rank(self) -> int:
        return len(self.extents)

    def is_reduction(self, d: int) -> bool:
        """Whether ``d`` is tiled as a reduction dim (``reduction`` or ``scan``): its tiles
        are the loop of the passes, not independent outer tiles."""
        return self.kinds[d] is not IteratorType.PARALLEL

    def shape(
        self, value: SSAValue, tiles: Sequence[int], dims: Dims | None = None
    ) -> tuple[int, ...]:
        """The shape of ``value``'s slice in a full tile of sizes ``tiles``."""
        dims = self.dims[value] if dims is None else dims
        extents = self.extents
        return tuple(
            [
                extent if d is None else min(tiles[d], extents[d])
                for extent, d in zip(self.value_shape(value), dims, strict=True)
            ]
        )

    def value_shape(self, value: SSAValue) -> tuple[int, ...]:
        """The full shape of ``value``."""
        shape = self._value_shapes.get(value)
        if shape is None:
            shape = self._value_shapes[value] = tensor_shape(value)
        return shape

    def producer(self, value: SSAValue) -> Operation | None:
        """The op of the group computing ``value``, if any."""
        owner = value.owner
        return owner if isinstance(owner, Operation) and owner in self.members else None

    def schedule(self, tiles: Sequence[int]) -> TileSchedule:
        """:func:`schedule` of this body, computed once per tile sizes."""
        key = tuple(tiles)
        found = self._schedules.get(key)
        if found is None:
            try:
                found = _schedule(self, key)
            except PlanError as err:
                found = err
            self._schedules[key] = found
        if isinstance(found, PlanError):
            raise PlanError(*found.args)
        return found

    def count(self, op: Operation) -> int:
        """How many elements each result element of an accumulating ``op`` combines:
        the full extents of its reduction dims, not a tile's (a mean divides by it)."""
        s = _structured(op)
        loops = s.loop_extents()
        total = 1
        for loop, (d, kind) in enumerate(zip(self.loop_dims(op), s.iterator_types(), strict=True)):
            if kind is IteratorType.REDUCTION:
                total *= self.extents[d] if d is not None else loops[loop]
        return total

    def loop_dims(self, op: Operation) -> tuple[int | None, ...]:
        """The space dim each loop dim of ``op`` runs along (None: taken whole)."""
        found = self._loop_dims.get(op)
        if found is None:
            found = self._loop_dims[op] = self._find_loop_dims(op)
        return found

    def _find_loop_dims(self, op: Operation) -> tuple[int | None, ...]:
        s = _structured(op)
        maps = s.indexing_maps()
        found: list[int | None] = [None] * len(s.loop_extents())
        values: list[Dims] = [self.reads[(op, i)] for i in range(len(op.operands))]
        values += [self.dims[r] for r in op.results]
        for amap, dims in zip(maps, values, strict=True):
            for loop, d in zip(map_dims(amap), dims, strict=True):
                if loop is not None and d is not None:
                    found[loop] = d
        return tuple(found)


def _structured(op: Operation) -> StructuredOpInterface:
    s = structured(op)
    if s is None:
        raise PlanError(f"'{op.name}' does not implement the structured-op interface")
    return s


def derived_kinds(body: GroupBody) -> tuple[IteratorType, ...]:
    """The kind of each space dim of ``body`` (its recorded kinds aside): ``reduction``
    where an op reduces or normalizes along it, else ``scan`` where an op scans along it
    (tiles along it run in order, carrying running values), else ``parallel``."""
    kinds = [IteratorType.PARALLEL] * len(body.extents)
    for op in body.ops:
        s = structured(op)
        if s is None:
            continue
        for d, kind in zip(body.loop_dims(op), s.iterator_types(), strict=True):
            if d is None or kind is IteratorType.PARALLEL:
                continue
            if kind is IteratorType.SCAN:
                if kinds[d] is IteratorType.PARALLEL:
                    kinds[d] = IteratorType.SCAN
            else:
                kinds[d] = IteratorType.REDUCTION
    return tuple(kinds)


def propagate_dims(
    ops: Sequence[Operation],
    inputs: Mapping[SSAValue, Dims],
    rank: int,
    loop_dims: dict[Operation, tuple[int | None, ...]] | None = None,
) -> dict[SSAValue, Dims]:
    """The dims of every value ``ops`` compute, from the dims of the values they read.

    Each op's loop dims take the space dims of the operand dims they index;
    its results take them through the result maps.  Raises :class:`PlanError`
    when two operands put one loop dim on two space dims.  ``loop_dims``, when
    given, receives each op's loop dims (what :meth:`GroupBody.loop_dims` says).
    """
    dims: dict[SSAValue, Dims] = dict(inputs)
    for op in ops:
        if constant_value(op) is not None:
            for r in op.results:
                dims[r] = (None,) * len(tensor_shape(r))
            continue
        s = _structured(op)
        maps = s.indexing_maps()
        loops: list[int | None] = [None] * len(s.loop_extents())
        for i, (operand, amap) in enumerate(zip(op.operands, maps, strict=False)):
            known = dims.get(operand)
            if known is None:
                raise PlanError(f"operand #{i} of '{op.name}' is not available in the group")
            for loop, d in zip(map_dims(amap), known, strict=True):
                if loop is None or d is None:
                    continue
                if loops[loop] is not None and loops[loop] != d:
                    raise PlanError(
                        f"'{op.name}' reads loop dim {loop} along space dims d{loops[loop]} and "
                        f"d{d}: its operands do not run along one iteration space"
                    )
                loops[loop] = d
        for r, amap in zip(op.results, maps[len(op.operands) :], strict=True):
            dims[r] = tuple(None if loop is None else loops[loop] for loop in map_dims(amap))
        if loop_dims is not None:
            loop_dims[op] = tuple(loops)
    return dims


# ---------------------------------------------------------------------------
# Schedules
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """What runs once per parallel tile (a stage) or once per reduction tile (a pass)."""

    index: int
    """Position in the schedule: stages have even indices, passes odd ones."""
    ops: tuple[Operation, ...]
    """The ops it runs, in program order (a pass: on every reduction tile)."""
    recomputed: frozenset[Operation] = frozenset()
    """Ops of an earlier pass this pass computes again for its own ops."""
    accumulating: tuple[Operation, ...] = ()
    """Ops of this pass that combine partial results over its tiles (final after it)."""
    carrying: tuple[Operation, ...] = ()
    """Scans of this pass (its own ops or recomputed ones) along a tiled dim: each tile
    starts from the running values the tile before left in the op's carry, which the
    pass sets to the scan's identity first (see ``carried_loops``)."""

    @property
    def is_pass(self) -> bool:
        return self.index % 2 == 1


@dataclass(frozen=True)
class TileSchedule:
    """The steps one parallel tile of a group runs, for given tile sizes."""

    body: GroupBody
    tiles: tuple[int, ...]
    parallel_loops: tuple[int, ...]
    """The tiled parallel dims, outermost first: the loops over tiles."""
    reduction_loops: tuple[int, ...]
    """The tiled reduction dims, outermost first: the loop of every pass."""
    steps: tuple[Step, ...]
    step_of: Mapping[Operation, int]
    """The step that first computes each op."""
    fused: Mapping[Operation, Operation] = field(default_factory=dict[Operation, Operation])
    """Producers an op computes itself (``fuses_producer``), to that op: not run alone."""
    _by_index: dict[int, Step] = field(init=False, repr=False, compare=False)
    _accumulating: frozenset[Operation] = field(init=False, repr=False, compare=False)
    _reads: dict[Operation, tuple[tuple[SSAValue, Dims], ...]] = field(
        init=False, repr=False, compare=False
    )
    _scratch: list[ScratchPlan] = field(init=False, repr=False, compare=False)
    """Its scratch plan, once computed."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_index", {s.index: s for s in self.steps})
        object.__setattr__(
            self, "_accumulating", frozenset(op for s in self.steps for op in s.accumulating)
        )
        object.__setattr__(self, "_reads", {})
        object.__setattr__(self, "_scratch", [])

    def scratch_plan(self) -> ScratchPlan:
        """:func:`plan_scratch` of this schedule, computed once."""
        if not self._scratch:
            self._scratch.append(_plan_scratch(self))
        return self._scratch[0]

    def reads(self, op: Operation) -> tuple[tuple[SSAValue, Dims], ...]:
        """The values ``op`` reads when it runs, with their dims: a fused producer's
        operands in place of its result."""
        found = self._reads.get(op)
        if found is not None:
            return found
        body = self.body
        out: list[tuple[SSAValue, Dims]] = []
        for i, v in enumerate(op.operands):
            p = body.producer(v)
            if p is not None and self.fused.get(p) is op:
                out += [(w, body.reads[(p, j)]) for j, w in enumerate(p.operands)]
            else:
                out.append((v, body.reads[(op, i)]))
        found = self._reads[op] = tuple(out)
        return found

    @property
    def passes(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.is_pass)

    @property
    def recomputed(self) -> frozenset[Operation]:
        return frozenset(op for s in self.steps for op in s.recomputed)

    def accumulates(self, op: Operation) -> bool:
        """Whether ``op`` combines partials over the tiles of a pass."""
        return op in self._accumulating

    def count(self, op: Operation) -> int:
        """How many elements each result element of an accumulating ``op`` combines
        (the full extents of its reduction dims: a mean divides by it)."""
        return self.body.count(op)

    def step(self, index: int) -> Step:
        """The step with schedule position ``index``."""
        return self._by_index[index]

    def describe(self) -> str:
        """``2 passes over d1 (recomputing exp)``, or ``one stage`` without tiled reductions."""
        if not self.reduction_loops:
            return "rows whole: one step per tile"
        loops = ", ".join(f"d{d}" for d in self.reduction_loops)
        text = f"{len(self.passes)} pass{'es' if len(self.passes) != 1 else ''} over {loops}"
        again = sorted({op.name for op in self.recomputed})
        if again:
            text += f" (recomputing {', '.join(again)})"
        return text


def schedule(body: GroupBody, tiles: Sequence[int]) -> TileSchedule:
    """The schedule of ``body`` with tile sizes ``tiles`` (see the module docstring).

    Raises :class:`PlanError` when the tiles break a rule.  The planners try
    the same tiles more than once: a body keeps the schedules it gave.
    """
    return body.schedule(tiles)


def _schedule(body: GroupBody, tiles: tuple[int, ...]) -> TileSchedule:
    if len(tiles) != body.rank:
        raise PlanError(f"{len(tiles)} tile sizes for a {body.rank}-d iteration space")
    tiled = {d for d in range(body.rank) if tiles[d] < body.extents[d]}
    red_tiled = {d for d in tiled if body.is_reduction(d)}
    members = body.members
    step_of: dict[Operation, int] = {}
    accumulating: set[Operation] = set()
    looped: dict[Operation, bool] = {}
    for op in body.ops:
        s = _structured(op)
        kinds = s.iterator_types()
        loop_dims = body.loop_dims(op)
        on_tiled = {d for d in loop_dims if d in red_tiled}
        reduces = {
            d
            for d, kind in zip(loop_dims, kinds, strict=True)
            if d in red_tiled and kind is IteratorType.REDUCTION
        }
        for d, kind in zip(loop_dims, kinds, strict=True):
            if d in red_tiled and kind is IteratorType.NORMALIZE:
                raise PlanError(
                    f"'{op.name}' normalizes along d{d}, which is tiled: the tile would not "
                    "hold whole rows (decompose the op to run it over tiles of its rows)"
                )
        carried = {loop_dims[c.dim] for c in s.carried_loops()}  # the op's own tiling
        scans = {d for d in carried if d in red_tiled}
        if scans and (on_tiled - scans or red_tiled - on_tiled):
            other = min((on_tiled - scans) | (red_tiled - on_tiled))
            raise PlanError(
                f"'{op.name}' scans along d{min(scans)} and d{other} is tiled too: a pass "
                f"over both would need its running values across tiles of d{other}"
            )
        if scans and len(scans) > 1:
            raise PlanError(f"'{op.name}' scans along several tiled dims")
        if reduces and on_tiled - reduces:
            kept = min(on_tiled - reduces)
            raise PlanError(
                f"'{op.name}' accumulates over d{min(reduces)} but keeps d{kept}, which is "
                f"tiled too: its partial results would be needed across tiles of d{kept}"
            )
        if reduces and red_tiled - on_tiled:
            other = min(red_tiled - on_tiled)
            raise PlanError(
                f"'{op.name}' accumulates over d{min(reduces)} but does not run along d{other}, "
                f"which is tiled too: a pass over both would add each partial result once per "
                f"tile of d{other}"
            )
        if not s.RECOMPUTABLE:
            missing = (tiled - red_tiled) - {d for d in loop_dims if d is not None}
            if missing:
                raise PlanError(
                    f"'{op.name}' does not run along d{min(missing)}, which is tiled: every "
                    f"tile along it would compute '{op.name}' again, and it is never recomputed"
                )
        if reduces:
            accumulating.add(op)
        looped[op] = bool(on_tiled)
        ready = 0
        for v in op.operands:
            p = v.owner
            if not isinstance(p, Operation) or p not in members:
                continue
            ready = max(ready, step_of[p] + (1 if p in accumulating else 0))
        if looped[op] != (ready % 2 == 1):  # passes are the odd steps, stages the even ones
            ready += 1
        step_of[op] = ready

    # per pass: its own ops, and the per-tile values of earlier passes it needs again
    # (at most RECOMPUTE_FACTOR times the ops, in all: each pass of a long chain with a
    # reduction every few ops would compute the whole chain before it again, a schedule
    # and a scratch plan quadratic in the chain's length)
    recomputed = 0
    recompute_limit = RECOMPUTE_FACTOR * len(body.ops) + RECOMPUTE_MIN
    steps: list[Step] = []
    by_step: dict[int, list[Operation]] = {}
    for op in body.ops:
        by_step.setdefault(step_of[op], []).append(op)
    last = max(step_of.values(), default=0)
    for index in range(last + 1):
        own = by_step.get(index, [])
        if index % 2 == 0:
            if own:
                steps.append(Step(index, tuple(own)))
            continue
        again: set[Operation] = set()
        pending = list(own)
        while pending:
            op = pending.pop()
            for v in op.operands:
                p = v.owner
                if not isinstance(p, Operation) or p not in members or p in accumulating:
                    continue
                if step_of[p] < index and looped[p] and p not in again:
                    if not _structured(p).RECOMPUTABLE:
                        raise PlanError(
                            f"the result of '{p.name}' is needed again by a later pass over "
                            f"the tiled reduction dims, and '{p.name}' is never recomputed"
                        )
                    again.add(p)
                    pending.append(p)
                    recomputed += 1
                    if recomputed > recompute_limit:
                        raise PlanError(
                            f"the passes over the tiled reduction dims would compute more "
                            f"than {recompute_limit} ops again (a long chain with a "
                            "reduction every few ops): keep the reduction dims whole"
                        )
        ordered = tuple(sorted([*again, *own], key=body.position.__getitem__))
        if ordered:
            steps.append(
                Step(
                    index,
                    ordered,
                    frozenset(again),
                    tuple(op for op in own if op in accumulating),
                    tuple(op for op in ordered if _scans_tiled(body, op, red_tiled)),
                )
            )
    fused: dict[Operation, Operation] = {}
    outputs = set(body.outputs)
    for step in steps:
        for op in step.ops:
            p = _structured(op).fuses_producer()
            if (
                p is not None
                and (p in step.recomputed or step_of.get(p) == step.index)
                and step_of[p] == step_of[op]
                and not set(p.results) & outputs
                and all(r.has_one_use() for r in p.results)
            ):
                fused[p] = op
    order = [d for d in range(body.rank)]
    return TileSchedule(
        body=body,
        tiles=tiles,
        parallel_loops=tuple(d for d in order if d in tiled and not body.is_reduction(d)),
        reduction_loops=tuple(d for d in order if d in red_tiled),
        steps=tuple(steps),
        step_of=step_of,
        fused=fused,
    )


def carried_dims(body: GroupBody, op: Operation) -> set[int]:
    """The space dims along which ``op`` carries a state from tile to tile (its
    ``carried_loops``: a scan's axis)."""
    loops = body.loop_dims(op)
    return {d for c in _structured(op).carried_loops() if (d := loops[c.dim]) is not None}


def _scans_tiled(body: GroupBody, op: Operation, red_tiled: set[int]) -> bool:
    """Whether ``op`` carries a state along a tiled dim (a scan along a cut axis)."""
    return bool(carried_dims(body, op) & red_tiled)


def carry_dims(body: GroupBody, op: Operation) -> Dims:
    """The dims of a scan's carry: its result's, with the carried dims kept as extent 1."""
    carried = carried_dims(body, op)
    return tuple(None if d in carried else d for d in body.dims[op.results[0]])


def carry_shape(body: GroupBody, op: Operation, tiles: Sequence[int]) -> tuple[int, ...]:
    """The shape of a scan's carry in a full tile."""
    shape = body.shape(op.results[0], tiles)
    return tuple(1 if d is None else n for n, d in zip(shape, carry_dims(body, op), strict=True))


# ---------------------------------------------------------------------------
# Scratch plans
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Buffer:
    """One scratch buffer of a tile: allocated once (per thread), reused by every tile."""

    dtype: np.dtype[Any]
    elements: int


@dataclass(frozen=True)
class Slot:
    """Where a value lives in one step: a scratch buffer, a group output, an input, ..."""

    kind: str
    """``buffer``, ``output``, ``input``, ``constant`` or ``view``."""
    index: int = -1
    """The buffer or output index (``buffer``, ``output``)."""


INPUT = Slot("input")
CONSTANT = Slot("constant")
VIEW = Slot("view")

Instance = tuple[SSAValue, int]
"""A value as computed in one step (a recomputed value has one instance per pass)."""


@dataclass(frozen=True)
class OpPlan:
    """The buffers one op uses in one step, besides its result slots."""

    workspaces: tuple[int, ...] = ()
    """Buffer index of each workspace the op declared."""
    accumulator: Slot | None = None
    """For an accumulating op: where the accumulator lives during its pass."""
    partial: int = -1
    """For an accumulating op: the buffer its per-tile partial result goes to."""
    carry: int = -1
    """For a scan along a tiled dim: the buffer holding its running values for the pass."""
    more_accumulators: tuple[int, ...] = ()
    """For a tuple accumulator: the buffers of its components after the first, for the pass."""
    more_partials: tuple[int, ...] = ()
    """For a tuple accumulator: the buffers of a tile's partial components after the first."""


@dataclass(frozen=True)
class ScratchPlan:
    """The buffers of one tile, and where every value (instance) lives."""

    buffers: tuple[Buffer, ...]
    slots: Mapping[Instance, Slot]
    ops: Mapping[tuple[Operation, int], OpPlan]
    """Per (op, step index): its workspaces and accumulator."""
    copies: tuple[tuple[int, Instance], ...]
    """Outputs that are copied from a value at the end of its step (an input, a view,
    a value yielded twice)."""

    @property
    def total(self) -> int:
        """The scratch of one tile, in elements."""
        return sum(b.elements for b in self.buffers)

    def slot(self, value: SSAValue, step: int) -> Slot:
        return self.slots[(value, step)]


class _Pool:
    """Greedy best-fit buffer reuse, per dtype; a buffer grows to its largest use."""

    def __init__(self) -> None:
        self.dtypes: list[np.dtype[Any]] = []
        self.sizes: list[int] = []
        self.free: list[int] = []

    def take(self, elements: int, dtype: np.dtype[Any]) -> int:
        candidates = [b for b in self.free if self.dtypes[b] == dtype]
        fitting = [b for b in candidates if self.sizes[b] >= elements]
        if fitting:
            buf = min(fitting, key=lambda b: (self.sizes[b], b))
        elif candidates:
            buf = max(candidates, key=lambda b: (self.sizes[b], -b))
            self.sizes[buf] = elements
        else:
            self.dtypes.append(dtype)
            self.sizes.append(elements)
            return len(self.sizes) - 1
        self.free.remove(buf)
        return buf

    def give(self, buf: int) -> None:
        if buf not in self.free:
            self.free.append(buf)


@dataclass
class _Event:
    """One op as it runs in the linear order of a tile (a pass's body once)."""

    op: Operation
    step: int
    position: int
    finalize: bool = False
    """The end of a pass: the op's accumulator becomes its result."""


@dataclass
class _Walk:
    events: list[_Event] = field(default_factory=list[_Event])
    pass_end: dict[int, int] = field(default_factory=dict[int, int])
    pass_start: dict[int, int] = field(default_factory=dict[int, int])
    step_end: dict[int, int] = field(default_factory=dict[int, int])
    """The position of each step's last event."""


def _walk(sched: TileSchedule) -> _Walk:
    walk = _Walk()
    position = 0
    for step in sched.steps:
        if step.is_pass:
            walk.pass_start[step.index] = position
        for op in step.ops:
            if op in sched.fused:
                continue  # its consumer computes it
            walk.events.append(_Event(op, step.index, position))
            position += 1
        if step.is_pass:
            for op in step.accumulating:
                walk.events.append(_Event(op, step.index, position, finalize=True))
                position += 1
            walk.pass_end[step.index] = position - 1
        if position > 0 and walk.events[-1].step == step.index:
            walk.step_end[step.index] = position - 1
    return walk


def instance_of(sched: TileSchedule, value: SSAValue, reader_step: int) -> Instance:
    """The instance of ``value`` that an op in step ``reader_step`` reads."""
    p = sched.body.producer(value)
    if p is None:
        return (value, -1)
    step = sched.step_of[p]
    if reader_step % 2 == 1 and reader_step != step and p in sched.step(reader_step).recomputed:
        return (value, reader_step)
    if sched.accumulates(p):
        return (value, step + 1)  # final after its pass
    return (value, step)


def plan_scratch(sched: TileSchedule) -> ScratchPlan:
    """The scratch buffers of one full tile of ``sched`` (see the module docstring)."""
    return sched.scratch_plan()


def _plan_scratch(sched: TileSchedule) -> ScratchPlan:
    body = sched.body
    tiles = sched.tiles
    walk = _walk(sched)

    dtypes: dict[SSAValue, np.dtype[Any]] = {}
    shapes: dict[SSAValue, tuple[int, ...]] = {}

    def shape(value: SSAValue) -> tuple[int, ...]:
        found = shapes.get(value)
        if found is None:
            found = shapes[value] = body.shape(value, tiles)
        return found

    def dtype(value: SSAValue) -> np.dtype[Any]:
        found = dtypes.get(value)
        if found is None:
            found = dtypes[value] = numpy_dtype(value.type)
        return found

    instances: dict[tuple[SSAValue, int], Instance] = {}

    def instance(value: SSAValue, reader_step: int) -> Instance:
        key = (value, reader_step)
        found = instances.get(key)
        if found is None:
            found = instances[key] = instance_of(sched, value, reader_step)
        return found

    # where instances are defined and last used
    last_use: dict[Instance, int] = {}
    for ev in walk.events:
        if ev.finalize:
            continue
        for v, _ in sched.reads(ev.op):
            inst = instance(v, ev.step)
            if inst[1] < 0:
                continue
            at = ev.position
            if ev.step % 2 == 1 and inst[1] != ev.step:
                at = walk.pass_end[ev.step]  # read on every tile of the pass
            last_use[inst] = max(last_use.get(inst, -1), at)

    # outputs: values computed straight into the output slices
    slots: dict[Instance, Slot] = {}
    copies: list[tuple[int, Instance]] = []
    direct: dict[Instance, int] = {}
    for k, (value, out_dims) in enumerate(zip(body.outputs, body.output_dims, strict=True)):
        p = body.producer(value)
        if p is None:
            copies.append((k, (value, -1)))
            continue
        inst = instance_of(sched, value, sched.step_of[p] + (1 if sched.accumulates(p) else 0))
        s = _structured(p)
        if inst in direct or body.dims[value] != out_dims or s.numpy_view() is not None:
            copies.append((k, inst))
            continue
        direct[inst] = k
    for _, inst in copies:
        # copied after the step's last op: no op of the step may overwrite it in place
        last_use[inst] = max(last_use.get(inst, -1), _end_of(walk, inst) + 1)
    # a view reads its operand's buffer whenever it is used: the operand lives as long
    # (else an in-place op could overwrite it first), and is released after the view's
    # last reader (which does not read the operand itself); later views first, for chains
    released_after: dict[int, list[Instance]] = {}
    for ev in reversed(walk.events):
        if ev.finalize or _structured(ev.op).numpy_view() is None:
            continue
        end = max((last_use.get((r, ev.step), -1) for r in ev.op.results), default=-1)
        for v, _ in sched.reads(ev.op):
            src = instance_of(sched, v, ev.step)
            if src[1] >= 0 and end > last_use.get(src, -1):
                last_use[src] = end
                released_after.setdefault(end, []).append(src)

    pool = _Pool()
    ops: dict[tuple[Operation, int], OpPlan] = {}
    hints = dict(direct)
    _chain_outputs(sched, walk, hints, last_use)
    owners: dict[int, set[Instance]] = {}
    """Per buffer: the live instances it holds (several after an in-place update)."""

    def hold(inst: Instance, slot: Slot) -> None:
        slots[inst] = slot
        if slot.kind == "buffer":
            owners.setdefault(slot.index, set()).add(inst)

    def release(inst: Instance) -> None:
        slot = slots.get(inst)
        if slot is None or slot.kind != "buffer":
            return
        held = owners[slot.index]
        held.discard(inst)
        if not held:
            pool.give(slot.index)

    def new_buffer(inst: Instance, dt: np.dtype[Any]) -> Slot:
        return Slot("buffer", pool.take(math.prod(shape(inst[0])), dt))

    accumulators: dict[Operation, Slot] = {}
    more_accumulators: dict[Operation, tuple[int, ...]] = {}
    """A tuple accumulator's components after the first (buffers, for its pass)."""
    carries: dict[tuple[Operation, int], int] = {}
    for ev in walk.events:
        op, step = ev.op, ev.step
        s = _structured(op)
        for key in [k for k in carries if walk.pass_end[k[1]] < ev.position]:
            pool.give(carries.pop(key))  # a pass ended: its carries are free
        if ev.finalize:
            acc_slot = accumulators.pop(op)
            inst = (op.results[0], step + 1)
            if inst in hints:
                target = Slot("output", hints[inst])
            elif s.accumulator_dtype() == dtype(inst[0]) and acc_slot.kind == "buffer":
                target = acc_slot  # finalized in place
            else:
                target = new_buffer(inst, dtype(inst[0]))
            if acc_slot.kind == "buffer" and acc_slot != target:
                pool.give(acc_slot.index)
            for extra in more_accumulators.pop(op, ()):  # read by the finalization: freed after
                pool.give(extra)
            hold(inst, target)
            if inst not in last_use:
                release(inst)
            continue

        if ev.position == walk.pass_start.get(step):
            # a pass begins: its accumulators live until it ends
            for acc_op in sched.step(step).accumulating:
                inst = (acc_op.results[0], step + 1)
                state = _structured(acc_op).accumulator()
                assert state is not None
                acc_dtype = state.dtypes[0]
                if inst in hints and acc_dtype == dtype(inst[0]) and state.size == 1:
                    accumulators[acc_op] = Slot("output", hints[inst])
                else:
                    accumulators[acc_op] = new_buffer(inst, acc_dtype)
                more_accumulators[acc_op] = tuple(
                    pool.take(math.prod(shape(inst[0])), dt) for dt in state.dtypes[1:]
                )
            # and so do the running values of its scans
            for scan_op in sched.step(step).carrying:
                carries[(scan_op, step)] = pool.take(
                    math.prod(carry_shape(body, scan_op, tiles)),
                    _structured(scan_op).carried_loops()[0].dtype,
                )

        reads = [instance(v, step) for v, _ in sched.reads(op)]
        dying = [r for r in dict.fromkeys(reads) if r[1] >= 0 and last_use.get(r) == ev.position]
        aliased = [
            r
            for r in released_after.get(ev.position, ())
            if r not in dying and last_use.get(r) == ev.position
        ]
        results = [(r, step) for r in op.results]
        taken: list[int] = []
        accumulator: Slot | None = None
        partial = -1
        more_partials: tuple[int, ...] = ()
        computes = constant_value(op) is None and s.numpy_view() is None
        if constant_value(op) is not None:
            for r in results:
                hold(r, CONSTANT)
        elif s.numpy_view() is not None:
            for r in results:
                hold(r, VIEW)
        elif op in accumulators:
            accumulator = accumulators[op]
            state = s.accumulator()
            assert state is not None
            size = math.prod(shape(op.results[0]))
            partial = pool.take(size, state.dtypes[0])
            more_partials = tuple(pool.take(size, dt) for dt in state.dtypes[1:])
            taken.extend((partial, *more_partials))
        else:
            for r in results:
                if r in hints:
                    hold(r, Slot("output", hints[r]))
                    continue
                reused = None
                if s.IN_PLACE:
                    reused = next(
                        (
                            o
                            for o in dying
                            if slots.get(o, INPUT).kind == "buffer"
                            and shape(o[0]) == shape(r[0])
                            and dtype(o[0]) == dtype(r[0])
                            and not any(slots.get(q) == slots[o] for q in results if q != r)
                        ),
                        None,
                    )
                hold(r, slots[reused] if reused is not None else new_buffer(r, dtype(r[0])))
        workspaces: tuple[int, ...] = ()
        if computes and _declares_workspaces(s):
            spaces = s.numpy_workspace(
                [body.shape(v, tiles, dims) for v, dims in sched.reads(op)],
                [shape(r) for r in op.results],
                [v in body.constants for v, _ in sched.reads(op)],
            )
            workspaces = tuple(pool.take(math.prod(sh), dt) for sh, dt in spaces)
            taken.extend(workspaces)
        ops[(op, step)] = OpPlan(
            workspaces,
            accumulator,
            partial,
            carries.get((op, step), -1),
            more_accumulators.get(op, ()) if accumulator is not None else (),
            more_partials,
        )
        for b in taken:
            pool.give(b)
        for o in dying + aliased:
            release(o)
        if op not in accumulators:
            for r in results:
                if r not in last_use and r not in hints:
                    release(r)
    buffers = tuple(Buffer(t, n) for t, n in zip(pool.dtypes, pool.sizes, strict=True))
    return ScratchPlan(buffers, slots, ops, tuple(copies))


def _declares_workspaces(s: StructuredOpInterface) -> bool:
    """Whether ``s`` overrides ``numpy_workspace`` (the default declares none)."""
    return type(s).numpy_workspace is not StructuredOpInterface.numpy_workspace


def _end_of(walk: _Walk, inst: Instance) -> int:
    """The position after which a copy of ``inst`` into an output is made (end of its step)."""
    return walk.step_end.get(inst[1], 0)


def _chain_outputs(
    sched: TileSchedule, walk: _Walk, hints: dict[Instance, int], last_use: dict[Instance, int]
) -> None:
    """Walk each output's element-wise chain back: a dying operand of the same shape and
    dtype is computed straight into the output slice too."""
    body = sched.body
    position = {(ev.op, ev.step): ev.position for ev in walk.events if not ev.finalize}
    for inst, k in list(hints.items()):
        cur = inst
        while True:
            p = body.producer(cur[0])
            if p is None or sched.accumulates(p) or (p, cur[1]) not in position:
                break
            s = _structured(p)
            if not s.IN_PLACE or s.numpy_view() is not None:
                break
            at = position[(p, cur[1])]
            nxt: Instance | None = None
            for v in p.operands:
                cand = instance_of(sched, v, cur[1])
                q = body.producer(v)
                if (
                    cand[1] == cur[1]
                    and q is not None
                    and not sched.accumulates(q)
                    and _structured(q).numpy_view() is None
                    and constant_value(q) is None
                    and cand not in hints
                    and last_use.get(cand) == at
                    and body.shape(v, sched.tiles) == body.shape(cur[0], sched.tiles)
                    and numpy_dtype(v.type) == numpy_dtype(cur[0].type)
                    and body.dims[v] == body.dims[cur[0]]
                ):
                    nxt = cand
                    break
            if nxt is None:
                break
            hints[nxt] = k
            cur = nxt


def iter_tiles(
    extents: Sequence[int], tiles: Sequence[int], dims: Sequence[int]
) -> Iterator[dict[int, tuple[int, int]]]:
    """The (start, stop) of every tile along ``dims``, in row-major order.

    A zero extent still gives one (empty) tile, so that results not running
    along it are computed.
    """
    ranges = [range(0, max(extents[d], 1), tiles[d]) for d in dims]

    def rec(k: int, acc: dict[int, tuple[int, int]]) -> Iterator[dict[int, tuple[int, int]]]:
        if k == len(dims):
            yield dict(acc)
            return
        d = dims[k]
        for start in ranges[k]:
            acc[d] = (start, min(start + tiles[d], extents[d]))
            yield from rec(k + 1, acc)

    yield from rec(0, {})


__all__ = [
    "Buffer",
    "Dims",
    "GroupBody",
    "Instance",
    "OpPlan",
    "PlanError",
    "ScratchPlan",
    "Slot",
    "Step",
    "TileSchedule",
    "carried_dims",
    "carry_dims",
    "carry_shape",
    "derived_kinds",
    "instance_of",
    "iter_tiles",
    "plan_scratch",
    "propagate_dims",
    "schedule",
]
