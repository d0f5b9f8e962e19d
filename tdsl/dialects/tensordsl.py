"""The ``tensordsl`` dialect: one op per function of the tdsl expression language.

Every op works on builtin ranked, static tensors (``tensor<4x8xf32>``,
``tensor<f64>``; zero-size dimensions are fine) whose element type is ``f16``,
``f32`` or ``f64``.  The semantics are NumPy's:

* binary element-wise ops broadcast their operands (``np.broadcast_shapes``);
  both operands share one element type, promotion is an explicit ``cast``;
* ``matmul`` follows ``np.matmul`` (1-D operands and batches included);
* axes may be negative and count from the end;
* ``softmax`` is the numerically stable ``exp(x - max) / sum(exp(x - max))``.

Each op builds from its operands alone (``AddOp(a, b)`` infers the broadcast
result type); the verifiers re-check everything a parsed op claims.  The shape
helpers at the top are plain Python and raise :class:`ShapeError`, so the
frontend can report a mismatch at the user's source span before any IR exists.
"""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Sequence
from typing import ClassVar, cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    I64,
    ArrayOfConstraint,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttrConstraint,
    IntegerAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.interfaces import HasCanonicalizationPatternsInterface
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    AtLeast,
    IRDLOperation,
    MessageConstraint,
    ParamAttrConstraint,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import ParseError, VerifyException

# ---------------------------------------------------------------------------
# Types and shape rules
# ---------------------------------------------------------------------------

FloatType = Float16Type | Float32Type | Float64Type
"""The element types tensordsl computes in."""

FloatElementConstr = MessageConstraint(
    base(Float16Type) | base(Float32Type) | base(Float64Type),
    "tensordsl computes on tensors of f16, f32 or f64",
)
StaticShapeConstr = MessageConstraint(
    ArrayOfConstraint(IntAttrConstraint.get(AtLeast(0))),
    "tensordsl computes on tensors of static shape (no ? dimensions)",
)
FloatTensorConstr = TensorType.constr(FloatElementConstr, shape=StaticShapeConstr)

NUMPY_DTYPES: dict[type[Attribute], np.dtype[np.floating]] = {
    Float16Type: np.dtype(np.float16),
    Float32Type: np.dtype(np.float32),
    Float64Type: np.dtype(np.float64),
}


class ShapeError(ValueError):
    """Operand shapes or an axis that an op cannot accept; the message says why."""


