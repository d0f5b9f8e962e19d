"""Code for one group: straight-line NumPy calls, or loops over tiles running its schedule.

A group whose run has no loop (one tile) is emitted inline in the caller:
scratch is allocated with ``np.empty``, then one NumPy call per instruction, then
the scratch is deleted (one group's scratch at a time, as the memory promise counts).
Otherwise it becomes a module-level function
``_<func>_<group>(lo, hi, inputs..., outputs...)`` that allocates its scratch
once and loops: over the tiles of the parallel dims whose start along the
outermost one lies in ``[lo, hi)`` (the caller runs it on the whole range, or
through ``_parallel`` on one chunk per thread, each with its own scratch); in
each, the schedule's steps in order: a stage's calls once, a pass's calls on
every tile of the tiled reduction dims, its accumulators set to their
identity before and finalized after, its scans' carries set to their identity
before.  Ops that run whole go first, in the
caller.  Every array is a view of a scratch buffer, of an input, or of an
output (see :mod:`tdsl.dialects.kernel_plan` for which): the code allocates
nothing per tile.
"""

from __future__ import annotations

from tdsl.backend.numpy.blocking import plan_run
from tdsl.backend.numpy.group_plan import (
    GroupSource,
    ModuleState,
    _Lowering,
    _StepCode,
    value_layout,
)
from tdsl.backend.numpy.group_scope import _all_vars, _emit, _Scope, _Views, _Windows
from tdsl.backend.numpy.layout import Tiling
from tdsl.backend.numpy.program import Instr, Var
from tdsl.backend.numpy.source import Writer, shape_expr
from tdsl.dialects.kernel_plan import (
    Instance,
)
from tdsl.dialects.structured import (
    numpy_dtype,
)
from tdsl.dtypes import dtype_expr
from tdsl.errors import internal_error
from tdsl.ir_text import Names


def emit_group(group: GroupSource, state: ModuleState, w: Writer, names: Names) -> list[bool]:
    """Emit ``group`` into the caller's writer ``w`` (scope ``names``).

    Returns, per output, whether the caller's name now holds a fresh array
    (False when it was bound to an input, a constant or a view of one).
    """
    body = group.body
    run = plan_run(body, group.tiles, group.recorded, state.threads, group.staged, group.sweeps)
    lowering = _Lowering(group, run, state)
    lowering.lower()
    tiling = lowering.tiling
    w.comment(group.label)
    if run.tiles != group.tiles or run.threads > 1 or run.notes:
        desc = f"runs tiles {list(run.tiles)}"
        if run.threads > 1:
            desc += f" on {run.threads} threads"
        desc += f", scratch {run.scratch.total} elements per thread"
        if run.schedule.reduction_loops:
            desc += f"; {run.schedule.describe()}"
        w.comment("; ".join([desc, *run.notes]))
    elif run.schedule.reduction_loops:
        w.comment(run.schedule.describe())

    # outputs: fresh arrays, or (top-level ops only) bound to what they view
    fresh: list[bool] = []
    bound: set[int] = set()
    caller_scope = _Scope(
        tiling, frozenset(), group.input_exprs, group.out_names, lambda i, lay: "", lambda v: ""
    )
    copies = {k: inst for k, inst in run.scratch.copies}
    for k, name in enumerate(group.out_names):
        inst = copies.get(k)
        if group.bind_views and inst is not None and _bindable(lowering, inst):
            var = lowering.var(inst, body.output_dims[k])
            w.line(f"{name} = {caller_scope.of(var)}")
            bound.add(k)
            fresh.append(False)
            continue
        value = body.outputs[k]
        shape = tuple(ax.extent for ax in value_layout(body, value, body.output_dims[k]))
        alloc = f"np.empty({shape_expr(shape)}, {dtype_expr(numpy_dtype(value.type))})"
        w.line(f"{name} = {group.allocs.get(k, '{}').format(alloc)}")
        fresh.append(True)
    for step_copies in lowering.copies.values():
        step_copies[:] = [c for c in step_copies if c.result is None or c.result.index not in bound]

    if not tiling.looped:
        _emit_straight(lowering, state, w, names)
    else:
        _emit_loops(lowering, state, w)
    return fresh


