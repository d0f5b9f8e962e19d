"""Math functions as branch-free ``arith`` code that LLVM vectorizes.

A call of ``expf`` in a loop stops LLVM's loop vectorizer (there is no vector
math library to call); the same function written as ``arith`` ops with
``select`` for the special cases vectorizes like any other arithmetic.  This
module rewrites, on f32 and f64 (f16 is widened to f32 first by
:mod:`tdsl.backend.llvm.f16`):

- ``math.exp``: ``x = n ln2 + r`` with ``n = rint(x / ln2)`` (a shifter constant
  rounds, without a float-to-int conversion), ``|r| <= ln2/2`` reduced in two
  steps (Cody-Waite, ``ln2 = hi + lo``), ``exp(r) = 1 + r + r^2 P(r)``, then a
  multiplication by ``2^n`` built in the exponent bits, split into two factors
  so that results in the subnormal range are rounded once, right;
- ``math.expm1``: the same reduction, ``expm1(x) = 2 (2^(n-1) e + (2^(n-1) - 1/2))``
  with ``e = expm1(r)``;
- ``math.log``: ``x = 2^k m`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` from the bits
  (subnormals scaled first), then fdlibm's form ``log(m) = f - (hfsq - s (hfsq + R))``
  with ``f = m - 1``, ``s = f / (2 + f)``, ``R = z Q(z)``, ``z = s^2``;
- ``math.log1p``: ``log(u) + (x - (u - 1)) / u`` with ``u = 1 + x`` (the quotient
  restores what rounding ``u`` lost);
- ``math.tanh``: ``x + x z T(z)`` (``z = x^2``) for ``|x| < 0.625``, else
  ``sign(x) e / (e + 2)`` with ``e = expm1(2 |x|)``, ``|x|`` clamped where ``tanh``
  rounds to 1;
- ``math.sinh``: ``x + x z S(z)`` for ``|x| < 1``, else ``sign(x) (e + e / (e + 1)) / 2``
  with ``e = expm1(|x|)``, or ``exp(|x|) / 2`` (without intermediate overflow) for
  large ``|x|``;
- ``math.cosh``: ``(E + 1/E) / 2`` with ``E = exp(|x|)``, or ``exp(|x|) / 2``.

The coefficients of ``P`` and ``Q`` come from ``benchmarks/fit_polynomials.py``.
Special values are NumPy's: nan in gives nan, ``exp(-inf) = 0``,
``exp(+inf) = inf``, overflow gives inf, underflow 0 or a subnormal,
``log(0) = -inf``, ``log(x < 0) = -nan`` (NumPy's sign), ``log1p(-1) = -inf``, and ``-0`` maps to
``-0`` for the odd functions (``expm1``, ``log1p``, ``tanh``, ``sinh``), as do
subnormal and tiny ``x`` (``expm1(x) = x`` below ``2^-(p+1)``, ``p`` the precision).
Measured maximum errors against float64 / float128-free references are in
``python benchmarks/native_loops.py accuracy`` and the pass's documentation.

The new ops carry only the ``contract`` fast-math flag: LLVM may fuse
multiply-adds (which only makes the evaluation more accurate) but must not
reassociate, which would undo the range reduction.

``tdslmath.nextafter`` is rewritten here too, exactly, for every float type
(f16 included, where widening would be wrong): integer steps on the bits.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import cast

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    AnyFloat,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    i32,
    i64,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from tdsl.backend.llvm.numpy_nans import created_nan_negative, numpy_type
from tdsl.dialects import tdslmath
from tdsl.errors import internal_error

_LN2 = Fraction(Decimal("0.69314718055994530941723212145817656807550013436026"))
_LOG2E = Fraction(Decimal("1.44269504088896340735992468100189213742664595415299"))

# expm1(r) ~ r + r**2 * P(r) on |r| <= ln(2)/2 (benchmarks/fit_polynomials.py)
_EXPM1_P = {
    32: (
        0.5,
        0.1666666567325592,
        0.04166634380817413,
        0.008333380334079266,
        0.0013942025834694505,
        0.00019851791148539633,
    ),
    64: (
        0.5,
        0.16666666666666677,
        0.041666666666666415,
        0.008333333333320552,
        0.0013888888888998494,
        0.00019841269889089933,
        2.480158711402246e-05,
        2.7557241007872632e-06,
        2.7557444458059296e-07,
        2.5110223060946826e-08,
        2.086448370099082e-09,
    ),
}

# (2 atanh(s) - 2 s) / s ~ z * Q(z), z = s**2 (benchmarks/fit_polynomials.py)
_LOG_Q = {
    32: (0.6666666865348816, 0.4000012278556824, 0.2855069637298584, 0.2333366721868515),
    64: (
        0.666666666666667,
        0.3999999999989777,
        0.2857142862673362,
        0.22222211014813917,
        0.18182897645458224,
        0.1533144445428496,
        0.14619812423951914,
    ),
}


# tanh(x) ~ x + x z T(z) on |x| <= 0.625, z = x**2 (benchmarks/fit_polynomials.py)
_TANH_T = {
    32: (
        -0.3333333432674408,
        0.13333304226398468,
        -0.05395940691232681,
        0.021769961342215538,
        -0.008346980437636375,
        0.0022958412300795317,
    ),
    64: (
        -0.3333333333333333,
        0.1333333333333305,
        -0.05396825396790577,
        0.02186948851935735,
        -0.00886323511036136,
        0.003592121835933438,
        -0.0014557760415549023,
        0.000589663660532036,
        -0.00023759985285443604,
        9.258867998788127e-05,
        -3.121994989253582e-05,
        6.493921966644326e-06,
    ),
}
_TANH_SMALL = 0.625

# sinh(x) ~ x + x z S(z) on |x| <= 1, z = x**2 (benchmarks/fit_polynomials.py)
_SINH_S = {
    32: (0.1666666716337204, 0.008333339355885983, 0.00019838100706692785, 2.806290467560757e-06),
    64: (
        0.16666666666666666,
        0.008333333333333299,
        0.0001984126984132422,
        2.755731919137273e-06,
        2.5052117697660347e-08,
        1.605767946801234e-10,
        7.746183786252816e-13,
    ),
}
_SINH_SMALL = 1.0


MAX_ULP_ERROR: dict[str, dict[str, float]] = {
    "exp": {"f32": 1.0, "f64": 1.0},
    "expm1": {"f32": 2.0, "f64": 2.0},
    "log": {"f32": 1.0, "f64": 1.0},
    "log1p": {"f32": 2.0, "f64": 2.0},
    "tanh": {"f32": 2.0, "f64": 2.0},
    "sinh": {"f32": 2.0, "f64": 2.0},
    "cosh": {"f32": 2.0, "f64": 2.0},
    "erf": {"f32": 1.0, "f64": 1.0},
    "sin": {"f32": 1.0, "f64": 1.0},
    "cos": {"f32": 1.0, "f64": 1.0},
    "pow": {"f32": 0.501, "f64": 1.0},
}
"""The error bound, in ulp of the result type, that the tests hold each approximation
to (against NumPy in float64 for f32, in long double for f64; ``erf``, which NumPy
lacks, against a long double series, and it is :mod:`tdsl.backend.llvm.math_erf`'s;
``sin``/``cos`` are :mod:`tdsl.backend.llvm.math_trig`'s, ``pow``
:mod:`tdsl.backend.llvm.math_pow`'s).  Measured maxima, from
``python benchmarks/native_loops.py accuracy``, ``python benchmarks/native_trig.py
accuracy`` and ``python benchmarks/native_pow.py accuracy``, are lower; see the pass
documentation."""


class _Format:
    """The constants of one binary float format."""

    def __init__(self, t: Float32Type | Float64Type) -> None:
        self.type = t
        self.width = t.bitwidth
        self.int_type = i32 if self.width == 32 else i64
        self.mantissa = 23 if self.width == 32 else 52
        self.bias = 127 if self.width == 32 else 1023
        self.hi_bits = 16 if self.width == 32 else 32
        self.ln2_hi = float(Fraction(int(_LN2 * 2**self.hi_bits), 2**self.hi_bits))
        self.ln2_lo = self.round(float(_LN2 - Fraction(self.ln2_hi)))
        self.log2e = self.round(float(_LOG2E))
        self.shifter = 1.5 * 2.0**self.mantissa
        # exp: below this the result rounds to 0, above it overflows (n stays in range)
        self.exp_lo, self.exp_hi = (-104.0, 89.0) if self.width == 32 else (-746.0, 710.0)
        # expm1: below this it rounds to -1
        self.expm1_lo = -20.0 if self.width == 32 else -40.0
        # tanh rounds to +-1 above this; sinh/cosh lose exp(-|x|) above this
        self.tanh_hi = 9.125 if self.width == 32 else 19.125
        self.hyp_hi = 9.0 if self.width == 32 else 19.0
        self.min_normal = 2.0**-126 if self.width == 32 else 2.0**-1022
        self.sqrt_half_bits = 0x3F3504F3 if self.width == 32 else 0x3FE6A09E667F3BCD

    def round(self, value: float) -> float:
        """``value`` rounded to this format."""
        if self.width == 32:
            return struct.unpack("<f", struct.pack("<f", value))[0]
        return value


class _Emitter:
    """Inserts scalar ``arith``/``math`` ops before the matched op."""

    def __init__(self, rewriter: PatternRewriter, fmt: _Format) -> None:
        self.rewriter = rewriter
        self.fmt = fmt
        self.flags = arith.FastMathFlagsAttr((FastMathFlag.ALLOW_CONTRACT,))

    def _op(self, op: Operation) -> SSAValue:
        self.rewriter.insert(op)
        return op.results[0]

    # constants
    def c(self, value: float) -> SSAValue:
        return self._op(arith.ConstantOp(FloatAttr(self.fmt.round(value), self.fmt.type)))

    def ci(self, value: int) -> SSAValue:
        return self._op(arith.ConstantOp(IntegerAttr(value, self.fmt.int_type)))

    # float arithmetic (contract only)
    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.AddfOp(a, b, self.flags))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.SubfOp(a, b, self.flags))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.MulfOp(a, b, self.flags))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.DivfOp(a, b, self.flags))

    def abs(self, a: SSAValue) -> SSAValue:
        return self._op(math.AbsFOp(a))

    def copysign(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(math.CopySignOp(a, b))

    def cmp(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.CmpfOp(a, b, predicate))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.SelectOp(cond, a, b))

    def poly(self, x: SSAValue, coefficients: Sequence[float]) -> SSAValue:
        """``c0 + c1 x + ... + cn x^n`` by Horner's rule."""
        acc = self.c(coefficients[-1])
        for coefficient in reversed(coefficients[:-1]):
            acc = self.add(self.mul(acc, x), self.c(coefficient))
        return acc

    def clamp(self, x: SSAValue, lo: float, hi: float) -> SSAValue:
        """``x`` limited to ``[lo, hi]``; nan stays nan (ordered compares are false)."""
        x = self.select(self.cmp("ogt", x, self.c(hi)), self.c(hi), x)
        return self.select(self.cmp("olt", x, self.c(lo)), self.c(lo), x)

    # bits
    def bits(self, x: SSAValue) -> SSAValue:
        return self._op(arith.BitcastOp(x, self.fmt.int_type))

    def from_bits(self, i: SSAValue) -> SSAValue:
        return self._op(arith.BitcastOp(i, self.fmt.type))

    def iadd(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.AddiOp(a, b))

    def isub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.SubiOp(a, b))

    def pow2(self, n: SSAValue) -> SSAValue:
        """``2^n`` for an integer ``n`` in the normal exponent range."""
        biased = self.iadd(n, self.ci(self.fmt.bias))
        return self.from_bits(self._op(arith.ShLIOp(biased, self.ci(self.fmt.mantissa))))

    def to_float(self, i: SSAValue) -> SSAValue:
        return self._op(arith.SIToFPOp(i, self.fmt.type))

    # building blocks
    def reduce(self, x: SSAValue) -> tuple[SSAValue, SSAValue]:
        """``(n, r)`` with ``x = n ln2 + r``, ``n`` an integer (as an int value) and
        ``|r| <= ln2/2`` (slightly more after rounding)."""
        fmt = self.fmt
        shifter = self.c(fmt.shifter)
        z = self.add(self.mul(x, self.c(fmt.log2e)), shifter)
        n_float = self.sub(z, shifter)
        n = self.isub(self.bits(z), self.bits(shifter))
        r = self.sub(x, self.mul(n_float, self.c(fmt.ln2_hi)))
        r = self.sub(r, self.mul(n_float, self.c(fmt.ln2_lo)))
        return n, r

    def expm1_reduced(self, r: SSAValue) -> SSAValue:
        """``expm1(r)`` for ``|r| <= ln2/2``: ``r + r^2 P(r)``."""
        return self.add(r, self.mul(self.mul(r, r), self.poly(r, _EXPM1_P[self.fmt.width])))

    def exp(self, x: SSAValue, scale: int = 0) -> SSAValue:
        """``exp(x) * 2^scale`` (scale -1 or 0) for any ``x``, nan included."""
        fmt = self.fmt
        # Below exp_lo the result is 0.  Those lanes compute exp(0) instead and are
        # zeroed at the end: computed at exp_lo, their last product underflows, and
        # an underflowing multiplication takes a microcode assist on x86 (a masked
        # attention row, half of whose scores are -1e10, ran its exp 2x slower).
        hi = fmt.exp_hi - scale
        under = self.cmp("olt", x, self.c(fmt.exp_lo))
        capped = self.select(self.cmp("ogt", x, self.c(hi)), self.c(hi), x)
        clamped = self.select(under, self.c(0.0), capped)  # (nan stays nan: ordered compares)
        n, r = self.reduce(clamped)
        if scale:
            n = self.iadd(n, self.ci(scale))
        p = self.add(self.c(1.0), self.expm1_reduced(r))
        half = self._op(arith.ShRSIOp(n, self.ci(1)))
        rest = self.isub(n, half)
        result = self.mul(self.mul(p, self.pow2(half)), self.pow2(rest))
        return self.keep_nan(x, self.select(under, self.c(0.0), result))

    def expm1(self, x: SSAValue) -> SSAValue:
        """``expm1(x)`` for ``x`` not nan; -0 gives +0 (callers fix the sign)."""
        fmt = self.fmt
        n, r = self.reduce(self.clamp(x, fmt.expm1_lo, fmt.exp_hi))
        # expm1(r) = r + q; summing h r + (h - 1/2) first is exact for n = 1, where
        # adding a rounded expm1(r) to 1/2 would cancel
        q = self.mul(self.mul(r, r), self.poly(r, _EXPM1_P[fmt.width]))
        h = self.pow2(self.isub(n, self.ci(1)))  # 2^(n-1)
        inner = self.add(self.add(self.mul(h, r), self.sub(h, self.c(0.5))), self.mul(h, q))
        return self.mul(self.c(2.0), inner)

    def odd_series(self, x: SSAValue, coefficients: Sequence[float]) -> SSAValue:
        """``x + x z C(z)`` with ``z = x^2`` (``-0`` gives ``+0``: callers fix the sign)."""
        z = self.mul(x, x)
        return self.add(x, self.mul(self.mul(x, z), self.poly(z, coefficients)))

    def log_positive(self, x: SSAValue) -> SSAValue:
        """``log(x)`` for finite ``x > 0`` (subnormals included)."""
        fmt = self.fmt
        tiny = self.cmp("olt", x, self.c(fmt.min_normal))
        scaled = self.mul(x, self.c(2.0**fmt.mantissa))
        x = self.select(tiny, scaled, x)
        k_adjust = self.select(tiny, self.ci(-fmt.mantissa), self.ci(0))
        bits = self.bits(x)
        shifted = self.isub(bits, self.ci(fmt.sqrt_half_bits))
        k = self._op(arith.ShRSIOp(shifted, self.ci(fmt.mantissa)))
        m_bits = self.isub(bits, self._op(arith.ShLIOp(k, self.ci(fmt.mantissa))))
        f = self.sub(self.from_bits(m_bits), self.c(1.0))
        dk = self.to_float(self.iadd(k, k_adjust))
        s = self.div(f, self.add(self.c(2.0), f))
        z = self.mul(s, s)
        big_r = self.mul(z, self.poly(z, _LOG_Q[fmt.width]))
        hfsq = self.mul(self.mul(self.c(0.5), f), f)
        inner = self.add(self.mul(s, self.add(hfsq, big_r)), self.mul(dk, self.c(fmt.ln2_lo)))
        tail = self.sub(self.sub(hfsq, inner), f)
        return self.sub(self.mul(dk, self.c(fmt.ln2_hi)), tail)

    def keep_nan(self, x: SSAValue, result: SSAValue) -> SSAValue:
        """``x`` where it is nan, else ``result``."""
        return self.select(self.cmp("uno", x, x), x, result)

    def keep_tiny(self, x: SSAValue, result: SSAValue) -> SSAValue:
        """``x`` where ``|x| < 2^-(mantissa + 2)`` (±0 and subnormals included), else
        ``result``: there ``expm1(x) = x + x^2/2 + ...`` rounds to ``x``, which the
        range reduction would lose (it computes ``2 (2^-1 x)``, and ``2^-1 x`` of a
        subnormal is rounded: ``expm1(1e-45)`` was 0)."""
        tiny = self.c(2.0 ** -(self.fmt.mantissa + 2))
        return self.select(self.cmp("olt", self.abs(x), tiny), x, result)

    def keep_zero(self, x: SSAValue, result: SSAValue) -> SSAValue:
        """``x`` where it is ±0 (keeps the sign of zero), else ``result``."""
        return self.select(self.cmp("oeq", x, self.c(0.0)), x, result)

    def log_specials(
        self, x: SSAValue, result: SSAValue, zero_at: float, nan_type: str
    ) -> SSAValue:
        """NumPy's ``log`` special cases around ``result`` (``log1p`` with ``zero_at=-1``),
        its nan ``nan_type``'s (:func:`~tdsl.backend.llvm.numpy_nans.numpy_type`)."""
        at = self.c(zero_at)
        # NumPy's nan for an argument below the domain: the sign its loop gives here
        negative = created_nan_negative("log" if zero_at == 0.0 else "log1p", nan_type)
        nan = self.c(float("-nan" if negative else "nan"))
        result = self.select(self.cmp("olt", x, at), nan, result)
        result = self.select(self.cmp("oeq", x, at), self.c(float("-inf")), result)
        inf = self.c(float("inf"))
        result = self.select(self.cmp("oeq", x, inf), inf, result)
        return self.keep_nan(x, result)


