"""``math.sin``/``math.cos`` as branch-free ``arith`` code that LLVM vectorizes.

Like :mod:`tdsl.backend.llvm.math_approx` (whose emitter it uses), on f32 and f64
(f16 is widened to f32 first by :mod:`tdsl.backend.llvm.f16`), for ``|x|`` up to
:data:`DOMAIN` (``2^28`` for f32, ``2^20`` for f64):

- ``x = n (pi/2) + y`` with ``n = rint(x 2/pi)`` (exp's shifter constant) and
  ``|y| <= pi/4``, Cody-Waite with ``pi/2`` in pieces whose products with ``n`` are
  exact: f64 as fdlibm's three 33-bit pieces and a 53-bit tail, every step kept
  (with the rounding errors of the two subtractions, by TwoSum: fdlibm's own steps
  are only exact where it takes them), the result a pair ``y0 + y1``; f32 reduced in
  f64 with two 25-bit pieces and a tail;
- the polynomials of FreeBSD's ``k_sin.c``/``k_cos.c`` (f64, with the tail ``y1``)
  and ``k_sinf.c``/``k_cosf.c`` (f32, in f64, rounded once), coefficients copied
  from there;
- the quadrant from the low bits of ``n`` (integer ops on the shifted value),
  ``select`` between ``sin y``/``cos y`` and their negations;
- nan gives nan, ``±inf`` the nan NumPy's loop gives on this CPU
  (:func:`tdsl.backend.llvm.numpy_nans.created_nan_negative`), ``sin`` keeps ``±0``
  and subnormals.

Finite ``x`` beyond the domain get the C library's ``sin``/``cos`` (NumPy's values),
called in an ``scf.if``.  Such a call would keep the loop scalar (it may write
``errno``); :mod:`tdsl.runtime.vector_math` gives it masked vector variants in the
LLVM IR text, which call the library only for the lanes beyond the domain, and the
loop vectorizes.

Measured maximum errors (``python benchmarks/native_trig.py accuracy``, against
NumPy in float64 for f32 and long double for f64, every 61st float32 bit pattern
in the domain, f64 with random low bits, and the floats nearest multiples of
``pi/2``): 0.501 ulp (f32) and 0.79 ulp (f64); the tests hold both to 1 ulp
(:data:`tdsl.backend.llvm.math_approx.MAX_ULP_ERROR`).
"""

from __future__ import annotations

import math as pymath
from decimal import Decimal
from fractions import Fraction

from xdsl.dialects import arith, llvm, math, scf
from xdsl.dialects.builtin import Float32Type, Float64Type, f64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from tdsl.backend.llvm.arith_to_llvm import float_suffix
from tdsl.backend.llvm.math_approx import _Emitter, _Format
from tdsl.backend.llvm.math_to_llvm import call_libm, libm_name
from tdsl.backend.llvm.numpy_nans import created_nan_negative, numpy_type
from tdsl.errors import TdslOptionError, internal_error

_PI = Fraction(
    Decimal(
        "3.14159265358979323846264338327950288419716939937510"
        "58209749445923078164062862089986280348253421170679"
    )
)
_HALF_PI = _PI / 2


def _leading(value: Fraction, bits: int) -> Fraction:
    """``value > 0`` truncated to its ``bits`` leading significant bits."""
    exponent = pymath.floor(pymath.log2(value))
    scale = Fraction(2) ** (bits - 1 - exponent)
    return Fraction(int(value * scale)) / scale


def _pieces(bits: int, count: int) -> list[tuple[float, float]]:
    """``pi/2 = p1 + p2 + ...``: ``count`` pieces of ``bits`` bits, each with the f64
    rounding of the rest after it (fdlibm's ``pio2_1``, ``pio2_1t``, ...)."""
    rest, pieces = _HALF_PI, []
    for _ in range(count):
        piece = _leading(rest, bits)
        rest -= piece
        pieces.append((float(piece), float(rest)))
    return pieces


_PIO2_F64 = _pieces(33, 3)  # fdlibm's pio2_1, pio2_1t, pio2_2, pio2_2t, pio2_3, pio2_3t
_PIO2_F32 = _pieces(25, 2)  # FreeBSD e_rem_pio2f.c's pio2_1 (25 bits), then 25 more
_TWO_OVER_PI = float(2 / _PI)

