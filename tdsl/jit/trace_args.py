"""The arguments of NumPy's functions in a traced function: static counts, axes and
ints, and values as NumPy's functions make arrays of them."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from tdsl.jit.trace_names import trace_error


def static_count(value: Any, what: str) -> int:
    """``value`` as a static non-negative count."""
    try:
        count = operator.index(value)
    except TypeError:
        trace_error(f"{what} must be a Python int when traced (a count known when compiling)")
    if count < 0:
        trace_error(f"{what} must not be negative, got {count}")
    return count


def static_axis(axis: Any, ndim: int, what: str) -> int:
    """``axis`` of an array of ``ndim`` dims, as NumPy normalizes it."""
    try:
        index = operator.index(axis)
    except TypeError:
        trace_error(f"the axis of {what} must be a Python int, got {axis!r}")
    if not -ndim <= index < ndim:
        trace_error(f"axis {index} of {what} is out of bounds for an array of {ndim} dims")
    return index % ndim


def static_ints(value: Any, what: str) -> tuple[int, ...]:
    """An int or a sequence of ints, as a tuple (not checked for sign)."""
    items: Sequence[Any] = (
        cast(Sequence[Any], value) if isinstance(value, tuple | list) else (value,)
    )
    try:
        return tuple(operator.index(v) for v in items)
    except TypeError:
        trace_error(f"{what} must be Python ints when traced, got {value!r}")


def ndim_of(value: Any) -> int:
    """The dims of an array, a traced one too (whose ``np.ndim`` is not traced)."""
    return int(value.ndim) if hasattr(value, "ndim") else int(np.ndim(value))


def as_array(value: Any) -> Any:
    """``value`` as NumPy's functions make an array of it (a list, a number: strong)."""
    return value if hasattr(value, "ndim") else np.asarray(value)


def strong(v: Any) -> Any:
    """``v`` as ``np.asarray`` makes it: a Python number (or a traced Python-number
    argument, weak) a float64/int64 array."""
    if not hasattr(v, "dtype"):
        return np.asarray(v)
    return v.astype(v.dtype) if getattr(v, "weak", False) else v


__all__ = ["as_array", "ndim_of", "static_axis", "static_count", "static_ints", "strong"]
