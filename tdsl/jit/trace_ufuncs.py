"""A ufunc's methods in a traced function: ``np.add.reduce(x)`` is ``np.sum`` along
axis 0, ``np.add.accumulate(x)`` is ``np.cumsum`` along it, and so on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tdsl.jit.trace_names import trace_error

_UFUNC_METHODS = {
    ("add", "reduce"): "sum",
    ("multiply", "reduce"): "prod",
    ("maximum", "reduce"): "max",
    ("minimum", "reduce"): "min",
    ("logical_and", "reduce"): "all",
    ("logical_or", "reduce"): "any",
    ("add", "accumulate"): "cumsum",
    ("multiply", "accumulate"): "cumprod",
}
"""The ufunc methods a trace writes as NumPy's functions."""


def ufunc_method(name: str, method: str, inputs: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """``np.<name>.<method>(*inputs, **kwargs)``: ``np.add.reduce`` is ``np.sum`` along
    ``axis`` (0 by default, as for every ufunc's ``reduce``; None for all axes),
    ``np.add.accumulate`` is ``np.cumsum`` along it, and so on."""
    function = _UFUNC_METHODS.get((name, method))
    if function is None or len(inputs) != 1:
        trace_error(f"`np.{name}.{method}` is not supported when traced")
    known: set[str] = {"axis", "dtype"} | ({"keepdims"} if method == "reduce" else set())
    extra = [k for k in kwargs if k not in known]
    if extra:
        trace_error(
            f"`np.{name}.{method}` with `{'`, `'.join(extra)}` is not supported when traced"
        )
    kwargs = {"axis": 0, **kwargs}
    if method == "accumulate" and kwargs["axis"] is None and getattr(inputs[0], "ndim", 1) > 1:
        trace_error(
            f"`np.{name}.accumulate` with axis=None of an array of several dims: "
            "NumPy's accumulate takes one axis"
        )
    dtype = kwargs.pop("dtype", None)
    operand = inputs[0]
    if dtype is not None and function in ("max", "min", "any", "all"):
        wanted = np.dtype(dtype)  # (NumPy's loop of that dtype: the operand cast to it)
        if function in ("any", "all") and wanted != np.bool_:
            trace_error(f"`np.{name}.{method}` with dtype={wanted}: NumPy has no such loop")
        operand = operand.astype(wanted)
    elif dtype is not None:
        kwargs["dtype"] = dtype
    return getattr(np, function)(operand, **kwargs)


__all__ = ["ufunc_method"]
