"""``tdsl-tile``: schedule every ``kernel.fused`` group as a ``kernel.tile`` under the memory budget.

For each group the pass

1. finds its iteration space (:func:`tdsl.transforms.iteration_space.analyze`):
   the space dims, which of them are reduction dims, and the dims of every
   value;
2. picks tile sizes that fit the memory budget (below);
3. rebuilds the body on tile-sized slices, each op re-typed by its own type
   inference (``retyped``), and records the plan: the iterator kinds, the
   step of the schedule each op runs in (``sweeps``), the staged values (none
   by default) and the scratch buffers of
   :func:`tdsl.dialects.kernel_plan.plan_scratch`.  Every target runs the
   recorded plan; one edited by hand is checked by the verifier.

**Which budget.**  A group is scheduled under the ``scratch`` its
``kernel.fused`` records (what the values materialized between groups leave
of the budget, or the least need where no plan fits: see ``tdsl-fuse``),
else its ``budget``; a ``memory-budget`` option that differs from the
recorded budget overrides both.

**What fits.**  A tiling fits the budget ``B`` (in elements) when its
schedule is legal (see :mod:`tdsl.dialects.kernel_plan`) and the scratch of a
tile is at most ``B``: this is what the generated code allocates beyond its
inputs and outputs, all threads together.  Inputs are views and outputs are
written in place, so a group with no intermediates (a lone ``relu``, a
``matmul`` and its epilogue) needs no scratch and runs as one tile; the NumPy
target still cuts it into cache-sized blocks.

**Default tile sizes.**  Start from the whole space (one tile), with the
parallel dims capped by ``tile-size``.  While the tile does not fit, shrink the
space dims in order, outermost first (the space dims follow the layout of the
group's largest value): to the largest size that fits, found by bisection, or
to 1 when even that does not fit, then move inwards.  Dims a matmul prefers
whole (its columns, its contraction) come last.  Tiling a reduction dim
makes the group run in passes over it; a dim whose tiling would break the
schedule's rules is left whole.  A size ``t`` along a dim of extent ``E`` is
evened out to ``ceil(E / ceil(E / t))``: the same number of tiles, without a
small remainder.

**Rows longer than the budget.**  A row-normalizing op (``softmax``) needs
whole rows; when no tiling with whole rows fits (or explicit tile sizes cut a
row), the group is tiled with such ops replaced by their decomposition
(reductions and element-wise ops), which runs over tiles of the row in passes.
A ``softmax`` whose one use is the left operand of a ``matmul`` along its axis
(attention's ``softmax(q @ k.T * s + mask) @ v``) decomposes with that matmul
into ``softmax_matmul``: flash attention's online softmax, one pass over tiles
of the key dim carrying a running maximum, a running sum and a rescaled
accumulator (float32 for float16), never a row of scores.  That form is tried
before the plain decomposition (whose passes would keep each row of the scores:
a matmul is not computed twice), and the least need of the forms bounds the group.
The decision is made on copies, part by part: a part that fits as written
keeps its ops.

**Groups that do not fit.**  ``tdsl-fuse`` forms only groups that fit its
budget at their smallest tile, so this is for IR written by hand or tiled
under a smaller budget: a group that fits neither as written nor decomposed
is split where the need of its parts is smallest, the values live across the
cut becoming results of the first part; one op that cannot fit alone is a
:class:`~tdsl.errors.TdslBudgetError` saying what it needs.

Constants of one element stay in the body; larger ones are hoisted in front
of the tile op and passed in as operands.  Ops whose results nothing uses are
dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from tdsl.defaults import DEFAULT_MEMORY_BUDGET, check_memory_budget, positive_int
from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp, dim_map
from tdsl.dialects.kernel_plan import (
    Dims,
)
from tdsl.dialects.structured import (
    constant_value,
    element_type,
    is_constant,
)
from tdsl.errors import (
    TdslBudgetError,
    TdslIRError,
    TdslOptionError,
    check_argument,
    internal_error,
)
from tdsl.transforms.iteration_space import require_structured
from tdsl.transforms.tile_choice import Tiling, choose_tiles, min_scratch, try_tiles
from tdsl.transforms.tile_decompose import decompose_in_place, decomposed_copy
from tdsl.transforms.tile_parts import GroupParts, TilePart

# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------


def check_tile_options(
    memory_budget: int | None, tile_size: int | None, tile_sizes: Sequence[int]
) -> None:
    """Raise :class:`TdslOptionError` for a bad budget or tile size."""
    if memory_budget is not None:
        check_memory_budget(memory_budget)
    if tile_size is not None:
        positive_int("tile-size", tile_size)
    if any(
        isinstance(s, bool) or not isinstance(cast(object, s), int) or s <= 0 for s in tile_sizes
    ):
        raise TdslOptionError(
            f"tile-sizes must all be positive integers, got {', '.join(str(s) for s in tile_sizes)}"
        )
    for size in tile_sizes:  # (as tile-size and the JIT's tile_sizes)
        positive_int("tile-sizes", size)


@dataclass(frozen=True)
class TilePass(ModulePass):
    """Turn every ``kernel.fused`` into ``kernel.tile`` ops whose scratch fits the memory budget."""

    name = "tdsl-tile"

    memory_budget: int | None = None
    """Budget in elements; overrides the one each ``kernel.fused`` records (default 1_000_000)."""

    tile_size: int | None = None
    """Upper bound on the tile size along every parallel dim (matmul columns excepted)."""

    tile_sizes: tuple[int, ...] = ()
    """Explicit tile sizes, one per iteration dim of every group (larger sizes are clamped);
    where given, ``tile-size`` is not used."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_tile_options(self.memory_budget, self.tile_size, self.tile_sizes)
        PatternRewriteWalker(TileGroups(self), apply_recursively=False).rewrite_module(op)


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
    check_argument(module, ModuleOp, "the module given to `tile`")
    check_argument(tile_sizes, (tuple, list), "`tile_sizes` (a size per dim)")
    sizes = tuple(tile_sizes)
    check_tile_options(memory_budget, tile_size, sizes)
    clone = module.clone()
    TilePass(memory_budget=memory_budget, tile_size=tile_size, tile_sizes=sizes).apply(
        Context(), clone
    )
    return clone


