"""The one table from scalar ops to NumPy: what each ``arith``, ``math`` and ``tdslmath``
op of a scalar body computes, as a NumPy function on whole arrays.

An element-wise op states its semantics once, as its scalar body
(:meth:`~tdsl.dialects.structured.StructuredOpInterface.scalar_body`).  Two views
derive from that body through :func:`numpy_function`:

* the interpreter (:func:`tdsl.interpreters.body.evaluate_body`) walks the body
  applying one NumPy function per scalar op to whole arrays;
* the numpy target's default lowering (:mod:`tdsl.backend.numpy.lowerings`)
  emits one call per scalar op, writing through ``out=``.

So every entry is a NumPy ufunc or a function written like one (``f(*args,
out=None)``, using nothing but ``np``): the numpy target copies such a function's
source into the module it generates.  The table sits between the dialects (which
hold no NumPy code) and its two readers, so that neither imports the other:
compiling never loads the interpreter, and the interpreter never loads a target.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, StringAttr
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import InterpretationError

from tdsl.dialects import tdslmath
from tdsl.dialects.structured import numpy_dtype
from tdsl.dialects.structured_bodies import WIDENED_FROM

Array = np.ndarray[Any, Any]
NumpyFunction = Callable[..., Any]
"""A NumPy ufunc, or a function called like one: ``f(*args, out=None)``."""


# -- functions NumPy lacks, written like ufuncs (the numpy target copies their source) --


ERF_E = (
    0.12837916709551256,
    -0.3761263890318337,
    0.11283791670934,
    -0.026866170640546846,
    0.0052239775742711205,
    -0.0008548323681602494,
    0.00012055196468721237,
    -1.4922053392118028e-05,
    1.6400820087321189e-06,
    -1.570913524959895e-07,
    1.0711675814174427e-08,
)
"""erf(x) ~ x + x E(x**2) for small |x| (float64; ``benchmarks/fit_polynomials.py``)."""
ERF_D = (
    -0.0023621185607526603,
    0.4151074974205947,
    -0.4151074974205935,
    0.13836916580686356,
    0.0691845829029427,
    -0.06918458290232084,
    0.0046123056003863645,
    0.015154717906685258,
    -0.004777035632313933,
    -0.001885165237781414,
    0.0012264257389866969,
    8.460875157580547e-05,
    -0.0002007111371618851,
    3.168611221181299e-05,
)
"""erf(t) ~ ERX + D(t - 1) on [0.84375, 1.25] (float64)."""
ERF_L = (
    -2.106986800364602e-06,
    -1.1283603310503505,
    -0.6366986201014744,
    -0.10256743439167317,
    0.018757134367740035,
    0.0007041537885697267,
    -0.0021972777443466317,
    0.0009801871316181038,
    -0.00025781092013937927,
    3.661346576388165e-05,
    1.98242248536723e-06,
    -2.6647261486873936e-06,
    7.93438328075602e-07,
    -1.45194365797748e-07,
    1.7974153749313203e-08,
    -1.480981101215002e-09,
    7.389619267119832e-11,
    -1.6972286869897207e-12,
)
"""log(erfc(t)) ~ L(t) on [1.25, 6] (float64)."""
ERX = 0.845062911510467529297
"""erf(1), rounded as fdlibm's ``erx``: the middle range's constant term."""


def tdsl_erf(x: "np.ndarray", out: "np.ndarray | None" = None) -> "np.ndarray":  # noqa: UP037
    """The error function (NumPy has none), computed in float64 as the native target
    computes it (``tdsl.backend.llvm.math_erf``'s f64 polynomials, both from
    :data:`ERF_E`, :data:`ERF_D`, :data:`ERF_L` and :data:`ERX`, which the numpy
    target's program defines before this function, :data:`HELPER_CONSTANTS`): ``x + x E(x^2)`` below 0.84375, ``erx + D(|x| - 1)`` up to 1.25,
    ``1 - exp(L(|x|))`` above (``|x|`` clamped to 6, where ``erf`` rounds to 1), with
    NumPy's ``exp``: within 1 ulp of ``math.erf`` (the series and continued fraction
    it replaces were 11 ulp off near 2)."""

    def poly(t: "np.ndarray", c: "tuple[float, ...]") -> "np.ndarray":  # noqa: UP037
        acc = np.full_like(t, c[-1])
        for k in reversed(c[:-1]):
            acc = acc * t + k
        return acc

    with np.errstate(all="ignore"):
        v = np.asarray(x, dtype=np.float64)
        a = np.abs(v)
        small = v + v * poly(v * v, ERF_E)
        middle = ERX + poly(np.clip(a, 0.84375, 1.25) - 1.0, ERF_D)
        large = 1.0 - np.exp(poly(np.clip(a, 1.25, 6.0), ERF_L))
        value = np.where(a < 0.84375, small, np.copysign(np.where(a < 1.25, middle, large), v))
        value = np.where(np.isnan(v), v, value)
    if out is None:
        return value
    np.copyto(out, value, casting="same_kind")
    return out


HELPER_CONSTANTS: dict[str, tuple[str, ...]] = {"tdsl_erf": ("ERF_E", "ERF_D", "ERF_L", "ERX")}
"""The module constants of this file that a helper's copied source reads, by the helper's
name: the numpy target's program defines them (as their ``repr``) before the helper."""


