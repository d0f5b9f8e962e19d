"""``tdsl-plan-loops``: record in each ``kernel.tile`` the plan of the native target's
loops, which ``tdsl-lower-to-loops`` then runs as recorded.

The native loops run a group's reduction, normalize and scan dims element by element,
so their plan differs from the tile plan the NumPy target runs: the loops take those
dims whole, cut the first parallel dim into tiles threads can share, halve parallel
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

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
from tdsl.dialects.kernel import TileOp
from tdsl.errors import TdslOptionError


def plan_loops(module: ModuleOp, threads: int = 1) -> None:
    """Record the loops' plan of every ``kernel.tile`` of ``module`` that has none, for
    calls on ``threads`` threads (a group whose loops call BLAS fits its tiles to its
    scratch over ``threads``: each thread runs tiles in a scratch of its own, with BLAS on
    that thread alone)."""
    for op in module.walk():
        if isinstance(op, TileOp) and op.loops_plan is None:
            op.record_loops_plan(_GroupPlan(op, threads=threads).record())


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

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.threads < 1:
            raise TdslOptionError(f"tdsl-plan-loops: threads={self.threads} must be at least 1")
        plan_loops(op, self.threads)


__all__ = ["PlanLoopsPass", "plan_loops"]
