"""The native loops of a group whose plan cuts its reduction dims: run in the plan's
passes (:func:`loops_passes`, :func:`emit_passes`).

The loops take a group's reduction and normalize dims whole where they can: a row's
statistics then come from one sweep over it.  Where the ``kernel.tile``'s plan cuts such
a dim to fit the memory budget, and taking it whole would need more scratch than the
plan records (``log_softmax(a) + log_softmax(b, axis=0)``: ``b``'s column statistics
along the whole of the dim ``a``'s rows reduce), the loops run the plan's schedule as
the NumPy target does.  Each step of the recorded schedule
(:class:`~tdsl.dialects.kernel_schedule.TileSchedule`; where the loops decompose an op
the plan runs whole, the same planner's schedule of their body at the plan's tiles)
runs the loops' sweeps of its own ops: a stage once, a pass in a loop over the tiles of
the cut dims, its reductions and scans along them carrying their accumulators and
carries from one tile to the next (set to the identity before the loop, final after
it).  A value of an earlier step is read from its reduction's accumulator or computed
again, element-wise, as the loops compute values anyway; a value they keep in scratch
(a long chain's, a matmul's left operand) holds one tile of the cut dims, for the step
that computes it, or, along none of them nor of the key dims a step runs in tiles,
stays for the later steps (:func:`~tdsl.backend.llvm.loops_common.across_steps`:
``cumsum(a @ b, axis=1) + (softmax(a) @ e)``, the softmax's rows stored by a stage,
read by the pass's matmul).

The loops run a plan this way only where each step's reductions are its own (none is
computed again, and none whose result runs along a cut dim, or a key dim a step runs
in tiles, is read by a later step, directly or through element-wise ops: its
accumulator holds one tile), a scan along a cut dim is computed by one sweep (and a
stored scan's tile read in its own step), and no op needs packed strided inputs:
elsewhere they keep taking the dims whole, and warn where that breaks the budget.  A
step's flash attention runs its loop over key tiles inside the pass, as elsewhere
(``cumsum(softmax(a) @ c, axis=0) @ d``: the scan's rows in tiles, the scan's tile
stored for ``@ d``).  A matmul BLAS computes a tile at a time along a cut
contraction runs in a pass, BLAS adding each tile's product into its result, which
only later steps read (:func:`~tdsl.backend.llvm.loops_common.pass_gemms`; the plan
records ``summed``), where the planner does not loop over that contraction's tiles
inside the sweeps (:mod:`~tdsl.backend.llvm.loops_split`: that loop cannot keep its
order, or breaks the budget): ``((tanh(a) @ e) - max(a @ e, axis=1, keepdims=True)) @ d``, whose row
maximum needs all of ``a @ e``'s columns, the contraction of ``@ d``.  Another matmul,
by BLAS a tile at a time or in loops, runs in a pass on the cut dims' tiles of its rows,
its contraction whole (``sum(relu(a @ w) @ w2, axis=0)``: the rows the sum runs along,
in tiles); one that BLAS writes whole into an output before the loops (its contraction
whole there, its chain then in place over the output, point by point) is read from
there by the steps (``cumsum(a @ e, axis=0) + (relu(a) @ c)``: the scan's rows in
tiles).  (A scan along a dim the plan does not cut starts from its identity in each
sweep that computes it, as elsewhere: in each tile of a pass.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from tdsl.backend.llvm.loops_common import (
    _Code,
    _dim_set,
    _is_contraction,
    _is_reduction,
    _is_scan,
    across_steps,
    cut_reduction_dims,
    pass_gemms,
    sweep_readers,
    tiled_keys,
)
from tdsl.backend.llvm.loops_recorded import check_passes_stored
from tdsl.dialects.kernel_body import PlanError
from tdsl.dialects.kernel_schedule import carried_dims, schedule

if TYPE_CHECKING:
    from tdsl.backend.llvm.loops_plan import _GroupPlan


@dataclass(frozen=True)
class LoopsStep:
    """One step of the plan's schedule, as the loops run it."""

    cut: tuple[int, ...]
    """The cut dims a pass loops over in tiles (a stage: none)."""
    ops: frozenset[Operation]
    """The ops whose effects it emits (accumulating, writing an output): its own."""
    carried: frozenset[Operation]
    """Its reductions along the cut dims: set before its loop, final after it."""


