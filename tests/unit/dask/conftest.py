"""Shared helpers of the Dask tests: NumPy as the reference, as in the JIT tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest


def assert_matches(got: Any, want: Any) -> None:
    """``got`` equals NumPy's ``want``: same shape and dtype, values within a tolerance
    scaled to the reference's largest magnitude (tree reductions reorder sums)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape} != NumPy's {want.shape}"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != NumPy's {want.dtype}"
    rtol = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 1e-4}.get(want.dtype, 1e-2)
    finite = want[np.isfinite(want)]
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1.0, scale))


@pytest.fixture
def matches() -> Any:
    return assert_matches
