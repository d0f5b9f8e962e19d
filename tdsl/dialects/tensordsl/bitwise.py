"""Bit-level ops on integers, broadcasting as NumPy does: ``&``, ``|`` and ``^``
(``^`` also on booleans: their exclusive or), ``~`` (``invert``) and the shifts ``<<``
and ``>>``.  ``&``, ``|`` and ``~`` of booleans are :mod:`.compare_logical`'s logical
ops; the frontend picks by the operands' type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import SSAValue
from xdsl.irdl import VarConstraint, irdl_op_definition, operand_def, result_def

from tdsl.dialects.structured import (
    BinaryOp,
    IntegralTensorConstr,
    IntTensorConstr,
    ScalarOpBuilder,
    UnaryOp,
    is_unsigned,
    scalar_constant,
)
from tdsl.dtypes import BOOL_DTYPE
from tdsl.errors import internal_error


class BitwiseOp(BinaryOp):
    """Base of ``&``, ``|`` and ``^`` on integers (and ``^`` on booleans): the ``arith``
    op of each bit (``SCALAR_OP``) is the whole semantics."""

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if self.SCALAR_OP is None:  # every bitwise op names its arith op
            raise internal_error(f"the bitwise op '{self.name}' names no arith op", op=self)
        return (b.insert(self.SCALAR_OP(args[0], args[1])).results[0],)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return self.int_body(b, args)  # booleans are one-bit integers

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE


class IntegerBitwiseOp(BitwiseOp):
    """Base of ``&`` and ``|`` of integers (of booleans they are tensordsl.and and
    tensordsl.or, which the frontend picks)."""

    lhs = operand_def(IntTensorConstr)
    rhs = operand_def(IntTensorConstr)
    result = result_def(IntTensorConstr)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return None


@irdl_op_definition
class BitwiseAndOp(IntegerBitwiseOp):
    """``lhs & rhs`` bit by bit on integers, broadcasting (``np.bitwise_and``).

    ```mlir
    %2 = tensordsl.bitwise_and %0, %1 : (tensor<8xi64>, tensor<i64>) -> tensor<8xi64>
    ```
    """

    name = "tensordsl.bitwise_and"
    FUNCTION: ClassVar[str | None] = "bitwise_and"
    NUMPY_UFUNC: ClassVar[str | None] = "bitwise_and"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.AndIOp


@irdl_op_definition
class BitwiseOrOp(IntegerBitwiseOp):
    """``lhs | rhs`` bit by bit on integers, broadcasting (``np.bitwise_or``).

    ```mlir
    %2 = tensordsl.bitwise_or %0, %1 : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
    ```
    """

    name = "tensordsl.bitwise_or"
    FUNCTION: ClassVar[str | None] = "bitwise_or"
    NUMPY_UFUNC: ClassVar[str | None] = "bitwise_or"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.OrIOp


@irdl_op_definition
class BitwiseXorOp(BitwiseOp):
    """``lhs ^ rhs`` bit by bit, broadcasting (``np.bitwise_xor``): on booleans, their
    exclusive or.

    ```mlir
    %2 = tensordsl.bitwise_xor %0, %1 : (tensor<8xi1>, tensor<8xi1>) -> tensor<8xi1>
    ```
    """

    name = "tensordsl.bitwise_xor"
    FUNCTION: ClassVar[str | None] = "bitwise_xor"
    OPERATOR: ClassVar[str | None] = "^"
    NUMPY_UFUNC: ClassVar[str | None] = "bitwise_xor"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.XOrIOp

    lhs = operand_def(IntegralTensorConstr)
    rhs = operand_def(IntegralTensorConstr)
    result = result_def(IntegralTensorConstr)


@irdl_op_definition
class InvertOp(UnaryOp):
    """``~x`` bit by bit on integers (``np.invert``: ``-x - 1``).

    ```mlir
    %1 = tensordsl.invert %0 : tensor<8xi64>
    ```
    """

    name = "tensordsl.invert"
    FUNCTION: ClassVar[str | None] = "invert"
    NUMPY_UFUNC: ClassVar[str | None] = "invert"

    T: ClassVar = VarConstraint("T", IntTensorConstr)
    input = operand_def(T)
    result = result_def(T)

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        ones = scalar_constant(b, -1, args[0].type)
        return (b.insert(arith.XOrIOp(args[0], ones)).result,)


class ShiftOp(BinaryOp):
    """Base of the shifts: integers only; a count outside ``[0, bits)`` shifts every bit
    out, as NumPy's loops do (``x << 64`` is 0, ``x >> 64`` is 0 or -1 by the sign), where
    LLVM's shift would be undefined."""

    lhs = operand_def(IntTensorConstr)
    rhs = operand_def(IntTensorConstr)
    result = result_def(IntTensorConstr)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return None  # NumPy shifts booleans as int8: not in the language

    def in_range(self, b: Builder, count: SSAValue) -> SSAValue:
        bits = scalar_constant(b, self.bits(count), count.type)
        return b.insert(arith.CmpiOp(count, bits, "ult")).result  # negatives are large

    @staticmethod
    def bits(value: SSAValue) -> int:
        t = value.type
        if not isinstance(t, IntegerType):
            raise internal_error(f"a shift by a count of type {t}, not an integer")
        return t.bitwidth