def loops_passes(plan: _GroupPlan, cut: Sequence[int]) -> list[LoopsStep] | None:
    """The steps the loops run ``plan``'s group in, with the ``cut`` dims (its tile op's
    tiles along them; the rest as :func:`emit_passes` runs them), or None where they
    cannot (see the module docstring)."""
    body, tile = plan.body, plan.tile
    if (
        not cut
        or plan.split
        or plan.packed
        or plan.staged
        # (a matmul, by BLAS a tile at a time or in loops, of a tile of the cut dims:
        # not along its contraction, but where the plan records `summed`, each tile's
        # products added up; one BLAS computes whole before the loops takes it whole)
        or any(
            not plan.summed
            and _is_contraction(op)
            and op not in plan.blas
            and set(cut) & set(body.loop_dims(op)) - set(body.dims[op.results[0]])
            for op in body.ops
        )
        or any(not isinstance(body.producer(v), Operation) for v in plan.stored)
        or any(body.producer(v) is None for v in body.outputs)
    ):
        return None
    try:
        sched = tile.schedule()
        if tuple(sched.body.ops) != tuple(body.ops):
            # the loops decompose ops the plan runs whole (a softmax along a dim it
            # does not cut): the same planner's schedule of their body, at its tiles
            sched = schedule(body, tile.tiles_value)
        elif sched.staged:  # (the loops keep no value whole along the cut dims: its
            # later readers compute it again, in the steps the plan records)
            sched = schedule(body, tile.tiles_value, frozenset(), dict(sched.step_of))
    except PlanError:
        return None
    if sched.staged or any(_is_reduction(p) for p in sched.fused):
        return None  # (values kept, which the loops keep none of; a reduction fused)
    if set(sched.reduction_loops) != set(cut):
        return None
    step_of = sched.step_of

    def in_other_steps(v: SSAValue, p: Operation) -> bool:
        """Whether an op of the group in a step other than ``p``'s reads ``v``."""
        return any(
            u.operation in body.members and step_of[u.operation] != step_of[p] for u in v.uses
        )

    kept = across_steps(plan)
    for op, g in plan.gemm.items():  # (a stored operand holds one step's tile: its own,
        # or, along no cut dim, what any step reads)
        p = body.producer(g.a)
        if p is not None and step_of[p] != step_of[op] and g.a not in kept:
            return None
    for v in plan.stored:  # (a scan's, which a later step cannot compute again)
        p = body.producer(v)
        if p is not None and _is_scan(p) and in_other_steps(v, p):
            return None
    for step in sched.steps:
        if any(_is_reduction(op) for op in step.recomputed):
            return None  # (the loops compute a reduction once, in its accumulator)
    for op in pass_gemms(plan):  # (read once all tiles' products are in: by later steps)
        own = [u for u in op.results[0].uses if u.operation in body.members]
        if any(step_of[u.operation] == step_of[op] for u in own):
            return None
    tiled = {*cut, *tiled_keys(plan)}
    for op in body.ops:
        if not _is_reduction(op) or not tiled & set(body.dims[op.results[0]]):
            continue
        readers = sweep_readers(body, plan.blas, op.results[0])  # (or through element-wise
        # ops: `q @ k.T * 0.125`, computed again in a later step from the scores)
        if any(step_of[r] != step_of[op] for r in readers):
            return None  # (its accumulator holds one tile of the cut dims or keys)
    scans = [op for op in body.ops if carried_dims(body, op) & set(cut)]
    if any(not _one_sweep(plan, op, step_of) for op in scans):
        return None
    steps: list[LoopsStep] = []
    for step in sched.steps:
        own = frozenset(op for op in body.ops if step_of[op] == step.index)
        carried = frozenset(  # (reducing or scanning along a cut dim: across its tiles)
            op
            for op in own
            if op in scans
            or (
                _is_reduction(op)
                and op not in plan.blas  # (computed whole before the loops)
                and set(cut) & set(body.loop_dims(op))
                and not set(cut) & set(body.dims[op.results[0]])
            )
        )
        steps.append(LoopsStep(tuple(cut) if step.is_pass else (), own, carried))
    return steps


def plan_passes(plan: _GroupPlan, tiles: Sequence[int], limit: int) -> list[LoopsStep] | None:
    """The steps of ``plan`` (:func:`loops_passes`) where the loops should run its tile op's
    plan in them: a recorded loops plan that cuts reduction dims, or, planning from
    ``tiles``, one whose scratch taking them whole breaks ``limit`` where the tile op's
    tiles along them would not.  Sets ``plan``'s tiles and stored values for them (those
    the plan stages, which the loops would keep whole along the cut dims, are computed
    again), its parallel tiles fitted to ``limit`` again."""
    tile = plan.tile
    if plan.recorded is not None:
        if cut := cut_reduction_dims(plan, plan.tiles):
            check_passes_stored(plan)
        return _with_passes(plan, cut, None, limit)
    scratch = plan._scratch_elements()  # pyright: ignore[reportPrivateUsage]
    if scratch <= limit or scratch <= plan._scratch_at(tile.tiles_value):  # pyright: ignore[reportPrivateUsage]
        return None  # (it fits; or the plan's tiles would not make it fit)
    cut = cut_reduction_dims(plan, tile.tiles_value)
    start = [tile.tiles_value[d] if d in cut else t for d, t in enumerate(tiles)]
    return _with_passes(plan, cut, start, limit)


