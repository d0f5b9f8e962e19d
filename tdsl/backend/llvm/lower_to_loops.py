"""``tdsl-lower-to-loops``: tiled IR to loops in upstream MLIR dialects.

The first stage of the native target.  Each ``func.func`` of ``kernel.tile``
groups becomes a function on memrefs: its tensor arguments become memrefs,
its results become memref arguments written in place (destination passing),
and the values passed between groups and the groups' accumulators become
memref arguments too, so that the caller allocates every buffer (the memory
budget stays measurable from Python).  The function's ``tdsl.arg_roles``
attribute names the role of each argument: ``in`` (an argument of the
original function), ``out`` (a result), ``tmp`` (a value passed between
groups, or a function-level constant) and ``scratch`` (an accumulator of a
group: one tile's result).

The main function is a flat sequence of calls (so that a runtime may also
drive it itself, calling group functions from several threads): filling a
constant (``@<function>_fill<n>``), a BLAS matmul, a group, copying a result
that is not computed in place (``@<function>_copy<n>``).  Each ``kernel.tile``
becomes a function of its own, ``@<function>_<group>``, which the main
function calls: its first two arguments ``lo`` and ``hi``
select a range of tiles along the outermost tiled parallel dim, so that a
caller can split the tiles over threads; the rest are the memrefs it reads
and writes.  Inside, ``scf.for`` loops run over the parallel tiles and, per
tile, over the elements, computing every op from its scalar body (the
structured-op interface: ``scalar_body`` for element-wise ops;
``scalar_combine``, ``scalar_finalize`` and the combiner's identity for
reductions; ``decompose`` for row-normalizing ops, which are decomposed
first; ``scalar_scan`` for scans).  Element-wise values are rarely stored: each loop nest computes what
it needs at each point, in registers, and a value a later nest needs again is
computed again, unless that would compute more than :data:`RECOMPUTE_LIMIT` ops
again (a long chain with a reduction every few ops): such a value is stored in
scratch by the sweep that computes it (see ``_Group._keep_long_chains``), so
neither the code nor the work grows with the square of the program's length.
A loop nest is one *sweep* over the elements:

* a reduction accumulates into its accumulator (a ``scratch`` memref of one
  tile's result), filled with the identity before its sweep;
* an op that reads a reduction's result runs in a later sweep, reading the
  finished accumulator (through ``scalar_finalize``: a mean divides);
* a group output is stored by the sweep that computes it; a reduction's
  output is finalized from its accumulator after its sweep.

So ``softmax`` (decomposed: a max, a sum of ``exp``, a division) is three
sweeps over each row, and ``relu(a) + b * c - d`` one.  A 2-D ``matmul``
whose operands are group inputs, whose result feeds only one output's
element-wise chain, is a ``func.call`` to ``@tdsl_matmul_<type>_<M>x<K>x<N>``
(declared, external: the runtime binds it to BLAS) writing that output; the
chain then runs in place over it.  Any other matmul runs as loops
(``acc + a * b``), and a matmul whose output is wider than it (an f32 matmul
cast to an f64 result) too.  Tile sizes along reduction dims are ignored:
element loops need no tile buffers along them.

The scratch of one tile (accumulators and stored values) stays within the
scratch the ``kernel.tile`` records, the NumPy target's plan under the
budget: where the loops' own tiles would need more, their parallel tiles are
halved (the one that cuts the scratch most first) until it fits or they are
all 1.  (Each extra thread the runtime splits a group over gets a copy of
that scratch.)

Given the strides of its inputs (:func:`lower_to_loops`; the native runtime's
variants for NumPy views), a function reads them where they lie.  A 2-D input
that lies contiguous along another dim than the loops' innermost (a
transpose) is read in blocks: per block, a loop copies it along its
contiguous dim into a stack buffer (``memref.alloca``, at most 64 KiB), which
the sweep reads instead (see ``_Group._packed`` for when).

The output is ordinary upstream MLIR (``func``, ``scf``, ``arith``, ``math``,
``memref``), plus ``tdslmath`` for the three scalar functions xDSL's
dialects lack.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    StringAttr,
    TensorType,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from tdsl.dialects.kernel import FusedOp, TileOp
from tdsl.dialects.kernel_plan import Dims, GroupBody, carried_dims, carry_dims, propagate_dims
from tdsl.dialects.structured import (
    BOOL,
    Contraction,
    FloatType,
    IteratorType,
    ReductionOp,
    Scan,
    constant_value,
    convert_scalar,
    element_body,
    element_of,
    element_type,
    numpy_dtype,
    reduction_of,
    structured,
    tensor_shape,
)
from tdsl.errors import TdslIRError, TdslLoopsBudgetWarning
from tdsl.transforms.locations import op_location
from tdsl.transforms.tile import decomposed_copy

RECOMPUTE_LIMIT = 8
"""The most ops a sweep computes again for one value an earlier sweep computed; a value
that would cost more is stored in scratch instead (see :meth:`_Group._keep_long_chains`)."""

RECOMPUTE_CAP = 1 << 30
"""Where the cost count stops growing (shared operands count once per use)."""


class StridedBlasOperandError(TdslIRError):
    """A strided input that a BLAS call would read: the native runtime copies it to a
    row-major array instead of compiling a variant for its strides (no failure)."""


SPLIT_TILES = 64
"""The tiles a group's first parallel dim is cut into at least, for threads to share."""

BLOCK = 64
"""The elements along its innermost dim of a block of a packed strided input (see
:meth:`_Group._packed`)."""

PACK_BYTES = 64 * 1024
"""The most bytes of one packed block's buffer (a stack array of the group function)."""

ROLES_ATTR = "tdsl.arg_roles"
"""The function attribute naming each argument's role (``in``, ``out``, ``tmp``, ``scratch``)."""


def memref_of(t: Attribute) -> MemRefType[Attribute]:
    """The memref type (identity layout) of a static tensor type."""
    assert isinstance(t, TensorType)
    tensor = cast(Attribute, t)
    return MemRefType(element_type(tensor), tensor_shape(tensor))


def matmul_symbol(element: Attribute, m: int, k: int, n: int) -> str:
    """The external function a 2-D matmul calls: ``tdsl_matmul_f32_64x128x256``."""
    return f"tdsl_matmul_{element}_{m}x{k}x{n}"


def _is_contraction(op: Operation) -> bool:
    """A matrix product (a :class:`~tdsl.dialects.op_interfaces.Contraction`): BLAS may
    compute it."""
    return isinstance(op, Contraction)


