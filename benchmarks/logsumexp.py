"""``logsumexp`` on the native loops, beside what it is made of.

``python benchmarks/logsumexp.py`` times, on one thread (f32, medians of 20 calls
after a warm-up), ``logsumexp(A, axis=1)``, its written-out two-pass form and
``sum(exp(A), axis=1)`` on a 256x4096 ``A``, and ``logsumexp(x @ w, axis=1)`` (a
classifier's loss: 512x768 by 768x4096) beside ``log_softmax(x @ w)`` and the bare
``x @ w``, on the native and numpy targets, with eager NumPy's two-pass
``logsumexp`` as the reference.  The native loops run ``logsumexp`` as two sweeps
(a maximum, then a sum of exponentials: reductions LLVM vectorizes) where a second
sweep can read its operand (``tdsl.backend.llvm.loops_common.swept_ops``), and as the
one-pass online state elsewhere.  Run with ``OPENBLAS_THREAD_TIMEOUT=1``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tdsl import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

Array = np.ndarray[Any, Any]


def median_ms(fn: Callable[[], object], repeat: int = 20) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def eager_logsumexp(v: Array) -> Array:
    m = v.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(v - m).sum(axis=1, keepdims=True)))[:, 0]


def main() -> None:
    if native_unavailable_reason() is not None:
        raise SystemExit(f"native code does not run here: {native_unavailable_reason()}")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 4096)).astype(np.float32)
    x = rng.standard_normal((512, 768)).astype(np.float32)
    w = (rng.standard_normal((768, 4096)) * 0.05).astype(np.float32)
    cases: list[tuple[str, dict[str, Array], Callable[[], object]]] = [
        ("logsumexp(a, axis=1)", {"a": a}, lambda: eager_logsumexp(a)),
        (
            "log(sum(exp(a - max(a, axis=1, keepdims=True)), axis=1)) + max(a, axis=1)",
            {"a": a},
            lambda: eager_logsumexp(a),
        ),
        ("sum(exp(a), axis=1)", {"a": a}, lambda: np.exp(a).sum(axis=1)),
        ("logsumexp(x @ w, axis=1)", {"x": x, "w": w}, lambda: eager_logsumexp(x @ w)),
        ("log_softmax(x @ w)", {"x": x, "w": w}, lambda: None),
        ("x @ w", {"x": x, "w": w}, lambda: x @ w),
    ]
    print(f"{'program':76s} {'native':>9s} {'numpy':>9s} {'eager':>9s}  (ms, one thread)")
    for text, arrays, eager in cases:
        shapes = {n: v.shape for n, v in arrays.items()}
        row = []
        for target in ("native", "numpy"):
            fn = JITTensorKernel(target=target, threads=1).compile(text, shapes, "f32")
            row.append(median_ms(lambda fn=fn, arrays=arrays: fn(**arrays)))
        plain = median_ms(eager) if eager() is not None else float("nan")
        print(f"{text:76s} {row[0]:9.2f} {row[1]:9.2f} {plain:9.2f}")


if __name__ == "__main__":
    main()
