"""NumPy functions a trace writes as the language's element-wise ones.

- ``np.deg2rad`` and ``np.radians``, ``np.rad2deg`` and ``np.degrees``: a product by
  NumPy's constant in NumPy's precision, so bit for bit NumPy's: ``x * (pi / 180)`` in
  float64; in float32 ``x * c`` with ``c = float32(pi) / 180`` rounded to float32 (its
  C loop's ``NPY_PIf / 180.0f``); float16 through float32, rounded once to float16;
  integers and booleans in the float type NumPy's loop takes them in.
- ``np.select(condlist, choicelist, default=0)``: a chain of ``where``, the first
  condition that holds taking precedence, in the dtype NumPy 2 gives (the choices and
  the default, Python numbers weak), with NumPy's errors for lists of different
  lengths and a condition that is not boolean (NumPy itself refuses empty lists).
- ``np.heaviside(x1, x2)``: ``where`` of comparisons, as NumPy's C loop picks: ``x1``
  itself where it is nan, 0 where it is negative, 1 where positive, ``x2`` where it is
  zero (either sign), in the float loop NumPy resolves (integers in ``float64``).
- ``np.divmod(x1, x2)``: ``(x1 // x2, x1 % x2)``, NumPy's loops computing both alike.
- ``np.take(a, indices, axis, mode=...)`` with ``mode="wrap"`` (the indices modulo the
  axis' length) or ``mode="clip"`` (clipped to the axis, negative ones to 0): the
  language's ``take`` of those indices (``mode="raise"`` is the language's own).

(Registered in :data:`tdsl.jit.trace_compose.COMPOSED`.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tdsl.jit.trace_args import as_array, static_axis, weak_type
from tdsl.jit.trace_names import trace_error
from tdsl.jit.trace_ufuncs import loop_operands

_PI32 = np.float32(np.pi)
_TO_RADIANS = (np.float64(np.pi / 180), np.float32(_PI32 / np.float32(180)))
_TO_DEGREES = (np.float64(180 / np.pi), np.float32(np.float32(180) / _PI32))


def _scaled(name: str, factors: tuple[np.float64, np.float32]) -> Callable[[Any], Any]:
    """NumPy's ufunc ``name``: its operand times NumPy's constant, in NumPy's precision."""
    f64, f32 = factors

    def scaled(x: Any) -> Any:
        dtype = np.dtype(x.dtype)
        if dtype.kind != "f":  # (the float loop NumPy's type resolution picks)
            dtype = np.result_type(dtype, np.float16)
            x = x.astype(dtype)
        if dtype == np.float64:
            return x * f64
        if dtype == np.float32:
            return x * f32
        return (x.astype(np.float32) * f32).astype(dtype)  # float16: its loop's float32

    scaled.__name__ = name
    return scaled


def heaviside(x1: Any, x2: Any) -> Any:
    """``np.heaviside``: the step function, ``x2`` at zero, nan at nan."""
    (x, at_zero), (out,) = loop_operands(np.heaviside, (x1, x2))
    x, at_zero = as_array(x), as_array(at_zero)
    step = np.where(x < 0, out.type(0), np.where(x > 0, out.type(1), at_zero))
    return np.where(np.isnan(x), x, step)


def divmod_(x1: Any, x2: Any) -> Any:
    """``np.divmod``: the floor quotient and the remainder, as NumPy's ``floor_divide`` and
    ``remainder`` give them (its divmod loop is theirs)."""
    return np.floor_divide(x1, x2), np.remainder(x1, x2)


def take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: Any = None) -> Any:
    """``np.take`` in ``mode`` ``"wrap"`` or ``"clip"``: ``take`` of the indices each mode
    maps into the axis (``NotImplemented`` without a mode, the language's ``take``)."""
    if out is not None or mode is None:
        return NotImplemented  # (the language's take; it refuses `out=`)
    if mode == "raise":  # (NumPy's default, given)
        return np.take(a, indices, axis=axis)
    if mode not in ("wrap", "clip"):
        trace_error(f"`np.take`: clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    a = as_array(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    n = a.shape[static_axis(axis, a.ndim, "`np.take`")]
    if n == 0:
        trace_error("`np.take`: cannot do a non-empty take from an empty axes.")
    index = as_array(indices)
    if np.dtype(index.dtype).kind not in "iub":
        trace_error(f"`np.take`: indices of {np.dtype(index.dtype)} are not integers")
    index = index.astype(np.int64)
    index = np.mod(index, n) if mode == "wrap" else np.clip(index, 0, n - 1)
    return np.take(a, index, axis=axis)


def _dtype_of(value: Any) -> Any:
    """What ``np.result_type`` reads for a choice or the default of ``np.select``: a Python
    number itself (weak: a traced Python-number argument too, as a number of its type),
    else its dtype."""
    if type(value) in (int, float):
        return value
    weak = weak_type(value)
    return as_array(value).dtype if weak is None else weak(0)


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """``np.select``: the first choice whose condition holds, else ``default``."""
    conditions, choices = list(condlist), list(choicelist)
    if len(conditions) != len(choices):
        trace_error("`np.select`: list of cases must be same length as list of conditions")
    for i, cond in enumerate(conditions):
        if np.dtype(as_array(cond).dtype) != np.bool_:
            trace_error(
                f"`np.select`: invalid entry {i} in condlist: should be boolean ndarray "
                "(NumPy's TypeError)"
            )
    try:
        dtype = np.result_type(*map(_dtype_of, choices), _dtype_of(default))
    except TypeError as err:
        trace_error(f"`np.select`: choicelist and default value do not have a common dtype: {err}")

    def typed(value: Any) -> Any:
        if type(value) is int and not np.can_cast(np.min_scalar_type(value), dtype):
            # (NumPy's copyto wraps it to the dtype: 2**62 in int32 is 0; as a scalar of
            # the dtype it was a raw OverflowError; found by fuzzing)
            return np.array(value & (2**64 - 1), np.uint64).astype(dtype)
        if type(value) in (int, float):
            return dtype.type(value)  # (NumPy's copyto of a Python number: its dtype's)
        value = as_array(value)
        return value if value.dtype == dtype else value.astype(dtype)

    with np.errstate(all="ignore"):  # (NumPy's casts: 300 in uint8 is 44)
        result = typed(default)
        for cond, choice in reversed(list(zip(conditions, choices, strict=True))):
            result = np.where(cond, typed(choice), result)
    return result


SELECT: dict[str, Callable[..., Any]] = {
    "np.deg2rad": _scaled("deg2rad", _TO_RADIANS),
    "np.radians": _scaled("radians", _TO_RADIANS),
    "np.rad2deg": _scaled("rad2deg", _TO_DEGREES),
    "np.degrees": _scaled("degrees", _TO_DEGREES),
    "np.select": select,
    "np.heaviside": heaviside,
    "np.divmod": divmod_,
    "np.take": take,
}
"""The functions above, by their name under ``np``."""

__all__ = ["SELECT", "select"]
