"""Comparisons (``< <= == != >= >``: floats in, booleans out), the classifications
``isnan``, ``isinf`` and ``isfinite``, the logical ops on booleans (``&``, ``|``, ``~``),
``where``, the element-wise selection by a boolean condition, and ``clip``.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import IntegerAttr, UnitAttr, f16
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects.structured import (
    BOOL,
    BoolTensorConstr,
    CompareOp,
    ElementwiseOp,
    FloatTensorConstr,
    LanguageFunction,
    LogicalOp,
    NumericTensorConstr,
    ScalarOpBuilder,
    ShapeError,
    TensorConstr,
    UnaryOp,
    broadcast_shapes,
    element_type,
    int_op,
    is_int,
    operand_value,
    scalar_constant,
    tensor_shape,
    tensor_type,
)
from tdsl.dialects.structured_types import shape_error
from tdsl.dialects.tensordsl.elementwise_unary import numpy_extremum
from tdsl.dtypes import BOOL_DTYPE, FLOAT_DTYPES, math_dtype


@irdl_op_definition
class LessOp(CompareOp):
    """``lhs < rhs`` element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.less %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.less"
    FUNCTION: ClassVar[str | None] = "less"
    OPERATOR: ClassVar[str | None] = "<"
    NUMPY_UFUNC: ClassVar[str | None] = "less"
    PREDICATE: ClassVar[str] = "olt"
    INT_PREDICATE: ClassVar[str] = "slt"


@irdl_op_definition
class LessEqualOp(CompareOp):
    """``lhs <= rhs`` element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.less_equal %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.less_equal"
    FUNCTION: ClassVar[str | None] = "less_equal"
    OPERATOR: ClassVar[str | None] = "<="
    NUMPY_UFUNC: ClassVar[str | None] = "less_equal"
    PREDICATE: ClassVar[str] = "ole"
    INT_PREDICATE: ClassVar[str] = "sle"


@irdl_op_definition
class EqualOp(CompareOp):
    """``lhs == rhs`` element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.equal %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.equal"
    FUNCTION: ClassVar[str | None] = "equal"
    OPERATOR: ClassVar[str | None] = "=="
    NUMPY_UFUNC: ClassVar[str | None] = "equal"
    PREDICATE: ClassVar[str] = "oeq"
    INT_PREDICATE: ClassVar[str] = "eq"


@irdl_op_definition
class NotEqualOp(CompareOp):
    """``lhs != rhs`` (true where either is ``nan``) element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.not_equal %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.not_equal"
    FUNCTION: ClassVar[str | None] = "not_equal"
    OPERATOR: ClassVar[str | None] = "!="
    NUMPY_UFUNC: ClassVar[str | None] = "not_equal"
    PREDICATE: ClassVar[str] = "une"
    INT_PREDICATE: ClassVar[str] = "ne"


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    """``lhs >= rhs`` element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.greater_equal %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.greater_equal"
    FUNCTION: ClassVar[str | None] = "greater_equal"
    OPERATOR: ClassVar[str | None] = ">="
    NUMPY_UFUNC: ClassVar[str | None] = "greater_equal"
    PREDICATE: ClassVar[str] = "oge"
    INT_PREDICATE: ClassVar[str] = "sge"


@irdl_op_definition
class GreaterOp(CompareOp):
    """``lhs > rhs`` element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.greater %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.greater"
    FUNCTION: ClassVar[str | None] = "greater"
    OPERATOR: ClassVar[str | None] = ">"
    NUMPY_UFUNC: ClassVar[str | None] = "greater"
    PREDICATE: ClassVar[str] = "ogt"
    INT_PREDICATE: ClassVar[str] = "sgt"


@irdl_op_definition
class AndOp(LogicalOp):
    """``lhs & rhs`` on booleans, element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.and %0, %1 : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.and"
    FUNCTION: ClassVar[str | None] = "logical_and"
    OPERATOR: ClassVar[str | None] = "&"
    NUMPY_UFUNC: ClassVar[str | None] = "logical_and"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.AndIOp


