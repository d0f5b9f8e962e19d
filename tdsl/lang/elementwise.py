"""The element-wise functions of :mod:`tdsl.lang`, one per function of the language:
generated from the function table by ``python -m tdsl.tools.gen_reference``."""

from __future__ import annotations

from tdsl.lang_types import Array, Operand
from tdsl.lang_types import call as _call

# --------------------------------------------------------------------------- the functions
# Generated from the function table by `python -m tdsl.tools.gen_reference`: do not edit below.


def relu(x: Operand) -> Array:
    """``max(x, 0)`` element-wise (``nan`` stays ``nan``, as ``np.maximum``)."""
    return _call("relu", (x,))


def sign(x: Operand) -> Array:
    """``-1``, ``0`` or ``1`` by the sign of ``x``, element-wise (``nan`` stays ``nan``; the sign of zero is ``+0``, as ``np.sign``)."""
    return _call("sign", (x,))


def square(x: Operand) -> Array:
    """``x * x`` element-wise."""
    return _call("square", (x,))


def reciprocal(x: Operand) -> Array:
    """``1 / x`` element-wise (``±inf`` at ``±0``)."""
    return _call("reciprocal", (x,))


def copy(x: Operand) -> Array:
    """``x`` itself, element-wise (``np.copy``; numexpr's ``copy``)."""
    return _call("copy", (x,))


def conj(x: Operand) -> Array:
    """The complex conjugate, which for real floats is ``x`` itself (``np.conj``)."""
    return _call("conj", (x,))


def ones_like(x: Operand) -> Array:
    """Ones of the operand's shape and type (``np.ones_like``; ``nan`` gives 1 too)."""
    return _call("ones_like", (x,))


def sigmoid(x: Operand) -> Array:
    """The logistic function ``1 / (1 + exp(-x))`` element-wise, computed without overflow."""
    return _call("sigmoid", (x,))


def abs(x: Operand) -> Array:
    """Absolute value element-wise."""
    return _call("abs", (x,))


def neg(x: Operand) -> Array:
    """``-x`` element-wise."""
    return _call("neg", (x,))


def exp(x: Operand) -> Array:
    """``e**x`` element-wise."""
    return _call("exp", (x,))


def log(x: Operand) -> Array:
    """Natural logarithm element-wise (``nan`` below 0, ``-inf`` at 0, as NumPy)."""
    return _call("log", (x,))


def sqrt(x: Operand) -> Array:
    """Square root element-wise (``nan`` below 0, as NumPy)."""
    return _call("sqrt", (x,))


def tanh(x: Operand) -> Array:
    """Hyperbolic tangent element-wise."""
    return _call("tanh", (x,))


def sin(x: Operand) -> Array:
    """Sine element-wise (radians)."""
    return _call("sin", (x,))


def cos(x: Operand) -> Array:
    """Cosine element-wise (radians)."""
    return _call("cos", (x,))


def tan(x: Operand) -> Array:
    """Tangent element-wise (radians)."""
    return _call("tan", (x,))


def arcsin(x: Operand) -> Array:
    """Inverse sine element-wise (``nan`` outside [-1, 1], as NumPy)."""
    return _call("arcsin", (x,))


def arccos(x: Operand) -> Array:
    """Inverse cosine element-wise (``nan`` outside [-1, 1], as NumPy)."""
    return _call("arccos", (x,))


def arctan(x: Operand) -> Array:
    """Inverse tangent element-wise."""
    return _call("arctan", (x,))


def sinh(x: Operand) -> Array:
    """Hyperbolic sine element-wise."""
    return _call("sinh", (x,))


def cosh(x: Operand) -> Array:
    """Hyperbolic cosine element-wise."""
    return _call("cosh", (x,))


def arcsinh(x: Operand) -> Array:
    """Inverse hyperbolic sine element-wise."""
    return _call("arcsinh", (x,))


def arccosh(x: Operand) -> Array:
    """Inverse hyperbolic cosine element-wise (``nan`` below 1, as NumPy)."""
    return _call("arccosh", (x,))


def arctanh(x: Operand) -> Array:
    """Inverse hyperbolic tangent element-wise (``nan`` outside [-1, 1], ``±inf`` at ``±1``)."""
    return _call("arctanh", (x,))


def log1p(x: Operand) -> Array:
    """``log(1 + x)`` element-wise, accurate near 0."""
    return _call("log1p", (x,))


def log10(x: Operand) -> Array:
    """Base-10 logarithm element-wise."""
    return _call("log10", (x,))


