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
    from tdsl.runtime.compile import native_unavailable_reason

    reason = native_unavailable_reason()
    native = pytest.param(
        "native", marks=pytest.mark.skipif(reason is not None, reason=str(reason))
    )
    return ["numpy", native]


@pytest.fixture(autouse=True, params=_targets())
def jit_target(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every JIT test runs once per target: ``$TDSL_TARGET`` is the default target of
    every kernel the test compiles without naming one (the shared default JIT is
    made afresh for it).  A native kernel of more than one thread splits its tiles
    over threads whenever there are tiles to split, however small the arrays (its
    threshold is a question of speed, not of results), so the tests' small arrays
    run the split too.  ``$TDSL_CACHE_DIR`` is unset: a test that wants a cache on
    disk asks for one."""
    from tdsl.jit import api
    from tdsl.runtime import native as runtime

    target: str = request.param
    monkeypatch.setenv("TDSL_TARGET", target)
    monkeypatch.delenv("TDSL_CACHE_DIR", raising=False)
    monkeypatch.setattr(api._DEFAULT, "jit", None)  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(runtime, "MIN_BYTES_PER_THREAD", 1)
    return target
