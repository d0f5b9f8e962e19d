"""The fusion rules of ``tdsl-fuse``: which tensordsl ops run together, and why not.

This module decides; :mod:`tdsl.lowering.fuse` rewrites the IR and renders the
report.  Both the pass and the report call :func:`plan_block`, so the rules
exist once.

The model
---------

A fusion group is a set of ops that runs as one kernel over **one iteration
space**.  Every dimension of every value the group touches is a *dimension
variable*; ops equate variables the way their semantics line up the values:

* element-wise ops (unary, binary with NumPy broadcasting, cast) equate the
  result's dims with the operand dims of the same extent, right-aligned; a
  broadcast (extent-1) dim belongs to no variable;
* ``softmax`` keeps its operand's dims and a reduction drops (or, with
  ``keepdims``, turns to extent 1) the reduced one;
* ``matmul`` equates the batch dims and the rows of its left operand with
  those of the result, and the columns of its right operand with the result's.

Some variables must be **whole** in every tile: a softmax or reduction axis,
the contraction of a matmul, and the columns of a matmul (a matmul group is
tiled by rows of its left operand; its right operand is taken whole).  The
others are **tileable**: ``tdsl-tile`` may cut them.  A set of ops is a legal
group when

1. no value maps two of its dims to one variable: a value broadcast along a
   dimension of the group from a row-local result of the same group, or an
   input read whole by a matmul and by rows by another op, would need a
   diagonal of the space (``tdsl-tile`` could not tile that dimension);
2. a whole variable is the innermost dim of every value the group computes
   (row-local: a tile spans whole rows; a reduction over a dim the group tiles
   would need the other tiles);
3. every op's result spans every tileable variable (one iteration space: an op
   on a smaller space would be recomputed by every tile of a larger one);
4. a matmul's right operand is not computed in the group (it is materialized);
5. it holds no boundary op, unless it is that op alone: ``transpose``, a
   reduction or softmax over a non-innermost axis, a full reduction;
6. its smallest legal tile (extent 1 along every tileable dim) needs no more
   scratch than the memory budget, in ``tdsl-tile``'s own buffer model, unless
   it is one op (a lone op that does not fit is ``tdsl-tile``'s error to raise);
7. merging it creates no cycle between groups: no path leaves the group and
   comes back (checked by the planner, which sees the other groups).

Planning is greedy and deterministic, in program order: each op joins the
groups of its operands' producers (first operand first) when the union is
legal, else it records why not for each producer-consumer edge and keeps the
groups apart.  The dimension variables live in one union-find with an undo
log, and each group keeps only what the rules look at (its tileable
variables, its non-innermost variables, the variable pairs that must stay
apart, its inputs and outside users), so trying a merge costs little and
planning stays about linear in the number of ops.  Constants: a constant with at most one element is cloned into
each group that uses it (it costs nothing and keeps the group's inputs to the
tensors that matter); a larger constant stays outside and is a group input.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum, auto

from xdsl.dialects import func
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.traits import IsTerminator

from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import FusedOp
from tdsl.lowering.tiling_analysis import analyze_group

# ---------------------------------------------------------------------------
# Op kinds
# ---------------------------------------------------------------------------


class OpKind(Enum):
    """How an op takes part in fusion."""

    CONSTANT = auto()
    """``tensordsl.constant``: cloned into groups (at most one element) or a group input."""
    ELEMENTWISE = auto()
    """Unary, binary (broadcasting) and cast ops."""
    ROW_LOCAL = auto()
    """Softmax or a reduction over the innermost axis."""
    MATMUL = auto()
    """``tensordsl.matmul``: fuses an epilogue and a row-local left prologue."""
    BOUNDARY = auto()
    """Ops that fuse with nothing: transpose, non-innermost or full reductions and softmax."""
    OPAQUE = auto()
    """Anything that is not a tensordsl op (``func.return``, existing ``kernel`` ops, ...)."""


def op_kind(op: Operation) -> OpKind:
    """The :class:`OpKind` of ``op``."""
    if isinstance(op, td.ConstantOp):
        return OpKind.CONSTANT
    if isinstance(op, td.UnaryOp | td.BinaryOp | td.CastOp):
        return OpKind.ELEMENTWISE
    if isinstance(op, td.MatmulOp):
        return OpKind.MATMUL
    if isinstance(op, td.TransposeOp):
        return OpKind.BOUNDARY
    if isinstance(op, td.SoftmaxOp | td.ReductionOp):
        return OpKind.BOUNDARY if boundary_reason(op) is not None else OpKind.ROW_LOCAL
    return OpKind.OPAQUE


def boundary_reason(op: Operation) -> str | None:
    """Why ``op`` fuses with nothing, or None when it may fuse."""
    if isinstance(op, td.TransposeOp):
        return "transpose is a fusion boundary"
    if isinstance(op, td.SoftmaxOp):
        rank = len(td.tensor_shape(op.input))
        axis = op.axis_value
        if axis != rank - 1:
            return f"softmax over non-innermost axis {axis} is a fusion boundary"
        return None
    if isinstance(op, td.ReductionOp):
        rank = len(td.tensor_shape(op.input))
        axis = op.axis_value
        if axis is None:
            if rank > 1:
                return f"full reduction (no axis) of a rank-{rank} tensor is a fusion boundary"
            return None
        if axis != rank - 1:
            return f"reduction over non-innermost axis {axis}"
        return None
    return None


def is_cloned_constant(op: Operation) -> bool:
    """True for constants that are cloned into the groups using them (at most one element)."""
    return isinstance(op, td.ConstantOp) and math.prod(td.tensor_shape(op.result)) <= 1


# ---------------------------------------------------------------------------
# Iteration spaces
# ---------------------------------------------------------------------------

Dims = tuple[int | None, ...]
"""Per dim of a value: its dimension (a variable, or an index into an iteration
space), or None for an extent-1 dim."""


@dataclass(frozen=True)
class IterationSpace:
    """The one iteration space of a group.

    ``extents[i]`` is the extent of space dim ``i``; ``whole[i]`` says it must
    not be cut (a reduction, softmax or contraction axis, or matmul columns):
    the other dims are tileable.  ``dims`` maps every value the group touches
    (its inputs and every value it computes) to its space dims, per value dim.
    """

    extents: tuple[int, ...]
    whole: tuple[bool, ...]
    dims: dict[SSAValue, Dims] = field(compare=False, hash=False)

    @property
    def tileable(self) -> tuple[int, ...]:
        """The indices of the dims ``tdsl-tile`` may cut, in space order."""
        return tuple(i for i, w in enumerate(self.whole) if not w)

    def describe(self) -> str:
        """``8x8x16 (tileable d0)`` style summary."""
        tiles = " ".join(f"d{i}" for i in self.tileable)
        return f"{td.fmt_shape(self.extents)} (tileable: {tiles or 'none'})"


class _DimVars:
    """Union-find over dimension variables, with extents, whole marks and an undo log.

    No path compression (union by size keeps trees shallow), so that a
    tentative merge of two groups can be rolled back exactly.
    """

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.size: list[int] = []
        self.extent: list[int] = []
        self.whole: list[bool] = []
        self.why: list[Operation | None] = []
        """For a whole root: the op that needs it whole."""
        self._log: list[tuple[int, int, int, bool, Operation | None]] = []

    def new(self, extent: int) -> int:
        self.parent.append(len(self.parent))
        self.size.append(1)
        self.extent.append(extent)
        self.whole.append(False)
        self.why.append(None)
        return len(self.parent) - 1

    def fresh(self, shape: Sequence[int]) -> Dims:
        """New variables for a value of ``shape`` (None for its extent-1 dims)."""
        return tuple(None if e == 1 else self.new(e) for e in shape)

    def find(self, v: int) -> int:
        while self.parent[v] != v:
            v = self.parent[v]
        return v

    def roots(self, dims: Iterable[int | None]) -> Dims:
        return tuple(None if d is None else self.find(d) for d in dims)

    def is_whole(self, v: int) -> bool:
        return self.whole[self.find(v)]

    def _save(self, v: int) -> None:
        self._log.append((v, self.parent[v], self.size[v], self.whole[v], self.why[v]))

    def unify(self, vs: Iterable[int | None]) -> int | None:
        """Make the given variables one; returns the root (None when all are None)."""
        roots = {self.find(v) for v in vs if v is not None}
        if not roots:
            return None
        first = max(roots, key=lambda r: (self.size[r], -r))
        for other in roots - {first}:
            self._save(other)
            self._save(first)
            self.parent[other] = first
            self.size[first] += self.size[other]
            if self.whole[other] and not self.whole[first]:
                self.whole[first] = True
                self.why[first] = self.why[other]
        return first

    def unify_dims(self, a: Dims, b: Dims) -> None:
        """Equate two dims tuples of one value, dim by dim."""
        for x, y in zip(a, b, strict=True):
            self.unify((x, y))

    def mark_whole(self, v: int | None, op: Operation) -> None:
        if v is None:
            return
        root = self.find(v)
        if not self.whole[root]:
            self._save(root)
            self.whole[root] = True
            self.why[root] = op

    def checkpoint(self) -> tuple[int, int]:
        return len(self.parent), len(self._log)

    def rollback(self, mark: tuple[int, int]) -> None:
        count, logged = mark
        while len(self._log) > logged:
            v, parent, size, whole, why = self._log.pop()
            self.parent[v], self.size[v], self.whole[v], self.why[v] = parent, size, whole, why
        for table in (self.parent, self.size, self.extent, self.whole, self.why):
            del table[count:]

    def commit(self) -> None:
        self._log.clear()


def _broadcast(
    dv: _DimVars, shape: Sequence[int], operands: Sequence[tuple[Dims, Sequence[int]]]
) -> list[int | None]:
    """Result dims of a right-aligned broadcast: equal extents share a variable."""
    rank = len(shape)
    out: list[int | None] = []
    for j, extent in enumerate(shape):
        if extent == 1:
            out.append(None)
            continue
        same: list[int | None] = []
        for dims, oshape in operands:
            k = j - (rank - len(oshape))
            if k >= 0 and oshape[k] == extent:
                same.append(dims[k])
        out.append(dv.unify(same))
    return out


def _matmul_dims(dv: _DimVars, op: td.MatmulOp, ldims: Dims, rdims: Dims) -> Dims:
    lshape, rshape = list(td.tensor_shape(op.lhs)), list(td.tensor_shape(op.rhs))
    left, right = list(ldims), list(rdims)
    lvec, rvec = len(lshape) == 1, len(rshape) == 1
    if lvec:
        lshape, left = [1, *lshape], [None, *left]
    if rvec:
        rshape, right = [*rshape, 1], [*right, None]
    dv.mark_whole(dv.unify([left[-1], right[-2]]), op)
    dv.mark_whole(right[-1], op)
    batch_shape = td.broadcast_shapes(lshape[:-2], rshape[:-2])
    out = _broadcast(
        dv, batch_shape, [(tuple(left[:-2]), lshape[:-2]), (tuple(right[:-2]), rshape[:-2])]
    )
    if not lvec:
        out.append(left[-2])
    if not rvec:
        out.append(right[-1])
    return tuple(out)


def _result_dims(dv: _DimVars, op: Operation, operands: Sequence[Dims]) -> tuple[Dims, ...]:
    """The dims of ``op``'s results given its operands' dims: the op equations.

    Unifies the variables the op lines up and marks those it needs whole.
    """
    if isinstance(op, td.UnaryOp | td.CastOp | td.SoftmaxOp):
        (dims,) = operands
        if isinstance(op, td.SoftmaxOp):
            dv.mark_whole(dims[op.axis_value], op)
        return (dims,)
    if isinstance(op, td.BinaryOp):
        shapes = [td.tensor_shape(op.lhs), td.tensor_shape(op.rhs)]
        result = _broadcast(
            dv, td.tensor_shape(op.result), list(zip(operands, shapes, strict=True))
        )
        return (tuple(result),)
    if isinstance(op, td.ReductionOp):
        (dims,) = operands
        axis = op.axis_value
        axes = range(len(dims)) if axis is None else (axis,)
        for a in axes:
            dv.mark_whole(dims[a], op)
        if op.keepdims_value:
            return (tuple(None if i in axes else d for i, d in enumerate(dims)),)
        return (tuple(d for i, d in enumerate(dims) if i not in axes),)
    if isinstance(op, td.MatmulOp):
        return (_matmul_dims(dv, op, operands[0], operands[1]),)
    if isinstance(op, td.TransposeOp):
        return (tuple(reversed(operands[0])),)
    return tuple(dv.fresh(td.tensor_shape(r)) for r in op.results)


@dataclass
class _Part:
    """What the legality rules need to know about a group, kept up to date by merges.

    Variables are stored as roots as of the last merge; compare them through
    ``find``.  Every value the group computes has the same tileable roots
    (rule 3), so ``tileable`` stands for all of them.
    """

    id: int
    ops: list[Operation]
    inputs: dict[SSAValue, Dims]
    """Values read from outside, with the group's variables for them."""
    tileable: set[int]
    nonlast: dict[int, SSAValue]
    """Variables in a non-innermost dim of a computed value -> such a value."""
    pairs: dict[tuple[int, int], SSAValue]
    """Two variables of one value -> that value (they must stay distinct)."""
    rhs: list[SSAValue]
    """Right operands of the group's matmuls."""
    users: set[Operation]
    """Live block-level ops outside the group that use its values."""
    row_bound: int
    """An upper bound of the smallest tile's scratch: a row per result plus one per op."""
    widest: SSAValue
    """A computed value with the most dims (for messages)."""
    boundary: str | None
    """Set for a lone boundary op: why it fuses with nothing."""


