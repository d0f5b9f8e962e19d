"""How a tiled group runs: its schedule of passes, and the one scratch model.

A group (the body of a ``kernel.tile``, or of a ``kernel.fused`` being
planned) is described by a :class:`GroupBody`: its ops, the extent and kind of
each dimension of its iteration space, and for every value the space dim each
of its dims runs along (``None``: taken whole).  Given tile sizes,

* :func:`schedule` says what runs when (a :class:`TileSchedule`), and
* :func:`plan_scratch` says which buffers one tile allocates (a
  :class:`ScratchPlan`).

``tdsl-tile`` records the plan in the IR (the iterator kinds, the step of
every op, the staged values and the scratch buffers), the ``kernel.tile``
verifier checks that the recorded plan can run and needs the recorded
scratch, and the interpreter, the NumPy target and the loops lowering run
the recorded steps and staged values: one model, so they cannot disagree.

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
an op accumulates is ready after its pass, others at once; then an op a
pass computes tile by tile that no op of its pass reads moves to the first
pass that reads it (computed earlier, that pass would compute it again
anyway).  A recorded plan may put an op in any later step of the right kind
(a pass for an op that runs along a tiled reduction dim, else a stage).  So
``x - mean(x, axis=0)`` with rows tiled runs the mean in pass 1 and the
subtraction in pass 3, after the stage 2 that finalizes nothing new.  A value
a later pass needs that an earlier pass computed tile by tile (``exp(x)`` in
``exp(x) - max(exp(x))``) is *recomputed* in the later pass, which is only
allowed for ops that may be recomputed (never a matmul), unless the value
is *staged*: the pass that computes it keeps it whole along the tiled
reduction dims (a buffer of the parallel tile's rows), and later passes read
their tile of it.  With no reduction dim
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
dim takes its carry for the whole pass; a staged value takes its rows from
the pass that computes it to the last pass that reads it.  Each op's workspace
(``numpy_workspace``) lives while the op runs.  A new value takes the smallest
free buffer of its dtype that fits, else the largest free one, grown; failing
that a new buffer.  The scratch of a tile is the sum of its buffers'
elements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from tdsl.dialects.kernel_body import (
    Dims,
    GroupBody,
    PlanError,
    body_state,
    derived_kinds,
    propagate_dims,
)
from tdsl.dialects.kernel_schedule import (
    Step,
    TileSchedule,
    carried_dims,
    carry_dims,
    carry_shape,
    iter_tiles,
    schedule,
    staged_shape,
)
from tdsl.dialects.kernel_scratch import (
    Buffer,
    Instance,
    OpPlan,
    ScratchPlan,
    Slot,
    instance_of,
    plan_scratch,
)
from tdsl.dialects.structured import IteratorType


class LoopsPlan(NamedTuple):
    """The native loops' plan of a ``kernel.tile`` (see its ``loops`` clause)."""

    tiles: tuple[int, ...]
    stored: tuple[int, ...]
    """Values kept in scratch: indices over the results of the loops' body ops."""
    blas: tuple[int, ...]
    """Positions among the loops' body ops of the matmuls BLAS computes."""
    limit: int | None = None
    """The scratch (elements, all threads together) the loops' tiles fit, where the
    memory budget leaves them more than the tile op's ``scratch`` (None: that)."""
    summed: bool = False
    """Whether the loops run the tile op's passes along the contractions of matmuls
    that they cut, each tile's product added into the result, by BLAS or in loops
    (else such a contraction runs in BLAS's loop over its tiles within the sweeps)."""


def loops_plan_error(
    plan: LoopsPlan,
    space: Sequence[int],
    kinds: Sequence[IteratorType],
    tiles: Sequence[int],
    scratch: int,
) -> str | None:
    """What is wrong with ``plan`` as far as it reads without lowering, for a tile op of
    iteration ``space`` with dims of ``kinds``, ``tiles`` and ``scratch`` elements (None:
    nothing): a tile per dim within its extent, the dims other than parallel ones whole
    (a reduction dim may take the tile op's tile: a ``softmax_matmul``'s keys), and no
    value or matmul twice (``tdsl-lower-to-loops`` checks the rest)."""
    if plan.limit is not None and plan.limit < scratch:
        return (
            f"loops limit {plan.limit} is less than the {scratch} elements of scratch its "
            "plan records (leave it out: the loops then fit that)"
        )
    if len(plan.tiles) != len(space):
        return f"has {len(plan.tiles)} loops tiles for a {len(space)}-d iteration space"
    for d, (t, e, kind, own) in enumerate(zip(plan.tiles, space, kinds, tiles, strict=True)):
        whole = max(e, 1)  # (or in this op's tiles: a reduction dim, any it cuts)
        cut = t <= min(own, whole) and (kind is IteratorType.REDUCTION or own < whole)
        if kind is not IteratorType.PARALLEL and t != whole and not cut:
            shown = f"{whole}" if own >= whole else f"{whole} or at most {own}, its tile"
            return (
                f"loops tile {t} along d{d} must be {shown}: the loops run along a {kind} "
                "dim whole, or a softmax_matmul's keys in its tiles"
            )
        if not 1 <= t <= whole:
            return f"loops tile {t} along d{d} must be between 1 and {whole}"
    for name, values in (("stored", plan.stored), ("blas", plan.blas)):
        if any(v < 0 for v in values) or len(set(values)) != len(values):
            return f"loops {name} {list(values)} must be distinct non-negative numbers"
    return None


__all__ = [
    "Buffer",
    "Dims",
    "GroupBody",
    "Instance",
    "LoopsPlan",
    "OpPlan",
    "PlanError",
    "ScratchPlan",
    "Slot",
    "Step",
    "TileSchedule",
    "body_state",
    "carried_dims",
    "carry_dims",
    "carry_shape",
    "derived_kinds",
    "instance_of",
    "iter_tiles",
    "loops_plan_error",
    "plan_scratch",
    "propagate_dims",
    "schedule",
    "staged_shape",
]
