"""Lowering to tensordsl: functions, arguments, types, promotion, locations, API options."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, TensorType, f16, f32, f64
from xdsl.ir import Attribute, Operation

from tdsl.dialects import tensordsl as td
from tdsl.errors import TdslError, TdslOptionError, TdslTypeError
from tdsl.frontend import Expression, Program, lower, lower_expression_cli, parse, to_tensordsl
from tdsl.frontend.ir_gen import element_type_of, parse_shape_spec
from tdsl.jit import JITTensorKernel

NUMPY_OF = {f16: np.float16, f32: np.float32, f64: np.float64}


def functions(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp)]


def only_function(module: ModuleOp) -> func.FuncOp:
    (function,) = functions(module)
    return function


def body_ops(function: func.FuncOp) -> list[Operation]:
    return list(function.body.block.ops)


def result_type(function: func.FuncOp, index: int = 0) -> TensorType[Attribute]:
    t = function.function_type.outputs.data[index]
    assert isinstance(t, TensorType)
    return t


def test_expression_becomes_main_with_inputs_in_order_of_first_use() -> None:
    module = to_tensordsl(
        "C * relu(A) + C @ B", shapes={"A": (3, 3), "B": (3, 3), "C": (3, 3)}, dtypes="f32"
    )
    main = only_function(module)
    assert main.sym_name.data == "main"
    assert [arg.name_hint for arg in main.args] == ["C", "A", "B"]
    assert [op.name for op in body_ops(main)] == [
        "tensordsl.relu",
        "tensordsl.mul",
        "tensordsl.matmul",
        "tensordsl.add",
        "func.return",
    ]


def test_result_types_are_inferred() -> None:
    module = to_tensordsl(
        "sum(x @ w, axis=0, keepdims=true)", shapes={"x": (5, 3), "w": (3, 7)}, dtypes="float32"
    )
    assert result_type(only_function(module)) == TensorType(f32, [1, 7])


def test_program_gives_one_function_per_kernel_and_ignores_shapes() -> None:
    source = "def a(x: f32[2]):\n    return x, x * x\n\ndef b(y: f16[]):\n    return -y\n"
    module = to_tensordsl(source, shapes={"x": (9,)}, dtypes="f64")
    a, b = functions(module)
    assert (a.sym_name.data, b.sym_name.data) == ("a", "b")
    assert list(a.function_type.inputs.data) == [TensorType(f32, [2])]
    assert len(a.function_type.outputs.data) == 2
    assert result_type(b) == TensorType(f16, [])


def test_accepts_a_parsed_tree() -> None:
    tree = parse("relu(A)")
    assert isinstance(tree, Expression)
    module = lower(tree, shapes={"A": [2]})
    assert result_type(only_function(module)) == TensorType(f64, [2])
    program = parse("def k(x: f32[1]):\n    return x\n")
    assert isinstance(program, Program)
    assert functions(to_tensordsl(program))[0].sym_name.data == "k"


def test_module_verifies() -> None:
    module = to_tensordsl(
        "softmax(A / (1 + exp(-A)), axis=0) - max(A, axis=1, keepdims=True)",
        shapes={"A": (4, 6)},
        dtypes=np.float32,
    )
    module.verify()


@pytest.mark.parametrize(
    ("dtype", "element"),
    [
        ("f16", f16),
        ("f32", f32),
        ("f64", f64),
        ("float16", f16),
        ("float32", f32),
        ("float64", f64),
        ("f4", f32),
        (np.float32, f32),
        (np.float16, f16),
        (np.dtype("float64"), f64),
        (np.dtypes.Float32DType, f32),
        (np.dtypes.Float16DType(), f16),
    ],
)
def test_dtype_spellings(dtype: Any, element: Attribute) -> None:
    assert element_type_of(dtype) == element
    module = to_tensordsl("A", shapes={"A": (2,)}, dtypes=dtype)
    assert result_type(only_function(module)) == TensorType(element, [2])


def test_the_python_type_float_declares_a_weak_scalar_not_a_float64_tensor() -> None:
    assert element_type_of(float) == f64  # as np.dtype(float)
    with pytest.raises(TdslTypeError, match=r"must be 0-d.*write `np.float64` or `\"f64\"`"):
        to_tensordsl("A", shapes={"A": (2,)}, dtypes=float)


@pytest.mark.parametrize("dtype", ["int8", np.uint16, "u4", "float128", "bogus", 3, np.complex64])
def test_unsupported_dtypes(dtype: Any) -> None:
    with pytest.raises(TdslTypeError, match="unsupported dtype"):
        element_type_of(dtype)
    with pytest.raises(TdslTypeError, match="input `A`: unsupported dtype"):
        to_tensordsl("A", shapes={"A": (2,)}, dtypes=dtype)


def test_dtypes_default_to_float64_and_may_be_given_per_name() -> None:
    module = to_tensordsl("A + B", shapes={"A": (2,), "B": (2,)})
    assert result_type(only_function(module)) == TensorType(f64, [2])
    module = to_tensordsl(
        "A + B", shapes={"A": (2,), "B": (2,)}, dtypes={"A": "f16", "B": np.float32}
    )
    main = only_function(module)
    assert [arg.type for arg in main.args] == [TensorType(f16, [2]), TensorType(f32, [2])]
    module = to_tensordsl("A + B", shapes={"A": (2,), "B": (2,)}, dtypes={"A": "f16"})
    assert only_function(module).args[1].type == TensorType(f64, [2])


def test_shapes_accept_lists_and_numpy_integers() -> None:
    module = to_tensordsl("A", shapes={"A": [np.int64(3), 0]})
    assert result_type(only_function(module)) == TensorType(f64, [3, 0])


DTYPES = [np.float16, np.float32, np.float64]


@pytest.mark.parametrize("left", DTYPES)
@pytest.mark.parametrize("right", DTYPES)
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "@"])
def test_array_promotion_matches_numpy(left: Any, right: Any, op: str) -> None:
    module = to_tensordsl(
        f"A {op} B", shapes={"A": (2, 2), "B": (2, 2)}, dtypes={"A": left, "B": right}
    )
    element = result_type(only_function(module)).get_element_type()
    assert NUMPY_OF[element] == np.result_type(left, right)
    casts = [op for op in body_ops(only_function(module)) if isinstance(op, td.CastOp)]
    assert len(casts) == (0 if left == right else 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("expr", "reference"),
    [
        ("2.5 * A", lambda a: 2.5 * a),  # type: ignore[no-any-return]
        ("A / 3", lambda a: a / 3),  # type: ignore[no-any-return]
        ("maximum(A, 0)", lambda a: np.maximum(a, 0)),  # type: ignore[no-any-return]
        ("A - (1 / 4)", lambda a: a - (1 / 4)),  # type: ignore[no-any-return]
        ("exp(2) * A", lambda a: np.exp(2.0) * a),  # type: ignore[no-any-return]
        ("sum(A) + 1", lambda a: np.sum(a) + 1),  # type: ignore[no-any-return]
    ],
)
def test_literal_promotion_matches_numpy(dtype: Any, expr: str, reference: Any) -> None:
    module = to_tensordsl(expr, shapes={"A": (2,)}, dtypes=dtype)
    element = result_type(only_function(module)).get_element_type()
    expected = np.asarray(reference(np.ones(2, dtype=dtype))).dtype
    assert NUMPY_OF[element] == expected


def test_literal_becomes_a_0d_constant_of_the_other_operand_dtype() -> None:
    module = to_tensordsl("A * 2.5", shapes={"A": (3,)}, dtypes="f16")
    const = body_ops(only_function(module))[0]
    assert isinstance(const, td.ConstantOp)
    assert const.result.type == TensorType(f16, [])
    assert float(const.as_numpy()) == 2.5


def test_a_literal_is_one_constant_per_value_and_type_in_a_function() -> None:
    # 0.5 twice in f32 is one constant; 0.0 and -0.0 stay two (their bits differ), and
    # 0.5 read as f64 (by B) is a constant of its own
    module = to_tensordsl(
        "A * 0.5 + A * 0.5 + (A * 0.0 + A * -0.0) + B * 0.5",
        shapes={"A": (3,), "B": (3,)},
        dtypes={"A": "f32", "B": "f64"},
    )
    consts = [op for op in body_ops(only_function(module)) if isinstance(op, td.ConstantOp)]
    shown = sorted((str(c.result.type), np.asarray(c.as_numpy()).tobytes()) for c in consts)
    assert shown == sorted(
        (t, np.asarray(v, dtype=d).tobytes())
        for t, v, d in [
            ("tensor<f32>", 0.5, np.float32),
            ("tensor<f32>", 0.0, np.float32),
            ("tensor<f32>", -0.0, np.float32),
            ("tensor<f64>", 0.5, np.float64),
        ]
    )
    muls = [op for op in body_ops(only_function(module)) if isinstance(op, td.MulOp)]
    assert muls[0].operands[1] is muls[1].operands[1]


def test_literal_arithmetic_is_folded_in_double_precision() -> None:
    # Python computes 300 * 300 / 1000 = 90.0 before NumPy sees it; in float16
    # the intermediate 90000 would overflow to inf.
    module = to_tensordsl("A * (300 * 300 / 1000)", shapes={"A": (1,)}, dtypes="f16")
    consts = [op for op in body_ops(only_function(module)) if isinstance(op, td.ConstantOp)]
    assert len(consts) == 1
    assert float(consts[0].as_numpy()) == 90.0


def test_lone_literal_is_float64_and_division_by_zero_is_inf() -> None:
    module = to_tensordsl("1 / 0")
    (const, _) = body_ops(only_function(module))
    assert isinstance(const, td.ConstantOp)
    assert const.result.type == TensorType(f64, [])
    assert np.isposinf(const.as_numpy())


@pytest.mark.parametrize(
    ("expr", "dtype"),
    [
        ("A + 2**63", "f64"),  # int64 arithmetic would wrap it to -2**63
        ("A * 10**20", "f64"),
        ("A + (1 << 70)", "f64"),
        ("A * 2**100", "f64"),
        ("A - (-(2**63))", "f64"),
        ("A + 3**40 - (9223372036854775807 + 1)", "f64"),
        ("A + 2**63", "u64"),  # 9223372036854775808 fits uint64
        ("A + -2**63", "i64"),
        ("A + (-7) // 2 * ((-7) % 2) + (5 ^ 3) + (-16 >> 2)", "i64"),
    ],
)
def test_integer_literal_arithmetic_is_exact_as_pythons(expr: str, dtype: str) -> None:
    # NumPy meets the result as a Python int, which Python computed exactly
    a = np.array([1, 2], dtype=np.dtype({"f64": "float64", "u64": "uint64", "i64": "int64"}[dtype]))
    kernel = JITTensorKernel(target="numpy").compile(expr, {"A": (2,)}, dtype)
    got, want = kernel(A=a), eval(expr, {"A": a})
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize(
    ("expr", "dtype", "message"),
    [
        ("A + 2**62 * 2", "i64", "9223372036854775808 is out of bounds for int64"),
        ("A * 10**400", "f64", "an integer of 401 digits is too large to convert to float64"),
        ("A * (10**400 * 1.5)", "f64", "`*` of these literals gives a number too large"),
        ("A + 2**100000", "f64", "2 ** 100000 has more than 4096 bits"),
        ("A ** 2**70", "i64", "1180591620717411303424 is out of bounds for int64"),
        ("A ** 300", "u8", "300 is out of bounds for uint8"),
        # NumPy's shifts and xor refuse floats (a raw TypeError of the fold)
        ("A + (3.25 >> 5)", "f64", "`>>` takes integers, as in NumPy, not a float: `3.25 >> 5`"),
        ("A + (2.5 ^ 1)", "f64", "`^` takes integers, as in NumPy, not a float"),
    ],
)
def test_integer_literals_numpy_refuses_are_located_errors(
    expr: str, dtype: str, message: str
) -> None:
    with pytest.raises(TdslTypeError, match=re.escape(message)) as caught:
        to_tensordsl(expr, shapes={"A": (2,)}, dtypes=dtype)
    assert "<expr>:1:" in str(caught.value)


def test_overflowing_literal_in_float16_is_inf() -> None:
    module = to_tensordsl("A + 1e10", shapes={"A": (1,)}, dtypes="f16")
    const = body_ops(only_function(module))[0]
    assert isinstance(const, td.ConstantOp)
    assert np.isposinf(const.as_numpy())


def test_bound_name_is_one_ssa_value() -> None:
    module = to_tensordsl("def k(x: f32[4]):\n    h = exp(x)\n    return h * h + h\n")
    ops = body_ops(only_function(module))
    exps = [op for op in ops if isinstance(op, td.ExpOp)]
    assert len(exps) == 1
    assert exps[0].result.name_hint == "h"
    assert len(list(exps[0].result.uses)) == 3


def test_binding_names_that_xdsl_cannot_print_are_not_hints() -> None:
    module = to_tensordsl("def k(x: f32[4]):\n    _1 = exp(x)\n    return _1\n")
    (exp, _) = body_ops(only_function(module))
    assert exp.results[0].name_hint is None


def test_every_op_has_a_source_location() -> None:
    source = "def k(x: f16[4], y: f32[4]):\n    h = relu(x) * 2\n    return h + y\n"
    module = to_tensordsl(source, filename="k.tdsl")
    function = only_function(module)
    located = [function, *body_ops(function)]
    where = []
    for op in located:
        assert isinstance(op.location, FileLineColLoc), op.name
        assert op.location.filename.data == "k.tdsl"
        where.append((op.name, op.location.line.data, op.location.column.data))
    assert where == [
        ("func.func", 1, 1),
        ("tensordsl.relu", 2, 9),
        ("tensordsl.constant", 2, 19),
        ("tensordsl.mul", 2, 17),
        ("tensordsl.cast", 3, 12),
        ("tensordsl.add", 3, 14),
        ("func.return", 3, 5),
    ]
    arg_locations = [arg.location for arg in function.args]
    assert all(isinstance(loc, FileLineColLoc) for loc in arg_locations)


def test_expression_locations_use_expr_filename() -> None:
    module = to_tensordsl("A + relu(A)", shapes={"A": (2,)})
    for op in body_ops(only_function(module)):
        assert isinstance(op.location, FileLineColLoc)
        assert op.location.filename.data == "<expr>"


def test_deep_left_chain_lowers_without_recursion_error() -> None:
    module = to_tensordsl(" + ".join(["A"] * 1500), shapes={"A": (2,)})
    assert len(body_ops(only_function(module))) == 1500


def test_deep_nesting_lowers() -> None:
    text = "relu(" * 200 + "A" + ")" * 200
    module = to_tensordsl(text, shapes={"A": (2,)})
    assert len(body_ops(only_function(module))) == 201


def test_unknown_name_in_expression_context_is_reported_before_missing_shapes() -> None:
    # Call checks (name, arity) come first: they do not depend on the shapes.
    with pytest.raises(TdslError, match="takes 1 positional argument"):
        to_tensordsl("max(A, B)", shapes={"A": (2,)})


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("A=4x4xf32", ("A", (4, 4), f32)),
        ("b_1=f16", ("b_1", (), f16)),
        ("C=3", ("C", (3,), f64)),
        ("D=0x2xfloat64", ("D", (0, 2), f64)),
        (" E = 2xf32 ", ("E", (2,), f32)),
    ],
)
def test_shape_specs(spec: str, expected: tuple[str, tuple[int, ...], Attribute]) -> None:
    assert parse_shape_spec(spec) == expected


@pytest.mark.parametrize(
    "spec",
    ["A", "A=", "=4xf32", "A=4xxf32", "A=4x-1xf32", "A=4xq32", "1A=4", "A=4x4xf32x2", "A=4 4"],
)
def test_bad_shape_specs(spec: str) -> None:
    with pytest.raises(TdslOptionError, match="invalid shape spec"):
        parse_shape_spec(spec)


def test_lower_expression_cli() -> None:
    module = lower_expression_cli("relu(A) + B", ["A=4x4xf32", "B=4xf16"])
    main = only_function(module)
    assert [arg.type for arg in main.args] == [TensorType(f32, [4, 4]), TensorType(f16, [4])]
    assert result_type(main) == TensorType(f32, [4, 4])
    with pytest.raises(TdslOptionError, match="more than one shape"):
        lower_expression_cli("A", ["A=4", "A=5"])
    with pytest.raises(TdslError, match="no shape given for input `B`"):
        lower_expression_cli("A + B", ["A=4"])


@pytest.mark.parametrize(("code", "name"), [("i8", "int64"), ("i4", "int32")])
def test_numpys_integer_codes_by_bytes_are_refused_as_ambiguous(code: str, name: str) -> None:
    """``i8`` is int64 to NumPy and an 8-bit integer to MLIR (tdsl's ``u8`` is uint8): it
    was taken as int64 without a word."""
    with pytest.raises(TdslTypeError, match=rf"`{code}` is ambiguous: NumPy's code for {name}"):
        element_type_of(code)
    with pytest.raises(TdslTypeError, match="ambiguous"):
        to_tensordsl("A", shapes={"A": (2,)}, dtypes=code)
    assert element_type_of(np.dtype(code)) == element_type_of(name)  # a NumPy dtype is one
