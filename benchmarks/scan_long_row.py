"""A scan over one long row under a tiny budget: linear time on both targets.

``python benchmarks/scan_long_row.py`` compiles ``cumsum(x) * 0.5 + cumsum(exp(x))``
(two scans of one row: one runs into scratch, so the row is tiled along the scan,
each tile carrying the running sums to the next) at ``memory_budget=64`` for rows
of 2**18 to 2**20 float32 elements, and prints the best of three calls per target
next to eager NumPy.  The time doubles with the row: linear, whatever the budget.
"""

from __future__ import annotations

import time

import numpy as np

from tdsl import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

TEXT = "cumsum(x) * 0.5 + cumsum(exp(x))"


def best_of(fn: object, repeat: int = 3, **arrays: np.ndarray) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(**arrays)  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    targets = ["numpy"] + (["native"] if native_unavailable_reason() is None else [])
    for n in (1 << 18, 1 << 19, 1 << 20):
        x = np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32)
        row = [f"2**{n.bit_length() - 1}:"]
        for target in targets:
            jit = JITTensorKernel(target=target, memory_budget=64, threads=1)
            fn = jit.compile(TEXT, shapes={"x": x.shape}, dtypes={"x": "f32"})
            fn(x=x)
            group = fn.groups[0]
            row.append(
                f"{target} {best_of(fn, x=x) * 1e3:7.1f} ms "
                f"(tiles {group.tiles}, scratch {group.scratch})"
            )
        eager = best_of(lambda x: np.cumsum(x) * np.float32(0.5) + np.cumsum(np.exp(x)), x=x)
        row.append(f"eager NumPy {eager * 1e3:6.1f} ms")
        print("  ".join(row))


if __name__ == "__main__":
    main()
