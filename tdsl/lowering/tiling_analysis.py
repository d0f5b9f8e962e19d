"""Iteration spaces and scratch plans of fusion groups: the analysis behind ``tdsl-tile``.

Two questions about a group of ``tensordsl`` ops (the body of a ``kernel.fused``
or ``kernel.tile``, or a contiguous part of one) are answered here, without
changing any IR.

**Which slice of every value does a tile touch?**  :func:`analyze_group` gives
each dimension of each value a variable and unifies the variables that must run
together: the operand and result dims of element-wise ops (a size-1 operand dim
that broadcasts against a larger result dim stays apart, it is taken whole), the
rows and batch dims of ``matmul`` with those of its result, the reversed dims of
``transpose``, and the kept dims of ``softmax`` and reductions.  The classes of
unified dims that appear in the group's results form its *iteration space*
(ordered by the largest result first, dims of size 0 or 1 left out); every other class
is taken whole.  A
space dim can be tiled unless an op needs it whole: the axis ``softmax``
normalizes along or a reduction reduces over, the contraction dim of a
``matmul``, a dim that is missing from one of the results (tiles would write
that result twice), a dim that occurs twice in one value (``x + transpose(x)``
on a square ``x``) and the dims of ops the analysis does not know.  The columns
of a ``matmul`` result can be tiled, but are *kept whole by preference*: BLAS
wants whole rows, so they are tiled only when a single row does not fit.

**How much memory does one tile allocate?**  :func:`plan_scratch` is the
buffer model shared by ``tdsl-tile`` (which records the total as the tile's
``scratch``) and the NumPy emitter (which allocates exactly these buffers, once
per thread, and reuses them across tiles).  It walks the body in program order:

* group inputs are views of the operands, results are written straight into
  the output slices, constants are literals: none of them takes scratch;
* every other op result (an *intermediate*) gets a buffer of its element type
  when it is defined and frees it after its last use;
* an element-wise op (unary, binary, cast) or ``softmax`` whose operand dies at
  it computes in place: the result takes the buffer of a dying intermediate
  operand with the same shape and element type;
* ``softmax`` also needs a *workspace* for its row statistics (the max, then
  the sum: its shape with the axis set to 1), live only during the op;
* a new value takes the smallest free buffer of its element type that is large
  enough; failing that, the largest free one, grown to fit; failing that, a new
  buffer.  A buffer is allocated with its final (largest) size; a value uses
  its first elements, reshaped.

The scratch of a tile is the sum of its buffer sizes, in elements.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from tdsl.dialects.kernel import FusedOp, TileOp, YieldOp
from tdsl.dialects.tensordsl import (
    BinaryOp,
    CastOp,
    ConstantOp,
    DivOp,
    MatmulOp,
    ReductionOp,
    SigmoidOp,
    SoftmaxOp,
    TransposeOp,
    UnaryOp,
    element_type,
    tensor_shape,
)

Shape = tuple[int, ...]
"""A static tensor shape."""

Dims = tuple[int | None, ...]
"""Per dim of a value: the iteration dim it runs along, or None when taken whole."""


# ---------------------------------------------------------------------------
# Iteration spaces
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SpaceDim:
    """One dimension of a group's iteration space."""

    extent: int
    """Its size (the size of the result dims that run along it)."""
    tileable: bool
    """Whether tiles may cover only part of it."""
    prefer_whole: bool = False
    """Tileable, but tiled only when nothing else makes the group fit (matmul columns)."""
    reason: str | None = None
    """Why it cannot be tiled, for messages (None when tileable)."""


