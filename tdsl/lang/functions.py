"""The functions of :mod:`tdsl.lang` but the element-wise ones (:mod:`.elementwise`),
one per function of the language: generated from the function table by
``python -m tdsl.tools.gen_reference``."""

from __future__ import annotations

from collections.abc import Sequence

from tdsl.lang_types import Array, DTypeLike, Operand
from tdsl.lang_types import call as _call
from tdsl.lang_types import call_parts as _call_parts

# --------------------------------------------------------------------------- the functions
# Generated from the function table by `python -m tdsl.tools.gen_reference`: do not edit below.


def astype(x: Operand, dtype: DTypeLike) -> Array:
    """Converts the element type to a float or integer type, keeping the shape (``x.astype(dtype)``: booleans become 0 and 1; integers narrow by wrapping; floats truncate towards zero, and nan, infinities and out-of-range values become the most negative integer, as NumPy's cast gives them on x86-64)."""
    return _call("astype", (x,), {"dtype": dtype})


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


def all(x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
    """Whether every element over ``axis`` (all axes when absent) is true; ``all`` of no elements is true, as in NumPy."""
    return _call("all", (x,), {"axis": axis, "keepdims": keepdims})


def any(x: Operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
    """Whether some element over ``axis`` (all axes when absent) is true; ``any`` of no elements is false, as in NumPy."""
    return _call("any", (x,), {"axis": axis, "keepdims": keepdims})


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


def take(a: Operand, b: Operand, axis: int | None = None) -> Array:
    """The elements of its operand at ``indices`` along ``axis``, as ``np.take(a, indices, axis)`` (negative indices count from the end; one outside the axis is a :class:`~tdsl.errors.TdslIndexError`)."""
    return _call("take", (a, b), {"axis": axis})


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


def broadcast_to(x: Operand, shape: int | tuple[int, ...]) -> Array:
    """Its operand broadcast to ``shape``, as ``np.broadcast_to(x, shape)``: the frontend writes it as a product with ones of the broadcast extents (exact: ``x * 1`` is ``x``, signed zeros and nans included; ``&`` for booleans), which fuses with what reads it, so nothing is made at the broadcast shape but the ones (stored once)."""
    return _call("broadcast_to", (x,), {"shape": shape})


def argmax(x: Operand, axis: int | None = None, keepdims: bool = False) -> Array:
    """The index of the first largest element along ``axis`` (of the flattened operand when ``axis`` is None), an ``int64`` (``np.argmax``; the first ``nan`` if any)."""
    return _call("argmax", (x,), {"axis": axis, "keepdims": keepdims})


def argmin(x: Operand, axis: int | None = None, keepdims: bool = False) -> Array:
    """The index of the first smallest element along ``axis`` (of the flattened operand when ``axis`` is None), an ``int64`` (``np.argmin``; the first ``nan`` if any)."""
    return _call("argmin", (x,), {"axis": axis, "keepdims": keepdims})


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


def split(x: Operand, indices_or_sections: int | tuple[int, ...], axis: int = 0) -> list[Array]:
    """Its operand cut along ``axis`` into equal sections (a number) or at indices (a tuple), as ``np.split(x, indices_or_sections, axis)``: several results, each a ``slice`` (an unequal division is an error; see ``array_split``)."""
    return _call_parts("split", (x,), {"indices_or_sections": indices_or_sections, "axis": axis})


def array_split(
    x: Operand, indices_or_sections: int | tuple[int, ...], axis: int = 0
) -> list[Array]:
    """As ``split``, with sections that may differ by one (the first ones larger), as ``np.array_split(x, indices_or_sections, axis)``."""
    return _call_parts(
        "array_split", (x,), {"indices_or_sections": indices_or_sections, "axis": axis}
    )


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
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "array_split",
    "astype",
    "broadcast_to",
    "concatenate",
    "cumprod",
    "cumsum",
    "einsum",
    "expand_dims",
    "eye",
    "full",
    "hstack",
    "layernorm",
    "log_softmax",
    "logsumexp",
    "matmul",
    "max",
    "mean",
    "min",
    "moveaxis",
    "ones",
    "prod",
    "ravel",
    "reshape",
    "softmax",
    "split",
    "squeeze",
    "stack",
    "std",
    "sum",
    "swapaxes",
    "take",
    "transpose",
    "tri",
    "tril",
    "triu",
    "var",
    "vstack",
    "zeros",
]
