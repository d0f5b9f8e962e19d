"""``tdsl-tile``: schedule every ``kernel.fused`` group as a ``kernel.tile`` loop under the memory budget.

For each group the pass

1. finds its iteration space and the slice of every value a tile touches
   (:func:`tdsl.lowering.tiling_analysis.analyze_group`);
2. checks that the group fits the memory budget at its *smallest legal tile*
   (size 1 along every tileable dim, i.e. one row); when it does not, splits it
   where that minimal footprint peaks, materializing the values live across the
   cut as results of the first part, and schedules each part again;
3. picks the tile sizes: explicit ``tile-sizes``, or the largest tile that fits
   (below), capped by ``tile-size``;
4. rebuilds the body with the ``tensordsl`` constructors on full-tile slices,
   so every type is re-inferred, and records the tile's scratch.

**What "fits" means.**  A tile fits the budget ``B`` (in elements) when

* its *scratch* (the buffers of its intermediate values and op workspaces,
  after reuse; see :func:`tdsl.lowering.tiling_analysis.plan_scratch`) is at
  most ``B``: this is the memory the generated code allocates, for all threads
  together, and what the IR records; and
* no op result slice of one tile, results written straight into the outputs
  included, exceeds ``B``: the budget is also the working set of one tile.  This
  keeps the tiles of scratch-free groups (a lone ``relu``, a ``matmul``) at
  budget-sized blocks rather than one whole-array tile, and it is why one op
  alone can fail to fit: a ``softmax`` whose rows are longer than the budget
  cannot be cut into smaller pieces, so compilation stops with
  :class:`tdsl.errors.TdslBudgetError` saying what it needs.  Inputs are views
  and count for neither rule.

**Default tile sizes.**  Start from the whole space (one tile), with the
tileable dims capped by ``tile-size``; while the tile does not fit, shrink the
outermost tileable dim first (to the largest size that fits, found by bisection,
or to 1 when even that does not fit, then move inwards), so tiles keep whole
rows and as many of them as the budget allows.  The columns of a ``matmul``
are shrunk last (BLAS wants whole rows, and a few hundred rows per call).  A
size ``t`` along a dim of extent ``E`` is then evened out to
``ceil(E / ceil(E / t))``: the same number of tiles, without a small remainder.

Groups that cannot be tiled at all (a full reduction, say) become one tile
covering the whole space.  Constants of more than one element are hoisted in
front of the tile op and passed in as operands, so tiles slice them like any
input; one-element constants stay in the body.  Ops in a group whose results
are never used are dropped.  A group yielding a value it does not compute (one
of its inputs, a constant) forwards that value directly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    IntegerAttr,
    ModuleOp,
    TensorType,
    UnknownLoc,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from tdsl.defaults import DEFAULT_MEMORY_BUDGET
from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp, dim_map
from tdsl.dialects.tensordsl import (
    BinaryOp,
    CastOp,
    ConstantOp,
    MatmulOp,
    ReductionOp,
    SoftmaxOp,
    TransposeOp,
    UnaryOp,
    element_type,
    tensor_shape,
)
from tdsl.errors import SourceLocation, TdslBudgetError, TdslIRError, TdslOptionError
from tdsl.lowering.tiling_analysis import (
    GroupSpace,
    ScratchBuffer,
    ScratchPlan,
    analyze_group,
    body_ops,
    scratch_plan,
    tile_shape,
)

"""The budget (elements) used when neither the pass nor the fused op gives one."""


# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------


def _check_options(
    memory_budget: int | None, tile_size: int | None, tile_sizes: Sequence[int]
) -> None:
    if memory_budget is not None and memory_budget <= 0:
        raise TdslOptionError(
            f"memory-budget must be a positive number of elements, not {memory_budget}"
        )
    if tile_size is not None and tile_size <= 0:
        raise TdslOptionError(f"tile-size must be positive, not {tile_size}")
    bad = [s for s in tile_sizes if s <= 0]
    if bad:
        raise TdslOptionError(
            f"tile-sizes must all be positive, got {', '.join(str(s) for s in tile_sizes)}"
        )


@dataclass(frozen=True)
class TilePass(ModulePass):
    """Turn every ``kernel.fused`` into a ``kernel.tile`` whose scratch fits the memory budget."""

    name = "tdsl-tile"

    memory_budget: int | None = None
    """Budget in elements; overrides the one each ``kernel.fused`` records (default 1_000_000)."""

    tile_size: int | None = None
    """Upper bound on the tile size along every tileable dim (matmul columns excepted)."""

    tile_sizes: tuple[int, ...] = ()
    """Explicit tile sizes, one per iteration dim of every group (larger sizes are clamped)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _check_options(self.memory_budget, self.tile_size, self.tile_sizes)
        for fused in [o for o in op.walk() if isinstance(o, FusedOp)]:
            _tile_fused(fused, self)


