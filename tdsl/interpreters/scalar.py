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
(every point of the loop space at once), with NumPy's rounding for that type;
xDSL's own interpreters for those dialects cover few ops and work on one
scalar at a time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith, func
from xdsl.dialects import math as xmath
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

from tdsl.dialects import tdslmath
from tdsl.dialects.structured import (
    IteratorType,
    StructuredOpInterface,
    constant_value,
    element_of,
    element_type,
    map_dims,
    numpy_dtype,
    structured,
    tensor_shape,
)
from tdsl.interpreters.func import FuncFunctions

Array = np.ndarray[Any, Any]

_UNARY: dict[type[Operation], Callable[[Array], Array]] = {
    arith.NegfOp: np.negative,
    xmath.AbsFOp: np.absolute,
    xmath.ExpOp: np.exp,
    xmath.ExpM1Op: np.expm1,
    xmath.LogOp: np.log,
    xmath.Log1pOp: np.log1p,
    xmath.Log2Op: np.log2,
    xmath.Log10Op: np.log10,
    xmath.SqrtOp: np.sqrt,
    xmath.TanhOp: np.tanh,
    xmath.SinOp: np.sin,
    xmath.CosOp: np.cos,
    xmath.TanOp: np.tan,
    xmath.AsinOp: np.arcsin,
    xmath.AcosOp: np.arccos,
    xmath.AtanOp: np.arctan,
    xmath.SinhOp: np.sinh,
    xmath.CoshOp: np.cosh,
    xmath.AsinhOp: np.arcsinh,
    xmath.AcoshOp: np.arccosh,
    xmath.AtanhOp: np.arctanh,
    xmath.CeilOp: np.ceil,
    xmath.FloorOp: np.floor,
    xmath.TruncOp: np.trunc,
    xmath.RoundEvenOp: np.rint,
    xmath.RsqrtOp: lambda x: np.reciprocal(np.sqrt(x)),
}
_BINARY: dict[type[Operation], Callable[[Array, Array], Array]] = {
    arith.AddfOp: np.add,
    arith.SubfOp: np.subtract,
    arith.MulfOp: np.multiply,
    arith.DivfOp: np.divide,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    xmath.PowFOp: np.power,
    xmath.Atan2Op: np.arctan2,
    xmath.CopySignOp: np.copysign,
    tdslmath.RemFOp: np.fmod,
    tdslmath.HypotOp: np.hypot,
    tdslmath.NextAfterOp: np.nextafter,
    # on i1 (booleans) only, as scalar bodies use them
    arith.AndIOp: np.logical_and,
    arith.OrIOp: np.logical_or,
    arith.XOrIOp: np.logical_xor,
}


def _unordered(a: Array, b: Array) -> Array:
    return np.isnan(a) | np.isnan(b)


# arith.cmpf predicates: the ordered ("o") ones are false where an operand is nan,
# as NumPy's comparisons are; the unordered ("u") ones are true there.
_COMPARE: dict[str, Callable[[Array, Array], Array]] = {
    "oeq": np.equal,
    "ogt": np.greater,
    "oge": np.greater_equal,
    "olt": np.less,
    "ole": np.less_equal,
    "one": lambda a, b: np.not_equal(a, b) & ~_unordered(a, b),
    "ord": lambda a, b: ~_unordered(a, b),
    "ueq": lambda a, b: np.equal(a, b) | _unordered(a, b),
    "ugt": lambda a, b: np.greater(a, b) | _unordered(a, b),
    "uge": lambda a, b: np.greater_equal(a, b) | _unordered(a, b),
    "ult": lambda a, b: np.less(a, b) | _unordered(a, b),
    "ule": lambda a, b: np.less_equal(a, b) | _unordered(a, b),
    "une": np.not_equal,
    "uno": _unordered,
}


def _dtype_of(t: Attribute) -> np.dtype[Any]:
    if t == IntegerType(1):
        return np.dtype(np.bool_)
    return numpy_dtype(t)


def _result(op: Operation, value: Any) -> Array:
    return np.asarray(value, dtype=_dtype_of(op.results[0].type))


