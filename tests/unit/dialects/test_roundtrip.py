"""Print/parse round trips of every tensordsl and kernel op, custom and generic.

For a module built from Python: custom print -> parse -> print is a fixed
point, generic print -> parse -> custom print gives the same text, and the
parsed modules are structurally equal to the built one.  A hypothesis test
checks the same on random shapes, element types, axes and ops.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from io import StringIO
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.builder import ImplicitBuilder
from xdsl.context import Context
from xdsl.dialects.builtin import (
    Builtin,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.func import Func, FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.parser import Parser
from xdsl.printer import Printer

from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import FusedOp, Kernel, TileOp, YieldOp, dim_map

F16, F32, F64 = Float16Type(), Float32Type(), Float64Type()
I64 = IntegerType(64)
Body = Callable[..., Any]


def context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, td.TensorDSL, Kernel):
        ctx.load_dialect(dialect)
    return ctx


CTX = context()


def values_of(built: Any) -> list[SSAValue]:
    if isinstance(built, Operation):
        return list(built.results)
    return [SSAValue.get(v) for v in built] if isinstance(built, Sequence) else [built]


def module_of(arg_types: Sequence[Attribute], body: Body) -> ModuleOp:
    """``module { func.func @main(args) { return body(args) } }``, verified."""
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block):
        results = values_of(body(*block.args))
        ReturnOp(*results)
    main = FuncOp("main", (list(arg_types), [r.type for r in results]), Region(block))
    module = ModuleOp([main])
    module.verify()
    return module


def printed(op: Operation, generic: bool = False) -> str:
    stream = StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(op)
    return stream.getvalue()


def parsed(text: str) -> ModuleOp:
    module = Parser(CTX, text, "roundtrip.mlir").parse_module()
    module.verify()
    return module


def assert_roundtrip(module: ModuleOp) -> str:
    """Check every round trip of ``module``; return its custom text."""
    custom = printed(module)
    generic = printed(module, generic=True)
    again = parsed(custom)
    assert printed(again) == custom
    assert again.is_structurally_equivalent(module)
    from_generic = parsed(generic)
    assert printed(from_generic) == custom
    assert printed(from_generic, generic=True) == generic
    assert from_generic.is_structurally_equivalent(module)
    return custom


def t(*shape: int, element: Attribute = F32) -> TensorType[Attribute]:
    return TensorType(element, shape)


def const(data: Any, element: Attribute) -> td.ConstantOp:
    return td.ConstantOp(td.dense_from_numpy(np.asarray(data), element))


CASES: list[tuple[str, Sequence[Attribute], Body, str]] = [
    (
        "constant",
        [],
        lambda: (
            const([[1.0, -2.5]], F16),
            td.ConstantOp.splat(0.0, F32, (4, 8)),
            const(3.0, F64),
            const(np.zeros((0, 2)), F32),
        ),
        "tensordsl.constant dense<[[1.000000e+00, -2.500000e+00]]> : tensor<1x2xf16>",
    ),
    *[(c.name, [t(4, 8, element=F16)], c, f"{c.name} %0 : tensor<4x8xf16>") for c in td.UNARY_OPS],
    *[
        (
            c.name,
            [t(4, 8), t(8)],
            c,
            f"{c.name} %0, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>",
        )
        for c in td.BINARY_OPS
    ],
    *[
        (
            c.name,
            [t(4, 8, element=I64), t(8, element=I64)],
            c,
            f"{c.name} %0, %1 : (tensor<4x8xi64>, tensor<8xi64>) -> tensor<4x8xi64>",
        )
        for c in td.INTEGER_ONLY
        if issubclass(c, td.BinaryOp)
    ],
    ("invert", [t(4, element=I64)], td.InvertOp, "tensordsl.invert %0 : tensor<4xi64>"),
    (
        "matmul",
        [t(2, 8, 16, element=F64), t(16, 4, element=F64), t(16, element=F64)],
        lambda a, b, v: (td.MatmulOp(a, b), td.MatmulOp(v, b), td.MatmulOp(v, v)),
        "tensordsl.matmul %2, %2 : (tensor<16xf64>, tensor<16xf64>) -> tensor<f64>",
    ),
    (
        "transpose",
        [t(2, 3, 4), t()],
        lambda a, s: (td.TransposeOp(a), td.TransposeOp(s)),
        "tensordsl.transpose %0 : tensor<2x3x4xf32> -> tensor<4x3x2xf32>",
    ),
    (
        "softmax",
        [t(4, 8)],
        lambda a: (td.SoftmaxOp(a), td.SoftmaxOp(a, 0), td.SoftmaxOp(a, -2)),
        "tensordsl.softmax %0 axis = -2 : tensor<4x8xf32>",
    ),
    *[
        (
            c.name,
            [t(4, d, 8)],
            lambda a, c=c: (c(a), c(a, 1), c(a, -1, True), c(a, None, True)),
            f"{c.name} %0 axis = -1 keepdims : tensor<4x{d}x8xf32> -> tensor<4x{d}x1xf32>",
        )
        for c in td.REDUCTION_OPS
        # max reduces nothing only in error; the others take a zero-size dim
        for d in [3 if c.NEEDS_ELEMENTS else 0]
    ],
    *[
        (
            c.name,
            [t(4, 8), t(5), t(), t(4, 0, element=F16)],
            lambda a, v, s, z, c=c: (c(a, 1), c(a, -2), c(v), c(s), c(z, -1)),
            f"{c.name} %0 axis = -2 : tensor<4x8xf32> -> tensor<4x8xf32>",
        )
        for c in td.SCAN_OPS
    ],
    (
        "cast",
        [t(4, 8)],
        lambda a: (td.CastOp(a, F16), td.CastOp(a, F64)),
        "tensordsl.cast %0 : tensor<4x8xf32> -> tensor<4x8xf16>",
    ),
    (
        "slice",
        [t(4, 8)],
        lambda a: (
            td.SliceOp.of(a, [slice(1, None), slice(None, None, -3)]),
            td.SliceOp.of(a, [slice(3, 1), slice(None)]),
        ),
        "tensordsl.slice %0 offsets [1, 7] strides [1, -3] : tensor<4x8xf32> -> tensor<3x3xf32>",
    ),
    (
        "reshape",
        [t(4, 8, element=F16)],
        lambda a: (td.ReshapeOp(a, (2, -1)), td.ReshapeOp(a, (32,))),
        "tensordsl.reshape %0 : tensor<4x8xf16> -> tensor<2x16xf16>",
    ),
    (
        "concatenate",
        [t(4, 3), t(4, 5)],
        lambda a, b: td.ConcatenateOp([a, b, a], 1),
        "tensordsl.concatenate %0, %1, %0 axis 1 : (tensor<4x3xf32>, tensor<4x5xf32>, "
        "tensor<4x3xf32>) -> tensor<4x11xf32>",
    ),
    (
        "take",
        [t(10, 4), TensorType(IntegerType(64), [2, 3]), TensorType(IntegerType(32), [5])],
        lambda w, i, j: (td.TakeOp(w, i, 0), td.TakeOp(w, j, -1)),
        "tensordsl.take %0, %1 axis 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>",
    ),
]


@pytest.mark.parametrize(
    "arg_types,body,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_tensordsl_roundtrip(arg_types: Sequence[Attribute], body: Body, expected: str) -> None:
    custom = assert_roundtrip(module_of(arg_types, body))
    assert expected in custom


def fused(inputs: Sequence[SSAValue], body: Body, **kwargs: Any) -> FusedOp:
    block = Block(arg_types=[v.type for v in inputs])
    with ImplicitBuilder(block):
        outs = values_of(body(*block.args))
        YieldOp(*outs)
    return FusedOp(inputs, [o.type for o in outs], Region(block), **kwargs)


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        (
            {},
            "kernel.fused(%0, %1) : (tensor<6x4xf32>, tensor<4xf32>) "
            "-> (tensor<6x4xf32>, tensor<6xf32>) {",
        ),
        ({"group": "g0"}, 'kernel.fused(%0, %1) group "g0" :'),
        ({"group": "g1", "budget": 4096}, 'kernel.fused(%0, %1) group "g1" budget 4096 :'),
    ],
)
def test_fused_roundtrip(kwargs: dict[str, Any], expected: str) -> None:
    def body(x: SSAValue, b: SSAValue) -> Any:
        return fused([x, b], lambda y, c: (s := td.AddOp(y, c), td.SumOp(s, 1)), **kwargs)

    custom = assert_roundtrip(module_of([t(6, 4), t(4)], body))
    assert expected in custom
    assert "kernel.yield %6, %7 : tensor<6x4xf32>, tensor<6xf32>" in custom


def test_fused_without_operands_or_results_roundtrip() -> None:
    def body() -> Any:
        fused([], lambda: ())
        return fused([], lambda: td.ConstantOp.splat(1.0, F64))

    custom = assert_roundtrip(module_of([], body))
    assert "kernel.fused() : () -> () {\n      kernel.yield\n    }" in custom


@pytest.mark.parametrize("group", [None, "g7"])
def test_tile_roundtrip(group: str | None) -> None:
    def body(x: SSAValue, w: SSAValue, b: SSAValue) -> Any:
        block = Block(arg_types=[t(4, 6), t(6, 5), t(5)])
        with ImplicitBuilder(block) as (x1, w1, b1):
            YieldOp(td.ReluOp(td.AddOp(td.MatmulOp(x1, w1), b1)))
        return TileOp.planned(
            [x, w, b],
            [t(10, 5)],
            Region(block),
            space=[10, 5, 6],
            tiles=[4, 5, 6],
            in_maps=[dim_map(3, [0, 2]), dim_map(3, [2, 1]), dim_map(3, [1])],
            out_maps=[dim_map(3, [0, 1])],
            group=group,
        )

    custom = assert_roundtrip(module_of([t(10, 6), t(6, 5), t(5)], body))
    head = "kernel.tile(%0, %1, %2) " + ("" if group is None else f'group "{group}" ')
    assert (
        head + 'space [10, 5, 6] iterators ["parallel", "parallel", "reduction"] tiles [4, 5, 6] '
        "scratch []"
    ) in custom
    assert (
        "ins [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>" in custom
    )


# -- property: random ops on random shapes ---------------------------------------------

ELEMENTS = st.sampled_from([F16, F32, F64])
SHAPES = st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple)


@st.composite
def broadcast_partner(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: a suffix with some dims set to 1."""
    suffix = shape[draw(st.integers(0, len(shape))) :]
    ones = draw(st.lists(st.booleans(), min_size=len(suffix), max_size=len(suffix)))
    partner = tuple(1 if one else d for d, one in zip(suffix, ones, strict=True))
    extra = draw(st.lists(st.integers(1, 3), max_size=1))
    return (*extra, *partner) if len(partner) == len(shape) else partner


