"""The shared pieces of ``tdsl-lower-to-loops``: its constants (:data:`RECOMPUTE_LIMIT`,
:data:`BLOCK`, :data:`ROLES_ATTR`, ...), the small predicates and type helpers on ops,
the builder of loop code (``_Code``) and the storage of a value (:class:`Storage`);
see :mod:`tdsl.backend.llvm.lower_to_loops` for the lowering itself."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, cast

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StridedLayoutAttr,
    TensorType,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from tdsl.dialects.kernel_plan import Dims, GroupBody, carried_dims
from tdsl.dialects.op_interfaces import row_major_strides
from tdsl.dialects.structured import (
    BOOL,
    Contraction,
    ElementwiseOp,
    FloatType,
    IteratorType,
    Scan,
    SweepDecomposable,
    element_type,
    is_int,
    reduction_of,
    scalar_constant,
    structured,
    tensor_shape,
)
from tdsl.errors import TdslIRError

if TYPE_CHECKING:
    from tdsl.backend.llvm.loops_plan import _GroupPlan  # pyright: ignore[reportPrivateUsage]

RECOMPUTE_LIMIT = 8
"""The most ops a sweep computes again for one value an earlier sweep computed; a value
that would cost more is stored in scratch instead (see :func:`keep_long_chains`)."""

GEMM_RECOMPUTE_LIMIT = 2
"""The same in a group with matmuls BLAS computes a tile at a time: its sweeps run over
whole tiles (no row stays in cache from one sweep to the next), so a value such as
softmax's ``exp`` is stored rather than computed again."""

RECOMPUTE_CAP = 1 << 30
"""Where the cost count stops growing (shared operands count once per use)."""


class StridedBlasOperandError(TdslIRError):
    """A strided input that a BLAS call would read: the native runtime copies it to a
    row-major array instead of compiling a variant for its strides (no failure)."""


def blas_rows(t: MemRefType[Attribute]) -> bool:
    """Whether BLAS can read the last two dims of ``t`` in place as a row-major matrix:
    contiguous rows a leading dimension apart that is at least a row's length (a
    broadcast view's row stride is 0 and an overlapping window's is shorter; BLAS
    refuses such a call and computes nothing)."""
    strides = t.get_strides()
    if strides is None or len(strides) < 2:
        return False
    row, step = strides[-2], strides[-1]
    if 0 in t.get_shape():
        return True  # empty: BLAS reads nothing (the call passes a leading dimension >= 1)
    return step == 1 and row is not None and row >= max(1, t.get_shape()[-1])


SPLIT_TILES = 64
"""The tiles a group's first parallel dim is cut into at least, for threads to share."""

GEMM_SPLIT_TILES = 2
"""The same, per thread that shares them, for a group with matmuls BLAS computes a tile
at a time (tall tiles keep BLAS efficient).  Two per thread: one per thread would hold a
whole value at once over the threads' scratch (a GPT-2 block's hidden layer, 512 rows in
two tiles of 256), at the same speed (block 58.6 ms against 57.4 in one process)."""

BLOCK = 64
"""The elements along its innermost dim of a block of a packed strided input (see
:func:`~tdsl.backend.llvm.loops_choices.packed_inputs`)."""

PACK_BYTES = 64 * 1024
"""The most bytes of one packed block's buffer (a stack array of the group function)."""

ROLES_ATTR = "tdsl.arg_roles"
"""The function attribute naming each argument's role (one of :data:`ROLES`)."""

ROLES = ("in", "out", "tmp", "scratch", "const", "view", "error")
"""The roles of a main function's arguments: an input, a result, an intermediate between
groups, a group's scratch, a constant, a window of another argument, a gather's error
flag."""

VIEWS_ATTR = "tdsl.views"
"""The function attribute of its ``view`` arguments: per view, its argument, the argument
it is a window of, and the element offset of its first element there (the caller passes
a pointer that far into the other's buffer; the view's memref type has its strides)."""

CONSTANTS_ATTR = "tdsl.constants"
"""The function attribute holding the data of its ``const`` arguments, in order (the
``tensordsl.constant`` ops' values): the caller passes them, filled once."""