def log2(x: Operand) -> Array:
    """Base-2 logarithm element-wise."""
    return _call("log2", (x,))


def exp2(x: Operand) -> Array:
    """``2**x`` element-wise (``np.exp2``)."""
    return _call("exp2", (x,))


def cbrt(x: Operand) -> Array:
    """The cube root element-wise (``np.cbrt``; negative for a negative ``x``)."""
    return _call("cbrt", (x,))


def expm1(x: Operand) -> Array:
    """``exp(x) - 1`` element-wise, accurate near 0."""
    return _call("expm1", (x,))


def erf(x: Operand) -> Array:
    """The error function ``2/sqrt(pi) * integral(exp(-t**2), 0, x)`` element-wise (NumPy has none; ``math.erf`` of each element)."""
    return _call("erf", (x,))


def ceil(x: Operand) -> Array:
    """The smallest integer not below ``x``, element-wise (a float)."""
    return _call("ceil", (x,))


def floor(x: Operand) -> Array:
    """The largest integer not above ``x``, element-wise (a float)."""
    return _call("floor", (x,))


def round(x: Operand) -> Array:
    """``x`` rounded to the nearest integer, halves to even (``np.round``), element-wise."""
    return _call("round", (x,))


def trunc(x: Operand) -> Array:
    """``x`` rounded towards zero, element-wise (a float)."""
    return _call("trunc", (x,))


def remainder(a: Operand, b: Operand) -> Array:
    """``a % b`` element-wise, broadcasting: the remainder with the sign of the divisor (``np.remainder``, Python's ``%``; ``nan`` for a zero divisor)."""
    return _call("remainder", (a, b))


def fmod(a: Operand, b: Operand) -> Array:
    """``fmod(a, b)`` element-wise, broadcasting: the remainder with the sign of the dividend (``np.fmod``, C's ``fmod``)."""
    return _call("fmod", (a, b))


def floor_divide(a: Operand, b: Operand) -> Array:
    """``a // b`` element-wise, broadcasting: the quotient rounded towards -inf (``np.floor_divide``, Python's ``//``)."""
    return _call("floor_divide", (a, b))


def arctan2(a: Operand, b: Operand) -> Array:
    """The angle of the point ``(b, a)`` (``np.arctan2(y, x)``), element-wise, broadcasting."""
    return _call("arctan2", (a, b))


def hypot(a: Operand, b: Operand) -> Array:
    """``sqrt(a**2 + b**2)`` element-wise without overflow, broadcasting (``np.hypot``)."""
    return _call("hypot", (a, b))


def logaddexp(a: Operand, b: Operand) -> Array:
    """``log(exp(a) + exp(b))`` element-wise without overflow, broadcasting (``np.logaddexp``: ``x + log(2)`` for equal operands, infinities included)."""
    return _call("logaddexp", (a, b))


def copysign(a: Operand, b: Operand) -> Array:
    """The magnitude of ``a`` with the sign of ``b``, element-wise, broadcasting."""
    return _call("copysign", (a, b))


def nextafter(a: Operand, b: Operand) -> Array:
    """The next representable value after ``a`` towards ``b``, element-wise, broadcasting (``np.nextafter``, in the element type)."""
    return _call("nextafter", (a, b))


def maximum(a: Operand, b: Operand) -> Array:
    """Element-wise maximum, broadcasting (``nan`` propagates, as ``np.maximum``)."""
    return _call("maximum", (a, b))


def minimum(a: Operand, b: Operand) -> Array:
    """Element-wise minimum, broadcasting (``nan`` propagates, as ``np.minimum``)."""
    return _call("minimum", (a, b))


def power(a: Operand, b: Operand) -> Array:
    """``a ** b`` element-wise, broadcasting (``np.power``: ``nan`` for a negative base and a non-integer exponent, ``x ** 0`` is 1)."""
    return _call("power", (a, b))


def float_power(a: Operand, b: Operand) -> Array:
    """``a ** b`` element-wise in float64, broadcasting (``np.float_power``): ``pow`` always, with no ``sqrt`` for an exponent 0.5 (``+0`` at ``-0``, ``inf`` at ``-inf``); the frontend converts narrower operands, integers and booleans to float64 first."""
    return _call("float_power", (a, b))


def less(a: Operand, b: Operand) -> Array:
    """``a < b`` element-wise, broadcasting: a boolean tensor."""
    return _call("less", (a, b))


def less_equal(a: Operand, b: Operand) -> Array:
    """``a <= b`` element-wise, broadcasting: a boolean tensor."""
    return _call("less_equal", (a, b))