def fmt_shape(shape: Sequence[int]) -> str:
    """``(4, 8)`` as ``4x8``; a 0-d shape as ``[]``."""
    return "x".join(str(d) for d in shape) if shape else "[]"


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The NumPy broadcast of two shapes, or :class:`ShapeError`."""
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    out: list[int] = []
    for da, db in zip(pa, pb, strict=True):
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            raise ShapeError(
                f"shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast "
                f"(dimension {da} vs {db})"
            )
    return tuple(out)


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


def normalize_axis(axis: int, rank: int) -> int:
    """``axis`` in ``[-rank, rank)`` made non-negative, or :class:`ShapeError`."""
    if not -rank <= axis < rank:
        if rank == 0:
            raise ShapeError(f"axis {axis} is out of range for a 0-d tensor (it has no axes)")
        raise ShapeError(
            f"axis {axis} is out of range for rank {rank} (expected {-rank} <= axis < {rank})"
        )
    return axis % rank


def reduce_shape(shape: Sequence[int], axis: int | None, keepdims: bool) -> tuple[int, ...]:
    """The shape after reducing ``axis`` (``None``: all axes)."""
    if axis is None:
        return (1,) * len(shape) if keepdims else ()
    ax = normalize_axis(axis, len(shape))
    if keepdims:
        return tuple(1 if i == ax else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i != ax)


def transpose_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """The shape of ``np.transpose`` (axes reversed)."""
    return tuple(reversed(shape))


def tensor_shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    """The static shape of a tensor-typed value or type."""
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType)
    return tuple(cast(TensorType[Attribute], t).get_shape())


def element_type(value: SSAValue | Attribute) -> Attribute:
    """The element type of a tensor-typed value or type."""
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType)
    return cast(TensorType[Attribute], t).get_element_type()


def numpy_dtype(element: Attribute) -> np.dtype[np.floating]:
    """The NumPy dtype of a tensordsl element type."""
    return NUMPY_DTYPES[type(element)]


def _tensor(element: Attribute, shape: Sequence[int]) -> TensorType[Attribute]:
    return TensorType(element, list(shape))


def _expect_type(op: Operation, expected: Sequence[int], actual: Attribute, what: str) -> None:
    if tensor_shape(actual) != tuple(expected):
        raise VerifyException(
            f"'{op.name}' op {what} has type {actual}, expected shape {fmt_shape(expected)}"
        )


def _same_element_types(op: Operation, types: Sequence[Attribute]) -> None:
    elements = {element_type(t) for t in types}
    if len(elements) > 1:
        names = ", ".join(str(t) for t in types)
        raise VerifyException(
            f"'{op.name}' op operands and result must share one element type, got {names} "
            "(make promotion explicit with tensordsl.cast)"
        )


def _shape_error(op: Operation, err: ShapeError, types: Sequence[Attribute]) -> VerifyException:
    names = ", ".join(str(t) for t in types)
    return VerifyException(f"'{op.name}' op {err} ({names})")


# ---------------------------------------------------------------------------
# Constant
# ---------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A constant tensor, usually a 0-d splat made from a numeric literal.

    ```mlir
    %c = tensordsl.constant dense<2.5> : tensor<f32>
    %z = tensordsl.constant dense<0.0> : tensor<4x8xf64>
    ```
    """

    name = "tensordsl.constant"

    T: ClassVar = VarConstraint("T", FloatTensorConstr)
    value = prop_def(ParamAttrConstraint(DenseIntOrFPElementsAttr, (T, AnyAttr())))
    result = result_def(T)

    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: DenseIntOrFPElementsAttr) -> None:
        super().__init__(properties={"value": value}, result_types=[value.type])

    # The declarative form would be "attr-dict $value", but xDSL 0.75 prints
    # nan, inf and some whole numbers (1234567.0) as bare hex that parses back as
    # an integer bit pattern, and folds [0.0, -0.0] into a splat.  So the value
    # prints as usual when that text reads back bit-exact, and otherwise as
    # MLIR's hex-string form `dense<"0x...">`, which always does.

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.attributes:
            printer.print_op_attributes(self.attributes)
            printer.print_string(" ")
        printer.print_string(dense_to_text(self.value))

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attributes = parser.parse_optional_attr_dict()
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("expected a dense float tensor attribute", pos, parser.pos)
        op = cls(cast(DenseIntOrFPElementsAttr, value))
        op.attributes.update(attributes)
        return op

    @staticmethod
    def splat(x: float, element: Attribute, shape: Sequence[int] = ()) -> ConstantOp:
        """A constant filled with ``x``."""
        dtype = numpy_dtype(element)
        data = np.full(tuple(shape), x, dtype=dtype)
        return ConstantOp(dense_from_numpy(data, element))

    def as_numpy(self) -> np.ndarray:
        """The value as a NumPy array."""
        return dense_to_numpy(self.value)

    def splat_value(self) -> float | None:
        """The single value of a splat constant, or None."""
        arr = self.as_numpy()
        if arr.size == 0:
            return None
        first = arr.flat[0]
        return float(first) if bool(np.all(arr == first)) else None


def dense_from_numpy(arr: np.ndarray, element: Attribute) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding ``arr`` (converted to the dtype of ``element``)."""
    data = np.array(arr, dtype=numpy_dtype(element), order="C")
    t = TensorType(cast(FloatType, element), data.shape)
    return DenseIntOrFPElementsAttr(t, BytesAttr(data.tobytes()))


def _prints_exactly(values: np.ndarray) -> bool:
    """Whether xDSL prints every value in decimal (``%.6e``) that reads back bit-exact."""
    flat = values.ravel()
    if flat.size > 256 or not np.all(np.isfinite(flat)) or np.any((flat == 0) & np.signbit(flat)):
        return False
    decimal = np.array([float(f"{float(v):.5e}") for v in flat], dtype=flat.dtype)
    return bool(np.array_equal(decimal, flat))


@functools.lru_cache(maxsize=1024)
def dense_to_text(attr: DenseIntOrFPElementsAttr) -> str:
    """The attribute's text, in hex-string form when the usual form would not read back exactly."""
    text = str(attr)
    values = dense_to_numpy(attr)
    if _prints_exactly(values):
        return text
    try:
        reread = Parser(Context(), text).parse_attribute()
    except ParseError:
        reread = None
    if isinstance(reread, DenseIntOrFPElementsAttr) and reread.data == attr.data:
        return text
    return f'dense<"0x{values.tobytes().hex().upper()}"> : {attr.type}'


