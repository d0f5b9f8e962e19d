"""Joins: ``tensordsl.concatenate``, NumPy's ``np.concatenate((a, b), axis)``, and the
language's ``stack``, ``hstack`` and ``vstack``, which the frontend writes with it; and
the splits ``split`` and ``array_split``, which it writes as windows (``slice``).

A concatenation computes nothing: its result is one buffer, each operand written into
its slice along ``axis``.  Like a window it is not structured: fusion leaves it between
groups, and each target makes the buffer before the operands' producers run, so that a
group whose result only the join reads writes that result into its slice directly (the
numpy target gives the group the slice as its output array, the native target a
pointer into the buffer); any other operand (an argument, a value also read elsewhere)
is copied into its slice.

```mlir
%2 = tensordsl.concatenate %0, %1 axis 1 : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
```
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import I64, IntegerAttr, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
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
from tdsl.errors import internal_error


def concatenate_shape(shapes: Sequence[Sequence[int]], axis: int) -> tuple[int, ...]:
    """The shape of ``np.concatenate`` of operands of ``shapes`` along (normalized)
    ``axis``, or :class:`ShapeError`."""
    if not shapes:
        raise ShapeError("need at least one array to concatenate")
    first = tuple(shapes[0])
    for k, shape in enumerate(shapes[1:], start=1):
        if len(shape) != len(first):
            raise ShapeError(
                f"all the operands must have the same rank: operand 0 has shape "
                f"{fmt_shape(first)}, operand {k} has shape {fmt_shape(shape)}"
            )
        for a, (n, m) in enumerate(zip(first, shape, strict=True)):
            if a != axis and n != m:
                raise ShapeError(
                    f"the operands' extents must match except along axis {axis}: operand 0 "
                    f"has shape {fmt_shape(first)}, operand {k} has shape {fmt_shape(shape)}"
                )
    return tuple(sum(s[axis] for s in shapes) if a == axis else n for a, n in enumerate(first))


@irdl_op_definition
class ConcatenateOp(IRDLOperation, LanguageFunction):
    """Its operands joined along ``axis``, as ``np.concatenate((a, b, ...), axis)``."""

    name = "tensordsl.concatenate"
    FUNCTION: ClassVar[str | None] = "concatenate"
    SEQUENCE: ClassVar[bool] = True
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("axis", "int", 0),)

    E: ClassVar = VarConstraint("E", ElementConstr)
    inputs = var_operand_def(TensorType.constr(E, shape=StaticShapeConstr))
    result = result_def(TensorType.constr(E, shape=StaticShapeConstr))
    axis = prop_def(IntegerAttr[I64])

    assembly_format = "$inputs `axis` $axis attr-dict `:` `(` type($inputs) `)` `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, inputs: Sequence[SSAValue], axis: int) -> None:
        if not inputs:
            raise ShapeError("need at least one array to concatenate")
        shapes = [tensor_shape(v) for v in inputs]
        axis = normalize_axis(axis, len(shapes[0]))
        shape = concatenate_shape(shapes, axis)
        super().__init__(
            operands=[list(inputs)],
            result_types=[tensor_type(element_type(inputs[0]), shape)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    @classmethod
    def signature(cls) -> str:
        return "concatenate((a, b, ...), axis=0)"

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        axis = params["axis"]
        if not isinstance(axis, int):
            raise internal_error(f"'{cls.name}' takes an int `axis`, not {axis!r}")
        return cls(operands, axis)

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def offsets(self) -> tuple[int, ...]:
        """Where each operand starts along the axis."""
        out: list[int] = []
        at = 0
        for v in self.inputs:
            out.append(at)
            at += tensor_shape(v)[self.axis_value]
        return tuple(out)

    def parts(self) -> tuple[tuple[slice, ...], ...]:
        """The slice of the result each operand fills (all at once: a join of ``n``
        operands asked one operand at a time would add up ``n**2`` extents)."""
        axis, rank = self.axis_value, len(tensor_shape(self.result))
        out: list[tuple[slice, ...]] = []
        for start, v in zip(self.offsets(), self.inputs, strict=True):
            extent = tensor_shape(v)[axis]
            out.append(
                tuple(
                    slice(start, start + extent) if a == axis else slice(None) for a in range(rank)
                )
            )
        return tuple(out)

    def evaluate(self, *arrays: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return np.concatenate(arrays, axis=self.axis_value)

    def verify_(self) -> None:
        shapes = [tensor_shape(v) for v in self.inputs]
        rank = len(tensor_shape(self.result))
        try:
            if not 0 <= self.axis_value < max(rank, 1):
                raise ShapeError(f"axis {self.axis_value} is out of range for rank {rank}")
            expected = concatenate_shape(shapes, self.axis_value)
        except ShapeError as err:
            raise VerifyException(f"'{self.name}' op {err.message}") from None
        if expected != tensor_shape(self.result):
            raise VerifyException(
                f"'{self.name}' op result has shape {fmt_shape(tensor_shape(self.result))}, "
                f"expected {fmt_shape(expected)}"
            )


class _JoinSpelling(LanguageFunction):
    """A join of the language written as ``expand_dims`` and a ``concatenate``."""

    SEQUENCE: ClassVar[bool] = True

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        raise NotImplementedError("the frontend writes joins (tdsl.frontend.joins)")


class Stack(_JoinSpelling):
    """Its operands (of one shape) joined along a new axis, as ``np.stack((a, b), axis)``:
    an ``expand_dims`` of each and a ``concatenate``."""

    FUNCTION: ClassVar[str | None] = "stack"
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("axis", "int", 0),)

    @classmethod
    def signature(cls) -> str:
        return "stack((a, b, ...), axis=0)"


class HStack(_JoinSpelling):
    """Its operands joined along axis 1 (axis 0 for 1-d ones), as ``np.hstack((a, b))``."""

    FUNCTION: ClassVar[str | None] = "hstack"

    @classmethod
    def signature(cls) -> str:
        return "hstack((a, b, ...))"


class VStack(_JoinSpelling):
    """Its operands joined along axis 0, 1-d ones as rows, as ``np.vstack((a, b))``."""

    FUNCTION: ClassVar[str | None] = "vstack"

    @classmethod
    def signature(cls) -> str:
        return "vstack((a, b, ...))"


class Split(_JoinSpelling):
    """Its operand cut along ``axis`` into equal sections (a number) or at indices (a
    tuple), as ``np.split(x, indices_or_sections, axis)``: several results, each a
    ``slice`` (an unequal division is an error; see ``array_split``)."""

    FUNCTION: ClassVar[str | None] = "split"
    SEQUENCE: ClassVar[bool] = False
    SEVERAL: ClassVar[bool] = True
    POSITIONAL: ClassVar[int] = 2
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("indices_or_sections", "sections", None, required=True),
        Param("axis", "int", 0),
    )


class ArraySplit(Split):
    """As ``split``, with sections that may differ by one (the first ones larger), as
    ``np.array_split(x, indices_or_sections, axis)``."""

    FUNCTION: ClassVar[str | None] = "array_split"


def split_bounds(
    extent: int, sections: int | tuple[int, ...], equal: bool
) -> list[tuple[int, int]]:
    """Where each part of an axis of ``extent`` starts and stops, as ``np.split`` (with
    ``equal``) or ``np.array_split`` cuts it; :class:`ShapeError` for an unequal
    ``split``."""
    if isinstance(sections, int):
        if equal and extent % sections:
            raise ShapeError(
                f"array split does not result in an equal division: {extent} into "
                f"{sections} sections (use array_split)"
            )
        small, extra = divmod(extent, sections)
        sizes = [small + 1] * extra + [small] * (sections - extra)
        bounds: list[tuple[int, int]] = []
        at = 0
        for n in sizes:
            bounds.append((at, at + n))
            at += n
        return bounds
    cuts = [0, *sections, extent]
    return [slice(a, b).indices(extent)[:2] for a, b in itertools.pairwise(cuts)]


JOIN_FUNCTIONS: tuple[type[LanguageFunction], ...] = (Stack, HStack, VStack, Split, ArraySplit)
"""Joins and splits of the language, written with other ops (``expand_dims``,
``concatenate``, ``slice``)."""

__all__ = [
    "JOIN_FUNCTIONS",
    "ArraySplit",
    "ConcatenateOp",
    "HStack",
    "Split",
    "Stack",
    "VStack",
    "concatenate_shape",
    "split_bounds",
]
