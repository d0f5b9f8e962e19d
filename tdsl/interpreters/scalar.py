"""Run a structured op through its scalar bodies: the element-level reference of every op.

:func:`reference_evaluate` computes an op's results from nothing but what the
structured-op interface declares: it gathers each operand over the loop space
through the op's indexing maps, runs the op's ``scalar_body`` (``arith`` and
``math`` ops) at every point, folds ``scalar_combine`` over the ``reduction``
dims starting from the combiner's identity and applies ``scalar_finalize``,
runs a ``normalize`` op as its decomposition, and lays the results out through
the result maps.  Agreement with the op's ``evaluate`` (its NumPy
implementation) checks the maps, the iterator types and the scalar bodies
that the native target lowers, all at once.

The ``arith``/``math`` ops run here on NumPy arrays of their element type
(every point of the loop space at once), through the one table of
:mod:`tdsl.scalar_numpy`; xDSL's own interpreters for those dialects
cover few ops and work on one scalar at a time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, ModuleOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import InterpretationError

from tdsl.dialects.structured import (
    IteratorType,
    Scan,
    checked_decomposition,
    constant_value,
    element_body,
    element_of,
    element_type,
    map_dims,
    numpy_dtype,
    reduction_of,
    structured,
    tensor_shape,
)
from tdsl.errors import internal_error
from tdsl.interpreters.func import FuncFunctions
from tdsl.scalar_numpy import SCALAR_FUNCTIONS, numpy_function

Array = np.ndarray[Any, Any]


def _dtype_of(t: Attribute) -> np.dtype[Any]:
    if t == IntegerType(1):
        return np.dtype(np.bool_)
    return numpy_dtype(t)


def _result(op: Operation, value: Any) -> Array:
    return np.asarray(value, dtype=_dtype_of(op.results[0].type))


def _run_table(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    with np.errstate(all="ignore"):
        return (_result(op, numpy_function(op)(*args)),)


def _run_constant(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    value = cast(arith.ConstantOp, op).value
    if not isinstance(value, FloatAttr | IntegerAttr):
        raise InterpretationError(f"scalar bodies use float or boolean constants, not {value}")
    return (_result(op, value.value.data),)


def _scalar_functions() -> type[InterpreterFunctions]:
    namespace: dict[str, Any] = {"__module__": __name__}
    for i, op_type in enumerate([*SCALAR_FUNCTIONS, arith.CmpfOp, arith.CmpiOp]):
        namespace[f"run_{i}"] = impl(op_type)(_run_table)
    namespace["run_constant"] = impl(arith.ConstantOp)(_run_constant)
    return register_impls(type("ScalarFunctions", (InterpreterFunctions,), namespace))


ScalarFunctions = _scalar_functions()
"""NumPy implementations of the ``arith`` and ``math`` ops scalar bodies use."""


class ScalarFunction:
    """A scalar body built into a ``func.func`` and run on arrays (all points at once)."""

    def __init__(
        self,
        arg_types: Sequence[Attribute],
        build: Callable[[Builder, Sequence[SSAValue]], Sequence[SSAValue]],
    ) -> None:
        block = Block(arg_types=list(arg_types))
        builder = Builder(InsertPoint.at_end(block))
        results = list(build(builder, block.args))
        builder.insert(func.ReturnOp(*results))
        fn = func.FuncOp("body", (list(arg_types), [r.type for r in results]), Region(block))
        self.module = ModuleOp([fn])
        self.module.verify()
        self.interpreter = Interpreter(self.module)
        self.interpreter.register_implementations(FuncFunctions())
        self.interpreter.register_implementations(ScalarFunctions())

    def __call__(self, *args: Array) -> tuple[Array, ...]:
        return tuple(np.asarray(r) for r in self.interpreter.call_op("body", args))


def _gather(array: Array, dims: Sequence[int | None], loops: Sequence[int]) -> Array:
    """``array`` read over the whole loop space through an indexing map's ``dims``."""
    if not dims:
        return np.broadcast_to(array, tuple(loops))
    index: list[Array] = []
    for d in dims:
        shape = [1] * len(loops)
        if d is None:
            index.append(np.zeros(shape, dtype=np.intp))
        else:
            shape[d] = loops[d]
            index.append(np.arange(loops[d]).reshape(shape))
    return np.broadcast_to(array[tuple(index)], tuple(loops))


def _layout(values: Array, kept: Sequence[int], dims: Sequence[int | None]) -> Array:
    """Arrange ``values`` (over the loop dims ``kept``, in order) as a result with map ``dims``."""
    position = {d: i for i, d in enumerate(kept)}
    order = [position[d] for d in dims if d is not None]
    out = np.transpose(values, order) if order else values
    shape = [1 if d is None else values.shape[position[d]] for d in dims]
    return np.reshape(out, shape)