def dense_to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The contents of a dense float attribute as a NumPy array."""
    dtype = numpy_dtype(attr.get_element_type())
    shape = tuple(attr.get_shape())
    flat = np.frombuffer(attr.data.data, dtype=dtype)
    if flat.size == 1 and int(np.prod(shape)) != 1:
        return np.full(shape, flat[0], dtype=dtype)  # a splat stored once
    return flat.reshape(shape).copy()


# ---------------------------------------------------------------------------
# Element-wise ops
# ---------------------------------------------------------------------------


class UnaryOp(IRDLOperation, abc.ABC):
    """Base of element-wise unary ops: the result has the operand's type."""

    NUMPY_NAME: ClassVar[str]

    T: ClassVar = VarConstraint("T", FloatTensorConstr)
    input = operand_def(T)
    result = result_def(T)

    assembly_format = "$input attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation) -> None:
        value = SSAValue.get(input)
        super().__init__(operands=[value], result_types=[value.type])


@irdl_op_definition
class ReluOp(UnaryOp, HasCanonicalizationPatternsInterface):
    """``max(x, 0)`` element-wise.

    ```mlir
    %1 = tensordsl.relu %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.relu"
    NUMPY_NAME: ClassVar[str] = "relu"

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (ReluOfRelu(),)


@irdl_op_definition
class ExpOp(UnaryOp):
    """``e**x`` element-wise.

    ```mlir
    %1 = tensordsl.exp %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.exp"
    NUMPY_NAME: ClassVar[str] = "exp"


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural logarithm element-wise (``nan`` below 0, ``-inf`` at 0, as NumPy).

    ```mlir
    %1 = tensordsl.log %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.log"
    NUMPY_NAME: ClassVar[str] = "log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Square root element-wise (``nan`` below 0, as NumPy).

    ```mlir
    %1 = tensordsl.sqrt %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sqrt"
    NUMPY_NAME: ClassVar[str] = "sqrt"


@irdl_op_definition
class TanhOp(UnaryOp):
    """Hyperbolic tangent element-wise.

    ```mlir
    %1 = tensordsl.tanh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.tanh"
    NUMPY_NAME: ClassVar[str] = "tanh"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """The logistic function ``1 / (1 + exp(-x))`` element-wise, computed without overflow.

    ```mlir
    %1 = tensordsl.sigmoid %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sigmoid"
    NUMPY_NAME: ClassVar[str] = "sigmoid"


@irdl_op_definition
class AbsOp(UnaryOp):
    """Absolute value element-wise.

    ```mlir
    %1 = tensordsl.abs %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.abs"
    NUMPY_NAME: ClassVar[str] = "absolute"


@irdl_op_definition
class NegOp(UnaryOp, HasCanonicalizationPatternsInterface):
    """``-x`` element-wise.

    ```mlir
    %1 = tensordsl.neg %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.neg"
    NUMPY_NAME: ClassVar[str] = "negative"

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (NegOfNeg(),)