@dataclass(frozen=True)
class GroupSpace:
    """The iteration space of a group of ops and how each value maps onto it."""

    ops: tuple[Operation, ...]
    """The group's ops in program order (constants excluded: they are ambient)."""
    inputs: tuple[SSAValue, ...]
    """Values the ops use but do not define, in order of first use."""
    outputs: tuple[SSAValue, ...]
    """The values the group materializes (distinct, computed by ``ops``)."""
    dims: tuple[SpaceDim, ...]
    """The iteration space."""
    value_dims: Mapping[SSAValue, Dims]
    """For every input, op result and output: the space dim of each of its dims."""

    @property
    def space(self) -> Shape:
        """The extents of the iteration space."""
        return tuple(d.extent for d in self.dims)

    def tile_shape(self, value: SSAValue, tiles: Sequence[int]) -> Shape:
        """The shape of ``value``'s slice in a full tile of sizes ``tiles``."""
        return tile_shape(tensor_shape(value), self.value_dims[value], tiles)

    def min_tiles(self) -> Shape:
        """The smallest legal tile: size 1 along every tileable dim, the rest whole."""
        return tuple(1 if d.tileable else max(1, d.extent) for d in self.dims)

    def whole_tiles(self) -> Shape:
        """One tile covering the whole space."""
        return tuple(max(1, d.extent) for d in self.dims)

    def plan(self, tiles: Sequence[int]) -> ScratchPlan:
        """The scratch plan of one full tile of sizes ``tiles``."""
        return plan_scratch(self.ops, self.outputs, lambda v: self.tile_shape(v, tiles))

    def live_profile(self, tiles: Sequence[int]) -> list[int]:
        """Per op: the elements it needs while it runs, in a full tile of sizes ``tiles``.

        That is the larger of its own result slices and the intermediates live
        across it (defined at or before it, used at or after it) plus its
        workspace; no buffer reuse.  Where this peaks is where to split a group.
        """
        outs = set(self.outputs)
        last_use: dict[SSAValue, int] = {}
        for i, op in enumerate(self.ops):
            for operand in op.operands:
                last_use[operand] = i
        live: dict[SSAValue, int] = {}
        profile: list[int] = []
        for i, op in enumerate(self.ops):
            results = [r for r in op.results if isinstance(r.type, TensorType)]
            sizes = [math.prod(self.tile_shape(r, tiles)) for r in results]
            for r, n in zip(results, sizes, strict=True):
                if r not in outs and not isinstance(op, ConstantOp):
                    live[r] = n
            ws = workspace_shape(op, lambda v: self.tile_shape(v, tiles)) if results else None
            profile.append(max([*sizes, sum(live.values()) + (math.prod(ws) if ws else 0)]))
            for v in [v for v in live if last_use.get(v, i) <= i]:
                del live[v]
        return profile

    def largest_result_tile(self, tiles: Sequence[int]) -> tuple[int, Operation | None]:
        """The most elements one op result takes in a full tile, and that op."""
        best, best_op = 0, None
        for op in self.ops:
            if isinstance(op, ConstantOp):
                continue
            for result in op.results:
                n = math.prod(self.tile_shape(result, tiles))
                if n > best or best_op is None:
                    best, best_op = n, op
        return best, best_op


def tile_shape(shape: Sequence[int], dims: Dims, tiles: Sequence[int]) -> Shape:
    """The full-tile slice shape of a value of ``shape`` whose dims follow ``dims``."""
    return tuple(
        extent if d is None else min(tiles[d], extent)
        for extent, d in zip(shape, dims, strict=True)
    )


