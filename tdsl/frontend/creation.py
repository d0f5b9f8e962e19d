"""The creation functions (:mod:`tdsl.dialects.tensordsl.creation`) written as ops.

``zeros``, ``ones`` and ``full`` are one ``tensordsl.constant`` of one value
(stored once, whatever the shape); ``arange`` is a constant of NumPy's own
``np.arange`` values (int64 for integer bounds and ``full`` of an integer, as in
NumPy); ``tri`` and ``eye`` compare a constant of column indices with
one of row indices plus ``k`` (``expand_dims`` lines them up) and turn the mask into
``1.0`` and ``0.0`` with ``where``; ``tril`` and ``triu`` keep their operand where
such a mask holds (``where``, or ``logical_and`` for booleans).  Indices are float64
values, exact up to 2**53.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import f64, i64

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import BOOL, numpy_dtype
from tdsl.errors import TdslTypeError, internal_error
from tdsl.frontend.ast import Call, Span
from tdsl.frontend.functions import FUNCTIONS
from tdsl.frontend.values import LiteralValue, TensorValue, Value

if TYPE_CHECKING:
    from tdsl.frontend.lower_expr import FunctionLowering

Array = np.ndarray[Any, Any]


def lower_creation(
    lowering: FunctionLowering,
    node: Call,
    args: Sequence[Value],
    spans: Sequence[Span],
    params: Mapping[str, Any],
) -> Value:
    """The ops of ``node``, a call of a creation function (see the module docstring).

    Their values are built while compiling (constants, index vectors): a size NumPy
    cannot allocate here (``zeros((10**11, 10**11))``) is an error at the call."""
    try:
        return _lower_creation(lowering, node, args, spans, params)
    except (MemoryError, ValueError, OverflowError) as err:
        raise TdslTypeError(
            f"`{node.func}`: its values are built while compiling, and NumPy cannot build "
            f"them here ({type(err).__name__}: {err})",
            lowering.where(node.span),
        ) from None


def _lower_creation(
    lowering: FunctionLowering,
    node: Call,
    args: Sequence[Value],
    spans: Sequence[Span],
    params: Mapping[str, Any],
) -> Value:
    span = node.span
    element = params.get("dtype") or f64
    dtype = numpy_dtype(element)

    def constant(values: Array) -> TensorValue:
        if element == BOOL:  # booleans: float64 values compared with 0, as NumPy converts
            floats = index_constant(np.asarray(values, dtype).astype(np.float64))
            zero = lowering.literal(0.0, f64, span)
            return lowering.emit(td.NotEqualOp(floats.value, zero.value), span)
        attr = td.dense_stored_once(np.asarray(values, dtype), element)
        return lowering.emit(td.ConstantOp(attr), span)

    def mask(rows: int, cols: int, k: int, compare: type[td.CompareOp]) -> TensorValue:
        """``compare(col, row + k)`` over a ``rows`` by ``cols`` grid (float64 indices)."""
        index = np.dtype(np.float64)
        row = lowering.emit(
            td.ExpandDimsOp(index_constant(np.arange(rows) + float(k)).value, 1), span
        )
        col = lowering.emit(
            td.ExpandDimsOp(index_constant(np.arange(cols, dtype=index)).value, 0), span
        )
        return lowering.emit(compare(col.value, row.value), span)

    def index_constant(values: Array) -> TensorValue:
        attr = td.dense_stored_once(np.asarray(values, np.float64), f64)
        return lowering.emit(td.ConstantOp(attr), span)

    def ones_where(m: TensorValue) -> Value:
        if element == BOOL:
            return m
        one, zero = lowering.literal(1.0, element, span), lowering.literal(0.0, element, span)
        return lowering.emit(td.WhereOp(m.value, one.value, zero.value), span)

    match node.func:
        case "zeros" | "ones":
            return constant(np.full(params["shape"], 0 if node.func == "zeros" else 1))
        case "full":
            fill = params["fill_value"]
            if isinstance(fill, int) and params.get("dtype") is None:
                element, dtype = i64, np.dtype(np.int64)  # NumPy's: an integer fill
            try:  # NumPy 2 refuses an integer out of the dtype's range (it wrapped here)
                values = np.full(params["shape"], fill, dtype)
            except OverflowError:
                raise TdslTypeError(
                    f"`full`: the fill value {fill!r} is out of range for {dtype.name}, as "
                    "in NumPy (OverflowError): give a value in range, or another dtype",
                    lowering.where(span),
                ) from None
            return constant(values)
        case "arange":
            given = [params[k] for k in ("start", "stop", "step") if params[k] is not None]
            if all(isinstance(v, int) for v in given) and params.get("dtype") is None:
                element, dtype = i64, np.dtype(np.int64)  # NumPy's: integers
            if params["step"] == 0:
                raise TdslTypeError("`arange` needs a step other than 0", lowering.where(span))
            try:
                values = np.arange(*given, dtype=dtype)
            except (TypeError, ValueError) as err:  # NumPy refuses it (arange of booleans)
                raise TdslTypeError(f"`arange`: {err}", lowering.where(span)) from None
            return constant(values)
        case "tri" | "eye":
            n = params["N"]
            m = n if params["M"] is None else params["M"]
            compare = td.LessEqualOp if node.func == "tri" else td.EqualOp
            return ones_where(mask(n, m, params["k"], compare))
        case _:  # tril, triu
            x = lowering.tensor(args[0], spans[0])
            if not x.shape:
                raise TdslTypeError(
                    f"`{node.func}` needs an operand of rank 1 or more (it works on the last "
                    f"two axes, a 1-d one as the rows of a square matrix), got "
                    f"{lowering.describe(x)}",
                    lowering.where(span),
                )
            compare = td.LessEqualOp if node.func == "tril" else td.GreaterEqualOp
            # (NumPy's 1-d x of length n: the n x n mask broadcasts it to each row)
            rows = x.shape[-2] if len(x.shape) > 1 else x.shape[-1]
            keep = mask(rows, x.shape[-1], params["k"], compare)
            if x.element == BOOL:
                return lowering.binary(td.AndOp, f"`{node.func}`", [keep, x], (span, span), span)
            zero = LiteralValue(0, span)  # weak: x's dtype
            return lowering.where_call(node, [keep, x, zero], (span, spans[0], span))


def lower_broadcast_to(
    lowering: FunctionLowering, node: Call, args: Sequence[Value], spans: Sequence[Span]
) -> Value:
    """``broadcast_to(x, shape)``: ``x`` times ones of the broadcast extents (``&`` for
    booleans), exact, and fused with what reads it; ``x`` itself where nothing broadcasts."""
    x = lowering.tensor(args[0], spans[0])
    params = lowering.params(node, FUNCTIONS[node.func], x)
    target = params["shape"]
    if not isinstance(target, tuple):
        raise internal_error(
            f"frontend: `shape` of `{node.func}` is {target!r}, not a tuple",
            location=lowering.where(node.span),
        )
    return broadcast_value(lowering, x, target, node.span)


def broadcast_value(
    lowering: FunctionLowering, x: TensorValue, target: tuple[int, ...], span: Span
) -> TensorValue:
    """``x`` broadcast to shape ``target``, as :func:`lower_broadcast_to` writes it."""
    try:
        ones_shape = td.broadcast_ones_shape(x.shape, target)
    except td.ShapeError as err:
        raise TdslTypeError(err.message, lowering.where(span)) from None
    if all(n == 1 for n in ones_shape) and len(ones_shape) == len(x.shape):
        return x
    if x.element == BOOL:  # booleans: float64 ones compared with 0, as NumPy converts
        ones = lowering.emit(td.ConstantOp(td.dense_stored_once(np.ones(ones_shape), f64)), span)
        zero = lowering.literal(0.0, f64, span)
        mask = lowering.emit(td.NotEqualOp(ones.value, zero.value), span)
        return lowering.emit(td.AndOp(x.value, mask.value), span)
    values = np.ones(ones_shape, numpy_dtype(x.element))
    ones = lowering.emit(td.ConstantOp(td.dense_stored_once(values, x.element)), span)
    return lowering.emit(td.MulOp(x.value, ones.value), span)


__all__ = ["broadcast_value", "lower_broadcast_to", "lower_creation"]