SCRATCH_LIMIT_ATTR = "tdsl.scratch_limit"
"""The attribute of a main function's call of a group: the scratch (elements) the group's
``kernel.tile`` records, which all the threads a runtime splits the group over share."""

SERIAL_ATTR = "tdsl.serial"
"""On a group's call: its loops call BLAS.  The runtime splits its tiles over threads
only by :data:`tdsl.defaults.MIN_BLAS_BYTES_PER_THREAD`, each thread then running its
BLAS calls on one thread; otherwise BLAS's own threads share each call (the two never
both take the cores)."""


def loops_bug(what: str, op: Operation | None = None) -> TdslIRError:
    """An internal error of the loops lowering, located at ``op`` when given (never a
    bare assert: the JIT's ``auto`` target then runs the numpy target instead)."""
    return TdslIRError(
        f"internal error: tdsl-lower-to-loops: {what} (the numpy target computes this expression)",
        op=op,
    )


def memref_of(t: Attribute) -> MemRefType[Attribute]:
    """The memref type (identity layout) of a static tensor type."""
    if not isinstance(t, TensorType):
        raise loops_bug(f"a value of type {t} where a tensor was expected")
    tensor = cast(Attribute, t)
    return MemRefType(element_type(tensor), tensor_shape(tensor))


def matmul_symbol(element: Attribute, m: int, k: int, n: int) -> str:
    """The external function a 2-D matmul calls: ``tdsl_matmul_f32_64x128x256``."""
    return f"tdsl_matmul_{element}_{m}x{k}x{n}"


def _is_contraction(op: Operation) -> bool:
    """A matrix product (a :class:`~tdsl.dialects.op_interfaces.Contraction`): BLAS may
    compute it."""
    return isinstance(op, Contraction)


def swept_ops(tiles: Sequence[int], body: GroupBody) -> set[Operation]:
    """The ops of ``body`` the loops run as their sweeps
    (:class:`~tdsl.dialects.structured.SweepDecomposable`: ``logsumexp``'s maximum, then
    its sum of exponentials, reductions LLVM vectorizes, where the one-pass online state
    is a serial chain of ``exp`` and selects): those whose operand a second sweep can read
    again.  Computed element-wise from the group's inputs, it is computed again; a
    matmul's product reduced along its columns only, where the tile op's plan (``tiles``)
    takes them whole, is in the scratch the loops hold for BLAS's tile anyway, as
    ``log_softmax(x @ w)``'s decomposition reads it (``logsumexp(x @ w, axis=1)``,
    512x768 by 768x4096, one thread: 38.8 ms in one pass, 18.8 ms in sweeps,
    ``benchmarks/logsumexp.py``).  Elsewhere
    the loops would hold the product whole along the reduced dims, beyond the plan's
    scratch (``logsumexp(relu(a) @ b, axis=0)`` at budget 1024; ``logsumexp(x @ w,
    axis=1)`` at 256, whose plan cuts the columns)."""
    swept: set[Operation] = set()
    for op in body.ops:
        s = structured(op)
        if s is None or not isinstance(op, SweepDecomposable) or not op.decomposes_in_sweeps():
            continue
        x = op.operands[0]
        kinds = zip(body.loop_dims(op), s.iterator_types(), strict=True)
        reduced = {d for d, k in kinds if k is IteratorType.REDUCTION and d is not None}
        columns = reduced == {body.dims[x][-1]} and all(
            tiles[d] >= body.extents[d] for d in reduced
        )
        todo, seen = [x], set[SSAValue]()
        while todo and op not in swept:
            v = todo.pop()
            p = body.producer(v)
            if p is None or v in seen:
                continue
            seen.add(v)
            if _is_contraction(p) and columns and tensor_shape(v) == tensor_shape(x):
                continue  # (its tile's rows in scratch, the columns whole)
            t = structured(p)
            if t is None or any(k is not IteratorType.PARALLEL for k in t.iterator_types()):
                break
            todo.extend(p.operands)
        else:
            swept.add(op)
    return swept


