"""Where a compile's time goes: each stage's seconds on the kernel
(:attr:`~tdsl.jit.compiled.CompiledKernel.compile_time`) and on the ``tdsl`` logger.

The logger is standard :mod:`logging`: each stage's time at ``DEBUG`` (the frontend,
each pass under its ``tdsl-opt -p`` name, the numpy target, and for native code its
compile to machine code), and a compile of more than :data:`SLOW_COMPILE_S` seconds
at ``INFO`` (the whole at ``DEBUG`` otherwise)::

    import logging
    logging.basicConfig()
    logging.getLogger("tdsl").setLevel(logging.DEBUG)
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Generator
from contextvars import ContextVar

LOGGER = logging.getLogger("tdsl")
"""The ``tdsl`` logger (no handler of its own: the application configures logging)."""

SLOW_COMPILE_S = 1.0
"""A compile longer than this, in seconds, is reported at ``INFO``."""

_TIMES: ContextVar[dict[str, float] | None] = ContextVar("tdsl_compile_times", default=None)


@contextlib.contextmanager
def collecting() -> Generator[dict[str, float]]:
    """Collect the stage times recorded inside, in order, into the dict it yields."""
    times: dict[str, float] = {}
    token = _TIMES.set(times)
    try:
        yield times
    finally:
        _TIMES.reset(token)


def record(name: str, seconds: float) -> None:
    """Add ``seconds`` to stage ``name`` of the compile being collected, and log it."""
    times = _TIMES.get()
    if times is not None:
        times[name] = times.get(name, 0.0) + seconds
    LOGGER.debug("compile stage %s: %.1f ms", name, seconds * 1e3)


@contextlib.contextmanager
def stage(name: str) -> Generator[None]:
    """Time the body as stage ``name``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        record(name, time.perf_counter() - start)


def report(what: Callable[[], str], times: dict[str, float]) -> None:
    """Log the whole of a compile of ``what()``: at ``INFO`` when slow, with its slowest
    stages, else at ``DEBUG`` (nothing is formatted unless the logger takes it)."""
    total = sum(times.values())
    level = logging.INFO if total > SLOW_COMPILE_S else logging.DEBUG
    if not LOGGER.isEnabledFor(level):
        return
    slowest = sorted(times.items(), key=lambda kv: -kv[1])[:3]
    detail = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in slowest)
    LOGGER.log(level, "compiled %s in %.2f s (%s)", what(), total, detail)


__all__ = ["LOGGER", "SLOW_COMPILE_S", "collecting", "record", "report", "stage"]