def equal(a: Operand, b: Operand) -> Array:
    """``a == b`` element-wise, broadcasting: a boolean tensor."""
    return _call("equal", (a, b))


def not_equal(a: Operand, b: Operand) -> Array:
    """``a != b`` (true where either is ``nan``) element-wise, broadcasting: a boolean tensor."""
    return _call("not_equal", (a, b))


def greater_equal(a: Operand, b: Operand) -> Array:
    """``a >= b`` element-wise, broadcasting: a boolean tensor."""
    return _call("greater_equal", (a, b))


def greater(a: Operand, b: Operand) -> Array:
    """``a > b`` element-wise, broadcasting: a boolean tensor."""
    return _call("greater", (a, b))


def logical_and(a: Operand, b: Operand) -> Array:
    """``a & b`` on booleans, element-wise, broadcasting."""
    return _call("logical_and", (a, b))


def logical_or(a: Operand, b: Operand) -> Array:
    """``a | b`` on booleans, element-wise, broadcasting."""
    return _call("logical_or", (a, b))


def logical_not(x: Operand) -> Array:
    """``~x`` on booleans, element-wise."""
    return _call("logical_not", (x,))


def where(a: Operand, b: Operand, c: Operand) -> Array:
    """``where(cond, a, b)``: ``a`` where ``cond`` is true, else ``b``, element-wise, all three broadcasting (``np.where``). ``a`` and ``b`` share one element type, which is the result's."""
    return _call("where", (a, b, c))


def isnan(x: Operand) -> Array:
    """Whether each element is nan (``np.isnan``)."""
    return _call("isnan", (x,))


def isinf(x: Operand) -> Array:
    """Whether each element is ``inf`` or ``-inf`` (``np.isinf``)."""
    return _call("isinf", (x,))


def isfinite(x: Operand) -> Array:
    """Whether each element is neither nan nor infinite (``np.isfinite``)."""
    return _call("isfinite", (x,))


def clip(a: Operand, b: Operand, c: Operand) -> Array:
    """``clip(x, lo, hi)``: ``x`` limited to ``[lo, hi]`` element-wise, all three broadcasting, of one float element type (``np.clip``: ``minimum(maximum(x, lo), hi)``, so ``hi`` wins where ``lo > hi``; a nan anywhere gives nan). Where ``x`` equals a bound (``-0.0`` and ``0.0``), NumPy's loops differ, and so does the op: with ``keep_ties`` the result is ``x``, else the bound. Built from operands, the op keeps ties as NumPy does: for float16, and where both bounds are one element each (its scalar-bounds loop); tiling keeps the flag, so a tile of one element is no different."""
    return _call("clip", (a, b, c))


def bitwise_and(a: Operand, b: Operand) -> Array:
    """``a & b`` bit by bit on integers, broadcasting (``np.bitwise_and``)."""
    return _call("bitwise_and", (a, b))


def bitwise_or(a: Operand, b: Operand) -> Array:
    """``a | b`` bit by bit on integers, broadcasting (``np.bitwise_or``)."""
    return _call("bitwise_or", (a, b))


def bitwise_xor(a: Operand, b: Operand) -> Array:
    """``a ^ b`` bit by bit, broadcasting (``np.bitwise_xor``): on booleans, their exclusive or."""
    return _call("bitwise_xor", (a, b))


def invert(x: Operand) -> Array:
    """``~x`` bit by bit on integers (``np.invert``: ``-x - 1``)."""
    return _call("invert", (x,))


def left_shift(a: Operand, b: Operand) -> Array:
    """``a << b`` element-wise on integers, broadcasting (``np.left_shift``; wraps)."""
    return _call("left_shift", (a, b))


def right_shift(a: Operand, b: Operand) -> Array:
    """``a >> b`` element-wise on integers, broadcasting: arithmetic, keeping the sign (logical for unsigned integers; ``np.right_shift``)."""
    return _call("right_shift", (a, b))


__all__ = [
    "abs",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "cbrt",
    "ceil",
    "clip",
    "conj",
    "copy",
    "copysign",
    "cos",
    "cosh",
    "equal",
    "erf",
    "exp",
    "exp2",
    "expm1",
    "float_power",
    "floor",
    "floor_divide",
    "fmod",
    "greater",
    "greater_equal",
    "hypot",
    "invert",
    "isfinite",
    "isinf",
    "isnan",
    "left_shift",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "maximum",
    "minimum",
    "neg",
    "nextafter",
    "not_equal",
    "ones_like",
    "power",
    "reciprocal",
    "relu",
    "remainder",
    "right_shift",
    "round",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "trunc",
    "where",
]