def _is_scan(op: Operation) -> bool:
    """Whether ``op`` tiles some loop dim itself, carrying a state (a
    :class:`~tdsl.dialects.op_interfaces.Scan` with ``carried_loops``)."""
    return isinstance(op, Scan) and bool(op.carried_loops())


def _is_reduction(op: Operation) -> bool:
    s = structured(op)
    return s is not None and IteratorType.REDUCTION in s.iterator_types()


def sweep_readers(
    body: GroupBody, blas: Mapping[Operation, int], value: SSAValue
) -> list[Operation]:
    """The ops of ``body`` that read ``value`` directly or through element-wise ops
    computed in the same sweep (not those ``blas`` computes; a reduction's result comes
    from its accumulator, so the walk stops at it): a sweep that computes any of them
    computes ``value`` too."""
    found: dict[Operation, None] = {}
    pending = [value]
    while pending:
        for use in pending.pop().uses:
            reader = use.operation
            if reader not in body.members or reader in found:
                continue
            found[reader] = None
            if not _is_reduction(reader) and reader not in blas:
                pending.extend(reader.results)
    return list(found)


def op_levels(
    body: GroupBody,
    blas: Mapping[Operation, int],
    stored: Sequence[SSAValue],
    floors: Mapping[Operation, int] | None = None,
) -> dict[Operation, int]:
    """The sweep (level) of each op of ``body``: the first after those computing the
    reductions and ``stored`` values it reads (a BLAS call's result, computed before the
    sweeps, is ready at level 0), and no earlier than its ``floors``."""
    level: dict[Operation, int] = {}
    for op in body.ops:
        least = (floors or {}).get(op, 0)
        for v in op.operands:
            p = body.producer(v)
            if p is not None and p not in blas:
                ready = 1 if _is_reduction(p) or v in stored else 0
                least = max(least, level[p] + ready)
        level[op] = least
    return level


def _holds_exactly(wide: Attribute, narrow: Attribute) -> bool:
    """Whether memory of element type ``wide`` holds every ``narrow`` value exactly:
    the same type, or a wider float."""
    if wide == narrow:
        return True
    width = {"f16": 16, "f32": 32, "f64": 64}
    return width.get(str(narrow), 99) < width.get(str(wide), 0)


def strided_memref(t: Attribute, strides: Sequence[int]) -> MemRefType[Attribute]:
    """The memref type of tensor type ``t`` read with element ``strides``: row-major
    (the identity layout) where they are its row-major strides, else a strided layout."""
    row_major = memref_of(t)
    if tuple(strides) == row_major_strides(row_major.get_shape()):
        return row_major
    return MemRefType(
        row_major.element_type, row_major.get_shape(), StridedLayoutAttr(list(strides), 0)
    )


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
        if isinstance(element, IndexType):
            raise loops_bug(f"a scalar constant {value} of type index")
        if is_int(element):
            return scalar_constant(self.b, value, element)
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

    if not isinstance(element, Float16Type | Float32Type | Float64Type):
        raise loops_bug(f"a float scalar of element type {element}")
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
    final: bool = False
    """It holds the value itself (a stored reduction's, finalized), not an accumulator's
    state to finish."""


class _Packing(NamedTuple):
    """How a strided input is read in blocks (see :func:`~tdsl.backend.llvm.loops_choices.packed_inputs`)."""

    other: int
    """The space dim it lies contiguous along."""
    inner: int
    """The space dim the loops run along innermost: blocks of :data:`BLOCK` along it."""
    dims: Dims
    """The dims every op reads it along."""


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


def hoistable_dims(
    body: GroupBody,
    stored: Sequence[SSAValue],
    carries: Sequence[Operation],
    packed: Sequence[int] = (),
) -> list[int]:
    """The leading space dims (in order) all sweeps of ``body``'s loops can share as outer
    loops: parallel, run along by every reduction and ``stored`` value, no value's
    contiguous dim (nor the outer dim of a ``packed`` input's blocks), and no dim a scan
    of ``carries`` carries along (its carry restarts before each sweep over it)."""
    last: set[int] = set(packed)  # dims that are some 2-D (or more) value's contiguous one
    for dims in [*body.dims.values(), *body.output_dims]:
        if len([x for x in dims if x is not None]) >= 2 and dims[-1] is not None:
            last.add(dims[-1])
    effects = [set(body.loop_dims(op)) for op in body.ops if _is_reduction(op)]
    effects += [set(body.dims[v]) for v in stored]
    scanned = {d for op in carries for d in carried_dims(body, op)}
    out: list[int] = []
    for d in range(body.rank):
        if body.kinds[d] is not IteratorType.PARALLEL or d in last or d in scanned:
            break
        if any(d not in e for e in effects):
            break
        out.append(d)
    return out