# ---------------------------------------------------------------------------
# Rewriting
# ---------------------------------------------------------------------------


def _is_hoisted_constant(op: Operation) -> bool:
    value = constant_value(op)
    return value is not None and value.size > 1


def _build_tile(
    part: TilePart, tiling: Tiling, name: str | None, outer: dict[SSAValue, SSAValue]
) -> TileOp:
    """The ``kernel.tile`` of ``part``; ``outer`` maps body values to the values outside."""
    body, tiles = part.body, tiling.tiles
    rank = body.rank
    inputs = set(part.inputs)
    # one operand per input and map it is read with
    reads: dict[tuple[SSAValue, Dims], int] = {}
    for op in part.ops:
        for i, v in enumerate(op.operands):
            if v in inputs:
                reads.setdefault((v, body.reads[(op, i)]), len(reads))
    for v, dims in zip(body.outputs, body.output_dims, strict=True):
        if v in inputs:
            reads.setdefault((v, dims), len(reads))
    keys = list(reads)
    block = Block(
        arg_types=[TensorType(element_type(v), body.shape(v, tiles, dims)) for v, dims in keys]
    )
    for (v, _), arg in zip(keys, block.args, strict=True):
        arg.name_hint = v.name_hint
    inner: dict[SSAValue, SSAValue] = {}
    for op in part.ops:
        operands = [
            block.args[reads[(v, body.reads[(op, i)])]] if v in inputs else inner[v]
            for i, v in enumerate(op.operands)
        ]
        if is_constant(op):
            new = op.clone()
        else:
            try:
                new = require_structured(op).retyped(operands)
            except Exception as err:  # a type rule that refuses its own tile: a bug
                raise TdslIRError(
                    f"internal error: tiling '{op.name}' failed to re-type it: {err}", op=op
                ) from err
        block.add_op(new)
        for old_result, new_result in zip(op.results, new.results, strict=True):
            expected = TensorType(element_type(old_result), body.shape(old_result, tiles))
            if not is_constant(op) and new_result.type != expected:
                raise TdslIRError(
                    f"internal error: tiling '{op.name}' gave {new_result.type}, "
                    f"expected {expected}",
                    op=op,
                )
            inner[old_result] = new_result
    yielded = [
        block.args[reads[(v, dims)]] if v in inputs else inner[v]
        for v, dims in zip(body.outputs, body.output_dims, strict=True)
    ]
    block.add_op(YieldOp(*yielded))
    tile_op = TileOp(
        [outer.get(v, v) for v, _ in keys],
        [v.type for v in body.outputs],
        Region(block),
        space=body.extents,
        iterators=body.kinds,
        tiles=tiles,
        scratch=tiling.scratch.buffers,
        in_maps=[dim_map(rank, dims) for _, dims in keys],
        out_maps=[dim_map(rank, dims) for dims in body.output_dims],
        group=name,
        sweeps=[tiling.schedule.step_of[op] for op in body.ops],
        staged=sorted(body.position[op] for op in tiling.schedule.staged),
    )
    try:
        # the tile op and its plan; its body ops are copies whose types were checked above
        tile_op.verify(verify_nested_ops=False)
    except VerifyException as err:
        raise TdslIRError(f"internal error: tdsl-tile built an invalid kernel.tile: {err}") from err
    return tile_op


