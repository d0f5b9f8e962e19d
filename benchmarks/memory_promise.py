"""Peak memory of the memory promise's cases (issue items 11 and 12), per target and budget.

Run: ``python benchmarks/memory_promise.py [--budgets 64,4096,1000000] [--targets numpy,native]``.
Prints, per case, target and budget, what a call allocates beyond its outputs
(tracemalloc's peak above the memory before the call, minus the outputs), the
planner's least need (elements) and the materialized values the fusion report names.
"""

from __future__ import annotations

import argparse
import sys
import tracemalloc
import warnings
from typing import Any

import numpy as np

from tdsl.jit import JITTensorKernel
from tdsl.runtime.workspace import release_workspaces

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "11 maximum(0.25, a/a*b@(a-c))": (
        "maximum(0.25, a / a * b @ (a - c))",
        {"a": np.float32(1.5), "b": (2048, 2), "c": (2, 2048)},
    ),
    "12a hypot(mean(transpose(...)))": (
        "hypot(mean(transpose((0.5 - a) @ (b * c)), axis=0, keepdims=True), tanh(e))",
        {"a": (2048, 1), "b": (2048,), "c": (1, 2048), "e": (2048, 2048)},
    ),
    "12b sum(softmax(A), axis=0)": ("sum(softmax(A), axis=0)", {"A": (1024, 1024)}),
    "12c mean(x - mean(x, axis=0), axis=1)": (
        "mean(x - mean(x, axis=0), axis=1)",
        {"x": (1024, 1024)},
    ),
}


def arrays(spec: dict[str, Any]) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {}
    for name, shape in spec.items():
        if isinstance(shape, tuple):
            out[name] = rng.uniform(-1, 1, shape).astype(np.float32)
        else:
            out[name] = np.asarray(shape, dtype=np.float32)
    return out


def peak(fn: Any, args: dict[str, Any]) -> tuple[int, Any]:
    fn(**args)
    release_workspaces()  # the call allocates its workspace, as a first call does
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn(**args)
        top = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    outs = out if isinstance(out, tuple) else (out,)
    return top - sum(o.nbytes for o in outs), out


def measure(
    source: str, args: dict[str, Any], target: str, budget: int, threads: int
) -> dict[str, Any]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jit = JITTensorKernel(memory_budget=budget, target=target, threads=threads, cache_dir=False)
        fn = jit.compile(
            source, {k: np.shape(v) for k, v in args.items()}, {k: v.dtype for k, v in args.items()}
        )
    extra, _ = peak(fn, args)
    report = getattr(fn, "fusion_report", None)
    return {
        "extra": extra,
        "fn": fn,
        "warnings": [str(w.message) for w in caught],
        "report": report,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--budgets", default="64,4096,1000000")
    ap.add_argument("--targets", default="numpy,native")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    ns = ap.parse_args(argv)
    budgets = [int(float(b)) for b in ns.budgets.split(",")]
    targets = ns.targets.split(",")
    print(f"{'case':40s} {'target':7s} " + " ".join(f"{b:>12d}" for b in budgets))
    for name, (source, spec) in CASES.items():
        args = arrays(spec)
        for target in targets:
            cells = []
            for budget in budgets:
                r = measure(source, args, target, budget, ns.threads)
                cell = f"{r['extra'] / 1024:10.1f}KB"
                cells.append(cell + ("!" if r["warnings"] else " "))
                if ns.verbose:
                    print(f"  [{name} {target} {budget}] warnings={r['warnings']}")
                    print(r["report"])
            print(f"{name:40s} {target:7s} " + " ".join(cells))
    print("(KB beyond the outputs; '!' = the compile warned that no plan fits the budget)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
