"""Row-normalizing ops: ``softmax``, ``log_softmax`` and ``layernorm``, whose every
result element needs its whole row along ``axis``.  Each decomposes into the reductions
and element-wise ops of the other families (the passes a row longer than a tile runs),
and the NumPy reference functions here (``softmax_array`` and its siblings) compute
them whole.

A ``softmax`` whose one use is the left operand of a ``matmul`` contracting along the
normalized axis decomposes with it into ``softmax_matmul`` (attention's
``softmax(q @ k.T) @ v``): one reduction over the key dim whose tuple accumulator is
flash attention's online softmax, so that the key dim is tiled without keeping a row
of scores.  The language has no function for it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float16Type, Float64Type, FloatAttr, IntegerAttr, f32, f64, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from tdsl.dialects.structured import (
    Accumulator,
    FloatTensorConstr,
    IteratorType,
    OperandWorkspace,
    Param,
    Reduction,
    RowLocalOp,
    ShapeError,
    StructuredOpInterface,
    Workspace,
    convert_scalar,
    dims_map,
    element_type,
    normalize_axis,
    numpy_dtype,
    operand_value,
    row_stat_shape,
    scalar_constant,
    tensor_shape,
    tensor_type,
)
from tdsl.dialects.structured_types import expect_shape, same_element_types, shape_error
from tdsl.dialects.tensordsl.constant import ConstantOp
from tdsl.dialects.tensordsl.contraction import CastOp, MatmulOp, matmul_loops, matmul_shape
from tdsl.dialects.tensordsl.elementwise_binary import AddOp, DivOp, MulOp, SubOp
from tdsl.dialects.tensordsl.elementwise_math import ExpOp, LogOp, SqrtOp
from tdsl.dialects.tensordsl.reductions import MaxOp, MeanOp, SumOp, online_step
from tdsl.dtypes import wide_accumulator


def _axis_attr(axis: int) -> Attribute:
    return IntegerAttr(axis, i64)


def _widened(ops: list[Operation], value: SSAValue) -> SSAValue:
    """``value`` in float32 when it is float16 (the cast appended to ``ops``), else itself:
    a decomposition computes a float16 row's statistics in float32, as the op does."""
    if not isinstance(element_type(value), Float16Type):
        return value
    cast = CastOp(value, f32)
    ops.append(cast)
    return cast.result


def _narrowed(ops: list[Operation], value: SSAValue, like: SSAValue) -> SSAValue:
    """``value`` cast back to the element type of ``like`` where :func:`_widened` widened
    it (the cast appended to ``ops``): the one rounding of a float16 result."""
    if element_type(value) == element_type(like):
        return value
    cast = CastOp(value, element_type(like))
    ops.append(cast)
    return cast.result


