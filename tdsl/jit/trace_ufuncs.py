"""A ufunc's methods in a traced function: ``np.add.reduce(x)`` is ``np.sum`` along
axis 0, ``np.add.accumulate(x)`` is ``np.cumsum`` along it, and so on; and a ufunc
called with ``dtype=``: its operands cast to the loop NumPy picks for that dtype."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tdsl.jit.trace_args import weak_type
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


def loop_operands(
    ufunc: np.ufunc, inputs: Sequence[Any], dtype: Any = None
) -> tuple[list[Any], tuple[np.dtype[Any], ...]]:
    """The operands of ``ufunc(*inputs)`` cast to the input types of the loop NumPy
    resolves (for output dtype ``dtype``, ``casting="same_kind"``, where given), and
    that loop's output types; NumPy's error where it has no such loop or cast."""
    name = ufunc.__name__
    kinds: list[Any] = [
        np.dtype(np.bool_) if type(x) is bool
        else type(x) if type(x) in (int, float)
        else weak_type(x) or np.dtype(x.dtype) if hasattr(x, "dtype")
        else np.asarray(x).dtype
        for x in inputs
    ]  # fmt: skip
    wanted = None if dtype is None else np.dtype(dtype)
    try:
        loop = ufunc.resolve_dtypes(
            (*kinds, *(None,) * ufunc.nout),
            signature=(*(None,) * ufunc.nin, *(wanted,) * ufunc.nout),
            casting="same_kind",
        )
        operands = [
            x.astype(t) if hasattr(x, "astype") and np.dtype(x.dtype) != t
            else x if hasattr(x, "dtype")
            else t.type(x)  # (a Python number: the loop's type, as NumPy converts it)
            for x, t in zip(inputs, loop, strict=False)
        ]  # fmt: skip
    except (TypeError, ValueError, OverflowError) as err:
        given = "" if wanted is None else f" with dtype={wanted.name}"
        trace_error(f"`np.{name}`{given}: {err} (NumPy's error)")
    return operands, loop[ufunc.nin :]


def ufunc_with_dtype(ufunc: np.ufunc, inputs: Sequence[Any], dtype: Any) -> Any:
    """``ufunc(*inputs, dtype=dtype)``: the loop NumPy resolves for that output dtype
    (``casting="same_kind"``, as a ufunc call's), each operand cast to its input type, and
    the ufunc on them; NumPy's error where it has no such loop or cast."""
    operands, outputs = loop_operands(ufunc, inputs, dtype)
    result = ufunc(*operands)
    if ufunc.nout == 1:
        return result if result.dtype == outputs[0] else result.astype(outputs[0])
    return tuple(r if r.dtype == t else r.astype(t) for r, t in zip(result, outputs, strict=True))


__all__ = ["loop_operands", "ufunc_method", "ufunc_with_dtype"]
