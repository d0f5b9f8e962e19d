"""A dialect defined outside ``tdsl/`` through the JIT: ``myops.cbrt``, six lines on the
structured-op interface, fuses with tensordsl ops, tiles and runs on both targets
through ``JITTensorKernel.compile_module`` (IR objects parsed in the caller's own
context); ``compile_ir`` takes shapes by argument name as well as in order."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition
from xdsl.parser import Parser

from tdsl import JITTensorKernel
from tdsl.dialects.kernel import Kernel
from tdsl.dialects.structured import ScalarOpBuilder, UnaryOp
from tdsl.dialects.tensordsl import TensorDSL
from tdsl.errors import TdslIRError, TdslTypeError


@irdl_op_definition
class CbrtOp(UnaryOp):
    """``cbrt(x)`` element-wise."""

    name = "myops.cbrt"
    NUMPY_UFUNC: ClassVar[str | None] = "cbrt"
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = xmath.CbrtOp


MyOps = Dialect("myops", [CbrtOp], [])

IR = """
func.func @main(%x: tensor<64x48xf32>, %y: tensor<64x48xf32>) -> tensor<64x48xf32> {
  %0 = tensordsl.exp %x : tensor<64x48xf32>
  %1 = myops.cbrt %0 : tensor<64x48xf32>
  %2 = tensordsl.sum %1 axis = 1 keepdims : tensor<64x48xf32> -> tensor<64x1xf32>
  %3 = tensordsl.sub %1, %2 : (tensor<64x48xf32>, tensor<64x1xf32>) -> tensor<64x48xf32>
  %4 = tensordsl.mul %3, %y : (tensor<64x48xf32>, tensor<64x48xf32>) -> tensor<64x48xf32>
  func.return %4 : tensor<64x48xf32>
}
"""


def parse(text: str) -> Any:
    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL, Kernel, MyOps):
        ctx.load_dialect(dialect)
    return Parser(ctx, text, "mine.mlir").parse_module()


def want(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    c = np.cbrt(np.exp(x))
    return (c - c.sum(axis=1, keepdims=True)) * y


@pytest.mark.parametrize("budget", [1_000_000, 256])
def test_a_downstream_op_fuses_tiles_and_runs(budget: int, jit_target: str) -> None:
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((64, 48)).astype(np.float32) for _ in range(2))
    module = parse(IR)
    before = str(module)
    kernel = JITTensorKernel(memory_budget=budget).compile_module(module)
    assert str(module) == before  # the caller's module is not changed
    assert kernel.target == jit_target
    (group,) = kernel.groups  # one group: the downstream op fused with tensordsl's
    assert "myops.cbrt" in kernel.ir["tiled"] and "myops.cbrt" in group.ops
    np.testing.assert_allclose(kernel(x, y), want(x, y), rtol=2e-5, atol=2e-4)
    # cached by its text: the same module again is the same kernel
    assert JITTensorKernel(memory_budget=budget).compile_module(parse(IR)) is not kernel
    jit = JITTensorKernel(memory_budget=budget)
    assert jit.compile_module(module) is jit.compile_module(parse(IR))


def test_ir_text_of_an_unknown_dialect_is_a_located_error() -> None:
    # myops has no xdsl.universe entry point here: IR text cannot name it
    with pytest.raises(TdslIRError, match=r"Operation myops\.cbrt is not registered"):
        JITTensorKernel().compile_ir(IR)


def test_compile_ir_takes_shapes_by_name_or_in_order() -> None:
    text = IR.replace("myops.cbrt", "tensordsl.tanh")
    by_name = JITTensorKernel().compile_ir(text, {"y": (8, 5), "x": (8, 5)})
    in_order = JITTensorKernel().compile_ir(text, [(8, 5), (8, 5)])
    assert (
        by_name.signature == in_order.signature == ("main(x: f32[8, 5], y: f32[8, 5]) -> f32[8, 5]")
    )
    with pytest.raises(TdslTypeError, match="shapes names `z`, which is no argument"):
        JITTensorKernel().compile_ir(text, {"x": (8, 5), "z": (8, 5)})
    with pytest.raises(TdslTypeError, match="shapes lacks `y`"):
        JITTensorKernel().compile_ir(text, {"x": (8, 5)})
