"""Views that move axes: ``expand_dims`` and ``squeeze`` (they add or drop axes of
extent 1, and their operand's indexing map says so), and the language's ``swapaxes``
and ``moveaxis``, which are ``transpose`` ops, and ``einsum``, which the frontend
writes with them.

```mlir
%1 = tensordsl.expand_dims %0 axes [0, 2] : tensor<4x8xf32> -> tensor<1x4x1x8xf32>
%2 = tensordsl.squeeze %1 axes [0] : tensor<1x4x1x8xf32> -> tensor<4x1x8xf32>
```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects.builtin import I64, DenseArrayBase, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects.structured import (
    ElementConstr,
    IteratorType,
    LanguageFunction,
    Param,
    ShapeError,
    StaticShapeConstr,
    StructuredOpInterface,
    dims_map,
    element_type,
    fmt_shape,
    identity_map,
    normalize_axis,
    operand_value,
    tensor_shape,
    tensor_type,
)
from tdsl.dialects.structured_types import expect_shape
from tdsl.dialects.tensordsl.contraction import TransposeOp
from tdsl.dtypes import BOOL_DTYPE
from tdsl.errors import internal_error


def _axes(axes: int | Sequence[int], rank: int, what: str) -> tuple[int, ...]:
    """``axes`` (one or a tuple) made non-negative for ``rank`` axes, sorted; each once."""
    given = (axes,) if isinstance(axes, int) else tuple(axes)
    out = tuple(normalize_axis(a, rank) for a in given)
    if len(set(out)) != len(out):
        raise ShapeError(f"{what} names an axis twice ({tuple(given)}); name each axis once")
    return tuple(sorted(out))


def expand_dims_shape(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    """The shape of ``np.expand_dims`` with (normalized, sorted) result ``axes``."""
    rest = iter(shape)
    return tuple(1 if a in axes else next(rest) for a in range(len(shape) + len(axes)))


def squeeze_shape(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    """The shape of ``np.squeeze`` of (normalized) ``axes``, or :class:`ShapeError` for an
    axis whose extent is not 1."""
    for a in axes:
        if shape[a] != 1:
            raise ShapeError(
                f"cannot squeeze axis {a} of a tensor of shape {fmt_shape(shape)}: its "
                f"extent is {shape[a]}, not 1"
            )
    return tuple(n for a, n in enumerate(shape) if a not in axes)


class _UnitAxesView(IRDLOperation, StructuredOpInterface, LanguageFunction):
    """Adds (``expand_dims``) or drops (``squeeze``) axes of extent 1: it computes
    nothing, and its operand's indexing map leaves out the added axes (``expand_dims``)
    or reads the dropped ones at index 0 (``squeeze``)."""

    E: ClassVar = VarConstraint("E", ElementConstr)
    input = operand_def(TensorType.constr(E, shape=StaticShapeConstr))
    result = result_def(TensorType.constr(E, shape=StaticShapeConstr))
    axes = prop_def(DenseArrayBase.constr(I64))

    assembly_format = "$input `axes` $axes attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation, axis: int | Sequence[int] | None) -> None:
        value = operand_value(self.name, input)
        shape = tensor_shape(value)
        axes = self.normalized(shape, axis)
        result = tensor_type(element_type(value), self.view_shape(shape, axes))
        props: dict[str, Attribute] = {"axes": DenseArrayBase.from_list(i64, list(axes))}
        super().__init__(operands=[value], result_types=[result], properties=props)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE

    @classmethod
    def normalized(cls, shape: Sequence[int], axis: int | Sequence[int] | None) -> tuple[int, ...]:
        """The axes the op records for ``axis`` (as its function takes it)."""
        raise NotImplementedError

    @staticmethod
    def view_shape(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def axes_value(self) -> tuple[int, ...]:
        return tuple(self.axes.get_values())

    def verify_(self) -> None:
        shape = tensor_shape(self.input)
        axes = self.axes_value
        try:
            if tuple(self.normalized(shape, axes)) != axes:
                raise ShapeError(f"axes {list(axes)} are not sorted, each once")
            expected = self.view_shape(shape, axes)
        except ShapeError as err:
            raise VerifyException(f"'{self.name}' op {err.message}") from None
        expect_shape(self, expected, self.result.type, "result")

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        (t,) = operand_types
        return (tensor_type(element_type(t), self.view_shape(tensor_shape(t), self.axes_value)),)

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(self.result)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        return (IteratorType.PARALLEL,) * len(tensor_shape(self.result))

    def is_view(self) -> bool:
        return True

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (args[0],)


@irdl_op_definition
class ExpandDimsOp(_UnitAxesView):
    """Inserts axes of extent 1 at ``axis`` of the result, as ``np.expand_dims(x, axis)``.

    ```mlir
    %1 = tensordsl.expand_dims %0 axes [0, 2] : tensor<4x8xf32> -> tensor<1x4x1x8xf32>
    ```
    """

    name = "tensordsl.expand_dims"
    FUNCTION: ClassVar[str | None] = "expand_dims"
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("axis", "new_axes", None, required=True),)

    @classmethod
    def normalized(cls, shape: Sequence[int], axis: int | Sequence[int] | None) -> tuple[int, ...]:
        if axis is None:
            raise ShapeError("`expand_dims` needs an `axis`")
        n = 1 if isinstance(axis, int) else len(axis)
        return _axes(axis, len(shape) + n, "`axis` of `expand_dims`")

    @staticmethod
    def view_shape(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
        return expand_dims_shape(shape, axes)

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = len(tensor_shape(self.result))
        kept = [d for d in range(rank) if d not in self.axes_value]
        return (dims_map(rank, kept), identity_map(rank))

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        return (np.expand_dims(args[0], self.axes_value),)


@irdl_op_definition
class SqueezeOp(_UnitAxesView):
    """Drops axes of extent 1, as ``np.squeeze(x, axis)`` (without ``axis``: every one).

    ```mlir
    %1 = tensordsl.squeeze %0 axes [0, 2] : tensor<1x4x1x8xf32> -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.squeeze"
    FUNCTION: ClassVar[str | None] = "squeeze"
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("axis", "int_axes", None),)

    @classmethod
    def normalized(cls, shape: Sequence[int], axis: int | Sequence[int] | None) -> tuple[int, ...]:
        if axis is None:
            return tuple(a for a, n in enumerate(shape) if n == 1)
        return _axes(axis, len(shape), "`axis` of `squeeze`")

    @staticmethod
    def view_shape(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
        return squeeze_shape(shape, axes)

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank_in = len(tensor_shape(self.input))
        rank = rank_in - len(self.axes_value)
        loops = iter(range(rank))
        dims = [None if a in self.axes_value else next(loops) for a in range(rank_in)]
        return (dims_map(rank, dims), identity_map(rank))

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        return (np.squeeze(args[0], self.axes_value),)


class BroadcastTo(LanguageFunction):
    """Its operand broadcast to ``shape``, as ``np.broadcast_to(x, shape)``: the frontend
    writes it as a product with ones of the broadcast extents (exact: ``x * 1`` is ``x``,
    signed zeros and nans included; ``&`` for booleans), which fuses with what reads it,
    so nothing is made at the broadcast shape but the ones (stored once)."""

    FUNCTION: ClassVar[str | None] = "broadcast_to"
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("shape", "shape", None, required=True),)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        raise NotImplementedError("broadcast_to is two ops: tdsl.frontend.creation writes them")


def broadcast_ones_shape(shape: Sequence[int], target: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of the ones ``broadcast_to(x, target)`` multiplies ``x`` by: ``target``'s
    extents where ``x`` broadcasts, 1 elsewhere; :class:`ShapeError` unless ``shape``
    broadcasts to ``target`` (NumPy's rule)."""
    check_broadcast(shape, target)
    lead = len(target) - len(shape)
    return tuple(n if a < lead or shape[a - lead] != n else 1 for a, n in enumerate(target))


def check_broadcast(shape: Sequence[int], target: tuple[int, ...]) -> None:
    """:class:`ShapeError` unless ``shape`` broadcasts to ``target`` (NumPy's rule)."""
    ok = len(shape) <= len(target) and all(
        n in (1, m) for n, m in zip(reversed(shape), reversed(target), strict=False)
    )
    if not ok:
        raise ShapeError(
            f"cannot broadcast a tensor of shape {fmt_shape(shape)} to shape {fmt_shape(target)}"
        )


class _TransposeSpelling(LanguageFunction):
    """A function of the language that is a ``tensordsl.transpose`` of its operand (which
    takes booleans as they are), its two parameters also given by position."""

    POSITIONAL: ClassVar[int] = 2

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE


class SwapAxes(_TransposeSpelling):
    """Exchanges two axes, as ``np.swapaxes(x, axis1, axis2)``: a ``tensordsl.transpose``."""

    FUNCTION: ClassVar[str | None] = "swapaxes"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("axis1", "int_axis", None, required=True),
        Param("axis2", "int_axis", None, required=True),
    )

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        (x,) = operands
        perm = list(range(len(tensor_shape(x))))
        a, b = params["axis1"], params["axis2"]
        if not isinstance(a, int) or not isinstance(b, int):
            raise internal_error(f"`swapaxes` takes two int axes, not {a!r} and {b!r}")
        perm[a], perm[b] = perm[b], perm[a]
        return TransposeOp(x, perm)


class MoveAxis(_TransposeSpelling):
    """Moves axes to new positions, as ``np.moveaxis(x, source, destination)``: a
    ``tensordsl.transpose`` (the other axes keep their order)."""

    FUNCTION: ClassVar[str | None] = "moveaxis"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("source", "int_axes", None, required=True),
        Param("destination", "int_axes", None, required=True),
    )

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        (x,) = operands
        source = cast(tuple[int, ...], params["source"])
        destination = cast(tuple[int, ...], params["destination"])
        if len(source) != len(destination):
            raise ShapeError(
                f"`moveaxis` needs as many destinations as sources, got {len(source)} "
                f"sources and {len(destination)} destinations"
            )
        rank = len(tensor_shape(x))
        order = [a for a in range(rank) if a not in source]
        for dest, src in sorted(zip(destination, source, strict=True)):
            order.insert(dest, src)
        return TransposeOp(x, order)


class Einsum(LanguageFunction):
    """Sums of products over named axes, as ``np.einsum(subscripts, a, b)`` of one or two
    operands: the frontend writes it as ``transpose``, ``expand_dims``, ``matmul``,
    ``mul`` and ``sum`` ops (see :mod:`tdsl.frontend.einsum`)."""

    FUNCTION: ClassVar[str | None] = "einsum"
    ARITY: ClassVar[int] = 2
    MIN_ARITY: ClassVar[int | None] = 1
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("subscripts", "subscripts", None, required=True),)
    POSITIONAL: ClassVar[int] = 0

    @classmethod
    def signature(cls) -> str:
        return "einsum(subscripts, a, b=None)"

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        raise NotImplementedError("einsum is several ops: tdsl.frontend.einsum writes them")


VIEW_FUNCTIONS: tuple[type[LanguageFunction], ...] = (SwapAxes, MoveAxis, Einsum, BroadcastTo)
"""Functions of the language that are spellings of other ops (no op of their own)."""

__all__ = [
    "VIEW_FUNCTIONS",
    "BroadcastTo",
    "Einsum",
    "ExpandDimsOp",
    "MoveAxis",
    "SqueezeOp",
    "SwapAxes",
    "broadcast_ones_shape",
    "expand_dims_shape",
    "squeeze_shape",
]