def group_budget(fused: FusedOp, memory_budget: int | None = None) -> int:
    """The scratch ``fused``'s tiles may use: the ``scratch`` ``tdsl-fuse`` recorded (the
    budget less the values its plan materializes, or the least the plan needs where none
    fits), unless ``memory_budget`` is given and differs from the budget the group
    records; else that budget (default :data:`DEFAULT_MEMORY_BUDGET`)."""
    recorded = fused.budget_value
    if fused.scratch_value is not None and memory_budget in (None, recorded):
        return fused.scratch_value
    return memory_budget or recorded or DEFAULT_MEMORY_BUDGET


@dataclass(frozen=True)
class TileGroups(RewritePattern):
    """Replace a ``kernel.fused`` by the ``kernel.tile`` ops of its parts."""

    options: TilePass

    @op_type_rewrite_pattern
    def match_and_rewrite(self, fused: FusedOp, rewriter: PatternRewriter) -> None:
        budget = group_budget(fused, self.options.memory_budget)
        group = GroupParts(fused, budget, self.options)
        for op in group.ops:
            if not is_constant(op):
                require_structured(op)
        while True:
            compute = [op for op in group.ops if not _is_hoisted_constant(op)]
            try:
                parts = group.schedule_parts(compute) if compute else []
                break
            except TdslBudgetError as err:
                # one op that fits neither whole nor decomposed as one part: its
                # decomposition's ops may still fit as parts of their own
                if not decompose_in_place(err.op, fused, rewriter):
                    raise
                group = GroupParts(fused, budget, self.options)
        # large constants go in front of the tile op, as operands
        hoisted: dict[SSAValue, SSAValue] = {}
        for op in group.ops:
            if _is_hoisted_constant(op):
                clone = op.clone()
                rewriter.insert(clone, InsertPoint.before(fused))
                hoisted.update(zip(op.results, clone.results, strict=True))
        outer: dict[SSAValue, SSAValue] = dict(
            zip(fused.body.block.args, fused.inputs, strict=True)
        )
        outer.update(hoisted)
        base = group.fused.group_name
        new_ops: list[Operation] = []
        for index, part in enumerate(parts):
            if part.tiling is None:
                raise internal_error(
                    f"tdsl-tile: part {index} of the group has no tiling", op=fused
                )
            if part.origin is not None:
                outer.update({a: outer.get(v, v) for a, v in part.origin.items()})
            name = base if base is None or len(parts) == 1 else f"{base}.{index}"
            tile_op = _build_tile(part, part.tiling, name, outer)
            tile_op.location = fused.location
            new_ops.append(tile_op)
            stands_for = part.replaces or part.body.outputs
            for v, result in zip(stands_for, tile_op.results, strict=True):
                result.name_hint = v.name_hint
                outer[v] = result
        replacements = [outer.get(v, v) for v in group.yielded]
        rewriter.replace(fused, new_ops, replacements)


__all__ = [
    "TileGroups",
    "TilePass",
    "Tiling",
    "check_tile_options",
    "choose_tiles",
    "decomposed_copy",
    "min_scratch",
    "tile",
    "try_tiles",
]
