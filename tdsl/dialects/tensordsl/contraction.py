"""``matmul`` (``np.matmul``, batches and 1-D operands included: a reduction and a
contraction), ``transpose`` and ``cast`` (the element-type conversion, the one explicit
promotion), with the shape rules of ``matmul`` and ``transpose`` and the pattern that
folds a transpose of a transpose.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.interfaces import HasCanonicalizationPatternsInterface
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.traits import Pure

from tdsl.dialects.structured import (
    NUMPY_DTYPES,
    Combiner,
    Contraction,
    ElementConstr,
    FloatTensorConstr,
    IteratorType,
    LanguageFunction,
    Reduction,
    ShapeError,
    StaticShapeConstr,
    StructuredOpInterface,
    TensorConstr,
    broadcast_dims,
    broadcast_shapes,
    convert_scalar,
    dims_map,
    element_type,
    fmt_shape,
    identity_map,
    numpy_dtype,
    operand_value,
    tensor_shape,
    tensor_type,
)
from tdsl.dialects.structured_types import expect_shape, same_element_types, shape_error
from tdsl.dtypes import BOOL_DTYPE, wide_accumulator


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The result shape of ``np.matmul`` on shapes ``a`` and ``b``, or :class:`ShapeError`."""
    if len(a) == 0 or len(b) == 0:
        raise ShapeError("matmul operands must have rank >= 1, not 0-d tensors")
    pa = (1, *a) if len(a) == 1 else tuple(a)
    pb = (*b, 1) if len(b) == 1 else tuple(b)
    if pa[-1] != pb[-2]:
        raise ShapeError(
            f"inner dimensions differ: {fmt_shape(a)} @ {fmt_shape(b)} ({pa[-1]} vs {pb[-2]})"
        )
    try:
        batch = broadcast_shapes(pa[:-2], pb[:-2])
    except ShapeError:
        raise ShapeError(
            f"batch dimensions of {fmt_shape(a)} @ {fmt_shape(b)} do not broadcast"
        ) from None
    out = [*batch, pa[-2], pb[-1]]
    if len(a) == 1:
        del out[-2]
    if len(b) == 1:
        del out[-1]
    return tuple(out)


def transpose_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """The shape of ``np.transpose`` (axes reversed)."""
    return tuple(reversed(shape))


def _identity_maps(rank: int) -> tuple[AffineMap, ...]:
    return (identity_map(rank), identity_map(rank))


@irdl_op_definition
class CastOp(IRDLOperation, StructuredOpInterface):
    """Converts the element type to a float type, keeping the shape (``x.astype(dtype)``;
    booleans become 0.0 and 1.0).

    The frontend inserts casts to make NumPy 2 dtype promotion explicit.

    ```mlir
    %1 = tensordsl.cast %0 : tensor<4x8xf32> -> tensor<4x8xf64>
    ```
    """

    name = "tensordsl.cast"
    F16_IN_F32: ClassVar[bool] = False  # one conversion, one rounding

    input = operand_def(TensorConstr)
    result = result_def(FloatTensorConstr)

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation, element: Attribute) -> None:
        value = operand_value(self.name, input)
        if type(element) not in NUMPY_DTYPES:
            raise ShapeError(f"'{self.name}' converts to f16, f32 or f64, not {element}")
        super().__init__(operands=[value], result_types=[tensor_type(element, tensor_shape(value))])

    def verify_(self) -> None:
        expect_shape(self, tensor_shape(self.input), self.result.type, "result")

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        return (tensor_type(element_type(self.result), tensor_shape(operand_types[0])),)

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(self.result)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        return (IteratorType.PARALLEL,) * len(tensor_shape(self.result))

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        return _identity_maps(len(tensor_shape(self.result)))

    def is_view(self) -> bool:
        return self.input.type == self.result.type

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (convert_scalar(b, args[0], element_type(self.result)),)


