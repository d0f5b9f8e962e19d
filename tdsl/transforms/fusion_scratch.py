"""Bounds of a fusion group's scratch, for rule 3 of :mod:`tdsl.transforms.fusion_analysis`.

The persistent segment tree that counts the buffers a group holds at each
program position, the per-dtype bound with reuse built on it (``LiveBound``), and
:func:`group_min_scratch`, the exact scratch of a group's smallest legal tile in
``tdsl-tile``'s model (the decomposed group counting too).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.ir import Operation, SSAValue

from tdsl.dialects.kernel_plan import GroupBody
from tdsl.transforms.iteration_space import (
    Inconsistent,
    analyze,
)
from tdsl.transforms.tile_choice import min_scratch
from tdsl.transforms.tile_decompose import decomposed_forms

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

SegmentNode = tuple[int, int, "SegmentNode | None", "SegmentNode | None"]
"""A segment tree node: (count added to its whole range, max count in it, left, right)."""


def tree_peak(node: SegmentNode | None) -> int:
    return 0 if node is None else node[1]


def range_add(
    node: SegmentNode | None, lo: int, hi: int, start: int, stop: int, n: int
) -> SegmentNode:
    """``node`` (over positions ``lo..hi``) with ``n`` added over ``start..stop``, copied."""
    if start <= lo and hi <= stop:
        if node is None:
            return (n, n, None, None)
        return (node[0] + n, node[1] + n, node[2], node[3])
    add, _, left, right = node if node is not None else (0, 0, None, None)
    mid = (lo + hi) // 2
    if start <= mid:
        left = range_add(left, lo, mid, start, stop, n)
    if stop > mid:
        right = range_add(right, mid + 1, hi, start, stop, n)
    return (add, add + max(tree_peak(left), tree_peak(right)), left, right)


def merge_nodes(a: SegmentNode | None, b: SegmentNode | None) -> SegmentNode | None:
    """The sum of two trees over the same positions (sharing what only one has)."""
    if a is None:
        return b
    if b is None:
        return a
    left = merge_nodes(a[2], b[2])
    right = merge_nodes(a[3], b[3])
    add = a[0] + b[0]
    return (add, add + max(tree_peak(left), tree_peak(right)), left, right)


@dataclass
class LiveBound:
    """What bounds a group's scratch with reuse (see above), per buffer dtype."""

    held: dict[np.dtype[Any], SegmentNode | None]
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
        return sum(tree_peak(node) * sizes.get(dt, 0) for dt, node in self.held.items())


def max_into(into: dict[np.dtype[Any], int], dtype: np.dtype[Any], n: int) -> None:
    if n > into.get(dtype, 0):
        into[dtype] = n


_UNKNOWN = -1


@dataclass
class _Need:
    """What :func:`group_min_scratch` found of one group."""

    least: int | None
    """The scratch of its smallest legal tile (None: no legal tile)."""
    exact: bool
    """Whether :attr:`least` is the least, else a first fit within some budget."""
    split: int | None = _UNKNOWN
    """The least of its decomposed copy (None: none; :data:`_UNKNOWN`: not computed yet)."""


_MEMO: ContextVar[dict[tuple[tuple[int, ...], tuple[int, ...]], _Need] | None] = ContextVar(
    "tdsl_min_scratch_memo", default=None
)
"""While :func:`remembered_scratch` runs: per group (its ops and outputs, by identity),
what :func:`group_min_scratch` found of it."""

_BODIES: ContextVar[
    dict[tuple[tuple[int, ...], tuple[int, ...]], GroupBody | Inconsistent] | None
] = ContextVar("tdsl_group_body_memo", default=None)
"""While :func:`remembered_scratch` runs: per group, its iteration space (``analyze``)."""


@contextmanager
def remembered_scratch() -> Generator[None]:
    """Remember :func:`group_min_scratch` and :func:`group_body` of each group while the
    IR stays as it is (the fusion planner asks again for the same groups under each
    budget it tries)."""
    token = _MEMO.set({})
    bodies = _BODIES.set({})
    try:
        yield
    finally:
        _BODIES.reset(bodies)
        _MEMO.reset(token)


def group_body(ops: Sequence[Operation], outputs: Sequence[SSAValue]) -> GroupBody | Inconsistent:
    """``analyze(ops, outputs)``, once per group while :func:`remembered_scratch` runs (a
    :class:`GroupBody` is frozen: the plans of every budget tried may share it)."""
    memo = _BODIES.get()
    if memo is None:
        return analyze(ops, outputs)
    key = (tuple(map(id, ops)), tuple(map(id, outputs)))
    found = memo.get(key)
    if found is None:
        found = memo[key] = analyze(ops, outputs)
    return found


def group_min_scratch(
    ops: Sequence[Operation],
    outputs: Sequence[SSAValue],
    budget: int | None = None,
    body: GroupBody | Inconsistent | None = None,
    *,
    fits: bool = False,
) -> int | None:
    """Scratch elements of the smallest legal tile of ``ops`` materializing ``outputs``
    (None when they do not form one group), in ``tdsl-tile``'s model.

    When that is over ``budget`` (or no budget is given) and some ops have a
    decomposition (``softmax``), the decomposed group counts too: ``tdsl-tile``
    runs it over tiles of the rows.  ``body`` is ``analyze(ops, outputs)`` when
    the caller has it.

    With ``fits``, only whether the group fits ``budget`` is asked: the scratch of the
    first legal tile found within it may be returned, more than the least (see
    :func:`~tdsl.transforms.tile_choice.min_scratch`'s ``enough``); a need over the
    budget is exact.  The fusion planner asks so at each merge it tests (at a budget of
    64 elements, a 150-op chain merged op by op made every candidate tile each time).
    """
    memo = _MEMO.get()
    key = (tuple(map(id, ops)), tuple(map(id, outputs)))
    known = memo.get(key) if memo is not None else None
    enough = budget if fits else None
    if (
        known is not None
        and not known.exact
        and (enough is None or known.least is None or known.least > enough)
    ):
        known = None  # an earlier test's first fit answers a test against as much or more
    if known is None:
        if body is None:
            body = group_body(ops, outputs)
        if isinstance(body, Inconsistent):
            known = _Need(None, True, None)
        else:
            need = min_scratch(body, enough)
            known = _Need(need, need is None or enough is None or need > enough)
        if memo is not None:
            memo[key] = known
    need = known.least
    if known.split is None or (need is not None and budget is not None and need <= budget):
        return need
    if known.split == _UNKNOWN:
        bodies = [analyze(*copy) for copy in decomposed_forms(ops, outputs)]
        splits = [min_scratch(b) for b in bodies if not isinstance(b, Inconsistent)]
        known.split = min((n for n in splits if n is not None), default=None)
    split = known.split
    if split is None:
        return need
    return split if need is None else min(need, split)
