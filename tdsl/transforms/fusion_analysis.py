"""The fusion rules of ``tdsl-fuse``: which ops run together, and why not.

This module decides; :mod:`tdsl.transforms.fuse` rewrites the IR and renders the
report.  Both the pass and the report call :func:`plan_block`, so the rules
exist once.  The rules read nothing but the structured-op interface (and the
small interfaces of :mod:`tdsl.dialects.op_interfaces`: a contraction's
materialized operands), through the iteration-space analysis that ``tdsl-tile``
uses too (:mod:`tdsl.transforms.iteration_space`).

The model
---------

A fusion group is a set of ops that runs as one kernel over **one iteration
space** (see :mod:`tdsl.transforms.iteration_space`): every dimension of every
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
2. an operand an op needs from memory (a contraction's
   ``materialized_operands()``: a matmul's right operand) is not computed in the group, except through views
   (``transpose`` of an input reads the input);
3. its smallest legal tile needs no more scratch than the memory budget (in
   the scratch model of :mod:`tdsl.dialects.kernel_plan`; rows whole for
   row-normalizing ops).  Legal means the schedule's rules hold: a parallel
   dim that a never-recomputed op (a matmul) does not run along stays whole,
   for one, and the passes over tiled reduction dims compute at most
   ``4 * ops + 256`` ops again in all (``RECOMPUTE_FACTOR``, ``RECOMPUTE_MIN``:
   each pass of a long chain with a reduction every few ops would compute the
   whole chain before it again, quadratic in its length);
4. merging it creates no cycle between groups: no path leaves the group and
   comes back.

Planning is greedy and deterministic, in program order: each op joins the
groups of its operands' producers (first operand first) when the union is
legal, else it records why not for each producer-consumer edge and keeps the
groups apart.  The dimension variables live in one union-find with an undo
log; each group keeps only what the rules look at (the pairs of variables that
must stay apart, its inputs, its materialized operands, its outside users and a
bound of its scratch), updated by each union rather than recomputed, and a
merge moves the smaller group into the larger one.  So a merge costs about
the size of the smaller group plus the unions it makes, and planning stays
about linear in the number of ops.  The exact scratch of rule 3 is computed
only when the bound exceeds the budget and so does a second bound that
counts the reuse of buffers.

Constants with at most one element are cloned into each group that uses them
(they cost nothing); larger ones stay outside and are group inputs.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
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
    constant_value,
    fmt_shape,
    numpy_dtype,
    structured,
    tensor_shape,
)
from tdsl.transforms.iteration_space import (
    DimVars,
    Inconsistent,
    VarDims,
    analyze,
    apply_op,
    diagonal_reason,
)
from tdsl.transforms.tile import decomposed_copy, min_scratch

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
    """The part it was made in (merges move it: see ``_Spaces.part_root``)."""


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
class _Part:
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
    live: _Live | None = None
    """Its buffers' live ranges, once a merge needed them (see ``_Live``)."""
    apart: bool = False
    """Made by a merge that kept reads apart.  Then reading every input along one set
    of variables is inconsistent (it is what that merge tried first), and stays so
    for every group containing this one: a merge with it can only keep reads apart."""


@dataclass(eq=False)
class _Merge:
    """Two parts as one, as tried: what committing it changes."""

    a: _Part
    b: _Part
    small: _Part
    large: _Part
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
    live: _Live | None = None
    """The merged group's ``_Live``, when the budget check computed it."""

    def ops(self) -> list[Operation]:
        return [*self.a.ops, *self.b.ops]


