"""Loop spaces of the structured ops: the iterator types of loop dims, the affine
indexing maps from loop dims to a value's dims (broadcast dims included), how partial
results combine (:class:`Combiner`) and the state of a reduction with a tuple
accumulator (:class:`Accumulator`), and the ``Workspace`` and ``ScalarOpBuilder`` type
aliases.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from xdsl.dialects.builtin import AffineMapAttr
from xdsl.ir import Operation
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineMap


class IteratorType(StrEnum):
    """The kind of a loop dimension."""

    PARALLEL = "parallel"
    """Every point is independent: tiles along it never meet."""
    REDUCTION = "reduction"
    """Combined away: results do not run along it; tiles along it accumulate."""
    NORMALIZE = "normalize"
    """Results run along it, but each depends on the whole row (softmax's axis): a tile
    along it takes the whole row, or the op is decomposed into passes over the row."""
    SCAN = "scan"
    """Results run along it, each combining the elements before it (``cumsum``'s axis):
    tiles along it run in order, carrying the running value of each row from one tile
    to the next (:class:`~tdsl.dialects.op_interfaces.Scan`)."""


def dims_map(num_loops: int, dims: Sequence[int | None]) -> AffineMap:
    """The map whose result ``j`` is ``d<dims[j]>``, or the constant 0 where ``dims[j]`` is None."""
    return _dims_map(num_loops, tuple(dims))


@functools.lru_cache(maxsize=1024)
def _dims_map(num_loops: int, dims: tuple[int | None, ...]) -> AffineMap:
    # ops ask for their maps again and again; an AffineMap is immutable
    return AffineMap(
        num_loops,
        0,
        tuple(AffineConstantExpr(0) if d is None else AffineDimExpr(d) for d in dims),
    )


def map_dims(amap: AffineMap | AffineMapAttr) -> tuple[int | None, ...]:
    """Per result of ``amap``: the loop dim it is, or None for the constant 0.

    Raises ``ValueError`` for any other expression (tdsl's maps are projections).
    """
    if isinstance(amap, AffineMapAttr):
        amap = amap.data
    out: list[int | None] = []
    for expr in amap.results:
        if isinstance(expr, AffineDimExpr):
            out.append(expr.position)
        elif isinstance(expr, AffineConstantExpr) and expr.value == 0:
            out.append(None)
        else:
            raise ValueError(f"unsupported tile map result {expr} in {amap}: expected d<i> or 0")
    return tuple(out)


def broadcast_dims(operand: Sequence[int], result: Sequence[int]) -> tuple[int | None, ...]:
    """The loop dims (the result's dims) an operand broadcast to ``result`` reads, right-aligned."""
    offset = len(result) - len(operand)
    return tuple(
        None if extent == 1 and result[offset + k] != 1 else offset + k
        for k, extent in enumerate(operand)
    )


@dataclass(frozen=True)
class Combiner:
    """How partial results over tiles of a reduction dim merge."""

    ufunc: str
    """The NumPy ufunc merging two partials (``add``, ``maximum``, ``minimum``, ``multiply``)."""
    identity: float
    """The partial of no elements (the accumulator's start)."""


@dataclass(frozen=True)
class Accumulator:
    """The state a reduction carries over its ``reduction`` dims: one component or several
    (a tuple accumulator), each an array of the result's shape.

    ``logsumexp`` carries a running maximum and a sum of exponentials rescaled to it;
    argmax would carry a value and an index, Welford's variance a count, a mean and a
    sum of squares.  Each component starts at its identity; the reduction's
    :meth:`~StructuredOpInterface.scalar_accumulate` takes one element into the state,
    :meth:`~StructuredOpInterface.scalar_merge` combines two states (the combiner region:
    partials over tiles), and :meth:`~StructuredOpInterface.scalar_finalize_state` makes
    the result element from it."""

    dtypes: tuple[np.dtype[Any], ...]
    """Each component's dtype."""
    identities: tuple[float, ...]
    """Each component's start: the state of no elements."""
    per_row: tuple[bool, ...] = ()
    """Per component, whether it is one value per row of the result (the same along its
    last dim, as ``softmax_matmul``'s running maximum and sum are): its buffers in a
    target may then have the result's shape with the last dim 1.  Missing: False.  The
    first component is never one (a target may finalize the result into it)."""

    @property
    def size(self) -> int:
        """How many components the state has."""
        return len(self.dtypes)

    def shape(self, component: int, result: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of a component's buffer for a result (tile) of shape ``result``."""
        if component < len(self.per_row) and self.per_row[component] and result:
            return (*result[:-1], 1)
        return result


Workspace = tuple[tuple[int, ...], np.dtype[Any]]
"""A scratch buffer an op's NumPy lowering needs besides its results: shape and dtype.
Its shape lines up with the result's tile (right-aligned, each dim the result's or 1),
unless it is an :class:`OperandWorkspace`."""


class OperandWorkspace(tuple[tuple[int, ...], np.dtype[Any]]):
    """A :data:`Workspace` of the shape of operand ``operand``'s tile, laid out as that
    operand (a reduction's element-wise step over its operand: ``logsumexp``'s ``exp``).
    Said, not guessed from shapes: a tile of the scores of ``softmax_matmul`` can have the
    shape of its result's tile (as many keys in a tile as the head has columns) and still
    run along other dims."""

    operand: int

    def __new__(cls, shape: tuple[int, ...], dtype: np.dtype[Any], operand: int = 0):
        self = super().__new__(cls, (shape, dtype))
        self.operand = operand
        return self


ScalarOpBuilder = Callable[..., Operation]
"""A scalar op class used as a builder: ``arith.AddfOp(a, b)``, ``math.ExpOp(x)``."""