class _DimVars:
    """Union-find over the dims of the group's values."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.extent: list[int] = []
        self.of_value: dict[SSAValue, list[int]] = {}

    def vars(self, value: SSAValue) -> list[int]:
        found = self.of_value.get(value)
        if found is None:
            found = list[int]()
            for extent in tensor_shape(value):
                self.parent.append(len(self.parent))
                self.extent.append(extent)
                found.append(len(self.parent) - 1)
            self.of_value[value] = found
        return found

    def find(self, var: int) -> int:
        root = var
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[var] != root:
            self.parent[var], var = root, self.parent[var]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def broadcast(self, result: Sequence[int], operand: Sequence[int]) -> None:
        """Unify ``operand``'s dims with ``result``'s, right-aligned, except broadcast ones."""
        for r, o in zip(reversed(result), reversed(operand), strict=False):
            if self.extent[r] == self.extent[o]:
                self.union(r, o)


def _op_label(op: Operation) -> str:
    return op.name.removeprefix("tensordsl.")


def _unify_op(op: Operation, dv: _DimVars, whole: dict[int, str], prefer_whole: set[int]) -> None:
    """Record the dim constraints of one op (``whole``: var -> why it cannot be tiled)."""
    label = _op_label(op)
    if isinstance(op, UnaryOp | CastOp):
        for r, o in zip(dv.vars(op.results[0]), dv.vars(op.operands[0]), strict=True):
            dv.union(r, o)
    elif isinstance(op, BinaryOp):
        res = dv.vars(op.result)
        dv.broadcast(res, dv.vars(op.lhs))
        dv.broadcast(res, dv.vars(op.rhs))
    elif isinstance(op, TransposeOp):
        for r, o in zip(dv.vars(op.result), reversed(dv.vars(op.input)), strict=True):
            dv.union(r, o)
    elif isinstance(op, SoftmaxOp):
        res, inp = dv.vars(op.result), dv.vars(op.input)
        for r, o in zip(res, inp, strict=True):
            dv.union(r, o)
        whole[inp[op.axis_value]] = "softmax normalizes along it"
    elif isinstance(op, ReductionOp):
        res, inp = dv.vars(op.result), dv.vars(op.input)
        axis = op.axis_value
        if axis is None:
            for o in inp:
                whole[o] = f"{label} reduces over every axis"
        else:
            whole[inp[axis]] = f"{label} reduces along it"
            kept = [o for i, o in enumerate(inp) if op.keepdims_value or i != axis]
            for i, (r, o) in enumerate(zip(res, kept, strict=True)):
                if not (op.keepdims_value and i == axis):
                    dv.union(r, o)
    elif isinstance(op, MatmulOp):
        _unify_matmul(op, dv, whole, prefer_whole)
    elif isinstance(op, ConstantOp):
        dv.vars(op.result)
    else:
        for value in (*op.operands, *op.results):
            if isinstance(value.type, TensorType):
                for v in dv.vars(value):
                    whole[v] = f"'{op.name}' cannot be tiled"


def _unify_matmul(
    op: MatmulOp, dv: _DimVars, whole: dict[int, str], prefer_whole: set[int]
) -> None:
    lhs, rhs, res = dv.vars(op.lhs), dv.vars(op.rhs), list(dv.vars(op.result))
    k_lhs, k_rhs = lhs[-1], rhs[0] if len(rhs) == 1 else rhs[-2]
    dv.union(k_lhs, k_rhs)
    whole[k_lhs] = "matmul contracts along it"
    if len(rhs) >= 2:
        n = res.pop()
        dv.union(n, rhs[-1])
        prefer_whole.add(n)
    if len(lhs) >= 2:
        dv.union(res.pop(), lhs[-2])
    # What is left of the result are the batch dims, broadcast from both operands.
    dv.broadcast(res, lhs[:-2])
    dv.broadcast(res, rhs[:-2])


def _external_inputs(ops: Sequence[Operation]) -> tuple[SSAValue, ...]:
    defined = {r for op in ops for r in op.results}
    seen: dict[SSAValue, None] = {}
    for op in ops:
        for operand in op.operands:
            if operand not in defined:
                seen.setdefault(operand)
    return tuple(seen)


def analyze_group(
    ops: Sequence[Operation],
    outputs: Sequence[SSAValue],
    inputs: Sequence[SSAValue] | None = None,
) -> GroupSpace:
    """The iteration space of ``ops`` (program order) materializing ``outputs``.

    ``inputs`` defaults to the values the ops use but do not define, in order of
    first use.  ``outputs`` are de-duplicated, keeping their first occurrence.
    """
    ops = tuple(ops)
    outs = tuple(dict.fromkeys(outputs))
    ins = _external_inputs(ops) if inputs is None else tuple(inputs)
    dv = _DimVars()
    whole: dict[int, str] = {}
    prefer_whole: set[int] = set()
    for value in ins:
        dv.vars(value)
    for op in ops:
        _unify_op(op, dv, whole, prefer_whole)
    for value in outs:
        dv.vars(value)

    reasons: dict[int, str] = {}
    for var, reason in whole.items():
        reasons.setdefault(dv.find(var), reason)
    for value, vars_ in dv.of_value.items():
        roots = [dv.find(v) for v in vars_]
        for root in roots:
            if roots.count(root) > 1:
                reasons.setdefault(root, f"it occurs twice in one value ({value.type})")
    soft = {dv.find(v) for v in prefer_whole}

    # The space: the classes of the results, the largest result first.
    order: dict[int, None] = {}
    by_size = sorted(
        range(len(outs)), key=lambda i: (-len(tensor_shape(outs[i])), -_numel(outs[i]), i)
    )
    for i in by_size:
        for v in dv.of_value[outs[i]]:
            if dv.extent[v] > 1:  # dims of size 0 or 1 are taken whole: nothing to tile
                order.setdefault(dv.find(v))
    roots = list(order)
    for i, value in enumerate(outs):
        named = {dv.find(v) for v in dv.of_value[value]}
        for root in roots:
            if root not in named:
                reasons.setdefault(
                    root,
                    f"result #{i} ({value.type}) does not run along it, tiles would rewrite it",
                )
    space_index = {root: i for i, root in enumerate(roots)}
    dims = tuple(
        SpaceDim(
            extent=dv.extent[root],
            tileable=root not in reasons,
            prefer_whole=root in soft,
            reason=reasons.get(root),
        )
        for root in roots
    )
    value_dims = {
        value: tuple(space_index.get(dv.find(v)) for v in vars_)
        for value, vars_ in dv.of_value.items()
    }
    return GroupSpace(ops=ops, inputs=ins, outputs=outs, dims=dims, value_dims=value_dims)


def _numel(value: SSAValue) -> int:
    return math.prod(tensor_shape(value))


# ---------------------------------------------------------------------------
# Scratch plans
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ScratchBuffer:
    """One scratch buffer of a tile: allocated once per thread, reused by every tile."""

    element_type: Attribute
    elements: int


@dataclass(frozen=True)
class ScratchPlan:
    """Which intermediate values share which buffer (see the module docstring)."""

    buffers: tuple[ScratchBuffer, ...]
    values: Mapping[SSAValue, int]
    """The buffer index of each intermediate value (a value uses its first elements)."""
    workspaces: Mapping[Operation, int]
    """The buffer index of each op's workspace (``softmax`` row statistics)."""

    @property
    def total(self) -> int:
        """The scratch of one tile, in elements."""
        return sum(b.elements for b in self.buffers)

    def buffer_of(self, value: SSAValue) -> int | None:
        """The buffer holding ``value``, or None when it needs none."""
        return self.values.get(value)


