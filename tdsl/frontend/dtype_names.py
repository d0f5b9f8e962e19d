"""The dtypes a user may name (``"f32"``, ``"float32"``, ``np.float32``,
``np.dtype("f4")``) and the element types they stand for."""

from __future__ import annotations

from typing import Any, TypeAlias, cast

import numpy as np
from xdsl.ir import Attribute

from tdsl.dialects.structured import ELEMENT_TYPES
from tdsl.dtypes import AMBIGUOUS_CODES, SHORT_NAMES
from tdsl.errors import TdslTypeError

DTypeLike: TypeAlias = str | np.dtype[Any] | type[Any]
"""A dtype as a user may spell it: ``"f32"``, ``"float32"``, ``np.float32``, ``np.dtype("f4")``."""


def element_type_of(dtype: DTypeLike) -> Attribute:
    """The element type for a dtype spelled ``"f32"``, ``"float32"``, ``np.float32``, ...

    Raises :class:`TdslTypeError` for anything but bool, float16, float32, float64,
    int32, int64, uint8 and uint64.
    """
    if isinstance(dtype, str) and dtype in ELEMENT_TYPES:
        return ELEMENT_TYPES[dtype]
    if isinstance(dtype, str) and dtype in AMBIGUOUS_CODES:
        bits = f"int{8 * int(dtype[1])}"
        raise TdslTypeError(
            f"dtype `{dtype}` is ambiguous: NumPy's code for {bits} ({dtype[1]} bytes), where "
            "tdsl's names count bits (`u8` is uint8) as MLIR's do; write the name "
            f"(`{bits}`) or its bits (`i{8 * int(dtype[1])}`)"
        )
    resolved = _numpy_dtype(dtype)
    if resolved is not None and not resolved.isnative:
        raise TdslTypeError(
            f"dtype {_show_dtype(cast(Any, dtype))} is in non-native byte order "
            f"({resolved.str}): a compiled kernel computes on native-order arrays; name "
            f"`{resolved.newbyteorder('=').name}` and convert arrays with "
            "`a.astype(a.dtype.newbyteorder('='))`"
        )
    short = None if resolved is None else SHORT_NAMES.get(resolved.name)
    if short is None:
        raise TdslTypeError(
            f"unsupported dtype {_show_dtype(cast(Any, dtype))}; expected bool, float16, float32, "
            "float64, int32, int64, uint8 or uint64 (also spelled f16, f32, f64, i32, i64, u8, u64)"
        )
    return ELEMENT_TYPES[short]


def _is_dtype_class(dtype: object) -> bool:
    return isinstance(dtype, type) and issubclass(dtype, np.dtype)


def _numpy_dtype(dtype: Any) -> np.dtype[Any] | None:
    """``np.dtype(dtype)``, also for a dtype class such as ``np.dtypes.Float32DType``."""
    spec: Any = getattr(dtype, "type", None) if _is_dtype_class(dtype) else dtype
    try:
        return np.dtype(spec)
    except Exception:  # NumPy raises TypeError, ValueError, ... for what is no dtype
        return None


def _show_dtype(dtype: object) -> str:
    if isinstance(dtype, type):
        return f"`{dtype.__module__}.{dtype.__qualname__}`"
    return f"`{dtype}`"


__all__ = ["DTypeLike", "element_type_of"]
