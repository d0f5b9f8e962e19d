"""The ``tensordsl`` dialect: one op per function of the tdsl expression language.

Every op works on builtin ranked, static tensors (``tensor<4x8xf32>``,
``tensor<f64>``; zero-size dimensions are fine) whose element type is ``f16``,
``f32`` or ``f64``.  The semantics are NumPy's:

* binary element-wise ops broadcast their operands (``np.broadcast_shapes``);
  both operands share one element type, promotion is an explicit ``cast``;
* ``matmul`` follows ``np.matmul`` (1-D operands and batches included);
* axes may be negative and count from the end;
* ``softmax`` is the numerically stable ``exp(x - max) / sum(exp(x - max))``;
* sums, means and products of ``f16`` accumulate in ``f32`` and round once at
  the end (as ``np.mean`` does).

Every computing op implements the structured-op interface
(:mod:`tdsl.dialects.structured`): its loop space, indexing maps and iterator
types, its element-wise body in ``arith``/``math`` (the one statement of an
element-wise op's semantics: the interpreter and both targets derive from it),
its accumulation, and the small interfaces of what only some ops are
(:mod:`tdsl.dialects.op_interfaces`: a function of the language, a contraction,
a decomposition, a scan).  Most ops are a few lines on one of its base classes.

Each op builds from its operands alone (``AddOp(a, b)`` infers the broadcast
result type); a builder given operands it cannot take raises a
:class:`~tdsl.errors.TdslTypeError`, and the verifiers re-check everything a
parsed op claims.  The shape helpers raise :class:`ShapeError` (a
``TdslTypeError``), so the frontend can report a mismatch at the user's source
span before any IR exists.
"""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Sequence
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.interfaces import HasCanonicalizationPatternsInterface
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParamAttrConstraint,
    VarConstraint,
    irdl_op_definition,
    operand_def,
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

from tdsl.dialects import tdslmath
from tdsl.dialects.structured import (
    BOOL,
    NUMPY_DTYPES,
    Accumulator,
    BinaryOp,
    BoolTensorConstr,
    Combiner,
    CompareOp,
    Contraction,
    ElementConstr,
    ElementwiseOp,
    FloatTensorConstr,
    FloatType,
    HasConstantValue,
    IteratorType,
    LanguageFunction,
    LogicalOp,
    Param,
    PartialOps,
    Reduction,
    ReductionOp,
    RowLocalOp,
    ScalarOpBuilder,
    ScanOp,
    ShapeError,
    StaticShapeConstr,
    StructuredOpInterface,
    TensorConstr,
    UnaryOp,
    Workspace,
    broadcast_dims,
    broadcast_shapes,
    convert_scalar,
    dims_map,
    element_of,
    element_type,
    expect_shape,
    fmt_shape,
    identity_map,
    normalize_axis,
    numpy_dtype,
    operand_value,
    reduce_shape,
    row_stat_shape,
    same_element_types,
    scalar_constant,
    shape_error,
    tensor_shape,
    tensor_type,
)
from tdsl.dtypes import BOOL_DTYPE, FLOAT_DTYPES, wide_accumulator

RECIPROCAL_MIN_SIZE = 1 << 15
"""Below this many elements a broadcast division stays one ``np.divide``: the extra
``np.reciprocal`` call costs more than multiplying saves (NumPy lowering)."""


# ---------------------------------------------------------------------------
# Shape rules of the structured ops below
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Constant
# ---------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation, HasConstantValue):
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

    def as_numpy(self) -> np.ndarray[Any, Any]:
        """The value as a NumPy array."""
        return dense_to_numpy(self.value)

    def constant_value(self) -> np.ndarray[Any, Any]:
        return dense_to_numpy(self.value)

    def splat_value(self) -> float | None:
        """The single value of a splat constant, or None."""
        arr = self.as_numpy()
        if arr.size == 0:
            return None
        first = arr.flat[0]
        return float(first) if bool(np.all(arr == first)) else None


def dense_from_numpy(arr: np.ndarray[Any, Any], element: Attribute) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding ``arr`` (converted to the dtype of ``element``)."""
    data = np.array(arr, dtype=numpy_dtype(element), order="C")
    t = TensorType(cast(FloatType, element), data.shape)
    return DenseIntOrFPElementsAttr(t, BytesAttr(data.tobytes()))


def _prints_exactly(values: np.ndarray[Any, Any]) -> bool:
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


def dense_to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray[Any, Any]:
    """The contents of a dense float attribute as a NumPy array."""
    dtype = numpy_dtype(attr.get_element_type())
    shape = tuple(attr.get_shape())
    flat = np.frombuffer(attr.data.data, dtype=dtype)
    if flat.size == 1 and int(np.prod(shape)) != 1:
        return np.full(shape, flat[0], dtype=dtype)  # a splat stored once
    return flat.reshape(shape).copy()


# ---------------------------------------------------------------------------
# Element-wise unary ops
# ---------------------------------------------------------------------------


def numpy_extremum(
    b: Builder, lhs: SSAValue, rhs: SSAValue, larger: bool, first_if_equal: bool
) -> SSAValue:
    """NumPy's element-wise ``maximum`` (``larger``) or ``minimum`` of two scalars:
    nan propagates, and of equal operands (``-0`` and ``+0``) float32 and float64
    return the second, float16 the first (``first_if_equal``: NumPy's loops do; LLVM's
    ``maximum`` orders ``-0 < +0`` instead).  The ``cmpf`` + ``select`` form vectorizes element-wise;
    reductions keep ``arith.maximumf``/``minimumf``, which LLVM vectorizes as such."""
    predicate = {(True, False): "ogt", (True, True): "oge", (False, False): "olt"}.get(
        (larger, first_if_equal), "ole"
    )
    wins = b.insert(arith.CmpfOp(lhs, rhs, predicate)).result
    nan = b.insert(arith.CmpfOp(lhs, lhs, "uno")).result
    pick = b.insert(arith.OrIOp(wins, nan)).result
    return b.insert(arith.SelectOp(pick, lhs, rhs)).result


@irdl_op_definition
class ReluOp(UnaryOp, HasCanonicalizationPatternsInterface):
    """``max(x, 0)`` element-wise (``nan`` stays ``nan``, as ``np.maximum``).

    ```mlir
    %1 = tensordsl.relu %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.relu"
    FUNCTION: ClassVar[str | None] = "relu"

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        return ()  # the numpy target runs one np.maximum against zeros

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        zero = scalar_constant(b, 0.0, args[0].type)
        f16 = isinstance(element_type(self.result), Float16Type)
        return (numpy_extremum(b, args[0], zero, larger=True, first_if_equal=f16),)

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
    FUNCTION: ClassVar[str | None] = "exp"
    NUMPY_UFUNC: ClassVar[str | None] = "exp"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.ExpOp


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural logarithm element-wise (``nan`` below 0, ``-inf`` at 0, as NumPy).

    ```mlir
    %1 = tensordsl.log %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.log"
    FUNCTION: ClassVar[str | None] = "log"
    NUMPY_UFUNC: ClassVar[str | None] = "log"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.LogOp


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Square root element-wise (``nan`` below 0, as NumPy).

    ```mlir
    %1 = tensordsl.sqrt %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sqrt"
    FUNCTION: ClassVar[str | None] = "sqrt"
    NUMPY_UFUNC: ClassVar[str | None] = "sqrt"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.SqrtOp


@irdl_op_definition
class TanhOp(UnaryOp):
    """Hyperbolic tangent element-wise.

    ```mlir
    %1 = tensordsl.tanh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.tanh"
    FUNCTION: ClassVar[str | None] = "tanh"
    NUMPY_UFUNC: ClassVar[str | None] = "tanh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.TanhOp


