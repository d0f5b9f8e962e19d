"""NumPy's reductions with ``initial=``, as a trace writes them.

``np.sum``, ``np.prod``, ``np.max``, ``np.min`` (``np.amax``, ``np.amin``, and the
ndarray methods, which call them) take ``initial``, the value NumPy's reduction starts
from.  A trace writes the reduction without it, then combines it in: ``initial + sum``,
``initial * prod``, ``maximum(initial, max)``, ``minimum(initial, min)``, with
``initial`` converted to the result's dtype first, as NumPy converts it (a float to an
integer dtype truncates; a Python int beyond an integer dtype is NumPy's
``OverflowError``, here a located error).  The order of a sum or a product is then not
NumPy's, so the last bit of a float result may differ, as for any traced sum.  Of an
empty array the result does not depend on its values: it is NumPy's own, a constant.

(Registered in :data:`tdsl.jit.trace_compose.COMPOSED`, around the entries they had.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tdsl.jit.trace_names import trace_error

_COMBINE: dict[str, Callable[[Any, Any], Any]] = {
    "sum": np.add,
    "prod": np.multiply,
    "max": np.maximum,
    "amax": np.maximum,
    "min": np.minimum,
    "amin": np.minimum,
}


def _converted(name: str, initial: Any, dtype: np.dtype[Any]) -> Any:
    """``initial`` in ``dtype``, as NumPy's reduction converts it."""
    if type(initial) is int and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= initial <= info.max:
            trace_error(
                f"`np.{name}`: `initial` {initial} is out of bounds for {dtype.name} (NumPy's "
                "OverflowError)"
            )
    with np.errstate(all="ignore"):  # (NumPy's cast: 1e40 in float32 is inf)
        return np.asarray(initial).astype(dtype)


def with_initial(name: str, inner: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """NumPy's ``name`` reduction taking ``initial=``; without it, ``inner`` (the entry
    ``name`` had) or NotImplemented (the language's function)."""
    combine = _COMBINE[name]

    def reduce(a: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("initial", np._NoValue) is np._NoValue:  # pyright: ignore[reportAttributeAccessIssue]
            kwargs.pop("initial", None)
            return NotImplemented if inner is None else inner(a, *args, **kwargs)
        initial = kwargs.pop("initial")
        if not hasattr(a, "dtype"):
            a = np.asarray(a)
        if 0 in tuple(a.shape):  # (no values: NumPy's result, a constant)
            return getattr(np, name)(np.zeros(a.shape, a.dtype), *args, initial=initial, **kwargs)
        result = getattr(np, name)(a, *args, **kwargs)
        return combine(_converted(name, initial, np.dtype(result.dtype)), result)

    return reduce


__all__ = ["with_initial"]
