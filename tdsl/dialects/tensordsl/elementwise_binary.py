"""Element-wise binary ops, broadcasting as NumPy does: the arithmetic
operators (``+ - * / % //``; ``+ - * % //`` also on integers, exactly and wrapping
as NumPy's), ``fmod``, ``arctan2``, ``hypot``, ``logaddexp``,
``copysign``, ``nextafter``, ``maximum`` and ``minimum``; with the canonicalization
patterns that drop adding zero and multiplying or dividing by one (the powers are
:mod:`.powers`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float16Type
from xdsl.interfaces import HasCanonicalizationPatternsInterface
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from tdsl.dialects import tdslmath
from tdsl.dialects.structured import (
    BOOL,
    BinaryOp,
    ScalarOpBuilder,
    cmpi,
    element_type,
    int_op,
    is_int,
    is_unsigned,
    numpy_dtype,
    scalar_constant,
    tensor_shape,
)
from tdsl.dialects.tensordsl.constant import ConstantOp, forward_if_same_type, splat_constant
from tdsl.dialects.tensordsl.elementwise_unary import numpy_extremum
from tdsl.errors import internal_error


@irdl_op_definition
class AddOp(BinaryOp, HasCanonicalizationPatternsInterface):
    """``lhs + rhs`` element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.add %0, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.add"
    OPERATOR: ClassVar[str | None] = "+"
    NUMPY_UFUNC: ClassVar[str | None] = "add"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.AddfOp

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (AddZero(),)


@irdl_op_definition
class SubOp(BinaryOp, HasCanonicalizationPatternsInterface):
    """``lhs - rhs`` element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.sub %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sub"
    OPERATOR: ClassVar[str | None] = "-"
    NUMPY_UFUNC: ClassVar[str | None] = "subtract"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.SubfOp

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (SubZero(),)


@irdl_op_definition
class MulOp(BinaryOp, HasCanonicalizationPatternsInterface):
    """``lhs * rhs`` element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.mul %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.mul"
    OPERATOR: ClassVar[str | None] = "*"
    NUMPY_UFUNC: ClassVar[str | None] = "multiply"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.MulfOp

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (MulOne(),)