def tdsl_select(
    c: "np.ndarray",  # noqa: UP037
    a: "np.ndarray",  # noqa: UP037
    b: "np.ndarray",  # noqa: UP037
    out: "np.ndarray | None" = None,  # noqa: UP037
) -> "np.ndarray":  # noqa: UP037
    """``a`` where ``c`` holds, else ``b`` (``arith.select``); without allocating when
    given ``out`` (which may be ``a`` itself)."""
    if out is None:
        return np.where(c, a, b)
    if np.may_share_memory(out, a):
        np.copyto(out, b, where=np.logical_not(c))
    else:
        np.copyto(out, b)
        np.copyto(out, a, where=c)
    return out


STRIDED_OUT_UNSAFE = ("isinf", "isnan", "signbit")
"""NumPy ufuncs whose loops, in the NumPy 2.4 this was found on (2.4.6, an AVX-512 CPU), leave
most of a boolean ``out`` that is not C-contiguous unwritten (``np.isinf(x, out=o[:, 2])``
wrote 3 of 17 elements, contiguous input or not; the other ufuncs, ``isfinite`` among
them, write every one).  The numpy target calls them through :func:`tdsl_strided_safe`."""


def tdsl_strided_safe(
    fn: "np.ufunc",  # noqa: UP037
    x: "np.ndarray",  # noqa: UP037
    out: "np.ndarray | None" = None,  # noqa: UP037
) -> "np.ndarray":  # noqa: UP037
    """``fn(x, out=out)`` (a ufunc of :data:`STRIDED_OUT_UNSAFE`), into a non-contiguous
    ``out`` through contiguous blocks of at most 8192 elements (NumPy's own buffer size:
    no more memory than its casts take): blocks of whole rows along the first axis, or
    each row on its own where one row holds more."""
    if out is None or out.flags.c_contiguous:
        return fn(x, out=out)
    x = np.broadcast_to(x, out.shape)
    block = 8192
    if out.size <= block:
        np.copyto(out, fn(x))
        return out
    rows = block // out[0].size  # (out[0] of a 1-d out: one element)
    if rows == 0:  # a row holds more than a block
        for i in range(out.shape[0]):
            tdsl_strided_safe(fn, x[i], out[i])
    else:
        for i in range(0, out.shape[0], rows):
            np.copyto(out[i : i + rows], fn(x[i : i + rows]))
    return out


def tdsl_convert(x: "np.ndarray", out: "np.ndarray | None" = None) -> "np.ndarray":  # noqa: UP037
    """``x`` converted to ``out``'s type (``arith.extf``/``truncf``/``uitofp``: one rounding)."""
    if out is None:
        return x
    np.copyto(out, x, casting="unsafe")
    return out


def tdsl_divsi(
    a: "np.ndarray",  # noqa: UP037
    b: "np.ndarray",  # noqa: UP037
    out: "np.ndarray | None" = None,  # noqa: UP037
) -> "np.ndarray":  # noqa: UP037
    """``a / b`` rounded towards zero (``arith.divsi``, C's ``/``): NumPy's ``//`` moved up
    by one where the remainder is nonzero and the signs differ."""
    q = np.floor_divide(a, b)
    up = (np.fmod(a, b) != 0) & ((a < 0) != (b < 0))
    return np.add(q, up.astype(q.dtype), out=out)