@irdl_op_definition
class MatmulOp(IRDLOperation, StructuredOpInterface, Reduction, Contraction, LanguageFunction):
    """Matrix product with ``np.matmul`` semantics.

    2-D operands multiply as matrices; a 1-D left (right) operand is a row
    (column) vector whose added dimension is dropped from the result; leading
    batch dimensions broadcast.  Its loops are the batch dims, the rows, the
    columns (``parallel``) and the contraction (``reduction``).  It is a
    :class:`~tdsl.dialects.op_interfaces.Contraction`: its right operand is read
    whole from memory, and it runs on BLAS: it is never recomputed, and tiles keep
    its columns and contraction whole while they can.

    ```mlir
    %2 = tensordsl.matmul %0, %1 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    ```
    """

    name = "tensordsl.matmul"
    FUNCTION: ClassVar[str | None] = "matmul"

    lhs = operand_def(FloatTensorConstr)
    rhs = operand_def(FloatTensorConstr)
    result = result_def(FloatTensorConstr)

    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )
    traits = traits_def(Pure())

    ARITY: ClassVar[int] = 2

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation) -> None:
        a, b = operand_value(self.name, lhs), operand_value(self.name, rhs)
        (result,) = self.infer_result_types([a.type, b.type])
        super().__init__(operands=[a, b], result_types=[result])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        a, b = operand_types
        if element_type(a) != element_type(b):
            raise ShapeError(
                f"operands have different element types {element_type(a)} and {element_type(b)}"
                " (make promotion explicit with tensordsl.cast)"
            )
        return (tensor_type(element_type(a), matmul_shape(tensor_shape(a), tensor_shape(b))),)

    def verify_(self) -> None:
        same_element_types(self, (self.lhs.type, self.rhs.type, self.result.type))
        try:
            shape = matmul_shape(tensor_shape(self.lhs), tensor_shape(self.rhs))
        except ShapeError as err:
            raise shape_error(self, err, (self.lhs.type, self.rhs.type)) from None
        expect_shape(self, shape, self.result.type, "result")

    def _loops(
        self,
    ) -> tuple[tuple[int, ...], tuple[int | None, ...], tuple[int | None, ...], tuple[int, ...]]:
        """Loop extents, then the loop dims of the lhs, the rhs and the result."""
        a, b = tensor_shape(self.lhs), tensor_shape(self.rhs)
        pa = (1, *a) if len(a) == 1 else a
        pb = (*b, 1) if len(b) == 1 else b
        batch = broadcast_shapes(pa[:-2], pb[:-2])
        extents = list(batch)
        rows = cols = None
        if len(a) >= 2:
            rows = len(extents)
            extents.append(pa[-2])
        if len(b) >= 2:
            cols = len(extents)
            extents.append(pb[-1])
        k = len(extents)
        extents.append(pa[-1])
        lhs = (*broadcast_dims(pa[:-2], batch), *(() if rows is None else (rows,)), k)
        rhs = (*broadcast_dims(pb[:-2], batch), k, *(() if cols is None else (cols,)))
        out = (*range(len(batch)), *(d for d in (rows, cols) if d is not None))
        return tuple(extents), lhs, rhs, out

    def loop_extents(self) -> tuple[int, ...]:
        return self._loops()[0]

    def iterator_types(self) -> tuple[IteratorType, ...]:
        n = len(self._loops()[0])
        return (IteratorType.PARALLEL,) * (n - 1) + (IteratorType.REDUCTION,)

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        extents, lhs, rhs, out = self._loops()
        n = len(extents)
        return (dims_map(n, lhs), dims_map(n, rhs), dims_map(n, out))

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        return (np.asarray(self.evaluate_partial(*args), dtype=numpy_dtype(self.result.type)),)

    def combiner(self) -> Combiner:
        return Combiner("add", 0.0)

    def accumulator_dtype(self) -> np.dtype[Any]:
        """float32 for a float16 matmul: NumPy's float16 matmul sums in float32 and
        rounds once (compiled loops rounding the running sum to float16 at every step
        lost about 5 bits on a 2000-long contraction)."""
        return wide_accumulator(numpy_dtype(self.result.type))

    def evaluate_partial(self, *args: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        with np.errstate(all="ignore"):
            return np.asarray(np.matmul(args[0], args[1]), dtype=self.accumulator_dtype())

    def scalar_combine(self, b: Builder, acc: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        x, y = (convert_scalar(b, v, acc.type) for v in args)
        product = b.insert(arith.MulfOp(x, y)).result
        return b.insert(arith.AddfOp(acc, product)).result


@irdl_op_definition
class TransposeOp(
    IRDLOperation, StructuredOpInterface, LanguageFunction, HasCanonicalizationPatternsInterface
):
    """Reverses the axes, as ``np.transpose(x)``.

    It computes nothing: its operand's indexing map is the reversed identity,
    and the NumPy target reads its operand through a transposed view.

    ```mlir
    %1 = tensordsl.transpose %0 : tensor<4x8xf32> -> tensor<8x4xf32>
    ```
    """

    name = "tensordsl.transpose"
    FUNCTION: ClassVar[str | None] = "transpose"

    E: ClassVar = VarConstraint("E", ElementConstr)
    input = operand_def(TensorType.constr(E, shape=StaticShapeConstr))
    result = result_def(TensorType.constr(E, shape=StaticShapeConstr))

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation) -> None:
        value = operand_value(self.name, input)
        (result,) = self.infer_result_types([value.type])
        super().__init__(operands=[value], result_types=[result])

    def verify_(self) -> None:
        expect_shape(self, transpose_shape(tensor_shape(self.input)), self.result.type, "result")

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        (t,) = operand_types
        return (tensor_type(element_type(t), transpose_shape(tensor_shape(t))),)

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(self.result)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        return (IteratorType.PARALLEL,) * len(tensor_shape(self.result))

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = len(tensor_shape(self.result))
        return (dims_map(rank, tuple(reversed(range(rank)))), identity_map(rank))

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        return (np.transpose(args[0]),)

    def is_view(self) -> bool:
        return True

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (args[0],)

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (TransposeOfTranspose(),)


class TransposeOfTranspose(RewritePattern):
    """``transpose(transpose(x)) -> x``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, TransposeOp):
            rewriter.replace(op, [], [inner.input])
