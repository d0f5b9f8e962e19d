"""``-t dot``: the fusion plan as a Graphviz graph.

One graph per module, one cluster per function and, inside it, one cluster
per fusion group, labelled with the group's name and how it is tiled: the
tiles and scratch a tiled input records (``kernel.tile``), or the tiles
``tdsl-tile`` would choose under the memory budget.  Each op is a box
labelled with the source text it came from (``x @ w1``, ``relu(B)``; for
MLIR input its line, without the types), the op and its result type.  The
function's arguments and its ``return`` are ellipses.

Edges carry values.  An edge between two groups is a value materialized in
memory: it is drawn bold and red and labelled with the reason ``tdsl-fuse``
left it unfused; a value leaving for ``return`` is materialized as a result.
An op that a tiled schedule computes again in a later pass over a reduction
dim is drawn dashed and marked *recomputed*; an op nothing uses is dotted.

The plan is :func:`tdsl.transforms.fuse.fusion_report`'s, so the picture and
``--explain-fusion`` always agree; ``kernel.tile`` records no memory budget,
so for tiled IR give the budget it was fused under (``-t 'dot{memory-budget=64}'``),
as :meth:`tdsl.jit.CompiledKernel.to_dot` does.  Render with Graphviz::

    tdsl-opt walk.tdsl --fuse --tile -t dot | dot -Tsvg -o plan.svg
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any, cast

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.utils.target import Target

from tdsl.errors import SourceLocation, TdslIRError, plural
from tdsl.transforms.fuse import FusionReport, fusion_report
from tdsl.transforms.fusion_analysis import FusionGroup, UnfusedEdge
from tdsl.transforms.locations import op_location
from tdsl.transforms.tile import choose_tiles

Locator = Callable[[Operation], SourceLocation | None]

MAX_LABEL = 48
"""Source text longer than this is shortened in the middle."""


@dataclass(frozen=True)
class DotTarget(Target):
    """``-t dot``: the fusion plan as a Graphviz graph (groups, tiles, materialized values)."""

    name = "dot"

    memory_budget: int | None = None
    """The budget the plan is made under; default: the one ``kernel.fused`` records,
    else 1_000_000 (``kernel.tile`` records none)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(render_dot(module, self.memory_budget))


def render_dot(
    module: ModuleOp,
    memory_budget: int | None = None,
    *,
    locate: Locator | None = None,
    sources: Mapping[str, str] | None = None,
) -> str:
    """The Graphviz text of ``module``'s fusion plan (see the module docstring).

    ``locate`` places an op of ``module`` in its source (the driver's locator);
    without it an op's ``loc(...)`` is used.  ``sources`` gives the text of a
    source by file name; other files are read from disk.
    """
    report = fusion_report(module, memory_budget)
    return _Renderer(report, locate, _Sources(sources or {})).render()


class _Sources:
    """Source texts by file name, read once, and the op snippets of each."""

    def __init__(self, given: Mapping[str, str]) -> None:
        self._texts: dict[str, str | None] = dict(given)
        self._snippets: dict[str, dict[tuple[int, int], str]] = {}

    def text(self, file: str) -> str | None:
        if file not in self._texts:
            try:
                with open(file, encoding="utf-8") as stream:
                    self._texts[file] = stream.read()
            except (OSError, UnicodeDecodeError):
                self._texts[file] = None
        return self._texts[file]

    def snippet(self, where: SourceLocation) -> str | None:
        """The tdsl source text of the node at ``where``, or None."""
        if where.file not in self._snippets:
            from tdsl.frontend.snippets import source_snippets

            text = self.text(where.file)
            self._snippets[where.file] = {} if text is None else source_snippets(text, where.file)
        return self._snippets[where.file].get((where.line, where.column))

    def line(self, where: SourceLocation) -> str | None:
        if where.source_line is not None:
            return where.source_line
        text = self.text(where.file)
        lines = [] if text is None else text.split("\n")
        return lines[where.line - 1] if 1 <= where.line <= len(lines) else None


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _shorten(text: str) -> str:
    if len(text) <= MAX_LABEL:
        return text
    keep = (MAX_LABEL - 3) // 2
    return f"{text[:keep]} … {text[-keep:]}"


