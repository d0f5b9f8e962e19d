"""f16 arithmetic computed in f32, with explicit conversions.

LLVM on x86 without native half arithmetic either promotes f16 ops itself or
calls compiler-rt helpers (``__extendhfsf2``, ``__truncsfhf2``, ``__truncdfhf2``)
that an MCJIT process cannot resolve: the generated code then jumps to a null
address.  These patterns make the widening explicit, as NumPy computes most
f16 ufuncs: each float op on f16 (``arith`` arithmetic, ``cmpf``, min/max,
every ``math`` op, ``tdslmath.remf``/``hypot``) gets its operands extended to
f32 and its f16 results truncated back, so every intermediate is rounded to
f16 exactly as NumPy rounds it.  What remains on f16 is loads, stores,
constants, ``select``, bitcasts and ``extf``/``truncf`` between f16 and f32,
which LLVM compiles to ``vcvtph2ps``/``vcvtps2ph`` with F16C (the runtime
checks for it).

Conversions between f16 and f64 go through f32: widening is exact, and
narrowing first rounds f64 to f32 *to odd* (the nearest f32 whose last bit is
set, unless the value is exact), which makes the second rounding to f16 give
the correctly rounded result (f32 carries more than 11 + 2 bits).

Widening quiets a signaling nan, where NumPy's f16 loops hand the C library the
signaling nan itself (``npy_half_to_float`` keeps its bits), and the C library's
``powf`` and ``hypotf`` give ``x + y`` (nan) for a signaling operand where a quiet one
gives 1 or ``inf``: ``power(sNaN, 0)``, ``power(1, sNaN)`` and ``hypot(inf, sNaN)`` are
nan in NumPy.  So these two ops widened from f16 select ``x + y`` where an operand's
f16 bits are a signaling nan (:class:`SignalingNanF16`).

``tdslmath.nextafter`` is not widened (its f16 result depends on f16's
spacing); :mod:`tdsl.backend.llvm.math_approx` rewrites it into bit steps first.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    StringAttr,
    f32,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from tdsl.dialects import tdslmath
from tdsl.dialects.structured_bodies import WIDENED_DIALECTS, WIDENED_FROM

SIGNALING_CHECKED = "tdsl.signaling_checked"
"""Set on an op :class:`SignalingNanF16` has rewritten the uses of (it is not matched again)."""

_WIDENED: tuple[type[Operation], ...] = (
    arith.AddfOp,
    arith.SubfOp,
    arith.MulfOp,
    arith.DivfOp,
    arith.NegfOp,
    arith.MaximumfOp,
    arith.MinimumfOp,
    arith.MaxnumfOp,
    arith.MinnumfOp,
    arith.CmpfOp,
    tdslmath.RemFOp,
    tdslmath.HypotOp,
)


def _is_f16(t: Attribute) -> bool:
    return isinstance(t, Float16Type)


def _widens(op: Operation) -> bool:
    if not isinstance(op, _WIDENED) and op.dialect_name() != "math":
        return False
    return any(_is_f16(t) for t in (*op.operand_types, *op.result_types))


class WidenF16(RewritePattern):
    """A float op on f16 -> the same op on f32 between ``extf`` and ``truncf``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, IRDLOperation) or not _widens(op):
            return
        operands: list[SSAValue] = []
        for operand in op.operands:
            if _is_f16(operand.type):
                ext = arith.ExtFOp(operand, f32)
                rewriter.insert(ext)
                operand = ext.result
            operands.append(operand)
        attributes = dict(op.attributes)
        if op.dialect_name() in WIDENED_DIALECTS:  # its nans are f16's (see WIDENED_FROM)
            attributes[WIDENED_FROM] = StringAttr("f16")
        widened = type(op).build(
            operands=operands,
            result_types=[f32 if _is_f16(t) else t for t in op.result_types],
            properties=dict(op.properties),
            attributes=attributes,
        )
        rewriter.insert(widened)
        results: list[SSAValue] = []
        for old, new in zip(op.results, widened.results, strict=True):
            if _is_f16(old.type):
                trunc = arith.TruncFOp(new, old.type)
                rewriter.insert(trunc)
                new = trunc.result
            results.append(new)
        rewriter.replace(op, [], results)