def softmax_array(x: np.ndarray[Any, Any], axis: int) -> np.ndarray[Any, Any]:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``; a float16 sum accumulates in float32."""
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        wide = np.float32 if x.dtype == np.float16 else x.dtype
        s = np.add.reduce(e, axis=axis, keepdims=True, dtype=wide)
        return np.asarray(e / s, dtype=x.dtype)


@irdl_op_definition
class SoftmaxOp(RowLocalOp):
    """Numerically stable softmax along ``axis`` (default -1).

    ``exp(x - max(x, axis)) / sum(exp(x - max(x, axis)), axis)``; the result
    has the operand's type.  A row longer than the memory budget runs as its
    decomposition: ``max``, then ``sum(exp(x - max))``, then the division,
    one pass over the row each.

    ```mlir
    %1 = tensordsl.softmax %0 : tensor<4x8xf32>
    %2 = tensordsl.softmax %0 axis = 0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.softmax"
    FUNCTION: ClassVar[str | None] = "softmax"

    assembly_format = "$input (`axis` `=` $axis^)? attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation, axis: int = -1) -> None:
        value = operand_value(self.name, input)
        normalize_axis(axis, len(tensor_shape(value)))
        super().__init__(
            operands=[value], result_types=[value.type], properties={"axis": _axis_attr(axis)}
        )

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        return (softmax_array(args[0], self.axis_value),)

    def _stat_dtype(self) -> np.dtype[Any]:
        dtype = numpy_dtype(self.result.type)
        return np.dtype(np.float32) if dtype == np.float16 else dtype

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        return ((row_stat_shape(result_shapes[0], self.axis_value), self._stat_dtype()),)

    def decompose_rows(self) -> tuple[list[Operation], SSAValue]:
        axis = self.axis.value.data
        m = MaxOp(self.input, axis, keepdims=True)
        shifted = SubOp(self.input, m)
        e = ExpOp(shifted)
        ops: list[Operation] = [m, shifted, e]
        wide = _widened(ops, e.result)  # float16: the sum and the quotient in float32
        s = SumOp(wide, axis, keepdims=True)
        y = DivOp(wide, s)
        ops += [s, y]
        return ops, _narrowed(ops, y.result, self.input)

    def decompose_with_user(self) -> tuple[Operation, Operation] | None:
        # softmax(s) @ v along the last axis: one softmax_matmul, flash attention's online
        # softmax (a float16 one too: its state is float32, see SoftmaxMatmulOp)
        shape = tensor_shape(self.result)
        if len(shape) < 2 or self.axis_value != len(shape) - 1:
            return None
        uses = list(self.result.uses)
        if len(uses) != 1:
            return None
        user = uses[0].operation
        if not isinstance(user, MatmulOp) or uses[0].index != 0:
            return None
        if len(tensor_shape(user.rhs)) < 2:
            return None
        return user, SoftmaxMatmulOp(self.input, user.rhs)


def log_softmax_array(x: np.ndarray[Any, Any], axis: int) -> np.ndarray[Any, Any]:
    """``(x - max) - log(sum(exp(x - max)))`` along ``axis``; a float16 sum accumulates in
    float32."""
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        shifted = x - np.max(x, axis=axis, keepdims=True)
        wide = wide_accumulator(x.dtype)
        s = np.add.reduce(np.exp(shifted), axis=axis, keepdims=True, dtype=wide)
        return np.asarray(shifted - np.log(s), dtype=x.dtype)


@irdl_op_definition
class LogSoftmaxOp(RowLocalOp):
    """``log(softmax(x))`` along ``axis`` (default -1), computed stably:
    ``(x - max) - log(sum(exp(x - max)))``.

    The result has the operand's type.  A row longer than the memory budget runs
    as its decomposition: the row maxima, then the sums of ``exp(x - max)``, then
    the result, one pass over the row each.

    ```mlir
    %1 = tensordsl.log_softmax %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.log_softmax"
    FUNCTION: ClassVar[str | None] = "log_softmax"

    assembly_format = "$input (`axis` `=` $axis^)? attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation, axis: int = -1) -> None:
        value = operand_value(self.name, input)
        normalize_axis(axis, len(tensor_shape(value)))
        super().__init__(
            operands=[value], result_types=[value.type], properties={"axis": _axis_attr(axis)}
        )

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        return (log_softmax_array(args[0], self.axis_value),)

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        stat = row_stat_shape(result_shapes[0], self.axis_value)
        # the row maxima, and the shifted values' exponentials (the result holds x - max)
        return (
            (stat, numpy_dtype(self.result.type)),
            (result_shapes[0], numpy_dtype(self.result.type)),
            (stat, wide_accumulator(numpy_dtype(self.result.type))),
        )

    def decompose_rows(self) -> tuple[list[Operation], SSAValue]:
        axis = self.axis.value.data
        m = MaxOp(self.input, axis, keepdims=True)
        shifted = SubOp(self.input, m)
        e = ExpOp(shifted)
        ops: list[Operation] = [m, shifted, e]
        s = SumOp(_widened(ops, e.result), axis, keepdims=True)  # float16: in float32
        lg = LogOp(s)
        ops += [s, lg]
        y = SubOp(_widened(ops, shifted.result), lg)
        ops.append(y)
        return ops, _narrowed(ops, y.result, self.input)


