"""The native target's runtime: tiled IR in, Python callables running machine code out.

:class:`NativeProgram` takes a tiled ``tensordsl`` module (after ``tdsl-fuse``
and ``tdsl-tile``), lowers it with ``tdsl-lower-to-loops`` and
``tdsl-convert-to-llvm`` (pointer arguments ``noalias``: tdsl never passes
overlapping buffers; :meth:`NativeProgram.from_tiled`, or the JIT's pipeline), binds the ``tdsl_matmul_*`` calls to BLAS
(:mod:`tdsl.runtime.blas`), compiles it for the host CPU
(:mod:`tdsl.runtime.compile`) and gives, per ``func.func``, a callable with the
contract of the NumPy target's generated functions (see
:mod:`tdsl.backend.numpy.module`): ``f(*arrays, out=None)``, arrays of
exactly the argument types' shapes and dtypes, inputs never written, results
fresh or written into ``out``.

A call allocates every buffer the lowered function takes as NumPy arrays: the
results (unless ``out`` gives them), the values passed between groups and the
groups' scratch (one arena that the groups share, as they run one after the
other), so ``tracemalloc`` sees all the memory a call uses.  The
main function of the loops stage is a flat list of calls; the runtime runs
that list itself, so that it can split a group's tiles over ``threads``
threads (each with scratch of its own; ctypes releases the GIL during a call).
Inputs and ``out`` arrays are C-contiguous for the compiled code (its memrefs
have the identity layout). An input that comes strided runs in a variant
compiled for its strides where one can be (:class:`StridedVariants`), else it
is copied to a contiguous array first; an ``out`` that is not C-contiguous is
written through a contiguous temporary.

What a :class:`NativeFunction` needs besides machine code is its
:class:`FunctionPlan` (each argument's role, shape and dtype, and the calls
of the main function), plain data that :meth:`FunctionPlan.to_data` and
:meth:`FunctionPlan.from_data` turn into JSON-ready values and back, so that
a cache on disk can rebuild the function from object code
(:class:`NativeCode` over :func:`tdsl.runtime.compile.load_object`).  Only
:class:`NativeProgram` reads IR: this module imports xDSL inside it, so
loading cached code never imports xDSL.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tdsl.defaults import MIN_BLAS_BYTES_PER_THREAD
from tdsl.errors import index_error
from tdsl.runtime.blas import find_gemm, matmul_shims
from tdsl.runtime.compile import CompiledModule, NativeCompileError, compile_llvm, llvm_ir
from tdsl.runtime.fast_call import LAYOUT_HOLDS, data_address, fast_call
from tdsl.runtime.plan import FunctionPlan, _Call, read_plan
from tdsl.runtime.workspace import Workspace, WorkspaceLayout
from tdsl.threads import shared_pool

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

Array = np.ndarray[Any, Any]

_DECLARE = re.compile(r'^declare [^\n]*@"?(tdsl_(?:matmul|gemm)_[A-Za-z0-9_]+)"?\(.*$', re.M)

MIN_TILES_PER_THREAD = 2
"""A group's tiles are split over threads only when each thread gets at least this many;
one for a group whose loops call BLAS, whose plan cut its tiles for the threads (an
attention head's 512 rows in two tiles of 256: 1.3 ms on one thread, BLAS taking both)."""

MIN_BYTES_PER_THREAD = 1 << 20
"""... and at least this many bytes of the group's largest operand (1 MiB, the numpy
target's rule too): handing tiles to a pool thread and waiting for it costs about
60 us here, which a split repays from about 1 MiB per thread on (``python
benchmarks/native_loops.py threads``)."""


class NativeCode:
    """A compiled module's machine code, the external symbols it was linked with
    by address, and the threads its functions split tiles over (the process's pool
    of ``threads - 1`` workers, shared by every kernel: :func:`tdsl.threads.shared_pool`)."""

    def __init__(
        self, compiled: CompiledModule, threads: int = 1, symbols: Mapping[str, int] | None = None
    ) -> None:
        self.compiled = compiled
        self.symbols: dict[str, int] = dict(symbols or {})
        self.threads = max(1, threads)

    def pool(self) -> concurrent.futures.ThreadPoolExecutor:
        return shared_pool(self.threads - 1)

    def function(self, plan: FunctionPlan) -> NativeFunction:
        """The callable running ``plan`` on this code."""
        return NativeFunction(plan, self)


def _buffer_address(a: Array) -> int:
    """The address of ``a``'s data: through the buffer protocol when writable (3x faster
    than ``a.ctypes.data``), else ``a.ctypes.data``."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(cast(Any, a)))
    except (TypeError, ValueError):  # read-only, or empty
        return a.ctypes.data


_address: Callable[[Array], int] = data_address if LAYOUT_HOLDS else _buffer_address
"""The address of an ndarray's data: read from the array object where NumPy's layout
allows (:data:`tdsl.runtime.fast_call.LAYOUT_HOLDS`), else through the buffer protocol."""


class NativeFunction:
    """One compiled ``func.func``: call it like the NumPy target's generated function."""

    def __init__(self, plan: FunctionPlan, code: NativeCode) -> None:
        self.plan = plan
        self.code = code
        """The machine code the function runs (kept alive by the function)."""
        self.name = plan.name
        self.args = list(plan.args)
        self.calls = list(plan.calls)
        self.functions: dict[str, Callable[..., Any]] = {
            c.callee: code.compiled.function(c.callee) for c in plan.calls
        }
        self.main = code.compiled.function(plan.name)
        self.threads = code.threads
        self._pool = code.pool
        self._inputs = [(i, a.dtype) for i, a in enumerate(self.args) if a.role == "in"]
        self._outputs = [(i, a.shape, a.dtype) for i, a in enumerate(self.args) if a.role == "out"]
        self._errors = [(i, a.error) for i, a in enumerate(self.args) if a.error is not None]
        self._views = [
            (i, a.view[0], a.view[1] * a.dtype.itemsize)
            for i, a in enumerate(self.args)
            if a.view is not None
        ]
        self._consts = [(i, a.data) for i, a in enumerate(self.args) if a.data is not None]
        self._pointers = [0] * len(self.args)
        """Each call's pointers before its arrays': the constants' addresses (their data
        is this function's, read-only and never moved)."""
        for i, data in self._consts:
            self._pointers[i] = _address(data)
        # the most threads each group call may use (1: the call runs on the caller's)
        self._threads = [self._threads_for(c) for c in self.calls]
        # the main function runs the calls itself unless some group's tiles split over threads
        self._split = any(t > 1 for t in self._threads)
        self.workspace = Workspace(WorkspaceLayout(self.args, self.calls, self._threads))
        """The values passed between groups and the groups' scratch, kept between calls."""
        self._slots = self.workspace.layout.slots
        self.variants: Callable[[Sequence[Array]], Callable[..., Any] | None] | None = None
        """Where an input is not C-contiguous: the variant compiled for the inputs'
        strides, or None (the input is then copied); see :class:`StridedVariants`."""
        self.trusted = False
        """A variant: its caller has checked that the inputs have its strides."""
        self.direct = fast_call(self, _address)
        """This call as a plain function (one Python call less): what the JIT's kernels
        call."""

    def _threads_for(self, call: _Call) -> int:
        """How many threads ``call`` may split its tiles over."""
        if not call.group or self.threads <= 1:
            return 1
        if call.serial and _blas_thread_setter() is None:
            return 1  # BLAS would run on every thread from each of them
        largest = max(
            (
                math.prod(self.args[x].shape) * self.args[x].dtype.itemsize
                for x in call.operands[2:]
                if isinstance(x, int)
            ),
            default=0,
        )
        # (a BLAS group's work grows faster than its operands: a matrix product of
        # 256 KiB operands is 2 * 256**3 operations, a third of a millisecond)
        # (or, for a group whose loops call BLAS, MIN_BLAS_BYTES_PER_THREAD: its plan's rule)
        least = MIN_BLAS_BYTES_PER_THREAD if call.serial else MIN_BYTES_PER_THREAD
        each = 1 if call.serial else MIN_TILES_PER_THREAD
        threads = min(self.threads, _tiles(call) // each, largest // least)
        # each thread past the first gets a copy of the group's scratch: all of them
        # stay within the scratch the plan allows (the memory budget's promise)
        scratch = sum(
            math.prod(self.args[x].shape)
            for x in call.operands[2:]
            if isinstance(x, int) and self.args[x].role == "scratch"
        )
        if scratch and call.scratch_limit is not None:
            threads = min(threads, call.scratch_limit // scratch)
        return max(1, threads)

    def __call__(self, *arrays: Array, out: Sequence[Array] | None = None) -> Any:
        return self.direct(*arrays, out=out)

    def _general(self, *arrays: Array, out: Sequence[Array] | None = None) -> Any:
        """Any call: what :mod:`tdsl.runtime.fast_call` runs in straight lines for the
        common case, and every other (inputs to copy or to run a strided variant on,
        an ``out``)."""
        if len(arrays) != len(self._inputs):
            raise TypeError(f"{self.name} takes {len(self._inputs)} arrays, got {len(arrays)}")
        # (the pointers start as the constants' addresses; the arrays stay alive in
        # `arrays`, `copied`, `results`, `copies` and `errors` until the call returns)
        pointers = self._pointers.copy()
        copied: list[Array] = []
        for (i, dtype), a in zip(self._inputs, arrays, strict=True):
            if not (a.flags.c_contiguous and a.dtype == dtype) and not self.trusted:
                variant = None if self.variants is None else self.variants(arrays)
                if variant is not None:
                    return variant(*arrays, out=out)
                a = np.ascontiguousarray(a, dtype=dtype)
                copied.append(a)
            pointers[i] = _address(a)
        results: list[Array] = []
        copies: list[tuple[Array, Array]] = []
        for k, (i, shape, dtype) in enumerate(self._outputs):
            given = None if out is None else out[k]
            if given is not None and given.flags.c_contiguous:
                buffer = given
            else:
                buffer = np.empty(shape, dtype)
                if given is not None:
                    copies.append((buffer, given))
            pointers[i] = _address(buffer)
            results.append(given if given is not None else buffer)
        errors = [np.zeros(2, np.int64) for _ in self._errors]
        for (i, _), flags in zip(self._errors, errors, strict=True):
            pointers[i] = _address(flags)
        workspace = self.workspace.take() if self._slots else None
        try:
            base = 0 if workspace is None else workspace[1]
            for i, offset in self._slots:
                pointers[i] = base + offset
            for i, source, offset in self._views:  # windows of other arguments, in order
                pointers[i] = pointers[source] + offset
            if self._split:
                for n, threads in enumerate(self._threads):
                    self._run(n, threads, base, pointers)
            else:
                self.main(*pointers)
        finally:
            if workspace is not None:
                self.workspace.give(workspace)
        for (_, (axis, extent, where)), flags in zip(self._errors, errors, strict=True):
            # a gather met an index out of range
            flag, index = (int(v) for v in flags)
            if flag:
                raise index_error(index, axis, extent, where)
        for buffer, given in copies:
            np.copyto(given, buffer)
        if not results:
            return None
        return results[0] if len(results) == 1 else tuple(results)

    def _run(self, n: int, threads: int, base: int, pointers: list[int]) -> None:
        """Make call ``n`` on ``threads`` threads, in the workspace at ``base``."""
        call = self.calls[n]
        fn = self.functions[call.callee]

        def operand(x: int | tuple[str, int], table: Sequence[int]) -> int:
            return x[1] if isinstance(x, tuple) else table[x]

        if not call.group:
            fn(*(operand(x, pointers) for x in call.operands))
            return
        lo, hi = (operand(x, pointers) for x in call.operands[:2])
        rest = call.operands[2:]
        if threads <= 1:
            fn(lo, hi, *(operand(x, pointers) for x in rest))
            return
        # each thread its own scratch (a group's scratch holds one tile's values)
        chunk = -(-(hi - lo) // threads)
        jobs: list[tuple[int, int, list[int]]] = []
        copies = self.workspace.layout.extra[n]
        for t in range(threads):
            start, stop = lo + t * chunk, min(hi, lo + (t + 1) * chunk)
            if start >= stop:
                break
            table = list(pointers)
            if t > 0:
                for i, offset in copies[t - 1].items():
                    table[i] = base + offset
            jobs.append((start, stop, table))
        pool = self._pool()
        # a BLAS group's threads each run their BLAS calls alone
        with _ONE_BLAS_THREAD if call.serial else contextlib.nullcontext():
            futures = [
                pool.submit(fn, start, stop, *(operand(x, table) for x in rest))
                for start, stop, table in jobs[1:]
            ]
            start, stop, table = jobs[0]
            try:
                fn(start, stop, *(operand(x, table) for x in rest))
            finally:
                concurrent.futures.wait(futures)
        for f in futures:
            f.result()


def _blas_thread_setter() -> Callable[[int], int] | None:
    """What sets BLAS's thread count (:attr:`~tdsl.runtime.blas.Gemm.set_threads`), or
    None (another BLAS, or none)."""
    gemm = find_gemm()
    return None if isinstance(gemm, str) else gemm.set_threads


class _OneBlasThread:
    """BLAS on one thread while any group shares its tiles among threads.

    OpenBLAS's ``openblas_set_num_threads_local`` sets the count of its pthreads
    build for the whole process (the count every thread's next call uses), so the
    caller sets it, not each thread: the first of overlapping calls saves the count and
    sets 1, the last one restores it (two threads setting and restoring it on their own
    raced, and left BLAS on one thread for the rest of the process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._before = 0
        self._set: Callable[[int], int] = lambda count: count

    def __enter__(self) -> None:
        set_threads = _blas_thread_setter()
        if set_threads is None:
            raise NativeCompileError("no BLAS thread count to set: a BLAS group runs on one thread")
        with self._lock:
            if self._depth == 0:
                self._set = set_threads
                self._before = set_threads(1)
            self._depth += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self._set(self._before)


_ONE_BLAS_THREAD = _OneBlasThread()


MAX_VARIANTS = 8
"""Stride patterns a function compiles variants for; further ones are copied."""

MIN_VARIANT_BYTES = 1 << 16
"""Strided inputs of fewer bytes than this, together, are copied rather than given a
variant: copying 64 KiB takes microseconds, compiling a variant about 100 ms (the
time of some ten thousand such copies), so small views (a ``x[::2]`` of 100 elements,
a Dask block of a small array) run at once and compile nothing."""


class StridedVariants:
    """Variants of one function of a tiled module that read each input with the strides
    it comes with (a transpose, a slice with a step, a broadcast view): compiled on the
    first call with those strides (``tdsl-lower-to-loops`` with strided memref inputs),
    at most :data:`MAX_VARIANTS` of them.  An input whose strides are negative or not a
    multiple of its item size, or that a BLAS call would read, gets no variant (it is
    copied, as without variants); nor do strided inputs of fewer than
    :data:`MIN_VARIANT_BYTES` together (copied: cheaper than a compile).

    A strided operand of a BLAS call gets no variant (it is copied).  A variant whose
    compile fails otherwise (a compiler bug: an internal error, or IR the lowering
    made that does not verify) never fails the call: the reason is kept in
    :attr:`failures`, and the call runs ``fallback(reason)`` if one is set (``auto``
    switches its kernel to the numpy target, see :func:`tdsl.jit.calls.fall_back_on_variant_failure`),
    else copies the input (``target="native"``).  With ``$TDSL_NO_FALLBACK`` set
    (:func:`tdsl.defaults.no_fallback`) such a failure raises a
    :class:`~tdsl.errors.TdslNativeError` with the reason instead (the failure is
    still kept in :attr:`failures`)."""

    def __init__(self, tiled: ModuleOp | Callable[[], ModuleOp], function: NativeFunction) -> None:
        """Variants of ``function``, compiled from ``tiled`` (the module it was lowered
        from, or a function giving it: a kernel loaded from the cache on disk parses
        its stored text, importing xDSL, only when a first strided input comes)."""
        self._tiled = tiled
        self._name = function.name
        self._threads = function.threads
        self._dtypes = [a.dtype for a in function.args if a.role == "in"]
        self._made: dict[tuple[tuple[int, ...] | None, ...], Callable[..., Any] | None] = {}
        self._programs: list[NativeProgram] = []
        self._lock = threading.Lock()
        self.fallback: Callable[[str], Callable[..., Any]] | None = None
        """Given why a variant failed to compile, what runs instead (the numpy target)."""
        self.failures: dict[tuple[tuple[int, ...] | None, ...], str] = {}
        """Why the variants that failed with an internal error did, by stride pattern."""

    def __call__(self, arrays: Sequence[Array]) -> Callable[..., Any] | None:
        key: list[tuple[int, ...] | None] = []
        strided = 0
        for a, dtype in zip(arrays, self._dtypes, strict=True):
            if a.dtype != dtype:
                return None
            if a.flags.c_contiguous:
                key.append(None)
            elif any(s < 0 or s % a.itemsize for s in a.strides):
                return None
            else:
                key.append(tuple(s // a.itemsize for s in a.strides))
                strided += a.nbytes
        if strided < MIN_VARIANT_BYTES:
            return None  # copied: cheaper than a compile
        frozen = tuple(key)
        with self._lock:
            if frozen not in self._made:
                self._made[frozen] = (
                    self._compile(frozen) if len(self._made) < MAX_VARIANTS else None
                )
            return self._made[frozen]

    def _compile(self, strides: tuple[tuple[int, ...] | None, ...]) -> Callable[..., Any] | None:
        from xdsl.context import Context

        from tdsl.backend.llvm.convert_to_llvm import ConvertToLLVMPass
        from tdsl.backend.llvm.lower_to_loops import StridedBlasOperandError, lower_to_loops
        from tdsl.errors import TdslError, TdslNativeError

        if callable(self._tiled):
            self._tiled = self._tiled()
        loops = self._tiled.clone()
        try:
            lower_to_loops(loops, {self._name: list(strides)})
            lowered = loops.clone()
            ConvertToLLVMPass(noalias=True).apply(Context(), lowered)
            program = NativeProgram(loops, lowered, self._threads)
        except StridedBlasOperandError:
            return None  # a BLAS call reads it: the input is copied, as designed
        except Exception as err:  # a compiler bug: this call must still give the right result
            detail = (
                err.message
                if isinstance(err, TdslError)
                else f"internal error: {type(err).__name__}: {err}"
            )
            reason = (
                f"the variant for strides {_strides_text(strides)} failed to compile ({detail})"
            )
            self.failures[strides] = reason
            from tdsl.defaults import NO_FALLBACK_VARIABLE, no_fallback

            if no_fallback():
                instead = "the numpy target" if self.fallback is not None else "a copy of the input"
                raise TdslNativeError(
                    f"{reason}; falling back to {instead} is refused "
                    f"(${NO_FALLBACK_VARIABLE} is set)"
                ) from err
            return None if self.fallback is None else self.fallback(reason)
        self._programs.append(program)  # owns the variant's machine code
        function = program.functions[self._name]
        function.trusted = True
        return function

    @property
    def compiled(self) -> list[tuple[tuple[int, ...] | None, ...]]:
        """The stride patterns compiled so far (None: a C-contiguous input)."""
        return [k for k, v in self._made.items() if v is not None]


def _strides_text(strides: tuple[tuple[int, ...] | None, ...]) -> str:
    """``(13, 1), C`` for a stride pattern (element strides; C: C-contiguous)."""
    return ", ".join("C" if s is None else f"({', '.join(map(str, s))})" for s in strides)


def _reads_backwards(loops: ModuleOp) -> bool:
    """Whether a function of ``loops`` takes a memref with a negative stride (a reversed
    view): LLVM's loop vectorizer asserts on some such copies, so its compile is probed
    first (see :func:`~tdsl.runtime.compile.compile_llvm`'s ``guarded``)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import MemRefType, StridedLayoutAttr

    for fn in loops.ops:
        if not isinstance(fn, func.FuncOp):
            continue
        for t in fn.function_type.inputs.data:
            layout = t.layout if isinstance(t, MemRefType) else None
            if isinstance(layout, StridedLayoutAttr) and any(
                isinstance(s, int) and s < 0 for s in layout.get_strides()
            ):
                return True
    return False


def _tiles(call: _Call) -> int:
    lo, hi = call.operands[:2]
    return (hi[1] if isinstance(hi, tuple) else 0) - (lo[1] if isinstance(lo, tuple) else 0)


class NativeProgram:
    """Loops-stage and llvm-dialect modules compiled to machine code; the functions by
    IR symbol name.

    ``loops`` is the output of ``tdsl-lower-to-loops`` (it says which arguments
    are inputs, outputs and scratch, and lists each main function's calls);
    ``llvm`` is that module after ``tdsl-convert-to-llvm{noalias=true}``.
    :meth:`from_tiled` runs both passes on a tiled module.  ``keep_object``
    keeps the object file the code was loaded from (``code.compiled.object_code``),
    for a cache on disk.
    """

    def __init__(
        self, loops: ModuleOp, llvm: ModuleOp, threads: int = 1, *, keep_object: bool = False
    ) -> None:
        from xdsl.dialects import func

        from tdsl.backend.llvm.lower_to_loops import ROLES_ATTR

        text = llvm_ir(llvm)
        matmuls = sorted(set(_DECLARE.findall(text)))
        symbols: dict[str, int] = {}
        if matmuls:
            gemm = find_gemm()
            if isinstance(gemm, str):
                raise NativeCompileError(gemm)
            text = _DECLARE.sub("", text) + "\n" + matmul_shims(matmuls, gemm)
            symbols = gemm.addresses
        self.llvm_ir = text
        """The LLVM IR compiled: the llvm dialect's, with the BLAS shims."""
        compiled = compile_llvm(
            text, symbols=symbols, keep_object=keep_object, guarded=_reads_backwards(loops)
        )
        self.code = NativeCode(compiled, threads, symbols)
        self.compiled: CompiledModule = compiled
        self.threads = self.code.threads
        self.plans: dict[str, FunctionPlan] = {}
        self.functions: dict[str, NativeFunction] = {}
        for fn in loops.ops:
            if isinstance(fn, func.FuncOp) and ROLES_ATTR in fn.attributes:
                plan = read_plan(fn, ROLES_ATTR)
                self.plans[plan.name] = plan
                self.functions[plan.name] = self.code.function(plan)

    @classmethod
    def from_tiled(cls, tiled: ModuleOp, threads: int = 1) -> NativeProgram:
        """Lower a tiled module (left unchanged) to loops and to LLVM, and compile it."""
        from xdsl.context import Context

        from tdsl.backend.llvm.convert_to_llvm import ConvertToLLVMPass
        from tdsl.backend.llvm.lower_to_loops import lower_to_loops

        loops = tiled.clone()
        lower_to_loops(loops)
        lowered = loops.clone()
        ConvertToLLVMPass(noalias=True).apply(Context(), lowered)
        return cls(loops, lowered, threads)


__all__ = [
    "MAX_VARIANTS",
    "MIN_VARIANT_BYTES",
    "FunctionPlan",
    "NativeCode",
    "NativeFunction",
    "NativeProgram",
    "StridedVariants",
]
