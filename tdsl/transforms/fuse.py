"""The ``tdsl-fuse`` pass: group tensordsl ops into ``kernel.fused`` regions.

The rules (one consistent iteration space per group, operands an op reads
from memory, the memory budget at the smallest legal tile, no cycles between
groups, no group of empty and non-empty results) live in :mod:`tdsl.transforms.fusion_analysis`; this module applies its
plan to the IR and renders the same plan as a report, so the pass and
``--explain-fusion`` can never disagree.

Every structured op ends up in exactly one ``kernel.fused`` (a lone
op is a group of one), named ``g0``, ``g1``, ... in the order the groups
appear in the rewritten function, with the pass's memory budget recorded as
``budget``.  A group's operands are the values it reads from outside, its
results the values it computes that anything outside it uses; nothing is
recomputed.  Constants with at most one element are cloned into each group
that uses them (the original goes away when nothing else uses it); larger
constants stay outside and are group inputs.  Ops keep their locations: they
are moved into the groups, not rebuilt.  Windows (``tensordsl.slice``) stay outside
too: the pass first sinks them onto the operands of element-wise ops
(:mod:`tdsl.transforms.sink_views`), and a group reads a window in place as an input.

**The memory promise.**  A plan's memory is its scratch PLUS the values it
materializes: its *need* is the elements of the values held whole between
groups that the function does not return (a returned value lives in its
output) plus the largest scratch any of its groups needs at its smallest
legal tile under what those values leave of the budget (a softmax whose rows
are longer than that counts as run over tiles of its rows).  A call allocates, beyond its outputs, no more than the larger
of the budget and the least need of the plans the planner considers (times
the element size, plus NumPy's own iterator buffers), on the NumPy and the
native target alike:

- when the greedy plan at the budget fits (need <= budget), it runs, as
  before: the largest tiles whose scratch fits what the materialized values
  leave of the budget;
- else the planner compares the greedy plans at the budgets 1, 4, 16, 64, ...
  (a fixed ladder, up to past the program's size; not the greedy plan at the
  budget itself, which a smaller budget would not have) and picks the one of
  least need; a :class:`~tdsl.errors.TdslBudgetWarning` and the fusion report's
  summary line (``no plan fits the memory budget of B: the plan of least
  memory runs, and it needs N elements (S of scratch at the smallest tiles,
  M materialized between groups)``) say what it needs.  So a budget below
  what the program needs never allocates more than a larger budget does.

Where the tiles may use less scratch than the budget (materialized values
take part of it) or more (no plan fits), each group records it as
``scratch`` (``group "g1" budget 64 scratch 2048``), which ``tdsl-tile``
schedules the group under.

```mlir
%r = kernel.fused(%x, %w, %b) group "g0" budget 1000000 : (...) -> tensor<64x256xf32> {
^bb0(%x1: ..., %w1: ..., %b1: ...):
  %0 = tensordsl.matmul %x1, %w1 : ...
  %1 = tensordsl.add %0, %b1 : ...
  %2 = tensordsl.relu %1 : tensor<64x256xf32>
  kernel.yield %2 : tensor<64x256xf32>
}
```
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.rewriter import InsertPoint, Rewriter

from tdsl.defaults import DEFAULT_MEMORY_BUDGET, check_memory_budget
from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp
from tdsl.dialects.structured import is_constant, structured, tensor_shape
from tdsl.dialects.tensordsl import ReshapeOp, SliceOp, TakeOp
from tdsl.errors import (
    SourceLocation,
    TdslBudgetWarning,
    TdslIRError,
    check_argument,
    format_diagnostic,
    plural,
    warn,
)
from tdsl.transforms.fusion_analysis import (
    BlockPlan,
    FusionGroup,
    PlanMemory,
    UnfusedEdge,
    choose_plans,
    describe_space,
    held_for_views,
    walk_functions,
)
from tdsl.transforms.locations import op_location
from tdsl.transforms.sink_views import sink_views
from tdsl.transforms.tile import choose_tiles

Locator = Callable[[Operation], SourceLocation | None]
"""Finds the source location of an op (the driver passes one that knows the input text)."""


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FusePass(ModulePass):
    """Group each function's tensordsl ops into ``kernel.fused`` regions.

    See :mod:`tdsl.transforms.fusion_analysis` for the rules.
    """

    name = "tdsl-fuse"

    memory_budget: int = DEFAULT_MEMORY_BUDGET
    """Elements a call may allocate beyond its outputs: the values materialized between
    groups plus one group's scratch; recorded on every group as ``budget``.

    A merge whose intermediates would not fit at the group's smallest tile is refused.
    Where no plan fits, the plan of least memory is chosen, with a
    :class:`~tdsl.errors.TdslBudgetWarning` (see :func:`choose_plans`)."""

    fallback_budget: int | None = None
    """Where no plan of a function fits ``memory-budget``, plan it at this larger budget
    instead, and record that on its groups; a warning only if no plan fits that either.
    The JIT's default budget sets it (see :data:`tdsl.defaults.DEFAULT_MEMORY_BUDGET`):
    the plan of least memory can have tiles too small to run fast."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_memory_budget(self.memory_budget)
        if self.fallback_budget is not None:
            check_memory_budget(self.fallback_budget, "fallback-budget")
        sink_views(op)
        for fn in walk_functions(op):
            replaced: dict[SSAValue, SSAValue] = {}
            plans, memory = choose_plans(fn, self.memory_budget, self.fallback_budget)
            if not memory.fits:
                warn(TdslBudgetWarning(budget_warning(memory)))
            scratch = None if memory.tile_budget == memory.budget else memory.tile_budget
            for plan in plans:
                rewrite_block(plan, memory.budget, replaced, scratch)