@st.composite
def random_case(draw: st.DrawFn) -> tuple[list[Attribute], Body]:
    element = draw(ELEMENTS)
    shape: tuple[int, ...] = draw(SHAPES)
    kind = draw(
        st.sampled_from(
            ["unary", "binary", "matmul", "transpose", "softmax", "reduce", "cast", "const"]
        )
    )
    x = TensorType(element, shape)
    if kind == "unary":
        op_class = draw(st.sampled_from(td.UNARY_OPS))
        return [x], op_class
    if kind == "binary":
        op_class = draw(st.sampled_from(td.BINARY_OPS))
        other = TensorType(element, draw(broadcast_partner(shape)))
        pair = [x, other] if draw(st.booleans()) else [other, x]
        return pair, op_class
    if kind == "matmul":
        m, k, n = draw(st.integers(0, 4)), draw(st.integers(0, 4)), draw(st.integers(0, 4))
        batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
        lhs = draw(st.sampled_from([(k,), (*batch, m, k)]))
        rhs = draw(st.sampled_from([(k,), (k, n)]))
        return [TensorType(element, lhs), TensorType(element, rhs)], td.MatmulOp
    if kind == "transpose":
        return [x], td.TransposeOp
    if kind == "softmax" and shape:
        axis = draw(st.integers(-len(shape), len(shape) - 1))
        return [x], lambda a: td.SoftmaxOp(a, axis)
    if kind == "reduce":
        op_class = draw(st.sampled_from(td.REDUCTION_OPS))
        axis = draw(st.none() | st.integers(-len(shape), len(shape) - 1)) if shape else None
        keepdims = draw(st.booleans())
        reduced = math.prod(shape) if axis is None else shape[axis]
        if op_class.NEEDS_ELEMENTS and reduced == 0:
            op_class = td.SumOp  # an empty max is invalid IR (tested in test_tensordsl_verify)
        return [x], lambda a: op_class(a, axis, keepdims)
    if kind == "cast":
        target = draw(ELEMENTS)
        return [x], lambda a: td.CastOp(a, target)
    width = {F16: 16, F32: 32, F64: 64}[element]
    size = int(np.prod(shape))
    # Bounded and without -0.0: see the xfail tests at the end for the values
    # that do not round-trip through text in xDSL 0.75.
    bound = 65504.0 if width == 16 else 1e6
    finite = st.floats(-bound, bound, width=width)
    data = draw(st.lists(finite.map(lambda x: x + 0.0), min_size=size, max_size=size))  # no -0.0
    array = np.array(data, dtype=td.numpy_dtype(element)).reshape(shape)
    return [], lambda: td.ConstantOp(td.dense_from_numpy(array, element))


