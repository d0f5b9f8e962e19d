"""Code for one group: straight-line NumPy calls, or loops over tiles running its schedule.

A group whose run has no loop (one tile) is emitted inline in the caller:
scratch is allocated with ``np.empty``, then one NumPy call per instruction.
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

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.ir import Operation, SSAValue

from tdsl.backend.numpy.blocking import Run, plan_run
from tdsl.backend.numpy.layout import Axis, Layout, Tiling
from tdsl.backend.numpy.lowerings import (
    lower_finalize,
    lower_merge,
    lower_op,
    lower_partial,
    lower_scan,
    view_template,
)
from tdsl.backend.numpy.program import ConstPool, Instr, TileGen, Var
from tdsl.backend.numpy.source import FillPool, Names, Writer, scalar_expr, shape_expr
from tdsl.dialects.kernel_plan import (
    GroupBody,
    Instance,
    OpPlan,
    Step,
    TileSchedule,
    carry_dims,
    instance_of,
)
from tdsl.dialects.structured import (
    Scan,
    StructuredOpInterface,
    constant_value,
    fmt_shape,
    numpy_dtype,
    reduction_of,
    structured,
    tensor_shape,
)
from tdsl.dtypes import dtype_expr
from tdsl.errors import TdslIRError

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
class GroupSource:
    """A group to emit.

    ``label`` is the comment naming the IR group, ``title`` its short name
    (``group g0``), ``name`` the name of its loop function.  ``inputs`` are the
    values the body reads from outside (block arguments), ``input_exprs`` the
    caller's expressions for them, ``out_names`` the caller names that receive
    the outputs, and ``allocs`` how the caller gets an output's array: a
    template in which ``{}`` stands for the ``np.empty(...)`` allocating it
    (default: just that).  ``tiles`` are the IR's
    tiles and ``recorded`` its scratch (None: a group the IR does not tile).
    With ``bind_views`` (top-level ops, not a kernel group) an output that is
    an input, a constant or a view of one is bound to that expression instead
    of being copied.
    """

    label: str
    title: str
    name: str
    body: GroupBody
    tiles: tuple[int, ...]
    recorded: int | None
    inputs: list[SSAValue]
    input_exprs: list[str]
    out_names: list[str]
    bind_views: bool = False
    allocs: dict[int, str] = field(default_factory=dict[int, str])


def value_layout(body: GroupBody, value: SSAValue, dims: Sequence[int | None]) -> Layout:
    """The layout of ``value`` read along ``dims``: full extents, and the dim each follows."""
    return tuple(
        Axis(extent if d is None else body.extents[d], d)
        for extent, d in zip(tensor_shape(value), dims, strict=True)
    )


@dataclass
class _StepCode:
    step: Step
    init: list[Instr] = field(default_factory=list[Instr])
    body: list[Instr] = field(default_factory=list[Instr])
    finalize: list[Instr] = field(default_factory=list[Instr])


class _Lowering:
    """Every op of the schedule as NumPy instructions over :class:`Var` values."""

    def __init__(self, group: GroupSource, run: Run, state: ModuleState) -> None:
        self.group = group
        self.body = group.body
        self.run = run
        self.sched: TileSchedule = run.schedule
        self.plan = run.scratch
        self.state = state
        self.tiling = Tiling(self.body.extents, run.tiles)
        self.whole: list[Instr] = []
        self.steps: list[_StepCode] = []
        self.copies: dict[int, list[Instr]] = {}
        """Per step index: copies of values into outputs, at the end of the step's body."""
        self.input_index: dict[SSAValue, int] = {}
        for i, v in enumerate(group.inputs):
            self.input_index.setdefault(v, i)

    def tile_shape(self, v: Var) -> tuple[int, ...]:
        return self.tiling.full_shape(v.layout)

    def var(self, inst: Instance, dims: Sequence[int | None] | None = None) -> Var:
        """The var holding a value instance (read along ``dims`` if an input)."""
        value, step = inst
        body = self.body
        layout = value_layout(body, value, body.dims[value] if dims is None else dims)
        dtype = numpy_dtype(value.type)
        tile = self.tiling.full_shape(layout)
        if step < 0:
            owner = value.owner
            constant = constant_value(owner) if isinstance(owner, Operation) else None
            if constant is not None:
                return Var(layout, dtype, "const", tile, name=self.state.consts.add(constant))
            return Var(layout, dtype, "input", tile, index=self.input_index[value])
        slot = self.plan.slots[inst]
        if slot.kind == "buffer":
            return Var(layout, dtype, "buffer", tile, index=slot.index)
        if slot.kind == "output":
            return Var(layout, dtype, "output", tile, index=slot.index)
        if slot.kind == "constant":
            owner = value.owner
            assert isinstance(owner, Operation)
            constant = constant_value(owner)
            assert constant is not None
            return Var(layout, dtype, "const", tile, name=self.state.consts.add(constant))
        # a view of its operand
        owner = value.owner
        assert isinstance(owner, Operation)
        s = structured(owner)
        assert s is not None
        template = view_template(owner)
        base = self.read(owner, 0, step)
        return Var(layout, dtype, "view", tile, base=base, template=template)

    def read(self, op: Operation, i: int, step: int) -> Var:
        v = op.operands[i]
        return self.var(instance_of(self.sched, v, step), self.body.reads[(op, i)])

    def workspaces(
        self,
        op: Operation,
        s: StructuredOpInterface,
        plan: OpPlan,
        result: Var,
        args: Sequence[Var] = (),
    ) -> list[Var]:
        """The op's workspaces as vars: each lines up with its result's tile (right-aligned,
        or 1), or is the shape of an operand's tile and takes that operand's layout (a
        reduction's element-wise step over its operand: ``logsumexp``'s ``exp``)."""
        body = self.body
        tiles = self.tiling.tiles
        reads = self.sched.reads(op)
        spaces = s.numpy_workspace(
            [body.shape(v, tiles, dims) for v, dims in reads],
            [body.shape(r, tiles) for r in op.results],
            [v in body.constants for v, _ in reads],
        )
        out: list[Var] = []
        result_shape = self.tile_shape(result)
        for (shape, dtype), buffer in zip(spaces, plan.workspaces, strict=True):
            like = next((a for a in args if a.tile == tuple(shape)), None)
            if like is not None and tuple(shape) != result_shape:
                out.append(Var(like.layout, dtype, "buffer", tuple(shape), index=buffer))
                continue
            offset = len(result.layout) - len(shape)
            layout: list[Axis] = []
            for j, n in enumerate(shape):
                k = j + offset
                if 0 <= k < len(result_shape) and n == result_shape[k]:
                    layout.append(result.layout[k])
                elif n == 1:
                    layout.append(Axis(1))
                else:
                    raise TdslIRError(
                        f"numpy target: a workspace of '{op.name}' of shape {fmt_shape(shape)} "
                        f"does not line up with its result's tile {fmt_shape(result_shape)} "
                        "(each dim must be the result's, right-aligned, or 1)"
                    )
            out.append(Var(tuple(layout), dtype, "buffer", tuple(shape), index=buffer))
        return out

    def lower(self) -> None:
        sched, plan = self.sched, self.plan
        for step in sched.steps:
            code = _StepCode(step)
            for op in step.ops:
                s = structured(op)
                if s is None:
                    raise TdslIRError(f"numpy target: cannot emit '{op.name}' inside a group")
                if s.is_view() or op in sched.fused:
                    continue  # a view, or computed by the op that fuses it
                args = [
                    self.var(instance_of(sched, v, step.index), dims) for v, dims in sched.reads(op)
                ]
                op_plan = plan.ops[(op, step.index)]
                if op_plan.accumulator is not None:
                    self.accumulate(op, s, step, op_plan, args, code)
                    continue
                results = [self.var((r, step.index)) for r in op.results]
                gen = TileGen(
                    self.state.consts,
                    self.tile_shape,
                    self.workspaces(op, s, op_plan, results[0], args),
                    op.name,
                )
                if op_plan.carry >= 0:
                    self.scan(op, op_plan, args, results, gen, code)
                else:
                    lower_op(op, s, gen, args, results)
                (self.whole if op in self.run.whole else code.body).extend(gen.instrs)
            self.steps.append(code)
        for k, inst in plan.copies:
            layout = value_layout(self.body, inst[0], self.body.output_dims[k])
            out = Var(
                layout,
                numpy_dtype(inst[0].type),
                "output",
                self.tiling.full_shape(layout),
                index=k,
            )
            source = self.var(inst, self.body.output_dims[k])
            step = max(inst[1], 0)
            self.copies.setdefault(step, []).append(
                Instr("np.copyto({out}, {0})", out, (source,), "")
            )

    def scan(
        self,
        op: Operation,
        op_plan: OpPlan,
        args: list[Var],
        results: list[Var],
        gen: TileGen,
        code: _StepCode,
    ) -> None:
        """A scan along a tiled dim: its carry starts at the identity before the pass, and
        each tile starts from it and leaves its last running values in it."""
        dims = carry_dims(self.body, op)
        layout = tuple(
            ax if d is not None or ax.dim is None else Axis(1)
            for ax, d in zip(results[0].layout, dims, strict=True)
        )
        assert isinstance(op, Scan)  # it carries a state along the tiled dim
        loop = op.carried_loops()[0]
        carry = Var(
            layout, loop.dtype, "buffer", self.tiling.full_shape(layout), index=op_plan.carry
        )
        identity = scalar_expr(loop.start, loop.dtype)
        code.init.append(Instr(f"{{out}}[...] = {identity}", carry, (), f"{op.name}: carry"))
        lower_scan(op, gen, args, results, carry)

    def accumulate(
        self,
        op: Operation,
        s: StructuredOpInterface,
        step: Step,
        op_plan: OpPlan,
        args: list[Var],
        code: _StepCode,
    ) -> None:
        (result,) = op.results
        final = self.var((result, step.index + 1))
        layout = final.layout
        acc_slot = op_plan.accumulator
        red = reduction_of(op)
        state = red.accumulator()
        assert acc_slot is not None and state is not None
        kind = "buffer" if acc_slot.kind == "buffer" else "output"
        accs = [Var(layout, state.dtypes[0], kind, final.tile, index=acc_slot.index)]
        partials = [Var(layout, state.dtypes[0], "buffer", final.tile, index=op_plan.partial)]
        for dt, a, p in zip(
            state.dtypes[1:], op_plan.more_accumulators, op_plan.more_partials, strict=True
        ):
            accs.append(Var(layout, dt, "buffer", final.tile, index=a))
            partials.append(Var(layout, dt, "buffer", final.tile, index=p))
        for acc, start in zip(accs, state.identities, strict=True):
            identity = scalar_expr(start, np.dtype(acc.dtype))
            code.init.append(Instr(f"{{out}}[...] = {identity}", acc, (), f"{op.name}: accumulate"))
        gen = TileGen(
            self.state.consts,
            self.tile_shape,
            self.workspaces(op, s, op_plan, accs[0], args),
            op.name,
        )
        combiner = red.combiner()
        if combiner is not None:
            (acc,), (partial,) = accs, partials
            lower_partial(op, gen, args, partial)
            gen.ufunc(combiner.ufunc, acc, partial, out=acc)
        else:  # a tuple accumulator: the target's partial and merge of the state
            lower_partial(op, gen, args, tuple(partials))
            lower_merge(op, gen, tuple(accs), tuple(partials))
        code.body.extend(gen.instrs)
        acc = accs[0]
        same = acc.kind == final.kind and acc.index == final.index and acc.dtype == final.dtype
        if not same or red.finalizes() or len(accs) > 1:
            fin = TileGen(self.state.consts, self.tile_shape, (), op.name)
            lower_finalize(
                op, fin, acc if len(accs) == 1 else tuple(accs), final, self.sched.count(op)
            )
            code.finalize.extend(fin.instrs)


