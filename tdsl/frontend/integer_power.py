"""NumPy's integer power of an integer tensor (or a Python int) and an integer literal:
exact and wrapping, by repeated squaring."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import i64
from xdsl.ir import Attribute, Operation

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import BOOL, constant_value, element_of, is_int, numpy_dtype
from tdsl.dtypes import promote
from tdsl.errors import TdslTypeError, internal_error
from tdsl.frontend.ast import Span
from tdsl.frontend.values import LiteralValue, TensorValue, Value, WeakValue

if TYPE_CHECKING:
    from tdsl.frontend.lower_expr import FunctionLowering


def integer_power(
    lowering: FunctionLowering, args: Sequence[Value], spans: tuple[Span, Span], span: Span
) -> TensorValue | None:
    """``a ** n`` of an integer tensor and an integer literal: NumPy's
    integer power, exact and wrapping, by repeated squaring (``a ** 3`` is
    ``a * a * a``, ``a ** 0`` ones); None for any other power.  A negative ``n`` is
    NumPy's error; an integer exponent known only at run time is refused by
    ``FunctionLowering.unify`` (NumPy's error would depend on its values)."""
    a, n = args
    if isinstance(a, WeakValue) and a.integer:
        a = TensorValue(a.value, (), i64)  # (`np.power` of a Python int: int64)
    elif isinstance(a, LiteralValue) and type(a.value) is int and isinstance(n, LiteralValue):
        a = lowering.literal(a.value, i64, spans[0])  # (`power(2, 3)`: the same, int64)
    strong = _constant_integer(n)
    if strong is not None and isinstance(a, TensorValue) and is_int(a.element):
        # an integer constant known when compiling (`x ** np.int64(3)` traced): the
        # dtypes promote as two arrays', then the same product
        element = element_of(promote(numpy_dtype(a.element), numpy_dtype(strong[1])))
        a, n = lowering.to_element(a, element, spans[0]), LiteralValue(strong[0], spans[1])
    if not isinstance(n, LiteralValue) or not isinstance(n.value, int):
        return None
    if isinstance(a, TensorValue) and a.element == BOOL:
        raise TdslTypeError(
            f"booleans to an integer power ({lowering.describe(a)} ** {n.value}) are not "
            "supported: NumPy's power of booleans is int8 for `** 2` and int64 for other "
            "integer exponents; convert first, e.g. `astype(b, int64)` or `astype(b, float32)`",
            lowering.where(span),
        )
    if not isinstance(a, TensorValue) or not is_int(a.element):
        return None
    if n.value < 0:
        raise TdslTypeError(
            f"integers to negative integer powers are not allowed, as in NumPy "
            f"(`** {n.value}` of {lowering.describe(a)}): write a float exponent "
            f"(`** {float(n.value)}`) or convert first, e.g. `astype(x, float64)`",
            lowering.where(spans[1]),
        )
    info = np.iinfo(numpy_dtype(a.element))
    if n.value > info.max:  # (NumPy 2 converts the Python int to the tensor's dtype)
        raise TdslTypeError(
            f"the integer {n.value} is out of bounds for {info.dtype} ([{info.min}, "
            f"{info.max}]), as in NumPy 2: write a float exponent or convert first, e.g. "
            "`astype(x, float64)`",
            lowering.where(spans[1]),
        )
    if n.value == 0:
        return lowering.emit(td.OnesLikeOp(a.value), span)
    result: TensorValue | None = None
    square, exponent = a, n.value  # square: a ** (2 ** k) for bit k of the exponent
    while exponent:
        if exponent & 1:
            mul = None if result is None else td.MulOp(result.value, square.value)
            result = square if mul is None else lowering.emit(mul, span)
        exponent >>= 1
        if exponent:
            square = lowering.emit(td.MulOp(square.value, square.value), span)
    if result is None:  # the exponent is not 0: some bit of it is set
        raise internal_error(
            f"frontend: `**` {n.value} built no product", location=lowering.where(span)
        )
    return result


def _constant_integer(n: Value) -> tuple[int, Attribute] | None:
    """The value and element type of ``n`` where it is a one-element integer (or boolean)
    constant tensor (``astype(3, int64)``), else None."""
    if not isinstance(n, TensorValue) or n.shape not in ((), (1,)):
        return None
    if not is_int(n.element) and n.element != BOOL:
        return None
    op = n.value.owner
    if isinstance(op, td.CastOp):  # (`astype(2, int32)`: a cast of the literal's int64)
        op = op.input.owner
    value = constant_value(op) if isinstance(op, Operation) else None
    if value is None:
        return None
    return int(np.asarray(value).astype(numpy_dtype(n.element)).reshape(-1)[0]), n.element


__all__ = ["integer_power"]
