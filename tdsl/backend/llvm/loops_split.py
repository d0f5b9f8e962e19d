"""A matmul's contraction in tiles, in the native loops: in a GPT-2 MLP,
``gelu(x @ w1 + b1) @ w2``, the hidden dim (the second matmul's contraction) runs in
tiles, each tile of the hidden layer computed and then added into the result by BLAS
(``C += A @ B``: the tile ``gemm`` call's ``acc`` argument, not 0 after the first tile).

Without it the loops cut only the rows of such a group, in at least two tiles per
thread (:data:`~tdsl.backend.llvm.loops_common.GEMM_SPLIT_TILES`: one per thread would
hold the whole hidden layer over the threads' scratch). BLAS is slower on those shorter
tiles: ``python benchmarks/mlp_gemm_tiles.py`` (T=512, E=768, hidden 3072, f32, two
threads, BLAS on each alone) measured the MLP's two GEMMs in 27.2 ms as tiles of 128
rows by the whole hidden layer, 24.8 ms as tiles of 256 rows by 1536 hidden columns (the
same scratch), and 25.4 ms whole with BLAS on both threads; the native MLP took 27.9 ms
and its bare chain ``(x @ w1) @ w2`` 27.7 ms, so the time over the GEMMs was the tiles'
shape, not the epilogue.

A matmul qualifies (:func:`contraction_keys`) where BLAS computes it a tile at a time,
its left operand is computed in the group (or, to share another's contraction where
the plan without it breaks the budget, an input: :func:`shares_inputs`), and its
contraction is a reduction dim along which every op feeds it (no output, scan or
staged value runs along it): the rule
of a flash key tile (:func:`~tdsl.backend.llvm.loops_flash.feeds_along`), but for
reductions along it that only ops after the loop read (:func:`carried`) or that run
before it (:func:`before_loop`: a layer norm's statistics), and where no op along it
reads the matmul's result; the readers must run at levels after the loop, the
statistics at levels before it (:func:`order_error`, checked once the levels are
planned). Where the contraction has at least :data:`CONTRACTION_MIN` elements (and no
statistics run before the loop), the plan takes one tile of rows per thread and the
contraction in :data:`CONTRACTION_TILES` tiles, or more where the scratch needs
(:func:`fit_contraction`); where rows of one element with that contraction tile still
break the scratch, any contraction is halved further, to 1 if need be, or to the tile
op's tile where that is shorter (the tile op's plan cuts it to fit a small budget:
``exp(a) @ b``; ``_GroupPlan._fit``); a recorded plan may cut a qualifying contraction
into any tiles the verifier allows. The emission is the flash key loop's: what runs
along the dim runs in a loop over its tiles, the rest before and after it, the
statistics in levels of their own before it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue

from tdsl.backend.llvm.loops_choices import TileGemm, tile_gemm
from tdsl.backend.llvm.loops_common import (
    _is_contraction,  # pyright: ignore[reportPrivateUsage]
    _is_reduction,  # pyright: ignore[reportPrivateUsage]
    _is_scan,  # pyright: ignore[reportPrivateUsage]
    op_levels,
)
from tdsl.backend.llvm.loops_flash import feeds_along
from tdsl.dialects.kernel_body import GroupBody
from tdsl.dialects.structured import ElementwiseOp, IteratorType, body_of, tensor_shape
from tdsl.errors import TdslIRError

if TYPE_CHECKING:
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]
    from tdsl.dialects.kernel import TileOp

CONTRACTION_TILES = 2
"""The tiles a qualifying matmul's contraction runs in (each thread's tile of rows then
holds half of its rows of the hidden layer, as two tiles of half the rows did)."""

CONTRACTION_MIN = 512
"""The shortest contraction the loops cut: a tile of fewer than 256 is a short BLAS call."""


def contraction_keys(
    body: GroupBody,
    args: Sequence[SSAValue],
    staged: Sequence[SSAValue] = (),
    inputs: bool = False,
    plan_tiles: Sequence[int] = (),
) -> dict[Operation, int]:
    """The matmul of ``body`` (the first, if any; the first whose contraction the tile
    op's ``plan_tiles`` cut, if any does) whose contraction the loops may run in tiles,
    to that dim (see the module's text), with the other matmuls that share that
    contraction and would qualify too (``(relu(a) @ b) * (relu(a) @ c)``: one loop over
    its tiles, each matmul adding its products); ``args`` are the group's inputs.  With
    ``inputs``, a matmul whose left operand is an input may share the contraction
    (``(relu(a) @ b) * (a @ c)``; BLAS reads ``a``'s columns as they lie).  (The plan's
    cut first: ``exp((relu(a) @ c) + (relu(a) @ b)) @ d``, whose plan cuts the hidden dim
    ``d`` sums over, cut the first matmuls' contraction instead, into tiles of 1.)"""

    def cut(op: Operation, shares: bool = False) -> int | None:
        g = tile_gemm(body, op, args)
        if g is None:
            return None
        r = g.inner
        left = body.producer(g.a)
        if (
            # (an input's columns in tiles would save nothing, but where another matmul
            # runs along the same contraction: BLAS reads them as they lie)
            (left is None and not (shares and inputs))
            or g.trans_a
            or body.kinds[r] is not IteratorType.REDUCTION
            # (BLAS reads it as it lies: not a reduction's accumulator, but a matmul's)
            or (_is_reduction(left) and tile_gemm(body, left, args) is None)
            or any(r in dims for dims in body.output_dims)
            or any(r in body.dims[v] for v in staged)
            or _read_along(body, op, r)
        ):
            return None
        return r

    found: list[dict[Operation, int]] = []
    for op in body.ops:
        if (r := cut(op)) is None:
            continue
        shared = {
            o: r
            for o in body.ops
            if o is not op and _is_contraction(o) and r in body.loop_dims(o) and cut(o, True) == r
        }
        # (a reduction over r: carried over the loop, or a statistic run before it)
        if all(
            p in shared or feeds_along(body, p, op, r) or _reduces(body, p, r)
            for p in body.ops
            if p is not op
        ):
            if not plan_tiles or plan_tiles[r] < body.extents[r]:
                return {op: r, **shared}
            found.append({op: r, **shared})
    return found[0] if found else {}


def shares_inputs(plan: _GroupPlan, keys: Mapping[Operation, int]) -> bool:
    """Whether a matmul on an input may share the contraction of ``plan``'s matmuls
    ``keys`` (:func:`contraction_keys` with ``inputs``), where they do not."""
    tiles = plan.tile.tiles_value
    return contraction_keys(plan.body, plan.args, plan.staged_values, True, tiles) != keys


def plan_keys(
    body: GroupBody,
    args: Sequence[SSAValue],
    staged: Sequence[SSAValue],
    tile: TileOp,
    inputs: bool | None,
) -> dict[Operation, int]:
    """The matmuls whose contraction the loops of ``tile`` may cut, to that dim
    (:func:`contraction_keys`, with matmuls on inputs where ``inputs``).  Those of a
    recorded plan are those whose contraction its tiles cut, as the planner chose them:
    without matmuls on inputs, or, where those cut none, with them (the planner's second
    plan, :func:`shares_inputs`).  With them from the start, another matmul's contraction
    could come first: the plan of ``(exp(a) @ e) * (relu(g) @ b) - (a @ e)`` cuts
    ``relu(g) @ b``'s, and read back it was refused (``exp(a) @ e`` qualified, with
    ``a @ e``; found by fuzzing)."""
    record, tiles = tile.loops_plan, tile.tiles_value
    if record is None:
        return contraction_keys(body, args, staged, bool(inputs), tiles)
    plain = contraction_keys(body, args, staged, plan_tiles=tiles)
    for keys in (plain, contraction_keys(body, args, staged, True, tiles)):
        if any(record.tiles[r] < body.extents[r] for r in keys.values()):
            return keys
    return plain


def _read_along(body: GroupBody, op: Operation, r: int) -> bool:
    """Whether an op along ``r`` reads ``op``'s result, directly or through other ops:
    the loop over ``r``'s tiles would read a result still missing them (the first matmul
    of ``sum(x * ((x * 2) @ w @ w), axis=1)``, whose product the second reads along the
    first's contraction; the second's contraction is cut instead)."""
    return any(r in body.loop_dims(p) for p in _readers(body, {op}))


def _readers(body: GroupBody, sources: set[Operation]) -> Iterator[Operation]:
    """The ops of ``body`` that read a result of ``sources``, directly or through other
    ops, in program order (a reader comes after what it reads)."""
    reached = set(sources)
    for p in body.ops:
        if p not in reached and any(body.producer(v) in reached for v in p.operands):
            reached.add(p)
            yield p


def carried(body: GroupBody, p: Operation, r: int) -> bool:
    """Whether ``p`` is a reduction over ``r`` (not a matmul, not a scan) whose results
    no op along ``r`` reads, directly or through other ops: its accumulator runs on over
    the loop's tiles, set before the loop and read after it (``sum(relu(a), axis=1)``
    beside ``relu(a) @ b``; :func:`order_error` checks that its readers come after the
    loop)."""
    return _reduces(body, p, r) and not _read_whole(body, p, r)


def before_loop(body: GroupBody, p: Operation, r: int) -> bool:
    """Whether ``p`` is a reduction over ``r`` (not a matmul, not a scan) whose results
    an op along ``r`` reads, directly or through other ops: a row statistic the loop
    over ``r``'s tiles needs whole (``layernorm(x) @ w``: the mean and the variance of
    ``x``'s rows).  It runs before that loop, in a sweep over all of ``r``
    (:func:`order_error` checks that it comes at a level before the loop's)."""
    return _reduces(body, p, r) and _read_whole(body, p, r)


def _reduces(body: GroupBody, p: Operation, r: int) -> bool:
    """Whether ``p`` reduces over ``r``: not a matmul, not a scan."""
    if not _is_reduction(p) or _is_contraction(p) or _is_scan(p):
        return False
    return r in body.loop_dims(p) and all(r not in body.dims[x] for x in p.results)


def _read_whole(body: GroupBody, p: Operation, r: int) -> bool:
    """Whether an op along ``r`` reads a result of ``p``, directly or through others."""
    return any(r in body.loop_dims(q) for q in _readers(body, {p}))


def order_error(plan: _GroupPlan) -> TdslIRError | None:
    """None where every op that reads a cut contraction's matmul, or a reduction
    :func:`carried` along it, directly or through other ops, runs at a level after those
    of the ops along it: the loops run those levels after the loop over its tiles, once
    all of them are in; and where the matmul and the values stored along it run at
    levels after those of its :func:`statistics`, which run over all of it before the
    loop.  Else a located error saying which op does not: raised for a recorded plan
    (one whose passes add up the contraction records ``summed`` instead), while the
    planner plans without the loop over the contraction's tiles (the tile op's passes,
    where they run)."""
    body = plan.body
    for op, r in plan.split.items():
        along = [o for o in body.ops if r in body.loop_dims(o)]
        top = max(plan.level[o] for o in along)
        pre = statistics(body, r)
        first = _first_level(plan, pre)
        for p in along:
            if first is None or p in pre or plan.level[p] >= first:
                continue
            if (
                p is op
                or any(v in plan.stored for v in p.results)
                or (_is_reduction(p) and not _reduces(body, p, r))  # (not carried)
            ):
                # (it would run in a sweep over all of d{r} before the loop: a reduction
                # over d{r} may, as a statistic does, but not a value stored one tile at
                # a time, nor a reduction along d{r}, whose accumulator holds one tile:
                # `sum(a, axis=0)` of `a`'s columns, d{r}, ran before a loop cutting them
                # and its tile took all 257, 74% off; found by fuzzing)
                return TdslIRError(
                    f"the loops plan cuts d{r}, the contraction of '{op.name}' (op "
                    f"{body.position[op]} of the group), but op {body.position[p]} "
                    f"('{p.name}') runs along it at the level of a statistic along d{r} "
                    f"that the loop over its tiles reads whole: give d{r} whole, or store "
                    "fewer values",
                    op=plan.tile,
                )
        for p in _loop_readers(body, op, r, along, pre):
            if r in body.loop_dims(p) or plan.level[p] <= top:
                return TdslIRError(
                    f"the loops plan cuts d{r}, the contraction of '{op.name}' (op "
                    f"{body.position[op]} of the group), but op {body.position[p]} reads "
                    f"what the loop over its tiles computes within that loop: give d{r} whole",
                    op=plan.tile,
                )
    return None


def _loop_readers(
    body: GroupBody, op: Operation, r: int, along: Sequence[Operation], pre: Sequence[Operation]
) -> Iterator[Operation]:
    """The ops reading what the loop over the tiles of ``r`` computes: ``op``'s result (a
    matmul along it) and the reductions carried over it (of ``along``, not statistics
    ``pre``), directly or through other ops."""
    carried_along = (o for o in along if o not in pre and _reduces(body, o, r))
    return _readers(body, {op, *carried_along})


def statistics(body: GroupBody, r: int) -> list[Operation]:
    """The reductions over ``r`` that run before the loop over its tiles
    (:func:`before_loop`)."""
    return [p for p in body.ops if before_loop(body, p, r)]


def level_floors(plan: _GroupPlan) -> dict[Operation, int]:
    """The least level of each op along a contraction of ``plan.split`` its tiles cut
    (by its levels so far) that runs in the loop over them, after the :func:`statistics`:
    the level after theirs.  An op that feeds no statistic is computed where the loop
    needs it (``exp(a)`` in ``(layernorm(a) @ b) * (exp(a) @ c)`` came at level 0, the
    first statistic's, and :func:`order_error` kept the contraction whole); one that
    feeds a statistic stays before it.

    Then each op reading what the loop computes (a matmul along it, a reduction carried
    over it) comes at a level after the loop's: ``(g @ b) * (g @ c) * (exp(a / 4) @ c)``
    (3x511 by 511x64, budget 256) read ``g @ b`` and ``g @ c`` at level 1, inside the loop
    (``exp(a / 4) @ c`` ran at level 1, after the stored ``exp``), and
    :func:`order_error` kept the contraction whole (513 elements, a loops budget
    warning)."""
    body = plan.body
    floors: dict[Operation, int] = {}
    cut = {op: r for op, r in plan.split.items() if plan.tiles[r] < plan.extents[r]}
    # (not cut: no loop over its tiles, its sweeps as they were)
    stats = {r: statistics(body, r) for r in set(cut.values())}
    for r, pre in stats.items():
        first = _first_level(plan, pre)
        if first is None:
            continue
        feeding = _feeders(body, pre)
        for p in body.ops:
            if r in body.loop_dims(p) and p not in feeding and plan.level[p] < first:
                floors[p] = max(floors.get(p, 0), first)
    level = op_levels(body, plan.blas, plan.stored, floors) if floors else plan.level
    for op, r in cut.items():
        along = [o for o in body.ops if r in body.loop_dims(o)]
        top = max(level[o] for o in along)
        for p in _loop_readers(body, op, r, along, stats[r]):
            if r not in body.loop_dims(p) and level[p] <= top:
                floors[p] = max(floors.get(p, 0), top + 1)
    return floors


def _feeders(body: GroupBody, ops: Sequence[Operation]) -> set[Operation]:
    """``ops`` and the ops they read, directly or through other ops."""
    reached = set(ops)
    for p in reversed(body.ops):
        if p in reached:
            reached.update(q for v in p.operands if (q := body.producer(v)) is not None)
    return reached


def loop_level(plan: _GroupPlan, r: int) -> int | None:
    """The first level of the loop over the tiles of ``r`` (a cut contraction) where ops
    reduce over ``r`` before it (:func:`statistics`): the level after theirs, which
    run over all of ``r`` first; None where none does."""
    return _first_level(plan, statistics(plan.body, r))


def _first_level(plan: _GroupPlan, pre: Sequence[Operation]) -> int | None:
    """The level after those of the statistics ``pre`` (None: there are none)."""
    return max(plan.level[p] for p in pre) + 1 if pre else None


def cut_contractions(
    body: GroupBody, split: Mapping[Operation, int], own: Sequence[int], tiles: list[int]
) -> bool:
    """Cut the contractions of ``split`` of at least :data:`CONTRACTION_MIN` into
    :data:`CONTRACTION_TILES` tiles (of ``tiles``, in place; within the tile op's ``own``
    tiles): whether any is cut.  Not where :func:`statistics` run before the loop: a
    second sweep over their inputs, for scratch that fits (``_GroupPlan._fit`` cuts it
    where it does not)."""
    cut = False
    extents = body.extents
    for r in split.values():
        if extents[r] >= CONTRACTION_MIN and not statistics(body, r):
            tiles[r] = min(own[r], -(-extents[r] // CONTRACTION_TILES))
            cut = True
    return cut


def fit_contraction(
    split: Mapping[Operation, int],
    extents: Sequence[int],
    tiles: list[int],
    limit: int,
    scratch_at: Callable[[Sequence[int]], int],
) -> None:
    """Cut the contractions of ``split`` into more tiles (of ``tiles``, in place), down
    to tiles of half :data:`CONTRACTION_MIN`, until the scratch (``scratch_at``) fits
    ``limit``: before any row tile is halved, since BLAS keeps its speed on tiles of
    256 rows by 768 hidden columns (24.9 ms in ``benchmarks/mlp_gemm_tiles.py``) and
    loses it on 128 rows (26.3 ms by 1536)."""
    for r in split.values():
        if tiles[r] >= extents[r]:
            continue
        count = -(-extents[r] // tiles[r])
        while scratch_at(tiles) > limit:
            smaller = -(-extents[r] // (count + 1))
            if smaller < CONTRACTION_MIN // 2:
                break
            count += 1
            tiles[r] = smaller


def larger_blas_tiles(
    a: Sequence[int],
    b: Sequence[int],
    split: Mapping[Operation, int],
    gemm: Mapping[Operation, TileGemm],
) -> bool:
    """Whether loops ``a`` give the BLAS calls of the matmuls of ``split`` (their tile
    gemms, ``gemm``: rows by contraction) larger tiles than ``b`` do: a larger shorter
    side, then a larger area (128 rows by 1536 of the contraction over 128 by 256)."""

    def size(t: Sequence[int]) -> tuple[int, int]:
        sides = [(t[gemm[op].rows], t[r]) for op, r in split.items() if op in gemm]
        return min((min(s) for s in sides), default=0), sum(x * y for x, y in sides)

    return size(a) > size(b)


BLAS_CALL_ELEMENTS = 3000
"""What a BLAS call costs besides packing its right operand, in elements packed: about
0.9 us a call and 0.3 ns an element here (1,920 calls of 100x5 by 5x5 took 1.75 ms; a
1x768 by 768x3072 ``sgemm``, which packs the 768x3072 operand, 0.7 ms)."""


CHEAPER_BLAS = 2
"""A plan that cuts no contraction replaces one that cuts one where its BLAS calls cost
at most 1/``CHEAPER_BLAS`` as much (:func:`cheaper_blas`): the cost is a rough model."""


def blas_cost(plan: _GroupPlan) -> int:
    """What the BLAS calls of a run of ``plan``'s loops cost, in elements packed
    (:data:`BLAS_CALL_ELEMENTS` a call): a matmul BLAS computes a tile at a time calls
    it once per tile of the dims it runs along (its contraction's too), each call
    packing the right operand's tile (contraction by columns); one writing a whole
    output, once, packing all of it."""
    body, extents, tiles = plan.body, plan.extents, plan.tiles
    cost = 0
    for op in plan.blas:
        cost += BLAS_CALL_ELEMENTS + math.prod(tensor_shape(op.operands[1]))
    for op, g in plan.gemm.items():
        dims = {d for d in body.loop_dims(op) if d is not None}
        calls = math.prod(-(-extents[d] // tiles[d]) for d in dims)
        cost += calls * (BLAS_CALL_ELEMENTS + tiles[g.inner] * tiles[g.cols])
    return cost


def cheaper_blas(plan: _GroupPlan, whole: _GroupPlan) -> bool:
    """Whether ``whole`` (the plan that cuts no contraction) should be taken over
    ``plan``, which cuts one: it keeps the scratch ``plan`` keeps and its BLAS calls cost
    far less (:func:`blas_cost`, :data:`CHEAPER_BLAS`).  ``mean(relu(a) @ b, axis=0)`` (100x300 by 300x160) at
    budget 1024 fitted whole rows by cutting the contraction and columns to 5: 1,920
    BLAS calls, 1.75 ms; the plan's passes over tiles of 2 rows, the contraction whole,
    make 50, 0.097 ms (2.55M elements packed against 5.8M).  Not ``x + tanh(layernorm(x)
    @ w1) @ w2`` (256x768, 768x3072) at budget 4096 on two threads: its plan without a
    cut takes a row a tile, 512 calls packing 768x3072 each, as much in all as the 2,048
    calls of its cut contraction pack (its tiles 1 by 768), and took 17.8 s against
    0.23 s (OpenBLAS's threads at every call of one row)."""
    fits = whole._scratch_elements() <= max(plan._scratch_elements(), plan.limit)  # pyright: ignore[reportPrivateUsage]
    return fits and CHEAPER_BLAS * blas_cost(whole) <= blas_cost(plan)


LOOPS_MAC_ELEMENTS = 4
"""What a multiply-add of a matmul the loops compute costs, in elements BLAS packs
(:func:`blas_cost`): ``mean(relu(a) @ b, axis=0)`` (100x300 by 300x160) in loops took
3.7 ms for its 4.8M, about 0.8 ns each against 0.3 ns an element packed; rounded up
(BLAS's own multiply-adds, some 100 times faster, are left out)."""


def loops_macs(plan: _GroupPlan, ops: Iterable[Operation] | None = None) -> int:
    """The multiply-adds of the matmuls ``ops`` of ``plan`` (by default those its loops
    compute, not BLAS): their iteration spaces."""
    body = plan.body
    return sum(
        math.prod(plan.extents[d] for d in {d for d in body.loop_dims(op) if d is not None})
        for op in (_in_loops(plan) if ops is None else ops)
    )


def cheaper_loops(plan: _GroupPlan, loops: Callable[[], _GroupPlan]) -> bool:
    """Whether the plan ``loops`` makes (the matmuls ``plan`` gives BLAS a tile at a time
    computed in loops) should be taken over ``plan``: it keeps the scratch ``plan``
    keeps and costs far less (:data:`CHEAPER_BLAS`), its loops' multiply-adds counted
    at :data:`LOOPS_MAC_ELEMENTS` beside the BLAS calls' cost (:func:`blas_cost`).
    ``mean(relu(a) @ b, axis=0)`` (100x300 by 300x160) at budgets 64 and 256 called
    BLAS for each element of the contraction and column, 48,000 calls of 100x1 by 1x1,
    39 ms; its loops take 3.7 ms.  ``loops`` is planned only where the calls alone cost
    that much more than the multiply-adds."""
    if not plan.gemm:
        return False
    floor = LOOPS_MAC_ELEMENTS * loops_macs(plan, plan.gemm)
    if CHEAPER_BLAS * floor > blas_cost(plan):
        return False  # (the loops' multiply-adds alone cost too much)
    other = loops()
    fits = other._scratch_elements() <= max(plan._scratch_elements(), plan.limit)  # pyright: ignore[reportPrivateUsage]
    if not fits or any(_recomputes_math(other, op) for op in _in_loops(other)):
        return False

    def cost(p: _GroupPlan) -> int:
        return blas_cost(p) + LOOPS_MAC_ELEMENTS * loops_macs(p)

    return CHEAPER_BLAS * cost(other) <= cost(plan)


def _in_loops(plan: _GroupPlan) -> list[Operation]:
    """The matmuls of ``plan`` its loops compute (not BLAS)."""
    body = plan.body
    return [op for op in body.ops if _is_contraction(op) and op not in {**plan.blas, **plan.gemm}]


def _recomputes_math(plan: _GroupPlan, op: Operation) -> bool:
    """Whether ``plan``'s loops compute an operand of ``op`` again at each of its
    multiply-adds through an element-wise op that calls a math function (``tanh``,
    ``exp``, a layer norm's ``sqrt``) or through another op (a ``softmax``: 3x slower
    found by fuzzing): not an input, a stored value or a reduction's.
    ``max(tanh(a) @ b, axis=0, keepdims=True)`` (100x160 by 160x160) at budget 64 took
    14.3 ms so, against 2.8 ms with BLAS on a stored column of ``tanh(a)``."""
    body, todo, seen = plan.body, list(op.operands), set[SSAValue]()
    while todo:
        v = todo.pop()
        p = body.producer(v)
        if v in seen or v in plan.stored or p is None or _is_reduction(p):
            continue
        if not isinstance(p, ElementwiseOp):
            return True  # (a softmax's, a scan's row: computed again, at best, per product)
        seen.add(v)
        if any(o.name.startswith(("math.", "tdslmath.")) for o in body_of(p).block.ops):
            return True
        todo.extend(p.operands)
    return False


def widen_tiles(
    plan: _GroupPlan,
    shrunk: list[int],
    tiles: Sequence[int],
    limit: int,
    cuttable: Callable[[int], bool],
) -> int:
    """Widen the parallel tiles of ``shrunk`` (in place; those ``cuttable``), outermost
    first, each to the largest within ``tiles`` whose scratch fits ``limit``, after the
    planner halved them all to 1 and then cut a contraction to fit; the scratch.
    ``(relu(a) @ b) * (a @ c)`` (100x300 by 300x160) at budget 256 ran tiles of one
    column (176 ms, a BLAS call per element of the contraction, row and column) where 80
    columns fit, as the tile op's plan has them."""
    for d, most in enumerate(tiles):
        if cuttable(d):
            shrunk[d] = widest_tile(plan, shrunk, d, most, limit)
    return plan._scratch_at_tiles(shrunk)  # pyright: ignore[reportPrivateUsage]


def widest_tile(plan: _GroupPlan, tiles: Sequence[int], d: int, most: int, limit: int) -> int:
    """The largest tile of dim ``d``, from ``tiles[d]`` up to ``most``, with which
    ``plan``'s scratch at ``tiles`` fits ``limit`` (a binary search; at least
    ``tiles[d]``)."""
    lo, hi = tiles[d], most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        trial = [mid if k == d else t for k, t in enumerate(tiles)]
        fits = plan._scratch_at_tiles(trial) <= limit  # pyright: ignore[reportPrivateUsage]
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return lo


def runs_along(body: GroupBody, d: int, args: Sequence[SSAValue]) -> bool:
    """Whether every op of ``body`` runs along dim ``d``, but the transposes of group
    inputs that BLAS reads as they lie (``k.T`` of an attention head whose ``k`` is a
    window of a qkv product): they compute nothing in the loops."""
    gemms = {op: g for op in body.ops if (g := tile_gemm(body, op, args)) is not None}
    in_place = {
        p
        for op, g in gemms.items()
        for read, operand in ((g.trans_a, op.operands[0]), (g.trans_b, op.operands[1]))
        if read
        and (p := body.producer(operand)) is not None
        and all(use.operation in gemms for use in p.results[0].uses)
    }
    return all(d in body.loop_dims(op) or op in in_place for op in body.ops)


__all__ = [
    "CONTRACTION_MIN",
    "CONTRACTION_TILES",
    "before_loop",
    "carried",
    "contraction_keys",
    "cut_contractions",
    "fit_contraction",
    "larger_blas_tiles",
    "level_floors",
    "loop_level",
    "order_error",
    "plan_keys",
    "runs_along",
    "shares_inputs",
    "statistics",
    "widen_tiles",
    "widest_tile",
]
