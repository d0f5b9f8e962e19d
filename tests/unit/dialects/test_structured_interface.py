"""Every tensordsl op implements the whole structured-op interface, consistently.

For each op of the dialect (constants aside) a sample instance must:

* describe a loop space whose indexing maps fit its operand and result types;
* compute, through its scalar bodies (``arith``/``math``, folded over reduction
  dims, or its decomposition), what its NumPy implementation computes;
* run in the interpreter;
* compute the same through its NumPy lowering, on whole arrays and fused and
  tiled under a tiny budget (which tiles its reductions and decomposes it);
* if it is a language function with a ``FUNCTION``, be that function of the expression language,
  listed in ``docs/language.md``.

A new op class fails here until it has all of that (and a sample below, if it
does not derive from one of the base classes).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import test as test_dialect
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IntegerType, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import ConstantLike

from tdsl.dialects import tensordsl as td
from tdsl.dialects.op_interfaces import StridedView
from tdsl.dialects.structured import (
    BOOL,
    BinaryOp,
    IteratorType,
    LanguageFunction,
    LogicalOp,
    PartialOps,
    ReductionOp,
    RowLocalOp,
    ScanOp,
    StructuredOpInterface,
    UnaryOp,
    element_of,
    is_int,
    map_dims,
    numpy_dtype,
    tensor_shape,
)
from tdsl.interpreters.scalar import reference_evaluate
from tdsl.interpreters.tensordsl import evaluate

F16, F32, F64 = Float16Type(), Float32Type(), Float64Type()
I32, I64 = IntegerType(32), IntegerType(64)
ELEMENTS = [F16, F32, F64, I32, I64]
"""The element types: each op is sampled with those of them it takes (:func:`_elements`)."""
INT_ONLY = (td.BitwiseAndOp, td.BitwiseOrOp, td.BitwiseXorOp, td.InvertOp, td.ShiftOp)


def _elements(op_class: type[Operation]) -> list[Attribute]:
    """The element types ``op_class`` is sampled with: the floats, and the integers too
    where it computes them; only the integers where it takes nothing else."""
    if issubclass(op_class, INT_ONLY):
        return [I32, I64]
    takes = getattr(op_class, "takes_integers", None)
    takes_them = (
        (takes is not None and takes())
        or _any_element(op_class)
        or (issubclass(op_class, ReductionOp) and op_class.INTEGERS)
    )
    return ELEMENTS if takes_them else [F16, F32, F64]


def _any_element(op_class: type[Operation]) -> bool:
    """Ops that take every element type as it is (a view, a matmul, a cast)."""
    return op_class in (
        td.CastOp,
        td.MatmulOp,
        td.TransposeOp,
        td.ExpandDimsOp,
        td.SqueezeOp,
        td.WhereOp,
    )


def value(shape: tuple[int, ...], element: Attribute = F32) -> SSAValue:
    return test_dialect.TestOp(result_types=[TensorType(element, shape)]).results[0]


Sample = Callable[[Attribute], list[Operation]]


def _samples(op_class: type[Operation]) -> Sample | None:
    """Instances of ``op_class`` with operands of one element type, to check."""
    if op_class is td.NotOp:
        return lambda e: [td.NotOp(value((3, 5), BOOL)), td.NotOp(value((), BOOL))]
    if issubclass(op_class, LogicalOp):
        return lambda e: [
            op_class(value((3, 5), BOOL), value((5,), BOOL)),  # pyright: ignore
            op_class(value((3, 1), BOOL), value((1, 4), BOOL)),  # pyright: ignore
        ]
    if issubclass(op_class, UnaryOp):
        return lambda e: [op_class(value((3, 5), e)), op_class(value((), e))]  # pyright: ignore
    if issubclass(op_class, td.LogicalReductionOp):
        return lambda e: [
            op_class(value((4, 6), BOOL), axis, keepdims)  # pyright: ignore
            for axis in (None, 0, -1)
            for keepdims in (False, True)
        ]
    if issubclass(op_class, BinaryOp):
        return lambda e: [
            op_class(value((3, 5), e), value((5,), e)),  # pyright: ignore
            op_class(value((3, 1), e), value((1, 4), e)),  # pyright: ignore
            op_class(value((), e), value((2, 3), e)),  # pyright: ignore
        ]
    if issubclass(op_class, ReductionOp):
        return lambda e: [
            op_class(value((4, 6), e), axis, keepdims)  # pyright: ignore
            for axis in (None, 0, -1)
            for keepdims in (False, True)
        ]
    if issubclass(op_class, RowLocalOp):
        return lambda e: [op_class(value((4, 6), e)), op_class(value((4, 6), e), axis=0)]  # pyright: ignore
    if issubclass(op_class, ScanOp):
        return lambda e: [
            op_class(value((4, 6), e), axis=0),  # pyright: ignore
            op_class(value((4, 6), e), axis=-1),  # pyright: ignore
            op_class(value((7,), e)),  # pyright: ignore
            op_class(value((), e)),  # pyright: ignore
            op_class(value((1, 5), e), axis=0),  # pyright: ignore
        ]
    explicit: dict[type[Operation], Sample] = {
        td.CastOp: lambda e: [td.CastOp(value((3, 4), e), t) for t in (F16, F32, F64, I32, I64)],
        td.MatmulOp: lambda e: [
            td.MatmulOp(value(a, e), value(b, e))
            for a, b in [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((2, 3, 4), (4, 2))]
        ],
        td.SoftmaxMatmulOp: lambda e: [
            td.SoftmaxMatmulOp(value(a, e), value(b, e))
            for a, b in [
                ((3, 4), (4, 5)),
                ((2, 3, 4), (4, 2)),
                ((2, 3, 6), (2, 6, 5)),
                ((3, 4), (2, 4, 5)),  # the scores broadcast along the values' batch dim
                ((3, 0), (0, 2)),  # no keys: zeros, as NumPy's empty product
            ]
        ],
        td.TransposeOp: lambda e: [td.TransposeOp(value(s, e)) for s in [(3, 4), (2, 3, 4), (5,)]],
        td.ExpandDimsOp: lambda e: [
            td.ExpandDimsOp(value((3, 4), e), 0),
            td.ExpandDimsOp(value((3, 4), e), (1, -1)),
            td.ExpandDimsOp(value((), e), 0),
        ],
        td.SqueezeOp: lambda e: [
            td.SqueezeOp(value((1, 4, 1), e), None),
            td.SqueezeOp(value((3, 1), e), -1),
            td.SqueezeOp(value((1,), e), 0),
        ],
        td.ClipOp: lambda e: [
            td.ClipOp(value((3, 4), e), value((3, 4), e), value((4,), e)),
            td.ClipOp(value((3, 1), e), value((), e), value((1, 5), e)),
            td.ClipOp(value((2,), e), value((), e), value((), e)),
        ],
        td.WhereOp: lambda e: [
            td.WhereOp(value((3, 4), BOOL), value((3, 4), e), value((4,), e)),
            td.WhereOp(value((3, 1), BOOL), value((), e), value((1, 5), e)),
            td.WhereOp(value((2,), BOOL), value((2,), BOOL), value((), BOOL)),
        ],
    }
    return explicit.get(op_class)


OPS = [
    op
    for op in td.TensorDSL.operations
    if not op.has_trait(ConstantLike)
    and not issubclass(op, StridedView | td.ConcatenateOp | td.TakeOp)
]
"""The computing ops (a constant, a view or a join computes nothing and runs between
groups: tests/unit/targets has their tests)."""

OP_ELEMENTS = [(op, e) for op in OPS for e in _elements(op)]
"""Each computing op with each element type it takes."""
OP_ELEMENT_IDS = [f"{e}-{op.name}" for op, e in OP_ELEMENTS]


def _inputs(op: Operation, rng: np.random.Generator) -> list[np.ndarray[Any, Any]]:
    arrays: list[np.ndarray[Any, Any]] = []
    for v in op.operands:
        shape = tensor_shape(v)
        if numpy_dtype(v.type) == np.bool_:
            arrays.append(rng.random(shape) < 0.5)
            continue
        if is_int(v.type):
            arrays.append(rng.integers(-40, 40, shape, dtype=numpy_dtype(v.type)))
            continue
        data = rng.standard_normal(shape) * 2
        # a few special values where there is room for them
        if data.size >= 6:
            flat = data.reshape(-1)
            flat[:3] = [0.0, -0.0, 1.5]
        arrays.append(np.asarray(data, dtype=numpy_dtype(v.type)))
    return arrays


@pytest.mark.parametrize("op_class", OPS, ids=lambda c: c.name)
def test_op_implements_the_interface(op_class: type[Operation]) -> None:
    assert issubclass(op_class, StructuredOpInterface), (
        f"{op_class.name} does not implement StructuredOpInterface"
    )
    assert op_class.__doc__ and "```mlir" in op_class.__doc__, f"{op_class.name}: docstring"
    assert _samples(op_class) is not None, f"add a sample of {op_class.name} to this test"


@pytest.mark.parametrize(("op_class", "element"), OP_ELEMENTS, ids=OP_ELEMENT_IDS)
def test_maps_fit_the_types(op_class: type[Operation], element: Attribute) -> None:
    sample = _samples(op_class)
    assert sample is not None
    for op in sample(element):
        op.verify()
        assert isinstance(op, StructuredOpInterface)
        loops = op.loop_extents()
        kinds = op.iterator_types()
        maps = op.indexing_maps()
        assert len(kinds) == len(loops)
        values = [*op.operands, *op.results]
        assert len(maps) == len(values)
        for v, m in zip(values, maps, strict=True):
            assert m.num_dims == len(loops)
            dims = map_dims(m)
            shape = tensor_shape(v)
            assert len(dims) == len(shape), f"{op.name}: map {m} for {v.type}"
            for extent, d in zip(shape, dims, strict=True):
                if d is None:
                    assert extent == 1, f"{op.name}: constant 0 for a dim of extent {extent}"
                else:
                    assert loops[d] == extent, (
                        f"{op.name}: d{d} has extent {loops[d]}, not {extent}"
                    )
        for m in maps[len(op.operands) :]:
            used = {d for d in map_dims(m) if d is not None}
            assert all(kinds[d] is not IteratorType.REDUCTION for d in used), (
                f"{op.name}: a result runs along a reduction dim"
            )
        # re-typing on the same operands gives the same types
        assert [r.type for r in op.retyped(list(op.operands)).results] == [
            r.type for r in op.results
        ]


@pytest.mark.parametrize(("op_class", "element"), OP_ELEMENTS, ids=OP_ELEMENT_IDS)
def test_scalar_bodies_compute_what_the_interpreter_computes(
    op_class: type[Operation], element: Attribute
) -> None:
    sample = _samples(op_class)
    assert sample is not None
    rng = np.random.default_rng(7)
    for op in sample(element):
        assert isinstance(op, StructuredOpInterface)
        args = _inputs(op, rng)
        want = evaluate(op, args)
        got = reference_evaluate(op, *args)
        rtol = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 1e-5}.get(
            numpy_dtype(op.results[0].type), 1e-12
        )
        for g, w, r in zip(got, want, op.results, strict=True):
            assert g.dtype == w.dtype == numpy_dtype(r.type)
            assert g.shape == w.shape == tensor_shape(r)
            np.testing.assert_allclose(
                g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=rtol, equal_nan=True
            )


@pytest.mark.parametrize("op_class", OPS, ids=lambda c: c.name)
def test_each_op_runs_in_the_interpreter(op_class: type[Operation]) -> None:
    from xdsl.builder import ImplicitBuilder
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp, ReturnOp
    from xdsl.ir import Block, Region

    from tdsl.interpreters.run import run_function

    sample = _samples(op_class)
    assert sample is not None
    template = sample(F64 if F64 in _elements(op_class) else I64)[0]
    arg_types = [v.type for v in template.operands]
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block):
        op = template.retyped(list(block.args))  # created inside: inserted implicitly
        ReturnOp(*op.results)
    module = ModuleOp([FuncOp("main", (arg_types, [r.type for r in op.results]), Region(block))])
    module.verify()
    args = _inputs(template, np.random.default_rng(3))
    (got,) = run_function(module, "main", *args)
    assert isinstance(op, StructuredOpInterface)
    np.testing.assert_array_equal(got, evaluate(op, args)[0])


def _module_of(template: Operation) -> tuple[Any, Operation]:
    """A module whose @main applies ``template``'s op to its arguments."""
    from xdsl.builder import ImplicitBuilder
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp, ReturnOp
    from xdsl.ir import Block, Region

    arg_types = [v.type for v in template.operands]
    block = Block(arg_types=arg_types)
    assert isinstance(template, StructuredOpInterface)
    with ImplicitBuilder(block):
        op = template.retyped(list(block.args))
        ReturnOp(*op.results)
    module = ModuleOp([FuncOp("main", (arg_types, [r.type for r in op.results]), Region(block))])
    module.verify()
    return module, op


