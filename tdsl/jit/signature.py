"""Checking the ``shapes=`` and ``dtypes=`` of a compile request against the kernel.

For a bare expression they declare the inputs, so each name they give must be
one the expression uses.  For a ``.tdsl`` program the kernel's signature
declares them; given anyway, they must match it exactly: ``shapes=`` names
every parameter with its shape, ``dtypes=`` gives every parameter's dtype
(names it leaves out are float64, as for an expression).  The Python type
``float`` (a Python scalar) matches any 0-d parameter, which converts it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, cast

from tdsl.errors import TdslNameError, TdslTypeError
from tdsl.jit.cache import dtype_key
from tdsl.jit.compiled import ELEMENT_NAMES, ArgSpec, CompiledKernel, type_str


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


def _near(name: str, candidates: Sequence[str]) -> str:
    """``; did you mean `x`?`` for the candidate equal but for case, else the closest."""
    close = [c for c in candidates if c.lower() == name.lower()]
    close = close or difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


def _show(key: object) -> str:
    """A normalized dtype as the message shows it."""
    if key is float:
        return "a Python float (`float`, a weak scalar)"
    if key is int:
        return "a Python int (`int`, a weak integer)"
    if isinstance(key, str) and key in ELEMENT_NAMES.values():
        return next(k for k, v in ELEMENT_NAMES.items() if v == key)
    return f"`{key}`"


def _is_mapping(value: object) -> bool:
    return isinstance(value, Mapping)


def check_request(
    kernel: CompiledKernel,
    shapes: Mapping[str, tuple[int, ...]] | None,
    dtypes: object,
) -> None:
    """Raise a TdslError if ``shapes`` or ``dtypes`` (as given to compile) do not fit ``kernel``.

    ``shapes`` is normalized (int tuples); ``dtypes`` is as the caller gave it.
    """
    per_name = cast(Mapping[str, object], dtypes) if _is_mapping(dtypes) else None
    names = kernel.arg_names
    for option, given in (("shapes", shapes), ("dtypes", per_name)):
        for name in given or ():
            if name in names:
                continue
            if kernel.program:
                role = f"which is not a parameter of kernel `{kernel.name}`"
                listed = f"its parameters are {_names(names)}"
            else:
                role = "which the expression does not use"
                listed = f"its inputs are {_names(names)}"
            raise TdslNameError(
                f"`{option}=` names `{name}`, {role}{_near(name, names)} ({listed})"
            )
    if not kernel.program:
        return
    for spec in kernel.args:
        _check_parameter(kernel, spec, shapes, dtypes, per_name)


def _check_parameter(
    kernel: CompiledKernel,
    spec: ArgSpec,
    shapes: Mapping[str, tuple[int, ...]] | None,
    dtypes: object,
    per_name: Mapping[str, object] | None,
) -> None:
    declared = type_str(spec.dtype, spec.shape)
    where = f"parameter `{spec.name}` of kernel `{kernel.name}` is {declared} in its signature"
    if shapes is not None:
        if spec.name not in shapes:
            raise TdslNameError(
                f"`shapes=` gives no shape for parameter `{spec.name}` of kernel "
                f"`{kernel.name}` ({declared} in its signature)"
            )
        if shapes[spec.name] != spec.shape:
            raise TdslTypeError(f"{where}, but `shapes=` gives {shapes[spec.name]}")
    if dtypes is None:
        return
    given: Any = per_name.get(spec.name, "f64") if per_name is not None else dtypes
    key = dtype_key(given)
    if key is float:
        if spec.shape:
            raise TdslTypeError(
                f"{where}, but `dtypes=` gives {_show(key)}, which only a 0-d parameter takes"
            )
        return
    if key != ELEMENT_NAMES.get(spec.dtype.name):
        raise TdslTypeError(f"{where}, but `dtypes=` gives {_show(key)}")


__all__ = ["check_request"]
