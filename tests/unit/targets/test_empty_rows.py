"""Row-normalizing ops over rows of no elements, on every target, against NumPy.

Tiling weighs each such op's decomposition, whose row ``max`` over zero elements has no
identity; the op over empty rows is its (empty) operand instead.  Found by
test_differential's random exploration: ``concatenate((log_softmax(x0, axis=0), x1),
axis=0)`` with ``x0`` of shape (0, 1, 1) was a ShapeError on both compiled targets.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from all_targets import TARGETS, run_on

from tdsl.dialects.tensordsl.normalize import layernorm_array, log_softmax_array

Array = np.ndarray[Any, Any]


def _softmax(x: Array, axis: int) -> Array:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True)) if x.size else x
    return e / np.sum(e, axis=axis, keepdims=True) if x.size else x.copy()


X0 = np.zeros((0, 1, 1), np.float32)
X1 = np.arange(2, dtype=np.float32).reshape(2, 1, 1)
CASES = [
    (
        "concatenate((log_softmax(x0, axis=0), x1), axis=0)",
        {"x0": X0, "x1": X1},
        lambda x0, x1: np.concatenate((x0, x1), axis=0),
    ),
    ("softmax(x0, axis=0) * 2", {"x0": X0}, lambda x0: _softmax(x0, 0) * 2),
    ("log_softmax(x0, axis=0) + 1", {"x0": X0}, lambda x0: log_softmax_array(x0, 0) + 1),
    ("layernorm(x0, axis=0) - 1", {"x0": X0}, lambda x0: layernorm_array(x0, 0, 1e-5) - 1),
    # softmax rows of no keys feeding a matmul: the products are sums of nothing
    (
        "matmul(softmax(s), v) + 1",
        {"s": np.zeros((2, 0), np.float32), "v": np.ones((0, 3), np.float32)},
        lambda s, v: np.ones((2, 3), np.float32),
    ),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("budget", [4, 1 << 20])
@pytest.mark.parametrize(("text", "arrays", "reference"), CASES)
def test_rows_of_no_elements_are_numpys(
    target: str, budget: int, text: str, arrays: dict[str, Array], reference: Any
) -> None:
    got = run_on(target, budget, text, **arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's mean of an empty slice
        want = reference(*arrays.values())
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