def tile(
    module: ModuleOp,
    memory_budget: int | None = None,
    tile_size: int | None = None,
    tile_sizes: Sequence[int] = (),
) -> ModuleOp:
    """A copy of ``module`` with every ``kernel.fused`` scheduled as ``kernel.tile`` ops.

    Raises :class:`TdslOptionError` for bad options and :class:`TdslBudgetError`
    when one op alone cannot fit the budget.
    """
    sizes = tuple(tile_sizes)
    _check_options(memory_budget, tile_size, sizes)
    clone = module.clone()
    TilePass(memory_budget=memory_budget, tile_size=tile_size, tile_sizes=sizes).apply(
        Context(), clone
    )
    return clone


# ---------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------


def _footprint(space: GroupSpace, tiles: Sequence[int]) -> tuple[int, int]:
    """(scratch, largest op result slice) of one full tile."""
    return space.plan(tiles).total, space.largest_result_tile(tiles)[0]


def _fits(space: GroupSpace, tiles: Sequence[int], budget: int) -> bool:
    scratch, largest = _footprint(space, tiles)
    return scratch <= budget and largest <= budget


def _need(space: GroupSpace) -> int:
    """The budget the group needs at its smallest legal tile."""
    return max(_footprint(space, space.min_tiles()))


def _balanced(extent: int, size: int) -> int:
    """The smallest size giving as many tiles along ``extent`` as ``size`` does."""
    return -(-extent // -(-extent // size))


def _default_tiles(space: GroupSpace, budget: int, cap: int | None) -> tuple[int, ...]:
    tiles = list(space.whole_tiles())
    if cap is not None:
        for i, d in enumerate(space.dims):
            if d.tileable and not d.prefer_whole:
                tiles[i] = min(tiles[i], cap)
    if _fits(space, tiles, budget):
        return tuple(tiles)
    order = [i for i, d in enumerate(space.dims) if d.tileable and not d.prefer_whole]
    order += [i for i, d in enumerate(space.dims) if d.tileable and d.prefer_whole]
    for i in order:
        trial = list(tiles)
        trial[i] = 1
        if not _fits(space, trial, budget):
            tiles = trial
            continue
        lo, hi = 1, tiles[i]  # lo fits, hi does not
        while hi - lo > 1:
            trial[i] = (lo + hi) // 2
            if _fits(space, trial, budget):
                lo = trial[i]
            else:
                hi = trial[i]
        trial[i] = _balanced(space.dims[i].extent, lo)
        if not _fits(space, trial, budget):
            trial[i] = lo
        return tuple(trial)
    raise AssertionError("a group that fits at its smallest tile found no tile size")


def _explicit_tiles(
    space: GroupSpace, sizes: Sequence[int], budget: int, label: str
) -> tuple[int, ...]:
    if len(sizes) != len(space.dims):
        raise TdslOptionError(
            f"tile-sizes gives {len(sizes)} size(s), but {label} has a {len(space.dims)}-d "
            f"iteration space [{', '.join(str(e) for e in space.space)}]"
        )
    tiles: list[int] = []
    for i, (size, d) in enumerate(zip(sizes, space.dims, strict=True)):
        if size < d.extent and not d.tileable:
            raise TdslOptionError(
                f"tile-sizes asks for {size} along d{i} of {label}, but d{i} (extent {d.extent}) "
                f"cannot be tiled: {d.reason}"
            )
        tiles.append(min(size, max(1, d.extent)))
    scratch, largest = _footprint(space, tiles)
    if scratch > budget or largest > budget:
        what = (
            f"{scratch} elements of scratch"
            if scratch > budget
            else f"{largest} elements for one op's result slice"
        )
        raise TdslBudgetError(
            f"tile sizes [{', '.join(str(t) for t in tiles)}] of {label} need {what}, "
            f"more than the memory budget of {budget} elements",
            note="choose smaller tile-sizes or a larger memory-budget",
        )
    return tuple(tiles)


# ---------------------------------------------------------------------------
# Splitting
# ---------------------------------------------------------------------------


@dataclass
class _Group:
    """One ``kernel.fused`` being scheduled."""

    fused: FusedOp
    ops: list[Operation]
    """Its live, non-constant ops in program order."""
    yielded: tuple[SSAValue, ...]
    budget: int

    def part(self, seq: Sequence[Operation]) -> GroupSpace:
        """The iteration space of the contiguous ops ``seq`` as a group of its own."""
        inside = set(seq)
        users = set(self.ops)
        defined = [r for op in seq for r in op.results]
        needed_later = [
            r
            for r in defined
            if any(u.operation in users and u.operation not in inside for u in r.uses)
        ]
        outputs = [v for v in dict.fromkeys(self.yielded) if v in set(defined)]
        outputs += [v for v in needed_later if v not in outputs]
        return analyze_group(seq, outputs, self._ordered_inputs(seq))

    def _ordered_inputs(self, seq: Sequence[Operation]) -> list[SSAValue]:
        defined = {r for op in seq for r in op.results}
        position: dict[SSAValue, int] = {r: i for i, op in enumerate(self.ops) for r in op.results}
        first_use: dict[SSAValue, int] = {}
        for i, op in enumerate(seq):
            for operand in op.operands:
                if operand not in defined:
                    first_use.setdefault(operand, i)

        def key(v: SSAValue) -> tuple[int, int]:
            if isinstance(v, BlockArgument) and v.owner is self.fused.body.block:
                return (0, v.index)
            if v in position:
                return (1, position[v])
            return (2, first_use[v])

        return sorted(first_use, key=key)

    def schedule(self, seq: Sequence[Operation]) -> list[GroupSpace]:
        """Parts of ``seq`` that each fit the budget at their smallest tile.

        A group that does not fit is cut just before or just after the op where
        its footprint at the smallest tile peaks (whichever leaves the smaller
        need, then the fewer materialized elements), and each side is scheduled
        again.  Every op fits alone (checked first), so this ends.
        """
        whole = self.part(seq)
        if len(seq) <= 1 or _need(whole) <= self.budget:
            return [whole]
        profile = whole.live_profile(whole.min_tiles())
        peak = profile.index(max(profile))
        best: tuple[tuple[int, int, int], int] | None = None
        for k in sorted({min(max(peak, 1), len(seq) - 1), min(peak + 1, len(seq) - 1)}):
            first, second = self.part(seq[:k]), self.part(seq[k:])
            materialized = sum(
                math.prod(tensor_shape(v)) for v in first.outputs if v not in self.yielded
            )
            key = (max(_need(first), _need(second)), materialized, abs(2 * k - len(seq)))
            if best is None or key < best[0]:
                best = (key, k)
        assert best is not None
        k = best[1]
        return self.schedule(seq[:k]) + self.schedule(seq[k:])


def _location(*ops: Operation) -> SourceLocation | None:
    """The source location of the first of ``ops`` that has one."""
    for op in ops:
        loc: Attribute = op.location
        while isinstance(loc, CallSiteLoc | FusedLoc):
            loc = loc.callee if isinstance(loc, CallSiteLoc) else _first_loc(loc)
        if isinstance(loc, FileLineColLoc):
            file, line = loc.filename.data, loc.line.data
            source_line: str | None = None
            try:
                with open(file, encoding="utf-8") as stream:
                    lines = stream.read().split("\n")
                if 1 <= line <= len(lines):
                    source_line = lines[line - 1]
            except (OSError, UnicodeDecodeError):
                source_line = None
            return SourceLocation(file, line, max(1, loc.column.data), 1, source_line)
    return None


def _first_loc(loc: FusedLoc) -> Attribute:
    inner = cast(ArrayAttr[Attribute], loc.locations).data
    for candidate in inner:
        if isinstance(candidate, FileLineColLoc):
            return candidate
    return inner[0] if inner else UnknownLoc()


def _check_alone(op: Operation, group: _Group) -> None:
    """Raise :class:`TdslBudgetError` when ``op`` does not fit even as a group of its own."""
    alone = analyze_group([op], [r for r in op.results if isinstance(r.type, TensorType)])
    tiles = alone.min_tiles()
    scratch, largest = _footprint(alone, tiles)
    if scratch <= group.budget and largest <= group.budget:
        return
    result = op.results[0]
    slice_type = TensorType(element_type(result), alone.tile_shape(result, tiles))
    if largest >= scratch:
        what = f"{largest} elements for its smallest tile (a {slice_type} slice of its result {result.type})"
    else:
        what = f"{scratch} elements of scratch for its smallest tile ({slice_type})"
    whole = [
        f"d{i} (extent {d.extent}) cannot be tiled: {d.reason}"
        for i, d in enumerate(alone.dims)
        if d.reason is not None
    ]
    note = "; ".join([*whole, f"raise the memory budget to at least {max(largest, scratch)}"])
    raise TdslBudgetError(
        f"'{op.name}' needs {what}, more than the memory budget of {group.budget} elements",
        _location(op, group.fused),
        note=note,
        op=op,
    )


# ---------------------------------------------------------------------------
# Building kernel.tile
# ---------------------------------------------------------------------------


def _rebuild(op: Operation, operands: Sequence[SSAValue]) -> Operation:
    """``op`` on new operands, its result types re-inferred by the tensordsl constructors."""
    new: Operation
    if isinstance(op, UnaryOp):
        new = type(op)(operands[0])
    elif isinstance(op, CastOp):
        new = CastOp(operands[0], element_type(op.result))
    elif isinstance(op, BinaryOp):
        new = type(op)(operands[0], operands[1])
    elif isinstance(op, MatmulOp):
        new = MatmulOp(operands[0], operands[1])
    elif isinstance(op, TransposeOp):
        new = TransposeOp(operands[0])
    elif isinstance(op, SoftmaxOp):
        new = SoftmaxOp(operands[0], op.axis.value.data)
    elif isinstance(op, ReductionOp):
        axis = None if op.axis is None else op.axis.value.data
        new = type(op)(operands[0], axis=axis, keepdims=op.keepdims_value)
    else:
        # Ops the analysis does not know are computed whole: their types do not change.
        return op.clone(value_mapper=dict(zip(op.operands, operands, strict=True)))
    new.attributes.update(op.attributes)
    new.location = op.location
    for old_result, new_result in zip(op.results, new.results, strict=True):
        new_result.name_hint = old_result.name_hint
    return new


def _is_scalar_constant(value: SSAValue) -> bool:
    return isinstance(value.owner, ConstantOp) and all(e <= 1 for e in tensor_shape(value))


@dataclass
class _Builder:
    """Emits the tile ops of one group in front of its ``kernel.fused``."""

    group: _Group
    outer: dict[SSAValue, SSAValue]
    """Body value -> the value outside that holds it (operand, hoisted constant, tile result)."""

    def outside(self, value: SSAValue) -> SSAValue:
        found = self.outer.get(value)
        if found is None:
            owner = value.owner
            if not isinstance(owner, ConstantOp) or owner.parent_block() is not self.body:
                return value  # defined outside the group (the body is not isolated from above)
            hoisted = owner.clone()
            self.insert(hoisted)
            found = self.outer[value] = hoisted.result
        return found

    @property
    def body(self) -> Block:
        return self.group.fused.body.block

    def insert(self, op: Operation) -> None:
        fused = self.group.fused
        block = fused.parent_block()
        assert block is not None
        block.insert_op_before(op, fused)

    def build(self, space: GroupSpace, tiles: Sequence[int], name: str | None) -> TileOp:
        rank = len(space.dims)
        inputs = [v for v in space.inputs if not _is_scalar_constant(v)]
        block = Block(
            arg_types=[
                TensorType(element_type(v), tile_shape(tensor_shape(v), space.value_dims[v], tiles))
                for v in inputs
            ]
        )
        inner: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args, strict=True))
        for v, arg in zip(inputs, block.args, strict=True):
            arg.name_hint = v.name_hint

        def inside(value: SSAValue) -> SSAValue:
            found = inner.get(value)
            if found is None:
                owner = value.owner
                assert isinstance(owner, ConstantOp), f"value {value} is not available in the tile"
                const = owner.clone()
                block.add_op(const)
                found = inner[value] = const.result
            return found

        for op in space.ops:
            new = _rebuild(op, [inside(o) for o in op.operands])
            block.add_op(new)
            for old_result, new_result in zip(op.results, new.results, strict=True):
                expected = TensorType(element_type(old_result), space.tile_shape(old_result, tiles))
                if new_result.type != expected:
                    raise TdslIRError(
                        f"internal error: tiling '{op.name}' gave {new_result.type}, "
                        f"expected {expected}"
                    )
                inner[old_result] = new_result
        block.add_op(YieldOp(*[inner[v] for v in space.outputs]))
        tile_op = TileOp(
            [self.outside(v) for v in inputs],
            [v.type for v in space.outputs],
            Region(block),
            space=space.space,
            tiles=tiles,
            scratch=0,
            in_maps=[dim_map(rank, space.value_dims[v]) for v in inputs],
            out_maps=[dim_map(rank, space.value_dims[v]) for v in space.outputs],
            group=name,
        )
        tile_op.properties["scratch"] = IntegerAttr(scratch_plan(tile_op).total, i64)
        tile_op.location = self.group.fused.location
        try:
            tile_op.verify()
        except VerifyException as err:
            raise TdslIRError(
                f"internal error: tdsl-tile built an invalid kernel.tile: {err}"
            ) from err
        self.insert(tile_op)
        for v, result in zip(space.outputs, tile_op.results, strict=True):
            result.name_hint = v.name_hint
            self.outer[v] = result
        return tile_op