class TwoOperandOp(IRDLOperation, abc.ABC):
    """Base of ops on two tensors of one element type whose result shape is a function
    of the operand shapes (``result_shape``): the binary element-wise ops and matmul."""

    lhs = operand_def(FloatTensorConstr)
    rhs = operand_def(FloatTensorConstr)
    result = result_def(FloatTensorConstr)

    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )
    traits = traits_def(Pure())

    @staticmethod
    @abc.abstractmethod
    def result_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
        """The result shape for operand shapes ``a`` and ``b``, or :class:`ShapeError`."""

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation) -> None:
        a, b = SSAValue.get(lhs), SSAValue.get(rhs)
        shape = self.result_shape(tensor_shape(a), tensor_shape(b))
        super().__init__(operands=[a, b], result_types=[_tensor(element_type(a), shape)])

    def verify_(self) -> None:
        _same_element_types(self, (self.lhs.type, self.rhs.type, self.result.type))
        try:
            shape = self.result_shape(tensor_shape(self.lhs), tensor_shape(self.rhs))
        except ShapeError as err:
            raise _shape_error(self, err, (self.lhs.type, self.rhs.type)) from None
        _expect_type(self, shape, self.result.type, "result")


class BinaryOp(TwoOperandOp, abc.ABC):
    """Base of element-wise binary ops with NumPy broadcasting.

    Both operands share one element type; the result has the broadcast shape.
    """

    NUMPY_NAME: ClassVar[str]

    result_shape = staticmethod(broadcast_shapes)


@irdl_op_definition
class AddOp(BinaryOp, HasCanonicalizationPatternsInterface):
    """``lhs + rhs`` element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.add %0, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.add"
    NUMPY_NAME: ClassVar[str] = "add"

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (AddZero(),)


@irdl_op_definition
class SubOp(BinaryOp, HasCanonicalizationPatternsInterface):
    """``lhs - rhs`` element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.sub %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sub"
    NUMPY_NAME: ClassVar[str] = "subtract"

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (SubZero(),)


@irdl_op_definition
class MulOp(BinaryOp, HasCanonicalizationPatternsInterface):
    """``lhs * rhs`` element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.mul %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.mul"
    NUMPY_NAME: ClassVar[str] = "multiply"

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (MulOne(),)


@irdl_op_definition
class DivOp(BinaryOp, HasCanonicalizationPatternsInterface):
    """``lhs / rhs`` element-wise (true division), broadcasting.

    ```mlir
    %2 = tensordsl.div %0, %1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.div"
    NUMPY_NAME: ClassVar[str] = "divide"

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (DivOne(),)


@irdl_op_definition
class MaximumOp(BinaryOp):
    """Element-wise maximum, broadcasting (``nan`` propagates, as ``np.maximum``).

    ```mlir
    %2 = tensordsl.maximum %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.maximum"
    NUMPY_NAME: ClassVar[str] = "maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    """Element-wise minimum, broadcasting (``nan`` propagates, as ``np.minimum``).

    ```mlir
    %2 = tensordsl.minimum %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.minimum"
    NUMPY_NAME: ClassVar[str] = "minimum"


@irdl_op_definition
class CastOp(IRDLOperation):
    """Converts the element type, keeping the shape (``x.astype(dtype)``).

    The frontend inserts casts to make NumPy 2 dtype promotion explicit.

    ```mlir
    %1 = tensordsl.cast %0 : tensor<4x8xf32> -> tensor<4x8xf64>
    ```
    """

    name = "tensordsl.cast"

    input = operand_def(FloatTensorConstr)
    result = result_def(FloatTensorConstr)

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation, element: Attribute) -> None:
        value = SSAValue.get(input)
        super().__init__(operands=[value], result_types=[_tensor(element, tensor_shape(value))])

    def verify_(self) -> None:
        _expect_type(self, tensor_shape(self.input), self.result.type, "result")


# ---------------------------------------------------------------------------
# Structured ops
# ---------------------------------------------------------------------------


@irdl_op_definition
class MatmulOp(TwoOperandOp):
    """Matrix product with ``np.matmul`` semantics.

    2-D operands multiply as matrices; a 1-D left (right) operand is a row
    (column) vector whose added dimension is dropped from the result; leading
    batch dimensions broadcast.

    ```mlir
    %2 = tensordsl.matmul %0, %1 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    ```
    """

    name = "tensordsl.matmul"

    result_shape = staticmethod(matmul_shape)


@irdl_op_definition
class TransposeOp(IRDLOperation, HasCanonicalizationPatternsInterface):
    """Reverses the axes, as ``np.transpose(x)``.

    ```mlir
    %1 = tensordsl.transpose %0 : tensor<4x8xf32> -> tensor<8x4xf32>
    ```
    """

    name = "tensordsl.transpose"

    E: ClassVar = VarConstraint("E", FloatElementConstr)
    input = operand_def(TensorType.constr(E, shape=StaticShapeConstr))
    result = result_def(TensorType.constr(E, shape=StaticShapeConstr))

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation) -> None:
        value = SSAValue.get(input)
        shape = transpose_shape(tensor_shape(value))
        super().__init__(operands=[value], result_types=[_tensor(element_type(value), shape)])

    def verify_(self) -> None:
        _expect_type(self, transpose_shape(tensor_shape(self.input)), self.result.type, "result")

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (TransposeOfTranspose(),)


def _axis_attr(axis: int) -> IntegerAttr[I64]:
    return IntegerAttr(axis, i64)


@irdl_op_definition
class SoftmaxOp(IRDLOperation):
    """Numerically stable softmax along ``axis`` (default -1).

    ``exp(x - max(x, axis)) / sum(exp(x - max(x, axis)), axis)``; the result
    has the operand's type.  Along the innermost axis it is row-local.

    ```mlir
    %1 = tensordsl.softmax %0 : tensor<4x8xf32>
    %2 = tensordsl.softmax %0 axis = 0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.softmax"

    T: ClassVar = VarConstraint("T", FloatTensorConstr)
    input = operand_def(T)
    result = result_def(T)
    axis = prop_def(IntegerAttr[I64], default_value=IntegerAttr(-1, i64))

    assembly_format = "$input (`axis` `=` $axis^)? attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation, axis: int = -1) -> None:
        value = SSAValue.get(input)
        normalize_axis(axis, len(tensor_shape(value)))
        super().__init__(
            operands=[value], result_types=[value.type], properties={"axis": _axis_attr(axis)}
        )

    @property
    def axis_value(self) -> int:
        """The softmax axis, made non-negative."""
        return normalize_axis(self.axis.value.data, len(tensor_shape(self.input)))

    def verify_(self) -> None:
        try:
            normalize_axis(self.axis.value.data, len(tensor_shape(self.input)))
        except ShapeError as err:
            raise _shape_error(self, err, (self.input.type,)) from None