def tdsl_ult(
    a: "np.ndarray",  # noqa: UP037
    b: "np.ndarray",  # noqa: UP037
    out: "np.ndarray | None" = None,  # noqa: UP037
) -> "np.ndarray":  # noqa: UP037
    """``a < b`` with both read as unsigned (``arith.cmpi ult``)."""
    a, b = np.asarray(a), np.asarray(b)
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    return np.less(a.astype(unsigned), b.astype(unsigned), out=out)


def tdsl_ule(
    a: "np.ndarray",  # noqa: UP037
    b: "np.ndarray",  # noqa: UP037
    out: "np.ndarray | None" = None,  # noqa: UP037
) -> "np.ndarray":  # noqa: UP037
    """``a <= b`` with both read as unsigned (``arith.cmpi ule``)."""
    a, b = np.asarray(a), np.asarray(b)
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    return np.less_equal(a.astype(unsigned), b.astype(unsigned), out=out)


def tdsl_ugt(
    a: "np.ndarray",  # noqa: UP037
    b: "np.ndarray",  # noqa: UP037
    out: "np.ndarray | None" = None,  # noqa: UP037
) -> "np.ndarray":  # noqa: UP037
    """``a > b`` with both read as unsigned (``arith.cmpi ugt``)."""
    a, b = np.asarray(a), np.asarray(b)
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    return np.greater(a.astype(unsigned), b.astype(unsigned), out=out)


def tdsl_uge(
    a: "np.ndarray",  # noqa: UP037
    b: "np.ndarray",  # noqa: UP037
    out: "np.ndarray | None" = None,  # noqa: UP037
) -> "np.ndarray":  # noqa: UP037
    """``a >= b`` with both read as unsigned (``arith.cmpi uge``)."""
    a, b = np.asarray(a), np.asarray(b)
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    return np.greater_equal(a.astype(unsigned), b.astype(unsigned), out=out)


def tdsl_pow(
    x: "np.ndarray",  # noqa: UP037
    y: "np.ndarray",  # noqa: UP037
    out: "np.ndarray | None" = None,  # noqa: UP037
) -> "np.ndarray":  # noqa: UP037
    """``pow`` (``math.powf``): ``np.power``, but for the ``sqrt`` NumPy's float32 and
    float64 loops take for an exponent 0.5 broadcast along the loop (a scalar), whose
    ``-0`` and nan at ``-0`` and ``-inf`` are ``pow``'s ``+0`` and ``inf`` here
    (``tensordsl.power`` takes the ``sqrt`` itself where NumPy does, in its body)."""
    half = np.equal(y, 0.5)
    if not half.any():
        return np.power(x, y, out=out)
    zero, minus_inf = half & np.equal(x, 0.0), half & np.equal(x, -np.inf)  # (out may be x)
    if minus_inf.any():  # (pow(-inf, 0.5) is sqrt(inf), with no invalid-value warning)
        x = np.where(minus_inf, np.inf, x)
    result = np.asarray(np.power(x, y, out=out))  # (of 0-d operands: a NumPy scalar)
    np.copyto(result, 0.0, where=zero)
    return result


def tdsl_power_f16(
    x: "np.ndarray",  # noqa: UP037
    y: "np.ndarray",  # noqa: UP037
    out: "np.ndarray | None" = None,  # noqa: UP037
) -> "np.ndarray":  # noqa: UP037
    """``np.power`` of float16 values widened to float32 (which keeps a signaling nan's
    bits), as NumPy's float16 loop gives it, which calls the C library's ``powf``:
    ``x + y`` (nan) where an operand is a signaling nan (float32's own loop gives
    ``power(sNaN, 0) = 1``), and ``pow``'s ``+0`` and ``inf`` for ``-0`` and ``-inf`` to
    the power 0.5 (float32's loop takes ``sqrt`` for a scalar exponent 0.5: ``-0`` and
    nan)."""
    bx = np.asarray(x, np.float32).view(np.uint32)
    by = np.asarray(y, np.float32).view(np.uint32)
    signaling = (((bx & 0x7FC00000) == 0x7F800000) & ((bx & 0x3FFFFF) != 0)) | (
        ((by & 0x7FC00000) == 0x7F800000) & ((by & 0x3FFFFF) != 0)
    )  # (not |=: the operands broadcast)
    quiet = np.add(x, y) if signaling.any() else None  # (before out, which may be x)
    result = tdsl_pow(x, y, out=out)
    if quiet is not None:
        np.copyto(result, quiet, where=signaling)
    return result


