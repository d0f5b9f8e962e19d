"""Constant arrays that are not splats on the native target: the caller passes their
values (a ``const`` argument of the lowered function), bit for bit, and its plan's
data (what the cache on disk stores) keeps them."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from tdsl import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason
from tdsl.runtime.native import FunctionPlan

pytestmark = pytest.mark.skipif(
    native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
)

VALUES = np.array([0.0, 1.5, -0.0, 1e300, -3.25, 5.0])

IR = """
func.func @main(%x: tensor<6x5xf64>) -> tensor<6x5xf64> {
  %c = tensordsl.constant dense<2.0> : tensor<6x5xf64>
  %r = tensordsl.constant dense<[0.0, 1.5, -0.0, 1.0e300, -3.25, 5.0]> : tensor<6xf64>
  %s = tensordsl.expand_dims %r axes [1] : tensor<6xf64> -> tensor<6x1xf64>
  %0 = tensordsl.mul %x, %c : (tensor<6x5xf64>, tensor<6x5xf64>) -> tensor<6x5xf64>
  %1 = tensordsl.copysign %0, %s : (tensor<6x5xf64>, tensor<6x1xf64>) -> tensor<6x5xf64>
  func.return %1 : tensor<6x5xf64>
}
"""


def want(x: np.ndarray) -> np.ndarray:
    return np.copysign(x * 2, VALUES[:, None])


@pytest.mark.parametrize("budget", [4, 10**6])
def test_a_constant_array_is_passed_bit_for_bit(budget: int) -> None:
    kernel = JITTensorKernel(target="native", memory_budget=budget, threads=1).compile_ir(IR)
    assert kernel.target == "native"
    assert '"const"' in kernel.ir["loops"] and "tdsl.constants = [dense<" in kernel.ir["loops"]
    x = np.random.default_rng(0).standard_normal((6, 5))
    np.testing.assert_array_equal(kernel(x), want(x))  # -0.0 gives the sign: bit for bit


def test_the_plan_keeps_the_values_through_its_data() -> None:
    kernel = JITTensorKernel(target="native", threads=1).compile_ir(IR)
    plan = kernel.function.plan  # pyright: ignore[reportAttributeAccessIssue]
    again = FunctionPlan.from_data(plan.to_data())
    (data,) = [a.data for a in again.args if a.role == "const"]
    assert data is not None and data.tobytes() == VALUES.tobytes()