class SignalingNanF16(RewritePattern):
    """``math.powf`` or ``tdslmath.hypot`` widened from f16 -> its result, or ``x + y``
    (a quiet nan with the first nan's sign and payload, as the C library's) where an
    operand, before its ``extf``, is an f16 signaling nan: exponent all ones, the quiet
    bit (9) clear, a nonzero payload below it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, math.PowFOp | tdslmath.HypotOp) or SIGNALING_CHECKED in op.attributes:
            return
        widened = op.attributes.get(WIDENED_FROM)
        if not (isinstance(widened, StringAttr) and widened.data == "f16"):
            return
        if not isinstance(op.results[0].type, Float32Type):
            return
        halves = [
            x.owner.input
            for x in op.operands
            if isinstance(x.owner, arith.ExtFOp) and _is_f16(x.owner.input.type)
        ]
        op.attributes[SIGNALING_CHECKED] = StringAttr("f16")
        if not halves:
            return
        new: list[Operation] = []

        def ins(o: Operation) -> SSAValue:
            new.append(o)
            return o.results[0]

        signaling: SSAValue | None = None
        for half in halves:
            this = is_signaling_nan(ins, half, 16, 10)
            signaling = this if signaling is None else ins(arith.OrIOp(signaling, this))
        if signaling is None:
            return
        result = op.results[0]
        total = ins(arith.AddfOp(op.operands[0], op.operands[1]))
        chosen = ins(arith.SelectOp(signaling, total, result))
        rewriter.insert(new, InsertPoint.after(op))
        rewriter.replace_uses_with_if(result, chosen, lambda use: use.operation is not new[-1])


def is_signaling_nan(
    ins: Callable[[Operation], SSAValue], x: SSAValue, width: int, mantissa: int
) -> SSAValue:
    """Whether the float ``x`` (``width`` bits, ``mantissa`` of them the fraction) is a
    signaling nan: exponent all ones, the quiet bit (the fraction's top) clear, a nonzero
    payload below it; ``ins`` inserts each op and gives its result."""
    int_type = IntegerType(width)

    def constant(value: int) -> SSAValue:
        return ins(arith.ConstantOp(IntegerAttr(value, int_type)))

    exponent = ((1 << (width - 1 - mantissa)) - 1) << mantissa
    quiet = 1 << (mantissa - 1)
    bits = ins(arith.BitcastOp(x, int_type))
    top = ins(arith.AndIOp(bits, constant(exponent | quiet)))
    payload = ins(arith.AndIOp(bits, constant(quiet - 1)))
    nan_bits = ins(arith.CmpiOp(top, constant(exponent), "eq"))
    return ins(arith.AndIOp(nan_bits, ins(arith.CmpiOp(payload, constant(0), "ne"))))


class ExtendF16ToF64(RewritePattern):
    """``extf`` f16 -> f64 becomes f16 -> f32 -> f64 (both exact)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ExtFOp, rewriter: PatternRewriter) -> None:
        if not (_is_f16(op.input.type) and isinstance(op.result.type, Float64Type)):
            return
        single = arith.ExtFOp(op.input, f32)
        rewriter.replace(op, [single, arith.ExtFOp(single.result, op.result.type)])


class TruncateF64ToF16(RewritePattern):
    """``truncf`` f64 -> f16 becomes f64 -> f32 rounded to odd -> f16 (one correct
    rounding overall)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.TruncFOp, rewriter: PatternRewriter) -> None:
        if not (isinstance(op.input.type, Float64Type) and _is_f16(op.result.type)):
            return

        def ins(new: Operation) -> SSAValue:
            rewriter.insert(new)
            return new.results[0]

        x = op.input
        nearest = ins(arith.TruncFOp(x, f32))
        back = ins(arith.ExtFOp(nearest, x.type))
        exact = ins(arith.CmpfOp(back, x, "ueq"))  # nan counts as exact
        bits = ins(arith.BitcastOp(nearest, i32))
        one = ins(arith.ConstantOp(IntegerAttr(1, i32)))
        odd = ins(arith.CmpiOp(ins(arith.AndIOp(bits, one)), one, "eq"))
        overshoot = ins(arith.CmpfOp(ins(math.AbsFOp(back)), ins(math.AbsFOp(x)), "ogt"))
        minus_one = ins(arith.ConstantOp(IntegerAttr(-1, i32)))
        towards_x = ins(arith.AddiOp(bits, ins(arith.SelectOp(overshoot, minus_one, one))))
        keep = ins(arith.OrIOp(exact, odd))
        odd_bits = ins(arith.SelectOp(keep, bits, towards_x))
        rounded = ins(arith.BitcastOp(odd_bits, f32))
        rewriter.replace(op, arith.TruncFOp(rounded, op.result.type))


F16_PATTERNS: tuple[RewritePattern, ...] = (
    WidenF16(),
    SignalingNanF16(),
    ExtendF16ToF64(),
    TruncateF64ToF16(),
)
"""Every pattern of this module."""
