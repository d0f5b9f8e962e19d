"""``tdsl-tile``: schedule every ``kernel.fused`` group as a ``kernel.tile`` under the memory budget.

For each group the pass

1. finds its iteration space (:func:`tdsl.transforms.iteration_space.analyze`):
   the space dims, which of them are reduction dims, and the dims of every
   value;
2. picks tile sizes that fit the memory budget (below);
3. rebuilds the body on tile-sized slices, each op re-typed by its own type
   inference (``retyped``), and records the iterator kinds and the scratch
   buffers of :func:`tdsl.dialects.kernel_plan.plan_scratch`.

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

import itertools
import math
from collections.abc import Callable, Sequence
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
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from tdsl.defaults import DEFAULT_MEMORY_BUDGET, check_memory_budget, positive_int
from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp, dim_map
from tdsl.dialects.kernel_plan import (
    Dims,
    GroupBody,
    PlanError,
    ScratchPlan,
    TileSchedule,
    plan_scratch,
    schedule,
)
from tdsl.dialects.structured import (
    Decomposable,
    IteratorType,
    checked_decomposition,
    constant_value,
    element_type,
    structured,
)
from tdsl.errors import TdslBudgetError, TdslIRError, TdslOptionError, plural
from tdsl.transforms.iteration_space import Inconsistent, analyze, require_structured
from tdsl.transforms.locations import op_location

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


@dataclass(frozen=True)
class TilePass(ModulePass):
    """Turn every ``kernel.fused`` into ``kernel.tile`` ops whose scratch fits the memory budget."""

    name = "tdsl-tile"

    memory_budget: int | None = None
    """Budget in elements; overrides the one each ``kernel.fused`` records (default 1_000_000)."""

    tile_size: int | None = None
    """Upper bound on the tile size along every parallel dim (matmul columns excepted)."""

    tile_sizes: tuple[int, ...] = ()
    """Explicit tile sizes, one per iteration dim of every group (larger sizes are clamped)."""

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
    sizes = tuple(tile_sizes)
    check_tile_options(memory_budget, tile_size, sizes)
    clone = module.clone()
    TilePass(memory_budget=memory_budget, tile_size=tile_size, tile_sizes=sizes).apply(
        Context(), clone
    )
    return clone


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


def _recompute_volume(body: GroupBody, d: int) -> int:
    """The iterations of the ops that do not run along parallel dim ``d``: each tile
    along ``d`` computes them again."""
    total = 0
    for op in body.ops:
        if d not in body.loop_dims(op):
            s = structured(op)
            total += math.prod(s.loop_extents()) if s is not None else 0
    return total


def _shrink_order(body: GroupBody, whole: set[int]) -> list[int]:
    """The dims to cut, first to last: in space order (the layout of the largest
    value, outermost first, so tiles stay contiguous), the dims preferred whole
    after the others, and last the parallel dims whose tiles recompute ops (least
    recomputation first)."""
    free = [d for d in range(body.rank) if d not in whole and body.extents[d] > 1]
    again = {d: _recompute_volume(body, d) for d in free if not body.is_reduction(d)}

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
        assert found is not None
        return found
    return None


def _whole_sets(body: GroupBody) -> list[set[int]]:
    """Sets of reduction dims to keep whole, fewest first: tilings the greedy order can miss."""
    red = [d for d in range(body.rank) if body.kinds[d] is not IteratorType.PARALLEL]
    return [set(c) for n in range(1, len(red) + 1) for c in itertools.combinations(red, n)]


def choose_tiles(body: GroupBody, budget: int, tile_size: int | None = None) -> Tiling | None:
    """The default tiling of ``body`` under ``budget`` (see the module docstring), or None."""
    start = _whole(body)
    if tile_size is not None:
        for d in range(body.rank):
            if body.kinds[d] is IteratorType.PARALLEL and d not in body.prefer_whole:
                start[d] = min(start[d], tile_size)
    found = _greedy(body, budget, start, lambda: _shrink_order(body, set()))
    if found is not None:
        return found
    for whole in _whole_sets(body):
        found = _greedy(body, budget, start, lambda whole=whole: _shrink_order(body, whole))
        if found is not None:
            return found
    return None


def _smallest(body: GroupBody, whole: set[int]) -> Tiling | None:
    """Every dim outside ``whole`` cut to 1 where the schedule allows it, in shrink order."""
    tiles = _whole(body)
    found = _legal(body, tiles)
    for d in _shrink_order(body, whole):
        trial = list(tiles)
        trial[d] = 1
        cut = _legal(body, trial)
        if cut is not None:
            tiles, found = trial, cut
    # only the last legal tiling's scratch is wanted
    return None if found is None else Tiling(tuple(tiles), found, plan_scratch(found))


def _legal(body: GroupBody, tiles: Sequence[int]) -> TileSchedule | None:
    """The schedule of ``tiles``, or None when they break a rule."""
    try:
        return schedule(body, tiles)
    except PlanError:
        return None


def min_scratch(body: GroupBody) -> int | None:
    """The scratch of the smallest legal tile of ``body`` (None when no tiling is legal)."""
    best: int | None = None
    for whole in [set[int](), *_whole_sets(body)]:
        found = _smallest(body, whole)
        if found is not None and (best is None or found.scratch.total < best):
            best = found.scratch.total
    return best


def _explicit_tiles(
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
    found = try_tiles(body, tiles)
    if isinstance(found, str):
        raise TdslOptionError(
            f"tile-sizes [{', '.join(str(t) for t in tiles)}] cannot tile {label}: {found}",
            where,
            op=fused,
        )
    if found.scratch.total > budget:
        raise TdslBudgetError(
            f"tile sizes [{', '.join(str(t) for t in tiles)}] of {label} need "
            f"{plural(found.scratch.total, 'element')} of scratch, more than the memory "
            f"budget of {plural(budget, 'element')}",
            where,
            note="choose smaller tile-sizes or a larger memory-budget",
            op=fused,
        )
    return found


# ---------------------------------------------------------------------------
# Parts of a group
# ---------------------------------------------------------------------------


@dataclass
class _Part:
    """Some ops of a group (program order) run as one ``kernel.tile``.

    A decomposed part holds copies (in a detached block): ``origin`` maps the
    copy's inputs to the group's values they stand for, ``replaces`` its
    outputs to the group's values they compute.
    """

    ops: list[Operation]
    outputs: list[SSAValue]
    inputs: list[SSAValue]
    body: GroupBody
    tiling: Tiling | None = None
    origin: dict[SSAValue, SSAValue] | None = None
    replaces: list[SSAValue] | None = None


def _decomposes(ops: Sequence[Operation]) -> bool:
    return any(isinstance(op, Decomposable) and op.decomposes() for op in ops)


class _Group:
    """One ``kernel.fused`` being scheduled."""

    def __init__(self, fused: FusedOp, budget: int, options: TilePass) -> None:
        self.fused = fused
        self.budget = budget
        self.options = options
        ops, self.yielded = fused.body_ops()
        self.ops = _live_ops(ops, self.yielded)

    def label(self) -> str:
        return "the group" if self.fused.group is None else f"group '{self.fused.group.data}'"

    def part(self, seq: Sequence[Operation]) -> _Part | Inconsistent:
        inside = set(seq)
        users = set(self.ops)
        defined = [r for op in seq for r in op.results]
        defined_set = set(defined)
        yielded = [v for v in dict.fromkeys(self.yielded) if v in defined_set]
        taken = set(yielded)
        outputs = yielded + [
            r
            for r in defined
            if r not in taken
            and any(u.operation in users and u.operation not in inside for u in r.uses)
        ]
        args = list(self.fused.body.block.args)
        inputs: dict[SSAValue, None] = {}
        for a in args:
            if any(u.operation in inside for u in a.uses):
                inputs[a] = None
        arg_set = set(args)
        for op in seq:
            for v in op.operands:
                if v not in inputs and v.owner not in inside and v not in arg_set:
                    inputs[v] = None
        found = analyze(seq, outputs, list(inputs))
        if isinstance(found, Inconsistent):
            return found
        return _Part(list(seq), outputs, list(inputs), found)

    def decomposed(self, part: _Part) -> _Part | None:
        """``part`` with its row-normalizing ops replaced by their decomposition (copies)."""
        if not _decomposes(part.ops):
            return None
        copy = decomposed_copy(part.ops, part.outputs, part.inputs)
        if copy is None:
            return None
        ops, outputs, args = copy
        found = analyze(ops, outputs, args)
        if isinstance(found, Inconsistent):
            return None
        origin = dict(zip(args, part.inputs, strict=True))
        return _Part(ops, outputs, args, found, origin=origin, replaces=list(part.outputs))

    def fit(self, seq: Sequence[Operation]) -> _Part | None:
        """``seq`` as one part with its tiling, as written or decomposed, or None if
        neither fits.  Explicit tile sizes that cut a row take the decomposed form;
        their errors are about the first form they can tile."""
        part = self.part(seq)
        if isinstance(part, Inconsistent):
            return None
        forms = [part]
        decomposed = self.decomposed(part)
        if decomposed is not None:
            forms.append(decomposed)
        sizes = self.options.tile_sizes
        if sizes:
            legal = [f for f in forms if _explicit_legal(f.body, sizes)]
            chosen = legal[0] if legal else part
            chosen.tiling = _explicit_tiles(
                chosen.body, sizes, self.budget, self.label(), self.fused
            )
            return chosen
        for form in forms:
            form.tiling = choose_tiles(form.body, self.budget, self.options.tile_size)
            if form.tiling is not None:
                return form
        return None

    def need(self, seq: Sequence[Operation]) -> int:
        """The scratch ``seq`` needs at its smallest legal tile, as written or decomposed
        (a huge number if it cannot run)."""
        part = self.part(seq)
        if isinstance(part, Inconsistent):
            return 1 << 62
        needs = [min_scratch(part.body)]
        decomposed = self.decomposed(part)
        if decomposed is not None:
            needs.append(min_scratch(decomposed.body))
        return min((n for n in needs if n is not None), default=1 << 62)

    def schedule_parts(self, seq: Sequence[Operation]) -> list[_Part]:
        """Parts of ``seq`` that each fit the budget."""
        found = self.fit(seq)
        if found is not None:
            return [found]
        if len(seq) == 1:
            part = self.part(seq)
            if isinstance(part, Inconsistent):
                raise TdslIRError(f"cannot tile '{seq[0].name}': {part.reason}", op=seq[0])
            self.too_big(seq[0], part.body)
        best: tuple[tuple[int, int], int] | None = None
        cuts = range(1, len(seq)) if len(seq) <= 48 else _cut_candidates(len(seq))
        for k in cuts:
            key = (max(self.need(seq[:k]), self.need(seq[k:])), abs(2 * k - len(seq)))
            if best is None or key < best[0]:
                best = (key, k)
        assert best is not None
        k = best[1]
        return self.schedule_parts(seq[:k]) + self.schedule_parts(seq[k:])

    def too_big(self, op: Operation, body: GroupBody) -> None:
        need = min_scratch(body)
        what = (
            "cannot run at any tiling"
            if need is None
            else f"needs {plural(need, 'element')} of scratch"
        )
        shape = "x".join(str(e) for e in body.extents) or "[]"
        raise TdslBudgetError(
            f"'{op.name}' {what} at its smallest tile (iteration space {shape}), more than "
            f"the memory budget of {plural(self.budget, 'element')}",
            op_location(op, self.fused),
            note=f"raise the memory budget to at least {need}" if need is not None else None,
            op=op,
        )


def _explicit_legal(body: GroupBody, sizes: Sequence[int]) -> bool:
    """Whether explicit tile ``sizes`` give a legal schedule of ``body``."""
    if len(sizes) != body.rank:
        return False
    tiles = [min(size, max(1, e)) for size, e in zip(sizes, body.extents, strict=True)]
    return not isinstance(try_tiles(body, tiles), str)


def _cut_candidates(n: int) -> list[int]:
    step = max(1, n // 32)
    return sorted({*range(1, n, step), n // 2})


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


# ---------------------------------------------------------------------------
# Rewriting
# ---------------------------------------------------------------------------


def decomposed_copy(
    ops: Sequence[Operation],
    outputs: Sequence[SSAValue],
    inputs: Sequence[SSAValue] = (),
) -> tuple[list[Operation], list[SSAValue], list[SSAValue]] | None:
    """``ops`` copied into a detached block with every op that has a decomposition
    replaced by it: (ops, outputs, inputs) of the copy, or None when nothing decomposes.

    The copy's inputs are block arguments standing for ``inputs`` (in that
    order), then for the other values ``ops`` read from outside.  The IR is not
    touched: ``tdsl-fuse`` sizes groups this way, and ``tdsl-tile`` builds the
    ``kernel.tile`` of a decomposed part from the copy.
    """
    if not _decomposes(ops):
        return None
    members = set(ops)
    block = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    for v in [*inputs, *(v for op in ops for v in op.operands if v.owner not in members)]:
        if v not in mapping:
            mapping[v] = block.insert_arg(v.type, len(block.args))
            mapping[v].name_hint = v.name_hint
    for op in ops:
        block.add_op(op.clone(value_mapper=mapping))
    copied_outputs = [mapping[v] for v in outputs]
    for op in list(block.ops):
        decomposed = checked_decomposition(op)
        if decomposed is not None:
            new_ops, value = decomposed
            for new in new_ops:
                new.location = op.location
            Rewriter.replace_op(op, new_ops, [value])
            copied_outputs = [value if v is op.results[0] else v for v in copied_outputs]
    return list(block.ops), copied_outputs, list(block.args)


def _decompose_in_place(op: object, fused: FusedOp, rewriter: PatternRewriter) -> bool:
    """Replace ``op`` (of ``fused``'s body) by its decomposition; False when it has none."""
    if not isinstance(op, Operation) or op.parent_block() is not fused.body.block:
        return False
    decomposed = checked_decomposition(op)
    if decomposed is None:
        return False
    new_ops, value = decomposed
    for new in new_ops:
        new.location = op.location
    rewriter.replace(op, new_ops, [value])
    return True


def _is_hoisted_constant(op: Operation) -> bool:
    value = constant_value(op)
    return value is not None and value.size > 1


def _build_tile(
    part: _Part, tiling: Tiling, name: str | None, outer: dict[SSAValue, SSAValue]
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
        if constant_value(op) is not None:
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
            if constant_value(op) is None and new_result.type != expected:
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
    )
    try:
        tile_op.verify()
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
        group = _Group(fused, budget, self.options)
        for op in group.ops:
            if constant_value(op) is None:
                require_structured(op)
        while True:
            compute = [op for op in group.ops if not _is_hoisted_constant(op)]
            try:
                parts = group.schedule_parts(compute) if compute else []
                break
            except TdslBudgetError as err:
                # one op that fits neither whole nor decomposed as one part: its
                # decomposition's ops may still fit as parts of their own
                if not _decompose_in_place(err.op, fused, rewriter):
                    raise
                group = _Group(fused, budget, self.options)
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
            assert part.tiling is not None
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
    "min_scratch",
    "tile",
    "try_tiles",
]