def workspace_shape(op: Operation, shape_of: Callable[[SSAValue], Shape]) -> Shape | None:
    """The shape of the workspace ``op`` needs besides its result, if any.

    ``shape_of`` gives the (tile) shape of a value.  What the NumPy emitter
    allocates for the op beyond its result:

    * ``softmax`` keeps its row max and then its row sum: the result shape with
      the axis reduced to 1 (``keepdims``);
    * ``sigmoid`` keeps ``exp(-|x|)`` beside its numerator: one result-shaped
      buffer;
    * ``div`` by a smaller (broadcast) operand that is not a constant multiplies
      by that operand's reciprocal: one buffer of the divisor's shape.
    """
    if isinstance(op, SoftmaxOp):
        axis = op.axis_value
        return tuple(1 if i == axis else d for i, d in enumerate(shape_of(op.result)))
    if isinstance(op, SigmoidOp):
        return shape_of(op.result)
    if isinstance(op, DivOp) and not isinstance(op.rhs.owner, ConstantOp):
        divisor = shape_of(op.rhs)
        if math.prod(divisor) < math.prod(shape_of(op.result)):
            return divisor
    return None


def computes_in_place(op: Operation) -> bool:
    """Whether ``op``'s result may share the buffer of an operand of its shape that dies at it."""
    return isinstance(op, UnaryOp | BinaryOp | CastOp | SoftmaxOp)


