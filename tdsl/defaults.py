"""Defaults shared by the passes and the JIT (kept light: the JIT imports it eagerly)."""

from __future__ import annotations

import operator
from typing import Any, cast

from tdsl.errors import TdslOptionError

DEFAULT_MEMORY_BUDGET = 1_000_000
"""Elements of scratch one fused kernel may allocate at a time, unless told otherwise."""


def check_memory_budget(value: object, name: str = "memory-budget") -> int:
    """``value`` as a memory budget (a positive number of elements), else :class:`TdslOptionError`."""
    try:
        number = operator.index(cast(Any, value))
    except TypeError:
        number = 0
    if isinstance(value, bool) or number < 1:
        raise TdslOptionError(f"{name} must be a positive number of elements, not {value!r}")
    return number
