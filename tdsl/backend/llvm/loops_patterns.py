"""The rewrite patterns of ``tdsl-lower-to-loops`` over the ops of a function whose
signature :class:`~tdsl.backend.llvm.lower_to_loops.FunctionToMemrefs` has lowered.

In such a function (it has a ``tdsl.arg_roles`` attribute) every tensor value an op
reads is an ``unrealized_conversion_cast`` of one memref argument, the buffer that
holds it (the caller allocates every buffer).  Each pattern lowers one op whose
operands are all such casts: it appends the arguments the op's results and scratch
need to the function (with their roles), calls a helper function it adds to the
module after the function (a fill, a copy, a gather, a group's loops), and replaces
the op's results with casts of their buffers.  ``func.return`` goes last: it copies
the results not computed in place into the ``out`` arguments.

A result the signature pattern placed already (a result of the function, or an
operand a join's buffer holds in place) carries the argument index of its buffer in
:data:`DEST_ATTR`; a join carries the slices of its operands written in place in
:data:`PARTS_ATTR`.  Both live only during the pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from xdsl.builder import Builder
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from tdsl.backend.llvm.loops_choices import TILE_GEMM_INDEX_ARGS
from tdsl.backend.llvm.loops_common import (
    CONSTANTS_ATTR,
    ROLES_ATTR,
    SCRATCH_LIMIT_ATTR,
    SERIAL_ATTR,
    VIEWS_ATTR,
    Storage,
    StridedBlasOperandError,
    _Code,
    _strides,
    loops_bug,
    matmul_symbol,
    memref_of,
    strided_memref,
)
from tdsl.backend.llvm.loops_emit import _Group
from tdsl.backend.llvm.loops_gather import (
    ERROR_PLACES_ATTR,
    ERROR_TYPE,
    ERRORS_ATTR,
    emit_take,
)
from tdsl.dialects.kernel import TileOp
from tdsl.dialects.op_interfaces import StridedView, row_major_strides
from tdsl.dialects.structured import constant_value, element_type, is_constant, tensor_shape
from tdsl.dialects.tensordsl import ConcatenateOp, TakeOp, is_one_value
from tdsl.ir_text import Names
from tdsl.transforms.locations import op_location

DEST_ATTR = "tdsl.loops_dest"
"""Per result of an op, the argument (index) already chosen to hold it, or -1."""

PARTS_ATTR = "tdsl.loops_parts"
"""Per operand of a join, the argument (index) of its slice written in place, or -1."""


def is_splat(op: Operation) -> bool:
    """Whether constant ``op`` holds one value (or none): a loop fills it; the values of
    any other constant are the caller's to pass (a ``const`` argument)."""
    data = constant_value(op)
    return data is not None and is_one_value(data)


def buffer_of(v: SSAValue) -> BlockArgument | None:
    """The memref argument holding tensor ``v``, once what computes it is lowered."""
    owner = v.owner
    if not isinstance(owner, UnrealizedConversionCastOp):
        return None
    source = owner.inputs[0]
    return source if isinstance(source, BlockArgument) else None


def int_list(op: Operation, name: str) -> list[int]:
    """The values of the integer array attribute ``name`` of ``op`` (none: empty)."""
    found = op.attributes.get(name)
    return (
        list(cast(Sequence[int], found.get_values())) if isinstance(found, DenseArrayBase) else []
    )


@dataclass
class Lowering:
    """What the patterns of one run of the pass share: the strides each function reads
    its inputs with, and per function where its helpers go and how many of each kind
    it has."""

    strides: dict[str, list[tuple[int, ...] | None]] = field(
        default_factory=dict[str, list[tuple[int, ...] | None]]
    )
    last_helper: dict[str, Operation] = field(default_factory=dict[str, Operation])
    last_external: dict[str, Operation] = field(default_factory=dict[str, Operation])
    counts: dict[tuple[str, str], int] = field(default_factory=dict[tuple[str, str], int])
    added: dict[func.FuncOp, dict[str, list[int]]] = field(
        default_factory=dict[func.FuncOp, dict[str, list[int]]]
    )
    """Per function, the integers its patterns append to its array attributes, written
    once by :meth:`write_added` (rewritten per append, a join of n operands took n**2)."""

    def write_added(self) -> None:
        """Append the integers :meth:`Main.extend` collected to their attributes."""
        for fn, lists in self.added.items():
            for name, values in lists.items():
                fn.attributes[name] = DenseArrayBase.from_list(i64, [*int_list(fn, name), *values])
        self.added.clear()

    symbols: Names = field(default_factory=Names)
    """The module's symbol names: a helper's name is made unique among them (a user's
    function ``@main_g0`` beside ``@main``)."""

    def count(self, fn: str, kind: str) -> int:
        """The next number of helper ``kind`` of function ``fn``: 0, 1, ..."""
        n = self.counts.get((fn, kind), 0)
        self.counts[fn, kind] = n + 1
        return n


