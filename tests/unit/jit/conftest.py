"""Shared helpers of the JIT tests: NumPy as the reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest


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


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def matches() -> Any:
    """:func:`assert_matches`, as a fixture (test modules here are not importable)."""
    return assert_matches


def _targets() -> list[Any]:
    from tdsl.native.compile import native_unavailable_reason

    reason = native_unavailable_reason()
    native = pytest.param(
        "native", marks=pytest.mark.skipif(reason is not None, reason=str(reason))
    )
    return ["numpy", native]


@pytest.fixture(autouse=True, params=_targets())
def jit_target(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every JIT test runs once per target: ``$TDSL_TARGET`` is the default target of
    every kernel the test compiles without naming one (the shared default JIT is
    made afresh for it)."""
    from tdsl.jit import api

    target: str = request.param
    monkeypatch.setenv("TDSL_TARGET", target)
    monkeypatch.setattr(api._DEFAULT, "jit", None)  # pyright: ignore[reportPrivateUsage]
    return target