def _is_scan(op: Operation) -> bool:
    """Whether ``op`` tiles some loop dim itself, carrying a state (a
    :class:`~tdsl.dialects.op_interfaces.Scan` with ``carried_loops``)."""
    return isinstance(op, Scan) and bool(op.carried_loops())


def _is_reduction(op: Operation) -> bool:
    s = structured(op)
    return s is not None and IteratorType.REDUCTION in s.iterator_types()


def _holds_exactly(wide: Attribute, narrow: Attribute) -> bool:
    """Whether memory of element type ``wide`` holds every ``narrow`` value exactly:
    the same type, or a wider float."""
    if wide == narrow:
        return True
    width = {"f16": 16, "f32": 32, "f64": 64}
    return width.get(str(narrow), 99) < width.get(str(wide), 0)


def _strides(t: Attribute) -> tuple[int, ...] | None:
    """The element strides of a strided memref type; None for row-major."""
    if isinstance(t, MemRefType):
        layout = cast(MemRefType[Attribute], t).layout
        if isinstance(layout, StridedLayoutAttr):
            strides = layout.get_strides()
            if all(x is not None for x in strides):
                return tuple(cast(int, x) for x in strides)
    return None


def _mark_reassoc(combined: SSAValue) -> None:
    """Give the float op that updates a sum's or mean's accumulator the ``reassoc``
    fast-math flag, and nothing else: LLVM may then add the elements in another order
    (several partial sums, which is how it vectorizes a reduction), and the lowering
    to LLVM adds no flags of its own.  Every other float op keeps NumPy's order and
    rounding (see ``ReductionOp.REORDERS``)."""
    owner = combined.owner
    if isinstance(owner, arith.AddfOp):
        owner.fastmath = arith.FastMathFlagsAttr((FastMathFlag.REASSOC,))


def _dim_set(dims: Dims) -> tuple[int, ...]:
    return tuple(sorted({d for d in dims if d is not None}))


# ---------------------------------------------------------------------------
# Building loops
# ---------------------------------------------------------------------------


class _Code:
    """Inserts ops at a point of a block; makes ``scf.for`` loops."""

    def __init__(self, b: Builder) -> None:
        self.b = b

    @staticmethod
    def at_end(block: Block) -> _Code:
        return _Code(Builder(InsertPoint.at_end(block)))

    def insert(self, op: Operation) -> SSAValue:
        self.b.insert(op)
        return op.results[0]

    def index(self, value: int) -> SSAValue:
        return self.insert(arith.ConstantOp(IntegerAttr(value, IndexType())))

    def scalar(self, value: float, element: Attribute) -> SSAValue:
        if element == BOOL:
            return self.insert(arith.ConstantOp(IntegerAttr(int(bool(value)), BOOL)))
        assert not isinstance(element, IndexType)
        return self.insert(arith.ConstantOp(FloatAttr(value, _float(element))))

    def loop(self, lb: SSAValue, ub: SSAValue, step: SSAValue) -> tuple[_Code, SSAValue]:
        """An ``scf.for`` from ``lb`` to ``ub``: the code of its body and its variable."""
        body = Block(arg_types=[IndexType()])
        terminator = scf.YieldOp()
        body.add_op(terminator)
        self.b.insert(scf.ForOp(lb, ub, step, [], Region(body)))
        return _Code(Builder(InsertPoint.before(terminator))), body.args[0]

    def nest(
        self, ranges: Sequence[tuple[int, SSAValue, SSAValue]]
    ) -> tuple[_Code, dict[int, SSAValue]]:
        """Loops over ``(dim, lb, ub)``, outermost first: the innermost code and the
        variable of each dim."""
        code, coords = self, dict[int, SSAValue]()
        if ranges:
            one = self.index(1)
            for d, lb, ub in ranges:
                code, coords[d] = code.loop(lb, ub, one)
        return code, coords


def _float(element: Attribute) -> FloatType:
    from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type

    assert isinstance(element, Float16Type | Float32Type | Float64Type)
    return element


# ---------------------------------------------------------------------------
# One group
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Storage:
    """The memref holding a value, indexed by the group's space coordinates: whole
    (``tiled`` False) or one tile (coordinates along tiled dims minus the tile start),
    or a block from an ``origin`` (coordinates minus the origin's, per dim)."""

    ref: SSAValue
    tiled: bool = False
    origin: tuple[tuple[int, SSAValue], ...] = ()
    axes: tuple[int, ...] = ()
    """The memref's axes, as positions in the dims it is read along (default: those
    dims in order)."""


class _Packing(NamedTuple):
    """How a strided input is read in blocks (see :meth:`_Group._packed`)."""

    other: int
    """The space dim it lies contiguous along."""
    inner: int
    """The space dim the loops run along innermost: blocks of :data:`BLOCK` along it."""
    dims: Dims
    """The dims every op reads it along."""