def _live_ops(ops: Sequence[Operation], yielded: Sequence[SSAValue]) -> list[Operation]:
    """``ops`` without those whose results nothing (transitively) uses."""
    needed = set(yielded)
    live: list[Operation] = []
    for op in reversed(ops):
        if any(r in needed for r in op.results):
            live.append(op)
            needed.update(op.operands)
    live.reverse()
    return live


def _label(fused: FusedOp) -> str:
    return "the group" if fused.group is None else f"group '{fused.group.data}'"


def _tile_fused(fused: FusedOp, options: TilePass) -> list[TileOp]:
    """Replace ``fused`` by its tile ops."""
    budget = options.memory_budget or fused.budget_value or DEFAULT_MEMORY_BUDGET
    ops, yielded = body_ops(fused)
    compute = [op for op in _live_ops(ops, yielded) if not isinstance(op, ConstantOp)]
    group = _Group(fused=fused, ops=compute, yielded=yielded, budget=budget)
    for op in compute:
        _check_alone(op, group)
    parts = group.schedule(compute) if compute else []

    builder = _Builder(group, dict(zip(fused.body.block.args, fused.inputs, strict=True)))
    base = None if fused.group is None else fused.group.data
    tile_ops: list[TileOp] = []
    for index, space in enumerate(parts):
        name = base if base is None or len(parts) == 1 else f"{base}.{index}"
        label = _label(fused) if len(parts) == 1 else f"part {index} of {_label(fused)}"
        if options.tile_sizes:
            tiles = _explicit_tiles(space, options.tile_sizes, budget, label)
        else:
            tiles = _default_tiles(space, budget, options.tile_size)
        tile_ops.append(builder.build(space, tiles, name))
    for result, value in zip(fused.results, yielded, strict=True):
        result.replace_all_uses_with(builder.outside(value))
    fused.detach()
    fused.erase()
    return tile_ops


__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "ScratchBuffer",
    "ScratchPlan",
    "TilePass",
    "scratch_plan",
    "tile",
]
