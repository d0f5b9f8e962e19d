"""Shared helpers of the JIT tests: NumPy as the reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from matches_numpy import assert_matches


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def matches() -> Any:
    """:func:`matches_numpy.assert_matches`, as a fixture (test modules here are not importable)."""
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