class _Group:
    """The loops of one ``kernel.tile``."""

    def __init__(self, tile: TileOp, input_strides: Sequence[tuple[int, ...] | None] = ()) -> None:
        """The loops of ``tile``, whose inputs come with ``input_strides`` (element
        strides per input, None for row-major; missing ones are row-major)."""
        self.more_storage: dict[Operation, list[Storage]] = {}
        """Per tuple accumulator: its components after the first (set by :meth:`emit`)."""
        self.tile = tile
        body = tile.group_body()
        block = tile.body.block
        ops, yielded = tile.body_ops()
        self.args: list[SSAValue] = list(block.args)
        copy = decomposed_copy(ops, list(yielded), list(block.args))
        if copy is not None:
            new_ops, outputs, args = copy
            rank = len(tile.space_value)
            dims = propagate_dims(new_ops, dict(zip(args, tile.input_dims, strict=True)), rank)
            body = GroupBody(
                extents=body.extents,
                kinds=body.kinds,
                ops=tuple(op for op in new_ops if constant_value(op) is None),
                dims=dims,
                reads={(op, i): dims[v] for op in new_ops for i, v in enumerate(op.operands)},
                outputs=tuple(outputs),
                output_dims=body.output_dims,
                constants=frozenset(
                    r for op in new_ops if constant_value(op) is not None for r in op.results
                ),
                prefer_whole=body.prefer_whole,
            )
            self.args = list(args)
        self.strides: dict[SSAValue, tuple[int, ...]] = {
            a: given for a, given in zip(self.args, input_strides, strict=False) if given
        }
        """The element strides of the inputs that are not row-major."""
        self.body = body
        self.extents = body.extents
        # parallel dims keep their tiles; reduction dims run whole (element loops)
        tiles = [
            min(t, e) if body.kinds[d] is IteratorType.PARALLEL else e
            for d, (t, e) in enumerate(zip(tile.tiles_value, body.extents, strict=True))
        ]
        # the first parallel dim, when every op runs along it, is cut into at least
        # SPLIT_TILES tiles that threads can share (smaller tiles need less scratch)
        split = next((d for d in range(body.rank) if body.kinds[d] is IteratorType.PARALLEL), None)
        if split is not None and all(split in body.loop_dims(op) for op in body.ops):
            tiles[split] = min(tiles[split], max(1, -(-body.extents[split] // SPLIT_TILES)))
        self.tiles = tuple(tiles)
        self.level: dict[Operation, int] = {}
        self.blas: dict[Operation, int] = {}
        """2-D matmuls a BLAS call computes, to the output they write."""
        self.keep_long_chains = True
        """Whether values long chains would compute again are stored (see
        :meth:`_keep_long_chains`); not where their rows do not fit the tile's scratch."""
        self._plan()
        # the scratch of one tile stays within what the tile op records (the NumPy
        # target's plan under the budget): halve the parallel tile that cuts the scratch
        # most (the outermost of equals), until it fits or every one is 1
        limit = tile.scratch_value
        scratch = self._fit(tiles, limit)
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
        scratch = self._scratch_elements()
        if scratch > limit and scratch > self._scratch_at(tile.tiles_value):
            # the loops still need more than the plan, because they take scan and
            # reduction dims whole where the plan cuts them to fit the budget (a value
            # they store spans such a dim; small differences of the two scratch models,
            # an accumulator the plan keeps in the output, are not announced)
            name = tile.group_name or "a group"
            where = op_location(tile)
            warnings.warn(
                TdslLoopsBudgetWarning(
                    f"{'' if where is None else f'{where}: '}'{name}': the native loops need "
                    f"{scratch} elements of scratch per tile, more than the {limit} its plan "
                    "records under the memory budget (the loops take scan and reduction dims "
                    "whole, and this plan cuts one); the numpy target keeps the plan, or give "
                    f"a budget of at least {scratch} elements"
                ),
                stacklevel=2,
            )
        self.tiled = [d for d in range(body.rank) if self.tiles[d] < self.extents[d]]

    def _fit(self, tiles: Sequence[int], limit: int) -> int:
        """Halve parallel tiles (from ``tiles``) until the scratch is within ``limit`` or
        every one is 1; the scratch it comes to."""
        body = self.body
        shrunk = list(tiles)
        scratch = self._scratch_elements()
        while scratch > limit:
            best: tuple[int, int] | None = None
            for d in range(body.rank):
                if body.kinds[d] is not IteratorType.PARALLEL or shrunk[d] <= 1:
                    continue
                trial = list(shrunk)
                trial[d] = (trial[d] + 1) // 2
                self.tiles = tuple(trial)
                n = self._scratch_elements()
                if n < scratch and (best is None or n < best[0]):
                    best = (n, d)
            if best is None:
                break
            scratch, d = best
            shrunk[d] = (shrunk[d] + 1) // 2
        self.tiles = tuple(shrunk)
        if shrunk != list(tiles):
            self._plan()
        return scratch

    # -- planning -----------------------------------------------------------------

    def _plan(self) -> None:
        body = self.body
        for op in body.ops:
            k = self._blas_output(op)
            if k is not None and k not in self.blas.values():
                self.blas[op] = k
        # a reduction yielded as it is (no finalization, same dtype) accumulates in its output
        self.in_output: dict[Operation, int] = {}
        for k, v in enumerate(body.outputs):
            p = body.producer(v)
            if (
                p is None
                or not _is_reduction(p)
                or p in self.blas
                or p in self.in_output
                or body.outputs.count(v) != 1
                or reduction_of(p).finalizes()
                or reduction_of(p).accumulator().size != 1
                or reduction_of(p).accumulator_dtype() != numpy_dtype(v.type)
                or body.output_dims[k] != body.dims[v]
            ):
                continue
            self.in_output[p] = k
        # operands a matmul in loops reads along its contraction are stored first (one
        # tile's worth), not recomputed for every column of its result
        self.stored: list[SSAValue] = []
        for op in body.ops:
            if _is_contraction(op) and op not in self.blas:
                for v in op.operands:
                    p = body.producer(v)
                    if p is not None and not _is_reduction(p) and v not in self.stored:
                        self.stored.append(v)
        # a scan read along a space dim its result does not run along (broadcast) is
        # stored first, in a sweep over its own dims: computed in a sweep over more dims,
        # its carry would run on from one index of the broadcast dim to the next
        for op in body.ops:
            if not _is_scan(op) or op in self.blas:
                continue
            v = op.results[0]
            own = {d for d in body.dims[v] if d is not None}
            readers = [u.operation for u in v.uses if u.operation in body.members]
            if v not in self.stored and any(
                {d for d in body.loop_dims(r) if d is not None} - own for r in readers
            ):
                self.stored.append(v)
        for op in body.ops:
            level = 0
            for v in op.operands:
                p = body.producer(v)
                if p is None or p in self.blas:
                    continue
                ready = 1 if _is_reduction(p) or v in self.stored else 0
                level = max(level, self.level[p] + ready)
            self.level[op] = level
        self._keep_long_chains()
        self.slots, self.slot_values = self._slots()
        """Per stored value, its scratch slot (values whose reads are over share one)."""
        self.carries: list[Operation] = [
            op for op in body.ops if _is_scan(op) and op not in self.blas
        ]
        """Scans: each carries its running values in a ``scratch`` memref (its result's
        tile with the scan dims of extent 1), set to the identity before each sweep that
        computes it; the sweep's loops run along the scan dim in order."""
        self.packed = self._packed()
        """Strided inputs read in blocks through a buffer (see :meth:`_packed`): to the
        dim they lie contiguous along, and the dim the loops run innermost."""
        self.staged = self._staged() if self.hoistable() else {}
        """Values staged in an output slice (see :meth:`_staged`), to that output."""

    def _keep_long_chains(self) -> None:
        """Store (one tile's worth, in a sweep it runs in anyway) each element-wise value
        that a later sweep reads and would compute again from more than
        :data:`RECOMPUTE_LIMIT` ops: without it, a program of ``n`` ops and a reduction
        every few ops would compute ``n`` ops again in each of its ``n / k`` sweeps, code
        and work quadratic in its length.  The cost of a value is the ops a sweep runs to
        compute it (its operands' costs, counted again where shared, so an upper bound),
        down to inputs, constants, reductions and stored values."""
        self.kept: list[SSAValue] = []
        """The values stored this way."""
        if not self.keep_long_chains:
            return
        body = self.body
        cost: dict[Operation, int] = {}
        for op in body.ops:
            for v in dict.fromkeys(op.operands):
                p = body.producer(v)
                if (
                    p is not None
                    and p in cost
                    and v not in self.stored
                    and self.level[p] < self.level[op]
                    and cost[p] > RECOMPUTE_LIMIT
                    and len(p.results) == 1
                    and not _is_scan(p)
                ):
                    self.stored.append(v)
                    self.kept.append(v)
            if _is_reduction(op) or op in self.blas:
                continue  # read from its accumulator or output: nothing to compute again
            total = 1
            for v in op.operands:
                p = body.producer(v)
                if p is not None and p in cost and v not in self.stored:
                    total = min(total + cost[p], RECOMPUTE_CAP)
            cost[op] = total

    def _slots(self) -> tuple[dict[SSAValue, int], list[SSAValue]]:
        """A scratch slot per stored value, and the first value of each slot (its type is
        the slot's): a value stored in a sweep after the last sweep that reads another
        of the same type and dims takes over that one's slot."""
        body = self.body
        slots: dict[SSAValue, int] = {}
        firsts: list[SSAValue] = []
        last_read: list[int] = []
        """Per slot: the last sweep level that reads it."""
        for v in self.stored:
            p = body.producer(v)
            assert p is not None
            start = self.level[p]
            last = max(
                (self.level[u.operation] for u in v.uses if u.operation in body.members),
                default=start,
            )
            index = next(
                (
                    i
                    for i, w in enumerate(firsts)
                    if last_read[i] < start and w.type == v.type and body.dims[w] == body.dims[v]
                ),
                None,
            )
            if index is None:
                index = len(firsts)
                firsts.append(v)
                last_read.append(last)
            else:
                last_read[index] = max(last, last_read[index])
            slots[v] = index
        return slots, firsts

    def _staged(self) -> dict[SSAValue, int]:
        """Element-wise values that a reduction reads in the sweep that computes them and
        that an output's element-wise chain reads in a later sweep (softmax's
        ``exp(x - max)``: summed, then divided by the sum): the first sweep also stores
        each in its output's slice, and the later one reads it back instead of computing
        it again.  Only where the sweeps of a row share hoisted loops (the row is still in
        cache), and only when nothing but that chain reads the value after its sweep.
        The output's element type must hold the value's exactly: the same, or a wider
        float (an f32 ``exp`` in an f64 result is stored widened and read back
        narrowed, which gives the same f32)."""
        body = self.body
        staged: dict[SSAValue, int] = {}
        for p in body.ops:
            if _is_reduction(p) or p in self.blas or len(p.results) != 1:
                continue
            v = p.results[0]
            if v in self.stored:
                continue
            level = self.level[p]
            readers = [u.operation for u in v.uses if u.operation in body.members]
            if not any(_is_reduction(r) and self.level[r] == level for r in readers):
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
                        ok = w is v and self.level[user] == level
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
                or self.level[q] <= level
                or body.outputs.count(body.outputs[k]) != 1
                or body.output_dims[k] != body.dims[v]
                or not _holds_exactly(element_type(body.outputs[k]), element_type(v))
                or k in self.blas.values()
                or k in self.in_output.values()
                or k in staged.values()
            ):
                continue
            staged[v] = k
        return staged

    def _blas_output(self, op: Operation) -> int | None:
        """The output a 2-D matmul on group inputs may write with BLAS, if any: the one
        output whose element-wise chain alone reads it, point by point, and that holds
        the matmul's element type."""
        if not _is_contraction(op):
            return None
        body = self.body
        a, b = op.operands
        if len(tensor_shape(a)) != 2 or len(tensor_shape(b)) != 2:
            return None
        if body.producer(a) is not None or body.producer(b) is not None:
            return None
        if str(element_type(op.results[0])) not in ("f32", "f64"):
            return None
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

    # -- storage ------------------------------------------------------------------

    def tile_shape(self, value: SSAValue) -> tuple[int, ...]:
        dims = self.body.dims[value]
        return tuple(
            extent if d is None else self.tiles[d]
            for extent, d in zip(tensor_shape(value), dims, strict=True)
        )

    def accumulators(self) -> list[Operation]:
        """The reductions that accumulate in scratch (not in their output)."""
        return [
            op
            for op in self.body.ops
            if _is_reduction(op) and op not in self.blas and op not in self.in_output
        ]

    def _scratch_elements(self) -> int:
        return sum(math.prod(t.get_shape()) for t in self.scratch_types())

    def _scratch_at(self, plan_tiles: Sequence[int]) -> int:
        """The loops' scratch if their scan and reduction dims took the plan's tiles."""
        kept = self.tiles
        self.tiles = tuple(
            t if self.body.kinds[d] is IteratorType.PARALLEL else min(p, e)
            for d, (t, p, e) in enumerate(zip(kept, plan_tiles, self.extents, strict=True))
        )
        try:
            return self._scratch_elements()
        finally:
            self.tiles = kept

    def _scan_dims(self, op: Operation) -> set[int]:
        return carried_dims(self.body, op)

    def carry_dims(self, op: Operation) -> Dims:
        """The dims of a scan's carry: its result's, the scan dims taken as extent 1."""
        return carry_dims(self.body, op)

    def more_states(self) -> list[tuple[Operation, int]]:
        """The components after the first of tuple accumulators: (op, component)."""
        out: list[tuple[Operation, int]] = []
        for op in self.accumulators():
            out += [(op, c) for c in range(1, _state_size(op))]
        return out

    def scratch_types(self) -> list[MemRefType[Attribute]]:
        """The scratch memrefs of one tile: each accumulator (its first component), then
        each stored value, then each scan's carry, then the further components of tuple
        accumulators."""
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
            assert isinstance(op, Scan)
            shape = [
                1 if d is None else n
                for n, d in zip(self.tile_shape(op.results[0]), self.carry_dims(op), strict=True)
            ]
            types.append(MemRefType(element_of(op.carried_loops()[0].dtype), shape))
        for op, c in self.more_states():
            state = reduction_of(op).accumulator()
            types.append(MemRefType(element_of(state.dtypes[c]), self.tile_shape(op.results[0])))
        return types

    def contiguous(self, v: SSAValue, dims: Dims) -> int | None:
        """The space dim that ``v``, read along ``dims``, lies contiguous along: its last
        dim, or for a strided input the dim of its smallest stride (None: broadcast)."""
        strides = self.strides.get(v)
        if strides is None:
            return next((d for d in reversed(dims) if d is not None), None)
        shape = tensor_shape(v)
        axes = [i for i, d in enumerate(dims) if d is not None and shape[i] > 1 and strides[i]]
        if not axes:
            return None  # (a stride of 0 is a broadcast: along it, one element)
        return dims[min(axes, key=lambda i: (abs(strides[i]), -i))]

    def _packed(self) -> dict[SSAValue, _Packing]:
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
        body = self.body
        packed: dict[SSAValue, _Packing] = {}
        for a in self.strides:
            reads = {
                body.reads[(op, i)] for op in body.ops for i, w in enumerate(op.operands) if w is a
            }
            if len(reads) != 1:
                continue
            (dims,) = reads
            if len(dims) != 2 or None in dims:
                continue
            other = self.contiguous(a, dims)
            inner = dims[-1]
            if other is None or inner is None or other == inner or dims[0] == dims[1]:
                continue  # (None: one element along both dims, as a 1x1 tile, or a broadcast)
            size = numpy_dtype(a.type).itemsize
            if self.tiles[other] * BLOCK * size > PACK_BYTES or self.tiles[inner] <= BLOCK:
                continue
            step = abs(self.strides[a][dims.index(inner)]) * size  # bytes along inner
            if step < 64 or (size > 4 and step % 4096):
                continue  # (under a cache line apart, a broadcast: read as they lie)
            packed[a] = _Packing(other, inner, dims)
        return packed

    def hoistable(self) -> list[int]:
        """The leading space dims (in order) all sweeps can share as outer loops: parallel,
        run along by every reduction and stored value, and no value's contiguous dim."""
        body = self.body
        last: set[int] = set()  # dims that are some 2-D (or more) value's contiguous one
        for dims in [*body.dims.values(), *body.output_dims]:
            if len([x for x in dims if x is not None]) >= 2 and dims[-1] is not None:
                last.add(dims[-1])
        last.update(p.other for p in self.packed.values())  # packed in blocks
        effects = [set(body.loop_dims(op)) for op in body.ops if _is_reduction(op)]
        effects += [set(body.dims[v]) for v in self.stored]
        # a scan's dim is never hoisted: its carry restarts before each sweep over it
        scanned = {d for op in self.carries for d in self._scan_dims(op)}
        out: list[int] = []
        for d in range(body.rank):
            if body.kinds[d] is not IteratorType.PARALLEL or d in last or d in scanned:
                break
            if any(d not in e for e in effects):
                break
            out.append(d)
        return out

    def nest_order(self, dims: Sequence[int], values: Sequence[tuple[SSAValue, Dims]]) -> list[int]:
        """The loop order of a nest over ``dims``: space order, except that the dim most of
        its values (weighted by size) run along as their last, contiguous dim goes
        innermost."""
        weight: dict[int, int] = {}
        for v, vdims in values:
            last = self.contiguous(v, vdims)
            if last is not None and last in dims:
                weight[last] = weight.get(last, 0) + math.prod(tensor_shape(v)) + 1
        if not weight:
            return list(dims)
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
        for (op, _), ref in zip(self.more_states(), accumulators[n_carried:], strict=True):
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

        def ranges(dims: Sequence[int]) -> list[tuple[int, SSAValue, SSAValue]]:
            return [
                (d, starts[d], ends[d])
                if d in starts
                else (d, code.index(0), code.index(self.extents[d]))
                for d in dims
                if d not in hoisted
            ]

        top = max(self.level.values(), default=0)
        for level in range(top + 1):
            # accumulators start from the identity
            for op, where in accs.items():
                if self.level[op] != level:
                    continue
                state = reduction_of(op).accumulator()
                dims = _dim_set(body.dims[op.results[0]])
                inner, coords = code.nest(ranges(dims))
                point = _Point(self, inner, {**hoisted, **coords}, starts, storage)
                places = [where, *self.more_storage.get(op, ())]
                for start, dt, place in zip(state.identities, state.dtypes, places, strict=True):
                    point.store(
                        inner.scalar(start, element_of(dt)), place, body.dims[op.results[0]]
                    )
            # the sweeps: one loop nest per set of dims, effects in program order
            sweeps: dict[tuple[int, ...], list[tuple[str, Operation | int | SSAValue]]] = {}
            for op in body.ops:
                if self.level[op] == level and op in accs:
                    sweeps.setdefault(_dim_set(body.loop_dims(op)), []).append(("acc", op))
            for v in self.stored:
                p = body.producer(v)
                assert p is not None
                if self.level[p] == level:
                    sweeps.setdefault(_dim_set(body.dims[v]), []).append(("store", v))
            for v in self.staged:
                p = body.producer(v)
                assert p is not None
                if self.level[p] == level:
                    sweeps.setdefault(_dim_set(body.dims[v]), []).append(("stage", v))
            for k, (v, out_dims) in enumerate(zip(body.outputs, body.output_dims, strict=True)):
                p = body.producer(v)
                if p is not None and (p in accs or (p in self.blas and self.blas[p] == k)):
                    continue  # finalized after its sweep, or written by BLAS
                if (0 if p is None else self.level[p]) == level:
                    sweeps.setdefault(_dim_set(out_dims), []).append(("out", k))
            for dims, effects in sweeps.items():
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
                    assert isinstance(op, Scan)
                    loop = op.carried_loops()[0]
                    cdims = self.carry_dims(op)
                    inner, coords = code.nest(ranges(_dim_set(cdims)))
                    point = _Point(self, inner, {**hoisted, **coords}, starts, storage, carries)
                    identity = inner.scalar(loop.start, element_of(loop.dtype))
                    point.store(identity, carries[op], cdims)
                order = [d for d in self.nest_order(dims, touched) if d not in hoisted]
                packs = self._packs_of_sweep(order, touched, effects)
                if packs:
                    point = self._packed_nest(
                        code, ranges(order), packs, buffers, hoisted, starts, storage
                    )
                    point.carries = carries
                else:
                    inner, coords = code.nest(ranges(order))
                    point = _Point(self, inner, {**hoisted, **coords}, starts, storage, carries)
                for kind, what in effects:
                    if kind == "acc":
                        assert isinstance(what, Operation)
                        point.accumulate(what, accs[what])
                    elif kind == "store":
                        assert isinstance(what, SSAValue)
                        where = Storage(stored[what], tiled=True)
                        point.store(point.value(what, body.dims[what]), where, body.dims[what])
                    elif kind == "stage":
                        assert isinstance(what, SSAValue)
                        k = self.staged[what]
                        value = point.value(what, body.dims[what])
                        wide = element_type(body.outputs[k])
                        value = convert_scalar(point.code.b, value, wide)
                        point.store(value, outputs[k], body.output_dims[k])
                    else:
                        assert isinstance(what, int)
                        value = point.value(body.outputs[what], body.output_dims[what])
                        point.store(value, outputs[what], body.output_dims[what])
            for v in self.stored:  # readable from the next sweep on
                p = body.producer(v)
                if p is not None and self.level[p] == level:
                    storage[v] = Storage(stored[v], tiled=True)
            for v, k in self.staged.items():  # read back from the output slice
                p = body.producer(v)
                if p is not None and self.level[p] == level:
                    storage[v] = outputs[k]
            # reductions that are outputs: finalized from their accumulators
            for k, v in enumerate(body.outputs):
                p = body.producer(v)
                if p is None or p not in accs or self.level[p] != level:
                    continue
                if self.in_output.get(p) == k:
                    continue  # accumulated in place
                dims = _dim_set(body.output_dims[k])
                inner, coords = code.nest(ranges(dims))
                point = _Point(self, inner, {**hoisted, **coords}, starts, storage)
                point.store(point.value(v, body.output_dims[k]), outputs[k], body.output_dims[k])


def _state_size(op: Operation) -> int:
    """How many components a reduction's accumulator has (1 for most)."""
    return reduction_of(op).accumulator().size


def _effect_values(
    body: GroupBody, effects: Sequence[tuple[str, Operation | int | SSAValue]]
) -> list[SSAValue]:
    values: list[SSAValue] = []
    for _, what in effects:
        if isinstance(what, Operation):
            values += list(what.operands)
        elif isinstance(what, int):
            values.append(body.outputs[what])
        else:
            values.append(what)
    return values


class _Point:
    """One point of a loop nest: loads, the scalar bodies, stores; each value once."""

    def __init__(
        self,
        group: _Group,
        code: _Code,
        coords: dict[int, SSAValue],
        starts: dict[int, SSAValue],
        storage: dict[SSAValue, Storage],
        carries: Mapping[Operation, Storage] | None = None,
    ) -> None:
        self.group = group
        self.code = code
        self.coords = coords
        self.starts = starts
        self.storage = storage
        self.carries: Mapping[Operation, Storage] = carries or {}
        self.memo: dict[tuple[SSAValue, Dims], SSAValue] = {}
        self._zero: SSAValue | None = None

    def indices(
        self, dims: Dims, tiled: bool, origin: tuple[tuple[int, SSAValue], ...] = ()
    ) -> list[SSAValue]:
        out: list[SSAValue] = []
        origins = dict(origin)
        for d in dims:
            if d is None:
                if self._zero is None:
                    self._zero = self.code.index(0)
                out.append(self._zero)
            elif d in origins:
                out.append(self.code.insert(arith.SubiOp(self.coords[d], origins[d])))
            elif tiled and d in self.starts:
                out.append(self.code.insert(arith.SubiOp(self.coords[d], self.starts[d])))
            else:
                out.append(self.coords[d])
        return out

    def load(self, where: Storage, dims: Dims) -> SSAValue:
        indices = self.indices(dims, where.tiled, where.origin)
        if where.axes:
            indices = [indices[k] for k in where.axes]
        return self.code.insert(memref.LoadOp.get(where.ref, indices))

    def store(self, value: SSAValue, where: Storage, dims: Dims) -> None:
        indices = self.indices(dims, where.tiled, where.origin)
        if where.axes:
            indices = [indices[k] for k in where.axes]
        self.code.b.insert(memref.StoreOp.get(value, where.ref, indices))

    def value(self, v: SSAValue, dims: Dims) -> SSAValue:
        """``v`` at this point, read along ``dims``.

        Computed operands first, in operand order, depth first, with an explicit
        stack: a chain of thousands of element-wise ops is as deep as it is long,
        and no Python recursion may depend on the program's size."""
        found = self.memo.get((v, dims))
        if found is not None:
            return found
        body = self.group.body
        stack: list[tuple[SSAValue, Dims, bool]] = [(v, dims, False)]
        while stack:
            w, wdims, ready = stack.pop()
            if (w, wdims) in self.memo:
                continue
            p = self._computed_here(w)
            if p is not None and not ready:
                stack.append((w, wdims, True))
                for i in reversed(range(len(p.operands))):
                    key = (p.operands[i], body.reads[(p, i)])
                    if key not in self.memo:
                        stack.append((*key, False))
                continue
            self.memo[(w, wdims)] = self._value_here(w, wdims)
        return self.memo[(v, dims)]

    def _computed_here(self, v: SSAValue) -> Operation | None:
        """The op whose scalar body computes ``v`` at this point from its operands'
        values; None where ``v`` is a constant or is loaded from storage."""
        body = self.group.body
        p = body.producer(v)
        if v in body.constants or p is None or v in self.storage:
            return None
        return p

    def _value_here(self, v: SSAValue, dims: Dims) -> SSAValue:
        """``v`` read along ``dims``, its operands' values (if computed) in the memo."""
        group, body = self.group, self.group.body
        p = body.producer(v)
        owner = v.owner
        if v in body.constants:
            assert isinstance(owner, Operation)
            data = constant_value(owner)
            assert data is not None and data.size == 1
            return self.code.scalar(float(data.reshape(())), element_type(v))
        if p is None:
            return self.load(self.storage[v], dims)
        if v in group.staged and v in self.storage:  # staged in an output, maybe widened
            return convert_scalar(self.code.b, self.load(self.storage[v], dims), element_type(v))
        if v in self.storage:  # a BLAS result, a stored value, or a reduction's accumulator
            raw = self.load(self.storage[v], dims)
            if p in group.blas or not _is_reduction(p):
                return raw
            more = [self.load(w, dims) for w in group.more_storage.get(p, ())]
            return reduction_of(p).scalar_finalize_state(self.code.b, [raw, *more], body.count(p))
        s = structured(p)
        assert s is not None
        args = [self.memo[(w, body.reads[(p, i)])] for i, w in enumerate(p.operands)]
        if p in self.carries:  # a scan: the next running value of this row
            assert isinstance(p, Scan)
            cdims = group.carry_dims(p)
            carry = self.load(self.carries[p], cdims)
            running = p.scalar_scan(self.code.b, carry, args)
            self.store(running, self.carries[p], cdims)
            self.memo[(v, body.dims[v])] = running
            return running
        results = element_body(p, self.code.b, args)
        for r, x in zip(p.results, results, strict=True):
            self.memo[(r, body.dims[r])] = x
        return results[list(p.results).index(v)]  # pyright: ignore[reportArgumentType]

    def accumulate(self, op: Operation, where: Storage) -> None:
        body = self.group.body
        args = [self.value(w, body.reads[(op, i)]) for i, w in enumerate(op.operands)]
        dims = body.dims[op.results[0]]
        places = [where, *self.group.more_storage.get(op, ())]
        state = [self.load(w, dims) for w in places]
        combined = reduction_of(op).scalar_accumulate(self.code.b, state, args)
        if isinstance(op, ReductionOp) and op.REORDERS:
            for c in combined:
                _mark_reassoc(c)
        for c, w in zip(combined, places, strict=True):
            self.store(c, w, dims)


# ---------------------------------------------------------------------------
# One function
# ---------------------------------------------------------------------------


class _FunctionLowering:
    def __init__(
        self,
        fn: func.FuncOp,
        module: ModuleOp,
        strides: Sequence[tuple[int, ...] | None] = (),
    ) -> None:
        self.fn = fn
        self.module = module
        self.name = fn.sym_name.data
        self.externals: dict[str, func.FuncOp] = {}
        self.strides = list(strides)
        """Per input, element strides to read it with (None: row-major)."""

    def input_type(self, index: int, t: Attribute) -> MemRefType[Attribute]:
        """The memref type of input ``index``: row-major, or with its given strides."""
        row_major = memref_of(t)
        strides = self.strides[index] if index < len(self.strides) else None
        if strides is None:
            return row_major
        return MemRefType(
            row_major.element_type,
            row_major.get_shape(),
            StridedLayoutAttr(list(strides), 0),
        )

    def run(self) -> list[Operation]:
        """The new functions (main first); the old one is left to the caller."""
        fn = self.fn
        block = fn.body.block
        ops = list(block.ops)
        ret = ops[-1] if ops and isinstance(ops[-1], func.ReturnOp) else None
        if ret is None:
            raise TdslIRError(f"@{self.name} has no func.return", op=fn)
        for op in ops[:-1]:
            if isinstance(op, FusedOp):
                raise TdslIRError(
                    f"tdsl-lower-to-loops lowers kernel.tile groups: run tdsl-tile before it "
                    f"(@{self.name} has a kernel.fused)",
                    op=op,
                )
            if not isinstance(op, TileOp) and constant_value(op) is None:
                raise TdslIRError(
                    f"tdsl-lower-to-loops lowers kernel.tile groups: run tdsl-fuse and "
                    f"tdsl-tile before it ('{op.name}' is outside a group in @{self.name})",
                    op=op,
                )
        # arguments of the new function, and where each tensor value lives
        types: list[Attribute] = []
        roles: list[str] = []

        def arg(t: Attribute, role: str) -> int:
            types.append(t)
            roles.append(role)
            return len(types) - 1

        place: dict[SSAValue, int] = {
            a: arg(self.input_type(i, a.type), "in") for i, a in enumerate(block.args)
        }
        outs = [arg(memref_of(v.type), "out") for v in ret.arguments]
        for i, v in enumerate(ret.arguments):
            if isinstance(v.owner, TileOp) and v not in place:
                place[v] = outs[i]
        direct = {v for v in ret.arguments if place.get(v) in outs}
        groups: list[tuple[TileOp, _Group, list[int]]] = []
        for op in ops[:-1]:
            if constant_value(op) is not None:
                place[op.results[0]] = arg(memref_of(op.results[0].type), "tmp")
                continue
            assert isinstance(op, TileOp)
            for r in op.outputs:
                if r not in place:
                    place[r] = arg(memref_of(r.type), "tmp")
            group = _Group(op, [_strides(types[place[v]]) for v in op.inputs])
            scratch = [arg(t, "scratch") for t in group.scratch_types()]
            groups.append((op, group, scratch))
        new = func.FuncOp(self.name, (types, []))
        new.attributes[ROLES_ATTR] = ArrayAttr([StringAttr(r) for r in roles])
        args = new.body.block.args
        for a, old in zip(args, block.args, strict=False):  # the inputs come first
            a.name_hint = old.name_hint
        for i, o in enumerate(outs):
            args[o].name_hint = f"out{i}"
        code = _Code.at_end(new.body.block)
        functions: list[Operation] = [new]
        for op in ops[:-1]:
            if constant_value(op) is not None:
                ref = args[place[op.results[0]]]
                name = f"{self.name}_fill{len(functions)}"
                functions.append(
                    self._helper(name, [ref], lambda c, refs, op=op: self._fill(c, op, refs[0]))
                )
                code.b.insert(func.CallOp(name, [ref], []))
        for index, (tile, group, scratch) in enumerate(groups):
            gname = f"{self.name}_{tile.group_name or f'k{index}'}".replace(".", "_")
            inputs = [args[place[v]] for v in tile.inputs]
            outputs = [args[place[r]] for r in tile.outputs]
            accs = [args[i] for i in scratch]
            functions.append(self._group_function(gname, group, inputs, outputs, accs))
            for mm, k in group.blas.items():
                self._blas_call(code, mm, group, inputs, outputs[k])
            ntiles = (
                math.ceil(group.extents[group.tiled[0]] / group.tiles[group.tiled[0]])
                if group.tiled
                else 1
            )
            operands = [code.index(0), code.index(ntiles), *inputs, *outputs, *accs]
            code.b.insert(func.CallOp(gname, operands, []))
        # results that are not computed in place: arguments, constants, repeats
        for i, v in enumerate(ret.arguments):
            if v in direct and place[v] == outs[i]:
                continue
            pair = [args[place[v]], args[outs[i]]]
            name = f"{self.name}_copy{i}"
            shape = tensor_shape(v)
            functions.append(
                self._helper(
                    name, pair, lambda c, refs, shape=shape: self._copy(c, refs[0], refs[1], shape)
                )
            )
            code.b.insert(func.CallOp(name, pair, []))
        code.b.insert(func.ReturnOp())
        functions.extend(self.externals.values())
        return functions

    def _group_function(
        self,
        name: str,
        group: _Group,
        inputs: Sequence[SSAValue],
        outputs: Sequence[SSAValue],
        accs: Sequence[SSAValue],
    ) -> func.FuncOp:
        memrefs = [*inputs, *outputs, *accs]
        types = [IndexType(), IndexType(), *(v.type for v in memrefs)]
        fn = func.FuncOp(name, (types, []))
        block = fn.body.block
        lo, hi, *refs = block.args
        lo.name_hint, hi.name_hint = "lo", "hi"
        for a, v in zip(refs, memrefs, strict=True):
            a.name_hint = v.name_hint
        n_in, n_out = len(inputs), len(outputs)
        code = _Code.at_end(block)
        group.emit(
            code,
            lo,
            hi,
            [Storage(r) for r in refs[:n_in]],
            [Storage(r) for r in refs[n_in : n_in + n_out]],
            refs[n_in + n_out :],
        )
        code.b.insert(func.ReturnOp())
        return fn

    def _helper(
        self,
        name: str,
        refs: Sequence[SSAValue],
        body: Callable[[_Code, Sequence[SSAValue]], None],
    ) -> func.FuncOp:
        """A function of memrefs ``refs`` (their types), its body written by ``body``."""
        fn = func.FuncOp(name, ([r.type for r in refs], []))
        code = _Code.at_end(fn.body.block)
        body(code, fn.body.block.args)
        code.b.insert(func.ReturnOp())
        return fn

    def _blas_call(
        self, code: _Code, op: Operation, group: _Group, inputs: Sequence[SSAValue], out: SSAValue
    ) -> None:
        a, b = op.operands
        index = {arg: i for i, arg in enumerate(group.args)}
        lhs, rhs = inputs[index[a]], inputs[index[b]]
        for r in (lhs, rhs):
            layout = cast(MemRefType[Attribute], r.type).layout
            if isinstance(layout, StridedLayoutAttr):
                raise StridedBlasOperandError(
                    "tdsl-lower-to-loops: a strided input is a BLAS matmul's operand (the "
                    "call reads row-major arrays): give it row-major",
                    op=op,
                )
        # the whole operands (the op in the tile body has the tile's shapes)
        (m, k), (_, n) = (cast(MemRefType[Attribute], r.type).get_shape() for r in (lhs, rhs))
        element = element_type(op.results[0])
        name = matmul_symbol(element, m, k, n)
        # the symbol promises BLAS three buffers of its element type
        assert all(
            cast(MemRefType[Attribute], r.type).element_type == element for r in (lhs, rhs, out)
        ), f"{name} called on {[str(r.type) for r in (lhs, rhs, out)]}"
        if name not in self.externals:
            self.externals[name] = func.FuncOp.external(name, [lhs.type, rhs.type, out.type], [])
        code.b.insert(func.CallOp(name, [lhs, rhs, out], []))

    def _fill(self, code: _Code, op: Operation, ref: SSAValue) -> None:
        data = constant_value(op)
        assert data is not None
        flat = data.reshape(-1)
        if flat.size and not (flat == flat[0]).all() and not (flat != flat).all():
            raise TdslIRError(
                "tdsl-lower-to-loops: a constant array that is not a splat is not supported "
                "(the numpy target runs it)",
                op=op,
            )
        shape = tensor_shape(op.results[0])
        value = float(flat[0]) if flat.size else 0.0
        inner, coords = code.nest([(d, code.index(0), code.index(e)) for d, e in enumerate(shape)])
        x = inner.scalar(value, element_type(op.results[0]))
        inner.b.insert(memref.StoreOp.get(x, ref, [coords[d] for d in range(len(shape))]))

    def _copy(self, code: _Code, src: SSAValue, dst: SSAValue, shape: Sequence[int]) -> None:
        inner, coords = code.nest([(d, code.index(0), code.index(e)) for d, e in enumerate(shape)])
        idx = [coords[d] for d in range(len(shape))]
        x = inner.insert(memref.LoadOp.get(src, idx))
        inner.b.insert(memref.StoreOp.get(x, dst, idx))


def lower_to_loops(
    module: ModuleOp, strides: Mapping[str, Sequence[tuple[int, ...] | None]] | None = None
) -> None:
    """Lower every function of ``module`` (in place); see the module docstring.

    ``strides`` gives, by function name, the element strides of each input (None for
    row-major) that its loops read it with (``memref<4x8xf32, strided<[1, 4]>>``): a
    runtime compiles such a variant to read a NumPy view (a transpose, a slice with a
    step) where it lies, without copying it.  A strided input must not be a BLAS
    call's operand (the call assumes row-major): such functions are refused.

    The result is verified (a few ms): loops that do not verify are a
    :class:`~tdsl.errors.TdslIRError` (an internal error), never code that computes
    wrong values.  (The llvm stage needs no such check: llvmlite verifies the LLVM
    IR it parses.)"""
    from xdsl.utils.exceptions import VerifyException

    for fn in [op for op in module.ops if isinstance(op, func.FuncOp)]:
        if fn.is_declaration:
            continue
        given = (strides or {}).get(fn.sym_name.data, ())
        new_ops = _FunctionLowering(fn, module, given).run()
        fn.detach()
        fn.erase()
        for op in new_ops:
            module.body.block.add_op(op)
    try:
        module.verify()
    except VerifyException as err:
        raise TdslIRError(
            f"internal error: tdsl-lower-to-loops produced IR that does not verify ({err}); "
            "target='numpy' computes this expression"
        ) from None


def loop_matmuls(module: ModuleOp) -> int:
    """How many matmuls of the tiled ``module`` :func:`lower_to_loops` would compute
    with loops (row-major inputs), not with a BLAS call: its plan of each group,
    without building any loops."""
    count = 0
    for op in module.walk():
        if isinstance(op, TileOp):
            group = _Group(op)
            count += sum(_is_contraction(o) and o not in group.blas for o in group.body.ops)
    return count


@dataclass(frozen=True)
class LowerToLoopsPass(ModulePass):
    """Lower ``kernel.tile`` groups to loops on memrefs in upstream dialects."""

    name = "tdsl-lower-to-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_to_loops(op)


__all__ = [
    "ROLES_ATTR",
    "LowerToLoopsPass",
    "Storage",
    "loop_matmuls",
    "lower_to_loops",
    "matmul_symbol",
    "memref_of",
]