def tdsl_unordered(
    a: "np.ndarray",  # noqa: UP037
    b: "np.ndarray",  # noqa: UP037
    out: "np.ndarray | None" = None,  # noqa: UP037
) -> "np.ndarray":  # noqa: UP037
    """Either operand is nan (``arith.cmpf uno``)."""
    return np.logical_or(np.isnan(a), np.isnan(b), out=out)


def tdsl_ordered_ne(
    a: "np.ndarray",  # noqa: UP037
    b: "np.ndarray",  # noqa: UP037
    out: "np.ndarray | None" = None,  # noqa: UP037
) -> "np.ndarray":  # noqa: UP037
    """``a != b`` and neither is nan (``arith.cmpf one``)."""
    if out is None:
        return np.less(a, b) | np.greater(a, b)
    np.less(a, b, out=out)
    return np.logical_or(out, np.greater(a, b), out=out)


# -- the table ---------------------------------------------------------------------

SCALAR_FUNCTIONS: dict[type[Operation], NumpyFunction] = {
    arith.AddfOp: np.add,
    arith.SubfOp: np.subtract,
    arith.MulfOp: np.multiply,
    arith.DivfOp: np.divide,
    arith.NegfOp: np.negative,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    arith.MaxnumfOp: np.fmax,
    arith.MinnumfOp: np.fmin,
    # bit by bit on integers, logical on i1 (booleans)
    arith.AndIOp: np.bitwise_and,
    arith.OrIOp: np.bitwise_or,
    arith.XOrIOp: np.bitwise_xor,
    # signed integers, wrapping as NumPy's arrays do; bodies never divide by 0 or
    # MIN by -1, nor shift by the width or more
    arith.AddiOp: np.add,
    arith.SubiOp: np.subtract,
    arith.MuliOp: np.multiply,
    arith.DivSIOp: tdsl_divsi,
    arith.RemSIOp: np.fmod,
    arith.MaxSIOp: np.maximum,
    arith.MinSIOp: np.minimum,
    arith.ShLIOp: np.left_shift,
    arith.ShRSIOp: np.right_shift,
    # unsigned integers (uint8): their arrays are unsigned, so NumPy's functions are
    # the unsigned ops; bodies never divide by 0
    arith.DivUIOp: np.floor_divide,
    arith.RemUIOp: np.fmod,
    arith.MaxUIOp: np.maximum,
    arith.MinUIOp: np.minimum,
    arith.ShRUIOp: np.right_shift,
    arith.BitcastOp: tdsl_convert,  # int64 <-> uint64 in bodies: the same bits (wraps)
    arith.ExtSIOp: tdsl_convert,
    arith.ExtUIOp: tdsl_convert,
    arith.TruncIOp: tdsl_convert,
    arith.SIToFPOp: tdsl_convert,
    arith.FPToSIOp: tdsl_convert,
    arith.SelectOp: tdsl_select,
    arith.ExtFOp: tdsl_convert,
    arith.TruncFOp: tdsl_convert,
    arith.UIToFPOp: tdsl_convert,
    xmath.AbsFOp: np.absolute,
    xmath.ExpOp: np.exp,
    xmath.ExpM1Op: np.expm1,
    xmath.Exp2Op: np.exp2,
    xmath.LogOp: np.log,
    xmath.Log1pOp: np.log1p,
    xmath.Log2Op: np.log2,
    xmath.Log10Op: np.log10,
    xmath.SqrtOp: np.sqrt,
    xmath.CbrtOp: np.cbrt,
    xmath.TanhOp: np.tanh,
    xmath.SinOp: np.sin,
    xmath.CosOp: np.cos,
    xmath.TanOp: np.tan,
    xmath.AsinOp: np.arcsin,
    xmath.AcosOp: np.arccos,
    xmath.AtanOp: np.arctan,
    xmath.SinhOp: np.sinh,
    xmath.CoshOp: np.cosh,
    xmath.AsinhOp: np.arcsinh,
    xmath.AcoshOp: np.arccosh,
    xmath.AtanhOp: np.arctanh,
    xmath.CeilOp: np.ceil,
    xmath.FloorOp: np.floor,
    xmath.TruncOp: np.trunc,
    xmath.RoundEvenOp: np.rint,
    xmath.ErfOp: tdsl_erf,
    xmath.PowFOp: tdsl_pow,
    xmath.Atan2Op: np.arctan2,
    xmath.CopySignOp: np.copysign,
    tdslmath.RemFOp: np.fmod,
    tdslmath.HypotOp: np.hypot,
    tdslmath.NextAfterOp: np.nextafter,
}
"""Scalar op class -> the NumPy function computing it element-wise."""

