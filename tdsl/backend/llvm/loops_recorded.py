"""A loops plan recorded in a ``kernel.tile`` (``tdsl-plan-loops``, or a hand edit),
read back for :class:`~tdsl.backend.llvm.loops_plan._GroupPlan`: the matmuls it gives
BLAS, the values it stores and the dims it cuts, each with a located error where the
loops cannot run it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue

from tdsl.backend.llvm.loops_choices import (
    LOOPS_SCRATCH_SLACK,
    TileGemm,
    blas_output,
    tile_gemm,
)
from tdsl.backend.llvm.loops_common import _is_contraction, _is_reduction
from tdsl.backend.llvm.loops_split import carried
from tdsl.dialects.kernel_body import GroupBody
from tdsl.dialects.structured import IteratorType
from tdsl.errors import TdslIRError, TdslLoopsBudgetWarning, warn
from tdsl.transforms.locations import op_location

if TYPE_CHECKING:
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]


def recorded_blas(
    plan: _GroupPlan, positions: Sequence[int]
) -> tuple[dict[Operation, int], dict[Operation, TileGemm]]:
    """The matmuls the recorded plan gives BLAS: those computed whole into an output
    (to it), and those computed tile by tile; a located error for a position that
    is neither."""
    ops = plan.body.ops
    blas: dict[Operation, int] = {}
    gemm: dict[Operation, TileGemm] = {}
    cut = {op for op, r in plan.split.items() if plan.tiles[r] < plan.extents[r]}
    for i in positions:
        # (a matmul along a contraction the plan cuts adds its tiles' products)
        k = blas_output(plan.body, ops[i]) if 0 <= i < len(ops) and ops[i] not in cut else None
        if k is not None and k not in blas.values():
            blas[ops[i]] = k
            continue
        g = tile_gemm(plan.body, ops[i], plan.args) if 0 <= i < len(ops) else None
        reads = plan._gemm_reads  # pyright: ignore[reportPrivateUsage]
        if g is None or ops[i] in gemm or not reads(g, gemm):
            # (the ops are numbered in the form the loops run the group, which a plan that
            # cuts a reduction dim changes: a softmax feeding a matmul as flash attention)
            matmuls = [str(j) for j, op in enumerate(ops) if _is_contraction(op)]
            raise TdslIRError(
                f"the loops plan gives BLAS op {i} of the group, which is "
                + ("not in its body" if not 0 <= i < len(ops) else f"'{ops[i].name}'")
                + ": BLAS computes only a 2-D f32 or f64 matmul whose right operand is a "
                "group input or its transpose (the group's matmuls, as the loops run it "
                f"with these tiles, are op {', '.join(matmuls) or 'none'})",
                op=plan.tile,
            )
        gemm[ops[i]] = g
    return blas, gemm


def numbered_values(body: GroupBody) -> list[SSAValue]:
    """The values a recorded plan numbers: the results of the body's ops, in order."""
    return [r for op in body.ops for r in op.results]


def read_once(plan: _GroupPlan, needed: Sequence[SSAValue]) -> list[SSAValue]:
    """The computed operands that matmuls in loops read once (``plan.once``, a matvec's) to
    store besides ``needed``: those a recorded plan stores, or, planning, all where long
    chains' values are kept (where the scratch allows).  Stored, each is computed in a
    sweep of its own, vectorized: ``tanh(a) @ e`` (2048x2048 by 2048x1, f32, one thread)
    took 5.9 ms so, 23.8 ms computed in the matvec's loop."""
    if plan.recorded is None:
        return [v for v in plan.once if v not in needed] if plan.keep_long_chains else []
    values = numbered_values(plan.body)  # (a number of no value: recorded_stored refuses it)
    recorded = {values[i] for i in plan.recorded.stored if 0 <= i < len(values)}
    return [v for v in plan.once if v in recorded and v not in needed]