@irdl_op_definition
class OrOp(LogicalOp):
    """``lhs | rhs`` on booleans, element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.or %0, %1 : (tensor<4x8xi1>, tensor<8xi1>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.or"
    FUNCTION: ClassVar[str | None] = "logical_or"
    OPERATOR: ClassVar[str | None] = "|"
    NUMPY_UFUNC: ClassVar[str | None] = "logical_or"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.OrIOp


@irdl_op_definition
class NotOp(UnaryOp):
    """``~x`` on booleans, element-wise.

    ```mlir
    %1 = tensordsl.not %0 : tensor<4x8xi1>
    ```
    """

    name = "tensordsl.not"
    FUNCTION: ClassVar[str | None] = "logical_not"
    NUMPY_UFUNC: ClassVar[str | None] = "logical_not"

    T: ClassVar = VarConstraint("T", BoolTensorConstr)
    input = operand_def(T)
    result = result_def(T)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        true = b.insert(arith.ConstantOp(IntegerAttr(1, BOOL))).result
        return (b.insert(arith.XOrIOp(args[0], true)).result,)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE


class TernaryOp(IRDLOperation, ElementwiseOp, LanguageFunction, abc.ABC):
    """Base of the element-wise ops of three operands, all broadcasting (``where``,
    ``clip``): built from its operands, its result type inferred; the verifier checks
    the recorded result type against the inference."""

    ARITY: ClassVar[int] = 3
    traits = traits_def(Pure())

    def __init__(
        self,
        first: SSAValue | Operation,
        second: SSAValue | Operation,
        third: SSAValue | Operation,
        properties: dict[str, Attribute] | None = None,
    ) -> None:
        values = [operand_value(self.name, v) for v in (first, second, third)]
        (result,) = self.infer_result_types([v.type for v in values])
        super().__init__(operands=values, result_types=[result], properties=properties or {})

    def verify_(self) -> None:
        types = tuple(v.type for v in self.operands)
        try:
            (expected,) = self.infer_result_types(list(types))
        except ShapeError as err:
            raise shape_error(self, err, types) from None
        if expected != self.results[0].type:
            raise VerifyException(
                f"'{self.name}' op result type {self.results[0].type} should be {expected}"
            )


@irdl_op_definition
class WhereOp(TernaryOp):
    """``where(cond, a, b)``: ``a`` where ``cond`` is true, else ``b``, element-wise, all
    three broadcasting (``np.where``).  ``a`` and ``b`` share one element type, which is
    the result's.

    ```mlir
    %3 = tensordsl.where %c, %a, %b : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.where"
    FUNCTION: ClassVar[str | None] = "where"

    cond = operand_def(BoolTensorConstr)
    lhs = operand_def(TensorConstr)
    rhs = operand_def(TensorConstr)
    result = result_def(TensorConstr)

    assembly_format = (
        "$cond `,` $lhs `,` $rhs attr-dict `:` `(` type($cond) `,` type($lhs) `,` "
        "type($rhs) `)` `->` type($result)"
    )

    def __init__(
        self, cond: SSAValue | Operation, lhs: SSAValue | Operation, rhs: SSAValue | Operation
    ) -> None:
        super().__init__(cond, lhs, rhs)

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        c, a, b = operand_types
        if element_type(c) != BOOL:
            raise ShapeError(f"the condition of where must be booleans, not {element_type(c)}")
        if element_type(a) != element_type(b):
            raise ShapeError(
                f"the values of where have different element types {element_type(a)} and "
                f"{element_type(b)} (make promotion explicit with tensordsl.cast)"
            )
        shape = broadcast_shapes(
            broadcast_shapes(tensor_shape(c), tensor_shape(a)), tensor_shape(b)
        )
        return (tensor_type(element_type(a), shape),)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (b.insert(arith.SelectOp(args[0], args[1], args[2])).result,)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE


class ClassifyOp(UnaryOp, abc.ABC):
    """Base of ``isnan``, ``isinf`` and ``isfinite``: floats in, booleans of the same shape
    out (booleans in are floats 0 and 1, as in NumPy: never nan nor infinite)."""

    @classmethod
    def int_inputs_as(cls, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        return math_dtype(dtype)  # every integer is finite: NumPy's answer, computed as f64

    input = operand_def(FloatTensorConstr)
    result = result_def(BoolTensorConstr)

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    IN_PLACE: ClassVar[bool] = False

    def __init__(self, input: SSAValue | Operation) -> None:
        value = operand_value(self.name, input)
        IRDLOperation.__init__(
            self, operands=[value], result_types=list(self.infer_result_types([value.type]))
        )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        return (tensor_type(BOOL, tensor_shape(operand_types[0])),)

    def verify_(self) -> None:
        (expected,) = self.infer_result_types([self.input.type])
        if expected != self.result.type:
            raise VerifyException(
                f"'{self.name}' op result type {self.result.type} should be {expected}"
            )

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return FLOAT_DTYPES["f16"]

    @staticmethod
    def _magnitude_vs_inf(b: Builder, x: SSAValue, predicate: str) -> SSAValue:
        """``|x| <predicate> inf`` (``oeq``: infinite; ``one``: finite, nan neither)."""
        magnitude = b.insert(xmath.AbsFOp(x)).result
        inf = scalar_constant(b, math.inf, x.type)
        return b.insert(arith.CmpfOp(magnitude, inf, predicate)).result


@irdl_op_definition
class IsnanOp(ClassifyOp):
    """Whether each element is nan (``np.isnan``).

    ```mlir
    %1 = tensordsl.isnan %0 : tensor<4x8xf32> -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.isnan"
    FUNCTION: ClassVar[str | None] = "isnan"
    NUMPY_UFUNC: ClassVar[str | None] = "isnan"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (b.insert(arith.CmpfOp(args[0], args[0], "uno")).result,)


