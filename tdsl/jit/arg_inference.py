"""What a one-shot call (``jit(source, **values)``, ``@jit_tensor``, eager evaluation)
compiles each argument for: its shape and dtype, or a weak Python number."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from tdsl.array_types import array_type_of
from tdsl.dtypes import SHORT_NAMES as ELEMENT_NAMES
from tdsl.dtypes import supported_names
from tdsl.errors import TdslCallError
from tdsl.jit.trace_names import holds_traced, traced_argument
from tdsl.jit.values import (
    INT64_MAX,
    INT64_MIN,
    Array,
    describe,
    is_numpy_scalar,
    is_python_number,
    scalar_dtype,
)


def infer(name: str, value: object) -> tuple[tuple[int, ...], object]:
    """The shape and dtype a one-shot call compiles argument ``name`` for.

    An array: its shape and dtype (float16/32/64, native byte order).  A NumPy
    scalar: a 0-d input of its dtype.  A Python ``int`` or ``float``: a weak
    0-d input (dtype ``int`` or ``float``, see :data:`tdsl.frontend.ir_gen.WEAK`; an
    int beyond int64 is a weak float).
    Anything else, a ``bool`` included, is a TdslCallError.
    """
    if isinstance(value, np.ndarray):
        dtype = cast(Array, value).dtype
        check_dtype(name, dtype)
        return cast(Array, value).shape, dtype
    foreign = array_type_of((value,))
    if foreign is not None:
        shape = foreign.shape(name, value)
        dtype = np.dtype(cast(Any, value).dtype)
        check_dtype(name, dtype)
        return shape, dtype
    if isinstance(value, bool):
        # (a NumPy bool is a 0-d bool input, below; a Python bool is not a weak number)
        raise TdslCallError(
            f"argument `{name}` is a Python bool ({value!r}): pass np.bool_({value!r}) or a "
            f"bool array for a boolean input, or a number ({float(value)!r})"
        )
    if is_numpy_scalar(value):
        dtype = scalar_dtype(value)
        check_dtype(name, dtype)
        return (), dtype
    if isinstance(value, int) and INT64_MIN <= value <= INT64_MAX:
        return (), int  # a weak integer, as NumPy 2 types a Python int (NEP 50)
    if is_python_number(value):
        return (), float  # a Python float, or an int beyond int64 (as a float)
    if holds_traced(value):
        traced_argument(f"argument `{name}`")
    raise TdslCallError(
        f"argument `{name}` must be a NumPy array or a Python int or float, got {describe(value)}"
    )


def check_dtype(name: str, dtype: np.dtype[Any]) -> None:
    """Refuse an argument of a dtype tdsl does not compute on, or in non-native byte order."""
    if dtype.name not in ELEMENT_NAMES:
        raise TdslCallError(
            f"argument `{name}` has dtype {dtype}; tdsl computes on {supported_names()}"
        )
    if not dtype.isnative:
        raise TdslCallError(
            f"argument `{name}` has non-native byte order ({dtype.str}); convert it with "
            f"`.astype(np.{dtype.name})`"
        )


__all__ = ["check_dtype", "infer"]