@irdl_op_definition
class SinOp(UnaryOp):
    """Sine element-wise (radians).

    ```mlir
    %1 = tensordsl.sin %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sin"
    FUNCTION: ClassVar[str | None] = "sin"
    NUMPY_UFUNC: ClassVar[str | None] = "sin"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.SinOp


@irdl_op_definition
class CosOp(UnaryOp):
    """Cosine element-wise (radians).

    ```mlir
    %1 = tensordsl.cos %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.cos"
    FUNCTION: ClassVar[str | None] = "cos"
    NUMPY_UFUNC: ClassVar[str | None] = "cos"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.CosOp


@irdl_op_definition
class TanOp(UnaryOp):
    """Tangent element-wise (radians).

    ```mlir
    %1 = tensordsl.tan %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.tan"
    FUNCTION: ClassVar[str | None] = "tan"
    NUMPY_UFUNC: ClassVar[str | None] = "tan"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.TanOp


@irdl_op_definition
class ArcsinOp(UnaryOp):
    """Inverse sine element-wise (``nan`` outside [-1, 1], as NumPy).

    ```mlir
    %1 = tensordsl.arcsin %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arcsin"
    FUNCTION: ClassVar[str | None] = "arcsin"
    NUMPY_UFUNC: ClassVar[str | None] = "arcsin"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AsinOp


@irdl_op_definition
class ArccosOp(UnaryOp):
    """Inverse cosine element-wise (``nan`` outside [-1, 1], as NumPy).

    ```mlir
    %1 = tensordsl.arccos %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arccos"
    FUNCTION: ClassVar[str | None] = "arccos"
    NUMPY_UFUNC: ClassVar[str | None] = "arccos"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AcosOp


@irdl_op_definition
class ArctanOp(UnaryOp):
    """Inverse tangent element-wise.

    ```mlir
    %1 = tensordsl.arctan %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arctan"
    FUNCTION: ClassVar[str | None] = "arctan"
    NUMPY_UFUNC: ClassVar[str | None] = "arctan"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AtanOp


@irdl_op_definition
class SinhOp(UnaryOp):
    """Hyperbolic sine element-wise.

    ```mlir
    %1 = tensordsl.sinh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sinh"
    FUNCTION: ClassVar[str | None] = "sinh"
    NUMPY_UFUNC: ClassVar[str | None] = "sinh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.SinhOp


@irdl_op_definition
class CoshOp(UnaryOp):
    """Hyperbolic cosine element-wise.

    ```mlir
    %1 = tensordsl.cosh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.cosh"
    FUNCTION: ClassVar[str | None] = "cosh"
    NUMPY_UFUNC: ClassVar[str | None] = "cosh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.CoshOp


@irdl_op_definition
class ArcsinhOp(UnaryOp):
    """Inverse hyperbolic sine element-wise.

    ```mlir
    %1 = tensordsl.arcsinh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arcsinh"
    FUNCTION: ClassVar[str | None] = "arcsinh"
    NUMPY_UFUNC: ClassVar[str | None] = "arcsinh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AsinhOp


@irdl_op_definition
class ArccoshOp(UnaryOp):
    """Inverse hyperbolic cosine element-wise (``nan`` below 1, as NumPy).

    ```mlir
    %1 = tensordsl.arccosh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arccosh"
    FUNCTION: ClassVar[str | None] = "arccosh"
    NUMPY_UFUNC: ClassVar[str | None] = "arccosh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AcoshOp


@irdl_op_definition
class ArctanhOp(UnaryOp):
    """Inverse hyperbolic tangent element-wise (``nan`` outside [-1, 1], ``±inf`` at ``±1``).

    ```mlir
    %1 = tensordsl.arctanh %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arctanh"
    FUNCTION: ClassVar[str | None] = "arctanh"
    NUMPY_UFUNC: ClassVar[str | None] = "arctanh"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AtanhOp


@irdl_op_definition
class Log1pOp(UnaryOp):
    """``log(1 + x)`` element-wise, accurate near 0.

    ```mlir
    %1 = tensordsl.log1p %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.log1p"
    FUNCTION: ClassVar[str | None] = "log1p"
    NUMPY_UFUNC: ClassVar[str | None] = "log1p"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.Log1pOp


@irdl_op_definition
class Log10Op(UnaryOp):
    """Base-10 logarithm element-wise.

    ```mlir
    %1 = tensordsl.log10 %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.log10"
    FUNCTION: ClassVar[str | None] = "log10"
    NUMPY_UFUNC: ClassVar[str | None] = "log10"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.Log10Op


@irdl_op_definition
class Log2Op(UnaryOp):
    """Base-2 logarithm element-wise.

    ```mlir
    %1 = tensordsl.log2 %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.log2"
    FUNCTION: ClassVar[str | None] = "log2"
    NUMPY_UFUNC: ClassVar[str | None] = "log2"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.Log2Op


@irdl_op_definition
class Expm1Op(UnaryOp):
    """``exp(x) - 1`` element-wise, accurate near 0.

    ```mlir
    %1 = tensordsl.expm1 %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.expm1"
    FUNCTION: ClassVar[str | None] = "expm1"
    NUMPY_UFUNC: ClassVar[str | None] = "expm1"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.ExpM1Op