class _Spaces:
    """Dimension variables and the groups (parts) built from ops, merge by merge."""

    def __init__(self, users: Callable[[Operation], Iterable[Operation]]) -> None:
        self.vars = _DimVars()
        self.dims: dict[SSAValue, Dims] = {}
        """The variables of every computed value."""
        self.users = users
        self.parts: dict[int, _Part] = {}
        self._part_parent: dict[int, int] = {}
        self._op_part: dict[Operation, int] = {}

    def part_id(self, op: Operation) -> int | None:
        """The id of the part holding ``op``, if it is in one."""
        start = self._op_part.get(op)
        if start is None:
            return None
        root = start
        while self._part_parent[root] != root:
            root = self._part_parent[root]
        while self._part_parent[start] != root:  # path compression (merges are final)
            self._part_parent[start], start = root, self._part_parent[start]
        return root

    def _pairs(self, values: Iterable[tuple[SSAValue, Dims]]) -> dict[tuple[int, int], SSAValue]:
        pairs: dict[tuple[int, int], SSAValue] = {}
        for value, dims in values:
            used = sorted({d for d in self.vars.roots(dims) if d is not None})
            for i, a in enumerate(used):
                for b in used[i + 1 :]:
                    pairs.setdefault((a, b), value)
            if len(used) < len([d for d in dims if d is not None]):
                pairs.setdefault((used[0], used[0]), value)
        return pairs

    def single(self, op: Operation) -> _Part:
        """A new part holding ``op`` alone (its operands are its inputs)."""
        dv = self.vars
        inputs: dict[SSAValue, Dims] = {}
        for v in op.operands:
            if v not in inputs:
                inputs[v] = dv.fresh(td.tensor_shape(v))
        results = _result_dims(dv, op, [inputs[v] for v in op.operands])
        for r, dims in zip(op.results, results, strict=True):
            self.dims[r] = dims
        dv.commit()
        pid = len(self._part_parent)
        self._part_parent[pid] = pid
        self._op_part[op] = pid
        computed = [(r, self.dims[r]) for r in op.results]
        part = _Part(
            id=pid,
            ops=[op],
            inputs=inputs,
            tileable={
                d
                for _, dims in computed
                for d in dv.roots(dims)
                if d is not None and not dv.whole[d]
            },
            nonlast={d: r for r, dims in computed for d in dv.roots(dims[:-1]) if d is not None},
            pairs=self._pairs([*computed, *inputs.items()]),
            rhs=[op.rhs] if isinstance(op, td.MatmulOp) else [],
            users=set(self.users(op)),
            row_bound=1 + sum(_last_extent(r) for r in op.results),
            widest=max(op.results, key=lambda r: len(td.tensor_shape(r))),
            boundary=boundary_reason(op),
        )
        self.parts[pid] = part
        return part

    def _owner_in(self, value: SSAValue, ids: set[int]) -> bool:
        owner = value.owner
        return isinstance(owner, Operation) and self.part_id(owner) in ids

    def try_merge(
        self, a: _Part, b: _Part, extra: Callable[[_Part, set[int]], str | None] | None = None
    ) -> _Part | str:
        """``a`` and ``b`` as one part, or why not (then nothing changes).

        Checks rules 1-5 of the module docstring, then ``extra`` (given the
        tentative part and the ids of ``a`` and ``b``).
        """
        dv = self.vars
        mark = dv.checkpoint()
        why = self._merge(a, b)
        if isinstance(why, _Part) and extra is not None:
            reason = extra(why, {a.id, b.id})
            why = why if reason is None else reason
        if isinstance(why, str):
            dv.rollback(mark)
            return why
        dv.commit()
        self._part_parent[b.id] = a.id
        del self.parts[b.id]
        self.parts[a.id] = why
        return why

    def _merge(self, a: _Part, b: _Part) -> _Part | str:
        dv = self.vars
        ids = {a.id, b.id}
        boundary = a.boundary or b.boundary
        if boundary is not None:
            return boundary
        if any(self._owner_in(v, ids) for v in (*a.rhs, *b.rhs)):
            return "matmul right operand must be materialized"
        inputs: dict[SSAValue, Dims] = {}
        for part in (a, b):
            for v, dims in part.inputs.items():
                if self._owner_in(v, ids):
                    dv.unify_dims(dims, self.dims[v])
                elif v in inputs:
                    dv.unify_dims(dims, inputs[v])
                else:
                    inputs[v] = dims

        for (x, y), value in (*a.pairs.items(), *b.pairs.items()):
            if dv.find(x) == dv.find(y):
                return (
                    "inconsistent iteration space: two dimensions of a "
                    f"{td.fmt_shape(td.tensor_shape(value))} value would run along one dimension "
                    "of the group (e.g. a row result broadcast along the rows' own dimension, "
                    "or a matmul right operand also read by rows)"
                )
        for x, value in (*a.nonlast.items(), *b.nonlast.items()):
            root = dv.find(x)
            if dv.whole[root]:
                culprit = dv.why[root]
                who = culprit.name if culprit is not None else "an op of the group"
                return (
                    f"not row-local: {who} needs the whole of a dimension (extent "
                    f"{dv.extent[root]}) along which the group tiles a "
                    f"{td.fmt_shape(td.tensor_shape(value))} value"
                )
        ta = {r for r in (dv.find(t) for t in a.tileable) if not dv.whole[r]}
        tb = {r for r in (dv.find(t) for t in b.tileable) if not dv.whole[r]}
        if ta != tb:
            return (
                f"different iteration space {td.fmt_shape(td.tensor_shape(a.widest))} vs "
                f"{td.fmt_shape(td.tensor_shape(b.widest))}"
            )

        def rank(v: SSAValue) -> int:
            return len([d for d in self.dims[v] if d is not None])

        users = {u for u in (*a.users, *b.users) if self.part_id(u) not in ids}
        return _Part(
            id=a.id,
            ops=[*a.ops, *b.ops],
            inputs=inputs,
            tileable=ta,
            nonlast={dv.find(x): v for x, v in (*a.nonlast.items(), *b.nonlast.items())},
            pairs=self._pairs((v, (x, y)) for (x, y), v in (*a.pairs.items(), *b.pairs.items())),
            rhs=[*a.rhs, *b.rhs],
            users=users,
            row_bound=a.row_bound + b.row_bound,
            widest=a.widest if rank(a.widest) >= rank(b.widest) else b.widest,
            boundary=None,
        )

    def space(self, part: _Part) -> IterationSpace:
        """The iteration space of ``part``: dims ordered by first appearance, outputs first."""
        dv = self.vars
        values: dict[SSAValue, Dims] = {r: self.dims[r] for op in part.ops for r in op.results}
        values.update(part.inputs)
        roots = {v: dv.roots(d) for v, d in values.items()}
        order: dict[int, None] = {}
        for dims in roots.values():
            for d in dims:
                if d is not None:
                    order.setdefault(d)
        index = {d: i for i, d in enumerate(order)}
        return IterationSpace(
            extents=tuple(dv.extent[d] for d in order),
            whole=tuple(dv.whole[d] for d in order),
            dims={
                v: tuple(None if d is None else index[d] for d in dims) for v, dims in roots.items()
            },
        )