class ReductionOp(IRDLOperation, abc.ABC):
    """Base of reductions over one axis (or all axes when ``axis`` is absent)."""

    NUMPY_NAME: ClassVar[str]
    NEEDS_ELEMENTS: ClassVar[bool] = False
    """Whether reducing nothing is an error (the reduction has no identity)."""

    E: ClassVar = VarConstraint("E", FloatElementConstr)
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
        value = SSAValue.get(input)
        shape = self.result_shape(tensor_shape(value), axis, keepdims)
        props: dict[str, Attribute] = {}
        if axis is not None:
            props["axis"] = _axis_attr(axis)
        if keepdims:
            props["keepdims"] = UnitAttr()
        super().__init__(
            operands=[value],
            result_types=[_tensor(element_type(value), shape)],
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
                    f"`{cls.NUMPY_NAME}` over {where} of a {fmt_shape(shape)} tensor reduces "
                    "zero elements, and it has no identity"
                )
        return out

    def verify_(self) -> None:
        axis = None if self.axis is None else self.axis.value.data
        try:
            shape = self.result_shape(tensor_shape(self.input), axis, self.keepdims_value)
        except ShapeError as err:
            raise _shape_error(self, err, (self.input.type,)) from None
        _expect_type(self, shape, self.result.type, "result")


@irdl_op_definition
class SumOp(ReductionOp):
    """Sum over ``axis`` (all axes when absent); ``keepdims`` keeps it as size 1.

    ```mlir
    %1 = tensordsl.sum %0 axis = 1 : tensor<4x8xf32> -> tensor<4xf32>
    %2 = tensordsl.sum %0 : tensor<4x8xf32> -> tensor<f32>
    ```
    """

    name = "tensordsl.sum"
    NUMPY_NAME: ClassVar[str] = "sum"