class Main:
    """A function being lowered: its arguments, their roles, its helpers."""

    def __init__(self, fn: func.FuncOp, lowering: Lowering, rewriter: PatternRewriter) -> None:
        self.fn = fn
        self.name = fn.sym_name.data
        self.lowering = lowering
        self.rewriter = rewriter

    @staticmethod
    def of(op: Operation, lowering: Lowering, rewriter: PatternRewriter) -> Main | None:
        """The function ``op`` is in, when its signature is lowered and every operand of
        ``op`` is in a buffer (``op`` can be lowered); else None."""
        fn = op.parent_op()
        if not isinstance(fn, func.FuncOp) or ROLES_ATTR not in fn.attributes:
            return None
        if any(buffer_of(v) is None for v in op.operands):
            return None
        return Main(fn, lowering, rewriter)

    @property
    def args(self) -> Sequence[BlockArgument]:
        return self.fn.body.block.args

    @property
    def roles(self) -> list[str]:
        roles = cast(ArrayAttr[StringAttr], self.fn.attributes[ROLES_ATTR])
        return [r.data for r in roles.data]

    def outs(self) -> list[BlockArgument]:
        return [a for a, r in zip(self.args, self.roles, strict=True) if r == "out"]

    def add(self, t: Attribute, role: str) -> BlockArgument:
        """A new last argument of type ``t`` and ``role``."""
        block = self.fn.body.block
        arg = self.rewriter.insert_block_argument(block, len(block.args), t)
        fn = self.fn
        fn.properties["function_type"] = FunctionType.from_lists([a.type for a in block.args], [])
        fn.attributes[ROLES_ATTR] = ArrayAttr([StringAttr(r) for r in [*self.roles, role]])
        return arg

    def extend(self, name: str, values: Sequence[int]) -> None:
        """Append ``values`` to the function's integer array attribute ``name`` (written
        when the walk is over: :meth:`Lowering.write_added`)."""
        self.lowering.added.setdefault(self.fn, {}).setdefault(name, []).extend(values)

    def add_constant(self, value: Attribute) -> None:
        found = self.fn.attributes.get(CONSTANTS_ATTR)
        before: list[Attribute] = (
            list(cast(ArrayAttr[Attribute], found).data) if isinstance(found, ArrayAttr) else []
        )
        self.fn.attributes[CONSTANTS_ATTR] = ArrayAttr([*before, value])

    def result_buffer(self, op: Operation, k: int) -> BlockArgument:
        """The buffer of result ``k`` of ``op``: the one chosen already, or a new ``tmp``."""
        dest = int_list(op, DEST_ATTR)
        if k < len(dest) and dest[k] >= 0:
            return self.args[dest[k]]
        return self.add(memref_of(op.results[k].type), "tmp")

    # -- helpers and calls ----------------------------------------------------------

    def helper(
        self,
        name: str,
        refs: Sequence[SSAValue],
        body: Callable[[_Code, Sequence[SSAValue]], None],
    ) -> func.FuncOp:
        """A new function of memrefs ``refs`` (their types) after this one and its other
        helpers, its body written by ``body``."""
        fn = func.FuncOp(name, ([r.type for r in refs], []))
        code = _Code.at_end(fn.body.block)
        body(code, fn.body.block.args)
        code.b.insert(func.ReturnOp())
        self.add_function(fn)
        return fn

    def add_function(self, fn: func.FuncOp) -> None:
        anchor = self.lowering.last_helper.get(self.name, self.fn)
        self.rewriter.insert(fn, InsertPoint.after(anchor))
        self.lowering.last_helper[self.name] = fn

    def declare(self, name: str, types: Sequence[Attribute]) -> None:
        """Declare external function ``name`` (once per module), after the helpers."""
        module = self.fn.parent_op()
        if not isinstance(module, ModuleOp):
            raise loops_bug(f"@{self.name} is not in a module", self.fn)
        if any(isinstance(o, func.FuncOp) and o.sym_name.data == name for o in module.ops):
            return
        decl = func.FuncOp.external(name, list(types), [])
        anchor = self.lowering.last_external.get(self.name) or self.lowering.last_helper.get(
            self.name, self.fn
        )
        self.rewriter.insert(decl, InsertPoint.after(anchor))
        self.lowering.last_external[self.name] = decl

    def call(self, before: Operation, name: str, operands: Sequence[SSAValue]) -> func.CallOp:
        op = func.CallOp(name, operands, [])
        self.rewriter.insert(op, InsertPoint.before(before))
        return op

    def copy(self, before: Operation, name: str, src: SSAValue, dst: SSAValue) -> None:
        """Call a new helper ``name`` copying memref ``src`` into ``dst`` (one shape)."""
        shape = cast(MemRefType[Attribute], dst.type).get_shape()
        self.helper(name, [src, dst], lambda c, refs: _copy(c, refs[0], refs[1], shape))
        self.call(before, name, [src, dst])

    def replace(self, op: Operation, buffers: Sequence[SSAValue]) -> None:
        """Replace the results of ``op`` by casts of their ``buffers``; erase ``op``."""
        casts = [
            UnrealizedConversionCastOp.get([b], [r.type])
            for b, r in zip(buffers, op.results, strict=True)
        ]
        self.rewriter.replace(op, casts, [c.results[0] for c in casts])


