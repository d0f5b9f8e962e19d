"""What a call's values are (descriptions, NumPy and Python scalars), and how a weak
scalar argument (:attr:`ArgSpec.weak <tdsl.jit.compiled.ArgSpec.weak>`) takes a Python
``int`` or ``float``: :func:`convert_weak` for the checked call, :func:`weak_range` for
the fast path's check."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tdsl.dtypes import type_str
from tdsl.errors import TdslCallError

if TYPE_CHECKING:
    from tdsl.jit.compiled import ArgSpec

Array = np.ndarray[Any, Any]

_FLOAT64 = np.dtype(np.float64)
_INT64 = np.dtype(np.int64)
INT64_MIN, INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)
_MAX_FLOAT = sys.float_info.max


def describe(value: object) -> str:
    """``f32[4, 3]`` for an array, else the type of ``value``."""
    if isinstance(value, np.ndarray):
        array = cast(Array, value)
        return type_str(array.dtype, array.shape)
    return f"a value of type `{type(value).__qualname__}`"


def is_numpy_scalar(value: object) -> bool:
    return isinstance(value, np.generic)


def scalar_dtype(value: object) -> np.dtype[Any]:
    """The dtype of a NumPy scalar."""
    return cast("np.generic[Any]", value).dtype


def is_python_number(value: object) -> bool:
    """A Python ``int`` or ``float`` (or subclass), not a ``bool``."""
    return isinstance(value, int | float) and not isinstance(value, bool | np.bool_)


def _show_big(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 20 else f"an int of {len(text.lstrip('-'))} digits"


def show_big(value: object) -> str:
    """``value``'s repr, or its count of digits when longer than 20 characters."""
    text = repr(value)
    return text if len(text) <= 20 else f"an int of {len(text.lstrip('-'))} digits"


def weak_range(spec: ArgSpec) -> tuple[float, float]:
    """The Python ints a weak argument takes as they are (no conversion): within its
    :attr:`~tdsl.jit.compiled.ArgSpec.bounds` and int64's for a weak integer, any a float
    holds within a weak float's bounds."""
    if spec.dtype == _INT64:
        low, high = spec.bounds or (INT64_MIN, INT64_MAX)
        return low, min(high, INT64_MAX)
    return spec.bounds or (-_MAX_FLOAT, _MAX_FLOAT)


def convert_weak(where: str, spec: ArgSpec, value: Any) -> Array:
    """``value`` as the 0-d array the generated code takes for weak ``spec`` (``where``
    names it in an error), or TdslCallError."""
    if spec.dtype == _INT64:
        low, high = spec.bounds or (INT64_MIN, INT64_MAX)
        if not isinstance(value, int) or not low <= value <= high:
            unsigned = (low, high) == (0, INT64_MAX)  # (a uint64 operand's bounds)
            if isinstance(value, int) and unsigned and INT64_MAX < value < 2**64:
                raise TdslCallError(  # (a uint64 operand: NumPy 2 computes it in uint64)
                    f"{where} is a weak integer, passed as int64: {show_big(value)} does not "
                    "fit (NumPy 2 computes it in uint64 here): declare it a uint64 input "
                    "(`u64[]`) and pass np.uint64 values"
                )
            if isinstance(value, int):
                raise TdslCallError(
                    f"{where} is a weak integer: expected {spec.expected}, got "
                    f"{show_big(value)}, which does not fit (NumPy 2 raises OverflowError "
                    "beyond the integer dtype it meets; int64 arithmetic on it with literals, "
                    "`s + 1`, would wrap where Python's is exact)"
                )
            raise TdslCallError(
                f"{where} is a weak integer: expected {spec.expected}, got {describe(value)}"
            )
        return np.array(value if value <= INT64_MAX else value - 2**64, _INT64)  # (wrapped)
    if isinstance(value, np.generic):  # (np.float64 is a float, but NumPy's: strong)
        raise TdslCallError(
            f"{where} is a weak scalar: expected {spec.expected}, got {describe(value)}, a "
            "NumPy scalar, which NumPy types by its dtype (not as weak): pass float(...), or "
            "declare the argument with that dtype"
        )
    if not is_python_number(value):
        raise TdslCallError(
            f"{where} is a weak scalar: expected {spec.expected}, got {describe(value)}"
        )
    if spec.bounds and isinstance(value, int) and not spec.bounds[0] <= value <= spec.bounds[1]:
        raise TdslCallError(
            f"{where} meets an integer array: tdsl would take the Python int "
            f"{show_big(value)}, beyond int64, as a float, where NumPy 2 does not (arithmetic "
            "raises OverflowError, where() wraps it, a comparison is exact): pass float(...) "
            "to compute in floats"
        )
    try:
        return np.array(float(value), _FLOAT64)
    except OverflowError:
        raise TdslCallError(f"{where} is too large for a float: {show_big(value)}") from None


__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "convert_weak",
    "describe",
    "is_numpy_scalar",
    "is_python_number",
    "scalar_dtype",
    "show_big",
    "weak_range",
]