F16_FUNCTIONS: dict[type[Operation], NumpyFunction] = {
    xmath.PowFOp: tdsl_power_f16,
}
"""Scalar op class -> the NumPy function computing it on float16 values widened to
float32 (:data:`~tdsl.dialects.structured_bodies.WIDENED_FROM`), where that differs
(``hypot`` does not: float32's loop calls the C library's ``hypotf`` too)."""

# arith.cmpf predicates: the ordered ("o") ones are false where an operand is nan, as
# NumPy's comparisons are; "une" is true there, as NumPy's !=.
_CMPF: dict[str, NumpyFunction] = {
    "oeq": np.equal,
    "ogt": np.greater,
    "oge": np.greater_equal,
    "olt": np.less,
    "ole": np.less_equal,
    "une": np.not_equal,
    "uno": tdsl_unordered,
    "one": tdsl_ordered_ne,
}


# arith.cmpi predicates, on signed integers (``u...`` ones read them as unsigned)
_CMPI: dict[str, NumpyFunction] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "slt": np.less,
    "sle": np.less_equal,
    "sgt": np.greater,
    "sge": np.greater_equal,
    "ult": tdsl_ult,
    "ule": tdsl_ule,
    "ugt": tdsl_ugt,
    "uge": tdsl_uge,
}


def numpy_function(op: Operation) -> NumpyFunction:
    """The NumPy function computing the scalar op ``op`` on arrays; an error naming the op
    where the table has none."""
    if isinstance(op, arith.CmpfOp):
        predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        found = _CMPF.get(predicate)
    elif isinstance(op, arith.CmpiOp):
        predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        found = _CMPI.get(predicate)
    else:
        found = SCALAR_FUNCTIONS.get(type(op))
        widened = op.attributes.get(WIDENED_FROM)
        if isinstance(widened, StringAttr) and widened.data == "f16":
            # (NumPy's float16 loops tell a signaling nan from a quiet one here)
            found = F16_FUNCTIONS.get(type(op), found)
    if found is None:
        raise InterpretationError(
            f"no NumPy function for the scalar op '{op.name}' "
            "(add one to the table of tdsl/scalar_numpy.py)"
        )
    return found


def scalar_dtype(t: Attribute) -> np.dtype[Any]:
    """The NumPy dtype of a scalar type of a body (``i1`` is bool)."""
    if t == IntegerType(1):
        return np.dtype(np.bool_)
    return numpy_dtype(t)


def constant_array(op: arith.ConstantOp) -> Array:
    """An ``arith.constant`` of a body as a 0-d array of its type."""
    value = op.value
    if not isinstance(value, FloatAttr | IntegerAttr):
        raise InterpretationError(
            f"scalar bodies use float, integer or boolean constants, not {value}"
        )
    return np.asarray(cast(Any, value).value.data, dtype=scalar_dtype(op.result.type))


__all__ = [
    "SCALAR_FUNCTIONS",
    "STRIDED_OUT_UNSAFE",
    "NumpyFunction",
    "constant_array",
    "numpy_function",
    "scalar_dtype",
    "tdsl_convert",
    "tdsl_erf",
    "tdsl_ordered_ne",
    "tdsl_select",
    "tdsl_strided_safe",
    "tdsl_unordered",
]
