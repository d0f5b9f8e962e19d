"""The JIT's default memory budget: 10**6 elements where a plan fits it, else the
elements of the kernel's inputs (``tdsl-fuse``'s ``fallback-budget``), so that a
program bigger than the default does not run its plan of least memory, whose tiles
can be a row and a column (a GPT-2 block ran 150x slower than eager NumPy). A budget
the user gives is kept as before."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

from tdsl.defaults import DEFAULT_MEMORY_BUDGET, default_fallback_budget
from tdsl.errors import TdslBudgetWarning
from tdsl.jit import JITTensorKernel
from tdsl.runtime.workspace import release_workspaces

# relu(w) is a matmul's right operand computed in the program: it is held whole,
# 1024 * 1025 elements, more than the default budget.
EXPR = "x @ relu(w)"
SHAPES = {"x": (16, 1024), "w": (1024, 1025)}
INPUTS = 16 * 1024 + 1024 * 1025


def arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in SHAPES.items()}


def extra_bytes(kernel: object, args: dict[str, np.ndarray]) -> int:
    """Peak bytes a call allocates beyond its result (tracemalloc sees NumPy's arrays)."""
    kernel(**args)  # type: ignore[operator]  # warm: lazy imports, thread pools
    release_workspaces()  # and the call allocates its workspace, as a first one does
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = kernel(**args)  # type: ignore[operator]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - before - result.nbytes


def test_default_plans_past_the_budget_at_the_inputs_size() -> None:
    args = arrays()
    with warnings.catch_warnings():
        warnings.simplefilter("error", TdslBudgetWarning)  # no plan of least memory
        kernel = JITTensorKernel().compile(EXPR, shapes=SHAPES, dtypes="f32")
    assert f"tdsl-fuse{{memory-budget={DEFAULT_MEMORY_BUDGET} fallback-budget={INPUTS}}}" in (
        kernel.pipeline
    )
    assert kernel.memory_budget == INPUTS
    assert all(g.budget == INPUTS for g in kernel.groups)
    assert f"memory_budget={INPUTS}," in repr(kernel)
    expected = args["x"] @ np.maximum(args["w"], np.float32(0))
    np.testing.assert_allclose(kernel(**args), expected, rtol=2e-5, atol=2e-4)
    # the promise at the budget it was planned at: relu(w) and one tile's scratch
    assert extra_bytes(kernel, args) <= INPUTS * 4 + 64 * 1024


def test_a_budget_given_is_kept() -> None:
    with pytest.warns(TdslBudgetWarning, match="no fusion plan fits the memory budget of 1000000"):
        kernel = JITTensorKernel(DEFAULT_MEMORY_BUDGET).compile(EXPR, shapes=SHAPES, dtypes="f32")
    assert kernel.memory_budget == DEFAULT_MEMORY_BUDGET
    assert "fallback-budget" not in kernel.pipeline


def test_a_kernel_that_fits_the_default_is_planned_at_it() -> None:
    shapes = {"x": (16, 1024), "w": (1024, 64)}
    kernel = JITTensorKernel().compile(EXPR, shapes=shapes, dtypes="f32")
    assert kernel.memory_budget == DEFAULT_MEMORY_BUDGET
    # (the fallback is in the pipeline only where the inputs exceed the default)
    assert kernel.pipeline.startswith(
        f"canonicalize,tdsl-fuse{{memory-budget={DEFAULT_MEMORY_BUDGET}}}"
    )


def test_fallback_budget_only_above_the_default() -> None:
    assert default_fallback_budget(DEFAULT_MEMORY_BUDGET) is None
    assert default_fallback_budget(DEFAULT_MEMORY_BUDGET + 1) == DEFAULT_MEMORY_BUDGET + 1
