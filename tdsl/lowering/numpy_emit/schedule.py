"""The schedule a tiled group actually runs: tile sizes, threads, hoisted matmuls.

The IR records the largest tile that fits the memory budget.  The target may
run smaller tiles along one *free* iteration dimension (not pinned, see
:mod:`.layout`); tiles are independent, so this changes neither the result
nor the promise that scratch stays within the recorded ``scratch``:

- **cache blocking**: the tile is cut so that no operand's block exceeds
  :data:`CACHE_BLOCK_BYTES` (NumPy re-reads each block once per ufunc, so
  the blocks should stay in L2);
- **threads**: with ``threads`` > 1 the loop is split into tile-aligned
  chunks, one per thread, each with its own scratch, only when every thread
  gets at least :data:`THREAD_MIN_BYTES` of data; the tile is cut further
  if needed so that the scratch of all threads together stays within the
  recorded ``scratch``;
- **matmul**: a BLAS call on a few rows is slow (the right operand is packed
  again on every call), so a matmul reading group inputs and stored straight
  into an output is hoisted out of the tile loop and runs once on the whole
  range; the element-wise epilogue then runs tile by tile, in cache.  A matmul
  that cannot be hoisted (it has a prologue, say) keeps the recorded tiles
  (``tdsl-tile`` gives a matmul a few hundred rows) and the group
  single-threaded, so that threaded BLAS never runs inside worker threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tdsl.lowering.numpy_emit.alloc import OutSlot, Plan
from tdsl.lowering.numpy_emit.layout import Layout, Tiling
from tdsl.lowering.numpy_emit.program import Instr, Program, Var

CACHE_BLOCK_BYTES = 256 * 1024
"""Largest block of one operand a tile touches (the L2 cache holds a few)."""

THREAD_MIN_BYTES = 1 << 20
"""Data per thread below which a thread hand-off (~150 us) does not pay."""


@dataclass
class Schedule:
    """How a ``kernel.tile`` group runs."""

    tiling: Tiling
    threads: int = 1
    hoisted: list[Instr] = field(default_factory=list[Instr])
    notes: list[str] = field(default_factory=list[str])


def _dims(layout: Layout) -> set[int]:
    return {ax.dim for ax in layout if ax.dim is not None}


def _hoistable(ins: Instr, plan: Plan, d: int) -> bool:
    """A matmul of two group inputs stored straight into an output, whose right operand is
    the same for every tile along ``d``: running it once on whole arrays is the same."""
    if not ins.is_matmul or not isinstance(plan.slots.get(ins.result), OutSlot):
        return False
    lhs, rhs = ins.operands
    return lhs.kind == "input" and rhs.kind == "input" and d not in _dims(rhs.layout)


def _nbytes(layout: Layout, itemsize: int, tiling: Tiling) -> int:
    return tiling.full_elements(layout) * itemsize


def _tiles_along(space: Sequence[int], eff: Sequence[int], d: int) -> int:
    return -(-space[d] // eff[d])


def schedule_tile(
    space: Sequence[int],
    tiles: Sequence[int],
    scratch: int,
    program: Program,
    plan: Plan,
    inputs: Sequence[Var],
    outputs: Sequence[tuple[Layout, int]],
    pinned: set[int],
    threads: int,
) -> Schedule:
    """Choose the tiling, threads and hoisted matmuls of a tiled group.

    ``outputs`` gives each result's layout and item size; ``pinned`` the
    iteration dims that must not be cut more finely than the IR does.
    """
    space = tuple(space)
    eff = list(tiles)
    notes: list[str] = []
    free = next((d for d, n in enumerate(space) if n > 1 and d not in pinned), None)
    operands: list[tuple[Layout, int]] = [(v.layout, v.dtype.itemsize) for v in inputs]
    operands += list(outputs)
    values = operands + [(b.layout, b.dtype.itemsize) for b in plan.buffers]

    # a matmul that stays in the tile loop keeps the recorded (BLAS-sized) tiles
    matmuls = [ins for ins in program.instrs if ins.is_matmul]
    blas_in_loop = any(free is None or not _hoistable(ins, plan, free) for ins in matmuls)

    # cache blocking along the free dim
    if free is not None and not blas_in_loop:
        unit = list(eff)
        unit[free] = 1
        per_unit = max(
            (
                _nbytes(lay, size, Tiling(space, tuple(unit)))
                for lay, size in values
                if free in _dims(lay)
            ),
            default=0,
        )
        cap = max(1, CACHE_BLOCK_BYTES // per_unit) if per_unit else eff[free]
        if cap < eff[free]:
            eff[free] = cap
            notes.append(f"cache blocking: d{free} cut to {cap}")

    # threads: only with enough data, and never around a BLAS call
    nthreads = threads
    total = sum(_nbytes(lay, size, Tiling(space, space)) for lay, size in operands)
    if free is None or total < threads * THREAD_MIN_BYTES:
        nthreads = 1
    elif blas_in_loop:
        nthreads = 1
        notes.append("one thread: a matmul in the tile loop keeps BLAS threads to itself")
    if nthreads > 1 and free is not None and not Tiling(space, tuple(eff)).looped:
        eff[free] = -(-space[free] // nthreads)

    # the scratch of all threads together stays within the recorded scratch
    def fits(t: int, n: int) -> bool:
        trial = list(eff)
        if free is not None:
            trial[free] = t
        return n * plan.scratch_elements(Tiling(space, tuple(trial))) <= scratch

    if free is not None and not fits(eff[free], nthreads):
        while not fits(1, nthreads) and nthreads > 1:
            nthreads = 1
        if fits(1, nthreads):
            lo, hi = 1, eff[free]
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if fits(mid, nthreads):
                    lo = mid
                else:
                    hi = mid - 1
            eff[free] = lo
            notes.append(f"d{free} cut to {lo} to keep scratch within {scratch}")
    tiling = Tiling(space, tuple(eff))
    need = nthreads * plan.scratch_elements(tiling)
    if need > scratch:
        notes.append(f"needs {need} elements of scratch, more than the recorded {scratch}")

    looped = tiling.looped
    hoisted: list[Instr] = []
    if len(looped) == 1:
        hoisted = [ins for ins in matmuls if _hoistable(ins, plan, looped[0])]
    if not looped or len(hoisted) != len(matmuls):
        nthreads = 1
    else:
        nthreads = min(nthreads, _tiles_along(space, eff, looped[0]))
    return Schedule(tiling, nthreads, hoisted, notes)
