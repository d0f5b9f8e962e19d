"""``tensordsl.reshape``: the same elements in row-major order, in another shape, as
NumPy's ``np.reshape(x, shape)`` (one extent may be ``-1``: the one that fits).

A reshape computes nothing: where its operand's layout allows (a row-major operand
always does; a window sometimes), its result reads the operand in place, with strides
of its own (:func:`reshape_strides`, NumPy's rule for a reshape without a copy); where
it does not, a target copies the operand row-major first.  Like a slice, it is not
structured: fusion leaves it between groups (see
:class:`~tdsl.dialects.op_interfaces.StridedView`).

```mlir
%1 = tensordsl.reshape %0 : tensor<4x6xf32> -> tensor<2x12xf32>
```
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
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

from tdsl.dialects.op_interfaces import LanguageFunction, Param, StridedView, row_major_strides
from tdsl.dialects.structured import (
    ElementConstr,
    ShapeError,
    StaticShapeConstr,
    element_type,
    fmt_shape,
    operand_value,
    tensor_shape,
    tensor_type,
)
from tdsl.dtypes import BOOL_DTYPE
from tdsl.errors import internal_error


def reshape_shape(shape: Sequence[int], new: Sequence[int]) -> tuple[int, ...]:
    """``new`` with its ``-1`` (at most one) resolved for an operand of ``shape``, or
    :class:`ShapeError` when the sizes differ, as ``np.reshape``."""
    size = math.prod(shape)
    unknown = [a for a, n in enumerate(new) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in new):
        raise ShapeError(f"a new shape has extents >= 0 and at most one -1, not {tuple(new)}")
    known = math.prod(n for n in new if n != -1)
    if unknown:
        if known == 0 or size % known:
            raise ShapeError(
                f"cannot reshape a tensor of shape {tuple(shape)} ({size} elements) "
                f"into shape {tuple(new)}"
            )
        return tuple(size // known if n == -1 else n for n in new)
    if known != size:
        raise ShapeError(
            f"cannot reshape a tensor of shape {tuple(shape)} ({size} elements) into "
            f"shape {tuple(new)} ({known} elements)"
        )
    return tuple(new)


def reshape_strides(
    shape: Sequence[int], strides: Sequence[int], new: Sequence[int]
) -> tuple[int, ...] | None:
    """The strides of ``new`` reading an operand of ``shape`` and ``strides`` in place, in
    row-major order, or None when no strides can (NumPy's ``_attempt_nocopy_reshape``)."""
    if math.prod(shape) == 0:
        return row_major_strides(new)
    old = [(n, s) for n, s in zip(shape, strides, strict=True) if n != 1]
    out = [0] * len(new)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new) and oi < len(old):
        want, have = new[ni], old[oi][0]
        while want != have:
            if want < have:
                want *= new[nj]
                nj += 1
            else:
                have *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    last = out[ni - 1] if ni >= 1 else 1
    for k in range(ni, len(new)):
        out[k] = last
    return tuple(out)


@irdl_op_definition
class ReshapeOp(IRDLOperation, StridedView, LanguageFunction):
    """The operand's elements in row-major order, in the result's shape, as
    ``np.reshape(x, shape)`` (one extent may be ``-1``)."""

    name = "tensordsl.reshape"
    FUNCTION: ClassVar[str | None] = "reshape"
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("shape", "new_shape", None, required=True),)

    E: ClassVar = VarConstraint("E", ElementConstr)
    input = operand_def(TensorType.constr(E, shape=StaticShapeConstr))
    result = result_def(TensorType.constr(E, shape=StaticShapeConstr))

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation, shape: Sequence[int]) -> None:
        value = operand_value(self.name, input)
        new = reshape_shape(tensor_shape(value), shape)
        super().__init__(operands=[value], result_types=[tensor_type(element_type(value), new)])

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        (x,) = operands
        shape = params["shape"]
        if not isinstance(shape, tuple):
            raise internal_error(f"'{cls.name}' takes a tuple `shape`, not {shape!r}")
        return cls(x, shape)

    def evaluate_view(self, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return np.reshape(array, tensor_shape(self.result))

    def layout(
        self, shape: Sequence[int], strides: Sequence[int]
    ) -> tuple[int, tuple[int, ...]] | None:
        found = reshape_strides(shape, strides, tensor_shape(self.result))
        return None if found is None else (0, found)

    def verify_(self) -> None:
        a, r = tensor_shape(self.input), tensor_shape(self.result)
        if math.prod(a) != math.prod(r):
            raise VerifyException(
                f"'{self.name}' op cannot reshape {fmt_shape(a)} ({math.prod(a)} elements) "
                f"into {fmt_shape(r)} ({math.prod(r)} elements)"
            )


class Ravel(LanguageFunction):
    """The elements in row-major order, flat, as ``np.ravel(x)``: a ``reshape`` to
    ``(-1,)``."""

    FUNCTION: ClassVar[str | None] = "ravel"

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        (x,) = operands
        return ReshapeOp(x, (-1,))


__all__ = ["Ravel", "ReshapeOp", "reshape_shape", "reshape_strides"]
