"""What a Dask task runs: a tdsl kernel rebuilt from its description, once per process.

A task carries a :class:`KernelSpec` (the kernel's tensordsl IR text and its
:class:`~tdsl.jit.JitOptions`: plain strings and numbers, pickled as data;
the options name the target, ``native`` or ``numpy``, the JIT picked for the
whole kernel, :func:`tdsl.dask.graph.chunk_options`) and
the blocks it is given; it compiles the kernel for the blocks' shapes with
:meth:`~tdsl.jit.JITTensorKernel.compile_ir` through one JIT per process
(:func:`task_jit`), whose cache makes each distinct (kernel, shapes) compile
once per worker process, and calls it through the kernel's public call
interface (which checks the blocks' shapes and dtypes).  No code object and no
compiled kernel ever travels: a worker process imports this module and builds
its own.  This module imports NumPy and ``tdsl.jit`` only, not Dask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tdsl.jit import CacheInfo, CompiledKernel, JitOptions, JITTensorKernel
from tdsl.jit.api import LazyJit

TASK_CACHE_SIZE = 4096
"""Kernels the per-process JIT of the tasks keeps (one per step and distinct chunk shape)."""


@dataclass(frozen=True)
class KernelSpec:
    """A kernel as a task carries it: tensordsl IR text and the options it compiles with.

    The text is a ``func.func @main`` typed for one chunk; :meth:`kernel` re-types it
    for the shapes of the blocks at hand.
    """

    source: str
    options: JitOptions

    def kernel(self, shapes: tuple[tuple[int, ...], ...]) -> CompiledKernel:
        """The kernel for arguments of ``shapes``, compiled on this process's first use."""
        return task_jit().compile_ir(self.source, shapes, options=self.options)


_TASKS = LazyJit(
    # compile_ir keeps its kernels in memory only: no cache on disk
    lambda: JITTensorKernel(cache_size=TASK_CACHE_SIZE, cache_dir=False)
)


def task_jit() -> JITTensorKernel:
    """The JIT that compiles the kernels of this process's tasks."""
    return _TASKS.get()


def cache_info() -> CacheInfo:
    """Hits and misses (compilations) of this process's task kernels."""
    return task_jit().cache_info()


def compiled_targets() -> dict[str, int]:
    """How many of this process's task kernels (those in the cache) run each target
    (``native``, ``numpy``)."""
    counts: dict[str, int] = {}
    for kernel in task_jit().cached_kernels():
        counts[kernel.target] = counts.get(kernel.target, 0) + 1
    return counts


def cache_clear() -> None:
    """Forget this process's task kernels."""
    task_jit().cache_clear()


Array = np.ndarray[Any, Any]


def run_block(spec: KernelSpec, *blocks: Array) -> Any:
    """Run ``spec``'s kernel on ``blocks``: an array, or a tuple for several results."""
    kernel = spec.kernel(tuple(block.shape for block in blocks))
    return kernel(*blocks)


def pass_block(x: Array, axis: object = None, keepdims: object = None) -> Array:
    """The per-chunk step of a tree reduction whose partials a step already computed."""
    return x


def combine_blocks(
    spec: KernelSpec, x: Array, axis: object = None, keepdims: object = None
) -> Array:
    """Combine partials concatenated along the reduced axes (Dask passes ``axis`` and
    ``keepdims``; the kernel knows its axes and keeps them)."""
    result: Array = run_block(spec, x)
    return result


__all__ = [
    "TASK_CACHE_SIZE",
    "KernelSpec",
    "cache_clear",
    "cache_info",
    "combine_blocks",
    "compiled_targets",
    "pass_block",
    "run_block",
    "task_jit",
]
