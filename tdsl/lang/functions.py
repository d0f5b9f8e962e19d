"""The functions of :mod:`tdsl.lang`, one per function of the language: generated from
the function table by ``python -m tdsl.tools.gen_reference``."""

from __future__ import annotations

from collections.abc import Sequence

from tdsl.lang_types import Array, DTypeLike, Operand
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


def power(a: Operand, b: Operand) -> Array:
    """``a ** b`` element-wise, broadcasting (``np.power``: ``nan`` for a negative base and a non-integer exponent, ``x ** 0`` is 1)."""
    return _call("power", (a, b))


def remainder(a: Operand, b: Operand) -> Array:
    """``a % b`` element-wise, broadcasting: the remainder with the sign of the divisor (``np.remainder``, Python's ``%``; ``nan`` for a zero divisor)."""
    return _call("remainder", (a, b))


def fmod(a: Operand, b: Operand) -> Array:
    """``fmod(a, b)`` element-wise, broadcasting: the remainder with the sign of the dividend (``np.fmod``, C's ``fmod``)."""
    return _call("fmod", (a, b))


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


def matmul(a: Operand, b: Operand) -> Array:
    """Matrix product with ``np.matmul`` semantics."""
    return _call("matmul", (a, b))


def transpose(x: Operand, axes: tuple[int, ...] | None = None) -> Array:
    """Permutes the axes, as ``np.transpose(x, axes)``: result axis ``i`` is operand axis ``perm[i]``; without ``perm`` the axes are reversed (``np.transpose(x)``, ``x.T``)."""
    return _call("transpose", (x,), {"axes": axes})


def softmax(x: Operand, axis: int = -1) -> Array:
    """Numerically stable softmax along ``axis`` (default -1)."""
    return _call("softmax", (x,), {"axis": axis})


def log_softmax(x: Operand, axis: int = -1) -> Array:
    """``log(softmax(x))`` along ``axis`` (default -1), computed stably: ``(x - max) - log(sum(exp(x - max)))``."""
    return _call("log_softmax", (x,), {"axis": axis})


def layernorm(x: Operand, axis: int = -1, eps: float = 1e-05) -> Array:
    """Layer normalization along ``axis`` (default -1), without affine parameters."""
    return _call("layernorm", (x,), {"axis": axis, "eps": eps})


