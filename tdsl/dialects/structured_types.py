"""Element types, tensor types and shapes of the structured ops: the float and boolean
element types and their NumPy dtypes, the IRDL constraints on static tensors, the NumPy
shape rules (broadcasting, axes, reductions) with :class:`ShapeError`, the verifier
helpers that report a mismatch on an op, and the scalar conversions and constants a
body builds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from xdsl.builder import (
    Builder,  # pyright: ignore[reportPrivateUsage]
)
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    ArrayOfConstraint,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntAttrConstraint,
    IntegerAttr,
    IntegerType,
    Signedness,
    SignednessAttr,
    TensorType,
    f16,
    f32,
    f64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import AtLeast, EqAttrConstraint, MessageConstraint, base
from xdsl.utils.exceptions import VerifyException

from tdsl.dtypes import BOOL_DTYPE, DTYPES, FLOAT_DTYPES, INT_DTYPES, supported_names
from tdsl.errors import TdslTypeError, internal_error

FloatType = Float16Type | Float32Type | Float64Type
"""The element types tdsl computes in."""

BOOL: IntegerType = IntegerType(1)
"""The element type of booleans (``i1``), what comparisons produce."""

FLOAT_TYPES: dict[str, FloatType] = {"f16": f16, "f32": f32, "f64": f64}
"""Short name -> xDSL float element type."""

UI8: IntegerType = IntegerType(8, SignednessAttr(Signedness.UNSIGNED))
"""``ui8``: the element type of ``uint8``."""
UI64: IntegerType = IntegerType(64, SignednessAttr(Signedness.UNSIGNED))
"""``ui64``: the element type of ``uint64`` (what NumPy sums ``uint8`` in)."""

INT_TYPES: dict[str, IntegerType] = {
    "i32": IntegerType(32),
    "i64": IntegerType(64),
    "u8": UI8,
    "u64": UI64,
}
"""Short name -> xDSL integer element type (see :data:`tdsl.dtypes.INT_DTYPES`): a
signless type is read as signed, ``ui8`` and ``ui64`` as unsigned; integer values, and
the indices of ``take`` (not ``ui64``: :data:`INDEX_TYPES`).  ``arith`` takes both; an op of a body chooses its signed or unsigned form
by its operands' type (:func:`int_op`, :func:`cmpi`)."""

ELEMENT_TYPES: dict[str, Attribute] = {"bool": BOOL, **FLOAT_TYPES, **INT_TYPES}
"""Short name -> xDSL element type (the NumPy side is :data:`tdsl.dtypes.DTYPES`)."""

NUMPY_DTYPES: dict[type[Attribute], np.dtype[Any]] = {
    type(element): FLOAT_DTYPES[name] for name, element in FLOAT_TYPES.items()
}
"""xDSL float element type class -> NumPy dtype."""

