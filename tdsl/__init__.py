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

The names are imported lazily, so ``import tdsl`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tdsl.errors import (
    TdslBudgetError,
    TdslBudgetWarning,
    TdslCacheWarning,
    TdslCallError,
    TdslError,
    TdslIRError,
    TdslNameError,
    TdslNativeError,
    TdslOptionError,
    TdslSyntaxError,
    TdslTypeError,
    TdslWarning,
)

if TYPE_CHECKING:
    from tdsl import lang
    from tdsl.frontend import parse, to_tensordsl
    from tdsl.jit import CompiledKernel, JITTensorKernel, compile, jit_tensor
    from tdsl.jit.decorator import Function, function
    from tdsl.lowering.fuse import explain_fusion, fuse, fusion_report
    from tdsl.lowering.numpy_target import emit_numpy
    from tdsl.lowering.tile import tile

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "parse": "tdsl.frontend",
    "to_tensordsl": "tdsl.frontend",
    "fuse": "tdsl.lowering.fuse",
    "fusion_report": "tdsl.lowering.fuse",
    "explain_fusion": "tdsl.lowering.fuse",
    "tile": "tdsl.lowering.tile",
    "emit_numpy": "tdsl.lowering.numpy_target",
    "JITTensorKernel": "tdsl.jit",
    "CompiledKernel": "tdsl.jit",
    "compile": "tdsl.jit",
    "jit_tensor": "tdsl.jit",
    "function": "tdsl.jit.decorator",
    "Function": "tdsl.jit.decorator",
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
    "TdslNameError",
    "TdslNativeError",
    "TdslOptionError",
    "TdslSyntaxError",
    "TdslTypeError",
    "TdslWarning",
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
]
