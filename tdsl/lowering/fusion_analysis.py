"""The fusion rules of ``tdsl-fuse``: which ops run together, and why not.

This module decides; :mod:`tdsl.lowering.fuse` rewrites the IR and renders the
report.  Both the pass and the report call :func:`plan_block`, so the rules
exist once.  The rules read nothing but the structured-op interface, through
the iteration-space analysis that ``tdsl-tile`` uses too
(:mod:`tdsl.lowering.iteration_space`).

The model
---------

A fusion group is a set of ops that runs as one kernel over **one iteration
space** (see :mod:`tdsl.lowering.iteration_space`): every dimension of every
value is a variable, and ops equate variables as their indexing maps line the
values up.  Reductions tile (their results accumulate over tiles of the
reduced dims) and row-normalizing ops run over tiles of their rows in passes,
so almost everything fuses with its producers and consumers.  A set of ops is
a legal group when

1. its iteration space is consistent: no value runs along one space dim with
   two of its dims.  A value computed in the group has one layout, so
   ``exp(x) + transpose(exp(x))`` cannot be one group (``exp(x)`` would be
   needed in two layouts), while ``x + transpose(x)`` can (an input is read
   along as many maps as its readers need);
2. an operand an op needs from memory (``MATERIALIZED_OPERANDS``: a matmul's
   right operand) is not computed in the group, except through views
   (``transpose`` of an input reads the input);
3. its smallest legal tile needs no more scratch than the memory budget (in
   the scratch model of :mod:`tdsl.dialects.kernel_plan`; rows whole for
   row-normalizing ops).  Legal means the schedule's rules hold: a parallel
   dim that a never-recomputed op (a matmul) does not run along stays whole,
   for one;
4. merging it creates no cycle between groups: no path leaves the group and
   comes back.

Planning is greedy and deterministic, in program order: each op joins the
groups of its operands' producers (first operand first) when the union is
legal, else it records why not for each producer-consumer edge and keeps the
groups apart.  The dimension variables live in one union-find with an undo
log; each group keeps only what the rules look at (its variables, the pairs of
variables that must stay apart, its inputs, its never-recomputed ops, its
outside users and a bound of its scratch), so trying a merge costs little and
planning stays about linear in the number of ops.  The exact scratch of rule
3 is computed only when the bound exceeds the budget.

Constants with at most one element are cloned into each group that uses them
(they cost nothing); larger ones stay outside and are group inputs.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.traits import IsTerminator

from tdsl.dialects.kernel import FusedOp
from tdsl.dialects.kernel_plan import GroupBody
from tdsl.dialects.structured import (
    IteratorType,
    constant_value,
    fmt_shape,
    structured,
    tensor_shape,
)
from tdsl.lowering.iteration_space import (
    DimVars,
    Inconsistent,
    VarDims,
    analyze,
    apply_op,
    diagonal_reason,
)
from tdsl.lowering.tile import decomposed_copy, min_scratch

# ---------------------------------------------------------------------------
# Op kinds
# ---------------------------------------------------------------------------


def is_cloned_constant(op: Operation) -> bool:
    """True for constants that are cloned into the groups using them (at most one element)."""
    value = constant_value(op)
    return value is not None and value.size <= 1


def groupable(op: Operation) -> bool:
    """Whether ``op`` can be put in a fusion group (a structured op, not a constant)."""
    return structured(op) is not None and constant_value(op) is None


# ---------------------------------------------------------------------------
# Parts: groups being built
# ---------------------------------------------------------------------------


@dataclass
class _Part:
    """What the legality rules need to know about a group, kept up to date by merges.

    Variables are stored as roots as of the last merge; compare them through ``find``.
    """

    id: int
    ops: list[Operation]
    reads: dict[SSAValue, list[VarDims]]
    """Values read from outside the group, with the variables of each distinct read."""
    pairs: dict[tuple[int, int], SSAValue]
    """Two variables of one value -> that value (they must stay distinct)."""
    materialized: list[tuple[Operation, int]]
    """Operands that must come from memory (op, operand index)."""
    users: set[Operation]
    """Live block-level ops outside the group that use its values."""
    bound: int
    """An upper bound of the scratch of its smallest tile."""


class _Spaces:
    """Dimension variables and the groups (parts) built from ops, merge by merge."""

    def __init__(self, users: Callable[[Operation], Iterable[Operation]]) -> None:
        self.vars = DimVars()
        self.dims: dict[SSAValue, VarDims] = {}
        """The variables of every computed value."""
        self.users = users
        self.parts: dict[int, _Part] = {}
        self._part_parent: dict[int, int] = {}
        self._op_part: dict[Operation, int] = {}

    def part_id(self, op: Operation) -> int | None:
        """The id of the part holding ``op``, if it is in one."""
        start = self._op_part.get(op)
        if start is None:
            return None
        root = start
        while self._part_parent[root] != root:
            root = self._part_parent[root]
        while self._part_parent[start] != root:  # path compression (merges are final)
            self._part_parent[start], start = root, self._part_parent[start]
        return root

    def _pairs(self, values: Iterable[tuple[SSAValue, VarDims]]) -> dict[tuple[int, int], SSAValue]:
        pairs: dict[tuple[int, int], SSAValue] = {}
        for value, dims in values:
            used = sorted({d for d in self.vars.roots(dims) if d is not None})
            for i, a in enumerate(used):
                for b in used[i + 1 :]:
                    pairs.setdefault((a, b), value)
            if len(used) < len([d for d in dims if d is not None]):
                pairs.setdefault((used[0], used[0]), value)
        return pairs

    def _bound(self, values: Iterable[tuple[SSAValue, VarDims]]) -> int:
        """Scratch at tile 1 along parallel dims, reduction dims whole, no reuse, x3 for
        workspaces, partials and accumulators: the smallest tile needs no more."""
        dv = self.vars
        total = 0
        for _, dims in values:
            n = 1
            for d in dims:
                if d is not None and dv.is_reduced(d):
                    n *= dv.extent[dv.find(d)]
            total += 3 * n
        return total

    def single(self, op: Operation) -> _Part:
        """A new part holding ``op`` alone (its operands are its inputs)."""
        dv = self.vars
        reads: dict[SSAValue, list[VarDims]] = {}
        operand_dims: list[VarDims] = []
        for v in op.operands:
            if v not in reads:
                reads[v] = [dv.fresh(tensor_shape(v))]
            operand_dims.append(reads[v][0])
        results = apply_op(dv, op, operand_dims)
        for r, dims in zip(op.results, results, strict=True):
            self.dims[r] = dims
        dv.commit()
        pid = len(self._part_parent)
        self._part_parent[pid] = pid
        self._op_part[op] = pid
        s = structured(op)
        assert s is not None
        values = [
            *zip(op.results, results, strict=True),
            *((v, d) for v, ds in reads.items() for d in ds),
        ]
        part = _Part(
            id=pid,
            ops=[op],
            reads=reads,
            pairs=self._pairs(values),
            materialized=[(op, i) for i in s.MATERIALIZED_OPERANDS],
            users=set(self.users(op)),
            bound=self._bound(values),
        )
        self.parts[pid] = part
        return part

    def _owner_in(self, value: SSAValue, ids: set[int]) -> bool:
        owner = value.owner
        return isinstance(owner, Operation) and self.part_id(owner) in ids

    def try_merge(
        self, a: _Part, b: _Part, extra: Callable[[_Part, set[int]], str | None] | None = None
    ) -> _Part | str:
        """``a`` and ``b`` as one part, or why not (then nothing changes).

        Checks rules 1 and 2 of the module docstring, then ``extra`` (given the
        tentative part and the ids of ``a`` and ``b``).  Inputs both parts read
        share their variables unless that makes the space inconsistent.
        """
        dv = self.vars
        reason = "?"
        for share in (True, False):
            mark = dv.checkpoint()
            merged = self._merge(a, b, share)
            if isinstance(merged, _Part) and extra is not None:
                why = extra(merged, {a.id, b.id})
                merged = merged if why is None else why
            if isinstance(merged, _Part):
                dv.commit()
                self._part_parent[b.id] = a.id
                del self.parts[b.id]
                self.parts[a.id] = merged
                return merged
            dv.rollback(mark)
            if share:
                reason = merged
                if not merged.startswith("inconsistent"):
                    break
            else:
                reason = merged if not reason.startswith("inconsistent") else reason
        return reason

    def _merge(self, a: _Part, b: _Part, share: bool) -> _Part | str:
        dv = self.vars
        ids = {a.id, b.id}
        reads: dict[SSAValue, list[VarDims]] = {}
        for part in (a, b):
            for v, uses in part.reads.items():
                if self._owner_in(v, ids):
                    for dims in uses:
                        dv.unify_dims(dims, self.dims[v])
                    continue
                known = reads.setdefault(v, [])
                for dims in uses:
                    if share and known:
                        dv.unify_dims(dims, known[0])
                    elif dims not in known:
                        known.append(dims)
        for (x, y), value in (*a.pairs.items(), *b.pairs.items()):
            if dv.find(x) == dv.find(y):
                return diagonal_reason(value)
        ops = [*a.ops, *b.ops]
        members = set(ops)
        for op, i in (*a.materialized, *b.materialized):
            v = op.operands[i]
            while isinstance(v, OpResult) and v.op in members:
                s = structured(v.op)
                if s is None or s.numpy_view() is None:
                    return (
                        f"{op.name} operand {i} must be materialized (it is read whole from memory)"
                    )
                v = v.op.operands[0]
        users = {u for u in (*a.users, *b.users) if self.part_id(u) not in ids}
        pairs = self._pairs((v, (x, y)) for (x, y), v in (*a.pairs.items(), *b.pairs.items()))
        values = [(r, self.dims[r]) for op in ops for r in op.results]
        values += [(v, d) for v, ds in reads.items() for d in ds]
        return _Part(
            id=a.id,
            ops=ops,
            reads=reads,
            pairs=pairs,
            materialized=[*a.materialized, *b.materialized],
            users=users,
            bound=self._bound(values),
        )


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
    min_scratch: int
    """Scratch elements of its smallest legal tile (the scratch model of ``tdsl-tile``)."""


def describe_space(body: GroupBody) -> str:
    """``64x300 (d0 parallel, d1 reduction)``."""
    kinds = ", ".join(
        f"d{i} {'reduction' if k is IteratorType.REDUCTION else 'parallel'}"
        for i, k in enumerate(body.kinds)
    )
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


class _Planner:
    """The greedy grouping of one block; see the module docstring."""

    def __init__(self, block: Block, function: str, budget: int, taken: set[str]) -> None:
        self.block = block
        self.function = function
        self.budget = budget
        self.taken = taken
        self.ops = list(block.ops)
        self.index = {op: i for i, op in enumerate(self.ops)}
        self.reasons: dict[tuple[Operation, Operation, int], str] = {}
        self.dead = self._dead()
        self.spaces = _Spaces(self.users)

    def _dead(self) -> set[Operation]:
        """Groupable ops (and constants) whose results nothing live uses."""
        dead: set[Operation] = set()
        for op in reversed(self.ops):
            if not groupable(op) and constant_value(op) is None:
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

    def _extra(self, upto: int) -> Callable[[_Part, set[int]], str | None]:
        def check(part: _Part, ids: set[int]) -> str | None:
            return self._budget(part, ids) or self._cycle(part, ids, upto)

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

    def _budget(self, part: _Part, ids: set[int]) -> str | None:
        """Rule 3: the smallest legal tile must fit the budget."""
        if part.bound <= self.budget:
            return None
        ops = sorted(part.ops, key=self.index.__getitem__)
        need = group_min_scratch(ops, self._outputs(ops, ids), self.budget)
        if need is not None and need <= self.budget:
            return None
        shown = "no legal tile" if need is None else f"{need} elements of scratch"
        return (
            f"the fused group would need {shown} at its smallest tile, over the memory "
            f"budget of {self.budget}"
        )

    def _cycle(self, part: _Part, ids: set[int], upto: int) -> str | None:
        """Rule 4: a reason when a path leaves the group and comes back."""
        spaces = self.spaces
        seen_parts: set[int] = set()
        seen_ops: set[Operation] = set()
        stack: list[tuple[Operation, Operation]] = [(u, u) for u in part.users]
        while stack:
            op, exit_op = stack.pop()
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
                next_ops: Iterable[Operation] = self.users(op)
            elif pid in seen_parts:
                continue
            else:
                seen_parts.add(pid)
                next_ops = spaces.parts[pid].users
            stack.extend((u, exit_op) for u in next_ops)
        return None

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
            merged = spaces.try_merge(spaces.parts[pid], current, check)
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
            self.function, self.block, tuple(groups), tuple(unfused), tuple(order), dead
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
        body = analyze(ops, results)
        assert not isinstance(body, Inconsistent), body.reason
        need = group_min_scratch(ops, results, self.budget)
        return FusionGroup(
            name=name,
            function=self.function,
            ops=tuple(ops),
            constants=tuple(constants),
            inputs=tuple(inputs),
            results=tuple(results),
            space=body,
            min_scratch=-1 if need is None else need,
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
        assert len(out) == len(units), "fusion produced a cycle between groups"
        return out


def group_min_scratch(
    ops: Sequence[Operation], outputs: Sequence[SSAValue], budget: int | None = None
) -> int | None:
    """Scratch elements of the smallest legal tile of ``ops`` materializing ``outputs``
    (None when they do not form one group), in ``tdsl-tile``'s model.

    When that is over ``budget`` (or no budget is given) and some ops have a
    decomposition (``softmax``), the decomposed group counts too: ``tdsl-tile``
    runs it over tiles of the rows.
    """
    body = analyze(ops, outputs)
    if isinstance(body, Inconsistent):
        return None
    need = min_scratch(body)
    if need is not None and budget is not None and need <= budget:
        return need
    copy = decomposed_copy(ops, outputs)
    if copy is None:
        return need
    copied = analyze(*copy)
    split = None if isinstance(copied, Inconsistent) else min_scratch(copied)
    if split is None:
        return need
    return split if need is None else min(need, split)


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
    return _Planner(block, function, memory_budget, names).plan()


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
