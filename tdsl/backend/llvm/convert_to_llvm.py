"""The ``tdsl-convert-to-llvm`` pass: loops-stage IR to xDSL's ``llvm`` dialect.

Input: a module of ``func.func`` in the upstream ``func``, ``scf``, ``cf``,
``arith``, ``math`` and ``memref`` dialects plus ``tdslmath`` (what
``tdsl-lower-to-loops`` produces).  Output: only ``llvm.func`` ops, ready for
``xdsl.backend.llvm.convert.convert_module`` (``tdsl-opt -t llvm``).  An op
the pass cannot lower is an error naming it; nothing is left half-converted.

The ABI
-------

For a ``func.func @f`` the pass emits an ``llvm.func @f`` with the C calling
convention and external linkage (internal for a defined private function):

- a ``memref`` argument (static shape, identity or static strided layout)
  is one ``ptr``, the address of its element at index ``[0, ..., 0]``: the
  layout's static ``offset`` is already applied by the caller; element
  ``[i, j]`` is read at ``ptr + (i * s0 + j * s1) * itemsize`` with the strides
  ``s`` of the memref type (row-major for the identity layout), so a NumPy view
  is passed as ``view.ctypes.data`` with strides ``view.strides / itemsize``;
- ``index`` and ``i64`` arguments are ``i64`` (C ``int64_t``); ``i32``, ``f32``,
  ``f64`` stay ``i32``, ``float``, ``double``;
- ``i1`` memref elements are bytes holding 0 or 1 (NumPy's ``bool``); f16
  elements are IEEE half (NumPy's ``float16``);
- functions return nothing (outputs are written through memref arguments); a
  function with one scalar result returns it;
- an external function (``func.func private @g`` without a body) is called with
  the same ABI, so ``func.call @g(%m, %n)`` passes ``(ptr, i64)``.

With ``noalias=true`` every ``ptr`` argument of a defined function is marked
``noalias``: the caller promises that no two memref arguments overlap (tdsl's
inputs, outputs and values between groups never do), but for a function's ``view``
arguments (``tdsl.views``: windows of another argument) and the arguments they lie
in, and the ``scratch`` arguments of a function that calls several groups (they
share the runtime's scratch arena).  LLVM needs that, or runtime overlap
checks, to vectorize.  A single argument can be marked in the input instead,
with MLIR's argument attribute ``{llvm.noalias}`` on the ``func.func``.

Floating point
--------------

By default the pass adds no fast-math flags: every float op is computed in
NumPy's order with NumPy's rounding, without fused multiply-adds NumPy would not
form, so overflow, underflow, inf, nan and signed zeros come out as NumPy's.  The
flags an op already carries are kept: ``tdsl-lower-to-loops`` marks only the
accumulator update of a ``sum`` or ``mean`` ``reassoc``.  In LLVM IR that flag
becomes the loop's vectorize hint (:mod:`tdsl.backend.llvm.loop_hints`), which
lets LLVM vectorize the sum and reorder nothing else (it then adds in several
partial sums: the result may differ from NumPy's pairwise sum by rounding, within
an error bound like pairwise summation's; see ``docs/native.md``).  ``prod``, ``min`` and ``max`` combine in
order.  The ``fastmath`` option (any of ``reassoc``, ``contract``, ``arcp``,
``afn``) gives those flags to every float op that has none: it **changes
results** (``contract`` fuses ``a * a - c`` into one rounding, so an overflow of
``a * a`` can disappear; ``reassoc`` folds ``x * 2 * 0.5`` into ``x`` and
``square(power(x, y))`` into ``power(x, 2 y)``), and is for users who ask for it
explicitly.  ``nnan``, ``ninf`` and ``nsz`` are never accepted.
``maximumf``/``minimumf`` propagate nan.  f16 arithmetic runs in f32 with
explicit conversions (:mod:`tdsl.backend.llvm.f16`).  With ``approximate-math=true``
(the default) ``exp``, ``expm1``, ``log``, ``log1p``, ``tanh``, ``sinh``,
``cosh`` and ``erf`` become branch-free polynomial code that LLVM vectorizes
(:mod:`tdsl.backend.llvm.math_approx` and :mod:`tdsl.backend.llvm.math_erf`, with
their measured errors; only their own ops may contract into fused multiply-adds),
and so do ``sin`` and ``cos`` up to ``|x| <= 2^28`` (f32) or ``2^20`` (f64), with a C
library call in an ``scf.if`` beyond (:mod:`tdsl.backend.llvm.math_trig`; the
runtime gives that call masked vector variants, :mod:`tdsl.runtime.vector_math`),
and ``pow``, computed in f64 by fdlibm's method without branches
(:mod:`tdsl.backend.llvm.math_pow`); other math functions call the C library (:mod:`tdsl.backend.llvm.math_to_llvm`).

Steps: the ``fastmath`` option's flags, if any; ``nextafter`` as integer code; f16 widened;
math approximations (each math function in an always-inline function its uses call,
expanded and converted once per process: :mod:`tdsl.backend.llvm.math_outline`); xDSL's ``convert-scf-to-cf``; then one greedy walk of all
the patterns of :mod:`tdsl.backend.llvm` (``arith``, ``math``, ``memref``, ``func``,
``cf``), xDSL's ``reconcile-unrealized-casts``, and the check that only
``llvm`` ops remain.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    Float16Type,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.transforms.convert_scf_to_cf import ForLowering, IfLowering, SwitchLowering
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPattern

from tdsl.backend.llvm.arith_to_llvm import ARITH_TO_LLVM_PATTERNS
from tdsl.backend.llvm.dispatch import TypeDispatchApplier
from tdsl.backend.llvm.f16 import F16_PATTERNS
from tdsl.backend.llvm.func_to_llvm import FUNC_TO_LLVM_PATTERNS
from tdsl.backend.llvm.loops_common import ROLES, ROLES_ATTR, VIEWS_ATTR
from tdsl.backend.llvm.math_approx import APPROXIMATION_PATTERNS, EXACT_EXPANSION_PATTERNS
from tdsl.backend.llvm.math_erf import ERF_PATTERNS
from tdsl.backend.llvm.math_outline import outline_math
from tdsl.backend.llvm.math_pow import POW_PATTERNS
from tdsl.backend.llvm.math_to_llvm import MATH_TO_LLVM_PATTERNS
from tdsl.backend.llvm.math_trig import TRIG_PATTERNS
from tdsl.backend.llvm.memref_to_llvm import MEMREF_TO_LLVM_PATTERNS
from tdsl.dialects.tdslmath import NextAfterOp
from tdsl.errors import TdslIRError, TdslOptionError

ALLOWED_FAST_MATH = ("reassoc", "contract", "arcp", "afn")
"""Flags the ``fastmath`` option accepts: none of them assumes away nan, inf or -0."""


@dataclass(frozen=True)
class DefaultFastMath(RewritePattern):
    """Give float ``arith`` ops without fast-math flags the flags ``flags``."""

    flags: arith.FastMathFlagsAttr

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.FloatingPointLikeBinaryOperation | arith.NegfOp, rewriter: PatternRewriter
    ) -> None:
        if op.fastmath.data:
            return
        op.fastmath = self.flags
        rewriter.notify_op_modified(op)


def _walk(patterns: tuple[RewritePattern, ...], module: ModuleOp, *, again: bool = True) -> None:
    """Rewrite ``module`` with ``patterns`` until they do nothing more; with ``again=False``,
    one walk of the worklist only.  The worklist takes in every op a rewrite inserts or
    modifies and the users of every value it replaces, so one walk leaves nothing for a
    second to find unless a pattern reads IR it was not told changed.  The walks of
    :func:`_convert` skip the second (a confirming walk over every op); an op they leave
    unconverted is an error there."""
    PatternRewriteWalker(_applier(patterns), apply_recursively=again).rewrite_module(module)


@functools.lru_cache(maxsize=32)
def _applier(patterns: tuple[RewritePattern, ...]) -> TypeDispatchApplier:
    """One applier per pattern list, kept: it learns per op class which patterns can
    match, and learning that again on every walk took 6% of the conversion."""
    return TypeDispatchApplier(patterns)


SCF_TO_CF_PATTERNS: tuple[RewritePattern, ...] = (SwitchLowering(), IfLowering(), ForLowering())
"""xDSL's ``convert-scf-to-cf`` patterns, in its order (applied by :func:`_walk`: only to
the ``scf`` ops, and without the dead-code erasure its pass does on every op; LLVM
removes dead code)."""


TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    *FUNC_TO_LLVM_PATTERNS,
    *ARITH_TO_LLVM_PATTERNS,
    *MATH_TO_LLVM_PATTERNS,
    *MEMREF_TO_LLVM_PATTERNS,
)
"""The patterns of the main walk to ``llvm``, after ``scf`` became ``cf``."""

MATH_EXPANSION_PATTERNS: tuple[RewritePattern, ...] = (
    *APPROXIMATION_PATTERNS,
    *ERF_PATTERNS,
    *TRIG_PATTERNS,
    *POW_PATTERNS,
)
"""The approximations of the math functions (:func:`_approximate_and_convert`)."""


@dataclass(frozen=True)
class _Present:
    """What a module holds that the steps before the main walk rewrite: each of those walks
    visits every op, so one scan decides which of them can act at all."""

    next_after: bool
    """A ``tdslmath.nextafter`` (:data:`EXACT_EXPANSION_PATTERNS`)."""
    f16: bool
    """An f16 value, an op's result or a block's argument (:data:`F16_PATTERNS`)."""
    math: bool
    """An op of the ``math`` dialect (the approximations)."""

    @staticmethod
    def scan(module: ModuleOp) -> _Present:
        next_after = f16 = has_math = False
        for op in module.walk():
            if isinstance(op, NextAfterOp):
                next_after = True
            elif op.dialect_name() == "math":
                has_math = True
            if not f16:
                f16 = any(isinstance(t, Float16Type) for t in op.result_types) or any(
                    isinstance(a.type, Float16Type)
                    for region in op.regions
                    for block in region.blocks
                    for a in block.args
                )
        return _Present(next_after, f16, has_math)


def reconcile_casts(module: ModuleOp) -> None:
    """xDSL's ``reconcile-unrealized-casts`` (its pattern, which removes the cast chains
    ``A -> B -> A`` starting at a cast), tried on the casts alone, in order.

    xDSL's pass walks every op of the module with that pattern, twice when the first
    walk removed anything; the casts are a fraction of a lowered kernel's ops.  A cast
    this leaves is reported by the pass (:func:`_first_unconverted`), as before."""
    pattern = ReconcileUnrealizedCastsPattern(warn_on_failure=False)
    casts = [op for op in module.walk() if isinstance(op, UnrealizedConversionCastOp)]
    for cast in casts:
        if cast.parent is not None:  # not removed with an earlier chain
            pattern.match_and_rewrite(cast, PatternRewriter(cast))


def _overlapping_args(module: ModuleOp) -> dict[str, set[int]]:
    """Per function, the memref arguments that may overlap others: its ``view`` arguments
    (``tdsl.views``: windows of other arguments) and the arguments they lie in, and, in a
    function whose ``tdsl.arg_roles`` name several ``scratch`` arguments, those: the
    runtime lays every group's scratch in one arena the groups take in turn
    (:mod:`tdsl.runtime.workspace`), so two groups' scratch arguments of the function
    that calls them share bytes.  (Marked ``noalias`` there, LLVM inlined both groups
    and moved one group's store to its scratch past the other's: an int64 ``ones_like``
    tile overwrote a column max before the max was read.)"""
    found: dict[str, set[int]] = {}
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp):
            continue
        views = fn.attributes.get(VIEWS_ATTR)
        if isinstance(views, DenseArrayBase):
            flat = views.get_values()
            count = len(fn.function_type.inputs.data)
            if len(flat) % 3 or any(
                not 0 <= int(flat[k + j]) < count for k in range(0, len(flat), 3) for j in (0, 1)
            ):
                raise TdslIRError(
                    f"tdsl-convert-to-llvm: `{VIEWS_ATTR}` of @{fn.sym_name.data} must be "
                    f"triples (view, base, offset) of argument numbers below {count} and an "
                    f"offset, got {list(flat)}",
                    op=fn,
                )
            found[fn.sym_name.data] = {
                int(flat[k + j]) for k in range(0, len(flat), 3) for j in (0, 1)
            }
        roles = fn.attributes.get(ROLES_ATTR)
        if isinstance(roles, ArrayAttr):
            shared = {
                i
                for i, role in enumerate(roles.data)
                if isinstance(role, StringAttr) and role.data == "scratch"
            }
            if len(shared) > 1:
                found.setdefault(fn.sym_name.data, set()).update(shared)
    return found


def mark_noalias(module: ModuleOp, overlapping: Mapping[str, set[int]] | None = None) -> None:
    """Add ``llvm.noalias`` to every ``ptr`` argument of every defined ``llvm.func``, but
    those ``overlapping`` names for the function (windows and what they lie in)."""
    for op in module.ops:
        if not isinstance(op, llvm.FuncOp) or not op.body.blocks:
            continue
        skip = (overlapping or {}).get(op.sym_name.data, set())
        inputs = op.function_type.inputs.data
        old = op.arg_attrs.data if op.arg_attrs is not None else (DictionaryAttr({}),) * len(inputs)
        new: list[DictionaryAttr] = []
        for index, (t, attrs) in enumerate(zip(inputs, old, strict=True)):
            entries: dict[str, Attribute] = dict(attrs.data)
            if isinstance(t, llvm.LLVMPointerType) and index not in skip:
                entries["llvm.noalias"] = UnitAttr()
            new.append(DictionaryAttr(entries))
        op.arg_attrs = ArrayAttr(new)


def _first_unconverted(module: ModuleOp) -> Operation | None:
    """The first op that is not in the llvm dialect; a leftover cast only when there
    is no such op (it is then the symptom, not the cause)."""
    cast: Operation | None = None
    for op in module.walk():
        if op is module:
            continue
        if isinstance(op, UnrealizedConversionCastOp):
            cast = cast or op
        elif op.dialect_name() != "llvm":
            return op
    return cast


@dataclass(frozen=True)
class ConvertToLLVMPass(ModulePass):
    """Lower loops-stage IR (func/scf/cf/arith/math/memref/tdslmath) to the ``llvm``
    dialect: each function's memref arguments become bare pointers (the ABI is in
    ``docs/native.md``)."""

    name = "tdsl-convert-to-llvm"

    noalias: bool = False
    """Mark every pointer argument ``noalias`` (the caller passes distinct buffers)."""

    fastmath: tuple[str, ...] = ("none",)
    """Fast-math flags for float ops that have none: any of reassoc, contract, arcp,
    afn, or ``none`` (the default: NumPy's results).  Any flag changes results
    (contract fuses multiply-adds, reassoc reorders and folds arithmetic): opt in
    only when NumPy's rounding, overflow and nan behavior need not be kept."""

    approximate_math: bool = True
    """Expand exp, expm1, log, log1p, tanh, sinh, cosh, erf, sin, cos, pow into
    vectorizable polynomials (otherwise: libm calls)."""

    def _fast_math_flags(self) -> arith.FastMathFlagsAttr | None:
        flags = (self.fastmath,) if isinstance(self.fastmath, str) else tuple(self.fastmath)
        if flags == ("none",) or not flags:
            return None
        bad = [f for f in flags if f not in ALLOWED_FAST_MATH]
        if bad:
            raise TdslOptionError(
                f"tdsl-convert-to-llvm: fastmath flag '{bad[0]}' is not allowed "
                f"(allowed: {', '.join(ALLOWED_FAST_MATH)}, or none)"
            )
        return arith.FastMathFlagsAttr(tuple(FastMathFlag(f) for f in flags))

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _check_signatures(op)
        overlapping = _overlapping_args(op)
        flags = self._fast_math_flags()
        if flags is not None:
            _walk((DefaultFastMath(flags),), op)
        present = _Present.scan(op)
        if present.next_after:
            _walk(EXACT_EXPANSION_PATTERNS, op)
        if present.f16:
            _walk(F16_PATTERNS, op)
        if self.approximate_math and present.math:
            outline_math(op, _approximate_and_convert)
        _convert(op)
        if self.noalias:
            mark_noalias(op, overlapping)


def _convert(module: ModuleOp) -> None:
    """xDSL's ``convert-scf-to-cf``, then the walk of the patterns to ``llvm``, then the
    casts reconciled; an op left unconverted is an error."""
    _walk(SCF_TO_CF_PATTERNS, module, again=False)
    _walk(TO_LLVM_PATTERNS, module, again=False)
    reconcile_casts(module)
    left = _first_unconverted(module)
    if left is not None:
        raise TdslIRError(
            f"tdsl-convert-to-llvm: cannot lower '{left.name}' to the llvm dialect",
            note=_unsupported_note(left),
            op=left,
        )


def _approximate_and_convert(module: ModuleOp) -> None:
    """The approximations, then :func:`_convert`: what an outlined math function becomes
    (:func:`~tdsl.backend.llvm.math_outline.outline_math`)."""
    _walk(MATH_EXPANSION_PATTERNS, module)
    _convert(module)


def _check_signatures(module: ModuleOp) -> None:
    """Every function must be loops-stage (no tensors: those are what
    ``tdsl-lower-to-loops`` turns into memref arguments) and return at most one
    scalar, and its ``tdsl.arg_roles``, if any, name one known role per argument; else
    an error at the function."""
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp):
            continue
        _check_roles(fn)
        inputs, outputs = fn.function_type.inputs.data, fn.function_type.outputs.data
        tensors: list[Attribute] = [t for t in (*inputs, *outputs) if isinstance(t, TensorType)]
        if tensors:
            raise TdslIRError(
                f"tdsl-convert-to-llvm lowers loops-stage IR: run tdsl-fuse, tdsl-tile and "
                f"tdsl-lower-to-loops before it (@{fn.sym_name.data} takes or returns "
                f"{tensors[0]}; the lowering writes results through memref arguments)",
                op=fn,
            )
        if len(outputs) > 1:
            raise TdslIRError(
                f"tdsl-convert-to-llvm: @{fn.sym_name.data} returns {len(outputs)} values; "
                "a function returns at most one scalar (write results through memref "
                "arguments)",
                op=fn,
            )


