"""``math`` (and ``tdslmath.hypot``/``nextafter``) to xDSL's ``llvm`` dialect.

The ops that are cheap and vectorize become LLVM intrinsics: ``absf``,
``sqrt``, ``ceil``, ``floor``, ``trunc``, ``roundeven``, ``round``,
``copysign`` and ``fma``; ``rsqrt`` is ``1 / sqrt(x)`` (two roundings).  The
transcendental functions xDSL's ``llvm`` dialect has as intrinsics (``exp``,
``exp2``, ``log``, ``log2``, ``sin``, ``cos``, ``powf``) become those
intrinsics, which LLVM turns into libm calls; the rest become calls to the C
library function of the same name (``tanf`` for f32, ``tan`` for f64,
declared in the module on first use).  ``tdslmath.hypot`` and
``tdslmath.nextafter`` call C's ``hypot``/``nextafter`` likewise.

A nan that a library function creates from operands that are not nan (``log10(-1)``,
``asin(2)``) is made NumPy's: the sign NumPy's own loop gives it on this CPU
(:mod:`tdsl.backend.llvm.numpy_nans`; glibc's differs for some).  A nan operand's nan is
passed through as the library returns it.

The libm calls are not vectorized.  :mod:`tdsl.backend.llvm.math_approx` rewrites
``exp``, ``log`` and their relatives, and :mod:`tdsl.backend.llvm.math_erf` ``erf``,
into polynomial ``arith`` code first, when the pass asks for it.  f16 operands are expected to have been widened to f32
(:mod:`tdsl.backend.llvm.f16`); the library calls only match f32 and f64.
"""

from __future__ import annotations

from typing import TypeAlias

from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import Float32Type, Float64Type, ModuleOp, SymbolRefAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint
from xdsl.traits import SymbolTable

from tdsl.backend.llvm.arith_to_llvm import float_suffix
from tdsl.backend.llvm.llvm_types import float_constant, insert, numpys_created_nan, replace_op
from tdsl.backend.llvm.numpy_nans import numpy_type
from tdsl.dialects import tdslmath

_UNARY_INTRINSIC_CALLS: dict[type[Operation], str] = {
    math.AbsFOp: "llvm.fabs",
    math.SqrtOp: "llvm.sqrt",
    math.CeilOp: "llvm.ceil",
    math.FloorOp: "llvm.floor",
    math.ExpOp: "llvm.exp",
    math.Exp2Op: "llvm.exp2",
    math.LogOp: "llvm.log",
    math.Log2Op: "llvm.log2",
    math.SinOp: "llvm.sin",
    math.CosOp: "llvm.cos",
    math.TruncOp: "llvm.trunc",
    math.RoundEvenOp: "llvm.roundeven",
    math.RoundOp: "llvm.round",
}
"""Intrinsics called by their type-mangled name (``llvm.cos.f32``): xDSL 0.75's own
``llvm.intr.cos`` and friends declare ``llvm.cos`` without the type, so a module with an
f32 and an f64 ``cos`` fails in llvmlite ("Type of #1 arg mismatch")."""

_LIBM_UNARY: dict[type[Operation], str] = {
    math.TanOp: "tan",
    math.AsinOp: "asin",
    math.AcosOp: "acos",
    math.AtanOp: "atan",
    math.SinhOp: "sinh",
    math.CoshOp: "cosh",
    math.TanhOp: "tanh",
    math.AsinhOp: "asinh",
    math.AcoshOp: "acosh",
    math.AtanhOp: "atanh",
    math.Log10Op: "log10",
    math.Log1pOp: "log1p",
    math.ExpM1Op: "expm1",
    math.ErfOp: "erf",
    math.CbrtOp: "cbrt",
}

_LIBM_BINARY: dict[type[Operation], str] = {
    math.Atan2Op: "atan2",
    tdslmath.HypotOp: "hypot",
    tdslmath.NextAfterOp: "nextafter",
}


def libm_name(base: str, t: Attribute) -> str | None:
    """The C library function computing ``base`` on ``t``: ``tanf`` for f32, ``tan``
    for f64, None for other types."""
    if isinstance(t, Float32Type):
        return f"{base}f"
    if isinstance(t, Float64Type):
        return base
    return None


