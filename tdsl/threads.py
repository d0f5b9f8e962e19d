"""The process's thread pools, which compiled kernels split their tiles over.

One pool per worker count, shared by every kernel of the process on both targets: a
kernel made on ``threads`` threads runs its first share of tiles on the calling thread
and hands the others to the pool of ``threads - 1`` workers.  A pool per kernel kept
its idle workers for as long as the kernel lived, and a JIT's cache keeps many kernels:
30 native kernels on two threads held 31 threads, one pool each.  The workers start on first
use and never wait on one another, so kernels called at once from several threads
share the workers without deadlock: a caller runs its own share and waits for the
rest."""

from __future__ import annotations

import concurrent.futures
import threading

_POOLS: dict[int, concurrent.futures.ThreadPoolExecutor] = {}
_LOCK = threading.Lock()


def shared_pool(workers: int) -> concurrent.futures.ThreadPoolExecutor:
    """The process-wide pool of ``workers`` threads (made on first use)."""
    with _LOCK:
        pool = _POOLS.get(workers)
        if pool is None:
            pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="tdsl")
            _POOLS[workers] = pool
        return pool


__all__ = ["shared_pool"]