@settings(max_examples=60, deadline=None)
@given(random_case())
def test_roundtrip_property(case: tuple[list[Attribute], Body]) -> None:
    arg_types, body = case
    assert_roundtrip(module_of(arg_types, body))


# xDSL 0.75 prints nan, inf and integral floats of more than 6 digits as bare
# hex elements (dense<[0x4132D68700000000]>) that parse back as integer bit
# patterns, and prints [0.0, -0.0] as a splat.  tensordsl.constant's custom
# form falls back to the hex-string form dense<"0x..."> for such values, so the
# custom round trip is exact; the generic form is xDSL's property printer and
# still loses them (strict xfail: remove it once xDSL is fixed).

HARD_VALUES = [
    np.array([1234567.0]),
    np.array([np.inf, -np.inf]),
    np.array([np.nan]),
    np.array([0.0, -0.0]),
]


def _hard_constant(array: np.ndarray, element: Attribute) -> ModuleOp:
    data = array.astype(td.numpy_dtype(element))
    return module_of([], lambda: td.ConstantOp(td.dense_from_numpy(data, element)))


@pytest.mark.parametrize("array", HARD_VALUES, ids=str)
@pytest.mark.parametrize("element", [F32, F64], ids=str)
def test_constant_custom_form_is_bit_exact(array: np.ndarray, element: Attribute) -> None:
    module = _hard_constant(array, element)
    custom = printed(module)
    assert 'dense<"0x' in custom
    again = parsed(custom)
    assert printed(again) == custom
    (op,) = [o for o in again.walk() if isinstance(o, td.ConstantOp)]
    expected = array.astype(td.numpy_dtype(element))
    assert op.as_numpy().tobytes() == expected.tobytes()