@irdl_op_definition
class IsinfOp(ClassifyOp):
    """Whether each element is ``inf`` or ``-inf`` (``np.isinf``).

    ```mlir
    %1 = tensordsl.isinf %0 : tensor<4x8xf32> -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.isinf"
    FUNCTION: ClassVar[str | None] = "isinf"
    NUMPY_UFUNC: ClassVar[str | None] = "isinf"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (self._magnitude_vs_inf(b, args[0], "oeq"),)


@irdl_op_definition
class IsfiniteOp(ClassifyOp):
    """Whether each element is neither nan nor infinite (``np.isfinite``).

    ```mlir
    %1 = tensordsl.isfinite %0 : tensor<4x8xf32> -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.isfinite"
    FUNCTION: ClassVar[str | None] = "isfinite"
    NUMPY_UFUNC: ClassVar[str | None] = "isfinite"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (self._magnitude_vs_inf(b, args[0], "one"),)


@irdl_op_definition
class ClipOp(TernaryOp):
    """``clip(x, lo, hi)``: ``x`` limited to ``[lo, hi]`` element-wise, all three
    broadcasting, of one float element type (``np.clip``: ``minimum(maximum(x, lo), hi)``,
    so ``hi`` wins where ``lo > hi``; a nan anywhere gives nan).  Where ``x`` equals a
    bound (``-0.0`` and ``0.0``), NumPy's loops differ, and so does the op: with
    ``keep_ties`` the result is ``x``, else the bound.  Built from operands, the op keeps
    ties as NumPy does: for float16, and where both bounds are one element each (its
    scalar-bounds loop); tiling keeps the flag, so a tile of one element is no
    different.

    ```mlir
    %3 = tensordsl.clip %x, %lo, %hi keep_ties : (tensor<4x8xf32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.clip"
    FUNCTION: ClassVar[str | None] = "clip"

    input = operand_def(NumericTensorConstr)
    lo = operand_def(NumericTensorConstr)
    hi = operand_def(NumericTensorConstr)
    result = result_def(NumericTensorConstr)
    keep_ties = opt_prop_def(UnitAttr)

    assembly_format = (
        "$input `,` $lo `,` $hi (`keep_ties` $keep_ties^)? attr-dict `:` `(` type($input) "
        "`,` type($lo) `,` type($hi) `)` `->` type($result)"
    )

    def __init__(
        self, input: SSAValue | Operation, lo: SSAValue | Operation, hi: SSAValue | Operation
    ) -> None:
        x, a, b = (operand_value(self.name, v) for v in (input, lo, hi))
        keeps = element_type(x) == f16 or (
            math.prod(tensor_shape(a)) == 1 and math.prod(tensor_shape(b)) == 1
        )
        super().__init__(x, a, b, {"keep_ties": UnitAttr()} if keeps else None)

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        elements = {element_type(t) for t in operand_types}
        if len(elements) != 1:
            shown = ", ".join(str(element_type(t)) for t in operand_types)
            raise ShapeError(
                f"the operands of clip have different element types {shown} (make "
                "promotion explicit with tensordsl.cast)"
            )
        shape: tuple[int, ...] = ()
        for t in operand_types:
            shape = broadcast_shapes(shape, tensor_shape(t))
        return (tensor_type(element_type(operand_types[0]), shape),)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        x, lo, hi = args
        if is_int(x.type):  # integers: no ties to tell apart, no nan
            low = int_op(b, arith.MaxSIOp, x, lo)
            return (int_op(b, arith.MinSIOp, low, hi),)
        keeps = self.keep_ties is not None
        low = numpy_extremum(b, x, lo, larger=True, first_if_equal=keeps)
        return (numpy_extremum(b, low, hi, larger=False, first_if_equal=keeps),)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return None

    @classmethod
    def int_inputs_as(cls, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        return dtype  # np.clip keeps integers
