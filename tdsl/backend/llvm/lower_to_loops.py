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
attribute holds them, and the caller passes them), ``view`` (a window of
another argument: ``tdsl.views`` lists each as the argument, the one it lies in
and its element offset), ``error`` (a gather's flag and bad index) and
``scratch`` (an accumulator of a group: one tile's result).

The lowering is a set of rewrite patterns, applied in one walk in program
order, as the LLVM conversion is: :class:`FunctionToMemrefs` gives a function
its memref signature and chooses the buffers of its results and joins; then
one pattern per op between groups (:mod:`tdsl.backend.llvm.loops_patterns`:
a constant, a view, a gather, a join, a ``kernel.tile``) lowers it once what it
reads is in buffers, appending the arguments it needs; ``func.return`` is last.

The main function is a flat sequence of calls (so that a runtime may also
drive it itself, calling group functions from several threads): filling a
constant (``@<function>_fill<n>``), a BLAS matmul, a group, copying a result
that is not computed in place (``@<function>_copy<n>``).  Each ``kernel.tile``
becomes a function of its own, ``@<function>_<group>``, which the main
function calls (marked ``noinline``, ``passthrough = ["noinline"]``: the runtime calls
it itself when it splits the tiles over threads, and a copy inlined into the main
function cost LLVM a second optimization and code generation of a small group): its first two arguments ``lo`` and ``hi``
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
scratch by the sweep that computes it (see ``loops_common.keep_long_chains``), so
neither the code nor the work grows with the square of the program's length;
so is every value the ``kernel.tile`` records as ``staged``.  These choices (the
loops' tiles, the values stored, the matmuls BLAS computes) are the plan
``tdsl-plan-loops`` records in each ``kernel.tile`` (:mod:`tdsl.backend.llvm.plan_loops`);
this pass runs a recorded plan as it is, and plans the groups that have none first.
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
cast to an f64 result) too: the result's columns innermost, never its contraction
(summed in order, it would not vectorize; float16 ``relu(x @ w + b) @ v`` at
512x768x768x256 took 304 ms so, 31 ms now).  Tile sizes along reduction dims are
ignored (element loops need no tile buffers along them), but attention's keys
(:mod:`~tdsl.backend.llvm.loops_flash`) and the contraction of a matmul BLAS computes
a tile at a time, adding each tile's product (:mod:`~tdsl.backend.llvm.loops_split`).

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
the sweep reads instead (see ``loops_choices.packed_inputs`` for when).

The output is ordinary upstream MLIR (``func``, ``scf``, ``arith``, ``math``,
``memref``), plus ``tdslmath`` for the three scalar functions xDSL's
dialects lack.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    ModuleOp,
    StringAttr,
    TensorType,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tdsl.backend.llvm.llvm_types import make_signless
from tdsl.backend.llvm.loops_choices import blas_output, tile_gemm
from tdsl.backend.llvm.loops_common import (
    BLOCK as BLOCK,
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
    ROLES_ATTR,
    SCRATCH_LIMIT_ATTR,
    VIEWS_ATTR,
    Storage,
    _is_contraction,
    loops_bug,
    matmul_symbol,
    memref_of,
    strided_memref,
)
from tdsl.backend.llvm.loops_common import (
    SPLIT_TILES as SPLIT_TILES,
)
from tdsl.backend.llvm.loops_common import (
    StridedBlasOperandError as StridedBlasOperandError,
)
from tdsl.backend.llvm.loops_emit import _Group
from tdsl.backend.llvm.loops_outline import outline_long_bodies, unique_constants
from tdsl.backend.llvm.loops_patterns import (
    DEST_ATTR,
    OP_PATTERNS,
    PARTS_ATTR,
    Lowering,
    ReturnToCopies,
)
from tdsl.backend.llvm.plan_loops import plan_loops
from tdsl.dialects.kernel import FusedOp, TileOp
from tdsl.dialects.op_interfaces import StridedView, row_major_strides
from tdsl.dialects.structured import element_type, is_constant, tensor_shape
from tdsl.dialects.tensordsl import ConcatenateOp, TakeOp
from tdsl.errors import TdslIRError


def _has_tensors(fn: func.FuncOp) -> bool:
    t = fn.function_type
    return any(isinstance(a, TensorType) for a in (*t.inputs.data, *t.outputs.data))


@dataclass
class FunctionToMemrefs(RewritePattern):
    """A function on tensors becomes one on memrefs: its inputs (``in``, read with the
    strides :attr:`Lowering.strides` gives), then one ``out`` argument per result, then
    the buffer of each join (``tmp``, or the ``out`` it is returned in) and the slices
    of it that groups write in place (``view``).  The ops move over unchanged, reading
    each input through an ``unrealized_conversion_cast``; a result whose buffer is chosen
    here carries it in ``tdsl.loops_dest``, a join the slices written in place in
    ``tdsl.loops_parts`` (see :mod:`tdsl.backend.llvm.loops_patterns`)."""

    lowering: Lowering

    @op_type_rewrite_pattern
    def match_and_rewrite(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        if fn.is_declaration or ROLES_ATTR in fn.attributes or not _has_tensors(fn):
            return
        name = fn.sym_name.data
        block = fn.body.block
        ops = list(block.ops)
        ret = ops[-1] if ops and isinstance(ops[-1], func.ReturnOp) else None
        if ret is None:
            raise TdslIRError(f"@{name} has no func.return", op=fn)
        _check_ops(name, ops[:-1])
        strides = self.lowering.strides.get(name, [])
        types: list[Attribute] = []
        roles: list[str] = []
        views: list[int] = []

        def arg(t: Attribute, role: str) -> int:
            types.append(t)
            roles.append(role)
            return len(types) - 1

        for i, a in enumerate(block.args):
            given = strides[i] if i < len(strides) else None
            arg(memref_of(a.type) if given is None else strided_memref(a.type, given), "in")
        outs = [arg(memref_of(v.type), "out") for v in ret.arguments]
        dest: dict[SSAValue, int] = {}
        for i, v in enumerate(ret.arguments):
            if isinstance(v.owner, TileOp | ConcatenateOp | TakeOp) and v not in dest:
                dest[v] = outs[i]
        # each join's buffer comes first: a group whose result only the join reads
        # writes it into its slice (a view argument)
        parts: dict[ConcatenateOp, list[int]] = {}
        for op in ops[:-1]:
            if not isinstance(op, ConcatenateOp):
                continue
            if op.result not in dest:
                dest[op.result] = arg(memref_of(op.result.type), "tmp")
            shape = tensor_shape(op.result)
            row_major = row_major_strides(shape)
            parts[op] = []
            offsets = op.offsets()
            for k, v in enumerate(op.inputs):
                at = -1
                if (
                    isinstance(v.owner, TileOp)
                    and v.get_user_of_unique_use() is op
                    and v not in dest
                ):
                    at = dest[v] = arg(strided_memref(v.type, row_major), "view")
                    offset = offsets[k] * row_major[op.axis_value]
                    views.extend((at, dest[op.result], offset))
                parts[op].append(at)
        new = func.FuncOp(name, (types, []))
        new.location = fn.location  # (where a later error about the function points)
        new.attributes[ROLES_ATTR] = ArrayAttr([StringAttr(r) for r in roles])
        if views:
            new.attributes[VIEWS_ATTR] = DenseArrayBase.from_list(i64, views)
        args = new.body.block.args
        for a, old in zip(args, block.args, strict=False):  # the inputs come first
            a.name_hint = old.name_hint
        for i, o in enumerate(outs):
            args[o].name_hint = f"out{i}"
        for a, old in zip(args, block.args, strict=False):
            read = UnrealizedConversionCastOp.get([a], [old.type])
            new.body.block.add_op(read)
            old.replace_all_uses_with(read.results[0])
        for op in ops:
            op.detach()
            new.body.block.add_op(op)
            places = [dest.get(r, -1) for r in op.results]
            if any(p >= 0 for p in places):
                op.attributes[DEST_ATTR] = DenseArrayBase.from_list(i64, places)
            if isinstance(op, ConcatenateOp):
                op.attributes[PARTS_ATTR] = DenseArrayBase.from_list(i64, parts[op])
        rewriter.replace(fn, new)


def _check_ops(name: str, ops: Sequence[Operation]) -> None:
    """Every op of function ``name`` but its return is in a group, or a constant, view,
    join or gather between groups."""
    for op in ops:
        if isinstance(op, FusedOp):
            raise TdslIRError(
                f"tdsl-lower-to-loops lowers kernel.tile groups: run tdsl-tile before it "
                f"(@{name} has a kernel.fused)",
                op=op,
            )
        if (
            not isinstance(op, TileOp)
            and not is_constant(op)
            and not isinstance(op, StridedView | ConcatenateOp | TakeOp)
        ):
            raise TdslIRError(
                f"tdsl-lower-to-loops lowers kernel.tile groups: run tdsl-fuse and "
                f"tdsl-tile before it ('{op.name}' is outside a group in @{name})",
                op=op,
            )


def _finish(module: ModuleOp) -> None:
    """Erase the casts of the lowered functions; any still read is an op left unlowered."""
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp) or ROLES_ATTR not in fn.attributes:
            continue
        for op in list(fn.body.block.ops):
            if isinstance(op, UnrealizedConversionCastOp) and not op.results[0].uses:
                op.detach()
                op.erase()
            elif not isinstance(op, func.CallOp | func.ReturnOp) and op.name != "arith.constant":
                raise loops_bug(f"'{op.name}' was left unlowered in @{fn.sym_name.data}", op)


def _check_group_names(module: ModuleOp) -> None:
    """Each group of a function lowers to a function named after both: two groups of one
    function with one name are a located error (their loops would share a name)."""
    for fn in module.walk():
        if not isinstance(fn, func.FuncOp):
            continue
        seen: set[str] = set()
        for op in fn.walk():
            if isinstance(op, TileOp) and (name := op.group_name) is not None:
                if name in seen:
                    raise TdslIRError(
                        f"tdsl-lower-to-loops: two groups of @{fn.sym_name.data} are named "
                        f"'{name}': rename one (each lowers to a function named after it)",
                        op=op,
                    )
                seen.add(name)


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

    _check_group_names(module)
    plan_loops(module)  # the groups without a recorded plan (tdsl-plan-loops) get one
    lowering = Lowering({k: list(v) for k, v in (strides or {}).items()})
    lowering.symbols.reserve(
        *(op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp))
    )
    patterns: list[RewritePattern] = [FunctionToMemrefs(lowering)]
    patterns += [p(lowering) for p in OP_PATTERNS]
    patterns.append(ReturnToCopies(lowering))
    # one walk, in program order: each op is lowered once what it reads is in buffers
    # (the arguments a function gains follow its ops' order)
    PatternRewriteWalker(
        GreedyRewritePatternApplier(patterns, dce_enabled=False), apply_recursively=False
    ).rewrite_module(module)
    lowering.write_added()
    _finish(module)
    unique_constants(module)
    outline_long_bodies(module)  # (LLVM's loop passes grow faster than a function)
    make_signless(module)
    try:
        module.verify()
    except VerifyException as err:
        raise TdslIRError(
            f"internal error: tdsl-lower-to-loops produced IR that does not verify ({err}); "
            "the numpy target computes this expression"
        ) from None


def loops_matmuls(module: ModuleOp) -> tuple[dict[str, int], int]:
    """How the native loops of the tiled ``module`` compute its matmuls, by the plan each
    group records (``tdsl-plan-loops``; planned here where none is), without building any
    loops: ``blas`` (a BLAS call, whole or a tile at a time), ``flash`` (an online
    softmax's ``exp(s - max) @ v``, a key tile at a time), ``narrow`` (float16 or integer
    ones: loops, as NumPy's own are, slower than the native ones: 13x at 256x64x128 in
    float16), ``chosen`` (f32 or f64 ones BLAS could compute a tile at a time, which the
    loops compute as BLAS's calls would cost more: ``loops_split.cheaper_loops``) and
    ``loops`` (other f32 or f64 ones the loops compute: a right operand computed in the
    group, or a result wider than the matmul; NumPy calls BLAS for those, so ``auto``
    runs the numpy target where there is one); and the BLAS calls a call of
    the module makes (one per matmul BLAS computes whole; one per loops tile of the
    dims it runs along for those it computes a tile at a time, a flash op's by key
    tile)."""
    kinds: dict[str, int] = dict.fromkeys(("blas", "flash", "narrow", "chosen", "loops"), 0)
    calls = 0
    for op in module.walk():
        if not isinstance(op, TileOp):
            continue
        group = _Group(op)
        for o in group.body.ops:
            if o in group.flash:
                kinds["flash"] += 1
            elif not _is_contraction(o):
                continue
            elif o in group.blas or o in group.gemm:
                kinds["blas"] += 1
            elif str(element_type(o.results[0])) in ("f32", "f64"):
                # (not one BLAS would write whole: the planner gives BLAS those)
                g = tile_gemm(group.body, o, group.args)
                whole = blas_output(group.body, o) is not None
                reads = g is not None and group._gemm_reads(g, group.gemm)  # pyright: ignore[reportPrivateUsage]
                kinds["chosen" if reads and not whole else "loops"] += 1
            else:
                kinds["narrow"] += 1
            if o in group.blas:
                calls += 1
            elif o in group.gemm or o in group.flash:
                dims = {d for d in group.body.loop_dims(o) if d is not None}
                calls += math.prod(-(-group.extents[d] // group.tiles[d]) for d in dims)
    return kinds, calls


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
    "loops_matmuls",
    "lower_to_loops",
    "matmul_symbol",
    "memref_of",
]
