"""NumPy's reductions a trace writes as others: ``initial=`` and ``np.average``.

``np.sum``, ``np.prod``, ``np.max``, ``np.min`` (``np.amax``, ``np.amin``, and the
ndarray methods, which call them) take ``initial``, the value NumPy's reduction starts
from.  A trace writes the reduction without it, then combines it in: ``initial + sum``,
``initial * prod``, ``maximum(initial, max)``, ``minimum(initial, min)``, with
``initial`` converted to the result's dtype first, as NumPy converts it (a float to an
integer dtype truncates; a Python int beyond an integer dtype is NumPy's
``OverflowError``, here a located error).  The order of a sum or a product is then not
NumPy's, so the last bit of a float result may differ, as for any traced sum.  Of an
empty array the result does not depend on its values: it is NumPy's own, a constant.

``np.average(a, axis, weights, returned, keepdims=)`` is NumPy's own algorithm: the mean
without weights; with them, the sum of ``a * weights`` (in NumPy's result dtype, float64
for integers) over the sum of the weights.  The weights are constants (NumPy arrays or
numbers): NumPy raises ``ZeroDivisionError`` when they sum to zero, which a trace checks
while tracing, and could not on traced weights.

(Registered in :data:`tdsl.jit.trace_compose.COMPOSED`, around the entries they had.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tdsl.jit.trace_args import as_array, static_axis, static_ints
from tdsl.jit.trace_names import holds_traced, trace_error

_COMBINE: dict[str, Callable[[Any, Any], Any]] = {
    "sum": np.add,
    "prod": np.multiply,
    "max": np.maximum,
    "amax": np.maximum,
    "min": np.minimum,
    "amin": np.minimum,
}


def _converted(name: str, initial: Any, dtype: np.dtype[Any]) -> Any:
    """``initial`` in ``dtype``, as NumPy's reduction converts it (a traced scalar, a
    Python-number argument say, by a cast in the kernel)."""
    if holds_traced(initial):
        if initial.ndim != 0:
            trace_error(
                f"`np.{name}`: `initial` must be a scalar, not an array of shape "
                f"{tuple(initial.shape)} (NumPy's ValueError)"
            )
        return initial.astype(dtype)
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
        a = as_array(a)
        if 0 in tuple(a.shape):  # (no values: NumPy's result, the initial value)
            if not holds_traced(initial):  # (a constant)
                return getattr(np, name)(
                    np.zeros(a.shape, a.dtype), *args, initial=initial, **kwargs
                )
            empty = getattr(np, name)(np.zeros(a.shape, a.dtype), *args, initial=0, **kwargs)
            value = _converted(name, initial, np.dtype(empty.dtype))
            return np.where(np.ones(empty.shape, np.bool_), value, empty)
        result = getattr(np, name)(a, *args, **kwargs)
        return combine(_converted(name, initial, np.dtype(result.dtype)), result)

    return reduce


def _axes(axis: Any, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return None
    what = "`np.average`"
    axes = tuple(static_axis(a, ndim, what) for a in static_ints(axis, f"the axes of {what}"))
    if len(set(axes)) != len(axes):
        trace_error(f"{what}: repeated axis in {axis!r}")
    return axes


def average(
    a: Any, axis: Any = None, weights: Any = None, returned: bool = False, **kwargs: Any
) -> Any:
    """``np.average``: NumPy's algorithm, with constant weights (see the module docstring)."""
    keep = {k: v for k, v in kwargs.items() if k == "keepdims"}
    if set(kwargs) - {"keepdims"}:
        trace_error(f"`np.average` with `{'`, `'.join(set(kwargs) - {'keepdims'})}` is not known")
    a = as_array(a)
    shape = tuple(a.shape)
    axes = _axes(axis, len(shape))
    if weights is None:
        avg = np.mean(a, axis=axes, **keep)
        size = math.prod(avg.shape)
        scale = np.dtype(avg.dtype).type(math.prod(shape) / size if size else np.nan)
    else:
        if hasattr(weights, "shape") and not isinstance(weights, np.ndarray | np.generic):
            trace_error(
                "the weights of `np.average` are traced: NumPy checks that they do not sum "
                "to zero, which needs their values; pass them as a NumPy array (a constant)"
            )
        wgt = np.asarray(weights)
        if wgt.shape != shape:
            if axes is None:
                trace_error(
                    "`np.average`: Axis must be specified when shapes of a and weights differ."
                )
            if wgt.shape != tuple(shape[k] for k in axes):
                trace_error(
                    "`np.average`: Shape of weights must be consistent with shape of a along "
                    "specified axis."
                )
            wgt = wgt.transpose(np.argsort(axes)).reshape(
                tuple(n if k in axes else 1 for k, n in enumerate(shape))
            )
        exact = np.dtype(a.dtype).kind in "iub"
        result = np.result_type(a.dtype, wgt.dtype, *(["f8"] if exact else []))
        scale = wgt.sum(axis=axes, dtype=result, **keep)
        if np.any(scale == 0.0):
            trace_error("`np.average`: Weights sum to zero, can't be normalized (NumPy's error)")
        avg = np.multiply(a, wgt, dtype=result).sum(axis=axes, **keep) / scale
    if not returned:
        return avg
    if np.shape(scale) == tuple(avg.shape):  # (as NumPy: a scalar sum stays one)
        return avg, scale
    return avg, np.broadcast_to(scale, tuple(avg.shape)).copy()


__all__ = ["average", "with_initial"]