@dataclass
class _Scope:
    """Python expressions of vars at one point of the generated code."""

    tiling: Tiling
    scope: frozenset[int]
    """The loop dims bound here."""
    inputs: list[str]
    outputs: list[str]
    buffer_names: Callable[[int, Layout], str]
    fill_names: Callable[[Var], str]
    windows: _Windows | None = None
    level: str = ""
    """Where this code runs (a loop body), for the windows bound there."""

    def of(self, v: Var) -> str:
        if v.kind in ("input", "output"):
            base = self.inputs if v.kind == "input" else self.outputs
            expr = self.tiling.window(base[v.index], v.layout, self.scope)
            if self.windows is None:
                return expr
            return self.windows.use(self.level, expr, "o" if v.kind == "output" else "i")
        if v.kind == "buffer":
            return self.buffer_names(v.index, v.layout)
        if v.kind == "const":
            return v.name
        if v.kind == "fill":
            return self.fill_names(v)
        assert v.base is not None
        return v.template.format(self.of(v.base))


def _emit(w: Writer, instrs: Sequence[Instr], scope: _Scope) -> None:
    for ins in instrs:
        if ins.note:
            w.comment(ins.note)
        out = scope.of(ins.result) if ins.result is not None else ""
        w.line(ins.code.format(*(scope.of(p) for p in ins.operands), out=out))