# FreeBSD lib/msun/src/k_sin.c, k_cos.c (fdlibm): |y| <= pi/4
_SIN_F64 = (
    -1.66666666666666324348e-01,
    8.33333333332248946124e-03,
    -1.98412698298579493134e-04,
    2.75573137070700676789e-06,
    -2.50507602534068634195e-08,
    1.58969099521155010221e-10,
)
_COS_F64 = (
    4.16666666666666019037e-02,
    -1.38888888888741095749e-03,
    2.48015872894767294178e-05,
    -2.75573143513906633035e-07,
    2.08757232129817482790e-09,
    -1.13596475577881948265e-11,
)
# FreeBSD lib/msun/src/k_sinf.c, k_cosf.c (in double, for float results)
_SIN_F32 = (
    -0.166666666416265235595,
    0.0083333293858894631756,
    -0.000198393348360966317347,
    0.0000027183114939898219064,
)
_COS_F32 = (
    -0.499999997251031003120,
    0.0416666233237390631894,
    -0.00138867637746099294692,
    0.0000243904487962774090654,
)

DOMAIN = {"f32": 2.0**28, "f64": 2.0**20}
"""The largest ``|x|`` the reduction handles; beyond it the C library is called."""

SLOW_PATHS = ("libm", "intrinsic", "none")
"""What :class:`ExpandTrig` does beyond the domain: call the C library (the
pipeline's), ``llvm.sin``/``llvm.cos`` (which LLVM executes for every lane), or
nothing (wrong results there); the last two only for ``benchmarks/native_trig.py``."""


class _TrigEmitter(_Emitter):
    """The f64 reduction and kernels (f32 arguments are widened to f64 first)."""

    def neg(self, a: SSAValue) -> SSAValue:
        return self._op(arith.NegfOp(a, self.flags))

    def two_diff(self, a: SSAValue, b: SSAValue) -> tuple[SSAValue, SSAValue]:
        """``(d, e)`` with ``a - b = d + e`` exactly, ``d`` the rounded difference
        (Knuth's TwoSum, whichever of ``a``, ``b`` is larger)."""
        nb = self.neg(b)
        d = self.add(a, nb)
        bb = self.sub(d, a)
        return d, self.add(self.sub(a, self.sub(d, bb)), self.sub(nb, bb))

    def reduce_pio2(self, x: SSAValue, f32: bool) -> tuple[SSAValue, SSAValue, SSAValue | None]:
        """``(q, y0, y1)``: ``q`` the integer bits holding ``n`` in the low bits,
        ``x - n pi/2 = y0 + y1`` (``y1`` None for f32, where ``y0`` alone is exact
        enough)."""
        shifter = self.c(self.fmt.shifter)
        shifted = self.add(self.mul(x, self.c(_TWO_OVER_PI)), shifter)
        fn = self.sub(shifted, shifter)
        q = self.bits(shifted)  # the shifter's low bits are 0: n mod 4 is q's
        if f32:
            (p1, _), (p2, p2t) = _PIO2_F32
            r = self.sub(x, self.mul(fn, self.c(p1)))
            r = self.sub(r, self.mul(fn, self.c(p2)))
            return q, self.sub(r, self.mul(fn, self.c(p2t))), None
        (p1, _), (p2, _), (p3, p3t) = _PIO2_F64
        r = self.sub(x, self.mul(fn, self.c(p1)))  # exact
        r, e2 = self.two_diff(r, self.mul(fn, self.c(p2)))  # fn * p2, fn * p3: exact
        r, e3 = self.two_diff(r, self.mul(fn, self.c(p3)))
        tail = self.sub(self.add(e2, e3), self.mul(fn, self.c(p3t)))
        y0 = self.add(r, tail)
        return q, y0, self.add(self.sub(r, y0), tail)

    def kernel_sin(self, y0: SSAValue, y1: SSAValue | None) -> SSAValue:
        z = self.mul(y0, y0)
        w = self.mul(z, z)
        v = self.mul(z, y0)
        if y1 is None:  # k_sinf.c
            s1, s2, s3, s4 = _SIN_F32
            head = self.add(y0, self.mul(v, self.poly(z, (s1, s2))))
            return self.add(head, self.mul(self.mul(v, w), self.poly(z, (s3, s4))))
        s1, s2, s3, s4, s5, s6 = _SIN_F64  # k_sin.c with iy = 1
        r = self.add(self.poly(z, (s2, s3, s4)), self.mul(self.mul(z, w), self.poly(z, (s5, s6))))
        inner = self.sub(self.mul(self.c(0.5), y1), self.mul(v, r))
        tail = self.sub(self.sub(self.mul(z, inner), y1), self.mul(v, self.c(s1)))
        return self.sub(y0, tail)

    def kernel_cos(self, y0: SSAValue, y1: SSAValue | None) -> SSAValue:
        z = self.mul(y0, y0)
        w = self.mul(z, z)
        if y1 is None:  # k_cosf.c
            c0, c1, c2, c3 = _COS_F32
            head = self.add(self.add(self.c(1.0), self.mul(z, self.c(c0))), self.mul(w, self.c(c1)))
            return self.add(head, self.mul(self.mul(w, z), self.poly(z, (c2, c3))))
        c1, c2, c3, c4, c5, c6 = _COS_F64  # k_cos.c
        r = self.add(
            self.mul(z, self.poly(z, (c1, c2, c3))),
            self.mul(self.mul(w, w), self.poly(z, (c4, c5, c6))),
        )
        hz = self.mul(self.c(0.5), z)
        one = self.c(1.0)
        head = self.sub(one, hz)
        tail = self.add(
            self.sub(self.sub(one, head), hz), self.sub(self.mul(z, r), self.mul(y0, y1))
        )
        return self.add(head, tail)

    def sin_cos(self, x: SSAValue, cosine: bool, f32: bool) -> SSAValue:
        """``sin(x)`` or ``cos(x)`` for ``|x|`` in the domain (f64 ``x``)."""
        q, y0, y1 = self.reduce_pio2(x, f32)
        if cosine:
            q = self.iadd(q, self.ci(1))
        s = self.kernel_sin(y0, y1)
        c = self.kernel_cos(y0, y1)
        odd = self._op(arith.CmpiOp(self._op(arith.AndIOp(q, self.ci(1))), self.ci(0), "ne"))
        picked = self.select(odd, c, s)
        negative = self._op(arith.CmpiOp(self._op(arith.AndIOp(q, self.ci(2))), self.ci(0), "ne"))
        return self.select(negative, self.neg(picked), picked)


