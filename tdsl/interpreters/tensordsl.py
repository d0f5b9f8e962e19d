"""Interpreter implementations of structured ops (every ``tensordsl`` op) on NumPy arrays.

Every tensor value is an ``np.ndarray`` (0-d tensors are 0-d arrays, never
NumPy scalars) whose dtype is the element type of the SSA value.  An op runs
through its own :meth:`~tdsl.dialects.structured.StructuredOpInterface.evaluate`:
the interpreter has no per-op code, so an op of another dialect that
implements the interface runs here too (:func:`structured_functions`).
Floating-point exceptions follow IEEE/NumPy semantics (``inf`` and ``nan``)
and are never turned into warnings or errors, so a run under
``pytest -W error`` behaves like a run without it.

The class also converts ``dense<...> : tensor<...>`` attributes into arrays
(:func:`attr_to_numpy`), which is how ``tdsl-run --args`` passes its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable
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

from tdsl.dialects.op_interfaces import StridedView
from tdsl.dialects.structured import (
    BOOL,
    StructuredOpInterface,
    constant_value,
    element_dtype,
    fmt_shape,
    numpy_dtype,
    structured,
    tensor_shape,
)
from tdsl.dialects.tensordsl import ConcatenateOp, TakeOp, TensorDSL, dense_to_numpy
from tdsl.errors import TdslCallError
from tdsl.interpreters.body import evaluate_body

Array = np.ndarray[Any, np.dtype[Any]]


def result_dtype(op: Operation, index: int = 0) -> np.dtype[Any]:
    """The NumPy dtype of result ``index`` of ``op`` (a float tensor)."""
    return numpy_dtype(op.results[index].type)


def _as_result(op: Operation, index: int, value: Any) -> Array:
    """``value`` as an array of the result's dtype, checked against its result type.

    Only the rank and an upper bound per dim are checked: inside a
    ``kernel.tile`` body the types are those of a full tile, and a remainder
    tile runs the same ops on smaller slices.
    """
    array = np.asarray(value, dtype=result_dtype(op, index))
    expected = tensor_shape(op.results[index])
    if array.ndim != len(expected) or any(
        got > bound for got, bound in zip(array.shape, expected, strict=True)
    ):
        raise InterpretationError(
            f"'{op.name}' computed a value of shape {fmt_shape(array.shape)}, "
            f"but its result type is {op.results[index].type}"
        )
    return array


def evaluate(op: Operation, args: PythonValues) -> PythonValues:
    """Run ``op`` (a structured or constant op, or a window) on NumPy arrays."""
    constant = constant_value(op)
    if constant is not None:
        return (_as_result(op, 0, constant.copy()),)
    if isinstance(op, StridedView):
        return (_as_result(op, 0, op.evaluate_view(np.asarray(args[0]))),)
    if isinstance(op, ConcatenateOp | TakeOp):
        return (_as_result(op, 0, op.evaluate(*(np.asarray(a) for a in args))),)
    s = structured(op)
    if s is None:
        raise InterpretationError(f"'{op.name}' does not implement the structured-op interface")
    try:
        arrays = [np.asarray(a) for a in args]
        if type(s).evaluate is StructuredOpInterface.evaluate:  # element-wise: from its body
            results = evaluate_body(op, *arrays)
        else:
            results = s.evaluate(*arrays)
    except ValueError as err:  # NumPy refuses, e.g. the max of an empty slice
        raise InterpretationError(f"'{op.name}' cannot run on these operands: {err}") from None
    return tuple(_as_result(op, i, r) for i, r in enumerate(results))


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
    if element_dtype(dense.get_element_type()) is None:
        raise TdslCallError(
            f"argument {attr} has element type {dense.get_element_type()}; tdsl tensors are "
            "i1 (bool), f16, f32, f64, i32, i64, ui8 or ui64"
        )
    value = dense_to_numpy(dense)
    return value.astype(np.bool_) if dense.get_element_type() == BOOL else value


@register_impls
class TensorValues(InterpreterFunctions):
    """Tensor attributes (``--args`` of ``tdsl-run``) as NumPy arrays."""

    @impl_attr(TensorType)
    def tensor_value(
        self, interpreter: Interpreter, attr: Attribute, type_attr: TensorType[Any]
    ) -> Array:
        return attr_to_numpy(attr, type_attr)


def _run(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    return evaluate(op, args)


def structured_functions(
    op_types: Iterable[type[Operation]],
    name: str = "StructuredFunctions",
    *,
    tensor_values: bool = False,
) -> type[InterpreterFunctions]:
    """An ``InterpreterFunctions`` class running each of ``op_types`` through the interface.

    With ``tensor_values`` the class also reads tensor attributes (see
    :class:`TensorValues`; an interpreter takes that from one class only).
    """
    namespace: dict[str, Any] = {"__module__": __name__}
    for op_type in op_types:
        namespace[f"run_{op_type.__name__}_{id(op_type)}"] = impl(op_type)(_run)
    bases = (TensorValues,) if tensor_values else (InterpreterFunctions,)
    return register_impls(type(name, bases, namespace))


TensorDSLFunctions = structured_functions(
    TensorDSL.operations, "TensorDSLFunctions", tensor_values=True
)
"""Implementations of every ``tensordsl`` op (and of tensor attributes)."""


__all__ = [
    "TensorDSLFunctions",
    "TensorValues",
    "attr_to_numpy",
    "evaluate",
    "result_dtype",
    "structured_functions",
]
