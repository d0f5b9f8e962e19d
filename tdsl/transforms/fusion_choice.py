"""The choice of a function's fusion plan under a memory budget, and its memory.

:func:`choose_plans` takes the greedy plan of the budget when its need (the
values it materializes plus the largest scratch of one group) fits, else the
plan of least need among the greedy plans of :data:`PLAN_BUDGETS`;
:class:`PlanMemory` is what the chosen plan needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tdsl.dialects.op_interfaces import Contraction, StridedView, row_major_strides
from tdsl.dialects.structured import (
    tensor_shape,
)
from tdsl.dialects.tensordsl import ConcatenateOp, TakeOp
from tdsl.errors import internal_error
from tdsl.transforms.fusion_planner import BlockPlan, plan_function
from tdsl.transforms.fusion_scratch import group_min_scratch, remembered_scratch

# ---------------------------------------------------------------------------
# A plan's memory: its scratch plus the values it materializes
# ---------------------------------------------------------------------------
#
# The greedy planner bounds each group's scratch by the budget, but a cut it
# makes holds a value whole between two groups, and that value is memory too.
# A plan's need is the values it materializes (those the function does not
# return: a result lives in its output) plus the largest scratch any of its
# groups needs at its smallest legal tile under what the materialized values
# leave of the budget (a softmax whose rows are longer than that runs over
# tiles of its rows, decomposed); groups run one after the other, and every
# materialized value may be alive while any of them runs.  The plan of a budget
# B is the greedy plan at B when its need fits B; else, among the greedy plans
# at the budgets of :data:`PLAN_BUDGETS` (a fixed ladder, so that every budget
# below the need considers the same plans, and a smaller budget never needs
# more), the one of least need.  The ladder is climbed from the bottom and left
# at the first budget whose greedy plan the budget refused no merge of
# (``BlockPlan.budget_refused``): the budget enters the grouping only through
# rule 3, whose test is monotone in it, so every larger budget plans the same
# groups.

PLAN_BUDGETS = tuple(4**k for k in range(18))
"""The budgets whose greedy plans are considered when the plan of the budget does not fit
(1 to 4**17 elements; a budget past the program's largest values plans like the last one
that changes anything)."""


@dataclass(frozen=True)
class PlanMemory:
    """What one function's chosen fusion plan needs, in elements.

    A call allocates, beyond its outputs, at most ``max(budget, need)``
    elements: the materialized values, plus the scratch of one group at a
    time, each group tiled under :attr:`tile_budget`.
    """

    function: str
    budget: int
    """The memory budget the plan was chosen for."""
    materialized: int
    """Elements of the values held whole between groups that the function does not return."""
    scratch: int
    """The largest scratch any group needs at its smallest legal tile."""
    planned_at: int
    """The budget of the greedy plan chosen (``budget`` itself when it fits)."""
    considered: int = 1
    """How many distinct plans were compared."""

    @property
    def need(self) -> int:
        """The least memory this plan runs in: materialized values plus the largest scratch."""
        return self.materialized + self.scratch

    @property
    def fits(self) -> bool:
        return self.need <= self.budget

    @property
    def tile_budget(self) -> int:
        """The scratch each group's tiles may use: what the materialized values leave of the
        budget, or the least the plan needs when no plan fits."""
        return max(self.budget - self.materialized, self.scratch)

    def describe(self) -> str:
        """``needs 2048 elements (2048 of scratch, 0 materialized between groups)``."""
        return (
            f"needs {plural_elements(self.need)} ({self.scratch} of scratch at the smallest "
            f"tiles, {self.materialized} materialized between groups)"
        )


def plural_elements(n: int) -> str:
    return f"{n} element" + ("" if n == 1 else "s")


def _returned(fn: func.FuncOp) -> set[SSAValue]:
    return {
        v
        for op in fn.walk()
        if isinstance(op, func.ReturnOp) and op.parent_op() is fn
        for v in op.operands
    }


def held_for_views(plan: BlockPlan) -> dict[SSAValue, tuple[int, str]]:
    """The values ``plan`` holds whole for the views and joins between its groups: the
    operand of a window or a reshape (read in place), the copy a reshape makes where its
    operand's layout allows no view (see :class:`StridedView`), a join's result, and a
    join's operand that other ops read too (copied into the join; one the join alone
    reads is written into it in place): each value with its elements and why (arguments
    and constants cost nothing; their views are free)."""
    computed = {r for g in plan.groups for r in g.results}
    layouts: dict[SSAValue, tuple[int, tuple[int, ...]] | None] = {}
    found: dict[SSAValue, tuple[int, str]] = {}
    for unit in plan.order:
        if isinstance(unit, TakeOp):
            found[unit.result] = (math.prod(tensor_shape(unit.result)), "gathered by " + unit.name)
            if unit.input in computed and unit.input not in found:
                found[unit.input] = (
                    math.prod(tensor_shape(unit.input)),
                    f"held whole for the {unit.name} that reads it",
                )
            continue
        if isinstance(unit, ConcatenateOp):
            found[unit.result] = (math.prod(tensor_shape(unit.result)), "joined by " + unit.name)
            for v in unit.inputs:  # a group result only the join reads is written in place
                alone = v.get_user_of_unique_use() is unit
                if v in computed and not alone and v not in found:
                    found[v] = (
                        math.prod(tensor_shape(v)),
                        f"held whole for the {unit.name} that copies it",
                    )
            continue
        if not isinstance(unit, StridedView) or not isinstance(unit, Operation):
            continue
        source = unit.operands[0]
        shape = tensor_shape(source)
        layout = layouts.get(source) or (0, row_major_strides(shape))
        root = source
        while isinstance(root.owner, StridedView) and isinstance(root.owner, Operation):
            root = root.owner.operands[0]
        if root in computed and root not in found:
            found[root] = (
                math.prod(tensor_shape(root)),
                f"held whole for the {unit.name} that reads it in place",
            )
        result = unit.layout(shape, layout[1])
        if result is None:  # copied row-major, then read in place
            found[unit.results[0]] = (
                math.prod(shape),
                f"{unit.name} copies its operand: its layout allows no view",
            )
            result = unit.layout(shape, row_major_strides(shape))
        layouts[unit.results[0]] = result
        view = unit.results[0]
        read_by_blas = any(isinstance(u.operation, Contraction) for u in view.uses)
        if (
            result is not None
            and read_by_blas
            and result[1] != row_major_strides(tensor_shape(view))
        ):
            found.setdefault(
                view,
                (
                    math.prod(tensor_shape(view)),
                    "copied row-major for the matmul that reads it (a BLAS call on the "
                    "native target)",
                ),
            )
    return found


def plans_memory(
    fn: func.FuncOp, plans: Sequence[BlockPlan], budget: int, returned: set[SSAValue] | None = None
) -> tuple[int, int]:
    """The elements ``plans`` (the plans of ``fn``'s blocks) materialize that ``fn`` does
    not return, and the largest scratch of a group at its smallest legal tile under what
    they leave of ``budget`` (``tdsl-tile``'s budget for the groups)."""
    if returned is None:
        returned = _returned(fn)
    held: dict[SSAValue, int] = {}
    for plan in plans:
        for edge in plan.unfused:
            v = edge.value
            if v not in returned and v not in held:
                held[v] = math.prod(tensor_shape(v))
        for v, (elements, _) in held_for_views(plan).items():
            if v not in returned and v not in held:
                held[v] = elements
    materialized = sum(held.values())
    left = max(0, budget - materialized)
    scratch = 0
    for plan in plans:
        for g in plan.groups:
            need = group_min_scratch(g.ops, g.results, left, g.space)
            # a group with no legal tile is the tiler's error to report
            scratch = max(scratch, 0 if need is None else need)
    return materialized, scratch


def _partition(plans: Sequence[BlockPlan]) -> tuple[tuple[int, ...], ...]:
    """The groups of ``plans`` as sets of op ids (to tell plans apart)."""
    return tuple(tuple(sorted(id(op) for op in g.ops)) for plan in plans for g in plan.groups)


def choose_plans(
    fn: func.FuncOp, memory_budget: int, fallback_budget: int | None = None
) -> tuple[list[BlockPlan], PlanMemory]:
    """The plans of ``fn``'s blocks for ``memory_budget`` and what they need (see above):
    the greedy plan at the budget when its need fits, else the plan of least need.

    With a ``fallback_budget`` larger than ``memory_budget``, a function no plan of
    ``memory_budget`` fits is planned at ``fallback_budget`` instead (the returned
    memory's ``budget`` says which): the JIT's default, whose plans of least need can
    have tiles too small to run fast (one row, one column of a hidden layer)."""
    with remembered_scratch():  # the planner asks again for groups under each budget
        plans, memory = _choose_plans(fn, memory_budget)
        if memory.fits or fallback_budget is None or fallback_budget <= memory_budget:
            return plans, memory
        return _choose_plans(fn, fallback_budget)


def _choose_plans(fn: func.FuncOp, memory_budget: int) -> tuple[list[BlockPlan], PlanMemory]:
    name = fn.sym_name.data
    returned = _returned(fn)
    plans = plan_function(fn, memory_budget)
    held, scratch = plans_memory(fn, plans, memory_budget, returned)
    best = PlanMemory(name, memory_budget, held, scratch, memory_budget)
    if best.fits:
        return plans, best
    # (not the budget's own greedy plan: a budget between two of the ladder's would
    # then be the only one to have it, and a smaller budget could need more)
    chosen: list[BlockPlan] | None = None
    seen: set[tuple[tuple[int, ...], ...]] = set()
    # past 3x all the program's elements the budget refuses no merge
    cap = 3 * sum(
        math.prod(tensor_shape(r))
        for op in fn.walk()
        for r in op.results
        if isinstance(r.type, TensorType)
    )
    for b in PLAN_BUDGETS:
        if chosen is not None and b > 4 * cap + 16:
            break
        candidate = plans if b == memory_budget else plan_function(fn, b)
        key = _partition(candidate)
        if key not in seen:
            seen.add(key)
            # (scored under the budget, which the groups are tiled under, not b)
            held, scratch = plans_memory(fn, candidate, memory_budget, returned)
            if chosen is None or held + scratch < best.need:
                best = PlanMemory(name, memory_budget, held, scratch, b)
                chosen = candidate
        if not any(p.budget_refused for p in candidate):
            break  # (every larger budget plans these groups)
    if chosen is None:  # (the ladder's first budget is always planned)
        raise internal_error(f"tdsl-fuse: no fusion plan of @{name} was considered")
    best = PlanMemory(
        name, memory_budget, best.materialized, best.scratch, best.planned_at, len(seen)
    )
    return chosen, best
