"""Reductions over a tuple of axes (``sum(x, axis=(0, 2))``), as NumPy reads them, written
as reductions over one axis each: the language's ops reduce one axis (or all).

``sum``, ``max``, ``min``, ``logsumexp``, ``all`` and ``any`` over
several axes are the same reduction nested, one axis at a time (the last axis first, so
that the others keep their positions without ``keepdims``); ``mean`` is the nested sum
divided once by the count, as NumPy's; float16 operands of a
reduction that accumulates in float32 are converted once, before, and the result once,
after, so nothing rounds to float16 in between.  ``prod`` is over the reduced axes moved last
and merged, in NumPy's (memory) order.  ``var`` and ``std`` are NumPy's own
two-pass formula: ``sum((x - mean(x)) ** 2) / max(n - ddof, 0)`` (and its square root),
with ``n`` the number of elements reduced.  An empty tuple reduces nothing: the operand
(compared with zero for ``all``/``any``; plus ``0.0`` for a float ``sum`` or ``mean``,
whose ``-0.0`` NumPy's zeroed result makes ``+0.0``; a variance of zeros, as NumPy's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from xdsl.dialects.builtin import AnyFloat, f16, f32

from tdsl.dialects import tensordsl as td
from tdsl.errors import TdslTypeError, internal_error
from tdsl.frontend.ast import Call, Span
from tdsl.frontend.values import LiteralValue, TensorValue, Value

if TYPE_CHECKING:
    from tdsl.frontend.lower_expr import FunctionLowering


def reduce_over_axes(
    lowering: FunctionLowering,
    op: type[td.ReductionOp],
    node: Call,
    operand: Value,
    span: Span,
    params: Mapping[str, object],
) -> TensorValue:
    """``op`` of ``operand`` over the tuple ``params["axis"]`` (non-negative, distinct)."""
    axes = cast(tuple[int, ...], params["axis"])
    keepdims = bool(params["keepdims"])
    x = lowering.tensor(operand, span)
    if issubclass(op, td.LogicalReductionOp):
        x = lowering.truth(x, span)
    else:  # integers and booleans as over one axis (`mean` and `var` of integers: float64)
        (x,) = lowering.unify([(x, span)], op, f"`{node.func}`", node.span)
    shape = x.shape
    if op.NEEDS_ELEMENTS and any(shape[a] == 0 for a in axes):
        shown = ", ".join(str(a) for a in axes)
        raise TdslTypeError(
            f"`{node.func}` over axes ({shown}) of {lowering.describe(x)} reduces zero "
            "elements, and it has no identity",
            lowering.where(node.span),
        )
    element = x.element
    wide = element == f16 and (op.WIDE or issubclass(op, td.VarianceOp))
    if wide:
        x = lowering.emit(td.CastOp(x.value, f32), node.span)
    if issubclass(op, td.VarianceOp):
        result = _variance(lowering, op, x, axes, keepdims, params, node)
    elif op.ORDERED and len(axes) > 1:
        result = _in_memory_order(lowering, op, x, axes, keepdims, node.span)
    elif op is td.MeanOp:
        result = _mean(lowering, x, axes, keepdims, node)
    else:
        result = _nested(lowering, op, x, axes, keepdims, node)
    if wide:
        result = lowering.emit(td.CastOp(result.value, element), node.span)
    return result


def _nested(
    lowering: FunctionLowering,
    op: type[td.ReductionOp],
    x: TensorValue,
    axes: Sequence[int],
    keepdims: bool,
    node: Call,
) -> TensorValue:
    for axis in sorted(axes, reverse=True):
        x = lowering.emit(op(x.value, axis, keepdims), node.span)
    if not axes and op in (td.SumOp, td.MeanOp) and isinstance(x.element, AnyFloat):
        # NumPy adds into a zeroed result: ``-0.0`` comes out ``+0.0``
        zero = LiteralValue(0.0, node.span)  # (weak: x's dtype)
        added = lowering.binary(td.AddOp, f"`{node.func}`", [x, zero], (node.span,) * 2, node.span)
        x = lowering.tensor(added, node.span)
    return x


def _mean(
    lowering: FunctionLowering, x: TensorValue, axes: Sequence[int], keepdims: bool, node: Call
) -> TensorValue:
    """NumPy's ``mean`` over ``axes``: the sum over them, divided once by the count (a
    mean of means, divided on each axis, rounds where NumPy does not: over (0, 1) of
    int32 extremes whose row means cancel, 6e-8 off relative in float64 in the test's
    arrays, 4e-6 in the fuzzer's)."""
    if len(axes) < 2:
        return _nested(lowering, td.MeanOp, x, axes, keepdims, node)
    total = _nested(lowering, td.SumOp, x, axes, keepdims, node)
    count = lowering.literal(float(math.prod(x.shape[a] for a in axes)), total.element, node.span)
    return lowering.emit(td.DivOp(total.value, count.value), node.span)


def _in_memory_order(
    lowering: FunctionLowering,
    op: type[td.ReductionOp],
    x: TensorValue,
    axes: Sequence[int],
    keepdims: bool,
    span: Span,
) -> TensorValue:
    """``prod`` over several axes as NumPy multiplies, in memory order: over the reduced
    axes moved last (in their order) and merged into one, nested products would be
    another product (``1e30 * 1e30 * 1e-30`` is inf, ``1e30 * (1e30 * 1e-30)`` 1e30)."""
    kept = [a for a in range(len(x.shape)) if a not in axes]
    order = [*kept, *sorted(axes)]
    moved = x if order == sorted(order) else lowering.emit(td.TransposeOp(x.value, order), span)
    # (the merged extent written out: a reshape of zero elements cannot infer a -1)
    merged_shape = [x.shape[a] for a in kept] + [math.prod(x.shape[a] for a in axes)]
    merged = lowering.emit(td.ReshapeOp(moved.value, merged_shape), span)
    result = lowering.emit(op(merged.value, -1, False), span)
    if keepdims:
        shape = [1 if a in axes else n for a, n in enumerate(x.shape)]
        result = lowering.emit(td.ReshapeOp(result.value, shape), span)
    return result


def _variance(
    lowering: FunctionLowering,
    op: type[td.ReductionOp],
    x: TensorValue,
    axes: Sequence[int],
    keepdims: bool,
    params: Mapping[str, object],
    node: Call,
) -> TensorValue:
    """NumPy's ``_var``: the deviations from the mean, squared, summed, divided by
    ``max(n - ddof, 0)``; ``std`` takes the square root."""
    span = node.span
    ddof = params.get("ddof", 0.0)
    if not isinstance(ddof, float | int):
        raise internal_error(
            f"frontend: `ddof` of `{node.func}` is {ddof!r}, not a number",
            location=lowering.where(span),
        )
    count = math.prod(x.shape[a] for a in axes)
    mean = _mean(lowering, x, axes, True, node)
    deviation = lowering.emit(td.SubOp(x.value, mean.value), span)
    square = lowering.emit(td.MulOp(deviation.value, deviation.value), span)
    total = _nested(lowering, td.SumOp, square, axes, keepdims, node)
    divisor = lowering.literal(max(count - float(ddof), 0.0), total.element, span)
    result = lowering.emit(td.DivOp(total.value, divisor.value), span)
    if op is td.StdOp:
        result = lowering.emit(td.SqrtOp(result.value), span)
    return result
