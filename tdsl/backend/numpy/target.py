"""The ``numpy`` target: tensordsl / kernel IR to a plain Python module using NumPy.

``emit_numpy(module)`` returns the source of a Python module with one function
per ``func.func`` (arguments named after the IR block arguments, one array
per result; several results return a tuple) and ``TDSL_FUNCTIONS``, a dict
from the IR symbol names to those functions.  ``load_numpy(source)`` executes
such source (and nothing else) and returns that dict.

It reads all three stages of the pipeline:

- tensordsl IR: each run of top-level ops runs whole-array, with temporaries
  written through ``out=`` and reused once dead;
- ``kernel.fused``: the same, one group at a time;
- ``kernel.tile``: the op's schedule (:mod:`tdsl.dialects.kernel_plan`): loops
  over the parallel tiles, and over the tiled reduction dims in passes that
  accumulate, running ufuncs with ``out=`` into the scratch buffers the op
  records (allocated once per call, viewed in each value's tile shape, cut for
  the last tile) and writing each output tile in place.  A group with a single
  tile is emitted straight-line, without loop overhead.

Every generated function takes ``out=None`` (keyword-only): the arrays to
write its results into; see :mod:`tdsl.backend.numpy.module` for the
contract.

Guarantees: inputs are never written; without ``out`` every returned array is
fresh, with it the results are the given arrays; dtypes
are NumPy's (constants are 0-d arrays of the op's dtype, so float32 stays
float32); scratch per call stays within each group's recorded ``scratch``
(all threads together), not counting the transient buffers NumPy's own
iterator allocates for a broadcasting ufunc (``np.getbufsize()`` elements per
operand of the call in flight).  Floating-point warnings are NumPy's own: the code
does not wrap calls in ``np.errstate`` (that costs about 1 us per call), and
the stable ``softmax``/``sigmoid`` forms raise none of their own.

How the target cuts the recorded tiles finer for the cache, and runs the
parallel loop on threads, is in :mod:`tdsl.backend.numpy.blocking`; the
``threads`` option splits tile loops over a thread pool created lazily by the
generated module (loaded by the JIT, it takes the process's pool of that many threads,
which every kernel shares: :mod:`tdsl.threads`).

``isinf``, ``isnan`` and ``signbit`` go through
:func:`tdsl.scalar_numpy.tdsl_strided_safe`: NumPy 2.4's loops left most of a boolean
``out`` that is not C-contiguous (a column tile of a result) unwritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from tdsl.backend.numpy.load import load_numpy
from tdsl.backend.numpy.module import emit_module
from tdsl.errors import TdslOptionError, check_argument


def emit_numpy(module: ModuleOp, threads: int = 1) -> str:
    """The Python source computing every ``func.func`` of ``module`` with NumPy."""
    check_argument(module, ModuleOp, "the module given to `emit_numpy`")
    if not isinstance(threads, int) or threads < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TdslOptionError(f"numpy target: threads must be a positive integer, got {threads!r}")
    return emit_module(module, threads)


@dataclass(frozen=True)
class NumpyTarget(Target):
    """``-t numpy``: print the NumPy module; ``-t 'numpy{threads=2}'`` splits tile loops."""

    name: ClassVar[str] = "numpy"

    threads: int = 1
    """Threads to split each large tile loop across (1: no threads)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_numpy(module, self.threads))


__all__ = ["NumpyTarget", "emit_numpy", "load_numpy"]
