"""The plan of one group's loops for ``tdsl-lower-to-loops`` (``_GroupPlan``): its
tiles fitted to the scratch the ``kernel.tile`` records, the accumulators and stored
values in scratch (long chains kept, staged values), BLAS matmuls, packed strided
inputs and hoistable dims; :mod:`tdsl.backend.llvm.loops_emit` builds the code."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, Operation, SSAValue

from tdsl.backend.llvm.loops_choices import (
    LOOPS_SCRATCH_SLACK,
    TileGemm,
    accumulated_in_outputs,
    blas_output,
    copied_body,
    largest_bytes,
    output_staging,
    packed_inputs,
    scratch_slots,
    stored_in_outputs,
    tile_gemm,
)
from tdsl.backend.llvm.loops_common import (
    BLOCK,
    GEMM_SPLIT_TILES,
    SPLIT_TILES,
    Storage,
    _is_contraction,
    _is_reduction,
    _is_scan,
    _state_size,
    contiguous_dim,
    hoistable_dims,
    keep_long_chains,
    loops_bug,
    op_levels,
    pass_contractions,
    sweep_readers,
    swept_ops,
)
from tdsl.backend.llvm.loops_flash import KEY_TILE, flash_form, flash_keys, flash_types
from tdsl.backend.llvm.loops_passes import LoopsStep, plan_passes
from tdsl.backend.llvm.loops_recorded import (
    check_cut_dims,
    check_recorded_scratch,
    check_split,
    numbered_values,
    over_budget,
    read_once,
    recorded_blas,
    recorded_stored,
    warn_over_budget,
)
from tdsl.backend.llvm.loops_split import (
    cheaper_blas,
    cheaper_loops,
    cut_contractions,
    fit_contraction,
    larger_blas_tiles,
    level_floors,
    order_error,
    plan_keys,
    runs_along,
    shares_inputs,
    widen_tiles,
    widest_tile,
)
from tdsl.defaults import MIN_BLAS_BYTES_PER_THREAD
from tdsl.dialects.kernel import TileOp
from tdsl.dialects.kernel_plan import Dims, GroupBody, LoopsPlan, carried_dims, carry_dims
from tdsl.dialects.structured import (
    IteratorType,
    Scan,
    element_of,
    element_type,
    reduction_of,
    tensor_shape,
)
from tdsl.transforms.tile import decomposed_copy


class _GroupPlan:
    """The plan of the loops of one ``kernel.tile``: its tiles, its scratch, what it
    stores, packs and hoists (the code is :class:`~tdsl.backend.llvm.loops_emit._Group`)."""

    def __init__(
        self,
        tile: TileOp,
        input_strides: Sequence[tuple[int, ...] | None] = (),
        *,
        threads: int = 1,
        limit: int | None = None,
        blas_limit: int | None = None,
        split: bool = True,
        cuts: bool = True,
        inputs: bool | None = None,
        compare: bool = True,
        gemms: bool = True,
    ) -> None:
        """The loops of ``tile``, whose inputs come with ``input_strides`` (element
        strides per input, None for row-major; missing ones are row-major), for calls on
        ``threads`` threads, their tiles within ``limit`` elements of scratch where that
        is more than the tile op records, or within ``blas_limit`` where the loops call
        BLAS a tile at a time (a recorded plan keeps its own); without ``split``, no
        matmul's contraction in tiles, without ``cuts`` no reduction dim either, and with
        ``inputs`` (None: if one without breaks the budget) matmuls on inputs in one;
        with ``compare``, a cut contraction weighed against none and BLAS a tile at a
        time against loops (and warnings given); without ``gemms``, no matmul by BLAS a
        tile at a time."""
        split = split and gemms  # (a contraction in tiles is BLAS's a tile at a time)
        self.more_storage: dict[Operation, list[Storage]] = {}
        """Per tuple accumulator: its components after the first (set by :meth:`emit`)."""
        self.shared: dict[Operation, int] = {}
        """Matmuls BLAS computes a tile at a time into a stored value's slot, to the slot
        (set by :func:`~tdsl.backend.llvm.loops_choices.scratch_slots`): their result's
        tile is not a buffer of its own."""
        self.tile = tile
        self.gemms = gemms
        """Whether a matmul may be BLAS's a tile at a time (planning; read back, as recorded)."""
        self.summed = tile.loops_plan is None or tile.loops_plan.summed
        """Whether the plan's passes may cut a matmul's contraction, adding up its tiles'
        products (:func:`~tdsl.backend.llvm.loops_common.pass_contractions`): planning,
        or recorded so."""
        body = tile.group_body()
        block = tile.body.block
        ops, yielded = tile.body_ops()
        self.args: list[SSAValue] = list(block.args)
        staged, _ = tile.recorded_plan(body)
        staged_ops = sorted(staged, key=body.position.__getitem__)
        copied: dict[SSAValue, SSAValue] = {}
        copy = None
        chosen: GroupBody | None = None
        # softmax @ v decomposes as flash attention where few key rows fit or a plan cuts keys
        swept = swept_ops(tile.tiles_value, body)
        form = flash_form(tile, body, staged_ops, swept)
        if form is not None and form.taken:
            copy, copied, chosen = form.copy, form.copied, form.body
        plain = tile.loops_plan is None and form is not None and not form.taken  # (see below)
        form_keys = set() if form is None else form.keys
        if copy is None:
            copy = decomposed_copy(ops, list(yielded), list(block.args), copied, sweeps=swept)
        if copy is not None:
            body = chosen or copied_body(tile, body, copy)
            self.args = list(copy[2])
        self.staged_values: list[SSAValue] = [
            copied.get(r, r) for op in staged_ops for r in op.results
        ]
        """The values the ``kernel.tile`` stages: stored by the sweep that computes them,
        as the NumPy target keeps their rows (those of a decomposed op excepted)."""
        if copy is not None:
            self.staged_values = [v for v in self.staged_values if v in copied.values()]
        self.strides: dict[SSAValue, tuple[int, ...]] = {
            a: given for a, given in zip(self.args, input_strides, strict=False) if given
        }
        """The element strides of the inputs that are not row-major."""
        self.body = body
        self.extents = body.extents
        self.flash = flash_keys(body, self.staged_values)
        """``softmax_matmul`` ops run in the plan's tiles of their key dim, to that dim
        (see :mod:`~tdsl.backend.llvm.loops_flash`)."""
        summed = tile.loops_plan is not None and self.summed  # (no loop over its tiles)
        keys: dict[Operation, int] = {}
        if split and not summed:
            keys = plan_keys(body, self.args, self.staged_values, tile, inputs)
        retry = split and inputs is None
        self.split = {} if self.flash else keys
        """A matmul whose contraction the loops run in tiles, to that dim (a key dim as a
        flash op's is: :mod:`~tdsl.backend.llvm.loops_split`)."""
        # parallel dims keep their tiles; other dims run whole (element loops), but keys
        tiles = [
            min(t, e) if body.kinds[d] is IteratorType.PARALLEL else e
            for d, (t, e) in enumerate(zip(tile.tiles_value, body.extents, strict=True))
        ]
        for r in self.flash.values():
            tiles[r] = min(tile.tiles_value[r], body.extents[r], KEY_TILE)
        cutting = cut_contractions(body, self.split, tile.tiles_value, tiles)
        # the first parallel dim, when every op runs along it, is cut into >= SPLIT_TILES
        # tiles that threads can share (smaller tiles need less scratch)
        split = next((d for d in range(body.rank) if body.kinds[d] is IteratorType.PARALLEL), None)
        share = max(1, min(threads, largest_bytes(tile) // MIN_BLAS_BYTES_PER_THREAD))
        along = split is not None and all(split in body.loop_dims(op) for op in body.ops)
        # (where only transposes BLAS reads in place do not, one tile per thread at most)
        if split is not None and (along or runs_along(body, split, self.args)):
            # (matmuls BLAS computes a tile at a time want tall tiles: two per thread)
            gemms = along and any(
                blas_output(body, op) is None and tile_gemm(body, op, self.args) for op in body.ops
            )
            # (or one per thread where the contraction runs in tiles: as much scratch)
            parts = SPLIT_TILES if not gemms else share if cutting else GEMM_SPLIT_TILES * share
            parts = parts if along else share
            # the last dim (a column reduction's columns) is the loops' contiguous one:
            # tiles narrower than BLOCK would read each cache line for a few lanes
            least = min(BLOCK, body.extents[split]) if split == body.rank - 1 else 1
            most = max(least, -(-body.extents[split] // parts))
            # (with such matmuls the loops shrink the tallest tile to the tile op's scratch:
            # their scratch model, not the NumPy target's, decides how tall BLAS's tiles are)
            tiles[split] = most if gemms else min(tiles[split], most)
        tiles = [max(1, t) for t in tiles]  # (a dim of extent 0: tile 1, as the tile op's)
        self.tiles: tuple[int, ...] = tuple(tiles)
        self.level: dict[Operation, int] = {}
        self.blas: dict[Operation, int] = {}
        """2-D matmuls a BLAS call computes, to the output they write."""
        self.gemm: dict[Operation, TileGemm] = {}
        """2-D matmuls BLAS computes one tile at a time, inside the loops."""
        self.gemm_symbols: dict[str, tuple[Attribute, ...]] = {}
        """The external functions the loops call for them (set by ``emit``): their types."""
        self.keep_long_chains = True
        """Whether values long chains would compute again are stored (see
        :func:`~tdsl.backend.llvm.loops_common.keep_long_chains`), and a matvec's
        computed operand (``read_once``); not where their rows do not fit the scratch."""
        self.kept: list[SSAValue] = []
        """The values stored that way, and :attr:`once`'s (where stored)."""
        self.recorded = tile.loops_plan
        """The plan ``tdsl-plan-loops`` recorded, run as it is (None: planned here)."""
        self.passes: list[LoopsStep] | None = None
        """The steps of the tile op's plan the loops run, where it cuts reduction dims
        (:mod:`~tdsl.backend.llvm.loops_passes`); None: they take those dims whole."""
        self.threads = threads
        self.share = 1
        """The threads that run this group's tiles, each in a scratch of its own."""
        given = limit if self.recorded is None else self.recorded.limit
        self.limit = limit = max(tile.scratch_value, given or 0)
        """The scratch the loops' tiles fit (elements, all threads): the tile op's, or more."""
        if self.recorded is not None:
            self.tiles = tuple(self.recorded.tiles)
            self._plan()
            if (passes := plan_passes(self, tiles, limit)) is None:
                check_cut_dims(tile, body, self.tiles, {**self.flash, **self.split})
        else:
            self._plan()
            if self.gemm and blas_limit is not None:
                self.limit = limit = max(limit, blas_limit)
            # with BLAS calls, each thread runs tiles in a scratch of its own (BLAS on that
            # thread alone), where the operands are large enough for the runtime to split
            self.share = share
            self._choose_tiles(tiles, limit // self.share if self.gemm else limit)
        self.split = {op: r for op, r in self.split.items() if self.tiles[r] < self.extents[r]}
        check_split(self)
        kept = {"threads": threads, "limit": limit, "blas_limit": blas_limit, "cuts": cuts}
        kept["gemms"] = gemms
        again = partial(self.__init__, tile, input_strides, compare=compare, **kept)
        fresh = partial(_GroupPlan, tile, input_strides, compare=False, **kept)
        if self.split and (error := order_error(self)) is not None:
            if self.recorded is not None:
                raise error  # (a plan that runs it in the passes records `summed`)
            return again(split=False)  # (the plan's passes, where they run)
        if inputs and not self.split and self.recorded is None:
            return again(inputs=False)  # (read back, its keys would be those without)
        planned = plan_passes(self, tiles, limit) if cuts and self.recorded is None else None
        self.passes = passes if self.recorded is not None else planned
        if plain and any(self.tiles[r] < self.extents[r] for r in form_keys):
            # (read back, a plan that cuts a softmax's keys takes the flash form: found by
            # fuzzing `sum(softmax(a) @ b)` at budget 16, its contraction cut; passes along
            # other dims stay, where the keys were the contraction's cut)
            return again(split=False, cuts=cuts and bool(self.split))
        scratch = self._scratch_elements()
        empty = 0 in self.extents  # (computes nothing: no scratch is used)
        check_recorded_scratch(self, scratch, limit, empty)
        if self.recorded is None and not empty:
            # (BLAS on tiles of a matmul on inputs, slower than one call for the whole)
            if retry and over_budget(self, scratch, limit) and shares_inputs(self, keys):
                return again(inputs=True)
            if compare and self.split and cheaper_blas(self, fresh(split=False)):
                return again(split=False)
            if compare and cheaper_loops(self, partial(fresh, gemms=False)):
                return again(gemms=False)
            if compare:
                warn_over_budget(self, scratch, limit)
        keys = [*self.flash.values(), *self.split.values()]  # (looped inside their level)
        keys += [d for step in self.passes or () for d in step.cut]  # (inside their step)
        self.tiled = [
            d for d in range(body.rank) if self.extents[d] > self.tiles[d] and d not in keys
        ]

    def _choose_tiles(self, tiles: Sequence[int], limit: int) -> None:
        """Fit the parallel tiles (from ``tiles``) to the scratch the tile op records."""
        # the scratch of one tile stays within what the tile op records (the NumPy
        # target's plan under the budget): halve the parallel tile that cuts the scratch
        # most (the outermost of equals), until it fits or every one is 1
        scratch = self._fit(tiles, limit)
        if any(self.tiles[r] < tiles[r] for r in self.split.values()):
            # or the contraction in its first tiles and the rows halved instead, where
            # that gives BLAS the larger tiles (a GPT-2 block's tail at budget 10**6: 128
            # rows by 1536 of the hidden dim, not 128 by 256)
            cut, self.tiles = self.tiles, tuple(tiles)
            self._plan()
            other = self._fit(tiles, limit, contraction=False)
            if other <= limit and larger_blas_tiles(self.tiles, cut, self.split, self.gemm):
                scratch = other
            else:
                self.tiles = cut
                self._plan()
        if scratch > limit and self.kept:
            # over the limit with stored rows: without them (computed again: more code,
            # less memory), unless the scratch is over it anyway (many accumulators) and
            # the rows at most double it
            kept_tiles = self.tiles
            self.keep_long_chains = False
            self.tiles = tuple(tiles)
            self._plan()
            without = self._fit(tiles, limit)
            if without > limit and scratch <= 2 * without:
                self.keep_long_chains = True
                self.tiles = kept_tiles
                self._plan()

    def record(self) -> LoopsPlan:
        """This plan as the tile op records it (see :class:`~tdsl.dialects.kernel.TileOp`)."""
        values = {v: i for i, v in enumerate(numbered_values(self.body))}
        return LoopsPlan(
            self.tiles,
            tuple(values[v] for v in self.stored),
            tuple(sorted(self.body.position[op] for op in [*self.blas, *self.gemm])),
            # the scratch the loops use (a copy per thread), where more than the tile op's
            used if (used := self._used()) > self.tile.scratch_value else None,
            bool(self.passes and pass_contractions(self)),
        )

    def _used(self) -> int:
        """The scratch all threads' copies take, within :attr:`limit` (one tile's if more)."""
        scratch = self._scratch_elements()
        over = scratch if scratch > self.limit + LOOPS_SCRATCH_SLACK else 0  # (else allowed)
        return max(min(self.limit, scratch * self.threads), over)

    def _fit(self, tiles: Sequence[int], limit: int, contraction: bool = True) -> int:
        """Halve parallel tiles (from ``tiles``; after cutting a contraction in more tiles,
        with ``contraction``) until the scratch is within ``limit`` or every one is 1; the
        scratch it comes to."""
        body = self.body
        shrunk = list(tiles)
        if contraction:
            fit_contraction(self.split, self.extents, shrunk, limit, self._scratch_at_tiles)
        self.tiles = tuple(shrunk)
        scratch = self._scratch_elements()
        last: int | None = None
        keyed = False  # (whether a contraction was cut below, all parallel tiles at 1)

        def cuttable(d: int) -> bool:  # (not where each tile along d would call BLAS for
            # all of a matmul again, or compute a flash op's scores again)
            gemms = all(d in body.loop_dims(op) for op in self.gemm)
            flash = all(d in body.reads[(op, 0)] for op in self.flash)
            return body.kinds[d] is IteratorType.PARALLEL and gemms and flash

        while scratch > limit:
            best: tuple[int, int] | None = None
            for d in range(body.rank):
                if shrunk[d] <= 1 or not cuttable(d):
                    continue
                trial = list(shrunk)
                trial[d] = (trial[d] + 1) // 2
                self.tiles = tuple(trial)
                n = self._scratch_elements()
                if n < scratch and (best is None or n < best[0]):
                    best = (n, d)
            if best is None:
                # every parallel tile at its least: fewer keys per flash key tile, if any,
                # where the state's rows alone do not take the slack over the limit (a
                # tile of a few keys runs slowly: a BLAS call for each); or a shorter
                # contraction tile of a matmul BLAS computes in them, below
                # fit_contraction's least (the tile op's plan cuts it to fit the budget:
                # the loops' scratch is then a tile of its left operand)
                key = next(
                    (r for o, r in self.split.items() if o in self.gemm and shrunk[r] > 1), None
                )
                if key is None:
                    key = next((r for r in self.flash.values() if shrunk[r] > 1), None)
                    if key is None or scratch <= limit + LOOPS_SCRATCH_SLACK:
                        break
                own = self.tile.tiles_value[key]  # (where the tile op cuts it: its tile)
                half = (shrunk[key] + 1) // 2
                shrunk[key] = own if own < min(shrunk[key], self.extents[key]) else half
                self.tiles = tuple(shrunk)
                scratch, keyed = self._scratch_elements(), key in self.split.values()
                continue
            scratch, d = best
            shrunk[d] = (shrunk[d] + 1) // 2
            last = d
        if keyed and scratch <= limit:
            scratch = widen_tiles(self, shrunk, tiles, limit, cuttable)  # (as wide as fit)
        elif self.gemm and last is not None and scratch <= limit:
            # BLAS is faster on taller tiles: the last dim halved takes the largest
            # tile that still fits, not just the half
            lo = widest_tile(self, shrunk, last, min(2 * shrunk[last] - 1, tiles[last]), limit)
            # and the tiles as even as that many allows (4 of 128, not 3 of 137 and one of
            # 101), as many for each thread (6 of 86 on two threads, not 5 of 103)
            count = -(-self.extents[last] // lo)
            if count > 1:
                count = -(-count // self.share) * self.share
            shrunk[last] = -(-self.extents[last] // count)
            scratch = self._scratch_at_tiles(shrunk)
        self.tiles = tuple(shrunk)
        if shrunk != list(tiles):
            self._plan()
        return scratch

    # -- planning -----------------------------------------------------------------

    def _plan(self) -> None:
        body = self.body
        if self.recorded is not None:
            self.blas, self.gemm = recorded_blas(self, self.recorded.blas)
        else:
            self.blas, self.gemm = {}, {}
            for op in body.ops:
                # (a matmul on inputs along a cut contraction adds its tiles' products)
                k = blas_output(body, op) if op not in self.split else None
                if k is not None and k not in self.blas.values():
                    self.blas[op] = k
                elif (
                    self.gemms
                    and (g := tile_gemm(body, op, self.args)) is not None
                    and self._gemm_reads(g, self.gemm)
                ):
                    self.gemm[op] = g
        self.in_output = accumulated_in_outputs(self)
        """Reductions (and BLAS tile matmuls) accumulated in an output, to the output."""
        # operands a matmul in loops reads along its contraction are stored first (one
        # tile's worth), not recomputed for every column of its result
        self.stored: list[SSAValue] = []
        self.once: list[SSAValue] = []
        """Computed operands of matmuls in loops that read them once (a matvec's)."""
        for op in body.ops:
            if op in self.gemm:
                # BLAS reads its left operand from one tile's rows in scratch
                a = self.gemm[op].a
                p = body.producer(a)
                if p is not None and not _is_reduction(p) and a not in self.stored:
                    self.stored.append(a)
            elif _is_contraction(op) and op not in self.blas:  # (a matvec's: read_once)
                out = {d for d in body.dims[op.results[0]] if d is not None}
                for v in op.operands:
                    p = body.producer(v)
                    if p is None or _is_reduction(p) or v in self.stored:
                        continue
                    if any(self.tiles[d] > 1 for d in out - set(body.dims[v])):
                        self.stored.append(v)
                    elif v not in self.once:
                        self.once.append(v)
        for v in self.staged_values:
            if v not in self.stored and body.producer(v) not in self.blas:
                self.stored.append(v)
        # a scan read along a space dim its result does not run along (broadcast) is
        # stored first, in a sweep over its own dims: computed in a sweep over more dims,
        # its carry would run on from one index of the broadcast dim to the next
        for op in body.ops:
            if not _is_scan(op) or op in self.blas:
                continue
            v = op.results[0]
            own = {d for d in body.dims[v] if d is not None}
            if v not in self.stored and any(
                {d for d in body.loop_dims(r) if d is not None} - own
                for r in sweep_readers(body, self.blas, v)
            ):
                self.stored.append(v)
        needed = list(self.stored)
        self.stored += read_once(self, needed)
        self.level = op_levels(body, self.blas, self.stored)
        if floors := level_floors(self):  # (after a cut contraction's statistics)
            self.level = op_levels(body, self.blas, self.stored, floors)
        if self.recorded is not None:
            recorded_stored(self, self.recorded.stored, needed)
        else:
            keep_long_chains(self)
        self.stored_in_output = stored_in_outputs(self)
        """Stored values that are outputs of the group: kept in their output's slice (the
        sweep that computes them writes it anyway), not in scratch; later sweeps read
        them back from there."""
        self.shared = {}
        self.slots, self.slot_values = scratch_slots(self)
        """Per stored value, its scratch slot (values whose reads are over share one)."""
        # a scan whose axis has extent 1 is in no space dim: each element is its own
        # running value (computed from the identity, see _Point), and it carries nothing
        # from one index of another dim to the next
        self.carries: list[Operation] = [
            op for op in body.ops if _is_scan(op) and op not in self.blas and carried_dims(body, op)
        ]
        """Scans: each carries its running values in a ``scratch`` memref (its result's
        tile with the scan dims of extent 1), set to the identity before each sweep that
        computes it; the sweep's loops run along the scan dim in order."""
        self.packed = packed_inputs(self)
        """Strided inputs read in blocks through a buffer (see :func:`~tdsl.backend.llvm.loops_choices.packed_inputs`): to the
        dim they lie contiguous along, and the dim the loops run innermost."""
        self.staged = output_staging(self) if self.hoistable() else {}
        """Values staged in an output slice (see :meth:`_staged`), to that output."""

    def _gemm_reads(self, g: TileGemm, before: Mapping[Operation, TileGemm]) -> bool:
        """Whether BLAS can read ``g``'s left operand as its rows lie: an input, a value
        stored for it, or the result of a matmul BLAS computes before (``before``: its
        rows in scratch); not another reduction's accumulator (which a finalization,
        such as a mean's division, would still have to turn into the value)."""
        p = self.body.producer(g.a)
        return p is None or not _is_reduction(p) or p in before

    # -- storage ------------------------------------------------------------------

    def tile_shape(self, value: SSAValue) -> tuple[int, ...]:
        dims = self.body.dims[value]
        return tuple(
            extent if d is None else self.tiles[d]
            for extent, d in zip(tensor_shape(value), dims, strict=True)
        )

    def accumulators(self) -> list[Operation]:
        """The reductions that accumulate in scratch of their own (not in their output,
        nor, for a matmul BLAS computes a tile at a time, in a stored value's slot)."""
        return [
            op
            for op in self.body.ops
            if _is_reduction(op)
            and op not in self.blas
            and op not in self.in_output
            and op not in self.shared
        ]

    def _scratch_elements(self) -> int:
        return sum(math.prod(t.get_shape()) for t in self.scratch_types())

    def _scratch_at_tiles(self, tiles: Sequence[int]) -> int:
        """The loops' scratch at ``tiles``."""
        kept, self.tiles = self.tiles, tuple(tiles)
        try:
            return self._scratch_elements()
        finally:
            self.tiles = kept

    def _scratch_at(self, plan_tiles: Sequence[int]) -> int:
        """The loops' scratch if their scan and reduction dims took the plan's tiles."""
        kinds, tiles = self.body.kinds, zip(self.tiles, plan_tiles, self.extents, strict=True)
        par = IteratorType.PARALLEL
        return self._scratch_at_tiles(
            [t if kinds[d] is par else min(p, e) for d, (t, p, e) in enumerate(tiles)]
        )

    def more_states(self) -> list[tuple[Operation, int]]:
        """The components after the first of tuple accumulators: (op, component)."""
        out: list[tuple[Operation, int]] = []
        for op in self.accumulators():
            out += [(op, c) for c in range(1, _state_size(op))]
        return out

    def scratch_types(self) -> list[MemRefType[Attribute]]:
        """The scratch memrefs of one tile: each accumulator (its first component), then
        each stored value, then each scan's carry, then the further components of tuple
        accumulators, then the buffers of flash attention's key tiles."""
        types: list[MemRefType[Attribute]] = []
        for op in self.accumulators():
            types.append(
                MemRefType(
                    element_of(reduction_of(op).accumulator_dtype()),
                    self.tile_shape(op.results[0]),
                )
            )
        for v in self.slot_values:
            types.append(MemRefType(element_type(v), self.tile_shape(v)))
        for op in self.carries:
            if not isinstance(op, Scan):
                raise loops_bug(f"'{op.name}' carries running values but is no scan", op)
            shape = [
                1 if d is None else n
                for n, d in zip(
                    self.tile_shape(op.results[0]), carry_dims(self.body, op), strict=True
                )
            ]
            types.append(MemRefType(element_of(op.carried_loops()[0].dtype), shape))
        for op, c in self.more_states():
            state = reduction_of(op).accumulator()
            types.append(MemRefType(element_of(state.dtypes[c]), self.tile_shape(op.results[0])))
        for op, r in self.flash.items():
            types += flash_types(self.body, op, r, self.tiles)
        return types

    def contiguous(self, v: SSAValue, dims: Dims) -> int | None:
        """The space dim that ``v``, read along ``dims``, lies contiguous along."""
        return contiguous_dim(v, dims, self.strides.get(v))

    def hoistable(self) -> list[int]:
        """The leading space dims (in order) all sweeps can share as outer loops."""
        if self.gemm or self.passes is not None:  # (BLAS: a tile's rows; passes: their tiles')
            return []  # a BLAS call computes a whole tile's rows, not one row at a time
        others = [p.other for p in self.packed.values()]  # (packed in blocks)
        return hoistable_dims(self.body, self.stored, self.carries, others)
