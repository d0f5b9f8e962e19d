"""Comparisons of ``uint64`` with signed integers, exact as NumPy's.

Their common dtype is ``float64`` (``np.result_type(uint64, int64)``), which cannot
tell ``2**63`` from ``2**63 - 1``; NumPy compares the two exactly.  So does tdsl:
``u < s`` is false where ``s`` is negative (``u >= 0 > s``), and elsewhere it is the
comparison of ``u`` with ``s`` read as ``uint64`` (the same value there).  Written in
existing ops: ``less``, a ``cast`` (``int64 -> uint64`` keeps the bits), the
comparison and an ``and``/``or`` with the sign.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import INT_TYPES
from tdsl.frontend.ast import Span
from tdsl.frontend.values import TensorValue

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


__all__ = ["compare_mixed"]