class _Spaces:
    """Dimension variables and the groups (parts) built from ops, merge by merge."""

    def __init__(self, users: Callable[[Operation], Iterable[Operation]]) -> None:
        self.vars = DimVars()
        self.dims: dict[SSAValue, VarDims] = {}
        """The variables of every computed value."""
        self.users = users
        self.parts: dict[int, _Part] = {}
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

    def _add_pairs(self, part: _Part, value: SSAValue, dims: VarDims) -> None:
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

    def single(self, op: Operation) -> _Part:
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
        assert structured(op) is not None
        part = _Part(pid, [op], {}, set(), [], set(self.users(op)), 0)
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
        a: _Part,
        b: _Part,
        extra: Callable[[_Merge, set[int]], str | None] | None = None,
        committing: Callable[[_Merge], None] | None = None,
    ) -> _Part | str:
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
                # sharing would fail (see _Part.apart): only its reason is wanted, and
                # only when keeping the reads apart fails too
                merged = self._attempt(a, b, False, extra, committing)
                if isinstance(merged, _Part):
                    return merged
                shared = self._attempt(a, b, True, commit=False)
                return shared if isinstance(shared, str) else merged
            merged = self._attempt(a, b, True, extra, committing)
            if isinstance(merged, _Part) or not merged.startswith("inconsistent"):
                return merged
            again = self._attempt(a, b, False, extra, committing)
            return again if isinstance(again, _Part) else merged
        finally:
            dv.on_union = None

    def _attempt(
        self,
        a: _Part,
        b: _Part,
        share: bool,
        extra: Callable[[_Merge, set[int]], str | None] | None = None,
        committing: Callable[[_Merge], None] | None = None,
        commit: bool = True,
    ) -> _Part | str:
        """One try of :meth:`try_merge`: committed, or rolled back with the reason.  Without
        ``commit`` it is always rolled back; a merge it would make returns ``a``."""
        dv = self.vars
        mark = dv.checkpoint()
        self._first = a.id
        self._collapsed.clear()
        self._unions.clear()
        merged = self._merge(a, b, share, mark)
        if isinstance(merged, _Merge) and extra is not None:
            why = extra(merged, {a.id, b.id})
            merged = merged if why is None else why
        if isinstance(merged, _Merge) and commit:
            if committing is not None:
                committing(merged)
            part = self._commit(merged)
            dv.commit()
            return part
        self._rollback()
        dv.rollback(mark)
        return a if isinstance(merged, _Merge) else merged

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

    def _merge(self, a: _Part, b: _Part, share: bool, mark: tuple[int, int]) -> _Merge | str:
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
        return _Merge(
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

    def _commit(self, m: _Merge) -> _Part:
        """Move the smaller part into the larger one; returns the merged part."""
        small, large = m.small, m.large
        assert small.diagonal is None and large.diagonal is None
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


# ---------------------------------------------------------------------------
# Rule 3 past the bound: buffers' live ranges
# ---------------------------------------------------------------------------
#
# When the bound (no reuse) exceeds the budget, rule 3 needs the exact scratch
# of the smallest legal tile, a computation over the whole group.  Before it,
# a second bound that counts reuse is tried.  Among the tilings min_scratch
# tries is the one that keeps every reduction dim whole and cuts the parallel
# dims to 1 where the schedule allows (all of them without a never-recomputed
# op): one stage, ops in program order.  Its plan's pool makes a new buffer of
# a dtype only when every buffer of that dtype is held, and a buffer is never
# larger than the largest value it held, so its scratch is at most, per
# dtype, (the most buffers held at once) x (the largest buffer).  Buffers
# held at an op are at most the results defined at or before it and read at
# or after it (to the end when read outside the group), plus its workspaces.
# That count is a range sum over program positions, kept per group in a
# persistent segment tree that merges cheaply.  Sizes are those at the tile
# above (the bound's values) when the group's space is the one ``analyze``
# finds, which is so when every input is read along one set of variables and
# no op is never recomputed (its parallel dims may stay whole); else whole
# values.  A workspace is taken as large as its op's first result, or as many
# times that as it declares at whole values (one of an operand's shape), and a
# smaller tile as needing no more of them.
# Only when this bound too exceeds the budget is the exact scratch computed.

_Node = tuple[int, int, "_Node | None", "_Node | None"]
"""A segment tree node: (count added to its whole range, max count in it, left, right)."""


def _peak(node: _Node | None) -> int:
    return 0 if node is None else node[1]


def _range_add(node: _Node | None, lo: int, hi: int, start: int, stop: int, n: int) -> _Node:
    """``node`` (over positions ``lo..hi``) with ``n`` added over ``start..stop``, copied."""
    if start <= lo and hi <= stop:
        if node is None:
            return (n, n, None, None)
        return (node[0] + n, node[1] + n, node[2], node[3])
    add, _, left, right = node if node is not None else (0, 0, None, None)
    mid = (lo + hi) // 2
    if start <= mid:
        left = _range_add(left, lo, mid, start, stop, n)
    if stop > mid:
        right = _range_add(right, mid + 1, hi, start, stop, n)
    return (add, add + max(_peak(left), _peak(right)), left, right)


def _merge_nodes(a: _Node | None, b: _Node | None) -> _Node | None:
    """The sum of two trees over the same positions (sharing what only one has)."""
    if a is None:
        return b
    if b is None:
        return a
    left = _merge_nodes(a[2], b[2])
    right = _merge_nodes(a[3], b[3])
    add = a[0] + b[0]
    return (add, add + max(_peak(left), _peak(right)), left, right)


@dataclass
class _Live:
    """What bounds a group's scratch with reuse (see above), per buffer dtype."""

    held: dict[np.dtype[Any], _Node | None]
    """Buffers held at each program position."""
    tile: dict[np.dtype[Any], int]
    """The largest buffer at the tile that cuts parallel dims to 1."""
    whole: dict[np.dtype[Any], int]
    """The largest buffer at whole values."""
    never_recomputed: bool
    """Whether the group holds a never-recomputed op."""

    def bound(self, shared: bool) -> int:
        """The bound; ``shared``: the group reads every input along one set of variables
        (then its space is the planner's, and the tile sizes hold)."""
        sizes = self.tile if shared and not self.never_recomputed else self.whole
        return sum(_peak(node) * sizes.get(dt, 0) for dt, node in self.held.items())


def _max_into(into: dict[np.dtype[Any], int], dtype: np.dtype[Any], n: int) -> None:
    if n > into.get(dtype, 0):
        into[dtype] = n


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
        self._readers: dict[SSAValue, list[Operation | None]] = {}

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

    def _extra(self, upto: int) -> Callable[[_Merge, set[int]], str | None]:
        def check(merge: _Merge, ids: set[int]) -> str | None:
            return self._budget(merge, ids) or self._cycle(merge, ids, upto)

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

    def _budget(self, merge: _Merge, ids: set[int]) -> str | None:
        """Rule 3: the smallest legal tile must fit the budget."""
        if merge.bound <= self.budget:
            return None
        merge.live = self._merged_live(merge)
        if merge.live.bound(merge.share) <= self.budget:
            return None
        ops = sorted(merge.ops(), key=self.index.__getitem__)
        need = group_min_scratch(ops, self._outputs(ops, ids), self.budget)
        if need is not None and need <= self.budget:
            return None
        shown = "no legal tile" if need is None else f"{need} elements of scratch"
        return (
            f"the fused group would need {shown} at its smallest tile, over the memory "
            f"budget of {self.budget}"
        )

    def _cycle(self, merge: _Merge, ids: set[int], upto: int) -> str | None:
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

    # -- rule 3 past the bound: live ranges (see _Live) ---------------------------

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
        assert isinstance(owner, Operation)
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
            assert s is not None
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

    def _live(self, part: _Part) -> _Live:
        """``part``'s live ranges (computed once, then kept up to date by merges)."""
        if part.live is None:
            end = len(self.ops)
            live = _Live({}, {}, {}, False)
            for op in part.ops:
                live.never_recomputed |= isinstance(op, Contraction) and not op.recomputable()
                at = self.index[op]
                values = self.spaces.results[op]
                for r, value in zip(op.results, values, strict=True):
                    assert value.dtype is not None
                    dt = value.dtype
                    last = self._last_read(r, {part.id})
                    live.held[dt] = _range_add(live.held.get(dt), 0, end, at, last, 1)
                    _max_into(live.tile, dt, value.cost // 3)
                    _max_into(live.whole, dt, value.full)
                for dt, scale in self._workspaces(op):
                    live.held[dt] = _range_add(live.held.get(dt), 0, end, at, at, 1)
                    _max_into(live.tile, dt, scale * values[0].cost // 3)
                    _max_into(live.whole, dt, scale * values[0].full)
            part.live = live
        return part.live

    def _merged_live(self, merge: _Merge) -> _Live:
        """The live ranges of ``merge``'s group: both parts' summed, and the values that
        only the merged group reads now end at their last read."""
        a, b = self._live(merge.a), self._live(merge.b)
        live = _Live(
            {dt: _merge_nodes(a.held.get(dt), b.held.get(dt)) for dt in {*a.held, *b.held}},
            dict(a.tile),
            dict(a.whole),
            a.never_recomputed or b.never_recomputed,
        )
        for dt, n in b.tile.items():
            _max_into(live.tile, dt, n)
        for dt, n in b.whole.items():
            _max_into(live.whole, dt, n)
        for value, cost in merge.costs:
            if value.dtype is not None:
                _max_into(live.tile, value.dtype, cost // 3)
                for dt, scale in value.workspaces or ():
                    _max_into(live.tile, dt, scale * cost // 3)
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
                assert isinstance(v, OpResult)
                dt = self.spaces.results[v.op][v.index].dtype
                assert dt is not None
                live.held[dt] = _range_add(live.held[dt], 0, end, last + 1, end, -1)
        return live

    def _committing(self, merge: _Merge) -> None:
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
        assert len(out) == len(units), "fusion produced a cycle between groups"
        return out


def group_min_scratch(
    ops: Sequence[Operation],
    outputs: Sequence[SSAValue],
    budget: int | None = None,
    body: GroupBody | Inconsistent | None = None,
) -> int | None:
    """Scratch elements of the smallest legal tile of ``ops`` materializing ``outputs``
    (None when they do not form one group), in ``tdsl-tile``'s model.

    When that is over ``budget`` (or no budget is given) and some ops have a
    decomposition (``softmax``), the decomposed group counts too: ``tdsl-tile``
    runs it over tiles of the rows.  ``body`` is ``analyze(ops, outputs)`` when
    the caller has it.
    """
    if body is None:
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


# ---------------------------------------------------------------------------
# A plan's memory: its scratch plus the values it materializes
# ---------------------------------------------------------------------------
#
# The greedy planner bounds each group's scratch by the budget, but a cut it
# makes holds a value whole between two groups, and that value is memory too.
# A plan's need is the values it materializes (those the function does not
# return: a result lives in its output) plus the largest scratch any of its
# groups needs at its smallest legal tile; groups run one after the other,
# and every materialized value may be alive while any of them runs.  The plan
# of a budget B is the greedy plan at B when its need fits B; else, among the
# greedy plans at the budgets of :data:`PLAN_BUDGETS` (a fixed ladder, so that
# every budget below the need considers the same plans), the one of least need.

PLAN_BUDGETS = tuple(16 * 4**k for k in range(16))
"""The budgets whose greedy plans are considered when the plan of the budget does not fit
(16 to 16 * 4**15 elements; a budget past the program's largest values plans like the
last one that changes anything)."""


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


def plans_memory(
    fn: func.FuncOp, plans: Sequence[BlockPlan], budget: int, returned: set[SSAValue] | None = None
) -> tuple[int, int]:
    """The elements ``plans`` (the plans of ``fn``'s blocks) materialize that ``fn`` does
    not return, and the largest scratch of a group at its smallest legal tile."""
    if returned is None:
        returned = _returned(fn)
    held: dict[SSAValue, int] = {}
    for plan in plans:
        for edge in plan.unfused:
            v = edge.value
            if v not in returned and v not in held:
                held[v] = math.prod(tensor_shape(v))
    scratch = 0
    for plan in plans:
        for g in plan.groups:
            need = group_min_scratch(g.ops, g.results, budget, g.space)
            # a group with no legal tile is the tiler's error to report
            scratch = max(scratch, 0 if need is None else need)
    return sum(held.values()), scratch


def _partition(plans: Sequence[BlockPlan]) -> tuple[tuple[int, ...], ...]:
    """The groups of ``plans`` as sets of op ids (to tell plans apart)."""
    return tuple(tuple(sorted(id(op) for op in g.ops)) for plan in plans for g in plan.groups)


def choose_plans(fn: func.FuncOp, memory_budget: int) -> tuple[list[BlockPlan], PlanMemory]:
    """The plans of ``fn``'s blocks for ``memory_budget`` and what they need (see above):
    the greedy plan at the budget when its need fits, else the plan of least need."""
    name = fn.sym_name.data
    returned = _returned(fn)
    plans = plan_function(fn, memory_budget)
    held, scratch = plans_memory(fn, plans, memory_budget, returned)
    best = PlanMemory(name, memory_budget, held, scratch, memory_budget)
    if best.fits:
        return plans, best
    chosen = plans
    seen = {_partition(plans)}
    # past 3x all the program's elements the budget refuses no merge
    cap = 3 * sum(
        math.prod(tensor_shape(r))
        for op in fn.walk()
        for r in op.results
        if isinstance(r.type, TensorType)
    )
    for b in PLAN_BUDGETS:
        if b == memory_budget:
            continue
        if b > 4 * cap + 16:
            break
        candidate = plan_function(fn, b)
        key = _partition(candidate)
        if key in seen:
            continue
        seen.add(key)
        held, scratch = plans_memory(fn, candidate, b, returned)
        if held + scratch < best.need:
            best = PlanMemory(name, memory_budget, held, scratch, b)
            chosen = candidate
    best = PlanMemory(
        name, memory_budget, best.materialized, best.scratch, best.planned_at, len(seen)
    )
    return chosen, best
