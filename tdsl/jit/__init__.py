"""The JIT API: compile a tensor expression (or a ``.tdsl`` kernel) to NumPy, cache it, call it.

```python
from tdsl import JITTensorKernel, jit_tensor
jit = JITTensorKernel(memory_budget=1_000_000)  # also tile_size=, tile_sizes=, threads=, cache_dir=
fn = jit.compile("matmul(A,relu(B))+softmax(C)",
                 shapes={"A": (8, 16), "B": (16, 8), "C": (8, 8)})   # dtypes= default float64
out = fn(A=A, B=B, C=C)                                # or fn(A, B, C), in signature order
fn(A=A, B=B, C=C, out=buf)                             # into a given array; returns buf
out = jit("relu(A)+B*s", A=a, B=b, s=2.0)              # one-shot: types from the values
out = jit_tensor("relu(A)+B", A=a, B=b)                # the same, on the default JIT
out = jit_tensor("relu(A)+B", {"A": (4,), "B": (4,)}, A=a, B=b)   # shapes given
fn = jit.compile_ir(ir_text, [(8, 16)])                # tensordsl IR, re-typed for the shapes
```

Compiling runs the whole pipeline in-process, on IR objects (never printing and
re-parsing): the frontend (``parse`` and ``lower``, as ``to_tensordsl`` does),
the passes ``tdsl-opt`` runs for :attr:`CompiledKernel.pipeline` (``tdsl-fuse``
under the memory budget, ``tdsl-tile``) through xDSL's ``PassPipeline``, and
the NumPy target, whose Python source is exec'd.  Of a program, only the
chosen kernel is compiled.  The result is a :class:`CompiledKernel`: callable,
and showing what was done (``.source``, ``.ir``, ``.pipeline``, ``.groups``,
``.fusion_report``).

Source text may be a bare expression (its inputs are the names it uses, with
``shapes=`` and ``dtypes=``; a name they give that the expression does not use
is an error), or a ``.tdsl`` program of ``def`` kernels whose signatures give
the shapes and dtypes (``shapes=``/``dtypes=``, if given, must match the
signature).  From a program with several kernels, ``kernel="name"`` picks one;
without it the program's only kernel, or else its last one, is compiled (the
last kernel is the program's "main" by convention, as helpers are usually
written first).  No input may be named ``out``.

The call interface (the same for every target):

- ``kernel(*args, out=None, **kwargs)``: arrays of exactly the parameters'
  shapes and dtypes (any strides); a 0-d parameter also takes a NumPy scalar
  of its dtype or a Python number; a weak parameter (``s: float``) a Python
  ``int`` or ``float``.  Returns a fresh array, or a tuple for several
  results; with ``out`` (an array, or a tuple with one per result, of
  exactly the results' shapes and dtypes, sharing no memory with the inputs
  or each other) the results are computed into ``out``, which is returned.
- ``jit(source, *, out=None, **values)`` compiles for the values as NumPy 2
  types them (NEP 50): an array by its shape and dtype, a NumPy scalar as a
  0-d input of its dtype, a Python ``int``/``float`` as a weak scalar (typed
  like a numeric literal: ``A * s`` is float16 for a float16 ``A``).
- Every misuse is a :class:`~tdsl.errors.TdslCallError` naming the argument,
  what was expected and what came.

Kernels are cached per :class:`JITTensorKernel` on (source text, shapes,
dtypes, kernel name, filename, options) in a thread-safe LRU cache
(:meth:`JITTensorKernel.cache_info`); weak and strong scalars make different
keys.  A one-shot call first tries the kernel that source last ran with (its
own argument check says whether the values fit), so a repeated call costs
about a microsecond on top of the kernel; other values go through the cache.
Compilation itself is serialized by one process-wide lock: xDSL's IR
construction is not documented as thread-safe, and the cache means each
kernel compiles once anyway.

``JITTensorKernel(cache_dir=...)`` (or ``$TDSL_CACHE_DIR``) adds a cache on
disk, shared between processes (:mod:`~tdsl.jit.disk_cache`): a kernel found
there is loaded, not compiled, and without importing xDSL; ``.ir``,
``.groups``, ``.explain()`` and the rest work on it as on a compiled one.

The package's modules: :mod:`~tdsl.jit.options` (:class:`JitOptions`),
:mod:`~tdsl.jit.compiled` (:class:`CompiledKernel` and what it shows),
:mod:`~tdsl.jit.calls` (argument checks, the generated fast call path),
:mod:`~tdsl.jit.cache` (the LRU and its keys), :mod:`~tdsl.jit.disk_cache` (the
cache on disk: keys, files), :mod:`~tdsl.jit.entry` (a kernel as stored data),
:mod:`~tdsl.jit.signature` (checking ``shapes=``/``dtypes=`` against a
kernel), :mod:`~tdsl.jit.compiler` (running the compiler), :mod:`~tdsl.jit.api`
(the entry points).

This package imports only NumPy and the standard library; xDSL and the pipeline
load on the first compilation, so ``import tdsl`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tdsl.jit.api import JITTensorKernel, compile, default_jit, jit_tensor
from tdsl.jit.cache import CacheInfo, DTypeLike, DTypesLike, ShapesLike
from tdsl.jit.compiled import ArgSpec, CompiledKernel, GroupInfo
from tdsl.jit.options import JitOptions, default_threads

if TYPE_CHECKING:
    from tdsl.jit.disk_cache import DiskCacheInfo


def __getattr__(name: str) -> Any:
    # the cache on disk's module is imported only when used
    if name == "DiskCacheInfo":
        from tdsl.jit.disk_cache import DiskCacheInfo

        return DiskCacheInfo
    raise AttributeError(f"module 'tdsl.jit' has no attribute {name!r}")


__all__ = [
    "ArgSpec",
    "CacheInfo",
    "CompiledKernel",
    "DTypeLike",
    "DTypesLike",
    "DiskCacheInfo",
    "GroupInfo",
    "JITTensorKernel",
    "JitOptions",
    "ShapesLike",
    "compile",
    "default_jit",
    "default_threads",
    "jit_tensor",
]
