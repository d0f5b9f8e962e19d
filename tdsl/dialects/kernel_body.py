"""The body of a fusion group as the planners see it (:class:`GroupBody`): its ops in
order, the space dim each dim of each value runs along (:func:`propagate_dims`), what
each op reads, and the iterator kind each space dim gets from the ops that use it
(:func:`derived_kinds`); with :class:`PlanError`, raised for a group that cannot run
with the given tiles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue

from tdsl.dialects.structured import (
    Contraction,
    IteratorType,
    StructuredOpInterface,
    is_constant,
    map_dims,
    structured,
    tensor_shape,
)

if TYPE_CHECKING:
    from tdsl.dialects.kernel_schedule import TileSchedule


Dims = tuple[int | None, ...]
"""Per dim of a value: the space dim it runs along, or None when every tile takes it whole."""


class PlanError(Exception):
    """A group that cannot run with the given tiles; the message says why."""


@dataclass(frozen=True)
class GroupBody:
    """A group's ops and the dims of every value in its iteration space."""

    extents: tuple[int, ...]
    """The extent of each space dim."""
    kinds: tuple[IteratorType, ...]
    """``parallel``, ``reduction``, ``normalize`` or ``scan``, per space dim (see
    :func:`derived_kinds`)."""
    ops: tuple[Operation, ...]
    """The structured ops, in program order (constants excluded)."""
    dims: Mapping[SSAValue, Dims]
    """The dims of every value an op computes, and of every input value read with one map."""
    reads: Mapping[tuple[Operation, int], Dims]
    """The dims each operand of each op is read with."""
    outputs: tuple[SSAValue, ...]
    """The values the group yields, in order (a value may repeat, or be an input)."""
    output_dims: tuple[Dims, ...]
    """The dims of each yielded value in its output."""
    constants: frozenset[SSAValue] = frozenset()
    """Values that are compile-time constants (literals in generated code)."""
    prefer_whole: frozenset[int] = frozenset()
    """Space dims tiling should cut last (a matmul's columns and contraction)."""
    known_loop_dims: Mapping[Operation, tuple[int | None, ...]] = field(
        default_factory=dict[Operation, tuple[int | None, ...]], repr=False, compare=False
    )
    """Ops' loop dims already found (by :func:`propagate_dims`), else computed on demand."""
    members: frozenset[Operation] = field(init=False, repr=False, compare=False)
    position: Mapping[Operation, int] = field(init=False, repr=False, compare=False)
    """Each op's index in ``ops``."""
    # what the planners ask of every op and value many times: computed once per body
    _loop_dims: dict[Operation, tuple[int | None, ...]] = field(
        init=False, repr=False, compare=False
    )
    _value_shapes: dict[SSAValue, tuple[int, ...]] = field(init=False, repr=False, compare=False)
    _schedules: dict[tuple[object, ...], TileSchedule | PlanError] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", frozenset(self.ops))
        object.__setattr__(self, "position", {op: i for i, op in enumerate(self.ops)})
        object.__setattr__(self, "_loop_dims", dict(self.known_loop_dims))
        object.__setattr__(self, "_value_shapes", {})
        object.__setattr__(self, "_schedules", {})

    @property
    def rank(self) -> int:
        return len(self.extents)

    def is_reduction(self, d: int) -> bool:
        """Whether ``d`` is tiled as a reduction dim (any kind but ``parallel``): its tiles
        are the loop of the passes, not independent outer tiles."""
        return self.kinds[d] is not IteratorType.PARALLEL

    def shape(
        self, value: SSAValue, tiles: Sequence[int], dims: Dims | None = None
    ) -> tuple[int, ...]:
        """The shape of ``value``'s slice in a full tile of sizes ``tiles``."""
        dims = self.dims[value] if dims is None else dims
        extents = self.extents
        return tuple(
            [
                extent if d is None else min(tiles[d], extents[d])
                for extent, d in zip(self.value_shape(value), dims, strict=True)
            ]
        )

    def value_shape(self, value: SSAValue) -> tuple[int, ...]:
        """The full shape of ``value``."""
        shape = self._value_shapes.get(value)
        if shape is None:
            shape = self._value_shapes[value] = tensor_shape(value)
        return shape

    def producer(self, value: SSAValue) -> Operation | None:
        """The op of the group computing ``value``, if any."""
        owner = value.owner
        return owner if isinstance(owner, Operation) and owner in self.members else None

    def count(self, op: Operation) -> int:
        """How many elements each result element of an accumulating ``op`` combines:
        the full extents of its reduction dims, not a tile's (a mean divides by it)."""
        s = require_structured(op)
        loops = s.loop_extents()
        total = 1
        for loop, (d, kind) in enumerate(zip(self.loop_dims(op), s.iterator_types(), strict=True)):
            if kind is IteratorType.REDUCTION:
                total *= self.extents[d] if d is not None else loops[loop]
        return total

    def loop_dims(self, op: Operation) -> tuple[int | None, ...]:
        """The space dim each loop dim of ``op`` runs along (None: taken whole)."""
        found = self._loop_dims.get(op)
        if found is None:
            found = self._loop_dims[op] = self._find_loop_dims(op)
        return found

    def _find_loop_dims(self, op: Operation) -> tuple[int | None, ...]:
        s = require_structured(op)
        maps = s.indexing_maps()
        found: list[int | None] = [None] * len(s.loop_extents())
        values: list[Dims] = [self.reads[(op, i)] for i in range(len(op.operands))]
        values += [self.dims[r] for r in op.results]
        for amap, dims in zip(maps, values, strict=True):
            for loop, d in zip(map_dims(amap), dims, strict=True):
                if loop is not None and d is not None:
                    found[loop] = d
        return tuple(found)


