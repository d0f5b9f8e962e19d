"""``tdsl-lower-to-loops``: tiled IR to loops in upstream MLIR dialects.

The first stage of the native target.  Each ``func.func`` of ``kernel.tile``
groups becomes a function on memrefs: its tensor arguments become memrefs,
its results become memref arguments written in place (destination passing),
and the values passed between groups and the groups' accumulators become
memref arguments too, so that the caller allocates every buffer (the memory
budget stays measurable from Python).  The function's ``tdsl.arg_roles``
attribute names the role of each argument: ``in`` (an argument of the
original function), ``out`` (a result), ``tmp`` (a value passed between
groups, or a function-level constant of one value, which a loop fills),
``const`` (a constant array of other values: the function's ``tdsl.constants``
attribute holds them, and the caller passes them) and ``scratch`` (an
accumulator of a group: one tile's result).

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
neither the code nor the work grows with the square of the program's length;
so is every value the ``kernel.tile`` records as ``staged``.
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
all 1.  Each extra thread the runtime splits a group over gets a copy of
that scratch, so the call of each group carries the scratch its ``kernel.tile``
records (``tdsl.scratch_limit``): the runtime uses no more threads than that
holds copies of.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from tdsl.backend.llvm.llvm_types import make_signless
from tdsl.backend.llvm.loops_common import (
    BLOCK as BLOCK,
)
from tdsl.backend.llvm.loops_common import (
    CONSTANTS_ATTR,
    ROLES_ATTR,
    SCRATCH_LIMIT_ATTR,
    VIEWS_ATTR,
    Storage,
    StridedBlasOperandError,
    _Code,
    _is_contraction,
    _strides,
    loops_bug,
    matmul_symbol,
    memref_of,
    strided_memref,
)
from tdsl.backend.llvm.loops_common import (
    PACK_BYTES as PACK_BYTES,
)
from tdsl.backend.llvm.loops_common import (
    RECOMPUTE_CAP as RECOMPUTE_CAP,
)
from tdsl.backend.llvm.loops_common import (
    RECOMPUTE_LIMIT as RECOMPUTE_LIMIT,
)
from tdsl.backend.llvm.loops_common import (
    SPLIT_TILES as SPLIT_TILES,
)
from tdsl.backend.llvm.loops_emit import _Group
from tdsl.backend.llvm.loops_gather import ERROR_TYPE, ERRORS_ATTR, emit_take
from tdsl.dialects.kernel import FusedOp, TileOp
from tdsl.dialects.op_interfaces import StridedView, row_major_strides
from tdsl.dialects.structured import (
    constant_value,
    element_type,
    tensor_shape,
)
from tdsl.dialects.tensordsl import ConcatenateOp, TakeOp, is_one_value
from tdsl.errors import TdslIRError

# ---------------------------------------------------------------------------


def _is_splat(op: Operation) -> bool:
    """Whether constant ``op`` holds one value (or none): a loop fills it; the values of
    any other constant are the caller's to pass (a ``const`` argument)."""
    data = constant_value(op)
    return data is not None and is_one_value(data)


class _Take(NamedTuple):
    """A gather the main function calls a helper for: the op and its arguments."""

    op: TakeOp
    a: int
    indices: int
    out: int
    error: int


