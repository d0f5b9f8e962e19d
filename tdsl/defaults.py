"""Defaults shared by the passes and the JIT (kept light: the JIT imports it eagerly)."""

from __future__ import annotations

import operator
import os
from typing import Any, cast

from tdsl.errors import TdslOptionError

DEFAULT_MEMORY_BUDGET = 1_000_000
"""Elements of scratch one fused kernel may allocate at a time, unless told otherwise.

The JIT's default (``memory_budget=None``) is this budget where a plan fits it; a
kernel no plan of it fits (a GPT-2 block: its attention projection's output alone is
1.2 million elements) is planned at :func:`default_fallback_budget` instead."""


def default_fallback_budget(input_elements: int) -> int | None:
    """The budget the JIT's default plans a kernel at where no plan fits
    :data:`DEFAULT_MEMORY_BUDGET`: the elements of the kernel's inputs, when more.

    Below its least need a budget gets the plan of least memory, whose tiles can be a
    row and a column (a GPT-2 block, T=512, ran 150x slower than eager NumPy at 10**6
    elements: its MLP group took 1.6 million tiles). A budget the size of the inputs
    leaves room for real tiles; the inputs are a scale of what eager NumPy allocates
    too (that block: 7.7 million elements of inputs; a call allocates 27 MiB beyond
    its output, eager NumPy 31 MiB)."""
    if input_elements <= DEFAULT_MEMORY_BUDGET:
        return None
    return min(input_elements, MAX_OPTION)  # (many inputs of the largest arrays: capped)


MIN_BLAS_BYTES_PER_THREAD = 1 << 18
"""A group whose loops call BLAS splits its tiles over threads only where its largest
operand has at least this many bytes per thread (256 KiB): its tiles go to threads, each
running its BLAS calls alone, where BLAS would otherwise take both threads for its calls
and leave the sweeps between them (a softmax's) to one.  The loops' plan fits its tiles
to a thread's share of the scratch only then; the runtime splits by the same rule."""

MAX_OPTION = 2**62
"""The largest integer option (a memory budget, a tile size, a thread count): IR
keeps them as 64-bit integers, and no machine has more elements or threads."""


def positive_int(name: str, value: object, what: str = "integer") -> int:
    """``value`` as an int if it is a positive integer (not a bool) of at most
    :data:`MAX_OPTION`, else :class:`TdslOptionError` naming the option:
    ``<name> must be a positive <what>``."""
    try:
        number = operator.index(cast(Any, value))
    except TypeError:
        number = 0
    if isinstance(value, float) and value.is_integer() and value >= 1:  # (1e5)
        raise TdslOptionError(
            f"{name} must be a positive {what}, an int, not the float {value!r}: write {int(value)}"
        )
    if isinstance(value, bool) or number < 1:
        raise TdslOptionError(f"{name} must be a positive {what}, not {value!r}")
    if number > MAX_OPTION:
        raise TdslOptionError(f"{name} must be at most 2**62, not {value!r}")
    return number


def check_memory_budget(value: object, name: str = "memory-budget") -> int:
    """``value`` as a memory budget (a positive number of elements), else :class:`TdslOptionError`."""
    return positive_int(name, value, "number of elements")


NO_FALLBACK_VARIABLE = "TDSL_NO_FALLBACK"
"""The environment variable that turns every fallback after a native failure into an
error (see :func:`no_fallback`)."""


def no_fallback() -> bool:
    """Whether ``$TDSL_NO_FALLBACK`` is set (to anything but empty or ``0``): then a native
    failure that would fall back (``target="auto"`` to the numpy target after a failed
    native compile; a strided variant that fails to compile, which ``auto`` answers with
    the numpy target and ``native`` with a copy of the input) raises a
    :class:`~tdsl.errors.TdslNativeError` with the reason instead.  A test hook, so that a
    lowering bug cannot hide as slowness; read at each fallback, not cached."""
    return os.environ.get(NO_FALLBACK_VARIABLE, "") not in ("", "0")
