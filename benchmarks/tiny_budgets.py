"""Matmuls under tiny memory budgets: the native loops against the numpy target.

``python benchmarks/tiny_budgets.py`` compiles a few programs whose matmul's
contraction the plan cuts to fit budgets of 64 to 4096 elements (f32, one thread,
``a`` 100x300, ``b`` and ``c`` 300x160, ``d`` 160x16), and prints, per budget, the median of five
calls on each target, the native loops' recorded tiles (``loops tiles``: one per dim
of the group's iteration space), and ``W`` where the native loops warn that they break the
budget (``TdslLoopsBudgetWarning``: ``auto`` then runs the numpy target).
"""

from __future__ import annotations

import re
import time
import warnings
from typing import Any

import numpy as np

from tdsl import JITTensorKernel
from tdsl.errors import TdslBudgetWarning, TdslLoopsBudgetWarning
from tdsl.runtime.compile import native_unavailable_reason

PROGRAMS = [
    "(relu(a) @ b) * (a @ c)",
    "(relu(a) @ b) * (relu(a) @ c)",
    "(layernorm(a) @ b) * (exp(a) @ c)",
    "(layernorm(a) @ b) * (exp(a / 4) @ c) + (a @ b)",
    "mean(relu(a) @ b, axis=0)",
    "cumsum(a @ b, axis=1) + (softmax(a) @ c)",
    "((tanh(a) @ b) - max(a @ b, axis=1, keepdims=True)) @ d",
]
SHAPES = {"a": (100, 300), "b": (300, 160), "c": (300, 160), "d": (160, 16)}
BUDGETS = (64, 256, 1024, 4096)


def median_ms(fn: Any, arrays: dict[str, np.ndarray], repeat: int = 5) -> float:
    fn(**arrays)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(**arrays)
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main() -> None:
    if native_unavailable_reason() is not None:
        raise SystemExit(f"native code does not run here: {native_unavailable_reason()}")
    rng = np.random.default_rng(0)
    for text in PROGRAMS:
        shapes = {n: s for n, s in SHAPES.items() if re.search(rf"\b{n}\b", text)}
        arrays = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
        print(text)
        for budget in BUDGETS:
            row = []
            for target in ("native", "numpy"):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("ignore", TdslBudgetWarning)
                    warnings.simplefilter("always", TdslLoopsBudgetWarning)
                    jit = JITTensorKernel(target=target, memory_budget=budget, threads=1)
                    fn = jit.compile(text, shapes=shapes, dtypes="f32")
                warned = any(issubclass(w.category, TdslLoopsBudgetWarning) for w in caught)
                row.append(f"{target} {median_ms(fn, arrays):8.2f} ms{' W' if warned else '  '}")
                if target == "native":
                    tiles = re.findall(r"loops tiles (\[[^\]]*\])", fn.ir["planned"])
                    row.append(f"tiles {' '.join(tiles):16s}")
            print(f"  budget {budget:5d}: " + "  ".join(row))


if __name__ == "__main__":
    main()
