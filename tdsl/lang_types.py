"""The types of :mod:`tdsl.lang`'s functions and parameters: :data:`Array`, :data:`Operand`,
the dtype classes that annotate a ``@tdsl.function``'s parameters (``x: f32[4, 8]``,
a :class:`TensorSpec` at run time), and :func:`call`, which runs one function of the
language eagerly.  :mod:`tdsl.lang` re-exports them.

``f16``, ``f32``, ``f64``, ``i32``, ``i64``, ``u8``, ``u64`` and ``bool_`` type a parameter as a ``.tdsl``
signature does: ``x: f32[64, 32]`` (``f32[()]`` is 0-d; ``bool_`` because
Python's ``bool`` cannot be subscripted).  To a type checker each is an
``ndarray`` of that dtype; pyright accepts the integer subscript, mypy does
not: there, write ``x: Annotated[Array, "f32[64, 32]"]``, which
``@tdsl.function`` reads too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

Array: TypeAlias = NDArray[Any]
"""What every function returns: a NumPy array (0-d for a full reduction)."""

DTypeLike: TypeAlias = "str | type[Any] | np.dtype[Any]"
"""A dtype a creation function takes: ``np.float32``, ``float``, ``"float32"``, ``"f32"``."""

Operand: TypeAlias = "NDArray[Any] | np.generic[Any] | float"
"""What every function takes: an array (bool, float16, float32, float64, int32 or
int64), a NumPy scalar, or a Python number (a weak scalar, typed like a literal)."""


class TensorSpec:
    """``f32[4, 8]`` at run time: a dtype and a shape, as in a ``.tdsl`` signature."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype: str, shape: tuple[int, ...]) -> None:
        self.dtype = dtype
        self.shape = shape

    def __repr__(self) -> str:
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorSpec) and (self.dtype, self.shape) == (
            other.dtype,
            other.shape,
        )

    def __hash__(self) -> int:
        return hash((self.dtype, self.shape))


def _spec(dtype: str, item: object) -> TensorSpec:
    dims: tuple[object, ...] = item if isinstance(item, tuple) else (item,)  # pyright: ignore[reportUnknownVariableType]
    shape: list[int] = []
    for dim in dims:  # pyright: ignore[reportUnknownVariableType]
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
            raise TypeError(f"{dtype}[...] takes non-negative integer dims, got {dim!r}")
        shape.append(dim)
    return TensorSpec(dtype, tuple(shape))


class f16(np.ndarray[Any, np.dtype[np.float16]]):
    """A float16 parameter: ``x: f16[4, 8]``."""

    def __class_getitem__(cls, item: Any) -> Any:
        return _spec("f16", item)


class f32(np.ndarray[Any, np.dtype[np.float32]]):
    """A float32 parameter: ``x: f32[4, 8]``."""

    def __class_getitem__(cls, item: Any) -> Any:
        return _spec("f32", item)


class f64(np.ndarray[Any, np.dtype[np.float64]]):
    """A float64 parameter: ``x: f64[4, 8]``."""

    def __class_getitem__(cls, item: Any) -> Any:
        return _spec("f64", item)


class i32(np.ndarray[Any, np.dtype[np.int32]]):
    """An int32 parameter: ``t: i32[8]``."""

    def __class_getitem__(cls, item: Any) -> Any:
        return _spec("i32", item)


class i64(np.ndarray[Any, np.dtype[np.int64]]):
    """An int64 parameter: ``t: i64[8]``."""

    def __class_getitem__(cls, item: Any) -> Any:
        return _spec("i64", item)


class u8(np.ndarray[Any, np.dtype[np.uint8]]):
    """A uint8 parameter: ``t: u8[8]``."""

    def __class_getitem__(cls, item: Any) -> Any:
        return _spec("u8", item)


class u64(np.ndarray[Any, np.dtype[np.uint64]]):
    """A uint64 parameter: ``t: u64[8]``."""

    def __class_getitem__(cls, item: Any) -> Any:
        return _spec("u64", item)


class bool_(np.ndarray[Any, np.dtype[np.bool_]]):
    """A boolean parameter: ``m: bool_[4, 8]`` (``bool[4, 8]`` in a ``.tdsl`` file)."""

    def __class_getitem__(cls, item: Any) -> Any:
        return _spec("bool", item)


DTYPE_CLASSES: dict[str, type[Any]] = {
    "f16": f16,
    "f32": f32,
    "f64": f64,
    "i32": i32,
    "i64": i64,
    "u8": u8,
    "u64": u64,
    "bool_": bool_,
}
"""The dtype names a parameter annotation may use, by their Python name."""


def call(
    function: str,
    args: tuple[Operand, ...],
    keywords: Mapping[str, object] = {},
    *,
    sequence: bool = False,
) -> Array:
    """``function`` of the language on ``args`` and ``keywords``, run eagerly (``args`` as
    one tuple where ``sequence``: a join's operands)."""
    from tdsl.eager import evaluate

    return evaluate(function, args, keywords, sequence=sequence)


def call_parts(
    function: str, args: tuple[Operand, ...], keywords: Mapping[str, object] = {}
) -> list[Array]:
    """``function`` of the language, a split, on ``args`` and ``keywords``, run eagerly:
    its parts."""
    from tdsl.eager import evaluate_parts

    return evaluate_parts(function, args, keywords)


__all__ = [
    "DTYPE_CLASSES",
    "Array",
    "DTypeLike",
    "Operand",
    "TensorSpec",
    "bool_",
    "call",
    "call_parts",
    "f16",
    "f32",
    "f64",
]
