"""Weak scalar inputs (``dtypes={"s": float}``): typed like literals, as NumPy types Python floats."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f16, f32, f64
from xdsl.ir import Attribute

from tdsl.dialects import tensordsl as td
from tdsl.errors import TdslTypeError
from tdsl.frontend import to_tensordsl

NUMPY_OF = {f16: np.float16, f32: np.float32, f64: np.float64}
DTYPES = [np.float16, np.float32, np.float64]


def main(module: ModuleOp) -> func.FuncOp:
    (function,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    return function


def result_dtype(module: ModuleOp) -> Any:
    t = main(module).function_type.outputs.data[0]
    assert isinstance(t, TensorType)
    return NUMPY_OF[t.get_element_type()]


def casts(module: ModuleOp) -> list[tuple[Attribute, Attribute]]:
    return [
        (td.element_type(op.operands[0]), td.element_type(op.results[0]))
        for op in main(module).walk()
        if isinstance(op, td.CastOp)
    ]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("expr", "reference"),
    [
        ("A * s", lambda a, s, t: a * s),
        ("s - A", lambda a, s, t: s - a),
        ("A / (s + 1)", lambda a, s, t: a / (s + 1)),
        ("A * (s * t)", lambda a, s, t: a * (s * t)),
        ("-s * A", lambda a, s, t: -s * a),
        ("maximum(A, s)", lambda a, s, t: np.maximum(a, s)),
        ("exp(s) * A", lambda a, s, t: np.exp(s) * a),
        ("s * t", lambda a, s, t: np.asarray(s * t)),
        ("s", lambda a, s, t: np.asarray(s)),
        ("maximum(s, t)", lambda a, s, t: np.maximum(s, t)),
        # `abs` of a Python number is Python's, a Python number (np.abs's is a float64)
        ("A * abs(s)", lambda a, s, t: a * abs(s)),
        ("A * abs(-2.5)", lambda a, s, t: a * abs(-2.5)),
        ("A * abs(s - t * 2)", lambda a, s, t: a * abs(s - t * 2)),
        ("abs(A) * abs(-s)", lambda a, s, t: np.abs(a) * abs(-s)),
        ("abs(s)", lambda a, s, t: np.asarray(abs(s))),
    ],
)
def test_weak_inputs_promote_as_numpy_promotes_python_floats(
    dtype: Any, expr: str, reference: Any
) -> None:
    module = to_tensordsl(expr, {"A": (2,)}, {"A": dtype, "s": float, "t": float})
    expected = np.asarray(reference(np.ones(2, dtype), 2.0, 3.0)).dtype
    assert result_dtype(module) == expected


def test_a_weak_input_is_a_0d_f64_argument_cast_once_per_element_type() -> None:
    module = to_tensordsl(
        "A * s + B * s + A / s", {"A": (3,), "B": (3,)}, {"A": "f32", "B": "f16", "s": float}
    )
    fn = main(module)
    assert fn.function_type.inputs.data[1] == TensorType(f64, [])
    assert sorted(casts(module), key=str) == sorted([(f64, f32), (f64, f16), (f16, f32)], key=str)


def test_arithmetic_between_weak_values_stays_in_float64() -> None:
    # (s + t) is computed in float64, as Python adds floats, then cast once
    module = to_tensordsl("A * (s + t * 2)", {"A": (3,)}, {"A": "f16", "s": float, "t": float})
    assert casts(module) == [(f64, f16)]
    inner = [op for op in main(module).walk() if isinstance(op, td.AddOp | td.MulOp)]
    assert [td.element_type(op.results[0]) for op in inner] == [f64, f64, f16]


def test_every_input_weak_and_shapes_left_out() -> None:
    module = to_tensordsl("s * t - 1", dtypes=float)
    assert main(module).function_type.inputs.data == (TensorType(f64, []),) * 2
    assert result_dtype(module) == np.float64


def test_a_weak_input_must_be_0d() -> None:
    with pytest.raises(
        TdslTypeError, match=r"input `s` is declared a weak scalar.*must be 0-d"
    ) as err:
        to_tensordsl("A * s", {"A": (3,), "s": (3,)}, {"s": float})
    assert err.value.location is not None and err.value.location.column == 5