def _tolerance(op: Operation) -> float:
    return {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 1e-5}.get(
        numpy_dtype(op.results[0].type), 1e-12
    )


@pytest.mark.parametrize(("op_class", "element"), OP_ELEMENTS, ids=OP_ELEMENT_IDS)
@pytest.mark.parametrize("budget", [None, 4], ids=["whole", "budget-4"])
def test_numpy_lowering_computes_what_the_interpreter_computes(
    op_class: type[Operation], element: Attribute, budget: int | None
) -> None:
    """The op's NumPy lowering, on whole arrays and (``budget-4``) fused and tiled under a
    budget of 4 elements, which tiles reductions and decomposes row-normalizing ops."""
    from tdsl.backend.numpy.target import emit_numpy, load_numpy
    from tdsl.transforms.fuse import fuse
    from tdsl.transforms.tile import tile

    sample = _samples(op_class)
    assert sample is not None
    rng = np.random.default_rng(11)
    for template in sample(element):
        module, op = _module_of(template)
        if budget is not None:
            module = tile(fuse(module, memory_budget=budget))
        fn = load_numpy(emit_numpy(module))["main"]
        args = _inputs(template, rng)
        assert isinstance(op, StructuredOpInterface)
        (want,) = evaluate(op, args)
        with np.errstate(all="ignore"):  # the generated code warns as NumPy does (log(0))
            got = fn(*args)
        assert got.dtype == want.dtype and got.shape == want.shape
        tol = _tolerance(op)
        np.testing.assert_allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, equal_nan=True
        )


