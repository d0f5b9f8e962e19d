"""The base classes of element-wise ops: :class:`ElementwiseOp` (identity or broadcast
indexing maps, the body as the whole semantics), :class:`UnaryOp`, :class:`BinaryOp`
(NumPy broadcasting, one element type), :class:`CompareOp` and :class:`LogicalOp`;
with :func:`identity_map` and :func:`ufunc_bool_dtype`.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Sequence
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.builder import (
    Builder,  # pyright: ignore[reportPrivateUsage]
)
from xdsl.dialects import arith
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import IRDLOperation, VarConstraint, operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects.op_interfaces import LanguageFunction
from tdsl.dialects.structured_bodies import body_of
from tdsl.dialects.structured_interface import StructuredOpInterface
from tdsl.dialects.structured_loops import (
    IteratorType,
    ScalarOpBuilder,
    Workspace,
    broadcast_dims,
    dims_map,
)
from tdsl.dialects.structured_types import (
    BOOL,
    INT_SCALAR_OPS,
    BoolTensorConstr,
    NumericTensorConstr,
    ShapeError,
    broadcast_shapes,
    cmpi,
    element_type,
    expect_shape,
    int_op,
    is_int,
    operand_value,
    same_element_types,
    shape_error,
    tensor_shape,
    tensor_type,
)
from tdsl.dtypes import BOOL_DTYPE, FLOAT_DTYPES, math_dtype


@functools.lru_cache(maxsize=64)
def identity_map(rank: int) -> AffineMap:
    """The identity map of ``rank`` loop dims (shared: an AffineMap is immutable)."""
    return AffineMap.identity(rank)


@functools.cache
def ufunc_int_dtype(ufunc: str | None, arity: int, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
    """The float dtype NumPy's ``ufunc`` computes on integer operands of ``dtype``
    (``float64`` for ``exp`` of ``int32``; without a ufunc, as float functions do); None
    when NumPy's result is an integer (an op computing integers takes them as they
    are) or an error."""
    if ufunc is None:
        return math_dtype(dtype)
    try:
        with np.errstate(all="ignore"):
            result = getattr(np, ufunc)(*([np.ones(1, dtype)] * arity)).dtype
    except TypeError:
        return None
    return result if result.kind == "f" else None


def refuse_integers(op: Operation, types: Sequence[Attribute]) -> None:
    """The verifier's error for integer operands of an op computing only floats."""
    if any(is_int(t) for t in types) and not cast(Any, op).takes_integers():
        raise VerifyException(
            f"'{op.name}' computes on floats, not integers "
            f"({', '.join(str(t) for t in types)}): convert first with tensordsl.cast"
        )


def ufunc_bool_dtype(ufunc: str, arity: int) -> np.dtype[Any] | None:
    """The float dtype NumPy's ``ufunc`` computes on boolean operands, or None when the
    result is not a float (an integer, a boolean, an error)."""
    try:
        with np.errstate(all="ignore"):
            dtype = getattr(np, ufunc)(*([np.zeros(1, BOOL_DTYPE)] * arity)).dtype
    except TypeError:
        return None
    return dtype if dtype.kind == "f" else None


