"""``math.powf`` as branch-free ``arith`` code that LLVM vectorizes.

The C library's ``pow``/``powf``, called one element at a time, keeps a loop from
vectorizing.  This expansion follows the method of fdlibm's ``e_pow.c``
(Copyright (C) 2004 by Sun Microsystems, Inc. All rights reserved. Permission to
use, copy, modify, and distribute this software is freely granted, provided that
this notice is preserved), written without branches: every element takes every
step and ``select`` picks the special cases.  An f32 power is computed in f64 as
``exp(y log|x|)`` with :mod:`tdsl.backend.llvm.math_approx`'s f64 ``log`` and ``exp``
(each within an f64 ulp: the f64 result is within ``2^-45`` relative for every
result f32 can hold, so one rounding to f32 is within ``0.5 + 2^-21`` ulp), f16 is
widened to f32 first (:mod:`tdsl.backend.llvm.f16`).  An f64 power takes fdlibm's
steps:

1. ``log2|x| = t1 + t2`` with ``t1`` holding 21 significant bits: ``|x| = 2^n m``
   with ``m`` in ``[sqrt(1/2), sqrt(2))`` around 1 or ``[sqrt(3/2), sqrt(3))``
   around ``b = 1.5`` (subnormals scaled by ``2^53`` first), ``s = (m - b) / (m + b)``
   split into ``s_h + s_l`` (``s_h`` its high 21 bits), and
   ``log(m / b) = 2 s + 2/3 s^3 + s^5 L(s^2)`` evaluated in pieces that each
   carry their rounding error, then scaled by ``2 / (3 ln 2)`` in two parts.
2. ``y log2|x| = p_h + p_l`` with ``y = y1 + y2`` split the same way, so that
   ``p_h = y1 t1`` is exact.
3. ``2^(p_h + p_l) = 2^n exp(r)``: ``n`` the nearest integer, ``r`` the rest
   times ``ln 2`` in two parts, ``exp(r)`` from a rational approximation
   (``1 - ((r c(r)) / (c(r) - 2) - r)``, ``c(r) = r - r^2 P(r^2)``), ``2^n``
   applied as two factors so that a subnormal result is rounded once.
   ``p_h + p_l`` above 1024 (the rounding of ``p_h + p_l`` counted) overflows to
   ``inf``, below -1075 underflows to 0.

No fast-math flag at all on f64: step 1 and 3's error terms are differences that
a fused multiply-add or a reassociation would change (f32's ``log`` and ``exp``
carry ``contract``, as they do alone).

Special values are C99's, which NumPy's loops give: ``x ** ±0 = 1`` and
``1 ** y = 1`` (nan included), ``(-1) ** ±inf = 1``, ``|x| < 1`` or ``> 1`` to
``±inf`` give 0 or ``inf``, ``±0`` and ``±inf`` to a power give 0 or ``inf`` with
the sign of ``x`` for an odd integer ``y``, a finite negative ``x`` to an odd
integer power is negative, to a non-integer power nan (with the sign NumPy's nan
has here, :mod:`tdsl.backend.llvm.numpy_nans`), and a nan operand gives ``x + y``
(the first nan's sign and payload, as the C library's ``x + y`` does), except that
a nan ``x`` to an odd integer power loses its sign where NumPy's loops lose it (the
C library computes ``x * x`` there; NumPy's AVX-512 loops keep it on f32 and f64:
asked of NumPy, as :func:`~tdsl.backend.llvm.numpy_nans.odd_power_keeps_nan_sign`), and
that a signaling nan gives ``x + y`` even where C99 gives 1 (``sNaN ** 0``, ``1 **
sNaN``) where NumPy's loops are the C library's (not its AVX-512 loops: asked of NumPy,
:func:`~tdsl.backend.llvm.numpy_nans.signaling_pow_nans`).

Measured maximum errors (``python benchmarks/native_pow.py accuracy``, 10^6 pairs in
each of seven sets, against NumPy in float64 for f32 and long double for f64):
f32 0.500 ulp (correctly rounded except at exact ties), f64 0.851 ulp (NumPy's, the
C library's: 0.617 and 0.508).  The tests hold f32 to 0.501 and f64 to 1 ulp
(:data:`tdsl.backend.llvm.math_approx.MAX_ULP_ERROR`).
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import Float32Type, Float64Type, f64
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from tdsl.backend.llvm.f16 import is_signaling_nan
from tdsl.backend.llvm.math_approx import _Emitter, _Format
from tdsl.backend.llvm.numpy_nans import (
    created_nan_negative,
    numpy_type,
    odd_power_keeps_nan_sign,
    signaling_pow_nans,
)

# fdlibm's: (3/2) (log(m / b) - 2 s - 2/3 s^3) / s^4 ~ L(s^2), and exp's P
_L = (
    5.99999999999994648725e-01,
    4.28571428578550184252e-01,
    3.33333329818377432918e-01,
    2.72728123808534006489e-01,
    2.30660745775561754067e-01,
    2.06975017800338417784e-01,
)
_P = (
    1.66666666666666019037e-01,
    -2.77777777770155933842e-03,
    6.61375632143793436117e-05,
    -1.65339022054652515390e-06,
    4.13813679705723846039e-08,
)
_DP_H = 5.84962487220764160156e-01  # log2(1.5), high part
_DP_L = 1.35003920212974897128e-08  # log2(1.5) - _DP_H
_CP = 9.61796693925975554329e-01  # 2 / (3 ln 2)
_CP_H = 9.61796700954437255859e-01
_CP_L = -7.02846165095275826516e-09
_LG2 = 6.93147180559945286227e-01
_LG2_H = 6.93147182464599609375e-01
_LG2_L = -1.90465429995776804525e-09
_OVT = 8.0085662595372944372e-17  # -(1024 - log2(largest float + half an ulp))
_LOW_WORD = 0xFFFFFFFF


class _Pow:
    """The emitter's f64 ops plus the integer and bit steps of the expansion."""

    def __init__(self, rewriter: PatternRewriter, wide: bool) -> None:
        self.e = _Emitter(rewriter, _Format(f64))
        self.wide = wide
        if not wide:
            self.e.flags = arith.FastMathFlagsAttr("none")

    def high(self, x: SSAValue) -> SSAValue:
        """``x`` with its low 32 bits cleared (21 significant bits are left)."""
        e = self.e
        return e.from_bits(e._op(arith.AndIOp(e.bits(x), e.ci(~_LOW_WORD))))

    def shl(self, a: SSAValue, n: int) -> SSAValue:
        return self.e._op(arith.ShLIOp(a, self.e.ci(n)))

    def shr(self, a: SSAValue, n: int) -> SSAValue:
        return self.e._op(arith.ShRSIOp(a, self.e.ci(n)))

    def and_(self, a: SSAValue, mask: int) -> SSAValue:
        return self.e._op(arith.AndIOp(a, self.e.ci(mask)))

    def log2(self, ax: SSAValue) -> tuple[SSAValue, SSAValue]:
        """``(t1, t2)``, ``t1 + t2 = log2(ax)`` for finite ``ax > 0``."""
        e = self.e
        tiny = e.cmp("olt", ax, e.c(2.0**-1022))
        ax = e.select(tiny, e.mul(ax, e.c(2.0**53)), ax)
        n0 = e.select(tiny, e.ci(-53), e.ci(0))
        bits = e.bits(ax)
        hi = self.shr(bits, 32)  # ax > 0: the high word, sign bit clear
        j = self.and_(hi, 0xFFFFF)
        n = e.iadd(n0, e.isub(self.shr(hi, 20), e.ci(0x3FF)))
        # the interval: m around 1 (k = 0) or 1.5 (k = 1), or around 2 (k = 0, n + 1)
        above = e._op(arith.CmpiOp(j, e.ci(0xBB67A), "sge"))
        k1 = e._op(
            arith.AndIOp(
                e._op(arith.CmpiOp(j, e.ci(0x3988E), "sgt")),
                e._op(arith.CmpiOp(j, e.ci(0xBB67A), "slt")),
            )
        )
        ix = e._op(arith.OrIOp(j, e.ci(0x3FF00000)))
        ix = e.select(above, e.isub(ix, e.ci(0x00100000)), ix)
        n = e.select(above, e.iadd(n, e.ci(1)), n)
        m = e.from_bits(e._op(arith.OrIOp(self.shl(ix, 32), self.and_(bits, _LOW_WORD))))
        b = e.select(k1, e.c(1.5), e.c(1.0))
        dp_h = e.select(k1, e.c(_DP_H), e.c(0.0))
        dp_l = e.select(k1, e.c(_DP_L), e.c(0.0))
        # s = s_h + s_l = (m - b) / (m + b)
        u = e.sub(m, b)
        v = e.div(e.c(1.0), e.add(m, b))
        ss = e.mul(u, v)
        s_h = self.high(ss)
        k_bits = e.select(k1, e.ci(1 << 18), e.ci(0))
        t_h_word = e.iadd(
            e.iadd(e._op(arith.OrIOp(self.shr(ix, 1), e.ci(0x20000000))), e.ci(0x80000)), k_bits
        )
        t_h = e.from_bits(self.shl(t_h_word, 32))  # m + b, high part
        t_l = e.sub(m, e.sub(t_h, b))
        s_l = e.mul(v, e.sub(e.sub(u, e.mul(s_h, t_h)), e.mul(s_h, t_l)))
        # log(m / b) = 2/3 s (3 + s^2 + r)
        s2 = e.mul(ss, ss)
        r = e.mul(e.mul(s2, s2), e.poly(s2, _L))
        r = e.add(r, e.mul(s_l, e.add(s_h, ss)))
        s2 = e.mul(s_h, s_h)
        t_h = self.high(e.add(e.add(e.c(3.0), s2), r))
        t_l = e.sub(r, e.sub(e.sub(t_h, e.c(3.0)), s2))
        u = e.mul(s_h, t_h)
        v = e.add(e.mul(s_l, t_h), e.mul(t_l, ss))
        p_h = self.high(e.add(u, v))
        p_l = e.sub(v, e.sub(p_h, u))
        z_h = e.mul(e.c(_CP_H), p_h)
        z_l = e.add(e.add(e.mul(e.c(_CP_L), p_h), e.mul(p_l, e.c(_CP))), dp_l)
        t = e.to_float(n)
        t1 = self.high(e.add(e.add(e.add(z_h, z_l), dp_h), t))
        t2 = e.sub(z_l, e.sub(e.sub(e.sub(t1, t), dp_h), z_h))
        return t1, t2

    def exp2(self, p_h: SSAValue, p_l: SSAValue) -> SSAValue:
        """``2^(p_h + p_l)`` for ``-1075 <= p_h + p_l <= 1024``."""
        e = self.e
        z = e.add(p_l, p_h)
        shifter = e.c(1.5 * 2.0**52)
        rounded = e.add(z, shifter)
        n = e.isub(e.bits(rounded), e.bits(shifter))
        p_h = e.sub(p_h, e.sub(rounded, shifter))
        t = self.high(e.add(p_l, p_h))
        u = e.mul(t, e.c(_LG2_H))
        v = e.add(e.mul(e.sub(p_l, e.sub(t, p_h)), e.c(_LG2)), e.mul(t, e.c(_LG2_L)))
        z = e.add(u, v)
        w = e.sub(v, e.sub(z, u))
        t = e.mul(z, z)
        t1 = e.sub(z, e.mul(t, e.poly(t, _P)))
        r = e.sub(e.div(e.mul(z, t1), e.sub(t1, e.c(2.0))), e.add(w, e.mul(z, w)))
        z = e.sub(e.c(1.0), e.sub(r, z))
        half = self.shr(n, 1)
        return e.mul(e.mul(z, e.pow2(half)), e.pow2(e.isub(n, half)))

    def power(self, ax: SSAValue, y: SSAValue) -> SSAValue:
        """``ax ** y`` for finite ``ax > 0`` and finite ``y``: steps 1 to 3."""
        e = self.e
        zero = e.c(0.0)
        t1, t2 = self.log2(ax)
        y1 = self.high(y)
        p_l = e.add(e.mul(e.sub(y, y1), t1), e.mul(y, t2))
        p_h = e.mul(y1, t1)
        z = e.add(p_l, p_h)
        overflow = e._op(
            arith.OrIOp(
                e.cmp("ogt", z, e.c(1024.0)),
                e._op(
                    arith.AndIOp(
                        e.cmp("oeq", z, e.c(1024.0)),
                        e.cmp("ogt", e.add(p_l, e.c(_OVT)), e.sub(z, p_h)),
                    )
                ),
            )
        )
        underflow = e._op(
            arith.OrIOp(
                e.cmp("olt", z, e.c(-1075.0)),
                e._op(
                    arith.AndIOp(e.cmp("oeq", z, e.c(-1075.0)), e.cmp("ole", p_l, e.sub(z, p_h)))
                ),
            )
        )
        outside = e._op(arith.OrIOp(e._op(arith.OrIOp(overflow, underflow)), e.cmp("uno", z, z)))
        # outside the range (or nan) the exponential's inputs are replaced, only to stay defined
        result = self.exp2(e.select(outside, zero, p_h), e.select(outside, zero, p_l))
        return e.select(overflow, e.c(float("inf")), e.select(underflow, zero, result))

    def pow(self, x: SSAValue, y: SSAValue, nan_negative: bool, odd_keeps_sign: bool) -> SSAValue:
        """``x ** y`` on f64 values, with C99's special cases; a nan ``x`` to an odd
        integer power keeps its sign where ``odd_keeps_sign``."""
        e = self.e
        ax = e.abs(x)
        inf = e.c(float("inf"))
        zero = e.c(0.0)
        one = e.c(1.0)
        finite_positive = e._op(arith.AndIOp(e.cmp("ogt", ax, zero), e.cmp("olt", ax, inf)))
        positive = e.select(finite_positive, ax, one)
        wide = self.wide
        result = e.exp(e.mul(y, e.log_positive(positive))) if wide else self.power(positive, y)
        # |x| = 0 or inf: 0 or inf by the sign of y and whether |x| is 0
        negative_y = e.cmp("olt", y, zero)
        is_zero = e.cmp("oeq", ax, zero)
        zero_or_inf = e.select(e._op(arith.XOrIOp(negative_y, is_zero)), zero, inf)
        result = e.select(finite_positive, result, zero_or_inf)
        # y = ±inf: 0 or inf by the sign of y and whether |x| < 1
        below_one = e.cmp("olt", ax, one)
        to_inf = e.select(e._op(arith.XOrIOp(negative_y, below_one)), zero, inf)
        abs_y = e.abs(y)
        infinite_y = e.cmp("oeq", abs_y, inf)
        result = e.select(infinite_y, to_inf, result)
        # the sign: negative x to an odd integer power
        floor_y = e._op(math.FloorOp(y))
        integer = e.cmp("oeq", floor_y, y)
        half_y = e.mul(y, e.c(0.5))
        odd = e._op(arith.AndIOp(integer, e.cmp("one", e._op(math.FloorOp(half_y)), half_y)))
        result = e.select(odd, e.copysign(result, x), result)
        # a finite negative x to a finite non-integer power
        finite_y = e.cmp("olt", abs_y, inf)
        not_integer = e.cmp("one", floor_y, y)
        invalid = e._op(
            arith.AndIOp(
                e._op(arith.AndIOp(e.cmp("olt", x, zero), e.cmp("ogt", x, e.c(float("-inf"))))),
                e._op(arith.AndIOp(finite_y, not_integer)),
            )
        )
        result = e.select(invalid, e.c(float("-nan" if nan_negative else "nan")), result)
        # a nan x to a power that is not nan: x's nan, positive for an odd y where
        # NumPy's loop computes x * x there (the C library's); a nan y: x + y, which
        # on x86 is the first nan operand, quieted.  Written as that choice: LLVM may
        # commute an `fadd`, which turned nan ** nan's sign into the other operand's.
        is_nan_x = e.cmp("uno", x, x)
        nan_x = x if odd_keeps_sign else e.select(odd, ax, x)
        result = e.select(is_nan_x, nan_x, result)
        quiet = e.ci(1 << (e.fmt.mantissa - 1))
        first_nan = e.from_bits(e._op(arith.OrIOp(e.bits(e.select(is_nan_x, x, y)), quiet)))
        result = e.select(e.cmp("uno", y, y), first_nan, result)
        # 1 ** anything, (-1) ** ±inf, anything ** ±0
        minus_one_to_inf = e._op(arith.AndIOp(e.cmp("oeq", x, e.c(-1.0)), infinite_y))
        result = e.select(minus_one_to_inf, one, result)
        result = e.select(e.cmp("oeq", x, one), one, result)
        return e.select(e.cmp("oeq", y, zero), one, result)


