"""Gathers: ``tensordsl.take``, NumPy's ``np.take(a, indices, axis)`` and ``a[indices]``
by an integer array (an embedding lookup).

The indices are a tensor of ``i32`` or ``i64`` elements, the only integers the language
takes.  As NumPy's default (``mode="raise"``), a negative index counts from the end and
an index outside ``[-n, n)`` is an error, raised on every target as a
:class:`~tdsl.errors.TdslIndexError` (the native target checks each index and reports
through an error flag; it never reads outside ``a``).  A gather computes nothing: like a
join it is not structured, fusion leaves it between groups, and its result is a buffer
its readers read.

```mlir
%2 = tensordsl.take %w, %t axis 0 : (tensor<50x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import I64, IntegerAttr, IntegerType, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    EqAttrConstraint,
    IRDLOperation,
    MessageConstraint,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects.op_interfaces import LanguageFunction, Param
from tdsl.dialects.structured import (
    ElementConstr,
    ShapeError,
    StaticShapeConstr,
    element_type,
    fmt_shape,
    normalize_axis,
    tensor_shape,
    tensor_type,
)
from tdsl.dtypes import BOOL_DTYPE
from tdsl.errors import SourceLocation, TdslIndexError

IndexTensorConstr = TensorType.constr(
    MessageConstraint(
        EqAttrConstraint(IntegerType(32)) | EqAttrConstraint(IntegerType(64)),
        "indices are i32 or i64",
    ),
    shape=StaticShapeConstr,
)


def take_shape(shape: Sequence[int], indices: Sequence[int], axis: int) -> tuple[int, ...]:
    """``np.take``'s result shape: ``shape`` with ``axis`` replaced by ``indices``."""
    return (*shape[:axis], *indices, *shape[axis + 1 :])


def check_indices(
    indices: np.ndarray[Any, Any],
    extent: int,
    axis: int,
    op: Operation | None = None,
    location: SourceLocation | None = None,
) -> None:
    """:class:`TdslIndexError` for the first index outside ``[-extent, extent)``, as NumPy
    words it (carrying ``op``, the gather, for a driver to locate, or its ``location``
    where no driver will: a Dask task's)."""
    bad = (indices < -extent) | (indices >= extent)
    if bad.any():
        first = int(indices[bad].reshape(-1)[0])
        raise TdslIndexError(
            f"index {first} is out of bounds for axis {axis} with size {extent}",
            location,
            op=op,
        )


@irdl_op_definition
class TakeOp(IRDLOperation, LanguageFunction):
    """The elements of its operand at ``indices`` along ``axis``, as
    ``np.take(a, indices, axis)`` (negative indices count from the end; one outside the
    axis is a :class:`~tdsl.errors.TdslIndexError`)."""

    name = "tensordsl.take"
    FUNCTION: ClassVar[str | None] = "take"
    ARITY: ClassVar[int] = 2
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("axis", "int", None),)

    E: ClassVar = VarConstraint("E", ElementConstr)
    input = operand_def(TensorType.constr(E, shape=StaticShapeConstr))
    indices = operand_def(IndexTensorConstr)
    result = result_def(TensorType.constr(E, shape=StaticShapeConstr))
    axis = prop_def(IntegerAttr[I64])

    assembly_format = (
        "$input `,` $indices `axis` $axis attr-dict `:` `(` type($input) `,` type($indices) "
        "`)` `->` type($result)"
    )
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, indices: SSAValue, axis: int) -> None:
        shape = tensor_shape(input)
        if not shape:
            raise ShapeError("`take` needs a tensor of rank 1 or more to take from")
        axis = normalize_axis(axis, len(shape))
        result = tensor_type(element_type(input), take_shape(shape, tensor_shape(indices), axis))
        super().__init__(
            operands=[input, indices],
            result_types=[result],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    @classmethod
    def signature(cls) -> str:
        return "take(a, indices, axis=None)"

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        raise NotImplementedError("take flattens first without an axis: the frontend writes it")

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    @property
    def extent(self) -> int:
        """The extent of the axis taken along."""
        return tensor_shape(self.input)[self.axis_value]

    def evaluate(self, a: np.ndarray[Any, Any], indices: np.ndarray[Any, Any]) -> Any:
        check_indices(indices, self.extent, self.axis_value, self)
        return np.take(a, indices, axis=self.axis_value)

    def verify_(self) -> None:
        shape = tensor_shape(self.input)
        if not 0 <= self.axis_value < len(shape):
            raise VerifyException(
                f"'{self.name}' op axis {self.axis_value} is out of range for its operand of "
                f"shape {fmt_shape(shape)}"
            )
        expected = take_shape(shape, tensor_shape(self.indices), self.axis_value)
        if expected != tensor_shape(self.result):
            raise VerifyException(
                f"'{self.name}' op result has shape {fmt_shape(tensor_shape(self.result))}, "
                f"expected {fmt_shape(expected)}"
            )


__all__ = ["TakeOp", "check_indices", "take_shape"]