_Step = tuple[int, int] | _Take
"""A helper call between groups: a copy (source, destination), or a gather."""


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
        self.group_inputs: dict[TileOp, list[int]] = {}
        """Groups whose inputs are not where their values are (views copied row-major for
        BLAS): the argument of each input."""

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
            if (
                not isinstance(op, TileOp)
                and constant_value(op) is None
                and not isinstance(op, StridedView | ConcatenateOp | TakeOp)
            ):
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
            if isinstance(v.owner, TileOp | ConcatenateOp | TakeOp) and v not in place:
                place[v] = outs[i]
        direct = {v for v in ret.arguments if place.get(v) in outs}
        groups: list[tuple[TileOp, _Group, list[int]]] = []
        consts: list[Attribute] = []
        views: list[int] = []

        def part(join: ConcatenateOp, k: int) -> int:
            """A view argument of operand ``k``'s slice of ``join``'s buffer."""
            shape = tensor_shape(join.result)
            strides = row_major_strides(shape)
            offset = join.offsets()[k] * strides[join.axis_value]
            at = arg(strided_memref(join.inputs[k].type, strides), "view")
            views.extend((at, place[join.result], offset))
            return at

        # each join's buffer comes first: a group whose result only the join reads
        # writes it into its slice (a view argument)
        in_place: set[SSAValue] = set()
        for op in ops[:-1]:
            if isinstance(op, ConcatenateOp):
                if op.result not in place:
                    place[op.result] = arg(memref_of(op.result.type), "tmp")
                for k, v in enumerate(op.inputs):
                    users = [u.operation for u in v.uses]
                    if isinstance(v.owner, TileOp) and users == [op] and v not in place:
                        place[v] = part(op, k)
                        in_place.add(v)
        # per group, the copies made before it: operands of reshapes whose layout allows
        # no view, and views a BLAS call reads, copied row-major (pending: not yet placed)
        copies: dict[TileOp, list[_Step]] = {}
        pending: list[_Step] = []
        after: list[_Step] = []  # copies out of the group being placed
        errors: list[int] = []
        for op in ops[:-1]:
            if isinstance(op, TakeOp):  # a gather: a loop nest of its own, with an error flag
                if op.result not in place:
                    place[op.result] = arg(memref_of(op.result.type), "tmp")
                flag = arg(MemRefType(ERROR_TYPE, [2]), "error")
                errors.extend((flag, op.axis_value, op.extent))
                pending.append(
                    _Take(op, place[op.input], place[op.indices], place[op.result], flag)
                )
                continue
            if isinstance(op, ConcatenateOp):  # the operands not written in place
                for k, v in enumerate(op.inputs):
                    if v not in in_place:
                        pending.append((place[v], part(op, k)))
                continue
            if isinstance(op, StridedView):
                source = place[op.operands[0]]
                source_type = cast(MemRefType[Attribute], types[source])
                shape = source_type.get_shape()
                strides = _strides(source_type) or row_major_strides(shape)
                found = op.layout(shape, strides)
                if found is None:  # copied row-major first, then read in place
                    copy = arg(memref_of(op.operands[0].type), "tmp")
                    pending.append((source, copy))
                    source = copy
                    found = op.layout(shape, row_major_strides(shape))
                    if found is None:
                        raise loops_bug(f"'{op.name}' reads no row-major operand in place", op)
                offset, view_strides = found
                place[op.results[0]] = arg(strided_memref(op.results[0].type, view_strides), "view")
                views.extend((place[op.results[0]], source, offset))
                continue
            if constant_value(op) is not None:
                if _is_splat(op):
                    place[op.results[0]] = arg(memref_of(op.results[0].type), "tmp")
                else:  # an array of values: the caller passes it (see CONSTANTS_ATTR)
                    place[op.results[0]] = arg(memref_of(op.results[0].type), "const")
                    consts.append(op.properties.get("value") or op.attributes["value"])
                continue
            if not isinstance(op, TileOp):
                raise loops_bug(f"'{op.name}' outside a group", op)
            for r in op.outputs:
                if r not in place:
                    place[r] = arg(memref_of(r.type), "tmp")
            for k, r in enumerate(op.outputs):  # BLAS writes row-major outputs only
                if r in in_place and _strides(types[place[r]]) != row_major_strides(
                    tensor_shape(r)
                ):
                    probe = _Group(op, [_strides(types[place[v]]) for v in op.inputs])
                    if k in probe.blas.values():
                        tmp = arg(memref_of(r.type), "tmp")
                        after.append((tmp, place[r]))
                        place[r] = tmp
            group = _Group(op, [_strides(types[place[v]]) for v in op.inputs])
            read = self._blas_views(group, [place[v] for v in op.inputs], roles, types)
            copies[op], pending = pending, []
            pending, after = after, []
            if read:  # a BLAS call reads row-major arrays: copy those views first
                inputs_at = [place[v] for v in op.inputs]
                packs = [(inputs_at[i], arg(memref_of(op.inputs[i].type), "tmp")) for i in read]
                copies[op].extend(packs)
                for i, (_, dst) in zip(read, packs, strict=True):
                    inputs_at[i] = dst
                group = _Group(op, [_strides(types[i]) for i in inputs_at])
                self.group_inputs[op] = inputs_at
            scratch = [arg(t, "scratch") for t in group.scratch_types()]
            groups.append((op, group, scratch))
        new = func.FuncOp(self.name, (types, []))
        new.attributes[ROLES_ATTR] = ArrayAttr([StringAttr(r) for r in roles])
        if consts:
            new.attributes[CONSTANTS_ATTR] = ArrayAttr(consts)
        if views:
            new.attributes[VIEWS_ATTR] = DenseArrayBase.from_list(i64, views)
        if errors:
            new.attributes[ERRORS_ATTR] = DenseArrayBase.from_list(i64, errors)
        args = new.body.block.args
        for a, old in zip(args, block.args, strict=False):  # the inputs come first
            a.name_hint = old.name_hint
        for i, o in enumerate(outs):
            args[o].name_hint = f"out{i}"
        code = _Code.at_end(new.body.block)
        functions: list[Operation] = [new]
        for op in ops[:-1]:
            if constant_value(op) is not None and _is_splat(op):
                ref = args[place[op.results[0]]]
                name = f"{self.name}_fill{len(functions)}"
                functions.append(
                    self._helper(name, [ref], lambda c, refs, op=op: self._fill(c, op, refs[0]))
                )
                code.b.insert(func.CallOp(name, [ref], []))
        for index, (tile, group, scratch) in enumerate(groups):
            gname = f"{self.name}_{tile.group_name or f'k{index}'}".replace(".", "_")
            for k, step in enumerate(copies.get(tile, ())):
                self._step_call(code, functions, f"{gname}_pack{k}", step, args)
            at = self.group_inputs.get(tile) or [place[v] for v in tile.inputs]
            inputs = [args[i] for i in at]
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
            call = func.CallOp(gname, operands, [])
            # the scratch the plan allows this group: a runtime that splits its tiles
            # over threads (each with scratch of its own) stays within it
            call.attributes[SCRATCH_LIMIT_ATTR] = IntegerAttr(tile.scratch_value, i64)
            code.b.insert(call)
        for k, step in enumerate(pending):  # steps no group follows
            self._step_call(code, functions, f"{self.name}_pack{k}", step, args)
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

    def _step_call(
        self,
        code: _Code,
        functions: list[Operation],
        name: str,
        step: _Step,
        args: Sequence[SSAValue],
    ) -> None:
        """Call a new helper ``name`` making ``step``: a copy, or a gather."""
        if not isinstance(step, _Take):
            src, dst = step
            self._copy_call(code, functions, name, args[src], args[dst])
            return
        refs = [args[step.a], args[step.indices], args[step.out], args[step.error]]
        name = name.replace("_pack", "_take")
        functions.append(self._helper(name, refs, lambda c, r, op=step.op: emit_take(c, op, *r)))
        code.b.insert(func.CallOp(name, refs, []))

    def _copy_call(
        self, code: _Code, functions: list[Operation], name: str, src: SSAValue, dst: SSAValue
    ) -> None:
        """Call a new helper ``name`` copying memref ``src`` into ``dst`` (one shape)."""
        shape = cast(MemRefType[Attribute], dst.type).get_shape()
        functions.append(
            self._helper(name, [src, dst], lambda c, refs: self._copy(c, refs[0], refs[1], shape))
        )
        code.b.insert(func.CallOp(name, [src, dst], []))

    @staticmethod
    def _blas_views(
        group: _Group, at: Sequence[int], roles: Sequence[str], types: Sequence[Attribute]
    ) -> list[int]:
        """The inputs of ``group`` (by position; ``at``: their arguments) that are views a
        BLAS call reads and that are not row-major (a window of whole rows is)."""
        index = {a: i for i, a in enumerate(group.args)}
        read = {index[v] for mm in group.blas for v in mm.operands if v in index}
        return sorted(i for i in read if roles[at[i]] == "view" and _strides(types[at[i]]))

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
        if not all(
            cast(MemRefType[Attribute], r.type).element_type == element for r in (lhs, rhs, out)
        ):
            raise loops_bug(f"{name} called on {[str(r.type) for r in (lhs, rhs, out)]}", op)
        if name not in self.externals:
            self.externals[name] = func.FuncOp.external(name, [lhs.type, rhs.type, out.type], [])
        code.b.insert(func.CallOp(name, [lhs, rhs, out], []))

    def _fill(self, code: _Code, op: Operation, ref: SSAValue) -> None:
        data = constant_value(op)
        if data is None or not _is_splat(op):
            raise loops_bug(f"'{op.name}' filled as a splat constant, but it is none", op)
        flat = data.reshape(-1)
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
    make_signless(module)
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
    "SCRATCH_LIMIT_ATTR",
    "LowerToLoopsPass",
    "Storage",
    "loop_matmuls",
    "lower_to_loops",
    "matmul_symbol",
    "memref_of",
]
