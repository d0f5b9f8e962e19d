"""Choices of the native loops' plan (:class:`~tdsl.backend.llvm.loops_plan._GroupPlan`):
which matmuls a BLAS call computes whole (:func:`blas_output`) or a tile at a time
(:func:`tile_gemm`), which values a sweep also stores in an output's slice for a later
sweep to read back (:func:`output_staging`), which strided inputs are read in
packed blocks (:func:`packed_inputs`), and which scratch slot holds each stored value
(:func:`scratch_slots`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tdsl.backend.llvm.loops_common import (  # pyright: ignore[reportPrivateUsage]
    BLOCK,
    PACK_BYTES,
    _dim_set,  # pyright: ignore[reportPrivateUsage]
    _holds_exactly,  # pyright: ignore[reportPrivateUsage]
    _is_contraction,  # pyright: ignore[reportPrivateUsage]
    _is_reduction,  # pyright: ignore[reportPrivateUsage]
    _is_scan,  # pyright: ignore[reportPrivateUsage]
    _Packing,  # pyright: ignore[reportPrivateUsage]
    across_steps,
    computed_in_place,
    loops_bug,
    pass_gemms,
)
from tdsl.dialects.kernel import TileOp
from tdsl.dialects.kernel_plan import GroupBody, propagate_dims
from tdsl.dialects.structured import (
    ElementwiseOp,
    element_type,
    is_constant,
    numpy_dtype,
    reduction_of,
    tensor_shape,
)

if TYPE_CHECKING:
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]


def output_staging(plan: _GroupPlan) -> dict[SSAValue, int]:
    """Element-wise values that a reduction reads in the sweep that computes them and
    that an output's element-wise chain reads in a later sweep (softmax's
    ``exp(x - max)``: summed, then divided by the sum): the first sweep also stores
    each in its output's slice, and the later one reads it back instead of computing
    it again.  Only where the sweeps of a row share hoisted loops (the row is still in
    cache), and only when nothing but that chain reads the value after its sweep.
    The output's element type must hold the value's exactly: the same, or a wider
    float (an f32 ``exp`` in an f64 result is stored widened and read back
    narrowed, which gives the same f32)."""
    body = plan.body
    staged: dict[SSAValue, int] = {}
    for p in body.ops:
        if _is_reduction(p) or p in plan.blas or len(p.results) != 1:
            continue
        v = p.results[0]
        if v in plan.stored:
            continue
        level = plan.level[p]
        readers = [u.operation for u in v.uses if u.operation in body.members]
        if not any(_is_reduction(r) and plan.level[r] == level for r in readers):
            continue
        point = _dim_set(body.dims[v])
        chain: set[SSAValue] = set()
        frontier = [v]
        ok = True
        while frontier and ok:
            w = frontier.pop()
            if w in chain:
                continue
            chain.add(w)
            for use in w.uses:
                user = use.operation
                if user not in body.members:
                    continue
                if _is_reduction(user):
                    # only v itself, and only in its own sweep
                    ok = w is v and plan.level[user] == level
                elif len(user.results) != 1 or _dim_set(body.dims[user.results[0]]) != point:
                    ok = False
                else:
                    frontier.append(user.results[0])
                if not ok:
                    break
        if not ok:
            continue
        outputs = [k for k, w in enumerate(body.outputs) if w in chain]
        if len(outputs) != 1:
            continue
        k = outputs[0]
        q = body.producer(body.outputs[k])
        if (
            q is None
            or q is p
            or plan.level[q] <= level
            or body.outputs.count(body.outputs[k]) != 1
            or body.output_dims[k] != body.dims[v]
            or not _holds_exactly(element_type(body.outputs[k]), element_type(v))
            or k in plan.blas.values()
            or k in plan.in_output.values()
            or k in plan.stored_in_output.values()
            or k in staged.values()
        ):
            continue
        staged[v] = k
    return staged


def accumulated_in_outputs(plan: _GroupPlan) -> dict[Operation, int]:
    """The reductions of ``plan`` that accumulate in an output, to that output: each
    yielded as it is (no finalization, same dtype), and each matmul BLAS computes a tile
    at a time that an output's element-wise chain alone reads (its tile written into the
    output, the chain in place over it: no tile of scratch for it; a lone ``q @ k.T``,
    whose tile op records none, ran in tiles of one element)."""
    body = plan.body
    found: dict[Operation, int] = {}
    for k, v in enumerate(body.outputs):
        p = body.producer(v)
        if (
            p is None
            or not _is_reduction(p)
            or p in plan.blas
            or p in plan.gemm
            or p in found
            or body.outputs.count(v) != 1
            or reduction_of(p).finalizes()
            or reduction_of(p).accumulator().size != 1
            or reduction_of(p).accumulator_dtype() != numpy_dtype(v.type)
            or body.output_dims[k] != body.dims[v]
        ):
            continue
        found[p] = k
    for op in plan.gemm:
        k = epilogue_output(body, op)
        if k is not None and k not in (*found.values(), *plan.blas.values()):
            found[op] = k
    return found


def largest_bytes(tile: TileOp) -> int:
    """The bytes of the largest operand, result or recorded scratch of ``tile`` (the
    runtime's measure of whether a group's tiles are worth splitting over threads)."""
    values = [v for v in (*tile.operands, *tile.results) if isinstance(v.type, TensorType)]
    sizes = [math.prod(tensor_shape(v)) * numpy_dtype(v.type).itemsize for v in values]
    itemsize = max((numpy_dtype(v.type).itemsize for v in values), default=1)
    return max([tile.scratch_value * itemsize, *sizes])


def stored_in_outputs(plan: _GroupPlan) -> dict[SSAValue, int]:
    """Per stored value of ``plan`` that the group yields as one output of its own dims
    (not a reduction's, a scan's or BLAS's, and not accumulated in place), that output:
    the value is kept in the output's slice, which the sweep computing it writes anyway,
    and read back from there, not kept in scratch too."""
    body = plan.body
    found: dict[SSAValue, int] = {}
    for v in plan.stored:
        p = body.producer(v)
        if p is None or _is_reduction(p) or _is_scan(p) or body.outputs.count(v) != 1:
            continue
        k = body.outputs.index(v)
        if (
            body.output_dims[k] == body.dims[v]
            and k not in plan.blas.values()
            and k not in plan.in_output.values()
        ):
            found[v] = k
    return found


def blas_output(body: GroupBody, op: Operation) -> int | None:
    """The output a 2-D matmul on group inputs may write with BLAS, if any: the one
    output whose element-wise chain alone reads it, point by point, and that holds
    the matmul's element type."""
    if not _is_contraction(op):
        return None
    a, b = op.operands
    if len(tensor_shape(a)) != 2 or len(tensor_shape(b)) != 2:
        return None
    if body.producer(a) is not None or body.producer(b) is not None:
        return None
    if a in body.constants or b in body.constants:
        return None  # a constant is no input BLAS could be handed (it runs as loops)
    if str(element_type(op.results[0])) not in ("f32", "f64"):
        return None
    return epilogue_output(body, op)


def epilogue_output(body: GroupBody, op: Operation) -> int | None:
    """The output ``op``'s result may be computed in, if any: the one output whose
    element-wise chain alone reads the result, point by point, and that holds its
    element type (the chain then runs in place over it)."""
    result = op.results[0]
    point = _dim_set(body.dims[result])
    seen: set[SSAValue] = set()
    frontier = [result]
    while frontier:
        v = frontier.pop()
        if v in seen:
            continue
        seen.add(v)
        if _dim_set(body.dims[v]) != point:
            return None  # read along other dims (broadcast, reduced): not in place
        for use in v.uses:
            user = use.operation
            if user not in body.members:
                continue
            if _is_reduction(user) or len(user.results) != 1:
                return None
            frontier.append(user.results[0])
    outputs = [k for k, v in enumerate(body.outputs) if v in seen]
    if (
        len(outputs) != 1
        or body.output_dims[outputs[0]] != body.dims[result]
        or element_type(body.outputs[outputs[0]]) != element_type(result)
    ):
        return None  # (an f32 matmul whose chain is cast to an f64 output: not in place)
    return outputs[0]


def packed_inputs(plan: _GroupPlan) -> dict[SSAValue, _Packing]:
    """The strided 2-D inputs to pack: each lies contiguous along one space dim
    (``other``, a transpose's rows) while the loops run along another innermost
    (``inner``, its row-major last dim).  Read as they lie, a block's elements fall
    one per cache line (and, for a row length in bytes that is a multiple of 4 KiB,
    all in one cache set); so a sweep over exactly these two dims runs in blocks
    of :data:`BLOCK` along ``inner``, each first copied into a small buffer laid
    out as the input lies (the copy reads and writes contiguously), which the
    sweep then reads from cache.  Only where every read of the input is along
    the same two dims, the buffer (a block by ``other``'s tile) fits
    :data:`PACK_BYTES`, ``inner`` runs longer than a block, its elements lie a
    cache line apart or more (not a broadcast), and the elements are at most 4
    bytes or the row length aliases: f64 transposes with rows of other
    lengths ran 1.2-2x slower packed here (``python benchmarks/native_loops.py
    strided`` measures it)."""
    body = plan.body
    packed: dict[SSAValue, _Packing] = {}
    for a in plan.strides:
        reads = {
            body.reads[(op, i)] for op in body.ops for i, w in enumerate(op.operands) if w is a
        }
        if len(reads) != 1:
            continue
        (dims,) = reads
        if len(dims) != 2 or None in dims:
            continue
        other = plan.contiguous(a, dims)
        inner = dims[-1]
        if other is None or inner is None or other == inner or dims[0] == dims[1]:
            continue  # (None: one element along both dims, as a 1x1 tile, or a broadcast)
        size = numpy_dtype(a.type).itemsize
        if plan.tiles[other] * BLOCK * size > PACK_BYTES or plan.tiles[inner] <= BLOCK:
            continue
        step = abs(plan.strides[a][dims.index(inner)]) * size  # bytes along inner
        if step < 64 or (size > 4 and step % 4096):
            continue  # (under a cache line apart, a broadcast: read as they lie)
        packed[a] = _Packing(other, inner, dims)
    return packed


TILE_GEMM_INDEX_ARGS = 12
"""The ``index`` arguments of a tile's BLAS call after its three memrefs: ``m``, ``n``,
``k``, ``lda``, ``ldb``, ``ldc``, the three offsets, ``trans_a``, ``trans_b`` and
``acc`` (not 0: add the product to ``C``)."""


@dataclass(frozen=True)
class TileGemm:
    """A matmul ``C[..., i, j] = sum_k A[..., i, k] B[..., k, j]`` that a BLAS ``gemm``
    computes one tile at a time, inside the group's loops (one call per index of the
    leading batch dims, an attention's heads): ``A`` is a group input or a value of
    the group (computed tile by tile and stored: a layernorm's, a softmax's), or the
    transpose of a group input's last two axes (``trans_a``: BLAS reads the input's
    columns, nothing is copied: ``transpose(x) @ w``), ``B`` a group input, batched as
    ``A`` or 2-D (the same matrix for every batch index), or the transpose of one
    (``trans_b``: BLAS reads it transposed, nothing is copied), and ``C`` one tile in
    scratch, read by any op of a later sweep (a softmax, a reduction, another matmul)."""

    a: SSAValue
    """The left operand, as the matmul reads it, or the group input whose transpose it
    is (``trans_a``)."""
    b: SSAValue
    """The group input the right operand is (or whose transpose it is)."""
    trans_b: bool
    rows: int
    """The space dim of the result's rows (``i``)."""
    cols: int
    """The space dim of its columns (``j``)."""
    inner: int
    """The contraction's dim (``k``)."""
    batch: tuple[int | None, ...] = ()
    """The space dims of the leading batch dims, outer to inner (None: extent 1)."""
    b_batch: tuple[int | None, ...] = ()
    """Those ``B`` runs along: ``batch``, or none (a 2-D ``B``)."""
    trans_a: bool = False
    """``a`` is the group input whose last two axes the matmul's left operand transposes
    (BLAS reads its columns)."""

    def a_dims(self) -> tuple[int | None, ...]:
        """The dims of ``A`` (its input, where ``trans_a``) as it lies."""
        pair = (self.inner, self.rows) if self.trans_a else (self.rows, self.inner)
        return (*self.batch, *pair)

    def b_dims(self) -> tuple[int | None, ...]:
        """The dims of ``B``'s input as it lies."""
        pair = (self.cols, self.inner) if self.trans_b else (self.inner, self.cols)
        return (*self.b_batch, *pair)


def tile_gemm(body: GroupBody, op: Operation, args: Sequence[SSAValue]) -> TileGemm | None:
    """How BLAS may compute ``op`` tile by tile (see :class:`TileGemm`), if it may: an
    f32 or f64 matmul whose right operand is one of the group inputs ``args`` (or its
    transpose), whose dims are distinct space dims, and whose left operand has the
    result's batch dims."""
    if not _is_contraction(op) or len(op.operands) != 2:
        return None
    a, b = op.operands
    result = op.results[0]
    rank = len(tensor_shape(result))
    if rank < 2 or len(tensor_shape(a)) != rank or len(tensor_shape(b)) not in (2, rank):
        return None
    t = element_type(result)
    if str(t) not in ("f32", "f64") or element_type(a) != t or element_type(b) != t:
        return None
    c_dims, a_dims, b_read = body.dims[result], body.reads[(op, 0)], body.reads[(op, 1)]
    *batch, i, j = c_dims
    k = a_dims[-1]
    b_batch = tuple(b_read[:-2])
    named = [d for d in (*batch, i, j, k) if d is not None]
    if (
        i is None
        or j is None
        or k is None
        or tuple(a_dims) != (*batch, i, k)
        or tuple(b_read[-2:]) != (k, j)
        or b_batch not in ((), tuple(batch))
        or len(set(named)) != len(named)
    ):
        return None  # (a batch dim of extent 1 is in no space dim: None)
    trans_b = False
    p = body.producer(b)
    if p is not None:
        # the transpose of an input's last two axes, read as it lies (k.T in attention)
        source = _transposed_input(body, p, args, (*b_batch, j, k))
        if source is None:
            return None
        b, trans_b = source, True
    elif b not in args:
        return None
    trans_a = False
    p = body.producer(a)
    if p is not None and (source := _transposed_input(body, p, args, (*batch, k, i))):
        a, trans_a = source, True  # read as it lies, not transposed into scratch
    return TileGemm(a, b, trans_b, i, j, k, tuple(batch), b_batch, trans_a)


def _transposed_input(
    body: GroupBody, p: Operation, args: Sequence[SSAValue], dims: tuple[int | None, ...]
) -> SSAValue | None:
    """The group input ``p`` transposes, where ``p`` is a ``transpose`` of an input's last
    two axes read along ``dims`` (the input's dims as it lies); else None."""
    if p.name != "tensordsl.transpose" or len(p.operands) != 1:
        return None
    source = p.operands[0]
    if source not in args or tuple(body.reads[(p, 0)]) != dims:
        return None
    return source


def scratch_slots(plan: _GroupPlan) -> tuple[dict[SSAValue, int], list[SSAValue]]:
    """A scratch slot per stored value of ``plan`` (but those kept in an output), and the
    first value of each slot (its type is the slot's): a value stored in a sweep after the last sweep that reads
    another of the same type and dims takes over that one's slot, and so does a value
    an element-wise op computes from that other one in the sweep that reads it last,
    element by element, where nothing else reads it (``exp``'s tile divided by its row
    sums, written in place).  A matmul BLAS computes a tile at a time may write into a
    slot the same way (recorded in ``plan.shared``)."""
    body = plan.body
    slots: dict[SSAValue, int] = {}
    firsts: list[SSAValue] = []
    last_read: list[int] = []
    """Per slot: the last sweep level that reads it."""
    holder: list[SSAValue] = []
    """Per slot: the value stored in it last."""
    stored = set(plan.stored)
    own = across_steps(plan)  # (a pass's steps run their levels again: a slot each)
    kept: set[int] = set()
    """The slots of those values: no other value takes one over."""

    def computed_until(u: Operation) -> int:
        """The last sweep level that computes ``u`` (reads its operands): its own, or,
        for an element-wise op whose result is not stored, also each level that needs
        that result, where it is computed again."""
        if _is_reduction(u) or u in plan.blas or u in plan.gemm:
            return plan.level[u]
        if all(r in stored for r in u.results):
            return plan.level[u]
        return max([plan.level[u], *(read_until[r] for r in u.results)])

    read_until: dict[SSAValue, int] = {}
    """Per value, the last sweep level that reads it (its users' levels, and the levels
    where an element-wise user is computed again)."""
    for op in reversed(body.ops):  # a value's users come after it
        for r in op.results:
            read_until[r] = max(
                (computed_until(u.operation) for u in r.uses if u.operation in body.members),
                default=plan.level[op],
            )
    # the sweeps of the levels along a key dim (a flash op's, a cut contraction's) run
    # in a loop over its tiles: a value computed before that loop and read in it is read
    # until the loop ends, past its last level (a contraction's second matmul took the
    # slot of the first one's left operand, which the first read again in the next tile
    # of the contraction: `sum(x * ((x * 2) @ w @ w), axis=1)` was a quarter off)
    for key in {*plan.flash.values(), *plan.split.values()}:
        along = [op for op in body.ops if key in body.loop_dims(op)]
        end = max(plan.level[op] for op in along) + 1
        for op in along:
            for v in op.operands:
                p = body.producer(v)
                if p is not None and p not in along:
                    read_until[v] = max(read_until[v], end)

    def in_place(w: SSAValue, v: SSAValue, producer: Operation | None) -> bool:
        """Whether ``producer`` computes ``v`` from ``w`` element by element, and nothing
        else reads ``w`` in its sweep or later: ``v`` may overwrite ``w`` as it goes.  Nor
        may an op of that level read ``v``: a stored value is read from its slot from the
        next level on, and a sweep of its own level computes it again, from ``w`` (a
        recorded plan storing ``sum(x)`` and ``-sum(x)``, with ``x + -sum(x)`` at the
        level of ``-sum(x)``, negated the sum twice; found by fuzzing)."""
        if producer is None or w in body.outputs or body.dims[w] != body.dims[v]:
            return False
        level = plan.level[producer]
        members = body.members
        if not isinstance(producer, ElementwiseOp) or any(
            computed_until(u.operation) >= level
            for u in w.uses
            if u.operation in members and u.operation is not producer
        ):
            return False
        if any(plan.level[u.operation] <= level for u in v.uses if u.operation in members):
            return False
        return all(
            body.reads[(producer, k)] == body.dims[w]
            for k, operand in enumerate(producer.operands)
            if operand is w
        )

    def free_slot(
        v: SSAValue, start: int, producer: Operation | None = None
    ) -> tuple[int | None, int]:
        """A slot of ``v``'s type and dims whose reads are over before sweep ``start``, or
        whose value ``producer`` overwrites in place in that sweep (or None), and the
        last sweep that reads ``v``."""
        last = max(start, read_until.get(v, start))
        index = next(
            (
                i
                for i, w in enumerate(firsts)
                if i not in kept
                and v not in own
                and w.type == v.type
                and body.dims[w] == body.dims[v]
                and (
                    last_read[i] < start
                    or (last_read[i] == start and in_place(holder[i], v, producer))
                )
            ),
            None,
        )
        return index, last

    in_scratch = [v for v in plan.stored if v not in plan.stored_in_output]
    producers: dict[SSAValue, Operation] = {}
    for v in in_scratch:
        p = body.producer(v)
        if p is None:
            raise loops_bug("a stored value that no op of the group computes")
        producers[v] = p
    # in the order the sweeps store them: a slot is free once its last reader has run
    for v in sorted(
        in_scratch, key=lambda v: (plan.level[producers[v]], body.position[producers[v]])
    ):
        p = producers[v]
        index, last = free_slot(v, plan.level[p], p)
        if index is None:
            index = len(firsts)
            firsts.append(v)
            last_read.append(last)
            holder.append(v)
            if v in own:
                kept.add(index)
        else:
            last_read[index] = max(last, last_read[index])
            holder[index] = v
        slots[v] = index

    def read_before(u: Operation, v: SSAValue) -> bool:
        """Whether ``u`` is a reduction (in the loops, not BLAS's) that reads what it reads
        in sweeps before the one that stores ``v``: it is done with a slot before ``v``
        overwrites it."""
        return (
            _is_reduction(u)
            and not _is_contraction(u)
            and computed_until(u) < plan.level[producers[v]]
        )

    # a matmul BLAS computes a tile at a time whose product only the element-wise chain
    # to a stored value reads writes its tile into that value's slot, and the chain
    # overwrites it in place (an MLP's gelu over its first matmul): one tile of the
    # hidden layer's width in scratch, not two; one product a slot (SwiGLU's two
    # products both reach the one value they multiply into).  Reductions an earlier
    # sweep computes from the chain read it before it is overwritten (attention's scores,
    # whose row maximum comes first, overwritten by their ``exp``)
    for op in _slot_gemms(plan):
        index = next(
            (
                i
                for v, i in slots.items()
                if firsts[i] is v
                and i not in kept
                and i not in plan.shared.values()
                and computed_in_place(
                    body, op.results[0], v, stored, lambda u, v=v: read_before(u, v)
                )
            ),
            None,
        )
        if index is not None:
            plan.shared[op] = index
    # a matmul BLAS computes a tile at a time writes its tile into the slot of a
    # value whose last reads came in earlier sweeps (an MLP's second matmul into the
    # slot of the first one's left operand): its own buffer would take scratch that
    # taller tiles, on which BLAS runs faster, can use
    for op in _slot_gemms(plan):
        v = op.results[0]
        index, last = free_slot(v, plan.level[op])
        if index is not None:
            last_read[index] = max(last, last_read[index])
            holder[index] = v
            plan.shared[op] = index
    return slots, firsts


def _slot_gemms(plan: _GroupPlan) -> list[Operation]:
    """The matmuls BLAS computes a tile at a time that still accumulate in a buffer of
    their own and could write a stored value's slot instead (their accumulator holds
    their result's dtype)."""
    summed = pass_gemms(plan)  # (adding up over a pass's tiles: a buffer of its own)
    return [
        op
        for op in plan.accumulators()
        if op in plan.gemm
        and op not in summed
        and reduction_of(op).accumulator_dtype() == numpy_dtype(op.results[0].type)
    ]


LOOPS_SCRATCH_SLACK = 4096
"""Elements of scratch the loops may need beyond what a tile op records without saying
so: their scratch model and the NumPy target's differ in small ways (an accumulator the
plan keeps in its output)."""


def copied_body(
    tile: TileOp, body: GroupBody, copy: tuple[list[Operation], list[SSAValue], list[SSAValue]]
) -> GroupBody:
    """The body of ``tile`` (``body``) as the loops run it: its decomposed ``copy`` (new
    ops, outputs, inputs)."""
    new_ops, outputs, args = copy
    dims = propagate_dims(new_ops, dict(zip(args, tile.input_dims, strict=True)), len(body.extents))
    return GroupBody(
        extents=body.extents,
        kinds=body.kinds,
        ops=tuple(op for op in new_ops if not is_constant(op)),
        dims=dims,
        reads={(op, i): dims[v] for op in new_ops for i, v in enumerate(op.operands)},
        outputs=tuple(outputs),
        output_dims=body.output_dims,
        constants=frozenset(r for op in new_ops if is_constant(op) for r in op.results),
        prefer_whole=body.prefer_whole,
    )