def _bindable(lowering: _Lowering, inst: Instance) -> bool:
    _, step = inst
    if step < 0:
        return True
    return lowering.plan.slots[inst].kind in ("view", "constant") and _root_is_input(lowering, inst)


def _root_is_input(lowering: _Lowering, inst: Instance) -> bool:
    var = lowering.var(inst)
    return var.root().kind in ("input", "const")


def _instrs(lowering: _Lowering) -> list[Instr]:
    out = list(lowering.whole)
    for code in lowering.steps:
        out += code.init + code.body + code.finalize
    for copies in lowering.copies.values():
        out += copies
    return out


def _emit_straight(lowering: _Lowering, state: ModuleState, w: Writer, names: Names) -> None:
    tiling = lowering.tiling
    buffers: list[str] = []
    for b in lowering.plan.buffers:
        name = names.numbered("t")
        buffers.append(name)
        w.line(f"{name} = np.empty({b.elements}, {dtype_expr(b.dtype)})")
    views = _Views(tiling, state, names, buffers)
    scope = _Scope(
        tiling,
        frozenset(),
        lowering.group.input_exprs,
        lowering.group.out_names,
        views.buffer,
        views.fill,
    )
    for v in _all_vars(_instrs(lowering)):
        scope.of(v)  # register every view first
    for line in views.setup:
        w.line(line)
    _emit(w, lowering.whole, scope)
    for index, code in _by_index(lowering):
        if code is not None:
            _emit(w, code.init + code.body + code.finalize, scope)
        _emit(w, lowering.copies.get(index, []), scope)
    # the scratch is this group's alone: free it (and the views that hold it) before
    # the next group allocates its own, as a group's function does when it returns
    held = buffers + list(views.full.values())
    if held:
        w.line(f"del {', '.join(held)}")


def _by_index(lowering: _Lowering) -> list[tuple[int, _StepCode | None]]:
    """The steps and the copies made after them, by schedule position."""
    codes = {code.step.index: code for code in lowering.steps}
    indices = sorted({*codes, *lowering.copies})
    return [(i, codes.get(i)) for i in indices]