def require_structured(op: Operation) -> StructuredOpInterface:
    s = structured(op)
    if s is None:
        raise PlanError(f"'{op.name}' does not implement the structured-op interface")
    return s


def is_recomputable(op: Operation) -> bool:
    """Whether a later pass may compute ``op`` again rather than keep its result (not a
    :class:`~tdsl.dialects.op_interfaces.Contraction` that says it is never recomputed)."""
    return not isinstance(op, Contraction) or op.recomputable()


def derived_kinds(body: GroupBody) -> tuple[IteratorType, ...]:
    """The kind of each space dim of ``body`` (its recorded kinds aside): ``reduction``
    where an op reduces along it, else ``normalize`` where an op normalizes along it
    (``softmax``: its rows are whole, or the op is decomposed), else ``scan`` where an op
    scans along it (tiles along it run in order, carrying running values), else
    ``parallel``.  Every kind but ``parallel`` is looped by the passes."""
    rank = {
        IteratorType.PARALLEL: 0,
        IteratorType.SCAN: 1,
        IteratorType.NORMALIZE: 2,
        IteratorType.REDUCTION: 3,
    }
    kinds = [IteratorType.PARALLEL] * len(body.extents)
    for op in body.ops:
        s = structured(op)
        if s is None:
            continue
        for d, kind in zip(body.loop_dims(op), s.iterator_types(), strict=True):
            if d is not None and rank[kind] > rank[kinds[d]]:
                kinds[d] = kind
    return tuple(kinds)


def propagate_dims(
    ops: Sequence[Operation],
    inputs: Mapping[SSAValue, Dims],
    rank: int,
    loop_dims: dict[Operation, tuple[int | None, ...]] | None = None,
) -> dict[SSAValue, Dims]:
    """The dims of every value ``ops`` compute, from the dims of the values they read.

    Each op's loop dims take the space dims of the operand dims they index;
    its results take them through the result maps.  Raises :class:`PlanError`
    when two operands put one loop dim on two space dims.  ``loop_dims``, when
    given, receives each op's loop dims (what :meth:`GroupBody.loop_dims` says).
    """
    dims: dict[SSAValue, Dims] = dict(inputs)
    for op in ops:
        if is_constant(op):
            for r in op.results:
                dims[r] = (None,) * len(tensor_shape(r))
            continue
        s = require_structured(op)
        maps = s.indexing_maps()
        loops: list[int | None] = [None] * len(s.loop_extents())
        for i, (operand, amap) in enumerate(zip(op.operands, maps, strict=False)):
            known = dims.get(operand)
            if known is None:
                raise PlanError(f"operand #{i} of '{op.name}' is not available in the group")
            for loop, d in zip(map_dims(amap), known, strict=True):
                if loop is None or d is None:
                    continue
                if loops[loop] is not None and loops[loop] != d:
                    raise PlanError(
                        f"'{op.name}' reads loop dim {loop} along space dims d{loops[loop]} and "
                        f"d{d}: its operands do not run along one iteration space"
                    )
                loops[loop] = d
        for r, amap in zip(op.results, maps[len(op.operands) :], strict=True):
            dims[r] = tuple(None if loop is None else loops[loop] for loop in map_dims(amap))
        if loop_dims is not None:
            loop_dims[op] = tuple(loops)
    return dims


def body_state(op: Operation) -> tuple[object, ...]:
    """What a :class:`GroupBody` made from ``op`` (a group op) depends on: its properties
    and attributes, its block's argument types, and each op of its body with its operands,
    result types, properties and attributes.  Two states compare item by item, identity
    first, so an unchanged op compares at once; any edit of the body changes it."""
    key: list[object] = [*op.properties.values(), *op.attributes.values()]
    key += [a.type for a in op.regions[0].block.args]
    for inner in op.regions[0].block.ops:
        key += (inner, *inner.operands, *(r.type for r in inner.results))
        key += (*inner.properties.items(), *inner.attributes.items())
    return tuple(key)