def _check_roles(fn: func.FuncOp) -> None:
    roles = fn.attributes.get(ROLES_ATTR)
    if roles is None:
        return
    names = roles.data if isinstance(roles, ArrayAttr) else ()
    strings = [r.data for r in names if isinstance(r, StringAttr)]
    count = len(fn.function_type.inputs.data)
    if len(strings) != len(names) or len(strings) != count or not set(strings) <= set(ROLES):
        bad = next((r for r in strings if r not in ROLES), None)
        what = f"names the unknown role '{bad}'" if bad else f"is {roles}"
        raise TdslIRError(
            f"tdsl-convert-to-llvm: {ROLES_ATTR} of @{fn.sym_name.data} {what}; expected one "
            f"role per argument ({count}), each one of {', '.join(ROLES)}",
            op=fn,
        )


def _unsupported_note(op: Operation) -> str:
    if isinstance(op, UnrealizedConversionCastOp):
        return "a value of a type the lowering does not convert is used by a converted op"
    types = ", ".join(str(t) for t in (*op.operand_types, *op.result_types))
    return (
        "supported: scalar arith/math on f16/f32/f64/i1/integers/index, memref load/store/"
        "subview/cast/alloca on static shapes and strides, func, scf, cf; "
        f"this op has types: {types}"
    )