FloatElementConstr = MessageConstraint(
    base(Float16Type) | base(Float32Type) | base(Float64Type),
    "tensordsl computes on tensors of f16, f32 or f64",
)
BoolElementConstr = MessageConstraint(EqAttrConstraint(BOOL), "expected booleans (i1)")
_INTS = (
    EqAttrConstraint(INT_TYPES["i32"])
    | EqAttrConstraint(INT_TYPES["i64"])
    | EqAttrConstraint(UI8)
    | EqAttrConstraint(UI64)
)
_FLOATS = base(Float16Type) | base(Float32Type) | base(Float64Type)
IntElementConstr = MessageConstraint(_INTS, "expected integers (i32, i64, ui8 or ui64)")
NumericElementConstr = MessageConstraint(
    _FLOATS | _INTS, "tensordsl computes numbers as f16, f32, f64, i32, i64, ui8 or ui64"
)
IntegralElementConstr = MessageConstraint(
    EqAttrConstraint(BOOL) | _INTS, "expected booleans (i1) or integers (i32, i64, ui8, ui64)"
)
ElementConstr = MessageConstraint(
    _FLOATS | EqAttrConstraint(BOOL) | _INTS,
    "tensordsl computes on tensors of i1 (booleans), f16, f32, f64, i32, i64, ui8 or ui64",
)
StaticShapeConstr = MessageConstraint(
    ArrayOfConstraint(IntAttrConstraint.get(AtLeast(0))),
    "tensordsl computes on tensors of static shape (no ? dimensions)",
)
FloatTensorConstr = TensorType.constr(FloatElementConstr, shape=StaticShapeConstr)
BoolTensorConstr = TensorType.constr(BoolElementConstr, shape=StaticShapeConstr)
IntTensorConstr = TensorType.constr(IntElementConstr, shape=StaticShapeConstr)
NumericTensorConstr = TensorType.constr(NumericElementConstr, shape=StaticShapeConstr)
"""A static tensor of numbers: floats or integers."""
IntegralTensorConstr = TensorType.constr(IntegralElementConstr, shape=StaticShapeConstr)
"""A static tensor of booleans or integers: what ``& | ^ ~`` take."""
TensorConstr = TensorType.constr(ElementConstr, shape=StaticShapeConstr)
"""A static tensor of any element type tdsl computes on (booleans, floats, integers)."""


def is_int(value: SSAValue | Attribute) -> bool:
    """Whether a tensor value, tensor type or element type holds integers (i32, i64,
    ui8, ui64)."""
    t = value.type if isinstance(value, SSAValue) else value
    if isinstance(t, TensorType):
        t = cast(TensorType[Attribute], t).get_element_type()
    return t in _INT_SET


def is_unsigned(value: SSAValue | Attribute) -> bool:
    """Whether a value or type holds unsigned integers (``ui8``, ``ui64``)."""
    t = value.type if isinstance(value, SSAValue) else value
    if isinstance(t, TensorType):
        t = cast(TensorType[Attribute], t).get_element_type()
    return t in _UNSIGNED_SET


_INT_SET = frozenset(INT_TYPES.values())
INDEX_TYPES = frozenset({INT_TYPES["i32"], INT_TYPES["i64"], UI8})
"""The element types of a gather's indices: not ``ui64``, whose values beyond ``2**63``
have no ``int64`` to wrap as."""
_UNSIGNED_SET = frozenset({UI8, UI64})

UNSIGNED_OPS: dict[type[Operation], type[Operation]] = {
    arith.DivSIOp: arith.DivUIOp,
    arith.RemSIOp: arith.RemUIOp,
    arith.MaxSIOp: arith.MaxUIOp,
    arith.MinSIOp: arith.MinUIOp,
    arith.ShRSIOp: arith.ShRUIOp,
}
"""A signed integer op -> the op computing the same on unsigned integers."""

UNSIGNED_PREDICATES: dict[str, str] = {"slt": "ult", "sle": "ule", "sgt": "ugt", "sge": "uge"}
"""A signed ``arith.cmpi`` predicate -> the unsigned one."""


