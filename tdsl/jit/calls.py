"""Calling a compiled kernel: argument checks and the generated fast call path.

A compiled kernel checks its arguments on every call (one generated comparison
per operand: class, shape, dtype).  A missing or unexpected argument, a wrong
shape or dtype, or a value that is not a NumPy array raises
:class:`~tdsl.errors.TdslCallError` naming the argument, what was expected and
what came.
"""

from __future__ import annotations

import builtins
import keyword
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from tdsl.errors import TdslCallError
from tdsl.jit.kernel import ELEMENT_NAMES, CompiledKernel, type_str


class _Missing:
    """The default of an argument the caller did not pass."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


def describe(value: object) -> str:
    """``f32[4, 3]`` for an array, else the type of ``value``."""
    if isinstance(value, np.ndarray):
        array = cast(np.ndarray[Any, Any], value)
        return type_str(array.dtype, array.shape)
    return f"a value of type `{type(value).__qualname__}`"


def _check_args(kernel: CompiledKernel, given: Sequence[Any]) -> list[np.ndarray[Any, Any]]:
    """The arrays to run ``kernel`` on, or :class:`TdslCallError` for the first bad one."""
    arrays: list[np.ndarray[Any, Any]] = []
    for spec, value in zip(kernel.args, given, strict=True):
        expected = type_str(spec.dtype, spec.shape)
        where = f"argument `{spec.name}` of kernel `{kernel.name}`"
        if value is MISSING:
            raise TdslCallError(f"missing {where}: expected an array of {expected}")
        if not isinstance(value, np.ndarray):
            raise TdslCallError(
                f"{where} must be a NumPy array of {expected}, got {describe(value)}"
            )
        array = cast(np.ndarray[Any, Any], value)
        if array.shape != spec.shape:
            raise TdslCallError(
                f"{where} has the wrong shape: expected {expected}, got {describe(array)}"
            )
        if array.dtype != spec.dtype:
            raise TdslCallError(
                f"{where} has the wrong dtype: expected {expected}, got {describe(array)}"
            )
        arrays.append(np.asarray(array))
    return arrays


def call_checked(
    kernel: CompiledKernel, given: Sequence[Any], more: Sequence[Any], extra: Mapping[str, Any]
) -> Any:
    """The slow call path: precise errors, or a call after the careful check passes.

    The fast path bails out here for any irregularity: an error, but also a
    subclass of ndarray or an equal but non-canonical dtype object, which are fine.
    """
    names = kernel.arg_names
    if extra:
        unexpected = next(iter(extra))
        raise TdslCallError(
            f"kernel `{kernel.name}` got an unexpected argument `{unexpected}`; "
            f"its arguments are {_name_list(names)}"
        )
    if more:
        raise TdslCallError(
            f"kernel `{kernel.name}` takes {len(names)} argument{'s' if len(names) != 1 else ''} "
            f"({_name_list(names)}), got {len(names) + len(more)}"
        )
    return kernel.function(*_check_args(kernel, given))


def call_generic(kernel: CompiledKernel, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """Bind positional and keyword arguments by hand, then take the checked path."""
    names = kernel.arg_names
    given: list[Any] = list(args[: len(names)]) + [MISSING] * max(0, len(names) - len(args))
    extra: dict[str, Any] = {}
    for key, value in kwargs.items():
        try:
            index = names.index(key)
        except ValueError:
            extra[key] = value
            continue
        if index < len(args):
            raise TdslCallError(
                f"kernel `{kernel.name}` got two values for argument `{key}` "
                "(positional and keyword)"
            )
        given[index] = value
    return call_checked(kernel, given, args[len(names) :], extra)


def _name_list(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


def _fast_names_ok(names: Sequence[str]) -> bool:
    """Whether the input names can be the generated ``__call__``'s parameter names."""
    return all(
        n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("_tdsl") for n in names
    ) and len(set(names)) == len(names)


