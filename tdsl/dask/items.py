"""What a group's Dask plan is made of: the :class:`Step` and :class:`Reduction` items
:func:`tdsl.dask.plan.plan_tile` gives and :mod:`tdsl.dask.graph` turns into layers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.ir import SSAValue

from tdsl.dialects.kernel_plan import Dims

Chunks = tuple[tuple[int, ...], ...]
"""Per axis of an array, the sizes of its chunks (Dask's ``.chunks``)."""

ChunksOf = Callable[[SSAValue], Chunks | None]
"""The chunks of a value the group reads (None: an in-memory array, chunked as needed)."""


@dataclass(frozen=True)
class Read:
    """A value a step's kernel takes, block by block."""

    value: SSAValue
    """The value read (a group input, or a value an earlier step or reduction made)."""
    dims: Dims
    """Per axis: the space dim whose block index selects the block (None: extent 1)."""
    chunks: Chunks
    """The chunks the value must have for this read (it is rechunked if it has others)."""


@dataclass(frozen=True)
class Made:
    """A value a step's kernel returns, block by block: a value, or an op's partials."""

    value: SSAValue
    """The value; for partials, the result of the accumulating op."""
    dims: Dims
    """Per axis: the space dim whose block index places the block (None: one block)."""
    chunks: Chunks
    partial: bool = False
    """Partial results of ``value``'s op, one per block of its reduced dims (extent 1)."""
    dtype: str = ""
    """The blocks' dtype (a partial's is its op's accumulator's)."""


@dataclass(frozen=True)
class Step:
    """One layer of tasks: a tdsl kernel run on every block of a grid of space dims."""

    name: str
    """``g0``, ``g1_pass1``, ``g2.0_stage0``: the group, and the step of its schedule."""
    grid: tuple[tuple[int, int], ...]
    """(space dim, number of blocks) per cut dim the step iterates, outermost first."""
    source: str
    """The kernel: a ``func.func @main`` of tensordsl IR, typed for the first block."""
    reads: tuple[Read, ...]
    """The kernel's arguments, in order."""
    made: tuple[Made, ...]
    """The kernel's results, in order."""


@dataclass(frozen=True)
class Reduction:
    """A tree reduction of an op's partials across the blocks of its cut reduction dims."""

    name: str
    """``g1_pass1_max``: the group, the pass and the op."""
    value: SSAValue
    """The accumulating op's result, final after the reduction."""
    axes: tuple[int, ...]
    """The axes of the partials combined across blocks."""
    combine: str
    """A kernel combining concatenated partials (tensordsl IR)."""
    aggregate: str
    """A kernel combining the last partials and computing the result from them."""
    squeeze: tuple[int, ...]
    """Axes of extent 1 the op's result does not have (dropped at the end)."""
    chunks: Chunks
    """The chunks of the result."""


Item = Step | Reduction


@dataclass
class GroupPlan:
    """The steps and reductions of a group, in order; what it produces."""

    name: str
    items: list[Item] = field(default_factory=list[Item])
    produced: dict[SSAValue, Chunks] = field(default_factory=dict[SSAValue, Chunks])
    """Every value an item produces (the group's results among them), with its chunks."""
    decomposed: bool = False
    """Whether row-normalizing ops run as their decomposition (their rows are cut)."""
    parts: int = 1
    recorded: bool = False
    """Whether the steps are the plan the group's ``kernel.tile`` records (its sweeps and
    staged values): see :func:`plan_tile`."""


__all__ = ["Chunks", "ChunksOf", "GroupPlan", "Item", "Made", "Read", "Reduction", "Step"]
