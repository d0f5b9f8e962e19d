"""Arithmetic between literals, folded at compile time as NumPy computes Python
scalars: integers exactly, as Python ints (NumPy meets them as such: ``x + 2**63``
adds 9223372036854775808 to a float array), floats in float64."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.ir import Operation

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import is_int
from tdsl.errors import TdslIRError
from tdsl.frontend.ast import Span
from tdsl.frontend.functions import OPERATOR_OPS
from tdsl.frontend.integer_power import integer_power
from tdsl.frontend.values import LiteralValue, TensorValue, Value, WeakValue

if TYPE_CHECKING:
    from tdsl.frontend.lower_expr import FunctionLowering

_EXACT_BITS = 4096
"""The widest integer literal arithmetic folds to (far beyond any dtype's range)."""


def _fold_ints(op: str, a: int, b: int) -> int | None:
    """``a <op> b`` of two integer literals, exact as Python computes them (NumPy meets
    them as Python ints: ``x + 2**63`` adds 9223372036854775808), with NumPy's ``0`` for
    a zero divisor; None where the op is not exact integer arithmetic (``/``, a
    negative power or shift: computed as before)."""
    match op:
        case "+":
            return a + b
        case "-":
            return a - b
        case "*":
            return a * b
        case "//":
            return 0 if b == 0 else a // b
        case "%":
            return 0 if b == 0 else a % b
        case "^":
            return a ^ b
        case "&":
            return a & b
        case "|":
            return a | b
        case "**" if b >= 0:
            if abs(a) > 1 and b * max(a.bit_length() - 1, 1) > _EXACT_BITS:
                raise OverflowError(f"{a} ** {b} has more than {_EXACT_BITS} bits")
            return a**b
        case "<<" if b >= 0:
            if a and b + a.bit_length() > _EXACT_BITS:
                raise OverflowError(f"{a} << {b} has more than {_EXACT_BITS} bits")
            return a << b
        case ">>" if b >= 0:
            return a >> b
        case _:
            return None


def fold(op: str, a: int | float, b: int | float) -> int | float:
    """``a <op> b`` of two literals, as NumPy computes Python scalars: integers exactly
    (Python ints; a zero divisor gives 0, as NumPy's, never ZeroDivisionError; ``/``
    gives a float), floats in float64 (IEEE rules).  An integer too large for a float
    where a float is needed raises :class:`OverflowError`, as NumPy does."""
    # (Python's float power is C's pow: no sqrt for 0.5, as NumPy's power of scalars has)
    name = "float_power" if op == "**" else OPERATOR_OPS[op].NUMPY_UFUNC
    if name is None:  # every operator's op names its NumPy counterpart
        raise TdslIRError(f"cannot fold the literals of '{op}': its op names no NumPy ufunc")
    ints = isinstance(a, int) and isinstance(b, int)
    if ints:
        exact = _fold_ints(op, a, b)
        if exact is not None:
            return exact
    with np.errstate(all="ignore"):
        if ints:  # (`/`, a negative shift)
            try:
                value = getattr(np, name)(np.int64(a), np.int64(b))
            except (OverflowError, ValueError):  # beyond int64, or a negative power
                value = getattr(np, name)(np.float64(a), np.float64(b))
        else:  # float64 (an int beyond its range: OverflowError, as NumPy's conversion;
            # a float shift or xor: NumPy's TypeError)
            value = getattr(np, name)(np.float64(a), np.float64(b))
    return int(value) if np.dtype(value.dtype).kind == "i" else float(value)


def python_int_bitwise(op: str, args: Sequence[Value]) -> type[td.BinaryOp] | None:
    """The op of ``&`` or ``|`` between Python ints (integer literals, weak integers):
    bitwise, computed as NumPy computes Python ints (a boolean ``&`` takes arrays of
    booleans); None for any other operator or operands."""
    if op not in ("&", "|"):
        return None
    if not all(
        (isinstance(v, LiteralValue) and type(v.value) is int)
        or (isinstance(v, WeakValue) and v.integer)
        for v in args
    ):
        return None
    return td.BitwiseAndOp if op == "&" else td.BitwiseOrOp


def python_unary(
    emit: Callable[[Operation, Span], TensorValue],
    op: type[td.NegOp | td.AbsOp],
    arg: Value,
    span: Span,
    fold: Callable[[int | float], int | float],
) -> LiteralValue | WeakValue | None:
    """``-s`` or ``abs(s)`` (``op``, ``fold`` on a literal) of a literal or weak scalar:
    Python's, a Python number (weak: ``x * abs(s)`` keeps a float32 ``x``'s type, where
    NumPy's ``np.abs(s)`` is a float64); None for a tensor."""
    if isinstance(arg, LiteralValue):
        return LiteralValue(fold(arg.value), span)
    if isinstance(arg, WeakValue):
        return WeakValue(emit(op(arg.value), span).value, arg.integer)
    return None


def weak_arithmetic(
    lowering: FunctionLowering,
    op_class: type[td.BinaryOp],
    args: Sequence[Value],
    spans: Sequence[Span],
    span: Span,
) -> WeakValue:
    """``a <op> b`` of weak values and literals: computed in int64 or float64, as
    NumPy computes Python scalars, still weak (a weak int to a literal int power:
    Python's int, or float for a negative exponent; a float power C's ``pow``)."""
    booleans = all(isinstance(v, WeakValue) and v.boolean for v in args)
    args = [WeakValue(v.value, True) if isinstance(v, WeakValue) and v.boolean else v for v in args]
    a, n = args  # (a Python bool is an int: `(s < 0) + (s < 0)` is 2)
    if op_class is td.PowerOp and isinstance(n, LiteralValue) and isinstance(n.value, int):
        if n.value < 0:
            args = [a, LiteralValue(float(n.value), n.span)]
        elif power := integer_power(lowering, args, (spans[0], spans[1]), span):
            return WeakValue(power.value, True)
    if op_class is td.PowerOp and float in (lowering.weak_kind(v) for v in args):
        op_class = td.FloatPowerOp
    what = f"`{op_class.OPERATOR or op_class.FUNCTION}`"
    a, b = lowering.unify(list(zip(args, spans, strict=True)), op_class, what, span)
    result = lowering.emit(op_class(a.value, b.value), span)
    boolean = booleans and issubclass(op_class, td.BitwiseOp)  # (True & False: False)
    return WeakValue(result.value, is_int(result.element), boolean)


__all__ = ["fold", "python_int_bitwise", "python_unary", "weak_arithmetic"]
