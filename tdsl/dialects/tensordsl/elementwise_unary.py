"""Element-wise unary ops that are not one ``math`` function: ``relu``, ``sign``,
``square``, ``reciprocal``, ``copy``, ``conj``, ``ones_like``, ``sigmoid``, ``abs`` and
``neg``; with :func:`numpy_extremum` (NumPy's ``maximum``/``minimum`` of two scalars,
which ``relu`` and the binary ``maximum``/``minimum`` build on) and the canonicalization
patterns of ``relu`` and ``neg``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float16Type
from xdsl.interfaces import HasCanonicalizationPatternsInterface
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from tdsl.dialects.structured import (
    ScalarOpBuilder,
    UnaryOp,
    Workspace,
    cmpi,
    element_type,
    int_op,
    is_int,
    numpy_dtype,
    scalar_constant,
)
from tdsl.dtypes import FLOAT_DTYPES


def numpy_extremum(
    b: Builder, lhs: SSAValue, rhs: SSAValue, larger: bool, first_if_equal: bool
) -> SSAValue:
    """NumPy's element-wise ``maximum`` (``larger``) or ``minimum`` of two scalars:
    nan propagates, and of equal operands (``-0`` and ``+0``) float32 and float64
    return the second, float16 the first (``first_if_equal``: NumPy's loops do; LLVM's
    ``maximum`` orders ``-0 < +0`` instead).  The ``cmpf`` + ``select`` form vectorizes element-wise;
    reductions keep ``arith.maximumf``/``minimumf``, which LLVM vectorizes as such."""
    predicate = {(True, False): "ogt", (True, True): "oge", (False, False): "olt"}.get(
        (larger, first_if_equal), "ole"
    )
    wins = b.insert(arith.CmpfOp(lhs, rhs, predicate)).result
    nan = b.insert(arith.CmpfOp(lhs, lhs, "uno")).result
    pick = b.insert(arith.OrIOp(wins, nan)).result
    return b.insert(arith.SelectOp(pick, lhs, rhs)).result


@irdl_op_definition
class ReluOp(UnaryOp, HasCanonicalizationPatternsInterface):
    """``max(x, 0)`` element-wise (``nan`` stays ``nan``, as ``np.maximum``).

    ```mlir
    %1 = tensordsl.relu %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.relu"
    FUNCTION: ClassVar[str | None] = "relu"

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        return ()  # the numpy target runs one np.maximum against zeros

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        zero = scalar_constant(b, 0, args[0].type)
        return (int_op(b, arith.MaxSIOp, args[0], zero),)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return self.int_body(b, args)
        zero = scalar_constant(b, 0.0, args[0].type)
        f16 = isinstance(element_type(self.result), Float16Type)
        return (numpy_extremum(b, args[0], zero, larger=True, first_if_equal=f16),)

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (ReluOfRelu(),)


@irdl_op_definition
class SignOp(UnaryOp):
    """``-1``, ``0`` or ``1`` by the sign of ``x``, element-wise (``nan`` stays ``nan``; the
    sign of zero is ``+0``, as ``np.sign``).

    ```mlir
    %1 = tensordsl.sign %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sign"
    FUNCTION: ClassVar[str | None] = "sign"
    NUMPY_UFUNC: ClassVar[str | None] = "sign"

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        (x,) = args
        zero, one, minus = (scalar_constant(b, v, x.type) for v in (0, 1, -1))
        pos = cmpi(b, x, zero, "sgt")
        neg = cmpi(b, x, zero, "slt")
        low = b.insert(arith.SelectOp(neg, minus, zero)).result
        return (b.insert(arith.SelectOp(pos, one, low)).result,)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return self.int_body(b, args)
        (x,) = args
        zero = scalar_constant(b, 0.0, x.type)
        one = scalar_constant(b, 1.0, x.type)
        minus = scalar_constant(b, -1.0, x.type)
        pos = b.insert(arith.CmpfOp(x, zero, "ogt")).result
        neg = b.insert(arith.CmpfOp(x, zero, "olt")).result
        # x - x is +0 for ±0 and nan for nan
        rest = b.insert(arith.SubfOp(x, x)).result
        low = b.insert(arith.SelectOp(neg, minus, rest)).result
        return (b.insert(arith.SelectOp(pos, one, low)).result,)


