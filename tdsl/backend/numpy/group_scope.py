"""The scope and emission helpers of the numpy target's group code: the Python
expression of each var at one point of the code (``_Scope``), the emission of
instructions in a scope, and the names bound once per tile (``_Windows``: views of
inputs and outputs) or once per group (``_Views``: scratch buffers, constant fills,
cuts); :mod:`tdsl.backend.numpy.group` uses them to write a group's code."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tdsl.backend.numpy.group_plan import ModuleState
from tdsl.backend.numpy.layout import Layout, Tiling
from tdsl.backend.numpy.program import Instr, Var
from tdsl.backend.numpy.source import Writer, shape_expr
from tdsl.errors import internal_error
from tdsl.ir_text import Names

ZERO_BLOCK_LIMIT = 1 << 20
"""Largest zero block (elements) kept for ``relu``; ``np.zeros`` maps it lazily to the zero page."""

FILL_BLOCK_LIMIT = 1 << 16
"""Largest non-zero constant block (elements) kept for ``maximum``/``minimum``."""


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
    staged_names: Callable[[Var, frozenset[int]], str] | None = None
    """A staged value's buffer sliced to the tile of the loop dims bound here."""

    def of(self, v: Var) -> str:
        if v.kind in ("input", "output"):
            base = self.inputs if v.kind == "input" else self.outputs
            expr = self.tiling.window(base[v.index], v.layout, self.scope)
            if self.windows is None:
                return expr
            return self.windows.use(self.level, expr, "o" if v.kind == "output" else "i")
        if v.kind == "buffer":
            return self.buffer_names(v.index, v.layout)
        if v.kind == "staged":
            if self.staged_names is None:
                raise internal_error("numpy target: a staged value outside a group's loops")
            return self.staged_names(v, self.scope)
        if v.kind == "const":
            return v.name
        if v.kind == "fill":
            return self.fill_names(v)
        if v.base is None:
            raise internal_error(f"numpy target: a value of kind '{v.kind}' with no base value")
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

    def staged(self, v: Var, scope: frozenset[int], reduction_loops: Collection[int]) -> str:
        """A staged value's buffer (whole along the tiled ``reduction_loops``) sliced to
        the current tile: along the bound reduction dims by the tile's start and end,
        along the parallel ones to a remainder tile's extent."""
        shape = tuple(
            ax.extent if ax.dim in reduction_loops else n
            for ax, n in zip(v.layout, self.tiling.full_shape(v.layout), strict=True)
        )
        key = ("staged", v.index, shape, tuple(ax.dim for ax in v.layout))
        name = self.full.get(key)
        if name is None:
            name = self.full[key] = self.names.fresh(f"{self.buffers[v.index]}_{len(self.full)}s")
            size = math.prod(shape)
            self.setup.append(
                f"{name} = {self.buffers[v.index]}[:{size}].reshape({shape_expr(shape)})"
            )
        return self.tiling.staged_window(name, v.layout, scope, reduction_loops)

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
