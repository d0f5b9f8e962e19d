"""How the dimensions of the values in a group follow its tile loop.

Every value computed in a group body has a :data:`Layout`: per dimension, an
:class:`Axis` giving its full extent and the iteration dimension it runs along
(``None``: the dimension is taken whole by every tile).  Block arguments get
their layouts from the ``kernel.tile`` maps; values computed inside propagate
them the way NumPy propagates shapes.  A :class:`Tiling` then turns layouts
into the concrete shapes of a full tile and into the slicing expressions of
the generated loop.

Propagation also records *pinned* iteration dimensions: dimensions that a
reduction, softmax or matmul contracts over, or that meet a whole (non-1)
extent in a broadcast.  Cutting such a dimension into tiles would change the
result, so the target never tiles a pinned dimension more finely than the IR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tdsl.errors import TdslIRError


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


def from_map(shape: Sequence[int], dims: Sequence[int | None]) -> Layout:
    """The layout of an operand whose ``kernel.tile`` map gives ``dims``."""
    return tuple(Axis(n, d) for n, d in zip(shape, dims, strict=True))


def _broadcast_axis(x: Axis, y: Axis, pinned: set[int]) -> Axis:
    if x.dim is not None and y.dim is not None:
        if x.dim != y.dim:
            raise TdslIRError(
                f"numpy target: operands run along different iteration dims d{x.dim} and "
                f"d{y.dim} in one broadcast"
            )
        return x
    if x.dim is not None or y.dim is not None:
        tiled, other = (x, y) if x.dim is not None else (y, x)
        assert tiled.dim is not None
        if other.extent != 1:
            pinned.add(tiled.dim)
        return tiled
    return y if x.extent == 1 else x


def broadcast(a: Layout, b: Layout, pinned: set[int]) -> Layout:
    """The layout of a NumPy broadcast of ``a`` and ``b``."""
    rank = max(len(a), len(b))
    pa = (Axis(1),) * (rank - len(a)) + a
    pb = (Axis(1),) * (rank - len(b)) + b
    return tuple(_broadcast_axis(x, y, pinned) for x, y in zip(pa, pb, strict=True))


def matmul(a: Layout, b: Layout, pinned: set[int]) -> Layout:
    """The layout of ``np.matmul(a, b)``; the contracted dims are pinned."""
    pa = (Axis(1), *a) if len(a) == 1 else a
    pb = (*b, Axis(1)) if len(b) == 1 else b
    for ax in (pa[-1], pb[-2]):
        if ax.dim is not None:
            pinned.add(ax.dim)
    out = [*broadcast(pa[:-2], pb[:-2], pinned), pa[-2], pb[-1]]
    if len(a) == 1:
        del out[-2]
    if len(b) == 1:
        del out[-1]
    return tuple(out)


def reduce(a: Layout, axis: int | None, keepdims: bool, pinned: set[int]) -> Layout:
    """The layout after reducing ``axis`` (``None``: all); the reduced dims are pinned."""
    axes = range(len(a)) if axis is None else (axis,)
    for i in axes:
        d = a[i].dim
        if d is not None:
            pinned.add(d)
    if keepdims:
        return tuple(Axis(1) if i in axes else ax for i, ax in enumerate(a))
    return tuple(ax for i, ax in enumerate(a) if i not in axes)


def pin_axis(a: Layout, axis: int, pinned: set[int]) -> None:
    """Pin the iteration dim (if any) that ``a``'s ``axis`` follows."""
    d = a[axis].dim
    if d is not None:
        pinned.add(d)


def transpose(a: Layout) -> Layout:
    """The layout of ``np.transpose(a)`` (axes reversed)."""
    return tuple(reversed(a))


def full_size(layout: Layout) -> int:
    """The number of elements of the whole value."""
    size = 1
    for ax in layout:
        size *= ax.extent
    return size


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

    def full_elements(self, layout: Layout) -> int:
        size = 1
        for n in self.full_shape(layout):
            size *= n
        return size

    def window(self, name: str, layout: Layout) -> str:
        """``name`` sliced to the current tile (``A[s0:e0]``), for inputs and outputs."""
        parts = [
            f"s{ax.dim}:e{ax.dim}" if ax.dim is not None and ax.dim in self.looped else ":"
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

    def shrinks(self, layout: Layout) -> bool:
        """Whether a full-tile buffer of this layout must be cut on a remainder tile."""
        return any(ax.dim is not None and self.has_remainder(ax.dim) for ax in layout)


def _subscript(name: str, parts: list[str]) -> str:
    while parts and parts[-1] == ":":
        parts.pop()
    if not parts:
        return name
    return f"{name}[{', '.join(parts)}]"