def _type_text(t: Attribute) -> str:
    if not isinstance(t, TensorType):
        return str(t)
    from tdsl.dialects.structured import numpy_dtype
    from tdsl.dtypes import type_str

    tensor = cast(TensorType[Any], t)
    return type_str(numpy_dtype(tensor.element_type), tensor.get_shape())


def _mlir_text(line: str) -> str:
    """``%2 = tensordsl.add %1, %b`` from an MLIR line: the op without its types."""
    text = line.strip()
    cut = text.find(" : ")
    return text if cut < 0 else text[:cut]


class _Renderer:
    def __init__(self, report: FusionReport, locate: Locator | None, sources: _Sources) -> None:
        self.report = report
        self.locate = locate
        self.sources = sources
        self.lines: list[str] = []
        self.ids: dict[Operation, str] = {}
        self.analysed: dict[Operation, Operation] = {v: k for k, v in report.originals.items()}

    # -- labels ----------------------------------------------------------------

    def source_text(self, op: Operation) -> str | None:
        original = self.report.originals.get(op, op)
        where = self.locate(original) if self.locate is not None else None
        where = where or op_location(original)
        if where is None:
            return None
        snippet = self.sources.snippet(where)
        if snippet is not None:
            return snippet
        line = self.sources.line(where)
        return None if line is None else _mlir_text(line)

    def op_label(self, op: Operation, note: str = "") -> str:
        text = self.source_text(op)
        hint = op.results[0].name_hint if len(op.results) == 1 else None
        if text is not None and hint and not text.startswith(("%", hint)):
            text = f"{hint} = {text}"
        result = ", ".join(_type_text(r.type) for r in op.results)
        lines = [_shorten(text)] if text else []
        lines.append(f"{op.name} → {result}" if result else op.name)
        if note:
            lines.append(note)
        return "\n".join(lines)

    # -- the graph -------------------------------------------------------------

    def render(self) -> str:
        out = self.lines
        out.append("digraph tdsl {")
        out.append('  graph [rankdir=TB, fontname="Helvetica", fontsize=11, labeljust=l];')
        out.append('  node [shape=box, style="rounded", fontname="Helvetica", fontsize=10];')
        out.append('  edge [fontname="Helvetica", fontsize=9];')
        for index, plan_fn in enumerate(self._functions()):
            self.function(index, *plan_fn)
        out.append("}")
        return "\n".join(out) + "\n"

    def _functions(self) -> list[tuple[func.FuncOp, list[FusionGroup], list[UnfusedEdge]]]:
        by_function: dict[str, tuple[list[FusionGroup], list[UnfusedEdge]]] = {}
        for plan in self.report.plans:
            groups, edges = by_function.setdefault(plan.function, ([], []))
            groups.extend(plan.groups)
            edges.extend(plan.unfused)
        found: list[tuple[func.FuncOp, list[FusionGroup], list[UnfusedEdge]]] = []
        for op in self.report.root.walk():
            if isinstance(op, func.FuncOp) and not op.is_declaration:
                groups, edges = by_function.get(op.sym_name.data, ([], []))
                found.append((op, groups, edges))
        return found

    def recomputed(self, group: FusionGroup) -> set[Operation]:
        """The group's ops a tiled schedule computes again in a later pass."""
        again: set[Operation] = set()
        recorded = self.report.recorded_tiles(group)
        if recorded:
            for tile_op in recorded:
                for op in tile_op.schedule().recomputed:
                    analysed = self.analysed.get(op)
                    if analysed is not None:
                        again.add(analysed)
            return again
        tiling = choose_tiles(group.space, self.report.memory_budget)
        return set(tiling.schedule.recomputed) if tiling is not None else set()

    def function(
        self,
        index: int,
        fn: func.FuncOp,
        groups: list[FusionGroup],
        edges: list[UnfusedEdge],
    ) -> None:
        out = self.lines
        prefix = f"f{index}"
        name = fn.sym_name.data
        out.append(f"  subgraph cluster_{prefix} {{")
        out.append(f"    label={_quote('@' + name)}; style=dashed; color=gray60;")
        block = fn.body.blocks.first
        if block is None:
            raise TdslIRError(f"'func.func' @{name} has no body to draw", op=fn)
        for i, arg in enumerate(block.args):
            hint = arg.name_hint or f"arg{i}"
            label = f"{hint}: {_type_text(arg.type)}"
            out.append(f"    {prefix}_arg{i} [label={_quote(label)}, shape=ellipse];")
        member: dict[Operation, FusionGroup] = {op: g for g in groups for op in g.ops}
        counter = 0

        def node_id(op: Operation) -> str:
            nonlocal counter
            if op not in self.ids:
                self.ids[op] = f"{prefix}_op{counter}"
                counter += 1
            return self.ids[op]

        dead = {op for plan in self.report.plans if plan.function == name for op in plan.dead}
        for g_index, group in enumerate(groups):
            again = self.recomputed(group)
            scratch = plural(group.min_scratch, "element")
            label = f"{group.name}: {plural(len(group.ops), 'op')}\n{self.report.tiling(group)}"
            label += f"\n(smallest tile scratch: {scratch})"
            out.append(f"    subgraph cluster_{prefix}_g{g_index} {{")
            out.append(
                f'      label={_quote(label)}; style=rounded; color=steelblue; bgcolor="#eef4fb";'
            )
            for op in group.ops:
                note = "recomputed in a later pass" if op in again else ""
                style = ', style="rounded,dashed"' if op in again else ""
                out.append(f"      {node_id(op)} [label={_quote(self.op_label(op, note))}{style}];")
            out.append("    }")
        returned: list[SSAValue] = []
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                returned.extend(op.arguments)
                continue
            if op in member:
                continue
            style = ', style="rounded,dotted"' if op in dead else ", shape=note"
            note = "erased: nothing uses it" if op in dead else ""
            out.append(f"    {node_id(op)} [label={_quote(self.op_label(op, note))}{style}];")
        out.append(f"    {prefix}_return [label={_quote('return')}, shape=ellipse];")
        out.append("  }")

        reasons = {(e.producer, e.consumer, e.operand): e.reason for e in edges}
        for op in [o for g in groups for o in g.ops] + [
            o for o in block.ops if o not in member and not isinstance(o, func.ReturnOp)
        ]:
            for operand_index, value in enumerate(op.operands):
                self.edge(prefix, value, node_id(op), op, operand_index, member, reasons)
        for value in returned:
            source = self.source_of(prefix, value)
            label = f"result {_type_text(value.type)}"
            out.append(f"  {source} -> {prefix}_return [label={_quote(label)}, penwidth=2];")

    def source_of(self, prefix: str, value: SSAValue) -> str:
        if isinstance(value, BlockArgument):
            return f"{prefix}_arg{value.index}"
        return self.ids[cast(Operation, value.owner)]

    def edge(
        self,
        prefix: str,
        value: SSAValue,
        target: str,
        consumer: Operation,
        operand: int,
        member: Mapping[Operation, FusionGroup],
        reasons: Mapping[tuple[Operation, Operation, int], str],
    ) -> None:
        source = self.source_of(prefix, value)
        producer = value.owner if isinstance(value.owner, Operation) else None
        reason = reasons.get((producer, consumer, operand)) if producer is not None else None
        crosses = (
            producer is not None
            and producer in member
            and consumer in member
            and member[producer] is not member[consumer]
        )
        if reason is None and not crosses:
            self.lines.append(f"  {source} -> {target};")
            return
        elements = math.prod(cast(TensorType[Any], value.type).get_shape())
        label = f"materialized {_type_text(value.type)} ({plural(elements, 'element')})"
        label += f":\n{reason}" if reason else ""
        self.lines.append(
            f"  {source} -> {target} [label={_quote(label)}, color=firebrick, "
            "fontcolor=firebrick, penwidth=2];"
        )


__all__ = ["DotTarget", "render_dot"]
