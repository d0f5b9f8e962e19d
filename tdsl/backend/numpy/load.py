"""Loading generated NumPy code: :func:`load_numpy`, which needs neither xDSL nor the IR.

Kept apart from the emitter so that a kernel loaded from the JIT's cache on
disk runs its stored source without importing xDSL.
"""

from __future__ import annotations

import itertools
import linecache
import weakref
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from tdsl.threads import shared_pool

_counter = itertools.count()


class _Lines:
    """Kept in a generated module's namespace: when the module's functions are gone (the
    namespace with them), its lines leave ``linecache`` (they stayed there for good,
    one entry per kernel ever compiled: found by fuzzing)."""

    __slots__ = ("__weakref__",)


def load_numpy(source: str) -> dict[str, Callable[..., Any]]:
    """Execute generated ``source``; return its functions by IR symbol name.

    A generated module that splits work over threads makes its own pool when
    run standalone; modules loaded here share the process's pool per thread count
    (:func:`tdsl.threads.shared_pool`, native kernels' too), so that many compiled
    kernels do not each keep idle threads.
    """
    filename = f"<tdsl-numpy-{next(_counter)}>"
    # register the text so tracebacks into generated code show its lines
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    lines = _Lines()
    weakref.finalize(lines, linecache.cache.pop, filename, None)
    namespace: dict[str, Any] = {"np": np, "__name__": "tdsl_generated", "_LINES": lines}
    exec(compile(source, filename, "exec"), namespace)
    pool: object = namespace.get("_POOL")
    if isinstance(pool, list) and not pool:
        cast(list[Any], pool).append(shared_pool(int(namespace["_THREADS"]) - 1))
    functions: dict[str, Callable[..., Any]] = namespace["TDSL_FUNCTIONS"]
    return dict(functions)


__all__ = ["load_numpy"]