@irdl_op_definition
class ErfOp(UnaryOp):
    """The error function ``2/sqrt(pi) * integral(exp(-t**2), 0, x)`` element-wise (NumPy has
    none; ``math.erf`` of each element).

    ```mlir
    %1 = tensordsl.erf %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.erf"
    FUNCTION: ClassVar[str | None] = "erf"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.ErfOp


@irdl_op_definition
class CeilOp(UnaryOp):
    """The smallest integer not below ``x``, element-wise (a float).

    ```mlir
    %1 = tensordsl.ceil %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.ceil"
    FUNCTION: ClassVar[str | None] = "ceil"
    NUMPY_UFUNC: ClassVar[str | None] = "ceil"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.CeilOp


@irdl_op_definition
class FloorOp(UnaryOp):
    """The largest integer not above ``x``, element-wise (a float).

    ```mlir
    %1 = tensordsl.floor %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.floor"
    FUNCTION: ClassVar[str | None] = "floor"
    NUMPY_UFUNC: ClassVar[str | None] = "floor"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.FloorOp


@irdl_op_definition
class RoundOp(UnaryOp):
    """``x`` rounded to the nearest integer, halves to even (``np.round``), element-wise.

    ```mlir
    %1 = tensordsl.round %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.round"
    FUNCTION: ClassVar[str | None] = "round"
    NUMPY_UFUNC: ClassVar[str | None] = "rint"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.RoundEvenOp


@irdl_op_definition
class TruncOp(UnaryOp):
    """``x`` rounded towards zero, element-wise (a float).

    ```mlir
    %1 = tensordsl.trunc %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.trunc"
    FUNCTION: ClassVar[str | None] = "trunc"
    NUMPY_UFUNC: ClassVar[str | None] = "trunc"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.TruncOp


@irdl_op_definition
class SignOp(UnaryOp):
    """``-1``, ``0`` or ``1`` by the sign of ``x``, element-wise (``nan`` stays ``nan``; the
    sign of zero is ``+0``, as ``np.sign``).

    ```mlir
    %1 = tensordsl.sign %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sign"
    FUNCTION: ClassVar[str | None] = "sign"
    NUMPY_UFUNC: ClassVar[str | None] = "sign"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        (x,) = args
        zero = scalar_constant(b, 0.0, x.type)
        one = scalar_constant(b, 1.0, x.type)
        minus = scalar_constant(b, -1.0, x.type)
        pos = b.insert(arith.CmpfOp(x, zero, "ogt")).result
        neg = b.insert(arith.CmpfOp(x, zero, "olt")).result
        # x - x is +0 for ±0 and nan for nan
        rest = b.insert(arith.SubfOp(x, x)).result
        low = b.insert(arith.SelectOp(neg, minus, rest)).result
        return (b.insert(arith.SelectOp(pos, one, low)).result,)


@irdl_op_definition
class SquareOp(UnaryOp):
    """``x * x`` element-wise.

    ```mlir
    %1 = tensordsl.square %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.square"
    FUNCTION: ClassVar[str | None] = "square"
    NUMPY_UFUNC: ClassVar[str | None] = "square"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (b.insert(arith.MulfOp(args[0], args[0])).result,)


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """``1 / x`` element-wise (``±inf`` at ``±0``).

    ```mlir
    %1 = tensordsl.reciprocal %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.reciprocal"
    FUNCTION: ClassVar[str | None] = "reciprocal"
    NUMPY_UFUNC: ClassVar[str | None] = "reciprocal"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        one = scalar_constant(b, 1.0, args[0].type)
        return (b.insert(arith.DivfOp(one, args[0])).result,)


@irdl_op_definition
class CopyOp(UnaryOp):
    """``x`` itself, element-wise (``np.copy``; numexpr's ``copy``).

    ```mlir
    %1 = tensordsl.copy %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.copy"
    FUNCTION: ClassVar[str | None] = "copy"
    NUMPY_UFUNC: ClassVar[str | None] = "positive"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (args[0],)


@irdl_op_definition
class ConjOp(UnaryOp):
    """The complex conjugate, which for real floats is ``x`` itself (``np.conj``).

    ```mlir
    %1 = tensordsl.conj %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.conj"
    FUNCTION: ClassVar[str | None] = "conj"
    NUMPY_UFUNC: ClassVar[str | None] = "conjugate"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (args[0],)


@irdl_op_definition
class OnesLikeOp(UnaryOp):
    """Ones of the operand's shape and type (``np.ones_like``; ``nan`` gives 1 too).

    ```mlir
    %1 = tensordsl.ones_like %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.ones_like"
    FUNCTION: ClassVar[str | None] = "ones_like"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (scalar_constant(b, 1.0, args[0].type),)


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """The logistic function ``1 / (1 + exp(-x))`` element-wise, computed without overflow.

    ```mlir
    %1 = tensordsl.sigmoid %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.sigmoid"
    FUNCTION: ClassVar[str | None] = "sigmoid"

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        # the numpy target's own lowering: e = exp(-|x|) and, for f16, the numerator, in
        # the body's type (f32 for f16: one rounding at the end, as the body)
        dtype = numpy_dtype(self.result.type)
        if dtype == FLOAT_DTYPES["f16"]:
            return ((result_shapes[0], FLOAT_DTYPES["f32"]),) * 2
        return ((result_shapes[0], dtype),)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        (x,) = args
        zero = scalar_constant(b, 0.0, x.type)
        one = scalar_constant(b, 1.0, x.type)
        ax = b.insert(xmath.AbsFOp(x)).result
        e = b.insert(xmath.ExpOp(b.insert(arith.NegfOp(ax)).result)).result
        den = b.insert(arith.AddfOp(one, e)).result
        pos = b.insert(arith.DivfOp(one, den)).result
        neg = b.insert(arith.DivfOp(e, den)).result
        nonneg = b.insert(arith.CmpfOp(x, zero, "oge")).result
        return (b.insert(arith.SelectOp(nonneg, pos, neg)).result,)