def layernorm_array(x: np.ndarray[Any, Any], axis: int, eps: float) -> np.ndarray[Any, Any]:
    """``(x - mean) / sqrt(var + eps)`` along ``axis``, with the biased variance; float16
    computes in float32 and rounds once."""
    wide = wide_accumulator(x.dtype)
    with np.errstate(all="ignore"):
        xw = x.astype(wide)
        mu = np.mean(xw, axis=axis, keepdims=True)
        d = xw - mu
        var = np.mean(d * d, axis=axis, keepdims=True)
        return np.asarray(d / np.sqrt(var + wide.type(eps)), dtype=x.dtype)


@irdl_op_definition
class LayerNormOp(RowLocalOp):
    """Layer normalization along ``axis`` (default -1), without affine parameters.

    ``(x - mean(x)) / sqrt(var(x) + eps)`` with the biased variance
    (``mean((x - mean(x))**2)``); ``eps`` defaults to 1e-5.  The result has the
    operand's type; float16 keeps its statistics in float32.  A row longer than
    the memory budget runs as its decomposition: the mean, then the mean of the
    squared deviations, then the quotients, one pass over the row each.
    ``layernorm(x) * g + b`` fuses the affine part as element-wise ops.

    ```mlir
    %1 = tensordsl.layernorm %0 : tensor<4x8xf32>
    %2 = tensordsl.layernorm %0 eps = 1.000000e-03 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.layernorm"
    FUNCTION: ClassVar[str | None] = "layernorm"
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("axis", "axis", -1), Param("eps", "float", 1e-5))

    eps = prop_def(FloatAttr[Float64Type], default_value=FloatAttr(1e-5, f64))

    assembly_format = "$input (`axis` `=` $axis^)? (`eps` `=` $eps^)? attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation, axis: int = -1, eps: float = 1e-5) -> None:
        value = operand_value(self.name, input)
        normalize_axis(axis, len(tensor_shape(value)))
        super().__init__(
            operands=[value],
            result_types=[value.type],
            properties={"axis": _axis_attr(axis), "eps": FloatAttr(float(eps), f64)},
        )

    @property
    def eps_value(self) -> float:
        return self.eps.value.data

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        return (layernorm_array(args[0], self.axis_value, self.eps_value),)

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        stat = row_stat_shape(result_shapes[0], self.axis_value)
        dtype = numpy_dtype(self.result.type)
        wide = wide_accumulator(dtype)
        if wide == dtype:
            return ((stat, wide), (stat, wide))
        # float16: the deviations too are float32, rounded once in the quotient
        return ((stat, wide), (stat, wide), (result_shapes[0], wide))

    def decompose_rows(self) -> tuple[list[Operation], SSAValue]:
        axis = self.axis.value.data
        ops: list[Operation] = []
        x = _widened(ops, self.input)  # float16 computes in float32 and rounds once
        mu = MeanOp(x, axis, keepdims=True)
        d = SubOp(x, mu)
        sq = MulOp(d, d)
        var = MeanOp(sq, axis, keepdims=True)
        eps = ConstantOp.splat(self.eps_value, element_type(x))
        shifted = AddOp(var, eps)
        root = SqrtOp(shifted)
        y = DivOp(d, root)
        ops += [mu, d, sq, var, eps, shifted, root, y]
        return ops, _narrowed(ops, y.result, self.input)


def softmax_matmul_shape(s: Sequence[int], v: Sequence[int]) -> tuple[int, ...]:
    """The result shape of ``matmul(softmax(s), v)``, or :class:`ShapeError`: both
    operands are matrices (with broadcasting batch dims), as attention's are."""
    if len(s) < 2 or len(v) < 2:
        raise ShapeError(f"softmax_matmul operands must have rank >= 2, not {len(s)} and {len(v)}")
    return matmul_shape(s, v)