def budget_warning(memory: PlanMemory) -> str:
    """The text of the warning (and of the report's line) for a plan that does not fit."""
    return (
        f"@{memory.function}: no fusion plan fits the memory budget of "
        f"{plural(memory.budget, 'element')}; the plan of least memory runs instead, and it "
        f"{memory.describe()}"
    )


def _build_group(
    group: FusionGroup,
    budget: int,
    replaced: dict[SSAValue, SSAValue],
    scratch: int | None = None,
) -> FusedOp:
    """Move ``group``'s ops into a new ``kernel.fused`` (not yet inserted)."""
    members: set[Operation] = set(group.ops)
    inputs = [replaced.get(v, v) for v in group.inputs]
    body = Block(arg_types=[v.type for v in inputs])
    fused = FusedOp(
        inputs,
        [r.type for r in group.results],
        Region(body),
        group=group.name,
        budget=budget,
        scratch=scratch,
    )
    fused.location = group.ops[-1].location
    for old, new in zip(group.results, fused.results, strict=True):
        old.replace_uses_with_if(new, lambda use: use.operation not in members)
        new.name_hint = old.name_hint
        replaced[old] = new
    for value, arg in zip(inputs, body.args, strict=True):
        value.replace_uses_with_if(arg, lambda use: use.operation in members)
        arg.name_hint = value.name_hint
    for const in group.constants:
        clone = const.clone()
        const.results[0].replace_uses_with_if(
            clone.results[0], lambda use: use.operation in members
        )
        Rewriter.insert_op(clone, InsertPoint.at_end(body))
    for op in group.ops:
        op.detach()
        Rewriter.insert_op(op, InsertPoint.at_end(body))
    Rewriter.insert_op(YieldOp(*group.results), InsertPoint.at_end(body))
    return fused


def rewrite_block(
    plan: BlockPlan,
    memory_budget: int,
    replaced: dict[SSAValue, SSAValue] | None = None,
    scratch: int | None = None,
) -> list[FusedOp]:
    """Apply ``plan`` to its block: build its groups and put the block in plan order.

    ``replaced`` maps group results already moved into a ``kernel.fused`` (by an
    earlier block of the function) to the fused op's results; it is updated.
    ``scratch``, when given, is recorded on every group (see ``FusedOp``).
    """
    block = plan.block
    for op in reversed(plan.dead):
        Rewriter.erase_op(op)
    if not plan.groups:
        return []
    if replaced is None:
        replaced = {}
    built: dict[str, FusedOp] = {}
    for group in plan.groups:
        built[group.name] = _build_group(group, memory_budget, replaced, scratch)
    order = [built[u.name] if isinstance(u, FusionGroup) else u for u in plan.order]
    for op in order:
        if op.parent is not None:
            op.detach()
    term = block.last_op
    Rewriter.insert_op(
        order, InsertPoint.at_end(block) if term is None else InsertPoint.before(term)
    )
    for group in plan.groups:
        for const in group.constants:
            if const.parent is block and not const.results[0].uses:
                Rewriter.erase_op(const)
    return [built[g.name] for g in plan.groups]


