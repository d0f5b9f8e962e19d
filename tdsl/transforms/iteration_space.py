"""The iteration space of a group of ops: the one analysis ``tdsl-fuse`` and ``tdsl-tile`` share.

Every dimension of every value a group touches gets a *dimension variable*.
Each op unifies variables the way its structured-op interface says: its loop
dims are fresh variables, and each indexing map equates an operand's (or
result's) dims with the loop dims it names; a map result ``0`` (a broadcast
dim of extent 1) equates nothing.  Variables of extent 1 are dropped (nothing
to tile).  A loop dim an op reduces, normalizes or scans along marks its variable as
a *reduction* variable; one an op prefers whole (a matmul's columns and
contraction) is marked too.

The classes of unified variables are the group's *space dims*: ``reduction``
ones (some op reduces or normalizes along them), ``scan`` ones (some op scans
along them and none reduces: :func:`~tdsl.dialects.kernel_plan.derived_kinds`)
and ``parallel`` ones.  The
analysis reads only the interface: an op that does not implement it is an
error (:class:`NotStructured`), never an opaque op.

A value read from outside the group gets fresh variables at each read, so an
input may be read along several maps (``A @ A`` reads ``A`` by rows and
whole); a value computed inside has one set.  A group is *consistent* when no
value runs along one space dim with two of its dims (that would be a diagonal,
not a slice): ``exp(x) + transpose(exp(x))`` is not, since the computed
``exp(x)`` would need both layouts.

:class:`DimVars` keeps an undo log, so the fusion planner can try a merge and
roll it back; :func:`analyze` builds the :class:`~tdsl.dialects.kernel_plan.GroupBody`
of a set of ops (the space dims ordered like the dims of the group's largest
value, outermost first).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from tdsl.dialects.kernel_plan import Dims, GroupBody, derived_kinds
from tdsl.dialects.structured import (
    Contraction,
    IteratorType,
    StructuredOpInterface,
    fmt_shape,
    is_constant,
    map_dims,
    structured,
    tensor_shape,
)
from tdsl.errors import TdslIRError

VarDims = tuple[int | None, ...]
"""Per dim of a value: its variable, or None for an extent-1 dim."""


class NotStructured(TdslIRError):
    """An op the passes cannot reason about: it does not implement the interface."""


def require_structured(op: Operation) -> StructuredOpInterface:
    """``op`` as a structured op, or :class:`NotStructured` naming it."""
    s = structured(op)
    if s is None:
        raise NotStructured(
            f"'{op.name}' does not implement the structured-op interface, so tdsl cannot "
            "fuse, tile or emit it (see docs/adding-an-op.md)",
            op=op,
        )
    return s


class DimVars:
    """Union-find over dimension variables, with extents, kind marks and an undo log.

    No path compression (union by size keeps trees shallow), so that a
    tentative merge can be rolled back exactly.  ``on_union``, when set, is
    told of every union before it happens, as ``(kept root, absorbed root)``.
    """

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.size: list[int] = []
        self.extent: list[int] = []
        self.reduced: list[bool] = []
        self.prefer_whole: list[bool] = []
        self.why: list[Operation | None] = []
        """For a reduction root: an op that reduces or normalizes along it."""
        self._log: list[tuple[int, int, int, bool, bool, Operation | None]] = []
        self.on_union: Callable[[int, int], None] | None = None

    def new(self, extent: int) -> int:
        self.parent.append(len(self.parent))
        self.size.append(1)
        self.extent.append(extent)
        self.reduced.append(False)
        self.prefer_whole.append(False)
        self.why.append(None)
        return len(self.parent) - 1

    def fresh(self, shape: Sequence[int]) -> VarDims:
        """New variables for a value of ``shape`` (None for its extent-1 dims)."""
        return tuple(None if e == 1 else self.new(e) for e in shape)

    def find(self, v: int) -> int:
        while self.parent[v] != v:
            v = self.parent[v]
        return v

    def roots(self, dims: Iterable[int | None]) -> VarDims:
        return tuple([None if d is None else self.find(d) for d in dims])

    def _save(self, v: int) -> None:
        self._log.append(
            (v, self.parent[v], self.size[v], self.reduced[v], self.prefer_whole[v], self.why[v])
        )

    def unify(self, vs: Iterable[int | None]) -> int | None:
        """Make the given variables one; returns the root (None when all are None)."""
        roots = {self.find(v) for v in vs if v is not None}
        if not roots:
            return None
        first = max(roots, key=lambda r: (self.size[r], -r))
        for other in roots - {first}:
            if self.on_union is not None:
                self.on_union(first, other)
            self._save(other)
            self._save(first)
            self.parent[other] = first
            self.size[first] += self.size[other]
            if self.reduced[other] and not self.reduced[first]:
                self.reduced[first] = True
                self.why[first] = self.why[other]
            self.prefer_whole[first] = self.prefer_whole[first] or self.prefer_whole[other]
        return first

    def unify_dims(self, a: VarDims, b: VarDims) -> None:
        """Equate the dims of two reads of one value, dim by dim."""
        for x, y in zip(a, b, strict=True):
            self.unify((x, y))

    def mark(
        self, v: int | None, *, reduced: Operation | None = None, prefer: bool = False
    ) -> None:
        if v is None:
            return
        root = self.find(v)
        if (reduced is not None and not self.reduced[root]) or (
            prefer and not self.prefer_whole[root]
        ):
            self._save(root)
            if reduced is not None and not self.reduced[root]:
                self.reduced[root] = True
                self.why[root] = reduced
            if prefer:
                self.prefer_whole[root] = True

    def checkpoint(self) -> tuple[int, int]:
        return len(self.parent), len(self._log)

    def rollback(self, mark: tuple[int, int]) -> None:
        count, logged = mark
        while len(self._log) > logged:
            v, parent, size, reduced, prefer, why = self._log.pop()
            self.parent[v], self.size[v] = parent, size
            self.reduced[v], self.prefer_whole[v], self.why[v] = reduced, prefer, why
        for table in (
            self.parent,
            self.size,
            self.extent,
            self.reduced,
            self.prefer_whole,
            self.why,
        ):
            del table[count:]

    def commit(self) -> None:
        self._log.clear()

    def changed_since(self, mark: tuple[int, int]) -> dict[int, bool]:
        """The roots that unions or marks changed since ``mark``, each with whether it
        was a reduction root then."""
        changed: dict[int, bool] = {}
        for v, _, _, reduced, _, _ in self._log[mark[1] :]:
            changed.setdefault(v, reduced)
        return changed


def apply_op(dv: DimVars, op: Operation, operand_dims: Sequence[VarDims]) -> tuple[VarDims, ...]:
    """The dims of ``op``'s results given its operands' dims: the op's equations.

    Unifies what its indexing maps line up and marks its reduction, normalize
    and prefer-whole dims.  Constants get fresh variables.
    """
    if is_constant(op):
        return tuple(dv.fresh(tensor_shape(r)) for r in op.results)
    s = require_structured(op)
    extents = s.loop_extents()
    kinds = s.iterator_types()
    maps = s.indexing_maps()
    loops: list[int | None] = [None if e == 1 else dv.new(e) for e in extents]
    for dims, amap in zip(operand_dims, maps, strict=False):
        for loop, var in zip(map_dims(amap), dims, strict=True):
            if loop is not None:
                loops[loop] = dv.unify((loops[loop], var))
    for loop, kind in enumerate(kinds):
        if kind is not IteratorType.PARALLEL:
            dv.mark(loops[loop], reduced=op)
    for loop in op.prefer_whole_dims() if isinstance(op, Contraction) else ():
        dv.mark(loops[loop], prefer=True)
    results: list[VarDims] = []
    for amap in maps[len(op.operands) :]:
        results.append(tuple(None if loop is None else loops[loop] for loop in map_dims(amap)))
    return tuple(results)


def diagonal(dv: DimVars, dims: VarDims) -> bool:
    """Whether two dims of one value run along one variable."""
    if len(dims) < 2:
        return False
    roots = [d for d in dv.roots(dims) if d is not None]
    return len(set(roots)) < len(roots)


@dataclass(frozen=True)
class Inconsistent:
    """Why a set of ops cannot run over one iteration space."""

    reason: str
    value: SSAValue


def diagonal_reason(value: SSAValue) -> str:
    return (
        "inconsistent iteration space: two dimensions of a "
        f"{fmt_shape(tensor_shape(value))} value would run along one dimension of the group "
        "(a value needed in two layouts, e.g. with its transpose, or broadcast along its own "
        "dimension)"
    )


def analyze(
    ops: Sequence[Operation],
    outputs: Sequence[SSAValue],
    inputs: Sequence[SSAValue] | None = None,
) -> GroupBody | Inconsistent:
    """The iteration space of ``ops`` (program order) as one group yielding ``outputs``.

    Values the ops read but do not compute are inputs (``inputs`` gives their
    order, e.g. a ``kernel.fused`` body's arguments).  The ops reading an input
    share its variables where they can; where that makes the space
    inconsistent, the reads of that input keep variables of their own (so
    ``exp(A) + transpose(exp(A))``, with ``exp`` written twice, reads ``A``
    along both layouts).  Returns why not when no choice is consistent.
    """
    first = _analyze(ops, outputs, inputs, frozenset())
    if not isinstance(first, Inconsistent):
        return first
    read: dict[SSAValue, int] = {}
    produced = {r for op in ops for r in op.results}
    for op in ops:
        for v in dict.fromkeys(op.operands):
            if v not in produced:
                read[v] = read.get(v, 0) + 1
    shared = [v for v, n in read.items() if n > 1]
    for v in shared:
        found = _analyze(ops, outputs, inputs, frozenset([v]))
        if not isinstance(found, Inconsistent):
            return found
    if len(shared) > 1:
        found = _analyze(ops, outputs, inputs, frozenset(shared))
        if not isinstance(found, Inconsistent):
            return found
    return first


def _analyze(
    ops: Sequence[Operation],
    outputs: Sequence[SSAValue],
    inputs: Sequence[SSAValue] | None,
    separate: frozenset[SSAValue],
) -> GroupBody | Inconsistent:
    dv = DimVars()
    computed: dict[SSAValue, VarDims] = {}
    reads: dict[tuple[Operation, int], VarDims] = {}
    first_read: dict[SSAValue, VarDims] = {}
    structured_ops: list[Operation] = []
    constants: set[SSAValue] = set()
    for op in ops:
        # Reads of an input share its first read's variables, unless that would
        # make a diagonal (``A @ A`` reads A by rows and by columns): then this
        # op reads it along variables of its own.
        for shared in (True, False):
            mark = dv.checkpoint()
            operand_dims: list[VarDims] = []
            for v in op.operands:
                dims = computed.get(v)
                if dims is None:
                    known = None if v in separate else first_read.get(v)
                    dims = known if shared and known is not None else dv.fresh(tensor_shape(v))
                operand_dims.append(dims)
            results = apply_op(dv, op, operand_dims)
            if not shared or not any(diagonal(dv, d) for d in (*operand_dims, *results)):
                break
            dv.rollback(mark)
        for i, (v, dims) in enumerate(zip(op.operands, operand_dims, strict=True)):
            reads[(op, i)] = dims
            if v not in computed:
                first_read.setdefault(v, dims)
        for r, dims in zip(op.results, results, strict=True):
            computed[r] = dims
        if is_constant(op):
            constants.update(op.results)
        else:
            structured_ops.append(op)
    for value, dims in computed.items():
        if diagonal(dv, dims):
            return Inconsistent(diagonal_reason(value), value)
    for (op, i), dims in reads.items():
        if diagonal(dv, dims):
            return Inconsistent(diagonal_reason(op.operands[i]), op.operands[i])

    # space dims: the variables of the largest values first (outputs, then inputs)
    candidates: list[tuple[SSAValue, VarDims]] = [
        (v, computed[v]) for v in outputs if v in computed
    ]
    candidates += [(op.operands[i], dims) for (op, i), dims in reads.items()]
    candidates += [(v, dims) for v, dims in computed.items()]
    sizes: dict[SSAValue, int] = {}
    for v, _ in candidates:
        if v not in sizes:
            sizes[v] = math.prod(tensor_shape(v))
    ranked = sorted(
        range(len(candidates)),
        key=lambda k: (-sizes[candidates[k][0]], -len(candidates[k][1]), k),
    )
    order: dict[int, None] = {}
    for k in ranked:
        for d in dv.roots(candidates[k][1]):
            if d is not None:
                order.setdefault(d)
    # a contraction preferred whole (a matmul's) goes last: it is cut last, and
    # (m, n, k) reads like the matmul it is
    order = dict.fromkeys(
        [r for r in order if not (dv.reduced[r] and dv.prefer_whole[r])]
        + [r for r in order if dv.reduced[r] and dv.prefer_whole[r]]
    )
    index = {root: i for i, root in enumerate(order)}

    def space(dims: VarDims) -> Dims:
        return tuple(None if d is None else index[d] for d in dv.roots(dims))

    dims_of: dict[SSAValue, Dims] = {v: space(d) for v, d in computed.items()}
    read_dims = {key: space(d) for key, d in reads.items()}
    for (op, i), d in read_dims.items():
        v = op.operands[i]
        if v not in computed:
            dims_of.setdefault(v, d)
    output_dims: list[Dims] = []
    for v in outputs:
        if v in dims_of:
            output_dims.append(dims_of[v])
        else:  # yielded but never read in the group: an input passed through
            output_dims.append((None,) * len(tensor_shape(v)))
    roots = list(order)
    body = GroupBody(
        extents=tuple(dv.extent[r] for r in roots),
        kinds=tuple(
            IteratorType.REDUCTION if dv.reduced[r] else IteratorType.PARALLEL for r in roots
        ),
        ops=tuple(structured_ops),
        dims=dims_of,
        reads=read_dims,
        outputs=tuple(outputs),
        output_dims=tuple(output_dims),
        constants=frozenset(constants),
        prefer_whole=frozenset(index[r] for r in roots if dv.prefer_whole[r]),
    )
    kinds = derived_kinds(body)  # told apart: reduction or scan
    if kinds == body.kinds:
        return body
    return dataclasses.replace(
        body, kinds=kinds, known_loop_dims={op: body.loop_dims(op) for op in body.ops}
    )


__all__ = [
    "DimVars",
    "Inconsistent",
    "NotStructured",
    "VarDims",
    "analyze",
    "apply_op",
    "diagonal",
    "require_structured",
]
