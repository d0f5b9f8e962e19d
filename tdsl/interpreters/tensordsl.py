"""Interpreter implementations of the ``tensordsl`` ops on NumPy arrays.

Every tensor value is an ``np.ndarray`` (0-d tensors are 0-d arrays, never
NumPy scalars) whose dtype is the element type of the SSA value.  Each op
computes what NumPy computes and returns it with the op's result dtype:
``float16`` stays ``float16``, ``mean`` of ``float16`` is ``float16`` as with
``np.mean``.  Floating-point exceptions follow IEEE/NumPy semantics (``inf``
and ``nan``) and are never turned into warnings or errors, so a run under
``pytest -W error`` behaves like a run without it.

The class also converts ``dense<...> : tensor<...>`` attributes into arrays
(:func:`attr_to_numpy`), which is how ``tdsl-run --args`` passes its inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    impl_attr,
    register_impls,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import InterpretationError

from tdsl.dialects.tensordsl import (
    NUMPY_DTYPES,
    AbsOp,
    AddOp,
    CastOp,
    ConstantOp,
    DivOp,
    ExpOp,
    LogOp,
    MatmulOp,
    MaximumOp,
    MaxOp,
    MeanOp,
    MinimumOp,
    MulOp,
    NegOp,
    ReductionOp,
    ReluOp,
    SigmoidOp,
    SoftmaxOp,
    SqrtOp,
    SubOp,
    SumOp,
    TanhOp,
    TransposeOp,
    dense_to_numpy,
    fmt_shape,
    reduce_shape,
    tensor_shape,
)
from tdsl.errors import TdslCallError

Array = np.ndarray[Any, np.dtype[Any]]


def result_dtype(op: Operation, index: int = 0) -> np.dtype[Any]:
    """The NumPy dtype of result ``index`` of ``op`` (a float tensor)."""
    t = cast(TensorType[Attribute], op.results[index].type)
    return NUMPY_DTYPES[type(t.get_element_type())]


def _as_result(op: Operation, value: Any) -> Array:
    """``value`` as an array of ``op``'s result dtype, checked against its result type.

    Only the rank and an upper bound per dim are checked: inside a
    ``kernel.tile`` body the types are those of a full tile, and a remainder
    tile runs the same ops on smaller slices.
    """
    array = np.asarray(value, dtype=result_dtype(op))
    expected = tensor_shape(op.results[0])
    if array.ndim != len(expected) or any(
        got > bound for got, bound in zip(array.shape, expected, strict=True)
    ):
        raise InterpretationError(
            f"'{op.name}' computed a value of shape {fmt_shape(array.shape)}, "
            f"but its result type is {op.results[0].type}"
        )
    return array


def _elementwise(op: Operation, fn: Callable[..., Any], args: PythonValues) -> PythonValues:
    """``fn(*args)`` as ``op``'s result; IEEE exceptions give inf/nan silently, as in NumPy."""
    with np.errstate(all="ignore"):
        return (_as_result(op, fn(*args)),)


def _unary(op: Operation, fn: Callable[[Array], Any], args: PythonValues) -> PythonValues:
    """:func:`_elementwise` for a one-operand computation (keeps lambdas typed)."""
    return _elementwise(op, fn, args)


def relu(x: Array) -> Array:
    """``max(x, 0)``; ``nan`` stays ``nan`` (as ``np.maximum``)."""
    return np.maximum(x, x.dtype.type(0))


def sigmoid(x: Array) -> Array:
    """``1 / (1 + exp(-x))`` without overflow: ``exp`` only ever sees ``-|x|``."""
    e = np.exp(-np.abs(x))
    one = x.dtype.type(1)
    return cast(Array, np.where(x >= 0, one / (one + e), e / (one + e)))


