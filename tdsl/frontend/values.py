"""The values an expression computes while it is lowered: a tensor (an SSA value with
its static shape and element type), a weak literal folded like Python, a weak scalar
known at run time, or a tuple of them (a join's operands)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from xdsl.ir import Attribute, SSAValue

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
    an ``i64[]`` one typed like a Python int (``integer``).

    A weak scalar input, or arithmetic between weak values and literals only.
    """

    value: SSAValue
    integer: bool = False


@dataclass(frozen=True)
class TupleValue:
    """Several values: a tuple or list the source writes (``(a, b)``), the operands of a
    join."""

    items: tuple[TensorValue | LiteralValue | WeakValue, ...]
    spans: tuple[Span, ...]


Value: TypeAlias = TensorValue | LiteralValue | WeakValue | TupleValue


__all__ = ["LiteralValue", "TensorValue", "TupleValue", "Value", "WeakValue"]
