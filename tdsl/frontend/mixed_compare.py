"""Comparisons of integers that NumPy makes exactly, and booleans meeting a Python int.

- An integer tensor compared with a Python-int literal beyond its dtype
  (``x < 2**40`` of an ``int32`` ``x``): NumPy 2 compares the values (where arithmetic
  with such a literal is its ``OverflowError``); every element gives the same answer,
  written as a comparison with the dtype's bound (:func:`compare_python_int`).
- The same with a weak integer input, whose value is known only at run time: the
  comparison is made in ``int64`` (the same function).
- ``&`` and ``|`` of booleans and a Python int: the booleans as ``int64``, as NumPy 2
  computes them (:func:`booleans_with_int`).

Comparisons of ``uint64`` with signed integers, exact as NumPy's.

Their common dtype is ``float64`` (``np.result_type(uint64, int64)``), which cannot
tell ``2**63`` from ``2**63 - 1``; NumPy compares the two exactly.  So does tdsl:
``u < s`` is false where ``s`` is negative (``u >= 0 > s``), and elsewhere it is the
comparison of ``u`` with ``s`` read as ``uint64`` (the same value there).  Written in
existing ops: ``less``, a ``cast`` (``int64 -> uint64`` keeps the bits), the
comparison and an ``and``/``or`` with the sign.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import BOOL, INT_TYPES, is_int, numpy_dtype
from tdsl.errors import TdslTypeError
from tdsl.frontend.ast import Span
from tdsl.frontend.values import LiteralValue, TensorValue, Value, WeakValue

if TYPE_CHECKING:
    from tdsl.frontend.lower_expr import FunctionLowering

WHERE_NEGATIVE: dict[type[td.CompareOp], bool] = {
    td.LessOp: False,
    td.LessEqualOp: False,
    td.EqualOp: False,
    td.NotEqualOp: True,
    td.GreaterEqualOp: True,
    td.GreaterOp: True,
}
"""``u <op> s`` where the signed ``s`` is negative (so below every unsigned ``u``)."""

MIRRORED: dict[type[td.CompareOp], type[td.CompareOp]] = {
    td.LessOp: td.GreaterOp,
    td.LessEqualOp: td.GreaterEqualOp,
    td.EqualOp: td.EqualOp,
    td.NotEqualOp: td.NotEqualOp,
    td.GreaterEqualOp: td.LessEqualOp,
    td.GreaterOp: td.LessOp,
}
"""``a <op> b`` is ``b <MIRRORED[op]> a``."""


def compare_mixed(
    lowering: FunctionLowering,
    op: type[td.CompareOp],
    a: TensorValue,
    b: TensorValue,
    span: Span,
) -> TensorValue:
    """``a <op> b`` of a ``uint64`` and a signed integer tensor (either way round),
    exactly, as NumPy compares them."""
    u64, i64 = INT_TYPES["u64"], INT_TYPES["i64"]
    if a.element == u64:
        unsigned, signed = a, b
    else:
        unsigned, signed, op = b, a, MIRRORED[op]
    wide = lowering.to_element(signed, i64, span)
    zero = lowering.literal(0, i64, span)
    negative = lowering.emit(td.LessOp(wide.value, zero.value), span)
    same = lowering.to_element(wide, u64, span)
    compared = lowering.emit(op(unsigned.value, same.value), span)
    if WHERE_NEGATIVE[op]:
        return lowering.emit(td.OrOp(negative.value, compared.value), span)
    kept = lowering.emit(td.NotOp(negative.value), span)
    return lowering.emit(td.AndOp(kept.value, compared.value), span)


def compare_python_int(
    lowering: FunctionLowering,
    op: type[td.CompareOp],
    what: str,
    args: Sequence[Value],
    spans: tuple[Span, Span],
    span: Span,
) -> TensorValue | None:
    """``x <op> c`` (either way round) of an integer tensor ``x`` and a Python int ``c``
    exactly, as NumPy 2 compares them; None for other operands (and where the usual
    cast of ``c`` to ``x``'s dtype is exact).

    - A literal beyond ``x``'s dtype: every element gives the same answer, written as a
      comparison with the dtype's bound (``x <= max`` is true, ``x > max`` false).
    - A weak integer input and an ``int32`` or ``uint8`` ``x``: compared in ``int64``, not
      with ``c`` cast to ``x``'s dtype, which would make a value beyond it a call error.
      (``uint64`` and ``int64`` keep the cast: a value beyond them is a call error, the
      cast bounding the input.)"""
    x, c = args
    if not isinstance(x, TensorValue):
        x, c, op = c, x, MIRRORED[op]
    if not isinstance(x, TensorValue) or (dtype := numpy_dtype(x.element)).kind not in "iu":
        return None
    if isinstance(c, LiteralValue) and type(c.value) is int:
        info = np.iinfo(dtype)
        if info.min <= c.value <= info.max:
            return None
        if c.value < info.min:
            holds = WHERE_NEGATIVE[op]
        else:  # above every value of x
            holds = op in (td.LessOp, td.LessEqualOp, td.NotEqualOp)
        bound = LiteralValue(int(info.max), c.span)
        compare = td.LessEqualOp if holds else td.GreaterOp
        return lowering.binary(compare, what, [x, bound], spans, span)
    if isinstance(c, WeakValue) and c.integer and dtype.itemsize < 8:
        i64 = INT_TYPES["i64"]
        wide = TensorValue(c.value, (), i64)
        return lowering.emit(op(lowering.to_element(x, i64, span).value, wide.value), span)
    return None


def booleans_with_int(
    lowering: FunctionLowering, args: Sequence[Value], spans: Sequence[Span]
) -> list[Value] | None:
    """The operands of ``&``/``|`` of booleans and a Python int (a literal or a weak
    input) with the booleans as ``int64``, NumPy 2's dtype for them; else None."""

    def python_int(v: Value) -> bool:
        return (isinstance(v, LiteralValue) and type(v.value) is int) or (
            isinstance(v, WeakValue) and v.integer
        )

    booleans = [v for v in args if isinstance(v, TensorValue) and v.element == BOOL]
    ints = [v for v in args if python_int(v)]
    if not booleans or not ints or len(booleans) + len(ints) != len(args):
        return None
    i64 = INT_TYPES["i64"]
    return [
        lowering.to_element(v, i64, at) if isinstance(v, TensorValue) else v
        for v, at in zip(args, spans, strict=True)
    ]


def clip_operands(
    lowering: FunctionLowering, args: Sequence[Value], spans: Sequence[Span]
) -> list[Value]:
    """``clip``'s operands as NumPy 2 takes them: a Python number first is an array of it
    (``np.clip(2, x, 3)``), and a Python-int bound of an integer array beyond its dtype on
    its own side (``clip(u8, -5, 300)``) bounds nothing (it was refused as out of bounds),
    so it is the dtype's end; one beyond the other side is still the error, as NumPy's.
    A weak integer bound, known at call time, is clamped to that end in int64 first
    (``maximum(s, 0)`` for a uint8 lower bound), and the call checks only the other side
    (:func:`~tdsl.jit.weak_bounds.int_bounds`)."""
    first = args[0] if isinstance(args[0], TensorValue) else lowering.tensor(args[0], spans[0])
    bounds = list(args[1:])
    if is_int(first.element):
        info = np.iinfo(numpy_dtype(first.element))
        i64 = INT_TYPES["i64"]
        for side, (bound, at) in enumerate(zip(bounds[:2], spans[1:3], strict=False)):
            end = int(info.min if side == 0 else info.max)
            if isinstance(bound, LiteralValue) and type(bound.value) is int:
                if bound.value < info.min if side == 0 else bound.value > info.max:
                    bounds[side] = LiteralValue(end, bound.span)
            elif isinstance(bound, WeakValue) and bound.integer and end in _INT64_INSIDE:
                clamp = td.MaximumOp if side == 0 else td.MinimumOp
                limit = lowering.literal(end, i64, at)
                clamped = lowering.emit(clamp(bound.value, limit.value), at)
                bounds[side] = WeakValue(clamped.value, integer=True)
    return [first, *bounds]


_INT64_INSIDE = range(-(2**63) + 1, 2**63 - 1)
"""The ends of integer dtypes that a weak int (an int64) can lie beyond."""


def refuse_non_booleans(
    lowering: FunctionLowering, what: str, args: Sequence[Value], spans: Sequence[Span]
) -> None:
    """Refuse a non-boolean operand of ``&``, ``|`` or ``~`` (blamed before a Python int:
    ``s & 1.5`` is refused for its float)."""
    ints_last = sorted(zip(args, spans, strict=True), key=lambda p: lowering.weak_kind(p[0]) is int)
    for value, at in ints_last:
        if not isinstance(value, TensorValue) or value.element != BOOL:
            raise TdslTypeError(
                f"{what} takes booleans or integers, not {lowering.describe(value)}: compare "
                "first, e.g. `(a > 0) & (b < 1)`",
                lowering.where(at),
            )


__all__ = [
    "booleans_with_int",
    "clip_operands",
    "compare_mixed",
    "compare_python_int",
    "refuse_non_booleans",
]