def _expand(e: _Emitter, op: Operation, x: SSAValue) -> SSAValue | None:
    fmt = e.fmt
    match op:
        case math.ExpOp():
            return e.exp(x)
        case math.ExpM1Op():
            return e.keep_nan(x, e.keep_tiny(x, e.expm1(x)))
        case math.LogOp():
            return e.log_specials(x, e.log_positive(x), 0.0, numpy_type(op))
        case math.Log1pOp():
            u = e.add(e.c(1.0), x)
            correction = e.div(e.sub(x, e.sub(u, e.c(1.0))), u)
            result = e.add(e.log_positive(u), correction)
            return e.keep_zero(x, e.log_specials(x, result, -1.0, numpy_type(op)))
        case math.TanhOp():
            a = e.abs(x)
            clamped = e.clamp(a, 0.0, fmt.tanh_hi)
            em = e.expm1(e.add(clamped, clamped))
            large = e.copysign(e.div(em, e.add(em, e.c(2.0))), x)
            small = e.odd_series(x, _TANH_T[fmt.width])
            result = e.select(e.cmp("olt", a, e.c(_TANH_SMALL)), small, large)
            return e.keep_nan(x, e.keep_zero(x, result))
        case math.SinhOp():
            a = e.abs(x)
            em = e.expm1(e.clamp(a, 0.0, fmt.hyp_hi))
            medium = e.mul(e.c(0.5), e.add(em, e.div(em, e.add(em, e.c(1.0)))))
            big = e.exp(a, scale=-1)
            picked = e.copysign(e.select(e.cmp("olt", a, e.c(fmt.hyp_hi)), medium, big), x)
            small = e.odd_series(x, _SINH_S[fmt.width])
            result = e.select(e.cmp("olt", a, e.c(_SINH_SMALL)), small, picked)
            return e.keep_zero(x, result)
        case math.CoshOp():
            a = e.abs(x)
            ea = e.exp(e.clamp(a, 0.0, fmt.hyp_hi))
            small = e.add(e.mul(e.c(0.5), ea), e.div(e.c(0.5), ea))
            big = e.exp(a, scale=-1)
            return e.select(e.cmp("olt", a, e.c(fmt.hyp_hi)), small, big)
        case _:
            return None