@irdl_op_definition
class SquareOp(UnaryOp):
    """``x * x`` element-wise.

    ```mlir
    %1 = tensordsl.square %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.square"
    FUNCTION: ClassVar[str | None] = "square"
    NUMPY_UFUNC: ClassVar[str | None] = "square"

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (b.insert(arith.MuliOp(args[0], args[0])).result,)  # wraps, as NumPy's

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return self.int_body(b, args)
        return (b.insert(arith.MulfOp(args[0], args[0])).result,)


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """``1 / x`` element-wise (``±inf`` at ``±0``).

    ```mlir
    %1 = tensordsl.reciprocal %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.reciprocal"
    FUNCTION: ClassVar[str | None] = "reciprocal"
    NUMPY_UFUNC: ClassVar[str | None] = "reciprocal"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        one = scalar_constant(b, 1.0, args[0].type)
        return (b.insert(arith.DivfOp(one, args[0])).result,)


@irdl_op_definition
class CopyOp(UnaryOp):
    """``x`` itself, element-wise (``np.copy``; numexpr's ``copy``).

    ```mlir
    %1 = tensordsl.copy %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.copy"
    FUNCTION: ClassVar[str | None] = "copy"
    NUMPY_UFUNC: ClassVar[str | None] = "positive"

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (args[0],)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return self.int_body(b, args)
        return (args[0],)


@irdl_op_definition
class ConjOp(UnaryOp):
    """The complex conjugate, which for real floats is ``x`` itself (``np.conj``).

    ```mlir
    %1 = tensordsl.conj %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.conj"
    FUNCTION: ClassVar[str | None] = "conj"
    NUMPY_UFUNC: ClassVar[str | None] = "conjugate"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (args[0],)


@irdl_op_definition
class OnesLikeOp(UnaryOp):
    """Ones of the operand's shape and type (``np.ones_like``; ``nan`` gives 1 too).

    ```mlir
    %1 = tensordsl.ones_like %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.ones_like"
    FUNCTION: ClassVar[str | None] = "ones_like"

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (scalar_constant(b, 1, args[0].type),)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if is_int(args[0].type):
            return self.int_body(b, args)
        return (scalar_constant(b, 1.0, args[0].type),)


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """The logistic function ``1 / (1 + exp(-x))`` element-wise, computed without overflow.

    ```mlir
    %1 = tensordsl.sigmoid %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sigmoid"
    FUNCTION: ClassVar[str | None] = "sigmoid"

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        # the numpy target's own lowering: e = exp(-|x|) and, for f16, the numerator, in
        # the body's type (f32 for f16: one rounding at the end, as the body)
        dtype = numpy_dtype(self.result.type)
        if dtype == FLOAT_DTYPES["f16"]:
            return ((result_shapes[0], FLOAT_DTYPES["f32"]),) * 2
        return ((result_shapes[0], dtype),)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        (x,) = args
        zero = scalar_constant(b, 0.0, x.type)
        one = scalar_constant(b, 1.0, x.type)
        ax = b.insert(xmath.AbsFOp(x)).result
        e = b.insert(xmath.ExpOp(b.insert(arith.NegfOp(ax)).result)).result
        den = b.insert(arith.AddfOp(one, e)).result
        pos = b.insert(arith.DivfOp(one, den)).result
        neg = b.insert(arith.DivfOp(e, den)).result
        nonneg = b.insert(arith.CmpfOp(x, zero, "oge")).result
        return (b.insert(arith.SelectOp(nonneg, pos, neg)).result,)


@irdl_op_definition
class AbsOp(UnaryOp):
    """Absolute value element-wise.

    ```mlir
    %1 = tensordsl.abs %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.abs"
    FUNCTION: ClassVar[str | None] = "abs"
    NUMPY_UFUNC: ClassVar[str | None] = "absolute"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AbsFOp

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        # the most negative integer is its own absolute value, as in NumPy (wraps)
        (x,) = args
        zero = scalar_constant(b, 0, x.type)
        minus = b.insert(arith.SubiOp(zero, x)).result
        neg = cmpi(b, x, zero, "slt")
        return (b.insert(arith.SelectOp(neg, minus, x)).result,)


@irdl_op_definition
class NegOp(UnaryOp, HasCanonicalizationPatternsInterface):
    """``-x`` element-wise.

    ```mlir
    %1 = tensordsl.neg %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.neg"
    FUNCTION: ClassVar[str | None] = "neg"
    NUMPY_UFUNC: ClassVar[str | None] = "negative"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.NegfOp

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        zero = scalar_constant(b, 0, args[0].type)
        return (b.insert(arith.SubiOp(zero, args[0])).result,)  # wraps, as NumPy's

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (NegOfNeg(),)


class ReluOfRelu(RewritePattern):
    """``relu(relu(x)) -> relu(x)``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReluOp, rewriter: PatternRewriter) -> None:
        if isinstance(op.input.owner, ReluOp):
            rewriter.replace(op, [], [op.input])


class NegOfNeg(RewritePattern):
    """``neg(neg(x)) -> x``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: NegOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, NegOp):
            rewriter.replace(op, [], [inner.input])
