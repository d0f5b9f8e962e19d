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