class _Pool:
    """Greedy best-fit buffer reuse, one pool per element type."""

    def __init__(self) -> None:
        self.types: list[Attribute] = []
        self.sizes: list[int] = []
        self.free: list[int] = []

    def take(self, elements: int, etype: Attribute) -> int:
        candidates = [b for b in self.free if self.types[b] == etype]
        fitting = [b for b in candidates if self.sizes[b] >= elements]
        if fitting:
            buf = min(fitting, key=lambda b: (self.sizes[b], b))
        elif candidates:
            buf = max(candidates, key=lambda b: (self.sizes[b], -b))
            self.sizes[buf] = elements
        else:
            self.types.append(etype)
            self.sizes.append(elements)
            return len(self.sizes) - 1
        self.free.remove(buf)
        return buf

    def give(self, buf: int) -> None:
        self.free.append(buf)


def plan_scratch(
    ops: Sequence[Operation],
    outputs: Collection[SSAValue],
    shape_of: Callable[[SSAValue], Shape],
) -> ScratchPlan:
    """The buffers one tile of ``ops`` needs when each value has the shape ``shape_of`` gives.

    ``outputs`` are written into the results (no scratch); values not defined
    by ``ops`` are inputs (views); constants are literals.
    """
    out_set = set(outputs)
    scratch = {
        r
        for op in ops
        if not isinstance(op, ConstantOp)
        for r in op.results
        if r not in out_set and isinstance(r.type, TensorType)
    }
    last_use: dict[SSAValue, int] = {}
    for i, op in enumerate(ops):
        for operand in op.operands:
            if operand in scratch:
                last_use[operand] = i

    pool = _Pool()
    values: dict[SSAValue, int] = {}
    workspaces: dict[Operation, int] = {}
    for i, op in enumerate(ops):
        if isinstance(op, ConstantOp):
            continue
        dying = [o for o in dict.fromkeys(op.operands) if o in scratch and last_use[o] == i]
        results = [r for r in op.results if r in scratch]
        reused: SSAValue | None = None
        if computes_in_place(op) and results:
            r = results[0]
            reused = next(
                (
                    o
                    for o in dying
                    if shape_of(o) == shape_of(r) and element_type(o) == element_type(r)
                ),
                None,
            )
        for r in results:
            if reused is not None and r is results[0]:
                values[r] = values[reused]
            else:
                values[r] = pool.take(math.prod(shape_of(r)), element_type(r))
        if op.results and isinstance(op.results[0].type, TensorType):
            ws = workspace_shape(op, shape_of)
            if ws is not None:
                buf = pool.take(math.prod(ws), element_type(op.results[0]))
                workspaces[op] = buf
                pool.give(buf)
        for o in dying:
            if o is not reused:
                pool.give(values[o])
        for r in results:
            if r not in last_use:
                pool.give(values[r])
    buffers = tuple(ScratchBuffer(t, n) for t, n in zip(pool.types, pool.sizes, strict=True))
    return ScratchPlan(buffers=buffers, values=values, workspaces=workspaces)


def body_ops(op: TileOp | FusedOp) -> tuple[tuple[Operation, ...], tuple[SSAValue, ...]]:
    """The ops of a group's body (terminator excluded) and the values it yields."""
    ops = list(op.body.block.ops)
    term = ops.pop() if ops and isinstance(ops[-1], YieldOp) else None
    yielded = tuple(term.operands) if term is not None else ()
    return tuple(ops), yielded


def scratch_plan(op: TileOp | FusedOp) -> ScratchPlan:
    """The scratch buffers one tile of ``op`` uses (for a ``kernel.fused``: the whole body).

    Sizes come from the body's types, which for a ``kernel.tile`` are the
    full-tile slice types; a remainder tile uses a prefix of each buffer.
    """
    ops, yielded = body_ops(op)
    return plan_scratch(ops, yielded, tensor_shape)


__all__ = [
    "Dims",
    "GroupSpace",
    "ScratchBuffer",
    "ScratchPlan",
    "SpaceDim",
    "analyze_group",
    "body_ops",
    "computes_in_place",
    "plan_scratch",
    "scratch_plan",
    "tile_shape",
    "workspace_shape",
]
