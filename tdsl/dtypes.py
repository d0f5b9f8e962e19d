"""The element types tdsl computes in, and their names: the one table everything uses.

Kept free of xDSL so that the JIT can import it cheaply; the xDSL element
types (``f16``, ``f32``, ``f64``) are mapped in :mod:`tdsl.dialects.structured`.
"""

from __future__ import annotations

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

INDEX_DTYPES: dict[str, np.dtype[Any]] = {
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}
"""Integers, by short name: index inputs of ``take`` (a gather); the language does not
compute on integers yet."""

DTYPES: dict[str, np.dtype[Any]] = {"bool": BOOL_DTYPE, **FLOAT_DTYPES, **INDEX_DTYPES}
"""Every element dtype, by short name (``bool``, ``f16``, ``f32``, ``f64``, ``i32``,
``i64``)."""

SHORT_NAMES: dict[str, str] = {dtype.name: short for short, dtype in DTYPES.items()}
"""NumPy dtype name (``float32``, ``bool``) -> short name (``f32``, ``bool``)."""

PROMOTION_RANK: dict[str, int] = {"bool": -1, "f16": 0, "f32": 1, "f64": 2}
"""The order of NumPy's promotion: a binary op computes in the higher rank (a bool
meeting a float becomes that float)."""


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
    "BOOL_DTYPE",
    "DTYPES",
    "FLOAT_DTYPES",
    "INDEX_DTYPES",
    "PROMOTION_RANK",
    "SHORT_NAMES",
    "dtype_expr",
    "short_name",
    "type_str",
    "wide_accumulator",
]
