"""The options a kernel is compiled with, and their validation."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from tdsl.defaults import DEFAULT_MEMORY_BUDGET, check_memory_budget, positive_int


@dataclass(frozen=True)
class JitOptions:
    """The options a kernel is compiled with; part of the cache key."""

    memory_budget: int = DEFAULT_MEMORY_BUDGET
    """Elements of scratch one fused kernel may allocate at a time, all threads together."""
    tile_size: int | None = None
    """A cap on the tile size along every tiled dimension (None: only the budget decides)."""
    tile_sizes: tuple[int, ...] = ()
    """Explicit tile sizes, outermost dimension first (empty: chosen from the budget)."""
    threads: int = field(default_factory=lambda: default_threads())
    """Threads the generated code may run large tile loops on (1: none; default: one
    per core, at most 4).  Work is split only where each thread gets about 1 MiB."""

    def __post_init__(self) -> None:
        # Normalized here (NumPy integers become ints, a list of tile sizes a
        # tuple) so that equal options make equal, hashable cache keys.
        set_ = object.__setattr__
        set_(self, "memory_budget", check_memory_budget(self.memory_budget, "memory_budget"))
        set_(self, "threads", positive_int("threads", self.threads))
        if self.tile_size is not None:
            set_(self, "tile_size", positive_int("tile_size", self.tile_size))
        set_(self, "tile_sizes", tuple(positive_int("tile_sizes", t) for t in self.tile_sizes))


@functools.cache
def default_threads() -> int:
    """The thread count kernels use unless told: one per core, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


__all__ = ["JitOptions", "default_threads"]