def _all_vars(instrs: Sequence[Instr]) -> list[Var]:
    found: list[Var] = []

    def add(v: Var) -> None:
        found.append(v)
        if v.base is not None:
            add(v.base)

    for ins in instrs:
        for v in ins.operands:
            add(v)
        if ins.result is not None:
            add(ins.result)
    return found


class _Windows:
    """Tile windows of inputs and outputs (``out0[s0:e0]``) bound to a name once per
    loop body when the body uses them more than once: slicing is not free."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self.counting = True
        self.count: dict[tuple[str, str], int] = {}
        self.prefix: dict[tuple[str, str], str] = {}
        self.bound: dict[tuple[str, str], str] = {}

    def use(self, level: str, expr: str, prefix: str) -> str:
        """The name for ``expr`` in the loop body ``level`` (``prefix``: o for outputs)."""
        key = (level, expr)
        if self.counting:
            self.count[key] = self.count.get(key, 0) + 1
            self.prefix[key] = prefix
            return expr
        return self.bound.get(key, expr)

    def finish(self) -> None:
        """Stop counting; name the windows used more than once."""
        self.counting = False
        for key, n in self.count.items():
            if n > 1 and "[" in key[1]:
                self.bound[key] = self.names.numbered(self.prefix[key])

    def lines(self, level: str) -> list[str]:
        return [f"{name} = {expr}" for (lv, expr), name in self.bound.items() if lv == level]


class _Views:
    """Names of the views of scratch buffers and fill blocks, cut on remainder tiles."""

    def __init__(
        self, tiling: Tiling, state: ModuleState, names: Names, buffers: list[str]
    ) -> None:
        self.tiling = tiling
        self.state = state
        self.names = names
        self.buffers = buffers
        self.full: dict[tuple[Any, ...], str] = {}
        """(kind, key, layout) -> the name of its full-tile view."""
        self.cut: dict[tuple[Any, ...], str] = {}
        """... -> the name of the view cut to the current tile (when it shrinks)."""
        self.setup: list[str] = []
        self.reslice: dict[tuple[Any, ...], tuple[frozenset[int], str]] = {}

    def _key_name(self, key: tuple[Any, ...], prefix: str, full_expr: str, layout: Layout) -> str:
        name = self.full.get(key)
        if name is None:
            name = self.names.fresh(prefix)
            self.full[key] = name
            self.setup.append(f"{name} = {full_expr}")
            dims = self.tiling.remainder_dims(layout)
            if dims:
                cut = self.names.fresh(prefix.rstrip("f") + "c")
                self.cut[key] = cut
                self.reslice[key] = (dims, f"{cut} = {self.tiling.prefix(name, layout)}")
        return self.cut.get(key, name)

    def buffer(self, index: int, layout: Layout) -> str:
        shape = self.tiling.full_shape(layout)
        key = ("buffer", index, shape, tuple(ax.dim for ax in layout))
        size = 1
        for n in shape:
            size *= n
        full = f"{self.buffers[index]}[:{size}].reshape({shape_expr(shape)})"
        return self._key_name(key, f"{self.buffers[index]}_{len(self.full)}f", full, layout)

    def fill(self, v: Var) -> str:
        shape = self.tiling.full_shape(v.layout)
        size = 1
        for n in shape:
            size *= n
        limit = ZERO_BLOCK_LIMIT if v.fill_value == 0.0 else FILL_BLOCK_LIMIT
        if size > limit:
            return self.state.consts.add(np.array(v.fill_value, v.dtype))
        block = self.state.fills.add(shape, v.dtype, v.fill_value)
        if not self.tiling.remainder_dims(v.layout):
            return block
        key = ("fill", block, shape, tuple(ax.dim for ax in v.layout))
        return self._key_name(key, f"z{len(self.full)}f", block, v.layout)

    def cuts_for(self, dims: Collection[int], bound: Collection[int]) -> list[str]:
        """The re-slicing lines for views whose remainder dims include one of ``dims`` and
        lie within ``bound``."""
        return [
            line
            for needs, line in self.reslice.values()
            if needs & set(dims) and needs <= set(bound)
        ]


def emit_group(group: GroupSource, state: ModuleState, w: Writer, names: Names) -> list[bool]:
    """Emit ``group`` into the caller's writer ``w`` (scope ``names``).

    Returns, per output, whether the caller's name now holds a fresh array
    (False when it was bound to an input, a constant or a view of one).
    """
    body = group.body
    run = plan_run(body, group.tiles, group.recorded, state.threads)
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

        def scope_at(bound: frozenset[int], level: str) -> _Scope:
            return _Scope(
                tiling, bound, inputs_named, outs, views.buffer, views.fill, windows, level
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
            assert code is not None
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