def softmax_matmul_state(
    s: np.ndarray[Any, Any], v: np.ndarray[Any, Any], dtype: np.dtype[Any]
) -> tuple[np.ndarray[Any, Any], ...]:
    """The state ``(acc, shift, total)`` of whole ``s`` and ``v`` in ``dtype``, each of the
    result's shape: ``exp(s - shift) @ v``, the row maximum of ``s`` (clipped to finite
    values for the subtraction, so a row of ``-inf`` gives the empty state) and the sum
    of ``exp(s - shift)``."""
    with np.errstate(all="ignore"):
        wide = np.asarray(s, dtype=dtype)
        shift = np.maximum.reduce(wide, axis=-1, keepdims=True, initial=-np.inf)
        finite = np.finfo(dtype).max
        e = np.exp(wide - np.clip(shift, -finite, finite))
        total = np.add.reduce(e, axis=-1, keepdims=True)
        acc = np.asarray(np.matmul(e, np.asarray(v, dtype=dtype)), dtype=dtype)
    return (
        acc,
        np.broadcast_to(shift, acc.shape).astype(dtype),
        np.broadcast_to(total, acc.shape).astype(dtype),
    )


@irdl_op_definition
class SoftmaxMatmulOp(IRDLOperation, StructuredOpInterface, Reduction):
    """``matmul(softmax(s, axis=-1), v)``, attention's ``softmax(q @ k.T) @ v`` after the
    scores, as one reduction over the key dim (flash attention's online softmax).

    Its loops are those of the ``matmul``: batch dims, the rows of ``s``, the columns of
    ``v`` (``parallel``) and the key dim (``reduction``).  Its accumulator is a tuple:
    the sum of ``exp(s - shift) * v``, the running maximum of the row of ``s`` (the
    shift) and the sum of ``exp(s - shift)``, both sums rescaled when the maximum grows
    (as ``logsumexp``'s); the result is the first sum over the second.  The maximum and
    the second sum are one value per row, and the numpy target keeps them so.  Over tiles of the
    key dim it keeps one state per result element, never a row of ``s``.  Both operands
    have rank 2 or more; a float16 op accumulates in float32.  Its result equals
    NumPy's ``softmax(s) @ v`` to rounding: it divides once per result element, after
    the sum, where NumPy divides each probability.  On float16, where NumPy rounds each
    probability to float16 before its matmul, the float32 state keeps the result at
    least as close to the exact one as NumPy's (tested against float64).

    ```mlir
    %2 = tensordsl.softmax_matmul %0, %1 : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    ```
    """

    name = "tensordsl.softmax_matmul"

    scores = operand_def(FloatTensorConstr)
    values = operand_def(FloatTensorConstr)
    result = result_def(FloatTensorConstr)

    assembly_format = (
        "$scores `,` $values attr-dict `:` `(` type($scores) `,` type($values) `)` "
        "`->` type($result)"
    )
    traits = traits_def(Pure())

    def __init__(self, scores: SSAValue | Operation, values: SSAValue | Operation) -> None:
        s, v = operand_value(self.name, scores), operand_value(self.name, values)
        (result,) = self.infer_result_types([s.type, v.type])
        super().__init__(operands=[s, v], result_types=[result])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        s, v = operand_types
        if element_type(s) != element_type(v):
            raise ShapeError(
                f"operands have different element types {element_type(s)} and {element_type(v)}"
            )
        shape = softmax_matmul_shape(tensor_shape(s), tensor_shape(v))
        return (tensor_type(element_type(s), shape),)

    def verify_(self) -> None:
        same_element_types(self, (self.scores.type, self.values.type, self.result.type))
        try:
            shape = softmax_matmul_shape(tensor_shape(self.scores), tensor_shape(self.values))
        except ShapeError as err:
            raise shape_error(self, err, (self.scores.type, self.values.type)) from None
        expect_shape(self, shape, self.result.type, "result")

    # -- the structured-op interface -------------------------------------------------

    def loop_extents(self) -> tuple[int, ...]:
        return matmul_loops(tensor_shape(self.scores), tensor_shape(self.values))[0]

    def iterator_types(self) -> tuple[IteratorType, ...]:
        n = len(self.loop_extents())
        return (IteratorType.PARALLEL,) * (n - 1) + (IteratorType.REDUCTION,)

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        extents, s, v, out = matmul_loops(tensor_shape(self.scores), tensor_shape(self.values))
        n = len(extents)
        return (dims_map(n, s), dims_map(n, v), dims_map(n, out))

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        s, v = args
        with np.errstate(all="ignore"):
            product = np.matmul(softmax_array(s, -1), v)
        return (np.asarray(product, dtype=numpy_dtype(self.result.type)),)

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        # exp(s - shift) of one tile (the scores' shape); two row statistics (the
        # result's rows, one column): the state of a tile the op computes whole, the
        # first also the larger maximum while merging a tile's state; and the weighted
        # sum of a tile computed whole, unless the result holds it (not float16)
        acc = self.accumulator_dtype()
        out = result_shapes[0]
        row = (*out[:-1], 1)
        spaces = (OperandWorkspace(operand_shapes[0], acc), (row, acc), (row, acc))
        if acc != numpy_dtype(self.result.type):
            return (*spaces, (out, acc))
        return spaces

    # -- the reduction ---------------------------------------------------------------

    def accumulator_dtype(self) -> np.dtype[Any]:
        return wide_accumulator(numpy_dtype(self.result.type))

    def accumulator(self) -> Accumulator:
        dtype = self.accumulator_dtype()
        # the weighted sum first: the result's shape (finalized in place); the running
        # maximum and sum are one value per row
        return Accumulator((dtype, dtype, dtype), (0.0, -math.inf, 0.0), (False, True, True))

    def scalar_accumulate(
        self, b: Builder, state: Sequence[SSAValue], args: Sequence[SSAValue]
    ) -> tuple[SSAValue, ...]:
        acc, shift, total = state
        x, w = (convert_scalar(b, a, shift.type) for a in args)
        one = scalar_constant(b, 1.0, shift.type)
        shift, total, acc = online_step(b, shift, (total, acc), x, (one, w))
        return acc, shift, total

    def scalar_merge(
        self, b: Builder, state: Sequence[SSAValue], other: Sequence[SSAValue]
    ) -> tuple[SSAValue, ...]:
        acc, shift, total = state
        o_acc, o_shift, o_total = other
        shift, total, acc = online_step(b, shift, (total, acc), o_shift, (o_total, o_acc))
        return acc, shift, total

    def scalar_finalize_state(self, b: Builder, state: Sequence[SSAValue], count: int) -> SSAValue:
        acc, shift, total = state
        if count == 0:  # no keys: the empty sum (NumPy's product of empty probabilities)
            return convert_scalar(b, acc, element_type(self.result))
        quotient = b.insert(arith.DivfOp(acc, total)).result
        # a row whose maximum is infinite is nan, as softmax's (x - max: inf - inf)
        magnitude = b.insert(xmath.AbsFOp(shift)).result
        inf = scalar_constant(b, math.inf, shift.type)
        infinite = b.insert(arith.CmpfOp(magnitude, inf, "oeq")).result
        nan = scalar_constant(b, math.nan, shift.type)
        value = b.insert(arith.SelectOp(infinite, nan, quotient)).result
        return convert_scalar(b, value, element_type(self.result))

    def evaluate_state(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        s, v = args
        return softmax_matmul_state(s, v, self.accumulator_dtype())
