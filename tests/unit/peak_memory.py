"""What a compiled call allocates: tracemalloc's peak, and NumPy's own buffers.

Shared by the memory tests of the NumPy target and of the memory promise
(``tests/unit`` is on ``sys.path`` through its ``conftest.py``).
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np

from tdsl.runtime.workspace import release_workspaces


def numpy_buffers(threads: int, itemsize: int = 4) -> int:
    """Bytes NumPy's buffered iterator may allocate for the ufunc calls in flight.

    A ufunc that broadcasts allocates buffers of ``np.getbufsize()`` elements
    per operand; that is NumPy's, bounded, and not scratch of the kernel.
    """
    return threads * (3 * np.getbufsize() * itemsize + 16384)


def measure_peak(fn: Any, *arrays: np.ndarray) -> tuple[int, Any]:
    """``fn(*arrays)``'s peak of traced memory above what was allocated before the
    call (its results included), and its results.  The call allocates all it uses, as a
    first call does: native functions' kept workspaces are released first.

    tracemalloc counts every thread of the process, and under ``pytest -n`` an xdist
    worker's message thread (execnet's, started outside :mod:`threading`) allocates while
    a test runs: a test that only slept 0.5 s measured peaks of up to 30 KB, and a flash
    attention call 272 KB once in a full run, where it takes 38 KB.  This is the least
    of two measurements: one such message rarely meets both."""
    fn(*arrays)  # warm up: the constant blocks exist, the thread pool is running
    measured = []
    for _ in range(2):
        release_workspaces()
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            out = fn(*arrays)
            measured.append((tracemalloc.get_traced_memory()[1] - base, out))
        finally:
            tracemalloc.stop()
    return min(measured, key=lambda m: m[0])