def _copy(code: _Code, src: SSAValue, dst: SSAValue, shape: Sequence[int]) -> None:
    inner, coords = code.nest([(d, code.index(0), code.index(e)) for d, e in enumerate(shape)])
    idx = [coords[d] for d in range(len(shape))]
    x = inner.insert(memref.LoadOp.get(src, idx))
    inner.b.insert(memref.StoreOp.get(x, dst, idx))


def _fill(code: _Code, op: Operation, ref: SSAValue) -> None:
    data = constant_value(op)
    if data is None or not is_splat(op):
        raise loops_bug(f"'{op.name}' filled as a splat constant, but it is none", op)
    flat = data.reshape(-1)
    shape = tensor_shape(op.results[0])
    value = flat[0].item() if flat.size else 0  # (an integer exactly, beyond 2**53 too)
    inner, coords = code.nest([(d, code.index(0), code.index(e)) for d, e in enumerate(shape)])
    x = inner.scalar(value, element_type(op.results[0]))
    inner.b.insert(memref.StoreOp.get(x, ref, [coords[d] for d in range(len(shape))]))


@dataclass
class _OpPattern(RewritePattern):
    lowering: Lowering


class ConstantToBuffer(_OpPattern):
    """A tensor constant of one value: a ``tmp`` buffer a helper fills
    (``@<function>_fill<n>``); of other values: a ``const`` argument whose values the
    function's ``tdsl.constants`` lists (the caller passes them)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if len(op.results) != 1 or not isinstance(op.results[0].type, TensorType):
            return
        if not is_constant(op) or (main := Main.of(op, self.lowering, rewriter)) is None:
            return
        result: SSAValue = op.results[0]
        t = memref_of(result.type)
        if not is_splat(op):
            ref = main.add(t, "const")
            main.add_constant(op.properties.get("value") or op.attributes["value"])
            main.replace(op, [ref])
            return
        ref = main.add(t, "tmp")
        name = main.lowering.symbols.fresh(
            f"{main.name}_fill{main.lowering.count(main.name, 'fill') + 1}"
        )
        main.helper(name, [ref], lambda c, refs: _fill(c, op, refs[0]))
        main.call(op, name, [ref])
        main.replace(op, [ref])


class ViewToArgument(_OpPattern):
    """A view (slice, transpose, reshape, ...): a ``view`` argument, a window of its
    operand's buffer (``tdsl.views``: the argument, the buffer, the element offset);
    an operand no view can read (a reshape of a window) is copied row-major first."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (
            not isinstance(op, StridedView)
            or (main := Main.of(op, self.lowering, rewriter)) is None
        ):
            return
        source = cast(BlockArgument, buffer_of(op.operands[0]))
        source_type = cast(MemRefType[Attribute], source.type)
        shape = source_type.get_shape()
        found = op.layout(shape, _strides(source_type) or row_major_strides(shape))
        if found is None:  # copied row-major first, then read in place
            copy = main.add(memref_of(op.operands[0].type), "tmp")
            pack = f"{main.name}_pack{main.lowering.count(main.name, 'pack')}"
            main.copy(op, main.lowering.symbols.fresh(pack), source, copy)
            source = copy
            found = op.layout(shape, row_major_strides(shape))
            if found is None:
                raise loops_bug(f"'{op.name}' reads no row-major operand in place", op)
        offset, view_strides = found
        view = main.add(strided_memref(op.results[0].type, view_strides), "view")
        main.extend(VIEWS_ATTR, [view.index, source.index, offset])
        main.replace(op, [view])