@pytest.mark.parametrize(
    "op_class",
    [op for op in OPS if issubclass(op, LanguageFunction) and op.FUNCTION is not None],
    ids=lambda c: c.name,
)
def test_functions_of_the_language_come_from_the_ops(op_class: type[Operation]) -> None:
    """An op's ``FUNCTION`` is a function of the expression language that builds it."""
    from tdsl.frontend.ir_gen import FUNCTIONS, to_tensordsl

    assert issubclass(op_class, LanguageFunction)
    name = op_class.FUNCTION
    assert name is not None and FUNCTIONS[name].op is op_class
    names = ["a", "b", "c"][: op_class.ARITY]
    required = [  # axis 0, dtype float16
        f"{p.name}={'float16' if p.kind == 'dtype' else 0}" for p in op_class.PARAMS if p.required
    ]
    dtype = "bool" if op_class.bool_inputs_as() == np.bool_ else "f32"
    module = to_tensordsl(
        f"{name}({', '.join([*names, *required])})",
        shapes=dict.fromkeys(names, (4,) if issubclass(op_class, ScanOp) else (4, 4)),
        dtypes=dict.fromkeys(names, "int64" if issubclass(op_class, INT_ONLY) else dtype),
    )
    assert any(type(o) is op_class for o in module.walk())
    language = (Path(__file__).parents[3] / "docs" / "language.md").read_text()
    assert f"`{op_class.signature()}`" in language, "list it in the table of docs/language.md"