def make_calls(kernel: CompiledKernel) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Generate the kernel's ``__call__`` and ``try_call``: parameters named like the inputs.

    Per operand the check is ``x.__class__ is ndarray and x.shape == S and x.dtype is D``
    (three attribute reads and a tuple compare); anything else (an error, or an
    ndarray subclass, or an equal but distinct dtype object) makes ``__call__``
    take the slow path, which raises the precise error or calls after the careful
    check.  ``try_call`` (no ``self``; a dict of arrays by name) runs the kernel if
    the arrays fit exactly and returns ``NotImplemented`` otherwise: the one-shot
    ``jit(...)`` path, which has its arrays in a dict already.  Python
    itself binds positional and keyword arguments; a value passed both ways makes
    Python raise its usual ``TypeError``.
    """
    names = kernel.arg_names
    if not _fast_names_ok(names):

        def call(self: CompiledKernel, *args: Any, **kwargs: Any) -> Any:
            return call_generic(self, args, kwargs)

        def attempt(arrays: Mapping[str, Any]) -> Any:
            try:
                return call_generic(kernel, (), arrays)
            except TdslCallError:
                return NotImplemented

        return call, attempt
    namespace: dict[str, Any] = {
        "_tdsl_M": MISSING,
        "_tdsl_NO": NotImplemented,
        "_tdsl_nd": np.ndarray,
        "_tdsl_fn": kernel.function,
        "_tdsl_slow": call_checked,
        # the inputs' names are locals of the generated code and may shadow builtins
        "_tdsl_len": len,
    }
    checks = ["_tdsl_more", "_tdsl_extra"]
    for i, spec in enumerate(kernel.args):
        namespace[f"_tdsl_s{i}"] = spec.shape
        namespace[f"_tdsl_d{i}"] = spec.dtype
        n = spec.name
        checks.append(
            f"{n}.__class__ is not _tdsl_nd or {n}.shape != _tdsl_s{i} or {n}.dtype is not _tdsl_d{i}"
        )
    params = "".join(f"{n}=_tdsl_M, " for n in names)
    operands = ", ".join(names)
    given = f"({operands},)" if names else "()"
    condition = "\n            or ".join(checks)
    lookups = "".join(f"    {n} = _tdsl_d.get({n!r}, _tdsl_M)\n" for n in names)
    code = (
        f"def __call__(_tdsl_self, {params}*_tdsl_more, **_tdsl_extra):\n"
        f"    if ({condition}):\n"
        f"        return _tdsl_slow(_tdsl_self, {given}, _tdsl_more, _tdsl_extra)\n"
        f"    return _tdsl_fn({operands})\n"
        f"\n"
        f"def _try(_tdsl_d):\n"
        f"    _tdsl_more = _tdsl_len(_tdsl_d) != {len(names)}\n"
        f"    _tdsl_extra = False\n"
        f"{lookups}"
        f"    if ({condition}):\n"
        f"        return _tdsl_NO\n"
        f"    return _tdsl_fn({operands})\n"
    )
    exec(builtins.compile(code, f"<tdsl call {kernel.name}>", "exec"), namespace)
    return (
        cast(Callable[..., Any], namespace["__call__"]),
        cast(Callable[..., Any], namespace["_try"]),
    )


def finish(kernel: CompiledKernel) -> CompiledKernel:
    """Give ``kernel`` a class of its own whose ``__call__`` is the generated fast path.

    Special methods are looked up on the type, and one Python frame per call
    matters at 64x64 (a call costs ~0.1 us, a kernel a few us).
    """
    call, attempt = make_calls(kernel)
    cls = type(
        "CompiledKernel",
        (CompiledKernel,),
        {
            "__call__": call,
            "__module__": CompiledKernel.__module__,
            "__doc__": CompiledKernel.__doc__,
        },
    )
    kernel.__class__ = cls
    kernel.try_call = attempt
    return kernel


def check_one_shot(name: str, value: object) -> None:
    """One-shot inputs must be float arrays: the kernel is compiled for their types."""
    if not isinstance(value, np.ndarray):
        raise TdslCallError(f"argument `{name}` must be a NumPy array, got {describe(value)}")
    dtype = cast(np.ndarray[Any, Any], value).dtype
    if dtype.name not in ELEMENT_NAMES:
        raise TdslCallError(
            f"argument `{name}` has dtype {dtype}; tdsl computes on float16, float32 or float64"
        )
    if not dtype.isnative:
        raise TdslCallError(
            f"argument `{name}` has non-native byte order ({dtype.str}); convert it with "
            f"`.astype(np.{dtype.name})`"
        )


__all__ = [
    "MISSING",
    "call_checked",
    "call_generic",
    "check_one_shot",
    "describe",
    "finish",
    "make_calls",
]
