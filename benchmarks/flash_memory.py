"""Attention whose key rows do not fit the memory budget: what a call allocates, and how
long it takes (issue 20, item 2: flash-style attention).

    python benchmarks/flash_memory.py [--sizes 1024 4096] [--budgets 256 4096 0] [--d 64]
                                      [--dtype f32|f16] [--targets numpy native]

For each sequence length S, budget (0: the JIT's default) and compiled target, one
attention head ``softmax(q @ k.T * 0.125 + mask) @ v`` (f32, ``d`` columns, a causal
mask given) is compiled and called: the table gives the tiles of its one group, whether
it runs the online softmax (``softmax_matmul``), the extra memory of a call beyond its
output (tracemalloc's peak, NumPy's buffers included), the bound the issue sets
(budget * 4 + 4 * S * d * 4 bytes), whether a budget warning was given, the largest
difference from the exact result (float64), and the best of three calls.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))

from peak_memory import measure_peak

from tdsl import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

TEXT = "softmax(q @ transpose(k) * 0.125 + mask) @ v"


def reference(q: Any, k: Any, mask: Any, v: Any) -> Any:
    s = q @ k.T * np.float32(0.125) + mask
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v


def row(s: int, d: int, budget: int, target: str, dtype: str = "f32") -> str:
    rng = np.random.default_rng(0)
    t = np.float16 if dtype == "f16" else np.float32
    q, k, v = (rng.standard_normal((s, d), dtype=np.float32).astype(t) for _ in range(3))
    mask = np.triu(np.full((s, s), -1e4 if dtype == "f16" else -1e10, t), 1)
    shapes = {"q": (s, d), "k": (s, d), "mask": (s, s), "v": (s, d)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = JITTensorKernel(target=target, memory_budget=budget or None).compile(
            TEXT, shapes, dtype
        )
    tiled = kernel.ir["tiled"]
    tiles = " ".join(re.findall(r"tiles \[([^\]]*)\]", tiled))
    peak, out = measure_peak(lambda *a: kernel(*a), q, k, mask, v)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        kernel(q, k, mask, v)
        best = min(best, time.perf_counter() - start)
    extra = (peak - out.nbytes) / 1024
    # (the state is float32 for f16 too, and the budget counts elements)
    bound = (budget * 4 + 4 * s * d * 4) / 1024 if budget else float("nan")
    wide = [x.astype(np.float64) for x in (q, k, mask, v)]
    error = float(np.abs(out.astype(np.float64) - reference(*wide)).max())
    warned = ",".join(sorted({type(w.message).__name__ for w in caught})) or "-"
    online = "yes" if "softmax_matmul" in tiled else "no"
    return (
        f"| {s} | {budget or 'default'} | {target} | [{tiles}] | {online} | {extra:.1f} | "
        f"{bound:.0f} | {warned} | {error:.1e} | {best * 1e3:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--budgets", type=int, nargs="+", default=[256, 4096, 0])
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    parser.add_argument("--targets", nargs="+", default=["numpy", "native"])
    args = parser.parse_args()
    targets = ["numpy"] + (["native"] if native_unavailable_reason() is None else [])
    targets = [t for t in targets if t in args.targets]
    print(
        "| S | budget | target | tiles | online softmax | extra KiB | bound KiB | warning "
        "| max error | ms/call |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for s in args.sizes:
        for budget in args.budgets:
            for target in targets:
                print(row(s, args.d, budget, target, args.dtype), flush=True)


if __name__ == "__main__":
    main()
