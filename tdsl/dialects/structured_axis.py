"""The base classes of ops along an axis: :class:`ReductionOp` (a ufunc's ``reduce``
over one axis or all, with its combining op and accumulator), :class:`RowLocalOp` (a
row-normalizing op and its decomposition, with :func:`row_stat_shape`) and
:class:`ScanOp` (a ufunc's ``accumulate``, carried from tile to tile).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.builder import (
    Builder,  # pyright: ignore[reportPrivateUsage]
)
from xdsl.dialects.builtin import I64, IntegerAttr, TensorType, UnitAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects.op_interfaces import CarriedLoop, Decomposable, LanguageFunction, Param, Scan
from tdsl.dialects.structured_elementwise import identity_map
from tdsl.dialects.structured_interface import Reduction, StructuredOpInterface, as_array
from tdsl.dialects.structured_loops import (
    Combiner,
    IteratorType,
    ScalarOpBuilder,
    Workspace,
    dims_map,
)
from tdsl.dialects.structured_types import (
    INT_SCALAR_OPS,
    FloatTensorConstr,
    NumericElementConstr,
    NumericTensorConstr,
    ShapeError,
    StaticShapeConstr,
    convert_scalar,
    element_of,
    element_type,
    expect_shape,
    fmt_shape,
    int_op,
    is_int,
    normalize_axis,
    numpy_dtype,
    operand_value,
    reduce_shape,
    same_element_types,
    scalar_constant,
    shape_error,
    tensor_shape,
    tensor_type,
)
from tdsl.dtypes import sum_dtype, wide_accumulator


def _axis_attr(axis: int) -> IntegerAttr[I64]:
    return IntegerAttr(axis, i64)


class ReductionOp(IRDLOperation, StructuredOpInterface, Reduction, LanguageFunction, abc.ABC):
    """Base of reductions over one axis (or all axes when ``axis`` is absent).

    A subclass gives the NumPy ufunc whose ``reduce`` computes it
    (``NUMPY_UFUNC``), the partial of nothing (``IDENTITY``), the scalar op
    combining an accumulator with an element (``COMBINE_OP``), and whether a
    float16 input accumulates in float32 (``WIDE``); a mean also overrides the
    ``finalize`` methods.  The loop space is the operand's; the reduced dims
    are ``reduction`` dims.
    """

    NUMPY_UFUNC: ClassVar[str]
    IDENTITY: ClassVar[float]
    COMBINE_OP: ClassVar[ScalarOpBuilder]
    WIDE: ClassVar[bool] = False
    """float16 accumulates in float32 (sums, means and products; as NumPy's mean)."""
    REORDERS: ClassVar[bool] = False
    """Compiled code may combine the elements in another order than NumPy's (only sums
    and means: the native target marks their accumulator ``reassoc``, and their loop
    LLVM's vectorize hint, so that LLVM vectorizes them, with an error bound like
    pairwise summation's).  Other reductions
    combine in order and give NumPy's results, overflow, underflow and nan included."""
    ORDERED: ClassVar[bool] = False
    """Combining partial results of parts would change it (a product: ``1e30 * 1e30 *
    1e-30`` is inf, ``1e30 * (1e30 * 1e-30)`` 1e30): tiles continue its running value in
    order, and Dask takes its reduced dims whole rather than combining chunks' partials."""
    NEEDS_ELEMENTS: ClassVar[bool] = False
    """Reducing nothing is an error (the reduction has no identity NumPy accepts)."""
    FUNCTION: ClassVar[str | None]
    """The name users know it by (``"sum"``): its function, and messages use it."""
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("axis", "axes", None),
        Param("keepdims", "bool", False),
    )

    INTEGERS: ClassVar[bool] = False
    """The reduction computes integers exactly (``sum``, ``prod``, ``max``, ``min``);
    others take floats only, and the frontend converts integers as NumPy does."""

    E: ClassVar = VarConstraint("E", NumericElementConstr)
    input = operand_def(TensorType.constr(E, shape=StaticShapeConstr))
    result = result_def(TensorType.constr(E, shape=StaticShapeConstr))
    axis = opt_prop_def(IntegerAttr[I64])
    keepdims = opt_prop_def(UnitAttr)

    assembly_format = (
        "$input (`axis` `=` $axis^)? (`keepdims` $keepdims^)? attr-dict "
        "`:` type($input) `->` type($result)"
    )
    traits = traits_def(Pure())

    def __init__(
        self, input: SSAValue | Operation, axis: int | None = None, keepdims: bool = False
    ) -> None:
        value = operand_value(self.name, input)
        shape = self.result_shape(tensor_shape(value), axis, keepdims)
        props: dict[str, Attribute] = {}
        if axis is not None:
            props["axis"] = _axis_attr(axis)
        if keepdims:
            props["keepdims"] = UnitAttr()
        super().__init__(
            operands=[value],
            result_types=[tensor_type(element_type(value), shape)],
            properties=props,
        )

    @property
    def axis_value(self) -> int | None:
        """The reduced axis, made non-negative; None means every axis."""
        if self.axis is None:
            return None
        return normalize_axis(self.axis.value.data, len(tensor_shape(self.input)))

    @property
    def keepdims_value(self) -> bool:
        return self.keepdims is not None

    def reduced_axes(self) -> tuple[int, ...]:
        """The operand axes it reduces."""
        axis = self.axis_value
        return tuple(range(len(tensor_shape(self.input)))) if axis is None else (axis,)

    @classmethod
    def result_shape(
        cls, shape: Sequence[int], axis: int | None, keepdims: bool
    ) -> tuple[int, ...]:
        """The result shape, or :class:`ShapeError` (also for an empty ``max``, as NumPy)."""
        out = reduce_shape(shape, axis, keepdims)
        if cls.NEEDS_ELEMENTS:
            reduced = math.prod(shape) if axis is None else shape[normalize_axis(axis, len(shape))]
            if reduced == 0:
                where = "all axes" if axis is None else f"axis {axis}"
                raise ShapeError(
                    f"`{cls.FUNCTION}` over {where} of a tensor of shape {tuple(shape)} "
                    "reduces zero elements, and it has no identity"
                )
        return out

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        (t,) = operand_types
        axis = None if self.axis is None else self.axis.value.data
        shape = self.result_shape(tensor_shape(t), axis, self.keepdims_value)
        return (tensor_type(element_type(t), shape),)

    def verify_(self) -> None:
        if is_int(self.input.type) and not self.INTEGERS:
            raise VerifyException(
                f"'{self.name}' computes on floats, not integers ({self.input.type}): "
                "convert first with tensordsl.cast"
            )
        try:
            (expected,) = self.infer_result_types([self.input.type])
        except ShapeError as err:
            raise shape_error(self, err, (self.input.type,)) from None
        expect_shape(self, tensor_shape(expected), self.result.type, "result")

    @classmethod
    def int_inputs_as(cls, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        """Integers in themselves (``max``), widened (``sum``: NumPy's ``sum_dtype``), or
        as ``float64``: NumPy's ``mean``, ``var`` and ``std`` of any integer dtype (of
        ``uint8`` too, whose float functions are ``float16``)."""
        if not cls.INTEGERS:
            return np.dtype(np.float64)
        return sum_dtype(dtype) if cls.WIDE else dtype

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        """A sum or product of booleans counts in int64, as NumPy's; other reductions
        take none (a mean's is its own)."""
        return sum_dtype(np.dtype(np.bool_)) if cls.INTEGERS and cls.WIDE else None

    def identity(self) -> float:
        """The partial of nothing (``IDENTITY``) in the accumulator's dtype: an infinite
        identity of integers (a ``max``'s) is the dtype's bound."""
        dtype = self.accumulator_dtype()
        if dtype.kind in "iu" and math.isinf(self.IDENTITY):
            info = np.iinfo(dtype)
            return int(info.min if self.IDENTITY < 0 else info.max)
        return self.IDENTITY

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(self.input)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        reduced = self.reduced_axes()
        return tuple(
            IteratorType.REDUCTION if i in reduced else IteratorType.PARALLEL
            for i in range(len(tensor_shape(self.input)))
        )

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = len(tensor_shape(self.input))
        reduced = self.reduced_axes()
        if self.keepdims_value:
            out = [None if i in reduced else i for i in range(rank)]
        else:
            out = [i for i in range(rank) if i not in reduced]
        return (identity_map(rank), dims_map(rank, out))

    # -- accumulation -------------------------------------------------------------

    def combiner(self) -> Combiner:
        return Combiner(self.NUMPY_UFUNC, self.identity())

    def accumulator_dtype(self) -> np.dtype[Any]:
        dtype = numpy_dtype(self.result.type)
        return wide_accumulator(dtype) if self.WIDE else dtype

    def evaluate_partial(self, *args: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        (x,) = args
        acc = self.accumulator_dtype()
        ufunc = getattr(np, self.NUMPY_UFUNC)
        axis = self.axis_value
        with np.errstate(all="ignore"):
            value = ufunc.reduce(
                x,
                axis=None if axis is None else axis,
                keepdims=self.keepdims_value,
                dtype=acc,
                **({"initial": self.identity()} if not self.NEEDS_ELEMENTS else {}),
            )
        return as_array(value, acc)

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        (x,) = args
        axes = self.reduced_axes()
        count = math.prod(x.shape[a] for a in axes)
        with np.errstate(all="ignore"):
            return (self.finalize(self.evaluate_partial(x), count),)

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        acc = self.accumulator_dtype()
        if acc == numpy_dtype(self.result.type):
            return ()
        return ((result_shapes[0], acc),)

    def scalar_combine(self, b: Builder, acc: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        element = convert_scalar(b, args[0], acc.type)
        if is_int(acc.type):
            return int_op(b, INT_SCALAR_OPS[self.COMBINE_OP], acc, element)
        return b.insert(self.COMBINE_OP(acc, element)).results[0]

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        """Over a 0-d operand the op reduces no dim, so its loop dims are all parallel:
        the reduction of one element, taken into the identity state (as NumPy's reduce
        starts from it: the sum of -0.0 is 0.0) and finalized (a mean divides by 1)."""
        if self.reduced_axes():
            return super().scalar_body(b, args)
        acc = self.accumulator()
        start = [
            scalar_constant(b, x, element_of(dt))
            for x, dt in zip(acc.identities, acc.dtypes, strict=True)
        ]
        return (self.scalar_finalize_state(b, self.scalar_accumulate(b, start, args), 1),)


class RowLocalOp(IRDLOperation, StructuredOpInterface, Decomposable, LanguageFunction, abc.ABC):
    """Base of row-normalizing ops along ``axis`` (default -1): the result has the
    operand's type, and each element depends on the whole row along ``axis``.

    The axis is a ``normalize`` dim.  A subclass computes whole rows
    (:meth:`evaluate`; the numpy target registers its lowering) and gives its
    :meth:`decompose`.
    """

    FUNCTION: ClassVar[str | None]
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("axis", "axis", -1),)

    T: ClassVar = VarConstraint("T", FloatTensorConstr)
    input = operand_def(T)
    result = result_def(T)
    axis = prop_def(IntegerAttr[I64], default_value=IntegerAttr(-1, i64))

    traits = traits_def(Pure())
    IN_PLACE: ClassVar[bool] = True

    @classmethod
    def int_inputs_as(cls, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        return np.dtype(np.float64)  # as a reduction's (``mean``) of integers

    @property
    def axis_value(self) -> int:
        """The axis, made non-negative."""
        return normalize_axis(self.axis.value.data, len(tensor_shape(self.input)))

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        (t,) = operand_types
        normalize_axis(self.axis.value.data, len(tensor_shape(t)))
        return (t,)

    def verify_(self) -> None:
        try:
            normalize_axis(self.axis.value.data, len(tensor_shape(self.input)))
        except ShapeError as err:
            raise shape_error(self, err, (self.input.type,)) from None

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(self.input)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        axis = self.axis_value
        return tuple(
            IteratorType.NORMALIZE if i == axis else IteratorType.PARALLEL
            for i in range(len(tensor_shape(self.input)))
        )

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = len(tensor_shape(self.input))
        return (identity_map(rank), identity_map(rank))

    def decompose(self) -> tuple[list[Operation], SSAValue]:
        """:meth:`decompose_rows`, except for rows of no elements: the result is the
        (empty) operand, where the decomposition's row ``max`` would reduce zero
        elements, which has no identity."""
        if tensor_shape(self.input)[self.axis_value] == 0:
            return [], self.input
        return self.decompose_rows()

    @abc.abstractmethod
    def decompose_rows(self) -> tuple[list[Operation], SSAValue]:
        """The op as ops without a ``normalize`` dim: reductions along the axis and
        element-wise ops, and the value replacing the result."""


def row_stat_shape(shape: Sequence[int], axis: int) -> tuple[int, ...]:
    """The shape of a per-row statistic: ``shape`` with ``axis`` reduced to 1."""
    return tuple(1 if i == axis else d for i, d in enumerate(shape))


class ScanOp(IRDLOperation, StructuredOpInterface, Scan, LanguageFunction, abc.ABC):
    """Base of scans along ``axis``, NumPy's ``cumsum`` and ``cumprod``: the result has
    the operand's type, and each element combines the elements of its row up to it.

    A subclass names the NumPy ufunc whose ``accumulate`` it is (``NUMPY_UFUNC``), its
    identity (``IDENTITY``) and the scalar op combining the running value with an element
    (``COMBINE_OP``).  The axis is a ``scan`` dim: a row longer than a tile runs over
    tiles in order, carrying each row's running value from one tile to the next; so a
    scan is linear in its row whatever the budget.

    As NumPy, ``axis`` absent (None) scans the flattened operand: that is the operand
    itself for 0-d (the result is 1-d) and 1-d operands; a 2-d or larger one is refused
    here, and the language flattens it first with a ``tensordsl.reshape``.  The running value
    has the result's dtype, as NumPy's: a float16 ``cumsum`` rounds every partial sum to
    float16, and overflow, ``inf`` and ``nan`` propagate as in NumPy.
    """

    NUMPY_UFUNC: ClassVar[str]
    IDENTITY: ClassVar[float]
    COMBINE_OP: ClassVar[ScalarOpBuilder]
    FUNCTION: ClassVar[str | None]
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("axis", "axis", None),)

    input = operand_def(NumericTensorConstr)
    result = result_def(NumericTensorConstr)
    axis = opt_prop_def(IntegerAttr[I64])

    assembly_format = "$input (`axis` `=` $axis^)? attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())
    IN_PLACE: ClassVar[bool] = True  # accumulates over its operand's buffer

    def __init__(self, input: SSAValue | Operation, axis: int | None = None) -> None:
        value = operand_value(self.name, input)
        shape = self.result_shape(tensor_shape(value), axis)
        props: dict[str, Attribute] = {}
        if axis is not None:
            props["axis"] = _axis_attr(axis)
        super().__init__(
            operands=[value],
            result_types=[tensor_type(element_type(value), shape)],
            properties=props,
        )

    @classmethod
    def result_shape(cls, shape: Sequence[int], axis: int | None) -> tuple[int, ...]:
        """The result shape, or :class:`ShapeError` (a flattening scan of a 2-d or larger
        operand)."""
        if axis is not None:
            normalize_axis(axis, len(shape))
            return tuple(shape)
        if len(shape) > 1:
            raise ShapeError(
                f"`{cls.FUNCTION}` without an axis scans the flattened tensor: reshape the "
                f"{fmt_shape(shape)} tensor to 1-d first (tensordsl.reshape), or pass an axis"
            )
        return (math.prod(shape),) if not shape else tuple(shape)

    @property
    def axis_value(self) -> int:
        """The scanned axis of the result, made non-negative (0 without an axis)."""
        if self.axis is None:
            return 0
        return normalize_axis(self.axis.value.data, len(tensor_shape(self.input)))

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        (t,) = operand_types
        axis = None if self.axis is None else self.axis.value.data
        return (tensor_type(element_type(t), self.result_shape(tensor_shape(t), axis)),)

    def verify_(self) -> None:
        try:
            (expected,) = self.infer_result_types([self.input.type])
        except ShapeError as err:
            raise shape_error(self, err, (self.input.type,)) from None
        expect_shape(self, tensor_shape(expected), self.result.type, "result")
        same_element_types(self, (self.input.type, self.result.type))

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(self.result)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        axis = self.axis_value
        return tuple(
            IteratorType.SCAN if i == axis else IteratorType.PARALLEL
            for i in range(len(tensor_shape(self.result)))
        )

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = len(tensor_shape(self.result))
        if not tensor_shape(self.input):  # a 0-d operand scanned as one element
            return (dims_map(rank, ()), identity_map(rank))
        return (identity_map(rank), identity_map(rank))

    # -- computing ------------------------------------------------------------------

    def _ufunc(self) -> Any:
        return getattr(np, self.NUMPY_UFUNC)

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        (x,) = args
        dtype = numpy_dtype(self.result.type)
        x, shape = np.asarray(x), tensor_shape(self.result)
        if x.ndim != len(shape):  # (not the result's shape: a partial tile is smaller)
            x = x.reshape(shape)
        with np.errstate(all="ignore"):
            value = self._ufunc().accumulate(x, axis=self.axis_value, dtype=dtype)
        return (as_array(value, dtype),)

    def scan_combiner(self) -> Combiner:
        """The ufunc whose ``accumulate`` it is, and the carry's start (its identity)."""
        return Combiner(self.NUMPY_UFUNC, self.IDENTITY)

    def scan_carry_dtype(self) -> np.dtype[Any]:
        """The dtype of the carry (the result's: NumPy's ``cumsum`` of float16 adds in
        float16, rounding every partial sum)."""
        return numpy_dtype(self.result.type)

    def carried_loops(self) -> tuple[CarriedLoop, ...]:
        """Its ``scan`` dim, starting from :meth:`scan_combiner`'s identity, in
        :meth:`scan_carry_dtype`."""
        combiner = self.scan_combiner()
        dtype = self.scan_carry_dtype()
        return tuple(
            CarriedLoop(d, combiner.identity, dtype)
            for d, kind in enumerate(self.iterator_types())
            if kind is IteratorType.SCAN
        )

    def evaluate_scan(
        self, carry: np.ndarray[Any, Any] | None, *args: np.ndarray[Any, Any]
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        (x,) = args
        k = self.axis_value
        dtype = self.scan_carry_dtype()
        shape = row_stat_shape(x.shape, k)
        if carry is None:
            carry = np.full(shape, self.IDENTITY, dtype=dtype)
        if x.shape[k] == 0:
            return np.empty(x.shape, dtype=dtype), carry
        y = np.array(x, dtype=dtype)
        first = (slice(None),) * k + (slice(0, 1),)
        with np.errstate(all="ignore"):
            y[first] = self._ufunc()(carry, y[first])
            value = self._ufunc().accumulate(y, axis=k, dtype=dtype)
        last = (slice(None),) * k + (slice(-1, None),)
        return value, np.array(value[last])

    def scalar_scan(self, b: Builder, carry: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        if is_int(carry.type):
            return int_op(b, INT_SCALAR_OPS[self.COMBINE_OP], carry, args[0])
        return b.insert(self.COMBINE_OP(carry, args[0])).results[0]

    @classmethod
    def int_inputs_as(cls, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        """A running sum or product of integers counts in int64, as NumPy's ``cumsum``."""
        return sum_dtype(dtype)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        """A scan whose loop dims are all parallel (its axis has extent 1, or a 0-d
        operand): the first element of a row is the element itself, as NumPy's
        ``accumulate`` copies it (so ``cumsum`` of ``-0.0`` is ``-0.0``)."""
        return (args[0],)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return sum_dtype(np.dtype(np.bool_))  # NumPy's cumsum of booleans counts in int64
