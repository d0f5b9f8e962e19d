"""Element-wise unary ops that are one scalar ``math`` function each: exponentials
and logarithms, ``sqrt``, the trigonometric and hyperbolic functions and their
inverses, ``erf``, and rounding (``ceil``, ``floor``, ``round``, ``trunc``).  Each is a
:class:`~tdsl.dialects.structured.UnaryOp` naming its scalar op and its NumPy ufunc.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import math as xmath
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition

from tdsl.dialects.structured import ScalarOpBuilder, UnaryOp
from tdsl.errors import internal_error


@irdl_op_definition
class ExpOp(UnaryOp):
    """``e**x`` element-wise.

    ```mlir
    %1 = tensordsl.exp %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.exp"
    FUNCTION: ClassVar[str | None] = "exp"
    NUMPY_UFUNC: ClassVar[str | None] = "exp"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.ExpOp


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural logarithm element-wise (``nan`` below 0, ``-inf`` at 0, as NumPy).

    ```mlir
    %1 = tensordsl.log %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.log"
    FUNCTION: ClassVar[str | None] = "log"
    NUMPY_UFUNC: ClassVar[str | None] = "log"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.LogOp


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Square root element-wise (``nan`` below 0, as NumPy).

    ```mlir
    %1 = tensordsl.sqrt %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sqrt"
    FUNCTION: ClassVar[str | None] = "sqrt"
    NUMPY_UFUNC: ClassVar[str | None] = "sqrt"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.SqrtOp


@irdl_op_definition
class TanhOp(UnaryOp):
    """Hyperbolic tangent element-wise.

    ```mlir
    %1 = tensordsl.tanh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.tanh"
    FUNCTION: ClassVar[str | None] = "tanh"
    NUMPY_UFUNC: ClassVar[str | None] = "tanh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.TanhOp


@irdl_op_definition
class SinOp(UnaryOp):
    """Sine element-wise (radians).

    ```mlir
    %1 = tensordsl.sin %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sin"
    FUNCTION: ClassVar[str | None] = "sin"
    NUMPY_UFUNC: ClassVar[str | None] = "sin"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.SinOp


@irdl_op_definition
class CosOp(UnaryOp):
    """Cosine element-wise (radians).

    ```mlir
    %1 = tensordsl.cos %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.cos"
    FUNCTION: ClassVar[str | None] = "cos"
    NUMPY_UFUNC: ClassVar[str | None] = "cos"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.CosOp


@irdl_op_definition
class TanOp(UnaryOp):
    """Tangent element-wise (radians).

    ```mlir
    %1 = tensordsl.tan %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.tan"
    FUNCTION: ClassVar[str | None] = "tan"
    NUMPY_UFUNC: ClassVar[str | None] = "tan"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.TanOp


@irdl_op_definition
class ArcsinOp(UnaryOp):
    """Inverse sine element-wise (``nan`` outside [-1, 1], as NumPy).

    ```mlir
    %1 = tensordsl.arcsin %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arcsin"
    FUNCTION: ClassVar[str | None] = "arcsin"
    NUMPY_UFUNC: ClassVar[str | None] = "arcsin"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AsinOp


@irdl_op_definition
class ArccosOp(UnaryOp):
    """Inverse cosine element-wise (``nan`` outside [-1, 1], as NumPy).

    ```mlir
    %1 = tensordsl.arccos %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arccos"
    FUNCTION: ClassVar[str | None] = "arccos"
    NUMPY_UFUNC: ClassVar[str | None] = "arccos"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AcosOp


@irdl_op_definition
class ArctanOp(UnaryOp):
    """Inverse tangent element-wise.

    ```mlir
    %1 = tensordsl.arctan %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arctan"
    FUNCTION: ClassVar[str | None] = "arctan"
    NUMPY_UFUNC: ClassVar[str | None] = "arctan"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AtanOp


@irdl_op_definition
class SinhOp(UnaryOp):
    """Hyperbolic sine element-wise.

    ```mlir
    %1 = tensordsl.sinh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sinh"
    FUNCTION: ClassVar[str | None] = "sinh"
    NUMPY_UFUNC: ClassVar[str | None] = "sinh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.SinhOp


@irdl_op_definition
class CoshOp(UnaryOp):
    """Hyperbolic cosine element-wise.

    ```mlir
    %1 = tensordsl.cosh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.cosh"
    FUNCTION: ClassVar[str | None] = "cosh"
    NUMPY_UFUNC: ClassVar[str | None] = "cosh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.CoshOp


@irdl_op_definition
class ArcsinhOp(UnaryOp):
    """Inverse hyperbolic sine element-wise.

    ```mlir
    %1 = tensordsl.arcsinh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arcsinh"
    FUNCTION: ClassVar[str | None] = "arcsinh"
    NUMPY_UFUNC: ClassVar[str | None] = "arcsinh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AsinhOp


