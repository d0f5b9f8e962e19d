"""Powers, element-wise and broadcasting: ``**`` (``np.power``, which NumPy computes as
``sqrt`` for a scalar exponent 0.5) and ``float_power`` (``np.float_power``: ``pow`` in
float64, always), with the canonicalization that makes powers by constants cheap
(:class:`PowerByConstant`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float16Type, f32
from xdsl.interfaces import HasCanonicalizationPatternsInterface
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from tdsl.dialects.structured import (
    BinaryOp,
    ScalarOpBuilder,
    element_type,
    is_int,
    scalar_constant,
    tensor_shape,
)
from tdsl.dialects.tensordsl.constant import splat_constant
from tdsl.dialects.tensordsl.contraction import CastOp
from tdsl.dialects.tensordsl.elementwise_binary import MulOp
from tdsl.dialects.tensordsl.elementwise_math import SqrtOp
from tdsl.dialects.tensordsl.elementwise_unary import ReciprocalOp, SquareOp


@irdl_op_definition
class PowerOp(BinaryOp, HasCanonicalizationPatternsInterface):
    """``lhs ** rhs`` element-wise, broadcasting (``np.power``: ``nan`` for a negative base
    and a non-integer exponent, ``x ** 0`` is 1).

    ```mlir
    %2 = tensordsl.power %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.power"
    FUNCTION: ClassVar[str | None] = "power"
    OPERATOR: ClassVar[str | None] = "**"
    NUMPY_UFUNC: ClassVar[str | None] = "power"
    INTEGERS_ADVICE: ClassVar[str] = (
        "NumPy's power of integers (or its error, for a negative exponent) depends on an "
        "exponent known only at call time here: write an integer literal exponent "
        "(`x ** 3`), a float (`2.0 ** n`), or convert first, e.g. `astype(x, float64)`"
    )
    """What the frontend says where integers meet here (it refuses them)."""

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        """``pow``, except that NumPy computes ``x ** 0.5`` as ``sqrt(x)`` when the exponent
        is one element (a scalar or a size-1 array) and the dtype float32 or float64:
        ``sqrt(-0) = -0`` and ``sqrt(-inf) = nan`` (``pow``: ``+0``, ``inf``)."""
        x, y = args
        result = b.insert(xmath.PowFOp(x, y)).result
        one_element = math.prod(tensor_shape(self.rhs)) == 1
        if one_element and not isinstance(element_type(self.result), Float16Type):
            is_half = b.insert(arith.CmpfOp(y, scalar_constant(b, 0.5, y.type), "oeq")).result
            root = b.insert(xmath.SqrtOp(x)).result
            result = b.insert(arith.SelectOp(is_half, root, result)).result
        return (result,)

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (PowerByConstant(),)


@irdl_op_definition
class FloatPowerOp(BinaryOp):
    """``lhs ** rhs`` element-wise in float64, broadcasting (``np.float_power``): ``pow``
    always, with no ``sqrt`` for an exponent 0.5 (``+0`` at ``-0``, ``inf`` at ``-inf``);
    the frontend converts narrower operands, integers and booleans to float64 first.

    ```mlir
    %2 = tensordsl.float_power %0, %1 : (tensor<4x8xf64>, tensor<f64>) -> tensor<4x8xf64>
    ```
    """

    name = "tensordsl.float_power"
    FUNCTION: ClassVar[str | None] = "float_power"
    NUMPY_UFUNC: ClassVar[str | None] = "float_power"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.PowFOp
    LEAST_FLOAT: ClassVar[str | None] = "float64"


MAX_POWER = 8
"""The largest ``|n|`` of an integer power that :class:`PowerByConstant` multiplies out."""


class PowerByConstant(RewritePattern):
    """Strength reduction of ``x ** c`` by a constant ``c`` of equal elements (where the
    result keeps ``x``'s type): ``c = 0.5`` of one element is ``sqrt(x)`` (f32 and f64; of
    more, NumPy computes ``pow``: ``+0`` at ``-0``), ``1`` is ``x``, ``-1`` is
    ``reciprocal(x)`` (NumPy's own fast paths: the same values), and an integer ``n``
    with ``2 <= |n| <= 8`` is multiplications by repeated squaring, of ``reciprocal(x)``
    first for a negative ``n`` (``(1/x)**2`` keeps f32's 2.5e-39 at ``x = 2e19``, where
    ``1/(x*x)`` overflows to 0).

    The multiplications are a sanctioned deviation from NumPy's ``pow``, which
    NumPy computes to within an ulp: for a float ``x``, the product is within
    ``|n| - 1`` ulp of the exact power where the result is a normal number (each of
    the ``|n| - 1`` roundings adds at most one unit of relative error 2**-p, and a
    square doubles what its operand carries), and within ``2|n| - 1`` ulp for a
    negative ``n`` (the reciprocal's rounding is raised to the ``|n|``-th power too).
    So a result within that many ulp of the largest float may round to ``inf``, and
    one in the subnormal range is off by at most as many of its ulp.  An f16 ``x`` is
    multiplied out in f32 and rounded to f16 once, as NumPy computes its f16 ``pow``
    (in f32): the result is NumPy's, or one f16 ulp from it where the f32 product and
    NumPy's f32 ``pow`` round to either side of an f16 tie; f16's subnormals do not
    flush to 0 as products rounded at each step to f16 would.  ``nan``, ``±0`` and ``±inf``
    give NumPy's results.  Integer powers are exact (they wrap as NumPy's do); ``x ** 2``
    is ``square``, exactly NumPy's."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PowerOp, rewriter: PatternRewriter) -> None:
        c = splat_constant(op.rhs)
        x = op.lhs
        if c is None or x.type != op.result.type:
            return
        floats = not is_int(x)
        if c == 1:
            rewriter.replace(op, [], [x])
            return
        new: list[Operation] = []
        one = math.prod(tensor_shape(op.rhs)) == 1  # (NumPy's sqrt: a one-element 0.5,
        if c == 0.5 and one and str(element_type(x)) in ("f32", "f64"):  # not of f16)
            new.append(SqrtOp(x))
        elif floats and c == -1:
            new.append(ReciprocalOp(x))
        elif math.isfinite(c) and c == int(c) and 2 <= abs(c) <= MAX_POWER and (c > 0 or floats):
            base: SSAValue = x
            half = isinstance(element_type(x), Float16Type)
            if half:  # (in f32, rounded once to f16, as NumPy's f16 pow is)
                new.append(CastOp(x, f32))
                base = new[-1].results[0]
            if c < 0:
                new.append(ReciprocalOp(base))
                base = new[-1].results[0]
            result = _power(base, int(abs(c)), new)
            if half:
                new.append(CastOp(result, element_type(x)))
        else:
            return
        rewriter.replace(op, new, [new[-1].results[0]])


def _power(base: SSAValue, n: int, new: list[Operation]) -> SSAValue:
    """``base ** n`` (``n >= 1``) by repeated squaring, its ops appended to ``new``: an
    even power squares the half power, an odd one multiplies the one below by ``base``."""
    if n == 1:
        return base
    if n % 2 == 0:
        new.append(SquareOp(_power(base, n // 2, new)))
    else:
        new.append(MulOp(_power(base, n - 1, new), base))
    return new[-1].results[0]
