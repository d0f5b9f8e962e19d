"""The options a kernel is compiled with, and their validation."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from tdsl.defaults import (
    NO_FALLBACK_VARIABLE,
    check_memory_budget,
    no_fallback,
    positive_int,
)
from tdsl.errors import TdslOptionError

TARGETS = ("auto", "native", "numpy")
"""What a kernel may be compiled to: ``native`` machine code (through LLVM), the
``numpy`` target's generated Python, or ``auto``, which picks per kernel."""


@dataclass(frozen=True)
class JitOptions:
    """The options a kernel is compiled with; part of the cache key."""

    memory_budget: int | None = None
    """Elements a call may allocate beyond its outputs, all threads together (None: the
    default, :data:`~tdsl.defaults.DEFAULT_MEMORY_BUDGET`, or the inputs' elements
    for a kernel no plan of that fits: :func:`~tdsl.defaults.default_fallback_budget`)."""
    tile_size: int | None = None
    """A cap on the tile size along every tiled dimension (None: only the budget decides)."""
    tile_sizes: tuple[int, ...] = ()
    """Explicit tile sizes, outermost dimension first (empty: chosen from the budget)."""
    threads: int = field(default_factory=lambda: default_threads())
    """Threads the generated code may run large tile loops on (1: none; default: one
    per core, at most 4).  Work is split only where each thread gets about 1 MiB."""
    target: str = field(default_factory=lambda: default_target())
    """``"native"``, ``"numpy"`` or ``"auto"`` (:data:`TARGETS`): native code where it
    loads and pays off, the numpy target for kernels too small to gain from it
    (default: :func:`default_target`)."""

    def __post_init__(self) -> None:
        # Normalized here (NumPy integers become ints, a list of tile sizes a
        # tuple) so that equal options make equal, hashable cache keys.
        set_ = object.__setattr__
        if self.memory_budget is not None:
            set_(self, "memory_budget", check_memory_budget(self.memory_budget, "memory_budget"))
        set_(self, "threads", positive_int("threads", self.threads))
        if self.tile_size is not None:
            set_(self, "tile_size", positive_int("tile_size", self.tile_size))
        sizes = cast(object, self.tile_sizes)  # (what a caller gave, typed or not)
        if not isinstance(sizes, Sequence) or isinstance(sizes, str):
            raise TdslOptionError(
                f"tile_sizes must be a sequence of positive integers, one per dim of a group's "
                f"iteration space (e.g. (64, 128)), got {self.tile_sizes!r}"
            )
        set_(self, "tile_sizes", tuple(positive_int("tile_sizes", t) for t in self.tile_sizes))
        if self.target not in TARGETS:
            choices = ", ".join(f"{t!r}" for t in TARGETS)
            raise TdslOptionError(
                f"target must be one of {choices}, got {self.target!r}",
                note=f"the default comes from ${TARGET_VARIABLE} when it is set",
            )


def default_target() -> str:
    """The target kernels compile to unless told: ``$TDSL_TARGET`` if set, else ``auto``.

    ``TDSL_TARGET=numpy`` runs a program on the numpy target without changing it,
    as ``JAX_PLATFORMS=cpu`` does for jax; a value not in :data:`TARGETS` is a
    :class:`~tdsl.errors.TdslOptionError` when a kernel's options are made.
    """
    return os.environ.get(TARGET_VARIABLE) or "auto"


TARGET_VARIABLE = "TDSL_TARGET"
"""The environment variable :func:`default_target` reads."""

CACHE_DIR_VARIABLE = "TDSL_CACHE_DIR"
"""The environment variable naming the folder of the JIT's cache on disk when
``cache_dir`` is not given (unset or empty: no cache on disk)."""


MAX_BYTES_VARIABLE = "TDSL_CACHE_MAX_BYTES"
"""The environment variable giving the size the cache on disk is kept under
(bytes, or with a unit: ``500M``, ``2G``; 0 for no limit; default 1 GiB)."""


@functools.cache
def default_threads() -> int:
    """The thread count kernels use unless told: one per core, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


__all__ = [
    "CACHE_DIR_VARIABLE",
    "MAX_BYTES_VARIABLE",
    "NO_FALLBACK_VARIABLE",
    "TARGETS",
    "TARGET_VARIABLE",
    "JitOptions",
    "default_target",
    "default_threads",
    "no_fallback",
]
