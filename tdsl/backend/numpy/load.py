"""Loading generated NumPy code: :func:`load_numpy`, which needs neither xDSL nor the IR.

Kept apart from the emitter so that a kernel loaded from the JIT's cache on
disk runs its stored source without importing xDSL.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import linecache
import threading
from collections.abc import Callable
from typing import Any, cast

import numpy as np

_counter = itertools.count()

_SHARED_POOLS: dict[int, concurrent.futures.ThreadPoolExecutor] = {}
_SHARED_POOLS_LOCK = threading.Lock()


def _shared_pool(workers: int) -> concurrent.futures.ThreadPoolExecutor:
    """One process-wide pool per worker count (its threads start on first use)."""
    with _SHARED_POOLS_LOCK:
        pool = _SHARED_POOLS.get(workers)
        if pool is None:
            pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="tdsl")
            _SHARED_POOLS[workers] = pool
        return pool


def load_numpy(source: str) -> dict[str, Callable[..., Any]]:
    """Execute generated ``source``; return its functions by IR symbol name.

    A generated module that splits work over threads makes its own pool when
    run standalone; modules loaded here share one pool per thread count
    instead, so that many compiled kernels do not each keep idle threads.
    """
    filename = f"<tdsl-numpy-{next(_counter)}>"
    # register the text so tracebacks into generated code show its lines
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"np": np, "__name__": "tdsl_generated"}
    exec(compile(source, filename, "exec"), namespace)
    pool: object = namespace.get("_POOL")
    if isinstance(pool, list) and not pool:
        cast(list[Any], pool).append(_shared_pool(int(namespace["_THREADS"]) - 1))
    functions: dict[str, Callable[..., Any]] = namespace["TDSL_FUNCTIONS"]
    return dict(functions)


__all__ = ["load_numpy"]