def _with_passes(
    plan: _GroupPlan, cut: Sequence[int], start: list[int] | None, limit: int
) -> list[LoopsStep] | None:
    if not cut:
        return None
    kept = (plan.tiles, plan.staged_values, plan.keep_long_chains, plan.split)
    plan.staged_values = []  # (kept whole along the cut dims: the loops compute them again)
    # (while planning them: no dims hoisted, no values staged in an output slice, which a
    # step would write for all the cut dims' tiles at once; found by fuzzing)
    plan.passes = []
    if start is not None:
        plan.tiles = tuple(start)
    # (a pass's BLAS calls run on the cut dims' tiles; a contraction cut too, refused)
    plan.split = {op: r for op, r in plan.split.items() if plan.tiles[r] < plan.extents[r]}
    plan._plan()  # pyright: ignore[reportPrivateUsage]
    passes = loops_passes(plan, cut)
    if passes is None:  # (as they were)
        plan.tiles, plan.staged_values, plan.keep_long_chains, plan.split = kept
        plan.passes = None
        plan._plan()  # pyright: ignore[reportPrivateUsage]
    elif start is not None and plan._fit(start, limit) > limit and plan.kept:  # pyright: ignore[reportPrivateUsage]
        plan.keep_long_chains = False  # (long chains' values in scratch break it: not kept)
        plan.tiles = tuple(start)
        plan._plan()  # pyright: ignore[reportPrivateUsage]
        passes = loops_passes(plan, cut)
        plan._fit(start, limit)  # pyright: ignore[reportPrivateUsage]
    return passes


def _one_sweep(plan: _GroupPlan, scan: Operation, step_of: Mapping[Operation, int]) -> bool:
    """Whether the loops compute ``scan``, which runs along a cut dim, in one sweep of its
    own step: its carry, set before the pass's tiles, then runs on from tile to tile (a
    second sweep would run it on again)."""
    body = plan.body
    if scan not in plan.carries:
        return False
    readers = sweep_readers(body, plan.blas, scan.results[0])
    if any(step_of[r] != step_of[scan] for r in readers):
        return False
    sweeps = {(plan.level[r], _dim_set(body.loop_dims(r))) for r in readers if _is_reduction(r)}
    for k, v in enumerate(body.outputs):
        p = body.producer(v)
        if p is scan or (p in readers and not _is_reduction(p)):
            sweeps.add((plan.level[p], _dim_set(body.output_dims[k])))
    return len(sweeps) == 1


def emit_passes(
    plan: _GroupPlan,
    code: _Code,
    starts: dict[int, SSAValue],
    ends: dict[int, SSAValue],
    run: Callable[[int, _Code, frozenset[Operation], frozenset[Operation]], None],
    finalize: Callable[[int, _Code, frozenset[Operation]], None],
    start: Callable[[Operation, _Code], None],
    forget: Callable[[], None],
) -> None:
    """The loops of ``plan``'s steps (:attr:`~_GroupPlan.passes`) in ``code``: each
    step's levels, a pass's in a loop over the tiles of its cut dims.  ``run(level, at,
    ops, carried)`` emits a level's sweeps of ``ops`` at ``at`` (not setting the
    ``carried`` accumulators), ``finalize(level, at, ops)`` writes the outputs of those
    of its reductions, ``start(op, at)`` sets a reduction's accumulator to the identity,
    ``forget()`` drops the values stored in scratch from those later steps read (a pass
    stores one tile of them: the next step computes them again)."""
    top = max(plan.level.values(), default=0)
    for step in plan.passes or ():
        levels = [lv for lv in range(top + 1) if any(plan.level[op] == lv for op in step.ops)]
        for op in sorted(step.carried, key=plan.body.position.__getitem__):
            start(op, code)  # (once, before the pass's tiles)
        at = code
        for d in step.cut:
            size = at.index(plan.tiles[d])
            at, starts[d] = at.loop(at.index(0), at.index(plan.extents[d]), size)
            end = at.insert(arith.AddiOp(starts[d], size))
            ends[d] = at.insert(arith.MinSIOp(end, at.index(plan.extents[d])))
        for level in levels:
            run(level, at, step.ops, step.carried)
            finalize(level, at, step.ops - step.carried)
        for d in step.cut:
            del starts[d], ends[d]
        for level in levels:
            finalize(level, code, step.carried)
        forget()


__all__ = ["LoopsStep", "emit_passes", "loops_passes", "plan_passes"]
