"""``tdsl-plan-loops``: record in each ``kernel.tile`` the plan of the native target's
loops, which ``tdsl-lower-to-loops`` then runs as recorded.

The native loops run a group's reduction, normalize and scan dims element by element,
so their plan differs from the tile plan the NumPy target runs: the loops take those
dims whole (but a ``softmax_matmul``'s keys, in tiles: flash attention,
:mod:`~tdsl.backend.llvm.loops_flash`; an MLP's hidden dim, the contraction of a
matmul BLAS computes a tile at a time: :mod:`~tdsl.backend.llvm.loops_split`; and the
reduction dims the tile plan cuts where whole they would not fit its scratch: its
passes, :mod:`~tdsl.backend.llvm.loops_passes`), cut the
first parallel dim into tiles threads can share, halve parallel
tiles until their scratch fits the scratch the tile op records (under the memory
budget), keep in scratch the values later loop nests read (a matmul's computed
operand, a staged value, a long chain's value) and give BLAS the matmuls it can
compute (:class:`~tdsl.backend.llvm.loops_plan._GroupPlan`).  This pass writes those
choices into the tile op as ``loops tiles [...] stored [...] blas [...]``, so they
print, parse back, verify, and can be edited by hand: the lowering follows an edited
plan, and refuses one it cannot run with a located error.  A plan already recorded
is kept; ``tdsl-lower-to-loops`` plans the groups that have none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
from tdsl.defaults import check_memory_budget
from tdsl.dialects.kernel import TileOp
from tdsl.dialects.structured import tensor_shape
from tdsl.errors import TdslOptionError

LOOPS_MIN_SCRATCH = 1 << 16
"""The scratch (elements, all threads) the loops of a group that calls no BLAS a tile at
a time may take where its tile op records less, if the budget leaves it: tiles of many
rows (128 rows of 256 f32 for each of two threads), not tiles that outgrow the caches.
(Groups that call BLAS a tile at a time may take all the budget leaves, see
:func:`plan_loops`.)"""


def plan_loops(module: ModuleOp, threads: int = 1, memory_budget: int | None = None) -> None:
    """Record the loops' plan of every ``kernel.tile`` of ``module`` that has none, for
    calls on ``threads`` threads (a group whose loops call BLAS fits its tiles to its
    scratch over ``threads``: each thread runs tiles in a scratch of its own, with BLAS on
    that thread alone).

    With a ``memory_budget``, the loops of a function's groups may use what the values
    it holds whole between groups leave of it (:func:`loops_allowance`), up to
    :data:`LOOPS_MIN_SCRATCH`, where a tile op records less: the NumPy target's plan
    records what it needs, and it needs less than the loops where it reads a value in
    place that they keep a tile of (``softmax(x @ w)``'s product: on no scratch their
    tiles were one row).  A group whose loops call
    BLAS a tile at a time may use all of that allowance: BLAS packs its right operand
    again on every call, and taller tiles make fewer calls (an MLP's 512 rows ran in 6
    tiles of 86 within its tile op's scratch, 1.25x the bare GEMMs' time, and in 4 of 128
    within the allowance, 1.14x).  The plan records what they use (``limit N``)."""
    for fn in module.walk():
        if not isinstance(fn, func.FuncOp):
            continue
        allowance = None if memory_budget is None else loops_allowance(fn, memory_budget)
        limit = None if allowance is None else min(LOOPS_MIN_SCRATCH, allowance)
        for op in fn.walk():
            if isinstance(op, TileOp) and op.loops_plan is None:
                plan = _GroupPlan(op, threads=threads, limit=limit, blas_limit=allowance)
                op.record_loops_plan(plan.record())


def loops_allowance(fn: func.FuncOp, memory_budget: int) -> int:
    """What ``memory_budget`` (elements) leaves a group's scratch in ``fn``: less the
    elements of the values held whole between groups that ``fn`` does not return (the
    results of its tile ops that it does not return as they are), as ``tdsl-fuse``
    counts them."""
    returned: set[SSAValue] = set()
    for op in fn.walk():
        if isinstance(op, func.ReturnOp):
            returned.update(op.operands)
    held = sum(
        math.prod(tensor_shape(r))
        for op in fn.walk()
        if isinstance(op, TileOp)
        for r in op.results
        if r not in returned
    )
    return max(0, memory_budget - held)


@dataclass(frozen=True)
class PlanLoopsPass(ModulePass):
    """Record the native loops' plan of each ``kernel.tile`` (tiles, stored values,
    BLAS calls), which ``tdsl-lower-to-loops`` runs as recorded."""

    name = "tdsl-plan-loops"

    threads: int = 1
    """The threads the kernel runs on: a group whose loops call BLAS takes tiles whose
    scratch fits that many times over in what its tile op records, and its tiles are
    shared among the threads, BLAS running on each alone (on one thread, BLAS would have
    both and the element-wise sweeps between its calls one)."""

    memory_budget: int | None = None
    """The budget the kernel was planned under: its groups' loops may use what the values
    held whole between groups leave of it, where that is more than a tile op's scratch
    (see :func:`plan_loops`).  Without it they fit the tile op's scratch."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.threads < 1:
            raise TdslOptionError(f"tdsl-plan-loops: threads={self.threads} must be at least 1")
        if self.memory_budget is not None:
            check_memory_budget(self.memory_budget)
        plan_loops(op, self.threads, self.memory_budget)


__all__ = ["LOOPS_MIN_SCRATCH", "PlanLoopsPass", "loops_allowance", "plan_loops"]
