"""Comparing a result with NumPy's: the agreed tolerances per dtype.

Shared by the JIT tests (as the ``matches`` fixture) and the property tests
of other folders (``tests/unit`` is on ``sys.path`` through its ``conftest.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def rtol_for(dtype: np.dtype[Any]) -> float:
    """The agreed tolerance: 1e-9 for float64, 1e-4 for float32 (and float16: 1e-2)."""
    return {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 1e-4}.get(np.dtype(dtype), 1e-2)


def assert_matches(got: Any, want: Any) -> None:
    """``got`` equals NumPy's ``want``: same shape, same dtype, values within tolerance.

    The absolute tolerance scales with the largest magnitude of the reference, so
    that entries produced by cancellation (a sum near zero) are judged fairly.
    """
    assert isinstance(got, np.ndarray), f"expected an ndarray, got {type(got)}"
    want = np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape} != NumPy's {want.shape}"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != NumPy's {want.dtype}"
    rtol = rtol_for(want.dtype)
    finite = want[np.isfinite(want)]
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1.0, scale))