def int_op(b: Builder, op: type[Operation], lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    """The integer op ``op`` (``arith.divsi``, ``maxsi``, ...) of ``lhs`` and ``rhs``, in
    its unsigned form (``divui``, ``maxui``) for unsigned operands."""
    if is_unsigned(lhs):
        op = UNSIGNED_OPS.get(op, op)
    return b.insert(op(lhs, rhs)).results[0]  # pyright: ignore[reportCallIssue]


def cmpi(b: Builder, lhs: SSAValue, rhs: SSAValue, predicate: str) -> SSAValue:
    """``arith.cmpi`` of integers with a signed predicate (``slt``), made unsigned
    (``ult``) for unsigned operands."""
    if is_unsigned(lhs):
        predicate = UNSIGNED_PREDICATES.get(predicate, predicate)
    return b.insert(arith.CmpiOp(lhs, rhs, predicate)).result


INT_SCALAR_OPS: dict[type[Operation], type[Operation]] = {
    arith.AddfOp: arith.AddiOp,
    arith.SubfOp: arith.SubiOp,
    arith.MulfOp: arith.MuliOp,
    arith.MaximumfOp: arith.MaxSIOp,
    arith.MinimumfOp: arith.MinSIOp,
}
"""A float scalar op -> the integer op computing the same on (signed, wrapping)
integers, where there is one: an op whose ``SCALAR_OP`` is here computes integers
too, as NumPy's ufunc does."""


class ShapeError(TdslTypeError):
    """Operand shapes or an axis that an op cannot accept; the message says why."""


def fmt_shape(shape: Sequence[int]) -> str:
    """``(4, 8)`` as ``4x8``; a 0-d shape as ``[]``."""
    return "x".join(str(d) for d in shape) if shape else "[]"


def tensor_shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    """The static shape of a tensor-typed value or type."""
    t = value.type if isinstance(value, SSAValue) else value
    # kept on the type, which is immutable (a field of no dataclass: equality, hashing
    # and printing ignore it); planners ask every value's shape many times
    found = t.__dict__.get("_tdsl_shape")
    if found is not None:
        return found
    if not isinstance(t, TensorType):
        raise internal_error(f"the shape of a value of type {t}, where a tensor was expected")
    shape = tuple([d.data for d in cast(TensorType[Attribute], t).shape.data])
    object.__setattr__(t, "_tdsl_shape", shape)
    return shape


def element_type(value: SSAValue | Attribute) -> Attribute:
    """The element type of a tensor-typed value or type."""
    t = value.type if isinstance(value, SSAValue) else value
    if not isinstance(t, TensorType):
        raise internal_error(
            f"the element type of a value of type {t}, where a tensor was expected"
        )
    return cast(TensorType[Attribute], t).get_element_type()


def numpy_dtype(element: Attribute) -> np.dtype[Any]:
    """The NumPy dtype of an element type (or of a tensor type's elements)."""
    if isinstance(element, TensorType):
        element = element_type(cast(Attribute, element))
    if element == BOOL:
        return BOOL_DTYPE
    for name, index in INT_TYPES.items():
        if element == index:
            return INT_DTYPES[name]
    return NUMPY_DTYPES[type(element)]


def element_dtype(element: Attribute) -> np.dtype[Any] | None:
    """The NumPy dtype of an element type tdsl computes on, else None."""
    if element == BOOL:
        return BOOL_DTYPE
    for name, index in INT_TYPES.items():
        if element == index:
            return INT_DTYPES[name]
    return NUMPY_DTYPES.get(type(element))


def element_of(dtype: np.dtype[Any]) -> Attribute:
    """The element type of a NumPy dtype tdsl computes on (:data:`tdsl.dtypes.DTYPES`)."""
    for name, candidate in DTYPES.items():
        if candidate == dtype:
            return ELEMENT_TYPES[name]
    raise TdslTypeError(f"tdsl computes on {supported_names()}, not {dtype}")


def is_bool(value: SSAValue | Attribute) -> bool:
    """Whether a tensor value (or tensor type) holds booleans."""
    return element_type(value) == BOOL


def tensor_type(element: Attribute, shape: Sequence[int]) -> TensorType[Attribute]:
    """``tensor<shape x element>``."""
    return TensorType(element, list(shape))


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The NumPy broadcast of two shapes, or :class:`ShapeError`."""
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    out: list[int] = []
    for da, db in zip(pa, pb, strict=True):
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            raise ShapeError(
                f"shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast "
                f"(dimension {da} vs {db})"
            )
    return tuple(out)


def normalize_axis(axis: int, rank: int) -> int:
    """``axis`` in ``[-rank, rank)`` made non-negative, or :class:`ShapeError`."""
    if not -rank <= axis < rank:
        if rank == 0:
            raise ShapeError(f"axis {axis} is out of range for a 0-d tensor (it has no axes)")
        raise ShapeError(
            f"axis {axis} is out of range for rank {rank} (expected {-rank} <= axis < {rank})"
        )
    return axis % rank


def reduce_shape(shape: Sequence[int], axis: int | None, keepdims: bool) -> tuple[int, ...]:
    """The shape after reducing ``axis`` (``None``: all axes)."""
    if axis is None:
        return (1,) * len(shape) if keepdims else ()
    ax = normalize_axis(axis, len(shape))
    if keepdims:
        return tuple(1 if i == ax else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i != ax)


def operand_value(op_name: str, value: SSAValue | Operation) -> SSAValue:
    """``value`` as the SSA value of a tensor tdsl computes on (booleans or floats), or a
    :class:`TdslTypeError` for ``op_name``.

    Builders call it, so that a bad builder call is a tdsl error rather than a crash (the
    verifier then checks which element types the op takes).
    """
    try:
        ssa = SSAValue.get(value)
    except ValueError as err:
        raise TdslTypeError(f"'{op_name}' takes a single-result value: {err}") from None
    t: Attribute = ssa.type
    if not isinstance(t, TensorType) or element_dtype(element_type(cast(Attribute, t))) is None:
        raise TdslTypeError(
            f"'{op_name}' takes tensors of i1, f16, f32 or f64, not a value of type {t}"
        )
    return ssa


def expect_shape(op: Operation, expected: Sequence[int], actual: Attribute, what: str) -> None:
    """A verifier check that the tensor type ``actual`` (of a result) has shape ``expected``."""
    if tensor_shape(actual) != tuple(expected):
        raise VerifyException(
            f"'{op.name}' op {what} has type {actual}, expected shape {fmt_shape(expected)}"
        )


def same_element_types(op: Operation, types: Sequence[Attribute]) -> None:
    """A verifier check that the tensors of ``types`` share one element type."""
    elements = {element_type(t) for t in types}
    if len(elements) > 1:
        names = ", ".join(str(t) for t in types)
        raise VerifyException(
            f"'{op.name}' op operands and result must share one element type, got {names} "
            "(make promotion explicit with tensordsl.cast)"
        )


def shape_error(op: Operation, err: ShapeError, types: Sequence[Attribute]) -> VerifyException:
    """A verifier error naming the op, the problem and the operand types."""
    names = ", ".join(str(t) for t in types)
    return VerifyException(f"'{op.name}' op {err.message} ({names})")


def convert_scalar(b: Builder, value: SSAValue, target: Attribute) -> SSAValue:
    """``value`` (a float, integer or boolean scalar) converted to the float or integer
    type ``target`` (extf/truncf; a boolean becomes 0.0 or 1.0, or 0 or 1; an integer
    is sign-extended, truncated (wrapping) or rounded to the float)."""
    source = value.type
    if source == target:
        return value
    if target in _INT_SET:
        return _to_int(b, value, cast(IntegerType, target))
    if source == BOOL or is_unsigned(source):
        return b.insert(arith.UIToFPOp(value, cast(FloatType, target))).result
    if source in _INT_SET:
        return b.insert(arith.SIToFPOp(value, cast(FloatType, target))).result
    width = {Float16Type: 16, Float32Type: 32, Float64Type: 64}
    if width[type(source)] < width[type(target)]:  # pyright: ignore[reportArgumentType]
        return b.insert(arith.ExtFOp(value, target)).result
    return b.insert(arith.TruncFOp(value, target)).result


def _to_int(b: Builder, value: SSAValue, target: IntegerType) -> SSAValue:
    """A scalar as the integer type ``target``: a boolean is 0 or 1, a narrower integer
    is extended (with its sign, if signed), a wider one truncated and one of the same
    width reinterpreted (wrapping, as NumPy's ``astype``), a float truncated towards
    zero (:func:`_float_to_int`, :func:`_float_to_unsigned`)."""
    source = value.type
    if not isinstance(source, IntegerType):
        if is_unsigned(target):
            return _float_to_unsigned(b, value, target)
        return _float_to_int(b, value, target)
    width, bits = cast(IntegerType, source).bitwidth, target.bitwidth
    if source == BOOL or (is_unsigned(cast(Attribute, source)) and width < bits):
        return b.insert(arith.ExtUIOp(value, target)).result
    if width < bits:
        return b.insert(arith.ExtSIOp(value, target)).result
    if width == bits:  # int64 <-> uint64: the same bits
        return b.insert(arith.BitcastOp(value, target)).result
    return b.insert(arith.TruncIOp(value, target)).result


def _float_to_unsigned(b: Builder, value: SSAValue, target: IntegerType) -> SSAValue:
    """A float scalar as the unsigned ``target``, as NumPy's cast gives it on x86-64:
    ``uint8`` through ``int32`` (300.0 is 44, -1.0 is 255, nan 0); ``uint64`` through
    ``int64``, from ``x - 2**63`` with the top bit set again where ``x >= 2**63`` (-1.0
    is ``2**64 - 1``, nan is ``2**63``, ``2**64`` is 0)."""
    if target.bitwidth < 64:
        narrow = _float_to_int(b, value, INT_TYPES["i32"])
        return b.insert(arith.TruncIOp(narrow, target)).result
    i64 = INT_TYPES["i64"]
    half = scalar_constant(b, 2.0**63, value.type)
    big = b.insert(arith.CmpfOp(value, half, "oge")).result
    low = _float_to_int(b, value, i64)
    high = _float_to_int(b, b.insert(arith.SubfOp(value, half)).result, i64)
    top = scalar_constant(b, -(2**63), i64)
    high = b.insert(arith.XOrIOp(high, top)).result
    chosen = b.insert(arith.SelectOp(big, high, low)).result
    return b.insert(arith.BitcastOp(chosen, target)).result


def _float_to_int(b: Builder, value: SSAValue, target: IntegerType) -> SSAValue:
    """A float scalar truncated towards zero to ``target``, as NumPy's ``astype`` gives
    it on x86-64: nan, infinities and values whose truncation is out of range become the
    most negative integer (the conversion instruction's "integer indefinite").  The
    conversion itself only sees in-range values, so no target traps or is undefined."""
    bits = target.bitwidth
    lowest = -(1 << (bits - 1))
    above = b.insert(
        arith.CmpfOp(value, scalar_constant(b, float(lowest - 1), value.type), "ogt")
    ).result
    below = b.insert(
        arith.CmpfOp(value, scalar_constant(b, float(-lowest), value.type), "olt")
    ).result
    ok = b.insert(arith.AndIOp(above, below)).result
    zero = scalar_constant(b, 0.0, value.type)
    safe = b.insert(arith.SelectOp(ok, value, zero)).result
    converted = b.insert(arith.FPToSIOp(safe, target)).result
    return b.insert(arith.SelectOp(ok, converted, scalar_constant(b, lowest, target))).result


def scalar_constant(b: Builder, value: float, element: Attribute) -> SSAValue:
    """An ``arith.constant`` scalar of ``element``: a float, an integer, or a boolean
    (``value`` != 0)."""
    if element == BOOL:
        return b.insert(arith.ConstantOp(IntegerAttr(int(bool(value)), BOOL))).result
    if element in _INT_SET:
        bits = cast(IntegerType, element).bitwidth
        low = 0 if is_unsigned(element) else 1 << (bits - 1)
        wrapped = (int(value) + low) % (1 << bits) - low
        return b.insert(arith.ConstantOp(IntegerAttr(wrapped, cast(IntegerType, element)))).result
    return b.insert(arith.ConstantOp(FloatAttr(value, cast(FloatType, element)))).result