def _last_extent(value: SSAValue) -> int:
    shape = td.tensor_shape(value)
    return shape[-1] if shape else 1


def infer_space(ops: Sequence[Operation]) -> IterationSpace | str:
    """The iteration space of ``ops`` (program order) run as one group, or why not.

    Applies rules 1-5 of the module docstring as the planner does: each op
    merges with the ops of ``ops`` that produce its operands.  Values defined
    outside ``ops`` are group inputs.
    """
    spaces = _Spaces(lambda op: ())
    for op in ops:
        current = spaces.single(op)
        for operand in op.operands:
            owner = operand.owner
            pid = spaces.part_id(owner) if isinstance(owner, Operation) else None
            if pid is None or pid == current.id:
                continue
            merged = spaces.try_merge(spaces.parts[pid], current)
            if isinstance(merged, str):
                return merged
            current = merged
    if len(spaces.parts) != 1:
        return "the ops are not connected: they form several groups"
    (part,) = spaces.parts.values()
    return spaces.space(part)


def min_tile_scratch(ops: Sequence[Operation], outputs: Sequence[SSAValue]) -> int:
    """Scratch elements of the smallest legal tile of ``ops`` materializing ``outputs``.

    The buffer model is ``tdsl-tile``'s (:mod:`tdsl.lowering.tiling_analysis`),
    so a group ``tdsl-fuse`` forms under a budget is one ``tdsl-tile`` can
    schedule under it without splitting.
    """
    space = analyze_group(ops, outputs)
    return space.plan(space.min_tiles()).total


