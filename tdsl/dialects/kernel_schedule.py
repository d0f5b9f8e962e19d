"""The schedule of a ``kernel.tile`` (:class:`TileSchedule`, made by
:func:`schedule`): the loops over tiles in order, the :class:`Step` each op runs at,
the dims a reduction or scan carries across tiles (:func:`carried_dims`,
:func:`carry_dims`, :func:`carry_shape`), and :func:`iter_tiles`, the tiles of a space
in row-major order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from xdsl.ir import Operation, SSAValue

from tdsl.dialects.kernel_body import (
    Dims,
    GroupBody,
    PlanError,
    is_recomputable,
    require_structured,
)
from tdsl.dialects.structured import IteratorType, Scan

RECOMPUTE_FACTOR = 4
RECOMPUTE_MIN = 256
"""A schedule's passes may compute at most ``RECOMPUTE_FACTOR * ops + RECOMPUTE_MIN`` ops
again in all (see :func:`schedule`); more is a :class:`PlanError`."""

if TYPE_CHECKING:
    from tdsl.dialects.kernel_scratch import ScratchPlan


@dataclass(frozen=True)
class Step:
    """What runs once per parallel tile (a stage) or once per reduction tile (a pass)."""

    index: int
    """Position in the schedule: stages have even indices, passes odd ones."""
    ops: tuple[Operation, ...]
    """The ops it runs (a pass: on every reduction tile), in program order but that a
    value only one later op reads is computed just before it (:func:`_live_order`)."""
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
    staged: frozenset[Operation] = frozenset()
    """Ops whose result a later pass reads from its whole rows, kept in scratch by the
    pass that computes it, instead of computing it again."""
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
        kept = sorted({op.name for op in self.staged})
        if kept:
            text += f" (staging {', '.join(kept)})"
        return text


def _runs_alike(body: GroupBody, op: Operation) -> bool:
    """Whether ``op``'s operands run along its result's space dims (none broadcasts in the
    group): what an op fusing it may take for granted, whatever the tile shapes (cut to 1
    along a broadcast dim, a tile's operands have the product's shape)."""
    result = body.dims.get(op.results[0])
    return all(body.reads.get((op, i)) == result for i in range(len(op.operands)))


def schedule(
    body: GroupBody,
    tiles: Sequence[int],
    staged: frozenset[Operation] = frozenset(),
    sweeps: Mapping[Operation, int] | None = None,
) -> TileSchedule:
    """The schedule of ``body`` with tile sizes ``tiles`` (see :mod:`tdsl.dialects.kernel_plan`).

    ``staged`` ops keep their results for later passes instead of being
    computed again; ``sweeps`` gives the step of every op (a recorded plan),
    else each op runs in the earliest step it can.  Raises :class:`PlanError`
    when the tiles, the staged ops or the sweeps break a rule.  The planners try
    the same tiles more than once: a body keeps the schedules it gave.
    """
    key = (
        tuple(tiles),
        tuple(sorted(body.position[op] for op in staged)),
        None if sweeps is None else tuple(sweeps[op] for op in body.ops),
    )
    found = body._schedules.get(key)  # pyright: ignore[reportPrivateUsage]
    if found is None:
        try:
            found = compute_schedule(body, key[0], staged, sweeps)
        except PlanError as err:
            found = err
        body._schedules[key] = found  # pyright: ignore[reportPrivateUsage]
    if isinstance(found, PlanError):
        raise PlanError(*found.args)
    return found


def compute_schedule(
    body: GroupBody,
    tiles: tuple[int, ...],
    staged: frozenset[Operation] = frozenset(),
    sweeps: Mapping[Operation, int] | None = None,
) -> TileSchedule:
    if len(tiles) != body.rank:
        raise PlanError(f"{len(tiles)} tile sizes for a {body.rank}-d iteration space")
    tiled = {d for d in range(body.rank) if tiles[d] < body.extents[d]}
    red_tiled = {d for d in tiled if body.is_reduction(d)}
    members = body.members
    step_of: dict[Operation, int] = {}
    accumulating: set[Operation] = set()
    looped: dict[Operation, bool] = {}
    for op in body.ops:
        s = require_structured(op)
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
        scans = carried_dims(body, op) & red_tiled  # the op's own tiling, cut
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
        if not is_recomputable(op):
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
        if sweeps is not None:
            ready = _recorded_sweep(op, sweeps[op], ready, looped[op], on_tiled, len(body.ops))
        step_of[op] = ready
    if sweeps is None:
        _sink(body, step_of, looped, accumulating)
    for op in staged:
        _check_staged(op, looped, accumulating)

    # per pass: its own ops, and the per-tile values of earlier passes it needs again
    # (at most RECOMPUTE_FACTOR times the ops, in all: each pass of a long chain with a
    # reduction every few ops would compute the whole chain before it again, a schedule
    # and a scratch plan quadratic in the chain's length)
    staged_read: set[Operation] = set()
    recomputed = 0
    recompute_limit = RECOMPUTE_FACTOR * len(body.ops) + RECOMPUTE_MIN
    steps: list[Step] = []
    by_step: dict[int, list[Operation]] = {}
    for op in body.ops:
        by_step.setdefault(step_of[op], []).append(op)
    for index in sorted(by_step):  # (the sweeps no op runs in run nothing)
        own = by_step.get(index, [])
        if index % 2 == 0:
            if own:
                steps.append(Step(index, _live_order(body, own)))
            continue
        again: set[Operation] = set()
        pending = list(own)
        while pending:
            op = pending.pop()
            for v in op.operands:
                p = v.owner
                if not isinstance(p, Operation) or p not in members or p in accumulating:
                    continue
                if p in staged:
                    staged_read.add(p)  # read from its whole rows: not computed again
                    continue
                if step_of[p] < index and looped[p] and p not in again:
                    if not is_recomputable(p):
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
        ordered = _live_order(body, sorted([*again, *own], key=body.position.__getitem__))
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
    for op in staged - staged_read:
        raise PlanError(
            f"'{op.name}' is staged, but no later pass reads it: there is nothing to keep"
        )
    fused: dict[Operation, Operation] = {}
    outputs = set(body.outputs)
    for step in steps:
        for op in step.ops:
            p = require_structured(op).fuses_producer()
            if (
                p is not None
                and (p in step.recomputed or step_of.get(p) == step.index)
                and step_of[p] == step_of[op]
                and not set(p.results) & outputs
                and all(r.has_one_use() for r in p.results)
                and _runs_alike(body, p)
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
        staged=staged,
        fused=fused,
    )


def _live_order(body: GroupBody, ops: Sequence[Operation]) -> tuple[Operation, ...]:
    """``ops`` (a step's, in program order) in the order a step runs them: each op whose
    one result only one later op of the step reads (and the group does not yield) runs
    just before that reader, its own such operands first (the largest tree of them
    first), so that fewer tiles are live at once (gelu's ``0.5 * x``, read only by the
    last product, no longer holds a buffer over the ``tanh`` chain).  Pure ops, each value computed once: only the schedule
    moves.  An explicit stack, so no recursion depth depends on the program's length."""
    members = set(ops)
    outputs = set(body.outputs)

    group = body.members

    def deferrable(op: Operation) -> bool:
        """Whether ``op``'s one result has one reader in the group, an op of ``ops``."""
        if len(op.results) != 1 or op.results[0] in outputs:
            return False
        user: Operation | None = None
        for use in op.results[0].uses:
            o = use.operation
            if o is user or o not in group:
                continue
            if user is not None:
                return False
            user = o
        return user is not None and user in members

    deferred = {op for op in ops if deferrable(op)}
    # each deferred op's tree of deferred operands (one reader each: a forest), sized in
    # program order; the larger operand tree runs first, the smaller one's tile is then
    # live for less
    size: dict[Operation, int] = {}
    for op in ops:
        n = 1
        for v in op.operands:
            p = v.owner
            if p in deferred:
                n += size.get(cast(Operation, p), 0)
        size[op] = n
    order: list[Operation] = []
    done: set[Operation] = set()
    for root in ops:
        if root in deferred:
            continue
        stack: list[tuple[Operation, bool]] = [(root, False)]
        while stack:
            op, expanded = stack.pop()
            if op in done:
                continue
            if expanded:
                done.add(op)
                order.append(op)
                continue
            stack.append((op, True))
            pending = [p for v in op.operands if (p := v.owner) in deferred and p not in done]
            # (the stack runs the last pushed first: the largest tree)
            for p in sorted(dict.fromkeys(pending), key=lambda p: size[p]):
                stack.append((p, False))
    if len(order) != len(ops):  # (a deferred op whose reader is not in the step: none)
        return tuple(ops)
    return tuple(order)


def _sink(
    body: GroupBody,
    step_of: dict[Operation, int],
    looped: Mapping[Operation, bool],
    accumulating: set[Operation],
) -> None:
    """Move each op a pass computes tile by tile, and no op of that pass reads, to the
    first pass that reads it: computed earlier, a later pass would compute it again
    anyway.  Ops are visited last first, so chains move together."""
    for op in reversed(body.ops):
        if not looped[op] or op in accumulating:
            continue
        readers = [
            step_of[u.operation] for r in op.results for u in r.uses if u.operation in body.members
        ]
        if readers and min(readers) > step_of[op]:
            step_of[op] = min(readers)


def _recorded_sweep(
    op: Operation, given: int, ready: int, looped: bool, on_tiled: set[int], ops: int
) -> int:
    """``given``, the recorded step of ``op``, when the op can run there (and is one a
    plan of ``ops`` ops can need: each op starts at most two sweeps after the last)."""
    if given > 2 * ops:
        raise PlanError(
            f"'{op.name}' is recorded in sweep {given}, past the last a plan of {ops} ops "
            f"can need ({2 * ops})"
        )
    if given < ready:
        raise PlanError(
            f"'{op.name}' is recorded in sweep {given}, but what it reads is ready only in "
            f"sweep {ready}"
        )
    if looped != (given % 2 == 1):
        if looped:
            raise PlanError(
                f"'{op.name}' runs along the tiled reduction dim d{min(on_tiled)}: it runs in a "
                f"pass (an odd sweep), not in sweep {given}"
            )
        raise PlanError(
            f"'{op.name}' runs along no tiled reduction dim: it runs in a stage (an even "
            f"sweep), not in sweep {given}"
        )
    return given


def _check_staged(
    op: Operation, looped: Mapping[Operation, bool], accumulating: set[Operation]
) -> None:
    """Refuse to stage ``op`` unless a pass computes it tile by tile."""
    if op in accumulating or not looped[op]:
        raise PlanError(
            f"'{op.name}' is staged, but it is computed whole once per parallel tile (a "
            f"{'reduction over the passes' if op in accumulating else 'stage'}): only a "
            "value a pass computes tile by tile can be staged"
        )
    if require_structured(op).is_view():
        raise PlanError(f"'{op.name}' is staged, but it is a view: stage what it views")


def staged_shape(sched: TileSchedule, value: SSAValue) -> tuple[int, ...]:
    """The shape of a staged value's buffer: its tile's, but whole along the tiled
    reduction dims (the rows a later pass reads, tile by tile)."""
    body = sched.body
    return tuple(
        body.extents[d] if d in sched.reduction_loops else n
        for n, d in zip(body.shape(value, sched.tiles), body.dims[value], strict=True)
    )


def carried_dims(body: GroupBody, op: Operation) -> set[int]:
    """The space dims along which ``op`` carries a state from tile to tile (its
    ``carried_loops``: a scan's axis); none for an op that is not a
    :class:`~tdsl.dialects.op_interfaces.Scan`."""
    if not isinstance(op, Scan):
        return set()
    loops = body.loop_dims(op)
    return {d for c in op.carried_loops() if (d := loops[c.dim]) is not None}


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
