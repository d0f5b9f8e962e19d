"""The parts of a fusion group that ``tdsl-tile`` tiles, and their search.

``GroupParts`` decides, on copies, part by part, whether a part fits the budget as
written or decomposed, and splits a group that fits neither where the need of
its parts is smallest; the helpers list the cut candidates and the ops live
for a set of yielded values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue

from tdsl.dialects.kernel import FusedOp
from tdsl.dialects.kernel_plan import (
    GroupBody,
)
from tdsl.errors import TdslBudgetError, TdslIRError, internal_error, plural
from tdsl.transforms.iteration_space import Inconsistent, analyze
from tdsl.transforms.locations import op_location
from tdsl.transforms.tile_choice import (
    Tiling,
    choose_tiles,
    explicit_tiles,
    min_scratch,
    try_tiles,
)
from tdsl.transforms.tile_decompose import any_decomposes, decomposed_forms

if TYPE_CHECKING:
    from tdsl.transforms.tile import TilePass


# ---------------------------------------------------------------------------
# Parts of a group
# ---------------------------------------------------------------------------


@dataclass
class TilePart:
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


class GroupParts:
    """One ``kernel.fused`` being scheduled."""

    def __init__(self, fused: FusedOp, budget: int, options: TilePass) -> None:
        self.fused = fused
        self.budget = budget
        self.options = options
        ops, self.yielded = fused.body_ops()
        self.ops = _live_ops(ops, self.yielded)

    def label(self) -> str:
        return "the group" if self.fused.group is None else f"group '{self.fused.group.data}'"

    def part(self, seq: Sequence[Operation]) -> TilePart | Inconsistent:
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
        return TilePart(list(seq), outputs, list(inputs), found)

    def decomposed(self, part: TilePart) -> list[TilePart]:
        """``part`` with its row-normalizing ops replaced by their decomposition (copies):
        first the form where a ``softmax`` decomposes with the ``matmul`` it feeds (flash
        attention's online softmax), if any, then the plain one."""
        if not any_decomposes(part.ops):
            return []
        forms: list[TilePart] = []
        for ops, outputs, args in decomposed_forms(part.ops, part.outputs, part.inputs):
            found = analyze(ops, outputs, args)
            if isinstance(found, Inconsistent):
                continue
            origin = dict(zip(args, part.inputs, strict=True))
            forms.append(
                TilePart(ops, outputs, args, found, origin=origin, replaces=list(part.outputs))
            )
        return forms

    def fit(self, seq: Sequence[Operation]) -> TilePart | None:
        """``seq`` as one part with its tiling, as written or decomposed, or None if
        neither fits.  Explicit tile sizes that cut a row take the decomposed form;
        their errors are about the first form they can tile."""
        part = self.part(seq)
        if isinstance(part, Inconsistent):
            return None
        forms = [part, *self.decomposed(part)]
        sizes = self.options.tile_sizes
        if sizes:
            legal = [f for f in forms if _explicit_legal(f.body, sizes)]
            chosen = legal[0] if legal else part
            chosen.tiling = explicit_tiles(
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
        needs = [min_scratch(form.body) for form in [part, *self.decomposed(part)]]
        return min((n for n in needs if n is not None), default=1 << 62)

    def schedule_parts(self, seq: Sequence[Operation]) -> list[TilePart]:
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
        if best is None:
            raise internal_error(f"tdsl-tile: no cut of a run of {len(seq)} ops into two parts")
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
        fused = self.fused
        limit = f"the memory budget of {plural(self.budget, 'element')}"
        raise_it = "raise the memory budget"
        if fused.scratch_value == self.budget and self.options.memory_budget in (
            None,
            fused.budget_value,
        ):  # (the scratch tdsl-fuse recorded, not the budget: it may be the smaller)
            limit = f"the scratch of {plural(self.budget, 'element')} its kernel.fused records"
            raise_it = "raise the group's scratch"
        raise TdslBudgetError(
            f"'{op.name}' {what} at its smallest tile (iteration space {shape}), more than {limit}",
            op_location(op, fused),
            note=f"{raise_it} to at least {need}" if need is not None else None,
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
