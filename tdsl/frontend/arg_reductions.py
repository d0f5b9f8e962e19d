"""``argmax`` and ``argmin`` (:mod:`tdsl.dialects.tensordsl.arg_reductions`) written as
ops: for ``x`` and ``axis``,

    m   = max(x, axis, keepdims=True)              # nan where the row has a nan
    hit = (x == m) | isnan(x)                      # the extremes (isnan only for floats)
    arg = min(where(hit, index, n), axis)          # the first of them

where ``index`` is the position along ``axis`` (a small ``int64`` constant of that axis,
broadcast), and ``n`` the axis' extent.  Without an axis, ``index`` is the flat
position, ``sum(i_k * stride_k)`` of one small constant per axis, and the reductions
run over all axes.  A row of ``nan``-free values finds its extreme; one with a ``nan``
finds its first ``nan``, as NumPy does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import i64
from xdsl.ir import Operation

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import BOOL, is_int
from tdsl.errors import TdslTypeError, internal_error
from tdsl.frontend.ast import Call, Span
from tdsl.frontend.values import TensorValue, Value

if TYPE_CHECKING:
    from tdsl.frontend.lower_expr import FunctionLowering


def lower_arg_reduction(
    lowering: FunctionLowering,
    node: Call,
    args: Sequence[Value],
    spans: Sequence[Span],
    params: Mapping[str, object],
) -> TensorValue:
    """The ops of ``node``, a call of ``argmax`` or ``argmin``."""
    info = td.ARG_FUNCTIONS[0] if node.func == "argmax" else td.ARG_FUNCTIONS[1]
    span = node.span
    x = lowering.tensor(args[0], spans[0])
    if x.element == BOOL:
        x = lowering.emit(td.CastOp(x.value, i64), span)
    axis = params["axis"]
    keepdims = bool(params["keepdims"])
    if axis is not None and not isinstance(axis, int):
        raise internal_error(
            f"frontend: `axis` of `{node.func}` is {axis!r}, not an integer",
            location=lowering.where(node.span),
        )
    rank = len(x.shape)
    if axis is not None:
        axis = axis % rank
    extent = math.prod(x.shape) if axis is None else x.shape[axis]
    if extent == 0:
        where = "" if axis is None else f" along axis {axis}"
        raise TdslTypeError(
            f"`{node.func}` of {lowering.describe(x)}{where} has no elements to pick from "
            "(NumPy: attempt to get the index of an empty sequence)",
            lowering.where(span),
        )
    if rank == 0:
        return lowering.literal(0, i64, span)

    def emit(op: Operation) -> TensorValue:
        return lowering.emit(op, span)

    extreme_op = td.MaxOp if info.LARGEST else td.MinOp
    m = emit(extreme_op(x.value, axis, keepdims=True))
    hit = emit(td.EqualOp(x.value, m.value))
    if not is_int(x.element):
        nan = emit(td.IsnanOp(x.value))
        hit = emit(td.OrOp(hit.value, nan.value))
    index = _positions(lowering, x.shape, axis, span)
    past = lowering.literal(extent, i64, span)
    candidates = emit(td.WhereOp(hit.value, index.value, past.value))
    return emit(td.MinOp(candidates.value, axis, keepdims=keepdims))


def _positions(
    lowering: FunctionLowering, shape: tuple[int, ...], axis: int | None, span: Span
) -> TensorValue:
    """The position of each element along ``axis`` (flat without one), as ``int64``
    constants of one axis each, broadcast against ``shape``."""
    rank = len(shape)
    axes = range(rank) if axis is None else (axis,)
    strides = [math.prod(shape[a + 1 :]) for a in range(rank)]
    total: TensorValue | None = None
    for a in axes:
        if axis is None and shape[a] == 1:
            continue  # always position 0
        along = np.arange(shape[a], dtype=np.int64) * (strides[a] if axis is None else 1)
        values = along.reshape([shape[a] if k == a else 1 for k in range(rank)])
        part = lowering.emit(td.ConstantOp(td.dense_from_numpy(values, i64)), span)
        total = part if total is None else lowering.emit(td.AddOp(total.value, part.value), span)
    if total is None:  # every extent is 1: position 0
        zeros = np.zeros((1,) * rank, dtype=np.int64)
        total = lowering.emit(td.ConstantOp(td.dense_from_numpy(zeros, i64)), span)
    return total


__all__ = ["lower_arg_reduction"]
