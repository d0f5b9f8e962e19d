"""``tensordsl.constant``, a dense tensor literal, and the conversions between NumPy
arrays and ``DenseIntOrFPElementsAttr`` (its exact text form included) that the frontend,
the interpreter and the targets share; also the two helpers with which the
canonicalization patterns of the other families spot a splat constant operand and
forward a value.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParamAttrConstraint,
    VarConstraint,
    irdl_op_definition,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import ParseError

from tdsl.dialects.structured import FloatType, HasConstantValue, NumericTensorConstr, numpy_dtype


@irdl_op_definition
class ConstantOp(IRDLOperation, HasConstantValue):
    """A constant tensor, usually a 0-d splat made from a numeric literal.

    ```mlir
    %c = tensordsl.constant dense<2.5> : tensor<f32>
    %z = tensordsl.constant dense<0.0> : tensor<4x8xf64>
    ```
    """

    name = "tensordsl.constant"

    T: ClassVar = VarConstraint("T", NumericTensorConstr)
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


def is_one_value(values: np.ndarray[Any, Any]) -> bool:
    """Whether every element of ``values`` is the first, bit for bit (``[0.0, -0.0]`` is not,
    nor are nans of other payloads; an empty array is)."""
    flat = values.reshape(-1)
    return flat.tobytes() == np.repeat(flat[:1], flat.size).tobytes()


def dense_stored_once(arr: np.ndarray[Any, Any], element: Attribute) -> DenseIntOrFPElementsAttr:
    """:func:`dense_from_numpy`, its one value stored once where :func:`is_one_value`
    (a splat: ``zeros((1000, 1000))`` holds eight bytes)."""
    data = np.array(arr, dtype=numpy_dtype(element), order="C")
    if data.size <= 1 or not is_one_value(data):
        return dense_from_numpy(data, element)
    t = TensorType(cast(FloatType, element), data.shape)
    return DenseIntOrFPElementsAttr(t, BytesAttr(data.reshape(-1)[:1].tobytes()))


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
    values = np.frombuffer(attr.data.data, dtype=numpy_dtype(attr.get_element_type()))
    if values.size != 1:
        values = dense_to_numpy(attr)  # (a splat stored once prints its one value)
    if _prints_exactly(values):
        return text
    try:
        reread = Parser(Context(), text).parse_attribute()
    except ParseError:
        reread = None
    if isinstance(reread, DenseIntOrFPElementsAttr) and (
        dense_to_numpy(reread).tobytes() == dense_to_numpy(attr).tobytes()
    ):  # (the same elements: a splat may be stored once on one side only)
        return text
    # (every element: the hex of a splat stored once reads back as that many elements
    # stored, and printed again would differ)
    return f'dense<"0x{dense_to_numpy(attr).tobytes().hex().upper()}"> : {attr.type}'


def dense_to_numpy(
    attr: DenseIntOrFPElementsAttr, dtype: np.dtype[Any] | None = None
) -> np.ndarray[Any, Any]:
    """The contents of a dense attribute as a NumPy array, of ``dtype`` if given (the
    bits of a signless ``i8`` the loops stage made of a ``ui8``, read as ``uint8``)."""
    if dtype is None:
        dtype = numpy_dtype(attr.get_element_type())
    shape = tuple(attr.get_shape())
    flat = np.frombuffer(attr.data.data, dtype=dtype)
    if flat.size == 1 and int(np.prod(shape)) != 1:
        return np.full(shape, flat[0], dtype=dtype)  # a splat stored once
    return flat.reshape(shape).copy()


def splat_constant(value: SSAValue) -> float | None:
    owner = value.owner
    return owner.splat_value() if isinstance(owner, ConstantOp) else None


def forward_if_same_type(op: Operation, keep: SSAValue, rewriter: PatternRewriter) -> None:
    """Replace ``op`` by ``keep`` when that does not change the result type."""
    if keep.type == op.results[0].type:
        rewriter.replace(op, [], [keep])
