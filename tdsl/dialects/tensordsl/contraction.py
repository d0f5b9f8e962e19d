"""``matmul`` (``np.matmul``, batches and 1-D operands included: a reduction and a
contraction), ``transpose`` and ``cast`` (the element-type conversion, the one explicit
promotion), with the shape rules of ``matmul`` and ``transpose`` and the pattern that
folds a transpose of a transpose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import I64, DenseArrayBase, TensorType, i64
from xdsl.interfaces import HasCanonicalizationPatternsInterface
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects.structured import (
    INT_TYPES,
    NUMPY_DTYPES,
    Combiner,
    Contraction,
    ElementConstr,
    IteratorType,
    LanguageFunction,
    NumericTensorConstr,
    Param,
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
    is_int,
    numpy_dtype,
    operand_value,
    tensor_shape,
    tensor_type,
)
from tdsl.dialects.structured_types import expect_shape, same_element_types, shape_error
from tdsl.dialects.tensordsl.constant import ConstantOp, dense_from_numpy
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


def matmul_loops(
    a: Sequence[int], b: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int | None, ...], tuple[int | None, ...], tuple[int, ...]]:
    """The loops of ``np.matmul`` on shapes ``a`` and ``b``: their extents (the batch dims,
    the rows, the columns, the contraction last), then the loop dims of the lhs, the rhs
    and the result."""
    pa = (1, *a) if len(a) == 1 else tuple(a)
    pb = (*b, 1) if len(b) == 1 else tuple(b)
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


def transpose_shape(shape: Sequence[int], axes: Sequence[int] | None = None) -> tuple[int, ...]:
    """The shape of ``np.transpose(x, axes)`` (``axes`` None: reversed)."""
    if axes is None:
        return tuple(reversed(shape))
    return tuple(shape[a] for a in axes)


def check_permutation(axes: Sequence[int], rank: int) -> tuple[int, ...]:
    """``axes`` made non-negative, or :class:`ShapeError` unless it is a permutation of
    the ``rank`` axes (as ``np.transpose`` requires)."""
    if len(axes) != rank:
        raise ShapeError(
            f"axes {tuple(axes)} of transpose do not match the {rank} axes of its operand"
        )
    out = tuple(a + rank if a < 0 else a for a in axes)
    if sorted(out) != list(range(rank)):
        raise ShapeError(f"axes {tuple(axes)} of transpose are not a permutation of {rank} axes")
    return out


def _identity_maps(rank: int) -> tuple[AffineMap, ...]:
    return (identity_map(rank), identity_map(rank))


@irdl_op_definition
class CastOp(
    IRDLOperation, StructuredOpInterface, LanguageFunction, HasCanonicalizationPatternsInterface
):
    """Converts the element type to a float or integer type, keeping the shape
    (``x.astype(dtype)``: booleans become 0 and 1; integers narrow by wrapping; floats
    truncate towards zero, and nan, infinities and out-of-range values become the most
    negative integer, as NumPy's cast gives them on x86-64).

    The frontend inserts casts to make NumPy 2 dtype promotion explicit, and
    ``astype(x, dtype)`` (NumPy 2's ``np.astype``) is one; ``astype`` to ``bool`` is
    ``x != 0``, and to ``x``'s own dtype ``x`` itself.

    ```mlir
    %1 = tensordsl.cast %0 : tensor<4x8xf32> -> tensor<4x8xf64>
    ```
    """

    name = "tensordsl.cast"
    F16_IN_F32: ClassVar[bool] = False  # one conversion, one rounding
    FUNCTION: ClassVar[str | None] = "astype"
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("dtype", "dtype", None, required=True),)

    input = operand_def(TensorConstr)
    result = result_def(NumericTensorConstr)

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation, element: Attribute) -> None:
        value = operand_value(self.name, input)
        if type(element) not in NUMPY_DTYPES and element not in INT_TYPES.values():
            raise ShapeError(f"'{self.name}' converts to f16, f32, f64, i32 or i64, not {element}")
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

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        (x,) = operands
        return cls(x, cast(Attribute, params["dtype"]))

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (convert_scalar(b, args[0], element_type(self.result)),)

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (CastOfConstant(),)


class CastOfConstant(RewritePattern):
    """``cast(c)`` of a one-element constant ``c`` is the constant cast, as ``astype``
    casts it (the op's semantics): a weak scalar NumPy promotion casts (``x +
    np.float32(1e-5)`` traces an f64 constant cast to f32) is then a constant the groups
    clone, not an op each tile runs, and not an op along no dim, which kept the native
    loops from splitting a group's rows over threads."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CastOp, rewriter: PatternRewriter) -> None:
        producer = op.input.owner
        if not isinstance(producer, ConstantOp):
            return
        value = producer.as_numpy()
        if value.size != 1:
            return  # (a larger constant would be stored twice)
        element = element_type(op.result)
        with np.errstate(all="ignore"):
            cast_value = value.astype(numpy_dtype(element))
        constant = ConstantOp(dense_from_numpy(cast_value, element))
        rewriter.replace(op, [constant], [constant.result])


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

    lhs = operand_def(NumericTensorConstr)
    rhs = operand_def(NumericTensorConstr)
    result = result_def(NumericTensorConstr)

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
        return matmul_loops(tensor_shape(self.lhs), tensor_shape(self.rhs))

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
        # in the accumulator's type: a float16 partial rounded to float16 first overflows
        # where the whole sum does not (products of 300 * +-300 cancelling)
        wide = self.accumulator_dtype()
        with np.errstate(all="ignore"):
            if args[0].dtype != wide:
                return np.asarray(np.matmul(args[0], args[1], dtype=wide), dtype=wide)
            return np.asarray(np.matmul(args[0], args[1]), dtype=wide)

    def scalar_combine(self, b: Builder, acc: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        x, y = (convert_scalar(b, v, acc.type) for v in args)
        if is_int(acc.type):  # exact, wrapping as NumPy's integer matmul
            product = b.insert(arith.MuliOp(x, y)).result
            return b.insert(arith.AddiOp(acc, product)).result
        product = b.insert(arith.MulfOp(x, y)).result
        return b.insert(arith.AddfOp(acc, product)).result

    @classmethod
    def int_inputs_as(cls, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        return dtype


@irdl_op_definition
class TransposeOp(
    IRDLOperation, StructuredOpInterface, LanguageFunction, HasCanonicalizationPatternsInterface
):
    """Permutes the axes, as ``np.transpose(x, axes)``: result axis ``i`` is operand axis
    ``perm[i]``; without ``perm`` the axes are reversed (``np.transpose(x)``, ``x.T``).

    It computes nothing: its operand's indexing map is the inverse permutation, and
    the NumPy target reads its operand through a transposed view.

    ```mlir
    %1 = tensordsl.transpose %0 : tensor<4x8xf32> -> tensor<8x4xf32>
    %2 = tensordsl.transpose %3 perm [0, 2, 1] : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
    ```
    """

    name = "tensordsl.transpose"
    FUNCTION: ClassVar[str | None] = "transpose"
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("axes", "perm", None),)

    E: ClassVar = VarConstraint("E", ElementConstr)
    input = operand_def(TensorType.constr(E, shape=StaticShapeConstr))
    result = result_def(TensorType.constr(E, shape=StaticShapeConstr))
    perm = opt_prop_def(DenseArrayBase.constr(I64))

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE

    assembly_format = "$input (`perm` $perm^)? attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation, axes: Sequence[int] | None = None) -> None:
        value = operand_value(self.name, input)
        rank = len(tensor_shape(value))
        props: dict[str, Attribute] = {}
        perm = tuple(reversed(range(rank))) if axes is None else check_permutation(axes, rank)
        if perm != tuple(reversed(range(rank))):
            props["perm"] = DenseArrayBase.from_list(i64, list(perm))
        result = tensor_type(element_type(value), transpose_shape(tensor_shape(value), perm))
        super().__init__(operands=[value], result_types=[result], properties=props)

    @property
    def permutation(self) -> tuple[int, ...]:
        """Result axis ``i`` is operand axis ``permutation[i]``."""
        rank = len(tensor_shape(self.input))
        if self.perm is None:
            return tuple(reversed(range(rank)))
        return tuple(a + rank if a < 0 else a for a in self.perm.get_values())

    def verify_(self) -> None:
        rank = len(tensor_shape(self.input))
        if self.perm is not None:
            try:
                check_permutation(self.perm.get_values(), rank)
            except ShapeError as err:
                raise VerifyException(f"'{self.name}' op {err.message}") from None
        shape = transpose_shape(tensor_shape(self.input), self.permutation)
        expect_shape(self, shape, self.result.type, "result")

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        (t,) = operand_types
        perm = None if self.perm is None else self.permutation
        return (tensor_type(element_type(t), transpose_shape(tensor_shape(t), perm)),)

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(self.result)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        return (IteratorType.PARALLEL,) * len(tensor_shape(self.result))

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        perm = self.permutation
        rank = len(perm)
        # operand axis perm[i] runs along loop dim i: operand axis j along loop dim inverse[j]
        inverse = tuple(perm.index(j) for j in range(rank))
        return (dims_map(rank, inverse), identity_map(rank))

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        return (np.transpose(args[0], self.permutation),)

    def is_view(self) -> bool:
        return True

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (args[0],)

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (TransposeOfTranspose(),)


class TransposeOfTranspose(RewritePattern):
    """``transpose(transpose(x))``: ``x`` where the two permutations undo each other,
    else one transpose by their composition."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, TransposeOp):
            return
        first = inner.permutation
        composed = tuple(first[a] for a in op.permutation)
        if composed == tuple(range(len(composed))):
            rewriter.replace(op, [], [inner.input])
        else:
            rewriter.replace(op, [TransposeOp(inner.input, composed)])