@irdl_op_definition
class DivOp(BinaryOp, HasCanonicalizationPatternsInterface):
    """``lhs / rhs`` element-wise (true division), broadcasting.

    ```mlir
    %2 = tensordsl.div %0, %1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.div"
    OPERATOR: ClassVar[str | None] = "/"
    NUMPY_UFUNC: ClassVar[str | None] = "divide"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.DivfOp

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (DivOne(), DivByExactReciprocal())


@irdl_op_definition
class RemainderOp(BinaryOp):
    """``lhs % rhs`` element-wise, broadcasting: the remainder with the sign of the divisor
    (``np.remainder``, Python's ``%``; ``nan`` for a zero divisor).

    ```mlir
    %2 = tensordsl.remainder %0, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.remainder"
    FUNCTION: ClassVar[str | None] = "remainder"
    OPERATOR: ClassVar[str | None] = "%"
    NUMPY_UFUNC: ClassVar[str | None] = "remainder"

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        # NumPy's: 0 for a zero divisor (and for MIN % -1); else srem, moved by the
        # divisor when its sign is not the divisor's.  No division traps: the divisor
        # of those cases is 1.
        a, d = args
        safe = safe_divisor(b, a, d)
        m = int_op(b, arith.RemSIOp, a, safe)
        moved = b.insert(arith.AddiOp(m, safe)).result
        return (b.insert(arith.SelectOp(floor_moves(b, m, safe), moved, m)).result,)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return self.int_body(b, args)
        # NumPy's npy_divmod: m = fmod(a, b); a nonzero m of the other sign than b
        # moves by b; a zero m takes b's sign
        a, d = args
        m = b.insert(tdslmath.RemFOp(a, d)).result
        zero = scalar_constant(b, 0.0, a.type)
        nonzero = b.insert(arith.CmpfOp(m, zero, "one")).result
        m_neg = b.insert(arith.CmpfOp(m, zero, "olt")).result
        d_neg = b.insert(arith.CmpfOp(d, zero, "olt")).result
        other_sign = b.insert(arith.XOrIOp(m_neg, d_neg)).result
        move = b.insert(arith.AndIOp(nonzero, other_sign)).result
        moved = b.insert(arith.AddfOp(m, d)).result
        r = b.insert(arith.SelectOp(move, moved, m)).result
        is_zero = b.insert(arith.CmpfOp(m, zero, "oeq")).result
        signed_zero = b.insert(xmath.CopySignOp(zero, d)).result
        return (b.insert(arith.SelectOp(is_zero, signed_zero, r)).result,)


@irdl_op_definition
class FmodOp(BinaryOp):
    """``fmod(lhs, rhs)`` element-wise, broadcasting: the remainder with the sign of the
    dividend (``np.fmod``, C's ``fmod``).

    ```mlir
    %2 = tensordsl.fmod %0, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.fmod"
    FUNCTION: ClassVar[str | None] = "fmod"
    NUMPY_UFUNC: ClassVar[str | None] = "fmod"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = tdslmath.RemFOp

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        # C's remainder (the dividend's sign); 0 for a zero divisor, as NumPy's
        a, d = args
        return (int_op(b, arith.RemSIOp, a, safe_divisor(b, a, d)),)


@irdl_op_definition
class FloorDivideOp(BinaryOp):
    """``lhs // rhs`` element-wise, broadcasting: the quotient rounded towards -inf
    (``np.floor_divide``, Python's ``//``).

    On floats it is NumPy's ``npy_divmod`` (``x // 0`` is ``x / 0``, ``5 // -inf`` is
    ``-1``); on integers it is exact, ``x // 0`` is 0 and ``MIN // -1`` wraps to
    ``MIN``, as NumPy gives them (NumPy also warns; see ``docs/language.md``).

    ```mlir
    %2 = tensordsl.floor_divide %0, %1 : (tensor<4x8xi64>, tensor<i64>) -> tensor<4x8xi64>
    ```
    """

    name = "tensordsl.floor_divide"
    FUNCTION: ClassVar[str | None] = "floor_divide"
    OPERATOR: ClassVar[str | None] = "//"
    NUMPY_UFUNC: ClassVar[str | None] = "floor_divide"

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        a, d = args
        safe = safe_divisor(b, a, d)
        q = int_op(b, arith.DivSIOp, a, safe)
        r = int_op(b, arith.RemSIOp, a, safe)
        lowered = b.insert(arith.SubiOp(q, scalar_constant(b, 1, a.type))).result
        q = b.insert(arith.SelectOp(floor_moves(b, r, safe), lowered, q)).result
        zero = scalar_constant(b, 0, a.type)
        by_zero = b.insert(arith.CmpiOp(d, zero, "eq")).result
        return (b.insert(arith.SelectOp(by_zero, zero, q)).result,)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return self.int_body(b, args)
        # NumPy's npy_floor_divide: a / b for b == 0; else npy_divmod's quotient
        a, d = args
        t = a.type
        zero = scalar_constant(b, 0.0, t)
        m = b.insert(tdslmath.RemFOp(a, d)).result
        div = b.insert(arith.DivfOp(b.insert(arith.SubfOp(a, m)).result, d)).result
        m_nonzero = b.insert(arith.CmpfOp(m, zero, "une")).result
        d_neg = b.insert(arith.CmpfOp(d, zero, "olt")).result
        m_neg = b.insert(arith.CmpfOp(m, zero, "olt")).result
        other_sign = b.insert(arith.XOrIOp(d_neg, m_neg)).result
        adjust = b.insert(arith.AndIOp(m_nonzero, other_sign)).result
        one = scalar_constant(b, 1.0, t)
        div = b.insert(arith.SelectOp(adjust, b.insert(arith.SubfOp(div, one)), div)).result
        floor = b.insert(xmath.FloorOp(div)).result
        over_half = b.insert(
            arith.CmpfOp(b.insert(arith.SubfOp(div, floor)), scalar_constant(b, 0.5, t), "ogt")
        ).result
        floor = b.insert(
            arith.SelectOp(over_half, b.insert(arith.AddfOp(floor, one)), floor)
        ).result
        quotient = b.insert(arith.DivfOp(a, d)).result
        signed_zero = b.insert(xmath.CopySignOp(zero, quotient)).result
        div_zero = b.insert(arith.CmpfOp(div, zero, "oeq")).result
        result = b.insert(arith.SelectOp(div_zero, signed_zero, floor)).result
        by_zero = b.insert(arith.CmpfOp(d, zero, "oeq")).result
        return (b.insert(arith.SelectOp(by_zero, quotient, result)).result,)


def floor_moves(b: Builder, r: SSAValue, d: SSAValue) -> SSAValue:
    """Whether C's truncating division leaves the remainder ``r`` of a division by ``d``
    on the other side of zero than ``d`` (``r`` nonzero, signs differ): there the floored
    quotient is one less, and the floored remainder ``r + d``."""
    zero = scalar_constant(b, 0, r.type)
    nonzero = b.insert(arith.CmpiOp(r, zero, "ne")).result
    r_neg = cmpi(b, r, zero, "slt")
    d_neg = cmpi(b, d, zero, "slt")
    other_sign = b.insert(arith.XOrIOp(r_neg, d_neg)).result
    return b.insert(arith.AndIOp(nonzero, other_sign)).result


def safe_divisor(b: Builder, a: SSAValue, d: SSAValue) -> SSAValue:
    """``d``, or 1 where an integer division by it would trap (``d == 0``, and
    ``MIN / -1`` of signed integers, whose quotient overflows): native ``sdiv``/``srem``
    (``udiv``/``urem``) never trap, and the ops select NumPy's result for those cases
    (``a // 1`` is ``MIN // -1``'s)."""
    t = a.type
    bits = t.bitwidth  # pyright: ignore[reportAttributeAccessIssue]
    zero = scalar_constant(b, 0, t)
    by_zero = b.insert(arith.CmpiOp(d, zero, "eq")).result
    if is_unsigned(t):
        return b.insert(arith.SelectOp(by_zero, scalar_constant(b, 1, t), d)).result
    lowest = b.insert(arith.CmpiOp(a, scalar_constant(b, -(1 << (bits - 1)), t), "eq")).result
    minus_one = b.insert(arith.CmpiOp(d, scalar_constant(b, -1, t), "eq")).result
    overflow = b.insert(arith.AndIOp(lowest, minus_one)).result
    bad = b.insert(arith.OrIOp(by_zero, overflow)).result
    if bad.type != BOOL:
        raise internal_error(f"the trap condition of an integer division is a {bad.type}, not i1")
    return b.insert(arith.SelectOp(bad, scalar_constant(b, 1, t), d)).result


@irdl_op_definition
class Arctan2Op(BinaryOp):
    """The angle of the point ``(rhs, lhs)`` (``np.arctan2(y, x)``), element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.arctan2 %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arctan2"
    FUNCTION: ClassVar[str | None] = "arctan2"
    NUMPY_UFUNC: ClassVar[str | None] = "arctan2"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.Atan2Op


@irdl_op_definition
class HypotOp(BinaryOp):
    """``sqrt(lhs**2 + rhs**2)`` element-wise without overflow, broadcasting (``np.hypot``).

    ```mlir
    %2 = tensordsl.hypot %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.hypot"
    FUNCTION: ClassVar[str | None] = "hypot"
    NUMPY_UFUNC: ClassVar[str | None] = "hypot"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = tdslmath.HypotOp


@irdl_op_definition
class LogaddexpOp(BinaryOp):
    """``log(exp(lhs) + exp(rhs))`` element-wise without overflow, broadcasting
    (``np.logaddexp``: ``x + log(2)`` for equal operands, infinities included).

    ```mlir
    %2 = tensordsl.logaddexp %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.logaddexp"
    FUNCTION: ClassVar[str | None] = "logaddexp"
    NUMPY_UFUNC: ClassVar[str | None] = "logaddexp"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        # NumPy's npy_logaddexp: the larger plus log1p(exp(-|x - y|)); nan stays nan
        x, y = args
        d = b.insert(arith.SubfOp(x, y)).result
        zero = scalar_constant(b, 0.0, x.type)
        larger = b.insert(arith.SelectOp(b.insert(arith.CmpfOp(d, zero, "ogt")), x, y)).result
        ad = b.insert(arith.NegfOp(b.insert(xmath.AbsFOp(d)).result)).result
        tail = b.insert(xmath.Log1pOp(b.insert(xmath.ExpOp(ad)).result)).result
        sum_ = b.insert(arith.AddfOp(larger, tail)).result
        ln2 = scalar_constant(b, math.log(2.0), x.type)
        twice = b.insert(arith.AddfOp(x, ln2)).result
        equal = b.insert(arith.CmpfOp(x, y, "oeq")).result
        return (b.insert(arith.SelectOp(equal, twice, sum_)).result,)


@irdl_op_definition
class CopysignOp(BinaryOp):
    """The magnitude of ``lhs`` with the sign of ``rhs``, element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.copysign %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.copysign"
    FUNCTION: ClassVar[str | None] = "copysign"
    NUMPY_UFUNC: ClassVar[str | None] = "copysign"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.CopySignOp


@irdl_op_definition
class NextafterOp(BinaryOp):
    """The next representable value after ``lhs`` towards ``rhs``, element-wise, broadcasting
    (``np.nextafter``, in the element type).

    ```mlir
    %2 = tensordsl.nextafter %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.nextafter"
    F16_IN_F32: ClassVar[bool] = False  # its result is f16's next value
    FUNCTION: ClassVar[str | None] = "nextafter"
    NUMPY_UFUNC: ClassVar[str | None] = "nextafter"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = tdslmath.NextAfterOp


@irdl_op_definition
class MaximumOp(BinaryOp):
    """Element-wise maximum, broadcasting (``nan`` propagates, as ``np.maximum``).

    ```mlir
    %2 = tensordsl.maximum %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.maximum"
    FUNCTION: ClassVar[str | None] = "maximum"
    NUMPY_UFUNC: ClassVar[str | None] = "maximum"

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (int_op(b, arith.MaxSIOp, args[0], args[1]),)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return self.int_body(b, args)
        f16 = isinstance(element_type(self.result), Float16Type)
        return (numpy_extremum(b, args[0], args[1], larger=True, first_if_equal=f16),)


@irdl_op_definition
class MinimumOp(BinaryOp):
    """Element-wise minimum, broadcasting (``nan`` propagates, as ``np.minimum``).

    ```mlir
    %2 = tensordsl.minimum %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.minimum"
    FUNCTION: ClassVar[str | None] = "minimum"
    NUMPY_UFUNC: ClassVar[str | None] = "minimum"

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (int_op(b, arith.MinSIOp, args[0], args[1]),)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return self.int_body(b, args)
        f16 = isinstance(element_type(self.result), Float16Type)
        return (numpy_extremum(b, args[0], args[1], larger=False, first_if_equal=f16),)


def _is_identity_zero(value: SSAValue, negative: bool) -> bool:
    """Whether ``value`` is a splat zero that adding (``negative``: -0.0) or subtracting
    (+0.0) leaves every float as it is: ``-0.0 + 0.0`` is ``+0.0``, so only ``x + -0.0``
    and ``x - 0.0`` are ``x`` for floats (any zero for integers)."""
    c = splat_constant(value)
    if c is None or c != 0.0:
        return False
    return is_int(value) or (math.copysign(1.0, c) < 0) == negative


class AddZero(RewritePattern):
    """``x + 0 -> x`` and ``0 + x -> x`` where the shape is preserved: integers, or a
    float zero of negative sign (``-0.0 + 0.0`` is ``+0.0``, NumPy's too)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddOp, rewriter: PatternRewriter) -> None:
        if _is_identity_zero(op.rhs, negative=True):
            forward_if_same_type(op, op.lhs, rewriter)
        elif _is_identity_zero(op.lhs, negative=True):
            forward_if_same_type(op, op.rhs, rewriter)


class SubZero(RewritePattern):
    """``x - 0 -> x`` where the shape is preserved: integers, or a float zero of positive
    sign (``x - -0.0`` is ``x + 0.0``)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SubOp, rewriter: PatternRewriter) -> None:
        if _is_identity_zero(op.rhs, negative=False):
            forward_if_same_type(op, op.lhs, rewriter)


class MulOne(RewritePattern):
    """``x * 1 -> x`` and ``1 * x -> x`` where the shape is preserved."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MulOp, rewriter: PatternRewriter) -> None:
        if splat_constant(op.rhs) == 1.0:
            forward_if_same_type(op, op.lhs, rewriter)
        elif splat_constant(op.lhs) == 1.0:
            forward_if_same_type(op, op.rhs, rewriter)


class DivOne(RewritePattern):
    """``x / 1 -> x`` where the shape is preserved."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DivOp, rewriter: PatternRewriter) -> None:
        if splat_constant(op.rhs) == 1.0:
            forward_if_same_type(op, op.lhs, rewriter)


class DivByExactReciprocal(RewritePattern):
    """``x / c -> x * (1/c)`` for a one-element float constant ``c`` whose reciprocal is
    exact and finite (a power of two): the product is the quotient, rounded once the
    same way, for every ``x``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DivOp, rewriter: PatternRewriter) -> None:
        c = splat_constant(op.rhs)
        if c is None or is_int(op.rhs) or op.lhs.type != op.result.type or c in (0.0, 1.0):
            return
        dtype = numpy_dtype(op.rhs.type)
        d = np.array(c, dtype)
        with np.errstate(all="ignore"):
            r = np.reciprocal(d)
            exact = np.isfinite(r) and r != 0 and np.frexp(d)[0] in (0.5, -0.5)
            if not exact or np.reciprocal(r) != d:
                return
        constant = ConstantOp.splat(float(r), element_type(op.rhs), tensor_shape(op.rhs))
        mul = MulOp(op.lhs, constant.result)
        rewriter.replace(op, [constant, mul], [mul.result])