@pytest.mark.xfail(
    strict=True,
    reason="xDSL 0.75's generic printer writes these floats as bare hex or a splat",
)
@pytest.mark.parametrize("array", HARD_VALUES, ids=str)
def test_constant_generic_form_loses_hard_values(array: np.ndarray) -> None:
    module = _hard_constant(array, F64)
    from_generic = parsed(printed(module, generic=True))
    (op,) = [o for o in from_generic.walk() if isinstance(o, td.ConstantOp)]
    assert op.as_numpy().tobytes() == array.tobytes()


@pytest.mark.parametrize("value", ["-inf", "nan", "-0.0", "1234567.0", "0.5"])
def test_a_splat_stored_once_prints_back_the_same(value: str) -> None:
    """``full((2,), -inf)`` stores its value once: its hex form was that one element's,
    which reads back as two elements stored, then printed with both: the text changed
    on the second round trip (found by fuzzing the round trips)."""
    from tdsl.frontend import to_tensordsl

    module = to_tensordsl(f"full((2,), {value}, dtype='f32')", shapes={})
    first = printed(module)
    second = printed(parsed(first))
    assert printed(parsed(second)) == second == first
    (op,) = [o for o in parsed(second).walk() if isinstance(o, td.ConstantOp)]
    want = np.full(2, float(value), np.float32)
    assert op.as_numpy().tobytes() == want.tobytes()


def test_names_that_look_like_suffixed_ones_print_unique() -> None:
    """Arguments ``x, x_1, x_1_1`` printed as ``%x, %x_1, %x_1`` (xDSL's parser reads
    ``%x_1`` as hint ``x``, and its printer then suffixes without looking), which did
    not parse, and the return named the wrong argument (found by fuzzing the round
    trips)."""
    from tdsl.frontend import to_tensordsl
    from tdsl.ir_text import UniqueNamesPrinter

    module: Operation = to_tensordsl(
        "def main(x: f32[2], x_1: f32[2], x_1_1: f32[2]):\n    return x_1_1\n"
    )
    for _ in range(3):
        stream = StringIO()
        UniqueNamesPrinter(stream=stream).print_op(module)
        again = stream.getvalue()
        assert "%x: tensor<2xf32>, %x_1: tensor<2xf32>, %x_1_1: tensor<2xf32>" in again
        assert "func.return %x_1_1" in again
        module = parsed(again)


def test_a_non_ascii_file_name_in_a_location_prints_back() -> None:
    """``loc("e_\\C3\\A9.tdsl":1:10)``, xDSL's escaped bytes, did not parse ("Unexpected
    location syntax"; found by fuzzing the round trips): written as it is, it does."""
    from tdsl.frontend import to_tensordsl
    from tdsl.ir_text import UniqueNamesPrinter

    module: Operation = to_tensordsl(
        "def main(x: f32[4]):\n    return relu(x)\n", filename="e_é.tdsl"
    )
    texts = []
    for _ in range(2):
        stream = StringIO()
        UniqueNamesPrinter(stream=stream, print_debuginfo=True).print_op(module)
        texts.append(stream.getvalue())
        module = parsed(texts[-1])
    assert 'loc("e_é.tdsl":2:12)' in texts[0]
    assert texts[0] == texts[1]
