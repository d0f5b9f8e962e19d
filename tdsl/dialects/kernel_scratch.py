"""The scratch plan of a ``kernel.tile`` (:class:`ScratchPlan`, made by
:func:`plan_scratch` from its schedule): which value instance lives in which
:class:`Buffer` slot, buffers reused once their values are dead, inputs, constants and
views taking no scratch, and the workspaces ops declare.  Values die sooner because the
schedule runs a value only one later op reads just before that op
(:func:`~tdsl.dialects.kernel_schedule._live_order`): a GPT-2 MLP's gelu holds two tiles
of its hidden layer, not three, so the default budget takes 128 rows, not 103.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.ir import Operation, SSAValue

from tdsl.dialects.kernel_body import require_structured
from tdsl.dialects.kernel_schedule import TileSchedule, carry_shape, staged_shape
from tdsl.dialects.structured import (
    Scan,
    StructuredOpInterface,
    is_constant,
    numpy_dtype,
    reduction_of,
)
from tdsl.errors import internal_error


@dataclass(frozen=True)
class Buffer:
    """One scratch buffer of a tile: allocated once (per thread), reused by every tile."""

    dtype: np.dtype[Any]
    elements: int


@dataclass(frozen=True)
class Slot:
    """Where a value lives in one step: a scratch buffer, a group output, an input, ..."""

    kind: str
    """``buffer``, ``staged`` (a buffer holding the value's whole rows along the tiled
    reduction dims, for later passes), ``output``, ``input``, ``constant`` or ``view``."""
    index: int = -1
    """The buffer or output index (``buffer``, ``staged``, ``output``)."""


INPUT = Slot("input")
CONSTANT = Slot("constant")
VIEW = Slot("view")

Instance = tuple[SSAValue, int]
"""A value as computed in one step (a recomputed value has one instance per pass)."""


@dataclass(frozen=True)
class OpPlan:
    """The buffers one op uses in one step, besides its result slots."""

    workspaces: tuple[int, ...] = ()
    """Buffer index of each workspace the op declared."""
    accumulator: Slot | None = None
    """For an accumulating op: where the accumulator lives during its pass."""
    partial: int = -1
    """For an accumulating op: the buffer its per-tile partial result goes to."""
    carry: int = -1
    """For a scan along a tiled dim: the buffer holding its running values for the pass."""
    more_accumulators: tuple[int, ...] = ()
    """For a tuple accumulator: the buffers of its components after the first, for the pass."""
    more_partials: tuple[int, ...] = ()
    """For a tuple accumulator: the buffers of a tile's partial components after the first."""