def _slow_path(
    rewriter: PatternRewriter,
    op: Operation,
    x: SSAValue,
    outside: SSAValue,
    fast: SSAValue,
    how: str,
) -> SSAValue:
    """``scf.if outside { C library call (or llvm.sin) } else { fast }``."""
    t = x.type
    base = "cos" if isinstance(op, math.CosOp) else "sin"
    then_block, else_block = Block(), Block()
    if_op = scf.IfOp(outside, [t], Region(then_block), Region(else_block))
    rewriter.insert(if_op)
    rewriter.insertion_point = InsertPoint.at_end(then_block)
    if how == "intrinsic":
        call = llvm.CallIntrinsicOp(f"llvm.{base}.{float_suffix(t)}", [x], [t])
        rewriter.insert(call)
        called = call.results[0]
    else:
        name = libm_name(base, t)
        if name is None:
            raise internal_error(f"convert-to-llvm: no C library {base} for {t}", op=op)
        called = call_libm(rewriter, op, name, [x], t)
    rewriter.insert(scf.YieldOp(called))
    rewriter.insertion_point = InsertPoint.at_end(else_block)
    rewriter.insert(scf.YieldOp(fast))
    rewriter.insertion_point = InsertPoint.before(op)
    return if_op.results[0]


class ExpandTrig(RewritePattern):
    """``math.sin``/``math.cos`` on f32 or f64 -> the expansion of this module's
    docstring, finite ``x`` beyond :data:`DOMAIN` in an ``scf.if`` calling the C
    library (``slow_path``: one of :data:`SLOW_PATHS`)."""

    def __init__(self, slow_path: str = "libm") -> None:
        if slow_path not in SLOW_PATHS:
            raise TdslOptionError(
                f"the slow path of sin and cos is one of {', '.join(SLOW_PATHS)}, not {slow_path!r}"
            )
        self.slow_path = slow_path

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, math.SinOp | math.CosOp):
            return
        t = op.result.type
        if not isinstance(t, Float32Type | Float64Type):
            return
        f32 = isinstance(t, Float32Type)
        cosine = isinstance(op, math.CosOp)
        x = op.operand
        e = _Emitter(rewriter, _Format(t))
        wide = _TrigEmitter(rewriter, _Format(f64))
        xw = wide._op(arith.ExtFOp(x, f64)) if f32 else x
        fast = wide.sin_cos(xw, cosine, f32)
        if f32:
            fast = e._op(arith.TruncFOp(fast, t))
        a = e.abs(x)
        negative = created_nan_negative("cos" if cosine else "sin", numpy_type(op))
        nan = e.c(float("-nan" if negative else "nan"))
        fast = e.select(e.cmp("oeq", a, e.c(float("inf"))), nan, fast)
        if not cosine:
            fast = e.keep_tiny(x, fast)
        fast = e.keep_nan(x, fast)
        if self.slow_path != "none":
            limit = DOMAIN["f32" if f32 else "f64"]
            finite = e.cmp("olt", a, e.c(float("inf")))
            outside = e._op(arith.AndIOp(e.cmp("ogt", a, e.c(limit)), finite))
            fast = _slow_path(rewriter, op, x, outside, fast, self.slow_path)
        rewriter.replace(op, [], [fast])


TRIG_PATTERNS: tuple[RewritePattern, ...] = (ExpandTrig(),)
"""``sin`` and ``cos`` (part of the pass's ``approximate-math`` option)."""
