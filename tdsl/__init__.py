"""tdsl: an inspectable fusion compiler for tensor expressions, built on xDSL.

One function per stage, each taking and returning IR (a ``ModuleOp``) or text::

    ast = tdsl.parse("relu(x @ w + b)")
    mod = tdsl.to_tensordsl("relu(x @ w + b)", shapes={...}, dtypes="float32")
    fused = tdsl.fuse(mod, memory_budget=1_000_000)
    tiled = tdsl.tile(fused)
    src = tdsl.emit_numpy(tiled)

and the JIT, which runs them all and caches the result::

    jit = tdsl.JITTensorKernel(memory_budget=1_000_000)
    fn = jit.compile("matmul(A, relu(B)) + softmax(C)", shapes={...})
    out = fn(A=a, B=b, C=c)

or, as a decorator whose body is tdsl, with the language's functions typed in
:mod:`tdsl.lang`::

    @tdsl.function
    def layer(x, w, b):
        return relu(x @ w + b)

The names are imported lazily, so ``import tdsl`` stays cheap.  The package root
is the top layer of tdsl's architecture (``docs/architecture.md``): it may import
any module, and no module imports it.  It imports :mod:`tdsl.dask`, which
registers Dask arrays with the JIT's call path without importing Dask.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tdsl import dask as dask  # registers Dask arrays with the JIT (tdsl.array_types)
from tdsl.errors import (
    TdslBudgetError,
    TdslBudgetWarning,
    TdslCacheWarning,
    TdslCallError,
    TdslError,
    TdslIndexError,
    TdslIRError,
    TdslNameError,
    TdslNativeError,
    TdslOptionError,
    TdslSyntaxError,
    TdslTypeError,
    TdslWarning,
)
from tdsl.version import __version__ as __version__

if TYPE_CHECKING:
    from tdsl import lang
    from tdsl.backend.numpy.target import emit_numpy
    from tdsl.frontend import parse, to_tensordsl
    from tdsl.jit import CompiledKernel, JITTensorKernel, compile, jit_tensor
    from tdsl.jit.decorator import Function, function
    from tdsl.jit.trace import Traced, trace
    from tdsl.transforms.fuse import explain_fusion, fuse, fusion_report
    from tdsl.transforms.tile import tile

_LAZY: dict[str, str] = {
    "parse": "tdsl.frontend",
    "to_tensordsl": "tdsl.frontend",
    "fuse": "tdsl.transforms.fuse",
    "fusion_report": "tdsl.transforms.fuse",
    "explain_fusion": "tdsl.transforms.fuse",
    "tile": "tdsl.transforms.tile",
    "emit_numpy": "tdsl.backend.numpy.target",
    "JITTensorKernel": "tdsl.jit",
    "CompiledKernel": "tdsl.jit",
    "compile": "tdsl.jit",
    "jit_tensor": "tdsl.jit",
    "function": "tdsl.jit.decorator",
    "Function": "tdsl.jit.decorator",
    "trace": "tdsl.jit.trace",
    "Traced": "tdsl.jit.trace",
}

_SUBMODULES = frozenset({"lang"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"tdsl.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tdsl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, *_SUBMODULES])


__all__ = [
    "CompiledKernel",
    "Function",
    "JITTensorKernel",
    "TdslBudgetError",
    "TdslBudgetWarning",
    "TdslCacheWarning",
    "TdslCallError",
    "TdslError",
    "TdslIRError",
    "TdslIndexError",
    "TdslNameError",
    "TdslNativeError",
    "TdslOptionError",
    "TdslSyntaxError",
    "TdslTypeError",
    "TdslWarning",
    "Traced",
    "compile",
    "emit_numpy",
    "explain_fusion",
    "function",
    "fuse",
    "fusion_report",
    "jit_tensor",
    "lang",
    "parse",
    "tile",
    "to_tensordsl",
    "trace",
]