def reference_evaluate(op: Operation, *args: Array) -> tuple[Array, ...]:
    """``op``'s results computed from its interface alone (see the module docstring)."""
    s = structured(op)
    if s is None:
        raise InterpretationError(f"'{op.name}' does not implement the structured-op interface")
    decomposed = checked_decomposition(op)
    if decomposed is not None:
        return (_run_decomposition(op, decomposed, args),)
    loops = s.loop_extents()
    kinds = s.iterator_types()
    maps = [map_dims(m) for m in s.indexing_maps()]
    n_in = len(op.operands)
    gathered = [_gather(np.asarray(a), maps[i], loops) for i, a in enumerate(args)]
    elements = [element_type(v.type) for v in op.operands]
    reduced = [d for d, k in enumerate(kinds) if k is IteratorType.REDUCTION]
    kept = [d for d, k in enumerate(kinds) if k is not IteratorType.REDUCTION]
    carried = op.carried_loops() if isinstance(op, Scan) else ()
    if carried and math.prod(loops):
        return (_run_scan(op, carried[0].dim, gathered, loops, maps[n_in]),)
    if not reduced:
        body = ScalarFunction(elements, lambda b, xs: element_body(op, b, xs))
        with np.errstate(all="ignore"):
            values = body(*gathered) if math.prod(loops) else ()
        results: list[Array] = []
        for j, result in enumerate(op.results):
            value = (
                np.broadcast_to(values[j], tuple(loops))
                if values
                else np.zeros(tuple(loops), dtype=numpy_dtype(result.type))
            )
            results.append(_layout(value, kept, maps[n_in + j]))
        return tuple(results)
    red = reduction_of(op)
    state = red.accumulator()
    k = state.size
    acc_elements = [element_of(dt) for dt in state.dtypes]
    combine = ScalarFunction(
        [*acc_elements, *elements], lambda b, xs: list(red.scalar_accumulate(b, xs[:k], xs[k:]))
    )
    count = math.prod(loops[d] for d in reduced)
    finalize = ScalarFunction(acc_elements, lambda b, xs: [red.scalar_finalize_state(b, xs, count)])
    # the reduced dims last, flattened: fold the combine over them
    moved = [
        np.moveaxis(g, reduced, range(len(loops) - len(reduced), len(loops))).reshape(
            *(loops[d] for d in kept), count
        )
        for g in gathered
    ]
    kept_shape = tuple(loops[d] for d in kept)
    accs = [
        np.full(kept_shape, x, dtype=dt)
        for x, dt in zip(state.identities, state.dtypes, strict=True)
    ]
    with np.errstate(all="ignore"):
        for j in range(count):
            accs = list(combine(*accs, *(m[..., j] for m in moved)))
        (value,) = finalize(*(np.asarray(a) for a in accs))
    return (_layout(np.asarray(value), kept, maps[n_in]),)


def _run_scan(
    op: Operation,
    axis: int,
    gathered: Sequence[Array],
    loops: Sequence[int],
    out_map: Sequence[int | None],
) -> Array:
    """A scan from its interface: the carry starts at the identity and takes each element
    along ``axis`` in order (``scalar_scan``); each running value is a result element."""
    if not isinstance(op, Scan):
        raise internal_error(f"interpreter: '{op.name}' run as a scan but is no scan", op=op)
    loop = op.carried_loops()[0]
    carry_element = element_of(loop.dtype)
    elements = [element_type(v.type) for v in op.operands]
    step = ScalarFunction(
        [carry_element, *elements], lambda b, xs: [op.scalar_scan(b, xs[0], xs[1:])]
    )
    moved = [np.moveaxis(g, axis, -1) for g in gathered]
    carry = np.full(moved[0].shape[:-1], loop.start, dtype=loop.dtype)
    out = np.empty(moved[0].shape, dtype=numpy_dtype(op.results[0].type))
    with np.errstate(all="ignore"):
        for k in range(loops[axis]):
            (carry,) = step(carry, *(m[..., k] for m in moved))
            out[..., k] = carry
    values = np.moveaxis(out, -1, axis)
    return _layout(values, list(range(len(loops))), out_map)


def _run_decomposition(
    op: Operation, decomposed: tuple[list[Operation], SSAValue], args: Sequence[Array]
) -> Array:
    ops, result = decomposed
    env: dict[SSAValue, Array] = dict(zip(op.operands, args, strict=True))
    try:
        for inner in ops:
            constant = constant_value(inner)
            if constant is not None:  # a decomposition's literal (layernorm's eps)
                env[inner.results[0]] = constant
                continue
            values = reference_evaluate(inner, *(env[v] for v in inner.operands))
            env.update(zip(inner.results, values, strict=True))
        value = env[result]
    finally:
        for inner in reversed(ops):  # never inserted: drop the uses they hold
            inner.erase(safe_erase=False)
    return np.asarray(value, dtype=numpy_dtype(op.results[0].type)).reshape(
        tensor_shape(op.results[0])
    )


__all__ = ["ScalarFunction", "ScalarFunctions", "reference_evaluate"]