def recorded_stored(plan: _GroupPlan, numbers: Sequence[int], needed: Sequence[SSAValue]) -> None:
    """Store the values the recorded plan numbers, in its order; a located error for a
    number that is no value, or a plan without one the loops need stored."""
    values = numbered_values(plan.body)
    for i in numbers:
        if not 0 <= i < len(values):
            raise TdslIRError(
                f"the loops plan stores value {i}, and the group's ops compute "
                f"{len(values)} values (numbered from 0)",
                op=plan.tile,
            )
    # (in program order, whatever the edit's: a value computed in place from another
    # shares its scratch slot, and the loops store it after that one)
    chosen = [values[i] for i in sorted(numbers)]
    missing = [v for v in needed if v not in chosen]
    if missing:
        index = values.index(missing[0])
        producer = plan.body.producer(missing[0])
        raise TdslIRError(
            f"the loops plan does not store value {index} "
            f"('{producer.name if producer else '?'}'), "
            "which the loops need stored (a matmul's computed operand, a staged value, "
            f"or a scan read along more dims than its own): add {index} to `stored`",
            op=plan.tile,
        )
    cut = [r for r in plan.split.values() if plan.tiles[r] < plan.extents[r]]
    for v in chosen:
        producer = plan.body.producer(v)
        if v not in needed and isinstance(producer, Operation):
            r = next((r for r in cut if carried(plan.body, producer, r)), None)
            if r is not None:  # (stored as it is accumulated: [10, 26] for [20, 52])
                raise TdslIRError(
                    f"the loops plan stores value {values.index(v)} ('{producer.name}'), a "
                    f"reduction over d{r}, which the plan cuts: the loop over d{r}'s tiles "
                    "adds each into its accumulator, whole only after the last, so it "
                    f"cannot be stored as it is computed: remove {values.index(v)} from "
                    "`stored`",
                    op=plan.tile,
                )
        if v not in needed and (producer in plan.flash or producer in plan.split):
            raise TdslIRError(
                f"the loops plan stores value {values.index(v)} ('{producer.name}'), which "
                "the loops compute over tiles of its keys (flash attention, or a matmul's "
                "contraction in tiles): it is whole only after the last, so it cannot be "
                f"stored as it is computed: remove {values.index(v)} from `stored`",
                op=plan.tile,
            )
    plan.stored = chosen
    plan.kept = [v for v in chosen if v not in needed]


def check_passes_stored(plan: _GroupPlan) -> None:
    """A located error where a recorded plan whose loops run the tile op's passes stores
    a reduction's result (a matmul's too): a later step computes a stored value again,
    and a reduction cannot be computed element by element (the loops raised a bare
    NotImplementedError or KeyError; found by fuzzing)."""
    for v in plan.kept:
        p = plan.body.producer(v)
        if isinstance(p, Operation) and _is_reduction(p):
            n = numbered_values(plan.body).index(v)
            raise TdslIRError(
                f"the loops plan stores value {n} ('{p.name}'), a reduction's result, and "
                "runs the tile op's passes, whose later steps compute each stored value "
                f"again (a reduction's they cannot, element by element): remove {n} from "
                "`stored`",
                op=plan.tile,
            )


def check_cut_dims(
    tile: Operation, body: GroupBody, tiles: Sequence[int], keys: Mapping[Operation, int]
) -> None:
    """A located error where a recorded loops plan cuts a dim the loops run whole: any
    but a parallel dim or a key dim of ``keys``: the key dim of a ``softmax_matmul``
    (:func:`~tdsl.backend.llvm.loops_flash.flash_keys`) or a matmul's contraction
    (:func:`~tdsl.backend.llvm.loops_split.contraction_keys`); or, where the loops run
    the tile op's passes (:mod:`~tdsl.backend.llvm.loops_passes`), the dims it cuts."""
    for d, (t, e) in enumerate(zip(tiles, body.extents, strict=True)):
        if t < e and body.kinds[d] is not IteratorType.PARALLEL and d not in keys.values():
            raise TdslIRError(
                f"the loops plan cuts d{d} into tiles of {t}, a {body.kinds[d]} dim the loops "
                "run whole here (they cut a softmax_matmul's key dim, the contraction of a "
                "matmul BLAS computes a tile at a time, where every op along it feeds that "
                "op, or a dim the tile op's plan cuts, running its passes, where they "
                "compute no reduction twice; a matmul's contraction among those only where "
                f"the plan records `summed`): give {e}",
                op=tile,
            )