class ElementwiseOp(StructuredOpInterface, abc.ABC):
    """The loop space of an element-wise op with NumPy broadcasting: the result's dims,
    all parallel; each operand reads the result's dims it has (a broadcast dim maps to
    constant 0), the result all of them.  Unary, binary and ``where`` ops share it."""

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(cast(Operation, self).results[0])

    def iterator_types(self) -> tuple[IteratorType, ...]:
        return (IteratorType.PARALLEL,) * len(self.loop_extents())

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        out = self.loop_extents()
        return (
            *(
                dims_map(len(out), broadcast_dims(tensor_shape(v), out))
                for v in cast(Operation, self).operands
            ),
            identity_map(len(out)),
        )

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        """None where NumPy has the function (``NUMPY_UFUNC``: the numpy target calls it
        once); else one per intermediate value of the body, which the target's derived
        lowering computes one NumPy call at a time."""
        if getattr(self, "NUMPY_UFUNC", None) is not None:
            return ()
        return body_of(cast(Operation, self)).workspaces(result_shapes[0])

    @classmethod
    def takes_integers(cls) -> bool:
        """Whether the op computes integers exactly (``abs``, ``+``, ``//``): its
        ``SCALAR_OP`` has an integer counterpart (``INT_SCALAR_OPS``), or it defines
        :meth:`int_body`.  Other ops take floats only; the frontend converts integers
        as NumPy does (``exp`` of ``int32`` is ``float64``)."""
        scalar_op = getattr(cls, "SCALAR_OP", None)
        return scalar_op in INT_SCALAR_OPS or cls.int_body is not ElementwiseOp.int_body

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        """The element computation on integers, for ops that compute them exactly."""
        raise NotImplementedError(f"{cast(Operation, self).name} computes no integers")

    def integer_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        """The body on integers: the integer counterpart of ``SCALAR_OP``, or
        :meth:`int_body`."""
        scalar_op = getattr(self, "SCALAR_OP", None)
        if scalar_op in INT_SCALAR_OPS:
            return (int_op(b, INT_SCALAR_OPS[scalar_op], *args),)
        return self.int_body(b, args)


