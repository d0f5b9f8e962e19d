"""The choice of a fusion group's tile sizes, for :mod:`tdsl.transforms.tile`.

:class:`Tiling` (a tile and its schedule and scratch), :func:`try_tiles`,
:func:`choose_tiles` (the greedy shrink under a memory budget described in
``tdsl-tile``'s docstring), :func:`min_scratch` (the scratch of the smallest
legal tile) and the checks of explicit tile sizes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation

from tdsl.dialects.kernel_plan import (
    GroupBody,
    PlanError,
    ScratchPlan,
    TileSchedule,
    plan_scratch,
    schedule,
)
from tdsl.dialects.structured import (
    IteratorType,
    structured,
)
from tdsl.errors import TdslBudgetError, TdslOptionError, internal_error, plural
from tdsl.transforms.locations import op_location

# ---------------------------------------------------------------------------
# Choosing tiles
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Tiling:
    """Tile sizes that fit, with their schedule and scratch plan."""

    tiles: tuple[int, ...]
    schedule: TileSchedule
    scratch: ScratchPlan


def try_tiles(body: GroupBody, tiles: Sequence[int]) -> Tiling | str:
    """The tiling of ``body`` with ``tiles``, or why the schedule refuses them."""
    try:
        sched = schedule(body, tiles)
    except PlanError as err:
        return str(err)
    return Tiling(tuple(tiles), sched, plan_scratch(sched))


def _whole(body: GroupBody) -> list[int]:
    return [max(1, e) for e in body.extents]


def _balanced(extent: int, size: int) -> int:
    """The smallest size giving as many tiles along ``extent`` as ``size`` does."""
    return -(-extent // -(-extent // size))


def _recomputed(body: GroupBody) -> dict[int, int]:
    """Per parallel dim, the iterations of the ops that do not run along it: each tile
    along it computes them again (a view computes nothing)."""
    again = {d: 0 for d in range(body.rank) if not body.is_reduction(d)}
    for op in body.ops:
        s = structured(op)
        if s is not None and s.is_view():
            continue  # a view (the keys' transpose) computes nothing again
        volume = math.prod(s.loop_extents()) if s is not None else 0
        dims = body.loop_dims(op)
        for d in again:
            if d not in dims:
                again[d] += volume
    return again


def _shrink_order(body: GroupBody, whole: set[int], again: dict[int, int]) -> list[int]:
    """The dims to cut, first to last: in space order (the layout of the largest
    value, outermost first, so tiles stay contiguous), the dims preferred whole
    after the others, and last the parallel dims whose tiles recompute ops (least
    recomputation first; ``again`` is :func:`_recomputed`)."""
    free = [d for d in range(body.rank) if d not in whole and body.extents[d] > 1]

    def rank(d: int) -> tuple[int, int]:
        if again.get(d, 0) > 0:
            return (2, again[d])
        return (1, 0) if d in body.prefer_whole else (0, 0)

    return sorted(free, key=rank)


def _fits(body: GroupBody, tiles: Sequence[int], budget: int) -> Tiling | None:
    found = try_tiles(body, tiles)
    return found if isinstance(found, Tiling) and found.scratch.total <= budget else None


def _largest(body: GroupBody, budget: int, tiles: list[int], d: int, lo: int, hi: int) -> int:
    """The largest size of dim ``d`` in ``[lo, hi]`` that fits, given that ``lo`` does."""
    trial = list(tiles)
    trial[d] = hi
    if _fits(body, trial, budget) is not None:
        return hi
    while hi - lo > 1:  # lo fits, hi does not
        trial[d] = (lo + hi) // 2
        if _fits(body, trial, budget) is not None:
            lo = trial[d]
        else:
            hi = trial[d]
    return lo


def _greedy(
    body: GroupBody, budget: int, start: list[int], order: Callable[[], Sequence[int]]
) -> Tiling | None:
    """Shrink ``start`` along ``order()`` until the tile fits, then grow back the dims cut
    to 1 on the way as far as they fit (see the module docstring)."""
    first = _fits(body, start, budget)
    if first is not None:
        return first
    tiles = list(start)
    cut: list[int] = []
    for d in order():
        trial = list(tiles)
        trial[d] = 1
        at_one = try_tiles(body, trial)
        if isinstance(at_one, str):
            continue  # tiling d breaks a rule of the schedule: keep it whole
        if at_one.scratch.total > budget:
            tiles = trial
            cut.append(d)
            continue
        tiles[d] = _largest(body, budget, trial, d, 1, tiles[d])
        for back in cut:
            tiles[back] = _largest(body, budget, tiles, back, 1, start[back])
        for e in (*cut, d):
            even = list(tiles)
            even[e] = _balanced(body.extents[e], tiles[e])
            if _fits(body, even, budget) is not None:
                tiles = even
        found = _fits(body, tiles, budget)
        if found is None:
            raise internal_error(f"tdsl-tile: the tile sizes {tiles} chosen to fit do not fit")
        return found
    return None


EXHAUSTIVE_WHOLE_SETS = 4
"""Up to this many reduction dims, every set of them is tried whole."""


def _whole_sets(body: GroupBody) -> list[set[int]]:
    """Sets of reduction dims to keep whole, fewest first: tilings the greedy order can miss."""
    red = [d for d in range(body.rank) if body.kinds[d] is not IteratorType.PARALLEL]
    if len(red) <= EXHAUSTIVE_WHOLE_SETS:
        return [set(c) for n in range(1, len(red) + 1) for c in itertools.combinations(red, n)]
    # many reduction dims (independent rows fused side by side, as attention heads
    # are): each alone, all but each, all; not the 2 ** n subsets
    return [{d} for d in red] + [set(red) - {d} for d in red] + [set(red)]


def choose_tiles(body: GroupBody, budget: int, tile_size: int | None = None) -> Tiling | None:
    """The default tiling of ``body`` under ``budget`` (see the module docstring), or None."""
    start = _whole(body)
    if tile_size is not None:
        for d in range(body.rank):
            if body.kinds[d] is IteratorType.PARALLEL and d not in body.prefer_whole:
                start[d] = min(start[d], tile_size)
    again = _recomputed(body)
    found = _greedy(body, budget, start, lambda: _shrink_order(body, set(), again))
    if found is not None:
        return found
    for whole in _whole_sets(body):
        found = _greedy(body, budget, start, lambda whole=whole: _shrink_order(body, whole, again))
        if found is not None:
            return found
    return None


def _smallest(body: GroupBody, whole: set[int], again: dict[int, int]) -> Tiling | None:
    """Every dim outside ``whole`` cut to 1 where the schedule allows it, in shrink order."""
    tiles = _whole(body)
    found = None  # (the whole tiles' schedule is made only where no cut is legal)
    for d in _shrink_order(body, whole, again):
        trial = list(tiles)
        trial[d] = 1
        cut = _legal(body, trial)
        if cut is not None:
            tiles, found = trial, cut
    if found is None:
        found = _legal(body, tiles)
    # only the last legal tiling's scratch is wanted
    return None if found is None else Tiling(tuple(tiles), found, plan_scratch(found))


def _legal(body: GroupBody, tiles: Sequence[int]) -> TileSchedule | None:
    """The schedule of ``tiles``, or None when they break a rule."""
    try:
        return schedule(body, tiles)
    except PlanError:
        return None


def min_scratch(body: GroupBody, enough: int | None = None) -> int | None:
    """The scratch of the smallest legal tile of ``body`` (None when no tiling is legal).

    With ``enough``, the scratch of the first candidate that needs at most ``enough``
    (then perhaps more than the least): what a test against a budget needs, at the cost
    of one candidate where there are up to ``2 ** EXHAUSTIVE_WHOLE_SETS``.  Where none
    needs so little, every candidate is made and the least is exact."""
    best: int | None = None
    again = _recomputed(body)
    for whole in [set[int](), *_whole_sets(body)]:
        found = _smallest(body, whole, again)
        if found is not None and (best is None or found.scratch.total < best):
            best = found.scratch.total
            if enough is not None and best <= enough:
                break
    return best


def explicit_tiles(
    body: GroupBody, sizes: Sequence[int], budget: int, label: str, fused: Operation | None = None
) -> Tiling:
    """The tiling ``sizes`` asks for; errors name the group and carry its op (``fused``)."""
    where = None if fused is None else op_location(fused)
    if len(sizes) != body.rank:
        raise TdslOptionError(
            f"tile-sizes gives {len(sizes)} size(s), but {label} has a {body.rank}-d "
            f"iteration space [{', '.join(str(e) for e in body.extents)}]",
            where,
            op=fused,
        )
    tiles = [min(size, max(1, e)) for size, e in zip(sizes, body.extents, strict=True)]
    given = f"[{', '.join(str(t) for t in sizes)}]"
    if list(sizes) != tiles:  # (what was asked, then what it came to)
        given += f" (within the extents, [{', '.join(str(t) for t in tiles)}])"
    found = try_tiles(body, tiles)
    if isinstance(found, str):
        raise TdslOptionError(
            f"tile-sizes {given} cannot tile {label}: {found}",
            where,
            op=fused,
        )
    if found.scratch.total > budget:
        raise TdslBudgetError(
            f"tile sizes {given} of {label} need "
            f"{plural(found.scratch.total, 'element')} of scratch, more than the memory "
            f"budget of {plural(budget, 'element')}",
            where,
            note="choose smaller tile-sizes or a larger memory-budget",
            op=fused,
        )
    return found
