"""tdsl kernels on Dask arrays: a compiled kernel called with Dask arrays returns one.

```python
import dask.array as da
from tdsl import JITTensorKernel

jit = JITTensorKernel()
x = da.from_array(big_x, chunks=(4096, 1024))      # or from zarr, a memory-mapped .npy, ...
y = jit("softmax(x @ w + b)", x=x, w=w, b=b)       # lazy: a dask.array.Array
y.compute()                                        # or .persist(), da.store, a distributed Client
```

The graph comes from tdsl's own plan (see :mod:`tdsl.dask.plan`): each fusion
group's parallel dims become chunk dims, reductions across chunks become Dask
tree reductions whose chunk and combine steps are tdsl kernels, a softmax
whose rows are cut runs its multi-pass plan, and only what must be whole (a
matmul's contraction) is rechunked whole.  Every task runs a tdsl kernel
compiled for its chunk's shape, once per distinct shape and process, rebuilt
on each worker from its IR text and options (:mod:`tdsl.dask.tasks`), so the
same graph runs on threads, processes or a ``distributed`` cluster.

Dask is an optional dependency (``pip install tdsl[dask]``); ``import tdsl``
never imports it.  This package registers Dask arrays with the JIT's call path
(:mod:`tdsl.array_types`), and the package root imports it, so no other import
is needed: a call hands over to :func:`tdsl.dask.graph.call_dask` only when an
argument is a Dask array, which Dask must have been imported to make.  The JIT
never imports this package; :mod:`tdsl.dask.plan` and :mod:`tdsl.dask.tasks`
do not import Dask either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from tdsl.array_types import ArrayType, register_array_type
from tdsl.errors import TdslCallError


def _shape(name: str, value: Any) -> tuple[int, ...]:
    """The shape of a Dask array, whose chunk sizes must be known."""
    shape = tuple(cast(Sequence[float], value.shape))
    if any(d != d for d in shape):
        raise TdslCallError(
            f"argument `{name}` is a Dask array of unknown chunk sizes: call "
            "`.compute_chunk_sizes()` first"
        )
    return tuple(int(d) for d in shape)


def _call(kernel: Any, arguments: list[Any], out: Any) -> Any:
    from tdsl.dask.graph import call_dask

    return call_dask(kernel, arguments, out)


DASK_ARRAYS = ArrayType(module="dask.array", name="Array", shape=_shape, call=_call)
"""``dask.array.Array`` as the JIT's call path takes it."""

register_array_type(DASK_ARRAYS)

__all__ = ["DASK_ARRAYS"]
