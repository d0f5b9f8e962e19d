"""Defaults shared by the passes and the JIT (kept light: the JIT imports it eagerly)."""

from __future__ import annotations

import operator
from typing import Any, cast

from tdsl.errors import TdslOptionError

DEFAULT_MEMORY_BUDGET = 1_000_000
"""Elements of scratch one fused kernel may allocate at a time, unless told otherwise."""


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
    if isinstance(value, bool) or number < 1:
        raise TdslOptionError(f"{name} must be a positive {what}, not {value!r}")
    if number > MAX_OPTION:
        raise TdslOptionError(f"{name} must be at most 2**62, not {value!r}")
    return number


def check_memory_budget(value: object, name: str = "memory-budget") -> int:
    """``value`` as a memory budget (a positive number of elements), else :class:`TdslOptionError`."""
    return positive_int(name, value, "number of elements")
