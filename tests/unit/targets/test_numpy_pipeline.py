"""Expressions through frontend, tdsl-fuse, tdsl-tile and the numpy target, against eager NumPy."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from numpy_target_ir import check, rand

from tdsl.backend.numpy.target import emit_numpy, load_numpy
from tdsl.dialects.kernel import TileOp
from tdsl.dialects.kernel_plan import plan_scratch
from tdsl.frontend import to_tensordsl
from tdsl.transforms.fuse import fuse
from tdsl.transforms.tile import tile


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


EAGER: dict[str, Any] = {
    "relu": lambda x: np.maximum(x, 0),
    "exp": np.exp,
    "tanh": np.tanh,
    "abs": np.abs,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "softmax": _softmax,
    "sum": lambda x, axis=None: np.sum(x, axis=axis),
    "max": lambda x, axis=None: np.max(x, axis=axis),
    "mean": lambda x, axis=None: np.mean(x, axis=axis),
    "matmul": np.matmul,
    "transpose": np.transpose,
}

CASES: list[tuple[str, dict[str, tuple[int, ...]]]] = [
    ("relu(A)+B*C-D", {n: (37, 29) for n in "ABCD"}),
    ("softmax(X)", {"X": (41, 23)}),
    ("sum(exp(A)*B, axis=1)", {"A": (33, 17), "B": (33, 17)}),
    ("relu(x @ w + b)", {"x": (45, 12), "w": (12, 19), "b": (19,)}),
    ("matmul(A, relu(B)) + softmax(C)", {"A": (24, 16), "B": (16, 24), "C": (24, 24)}),
    ("A / (1 + exp(-A))", {"A": (30, 30)}),
    ("sigmoid(A) * tanh(B) - abs(A) + mean(B, axis=0)", {"A": (21, 13), "B": (21, 13)}),
    ("transpose(A) @ B + max(B, axis=0)", {"A": (9, 14), "B": (9, 14)}),
    ("softmax(relu(A) * 2.5 + B, axis=0)", {"A": (18, 11), "B": (11,)}),
]


def pipeline(expr: str, shapes: dict[str, tuple[int, ...]], dtype: Any, budget: int) -> Any:
    return tile(fuse(to_tensordsl(expr, shapes=shapes, dtypes=dtype), memory_budget=budget))


@pytest.mark.parametrize("budget", [64, 1000, 1_000_000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("expr", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_pipeline_matches_eager_numpy(
    expr: str, shapes: dict[str, tuple[int, ...]], dtype: Any, budget: int
) -> None:
    module = pipeline(expr, shapes, dtype, budget)
    source = emit_numpy(module)
    # the target never needs more scratch than the tile pass recorded
    assert "more than the recorded" not in source and "to keep scratch within" not in source
    arrays = {name: rand(shapes[name], dtype, i) for i, name in enumerate(sorted(shapes))}
    fn = load_numpy(source)["main"]
    got = fn(**arrays)  # parameters are named after the inputs
    want = eval(expr, {"__builtins__": {}}, {**EAGER, **arrays})  # the test's own, fixed text
    check(got, np.asarray(want), dtype)
    if budget == 64:
        threaded = load_numpy(emit_numpy(module, threads=2))["main"]
        check(threaded(**arrays), np.asarray(want), dtype)


@pytest.mark.parametrize("budget", [64, 1000, 1_000_000])
@pytest.mark.parametrize(("expr", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_target_allocates_the_recorded_scratch(
    expr: str, shapes: dict[str, tuple[int, ...]], budget: int
) -> None:
    """One scratch model: the IR records what it plans, and the code allocates no more."""
    module = pipeline(expr, shapes, np.float32, budget)
    recorded = 0
    for op in module.walk():
        if isinstance(op, TileOp):
            assert plan_scratch(op.schedule()).buffers == op.scratch_buffers
            assert op.scratch_value <= budget
            recorded += op.scratch_value
    source = emit_numpy(module)
    allocated = sum(int(n) for n in re.findall(r"= np\.empty\((\d+), np\.float32\)", source))
    assert allocated <= recorded


@pytest.mark.parametrize(
    "expression",
    [
        "sum(sigmoid(A), axis=-1)",
        "sigmoid(A) * A",
        "sum(exp(A) / B, axis=-1)",
        "softmax(A / B) + sigmoid(A)",
    ],
)
@pytest.mark.parametrize("budget", [200, 1000, 5000, 100_000])
def test_emitter_stays_within_recorded_scratch(expression: str, budget: int) -> None:
    # tdsl-tile's scratch model must count every buffer the emitter allocates
    # (sigmoid's exp(-|x|), the reciprocal of a broadcast divisor), or a call
    # would allocate more than the budget.
    import tdsl

    shapes = {"A": (16, 100), "B": (16, 1)}
    kernel = tdsl.compile(
        expression,
        shapes={name: shape for name, shape in shapes.items() if name in expression},
        memory_budget=budget,
        threads=1,
    )
    assert "more than the recorded" not in kernel.source