def computed_in_place(
    body: GroupBody,
    w: SSAValue,
    v: SSAValue,
    stored: set[SSAValue],
    read_before: Callable[[Operation], bool] = lambda u: False,
) -> bool:
    """Whether the stored value ``v`` is computed from ``w`` element by element, so that it
    may overwrite ``w`` as it goes: every op that reads ``w``, or reads what such an op
    computes, is element-wise, reads those values at the element it computes, and
    computes ``v`` or a value only such ops read (none stored, none an output), and ``w``
    and ``v`` have one type and one set of dims.  Other ops may read those values where
    ``read_before`` says they are done with them before ``v`` is computed (reductions of
    an earlier sweep)."""
    if w in body.outputs or w.type != v.type or body.dims[w] != body.dims[v]:
        return False
    dims = body.dims[v]
    chain: set[SSAValue] = {w}
    todo = [w]
    found = False
    while todo:
        for use in todo.pop().uses:
            op = use.operation
            if op in body.members and read_before(op):
                continue
            if op not in body.members or not isinstance(op, ElementwiseOp):
                return False
            if any(body.reads[(op, k)] != dims for k, x in enumerate(op.operands) if x in chain):
                return False
            for r in op.results:
                if r is v:
                    found = True
                elif r in stored or r in body.outputs or body.dims[r] != dims:
                    return False
                elif r not in chain:
                    chain.add(r)
                    todo.append(r)
    return found and v not in chain


def cuts_reduction_dim(
    tiles: Sequence[int], extents: Sequence[int], kinds: Sequence[IteratorType]
) -> bool:
    """Whether ``tiles`` cut a dim that is not parallel."""
    return any(
        t < e and k is not IteratorType.PARALLEL
        for t, e, k in zip(tiles, extents, kinds, strict=True)
    )


def keep_long_chains(plan: _GroupPlan) -> None:
    """Store in ``plan`` (one tile's worth, in a sweep it runs in anyway: ``plan.kept``)
    each element-wise value that a later sweep reads and would compute again from more than
    :data:`RECOMPUTE_LIMIT` ops: without it, a program of ``n`` ops and a reduction
    every few ops would compute ``n`` ops again in each of its ``n / k`` sweeps, code
    and work quadratic in its length.  The cost of a value is the ops a sweep runs to
    compute it (its operands' costs, counted again where shared, so an upper bound),
    down to inputs, constants, reductions and stored values."""
    plan.kept = [v for v in plan.once if v in plan.stored]
    if not plan.keep_long_chains:
        return
    body = plan.body
    cost: dict[Operation, int] = {}
    for op in body.ops:
        for v in dict.fromkeys(op.operands):
            p = body.producer(v)
            if (
                p is not None
                and p in cost
                and v not in plan.stored
                and plan.level[p] < plan.level[op]
                and cost[p] > (GEMM_RECOMPUTE_LIMIT if plan.gemm else RECOMPUTE_LIMIT)
                and len(p.results) == 1
                and not _is_scan(p)
            ):
                plan.stored.append(v)
                plan.kept.append(v)
        if _is_reduction(op) or op in plan.blas:
            continue  # read from its accumulator or output: nothing to compute again
        total = 1
        for v in op.operands:
            p = body.producer(v)
            if p is not None and p in cost and v not in plan.stored:
                total = min(total + cost[p], RECOMPUTE_CAP)
        cost[op] = total