@irdl_op_definition
class AbsOp(UnaryOp):
    """Absolute value element-wise.

    ```mlir
    %1 = tensordsl.abs %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.abs"
    FUNCTION: ClassVar[str | None] = "abs"
    NUMPY_UFUNC: ClassVar[str | None] = "absolute"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.AbsFOp


@irdl_op_definition
class NegOp(UnaryOp, HasCanonicalizationPatternsInterface):
    """``-x`` element-wise.

    ```mlir
    %1 = tensordsl.neg %0 : tensor<4x8xf32>
    ```
    """

    name = "tensordsl.neg"
    FUNCTION: ClassVar[str | None] = "neg"
    NUMPY_UFUNC: ClassVar[str | None] = "negative"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.NegfOp

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (NegOfNeg(),)


# ---------------------------------------------------------------------------
# Element-wise binary ops
# ---------------------------------------------------------------------------


@irdl_op_definition
class AddOp(BinaryOp, HasCanonicalizationPatternsInterface):
    """``lhs + rhs`` element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.add %0, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.add"
    OPERATOR: ClassVar[str | None] = "+"
    NUMPY_UFUNC: ClassVar[str | None] = "add"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.AddfOp

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
    OPERATOR: ClassVar[str | None] = "-"
    NUMPY_UFUNC: ClassVar[str | None] = "subtract"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.SubfOp

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
    OPERATOR: ClassVar[str | None] = "*"
    NUMPY_UFUNC: ClassVar[str | None] = "multiply"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.MulfOp

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
    OPERATOR: ClassVar[str | None] = "/"
    NUMPY_UFUNC: ClassVar[str | None] = "divide"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.DivfOp

    @staticmethod
    def by_reciprocal(divisor: Sequence[int], result: Sequence[int]) -> bool:
        """Whether the numpy target divides by a broadcast operand as a multiplication by
        its reciprocal (faster), which needs a workspace for the reciprocal."""
        size = math.prod(result)
        return math.prod(divisor) < size and size >= RECIPROCAL_MIN_SIZE

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        if constant_operands[1] or not self.by_reciprocal(operand_shapes[1], result_shapes[0]):
            return ()
        return ((operand_shapes[1], numpy_dtype(self.result.type)),)

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (DivOne(),)