def _run_unary(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    with np.errstate(all="ignore"):
        return (_result(op, _UNARY[type(op)](args[0])),)


def _run_binary(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    with np.errstate(all="ignore"):
        return (_result(op, _BINARY[type(op)](args[0], args[1])),)


def _run_constant(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    value = cast(arith.ConstantOp, op).value
    if not isinstance(value, FloatAttr | IntegerAttr):
        raise InterpretationError(f"scalar bodies use float or boolean constants, not {value}")
    return (_result(op, value.value.data),)


def _run_convert(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    with np.errstate(all="ignore"):
        return (_result(op, np.asarray(args[0]).astype(_dtype_of(op.results[0].type))),)


def _run_cmpf(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    number = cast(arith.CmpfOp, op).predicate.value.data
    predicate = arith.CMPF_COMPARISON_OPERATIONS[number]
    compare = _COMPARE.get(predicate)
    if compare is None:
        raise InterpretationError(f"arith.cmpf predicate {predicate} is not supported here")
    with np.errstate(all="ignore"):
        return (np.asarray(compare(args[0], args[1]), dtype=np.bool_),)


def _run_select(
    self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> PythonValues:
    return (_result(op, np.where(args[0], args[1], args[2])),)


def _scalar_functions() -> type[InterpreterFunctions]:
    namespace: dict[str, Any] = {"__module__": __name__}
    for i, op_type in enumerate(_UNARY):
        namespace[f"run_unary_{i}"] = impl(op_type)(_run_unary)
    for i, op_type in enumerate(_BINARY):
        namespace[f"run_binary_{i}"] = impl(op_type)(_run_binary)
    namespace["run_constant"] = impl(arith.ConstantOp)(_run_constant)
    namespace["run_extf"] = impl(arith.ExtFOp)(_run_convert)
    namespace["run_truncf"] = impl(arith.TruncFOp)(_run_convert)
    namespace["run_uitofp"] = impl(arith.UIToFPOp)(_run_convert)
    namespace["run_cmpf"] = impl(arith.CmpfOp)(_run_cmpf)
    namespace["run_select"] = impl(arith.SelectOp)(_run_select)
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
    decomposed = s.decompose()
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
    carried = s.carried_loops()
    if carried and math.prod(loops):
        return (_run_scan(s, op, carried[0].dim, gathered, loops, maps[n_in]),)
    if not reduced:
        body = ScalarFunction(elements, s.scalar_body)
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
    combiner = s.combiner()
    if combiner is None:
        raise InterpretationError(f"'{op.name}' has reduction dims but no combiner")
    acc_element = element_of(s.accumulator_dtype())
    combine = ScalarFunction(
        [acc_element, *elements], lambda b, xs: [s.scalar_combine(b, xs[0], xs[1:])]
    )
    count = math.prod(loops[d] for d in reduced)
    finalize = ScalarFunction([acc_element], lambda b, xs: [s.scalar_finalize(b, xs[0], count)])
    # the reduced dims last, flattened: fold the combine over them
    moved = [
        np.moveaxis(g, reduced, range(len(loops) - len(reduced), len(loops))).reshape(
            *(loops[d] for d in kept), count
        )
        for g in gathered
    ]
    acc = np.full(tuple(loops[d] for d in kept), combiner.identity, dtype=s.accumulator_dtype())
    with np.errstate(all="ignore"):
        for k in range(count):
            (acc,) = combine(acc, *(m[..., k] for m in moved))
        (value,) = finalize(np.asarray(acc))
    return (_layout(np.asarray(value), kept, maps[n_in]),)


def _run_scan(
    s: StructuredOpInterface,
    op: Operation,
    axis: int,
    gathered: Sequence[Array],
    loops: Sequence[int],
    out_map: Sequence[int | None],
) -> Array:
    """A scan from its interface: the carry starts at the identity and takes each element
    along ``axis`` in order (``scalar_scan``); each running value is a result element."""
    loop = s.carried_loops()[0]
    carry_element = element_of(loop.dtype)
    elements = [element_type(v.type) for v in op.operands]
    step = ScalarFunction(
        [carry_element, *elements], lambda b, xs: [s.scalar_scan(b, xs[0], xs[1:])]
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
