"""Row-normalizing ops: ``softmax``, ``log_softmax`` and ``layernorm``, whose every
result element needs its whole row along ``axis``.  Each decomposes into the reductions
and element-wise ops of the other families (the passes a row longer than a tile runs),
and the NumPy reference functions here (``softmax_array`` and its siblings) compute
them whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import Float64Type, FloatAttr, IntegerAttr, f64, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, prop_def

from tdsl.dialects.structured import (
    Param,
    RowLocalOp,
    Workspace,
    element_type,
    normalize_axis,
    numpy_dtype,
    operand_value,
    row_stat_shape,
    tensor_shape,
)
from tdsl.dialects.tensordsl.constant import ConstantOp
from tdsl.dialects.tensordsl.elementwise_binary import AddOp, DivOp, MulOp, SubOp
from tdsl.dialects.tensordsl.elementwise_math import ExpOp, LogOp, SqrtOp
from tdsl.dialects.tensordsl.reductions import MaxOp, MeanOp, SumOp
from tdsl.dtypes import wide_accumulator


def _axis_attr(axis: int) -> Attribute:
    return IntegerAttr(axis, i64)


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

    def decompose(self) -> tuple[list[Operation], SSAValue]:
        axis = self.axis.value.data
        m = MaxOp(self.input, axis, keepdims=True)
        shifted = SubOp(self.input, m)
        e = ExpOp(shifted)
        s = SumOp(e, axis, keepdims=True)
        y = DivOp(e, s)
        return [m, shifted, e, s, y], y.result


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

    def decompose(self) -> tuple[list[Operation], SSAValue]:
        axis = self.axis.value.data
        m = MaxOp(self.input, axis, keepdims=True)
        shifted = SubOp(self.input, m)
        e = ExpOp(shifted)
        s = SumOp(e, axis, keepdims=True)
        lg = LogOp(s)
        y = SubOp(shifted, lg)
        return [m, shifted, e, s, lg, y], y.result


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
        wide = wide_accumulator(numpy_dtype(self.result.type))
        return ((stat, wide), (stat, wide))

    def decompose(self) -> tuple[list[Operation], SSAValue]:
        axis = self.axis.value.data
        element = element_type(self.input)
        mu = MeanOp(self.input, axis, keepdims=True)
        d = SubOp(self.input, mu)
        sq = MulOp(d, d)
        var = MeanOp(sq, axis, keepdims=True)
        eps = ConstantOp.splat(self.eps_value, element)
        shifted = AddOp(var, eps)
        root = SqrtOp(shifted)
        y = DivOp(d, root)
        return [mu, d, sq, var, eps, shifted, root, y], y.result