def _run_ops(ops: list[Operation], env: dict[SSAValue, np.ndarray[Any, Any]]) -> None:
    """Evaluate ``ops`` in order with each op's NumPy implementation, into ``env``."""
    from tdsl.dialects.structured import constant_value

    for op in ops:
        const = constant_value(op)
        if const is not None:
            env[op.results[0]] = const
            continue
        assert isinstance(op, StructuredOpInterface)
        for r, array in zip(op.results, evaluate(op, [env[v] for v in op.operands]), strict=True):
            env[r] = array


def _through_partials(op: Operation, x: np.ndarray[Any, Any], cuts: int) -> np.ndarray[Any, Any]:
    """``op`` on ``x`` computed as Dask does across chunks: the partial ops on each chunk of
    ``x`` (cut along its first reduced axis), the same ops on the partials concatenated
    there, the finalize ops, and the reduced dims dropped as the op drops them."""
    from xdsl.ir import Block

    assert isinstance(op, StructuredOpInterface) and isinstance(op, PartialOps)
    reduced = [
        axis
        for axis, loop in enumerate(map_dims(op.indexing_maps()[0]))
        if loop is not None and op.iterator_types()[loop] is IteratorType.REDUCTION
    ]

    def partial(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        block = Block(arg_types=[TensorType(element_of(array.dtype), array.shape)])
        ops, value = op.partial_ops(list(block.args))
        env = {block.args[0]: array}
        _run_ops(ops, env)
        return env[value]

    axis = reduced[0]
    chunks = np.array_split(x, cuts, axis=axis)
    acc = partial(np.concatenate([partial(c) for c in chunks], axis=axis))
    block = Block(arg_types=[TensorType(element_of(acc.dtype), acc.shape)])
    count = int(np.prod([x.shape[a] for a in reduced]))
    ops, value = op.finalize_ops(block.args[0], count)
    env = {block.args[0]: acc}
    _run_ops(ops, env)
    return env[value].reshape(tensor_shape(op.results[0]))


@pytest.mark.parametrize(
    ("op_class", "element"),
    [(op, e) for op, e in OP_ELEMENTS if issubclass(op, ReductionOp)],
    ids=[
        i
        for (op, _), i in zip(OP_ELEMENTS, OP_ELEMENT_IDS, strict=True)
        if issubclass(op, ReductionOp)
    ],
)
def test_partial_ops_combine_across_chunks(op_class: type[Operation], element: Attribute) -> None:
    """A reduction's partial ops on chunks, combined by the same ops and finalized, give
    the op's result: the tree reductions of tdsl.dask rely on it.  (A reduction without
    partial ops, ``var``, has its reduced dims taken whole by Dask.)"""
    sample = _samples(op_class)
    assert sample is not None
    rng = np.random.default_rng(5)
    for op in sample(element):
        assert isinstance(op, StructuredOpInterface)
        if not isinstance(op, PartialOps):
            assert isinstance(op, td.VarianceOp)  # the one family without them
            continue
        (x,) = _inputs(op, rng)
        (want,) = evaluate(op, (x,))
        for cuts in (1, 2, 3):
            got = _through_partials(op, x, cuts)
            assert got.dtype == want.dtype and got.shape == want.shape
            tol = _tolerance(op)
            np.testing.assert_allclose(
                got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol
            )


def test_a_float16_mean_accumulates_in_float32_across_chunks() -> None:
    from xdsl.ir import Block

    block = Block(arg_types=[TensorType(F16, (3,))])
    op = td.MeanOp(block.args[0])
    x = np.array([60000, 60000, 1], dtype=np.float16)
    assert _through_partials(op, x, 3) == np.float16(40000)


def test_the_mean_of_nothing_is_nan_through_partials() -> None:
    from xdsl.ir import Block

    block = Block(arg_types=[TensorType(F32, (2, 0))])
    op = td.MeanOp(block.args[0], 1)
    got = _through_partials(op, np.zeros((2, 0), np.float32), 1)
    assert got.dtype == np.float32 and np.isnan(got).all() and got.shape == (2,)
