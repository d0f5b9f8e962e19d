"""``tdslmath``: the scalar float ops tdsl's loop bodies need that xDSL 0.75's ``arith``
and ``math`` dialects lack.

Scalar bodies (``scalar_body`` of the structured-op interface) are written in
upstream ``arith`` and ``math`` ops wherever those have the operation.  Three
NumPy functions have no op there: ``fmod`` (MLIR's ``arith.remf``, absent from
xDSL 0.75), ``hypot`` and ``nextafter`` (C library functions).  Each is one op
here, on two operands and a result of one float type, with the C semantics
NumPy uses; a native lowering maps ``remf`` to LLVM's ``frem`` and the others
to the C library.

```mlir
%r = tdslmath.remf %a, %b : f32
```
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure


class _BinaryFloatOp(IRDLOperation):
    """Two operands and a result of one float type."""

    T: ClassVar = VarConstraint("T", base(Float16Type) | base(Float32Type) | base(Float64Type))
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)

    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None) -> None:
        super().__init__(operands=[lhs, rhs], result_types=[result_type or lhs.type])


@irdl_op_definition
class RemFOp(_BinaryFloatOp):
    """``fmod(lhs, rhs)``: the remainder with the sign of ``lhs`` (C's ``fmod``, LLVM's
    ``frem``; ``nan`` when ``rhs`` is 0).

    ```mlir
    %r = tdslmath.remf %a, %b : f32
    ```
    """

    name = "tdslmath.remf"


@irdl_op_definition
class HypotOp(_BinaryFloatOp):
    """``sqrt(lhs**2 + rhs**2)`` without intermediate overflow (C's ``hypot``: ``inf`` if
    either operand is infinite, even with a ``nan``).

    ```mlir
    %r = tdslmath.hypot %a, %b : f64
    ```
    """

    name = "tdslmath.hypot"


@irdl_op_definition
class NextAfterOp(_BinaryFloatOp):
    """The next representable value after ``lhs`` towards ``rhs`` (C's ``nextafter``).

    ```mlir
    %r = tdslmath.nextafter %a, %b : f16
    ```
    """

    name = "tdslmath.nextafter"


TdslMath = Dialect("tdslmath", [RemFOp, HypotOp, NextAfterOp], [])

__all__ = ["HypotOp", "NextAfterOp", "RemFOp", "TdslMath"]