class TakeToCall(_OpPattern):
    """A gather: a helper ``@<function>_take<n>`` of its own loops, which records a bad
    index in an ``error`` argument (``tdsl.errors``: the argument, the axis, its extent)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TakeOp, rewriter: PatternRewriter) -> None:
        if (main := Main.of(op, self.lowering, rewriter)) is None:
            return
        out = main.result_buffer(op, 0)
        flag = main.add(MemRefType(ERROR_TYPE, [2]), "error")
        main.extend(ERRORS_ATTR, [flag.index, op.axis_value, op.extent])
        where = op_location(op)
        if where is not None:  # (recorded where known: an .mlir file's ops have no loc)
            places = main.fn.attributes.get(ERROR_PLACES_ATTR)
            before = list(cast(ArrayAttr[StringAttr], places).data) if places is not None else []
            count = len(main.lowering.added[main.fn][ERRORS_ATTR]) // 3 - 1  # (gathers before)
            before += [StringAttr("")] * (count - len(before))
            main.fn.attributes[ERROR_PLACES_ATTR] = ArrayAttr([*before, StringAttr(str(where))])
        refs = [buffer_of(op.input), buffer_of(op.indices), out, flag]
        refs_ = cast(list[SSAValue], refs)
        name = main.lowering.symbols.fresh(
            f"{main.name}_take{main.lowering.count(main.name, 'take')}"
        )
        main.helper(name, refs_, lambda c, r: emit_take(c, op, *r))
        main.call(op, name, refs_)
        main.replace(op, [out])


class ConcatenateToCopies(_OpPattern):
    """A join: one buffer; each operand not written into its slice in place (see
    :data:`PARTS_ATTR`) is copied into it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConcatenateOp, rewriter: PatternRewriter) -> None:
        if (main := Main.of(op, self.lowering, rewriter)) is None:
            return
        joined = main.result_buffer(op, 0)
        parts = int_list(op, PARTS_ATTR)
        shape = tensor_shape(op.result)
        strides = row_major_strides(shape)
        offsets = op.offsets()
        for k, v in enumerate(op.inputs):
            source = cast(BlockArgument, buffer_of(v))
            if k < len(parts) and source.index == parts[k]:
                continue  # its group wrote it in place
            part = main.add(strided_memref(v.type, strides), "view")
            offset = offsets[k] * strides[op.axis_value]
            main.extend(VIEWS_ATTR, [part.index, joined.index, offset])
            pack = f"{main.name}_pack{main.lowering.count(main.name, 'pack')}"
            main.copy(op, main.lowering.symbols.fresh(pack), source, part)
        main.replace(op, [joined])


