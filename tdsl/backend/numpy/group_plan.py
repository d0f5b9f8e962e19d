"""The lowering of one group's ops into instructions for the numpy target: the
module-wide state (:class:`ModuleState`), a group to emit (:class:`GroupSource`), the
layout of its values and ``_Lowering``, which turns each step of its schedule into
NumPy instructions (element-wise ops, scans, reductions with their partials, merges and
finalizers); :mod:`tdsl.backend.numpy.group` emits them as code."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Operation, SSAValue

import tdsl.backend.numpy.reduction_lowerings  # noqa: F401  (registers its lowerings)
from tdsl.backend.numpy.blocking import Run
from tdsl.backend.numpy.layout import Axis, Layout, Tiling
from tdsl.backend.numpy.lowerings import (
    lower_finalize,
    lower_op,
    lower_partial,
    lower_scan,
    lower_update,
    view_template,
)
from tdsl.backend.numpy.program import ConstPool, Instr, TileGen, Var
from tdsl.backend.numpy.reduction_lowerings import lower_running_product
from tdsl.backend.numpy.source import FillPool, Writer, scalar_expr
from tdsl.dialects import tensordsl as td
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
    OperandWorkspace,
    Scan,
    StructuredOpInterface,
    constant_value,
    fmt_shape,
    numpy_dtype,
    reduction_of,
    structured,
    tensor_shape,
)
from tdsl.errors import TdslIRError, internal_error
from tdsl.ir_text import Names


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
    staged: frozenset[Operation] = frozenset()
    """The ops the IR stages (see ``kernel.tile``)."""
    sweeps: dict[Operation, int] | None = None
    """The step the IR records for each op (None: the earliest each can run in)."""


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
        if slot.kind in ("buffer", "staged"):
            return Var(layout, dtype, slot.kind, tile, index=slot.index)
        if slot.kind == "output":
            return Var(layout, dtype, "output", tile, index=slot.index)
        if slot.kind == "constant":
            owner = value.owner
            constant = constant_value(owner) if isinstance(owner, Operation) else None
            if constant is None:
                raise internal_error("numpy target: a constant slot holds no constant's value")
            return Var(layout, dtype, "const", tile, name=self.state.consts.add(constant))
        # a view of its operand
        owner = value.owner
        if not isinstance(owner, Operation):
            raise internal_error("numpy target: a view of no op's result")
        if structured(owner) is None:
            raise TdslIRError(
                f"'{owner.name}' does not implement the structured-op interface", op=owner
            )
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
        or 1), or, an :class:`OperandWorkspace`, takes its operand's layout (a reduction's
        element-wise step over its operand: ``logsumexp``'s ``exp``)."""
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
        for space, buffer in zip(spaces, plan.workspaces, strict=True):
            shape, dtype = space
            if isinstance(space, OperandWorkspace):
                like = args[space.operand]
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
                    raise TdslIRError(
                        f"numpy target: cannot emit '{op.name}' inside a group", op=op
                    )
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
        if not isinstance(op, Scan):  # only a scan carries a state along a tiled dim
            raise internal_error(f"numpy target: '{op.name}' carries a state but is no scan", op=op)
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
        if acc_slot is None:
            raise internal_error(f"numpy target: '{op.name}' has no accumulator slot", op=op)
        kind = "buffer" if acc_slot.kind == "buffer" else "output"
        accs = [Var(layout, state.dtypes[0], kind, final.tile, index=acc_slot.index)]
        partials = [Var(layout, state.dtypes[0], "buffer", final.tile, index=op_plan.partial)]
        for i, (dt, a, p) in enumerate(
            zip(state.dtypes[1:], op_plan.more_accumulators, op_plan.more_partials, strict=True),
            1,
        ):
            tile = state.shape(i, final.tile)  # one column: a statistic of each row
            part = layout if tile == final.tile else (*layout[:-1], Axis(1))
            accs.append(Var(part, dt, "buffer", tile, index=a))
            partials.append(Var(part, dt, "buffer", tile, index=p))
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
            x = args[0]
            if (
                isinstance(op, td.ProdOp)
                and op.axis_value is not None
                and x.tile[op.axis_value % len(x.tile)] < self.sched.count(op)
            ):
                lower_running_product(op, gen, args, acc)  # NumPy multiplies in order
            else:
                lower_partial(op, gen, args, partial)
                gen.ufunc(combiner.ufunc, acc, partial, out=acc)
        else:  # a tuple accumulator: the target's update of the state (or partial, merge)
            lower_update(op, gen, args, tuple(accs), tuple(partials))
        code.body.extend(gen.instrs)
        acc = accs[0]
        same = acc.kind == final.kind and acc.index == final.index and acc.dtype == final.dtype
        if not same or red.finalizes() or len(accs) > 1:
            fin = TileGen(self.state.consts, self.tile_shape, (), op.name)
            lower_finalize(
                op, fin, acc if len(accs) == 1 else tuple(accs), final, self.sched.count(op)
            )
            code.finalize.extend(fin.instrs)