class ApproximateMath(RewritePattern):
    """``math.exp``/``expm1``/``log``/``log1p``/``tanh``/``sinh``/``cosh`` on f32 or
    f64 -> the branch-free ``arith`` code described in this module's docstring."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(
            op,
            math.ExpOp
            | math.ExpM1Op
            | math.LogOp
            | math.Log1pOp
            | math.TanhOp
            | math.SinhOp
            | math.CoshOp,
        ):
            return
        t = op.result.type
        if not isinstance(t, Float32Type | Float64Type):
            return
        result = _expand(_Emitter(rewriter, _Format(t)), op, op.operand)
        if result is not None:
            rewriter.replace(op, [], [result])


def _int_type(t: Attribute) -> IntegerType:
    if not isinstance(t, Float16Type | Float32Type | Float64Type):
        raise internal_error(f"convert-to-llvm: the bits of {t}, not a float type")
    return IntegerType(t.bitwidth)


class ExpandNextAfter(RewritePattern):
    """``tdslmath.nextafter(x, y)`` -> integer steps on the bits of ``x`` (NumPy's
    rules: nan when either is nan (f16: its positive quiet nan), the smallest subnormal
    with the sign of ``y`` from zero, and for ``x == y`` C's ``y``, except NumPy's f16
    version's ``x``), in the operands' own type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tdslmath.NextAfterOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        it = _int_type(t)

        def ins(new: Operation) -> SSAValue:
            rewriter.insert(new)
            return new.results[0]

        def ci(value: int) -> SSAValue:
            return ins(arith.ConstantOp(IntegerAttr(value, it)))

        x, y = op.lhs, op.rhs
        zero = ins(arith.ConstantOp(FloatAttr(0.0, cast(AnyFloat, t))))
        bx = ins(arith.BitcastOp(x, it))
        by = ins(arith.BitcastOp(y, it))
        towards_larger = ins(
            arith.CmpiOp(ins(arith.CmpfOp(x, y, "olt")), ins(arith.CmpfOp(x, zero, "ogt")), "eq")
        )
        step = ins(arith.SelectOp(towards_larger, ci(1), ci(-1)))
        moved = ins(arith.BitcastOp(ins(arith.AddiOp(bx, step)), t))
        sign = ins(arith.AndIOp(by, ci(-(1 << (it.width.data - 1)))))
        tiniest = ins(arith.BitcastOp(ins(arith.OrIOp(sign, ci(1))), t))
        result = ins(arith.SelectOp(ins(arith.CmpfOp(x, zero, "oeq")), tiniest, moved))
        # C (NumPy's f32/f64) returns y when x == y, NumPy's own f16 version returns x:
        # they differ for nextafter(0, -0)
        equal = x if isinstance(t, Float16Type) else y
        result = ins(arith.SelectOp(ins(arith.CmpfOp(x, y, "oeq")), equal, result))
        # (C propagates the nan, x + y; NumPy's f16 version returns its positive quiet
        # nan, 0x7e00, whatever the operands': copysign(2, nextafter(0, 0 / 0)) is 2,
        # where x86's 0 / 0 is a negative nan; found by the property tests in CI)
        f16 = isinstance(t, Float16Type)
        nan = ins(arith.BitcastOp(ci(0x7E00), t)) if f16 else ins(arith.AddfOp(x, y))
        result = ins(arith.SelectOp(ins(arith.CmpfOp(x, y, "uno")), nan, result))
        rewriter.replace(op, [], [result])


APPROXIMATION_PATTERNS: tuple[RewritePattern, ...] = (ApproximateMath(),)
"""The polynomial approximations (the pass's ``approximate-math`` option)."""

EXACT_EXPANSION_PATTERNS: tuple[RewritePattern, ...] = (ExpandNextAfter(),)
"""Exact rewrites the lowering always applies."""
