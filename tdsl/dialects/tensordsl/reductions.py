"""Reductions over an axis or over all axes: ``sum``, ``max``, ``min``, ``prod``,
``mean``, ``logsumexp``, ``all`` and ``any`` (:class:`ChunkedReductionOp`: partial
results over chunks merge, as Dask's partials do); the moments ``var`` and ``std`` are
:mod:`.variance`'s.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import VarConstraint, irdl_op_definition, operand_def, result_def

from tdsl.dialects.structured import (
    Accumulator,
    BinaryOp,
    Combiner,
    OperandWorkspace,
    PartialOps,
    ReductionOp,
    ScalarOpBuilder,
    StaticShapeConstr,
    SweepDecomposable,
    Workspace,
    convert_scalar,
    element_of,
    element_type,
    numpy_dtype,
    scalar_constant,
    tensor_shape,
)
from tdsl.dialects.structured_types import BoolElementConstr
from tdsl.dialects.tensordsl.constant import ConstantOp
from tdsl.dialects.tensordsl.contraction import CastOp
from tdsl.dialects.tensordsl.elementwise_binary import (
    AddOp,
    DivOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    SubOp,
)
from tdsl.dialects.tensordsl.elementwise_math import ExpOp, LogOp
from tdsl.dtypes import BOOL_DTYPE, FLOAT_DTYPES


def _converted(value: SSAValue, element: Attribute) -> tuple[list[Operation], SSAValue]:
    """``value`` as a tensor of ``element``: a cast, or nothing when it already is one."""
    if element_type(value) == element:
        return [], value
    op = CastOp(value, element)
    return [op], op.result


class ChunkedReductionOp(ReductionOp, PartialOps, abc.ABC):
    """Base of tensordsl's reductions: partial results over chunks are tensordsl ops.

    The partial of a chunk is the reduction itself (``PARTIAL_OP``, by default the op's
    own class; a mean's is a sum) over the chunk converted to the accumulator dtype,
    with keepdims; partials concatenated along the reduced axes combine by the same
    reduction; the result is the combined partial converted to the result's element
    type (a mean divides first).
    """

    PARTIAL_OP: ClassVar[type[ReductionOp] | None] = None
    """The reduction computing and combining partials (None: the op's own class)."""

    def partial_ops(self, operands: Sequence[SSAValue]) -> tuple[list[Operation], SSAValue]:
        (x,) = operands
        ops, wide = _converted(x, element_of(self.accumulator_dtype()))
        reducer = self.PARTIAL_OP or type(self)
        partial = reducer(wide, self.axis_value, keepdims=True)
        return [*ops, partial], partial.results[0]

    def finalize_ops(self, acc: SSAValue, count: int) -> tuple[list[Operation], SSAValue]:
        return _converted(acc, element_type(self.result))


@irdl_op_definition
class SumOp(ChunkedReductionOp):
    """Sum over ``axis`` (all axes when absent); ``keepdims`` keeps it as size 1.

    A float16 sum accumulates in float32 and rounds once.

    ```mlir
    %1 = tensordsl.sum %0 axis = 1 : tensor<4x8xf32> -> tensor<4xf32>
    %2 = tensordsl.sum %0 : tensor<4x8xf32> -> tensor<f32>
    ```
    """

    name = "tensordsl.sum"
    FUNCTION: ClassVar[str | None] = "sum"
    NUMPY_UFUNC: ClassVar[str] = "add"
    IDENTITY: ClassVar[float] = 0.0
    INTEGERS: ClassVar[bool] = True
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.AddfOp
    WIDE: ClassVar[bool] = True
    REORDERS: ClassVar[bool] = True

    def fuses_producer(self) -> Operation | None:
        # sum(a * b) along the last axis is one einsum: no product temporary
        mul = self.input.owner
        if not isinstance(mul, MulOp) or not mul.result.has_one_use():
            return None
        shape = tensor_shape(mul.result)
        if not shape or tensor_shape(mul.lhs) != shape or tensor_shape(mul.rhs) != shape:
            return None
        if numpy_dtype(mul.result.type) != self.accumulator_dtype():
            # an einsum in the accumulator's dtype would compute the products there too:
            # a float16 product never rounds (nor overflows) to float16, an int32 never wraps
            return None
        return mul if self.reduced_axes() == (len(shape) - 1,) else None


@irdl_op_definition
class MaxOp(ChunkedReductionOp):
    """Maximum over ``axis`` (all axes when absent); reducing zero elements is an error, as in NumPy.

    ``nan`` propagates, as in ``np.max``.

    ```mlir
    %1 = tensordsl.max %0 axis = -1 keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
    """

    name = "tensordsl.max"
    FUNCTION: ClassVar[str | None] = "max"
    NUMPY_UFUNC: ClassVar[str] = "maximum"
    IDENTITY: ClassVar[float] = -math.inf
    INTEGERS: ClassVar[bool] = True
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.MaximumfOp
    NEEDS_ELEMENTS: ClassVar[bool] = True


@irdl_op_definition
class MinOp(ChunkedReductionOp):
    """Minimum over ``axis`` (all axes when absent); reducing zero elements is an error, as in NumPy.

    ``nan`` propagates, as in ``np.min``.

    ```mlir
    %1 = tensordsl.min %0 axis = 0 : tensor<4x8xf32> -> tensor<8xf32>
    ```
    """

    name = "tensordsl.min"
    FUNCTION: ClassVar[str | None] = "min"
    NUMPY_UFUNC: ClassVar[str] = "minimum"
    IDENTITY: ClassVar[float] = math.inf
    INTEGERS: ClassVar[bool] = True
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.MinimumfOp
    NEEDS_ELEMENTS: ClassVar[bool] = True


@irdl_op_definition
class ProdOp(ChunkedReductionOp):
    """Product over ``axis`` (all axes when absent); the product of nothing is 1.

    A float16 product accumulates in float32 and rounds once.

    ```mlir
    %1 = tensordsl.prod %0 axis = 1 keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
    """

    name = "tensordsl.prod"
    FUNCTION: ClassVar[str | None] = "prod"
    ORDERED: ClassVar[bool] = True
    NUMPY_UFUNC: ClassVar[str] = "multiply"
    IDENTITY: ClassVar[float] = 1.0
    INTEGERS: ClassVar[bool] = True
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.MulfOp
    WIDE: ClassVar[bool] = True


@irdl_op_definition
class MeanOp(ChunkedReductionOp):
    """Arithmetic mean over ``axis`` (all axes when absent).

    The sum accumulates (float16 in float32, as ``np.mean``) and is divided by
    the number of elements at the end; the mean of nothing is ``nan``.

    ```mlir
    %1 = tensordsl.mean %0 axis = 0 : tensor<4x8xf32> -> tensor<8xf32>
    ```
    """

    name = "tensordsl.mean"
    FUNCTION: ClassVar[str | None] = "mean"
    NUMPY_UFUNC: ClassVar[str] = "add"
    IDENTITY: ClassVar[float] = 0.0
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.AddfOp
    WIDE: ClassVar[bool] = True
    REORDERS: ClassVar[bool] = True
    PARTIAL_OP: ClassVar[type[ReductionOp] | None] = SumOp

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return FLOAT_DTYPES["f64"]  # np.mean of booleans: the fraction true

    def finalizes(self) -> bool:
        return True

    def finalize(self, acc: np.ndarray[Any, Any], count: int) -> np.ndarray[Any, Any]:
        dtype = numpy_dtype(self.result.type)
        if count == 0:
            return np.full(acc.shape, np.nan, dtype=dtype)
        with np.errstate(all="ignore"):
            return np.asarray(np.divide(acc, acc.dtype.type(count)), dtype=dtype)

    def scalar_finalize(self, b: Builder, acc: SSAValue, count: int) -> SSAValue:
        n = scalar_constant(b, float(count), acc.type)  # 0/0 is nan: the mean of nothing
        mean = b.insert(arith.DivfOp(acc, n)).result
        return convert_scalar(b, mean, element_type(self.result))

    def finalize_ops(self, acc: SSAValue, count: int) -> tuple[list[Operation], SSAValue]:
        element = element_type(acc)
        if count == 0:  # the mean of nothing: nan, without dividing 0 by 0
            scale = ConstantOp.splat(math.nan, element)
            mean: BinaryOp = MulOp(acc, scale)
        else:
            scale = ConstantOp.splat(float(count), element)
            mean = DivOp(acc, scale)
        ops, result = _converted(mean.result, element_type(self.result))
        return [scale, mean, *ops], result


def online_step(
    b: Builder,
    shift: SSAValue,
    totals: Sequence[SSAValue],
    x: SSAValue,
    weights: Sequence[SSAValue],
) -> tuple[SSAValue, ...]:
    """The online-softmax state ``(shift, *totals)`` after taking ``x`` with ``weights``
    (sums of exponentials relative to ``x``, one per total: 1 for one element of
    ``logsumexp``; ``softmax_matmul`` weighs its second total by a ``v`` element).

    A larger ``x`` becomes the shift and the totals are rescaled to it; otherwise the
    weights are rescaled to the shift.  One ``exp`` either way.  Equal values (two
    infinities too) add their weights unscaled, so ``inf - inf`` never appears; a ``nan``
    compares false and makes the totals ``nan``."""
    larger = b.insert(arith.CmpfOp(x, shift, "ogt")).result
    equal = b.insert(arith.CmpfOp(x, shift, "oeq")).result
    down = b.insert(arith.SubfOp(shift, x)).result  # <= 0 when x is larger
    up = b.insert(arith.SubfOp(x, shift)).result  # <= 0 otherwise (nan when unordered)
    zero = scalar_constant(b, 0.0, shift.type)
    same = b.insert(arith.SelectOp(equal, zero, up)).result
    d = b.insert(arith.SelectOp(larger, down, same)).result
    e = b.insert(xmath.ExpOp(d)).result
    out = [b.insert(arith.SelectOp(larger, x, shift)).result]
    for total, weight in zip(totals, weights, strict=True):
        rescaled = b.insert(arith.MulfOp(total, e)).result
        grown = b.insert(arith.AddfOp(rescaled, weight)).result  # x larger: total * e + w
        scaled = b.insert(arith.MulfOp(weight, e)).result
        added = b.insert(arith.AddfOp(total, scaled)).result  # else: total + w * e
        out.append(b.insert(arith.SelectOp(larger, grown, added)).result)
    return tuple(out)


def logsumexp_state(
    x: np.ndarray[Any, Any], axis: int | None, keepdims: bool, dtype: np.dtype[Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The ``logsumexp`` state ``(shift, total)`` of ``x`` reduced over ``axis``, in ``dtype``:
    the maximum, and the sum of ``exp(x - shift)`` with the shift clipped to finite
    values (a row of ``-inf`` gives the empty state ``(-inf, 0)``, one with ``+inf`` a total
    of ``inf``, one with ``nan`` a total of ``nan``)."""
    with np.errstate(all="ignore"):
        wide = np.asarray(x, dtype=dtype)
        shift = np.maximum.reduce(wide, axis=axis, keepdims=True, initial=-np.inf)
        finite = np.finfo(dtype).max
        safe = np.clip(shift, -finite, finite)
        total = np.add.reduce(np.exp(wide - safe), axis=axis, keepdims=True)
    if not keepdims:
        shift = np.squeeze(shift, axis=axis)
        total = np.squeeze(total, axis=axis)
    return np.asarray(shift, dtype=dtype), np.asarray(total, dtype=dtype)


@irdl_op_definition
class LogSumExpOp(ChunkedReductionOp, SweepDecomposable):
    """``log(sum(exp(x)))`` over ``axis`` (all axes when absent), without overflow
    (``scipy.special.logsumexp``): ``-inf`` for nothing or only ``-inf``, ``inf`` with an
    ``inf``, ``nan`` with a ``nan``.

    Its accumulator is a tuple: a running maximum (the shift) and the sum of
    ``exp(x - shift)``, rescaled when the maximum grows; the result is
    ``shift + log(total)``.  A float16 input accumulates in float32.  Across chunks (Dask)
    the partial of a chunk is its own ``logsumexp`` and partials combine by ``logsumexp``.
    The native loops compute it as two sweeps instead where they can read its operand
    twice (:meth:`decompose_sweeps`): the maximum, then the sum of ``exp(x - max)``,
    reductions LLVM vectorizes.

    ```mlir
    %1 = tensordsl.logsumexp %0 axis = 1 : tensor<4x8xf32> -> tensor<4xf32>
    ```
    """

    name = "tensordsl.logsumexp"
    FUNCTION: ClassVar[str | None] = "logsumexp"
    NUMPY_UFUNC: ClassVar[str] = "logaddexp"
    IDENTITY: ClassVar[float] = -math.inf
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.MaximumfOp  # unused: a tuple accumulator
    WIDE: ClassVar[bool] = True

    def combiner(self) -> Combiner | None:
        return None  # two states merge with scalar_merge, not one ufunc

    def accumulator(self) -> Accumulator:
        dtype = self.accumulator_dtype()
        return Accumulator((dtype, dtype), (-math.inf, 0.0))

    def scalar_accumulate(
        self, b: Builder, state: Sequence[SSAValue], args: Sequence[SSAValue]
    ) -> tuple[SSAValue, ...]:
        shift, total = state
        x = convert_scalar(b, args[0], shift.type)
        return online_step(b, shift, (total,), x, (scalar_constant(b, 1.0, shift.type),))

    def scalar_merge(
        self, b: Builder, state: Sequence[SSAValue], other: Sequence[SSAValue]
    ) -> tuple[SSAValue, ...]:
        shift, total = state
        return online_step(b, shift, (total,), other[0], (other[1],))

    def scalar_finalize_state(self, b: Builder, state: Sequence[SSAValue], count: int) -> SSAValue:
        shift, total = state
        log = b.insert(xmath.LogOp(total)).result
        # -inf + log(0) is -inf: nothing, or only -inf; nan stays nan
        value = b.insert(arith.AddfOp(shift, log)).result
        return convert_scalar(b, value, element_type(self.result))

    def decomposes_in_sweeps(self) -> bool:
        shape = tensor_shape(self.input)
        return all(shape[a] > 0 for a in self.reduced_axes())

    def decompose_sweeps(self) -> tuple[list[Operation], SSAValue] | None:
        """The maximum, then the sum of ``exp(x - shift)`` (the shift clipped to finite
        values, as :func:`logsumexp_state`'s), then ``max + log(sum)``: the state the
        op's NumPy lowering computes, in two plain reductions."""
        if not self.decomposes_in_sweeps():
            return None
        acc = self.accumulator_dtype()
        ops, x = _converted(self.input, element_of(acc))
        axis, keepdims = self.axis_value, self.keepdims_value
        finite = float(np.finfo(acc).max)
        shift = MaxOp(x, axis, keepdims=True)
        hi, lo = (
            ConstantOp.splat(finite, element_of(acc)),
            ConstantOp.splat(-finite, element_of(acc)),
        )
        below = MinimumOp(shift, hi)
        safe = MaximumOp(below, lo)
        shifted = SubOp(x, safe)
        e = ExpOp(shifted)
        total = SumOp(e, axis, keepdims=keepdims)
        ops += [shift, hi, lo, below, safe, shifted, e, total]
        top = shift
        if not keepdims:  # (the result's shape: the maximum again, in the same sweep)
            top = MaxOp(x, axis, keepdims=False)
            ops.append(top)
        log = LogOp(total)
        value = AddOp(top, log)
        ops += [log, value]
        more, result = _converted(value.result, element_type(self.result))
        return [*ops, *more], result

    def evaluate_state(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        (x,) = args
        return logsumexp_state(x, self.axis_value, self.keepdims_value, self.accumulator_dtype())

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        shift, total = self.evaluate_state(*args)
        with np.errstate(all="ignore"):
            value = shift + np.log(total)
        return (np.asarray(value, dtype=numpy_dtype(self.result.type)),)

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        # exp(x - shift) of one tile (the operand's shape), and two result-sized buffers:
        # the max while merging a tile's state into the accumulator; the state of a
        # tile the op computes whole
        acc = self.accumulator_dtype()
        return (
            OperandWorkspace(operand_shapes[0], acc),
            (result_shapes[0], acc),
            (result_shapes[0], acc),
        )


class LogicalReductionOp(ChunkedReductionOp, abc.ABC):
    """Base of ``all`` and ``any``: a reduction of booleans to booleans (a float operand
    is compared with zero first, by the language, as NumPy's ``all`` and ``any`` do)."""

    E: ClassVar = VarConstraint("E", BoolElementConstr)
    input = operand_def(TensorType.constr(E, shape=StaticShapeConstr))
    result = result_def(TensorType.constr(E, shape=StaticShapeConstr))

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE


@irdl_op_definition
class AllOp(LogicalReductionOp):
    """Whether every element over ``axis`` (all axes when absent) is true; ``all`` of no
    elements is true, as in NumPy.

    ```mlir
    %1 = tensordsl.all %0 axis = 1 : tensor<4x8xi1> -> tensor<4xi1>
    ```
    """

    name = "tensordsl.all"
    FUNCTION: ClassVar[str | None] = "all"
    NUMPY_UFUNC: ClassVar[str] = "logical_and"
    IDENTITY: ClassVar[float] = 1.0
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.AndIOp


@irdl_op_definition
class AnyOp(LogicalReductionOp):
    """Whether some element over ``axis`` (all axes when absent) is true; ``any`` of no
    elements is false, as in NumPy.

    ```mlir
    %1 = tensordsl.any %0 : tensor<4x8xi1> -> tensor<i1>
    ```
    """

    name = "tensordsl.any"
    FUNCTION: ClassVar[str | None] = "any"
    NUMPY_UFUNC: ClassVar[str] = "logical_or"
    IDENTITY: ClassVar[float] = 0.0
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.OrIOp
