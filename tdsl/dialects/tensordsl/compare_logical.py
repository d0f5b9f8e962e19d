"""Comparisons (``< <= == != >= >``: floats in, booleans out), the logical ops on
booleans (``&``, ``|``, ``~``) and ``where``, the element-wise selection by a boolean
condition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
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
    LanguageFunction,
    LogicalOp,
    ScalarOpBuilder,
    ShapeError,
    TensorConstr,
    UnaryOp,
    broadcast_shapes,
    element_type,
    operand_value,
    tensor_shape,
    tensor_type,
)
from tdsl.dialects.structured_types import shape_error
from tdsl.dtypes import BOOL_DTYPE


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


@irdl_op_definition
class WhereOp(IRDLOperation, ElementwiseOp, LanguageFunction):
    """``where(cond, a, b)``: ``a`` where ``cond`` is true, else ``b``, element-wise, all
    three broadcasting (``np.where``).  ``a`` and ``b`` share one element type, which is
    the result's.

    ```mlir
    %3 = tensordsl.where %c, %a, %b : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.where"
    FUNCTION: ClassVar[str | None] = "where"
    ARITY: ClassVar[int] = 3

    cond = operand_def(BoolTensorConstr)
    lhs = operand_def(TensorConstr)
    rhs = operand_def(TensorConstr)
    result = result_def(TensorConstr)

    assembly_format = (
        "$cond `,` $lhs `,` $rhs attr-dict `:` `(` type($cond) `,` type($lhs) `,` "
        "type($rhs) `)` `->` type($result)"
    )
    traits = traits_def(Pure())

    def __init__(
        self, cond: SSAValue | Operation, lhs: SSAValue | Operation, rhs: SSAValue | Operation
    ) -> None:
        c, a, b = (operand_value(self.name, v) for v in (cond, lhs, rhs))
        (result,) = self.infer_result_types([c.type, a.type, b.type])
        super().__init__(operands=[c, a, b], result_types=[result])

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

    def verify_(self) -> None:
        types = (self.cond.type, self.lhs.type, self.rhs.type)
        try:
            (expected,) = self.infer_result_types(list(types))
        except ShapeError as err:
            raise shape_error(self, err, types) from None
        if expected != self.result.type:
            raise VerifyException(
                f"'{self.name}' op result type {self.result.type} should be {expected}"
            )

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (b.insert(arith.SelectOp(args[0], args[1], args[2])).result,)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE
