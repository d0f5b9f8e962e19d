"""The JIT API: compile a tensor expression (or a ``.tdsl`` kernel) to NumPy, cache it, call it.

```python
from tdsl import JITTensorKernel, jit_tensor
jit = JITTensorKernel(memory_budget=1_000_000)         # also tile_size=, tile_sizes=, threads=
fn = jit.compile("matmul(A,relu(B))+softmax(C)",
                 shapes={"A": (8, 16), "B": (16, 8), "C": (8, 8)})   # dtypes= default float64
out = fn(A=A, B=B, C=C)                                # or fn(A, B, C), in signature order
out = jit("relu(A)+B", A=a, B=b)                       # one-shot: shapes and dtypes from the arrays
out = jit_tensor("relu(A)+B", {"A": (4,), "B": (4,)}, A=a, B=b)
```

Compiling runs the whole pipeline in-process, on IR objects (never printing and
re-parsing): the frontend (``parse`` and ``lower``, as ``to_tensordsl`` does),
``fuse`` under the memory budget, ``tile``, and the NumPy target, whose Python
source is exec'd.  Of a program, only the chosen kernel is compiled.  The
result is a :class:`CompiledKernel`: callable, and showing what was done
(``.source``, ``.ir``, ``.groups``, ``.fusion_report``).

Source text may be a bare expression (its inputs are the names it uses, with
``shapes=`` and ``dtypes=``), or a ``.tdsl`` program of ``def`` kernels whose
signatures give the shapes and dtypes.  From a program with several kernels,
``kernel="name"`` picks one; without it the program's only kernel, or else its
last one, is compiled (the last kernel is the program's "main" by convention,
as helpers are usually written first).

Kernels are cached per :class:`JITTensorKernel` on (source text, shapes,
dtypes, kernel name, filename, options) in a thread-safe LRU cache
(:meth:`JITTensorKernel.cache_info`).  A one-shot call ``jit(source, **arrays)``
first tries the kernel that source last ran with (its own argument check says
whether the arrays fit), so a repeated call costs a few microseconds on top of
the kernel; other arrays go through the cache.  Compilation itself is
serialized by one process-wide lock: xDSL's IR construction is not documented
as thread-safe, and the cache means each kernel compiles once anyway.

A compiled kernel checks its arguments on every call (one generated comparison
per operand: class, shape, dtype).  A missing or unexpected argument, a wrong
shape or dtype, or a value that is not a NumPy array raises
:class:`~tdsl.errors.TdslCallError` naming the argument, what was expected and
what came.  A kernel with one result returns an array; with several, a tuple.

The package's modules: :mod:`~tdsl.jit.options` (:class:`JitOptions`),
:mod:`~tdsl.jit.kernel` (:class:`CompiledKernel` and what it shows),
:mod:`~tdsl.jit.calls` (argument checks, the generated fast call path),
:mod:`~tdsl.jit.cache` (the LRU and its keys), :mod:`~tdsl.jit.pipeline`
(running the compiler), :mod:`~tdsl.jit.api` (the entry points).

This package imports only NumPy and the standard library; xDSL and the pipeline
load on the first compilation, so ``import tdsl`` stays light.
"""

from __future__ import annotations

from tdsl.jit.api import JITTensorKernel, compile, default_jit, jit_tensor
from tdsl.jit.cache import CacheInfo, DTypeLike, DTypesLike, ShapesLike
from tdsl.jit.kernel import ArgSpec, CompiledKernel, GroupInfo
from tdsl.jit.options import JitOptions, default_threads

__all__ = [
    "ArgSpec",
    "CacheInfo",
    "CompiledKernel",
    "DTypeLike",
    "DTypesLike",
    "GroupInfo",
    "JITTensorKernel",
    "JitOptions",
    "ShapesLike",
    "compile",
    "default_jit",
    "default_threads",
    "jit_tensor",
]