def cut_reduction_dims(plan: _GroupPlan, tiles: Sequence[int]) -> tuple[int, ...]:
    """The dims ``tiles`` cut that are not parallel nor a flash or split key: those the
    loops run the tile op's passes along (:mod:`~tdsl.backend.llvm.loops_passes`)."""
    body = plan.body
    keys = {*plan.flash.values(), *plan.split.values()}
    return tuple(
        d
        for d, (t, e) in enumerate(zip(tiles, body.extents, strict=True))
        if t < e and body.kinds[d] is not IteratorType.PARALLEL and d not in keys
    )


def across_steps(plan: _GroupPlan) -> frozenset[SSAValue]:
    """The stored values the steps of ``plan``'s passes keep from the step that stores
    them to the later steps that read them: those along none of the cut dims (a pass
    computes such a value alike in each of their tiles), each in a scratch slot of its
    own (:func:`~tdsl.backend.llvm.loops_choices.scratch_slots`).  A value along one holds
    one tile of it: a later step computes it again.  None where the loops run no passes
    (``cumsum(a @ b, axis=1) + (softmax(a) @ e)``: the softmax's rows, stored by a stage,
    are what the pass's matmul reads in each tile of the cut columns)."""
    if plan.passes is None:
        return frozenset()
    cut = set(cut_reduction_dims(plan, plan.tiles)) | tiled_keys(plan)
    return frozenset(v for v in plan.stored if not cut & set(_dim_set(plan.body.dims[v])))


def tiled_keys(plan: _GroupPlan) -> set[int]:
    """The key dims ``plan``'s loops run in tiles inside a step (a flash op's, a split
    contraction's): a value a step computes along one holds its last tile when the step
    ends, and a later step must compute it again (f16 ``sum(softmax(q @ k.T) @ v,
    axis=0)``, keys in tiles of 128, read ``k.T``'s last tile for every one; with
    ``axis=1``, the scores ``q @ k.T`` of an earlier step: found by fuzzing)."""
    keys = {*plan.flash.values(), *plan.split.values()}
    return {d for d in keys if plan.tiles[d] < plan.extents[d]}


def pass_contractions(plan: _GroupPlan) -> frozenset[Operation]:
    """The matmuls whose contraction the passes of ``plan`` cut, each pass's tiles adding
    their products into its result: by BLAS (:func:`pass_gemms`) or in the loops, as a
    reduction's accumulator runs on (``(softmax(a) @ b) @ d`` at budget 32, the hidden
    dim cut).  A plan with any records ``summed``; read back without it, a cut
    contraction is BLAS's loop over its tiles in the sweeps, or refused."""
    if plan.passes is None or not plan.summed:
        return frozenset()
    cut = set(cut_reduction_dims(plan, plan.tiles))
    body = plan.body
    return frozenset(
        op
        for op in body.ops
        if _is_contraction(op)
        and op not in plan.blas
        and cut & set(body.loop_dims(op)) - set(body.dims[op.results[0]])
    )


def pass_gemms(plan: _GroupPlan) -> frozenset[Operation]:
    """The matmuls BLAS computes a tile at a time whose contraction the passes of
    ``plan`` cut: each tile of the pass adds its product into their result (``C += A @
    B``), which later steps read, as a reduction's accumulator (``((tanh(a) @ e) -
    max(a @ e, axis=1, keepdims=True)) @ d``, the hidden dim cut: the last matmul sums
    over it): planning, or read back from a plan that records ``summed``
    (``plan.summed``).  Their result takes no stored value's slot."""
    return frozenset(op for op in pass_contractions(plan) if op in plan.gemm)


def contiguous_dim(v: SSAValue, dims: Dims, strides: Sequence[int] | None) -> int | None:
    """The space dim that ``v``, read along ``dims``, lies contiguous along: its last
    dim, or for a strided input (its element ``strides``) the dim of its smallest
    stride (None: broadcast)."""
    if strides is None:
        return next((d for d in reversed(dims) if d is not None), None)
    shape = tensor_shape(v)
    axes = [i for i, d in enumerate(dims) if d is not None and shape[i] > 1 and strides[i]]
    if not axes:
        return None  # (a stride of 0 is a broadcast: along it, one element)
    return dims[min(axes, key=lambda i: (abs(strides[i]), -i))]