@irdl_op_definition
class PowerOp(BinaryOp):
    """``lhs ** rhs`` element-wise, broadcasting (``np.power``: ``nan`` for a negative base
    and a non-integer exponent, ``x ** 0`` is 1).

    ```mlir
    %2 = tensordsl.power %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.power"
    FUNCTION: ClassVar[str | None] = "power"
    OPERATOR: ClassVar[str | None] = "**"
    NUMPY_UFUNC: ClassVar[str | None] = "power"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        """``pow``, except that NumPy computes ``x ** 0.5`` as ``sqrt(x)`` when the
        exponent is one element (a scalar or a size-1 array) and the dtype float32 or
        float64: ``sqrt(-0) = -0`` and ``sqrt(-inf) = nan`` where ``pow`` gives
        ``+0`` and ``inf``, and ``sqrt`` rounds correctly."""
        x, y = args
        result = b.insert(xmath.PowFOp(x, y)).result
        one_element = math.prod(tensor_shape(self.rhs)) == 1
        if one_element and not isinstance(element_type(self.result), Float16Type):
            is_half = b.insert(arith.CmpfOp(y, scalar_constant(b, 0.5, y.type), "oeq")).result
            root = b.insert(xmath.SqrtOp(x)).result
            result = b.insert(arith.SelectOp(is_half, root, result)).result
        return (result,)


@irdl_op_definition
class RemainderOp(BinaryOp):
    """``lhs % rhs`` element-wise, broadcasting: the remainder with the sign of the divisor
    (``np.remainder``, Python's ``%``; ``nan`` for a zero divisor).

    ```mlir
    %2 = tensordsl.remainder %0, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.remainder"
    FUNCTION: ClassVar[str | None] = "remainder"
    OPERATOR: ClassVar[str | None] = "%"
    NUMPY_UFUNC: ClassVar[str | None] = "remainder"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        # NumPy's npy_divmod: m = fmod(a, b); a nonzero m of the other sign than b
        # moves by b; a zero m takes b's sign
        a, d = args
        m = b.insert(tdslmath.RemFOp(a, d)).result
        zero = scalar_constant(b, 0.0, a.type)
        nonzero = b.insert(arith.CmpfOp(m, zero, "one")).result
        m_neg = b.insert(arith.CmpfOp(m, zero, "olt")).result
        d_neg = b.insert(arith.CmpfOp(d, zero, "olt")).result
        other_sign = b.insert(arith.XOrIOp(m_neg, d_neg)).result
        move = b.insert(arith.AndIOp(nonzero, other_sign)).result
        moved = b.insert(arith.AddfOp(m, d)).result
        r = b.insert(arith.SelectOp(move, moved, m)).result
        is_zero = b.insert(arith.CmpfOp(m, zero, "oeq")).result
        signed_zero = b.insert(xmath.CopySignOp(zero, d)).result
        return (b.insert(arith.SelectOp(is_zero, signed_zero, r)).result,)


@irdl_op_definition
class FmodOp(BinaryOp):
    """``fmod(lhs, rhs)`` element-wise, broadcasting: the remainder with the sign of the
    dividend (``np.fmod``, C's ``fmod``).

    ```mlir
    %2 = tensordsl.fmod %0, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.fmod"
    FUNCTION: ClassVar[str | None] = "fmod"
    NUMPY_UFUNC: ClassVar[str | None] = "fmod"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = tdslmath.RemFOp


@irdl_op_definition
class Arctan2Op(BinaryOp):
    """The angle of the point ``(rhs, lhs)`` (``np.arctan2(y, x)``), element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.arctan2 %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.arctan2"
    FUNCTION: ClassVar[str | None] = "arctan2"
    NUMPY_UFUNC: ClassVar[str | None] = "arctan2"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.Atan2Op


@irdl_op_definition
class HypotOp(BinaryOp):
    """``sqrt(lhs**2 + rhs**2)`` element-wise without overflow, broadcasting (``np.hypot``).

    ```mlir
    %2 = tensordsl.hypot %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.hypot"
    FUNCTION: ClassVar[str | None] = "hypot"
    NUMPY_UFUNC: ClassVar[str | None] = "hypot"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = tdslmath.HypotOp


@irdl_op_definition
class LogaddexpOp(BinaryOp):
    """``log(exp(lhs) + exp(rhs))`` element-wise without overflow, broadcasting
    (``np.logaddexp``: ``x + log(2)`` for equal operands, infinities included).

    ```mlir
    %2 = tensordsl.logaddexp %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.logaddexp"
    FUNCTION: ClassVar[str | None] = "logaddexp"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        # NumPy's npy_logaddexp: the larger plus log1p(exp(-|x - y|)); nan stays nan
        x, y = args
        d = b.insert(arith.SubfOp(x, y)).result
        zero = scalar_constant(b, 0.0, x.type)
        larger = b.insert(arith.SelectOp(b.insert(arith.CmpfOp(d, zero, "ogt")), x, y)).result
        ad = b.insert(arith.NegfOp(b.insert(xmath.AbsFOp(d)).result)).result
        tail = b.insert(xmath.Log1pOp(b.insert(xmath.ExpOp(ad)).result)).result
        sum_ = b.insert(arith.AddfOp(larger, tail)).result
        ln2 = scalar_constant(b, math.log(2.0), x.type)
        twice = b.insert(arith.AddfOp(x, ln2)).result
        equal = b.insert(arith.CmpfOp(x, y, "oeq")).result
        return (b.insert(arith.SelectOp(equal, twice, sum_)).result,)


@irdl_op_definition
class CopysignOp(BinaryOp):
    """The magnitude of ``lhs`` with the sign of ``rhs``, element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.copysign %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.copysign"
    FUNCTION: ClassVar[str | None] = "copysign"
    NUMPY_UFUNC: ClassVar[str | None] = "copysign"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.CopySignOp


@irdl_op_definition
class NextafterOp(BinaryOp):
    """The next representable value after ``lhs`` towards ``rhs``, element-wise, broadcasting
    (``np.nextafter``, in the element type).

    ```mlir
    %2 = tensordsl.nextafter %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.nextafter"
    F16_IN_F32: ClassVar[bool] = False  # its result is f16's next value
    FUNCTION: ClassVar[str | None] = "nextafter"
    NUMPY_UFUNC: ClassVar[str | None] = "nextafter"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = tdslmath.NextAfterOp


@irdl_op_definition
class LessOp(CompareOp):
    """``lhs < rhs`` element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.less %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.less"
    FUNCTION: ClassVar[str | None] = "less"
    OPERATOR: ClassVar[str | None] = "<"
    NUMPY_UFUNC: ClassVar[str | None] = "less"
    PREDICATE: ClassVar[str] = "olt"


@irdl_op_definition
class LessEqualOp(CompareOp):
    """``lhs <= rhs`` element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.less_equal %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.less_equal"
    FUNCTION: ClassVar[str | None] = "less_equal"
    OPERATOR: ClassVar[str | None] = "<="
    NUMPY_UFUNC: ClassVar[str | None] = "less_equal"
    PREDICATE: ClassVar[str] = "ole"


@irdl_op_definition
class EqualOp(CompareOp):
    """``lhs == rhs`` element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.equal %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.equal"
    FUNCTION: ClassVar[str | None] = "equal"
    OPERATOR: ClassVar[str | None] = "=="
    NUMPY_UFUNC: ClassVar[str | None] = "equal"
    PREDICATE: ClassVar[str] = "oeq"


@irdl_op_definition
class NotEqualOp(CompareOp):
    """``lhs != rhs`` (true where either is ``nan``) element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.not_equal %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.not_equal"
    FUNCTION: ClassVar[str | None] = "not_equal"
    OPERATOR: ClassVar[str | None] = "!="
    NUMPY_UFUNC: ClassVar[str | None] = "not_equal"
    PREDICATE: ClassVar[str] = "une"


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    """``lhs >= rhs`` element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.greater_equal %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.greater_equal"
    FUNCTION: ClassVar[str | None] = "greater_equal"
    OPERATOR: ClassVar[str | None] = ">="
    NUMPY_UFUNC: ClassVar[str | None] = "greater_equal"
    PREDICATE: ClassVar[str] = "oge"


@irdl_op_definition
class GreaterOp(CompareOp):
    """``lhs > rhs`` element-wise, broadcasting: a boolean tensor.

    ```mlir
    %2 = tensordsl.greater %0, %1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.greater"
    FUNCTION: ClassVar[str | None] = "greater"
    OPERATOR: ClassVar[str | None] = ">"
    NUMPY_UFUNC: ClassVar[str | None] = "greater"
    PREDICATE: ClassVar[str] = "ogt"


@irdl_op_definition
class AndOp(LogicalOp):
    """``lhs & rhs`` on booleans, element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.and %0, %1 : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.and"
    FUNCTION: ClassVar[str | None] = "logical_and"
    OPERATOR: ClassVar[str | None] = "&"
    NUMPY_UFUNC: ClassVar[str | None] = "logical_and"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.AndIOp


@irdl_op_definition
class OrOp(LogicalOp):
    """``lhs | rhs`` on booleans, element-wise, broadcasting.

    ```mlir
    %2 = tensordsl.or %0, %1 : (tensor<4x8xi1>, tensor<8xi1>) -> tensor<4x8xi1>
    ```
    """

    name = "tensordsl.or"
    FUNCTION: ClassVar[str | None] = "logical_or"
    OPERATOR: ClassVar[str | None] = "|"
    NUMPY_UFUNC: ClassVar[str | None] = "logical_or"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = arith.OrIOp


@irdl_op_definition
class NotOp(UnaryOp):
    """``~x`` on booleans, element-wise.

    ```mlir
    %1 = tensordsl.not %0 : tensor<4x8xi1>
    ```
    """

    name = "tensordsl.not"
    FUNCTION: ClassVar[str | None] = "logical_not"
    NUMPY_UFUNC: ClassVar[str | None] = "logical_not"

    T: ClassVar = VarConstraint("T", BoolTensorConstr)
    input = operand_def(T)
    result = result_def(T)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        true = b.insert(arith.ConstantOp(IntegerAttr(1, BOOL))).result
        return (b.insert(arith.XOrIOp(args[0], true)).result,)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE


@irdl_op_definition
class WhereOp(IRDLOperation, ElementwiseOp, LanguageFunction):
    """``where(cond, a, b)``: ``a`` where ``cond`` is true, else ``b``, element-wise, all
    three broadcasting (``np.where``).  ``a`` and ``b`` share one element type, which is
    the result's.

    ```mlir
    %3 = tensordsl.where %c, %a, %b : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.where"
    FUNCTION: ClassVar[str | None] = "where"
    ARITY: ClassVar[int] = 3

    cond = operand_def(BoolTensorConstr)
    lhs = operand_def(TensorConstr)
    rhs = operand_def(TensorConstr)
    result = result_def(TensorConstr)

    assembly_format = (
        "$cond `,` $lhs `,` $rhs attr-dict `:` `(` type($cond) `,` type($lhs) `,` "
        "type($rhs) `)` `->` type($result)"
    )
    traits = traits_def(Pure())

    def __init__(
        self, cond: SSAValue | Operation, lhs: SSAValue | Operation, rhs: SSAValue | Operation
    ) -> None:
        c, a, b = (operand_value(self.name, v) for v in (cond, lhs, rhs))
        (result,) = self.infer_result_types([c.type, a.type, b.type])
        super().__init__(operands=[c, a, b], result_types=[result])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        c, a, b = operand_types
        if element_type(c) != BOOL:
            raise ShapeError(f"the condition of where must be booleans, not {element_type(c)}")
        if element_type(a) != element_type(b):
            raise ShapeError(
                f"the values of where have different element types {element_type(a)} and "
                f"{element_type(b)} (make promotion explicit with tensordsl.cast)"
            )
        shape = broadcast_shapes(
            broadcast_shapes(tensor_shape(c), tensor_shape(a)), tensor_shape(b)
        )
        return (tensor_type(element_type(a), shape),)

    def verify_(self) -> None:
        types = (self.cond.type, self.lhs.type, self.rhs.type)
        try:
            (expected,) = self.infer_result_types(list(types))
        except ShapeError as err:
            raise shape_error(self, err, types) from None
        if expected != self.result.type:
            raise VerifyException(
                f"'{self.name}' op result type {self.result.type} should be {expected}"
            )

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (b.insert(arith.SelectOp(args[0], args[1], args[2])).result,)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE


@irdl_op_definition
class MaximumOp(BinaryOp):
    """Element-wise maximum, broadcasting (``nan`` propagates, as ``np.maximum``).

    ```mlir
    %2 = tensordsl.maximum %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.maximum"
    FUNCTION: ClassVar[str | None] = "maximum"
    NUMPY_UFUNC: ClassVar[str | None] = "maximum"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        f16 = isinstance(element_type(self.result), Float16Type)
        return (numpy_extremum(b, args[0], args[1], larger=True, first_if_equal=f16),)


@irdl_op_definition
class MinimumOp(BinaryOp):
    """Element-wise minimum, broadcasting (``nan`` propagates, as ``np.minimum``).

    ```mlir
    %2 = tensordsl.minimum %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.minimum"
    FUNCTION: ClassVar[str | None] = "minimum"
    NUMPY_UFUNC: ClassVar[str | None] = "minimum"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        f16 = isinstance(element_type(self.result), Float16Type)
        return (numpy_extremum(b, args[0], args[1], larger=False, first_if_equal=f16),)


# ---------------------------------------------------------------------------
# Cast
# ---------------------------------------------------------------------------


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

    def numpy_view(self) -> str | None:
        return "{0}" if self.input.type == self.result.type else None

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (convert_scalar(b, args[0], element_type(self.result)),)


# ---------------------------------------------------------------------------
# Matmul and transpose
# ---------------------------------------------------------------------------


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

    def numpy_view(self) -> str | None:
        return "{0}.T"

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (args[0],)

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (TransposeOfTranspose(),)


# ---------------------------------------------------------------------------
# Row-normalizing ops
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------


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
    NUMPY_UFUNC: ClassVar[str] = "multiply"
    IDENTITY: ClassVar[float] = 1.0
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


def _logsumexp_step(
    b: Builder, shift: SSAValue, total: SSAValue, x: SSAValue, weight: SSAValue
) -> tuple[SSAValue, SSAValue]:
    """The state ``(shift, total)`` of ``logsumexp`` after taking ``x`` with weight
    ``weight`` (its own sum of exponentials, relative to ``x``: 1 for one element).

    A larger ``x`` becomes the shift and the total is rescaled to it; otherwise ``x``'s
    weight is rescaled to the shift.  One ``exp`` either way.  Equal values (two
    infinities too) add their weights unscaled, so ``inf - inf`` never appears; a ``nan``
    compares false and makes the total ``nan``."""
    larger = b.insert(arith.CmpfOp(x, shift, "ogt")).result
    equal = b.insert(arith.CmpfOp(x, shift, "oeq")).result
    down = b.insert(arith.SubfOp(shift, x)).result  # <= 0 when x is larger
    up = b.insert(arith.SubfOp(x, shift)).result  # <= 0 otherwise (nan when unordered)
    zero = scalar_constant(b, 0.0, shift.type)
    same = b.insert(arith.SelectOp(equal, zero, up)).result
    d = b.insert(arith.SelectOp(larger, down, same)).result
    e = b.insert(xmath.ExpOp(d)).result
    rescaled = b.insert(arith.MulfOp(total, e)).result
    grown = b.insert(arith.AddfOp(rescaled, weight)).result  # x larger: total * e + w
    scaled = b.insert(arith.MulfOp(weight, e)).result
    added = b.insert(arith.AddfOp(total, scaled)).result  # else: total + w * e
    new_total = b.insert(arith.SelectOp(larger, grown, added)).result
    new_shift = b.insert(arith.SelectOp(larger, x, shift)).result
    return new_shift, new_total


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
class LogSumExpOp(ChunkedReductionOp):
    """``log(sum(exp(x)))`` over ``axis`` (all axes when absent), without overflow
    (``scipy.special.logsumexp``): ``-inf`` for nothing or only ``-inf``, ``inf`` with an
    ``inf``, ``nan`` with a ``nan``.

    Its accumulator is a tuple: a running maximum (the shift) and the sum of
    ``exp(x - shift)``, rescaled when the maximum grows; the result is
    ``shift + log(total)``.  A float16 input accumulates in float32.  Across chunks (Dask)
    the partial of a chunk is its own ``logsumexp`` and partials combine by ``logsumexp``.

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
        return _logsumexp_step(b, shift, total, x, scalar_constant(b, 1.0, shift.type))

    def scalar_merge(
        self, b: Builder, state: Sequence[SSAValue], other: Sequence[SSAValue]
    ) -> tuple[SSAValue, ...]:
        shift, total = state
        return _logsumexp_step(b, shift, total, other[0], other[1])

    def scalar_finalize_state(self, b: Builder, state: Sequence[SSAValue], count: int) -> SSAValue:
        shift, total = state
        log = b.insert(xmath.LogOp(total)).result
        # -inf + log(0) is -inf: nothing, or only -inf; nan stays nan
        value = b.insert(arith.AddfOp(shift, log)).result
        return convert_scalar(b, value, element_type(self.result))

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
        return ((operand_shapes[0], acc), (result_shapes[0], acc), (result_shapes[0], acc))


def _welford_merge(
    b: Builder, state: Sequence[SSAValue], count: SSAValue, mean: SSAValue, m2: SSAValue
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """Chan's merge of the variance state ``(count, mean, m2)`` with another one: the
    mean moves by the other's share of the difference, and the sum of squared
    deviations gains the difference's square weighted by both counts.  Merging into an
    empty state takes the other as it is (no ``0 / 0``)."""
    n_a, mean_a, m2_a = state
    n = b.insert(arith.AddfOp(n_a, count)).result
    zero = scalar_constant(b, 0.0, n.type)
    some = b.insert(arith.CmpfOp(n, zero, "ogt")).result
    share = b.insert(arith.DivfOp(count, n)).result
    share = b.insert(arith.SelectOp(some, share, zero)).result  # count / n, 0 for nothing
    delta = b.insert(arith.SubfOp(mean, mean_a)).result
    step = b.insert(arith.MulfOp(delta, share)).result
    new_mean = b.insert(arith.AddfOp(mean_a, step)).result
    cross = b.insert(arith.MulfOp(step, delta)).result  # delta**2 * count / n
    cross = b.insert(arith.MulfOp(cross, n_a)).result
    sums = b.insert(arith.AddfOp(m2_a, m2)).result
    new_m2 = b.insert(arith.AddfOp(sums, cross)).result
    return n, new_mean, new_m2


def variance_state(
    x: np.ndarray[Any, Any], axis: int | None, keepdims: bool, dtype: np.dtype[Any]
) -> tuple[np.ndarray[Any, Any], ...]:
    """The variance state ``(count, mean, m2)`` of ``x`` reduced over ``axis``, in ``dtype``:
    the number of elements, their mean, and the sum of their squared deviations from it
    (two passes, as ``np.var``)."""
    with np.errstate(all="ignore"):
        wide = np.asarray(x, dtype=dtype)
        n = wide.size if axis is None else wide.shape[axis]
        total = np.add.reduce(wide, axis=axis, keepdims=True)
        mean = total / dtype.type(n) if n else np.zeros_like(total)
        d = wide - mean
        m2 = np.add.reduce(d * d, axis=axis, keepdims=True)
    if not keepdims:
        mean, m2 = np.squeeze(mean, axis=axis), np.squeeze(m2, axis=axis)
    count = np.full(mean.shape, n, dtype=dtype)
    return count, np.asarray(mean, dtype=dtype), np.asarray(m2, dtype=dtype)


class VarianceOp(ReductionOp, abc.ABC):
    """Base of ``var`` and ``std``: reductions of the squared deviations from the mean,
    divided by ``n - ddof``.

    Its accumulator is a tuple (Welford's): the count, the running mean and the sum of
    squared deviations from it; tiles' states merge by Chan's formula.  A float16 input
    accumulates in float32."""

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("axis", "axis", None),
        Param("keepdims", "bool", False),
        Param("ddof", "float", 0.0),
    )
    NUMPY_UFUNC: ClassVar[str] = "add"  # unused: a tuple accumulator
    IDENTITY: ClassVar[float] = 0.0
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.AddfOp
    WIDE: ClassVar[bool] = True

    ddof = prop_def(FloatAttr[Float64Type], default_value=FloatAttr(0.0, f64))
    assembly_format = (
        "$input (`axis` `=` $axis^)? (`keepdims` $keepdims^)? (`ddof` `=` $ddof^)? attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        axis: int | None = None,
        keepdims: bool = False,
        ddof: float = 0.0,
    ) -> None:
        super().__init__(input, axis, keepdims)
        self.properties["ddof"] = FloatAttr(float(ddof), f64)

    @property
    def ddof_value(self) -> float:
        return self.ddof.value.data

    def combiner(self) -> Combiner | None:
        return None  # two states merge with scalar_merge, not one ufunc

    def accumulator(self) -> Accumulator:
        dtype = self.accumulator_dtype()
        return Accumulator((dtype,) * 3, (0.0, 0.0, 0.0))

    def scalar_accumulate(
        self, b: Builder, state: Sequence[SSAValue], args: Sequence[SSAValue]
    ) -> tuple[SSAValue, ...]:
        n, mean, m2 = state
        x = convert_scalar(b, args[0], mean.type)
        one = scalar_constant(b, 1.0, n.type)
        n1 = b.insert(arith.AddfOp(n, one)).result
        delta = b.insert(arith.SubfOp(x, mean)).result
        step = b.insert(arith.DivfOp(delta, n1)).result
        new_mean = b.insert(arith.AddfOp(mean, step)).result
        after = b.insert(arith.SubfOp(x, new_mean)).result
        grow = b.insert(arith.MulfOp(delta, after)).result
        return n1, new_mean, b.insert(arith.AddfOp(m2, grow)).result

    def scalar_merge(
        self, b: Builder, state: Sequence[SSAValue], other: Sequence[SSAValue]
    ) -> tuple[SSAValue, ...]:
        return _welford_merge(b, state, *other)

    def _divisor(self, count: int) -> float:
        return max(count - self.ddof_value, 0.0)

    def scalar_finalize_state(self, b: Builder, state: Sequence[SSAValue], count: int) -> SSAValue:
        m2 = state[2]
        # m2 / 0: inf, or nan for nothing (as np.var when n <= ddof)
        var = b.insert(arith.DivfOp(m2, scalar_constant(b, self._divisor(count), m2.type)))
        return convert_scalar(b, self._from_variance(b, var.result), element_type(self.result))

    def _from_variance(self, b: Builder, var: SSAValue) -> SSAValue:
        return var

    def evaluate_state(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        (x,) = args
        return variance_state(x, self.axis_value, self.keepdims_value, self.accumulator_dtype())

    def finish(self, m2: np.ndarray[Any, Any], count: int) -> np.ndarray[Any, Any]:
        """The result from the sum of squared deviations of ``count`` elements."""
        with np.errstate(all="ignore"):
            return np.divide(m2, m2.dtype.type(self._divisor(count)))

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        (x,) = args
        count = math.prod(x.shape[a] for a in self.reduced_axes())
        _, _, m2 = self.evaluate_state(x)
        return (np.asarray(self.finish(m2, count), dtype=numpy_dtype(self.result.type)),)

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        # the deviations of one tile (the operand's shape), and the state of a tile the
        # op computes whole (count, mean and squared deviations), the result's shape
        acc = self.accumulator_dtype()
        return ((operand_shapes[0], acc), *(((result_shapes[0], acc),) * 3))


@irdl_op_definition
class VarOp(VarianceOp):
    """Variance over ``axis`` (all axes when absent): the mean of the squared deviations
    from the mean, divided by ``n - ddof`` instead of ``n`` when ``ddof`` is given
    (``np.var``: ``nan`` for nothing, ``inf`` or ``nan`` when ``n <= ddof``).

    Its accumulator is a tuple (Welford's): the count, the running mean and the sum of
    squared deviations from it; tiles' states merge by Chan's formula.  A float16 input
    accumulates in float32.

    ```mlir
    %1 = tensordsl.var %0 axis = 1 : tensor<4x8xf32> -> tensor<4xf32>
    %2 = tensordsl.var %0 axis = 0 ddof = 1.000000e+00 : tensor<4x8xf32> -> tensor<8xf32>
    ```
    """

    name = "tensordsl.var"
    FUNCTION: ClassVar[str | None] = "var"


@irdl_op_definition
class StdOp(VarianceOp):
    """Standard deviation over ``axis`` (all axes when absent): the square root of the
    variance, with the same ``ddof`` (``np.std``).

    ```mlir
    %1 = tensordsl.std %0 axis = 1 : tensor<4x8xf32> -> tensor<4xf32>
    ```
    """

    name = "tensordsl.std"
    FUNCTION: ClassVar[str | None] = "std"

    def _from_variance(self, b: Builder, var: SSAValue) -> SSAValue:
        return b.insert(xmath.SqrtOp(var)).result

    def finish(self, m2: np.ndarray[Any, Any], count: int) -> np.ndarray[Any, Any]:
        with np.errstate(all="ignore"):
            return np.sqrt(super().finish(m2, count))


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


# ---------------------------------------------------------------------------
# Scans: results along an axis, a running value carried across tiles
# ---------------------------------------------------------------------------


@irdl_op_definition
class CumsumOp(ScanOp):
    """Cumulative sum along ``axis``, as ``np.cumsum``: ``axis`` absent scans a 0-d or
    1-d tensor whole (a larger one needs an axis).  Each partial sum is rounded to the
    result's dtype (float16 adds in float16, as NumPy's); ``inf`` and ``nan`` propagate
    and overflow gives ``inf``, as in NumPy.

    ```mlir
    %1 = tensordsl.cumsum %0 axis = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.cumsum"
    FUNCTION: ClassVar[str | None] = "cumsum"
    NUMPY_UFUNC: ClassVar[str] = "add"
    IDENTITY: ClassVar[float] = -0.0  # x + -0.0 is x, for x = -0.0 too
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.AddfOp


@irdl_op_definition
class CumprodOp(ScanOp):
    """Cumulative product along ``axis``, as ``np.cumprod`` (``axis`` as for ``cumsum``).
    Each partial product is rounded to the result's dtype; overflow gives ``inf``, and
    ``0 * inf`` is ``nan``, as in NumPy.

    ```mlir
    %1 = tensordsl.cumprod %0 axis = -1 : tensor<4x8xf64> -> tensor<4x8xf64>
    ```
    """

    name = "tensordsl.cumprod"
    FUNCTION: ClassVar[str | None] = "cumprod"
    NUMPY_UFUNC: ClassVar[str] = "multiply"
    IDENTITY: ClassVar[float] = 1.0
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.MulfOp


def _defined_ops() -> tuple[type[IRDLOperation], ...]:
    """Every op class this module defines (a ``tensordsl.`` name), in definition order:
    a new op is its class, and the dialect and the families below take it from here."""
    return tuple(
        v
        for v in list(globals().values())
        if isinstance(v, type)
        and issubclass(v, IRDLOperation)
        and v.__module__ == __name__
        and isinstance(v.__dict__.get("name"), str)
        and v.__dict__["name"].startswith("tensordsl.")
    )


OPS = _defined_ops()
"""The ops of the dialect, in definition order."""


def _family(base: type[Any], *, boolean: bool | None = None) -> tuple[Any, ...]:
    """The ops of ``OPS`` derived from ``base``; ``boolean`` keeps those taking booleans as
    they are (True) or not (False)."""
    return tuple(
        c
        for c in OPS
        if issubclass(c, base)
        and (boolean is None or (c.bool_inputs_as() == BOOL_DTYPE) == boolean)  # type: ignore[attr-defined]
    )


UNARY_OPS: tuple[type[UnaryOp], ...] = _family(UnaryOp, boolean=False)
"""Element-wise unary ops on floats."""
COMPARISON_OPS: tuple[type[CompareOp], ...] = _family(CompareOp)
"""Comparisons: floats in, booleans out."""
BINARY_OPS: tuple[type[BinaryOp], ...] = tuple(
    c for c in _family(BinaryOp, boolean=False) if c not in COMPARISON_OPS
)
"""Element-wise binary ops on floats."""
LOGICAL_OPS: tuple[type[Operation], ...] = (
    *_family(UnaryOp, boolean=True),
    *_family(BinaryOp, boolean=True),
)
"""Logical ops on booleans."""
REDUCTION_OPS: tuple[type[ReductionOp], ...] = _family(ReductionOp)
"""Reductions over an axis (or all axes)."""
ROW_LOCAL_OPS: tuple[type[RowLocalOp], ...] = _family(RowLocalOp)
"""Row-normalizing ops: each result element needs its whole row."""
SCAN_OPS: tuple[type[ScanOp], ...] = _family(ScanOp)
"""Scans: results along an axis, each combining the elements before it."""

TensorDSL = Dialect("tensordsl", list(OPS), [])

# the op classes are public too: OPS lists them
__all__ = [
    "BINARY_OPS",
    "COMPARISON_OPS",
    "LOGICAL_OPS",
    "NUMPY_DTYPES",
    "OPS",
    "RECIPROCAL_MIN_SIZE",
    "REDUCTION_OPS",
    "ROW_LOCAL_OPS",
    "SCAN_OPS",
    "UNARY_OPS",
    "BinaryOp",
    "ChunkedReductionOp",
    "FloatTensorConstr",
    "FloatType",
    "ReductionOp",
    "RowLocalOp",
    "ScanOp",
    "ShapeError",
    "TensorDSL",
    "UnaryOp",
    "VarianceOp",
    "broadcast_shapes",
    "dense_from_numpy",
    "dense_to_numpy",
    "dense_to_text",
    "element_type",
    "fmt_shape",
    "matmul_shape",
    "normalize_axis",
    "numpy_dtype",
    "reduce_shape",
    "softmax_array",
    "tensor_shape",
    "transpose_shape",
]
