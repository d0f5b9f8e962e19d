"""A stack too shallow for a recursion that follows a program's length.

A pass that recursed once per op (or once per few ops) would need as many frames as
the program has ops.  Under :func:`shallow_stack`, a compile may use only ``frames``
more than its caller, far fewer than the programs the tests give it have ops, so such
a recursion is a ``RecursionError`` on a program of a few hundred ops, and the tests
need not compile the 10,000-op programs that would overflow the default limit
(``benchmarks/deep_programs.py`` times those).  A compile of any size needs about 100
frames here (measured: the same for 200 and 1,000 ops).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

FRAMES = 150
"""Frames a compile may use beyond its caller's: what xDSL, the passes and NumPy nest
(about 100), with a margin."""


def depth() -> int:
    """The number of Python frames on the stack here."""
    frame = sys._getframe(1)  # pyright: ignore[reportPrivateUsage]
    n = 1
    while frame.f_back is not None:
        frame = frame.f_back
        n += 1
    return n


@contextlib.contextmanager
def shallow_stack(frames: int = FRAMES) -> Iterator[None]:
    """Python's recursion limit set to ``frames`` beyond the caller's depth, then restored."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth() + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