def check_split(plan: _GroupPlan) -> None:
    """A located error where the plan cuts a matmul's contraction (``plan.split``) but
    does not give the matmul BLAS: the loops add its tiles' products by BLAS calls only."""
    for op, r in plan.split.items():
        if op not in plan.gemm:
            n = plan.body.position[op]
            passes = plan.tile.tiles_value[r] < plan.extents[r]  # (the tile op's cut)
            summed = "record `summed` (its passes add up the tiles' products), " * passes
            raise TdslIRError(
                f"the loops plan cuts d{r}, the contraction of '{op.name}' (op {n} of the "
                f"group), but does not give it BLAS: add {n} to `blas`, {summed}or give "
                f"d{r} whole",
                op=plan.tile,
            )


def check_recorded_scratch(plan: _GroupPlan, scratch: int, limit: int, empty: bool) -> None:
    """A recorded plan whose parallel tiles need more scratch (``scratch``, per tile) than
    the tile op records (``limit``: its scratch, or its plan's ``limit``), where smaller
    ones would fit, breaks the budget: a located error (an edited ``loops tiles``; the
    planner halves them until they fit).  An ``empty`` group computes nothing.  As for the
    planner's own plans, :data:`LOOPS_SCRATCH_SLACK` elements beyond ``limit`` are allowed
    (the loops' scratch model and the NumPy target's differ in small accumulators)."""
    if plan.recorded is None or empty or scratch <= limit + LOOPS_SCRATCH_SLACK:
        return
    kinds = plan.body.kinds
    least = plan._scratch_at_tiles(  # pyright: ignore[reportPrivateUsage]
        [1 if k is IteratorType.PARALLEL else t for k, t in zip(kinds, plan.tiles, strict=True)]
    )
    if least <= limit:
        raise TdslIRError(
            f"'{plan.tile.name}' op loops tiles {list(plan.tiles)} need {scratch} elements of "
            f"scratch per tile, more than the {limit} the plan records (its scratch, or its "
            f"`limit`): take smaller parallel tiles, or record `limit {scratch}` if the "
            "memory budget allows it",
            op=plan.tile,
        )


def warn_over_budget(plan: _GroupPlan, scratch: int, limit: int) -> None:
    """A :class:`~tdsl.errors.TdslLoopsBudgetWarning` at ``plan``'s tile op where its
    loops' ``scratch`` breaks the ``limit`` it records (:func:`over_budget`)."""
    why = over_budget(plan, scratch, limit)
    if why is None:
        return
    name = plan.tile.group_name or "a group"
    where = op_location(plan.tile)
    warn(
        TdslLoopsBudgetWarning(
            f"{'' if where is None else f'{where}: '}'{name}': the native loops need "
            f"{scratch} elements of scratch per tile, more than the {limit} its plan "
            f"records under the memory budget ({why}); the numpy target keeps the "
            f"plan, or give a budget of at least {scratch} elements"
        ),
        stacklevel=3,
    )


def over_budget(plan: _GroupPlan, scratch: int, limit: int) -> str | None:
    """Why the loops' ``scratch`` (elements per tile) breaks the ``limit`` the tile op
    records, or None where it keeps it (or breaks it by at most
    :data:`LOOPS_SCRATCH_SLACK`, for the same reasons the plan would)."""
    if scratch <= limit:
        return None
    if scratch > plan._scratch_at(plan.tile.tiles_value):  # pyright: ignore[reportPrivateUsage]
        # a value they store spans a dim the plan cuts to fit the budget
        return (
            "the loops take scan and reduction dims whole, and this plan cuts one: they run "
            "its passes only without packed inputs, reductions computed twice or read by "
            "a later step"
        )
    if scratch > limit + LOOPS_SCRATCH_SLACK:
        # where no parallel dim is left to cut, values are stored whole
        return "the loops store values the plan does not keep"
    return None