class UnaryOp(IRDLOperation, ElementwiseOp, LanguageFunction, abc.ABC):
    """Base of element-wise unary ops: the result has the operand's type.

    A subclass gives the ``math``/``arith`` op of its element computation
    (``SCALAR_OP``) or overrides :meth:`scalar_body`: that is its whole semantics.
    ``NUMPY_UFUNC`` names NumPy's counterpart, if any, which says how booleans
    promote (:meth:`bool_inputs_as`); it computes nothing.
    """

    NUMPY_UFUNC: ClassVar[str | None] = None
    """NumPy's ufunc of the same function (``"exp"``), if NumPy has one."""
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = None
    """The one-operand scalar op computing an element (``math.ExpOp``)."""

    T: ClassVar = VarConstraint("T", NumericTensorConstr)
    input = operand_def(T)
    result = result_def(T)

    assembly_format = "$input attr-dict `:` type($result)"
    traits = traits_def(Pure())
    IN_PLACE: ClassVar[bool] = True

    def __init__(self, input: SSAValue | Operation) -> None:
        value = operand_value(self.name, input)
        super().__init__(operands=[value], result_types=[value.type])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        return (operand_types[0],)

    def verify_(self) -> None:
        refuse_integers(self, (self.input.type,))

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return self.integer_body(b, args)
        if self.SCALAR_OP is None:
            return super().scalar_body(b, args)
        return (b.insert(self.SCALAR_OP(args[0])).results[0],)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return None if cls.NUMPY_UFUNC is None else ufunc_bool_dtype(cls.NUMPY_UFUNC, 1)

    @classmethod
    def int_inputs_as(cls, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        if cls.takes_integers():
            return dtype
        return ufunc_int_dtype(cls.NUMPY_UFUNC, 1, dtype)


class BinaryOp(IRDLOperation, ElementwiseOp, LanguageFunction, abc.ABC):
    """Base of element-wise binary ops with NumPy broadcasting.

    Both operands share one element type; the result has the broadcast shape.
    A subclass gives the two-operand scalar op of its element computation
    (``SCALAR_OP``) or overrides :meth:`scalar_body`; ``NUMPY_UFUNC`` names NumPy's
    counterpart, as for :class:`UnaryOp`.
    """

    NUMPY_UFUNC: ClassVar[str | None] = None
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = None
    ARITY: ClassVar[int] = 2
    LEAST_FLOAT: ClassVar[str | None] = None
    """The narrowest float dtype the op computes in, where NumPy's computes in one
    (``float_power``: ``float64``; the frontend converts the operands first)."""

    # One element type is checked by verify_, which names both types (an IRDL
    # constraint variable would not name the op).
    lhs = operand_def(NumericTensorConstr)
    rhs = operand_def(NumericTensorConstr)
    result = result_def(NumericTensorConstr)

    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )
    traits = traits_def(Pure())
    IN_PLACE: ClassVar[bool] = True

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation) -> None:
        a, b = operand_value(self.name, lhs), operand_value(self.name, rhs)
        (result,) = self.infer_result_types([a.type, b.type])
        super().__init__(operands=[a, b], result_types=[result])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        a, b = operand_types
        if element_type(a) != element_type(b):
            raise ShapeError(
                f"operands have different element types {element_type(a)} and {element_type(b)}"
                " (make promotion explicit with tensordsl.cast)"
            )
        shape = broadcast_shapes(tensor_shape(a), tensor_shape(b))
        return (tensor_type(element_type(a), shape),)

    def verify_(self) -> None:
        same_element_types(self, (self.lhs.type, self.rhs.type, self.result.type))
        refuse_integers(self, (self.lhs.type, self.rhs.type))
        try:
            (expected,) = self.infer_result_types([self.lhs.type, self.rhs.type])
        except ShapeError as err:
            raise shape_error(self, err, (self.lhs.type, self.rhs.type)) from None
        expect_shape(self, tensor_shape(expected), self.result.type, "result")

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return self.integer_body(b, args)
        if self.SCALAR_OP is None:
            return super().scalar_body(b, args)
        return (b.insert(self.SCALAR_OP(args[0], args[1])).results[0],)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return None if cls.NUMPY_UFUNC is None else ufunc_bool_dtype(cls.NUMPY_UFUNC, 2)

    @classmethod
    def int_inputs_as(cls, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        if cls.takes_integers():
            return dtype
        return ufunc_int_dtype(cls.NUMPY_UFUNC, 2, dtype)


class CompareOp(BinaryOp, abc.ABC):
    """Base of element-wise comparisons, broadcasting: float operands of one element type,
    a boolean result (``nan`` compares false, except under ``!=``, as in NumPy).

    A subclass names its NumPy ufunc and its ``arith.cmpf`` predicate (``PREDICATE``).
    """

    PREDICATE: ClassVar[str]
    """The ``arith.cmpf`` predicate (ordered ones, ``une`` for ``!=``)."""

    INT_PREDICATE: ClassVar[str]
    """The ``arith.cmpi`` predicate on signed integers (``slt``, ``eq``, ...); unsigned
    ones compare with its unsigned form (:func:`cmpi`)."""

    lhs = operand_def(NumericTensorConstr)
    rhs = operand_def(NumericTensorConstr)
    result = result_def(BoolTensorConstr)
    IN_PLACE: ClassVar[bool] = False

    @classmethod
    def takes_integers(cls) -> bool:
        return True

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        (t,) = super().infer_result_types(operand_types)
        return (tensor_type(BOOL, tensor_shape(t)),)

    def verify_(self) -> None:
        same_element_types(self, (self.lhs.type, self.rhs.type))
        try:
            (expected,) = self.infer_result_types([self.lhs.type, self.rhs.type])
        except ShapeError as err:
            raise shape_error(self, err, (self.lhs.type, self.rhs.type)) from None
        expect_shape(self, tensor_shape(expected), self.result.type, "result")

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return (cmpi(b, args[0], args[1], self.INT_PREDICATE),)
        return (b.insert(arith.CmpfOp(args[0], args[1], self.PREDICATE)).result,)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return FLOAT_DTYPES["f16"]  # booleans compare as 0 and 1


class LogicalOp(BinaryOp, abc.ABC):
    """Base of element-wise logical ops on booleans, broadcasting (``&``, ``|``)."""

    lhs = operand_def(BoolTensorConstr)
    rhs = operand_def(BoolTensorConstr)
    result = result_def(BoolTensorConstr)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE
