"""The greedy fusion planner of :mod:`tdsl.transforms.fusion_analysis`.

:class:`FusionGroup`, :class:`UnfusedEdge` and :class:`BlockPlan` (what a plan
is), ``FusionPlanner`` (the greedy grouping of one block, in program order, over the
parts of :mod:`tdsl.transforms.fusion_parts`), and :func:`plan_block` /
:func:`plan_function`, which run it on a block or on every block of a function.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.traits import IsTerminator

from tdsl.dialects.kernel import FusedOp
from tdsl.dialects.kernel_plan import GroupBody
from tdsl.dialects.structured import (
    Contraction,
    fmt_shape,
    is_constant,
    structured,
    tensor_shape,
)
from tdsl.errors import internal_error
from tdsl.transforms.fusion_parts import (
    FusionPart,
    PartMerge,
    PartSpaces,
    groupable,
    is_cloned_constant,
)
from tdsl.transforms.fusion_scratch import (
    LiveBound,
    group_body,
    group_min_scratch,
    max_into,
    merge_nodes,
    range_add,
)
from tdsl.transforms.iteration_space import Inconsistent

# ---------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------


def _block_users(block: Block, op: Operation) -> list[Operation]:
    """The block-level ops using a result of ``op`` (an ancestor for nested uses)."""
    users: list[Operation] = []
    for res in op.results:
        for use in res.uses:
            user = block.find_ancestor_op_in_block(use.operation)
            if user is not None and user not in users:
                users.append(user)
    return users


@dataclass(frozen=True, eq=False)
class FusionGroup:
    """One planned (or built) fusion group.

    ``ops`` are the computing ops in program order; ``constants`` the
    (at most one-element) constants cloned into it; ``inputs`` the values it
    reads from outside (first use order); ``results`` the values it computes
    that are used outside it (program order).
    """

    name: str
    function: str
    ops: tuple[Operation, ...]
    constants: tuple[Operation, ...]
    inputs: tuple[SSAValue, ...]
    results: tuple[SSAValue, ...]
    space: GroupBody
    budget: int
    """The memory budget it was planned under."""

    @functools.cached_property
    def min_scratch(self) -> int:
        """Scratch elements of its smallest legal tile (the scratch model of ``tdsl-tile``),
        -1 when none is legal.  Computed when first asked (the report asks; the pass
        does not need it)."""
        need = group_min_scratch(self.ops, self.results, self.budget, self.space)
        return -1 if need is None else need


def describe_space(body: GroupBody) -> str:
    """``64x300 (d0 parallel, d1 reduction)``."""
    kinds = ", ".join(f"d{i} {k}" for i, k in enumerate(body.kinds))
    return f"{fmt_shape(body.extents)} ({kinds or 'no dims'})"


@dataclass(frozen=True)
class UnfusedEdge:
    """A producer-consumer edge between two groups, and why it was not fused."""

    producer: Operation
    consumer: Operation
    operand: int
    """The index of the consumer operand that reads ``value``."""
    value: SSAValue
    producer_group: str
    consumer_group: str
    reason: str


@dataclass(frozen=True)
class BlockPlan:
    """The fusion plan of one block of a function."""

    function: str
    block: Block
    groups: tuple[FusionGroup, ...]
    unfused: tuple[UnfusedEdge, ...]
    order: tuple[FusionGroup | Operation, ...]
    """The block's units (groups and ungrouped ops, the terminator excluded) in a valid
    (topological) order, close to program order."""
    dead: tuple[Operation, ...] = ()
    """Ops whose results nothing uses: the pass erases them."""
    budget_refused: bool = False
    """Whether rule 3 (the memory budget) refused a merge.  When it did not, every larger
    budget plans the same groups: the budget enters the greedy grouping only through
    that rule, whose test is monotone in the budget."""


class FusionPlanner:
    """The greedy grouping of one block; see the module docstring."""

    def __init__(self, block: Block, function: str, budget: int, taken: set[str]) -> None:
        self.block = block
        self.function = function
        self.budget = budget
        self.budget_refused = False
        self.taken = taken
        self.ops = list(block.ops)
        self.index = {op: i for i, op in enumerate(self.ops)}
        self.reasons: dict[tuple[Operation, Operation, int], str] = {}
        self.dead = self._dead()
        self.spaces = PartSpaces(self.users)
        self._readers: dict[SSAValue, list[Operation | None]] = {}
        self.empty = {op for op in self.ops if _has_empty_result(op)}
        """The ops with a result of zero elements (rule 5; usually none)."""

    def _dead(self) -> set[Operation]:
        """Groupable ops (and constants) whose results nothing live uses."""
        dead: set[Operation] = set()
        for op in reversed(self.ops):
            if not groupable(op) and not is_constant(op):
                continue
            uses = [
                self.block.find_ancestor_op_in_block(use.operation)
                for r in op.results
                for use in r.uses
            ]
            if all(u is not None and u in dead for u in uses):
                dead.add(op)
        return dead

    def users(self, op: Operation) -> list[Operation]:
        """The live block-level ops using a result of ``op``."""
        return [u for u in _block_users(self.block, op) if u not in self.dead]

    # -- legality beyond the iteration space ------------------------------------

    def _extra(self, upto: int) -> Callable[[PartMerge, set[int]], str | None]:
        def check(merge: PartMerge, ids: set[int]) -> str | None:
            return self._empty(merge) or self._budget(merge, ids) or self._cycle(merge, ids, upto)

        return check

    def _outputs(self, ops: Sequence[Operation], ids: set[int]) -> list[SSAValue]:
        """The results of ``ops`` that a live op outside the parts ``ids`` uses."""
        return [
            r
            for op in ops
            for r in op.results
            if self._used_outside(r, lambda u: self.spaces.part_id(u) in ids)
        ]

    def _used_outside(self, value: SSAValue, inside: Callable[[Operation], bool]) -> bool:
        """True when a live op that is not ``inside`` (or one in another block) uses ``value``."""
        for use in value.uses:
            user = self.block.find_ancestor_op_in_block(use.operation)
            if user is None:
                return True
            if user not in self.dead and not inside(user):
                return True
        return False

    def _empty(self, merge: PartMerge) -> str | None:
        """Rule 5: ops with a result of zero elements run apart from ops whose results have
        some. A group iterates over the zero-size extent and runs no iteration, so the
        loops would not compute its other results (a 0-d value that also feeds an op over
        an empty axis)."""
        if not self.empty:
            return None
        kinds = {op in self.empty for op in merge.ops()}
        if len(kinds) < 2:
            return None
        return "one of the ops has a result of zero elements and the other does not"

    def _budget(self, merge: PartMerge, ids: set[int]) -> str | None:
        """Rule 3: the smallest legal tile must fit the budget."""
        if merge.bound <= self.budget:
            return None
        merge.live = self._merged_live(merge)
        if merge.live.bound(merge.share) <= self.budget:
            return None
        ops = sorted(merge.ops(), key=self.index.__getitem__)
        need = group_min_scratch(ops, self._outputs(ops, ids), self.budget, fits=True)
        if need is not None and need <= self.budget:
            return None
        self.budget_refused = True
        shown = "no legal tile" if need is None else f"{need} elements of scratch"
        return (
            f"the fused group would need {shown} at its smallest tile, over the memory "
            f"budget of {self.budget}"
        )

    def _cycle(self, merge: PartMerge, ids: set[int], upto: int) -> str | None:
        """Rule 4: a reason when a path leaves the group and comes back (through the first
        exit in program order that has one)."""
        spaces = self.spaces
        seen_parts: set[int] = set()
        seen_ops: set[Operation] = set()
        exits = {u for p in (merge.a, merge.b) for u in p.users if spaces.part_id(u) not in ids}
        for exit_op in sorted(exits, key=self.index.__getitem__):
            stack = [exit_op]
            while stack:
                op = stack.pop()
                pid = spaces.part_id(op)
                if pid in ids:
                    return (
                        "fusing would create a cycle between groups: a path leaves the group "
                        f"through {exit_op.name} and comes back"
                    )
                if self.index[op] > upto or op in seen_ops:
                    continue
                seen_ops.add(op)
                if pid is None:
                    stack.extend(self.users(op))
                elif pid not in seen_parts:
                    seen_parts.add(pid)
                    stack.extend(spaces.parts[pid].users)
        return None

    # -- rule 3 past the bound: live ranges (see LiveBound) ---------------------------

    def _value_readers(self, value: SSAValue) -> list[Operation | None]:
        """The live ops reading ``value`` (None: one outside the block), and the ops that
        compute a reader themselves (``fuses_producer``): they read it where they run."""
        known = self._readers.get(value)
        if known is None:
            found: list[Operation | None] = []
            for use in value.uses:
                user = self.block.find_ancestor_op_in_block(use.operation)
                if user is None:
                    found.append(None)
                    continue
                if user in self.dead:
                    continue
                found.append(user)
                for result in user.results:
                    for later in result.uses:
                        consumer = self.block.find_ancestor_op_in_block(later.operation)
                        s = None if consumer is None else structured(consumer)
                        if s is not None and s.fuses_producer() is user:
                            found.append(consumer)
            known = self._readers[value] = found
        return known

    def _last_read(self, value: SSAValue, ids: set[int]) -> int:
        """The position of the last read of ``value`` by the parts ``ids``; the end of the
        block when something else reads it."""
        owner = value.owner
        if not isinstance(owner, Operation):
            raise internal_error("tdsl-fuse: the last read of a value no op of the block computes")
        last = self.index[owner]
        for reader in self._value_readers(value):
            if reader is None or self.spaces.part_id(reader) not in ids:
                return len(self.ops)
            last = max(last, self.index[reader])
        return last

    def _workspaces(self, op: Operation) -> tuple[tuple[np.dtype[Any], int], ...]:
        """The dtypes of ``op``'s workspaces at whole values (no fewer than at a tile), each
        with how many times its first result's size it is (rounded up)."""
        first = self.spaces.results[op][0]
        if first.workspaces is None:
            s = structured(op)
            if s is None:
                raise internal_error(f"tdsl-fuse: '{op.name}' in a part is not structured", op=op)
            results = [tensor_shape(r) for r in op.results]
            size = max(1, math.prod(results[0]))

            def sized(shape: Sequence[int]) -> int:
                return max(1, -(-math.prod(shape) // size))

            found = [
                (dt, sized(shape))
                for shape, dt in s.numpy_workspace(
                    [tensor_shape(v) for v in op.operands], results, [False] * len(op.operands)
                )
            ]
            p = s.fuses_producer()
            if p is not None:  # it may run on its producer's operands instead
                found += [
                    (dt, sized(shape))
                    for shape, dt in s.numpy_workspace(
                        [tensor_shape(v) for v in p.operands], results, [False] * len(p.operands)
                    )
                ]
            first.workspaces = tuple(found)
        return first.workspaces

    def _live(self, part: FusionPart) -> LiveBound:
        """``part``'s live ranges (computed once, then kept up to date by merges)."""
        if part.live is None:
            end = len(self.ops)
            live = LiveBound({}, {}, {}, False)
            for op in part.ops:
                live.never_recomputed |= isinstance(op, Contraction) and not op.recomputable()
                at = self.index[op]
                values = self.spaces.results[op]
                for r, value in zip(op.results, values, strict=True):
                    dt = value.dtype
                    if dt is None:
                        raise internal_error(
                            f"tdsl-fuse: result {r.index} of '{op.name}' has no dtype", op=op
                        )
                    last = self._last_read(r, {part.id})
                    live.held[dt] = range_add(live.held.get(dt), 0, end, at, last, 1)
                    max_into(live.tile, dt, value.cost // 3)
                    max_into(live.whole, dt, value.full)
                for dt, scale in self._workspaces(op):
                    live.held[dt] = range_add(live.held.get(dt), 0, end, at, at, 1)
                    max_into(live.tile, dt, scale * values[0].cost // 3)
                    max_into(live.whole, dt, scale * values[0].full)
            part.live = live
        return part.live

    def _merged_live(self, merge: PartMerge) -> LiveBound:
        """The live ranges of ``merge``'s group: both parts' summed, and the values that
        only the merged group reads now end at their last read."""
        a, b = self._live(merge.a), self._live(merge.b)
        live = LiveBound(
            {dt: merge_nodes(a.held.get(dt), b.held.get(dt)) for dt in {*a.held, *b.held}},
            dict(a.tile),
            dict(a.whole),
            a.never_recomputed or b.never_recomputed,
        )
        for dt, n in b.tile.items():
            max_into(live.tile, dt, n)
        for dt, n in b.whole.items():
            max_into(live.whole, dt, n)
        for value, cost in merge.costs:
            if value.dtype is not None:
                max_into(live.tile, value.dtype, cost // 3)
                for dt, scale in value.workspaces or ():
                    max_into(live.tile, dt, scale * cost // 3)
        # values read across the two parts: open (to the end) in their part until now
        small, large = merge.small, merge.large
        ids = {merge.a.id, merge.b.id}
        crossing: dict[SSAValue, int] = {}
        for op in small.ops:
            crossing.update((r, small.id) for r in op.results)
            p = structured(op)
            producer = None if p is None else p.fuses_producer()
            for reader in (op, *([] if producer is None else [producer])):
                for v in reader.operands:
                    if isinstance(v, OpResult) and self.spaces.part_id(v.op) == large.id:
                        crossing[v] = large.id
        end = len(self.ops)
        for v, pid in crossing.items():
            if self._last_read(v, {pid}) != end:
                continue
            last = self._last_read(v, ids)
            if last != end:
                dt = self.spaces.results[v.op][v.index].dtype if isinstance(v, OpResult) else None
                if dt is None:
                    raise internal_error("tdsl-fuse: a value read across two parts has no dtype")
                live.held[dt] = range_add(live.held[dt], 0, end, last + 1, end, -1)
        return live

    def _committing(self, merge: PartMerge) -> None:
        """Keep the live ranges of a group that has them up to date."""
        if merge.live is None and (merge.a.live is not None or merge.b.live is not None):
            merge.live = self._merged_live(merge)

    # -- grouping -------------------------------------------------------------

    def visit(self, op: Operation) -> None:
        if not groupable(op) or op in self.dead:
            return
        spaces = self.spaces
        candidates: list[int] = []
        edges: dict[int, list[tuple[Operation, int]]] = {}
        for i, operand in enumerate(op.operands):
            producer = operand.owner if isinstance(operand, OpResult) else None
            pid = None if producer is None else spaces.part_id(producer)
            if producer is None or pid is None:
                continue
            edges.setdefault(pid, []).append((producer, i))
            if pid not in candidates:
                candidates.append(pid)
        current = spaces.single(op)
        check = self._extra(self.index[op])
        for pid in candidates:
            merged = spaces.try_merge(spaces.parts[pid], current, check, self._committing)
            if isinstance(merged, str):
                for producer, i in edges[pid]:
                    self.reasons[(producer, op, i)] = merged
            else:
                current = merged

    # -- result -----------------------------------------------------------------

    def plan(self) -> BlockPlan:
        for op in self.ops:
            self.visit(op)
        parts = sorted(
            self.spaces.parts.values(), key=lambda p: min(map(self.index.__getitem__, p.ops))
        )
        raw = [sorted(p.ops, key=self.index.__getitem__) for p in parts]
        units = self._order(raw)
        names = self._names()
        order: list[FusionGroup | Operation] = []
        groups: list[FusionGroup] = []
        for unit in units:
            if isinstance(unit, Operation):
                order.append(unit)
                continue
            group = self._build(unit, next(names))
            groups.append(group)
            order.append(group)
        by_op = {op: g for g in groups for op in g.ops}
        unfused: list[UnfusedEdge] = []
        for group in groups:
            for consumer in group.ops:
                for i, operand in enumerate(consumer.operands):
                    producer = operand.owner
                    if not isinstance(producer, Operation) or producer not in by_op:
                        continue
                    pgroup = by_op[producer]
                    if pgroup is group:
                        continue
                    reason = self.reasons.get(
                        (producer, consumer, i), "the groups were formed apart"
                    )
                    unfused.append(
                        UnfusedEdge(producer, consumer, i, operand, pgroup.name, group.name, reason)
                    )
        unfused.sort(key=lambda e: (self.index[e.consumer], e.operand))
        dead = tuple(op for op in self.ops if op in self.dead)
        return BlockPlan(
            self.function,
            self.block,
            tuple(groups),
            tuple(unfused),
            tuple(order),
            dead,
            self.budget_refused,
        )

    def _names(self) -> Iterator[str]:
        n = 0
        while True:
            name = f"g{n}"
            n += 1
            if name not in self.taken:
                yield name

    def _build(self, ops: list[Operation], name: str) -> FusionGroup:
        members = set(ops)
        inputs: dict[SSAValue, None] = {}
        constants: dict[Operation, None] = {}
        for op in ops:
            for operand in op.operands:
                owner = operand.owner
                if isinstance(owner, Operation) and owner in members:
                    continue
                if isinstance(owner, Operation) and is_cloned_constant(owner):
                    constants.setdefault(owner)
                else:
                    inputs.setdefault(operand)
        results = [
            r for op in ops for r in op.results if self._used_outside(r, members.__contains__)
        ]
        body = group_body(ops, results)
        if isinstance(body, Inconsistent):
            raise internal_error(
                f"tdsl-fuse: group {name} is inconsistent: {body.reason}", op=ops[0]
            )
        return FusionGroup(
            name=name,
            function=self.function,
            ops=tuple(ops),
            constants=tuple(constants),
            inputs=tuple(inputs),
            results=tuple(results),
            space=body,
            budget=self.budget,
        )

    def _order(self, groups: list[list[Operation]]) -> list[list[Operation] | Operation]:
        """Groups and ungrouped ops in topological order, earliest first op first."""
        term = self.ops[-1] if self.ops and self.ops[-1].has_trait(IsTerminator) else None
        units: list[list[Operation] | Operation] = [*groups]
        grouped = {op for g in groups for op in g}
        units.extend(
            op for op in self.ops if op not in grouped and op is not term and op not in self.dead
        )
        unit_of: dict[Operation, int] = {}
        for u, unit in enumerate(units):
            for op in unit if isinstance(unit, list) else [unit]:
                unit_of[op] = u
        deps: list[set[int]] = [set() for _ in units]
        users: list[set[int]] = [set() for _ in units]
        for u, unit in enumerate(units):
            for op in unit if isinstance(unit, list) else [unit]:
                for inner in op.walk():
                    for operand in inner.operands:
                        owner = operand.owner
                        if not isinstance(owner, Operation):
                            continue
                        anc = self.block.find_ancestor_op_in_block(owner)
                        if anc is None or anc not in unit_of:
                            continue
                        d = unit_of[anc]
                        if d != u:
                            deps[u].add(d)
                            users[d].add(u)

        def key(u: int) -> int:
            unit = units[u]
            return self.index[unit[0] if isinstance(unit, list) else unit]

        ready = [(key(u), u) for u in range(len(units)) if not deps[u]]
        heapq.heapify(ready)
        out: list[list[Operation] | Operation] = []
        while ready:
            _, u = heapq.heappop(ready)
            out.append(units[u])
            for v in users[u]:
                deps[v].discard(u)
                if not deps[v]:
                    heapq.heappush(ready, (key(v), v))
        if len(out) != len(units):
            raise internal_error("tdsl-fuse: fusion produced a cycle between groups")
        return out


def _has_empty_result(op: Operation) -> bool:
    """Whether a tensor result of ``op`` has zero elements."""
    return any(isinstance(r.type, TensorType) and 0 in tensor_shape(r.type) for r in op.results)


def plan_block(
    block: Block, function: str, memory_budget: int, taken: Iterable[str] = ()
) -> BlockPlan:
    """Plan the fusion groups of ``block`` (a block of ``@function``).

    Only ops directly in ``block`` are grouped.  Group names skip ``taken``
    and the names of ``kernel.fused`` ops already in the block.
    """
    names = set(taken)
    names.update(
        op.group.data for op in block.ops if isinstance(op, FusedOp) and op.group is not None
    )
    return FusionPlanner(block, function, memory_budget, names).plan()


def plan_function(fn: func.FuncOp, memory_budget: int) -> list[BlockPlan]:
    """The plans of every block of ``fn`` (group names are unique in the function)."""
    taken: set[str] = {
        op.group.data for op in fn.walk() if isinstance(op, FusedOp) and op.group is not None
    }
    plans: list[BlockPlan] = []
    for block in fn.body.blocks:
        plan = plan_block(block, fn.sym_name.data, memory_budget, taken)
        taken.update(g.name for g in plan.groups)
        plans.append(plan)
    return plans


def walk_functions(root: Operation) -> list[func.FuncOp]:
    """Every ``func.func`` under ``root``."""
    return [op for op in root.walk() if isinstance(op, func.FuncOp)]
