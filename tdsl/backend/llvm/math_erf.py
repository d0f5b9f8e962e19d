"""``math.erf`` as branch-free ``arith`` code that LLVM vectorizes.

Like :mod:`tdsl.backend.llvm.math_approx` (whose emitter it uses), on f32 and f64
(f16 is widened to f32 first by :mod:`tdsl.backend.llvm.f16`); the C library's
``erff``/``erf``, called otherwise, may write ``errno``, which keeps a loop from
vectorizing at all.  Both types are computed in f64 (f32 rounded once at the end),
each interval's polynomial for every element, ``select`` picking by ``|x|``:

- ``|x| < 1.25`` (f32) or ``0.84375`` (f64, fdlibm's first interval):
  ``erf(x) = x + x E(x^2)``, with ``E(0) = 2/sqrt(pi) - 1`` (the rounding errors of
  ``x E`` count an eighth); it keeps the sign of zero;
- f64, ``0.84375 <= |x| < 1.25``: ``erf(x) = sign(x) (erx + D(|x| - 1))`` with fdlibm's
  ``erx``, ``erf(1)`` to 24 bits (so the polynomial only adds a correction);
- above: ``erf(x) = sign(x) (1 - exp(L(t)))`` with ``t = |x|`` clamped to
  ``[1.25, T]`` and ``L(t) ~ log(erfc(t))``: from 1.25 on, ``erfc < 0.08``, and the
  rounding errors of ``L`` and ``exp`` count that much in ``erf``.  ``T`` (4 for f32,
  6 for f64) is past the point where ``erf`` rounds to 1, so ``±inf`` gives ``±1``.
  The fit weights ``L``'s error by ``erfc(t) / erf(t)``, the relative error it makes
  in ``erf``.

The coefficients come from ``benchmarks/fit_polynomials.py``.  nan gives nan.
Measured maximum errors (``python benchmarks/native_loops.py accuracy --only erf``,
against a long double reference, over every 61st float32 bit pattern of each sign,
f64 with random low bits, and 10^6 random inputs): 0.501 ulp for f32, 0.938 ulp for
f64; the tests hold both to 1 ulp (:data:`tdsl.backend.llvm.math_approx.MAX_ULP_ERROR`).
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import Float32Type, Float64Type, f64
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from tdsl.backend.llvm.math_approx import _Emitter, _Format
from tdsl.scalar_numpy import ERF_D, ERF_E, ERF_L, ERX

# benchmarks/fit_polynomials.py: erf(x) ~ x + x E(x**2) for small |x|, float32 (the
# float64 polynomials, which the numpy target's ``tdsl_erf`` evaluates too, are
# tdsl.scalar_numpy's ERF_E, ERF_D and ERF_L)
_ERF_E_F32 = (
    0.1283791670508937,
    -0.3761263845914086,
    0.11283784299137306,
    -0.02686569433539442,
    0.00522242003465158,
    -0.0008519375996635695,
    0.0001173395445644403,
    -1.2785143520215854e-05,
    8.250199359727119e-07,
)
# log(erfc(t)) ~ L(t) on [1.25, T], float32
_ERF_L_F32 = (
    0.0001243247292687986,
    -1.1293252584008258,
    -0.6336449148143387,
    -0.1080279857025789,
    0.024996159084841447,
    -0.004136541238236672,
    0.0004294122577484119,
    -2.080575033262736e-05,
)


def _erf(e: _Emitter, x: SSAValue, f32: bool) -> SSAValue:
    """``erf(x)`` in f64 for an f64 ``x`` (one widened from f32 if ``f32``)."""
    a = e.abs(x)
    bound = 1.25 if f32 else 0.84375
    small = e.add(x, e.mul(x, e.poly(e.mul(x, x), _ERF_E_F32 if f32 else ERF_E)))
    t = e.clamp(a, 1.25, 4.0 if f32 else 6.0)
    large = e.sub(e.c(1.0), e.exp(e.poly(t, _ERF_L_F32 if f32 else ERF_L)))
    if not f32:
        s = e.sub(e.clamp(a, 0.84375, 1.25), e.c(1.0))
        middle = e.add(e.c(ERX), e.poly(s, ERF_D))
        large = e.select(e.cmp("olt", a, e.c(1.25)), middle, large)
    result = e.select(e.cmp("olt", a, e.c(bound)), small, e.copysign(large, x))
    return e.keep_nan(x, result)


class ApproximateErf(RewritePattern):
    """``math.erf`` on f32 or f64 -> the f64 polynomials of this module's docstring."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.ErfOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        if not isinstance(t, Float32Type | Float64Type):
            return
        e = _Emitter(rewriter, _Format(f64))
        if isinstance(t, Float32Type):
            wide = e._op(arith.ExtFOp(op.operand, f64))
            result = e._op(arith.TruncFOp(_erf(e, wide, True), t))
        else:
            result = _erf(e, op.operand, False)
        rewriter.replace(op, [], [result])


ERF_PATTERNS: tuple[RewritePattern, ...] = (ApproximateErf(),)
"""``erf`` (part of the pass's ``approximate-math`` option)."""
