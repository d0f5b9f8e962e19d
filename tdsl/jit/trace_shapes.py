"""NumPy's shape helpers a traced function may call, written as the calls they stand for.

``np.atleast_1d``, ``np.atleast_2d`` and ``np.atleast_3d`` are reshapes (a tuple of
arrays for several arguments, as NumPy 2 returns); ``np.hsplit``, ``np.vsplit`` and
``np.dsplit`` are ``np.split`` along their axis (a list of arrays), with NumPy's
errors for arrays of too few dims.  (Registered in
:data:`tdsl.jit.trace_compose.COMPOSED`.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tdsl.jit.trace_args import ndim_of
from tdsl.jit.trace_names import trace_error


def _at_least(rank: int) -> Callable[..., Any]:
    def shaped(a: Any) -> Any:
        if not hasattr(a, "shape") or isinstance(a, np.ndarray | np.generic):
            return getattr(np, f"atleast_{rank}d")(a)  # (a constant: NumPy's own)
        shape = tuple(a.shape)
        if len(shape) >= rank:
            return a
        if rank == 3 and len(shape) == 2:  # (m, n) -> (m, n, 1)
            return np.reshape(a, (*shape, 1))
        if rank == 3 and len(shape) == 1:  # (n,) -> (1, n, 1)
            return np.reshape(a, (1, *shape, 1))
        return np.reshape(a, (1,) * (rank - len(shape)) + shape)

    def at_least(*arys: Any) -> Any:
        made = tuple(shaped(a) for a in arys)
        return made[0] if len(made) == 1 else made

    return at_least


def _split_along(name: str, least: int, axis: Callable[[int], int]) -> Callable[..., Any]:
    def split(ary: Any, indices_or_sections: Any) -> Any:
        ndim = ndim_of(ary)
        if ndim < least:
            trace_error(
                f"`np.{name}` only works on arrays of {least} or more dimensions "
                f"(NumPy's error), got a {ndim}-d array"
            )
        return np.split(ary, indices_or_sections, axis=axis(ndim))

    return split


SHAPES: dict[str, Callable[..., Any]] = {
    "np.atleast_1d": _at_least(1),
    "np.atleast_2d": _at_least(2),
    "np.atleast_3d": _at_least(3),
    "np.hsplit": _split_along("hsplit", 1, lambda ndim: 1 if ndim > 1 else 0),
    "np.vsplit": _split_along("vsplit", 2, lambda ndim: 0),
    "np.dsplit": _split_along("dsplit", 3, lambda ndim: 2),
}
"""The functions above, by their name under ``np``."""

__all__ = ["SHAPES"]