# ---------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------


def _block_users(block: Block, op: Operation) -> list[Operation]:
    """The block-level ops using a result of ``op`` (an ancestor for nested uses)."""
    users: list[Operation] = []
    for res in op.results:
        for use in res.uses:
            user = block.find_ancestor_op_in_block(use.operation)
            if user is not None and user not in users:
                users.append(user)
    return users


@dataclass(frozen=True, eq=False)
class FusionGroup:
    """One planned (or built) fusion group.

    ``ops`` are the computing ops in program order; ``constants`` the
    (at most one-element) constants cloned into it; ``inputs`` the values it
    reads from outside (first use order); ``results`` the values it computes
    that are used outside it (program order).
    """

    name: str
    function: str
    ops: tuple[Operation, ...]
    constants: tuple[td.ConstantOp, ...]
    inputs: tuple[SSAValue, ...]
    results: tuple[SSAValue, ...]
    space: IterationSpace
    min_scratch: int
    """Scratch elements of its smallest legal tile (``tdsl-tile``'s buffer model)."""


@dataclass(frozen=True)
class UnfusedEdge:
    """A producer-consumer edge between two groups, and why it was not fused."""

    producer: Operation
    consumer: Operation
    operand: int
    """The index of the consumer operand that reads ``value``."""
    value: SSAValue
    producer_group: str
    consumer_group: str
    reason: str


