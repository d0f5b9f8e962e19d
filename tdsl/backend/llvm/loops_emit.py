"""The loop code of one group for ``tdsl-lower-to-loops``: ``_Group`` (its plan,
:class:`~tdsl.backend.llvm.loops_plan._GroupPlan`, plus the sweeps it emits: nest
order, packed blocks, scans) around :class:`~tdsl.backend.llvm.loops_point._Point`,
one point of a loop nest."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import cast

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, Operation, SSAValue

from tdsl.backend.llvm.loops_choices import TileGemm
from tdsl.backend.llvm.loops_common import (
    BLOCK,
    Storage,
    StridedBlasOperandError,
    _Code,
    _dim_set,
    _effect_values,
    _is_contraction,
    _is_reduction,
    across_steps,
    blas_rows,
    loops_bug,
)
from tdsl.backend.llvm.loops_flash import FlashBuffers, emit_flash_tile, flash_blas
from tdsl.backend.llvm.loops_passes import emit_passes
from tdsl.backend.llvm.loops_plan import _GroupPlan
from tdsl.backend.llvm.loops_point import _Point
from tdsl.backend.llvm.loops_split import loop_level
from tdsl.dialects.kernel_plan import Dims, carry_dims
from tdsl.dialects.structured import (
    Scan,
    convert_scalar,
    element_of,
    element_type,
    reduction_of,
    tensor_shape,
)

Ops = frozenset[Operation] | None


class _Group(_GroupPlan):
    """The loops of one ``kernel.tile``."""

    def nest_order(
        self,
        dims: Sequence[int],
        values: Sequence[tuple[SSAValue, Dims]],
        contracted: Sequence[int] = (),
    ) -> list[int]:
        """The loop order of a nest over ``dims``: space order, except that the dim most of
        its values (weighted by size) run along as their last, contiguous dim goes
        innermost; not a ``contracted`` dim (a matmul's, summed in order: innermost it
        would not vectorize) where another dim is some value's contiguous one."""
        weight: dict[int, int] = {}
        for v, vdims in values:
            last = self.contiguous(v, vdims)
            if last is not None and last in dims:
                weight[last] = weight.get(last, 0) + math.prod(tensor_shape(v)) + 1
        if not weight:
            return list(dims)
        if any(d not in contracted for d in weight):
            weight = {d: w for d, w in weight.items() if d not in contracted}
        inner = max(weight, key=lambda d: (weight[d], d))
        return [d for d in dims if d != inner] + [inner]

    # -- emission -----------------------------------------------------------------

    def _packs_of_sweep(
        self,
        order: Sequence[int],
        touched: Sequence[tuple[SSAValue, Dims]],
        effects: Sequence[tuple[str, Operation | int | SSAValue]],
    ) -> list[SSAValue]:
        """The packed inputs a sweep whose nest runs over ``order`` (outer to inner, the
        hoisted dims left out) and ``touched`` reads in blocks: a nest of exactly the
        two dims of their packing, where no accumulation runs over both (blocks keep
        the order along each dim, not across them)."""
        if len(order) != 2 or not self.packed:
            return []
        body = self.body
        if any(
            kind == "acc"
            and isinstance(what, Operation)
            and set(order) <= set(body.loop_dims(what)) - set(body.dims[what.results[0]])
            for kind, what in effects
        ):
            return []
        outer, inner = order
        reads = dict.fromkeys(self._input_reads([v for v, _ in touched]))
        return [
            a
            for a in reads
            if a in self.packed and (self.packed[a].other, self.packed[a].inner) == (outer, inner)
        ]

    def _input_reads(self, values: Sequence[SSAValue]) -> list[SSAValue]:
        """The group inputs that computing ``values`` at a point reads, through the
        element-wise ops computed there."""
        body = self.body
        args = set(self.args)
        found: list[SSAValue] = []
        seen: set[SSAValue] = set()
        stack = list(values)
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if v in args:
                found.append(v)
                continue
            p = body.producer(v)
            if p is None or p in self.blas or _is_reduction(p) or v in self.stored:
                continue
            stack += p.operands
        return found

    def _packed_nest(
        self,
        code: _Code,
        ranges: Sequence[tuple[int, SSAValue, SSAValue]],
        packs: Sequence[SSAValue],
        buffers: Mapping[SSAValue, SSAValue],
        hoisted: Mapping[int, SSAValue],
        starts: dict[int, SSAValue],
        storage: Mapping[SSAValue, Storage],
    ) -> _Point:
        """A nest over ``ranges`` (the two dims of the packing, outer then inner) in
        blocks along the inner dim: per block, each input of ``packs`` is first copied
        into its buffer, along the outer dim (where it lies contiguous); then the
        point, reading those inputs from the buffers."""
        (outer, lb_o, ub_o), (inner, lb_i, ub_i) = ranges
        one = code.index(1)
        block, jb = code.loop(lb_i, ub_i, code.index(BLOCK))
        je = block.insert(arith.AddiOp(jb, block.index(BLOCK)))
        je = block.insert(arith.MinSIOp(je, ub_i))
        override: dict[SSAValue, Storage] = {}
        for a in packs:
            dims = self.packed[a].dims
            by_col, j = block.loop(jb, je, one)
            by_row, i = by_col.loop(lb_o, ub_o, one)
            copy = _Point(self, by_row, {**hoisted, outer: i, inner: j}, starts, dict(storage))
            buffer = Storage(
                buffers[a],
                origin=((outer, lb_o), (inner, jb)),
                axes=(dims.index(inner), dims.index(outer)),
            )
            copy.store(copy.load(storage[a], dims), buffer, dims)
            override[a] = buffer
        rows, i = block.loop(lb_o, ub_o, one)
        point_code, j = rows.loop(jb, je, one)
        coords = {**hoisted, outer: i, inner: j}
        return _Point(self, point_code, coords, starts, {**storage, **override})

    def _scans_computed(
        self,
        effects: Sequence[tuple[str, Operation | int | SSAValue]],
        storage: Mapping[SSAValue, Storage],
    ) -> list[Operation]:
        """The scans a sweep with ``effects`` computes (not read from storage)."""
        body = self.body
        found: list[Operation] = []
        seen: set[SSAValue] = set()
        frontier = _effect_values(body, effects)
        while frontier:
            v = frontier.pop()
            if v in seen:
                continue
            seen.add(v)
            p = body.producer(v)
            if p is None or v in body.constants or v in storage:
                continue
            if p in self.carries and p not in found:
                found.append(p)
            frontier.extend(p.operands)
        return sorted(found, key=body.position.__getitem__)

    def emit(
        self,
        code: _Code,
        lo: SSAValue,
        hi: SSAValue,
        inputs: Sequence[Storage],
        outputs: Sequence[Storage],
        accumulators: Sequence[SSAValue],
    ) -> None:
        """The group's loops over the tiles ``[lo, hi)`` of its outermost tiled dim."""
        body = self.body
        self.gemm_symbols = {}
        storage: dict[SSAValue, Storage] = dict(zip(self.args, inputs, strict=True))
        buffers: dict[SSAValue, SSAValue] = {}
        for a, packing in self.packed.items():
            # (the block's rows of each column, one after another: as the input lies)
            shape = [BLOCK, self.tiles[packing.other]]
            buffers[a] = code.insert(memref.AllocaOp.get(element_type(a), 64, shape))
        for op, k in self.blas.items():
            storage[op.results[0]] = outputs[k]
        own = self.accumulators()
        accs: dict[Operation, Storage] = {
            op: Storage(ref, tiled=True) for op, ref in zip(own, accumulators, strict=False)
        }
        for op, k in self.in_output.items():
            accs[op] = outputs[k]
        for op, slot in self.shared.items():
            accs[op] = Storage(accumulators[len(own) + slot], tiled=True)
        for op, where in accs.items():
            storage[op.results[0]] = where
        n_stored = len(own) + len(self.slot_values)
        stored = {v: accumulators[len(own) + i] for v, i in self.slots.items()}
        n_carried = n_stored + len(self.carries)
        carries = {
            op: Storage(ref, tiled=True)
            for op, ref in zip(self.carries, accumulators[n_stored:n_carried], strict=True)
        }
        self.more_storage = {}
        more = accumulators[n_carried : n_carried + len(self.more_states())]
        for (op, _), ref in zip(self.more_states(), more, strict=True):
            self.more_storage.setdefault(op, []).append(Storage(ref, tiled=True))
        starts: dict[int, SSAValue] = {}
        ends: dict[int, SSAValue] = {}
        for j, d in enumerate(self.tiled):
            step = code.index(self.tiles[d])
            if j == 0:
                code, t = code.loop(lo, hi, code.index(1))
                start = code.insert(arith.MuliOp(t, step))
            else:
                code, start = code.loop(code.index(0), code.index(self.extents[d]), step)
            starts[d] = start
            end = code.insert(arith.AddiOp(start, step))
            ends[d] = code.insert(arith.MinSIOp(end, code.index(self.extents[d])))

        # the outer dims every sweep shares run once around all of them, so that the
        # sweeps of a row (softmax: its max, its sum, its quotients) stay in cache
        hoisted: dict[int, SSAValue] = {}
        for d in self.hoistable():
            lb, ub = (
                (starts[d], ends[d])
                if d in starts
                else (code.index(0), code.index(self.extents[d]))
            )
            code, hoisted[d] = code.loop(lb, ub, code.index(1))

        def ranges(
            dims: Sequence[int], at: _Code | None = None
        ) -> list[tuple[int, SSAValue, SSAValue]]:
            c = code if at is None else at  # (constants where the nest is: in a key loop)
            return [
                (d, starts[d], ends[d])
                if d in starts
                else (d, c.index(0), c.index(self.extents[d]))
                for d in dims
                if d not in hoisted
            ]

        flash_buffers = accumulators[n_carried + len(self.more_states()) :]
        key = next(iter([*self.flash.values(), *self.split.values()]), None)
        flash = {
            op: FlashBuffers(*flash_buffers[4 * i : 4 * i + 4]) for i, op in enumerate(self.flash)
        }
        # the levels of the ops along a flash op's key dim run twice: first what is not
        # along it, then, in a loop over its key tiles, what is (see loops_flash)
        # (but a split contraction's statistics along it: in the levels before, whole)
        along = [op for op in body.ops if key is not None and key in body.loop_dims(op)]
        first = loop_level(self, key) if key in self.split.values() else None
        keyed = range(
            min((self.level[op] for op in along), default=0) if first is None else first,
            max((self.level[op] for op in along), default=-1) + 1,
        )

        def on(dims: Sequence[int | None], part: bool | None) -> bool:
            """Whether what runs along ``dims`` is in ``part`` (None: all; True: the
            key tiles' part; False: the rest)."""
            return part is None or part == (key in dims)

        def start(op: Operation, code: _Code) -> None:
            """``op``'s accumulator (a scan's carry) set to the identity."""
            if op in carries:
                if not isinstance(op, Scan):
                    raise loops_bug(f"'{op.name}' carries running values but is no scan", op)
                loop, cdims = op.carried_loops()[0], carry_dims(body, op)
                inner, coords = code.nest(ranges(_dim_set(cdims), code))
                point = _Point(self, inner, {**hoisted, **coords}, starts, storage, carries)
                point.store(inner.scalar(loop.start, element_of(loop.dtype)), carries[op], cdims)
                return
            state = reduction_of(op).accumulator()
            dims = _dim_set(body.dims[op.results[0]])
            inner, coords = code.nest(ranges(dims, code))
            point = _Point(self, inner, {**hoisted, **coords}, starts, storage)
            places = [accs[op], *self.more_storage.get(op, ())]
            for first, dt, place in zip(state.identities, state.dtypes, places, strict=True):
                point.store(inner.scalar(first, element_of(dt)), place, body.dims[op.results[0]])

        def run(
            level: int, code: _Code, part: bool | None, only: Ops = None, kept: Ops = None
        ) -> None:
            # accumulators start from the identity (`only` the ops of a step, see
            # loops_passes: but those it `kept` from tile to tile)
            for op in accs:
                if self.level[op] != level or op in self.gemm:
                    continue
                if only is not None and op not in only:
                    continue
                if on(body.dims[op.results[0]], part) and not (kept and op in kept):
                    start(op, code)
            # matmuls BLAS computes a tile at a time: their operands are ready
            # (a matmul whose contraction runs in tiles: in the key loop, adding each
            # tile's product after the first)
            for op, g in self.gemm.items():
                dims = body.loop_dims(op) if op in self.split else body.dims[op.results[0]]
                if only is not None and op not in only:
                    continue  # (another step's: see loops_passes)
                if self.level[op] == level and on(dims, part):
                    # (or a pass's tiles of it: pass_gemms)
                    add = starts.get(g.inner)
                    self._gemm_call(code, op, g, storage, accs[op], starts, ends, add)
            # the sweeps: one loop nest per set of dims, effects in program order
            sweeps: dict[tuple[int, ...], list[tuple[str, Operation | int | SSAValue]]] = {}
            for op in body.ops:
                if part and op in flash:
                    continue  # (its key tile: emit_flash_tile)
                if only is not None and op not in only:
                    continue
                if self.level[op] == level and op in accs and op not in self.gemm:
                    sweeps.setdefault(_dim_set(body.loop_dims(op)), []).append(("acc", op))
            for v in self.stored:
                p = body.producer(v)
                if p is None:
                    raise loops_bug("a stored value that no op of the group computes")
                if only is not None and p not in only:
                    continue  # (another step's: computed again here, see loops_passes)
                if self.level[p] == level and v not in self.stored_in_output:
                    sweeps.setdefault(_dim_set(body.dims[v]), []).append(("store", v))
            for v in self.staged:
                p = body.producer(v)
                if p is None:
                    raise loops_bug("a value staged in an output that no op of the group computes")
                if self.level[p] == level:
                    sweeps.setdefault(_dim_set(body.dims[v]), []).append(("stage", v))
            for k, (v, out_dims) in enumerate(zip(body.outputs, body.output_dims, strict=True)):
                p = body.producer(v)
                if p is not None and (p in accs or (p in self.blas and self.blas[p] == k)):
                    continue  # finalized after its sweep, or written by BLAS
                if only is not None and p not in only:
                    continue
                if (0 if p is None else self.level[p]) == level:
                    sweeps.setdefault(_dim_set(out_dims), []).append(("out", k))
            for dims, effects in sweeps.items():
                if not on(dims, part):
                    continue
                touched: list[tuple[SSAValue, Dims]] = []
                for _, what in effects:
                    if isinstance(what, Operation):
                        touched += [(w, body.reads[(what, i)]) for i, w in enumerate(what.operands)]
                        touched.append((what.results[0], body.dims[what.results[0]]))
                    elif isinstance(what, int):
                        touched.append((body.outputs[what], body.output_dims[what]))
                    else:
                        touched.append((what, body.dims[what]))
                # the scans this sweep computes start from their identity
                for op in self._scans_computed(effects, storage):
                    if not (kept and op in kept):
                        start(op, code)
                contracted = {
                    d
                    for kind, what in effects
                    if kind == "acc" and isinstance(what, Operation) and _is_contraction(what)
                    for d in set(body.loop_dims(what)) - set(body.dims[what.results[0]])
                    if d is not None
                }
                order = self.nest_order(dims, touched, sorted(contracted))
                order = [d for d in order if d not in hoisted]
                packs = self._packs_of_sweep(order, touched, effects)
                if packs:
                    point = self._packed_nest(
                        code, ranges(order, code), packs, buffers, hoisted, starts, storage
                    )
                    point.carries = carries
                else:
                    inner, coords = code.nest(ranges(order, code))
                    point = _Point(self, inner, {**hoisted, **coords}, starts, storage, carries)
                for kind, what in effects:
                    if kind == "acc":
                        if not isinstance(what, Operation):
                            raise loops_bug(f"a sweep accumulates {what!r}, not an op")
                        point.accumulate(what, accs[what])
                    elif kind == "store":
                        if not isinstance(what, SSAValue):
                            raise loops_bug(f"a sweep stores {what!r}, not a value")
                        where = Storage(stored[what], tiled=True)
                        point.store(point.value(what, body.dims[what]), where, body.dims[what])
                    elif kind == "stage":
                        if not isinstance(what, SSAValue):
                            raise loops_bug(f"a sweep stages {what!r}, not a value")
                        k = self.staged[what]
                        value = point.value(what, body.dims[what])
                        wide = element_type(body.outputs[k])
                        value = convert_scalar(point.code.b, value, wide)
                        point.store(value, outputs[k], body.output_dims[k])
                    else:
                        if not isinstance(what, int):
                            raise loops_bug(f"a sweep writes output {what!r}, not an index")
                        value = point.value(body.outputs[what], body.output_dims[what])
                        point.store(value, outputs[what], body.output_dims[what])
            for v in self.stored:  # readable from the next sweep on
                p = body.producer(v)
                if only is not None and p not in only:
                    continue
                if p is not None and self.level[p] == level and on(body.dims[v], part):
                    k = self.stored_in_output.get(v)
                    storage[v] = (
                        Storage(stored[v], tiled=True, final=True) if k is None else outputs[k]
                    )
            for v, k in self.staged.items():  # read back from the output slice
                p = body.producer(v)
                if p is not None and self.level[p] == level and on(body.dims[v], part):
                    storage[v] = outputs[k]

        def finalize(level: int, at: _Code | None = None, only: Ops = None) -> None:
            """The reductions of ``level`` that are outputs, from their accumulators."""
            for k, v in enumerate(body.outputs):
                p = body.producer(v)
                if p is None or p not in accs or self.level[p] != level:
                    continue
                if only is not None and p not in only:
                    continue
                if self.in_output.get(p) == k:
                    continue  # accumulated in place
                dims = _dim_set(body.output_dims[k])
                inner, coords = (at or code).nest(ranges(dims, at))
                point = _Point(self, inner, {**hoisted, **coords}, starts, storage)
                point.store(point.value(v, body.output_dims[k]), outputs[k], body.output_dims[k])

        def key_loop(at: _Code, only: Ops = None, kept: Ops = None) -> None:
            """The levels along the key dim (``keyed``) at ``at``: what is not along it,
            then, in a loop over its tiles, what is, and the flash ops' key tiles."""
            for inner in keyed:
                run(inner, at, False, only, kept)
            step = at.index(self.tiles[key])
            tiles, starts[key] = at.loop(at.index(0), at.index(self.extents[key]), step)
            end = tiles.insert(arith.AddiOp(starts[key], step))
            ends[key] = tiles.insert(arith.MinSIOp(end, tiles.index(self.extents[key])))
            for inner in keyed:
                run(inner, tiles, True, only, kept)
            for op, r in self.flash.items():
                if only is not None and op not in only:
                    continue  # (another step's)
                places = [accs[op], *self.more_storage.get(op, ())]

                def point(at: _Code, coords: dict[int, SSAValue]) -> _Point:
                    return _Point(self, at, {**hoisted, **coords}, starts, storage)

                def blas(at: _Code, op: Operation = op, r: int = r) -> bool:
                    return flash_blas(self, at, op, r, flash[op], storage, starts, ends, hoisted)

                emit_flash_tile(body, point, tiles, op, r, flash[op], places, ranges, blas)
            del starts[key], ends[key]

        def step(level: int, at: _Code, ops: frozenset[Operation], kept: Ops) -> None:
            if key is None or level not in keyed:
                run(level, at, None, ops, kept)
            elif level == min(lv for lv in keyed if any(self.level[o] == lv for o in ops)):
                key_loop(at, ops, kept)  # (a step's flash ops, in the loop over key tiles)

        persist = across_steps(self)  # (along no cut dim: alike in every tile)

        def forget() -> None:
            for v in self.stored:
                if v not in persist:
                    storage.pop(v, None)

        if self.passes:  # (the plan's steps, a pass in tiles of its cut dims)
            emit_passes(self, code, starts, ends, step, finalize, start, forget)
        top = max(self.level.values(), default=0)
        for level in range(top + 1) if not self.passes else ():
            if key is None or level not in keyed:
                run(level, code, None)
                finalize(level)
            elif level == keyed.start:
                key_loop(code)
                for inner in keyed:
                    finalize(inner)

    def _gemm_call(
        self,
        code: _Code,
        op: Operation,
        g: TileGemm,
        storage: Mapping[SSAValue, Storage],
        into: Storage,
        starts: Mapping[int, SSAValue],
        ends: Mapping[int, SSAValue],
        add: SSAValue | None = None,
    ) -> None:
        """A call computing this tile of matmul ``op`` (see :class:`TileGemm`) into
        ``into``: ``@tdsl_gemm_<type>_<n>(A, B, C, m, n, k, lda, ldb, ldc, a_offset,
        b_offset, c_offset, trans_a, trans_b, acc)``, which the runtime binds to BLAS's
        ``gemm`` (:func:`tdsl.runtime.blas.matmul_shims`); it adds the product to ``into``
        where ``add`` is not 0 (a tile of its contraction after the first)."""
        body = self.body

        sizes = [self._extent(code, d, starts, ends) for d in (g.rows, g.cols, g.inner)]
        # one call per index of the batch dims the tile spans
        coords: dict[int, SSAValue] = {}
        for d in (d for d in g.batch if d is not None):
            lb, ub = (
                (starts[d], ends[d])
                if d in starts
                else (code.index(0), code.index(self.extents[d]))
            )
            code, coords[d] = code.loop(lb, ub, code.index(1))

        def at(where: Storage, dims: Dims) -> tuple[SSAValue, SSAValue, SSAValue]:
            """The memref, the offset of the tile's first element, the row stride."""
            if where.origin or where.axes:
                raise loops_bug("a BLAS operand read through a packed block", op)
            t = cast(MemRefType[Attribute], where.ref.type)
            strides = t.get_strides()
            if None in strides or not blas_rows(t):
                # (the runtime then calls the row-major variant on a copy)
                raise StridedBlasOperandError(
                    "tdsl-lower-to-loops: a strided input is the operand of a matmul BLAS "
                    f"computes a tile at a time ({t}; BLAS reads rows a leading dimension "
                    "apart, no less than a row's length): give it row-major",
                    op=op,
                )
            offset: SSAValue = code.index(0)
            for d, stride in zip(dims, strides, strict=True):
                if d is None or not stride:
                    continue
                if d in coords:  # a batch index: less the tile's start in a tile's buffer
                    index = coords[d]
                    if where.tiled and d in starts:
                        index = code.insert(arith.SubiOp(index, starts[d]))
                elif d in starts and not where.tiled:
                    index = starts[d]
                else:
                    continue
                step = code.insert(arith.MuliOp(index, code.index(cast(int, stride))))
                offset = code.insert(arith.AddiOp(offset, step))
            # (an empty matrix's row stride may be 0; BLAS wants at least 1 and reads nothing)
            return where.ref, offset, code.index(max(1, cast(int, strides[-2])))

        (a, a_off, lda), (c, c_off, ldc) = (
            at(storage[g.a], g.a_dims() if g.trans_a else body.reads[(op, 0)]),
            at(into, body.dims[op.results[0]]),
        )
        b, b_off, ldb = at(storage[g.b], g.b_dims())
        flags = (int(g.trans_a), int(g.trans_b))
        offsets = (a_off, b_off, c_off)
        self.blas_call(code, op, (a, b, c), sizes, (lda, ldb, ldc), offsets, flags, add)

    def _extent(
        self, code: _Code, d: int, starts: Mapping[int, SSAValue], ends: Mapping[int, SSAValue]
    ) -> SSAValue:
        """The extent of dim ``d`` in the current tile (``ends - starts``), or whole."""
        if d in starts:
            return code.insert(arith.SubiOp(ends[d], starts[d]))
        return code.index(self.extents[d])

    def blas_call(
        self,
        code: _Code,
        op: Operation,
        refs: Sequence[SSAValue],
        sizes: Sequence[SSAValue],
        strides: Sequence[SSAValue],
        offsets: Sequence[SSAValue],
        flags: tuple[int, int] = (0, 0),
        accumulate: SSAValue | None = None,
    ) -> None:
        """``C = A @ B`` of the memrefs ``refs`` (A, B, C) by BLAS: ``sizes`` m, n, k, the
        row ``strides`` and element ``offsets`` of each, ``flags`` transposing A and B;
        ``C += A @ B`` where ``accumulate`` (an index) is not 0."""
        element = cast(MemRefType[Attribute], refs[2].type).element_type
        if any(cast(MemRefType[Attribute], r.type).element_type != element for r in refs):
            raise loops_bug(f"a BLAS matmul on {[str(r.type) for r in refs]}", op)
        types = tuple(r.type for r in refs)
        # one declaration per memref types (the shim ignores them: all are pointers)
        digest = hashlib.sha1(" ".join(map(str, types)).encode()).hexdigest()[:12]
        name = f"tdsl_gemm_{element}_{digest}"
        self.gemm_symbols[name] = types
        acc = code.index(0) if accumulate is None else accumulate
        args = [*refs, *sizes, *strides, *offsets, *(code.index(f) for f in flags), acc]
        code.b.insert(func.CallOp(name, args, []))