@irdl_op_definition
class MaxOp(ReductionOp):
    """Maximum over ``axis`` (all axes when absent); reducing zero elements is an error, as in NumPy.

    ```mlir
    %1 = tensordsl.max %0 axis = -1 keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
    """

    name = "tensordsl.max"
    NUMPY_NAME: ClassVar[str] = "max"
    NEEDS_ELEMENTS: ClassVar[bool] = True


@irdl_op_definition
class MeanOp(ReductionOp):
    """Arithmetic mean over ``axis`` (all axes when absent).

    ```mlir
    %1 = tensordsl.mean %0 axis = 0 : tensor<4x8xf32> -> tensor<8xf32>
    ```
    """

    name = "tensordsl.mean"
    NUMPY_NAME: ClassVar[str] = "mean"


# ---------------------------------------------------------------------------
# Canonicalization patterns (attached to the ops above)
# ---------------------------------------------------------------------------


def _splat_constant(value: SSAValue) -> float | None:
    owner = value.owner
    return owner.splat_value() if isinstance(owner, ConstantOp) else None


def _forward_if_same_type(op: Operation, keep: SSAValue, rewriter: PatternRewriter) -> None:
    """Replace ``op`` by ``keep`` when that does not change the result type."""
    if keep.type == op.results[0].type:
        rewriter.replace(op, [], [keep])


class ReluOfRelu(RewritePattern):
    """``relu(relu(x)) -> relu(x)``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReluOp, rewriter: PatternRewriter) -> None:
        if isinstance(op.input.owner, ReluOp):
            rewriter.replace(op, [], [op.input])


class NegOfNeg(RewritePattern):
    """``neg(neg(x)) -> x``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: NegOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, NegOp):
            rewriter.replace(op, [], [inner.input])


class TransposeOfTranspose(RewritePattern):
    """``transpose(transpose(x)) -> x``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, TransposeOp):
            rewriter.replace(op, [], [inner.input])


class AddZero(RewritePattern):
    """``x + 0 -> x`` and ``0 + x -> x`` where the shape is preserved."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddOp, rewriter: PatternRewriter) -> None:
        if _splat_constant(op.rhs) == 0.0:
            _forward_if_same_type(op, op.lhs, rewriter)
        elif _splat_constant(op.lhs) == 0.0:
            _forward_if_same_type(op, op.rhs, rewriter)


class SubZero(RewritePattern):
    """``x - 0 -> x`` where the shape is preserved."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SubOp, rewriter: PatternRewriter) -> None:
        if _splat_constant(op.rhs) == 0.0:
            _forward_if_same_type(op, op.lhs, rewriter)


class MulOne(RewritePattern):
    """``x * 1 -> x`` and ``1 * x -> x`` where the shape is preserved."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MulOp, rewriter: PatternRewriter) -> None:
        if _splat_constant(op.rhs) == 1.0:
            _forward_if_same_type(op, op.lhs, rewriter)
        elif _splat_constant(op.lhs) == 1.0:
            _forward_if_same_type(op, op.rhs, rewriter)


class DivOne(RewritePattern):
    """``x / 1 -> x`` where the shape is preserved."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DivOp, rewriter: PatternRewriter) -> None:
        if _splat_constant(op.rhs) == 1.0:
            _forward_if_same_type(op, op.lhs, rewriter)


# ---------------------------------------------------------------------------
# Op groups and the dialect
# ---------------------------------------------------------------------------

UNARY_OPS: tuple[type[UnaryOp], ...] = (
    ReluOp,
    ExpOp,
    LogOp,
    SqrtOp,
    TanhOp,
    SigmoidOp,
    AbsOp,
    NegOp,
)
BINARY_OPS: tuple[type[BinaryOp], ...] = (AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp)
REDUCTION_OPS: tuple[type[ReductionOp], ...] = (SumOp, MaxOp, MeanOp)
ELEMENTWISE_OPS: tuple[type[IRDLOperation], ...] = (*UNARY_OPS, *BINARY_OPS, CastOp, ConstantOp)

TensorDSL = Dialect(
    "tensordsl",
    [
        ConstantOp,
        *UNARY_OPS,
        *BINARY_OPS,
        CastOp,
        MatmulOp,
        TransposeOp,
        SoftmaxOp,
        *REDUCTION_OPS,
    ],
    [],
)
