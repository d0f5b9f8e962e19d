"""Running one expression on every target: the reference interpreter (on the tiled IR),
the numpy target and the native target (skipped where it cannot build).

Shared by the tests that hold every target to NumPy (``tests/unit`` is on ``sys.path``
through its ``conftest.py``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from tdsl.frontend import to_tensordsl
from tdsl.interpreters.run import run_function
from tdsl.jit import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason
from tdsl.transforms.fuse import fuse
from tdsl.transforms.tile import tile

Array = np.ndarray[Any, Any]

TARGETS = [
    "interpreter",
    "numpy",
    pytest.param(
        "native",
        marks=pytest.mark.skipif(
            native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
        ),
    ),
]
"""The targets, as a ``pytest.mark.parametrize`` list."""

COMPILED_TARGETS = TARGETS[1:]
"""The compiled targets (numpy and native), as a ``pytest.mark.parametrize`` list."""


def dtype_name(array: Any) -> str:
    """``f32`` for a float32 array (``bool`` for booleans): the language's dtype names."""
    name = str(np.asarray(array).dtype)
    return name if name == "bool" else name.replace("float", "f")


def run_on(target: str, budget: int, text: str, **arrays: Any) -> Array:
    """``text`` on ``arrays`` (named as its inputs) on ``target`` under ``budget``, with
    NumPy's floating-point warnings silenced (the numpy target warns as NumPy does)."""
    shapes = {k: np.shape(v) for k, v in arrays.items()}
    dtypes = {k: dtype_name(v) for k, v in arrays.items()}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if target == "interpreter":
            module = to_tensordsl(text, shapes=shapes, dtypes=dtypes)
            (got,) = run_function(
                tile(fuse(module, memory_budget=budget)), "main", *arrays.values()
            )
            return np.asarray(got)
        jit = JITTensorKernel(target=target, memory_budget=budget, threads=1)
        fn = jit.compile(text, shapes=shapes, dtypes=dtypes)
        return np.asarray(fn(**arrays))
