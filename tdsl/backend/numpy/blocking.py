"""The tiles a group actually runs with: cache blocking, threads, and ops run whole.

The IR records the largest tiles that fit the memory budget.  The target may
cut the outermost *parallel* dim that every op of the group runs along finer
(tiles along it are independent: no op computes again on each of them and no
two write the same results, so this changes neither the schedule nor the
results) and must keep the scratch of all its threads within the recorded
scratch:

- **cache blocking**: the tile is cut so that no value's block along that dim
  exceeds :data:`CACHE_BLOCK_BYTES` (NumPy re-reads each block once per
  ufunc, so the blocks should stay in L2);
- **threads**: with ``threads`` > 1 the loop over that dim is split into
  tile-aligned chunks, one per thread, each with its own scratch, only when
  every thread gets at least :data:`THREAD_MIN_BYTES` of data;
- **ops run whole**: an op that prefers few large calls (a
  :class:`~tdsl.dialects.op_interfaces.Contraction`: a matmul on BLAS) whose operands are group inputs and whose result goes
  straight into an output runs once on the whole arrays before the loop; its
  consumers then read the output tile by tile.  One that cannot (it reads a
  computed prologue, say) keeps the recorded tiles and the group
  single-threaded, so that threaded BLAS never runs inside worker threads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation

from tdsl.dialects.kernel_plan import (
    GroupBody,
    ScratchPlan,
    TileSchedule,
    plan_scratch,
    schedule,
)
from tdsl.dialects.structured import Contraction, IteratorType, numpy_dtype, tensor_shape

CACHE_BLOCK_BYTES = 256 * 1024
"""Largest block of one value a tile touches (the L2 cache holds a few)."""

THREAD_MIN_BYTES = 1 << 20
"""Data per thread below which a thread hand-off (~150 us) does not pay."""


@dataclass(frozen=True)
class Run:
    """How a group runs in the NumPy target."""

    tiles: tuple[int, ...]
    schedule: TileSchedule
    scratch: ScratchPlan
    threads: int
    whole: frozenset[Operation]
    """Ops run once on whole arrays before the loops."""
    notes: tuple[str, ...]


def _plan(
    body: GroupBody,
    tiles: Sequence[int],
    staged: frozenset[Operation] = frozenset(),
    sweeps: Mapping[Operation, int] | None = None,
) -> tuple[TileSchedule, ScratchPlan]:
    sched = schedule(body, tiles, staged, sweeps)
    return sched, plan_scratch(sched)


def _runs_whole(body: GroupBody, sched: TileSchedule, plan: ScratchPlan) -> set[Operation]:
    out: set[Operation] = set()
    for op in body.ops:
        if not isinstance(op, Contraction) or sched.step_of.get(op) != 0:
            continue
        if any(body.producer(v) is not None for v in op.operands):
            continue
        if all(
            plan.slots.get((r, 0)) is not None and plan.slots[(r, 0)].kind == "output"
            for r in op.results
        ):
            out.add(op)
    return out


def _bytes_along(body: GroupBody, tiles: Sequence[int], d: int) -> int:
    """The largest block, in bytes, of a value running along ``d``, per unit of ``d``'s tile."""
    unit = list(tiles)
    unit[d] = 1
    best = 0
    values = [*body.dims.items()]
    for value, dims in values:
        if d in dims:
            n = math.prod(body.shape(value, unit, dims)) * numpy_dtype(value.type).itemsize
            best = max(best, n)
    return best


def plan_run(
    body: GroupBody,
    ir_tiles: Sequence[int],
    recorded: int | None,
    threads: int,
    staged: frozenset[Operation] = frozenset(),
    sweeps: Mapping[Operation, int] | None = None,
) -> Run:
    """The tiles, threads and whole-array ops of a group (see the module docstring).

    ``recorded`` is the scratch the IR allows (all threads together); None for
    a group the IR does not tile, which runs as one tile.  ``staged`` and
    ``sweeps`` are the rest of the plan the IR records (cutting a parallel dim
    finer changes neither).
    """
    tiles = [min(t, max(1, e)) for t, e in zip(ir_tiles, body.extents, strict=True)]
    sched, plan = _plan(body, tiles, staged, sweeps)
    notes: list[str] = []
    whole = _runs_whole(body, sched, plan)
    in_loop = [op for op in body.ops if isinstance(op, Contraction) and op not in whole]
    # an op that does not run along the cut dim would compute again on each of its
    # tiles, and on several threads write the same results at once
    runs_along = [set(body.loop_dims(op)) for op in body.ops]
    free = next(
        (
            d
            for d in range(body.rank)
            if body.kinds[d] is IteratorType.PARALLEL
            and body.extents[d] > 1
            and all(d in dims for dims in runs_along)
        ),
        None,
    )
    if recorded is None or free is None or in_loop:
        if in_loop and recorded is not None and threads > 1:
            notes.append("one thread: a matmul in the tile loop keeps BLAS threads to itself")
        return Run(tuple(tiles), sched, plan, 1, frozenset(whole), tuple(notes))

    per_unit = _bytes_along(body, tiles, free)
    if per_unit:
        cap = max(1, CACHE_BLOCK_BYTES // per_unit)
        if cap < tiles[free]:
            tiles[free] = cap
            notes.append(f"cache blocking: d{free} cut to {cap}")

    total = sum(
        math.prod(tensor_shape(v)) * numpy_dtype(v.type).itemsize
        for v in {
            *body.outputs,
            *(op.operands[i] for (op, i) in body.reads if body.producer(op.operands[i]) is None),
        }
    )
    nthreads = threads if total >= threads * THREAD_MIN_BYTES else 1
    if nthreads > 1:
        per_thread = -(-body.extents[free] // nthreads)
        tiles[free] = min(tiles[free], per_thread)

    def fits(size: int, n: int) -> bool:
        trial = list(tiles)
        trial[free] = size
        return n * _plan(body, trial, staged, sweeps)[1].total <= recorded

    if not fits(tiles[free], nthreads):
        if nthreads > 1 and not fits(1, nthreads):
            nthreads = 1
        lo, hi = 1, tiles[free]
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid, nthreads):
                lo = mid
            else:
                hi = mid - 1
        tiles[free] = lo
        notes.append(f"d{free} cut to {lo} to keep scratch within {recorded}")
    sched, plan = _plan(body, tiles, staged, sweeps)
    if nthreads > 1:
        nthreads = min(nthreads, -(-body.extents[free] // tiles[free]))
    if nthreads * plan.total > recorded:
        notes.append(
            f"needs {nthreads * plan.total} elements of scratch, more than the recorded {recorded}"
        )
    whole = _runs_whole(body, sched, plan)
    return Run(tuple(tiles), sched, plan, nthreads, frozenset(whole), tuple(notes))


__all__ = ["CACHE_BLOCK_BYTES", "THREAD_MIN_BYTES", "Run", "plan_run"]
