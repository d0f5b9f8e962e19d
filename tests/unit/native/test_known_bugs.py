"""Native bugs found and not yet fixed, each as a strict xfail with its smallest
reproducer: the test passes (xpasses, and so fails) as soon as the bug is fixed."""

from __future__ import annotations

import numpy as np
import pytest

from tdsl.jit import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

pytestmark = pytest.mark.skipif(
    native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
)


@pytest.mark.xfail(
    strict=True,
    reason="found 2026-12-04 by test_integer_differential: native (A ** 0) @ max(B, axis=0) "
    "with int64 A and int32 B computes the wrong product (the loops IR reads right; "
    "already wrong at b052470); int32 A, or A @ max(B, axis=0), are right",
)
def test_ones_like_int64_times_a_widened_column_max() -> None:
    a = np.array([[3], [-2]], np.int64)
    b = np.array([[[1, 1, 3]], [[2, -4, 0]], [[1, 2, -5]]], np.int32)
    kernel = JITTensorKernel(threads=1, target="native").compile(
        "(A ** 0) @ max(B, axis=0)", {"A": a.shape, "B": b.shape}, {"A": "int64", "B": "int32"}
    )
    want = np.ones_like(a) @ np.max(b, axis=0)
    np.testing.assert_array_equal(kernel(A=a, B=b), want)
