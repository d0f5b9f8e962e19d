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
never imports it: a call hands over to :func:`tdsl.dask.graph.call_dask` only
when an argument is a Dask array, which Dask must have been imported to make.
:mod:`tdsl.dask.plan` and :mod:`tdsl.dask.tasks` do not import Dask either.
"""

from __future__ import annotations