@irdl_op_definition
class ArccoshOp(UnaryOp):
    """Inverse hyperbolic cosine element-wise (``nan`` below 1, as NumPy).

    ```mlir
    %1 = tensordsl.arccosh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arccosh"
    FUNCTION: ClassVar[str | None] = "arccosh"
    NUMPY_UFUNC: ClassVar[str | None] = "arccosh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AcoshOp


@irdl_op_definition
class ArctanhOp(UnaryOp):
    """Inverse hyperbolic tangent element-wise (``nan`` outside [-1, 1], ``±inf`` at ``±1``).

    ```mlir
    %1 = tensordsl.arctanh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arctanh"
    FUNCTION: ClassVar[str | None] = "arctanh"
    NUMPY_UFUNC: ClassVar[str | None] = "arctanh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AtanhOp


@irdl_op_definition
class Log1pOp(UnaryOp):
    """``log(1 + x)`` element-wise, accurate near 0.

    ```mlir
    %1 = tensordsl.log1p %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.log1p"
    FUNCTION: ClassVar[str | None] = "log1p"
    NUMPY_UFUNC: ClassVar[str | None] = "log1p"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.Log1pOp


@irdl_op_definition
class Log10Op(UnaryOp):
    """Base-10 logarithm element-wise.

    ```mlir
    %1 = tensordsl.log10 %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.log10"
    FUNCTION: ClassVar[str | None] = "log10"
    NUMPY_UFUNC: ClassVar[str | None] = "log10"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.Log10Op


@irdl_op_definition
class Log2Op(UnaryOp):
    """Base-2 logarithm element-wise.

    ```mlir
    %1 = tensordsl.log2 %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.log2"
    FUNCTION: ClassVar[str | None] = "log2"
    NUMPY_UFUNC: ClassVar[str | None] = "log2"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.Log2Op


@irdl_op_definition
class Exp2Op(UnaryOp):
    """``2**x`` element-wise (``np.exp2``).

    ```mlir
    %1 = tensordsl.exp2 %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.exp2"
    FUNCTION: ClassVar[str | None] = "exp2"
    NUMPY_UFUNC: ClassVar[str | None] = "exp2"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.Exp2Op


@irdl_op_definition
class CbrtOp(UnaryOp):
    """The cube root element-wise (``np.cbrt``; negative for a negative ``x``).

    ```mlir
    %1 = tensordsl.cbrt %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.cbrt"
    FUNCTION: ClassVar[str | None] = "cbrt"
    NUMPY_UFUNC: ClassVar[str | None] = "cbrt"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.CbrtOp


@irdl_op_definition
class Expm1Op(UnaryOp):
    """``exp(x) - 1`` element-wise, accurate near 0.

    ```mlir
    %1 = tensordsl.expm1 %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.expm1"
    FUNCTION: ClassVar[str | None] = "expm1"
    NUMPY_UFUNC: ClassVar[str | None] = "expm1"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.ExpM1Op


@irdl_op_definition
class ErfOp(UnaryOp):
    """The error function ``2/sqrt(pi) * integral(exp(-t**2), 0, x)`` element-wise (NumPy has
    none; ``math.erf`` of each element).

    ```mlir
    %1 = tensordsl.erf %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.erf"
    FUNCTION: ClassVar[str | None] = "erf"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.ErfOp


@functools.cache
def _keeps_integers(ufunc: str) -> bool:
    """Whether NumPy's ``ufunc`` gives integers of integers (asked once per ufunc)."""
    return getattr(np, ufunc)(np.ones(1, np.int64)).dtype.kind == "i"


class RoundingOp(UnaryOp):
    """Base of the roundings (``ceil``, ``floor``, ``round``, ``trunc``): an integer is
    its own rounding, kept an integer where NumPy's ufunc keeps it one (NumPy 2.3 and
    later do for ``ceil``, ``floor`` and ``trunc``).  The frontend passes an integer
    operand through unchanged (``np.round`` keeps integers too, whatever ``np.rint``
    gives)."""

    @classmethod
    def takes_integers(cls) -> bool:
        if cls.NUMPY_UFUNC is None:  # every rounding is a NumPy ufunc
            raise internal_error(f"the rounding {cls.__name__} names no NumPy ufunc")
        return _keeps_integers(cls.NUMPY_UFUNC)

    def int_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (args[0],)


@irdl_op_definition
class CeilOp(RoundingOp):
    """The smallest integer not below ``x``, element-wise (a float).

    ```mlir
    %1 = tensordsl.ceil %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.ceil"
    FUNCTION: ClassVar[str | None] = "ceil"
    NUMPY_UFUNC: ClassVar[str | None] = "ceil"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.CeilOp


@irdl_op_definition
class FloorOp(RoundingOp):
    """The largest integer not above ``x``, element-wise (a float).

    ```mlir
    %1 = tensordsl.floor %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.floor"
    FUNCTION: ClassVar[str | None] = "floor"
    NUMPY_UFUNC: ClassVar[str | None] = "floor"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.FloorOp


@irdl_op_definition
class RoundOp(RoundingOp):
    """``x`` rounded to the nearest integer, halves to even (``np.round``), element-wise.

    ```mlir
    %1 = tensordsl.round %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.round"
    FUNCTION: ClassVar[str | None] = "round"
    NUMPY_UFUNC: ClassVar[str | None] = "rint"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.RoundEvenOp


@irdl_op_definition
class TruncOp(RoundingOp):
    """``x`` rounded towards zero, element-wise (a float).

    ```mlir
    %1 = tensordsl.trunc %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.trunc"
    FUNCTION: ClassVar[str | None] = "trunc"
    NUMPY_UFUNC: ClassVar[str | None] = "trunc"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.TruncOp