def softmax(x: Array, axis: int) -> Array:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``."""
    if x.size == 0:
        return x.copy()
    shifted = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return shifted / np.sum(shifted, axis=axis, keepdims=True)


def _reduced_count(op: ReductionOp, shape: tuple[int, ...]) -> int:
    """How many elements each output of a reduction combines."""
    axis = op.axis_value
    return int(np.prod(shape)) if axis is None else shape[axis]


def attr_to_numpy(attr: Attribute, type_attr: Attribute | None = None) -> Array:
    """The value of a ``dense<...> : tensor<...>`` attribute as a NumPy array.

    ``type_attr``, when given, is the type the value is meant for (e.g. the
    parameter type of the function it is passed to); a different type is a
    :class:`~tdsl.errors.TdslCallError`.
    """
    if not isinstance(attr, DenseIntOrFPElementsAttr):
        raise TdslCallError(
            f"expected a dense tensor attribute such as dense<1.0> : tensor<f32>, got {attr}"
        )
    dense = cast(DenseIntOrFPElementsAttr[Any], attr)
    if type_attr is not None and dense.type != type_attr:
        raise TdslCallError(f"argument {attr} does not have the expected type {type_attr}")
    if type(dense.get_element_type()) not in NUMPY_DTYPES:
        raise TdslCallError(
            f"argument {attr} has element type {dense.get_element_type()}; "
            "tdsl tensors are f16, f32 or f64"
        )
    return dense_to_numpy(dense)


@register_impls
class TensorDSLFunctions(InterpreterFunctions):
    """NumPy implementations of every ``tensordsl`` op."""

    @impl_attr(TensorType)
    def tensor_value(
        self, interpreter: Interpreter, attr: Attribute, type_attr: TensorType[Any]
    ) -> Array:
        return attr_to_numpy(attr, type_attr)

    @impl(ConstantOp)
    def run_constant(
        self, interpreter: Interpreter, op: ConstantOp, args: PythonValues
    ) -> PythonValues:
        return (_as_result(op, op.as_numpy()),)

    # -- unary -----------------------------------------------------------------

    @impl(ReluOp)
    def run_relu(self, interpreter: Interpreter, op: ReluOp, args: PythonValues) -> PythonValues:
        return _elementwise(op, relu, args)

    @impl(ExpOp)
    def run_exp(self, interpreter: Interpreter, op: ExpOp, args: PythonValues) -> PythonValues:
        return _elementwise(op, np.exp, args)

    @impl(LogOp)
    def run_log(self, interpreter: Interpreter, op: LogOp, args: PythonValues) -> PythonValues:
        return _elementwise(op, np.log, args)

    @impl(SqrtOp)
    def run_sqrt(self, interpreter: Interpreter, op: SqrtOp, args: PythonValues) -> PythonValues:
        return _elementwise(op, np.sqrt, args)

    @impl(TanhOp)
    def run_tanh(self, interpreter: Interpreter, op: TanhOp, args: PythonValues) -> PythonValues:
        return _elementwise(op, np.tanh, args)

    @impl(SigmoidOp)
    def run_sigmoid(
        self, interpreter: Interpreter, op: SigmoidOp, args: PythonValues
    ) -> PythonValues:
        return _elementwise(op, sigmoid, args)

    @impl(AbsOp)
    def run_abs(self, interpreter: Interpreter, op: AbsOp, args: PythonValues) -> PythonValues:
        return _elementwise(op, np.absolute, args)

    @impl(NegOp)
    def run_neg(self, interpreter: Interpreter, op: NegOp, args: PythonValues) -> PythonValues:
        return _elementwise(op, np.negative, args)

    # -- binary ----------------------------------------------------------------

    @impl(AddOp)
    def run_add(self, interpreter: Interpreter, op: AddOp, args: PythonValues) -> PythonValues:
        return _elementwise(op, np.add, args)

    @impl(SubOp)
    def run_sub(self, interpreter: Interpreter, op: SubOp, args: PythonValues) -> PythonValues:
        return _elementwise(op, np.subtract, args)

    @impl(MulOp)
    def run_mul(self, interpreter: Interpreter, op: MulOp, args: PythonValues) -> PythonValues:
        return _elementwise(op, np.multiply, args)

    @impl(DivOp)
    def run_div(self, interpreter: Interpreter, op: DivOp, args: PythonValues) -> PythonValues:
        return _elementwise(op, np.divide, args)

    @impl(MaximumOp)
    def run_maximum(
        self, interpreter: Interpreter, op: MaximumOp, args: PythonValues
    ) -> PythonValues:
        return _elementwise(op, np.maximum, args)

    @impl(MinimumOp)
    def run_minimum(
        self, interpreter: Interpreter, op: MinimumOp, args: PythonValues
    ) -> PythonValues:
        return _elementwise(op, np.minimum, args)

    @impl(CastOp)
    def run_cast(self, interpreter: Interpreter, op: CastOp, args: PythonValues) -> PythonValues:
        dtype = result_dtype(op)
        return _unary(op, lambda x: np.asarray(x).astype(dtype), args)

    # -- structured --------------------------------------------------------------

    @impl(MatmulOp)
    def run_matmul(
        self, interpreter: Interpreter, op: MatmulOp, args: PythonValues
    ) -> PythonValues:
        return _elementwise(op, np.matmul, args)

    @impl(TransposeOp)
    def run_transpose(
        self, interpreter: Interpreter, op: TransposeOp, args: PythonValues
    ) -> PythonValues:
        return _elementwise(op, np.transpose, args)

    @impl(SoftmaxOp)
    def run_softmax(
        self, interpreter: Interpreter, op: SoftmaxOp, args: PythonValues
    ) -> PythonValues:
        axis = op.axis_value
        return _unary(op, lambda x: softmax(x, axis), args)

    # -- reductions --------------------------------------------------------------

    @impl(SumOp)
    def run_sum(self, interpreter: Interpreter, op: SumOp, args: PythonValues) -> PythonValues:
        axis, keepdims = op.axis_value, op.keepdims_value
        return _unary(op, lambda x: np.sum(x, axis=axis, keepdims=keepdims), args)

    @impl(MaxOp)
    def run_max(self, interpreter: Interpreter, op: MaxOp, args: PythonValues) -> PythonValues:
        (x,) = args
        shape = tuple(np.shape(x))
        if _reduced_count(op, shape) == 0:
            where = "all axes" if op.axis_value is None else f"axis {op.axis_value}"
            raise InterpretationError(
                f"'{op.name}' reduces {where} of a {fmt_shape(shape)} tensor, which is empty: "
                "the maximum of no elements is undefined"
            )
        axis, keepdims = op.axis_value, op.keepdims_value
        return _unary(op, lambda x: np.max(x, axis=axis, keepdims=keepdims), args)

    @impl(MeanOp)
    def run_mean(self, interpreter: Interpreter, op: MeanOp, args: PythonValues) -> PythonValues:
        (x,) = args
        if _reduced_count(op, tuple(np.shape(x))) == 0:
            # np.mean gives nan here, with a RuntimeWarning that errstate does not silence.
            # The shape comes from the value, not the op: inside a kernel.tile a
            # remainder tile is smaller than the op's full-tile type.
            shape = reduce_shape(np.shape(x), op.axis_value, op.keepdims_value)
            return (np.full(shape, np.nan, dtype=result_dtype(op)),)
        axis, keepdims = op.axis_value, op.keepdims_value
        return _unary(op, lambda x: np.mean(x, axis=axis, keepdims=keepdims), args)


__all__ = [
    "TensorDSLFunctions",
    "attr_to_numpy",
    "relu",
    "result_dtype",
    "sigmoid",
    "softmax",
]
