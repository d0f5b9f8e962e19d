"""``transpose(x, axes=...)``: any permutation of the axes, as ``np.transpose``, on every
target, fused with what reads it (batched attention scores), and its errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from all_targets import TARGETS, run_on
from xdsl.dialects.builtin import ModuleOp

from tdsl.dialects import tensordsl as td
from tdsl.errors import TdslTypeError
from tdsl.frontend import to_tensordsl
from tdsl.transforms.fuse import fuse

Array = np.ndarray[Any, Any]

PERMS = [(0, 2, 1), (2, 0, 1), (1, 2, 0), (0, 1, 2), (2, 1, 0), (-1, 0, -2)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", [16, 10**6])
@pytest.mark.parametrize("axes", PERMS)
def test_a_permutation_is_numpys(target: str, budget: int, axes: tuple[int, ...]) -> None:
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    got = run_on(target, budget, f"exp(transpose(x, axes={axes})) + 1", x=x)
    np.testing.assert_allclose(got, np.exp(np.transpose(x, axes)) + 1, rtol=2e-6)
    # read by an element-wise op of another layout: the view is read where it lies
    y = np.random.default_rng(1).standard_normal(np.transpose(x, axes).shape).astype(np.float32)
    got = run_on(target, budget, f"transpose(x, axes={axes}) * y", x=x, y=y)
    np.testing.assert_array_equal(got, np.transpose(x, axes) * y)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", [64, 10**6])
def test_batched_attention_scores(target: str, budget: int) -> None:
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 3, 4, 8))
    k = rng.standard_normal((2, 3, 6, 8))
    text = "softmax(q @ transpose(k, axes=(0, 1, 3, 2)) / 2, axis=-1)"
    got = run_on(target, budget, text, q=q, k=k)
    s = q @ np.transpose(k, (0, 1, 3, 2)) / 2
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=-1, keepdims=True), rtol=1e-12, atol=1e-14)


def test_the_view_fuses_and_round_trips() -> None:
    module = to_tensordsl("transpose(x, axes=(1, 0, 2)) + 1", shapes={"x": (2, 3, 4)})
    text = str(module)
    assert "tensordsl.transpose %x perm [1, 0, 2] : tensor<2x3x4xf64> -> tensor<3x2x4xf64>" in text
    report_groups = [op for op in fuse(module).walk() if op.name == "kernel.fused"]
    assert len(report_groups) == 1  # the transpose fuses with the add
    # the reversal is the default: no perm printed
    assert "perm" not in str(to_tensordsl("transpose(x, axes=(2, 1, 0))", shapes={"x": (2, 3, 4)}))


def test_transposes_of_transposes_compose() -> None:
    from xdsl.context import Context
    from xdsl.transforms.canonicalize import CanonicalizePass

    text = (
        "transpose(transpose(x, axes=(1, 2, 0)), axes=(2, 0, 1))"
        " + transpose(transpose(x, axes=(1, 0, 2)), axes=(0, 2, 1))"
    )
    module = to_tensordsl(text, shapes={"x": (3, 3, 3)})
    assert isinstance(module, ModuleOp)
    CanonicalizePass().apply(Context(allow_unregistered=True), module)
    transposes = [op for op in module.walk() if isinstance(op, td.TransposeOp)]
    # the first pair undoes itself; the second is one transpose by (1, 2, 0)
    assert [op.permutation for op in transposes] == [(1, 2, 0)]
    x = np.random.default_rng(3).standard_normal((3, 3, 3))
    want = x + np.transpose(np.transpose(x, (1, 0, 2)), (0, 2, 1))
    np.testing.assert_allclose(run_on("numpy", 10**6, text, x=x), want)


@pytest.mark.parametrize(
    "text,message",
    [
        ("transpose(x, axes=(0, 1))", "do not match the 3 axes of its operand"),
        ("transpose(x, axes=(0, 0, 1))", "are not a permutation of 3 axes"),
        ("transpose(x, axes=(0, 1, 3))", "are not a permutation of 3 axes"),
        ("transpose(x, axes=1)", "`axes` of `transpose` must be a tuple of integers"),
    ],
)
def test_bad_axes_are_located_errors(text: str, message: str) -> None:
    with pytest.raises(TdslTypeError) as info:
        to_tensordsl(text, shapes={"x": (2, 3, 4)})
    assert message in str(info.value)
