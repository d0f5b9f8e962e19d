"""Eager evaluation of one language function on NumPy values: what :mod:`tdsl.lang` runs.

``evaluate("softmax", (x,), {"axis": 0})`` writes the call in the language
(``softmax(x, axis=0)``), lowers it with the frontend for the values' shapes
and dtypes (a Python number is a weak scalar input, as in a one-shot JIT
call), and runs the module in tdsl's interpreter, where each op computes
through its own ``evaluate``.  So an eager call types, promotes and refuses
exactly as a compiled kernel does, and computes what the reference computes.
Lowered modules are cached per function, keywords, shapes and dtypes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tdsl.jit.arg_inference import infer

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

Array = np.ndarray[Any, np.dtype[Any]]

PARAMETERS = {0: (), 1: ("x",), 2: ("a", "b"), 3: ("a", "b", "c")}
"""The names of the tensor arguments, by arity, as the functions' signatures show them."""


def _literal(key: str, value: object) -> str:
    """A keyword value as the language spells it (``-1``, ``1e-05``, ``True``, ``None``, a
    dtype by NumPy's name: ``float32``; ``inf`` and ``nan``)."""
    if key == "dtype" and isinstance(value, str):
        return value  # as given: "float32", or the language's "f16" (NumPy's "f16" is 128-bit)
    if key == "dtype" and value is not None:
        try:
            return np.dtype(cast(Any, value)).name
        except TypeError:
            return str(value)  # the language's own names: f32; refused when lowered
    if isinstance(value, float) and not np.isfinite(value):
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    return repr(value)


@functools.lru_cache(maxsize=512)
def _module(
    function: str,
    types: tuple[tuple[str, tuple[int, ...], object], ...],
    keywords: tuple[tuple[str, object], ...],
    sequence: bool = False,
    part: int | None = None,
) -> ModuleOp:
    from tdsl.frontend import to_tensordsl

    names = [name for name, _, _ in types]
    # a string (einsum's subscripts) comes first, before the tensors
    leading = [repr(value) for key, value in keywords if key != "dtype" and isinstance(value, str)]
    words = [
        f"{key}={_literal(key, value)}"
        for key, value in keywords
        if key == "dtype" or not isinstance(value, str)
    ]
    tensors = [f"({''.join(n + ', ' for n in names)})"] if sequence else names
    source = f"{function}({', '.join([*leading, *tensors, *words])})"
    if part is not None:  # one part of a split
        source += f"[{part}]"
    shapes = {name: shape for name, shape, _ in types}
    dtypes: dict[str, Any] = {name: dtype for name, _, dtype in types}
    return to_tensordsl(source, shapes, dtypes, filename=f"<tdsl.lang.{function}>")


def evaluate(
    function: str,
    args: Sequence[object],
    keywords: Mapping[str, object],
    sequence: bool = False,
    part: int | None = None,
) -> Array:
    """``function(*args, **keywords)`` on NumPy values, with tdsl's semantics.

    Raises the :class:`~tdsl.errors.TdslError` the compiler would for operands or
    keywords it refuses, and :class:`~tdsl.errors.TdslCallError` for a value that
    is no array, NumPy scalar or Python number.
    """
    from tdsl.interpreters.run import run_function

    names = tuple(f"a{k}" for k in range(len(args))) if sequence else PARAMETERS[len(args)]
    values: list[object] = []
    types: list[tuple[str, tuple[int, ...], object]] = []
    for name, arg in zip(names, args, strict=True):
        value: Any = arg
        if isinstance(value, list | tuple):  # nested Python numbers: an array, as NumPy reads them
            value = np.asarray(cast(Any, value))
        shape, dtype = infer(name, value)
        if dtype is float or dtype is int:  # a Python number: weak (see _check_weak)
            types.append((name, (), dtype))
            values.append(value)
        else:
            types.append((name, tuple(shape), cast(np.dtype[Any], dtype).name))
            values.append(value)
    module = _module(function, tuple(types), tuple(keywords.items()), sequence, part)
    _check_weak(function, module, types, values)
    (result,) = run_function(module, "main", *values)
    return result


def _check_weak(
    function: str,
    module: ModuleOp,
    types: Sequence[tuple[str, tuple[int, ...], object]],
    values: list[object],
) -> None:
    """Each weak (Python) number of ``args`` as a compiled kernel takes it, a 0-d int64 or
    float64: a Python int beyond the integer dtype it meets is NumPy 2's error, a
    ``TdslCallError``, as on a call (``maximum(t, 2**40)`` of an ``i32`` ``t``: the
    interpreter wrapped it)."""
    from xdsl.dialects.func import FuncOp

    from tdsl.jit.compiled import ArgSpec
    from tdsl.jit.values import convert_weak
    from tdsl.jit.weak_bounds import int_bounds

    (main,) = [op for op in module.ops if isinstance(op, FuncOp)]
    for k, (name, _, kind) in enumerate(types):
        if kind is int or kind is float:
            dtype = np.dtype(np.int64 if kind is int else np.float64)
            spec = ArgSpec(name, (), dtype, weak=True, bounds=int_bounds(main.args[k]))
            values[k] = convert_weak(f"argument {k + 1} of `{function}`", spec, values[k])


def evaluate_parts(
    function: str, args: Sequence[object], keywords: Mapping[str, object]
) -> list[Array]:
    """A split, ``function(*args, **keywords)``, on NumPy values: its parts, each computed
    as ``function(...)[k]`` with tdsl's semantics."""
    sections = keywords.get("indices_or_sections")
    count = sections if isinstance(sections, int) else len(cast(Sequence[int], sections)) + 1
    return [evaluate(function, args, keywords, part=k) for k in range(count)]


__all__ = ["evaluate", "evaluate_parts"]