def sum(x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
    """Sum over ``axis`` (all axes when absent); ``keepdims`` keeps it as size 1."""
    return _call("sum", (x,), {"axis": axis, "keepdims": keepdims})


def max(x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
    """Maximum over ``axis`` (all axes when absent); reducing zero elements is an error, as in NumPy."""
    return _call("max", (x,), {"axis": axis, "keepdims": keepdims})


def min(x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
    """Minimum over ``axis`` (all axes when absent); reducing zero elements is an error, as in NumPy."""
    return _call("min", (x,), {"axis": axis, "keepdims": keepdims})


def prod(x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
    """Product over ``axis`` (all axes when absent); the product of nothing is 1."""
    return _call("prod", (x,), {"axis": axis, "keepdims": keepdims})


def mean(x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
    """Arithmetic mean over ``axis`` (all axes when absent)."""
    return _call("mean", (x,), {"axis": axis, "keepdims": keepdims})


def logsumexp(
    x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False
) -> Array:
    """``log(sum(exp(x)))`` over ``axis`` (all axes when absent), without overflow (``scipy.special.logsumexp``): ``-inf`` for nothing or only ``-inf``, ``inf`` with an ``inf``, ``nan`` with a ``nan``."""
    return _call("logsumexp", (x,), {"axis": axis, "keepdims": keepdims})


def var(
    x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, ddof: float = 0.0
) -> Array:
    """Variance over ``axis`` (all axes when absent): the mean of the squared deviations from the mean, divided by ``n - ddof`` instead of ``n`` when ``ddof`` is given (``np.var``: ``nan`` for nothing, ``inf`` or ``nan`` when ``n <= ddof``)."""
    return _call("var", (x,), {"axis": axis, "keepdims": keepdims, "ddof": ddof})


def std(
    x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, ddof: float = 0.0
) -> Array:
    """Standard deviation over ``axis`` (all axes when absent): the square root of the variance, with the same ``ddof`` (``np.std``)."""
    return _call("std", (x,), {"axis": axis, "keepdims": keepdims, "ddof": ddof})


def all(x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
    """Whether every element over ``axis`` (all axes when absent) is true; ``all`` of no elements is true, as in NumPy."""
    return _call("all", (x,), {"axis": axis, "keepdims": keepdims})


def any(x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
    """Whether some element over ``axis`` (all axes when absent) is true; ``any`` of no elements is false, as in NumPy."""
    return _call("any", (x,), {"axis": axis, "keepdims": keepdims})


def cumsum(x: Operand, axis: int | None = None) -> Array:
    """Cumulative sum along ``axis``, as ``np.cumsum``: ``axis`` absent scans a 0-d or 1-d tensor whole (a larger one needs an axis). Each partial sum is rounded to the result's dtype (float16 adds in float16, as NumPy's); ``inf`` and ``nan`` propagate and overflow gives ``inf``, as in NumPy."""
    return _call("cumsum", (x,), {"axis": axis})


def cumprod(x: Operand, axis: int | None = None) -> Array:
    """Cumulative product along ``axis``, as ``np.cumprod`` (``axis`` as for ``cumsum``). Each partial product is rounded to the result's dtype; overflow gives ``inf``, and ``0 * inf`` is ``nan``, as in NumPy."""
    return _call("cumprod", (x,), {"axis": axis})


def expand_dims(x: Operand, axis: int | tuple[int, ...]) -> Array:
    """Inserts axes of extent 1 at ``axis`` of the result, as ``np.expand_dims(x, axis)``."""
    return _call("expand_dims", (x,), {"axis": axis})


def squeeze(x: Operand, axis: int | tuple[int, ...] | None = None) -> Array:
    """Drops axes of extent 1, as ``np.squeeze(x, axis)`` (without ``axis``: every one)."""
    return _call("squeeze", (x,), {"axis": axis})


def reshape(x: Operand, shape: int | tuple[int, ...]) -> Array:
    """The operand's elements in row-major order, in the result's shape, as ``np.reshape(x, shape)`` (one extent may be ``-1``)."""
    return _call("reshape", (x,), {"shape": shape})


def concatenate(arrays: Sequence[Operand], axis: int = 0) -> Array:
    """Its operands joined along ``axis``, as ``np.concatenate((a, b, ...), axis)``."""
    return _call("concatenate", tuple(arrays), {"axis": axis}, sequence=True)


def swapaxes(x: Operand, axis1: int, axis2: int) -> Array:
    """Exchanges two axes, as ``np.swapaxes(x, axis1, axis2)``: a ``tensordsl.transpose``."""
    return _call("swapaxes", (x,), {"axis1": axis1, "axis2": axis2})


def moveaxis(
    x: Operand, source: int | tuple[int, ...], destination: int | tuple[int, ...]
) -> Array:
    """Moves axes to new positions, as ``np.moveaxis(x, source, destination)``: a ``tensordsl.transpose`` (the other axes keep their order)."""
    return _call("moveaxis", (x,), {"source": source, "destination": destination})


def einsum(subscripts: str, a: Operand, b: Operand | None = None) -> Array:
    """Sums of products over named axes, as ``np.einsum(subscripts, a, b)`` of one or two operands: the frontend writes it as ``transpose``, ``expand_dims``, ``matmul``, ``mul`` and ``sum`` ops (see :mod:`tdsl.frontend.einsum`)."""
    return _call("einsum", (a,) if b is None else (a, b), {"subscripts": subscripts})


def ravel(x: Operand) -> Array:
    """The elements in row-major order, flat, as ``np.ravel(x)``: a ``reshape`` to ``(-1,)``."""
    return _call("ravel", (x,))


def stack(arrays: Sequence[Operand], axis: int = 0) -> Array:
    """Its operands (of one shape) joined along a new axis, as ``np.stack((a, b), axis)``: an ``expand_dims`` of each and a ``concatenate``."""
    return _call("stack", tuple(arrays), {"axis": axis}, sequence=True)


def hstack(arrays: Sequence[Operand]) -> Array:
    """Its operands joined along axis 1 (axis 0 for 1-d ones), as ``np.hstack((a, b))``."""
    return _call("hstack", tuple(arrays), {}, sequence=True)


def vstack(arrays: Sequence[Operand]) -> Array:
    """Its operands joined along axis 0, 1-d ones as rows, as ``np.vstack((a, b))``."""
    return _call("vstack", tuple(arrays), {}, sequence=True)


def zeros(shape: int | tuple[int, ...], dtype: DTypeLike | None = None) -> Array:
    """A float64 array of zeros of the given shape, as ``np.zeros(shape)``."""
    return _call("zeros", (), {"shape": shape, "dtype": dtype})


def ones(shape: int | tuple[int, ...], dtype: DTypeLike | None = None) -> Array:
    """A float64 array of ones of the given shape, as ``np.ones(shape)``."""
    return _call("ones", (), {"shape": shape, "dtype": dtype})


def full(shape: int | tuple[int, ...], fill_value: float, dtype: DTypeLike | None = None) -> Array:
    """A float64 array of ``fill_value`` of the given shape, as ``np.full(shape, fill_value)`` with a float ``fill_value``."""
    return _call("full", (), {"shape": shape, "fill_value": fill_value, "dtype": dtype})


def arange(
    start: float,
    stop: float | None = None,
    step: float | None = None,
    dtype: DTypeLike | None = None,
) -> Array:
    """Evenly spaced float64 values in ``[start, stop)``, as ``np.arange(start, stop, step)`` with a float among its arguments (``arange(5.0)``: ``0.0`` to ``4.0``)."""
    return _call("arange", (), {"start": start, "stop": stop, "step": step, "dtype": dtype})


def tri(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike | None = None) -> Array:
    """A float64 ``N`` by ``M`` array of ones at and below the ``k``-th diagonal and zeros above it, as ``np.tri(N, M, k)`` (``M`` defaults to ``N``)."""
    return _call("tri", (), {"N": N, "M": M, "k": k, "dtype": dtype})


def eye(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike | None = None) -> Array:
    """A float64 ``N`` by ``M`` array of ones on the ``k``-th diagonal and zeros elsewhere, as ``np.eye(N, M, k)`` (``M`` defaults to ``N``)."""
    return _call("eye", (), {"N": N, "M": M, "k": k, "dtype": dtype})


def tril(x: Operand, k: int = 0) -> Array:
    """``x`` with zeros above the ``k``-th diagonal of its last two axes, as ``np.tril(x, k)``."""
    return _call("tril", (x,), {"k": k})


def triu(x: Operand, k: int = 0) -> Array:
    """``x`` with zeros below the ``k``-th diagonal of its last two axes, as ``np.triu(x, k)``."""
    return _call("triu", (x,), {"k": k})


__all__ = [
    "abs",
    "all",
    "any",
    "arange",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "ceil",
    "clip",
    "concatenate",
    "conj",
    "copy",
    "copysign",
    "cos",
    "cosh",
    "cumprod",
    "cumsum",
    "einsum",
    "equal",
    "erf",
    "exp",
    "expand_dims",
    "expm1",
    "eye",
    "floor",
    "fmod",
    "full",
    "greater",
    "greater_equal",
    "hstack",
    "hypot",
    "isfinite",
    "isinf",
    "isnan",
    "layernorm",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "log_softmax",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logsumexp",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "moveaxis",
    "neg",
    "nextafter",
    "not_equal",
    "ones",
    "ones_like",
    "power",
    "prod",
    "ravel",
    "reciprocal",
    "relu",
    "remainder",
    "reshape",
    "round",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "softmax",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "sum",
    "swapaxes",
    "tan",
    "tanh",
    "transpose",
    "tri",
    "tril",
    "triu",
    "trunc",
    "var",
    "vstack",
    "where",
    "zeros",
]