class TileToCall(_OpPattern):
    """A ``kernel.tile``: its loops in a function ``@<function>_<group>`` of a range of
    tiles (:class:`~tdsl.backend.llvm.loops_emit._Group`) and its accumulators as
    ``scratch`` arguments; a call of it, preceded by the BLAS calls of its matmuls and
    by row-major copies of the strided views they read."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TileOp, rewriter: PatternRewriter) -> None:
        if (main := Main.of(op, self.lowering, rewriter)) is None:
            return
        inputs = [cast(BlockArgument, buffer_of(v)) for v in op.inputs]
        outputs = [main.result_buffer(op, k) for k in range(len(op.outputs))]
        index = main.lowering.count(main.name, "group")
        gname = f"{main.name}_{op.group_name or f'k{index}'}".replace(".", "_")
        gname = main.lowering.symbols.fresh(gname)
        after: dict[int, BlockArgument] = {}
        """Outputs BLAS computes in a ``tmp`` argument first: to their strided slices."""
        roles = main.roles
        # (planned once: a plan is linear in the group's ops, and a join's parts can be
        # hundreds of strided outputs)
        group = _Group(op, [_strides(a.type) for a in inputs])
        for k, r in enumerate(op.outputs):  # BLAS writes row-major outputs only
            strided = _strides(outputs[k].type) != row_major_strides(tensor_shape(r))
            if roles[outputs[k].index] == "view" and strided and k in group.blas.values():
                after[k] = outputs[k]
                outputs[k] = main.add(memref_of(r.type), "tmp")
        read = _blas_views(group, inputs, main.roles)
        for n, i in enumerate(read):  # a BLAS call reads row-major arrays: copy views first
            dst = main.add(memref_of(op.inputs[i].type), "tmp")
            main.copy(op, main.lowering.symbols.fresh(f"{gname}_pack{n}"), inputs[i], dst)
            inputs[i] = dst
        if read:
            group = _Group(op, [_strides(a.type) for a in inputs])
        accs = [main.add(t, "scratch") for t in group.scratch_types()]
        main.add_function(_group_function(gname, group, inputs, outputs, accs))
        for name, types in group.gemm_symbols.items():
            main.declare(name, [*types, *[IndexType()] * TILE_GEMM_INDEX_ARGS])
        for mm, k in group.blas.items():
            _blas_call(main, op, mm, group, inputs, outputs[k])
        code = _Code(Builder(InsertPoint.before(op)))
        ntiles = (
            math.ceil(group.extents[group.tiled[0]] / group.tiles[group.tiled[0]])
            if group.tiled
            else 1
        )
        call = main.call(op, gname, [code.index(0), code.index(ntiles), *inputs, *outputs, *accs])
        # the scratch the plan allows this group: a runtime that splits its tiles over
        # threads (each with scratch of its own) stays within it
        call.attributes[SCRATCH_LIMIT_ATTR] = IntegerAttr(group.limit, i64)
        if group.gemm or group.gemm_symbols:  # (flash attention's p @ v too)
            call.attributes[SERIAL_ATTR] = UnitAttr()
        for n, (k, dst) in enumerate(after.items()):
            main.copy(op, f"{gname}_unpack{n}", outputs[k], dst)
        main.replace(op, [after.get(k, o) for k, o in enumerate(outputs)])


def _blas_views(group: _Group, at: Sequence[BlockArgument], roles: Sequence[str]) -> list[int]:
    """The inputs of ``group`` (by position; ``at``: their arguments) that are views a
    BLAS call reads and that are not row-major (a window of whole rows is)."""
    index = {a: i for i, a in enumerate(group.args)}
    read = {index[v] for mm in group.blas for v in mm.operands if v in index}
    read |= {index[v] for g in group.gemm.values() for v in (g.a, g.b) if v in index}
    return sorted(i for i in read if roles[at[i].index] == "view" and _strides(at[i].type))


def _group_function(
    name: str,
    group: _Group,
    inputs: Sequence[SSAValue],
    outputs: Sequence[SSAValue],
    accs: Sequence[SSAValue],
) -> func.FuncOp:
    memrefs = [*inputs, *outputs, *accs]
    fn = func.FuncOp(name, ([IndexType(), IndexType(), *(v.type for v in memrefs)], []))
    fn.attributes["passthrough"] = ArrayAttr([StringAttr("noinline")])
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


def _blas_call(
    main: Main,
    tile: TileOp,
    op: Operation,
    group: _Group,
    inputs: Sequence[SSAValue],
    out: SSAValue,
) -> None:
    a, b = op.operands
    index = {arg: i for i, arg in enumerate(group.args)}
    lhs, rhs = inputs[index[a]], inputs[index[b]]
    for r in (lhs, rhs):
        if isinstance(cast(MemRefType[Attribute], r.type).layout, StridedLayoutAttr):
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
    if not all(
        cast(MemRefType[Attribute], r.type).element_type == element for r in (lhs, rhs, out)
    ):
        raise loops_bug(f"{name} called on {[str(r.type) for r in (lhs, rhs, out)]}", op)
    main.declare(name, [lhs.type, rhs.type, out.type])
    main.call(tile, name, [lhs, rhs, out])


class ReturnToCopies(_OpPattern):
    """``func.return``, once every result is in a buffer: a result not computed in its
    ``out`` argument (an input, a constant, a result returned twice) is copied there by
    a helper ``@<function>_copy<i>``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter) -> None:
        if not op.arguments or (main := Main.of(op, self.lowering, rewriter)) is None:
            return
        outs = main.outs()
        for i, v in enumerate(op.arguments):
            source = cast(BlockArgument, buffer_of(v))
            if source is outs[i]:
                continue
            main.copy(op, f"{main.name}_copy{i}", source, outs[i])
        rewriter.replace(op, func.ReturnOp())


OP_PATTERNS = (ConstantToBuffer, ViewToArgument, TakeToCall, ConcatenateToCopies, TileToCall)
"""The patterns of the ops of a lowered function, besides its ``func.return``."""