class ApproximatePow(RewritePattern):
    """``math.powf`` on f32 or f64 -> the f64 expansions of this module's docstring."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.PowFOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        if not isinstance(t, Float32Type | Float64Type):
            return
        p = _Pow(rewriter, wide=isinstance(t, Float32Type))
        nan_type = numpy_type(op)  # f16 widened to f32 keeps f16's nans
        nan_negative = created_nan_negative("pow", nan_type)
        keeps = odd_power_keeps_nan_sign(nan_type)
        if isinstance(t, Float32Type):
            x = p.e._op(arith.ExtFOp(op.lhs, f64))
            y = p.e._op(arith.ExtFOp(op.rhs, f64))
            result = p.e._op(arith.TruncFOp(p.pow(x, y, nan_negative, keeps), t))
        else:
            result = p.pow(op.lhs, op.rhs, nan_negative, keeps)
        # (on the operands as given: widening f32 to f64 quiets a signaling nan)
        checked = [
            v for v, nan in zip(op.operands, signaling_pow_nans(nan_type), strict=True) if nan
        ]
        if checked:  # (NumPy's loop here is the C library's: x + y)
            e = p.e
            total = e._op(arith.AddfOp(op.lhs, op.rhs))
            for operand in checked:
                signaling = is_signaling_nan(e._op, operand, t.bitwidth, _Format(t).mantissa)
                result = e.select(signaling, total, result)
        rewriter.replace(op, [], [result])


POW_PATTERNS: tuple[RewritePattern, ...] = (ApproximatePow(),)
"""``pow`` (part of the pass's ``approximate-math`` option)."""