@irdl_op_definition
class LeftShiftOp(ShiftOp):
    """``lhs << rhs`` element-wise on integers, broadcasting (``np.left_shift``; wraps).

    ```mlir
    %2 = tensordsl.left_shift %0, %1 : (tensor<8xi64>, tensor<i64>) -> tensor<8xi64>
    ```
    """

    name = "tensordsl.left_shift"
    FUNCTION: ClassVar[str | None] = "left_shift"
    OPERATOR: ClassVar[str | None] = "<<"
    NUMPY_UFUNC: ClassVar[str | None] = "left_shift"

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        x, n = args
        ok = self.in_range(b, n)
        zero = scalar_constant(b, 0, x.type)
        count = b.insert(arith.SelectOp(ok, n, zero)).result
        shifted = b.insert(arith.ShLIOp(x, count)).result
        return (b.insert(arith.SelectOp(ok, shifted, zero)).result,)


@irdl_op_definition
class RightShiftOp(ShiftOp):
    """``lhs >> rhs`` element-wise on integers, broadcasting: arithmetic, keeping the sign
    (logical for unsigned integers; ``np.right_shift``).

    ```mlir
    %2 = tensordsl.right_shift %0, %1 : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
    ```
    """

    name = "tensordsl.right_shift"
    FUNCTION: ClassVar[str | None] = "right_shift"
    OPERATOR: ClassVar[str | None] = ">>"
    NUMPY_UFUNC: ClassVar[str | None] = "right_shift"

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        x, n = args
        ok = self.in_range(b, n)
        if is_unsigned(x):  # logical: every bit shifted out is 0
            zero = scalar_constant(b, 0, x.type)
            count = b.insert(arith.SelectOp(ok, n, zero)).result
            shifted = b.insert(arith.ShRUIOp(x, count)).result
            return (b.insert(arith.SelectOp(ok, shifted, zero)).result,)
        top = scalar_constant(b, self.bits(x) - 1, x.type)
        count = b.insert(arith.SelectOp(ok, n, top)).result
        return (b.insert(arith.ShRSIOp(x, count)).result,)


INTEGER_ONLY: tuple[type[Any], ...] = (
    BitwiseAndOp,
    BitwiseOrOp,
    InvertOp,
    LeftShiftOp,
    RightShiftOp,
)
"""The ops taking integers only."""

NO_FLOATS: tuple[type[Any], ...] = (*INTEGER_ONLY, BitwiseXorOp)
"""The ops taking integers and booleans only: the frontend refuses floats, as NumPy's
bitwise functions do."""

__all__ = [
    "INTEGER_ONLY",
    "NO_FLOATS",
    "BitwiseAndOp",
    "BitwiseOp",
    "BitwiseOrOp",
    "BitwiseXorOp",
    "IntegerBitwiseOp",
    "InvertOp",
    "LeftShiftOp",
    "RightShiftOp",
    "ShiftOp",
]