def declare_function(
    rewriter: PatternRewriter, anchor: Operation, name: str, function_type: llvm.LLVMFunctionType
) -> None:
    """Declare the external function ``name`` in the module holding ``anchor``, unless
    a symbol of that name is already there."""
    module = anchor.get_toplevel_object()
    if not isinstance(module, ModuleOp):
        raise ValueError(f"'{anchor.name}' is not inside a builtin.module")
    if SymbolTable.lookup_symbol(module, name) is not None:
        return
    declaration = llvm.FuncOp(name, function_type, linkage=llvm.LinkageAttr("external"))
    rewriter.insert(declaration, InsertPoint.at_end(module.body.block))


def call_libm(
    rewriter: PatternRewriter, anchor: Operation, name: str, args: list[SSAValue], t: Attribute
) -> SSAValue:
    """A call of the C library function ``name`` on ``args`` (all of type ``t``), which
    returns ``t``; declared in the module if needed."""
    declare_function(rewriter, anchor, name, llvm.LLVMFunctionType([t] * len(args), t))
    call = llvm.CallOp(SymbolRefAttr(name), *args, return_type=t)
    return insert(rewriter, call)


_CREATES_NAN_VIA_LIBM = {math.ExpOp, math.Exp2Op, math.LogOp, math.Log2Op, math.SinOp, math.CosOp}
"""Intrinsics that LLVM turns into library calls (the others are exact instructions)."""


LoweredMathOp: TypeAlias = (
    math.AbsFOp
    | math.SqrtOp
    | math.CeilOp
    | math.FloorOp
    | math.ExpOp
    | math.Exp2Op
    | math.LogOp
    | math.Log2Op
    | math.SinOp
    | math.CosOp
    | math.TruncOp
    | math.RoundEvenOp
    | math.RoundOp
    | math.CopySignOp
    | math.PowFOp
    | math.FmaOp
    | math.RsqrtOp
    | math.TanOp
    | math.AsinOp
    | math.AcosOp
    | math.AtanOp
    | math.SinhOp
    | math.CoshOp
    | math.TanhOp
    | math.AsinhOp
    | math.AcoshOp
    | math.AtanhOp
    | math.Log10Op
    | math.Log1pOp
    | math.ExpM1Op
    | math.ErfOp
    | math.CbrtOp
    | math.Atan2Op
    | tdslmath.HypotOp
    | tdslmath.NextAfterOp
)
"""The ops :class:`MathToLLVM` lowers: the keys of the tables above, ``copysign``,
``powf``, ``fma`` and ``rsqrt`` (its rewriter tries it on these alone)."""


class MathToLLVM(RewritePattern):
    """Every ``math`` op above, and ``tdslmath.hypot``/``nextafter``, to an intrinsic
    or a C library call."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: LoweredMathOp, rewriter: PatternRewriter) -> None:
        if not op.results:
            return
        kind = type(op)
        t = op.results[0].type
        args = list(op.operands)
        if (intrinsic := _UNARY_INTRINSIC_CALLS.get(kind)) is not None:
            call = llvm.CallIntrinsicOp(f"{intrinsic}.{float_suffix(t)}", args, [t])
            result = insert(rewriter, call)
            if kind in _CREATES_NAN_VIA_LIBM:
                name = intrinsic.removeprefix("llvm.")
                result = numpys_created_nan(rewriter, result, args, t, name, numpy_type(op))
        elif isinstance(op, math.CopySignOp | math.PowFOp):
            name = "llvm.copysign" if isinstance(op, math.CopySignOp) else "llvm.pow"
            call = llvm.CallIntrinsicOp(f"{name}.{float_suffix(t)}", args, [t])
            result = insert(rewriter, call)
            if isinstance(op, math.PowFOp):
                result = numpys_created_nan(rewriter, result, args, t, "pow", numpy_type(op))
        elif isinstance(op, math.FmaOp):
            result = insert(rewriter, llvm.FMAOp(op.a, op.b, op.c))
        elif isinstance(op, math.RsqrtOp):
            root = insert(rewriter, llvm.FSqrtOp(op.operand))
            one = insert(rewriter, float_constant(1.0, t))
            result = insert(rewriter, llvm.FDivOp(one, root))
        elif (base := _LIBM_UNARY.get(kind) or _LIBM_BINARY.get(kind)) is not None:
            name = libm_name(base, t)
            if name is None:
                return
            result = call_libm(rewriter, op, name, args, t)
            if not isinstance(op, tdslmath.NextAfterOp):
                result = numpys_created_nan(rewriter, result, args, t, base, numpy_type(op))
        else:
            return
        replace_op(rewriter, op, [result])


MATH_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (MathToLLVM(),)
"""Every pattern of this module."""
