"""A native function's common call as straight-line Python, generated per function.

:meth:`tdsl.runtime.native.NativeFunction.__call__` handles every case: inputs that are
not C-contiguous or not of the function's dtypes (a strided variant, or a copy), an
``out`` to write into, the workspace, the thread split, a gather's index errors.  Its
loops over the arguments cost about 2.7 us a call here, where the machine code of a
small kernel takes under 1 us.  :func:`fast_call` writes the common case (every input
C-contiguous and of its dtype, no ``out``) for one function as a Python function with
no loops: each argument's address is one expression, the constants' are literals.  Any
other call goes to the general method, which computes the same.

:func:`data_address` reads an array's address from the array object itself (NumPy's
``PyArrayObject`` keeps its data pointer right after the object header): 0.14 us,
against the buffer protocol's 0.4 us and 1 us for a read-only array.  The module
checks that layout on a few arrays when it loads (:data:`LAYOUT_HOLDS`);
:mod:`tdsl.runtime.native` takes every address that way where it holds.
"""

# pyright: reportPrivateUsage=false
# (this module writes one method of NativeFunction: it reads the function's own fields)

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tdsl.errors import index_error

if TYPE_CHECKING:
    from tdsl.runtime.native import NativeFunction


_HEADER = object.__basicsize__
"""The bytes of a Python object's header, which ``PyArrayObject``'s data pointer follows."""

_pointer_at = ctypes.c_void_p.from_address


def data_address(a: np.ndarray[Any, Any]) -> int:
    """The address of ``a``'s data, read from the array object (``a`` an ndarray)."""
    return _pointer_at(id(a) + _HEADER).value or 0


def _layout_holds() -> bool:
    """Whether :func:`data_address` gives ``ctypes.data`` on arrays of several kinds
    (only asked of CPython, where an object's id is its address)."""
    if sys.implementation.name != "cpython":
        return False
    base = np.arange(12.0)
    base.flags.writeable = False
    samples = [np.empty((3, 4), np.float32), base, base[3:], base[::2], np.empty(0)]
    return all(data_address(a) == a.ctypes.data for a in samples)


LAYOUT_HOLDS = _layout_holds()
"""Whether :func:`data_address` may read an array's address from the array object."""


def fast_call(fn: NativeFunction, address: Callable[[Any], int]) -> Callable[..., Any]:
    """``fn``'s call, straight-line for C-contiguous ndarray inputs of its dtypes and no
    ``out`` (``address``: an array's data address); any other call runs
    ``fn._general``."""
    env: dict[str, Any] = {
        "general": fn._general,
        "empty": np.empty,
        "zeros": np.zeros,
        "int64": np.int64,
        "address": address,
        "workspace": fn.workspace,
        "main": fn.main,
        "run": fn._run,
        "index_error": index_error,
        "ND": np.ndarray,
    }
    inputs = [f"a{k}" for k in range(len(fn._inputs))]
    checks: list[str] = []
    for k, (_, dtype) in enumerate(fn._inputs):
        env[f"D{k}"] = dtype
        checks.append(f"a{k}.__class__ is ND and a{k}.flags.c_contiguous and a{k}.dtype == D{k}")
    body: list[str] = [
        "def call(*arrays, out=None):",
        f"    if out is not None or len(arrays) != {len(inputs)}:",
        "        return general(*arrays, out=out)",
    ]
    if inputs:
        body.append(f"    {', '.join(inputs)}{',' if len(inputs) == 1 else ''} = arrays")
        body.append(f"    if not ({' and '.join(checks)}):")
        body.append("        return general(*arrays, out=out)")
    pointer = ["0"] * len(fn.args)
    for k, (i, _) in enumerate(fn._inputs):
        pointer[i] = f"address(a{k})"
    results: list[str] = []
    for k, (i, shape, dtype) in enumerate(fn._outputs):
        env[f"S{k}"], env[f"O{k}"] = shape, dtype
        body.append(f"    r{k} = empty(S{k}, O{k})")
        pointer[i] = f"address(r{k})"
        results.append(f"r{k}")
    for k, (i, _) in enumerate(fn._errors):
        body.append(f"    e{k} = zeros(2, int64)")
        pointer[i] = f"address(e{k})"
    for i, _ in fn._consts:
        pointer[i] = str(fn._pointers[i])
    slots = bool(fn._slots)
    for i, offset in fn._slots:
        pointer[i] = f"base + {offset}"
    for i, source, offset in fn._views:
        pointer[i] = f"p{source} + {offset}"
    # every pointer a name of its own, in argument order but a view after its source
    order = [i for i in range(len(fn.args)) if not any(v[0] == i for v in fn._views)]
    order += [v[0] for v in fn._views]
    indent = "    "
    if slots:
        body.append("    space = workspace.take()")
        body.append("    try:")
        body.append("        base = space[1]")
        indent = "        "
    body += [f"{indent}p{i} = {pointer[i]}" for i in order]
    names = ", ".join(f"p{i}" for i in range(len(fn.args)))
    if fn._split:
        env["THREADS"] = tuple(enumerate(fn._threads))
        body.append(f"{indent}pointers = [{names}]")
        body.append(f"{indent}for n, threads in THREADS:")
        body.append(f"{indent}    run(n, threads, {'base' if slots else '0'}, pointers)")
    else:
        body.append(f"{indent}main({names})")
    if slots:
        body.append("    finally:")
        body.append("        workspace.give(space)")
    for k, (_, (axis, extent, where)) in enumerate(fn._errors):
        body.append(f"    if e{k}[0]:")
        body.append(f"        raise index_error(int(e{k}[1]), {axis}, {extent}, {where!r})")
    if not results:
        body.append("    return None")
    elif len(results) == 1:
        body.append(f"    return {results[0]}")
    else:
        body.append(f"    return ({', '.join(results)},)")
    code = compile("\n".join(body) + "\n", f"<tdsl native call {fn.name}>", "exec")
    exec(code, env)
    return env["call"]