@dataclass(frozen=True)
class ScratchPlan:
    """The buffers of one tile, and where every value (instance) lives."""

    buffers: tuple[Buffer, ...]
    slots: Mapping[Instance, Slot]
    ops: Mapping[tuple[Operation, int], OpPlan]
    """Per (op, step index): its workspaces and accumulator."""
    copies: tuple[tuple[int, Instance], ...]
    """Outputs that are copied from a value at the end of its step (an input, a view,
    a value yielded twice)."""
    unit: int = 0
    """The itemsize of the group's widest value (0: not known)."""

    @property
    def total(self) -> int:
        """The scratch of one tile, in elements of the group's widest dtype: a buffer of
        a wider dtype (the float32 accumulator of a float16 group) counts as that many
        such elements (two per float32 element), as the budget's bytes do."""
        if not self.unit:
            return sum(b.elements for b in self.buffers)
        return sum(b.elements * max(1, -(-b.dtype.itemsize // self.unit)) for b in self.buffers)

    def slot(self, value: SSAValue, step: int) -> Slot:
        return self.slots[(value, step)]


class _Pool:
    """Greedy best-fit buffer reuse, per dtype; a buffer grows to its largest use."""

    def __init__(self) -> None:
        self.dtypes: list[np.dtype[Any]] = []
        self.sizes: list[int] = []
        self.free: list[int] = []

    def take(self, elements: int, dtype: np.dtype[Any]) -> int:
        candidates = [b for b in self.free if self.dtypes[b] == dtype]
        fitting = [b for b in candidates if self.sizes[b] >= elements]
        if fitting:
            buf = min(fitting, key=lambda b: (self.sizes[b], b))
        elif candidates:
            buf = max(candidates, key=lambda b: (self.sizes[b], -b))
            self.sizes[buf] = elements
        else:
            self.dtypes.append(dtype)
            self.sizes.append(elements)
            return len(self.sizes) - 1
        self.free.remove(buf)
        return buf

    def give(self, buf: int) -> None:
        if buf not in self.free:
            self.free.append(buf)


@dataclass
class _Event:
    """One op as it runs in the linear order of a tile (a pass's body once)."""

    op: Operation
    step: int
    position: int
    finalize: bool = False
    """The end of a pass: the op's accumulator becomes its result."""


@dataclass
class _Walk:
    events: list[_Event] = field(default_factory=list[_Event])
    pass_end: dict[int, int] = field(default_factory=dict[int, int])
    pass_start: dict[int, int] = field(default_factory=dict[int, int])
    step_end: dict[int, int] = field(default_factory=dict[int, int])
    """The position of each step's last event."""


def _walk(sched: TileSchedule) -> _Walk:
    walk = _Walk()
    position = 0
    for step in sched.steps:
        if step.is_pass:
            walk.pass_start[step.index] = position
        for op in step.ops:
            if op in sched.fused:
                continue  # its consumer computes it
            walk.events.append(_Event(op, step.index, position))
            position += 1
        if step.is_pass:
            for op in step.accumulating:
                walk.events.append(_Event(op, step.index, position, finalize=True))
                position += 1
            walk.pass_end[step.index] = position - 1
        if position > 0 and walk.events[-1].step == step.index:
            walk.step_end[step.index] = position - 1
    return walk


def instance_of(sched: TileSchedule, value: SSAValue, reader_step: int) -> Instance:
    """The instance of ``value`` that an op in step ``reader_step`` reads."""
    p = sched.body.producer(value)
    if p is None:
        return (value, -1)
    step = sched.step_of[p]
    if reader_step % 2 == 1 and reader_step != step and p in sched.step(reader_step).recomputed:
        return (value, reader_step)
    if sched.accumulates(p):
        return (value, step + 1)  # final after its pass
    return (value, step)


def plan_scratch(sched: TileSchedule) -> ScratchPlan:
    """The scratch buffers of one full tile of ``sched`` (see :mod:`tdsl.dialects.kernel_plan`)."""
    cached = sched._scratch  # pyright: ignore[reportPrivateUsage]
    if not cached:
        cached.append(compute_scratch_plan(sched))
    return cached[0]


def compute_scratch_plan(sched: TileSchedule) -> ScratchPlan:
    body = sched.body
    tiles = sched.tiles
    walk = _walk(sched)

    dtypes: dict[SSAValue, np.dtype[Any]] = {}
    shapes: dict[SSAValue, tuple[int, ...]] = {}

    def shape(value: SSAValue) -> tuple[int, ...]:
        found = shapes.get(value)
        if found is None:
            found = shapes[value] = body.shape(value, tiles)
        return found

    def dtype(value: SSAValue) -> np.dtype[Any]:
        found = dtypes.get(value)
        if found is None:
            found = dtypes[value] = numpy_dtype(value.type)
        return found

    instances: dict[tuple[SSAValue, int], Instance] = {}

    def instance(value: SSAValue, reader_step: int) -> Instance:
        key = (value, reader_step)
        found = instances.get(key)
        if found is None:
            found = instances[key] = instance_of(sched, value, reader_step)
        return found

    # where instances are defined and last used
    last_use: dict[Instance, int] = {}
    for ev in walk.events:
        if ev.finalize:
            continue
        for v, _ in sched.reads(ev.op):
            inst = instance(v, ev.step)
            if inst[1] < 0:
                continue
            at = ev.position
            if ev.step % 2 == 1 and inst[1] != ev.step:
                at = walk.pass_end[ev.step]  # read on every tile of the pass
            last_use[inst] = max(last_use.get(inst, -1), at)

    # outputs: values computed straight into the output slices, but those another pass
    # computes again: every pass computes them into a tile buffer alike, bit for bit
    # (NumPy's sums round by layout: argmax's recomputed values in an output's strided
    # slice missed their max by an ulp, and it gave the extent; found by fuzzing)
    recomputed = frozenset(op for step in sched.steps for op in step.recomputed)
    slots: dict[Instance, Slot] = {}
    copies: list[tuple[int, Instance]] = []
    direct: dict[Instance, int] = {}
    for k, (value, out_dims) in enumerate(zip(body.outputs, body.output_dims, strict=True)):
        p = body.producer(value)
        if p is None:
            copies.append((k, (value, -1)))
            continue
        inst = instance_of(sched, value, sched.step_of[p] + (1 if sched.accumulates(p) else 0))
        s = require_structured(p)
        if inst in direct or body.dims[value] != out_dims or s.is_view() or p in recomputed:
            copies.append((k, inst))
            continue
        direct[inst] = k
    for _, inst in copies:
        # copied after the step's last op: no op of the step may overwrite it in place
        last_use[inst] = max(last_use.get(inst, -1), _end_of(walk, inst) + 1)
    # a view reads its operand's buffer whenever it is used: the operand lives as long
    # (else an in-place op could overwrite it first), and is released after the view's
    # last reader (which does not read the operand itself); later views first, for chains
    released_after: dict[int, list[Instance]] = {}
    for ev in reversed(walk.events):
        if ev.finalize or not require_structured(ev.op).is_view():
            continue
        end = max((last_use.get((r, ev.step), -1) for r in ev.op.results), default=-1)
        for v, _ in sched.reads(ev.op):
            src = instance_of(sched, v, ev.step)
            if src[1] >= 0 and end > last_use.get(src, -1):
                last_use[src] = end
                released_after.setdefault(end, []).append(src)

    pool = _Pool()
    ops: dict[tuple[Operation, int], OpPlan] = {}
    hints = dict(direct)
    _chain_outputs(sched, walk, hints, last_use, recomputed)
    owners: dict[int, set[Instance]] = {}
    """Per buffer: the live instances it holds (several after an in-place update)."""

    def hold(inst: Instance, slot: Slot) -> None:
        slots[inst] = slot
        if slot.kind in ("buffer", "staged"):
            owners.setdefault(slot.index, set()).add(inst)

    def release(inst: Instance) -> None:
        slot = slots.get(inst)
        if slot is None or slot.kind not in ("buffer", "staged"):
            return
        held = owners[slot.index]
        held.discard(inst)
        if not held:
            pool.give(slot.index)

    def new_buffer(inst: Instance, dt: np.dtype[Any]) -> Slot:
        return Slot("buffer", pool.take(math.prod(shape(inst[0])), dt))

    accumulators: dict[Operation, Slot] = {}
    more_accumulators: dict[Operation, tuple[int, ...]] = {}
    """A tuple accumulator's components after the first (buffers, for its pass)."""
    carries: dict[tuple[Operation, int], int] = {}
    staged_slots: dict[Instance, int] = {}
    """The buffers of the values a pass stages, taken when it begins."""
    for ev in walk.events:
        op, step = ev.op, ev.step
        s = require_structured(op)
        for key in [k for k in carries if walk.pass_end[k[1]] < ev.position]:
            pool.give(carries.pop(key))  # a pass ended: its carries are free
        if ev.finalize:
            acc_slot = accumulators.pop(op)
            inst = (op.results[0], step + 1)
            if inst in hints:
                target = Slot("output", hints[inst])
            elif (
                reduction_of(op).accumulator_dtype() == dtype(inst[0]) and acc_slot.kind == "buffer"
            ):
                target = acc_slot  # finalized in place
            else:
                target = new_buffer(inst, dtype(inst[0]))
            if acc_slot.kind == "buffer" and acc_slot != target:
                pool.give(acc_slot.index)
            for extra in more_accumulators.pop(op, ()):  # read by the finalization: freed after
                pool.give(extra)
            hold(inst, target)
            if inst not in last_use:
                release(inst)
            continue

        if ev.position == walk.pass_start.get(step):
            # a pass begins: its accumulators live until it ends
            for acc_op in sched.step(step).accumulating:
                inst = (acc_op.results[0], step + 1)
                state = reduction_of(acc_op).accumulator()
                acc_dtype = state.dtypes[0]
                if inst in hints and acc_dtype == dtype(inst[0]) and state.size == 1:
                    accumulators[acc_op] = Slot("output", hints[inst])
                else:
                    accumulators[acc_op] = new_buffer(inst, acc_dtype)
                more_accumulators[acc_op] = tuple(
                    pool.take(math.prod(state.shape(i, shape(inst[0]))), dt)
                    for i, dt in enumerate(state.dtypes[1:], 1)
                )
            # and so do the running values of its scans
            for scan_op in sched.step(step).carrying:
                if not isinstance(scan_op, Scan):  # only a scan carries a state
                    raise internal_error(
                        f"scratch plan: '{scan_op.name}' carries a state along a tiled dim "
                        "but is not a scan",
                        op=scan_op,
                    )
                carries[(scan_op, step)] = pool.take(
                    math.prod(carry_shape(body, scan_op, tiles)),
                    scan_op.carried_loops()[0].dtype,
                )
            # and the values it stages from its start: their rows fill tile by tile, so no
            # buffer of the pass may share them (an op before one in the loop body, freed
            # at once, overwrote the rows of the tiles before; found by fuzzing)
            for staged_op in sched.step(step).ops:
                if staged_op in sched.staged and sched.step_of[staged_op] == step:
                    for r in staged_op.results:
                        if (r, step) not in hints:
                            size = math.prod(staged_shape(sched, r))
                            staged_slots[(r, step)] = pool.take(size, dtype(r))

        reads = [instance(v, step) for v, _ in sched.reads(op)]
        dying = [r for r in dict.fromkeys(reads) if r[1] >= 0 and last_use.get(r) == ev.position]
        aliased = [
            r
            for r in released_after.get(ev.position, ())
            if r not in dying and last_use.get(r) == ev.position
        ]
        results = [(r, step) for r in op.results]
        taken: list[int] = []
        accumulator: Slot | None = None
        partial = -1
        more_partials: tuple[int, ...] = ()
        computes = not is_constant(op) and not s.is_view()
        if is_constant(op):
            for r in results:
                hold(r, CONSTANT)
        elif s.is_view():
            for r in results:
                hold(r, VIEW)
        elif op in accumulators:
            accumulator = accumulators[op]
            state = reduction_of(op).accumulator()
            result = shape(op.results[0])
            partial = pool.take(math.prod(state.shape(0, result)), state.dtypes[0])
            more_partials = tuple(
                pool.take(math.prod(state.shape(i, result)), dt)
                for i, dt in enumerate(state.dtypes[1:], 1)
            )
            taken.extend((partial, *more_partials))
        else:
            for r in results:
                if r in hints:
                    hold(r, Slot("output", hints[r]))
                    continue
                if op in sched.staged:
                    hold(r, Slot("staged", staged_slots.pop(r)))  # (taken as its pass began)
                    continue
                reused = None
                if s.IN_PLACE:
                    reused = next(
                        (
                            o
                            for o in dying
                            if slots.get(o, INPUT).kind == "buffer"
                            and shape(o[0]) == shape(r[0])
                            and dtype(o[0]) == dtype(r[0])
                            and not any(slots.get(q) == slots[o] for q in results if q != r)
                        ),
                        None,
                    )
                hold(r, slots[reused] if reused is not None else new_buffer(r, dtype(r[0])))
        workspaces: tuple[int, ...] = ()
        if computes and _declares_workspaces(s):
            spaces = s.numpy_workspace(
                [body.shape(v, tiles, dims) for v, dims in sched.reads(op)],
                [shape(r) for r in op.results],
                [v in body.constants for v, _ in sched.reads(op)],
            )
            workspaces = tuple(pool.take(math.prod(sh), dt) for sh, dt in spaces)
            taken.extend(workspaces)
        ops[(op, step)] = OpPlan(
            workspaces,
            accumulator,
            partial,
            carries.get((op, step), -1),
            more_accumulators.get(op, ()) if accumulator is not None else (),
            more_partials,
        )
        for b in taken:
            pool.give(b)
        for o in dying + aliased:
            release(o)
        if op not in accumulators:
            for r in results:
                if r not in last_use and r not in hints:
                    release(r)
    buffers = tuple(Buffer(t, n) for t, n in zip(pool.dtypes, pool.sizes, strict=True))
    unit = max((dtype(v).itemsize for v in body.dims), default=0)
    return ScratchPlan(buffers, slots, ops, tuple(copies), unit)


def _declares_workspaces(s: StructuredOpInterface) -> bool:
    """Whether ``s`` overrides ``numpy_workspace`` (the default declares none)."""
    return type(s).numpy_workspace is not StructuredOpInterface.numpy_workspace


def _end_of(walk: _Walk, inst: Instance) -> int:
    """The position after which a copy of ``inst`` into an output is made (end of its step)."""
    return walk.step_end.get(inst[1], 0)


def _chain_outputs(
    sched: TileSchedule,
    walk: _Walk,
    hints: dict[Instance, int],
    last_use: dict[Instance, int],
    recomputed: frozenset[Operation],
) -> None:
    """Walk each output's element-wise chain back: a dying operand of the same shape and
    dtype is computed straight into the output slice too (not one of ``recomputed``,
    which another pass computes again into a tile buffer)."""
    body = sched.body
    position = {(ev.op, ev.step): ev.position for ev in walk.events if not ev.finalize}
    for inst, k in list(hints.items()):
        cur = inst
        while True:
            p = body.producer(cur[0])
            if p is None or sched.accumulates(p) or (p, cur[1]) not in position:
                break
            s = require_structured(p)
            if not s.IN_PLACE or s.is_view():
                break
            at = position[(p, cur[1])]
            nxt: Instance | None = None
            for v in p.operands:
                cand = instance_of(sched, v, cur[1])
                q = body.producer(v)
                if (
                    cand[1] == cur[1]
                    and q is not None
                    and q not in recomputed
                    and not sched.accumulates(q)
                    and not require_structured(q).is_view()
                    and not is_constant(q)
                    and cand not in hints
                    and last_use.get(cand) == at
                    and body.shape(v, sched.tiles) == body.shape(cur[0], sched.tiles)
                    and numpy_dtype(v.type) == numpy_dtype(cur[0].type)
                    and body.dims[v] == body.dims[cur[0]]
                ):
                    nxt = cand
                    break
            if nxt is None:
                break
            hints[nxt] = k
            cur = nxt
