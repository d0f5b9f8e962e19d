"""The element types tdsl computes in, and their names: the one table everything uses.

Kept free of xDSL so that the JIT can import it cheaply; the xDSL element
types (``f16``, ``f32``, ``f64``) are mapped in :mod:`tdsl.dialects.structured`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

FLOAT_DTYPES: dict[str, np.dtype[Any]] = {
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}
"""Short name (as in ``f32[4, 8]`` and ``tensor<4x8xf32>``) -> NumPy dtype."""

BOOL_DTYPE: np.dtype[Any] = np.dtype(np.bool_)
"""Booleans: what comparisons produce, ``where`` selects by and ``& | ~`` combine."""

INT_DTYPES: dict[str, np.dtype[Any]] = {
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    "u64": np.dtype(np.uint64),
}
"""Integers, by short name: values the language computes on exactly (wrapping on
overflow, as NumPy does), and the indices of ``take`` (a gather).  ``u8`` and ``u64``
are unsigned (``u64`` is what NumPy sums ``u8`` in, :func:`sum_dtype`)."""

DTYPES: dict[str, np.dtype[Any]] = {"bool": BOOL_DTYPE, **FLOAT_DTYPES, **INT_DTYPES}
"""Every element dtype, by short name (``bool``, ``f16``, ``f32``, ``f64``, ``i32``,
``i64``, ``u8``, ``u64``)."""

AMBIGUOUS_CODES = frozenset({"i4", "i8"})
"""NumPy's codes by bytes of the integers tdsl has, which read as widths in bits (``i8``:
int64 to NumPy, an 8-bit integer to MLIR; ``u8`` is tdsl's uint8): refused as dtypes."""

SHORT_NAMES: dict[str, str] = {dtype.name: short for short, dtype in DTYPES.items()}
"""NumPy dtype name (``float32``, ``bool``) -> short name (``f32``, ``bool``)."""


def supported_names() -> str:
    """``bool, float16, float32, float64, int32, int64, uint8 or uint64``: every dtype tdsl
    computes on, for error messages."""
    names = [dtype.name for dtype in DTYPES.values()]
    return ", ".join(names[:-1]) + " or " + names[-1]


def promote(*dtypes: np.dtype[Any], weak: Sequence[type] = ()) -> np.dtype[Any]:
    """The dtype NumPy 2 computes ``dtypes`` in together with weak Python scalars of the
    kinds ``weak`` (``int``, ``float``): NEP 50, so ``int32`` with a Python int stays
    ``int32``, ``int32`` with ``float32`` is ``float64``, a bool with a Python int is
    ``int64``.  One table for every target: NumPy's own ``result_type``."""
    if not dtypes:  # (Python's bools alone: a bool, as NumPy takes a Python bool)
        if weak and all(kind is bool for kind in weak):
            return np.dtype(np.bool_)
        return np.dtype(np.float64) if float in weak else np.dtype(np.int64)
    scalars = [kind(0) for kind in weak]
    return np.result_type(*dtypes, *scalars)


@functools.cache
def math_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The float dtype a float function (``exp``, ``/``, ``mean``) computes an integer or
    boolean ``dtype`` in, as NumPy's ufunc loops do (``int32 -> float64``,
    ``bool -> float16``); a float dtype is itself."""
    if dtype.kind == "f":
        return dtype
    with np.errstate(all="ignore"):
        return np.exp(np.zeros(1, dtype)).dtype


@functools.cache
def sum_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype ``np.sum``/``np.prod`` give for ``dtype``: a bool or an integer narrower
    than the platform's ``int64`` accumulates in ``int64``; a float in itself."""
    return np.sum(np.zeros(1, dtype)).dtype


def short_name(dtype: np.dtype[Any]) -> str | None:
    """``"f32"`` for float32, ``"bool"`` for bool (native byte order only); None for any
    other dtype."""
    if not dtype.isnative:
        return None
    return SHORT_NAMES.get(dtype.name)


def type_str(dtype: np.dtype[Any], shape: Sequence[int]) -> str:
    """``f32[8, 16]``: the language's own spelling of a tensor type (``>f4[2]`` if swapped)."""
    name = SHORT_NAMES.get(dtype.name, dtype.name) if dtype.isnative else dtype.str
    return f"{name}[{', '.join(str(d) for d in shape)}]"


def wide_accumulator(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype a sum, mean or product of ``dtype`` accumulates in.

    float16 accumulates in float32 (as ``np.mean`` does), then is cast back;
    float32 and float64 accumulate in themselves.
    """
    return FLOAT_DTYPES["f32"] if dtype == FLOAT_DTYPES["f16"] else dtype


def dtype_expr(dtype: np.dtype[Any]) -> str:
    """``np.float32`` for float32, ``np.bool_`` for bool: the dtype as generated Python
    source spells it."""
    return "np.bool_" if dtype == BOOL_DTYPE else f"np.{dtype.name}"


__all__ = [
    "AMBIGUOUS_CODES",
    "BOOL_DTYPE",
    "DTYPES",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "SHORT_NAMES",
    "dtype_expr",
    "math_dtype",
    "promote",
    "short_name",
    "sum_dtype",
    "supported_names",
    "type_str",
    "wide_accumulator",
]


DTYPE_ALIASES = {
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "half": "f16",
    "float": "f32",
    "double": "f64",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
}
"""Other names of the language's dtypes, for a hint in a signature's error."""

WEAK_PARAMS = {"float": False, "int": True}
"""A signature's weak scalar parameters (``s: float``, ``n: int``): typed like a Python
float or int given at run time (the value: whether it is an integer)."""
