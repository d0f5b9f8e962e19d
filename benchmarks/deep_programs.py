"""Compile time of long programs: a chain of ``n`` element-wise ops with a reduction
every few ops, on the numpy and native targets.

No pass may recurse as deep as the program is long, and none may take time that
grows with its square (issue 17): a 10,000-op program should compile on the
numpy target, and a 2,000-op one natively, each in under 30 s on the project
machine.  ``tests/unit/jit/test_deep_programs.py`` compiles programs of the same
kind (1,500 and 500 ops) under a stack too shallow for a recursion per op, and
checks their values against NumPy; this script times the full sizes::

    python benchmarks/deep_programs.py                      # numpy 10000, native 2000
    python benchmarks/deep_programs.py --target numpy --ops 1000 2000 4000 10000

Each compile runs in a fresh JIT (no cache), one process, one thread.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]

LINES: tuple[tuple[str, int], ...] = (
    ("x = x * 0.5 + z", 2),
    ("x = x - y * 0.001", 2),
    ("x = tanh(x) * 0.9", 2),
    ("x = maximum(x, -2.0) / 1.5", 2),
    ("x = x - mean(x, axis=1, keepdims=true)", 2),
    ("x = where(x > 0.0, x, x * 0.5)", 3),
    ("y = y * 0.5 + sum(x, axis=0) * 0.01", 4),
)
"""The statements the program cycles through, with the ops each makes (literals aside):
element-wise arithmetic, a function, a comparison and a select, and two reductions
(along each axis) whose results feed the chain again.  Each cycle contracts and adds
the input ``z`` again, so values stay of the order of the inputs however long the
program (and rounding differences do not grow)."""


def _step(k: int, x: Array, y: Array, z: Array) -> tuple[Array, Array]:
    """Statement ``k`` of :data:`LINES` in NumPy."""
    if k == 0:
        return x * 0.5 + z, y
    if k == 1:
        return x - y * 0.001, y
    if k == 2:
        return np.tanh(x) * 0.9, y
    if k == 3:
        return np.maximum(x, -2.0) / 1.5, y
    if k == 4:
        return x - np.mean(x, axis=1, keepdims=True), y
    if k == 5:
        return np.where(x > 0.0, x, x * 0.5), y
    return x, y * 0.5 + np.sum(x, axis=0) * 0.01


def program(
    ops: int, shape: tuple[int, int]
) -> tuple[str, Callable[[Array, Array, Array], Array], int]:
    """A ``.tdsl`` program of at least ``ops`` ops (``main(x: f64[shape], y: f64[cols],
    z: f64[shape])``, returning ``x + y``), the same computation in NumPy, and its exact
    op count."""
    rows, cols = shape
    lines = [f"def main(x: f64[{rows}, {cols}], y: f64[{cols}], z: f64[{rows}, {cols}]):"]
    kinds: list[int] = []
    count = 1  # the final add
    while count < ops:
        k = len(kinds) % len(LINES)
        kinds.append(k)
        lines.append(f"    {LINES[k][0]}")
        count += LINES[k][1]
    lines.append("    return x + y")

    def reference(x: Array, y: Array, z: Array) -> Array:
        for k in kinds:
            x, y = _step(k, x, y, z)
        return x + y

    return "\n".join(lines) + "\n", reference, count


def compile_seconds(target: str, ops: int, shape: tuple[int, int]) -> tuple[float, Any]:
    """Seconds to compile the :func:`program` of ``ops`` ops for ``target``, and the kernel."""
    import tdsl

    text, _, _ = program(ops, shape)
    jit = tdsl.JITTensorKernel(target=target, threads=1)
    start = time.perf_counter()
    kernel = jit.compile(text)
    return time.perf_counter() - start, kernel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=["numpy", "native"], action="append")
    parser.add_argument("--ops", type=int, nargs="+")
    parser.add_argument("--shape", default="64x32", help="rows x cols of x (default 64x32)")
    args = parser.parse_args(argv)
    rows, cols = (int(n) for n in args.shape.split("x"))
    runs: list[tuple[str, int]] = []
    for target in args.target or ["numpy", "native"]:
        for ops in args.ops or [10_000 if target == "numpy" else 2_000]:
            runs.append((target, ops))
    for target, ops in runs:
        seconds, kernel = compile_seconds(target, ops, (rows, cols))
        print(
            f"{target:6} {ops:6} ops, x f64[{rows}, {cols}]: compiled in {seconds:6.2f} s "
            f"(runs on {kernel.target}, {len(kernel.groups)} groups)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