def fuse(module: ModuleOp, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> ModuleOp:
    """A fused clone of ``module`` (``module`` itself is left untouched)."""
    check_argument(module, ModuleOp, "the module given to `fuse`")
    check_memory_budget(memory_budget)
    clone = module.clone()
    FusePass(memory_budget=memory_budget).apply(Context(), clone)
    return clone


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------


class _Names:
    """SSA names as the printer shows them (``%0``, ``%A``)."""

    def __init__(self, root: Operation) -> None:
        self._printer = Printer(stream=io.StringIO())
        self._printer.print_op(root)

    def __call__(self, value: SSAValue) -> str:
        return "%" + self._printer.print_ssa_value(value)


@dataclass(frozen=True)
class FusionReport:
    """What ``tdsl-fuse`` does to a module, and why.

    ``plans`` holds one plan per function block: its groups (ops, inputs,
    results, iteration space) and every producer-consumer edge left between two
    groups with the reason.  The ops and values are those of the analysed
    module.
    """

    memory_budget: int
    plans: tuple[BlockPlan, ...]
    root: Operation
    """The module the ops belong to (the analysed module, or an unfused clone of it)."""
    originals: dict[Operation, Operation]
    """For a report on already-fused IR: analysed (unfused clone) op -> the op of the input."""
    tile_ops: Mapping[Operation, TileOp] = field(default_factory=dict[Operation, TileOp])
    """For a report on tiled IR: analysed op -> the ``kernel.tile`` of the input it ran in."""
    memory: tuple[PlanMemory, ...] = ()
    """Per function: what its plan needs (materialized values plus scratch), and whether it
    fits the budget."""

    def function_memory(self, function: str) -> PlanMemory | None:
        """What ``@function``'s plan needs."""
        return next((m for m in self.memory if m.function == function), None)

    @property
    def fits(self) -> bool:
        """Whether every function's plan fits the budget."""
        return all(m.fits for m in self.memory)

    @property
    def groups(self) -> tuple[FusionGroup, ...]:
        return tuple(g for plan in self.plans for g in plan.groups)

    @property
    def unfused(self) -> tuple[UnfusedEdge, ...]:
        return tuple(e for plan in self.plans for e in plan.unfused)

    @property
    def materialized(self) -> tuple[SSAValue, ...]:
        """Values computed by one group and read by another (each once): the intermediates
        a call holds whole, beyond the memory budget."""
        seen: list[SSAValue] = []
        for edge in self.unfused:
            if edge.value not in seen:
                seen.append(edge.value)
        return tuple(seen)

    def recorded_tiles(self, group: FusionGroup) -> tuple[TileOp, ...]:
        """The ``kernel.tile`` ops of the input that ran ``group``'s ops (tiled IR only)."""
        found: list[TileOp] = []
        for op in group.ops:
            tile_op = self.tile_ops.get(op)
            if tile_op is not None and tile_op not in found:
                found.append(tile_op)
        return tuple(found)

    def tiling(self, group: FusionGroup) -> str:
        """How ``group`` runs, in words: as the input's ``kernel.tile`` ops record it for
        tiled IR, else as ``tdsl-tile`` would tile it under the report's budget."""
        recorded = self.recorded_tiles(group)
        if recorded:
            return "tiled in the input as " + " and ".join(describe_tile_op(t) for t in recorded)
        memory = self.function_memory(group.function)
        budget = self.memory_budget if memory is None else memory.tile_budget
        found = choose_tiles(group.space, budget)
        if found is None:
            return "rows whole do not fit the budget: row-normalizing ops run decomposed"
        text = f"tiles {list(found.tiles)} with {plural(found.scratch.total, 'element')} of scratch"
        if found.schedule.reduction_loops:
            text += f", {found.schedule.describe()}"
        return text

    def group(self, name: str, function: str | None = None) -> FusionGroup:
        """The group called ``name`` (in ``function`` when several functions have one)."""
        for g in self.groups:
            if g.name == name and (function is None or g.function == function):
                return g
        raise KeyError(name)

    def render(self, locate: Locator | None = None) -> str:
        """The remarks, one per group and per unfused edge, then a summary per function."""
        names = _Names(self.root)

        def remark(op: Operation, message: str) -> str:
            loc = locate(self.originals.get(op, op)) if locate is not None else None
            loc = loc or op_location(op)
            if loc is not None:
                return format_diagnostic(message, loc, severity="remark")
            results = ", ".join(names(r) for r in op.results)
            return f"{results} = {op.name}: remark: {message}"

        lines: list[str] = []
        for plan in self.plans:
            for g in plan.groups:
                ops = ", ".join(op.name for op in g.ops)
                count = plural(len(g.ops), "op")
                inputs = ", ".join(names(v) for v in g.inputs) or "none"
                results = ", ".join(names(v) for v in g.results) or "none"
                lines.append(
                    remark(
                        g.ops[-1],
                        f"group {g.name} in @{g.function}: {count} ({ops}) over "
                        f"{describe_space(g.space)}; inputs: {inputs}; results: {results}; "
                        f"smallest tile scratch: {plural(g.min_scratch, 'element')}; "
                        f"{self.tiling(g)}",
                    )
                )
            for e in plan.unfused:
                lines.append(
                    remark(
                        e.consumer,
                        f"not fused: {names(e.value)} ({e.producer.name}, group "
                        f"{e.producer_group}) -> operand {e.operand} of {e.consumer.name} "
                        f"(group {e.consumer_group}): {e.reason}",
                    )
                )
            for op in plan.dead:
                lines.append(remark(op, f"erased: nothing uses the result of {op.name}"))
            if not plan.groups and not plan.dead:
                continue
            reasons: dict[SSAValue, str] = {}
            for e in plan.unfused:
                reasons.setdefault(e.value, e.reason)
            last = plan.block.last_op
            returned = set(last.operands) if last is not None else set()
            for v, (_, why) in held_for_views(plan).items():
                if v not in returned:  # a result lives in its output
                    reasons.setdefault(v, why)
            summary = f"@{plan.function}: {plural(len(plan.groups), 'fusion group')}"
            if reasons:
                listed = "; ".join(
                    f"{names(v)} ({v.type}, {plural(math.prod(tensor_shape(v)), 'element')}): {why}"
                    for v, why in reasons.items()
                )
                summary += f"; materialized between groups: {listed}"
            else:
                summary += "; nothing materialized between groups"
            memory = self.function_memory(plan.function)
            last = plan is self._last_plan(plan.function)
            if memory is not None and memory.budget != self.memory_budget and last:
                summary += (
                    f"; no plan fits the memory budget of {self.memory_budget}: planned at the "
                    f"fallback budget of {memory.budget}"
                )
            if memory is not None and not memory.fits and last:
                summary += (
                    f"; no plan fits the memory budget of {memory.budget}: the plan of "
                    f"least memory runs, and it {memory.describe()}"
                )
            lines.append(f"remark: {summary}")
        return "\n".join(lines) + ("\n" if lines else "")

    def _last_plan(self, function: str) -> BlockPlan | None:
        found = [p for p in self.plans if p.function == function]
        return found[-1] if found else None

    def __str__(self) -> str:
        return self.render()


def describe_tile_op(tile_op: TileOp) -> str:
    """``g1 tiles [4, 16, 8] with 36 elements of scratch``: what a ``kernel.tile`` records."""
    name = tile_op.group_name or "a group"
    return f"{name} tiles {list(tile_op.tiles_value)} with {plural(tile_op.scratch_value, 'element')} of scratch"


def _untile(
    tile_op: TileOp, originals: dict[Operation, Operation], tile_ops: dict[Operation, TileOp]
) -> None:
    """Replace ``tile_op`` (in a clone) by its body's ops on the whole tensors.

    Each op is rebuilt on the tile's operands by its own type inference, as
    ``tdsl-tile`` built it on slices; the rebuilt ops map to the input's ops
    (``originals``) and to the input's ``kernel.tile`` (``tile_ops``).
    """
    block = tile_op.body.block
    values: dict[SSAValue, SSAValue] = dict(zip(block.args, tile_op.inputs, strict=True))
    source = originals.get(tile_op)
    term = block.last_op
    if not isinstance(term, YieldOp):
        raise TdslIRError(f"'{tile_op.name}' op body must end in kernel.yield", op=tile_op)
    for inner in list(block.ops):
        if inner is term:
            continue
        if is_constant(inner) and not inner.operands:
            new = inner.clone()
        else:
            s = structured(inner)
            if s is None:  # not a structured op: leave the group as it is
                return
            new = s.retyped([values[v] for v in inner.operands])
        Rewriter.insert_op(new, InsertPoint.before(tile_op))
        values.update(zip(inner.results, new.results, strict=True))
        originals[new] = originals.get(inner, inner)
        if isinstance(source, TileOp):
            tile_ops[new] = source
    for res, value in zip(tile_op.results, term.values, strict=True):
        res.replace_all_uses_with(values[value])
    Rewriter.erase_op(tile_op)


def _unfused_clone(
    module: ModuleOp,
) -> tuple[ModuleOp, dict[Operation, Operation], int | None, dict[Operation, TileOp]]:
    """A clone with every ``kernel.fused`` inlined back and every ``kernel.tile`` rebuilt
    on whole tensors; the op map, the recorded budget, and the op -> tile op map."""
    mapper: dict[SSAValue, SSAValue] = {}
    clone = module.clone(value_mapper=mapper)
    originals: dict[Operation, Operation] = {}
    for old, new in mapper.items():
        if isinstance(new.owner, Operation) and isinstance(old.owner, Operation):
            originals[new.owner] = old.owner
    tile_ops: dict[Operation, TileOp] = {}
    for tile_op in [op for op in clone.walk() if isinstance(op, TileOp)]:
        _untile(tile_op, originals, tile_ops)
    budget: int | None = None
    for fused in [op for op in clone.walk() if isinstance(op, FusedOp)]:
        if budget is None:
            budget = fused.budget_value
        block = fused.body.block
        term = block.last_op
        if not isinstance(term, YieldOp):
            raise TdslIRError(f"'{fused.name}' op body must end in kernel.yield", op=fused)
        for res, value in zip(fused.results, term.values, strict=True):
            res.replace_all_uses_with(value)
        Rewriter.erase_op(term)
        Rewriter.inline_block(block, InsertPoint.before(fused), list(fused.inputs))
        Rewriter.erase_op(fused)
    return clone, originals, budget, tile_ops


def fusion_report(
    module: ModuleOp, memory_budget: int | None = None, fallback_budget: int | None = None
) -> FusionReport:
    """The fusion decisions ``tdsl-fuse`` takes on ``module``, without changing it.

    On tensordsl IR this is the plan the pass applies.  Given IR that already
    holds ``kernel.fused`` groups, their bodies are inlined back (in a clone)
    and the plan recomputed, with the budget the groups record unless
    ``memory_budget`` is given.  That inlined program lists the ops group by
    group, not in their original order; where the budget refuses merges, the
    greedy plan can then differ from the one the pass made, so report on the
    tensordsl IR when you have it (``tdsl-opt --explain-fusion`` and the JIT do).

    Tiled IR (``kernel.tile`` groups) is rebuilt on whole tensors the same way;
    ``kernel.tile`` records no budget, so the plan uses ``memory_budget`` or the
    default, and each group's remark gives the tiles and scratch the input records.
    ``fallback_budget`` is the pass's option of that name.
    """
    check_argument(module, ModuleOp, "the module given to `fusion_report`")
    originals: dict[Operation, Operation] = {}
    tile_ops: dict[Operation, TileOp] = {}
    root: ModuleOp = module
    recorded: int | None = None
    if any(isinstance(op, FusedOp | TileOp) for op in module.walk()):
        root, originals, recorded, tile_ops = _unfused_clone(module)
    elif any(isinstance(op, SliceOp | ReshapeOp | TakeOp) for op in module.walk()):
        # the pass sinks windows first (tdsl-sink-views): report on that, in a clone
        root = module.clone()
        originals = dict(zip(root.walk(), module.walk(), strict=True))
        sink_views(root)
    budget = memory_budget if memory_budget is not None else recorded
    if budget is None:
        budget = DEFAULT_MEMORY_BUDGET
    check_memory_budget(budget)
    plans: list[BlockPlan] = []
    memory: list[PlanMemory] = []
    for fn in walk_functions(root):
        chosen, need = choose_plans(fn, budget, fallback_budget)
        plans.extend(chosen)
        memory.append(need)
    return FusionReport(budget, tuple(plans), root, originals, tile_ops, tuple(memory))


def explain_fusion(
    module: ModuleOp,
    memory_budget: int | None = None,
    locate: Locator | None = None,
    fallback_budget: int | None = None,
) -> str:
    """The fusion report as compiler remarks (``file:line:col: remark: ...``).

    Each op is placed by ``locate`` when given, else by its ``loc(...)``
    location, else named by its SSA result and op name.
    """
    check_argument(module, ModuleOp, "the module given to `explain_fusion`")
    return fusion_report(module, memory_budget, fallback_budget).render(locate)


__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "FusePass",
    "FusionReport",
    "explain_fusion",
    "fuse",
    "fusion_report",
    "rewrite_block",
]
