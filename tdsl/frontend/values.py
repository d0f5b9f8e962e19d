"""The values an expression computes while it is lowered: a tensor (an SSA value with
its static shape and element type), a weak literal folded like Python, a weak scalar
known at run time, or a tuple of them (a join's operands)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects.structured import BOOL, ELEMENT_TYPES, INT_TYPES
from tdsl.frontend.ast import Span


@dataclass(frozen=True)
class TensorValue:
    """A strongly typed value: an SSA value with its static shape and element type."""

    value: SSAValue
    shape: tuple[int, ...]
    element: Attribute
    """A float type, or ``i1`` for booleans."""


@dataclass(frozen=True)
class LiteralValue:
    """A weak scalar: a literal, or arithmetic between literals, folded like NumPy's
    Python scalars (an ``int`` stays one: ``1 + 1`` is the integer 2)."""

    value: int | float
    span: Span


@dataclass(frozen=True)
class WeakValue:
    """A weak scalar known at run time: an ``f64[]`` value typed like a Python float, or
    an ``i64[]`` one typed like a Python int (``integer``), or like a Python bool
    (``boolean``: 0 or 1 in an ``i64[]``).

    A weak scalar input, or arithmetic between weak values and literals only; a Python
    bool is their comparison (``s < 0``): an int in arithmetic with other Python numbers
    (``2 * (s < 0)`` is a Python int, ``(s < 0) + (s < 0)`` is 2), and a bool where it
    meets a tensor (which keeps its dtype) or a function (``exp`` of it is a float16).
    """

    value: SSAValue
    integer: bool = False
    boolean: bool = False


@dataclass(frozen=True)
class TupleValue:
    """Several values: a tuple or list the source writes (``(a, b)``), the operands of a
    join."""

    items: tuple[TensorValue | LiteralValue | WeakValue, ...]
    spans: tuple[Span, ...]


Value: TypeAlias = TensorValue | LiteralValue | WeakValue | TupleValue


def dtype_name(element: Attribute) -> str:
    """The language's name of an element type: ``f16``, ``f32``, ``i64``, ``bool``..."""
    for name, candidate in ELEMENT_TYPES.items():
        if element == candidate:
            return name
    raise AssertionError(f"not a tensordsl element type: {element}")


def format_type(element: Attribute, shape: Sequence[int]) -> str:
    """A type in the language's own syntax: ``f32[4, 8]``, ``f64[]``."""
    return f"{dtype_name(element)}[{', '.join(str(d) for d in shape)}]"


def is_bool(value: Value) -> bool:
    """Whether ``value`` is a boolean tensor."""
    return isinstance(value, TensorValue) and value.element == BOOL


def describe(value: Value) -> str:
    """``value``'s type as error messages show it: ``f32[3]``, ``int (the number 2)``."""
    if isinstance(value, LiteralValue):
        if isinstance(value.value, int):
            return f"int (the number {value.value})"
        return f"f64[] (the number {value.value:g})"
    if isinstance(value, WeakValue) and value.boolean:
        return "bool (a Python bool)"
    if isinstance(value, WeakValue):
        return "i64[] (a weak int)" if value.integer else "f64[] (a weak scalar)"
    if isinstance(value, TupleValue):
        return f"a tuple of {len(value.items)}"
    return format_type(value.element, value.shape)


def is_python_bool(value: Value) -> bool:
    """Whether ``value`` is a Python bool (a comparison of weak values and literals)."""
    return isinstance(value, WeakValue) and value.boolean


def is_number(value: Value) -> bool:
    """Whether ``value`` is a number, not a boolean: an integer or float tensor, a
    literal or a weak scalar."""
    if isinstance(value, TensorValue):
        return value.element != BOOL
    return isinstance(value, LiteralValue | WeakValue)


def mixes_uint64(args: Sequence[Value]) -> bool:
    """Whether ``args`` hold a ``uint64`` tensor and a signed integer one."""
    elements = {v.element for v in args if isinstance(v, TensorValue)}
    return INT_TYPES["u64"] in elements and bool(elements & {INT_TYPES["i32"], INT_TYPES["i64"]})


MAX_RANK = 64
"""The most dims a value may have: NumPy's arrays have at most 64 (``NPY_MAXDIMS``)."""


def check_rank(op: Operation) -> None:
    """A ``VerifyException`` where ``op`` makes a tensor of more dims than NumPy's arrays
    have (a reshape to 65 dims compiled, and every call failed in NumPy)."""
    for result in op.results:
        if isinstance(result.type, TensorType) and len(result.type.get_shape()) > MAX_RANK:
            rank = len(result.type.get_shape())
            raise VerifyException(
                f"this makes a tensor of {rank} dims, and NumPy's arrays have at most {MAX_RANK}"
            )


__all__ = [
    "LiteralValue",
    "TensorValue",
    "TupleValue",
    "Value",
    "WeakValue",
    "check_rank",
    "describe",
    "dtype_name",
    "format_type",
    "is_bool",
    "is_number",
    "is_python_bool",
    "mixes_uint64",
]
