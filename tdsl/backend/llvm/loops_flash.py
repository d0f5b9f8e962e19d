"""Flash attention in the native loops: a ``softmax_matmul`` whose key dim the loops run
in tiles (the tile plan's, at most :data:`KEY_TILE`), with the online softmax's state
carried from tile to tile.

``tdsl-tile`` decomposes ``softmax(s) @ v`` into ``softmax_matmul`` where a key row
does not fit the memory budget, and cuts its key dim (``tiles``).  The loops run that
dim in the same tiles (``loops tiles``): per key tile, the ops feeding the scores (a
BLAS call for ``q @ k.T``, the scale, the mask) compute one tile of them, then, per row
of the tile,

1. the tile's scores go to a buffer ``P`` and their maximum ``m`` (NaN-propagating,
   ``-inf`` for a row of ``-inf``) to a row statistic;
2. ``P`` becomes ``exp(P - clip(m))`` (the shift clipped to finite values, so a row of
   ``-inf`` weighs nothing) and its sum ``l`` the other statistic;
3. ``T = P @ v`` over the tile's keys: a BLAS call where the scores are 2-D and ``v`` an
   f32 or f64 input, else loops vectorized along ``v``'s columns;
4. the tile's state ``(T, m, l)`` merges into the running one, one ``exp`` per result
   element: ``softmax_matmul``'s own :meth:`scalar_merge`, the step the numpy target's
   merge takes too.

The result is finalized from the state after the last tile, as the op's
``scalar_finalize_state`` says (``acc / total``, ``nan`` where the maximum is
infinite).  An ``exp`` per score (not per score and value column, as the element loops
of a reduction would take) and one pass over the keys: the scratch is a tile's scores,
``P``, ``T`` and two statistics per row, within what the tile op records.

A group qualifies where its key dim is reduced by this op alone and every op along it
feeds the op (no output, scan or staged value along it): see :func:`flash_keys`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, cast

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, Operation, SSAValue

from tdsl.backend.llvm.loops_choices import copied_body
from tdsl.backend.llvm.loops_common import (
    Storage,
    _Code,
    _is_reduction,
    _is_scan,
    blas_rows,
    cuts_reduction_dim,
    loops_bug,
)
from tdsl.dialects.kernel import TileOp
from tdsl.dialects.kernel_body import GroupBody
from tdsl.dialects.kernel_plan import Dims
from tdsl.dialects.structured import (
    IteratorType,
    convert_scalar,
    element_of,
    element_type,
    reduction_of,
)
from tdsl.dialects.tensordsl import SoftmaxMatmulOp
from tdsl.transforms.tile import decomposed_copy

if TYPE_CHECKING:
    from tdsl.backend.llvm.loops_emit import _Group

KEY_TILE = 256
"""The largest key tile the loops take (fewer keys where the plan's tile is smaller):
their parallel tiles, fitted to the scratch after it, then hold several query rows,
each tile of ``k`` and ``v`` read once for all of them.  On this machine's 2-core
EPYC, S=4096, d=64 at budget 4096 took 700 ms with the plan's 1,366 keys; with the
tile capped at 64, 128, 256, 512 and 1024 keys, 95, 84, 107, 95 and 160 ms (one run
each, by hand; ``benchmarks/flash_memory.py`` gives the figures at this cap)."""


def flash_keys(body: GroupBody, staged: Sequence[SSAValue] = ()) -> dict[Operation, int]:
    """The ``softmax_matmul`` op of ``body`` (the first, if any) the loops run in tiles
    of its key dim, to that dim: a reduction dim no other op reduces over, along which
    every op feeds the op (each result read only along it), and no output, scan or
    ``staged`` value runs."""
    found: dict[Operation, int] = {}
    for op in body.ops:
        if not isinstance(op, SoftmaxMatmulOp):
            continue
        s_dims, v_dims = body.reads[(op, 0)], body.reads[(op, 1)]
        r = s_dims[-1]
        if (
            r is None
            or body.kinds[r] is not IteratorType.REDUCTION
            or v_dims[-2] != r
            or v_dims[-1] is None
            or any(r in dims for dims in body.output_dims)
            or any(r in body.dims[v] for v in staged)
        ):
            continue
        if all(feeds_along(body, p, op, r) for p in body.ops if p is not op):
            found[op] = r
    # (one per group: its levels' ops along the key dim run in the loop over key tiles)
    return dict(list(found.items())[:1])


class FlashForm(NamedTuple):
    """A group's ops with each ``softmax`` feeding a ``matmul`` decomposed with it (one
    ``softmax_matmul``, flash attention's online softmax)."""

    copy: tuple[list[Operation], list[SSAValue], list[SSAValue]]
    """The decomposed copy (ops, outputs, inputs: see ``decomposed_copy``)."""
    copied: dict[SSAValue, SSAValue]
    """Each value that is not decomposed, to its copy."""
    body: GroupBody
    keys: set[int]
    """The key dims of its ``softmax_matmul`` ops (their scores' last dim)."""
    taken: bool
    """Whether the loops run the group so: where the tile op's tiles hold few key rows
    (:func:`prefers_flash`), or a recorded plan cuts the keys (read back as planned)."""


def flash_form(
    tile: TileOp, body: GroupBody, staged: Sequence[Operation], sweeps: Collection[Operation]
) -> FlashForm | None:
    """The flash form of ``tile`` (``body``; ``staged``: the ops whose values its plan
    stages, ``sweeps``: the ops the loops decompose into sweeps), None where no softmax
    feeds a matmul, or where a recorded plan cuts no reduction dim (it keeps the keys
    whole: not in that form)."""
    recorded = tile.loops_plan
    if recorded is not None and not cuts_reduction_dim(recorded.tiles, body.extents, body.kinds):
        return None
    ops, yielded = tile.body_ops()
    copied: dict[SSAValue, SSAValue] = {}
    args = list(tile.body.block.args)
    form = decomposed_copy(ops, list(yielded), args, copied, with_users=True, sweeps=sweeps)
    if form is None:
        return None
    candidate = copied_body(tile, body, form)
    keys = {
        r
        for op in candidate.ops
        if isinstance(op, SoftmaxMatmulOp) and (r := candidate.reads[(op, 0)][-1]) is not None
    }
    staged_there = [copied[r] for op in staged for r in op.results if r in copied]
    taken = prefers_flash(tile.tiles_value, candidate, staged_there) or (
        recorded is not None and any(recorded.tiles[r] < body.extents[r] for r in keys)
    )
    return FlashForm(form, copied, candidate, keys, taken)


FLASH_ROWS = 16
"""Fewer query rows than this in the tile op's tile, and more keys than
:data:`KEY_TILE`: the loops take a ``softmax`` feeding a ``matmul`` as one
``softmax_matmul`` (flash attention) though the tile plan keeps whole key rows.  With so
few rows per tile, the plain form reads all of ``k`` and ``v`` again for each of them
(S=4096, d=64 at budget 16384, 3 rows: 670 ms, against 200 on the numpy target)."""


FLASH_BLAS_ROWS = 8
"""Key tiles of at least this many query rows compute ``exp(s - max) @ v`` by BLAS;
fewer rows, by vectorized loops, which a BLAS call per key tile does not beat (S=4096,
d=64: at budget 65536, 15 rows a tile, 85 -> 64 ms by BLAS; at 4096, 3 rows, 95 -> 133
ms)."""


def prefers_flash(tiles: Sequence[int], body: GroupBody, staged: Sequence[SSAValue] = ()) -> bool:
    """Whether the loops run ``body`` (decomposed with ``softmax_matmul``) as flash
    attention, where the tile op's ``tiles`` hold fewer than :data:`FLASH_ROWS` rows of
    more than :data:`KEY_TILE` keys."""
    for op, r in flash_keys(body, staged).items():
        rows = [d for d in body.reads[(op, 0)] if d is not None and d != r]
        if body.extents[r] > KEY_TILE and math.prod(tiles[d] for d in rows) < FLASH_ROWS:
            return True
    return False


def feeds_along(body: GroupBody, p: Operation, op: Operation, r: int) -> bool:
    """Whether ``p`` keeps to the rules of a key tile of ``op`` along dim ``r``: not
    along it at all, or an op that neither reduces over it nor scans, whose results only
    ops along it read."""
    if r not in body.loop_dims(p):
        return True
    if _is_scan(p) or (_is_reduction(p) and any(r not in body.dims[x] for x in p.results)):
        return False
    for x in p.results:
        if x in body.outputs:
            return False
        for use in x.uses:
            u = use.operation
            if u in body.members and u is not op and r not in body.loop_dims(u):
                return False
    return True


def _stat_dims(s_dims: Dims, r: int) -> Dims:
    """A row statistic's dims: the scores' with the key dim taken as extent 1."""
    return tuple(None if d == r else d for d in s_dims)


def flash_types(
    body: GroupBody, op: Operation, r: int, tiles: Sequence[int]
) -> list[MemRefType[Attribute]]:
    """The buffers of ``op``'s key tiles at loops ``tiles``: ``P`` (a tile of scores),
    ``T`` (a tile's weighted sum) and the row maximum and sum, in the accumulator's
    dtype."""
    acc = element_of(reduction_of(op).accumulator_dtype())
    s_dims = body.reads[(op, 0)]

    def shape(dims: Dims) -> list[int]:
        return [1 if d is None else tiles[d] for d in dims]

    stat = shape(_stat_dims(s_dims, r))
    out = shape(body.dims[op.results[0]])
    return [MemRefType(acc, shape(s_dims)), MemRefType(acc, out)] + [MemRefType(acc, stat)] * 2


class FlashBuffers(NamedTuple):
    """The buffers of :func:`flash_types`, as the group function receives them."""

    p: SSAValue
    t: SSAValue
    top: SSAValue
    total: SSAValue


class At(Protocol):
    """A point of a loop nest (:class:`~tdsl.backend.llvm.loops_point._Point`)."""

    code: _Code

    def value(self, v: SSAValue, dims: Dims) -> SSAValue: ...
    def load(self, where: Storage, dims: Dims) -> SSAValue: ...
    def store(self, value: SSAValue, where: Storage, dims: Dims) -> None: ...


Ranges = Callable[[Sequence[int], _Code], list[tuple[int, SSAValue, SSAValue]]]


def emit_flash_tile(
    body: GroupBody,
    point: Callable[[_Code, dict[int, SSAValue]], At],
    code: _Code,
    op: Operation,
    r: int,
    buffers: FlashBuffers,
    state: Sequence[Storage],
    ranges: Ranges,
    blas: Callable[[_Code], bool] | None = None,
) -> None:
    """One key tile of ``op`` (``code`` inside the loop over its key tiles, whose scores'
    producers have run): steps 1 to 4 of the module's docstring, merging into the
    ``state`` places (the accumulator, then its further components); step 3 by BLAS
    where ``blas`` (given the key tile's code) emits it. ``point`` makes a
    point at a nest's innermost code and coordinates; ``ranges`` gives a nest's dims'
    ranges (the hoisted ones left out), constants at the given code."""
    s, v = op.operands
    s_dims, v_dims = body.reads[(op, 0)], body.reads[(op, 1)]
    out_dims = body.dims[op.results[0]]
    stat = _stat_dims(s_dims, r)
    rows = [d for d in s_dims if d is not None and d != r]
    col = v_dims[-1]
    if col is None:
        raise loops_bug("a softmax_matmul without value columns in tiles of its keys", op)
    dtype = reduction_of(op).accumulator_dtype()
    acc = element_of(dtype)
    p_buf, t_buf, top, total = (Storage(b, tiled=True) for b in buffers)
    finite = float(np.finfo(dtype).max)

    def nest(dims: Sequence[int]) -> At:
        inner, coords = code.nest(ranges(dims, code))
        return point(inner, coords)

    # 1. the scores into P, their row maximum
    at = nest(rows)
    at.store(at.code.scalar(-math.inf, acc), top, stat)
    at.store(at.code.scalar(0.0, acc), total, stat)
    at = nest([*rows, r])
    x = convert_scalar(at.code.b, at.value(s, s_dims), acc)
    at.store(x, p_buf, s_dims)
    m = at.load(top, stat)
    at.store(at.code.insert(arith.MaximumfOp(m, x)), top, stat)
    # 2. P = exp(P - clip(m)), then its row sum (a loop of its own: the exp vectorizes)
    at = nest([*rows, r])
    b = at.code
    m = at.load(top, stat)
    low = b.insert(arith.MaximumfOp(m, b.scalar(-finite, acc)))
    shift = b.insert(arith.MinimumfOp(low, b.scalar(finite, acc)))
    diff = b.insert(arith.SubfOp(at.load(p_buf, s_dims), shift))
    at.store(b.insert(xmath.ExpOp(diff)), p_buf, s_dims)
    at = nest([*rows, r])
    grown = at.code.insert(arith.AddfOp(at.load(total, stat), at.load(p_buf, s_dims)))
    at.store(grown, total, stat)
    # 3. T = P @ v over the tile's keys: BLAS where ``blas`` can, else loops with the
    # columns innermost
    if blas is None or not blas(code):
        at = nest([*rows, col])
        at.store(at.code.scalar(0.0, acc), t_buf, out_dims)
        at = nest([*rows, r, col])
        w = convert_scalar(at.code.b, at.value(v, v_dims), acc)
        product = at.code.insert(arith.MulfOp(at.load(p_buf, s_dims), w))
        total_t = at.code.insert(arith.AddfOp(at.load(t_buf, out_dims), product))
        at.store(total_t, t_buf, out_dims)
    # 4. the tile's state merged into the running one
    at = nest([*rows, col])
    running = [at.load(place, out_dims) for place in state]
    tile_state = [at.load(t_buf, out_dims), at.load(top, stat), at.load(total, stat)]
    merged = reduction_of(op).scalar_merge(at.code.b, running, tile_state)
    for value, place in zip(merged, state, strict=True):
        at.store(value, place, out_dims)


def flash_blas(
    group: _Group,
    code: _Code,
    op: Operation,
    r: int,
    buffers: FlashBuffers,
    storage: Mapping[SSAValue, Storage],
    starts: Mapping[int, SSAValue],
    ends: Mapping[int, SSAValue],
    hoisted: Mapping[int, SSAValue],
) -> bool:
    """``T = P @ v`` of a flash key tile by BLAS, where it can and its tiles hold at
    least :data:`FLASH_BLAS_ROWS` rows (f32 or f64 2-D scores whose rows are not
    hoisted, ``v`` a row-major input): whether it did."""
    body = group.body
    s_dims, v_dims = body.reads[(op, 0)], body.reads[(op, 1)]
    v = op.operands[1]
    where = storage.get(v)
    row, col = s_dims[0], v_dims[-1]
    if (
        len(s_dims) != 2
        or row is None
        or col is None
        or row in hoisted
        or group.tiles[row] < FLASH_BLAS_ROWS
        or tuple(v_dims) != (r, col)
        or body.producer(v) is not None
        or where is None
        or where.tiled
        or where.origin
        or where.axes
        or str(element_type(v)) not in ("f32", "f64")
        or cast(MemRefType[Attribute], buffers.p.type).element_type != element_type(v)
    ):
        return False
    v_type = cast(MemRefType[Attribute], where.ref.type)
    strides = v_type.get_strides()
    if len(strides) != 2 or not blas_rows(v_type):
        return False

    ldb = code.index(max(1, cast(int, strides[0])))
    b_off = code.insert(arith.MuliOp(starts[r], ldb))
    if col in starts:
        b_off = code.insert(arith.AddiOp(b_off, starts[col]))
    lda = code.index(cast(MemRefType[Attribute], buffers.p.type).get_shape()[1])
    ldc = code.index(cast(MemRefType[Attribute], buffers.t.type).get_shape()[1])
    zero = code.index(0)
    sizes = [group._extent(code, d, starts, ends) for d in (row, col, r)]
    refs = (buffers.p, where.ref, buffers.t)
    group.blas_call(code, op, refs, sizes, (lda, ldb, ldc), (zero, b_off, zero))
    return True
