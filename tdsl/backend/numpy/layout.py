"""How the dimensions of the values in a group follow its tile loops.

Every value of a group has a :data:`Layout`: per dimension, an :class:`Axis`
giving its full extent and the iteration dimension it runs along (``None``:
every tile takes the dimension whole).  The dims come from the group's
iteration space (:class:`~tdsl.dialects.kernel_plan.GroupBody`), so nothing
here knows any op.  A :class:`Tiling` turns layouts into the shapes of a full
tile and into the slicing expressions of the generated loops.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Axis:
    """One dimension of a value: its full extent and the iteration dim it follows."""

    extent: int
    dim: int | None = None


Layout = tuple[Axis, ...]
"""Per dimension of a value, the :class:`Axis` it is."""


def whole(shape: Sequence[int]) -> Layout:
    """The layout of a value every tile takes whole."""
    return tuple(Axis(n) for n in shape)


@dataclass(frozen=True)
class Tiling:
    """The tile sizes a group actually runs with, and the loop variables they use.

    A dim is *looped* when its tile is smaller than its extent; the generated
    loop over it binds ``s<d>`` (tile start), ``e<d>`` (tile end) and, when the
    last tile can be smaller, ``n<d>`` (the current tile's extent).
    """

    space: tuple[int, ...]
    tiles: tuple[int, ...]

    @property
    def looped(self) -> tuple[int, ...]:
        """The iteration dims the loop runs over, outermost first."""
        return tuple(
            d for d, (n, t) in enumerate(zip(self.space, self.tiles, strict=True)) if t < n
        )

    def has_remainder(self, d: int) -> bool:
        """Whether the last tile along looped dim ``d`` is smaller than the others."""
        return self.tiles[d] < self.space[d] and self.space[d] % self.tiles[d] != 0

    def full_shape(self, layout: Layout) -> tuple[int, ...]:
        """The shape of a value's slice in a full tile."""
        return tuple(
            min(self.tiles[ax.dim], ax.extent) if ax.dim is not None else ax.extent for ax in layout
        )

    def window(self, name: str, layout: Layout, scope: Collection[int] | None = None) -> str:
        """``name`` sliced to the current tile (``A[s0:e0]``), for inputs and outputs.

        Only the looped dims in ``scope`` (default: all) are sliced: code that
        runs once per parallel tile takes the reduction dims whole.
        """
        parts = [
            f"s{ax.dim}:e{ax.dim}"
            if ax.dim is not None and ax.dim in self.looped and (scope is None or ax.dim in scope)
            else ":"
            for ax in layout
        ]
        return _subscript(name, parts)

    def staged_window(
        self, name: str, layout: Layout, scope: Collection[int], reduction_loops: Collection[int]
    ) -> str:
        """``name``, a staged value's rows (whole along ``reduction_loops``), sliced to the
        current tile: along the bound reduction dims by the tile's start and end
        (``t1s[:, s1:e1]``), along the parallel ones to a remainder tile's extent."""
        parts = [
            f"s{ax.dim}:e{ax.dim}"
            if ax.dim is not None and ax.dim in reduction_loops and ax.dim in scope
            else f":n{ax.dim}"
            if ax.dim is not None and ax.dim not in reduction_loops and self.has_remainder(ax.dim)
            else ":"
            for ax in layout
        ]
        return _subscript(name, parts)

    def prefix(self, name: str, layout: Layout) -> str:
        """A full-tile buffer cut to a remainder tile (``t0[:n0]``)."""
        parts = [
            f":n{ax.dim}" if ax.dim is not None and self.has_remainder(ax.dim) else ":"
            for ax in layout
        ]
        return _subscript(name, parts)

    def remainder_dims(self, layout: Layout) -> frozenset[int]:
        """The looped dims with a remainder tile that ``layout`` runs along."""
        return frozenset(
            ax.dim for ax in layout if ax.dim is not None and self.has_remainder(ax.dim)
        )


def _subscript(name: str, parts: list[str]) -> str:
    while parts and parts[-1] == ":":
        parts.pop()
    if not parts:
        return name
    return f"{name}[{', '.join(parts)}]"
