"""The groups being built by the fusion planner and their shared iteration space.

Op kinds (which ops group, which constants are cloned), the parts (groups under
construction) with what the legality rules of
:mod:`tdsl.transforms.fusion_analysis` look at, and ``PartSpaces``: the dimension
variables in one union-find with an undo log, and the trial and commit of a
merge of two parts, which keeps those facts up to date union by union.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.ir import Operation, OpResult, SSAValue

from tdsl.dialects.structured import (
    Contraction,
    constant_value,
    is_constant,
    numpy_dtype,
    structured,
    tensor_shape,
)
from tdsl.errors import TdslIRError, internal_error
from tdsl.transforms.fusion_scratch import LiveBound
from tdsl.transforms.iteration_space import (
    DimVars,
    VarDims,
    apply_op,
    diagonal_reason,
)

# ---------------------------------------------------------------------------
# Op kinds
# ---------------------------------------------------------------------------


def is_cloned_constant(op: Operation) -> bool:
    """True for constants that are cloned into the groups using them: those of one
    element, which broadcast along every dim.  An empty one is an input like any
    other constant (its dims of extent 0 run along the group's)."""
    value = constant_value(op)
    return value is not None and value.size == 1


def groupable(op: Operation) -> bool:
    """Whether ``op`` can be put in a fusion group (a structured op, not a constant)."""
    return structured(op) is not None and not is_constant(op)


# ---------------------------------------------------------------------------
# Parts: groups being built
# ---------------------------------------------------------------------------
#
# A merge keeps the larger part and moves the smaller one into it, so that
# trying one costs about the size of the smaller part plus the unions it
# makes, and planning stays about linear.  What the rules look at is kept up
# to date by those unions (through ``DimVars.on_union``):
#
# - the pairs of variables that must stay distinct, as an adjacency between
#   root variables: a union of two roots that form a pair is a diagonal;
# - the scratch bound, a sum over the part's values: a union that makes a
#   class a reduction class changes the cost of the values along it;
# - the materialized operands, by the first value of their chain of views that
#   is not computed in the part (only a merge with that value's part moves it).
#
# Every pair and materialized operand has an order key, so that a refused merge
# names the first offender in the order the rules list them (the first part's
# before the second's).


@dataclass(eq=False, slots=True)
class _Pair:
    """Two variables of ``value`` that must stay distinct (a diagonal otherwise)."""

    value: SSAValue
    key: int
    pid: int
    """The part it was made in (merges move it: see ``PartSpaces.part_root``)."""


@dataclass(eq=False, slots=True)
class _Materialized:
    """Operand ``index`` of ``op``, which must come from memory."""

    op: Operation
    index: int
    frontier: SSAValue
    """The first value of the operand's chain of views that is not computed in the part."""
    key: int
    pid: int


@dataclass(eq=False, slots=True)
class _Value:
    """A value the scratch bound counts: a result, or one read of a value from outside."""

    dims: VarDims
    cost: int
    """3x its elements at the smallest tile (parallel dims 1, reduction dims whole)."""
    stamp: int = -1
    dead: bool = False
    """Dropped by a merge (a read of a value now computed inside, or one read of several)."""
    dtype: np.dtype[Any] | None = None
    """For a result: its dtype (a buffer's)."""
    full: int = 0
    """For a result: its elements."""
    workspaces: tuple[tuple[np.dtype[Any], int], ...] | None = None
    """For an op's first result: the dtype of each of the op's workspaces and how many
    times the result's size it is at most (1, or more for one of an operand's shape:
    ``logsumexp``'s), once asked."""


@dataclass(eq=False)
class FusionPart:
    """What the legality rules need to know about a group, kept up to date by merges."""

    id: int
    ops: list[Operation]
    reads: dict[SSAValue, list[_Value]]
    """Values read from outside the group, with the variables of each distinct read."""
    multi: set[SSAValue]
    """The values of ``reads`` read along several sets of variables."""
    materialized: list[_Materialized]
    """Operands that must come from memory."""
    users: set[Operation]
    """Live block-level ops outside the group that use its values."""
    bound: int
    """An upper bound of the scratch of its smallest tile."""
    order: deque[_Pair | _Materialized] = field(default_factory=deque[_Pair | _Materialized])
    """Its pairs and materialized operands, by key."""
    diagonal: _Pair | None = None
    """The first pair of a value already running along one variable twice (an op of one
    part only: no merge with it succeeds)."""
    live: LiveBound | None = None
    """Its buffers' live ranges, once a merge needed them (see ``LiveBound``)."""
    apart: bool = False
    """Made by a merge that kept reads apart.  Then reading every input along one set
    of variables is inconsistent (it is what that merge tried first), and stays so
    for every group containing this one: a merge with it can only keep reads apart."""


@dataclass(eq=False)
class PartMerge:
    """Two parts as one, as tried: what committing it changes."""

    a: FusionPart
    b: FusionPart
    small: FusionPart
    large: FusionPart
    reads: dict[SSAValue, list[_Value] | None]
    """New read lists of the values whose reads change (None: computed inside now)."""
    removed: list[_Value]
    costs: list[tuple[_Value, int]]
    """Values whose cost changes, with the new cost."""
    frontiers: list[tuple[_Materialized, SSAValue]]
    unions: list[tuple[int, int]]
    bound: int
    share: bool
    """Whether every input is read along one set of variables (no reads kept apart)."""
    live: LiveBound | None = None
    """The merged group's ``LiveBound``, when the budget check computed it."""

    def ops(self) -> list[Operation]:
        return [*self.a.ops, *self.b.ops]


class PartSpaces:
    """Dimension variables and the groups (parts) built from ops, merge by merge."""

    def __init__(self, users: Callable[[Operation], Iterable[Operation]]) -> None:
        self.vars = DimVars()
        self.dims: dict[SSAValue, VarDims] = {}
        """The variables of every computed value."""
        self.users = users
        self.parts: dict[int, FusionPart] = {}
        self.results: dict[Operation, list[_Value]] = {}
        """The bound's values of each op's results."""
        self._part_parent: dict[int, int] = {}
        self._op_part: dict[Operation, int] = {}
        self._adj: dict[int, dict[int, _Pair]] = {}
        """Root -> the roots it forms a pair with (keys are current roots)."""
        self._touch: dict[int, list[_Value]] = {}
        """Root (as of the last merge) -> the values with a dim along its class."""
        self._frontier: dict[Operation, list[_Materialized]] = {}
        """Op -> materialized operands whose frontier it computes (stale entries too)."""
        self._low = 0
        self._high = 0
        self._stamp = 0
        # the merge being tried
        self._first = -1
        self._collapsed: list[_Pair] = []
        self._unions: list[tuple[int, int]] = []
        self._adj_log: list[tuple[dict[int, _Pair], int, _Pair | None]] = []
        self._root_log: list[tuple[int, dict[int, _Pair] | None]] = []

    def part_root(self, pid: int) -> int:
        """The id of the part that part ``pid`` was merged into (``pid`` if none)."""
        root = pid
        while self._part_parent[root] != root:
            root = self._part_parent[root]
        while self._part_parent[pid] != root:  # path compression (merges are final)
            self._part_parent[pid], pid = root, self._part_parent[pid]
        return root

    def part_id(self, op: Operation) -> int | None:
        """The id of the part holding ``op``, if it is in one."""
        start = self._op_part.get(op)
        return None if start is None else self.part_root(start)

    def _owner_part(self, value: SSAValue) -> int | None:
        owner = value.owner
        return self.part_id(owner) if isinstance(owner, Operation) else None

    def _key(self) -> int:
        self._high += 1
        return self._high

    def _cost(self, dims: VarDims) -> int:
        """Scratch at tile 1 along parallel dims, reduction dims whole, x3 for workspaces,
        partials and accumulators: the smallest tile needs no more (summed, no reuse)."""
        dv = self.vars
        n = 1
        for d in dims:
            if d is not None:
                root = dv.find(d)
                if dv.reduced[root]:
                    n *= dv.extent[root]
        return 3 * n

    def _value(self, dims: VarDims) -> _Value:
        value = _Value(dims, self._cost(dims))
        for d in dims:
            if d is not None:
                self._touch.setdefault(self.vars.find(d), []).append(value)
        return value

    def _add_pairs(self, part: FusionPart, value: SSAValue, dims: VarDims) -> None:
        roots = [self.vars.find(d) for d in dims if d is not None]
        used = sorted(set(roots))
        for i, x in enumerate(used):
            for y in used[i + 1 :]:
                if y in self._adj.get(x, {}):
                    continue
                pair = _Pair(value, self._key(), part.id)
                self._adj.setdefault(x, {})[y] = pair
                self._adj.setdefault(y, {})[x] = pair
                part.order.append(pair)
        if len(used) < len(roots) and part.diagonal is None:
            part.diagonal = _Pair(value, self._key(), part.id)
            part.order.append(part.diagonal)

    def single(self, op: Operation) -> FusionPart:
        """A new part holding ``op`` alone (its operands are its inputs)."""
        dv = self.vars
        reads: dict[SSAValue, VarDims] = {}
        operand_dims: list[VarDims] = []
        for v in op.operands:
            if v not in reads:
                reads[v] = dv.fresh(tensor_shape(v))
            operand_dims.append(reads[v])
        results = apply_op(dv, op, operand_dims)
        for r, dims in zip(op.results, results, strict=True):
            self.dims[r] = dims
        dv.commit()
        pid = len(self._part_parent)
        self._part_parent[pid] = pid
        self._op_part[op] = pid
        if structured(op) is None:
            raise TdslIRError(
                f"'{op.name}' does not implement the structured-op interface: it cannot be fused",
                op=op,
            )
        part = FusionPart(pid, [op], {}, set(), [], set(self.users(op)), 0)
        for value, dims in (*zip(op.results, results, strict=True), *reads.items()):
            self._add_pairs(part, value, dims)
        self.results[op] = []
        for r, dims in zip(op.results, results, strict=True):
            value = self._value(dims)
            value.dtype = numpy_dtype(r.type)
            value.full = math.prod(tensor_shape(r))
            self.results[op].append(value)
            part.bound += value.cost
        for v, dims in reads.items():
            read = self._value(dims)
            part.reads[v] = [read]
            part.bound += read.cost
        for i in op.materialized_operands() if isinstance(op, Contraction) else ():
            m = _Materialized(op, i, op.operands[i], self._key(), pid)
            part.materialized.append(m)
            part.order.append(m)
            self._index_frontier(m)
        self.parts[pid] = part
        return part

    def _index_frontier(self, m: _Materialized) -> None:
        if isinstance(m.frontier, OpResult):
            self._frontier.setdefault(m.frontier.op, []).append(m)

    # -- merging ------------------------------------------------------------------

    def try_merge(
        self,
        a: FusionPart,
        b: FusionPart,
        extra: Callable[[PartMerge, set[int]], str | None] | None = None,
        committing: Callable[[PartMerge], None] | None = None,
    ) -> FusionPart | str:
        """``a`` and ``b`` as one part, or why not (then nothing changes).

        Checks rules 1 and 2 of the module docstring, then ``extra`` (given the
        tentative merge and the ids of ``a`` and ``b``); ``committing`` is told of
        the merge just before it is made.  Inputs both parts read share their
        variables unless that makes the space inconsistent.
        """
        dv = self.vars
        dv.on_union = self._on_union
        try:
            if a.apart or b.apart:
                # sharing would fail (see FusionPart.apart): only its reason is wanted, and
                # only when keeping the reads apart fails too
                merged = self._attempt(a, b, False, extra, committing)
                if isinstance(merged, FusionPart):
                    return merged
                shared = self._attempt(a, b, True, commit=False)
                return shared if isinstance(shared, str) else merged
            merged = self._attempt(a, b, True, extra, committing)
            if isinstance(merged, FusionPart) or not merged.startswith("inconsistent"):
                return merged
            again = self._attempt(a, b, False, extra, committing)
            return again if isinstance(again, FusionPart) else merged
        finally:
            dv.on_union = None

    def _attempt(
        self,
        a: FusionPart,
        b: FusionPart,
        share: bool,
        extra: Callable[[PartMerge, set[int]], str | None] | None = None,
        committing: Callable[[PartMerge], None] | None = None,
        commit: bool = True,
    ) -> FusionPart | str:
        """One try of :meth:`try_merge`: committed, or rolled back with the reason.  Without
        ``commit`` it is always rolled back; a merge it would make returns ``a``."""
        dv = self.vars
        mark = dv.checkpoint()
        self._first = a.id
        self._collapsed.clear()
        self._unions.clear()
        merged = self._merge(a, b, share, mark)
        if isinstance(merged, PartMerge) and extra is not None:
            why = extra(merged, {a.id, b.id})
            merged = merged if why is None else why
        if isinstance(merged, PartMerge) and commit:
            if committing is not None:
                committing(merged)
            part = self._commit(merged)
            dv.commit()
            return part
        self._rollback()
        dv.rollback(mark)
        return a if isinstance(merged, PartMerge) else merged

    def _rank(self, item: _Pair | _Materialized) -> tuple[int, int]:
        """Its position in the order of the merge being tried: the first part's first."""
        return (0 if self.part_root(item.pid) == self._first else 1, item.key)

    def _on_union(self, keep: int, gone: int) -> None:
        """Move the pairs of root ``gone`` to ``keep``; a pair of the two is a diagonal."""
        self._unions.append((keep, gone))
        adj = self._adj
        gone_adj = adj.get(gone)
        if gone_adj is None:
            return
        keep_adj = adj.get(keep)
        if keep_adj is None:
            keep_adj = adj[keep] = {}
            self._root_log.append((keep, None))
        collapsed = gone_adj.get(keep)
        if collapsed is not None:
            self._collapsed.append(collapsed)
            self._adj_log.append((keep_adj, gone, keep_adj.pop(gone)))
        for partner, pair in gone_adj.items():
            if partner == keep:
                continue
            partner_adj = adj[partner]
            self._adj_log.append((partner_adj, gone, partner_adj.pop(gone)))
            known = partner_adj.get(keep)
            if known is None or self._rank(pair) < self._rank(known):
                self._adj_log.append((partner_adj, keep, known))
                partner_adj[keep] = pair
                self._adj_log.append((keep_adj, partner, keep_adj.get(partner)))
                keep_adj[partner] = pair
        self._root_log.append((gone, gone_adj))
        del adj[gone]

    def _rollback(self) -> None:
        for table, key, old in reversed(self._adj_log):
            if old is None:
                table.pop(key, None)
            else:
                table[key] = old
        for root, table in reversed(self._root_log):
            if table is None:
                self._adj.pop(root, None)
            else:
                self._adj[root] = table
        self._adj_log.clear()
        self._root_log.clear()

    def _merge(
        self, a: FusionPart, b: FusionPart, share: bool, mark: tuple[int, int]
    ) -> PartMerge | str:
        dv = self.vars
        small, large = (a, b) if len(a.ops) <= len(b.ops) else (b, a)
        removed: list[_Value] = []
        lists: dict[SSAValue, list[_Value] | None] = {}

        def join(reads: Iterable[_Value], dims: VarDims) -> None:
            for read in reads:
                dv.unify_dims(read.dims, dims)
                removed.append(read)

        # reads of a value the other part computes: its variables
        for v, reads in small.reads.items():
            if self._owner_part(v) == large.id:
                join(reads, self.dims[v])
                lists[v] = None
        for op in small.ops:
            for r in op.results:
                reads = large.reads.get(r)
                if reads is not None:
                    join(reads, self.dims[r])
                    lists[r] = None
        # reads of an input: shared (one set of variables) or kept apart
        for v, reads in small.reads.items():
            if v in lists:
                continue
            theirs = large.reads.get(v)
            if theirs is None:
                if share and len(reads) > 1:
                    join(reads[1:], reads[0].dims)
                    lists[v] = [reads[0]]
                continue
            first, second = (reads, theirs) if small is a else (theirs, reads)
            if share:
                join([*first[1:], *second], first[0].dims)
                lists[v] = [first[0]]
            else:
                lists[v] = [*first, *second]
        if share:
            for v in large.multi:
                if v not in lists:
                    reads = large.reads[v]
                    join(reads[1:], reads[0].dims)
                    lists[v] = [reads[0]]

        # rule 1: no value along one variable twice
        diagonals = [*self._collapsed, *(p.diagonal for p in (a, b) if p.diagonal is not None)]
        if diagonals:
            return diagonal_reason(min(diagonals, key=self._rank).value)

        # rule 2: materialized operands are not computed inside
        ids = {a.id, b.id}
        refused: list[_Materialized] = []
        frontiers: list[tuple[_Materialized, SSAValue]] = []

        def follow(m: _Materialized) -> None:
            v = m.frontier
            while isinstance(v, OpResult) and self.part_id(v.op) in ids:
                s = structured(v.op)
                if s is None or not s.is_view():
                    refused.append(m)
                    return
                v = v.op.operands[0]
            if v is not m.frontier:
                frontiers.append((m, v))

        for m in small.materialized:
            follow(m)
        for op in small.ops:
            for m in self._frontier.get(op, ()):
                if (
                    isinstance(m.frontier, OpResult)
                    and m.frontier.op is op
                    and self.part_root(m.pid) == large.id
                ):
                    follow(m)
        if refused:
            m = min(refused, key=self._rank)
            return (
                f"{m.op.name} operand {m.index} must be materialized (it is read whole from memory)"
            )

        # rule 3's bound: drop the reads gone, re-cost the values along classes that
        # became reduction classes
        self._stamp += 1
        stamp = self._stamp
        delta = 0
        for read in removed:
            read.stamp = stamp
            delta -= read.cost
        costs: list[tuple[_Value, int]] = []
        for root, was_reduced in dv.changed_since(mark).items():
            now = dv.find(root)
            if (dv.reduced[now] and not was_reduced) or dv.extent[now] != dv.extent[root]:
                for value in self._touch.get(root, ()):
                    if value.stamp != stamp and not value.dead:
                        value.stamp = stamp
                        cost = self._cost(value.dims)
                        if cost != value.cost:
                            costs.append((value, cost))
                            delta += cost - value.cost
        return PartMerge(
            a,
            b,
            small,
            large,
            lists,
            removed,
            costs,
            frontiers,
            list(self._unions),
            a.bound + b.bound + delta,
            share,
        )

    def _commit(self, m: PartMerge) -> FusionPart:
        """Move the smaller part into the larger one; returns the merged part."""
        small, large = m.small, m.large
        if small.diagonal is not None or large.diagonal is not None:
            raise internal_error("tdsl-fuse: committing a merge of a part with a diagonal")
        large.ops.extend(small.ops)
        self._part_parent[small.id] = large.id
        del self.parts[small.id]
        for v, reads in small.reads.items():
            if v not in m.reads:
                large.reads[v] = reads
                if len(reads) > 1:
                    large.multi.add(v)
        for v, new in m.reads.items():
            if new is None:
                large.reads.pop(v, None)
                large.multi.discard(v)
            else:
                large.reads[v] = new
                if len(new) > 1:
                    large.multi.add(v)
                else:
                    large.multi.discard(v)
        for read in m.removed:
            read.dead = True
        for value, cost in m.costs:
            value.cost = cost
        large.bound = m.bound
        large.live = m.live
        large.apart = small.apart or large.apart or not m.share
        for keep, gone in m.unions:
            moved = self._touch.pop(gone, None)
            if not moved:
                continue
            kept = self._touch.setdefault(keep, [])
            if len(kept) < len(moved):
                kept, moved = moved, kept
                self._touch[keep] = kept
            kept.extend(value for value in moved if not value.dead)
        # order keys: the first part's pairs and operands before the second's
        if large is m.a:
            for item in small.order:
                item.key = self._key()
            large.order.extend(small.order)
        else:
            for item in reversed(small.order):
                self._low -= 1
                item.key = self._low
            large.order.extendleft(reversed(small.order))
        large.materialized.extend(small.materialized)
        for item, frontier in m.frontiers:
            item.frontier = frontier
            self._index_frontier(item)
        for op in small.ops:
            large.users.discard(op)
        large.users.update(u for u in small.users if self.part_id(u) != large.id)
        self._adj_log.clear()
        self._root_log.clear()
        return large
