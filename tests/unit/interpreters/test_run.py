"""run_function, make_interpreter, func ops and attribute arguments."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, Float32Type, ModuleOp, TensorType
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.utils.exceptions import InterpretationError

from tdsl.dialects.kernel import Kernel
from tdsl.dialects.tensordsl import TensorDSL
from tdsl.errors import TdslCallError
from tdsl.interpreters.run import attr_to_numpy, make_interpreter, run_function

Array = np.ndarray[Any, Any]


def parse(text: str) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL, Kernel):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text, "test.mlir").parse_module()
    module.verify()
    return module


CALLS = parse(
    """
func.func @affine(%x: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<3xf32> {
  %0 = tensordsl.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = tensordsl.relu %0 : tensor<3xf32>
  func.return %1 : tensor<3xf32>
}
func.func @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = func.call @affine(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = func.call @affine(%0, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0, %1 : tensor<3xf32>, tensor<3xf32>
}
func.func @identity(%a: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %t = tensordsl.transpose %a : tensor<3xf32> -> tensor<3xf32>
  func.return %a, %t : tensor<3xf32>, tensor<3xf32>
}
func.func private @external(tensor<3xf32>) -> tensor<3xf32>
func.func @calls_external(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = func.call @external(%a) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
"""
)

A = np.array([1.0, -2.0, 3.0], np.float32)
B = np.array([2.0, 2.0, -1.0], np.float32)


def test_func_call() -> None:
    (direct,) = run_function(CALLS, "affine", A, B)
    np.testing.assert_array_equal(direct, np.maximum(A * B, 0))
    r0, r1 = run_function(CALLS, "main", A, B)
    np.testing.assert_array_equal(r0, np.maximum(A * B, 0))
    np.testing.assert_array_equal(r1, np.maximum(np.maximum(A * B, 0) * B, 0))
    assert r0.dtype == np.float32 and r1.dtype == np.float32


def test_results_never_alias_arguments() -> None:
    a = A.copy()
    same, transposed = run_function(CALLS, "identity", a)
    np.testing.assert_array_equal(same, A)
    np.testing.assert_array_equal(transposed, A)
    same[0] = 100.0
    transposed[1] = 100.0
    np.testing.assert_array_equal(a, A)
    assert not np.shares_memory(same, transposed)


def test_make_interpreter_runs_any_function() -> None:
    interpreter = make_interpreter(CALLS)
    (result,) = interpreter.call_op("affine", (A, B))
    np.testing.assert_array_equal(result, np.maximum(A * B, 0))


def test_external_function_without_implementation() -> None:
    with pytest.raises(InterpretationError, match="external"):
        run_function(CALLS, "calls_external", A)


def test_wrong_argument_count() -> None:
    with pytest.raises(TdslCallError, match=r"@main takes 2 argument\(s\).*but 1 was given"):
        run_function(CALLS, "main", A)
    with pytest.raises(TdslCallError, match="but 3 were given"):
        run_function(CALLS, "main", A, B, B)


def test_wrong_shape() -> None:
    with pytest.raises(
        TdslCallError, match=r"argument #1 \(%b\) of @main must have shape 3 .* got .* shape 2x3"
    ):
        run_function(CALLS, "main", A, np.zeros((2, 3), np.float32))


def test_wrong_dtype() -> None:
    with pytest.raises(TdslCallError, match=r"argument #0 \(%a\) of @main must have dtype float32"):
        run_function(CALLS, "main", A.astype(np.float64), B)


def test_unknown_function() -> None:
    with pytest.raises(TdslCallError, match=r"no function @nope .*@affine, @main"):
        run_function(CALLS, "nope", A)


def test_errors_render_as_tdsl_errors() -> None:
    with pytest.raises(TdslCallError) as info:
        run_function(CALLS, "main", A)
    assert str(info.value).startswith("error: @main takes 2")


def test_list_arguments_are_accepted_when_they_have_the_right_dtype() -> None:
    module = parse(
        """
func.func @main(%x: tensor<2xf64>) -> tensor<2xf64> {
  %0 = tensordsl.neg %x : tensor<2xf64>
  func.return %0 : tensor<2xf64>
}
"""
    )
    (result,) = run_function(module, "main", [1.0, 2.0])
    np.testing.assert_array_equal(result, [-1.0, -2.0])


def test_fused_and_tiled_ir_parsed_from_text() -> None:
    module = parse(
        """
func.func @main(%x: tensor<5x3xf32>, %b: tensor<3xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>) {
  %f = kernel.fused(%x, %b) group "g0" budget 64 : (tensor<5x3xf32>, tensor<3xf32>) -> tensor<5x3xf32> {
  ^bb0(%x1: tensor<5x3xf32>, %b1: tensor<3xf32>):
    %0 = tensordsl.add %x1, %b1 : (tensor<5x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
    kernel.yield %0 : tensor<5x3xf32>
  }
  %t = kernel.tile(%x, %b) group "g1" space [5, 3] iterators ["parallel", "parallel"] tiles [2, 3] scratch []
      ins [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>]
      outs [affine_map<(d0, d1) -> (d0, d1)>]
      : (tensor<5x3xf32>, tensor<3xf32>) -> tensor<5x3xf32> {
  ^bb0(%x1: tensor<2x3xf32>, %b1: tensor<3xf32>):
    %0 = tensordsl.add %x1, %b1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    kernel.yield %0 : tensor<2x3xf32>
  }
  func.return %f, %t : tensor<5x3xf32>, tensor<5x3xf32>
}
"""
    )
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    fused, tiled = run_function(module, "main", x, B)
    np.testing.assert_array_equal(fused, x + B)
    np.testing.assert_array_equal(tiled, x + B)


# -- dense attributes as arguments (tdsl-run --args) --------------------------------------


def parse_attr(text: str) -> Any:
    ctx = Context()
    ctx.load_dialect(Builtin)
    return Parser(ctx, text).parse_attribute()


@pytest.mark.parametrize(
    "text,want",
    [
        ("dense<[1.0, 2.5]> : tensor<2xf32>", np.array([1.0, 2.5], np.float32)),
        ("dense<1.5> : tensor<2x2xf16>", np.full((2, 2), 1.5, np.float16)),
        ("dense<-3.0> : tensor<f64>", np.array(-3.0)),
        ("dense<> : tensor<0xf32>", np.zeros((0,), np.float32)),
        ("dense<[[1, 2]]> : tensor<1x2xf64>", np.array([[1.0, 2.0]])),
    ],
)
def test_attr_to_numpy(text: str, want: Array) -> None:
    got = attr_to_numpy(parse_attr(text))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_attr_to_numpy_rejects_other_attributes() -> None:
    with pytest.raises(TdslCallError, match="expected a dense tensor"):
        attr_to_numpy(parse_attr("1.0 : f32"))
    with pytest.raises(TdslCallError, match="element type i8"):
        attr_to_numpy(parse_attr("dense<[1, 2]> : tensor<2xi8>"))
    np.testing.assert_array_equal(  # indices
        attr_to_numpy(parse_attr("dense<[1, -2]> : tensor<2xi32>")), np.array([1, -2], np.int32)
    )
    with pytest.raises(TdslCallError, match="does not have the expected type tensor<3xf32>"):
        attr_to_numpy(parse_attr("dense<[1.0]> : tensor<1xf32>"), TensorType(Float32Type(), [3]))


def test_interpreter_converts_tensor_attributes() -> None:
    interpreter = make_interpreter(CALLS)
    attr = parse_attr("dense<[1.0, -2.0, 3.0]> : tensor<3xf32>")
    value = interpreter.value_for_attribute(attr, attr.type)
    (result,) = interpreter.call_op("affine", (value, value))
    np.testing.assert_array_equal(result, np.maximum(A * A, 0))
