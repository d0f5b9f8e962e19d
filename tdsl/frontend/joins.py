"""Lowering joins: ``concatenate``, ``stack``, ``hstack`` and ``vstack`` of a tuple or
list of values, promoted to one dtype as ``np.concatenate`` does, written as
``expand_dims`` (where NumPy adds axes) and one ``tensordsl.concatenate``; and splits,
``split`` and ``array_split``: a tuple of windows (``tensordsl.slice``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import INDEX_TYPES, INT_TYPES, is_unsigned
from tdsl.dialects.tensordsl.gather import check_indices
from tdsl.errors import TdslIndexError, TdslTypeError, internal_error
from tdsl.frontend.ast import Call, Span
from tdsl.frontend.functions import FUNCTIONS
from tdsl.frontend.values import LiteralValue, TensorValue, TupleValue, Value, WeakValue

if TYPE_CHECKING:
    from tdsl.frontend.lower_expr import FunctionLowering

JOINS = frozenset({"concatenate", "stack", "hstack", "vstack"})
"""The functions :func:`lower_join` lowers."""
SPLITS = frozenset({"split", "array_split"})
"""The functions :func:`lower_split` lowers."""


def lower_join(
    lowering: FunctionLowering, node: Call, args: Sequence[Value], spans: Sequence[Span]
) -> TensorValue:
    """``node``, a join of the tuple or list that is its one argument."""
    info = FUNCTIONS[node.func]
    if len(args) != 1 or not isinstance(args[0], TupleValue):
        raise TdslTypeError(
            f"`{node.func}` joins a tuple or a list of tensors: {info.signature}",
            lowering.where(spans[0] if spans else node.span),
        )
    given = args[0]
    items = list(zip(given.items, given.spans, strict=True))
    tensors = lowering.unify(items, info.op, f"`{node.func}`", node.span)
    params = lowering.params(node, info, tensors[0])
    ranks = {len(t.shape) for t in tensors}
    try:
        match node.func:
            case "stack":
                shapes = {t.shape for t in tensors}
                if len(shapes) > 1:
                    raise td.ShapeError(
                        "all the operands of `stack` must have one shape, got "
                        + ", ".join(td.fmt_shape(s) for s in sorted(shapes))
                    )
                axis = _int_axis(lowering, node, params, len(tensors[0].shape) + 1)
                axis = td.normalize_axis(axis, len(tensors[0].shape) + 1)
                parts = [_expand(lowering, t, (axis,), node) for t in tensors]
            case "hstack":
                parts = [_at_least(lowering, t, 1, node) for t in tensors]
                axis = 0 if ranks <= {0, 1} else 1
            case "vstack":
                parts = [_at_least(lowering, t, 2, node) for t in tensors]
                axis = 0
            case _:
                if 0 in ranks:
                    raise td.ShapeError("zero-dimensional arrays cannot be concatenated")
                parts = tensors
                axis = _int_axis(lowering, node, params, len(tensors[0].shape))
        op = td.ConcatenateOp([p.value for p in parts], axis)
    except td.ShapeError as err:
        raise TdslTypeError(err.message, lowering.where(node.span)) from None
    return lowering.emit(op, node.span)


def _int_axis(
    lowering: FunctionLowering, node: Call, params: Mapping[str, object], rank: int
) -> int:
    """The ``axis`` parameter of a join or split (checked an integer by ``params()``), as
    given; one out of range for ``rank`` is an error at the parameter."""
    axis = params["axis"]
    if not isinstance(axis, int):
        raise internal_error(
            f"frontend: `axis` of `{node.func}` is {axis!r}, not an integer",
            location=lowering.where(node.span),
        )
    try:
        td.normalize_axis(axis, rank)
    except td.ShapeError as err:
        span = next((k.span for k in node.keywords if k.name == "axis"), node.span)
        raise TdslTypeError(err.message, lowering.where(span)) from None
    return axis


def lower_split(
    lowering: FunctionLowering, node: Call, args: Sequence[Value], spans: Sequence[Span]
) -> TupleValue:
    """``node``, a split of its one tensor: a tuple of windows along the axis."""
    info = FUNCTIONS[node.func]
    (value,) = args
    tensor = lowering.tensor(value, spans[0])
    params = lowering.params(node, info, tensor)
    sections = params["indices_or_sections"]
    axis = _int_axis(lowering, node, params, len(tensor.shape))
    if not isinstance(sections, int | tuple):
        raise internal_error(
            f"frontend: `indices_or_sections` of `{node.func}` is {sections!r}",
            location=lowering.where(node.span),
        )
    try:
        axis = td.normalize_axis(axis, len(tensor.shape))
        bounds = td.split_bounds(tensor.shape[axis], sections, node.func == "split")
    except td.ShapeError as err:
        raise TdslTypeError(err.message, lowering.where(node.span)) from None
    parts: list[TensorValue] = []
    for start, stop in bounds:
        index = [slice(start, stop) if a == axis else slice(None) for a in range(len(tensor.shape))]
        window = td.SliceOp.of(tensor.value, index)
        if td.tensor_shape(window.result) == tensor.shape:
            window.erase()
            parts.append(tensor)
        else:
            parts.append(lowering.emit(window, node.span))
    return TupleValue(tuple(parts), (node.span,) * len(parts))


def lower_take(
    lowering: FunctionLowering, node: Call, args: Sequence[Value], spans: Sequence[Span]
) -> TensorValue:
    """``take(a, indices, axis=None)``: a ``tensordsl.take`` (without an axis, of ``a``
    flattened, as NumPy)."""
    a = lowering.tensor(args[0], spans[0])
    indices = args[1]
    literal = isinstance(indices, LiteralValue) and type(indices.value) is int
    if literal or (isinstance(indices, WeakValue) and indices.integer and not indices.boolean):
        # one index, as NumPy's ``np.take(x, 0)``: a 0-d int64 index (a Python int's type)
        indices = lowering.to_element(indices, INT_TYPES["i64"], spans[1])
    if not isinstance(indices, TensorValue) or indices.element not in INDEX_TYPES:
        raise TdslTypeError(
            "the indices of `take` are a tensor of int32, int64 or uint8; floats and booleans are "
            "not indices",
            lowering.where(spans[1]),
        )
    if is_unsigned(indices.element):  # NumPy gathers by uint8 too: exactly, as int64
        indices = lowering.to_element(indices, INT_TYPES["i64"], spans[1])
    params = lowering.params(node, FUNCTIONS[node.func], a)
    axis = params["axis"]
    source = a
    if axis is None:
        source = lowering.emit(td.ReshapeOp(a.value, (-1,)), node.span)
        axis = 0
    if not isinstance(axis, int):
        raise internal_error(
            f"frontend: `axis` of `take` is {axis!r}, not an integer",
            location=lowering.where(node.span),
        )
    try:
        op = td.TakeOp(source.value, indices.value, axis)
    except td.ShapeError as err:
        raise TdslTypeError(err.message, lowering.where(node.span)) from None
    if literal:  # (a literal index out of bounds: NumPy's error now, not at each call)
        try:
            check_indices(np.asarray(args[1].value), op.extent, op.axis_value)
        except TdslIndexError as err:
            raise TdslIndexError(err.message, lowering.where(spans[1])) from None
    return lowering.emit(op, node.span)


def _expand(
    lowering: FunctionLowering, value: TensorValue, axes: tuple[int, ...], node: Call
) -> TensorValue:
    return lowering.emit(td.ExpandDimsOp(value.value, axes), node.span)


def _at_least(lowering: FunctionLowering, value: TensorValue, rank: int, node: Call) -> TensorValue:
    """``np.atleast_1d`` / ``np.atleast_2d``: a 0-d value as ``(1,)`` or ``(1, 1)``, a 1-d
    one as a row ``(1, n)``."""
    missing = rank - len(value.shape)
    if missing <= 0:
        return value
    return _expand(lowering, value, tuple(range(missing)), node)


__all__ = ["JOINS", "SPLITS", "lower_join", "lower_split", "lower_take"]