@dataclass(frozen=True)
class BlockPlan:
    """The fusion plan of one block of a function."""

    function: str
    block: Block
    groups: tuple[FusionGroup, ...]
    unfused: tuple[UnfusedEdge, ...]
    order: tuple[FusionGroup | Operation, ...]
    """The block's units (groups and ungrouped ops, the terminator excluded) in a valid
    (topological) order, close to program order."""
    dead: tuple[Operation, ...] = ()
    """Tensordsl ops whose results nothing uses: the pass erases them."""


class _Planner:
    """The greedy grouping of one block; see the module docstring."""

    def __init__(self, block: Block, function: str, budget: int, taken: set[str]) -> None:
        self.block = block
        self.function = function
        self.budget = budget
        self.taken = taken
        self.ops = list(block.ops)
        self.index = {op: i for i, op in enumerate(self.ops)}
        self.reasons: dict[tuple[Operation, Operation, int], str] = {}
        self.dead = self._dead()
        self.spaces = _Spaces(self.users)
        self.space_of: dict[Operation, IterationSpace] = {}
        """The iteration space of each group, by its first op."""

    def _dead(self) -> set[Operation]:
        """Tensordsl ops whose results nothing live uses (they are erased, not grouped)."""
        dead: set[Operation] = set()
        for op in reversed(self.ops):
            if op_kind(op) is OpKind.OPAQUE:
                continue
            uses = [
                self.block.find_ancestor_op_in_block(use.operation)
                for r in op.results
                for use in r.uses
            ]
            if all(u is not None and u in dead for u in uses):
                dead.add(op)
        return dead

    def users(self, op: Operation) -> list[Operation]:
        """The live block-level ops using a result of ``op``."""
        return [u for u in _block_users(self.block, op) if u not in self.dead]

    # -- legality beyond the iteration space ------------------------------------

    def _extra(self, upto: int) -> Callable[[_Part, set[int]], str | None]:
        def check(part: _Part, ids: set[int]) -> str | None:
            return self._budget(part, ids) or self._cycle(part, ids, upto)

        return check

    def _outputs(self, ops: Sequence[Operation], ids: set[int]) -> list[SSAValue]:
        """The results of ``ops`` that a live op outside the parts ``ids`` uses."""
        return [
            r
            for op in ops
            for r in op.results
            if self._used_outside(r, lambda u: self.spaces.part_id(u) in ids)
        ]

    def _used_outside(self, value: SSAValue, inside: Callable[[Operation], bool]) -> bool:
        """True when a live op that is not ``inside`` (or one in another block) uses ``value``."""
        for use in value.uses:
            user = self.block.find_ancestor_op_in_block(use.operation)
            if user is None:
                return True
            if user not in self.dead and not inside(user):
                return True
        return False

    def _budget(self, part: _Part, ids: set[int]) -> str | None:
        """Rule 6: the smallest legal tile must fit the budget."""
        if part.row_bound <= self.budget:
            return None
        ops = sorted(part.ops, key=self.index.__getitem__)
        need = min_tile_scratch(ops, self._outputs(ops, ids))
        if need <= self.budget:
            return None
        return (
            f"the fused group would need {need} elements of scratch at its smallest "
            f"tile, over the memory budget of {self.budget}"
        )

    def _cycle(self, part: _Part, ids: set[int], upto: int) -> str | None:
        """Rule 7: a reason when a path leaves the group and comes back."""
        spaces = self.spaces
        seen_parts: set[int] = set()
        seen_ops: set[Operation] = set()
        stack: list[tuple[Operation, Operation]] = [(u, u) for u in part.users]
        while stack:
            op, exit_op = stack.pop()
            pid = spaces.part_id(op)
            if pid in ids:
                return (
                    "fusing would create a cycle between groups: a path leaves the group "
                    f"through {exit_op.name} and comes back"
                )
            if self.index[op] > upto or op in seen_ops:
                continue
            seen_ops.add(op)
            if pid is None:
                next_ops: Iterable[Operation] = self.users(op)
            elif pid in seen_parts:
                continue
            else:
                seen_parts.add(pid)
                next_ops = spaces.parts[pid].users
            stack.extend((u, exit_op) for u in next_ops)
        return None

    # -- grouping -------------------------------------------------------------

    def visit(self, op: Operation) -> None:
        kind = op_kind(op)
        if kind in (OpKind.CONSTANT, OpKind.OPAQUE) or op in self.dead:
            return
        spaces = self.spaces
        candidates: list[int] = []
        edges: dict[int, list[tuple[Operation, int]]] = {}
        for i, operand in enumerate(op.operands):
            producer = operand.owner if isinstance(operand, OpResult) else None
            pid = None if producer is None else spaces.part_id(producer)
            if producer is None or pid is None:
                continue
            if kind is OpKind.BOUNDARY:
                why = boundary_reason(op)
                assert why is not None
                self.reasons[(producer, op, i)] = why
                continue
            if isinstance(op, td.MatmulOp) and i == 1:
                self.reasons[(producer, op, i)] = "matmul right operand must be materialized"
                continue
            edges.setdefault(pid, []).append((producer, i))
            if pid not in candidates:
                candidates.append(pid)
        current = spaces.single(op)
        check = self._extra(self.index[op])
        for pid in candidates:
            merged = spaces.try_merge(spaces.parts[pid], current, check)
            if isinstance(merged, str):
                for producer, i in edges[pid]:
                    self.reasons[(producer, op, i)] = merged
            else:
                current = merged

    # -- result -----------------------------------------------------------------

    def plan(self) -> BlockPlan:
        for op in self.ops:
            self.visit(op)
        parts = sorted(
            self.spaces.parts.values(), key=lambda p: min(map(self.index.__getitem__, p.ops))
        )
        raw = [sorted(p.ops, key=self.index.__getitem__) for p in parts]
        for p, ops in zip(parts, raw, strict=True):
            self.space_of[ops[0]] = self.spaces.space(p)
        units = self._order(raw)
        names = self._names()
        order: list[FusionGroup | Operation] = []
        groups: list[FusionGroup] = []
        for unit in units:
            if isinstance(unit, Operation):
                order.append(unit)
                continue
            group = self._build(unit, next(names))
            groups.append(group)
            order.append(group)
        by_op = {op: g for g in groups for op in g.ops}
        unfused: list[UnfusedEdge] = []
        for group in groups:
            for consumer in group.ops:
                for i, operand in enumerate(consumer.operands):
                    producer = operand.owner
                    if not isinstance(producer, Operation) or producer not in by_op:
                        continue
                    pgroup = by_op[producer]
                    if pgroup is group:
                        continue
                    reason = self.reasons.get(
                        (producer, consumer, i), "the groups were formed apart"
                    )
                    unfused.append(
                        UnfusedEdge(producer, consumer, i, operand, pgroup.name, group.name, reason)
                    )
        unfused.sort(key=lambda e: (self.index[e.consumer], e.operand))
        dead = tuple(op for op in self.ops if op in self.dead)
        return BlockPlan(
            self.function, self.block, tuple(groups), tuple(unfused), tuple(order), dead
        )

    def _names(self) -> Iterator[str]:
        n = 0
        while True:
            name = f"g{n}"
            n += 1
            if name not in self.taken:
                yield name

    def _build(self, ops: list[Operation], name: str) -> FusionGroup:
        members = set(ops)
        inputs: dict[SSAValue, None] = {}
        constants: dict[td.ConstantOp, None] = {}
        for op in ops:
            for operand in op.operands:
                owner = operand.owner
                if isinstance(owner, Operation) and owner in members:
                    continue
                if isinstance(owner, td.ConstantOp) and is_cloned_constant(owner):
                    constants.setdefault(owner)
                else:
                    inputs.setdefault(operand)
        results = [
            r for op in ops for r in op.results if self._used_outside(r, members.__contains__)
        ]
        return FusionGroup(
            name=name,
            function=self.function,
            ops=tuple(ops),
            constants=tuple(constants),
            inputs=tuple(inputs),
            results=tuple(results),
            space=self.space_of[ops[0]],
            min_scratch=min_tile_scratch(ops, results),
        )

    def _order(self, groups: list[list[Operation]]) -> list[list[Operation] | Operation]:
        """Groups and ungrouped ops in topological order, earliest first op first."""
        term = self.ops[-1] if self.ops and self.ops[-1].has_trait(IsTerminator) else None
        units: list[list[Operation] | Operation] = [*groups]
        grouped = {op for g in groups for op in g}
        units.extend(
            op for op in self.ops if op not in grouped and op is not term and op not in self.dead
        )
        unit_of: dict[Operation, int] = {}
        for u, unit in enumerate(units):
            for op in unit if isinstance(unit, list) else [unit]:
                unit_of[op] = u
        deps: list[set[int]] = [set() for _ in units]
        users: list[set[int]] = [set() for _ in units]
        for u, unit in enumerate(units):
            for op in unit if isinstance(unit, list) else [unit]:
                for inner in op.walk():
                    for operand in inner.operands:
                        owner = operand.owner
                        if not isinstance(owner, Operation):
                            continue
                        anc = self.block.find_ancestor_op_in_block(owner)
                        if anc is None or anc not in unit_of:
                            continue
                        d = unit_of[anc]
                        if d != u:
                            deps[u].add(d)
                            users[d].add(u)

        def key(u: int) -> int:
            unit = units[u]
            return self.index[unit[0] if isinstance(unit, list) else unit]

        ready = [(key(u), u) for u in range(len(units)) if not deps[u]]
        heapq.heapify(ready)
        out: list[list[Operation] | Operation] = []
        while ready:
            _, u = heapq.heappop(ready)
            out.append(units[u])
            for v in users[u]:
                deps[v].discard(u)
                if not deps[v]:
                    heapq.heappush(ready, (key(v), v))
        assert len(out) == len(units), "fusion produced a cycle between groups"
        return out


def plan_block(
    block: Block, function: str, memory_budget: int, taken: Iterable[str] = ()
) -> BlockPlan:
    """Plan the fusion groups of ``block`` (a block of ``@function``).

    Only ops directly in ``block`` are grouped.  Group names skip ``taken``
    and the names of ``kernel.fused`` ops already in the block.
    """
    names = set(taken)
    names.update(
        op.group.data for op in block.ops if isinstance(op, FusedOp) and op.group is not None
    )
    return _Planner(block, function, memory_budget, names).plan()


def plan_function(fn: func.FuncOp, memory_budget: int) -> list[BlockPlan]:
    """The plans of every block of ``fn`` (group names are unique in the function)."""
    taken: set[str] = {
        op.group.data for op in fn.walk() if isinstance(op, FusedOp) and op.group is not None
    }
    plans: list[BlockPlan] = []
    for block in fn.body.blocks:
        plan = plan_block(block, fn.sym_name.data, memory_budget, taken)
        taken.update(g.name for g in plan.groups)
        plans.append(plan)
    return plans


def walk_functions(root: Operation) -> list[func.FuncOp]:
    """Every ``func.func`` under ``root``."""
    return [op for op in root.walk() if isinstance(op, func.FuncOp)]
