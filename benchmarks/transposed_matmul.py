"""``transpose(x) @ w`` under memory budgets: the native target against the numpy target
and eager NumPy's ``x.T @ w``.

    OPENBLAS_THREAD_TIMEOUT=1 python benchmarks/transposed_matmul.py \\
        [--shape 768 512 3072] [--budgets 4096 65536 0] [--reps 15]

``x`` is ``K x M`` and ``w`` ``K x N`` (f32): the product is ``M x N``.  For each budget
(0: the JIT's default) both targets compile the kernel; the table gives the native
loops' row tiles and what they store, and the median of ``reps`` calls of each, the
three interleaved call by call, with eager NumPy's in the same rounds.  BLAS reads a
transposed group input as it lies (gemm's ``Trans`` on A), so the native loops store
nothing for it and take tall tiles whatever the budget.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from typing import Any

import numpy as np

from tdsl import JITTensorKernel
from tdsl.errors import TdslBudgetWarning


def _loops_plan(kernel: Any) -> str:
    from tdsl.dialects.kernel import TileOp

    plans = [
        op.loops_plan
        for op in kernel.ir.module("planned").walk()
        if isinstance(op, TileOp) and op.loops_plan is not None
    ]
    return "; ".join(f"tiles {list(p.tiles)}, stored {list(p.stored)}" for p in plans)


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--shape", type=int, nargs=3, default=(768, 512, 3072), metavar=("K", "M", "N"))
    p.add_argument("--budgets", type=int, nargs="+", default=(4096, 65536, 0))
    p.add_argument("--reps", type=int, default=15)
    args = p.parse_args()
    k, m, n = args.shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((k, m)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    want = x.T @ w
    print(f"transpose(x) @ w, x {k}x{m}, w {k}x{n} (f32), medians of {args.reps} calls")
    print(f"{'budget':>8} {'native loops':>34} {'native':>9} {'numpy':>9} {'eager':>9}")
    for budget in args.budgets:
        kernels = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TdslBudgetWarning)
            for target in ("native", "numpy"):
                jit = JITTensorKernel(target=target, memory_budget=budget or None)
                kernels[target] = jit.compile(
                    "transpose(x) @ w", {"x": x.shape, "w": w.shape}, "f32"
                )
        native, numpy_target = kernels["native"], kernels["numpy"]
        variants = {
            "native": lambda k=native: k(x, w),
            "numpy": lambda k=numpy_target: k(x, w),
            "eager": lambda: x.T @ w,
        }
        for name, run in variants.items():
            got = run()  # warm, and checked
            np.testing.assert_allclose(
                got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max(), err_msg=name
            )
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.reps):
            for name, run in variants.items():
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
        ms = {name: statistics.median(t) * 1e3 for name, t in times.items()}
        label = str(budget) if budget else "default"
        plan = _loops_plan(kernels["native"])
        print(
            f"{label:>8} {plan:>34} {ms['native']:8.1f}ms {ms['numpy']:8.1f}ms {ms['eager']:8.1f}ms"
        )


if __name__ == "__main__":
    main()