def _emit_loops(lowering: _Lowering, state: ModuleState, w: Writer) -> None:
    group, tiling, sched, run = lowering.group, lowering.tiling, lowering.sched, lowering.run
    space, tiles = tiling.space, tiling.tiles

    # the caller: ops that run whole, then the loops
    caller = _Scope(
        tiling, frozenset(), group.input_exprs, group.out_names, lambda i, lay: "", lambda v: ""
    )
    _emit(w, lowering.whole, caller)
    looped_code = [i for code in lowering.steps for i in code.init + code.body + code.finalize]
    looped_code += [c for copies in lowering.copies.values() for c in copies]
    if not looped_code:
        return

    fn = state.names.fresh(f"_{group.name}")
    local = Names()
    local.reserve("np", "lo", "hi")
    for d in range(len(space)):
        local.reserve(f"s{d}", f"e{d}", f"n{d}")
    read = [v.root() for ins in looped_code for v in ins.operands]
    read += [v.root() for ins in looped_code if ins.result is not None for v in [ins.result]]
    used_inputs = sorted({v.index for v in read if v.kind == "input"})
    params = {i: local.fresh(_ident(group.input_exprs[i], f"in{i}")) for i in used_inputs}
    outs = [local.fresh(f"out{k}") for k in range(len(group.out_names))]
    buffers = [local.fresh(f"t{k}") for k in range(len(lowering.plan.buffers))]
    args = ", ".join(["lo", "hi", *params.values(), *outs])

    h = Writer()
    h.line(f"def {fn}({args}):")
    views = _Views(tiling, state, local, buffers)
    inputs_named = [params.get(i, "") for i in range(len(group.inputs))]
    with h.indent():
        loops = [*sched.parallel_loops]
        h.line(
            f'"""Tiles {list(tiles)} of {group.title} whose d{loops[0] if loops else 0} start is '
            f'in [lo, hi); writes {", ".join(outs)} in place."""'
        )
        for b, name in zip(lowering.plan.buffers, buffers, strict=True):
            h.line(f"{name} = np.empty({b.elements}, {dtype_expr(b.dtype)})")
        p_scope = frozenset(sched.parallel_loops)
        all_scope = p_scope | frozenset(sched.reduction_loops)

        windows = _Windows(local)

        def staged(v: Var, scope: frozenset[int]) -> str:
            return views.staged(v, scope, sched.reduction_loops)

        def scope_at(bound: frozenset[int], level: str) -> _Scope:
            return _Scope(
                tiling,
                bound,
                inputs_named,
                outs,
                views.buffer,
                views.fill,
                windows,
                level,
                staged,
            )

        def parts(index: int, code: _StepCode | None) -> list[tuple[list[Instr], bool]]:
            """The instructions of a step, each list with whether it runs in the pass loop."""
            copies = lowering.copies.get(index, [])
            if code is None:
                return [(copies, index % 2 == 1)]
            if index % 2 == 0:
                return [(code.body, False), (copies, False)]
            return [(code.init, False), (code.body, True), (copies, True), (code.finalize, False)]

        # count the windows each loop body uses, then register every view and window
        # before writing the set-up lines
        for index, code in _by_index(lowering):
            for instrs, inner in parts(index, code):
                sc = scope_at(all_scope if inner else p_scope, f"r{index}" if inner else "p")
                for ins in instrs:
                    for v in (*ins.operands, *([ins.result] if ins.result is not None else [])):
                        sc.of(v)
        windows.finish()
        for index, code in _by_index(lowering):
            for instrs, inner in parts(index, code):
                sc = scope_at(all_scope if inner else p_scope, f"r{index}" if inner else "p")
                for v in _all_vars(instrs):
                    sc.of(v)
        for line in views.setup:
            h.line(line)
        for j, d in enumerate(sched.parallel_loops):
            start, stop = ("lo", "hi") if j == 0 else ("0", str(space[d]))
            _loop_header(h, d, start, stop, tiles[d], tiling)
        h_level_p = h.level
        for line in views.cuts_for(sched.parallel_loops, p_scope) + windows.lines("p"):
            h.line(line)
        for index, code in _by_index(lowering):
            level = f"r{index}"
            copies = lowering.copies.get(index, [])
            if index % 2 == 0:
                _emit(h, code.body if code is not None else [], scope_at(p_scope, "p"))
                _emit(h, copies, scope_at(p_scope, "p"))
                continue
            if code is None:
                raise internal_error(f"numpy target: pass {index} of the schedule has no code")
            _emit(h, code.init, scope_at(p_scope, "p"))
            for d in sched.reduction_loops:
                _loop_header(h, d, "0", str(space[d]), tiles[d], tiling)
            for line in views.cuts_for(sched.reduction_loops, all_scope) + windows.lines(level):
                h.line(line)
            _emit(h, code.body, scope_at(all_scope, level))
            _emit(h, copies, scope_at(all_scope, level))
            h.level = h_level_p
            _emit(h, code.finalize, scope_at(p_scope, "p"))
        h.level = 1
    h.line()
    h.line()
    state.helpers.lines.extend(h.lines)

    call_args = ", ".join([*(group.input_exprs[i] for i in used_inputs), *group.out_names])
    first = sched.parallel_loops[0] if sched.parallel_loops else None
    if run.threads > 1 and first is not None:
        state.uses_pool = True
        w.line(f"_parallel({fn}, {space[first]}, {tiles[first]}, {run.threads}, {call_args})")
    elif first is not None:
        w.line(f"{fn}(0, {space[first]}, {call_args})")
    else:
        w.line(f"{fn}(0, 1, {call_args})")


def _loop_header(h: Writer, d: int, start: str, stop: str, tile: int, tiling: Tiling) -> None:
    h.line(f"for s{d} in range({start}, {stop}, {tile}):")
    h.level += 1
    if tiling.has_remainder(d):
        h.line(f"e{d} = min(s{d} + {tile}, {stop})")
        h.line(f"n{d} = e{d} - s{d}")
    else:
        h.line(f"e{d} = s{d} + {tile}")


def _ident(expr: str, fallback: str) -> str:
    from tdsl.backend.numpy.source import identifier

    return identifier(expr, fallback)


__all__ = ["GroupSource", "ModuleState", "emit_group", "value_layout"]
