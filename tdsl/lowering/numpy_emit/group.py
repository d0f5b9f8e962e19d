"""Code for one group: straight-line NumPy calls, or a loop over tiles.

A group whose schedule has a single tile is emitted inline in the caller:
scratch is allocated with ``np.empty``, then one NumPy call per instruction.
A group with several tiles becomes a module-level function
``_<func>_<group>(lo, hi, inputs..., outputs...)`` that allocates its scratch
once, loops over the tiles whose start along the outermost looped dim lies in
``[lo, hi)``, and writes each tile of every output in place; the caller runs it
on the whole range, or through ``_parallel`` on one chunk per thread (each
call has its own scratch).  A hoisted matmul runs in the caller first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tdsl.lowering.numpy_emit.alloc import Buffer, OutSlot, Plan, plan_buffers
from tdsl.lowering.numpy_emit.layout import Layout, Tiling
from tdsl.lowering.numpy_emit.program import ConstPool, Instr, Program, Var
from tdsl.lowering.numpy_emit.schedule import Schedule, schedule_tile
from tdsl.lowering.numpy_emit.source import (
    FillPool,
    Names,
    Writer,
    dtype_expr,
    identifier,
    shape_expr,
)

ZERO_BLOCK_LIMIT = 1 << 20
"""Largest zero block (elements) kept for ``relu``; ``np.zeros`` maps it lazily to the zero page."""

FILL_BLOCK_LIMIT = 1 << 16
"""Largest non-zero constant block (elements) kept for ``maximum``/``minimum``."""


@dataclass
class ModuleState:
    """What the groups of one module share: constants, helper functions, names."""

    threads: int = 1
    consts: ConstPool = field(default_factory=ConstPool)
    fills: FillPool = field(default_factory=FillPool)
    helpers: Writer = field(default_factory=Writer)
    names: Names = field(default_factory=Names)
    uses_pool: bool = False


@dataclass
class TileInfo:
    """The recorded schedule of a ``kernel.tile``."""

    space: tuple[int, ...]
    tiles: tuple[int, ...]
    scratch: int


@dataclass
class Group:
    """A group to emit.

    ``label`` is the comment naming the IR group, ``title`` its short name
    (``group g0``), ``name`` the name of its loop function.  ``inputs`` are the body's ``input`` vars (their ``name`` is a parameter
    name for a loop function), ``input_exprs`` the caller's expressions for
    them, ``out_names`` the caller names that receive the outputs.  With
    ``bind_views`` (top-level ops, not a kernel group) an output that is an
    input, a constant or a view of one is bound to that expression instead of
    being copied.
    """

    label: str
    title: str
    name: str
    program: Program
    inputs: list[Var]
    input_exprs: list[str]
    out_layouts: list[Layout]
    out_dtypes: list[np.dtype[np.floating]]
    out_names: list[str]
    tile: TileInfo | None = None
    bind_views: bool = False
    allocs: dict[int, str] = field(default_factory=dict[int, str])
    """Output index -> how the caller gets that output's array, a template in which
    ``{}`` stands for the ``np.empty(...)`` allocating it (default: just that)."""


def _output_pins(group: Group, space: Sequence[int]) -> set[int]:
    """Iteration dims an output does not follow exactly: they must not be cut."""
    pins: set[int] = set()
    named_by_all = set(range(len(space)))
    for value, out in zip(group.program.yields, group.out_layouts, strict=True):
        named_by_all &= {ax.dim for ax in out if ax.dim is not None}
        for va, oa in zip(value.layout, out, strict=False):
            if va.dim != oa.dim:
                pins.update(d for d in (va.dim, oa.dim) if d is not None)
    return pins | (set(range(len(space))) - named_by_all)


@dataclass
class _Exprs:
    """Python expressions of the vars of a group at the current tile."""

    tiling: Tiling
    inputs: dict[Var, str]
    outputs: list[str]
    buffers: dict[int, str]
    fills: dict[str, str]
    plan: Plan
    state: ModuleState

    def fill_block(self, v: Var) -> str:
        """The module-level block (or 0-d constant) standing for fill var ``v``."""
        shape = self.tiling.full_shape(v.layout)
        size = int(np.prod(shape))
        limit = ZERO_BLOCK_LIMIT if v.fill_value == 0.0 else FILL_BLOCK_LIMIT
        if size > limit:
            return self.state.consts.add(np.array(v.fill_value, v.dtype))
        return self.state.fills.add(shape, v.dtype, v.fill_value)

    def of(self, v: Var) -> str:
        if v.kind == "input":
            return self.tiling.window(self.inputs[v], v.layout)
        if v.kind == "const":
            return v.name
        if v.kind == "fill":
            block = self.fill_block(v)
            return self.fills.get(block, block)
        if v.kind == "view":
            assert v.base is not None
            return v.view.format(self.of(v.base))
        slot = self.plan.slots[v]
        if isinstance(slot, OutSlot):
            return self.outputs[slot.index]
        return self.buffers[slot.index]


def _emit_instrs(w: Writer, instrs: Sequence[Instr], of: Callable[[Var], str]) -> None:
    for ins in instrs:
        if ins.note:
            w.comment(ins.note)
        w.line(ins.code.format(*(of(p) for p in ins.operands), out=of(ins.result)))


def _emit_copies(w: Writer, plan: Plan, exprs: _Exprs, skip: set[int]) -> None:
    for k, v in plan.copies:
        if k not in skip:
            w.line(f"np.copyto({exprs.outputs[k]}, {exprs.of(v)})")


def emit_group(group: Group, state: ModuleState, w: Writer, names: Names) -> list[bool]:
    """Emit ``group`` into the caller's writer ``w`` (scope ``names``).

    Returns, per output, whether the caller's name now holds a fresh array
    (False when it was bound to an input, a constant or a view of one).
    """
    program = group.program
    plan = plan_buffers(program, group.out_layouts, group.out_dtypes)
    w.comment(group.label)

    # outputs: fresh arrays, or (top-level ops only) bound to what they view
    fresh: list[bool] = []
    bound: set[int] = set()
    whole = Tiling((), ())
    caller = _Exprs(
        whole,
        dict(zip(group.inputs, group.input_exprs, strict=True)),
        group.out_names,
        {},
        {},
        plan,
        state,
    )
    for k, (name, value) in enumerate(zip(group.out_names, program.yields, strict=True)):
        if group.bind_views and value.root().kind in ("input", "const"):
            w.line(f"{name} = {caller.of(value)}")
            bound.add(k)
            fresh.append(False)
        else:
            shape = tuple(ax.extent for ax in group.out_layouts[k])
            alloc = f"np.empty({shape_expr(shape)}, {dtype_expr(group.out_dtypes[k])})"
            w.line(f"{name} = {group.allocs.get(k, '{}').format(alloc)}")
            fresh.append(True)

    if group.tile is None:
        schedule = Schedule(whole)
    else:
        info = group.tile
        pinned = program.pinned | _output_pins(group, info.space)
        outs = [
            (lay, dt.itemsize) for lay, dt in zip(group.out_layouts, group.out_dtypes, strict=True)
        ]
        schedule = schedule_tile(
            info.space,
            info.tiles,
            info.scratch,
            program,
            plan,
            group.inputs,
            outs,
            pinned,
            state.threads,
        )
        tiling = schedule.tiling
        if tiling.tiles != info.tiles or schedule.threads > 1 or schedule.notes:
            desc = f"runs tiles {list(tiling.tiles)}"
            if schedule.threads > 1:
                desc += f" on {schedule.threads} threads"
            desc += f", scratch {plan.scratch_elements(tiling)} elements per thread"
            w.comment("; ".join([desc, *schedule.notes]))

    if not schedule.tiling.looped:
        _emit_straight(group, plan, schedule.tiling, state, w, names, bound)
    else:
        _emit_loop(group, plan, schedule, state, w, bound)
    return fresh


def _emit_straight(
    group: Group,
    plan: Plan,
    tiling: Tiling,
    state: ModuleState,
    w: Writer,
    names: Names,
    bound: set[int],
) -> None:
    buffers: dict[int, str] = {}
    for b in plan.buffers:
        buffers[b.index] = names.numbered("t")
        shape = tiling.full_shape(b.layout)
        w.line(f"{buffers[b.index]} = np.empty({shape_expr(shape)}, {dtype_expr(b.dtype)})")
    exprs = _Exprs(
        tiling,
        dict(zip(group.inputs, group.input_exprs, strict=True)),
        group.out_names,
        buffers,
        {},
        plan,
        state,
    )
    _emit_instrs(w, group.program.instrs, exprs.of)
    _emit_copies(w, plan, exprs, bound)


def _emit_loop(
    group: Group,
    plan: Plan,
    sched: Schedule,
    state: ModuleState,
    w: Writer,
    bound: set[int],
) -> None:
    tiling = sched.tiling
    looped = tiling.looped
    split = looped[0]
    space, tiles = tiling.space, tiling.tiles
    multi = len(looped) > 1

    # the caller: hoisted matmuls on the whole range, then the tile loop
    caller = _Exprs(
        Tiling((), ()),
        dict(zip(group.inputs, group.input_exprs, strict=True)),
        group.out_names,
        {},
        {},
        plan,
        state,
    )
    _emit_instrs(w, sched.hoisted, caller.of)
    body = [ins for ins in group.program.instrs if ins not in sched.hoisted]
    if not body and not [k for k, _ in plan.copies if k not in bound]:
        return

    fn = state.names.fresh(f"_{group.name}")
    local = Names()
    local.reserve("np", "lo", "hi")
    for d in range(len(space)):
        local.reserve(f"s{d}", f"e{d}", f"n{d}")
    read = {p.root() for ins in body for p in ins.operands}
    read.update(v.root() for k, v in plan.copies if k not in bound)
    used = [
        (i, v, expr)
        for i, (v, expr) in enumerate(zip(group.inputs, group.input_exprs, strict=True))
        if v in read
    ]
    params = [local.fresh(v.name or identifier(expr, f"in{i}")) for i, v, expr in used]
    outs = [local.fresh(f"out{k}") for k in range(len(group.out_names))]
    args = ", ".join(["lo", "hi", *params, *outs])

    h = Writer()
    h.line(f"def {fn}({args}):")
    with h.indent():
        h.line(
            f'"""Tiles {list(tiles)} of {group.title} whose d{split} start is in '
            f'[lo, hi); writes {", ".join(outs)} in place."""'
        )
        buffers: dict[int, str] = {}
        fills: dict[str, str] = {}
        shrinking: list[tuple[str, str, Layout]] = []  # (local name, full-tile source, layout)
        for b in plan.buffers:
            name = local.fresh(f"t{b.index}")
            buffers[b.index] = name
            src = local.fresh(f"{name}_full") if multi and tiling.shrinks(b.layout) else name
            h.line(
                f"{src} = np.empty({shape_expr(tiling.full_shape(b.layout))}, {dtype_expr(b.dtype)})"
            )
            if tiling.shrinks(b.layout):
                shrinking.append((name, src, b.layout))
        probe = _Exprs(tiling, {}, [], {}, {}, plan, state)
        for v in _fill_vars(group.program.instrs):
            block = probe.fill_block(v)
            if block in fills or not tiling.shrinks(v.layout) or block.startswith("_C"):
                continue
            name = local.fresh(f"z{len(fills)}")
            fills[block] = name
            if not multi:
                h.line(f"{name} = {block}")
            shrinking.append((name, block, v.layout))

        exprs = _Exprs(
            tiling,
            {v: p for (_, v, _), p in zip(used, params, strict=True)},
            [local.fresh(f"o{k}") for k in range(len(outs))],
            buffers,
            fills,
            plan,
            state,
        )
        for j, d in enumerate(looped):
            start, stop = ("lo", "hi") if j == 0 else ("0", str(space[d]))
            h.line(f"for s{d} in range({start}, {stop}, {tiles[d]}):")
            h.level += 1
            if tiling.has_remainder(d):
                h.line(f"e{d} = min(s{d} + {tiles[d]}, {stop})")
                if multi:
                    h.line(f"n{d} = e{d} - s{d}")
            else:
                h.line(f"e{d} = s{d} + {tiles[d]}")
        if shrinking and not multi:
            h.line(
                f"if e{split} - s{split} < {tiles[split]}:  # last tile: use the front of each buffer"
            )
            with h.indent():
                h.line(f"n{split} = e{split} - s{split}")
                for name, src, layout in shrinking:
                    h.line(f"{name} = {tiling.prefix(src, layout)}")
        elif shrinking:
            for name, src, layout in shrinking:
                h.line(f"{name} = {tiling.prefix(src, layout)}")
        for k, (oname, out) in enumerate(zip(exprs.outputs, outs, strict=True)):
            if k not in bound:
                h.line(f"{oname} = {tiling.window(out, group.out_layouts[k])}")
        _emit_instrs(h, body, exprs.of)
        _emit_copies(h, plan, exprs, bound)
        h.level -= len(looped)
    h.line()
    h.line()
    state.helpers.lines.extend(h.lines)

    call_args = ", ".join([*(expr for _, _, expr in used), *group.out_names])
    if sched.threads > 1:
        state.uses_pool = True
        w.line(f"_parallel({fn}, {space[split]}, {tiles[split]}, {sched.threads}, {call_args})")
    else:
        w.line(f"{fn}(0, {space[split]}, {call_args})")


def _fill_vars(instrs: Sequence[Instr]) -> list[Var]:
    return [p for ins in instrs for p in ins.operands if p.kind == "fill"]


__all__ = ["Buffer", "Group", "ModuleState", "TileInfo", "emit_group"]
