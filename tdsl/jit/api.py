"""The JIT's entry points: :class:`JITTensorKernel`, :func:`compile`, :func:`jit_tensor`."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from tdsl.defaults import positive_int
from tdsl.errors import TdslOptionError, check_argument
from tdsl.jit.arg_inference import infer
from tdsl.jit.cache import (
    CacheInfo,
    DTypesLike,
    KernelCache,
    Request,
    ShapesLike,
    check_source,
    freeze,
    normalize,
    shape_of,
)
from tdsl.jit.compiled import CompiledKernel
from tdsl.jit.compiler import COMPILE_LOCK, build
from tdsl.jit.options import CACHE_DIR_VARIABLE, JitOptions, default_target, default_threads
from tdsl.jit.signature import check_request

if TYPE_CHECKING:
    from pathlib import Path

    from xdsl.dialects.builtin import ModuleOp

    from tdsl.jit.disk_cache import DiskCache, DiskCacheInfo


class JITTensorKernel:
    """Compiles tensor expressions to NumPy, with a cache of compiled kernels.

    ``memory_budget`` (elements) bounds what a call allocates beyond its outputs: the
    values held between fused kernels and the scratch of one at a time, all threads
    together (default: :data:`~tdsl.defaults.DEFAULT_MEMORY_BUDGET`, or the inputs'
    elements for a kernel no plan of that fits); ``tile_size`` caps tile sizes; ``tile_sizes``
    fixes them; ``threads`` runs large tile loops on that many threads (default:
    one per core, at most 4; ``threads=1`` turns threads off); ``target`` is
    ``"native"`` (machine code through LLVM), ``"numpy"`` (generated NumPy code)
    or ``"auto"``, which picks native code per kernel where it loads and pays off
    (see :attr:`CompiledKernel.target_reason`; default ``$TDSL_TARGET``, else ``auto``); ``cache_size`` is the number of
    compiled kernels kept in memory (least recently used go first).

    ``cache_dir`` keeps compiled kernels in files in that folder too, shared by
    every process that uses it (:mod:`tdsl.jit.disk_cache`): a kernel found
    there loads without compiling, and without importing xDSL.  The default,
    ``None``, takes the folder from ``$TDSL_CACHE_DIR`` (unset or empty: no
    cache on disk); ``False`` turns it off.  A folder that cannot be created or
    written is a :class:`~tdsl.errors.TdslOptionError`.
    """

    options: JitOptions

    def __init__(
        self,
        memory_budget: int | None = None,
        *,
        tile_size: int | None = None,
        tile_sizes: Sequence[int] = (),
        threads: int | None = None,
        target: str | None = None,
        cache_size: int = 256,
        cache_dir: str | os.PathLike[str] | bool | None = None,
    ) -> None:
        self.options = JitOptions(
            memory_budget,
            tile_size,
            cast(tuple[int, ...], tile_sizes),  # JitOptions checks it, makes a tuple
            default_threads() if threads is None else threads,
            default_target() if target is None else target,
        )
        self._kernels: KernelCache[CompiledKernel] = KernelCache(
            positive_int("cache_size", cache_size)
        )
        self._disk: DiskCache | None = None
        if cache_dir is not False and (cache_dir is not None or os.environ.get(CACHE_DIR_VARIABLE)):
            # the module (hashlib, json) is imported only for a cache on disk
            from tdsl.jit.disk_cache import DiskCache, resolve_cache_dir

            directory = resolve_cache_dir(cache_dir)
            self._disk = None if directory is None else DiskCache(directory)
        # source -> the kernel a one-shot call last ran it with
        self._last: dict[str, CompiledKernel] = {}

    @property
    def memory_budget(self) -> int | None:
        """The budget asked for (None: the default; a kernel's
        :attr:`~CompiledKernel.memory_budget` is the one it was planned at)."""
        return self.options.memory_budget

    @property
    def threads(self) -> int:
        return self.options.threads

    @property
    def cache_size(self) -> int:
        """How many kernels this JIT keeps in memory (the least recently used go first);
        a traced function keeps as many of its own (:class:`tdsl.trace`)."""
        return self._kernels.maxsize

    @property
    def cache_dir(self) -> Path | None:
        """The folder of the cache on disk, or None when there is none."""
        from pathlib import Path

        return None if self._disk is None else Path(self._disk.directory)

    def compile(
        self,
        source: str,
        shapes: ShapesLike | None = None,
        dtypes: DTypesLike | None = None,
        *,
        kernel: str | None = None,
        filename: str = "<expr>",
        options: JitOptions | None = None,
    ) -> CompiledKernel:
        """Compile ``source`` (cached) and return the callable kernel.

        ``shapes`` maps each input of an expression to its shape; ``dtypes`` is
        one dtype for all inputs or a dtype per input (default float64; the
        Python type ``float`` declares a weak scalar input, whose shape may be
        left out).  Naming an input the expression does not use is a
        :class:`~tdsl.errors.TdslNameError`.  For ``.tdsl`` program text the
        signatures give both, and ``shapes``/``dtypes``, if given, must match
        the chosen kernel's signature exactly.  ``kernel`` picks a kernel by
        name (default: the only one, or else the last).  ``filename`` names
        the source in error messages and IR locations.  ``options``, if given,
        replaces this JIT's options for this kernel.  Errors in the source
        raise :class:`~tdsl.errors.TdslError` subclasses pointing at it.
        """
        norm_shapes, norm_dtypes = normalize(shapes, dtypes)
        compiled = self.compile_normalized(
            source, norm_shapes, norm_dtypes, kernel, filename, self._chosen(options)
        )
        check_request(compiled, norm_shapes, dtypes)
        return compiled

    def compile_normalized(
        self,
        source: str,
        shapes: dict[str, tuple[int, ...]] | None,
        dtypes: object,
        kernel: str | None,
        filename: str,
        options: JitOptions,
    ) -> CompiledKernel:
        """The cached kernel for normalized ``shapes`` and ``dtypes``, compiled on a miss."""
        check_source(source, filename, kernel)
        key = (source, freeze(shapes), freeze(dtypes), kernel, filename, options)
        return self._cached(
            key,
            lambda: self._load_or_build(Request(source, shapes, dtypes, kernel, filename, options)),
        )

    def compile_ir(
        self,
        text: str,
        shapes: Sequence[Sequence[int]] | Mapping[str, Sequence[int]] | None = None,
        *,
        options: JitOptions | None = None,
    ) -> CompiledKernel:
        """Compile the one function of a module of IR (text), cached.

        The IR is ``tensordsl`` IR, or the IR ``tdsl-fuse`` or ``tdsl-tile`` gave
        (``tdsl-opt --fuse --tile`` prints it): the passes that are left run, so a
        plan edited by hand in tiled IR is the plan the kernel runs, on every
        target and on Dask arrays.  Its ops may be of any dialect an ``xdsl.universe``
        entry point registers (a downstream project's).  ``shapes``, one per argument
        or a dict by argument name (as :meth:`compile` takes them), re-types
        ``tensordsl`` IR first: each op takes the result types its type inference
        gives for the new operand shapes, so one text serves every shape its ops
        accept.  The pipeline is the one :meth:`compile` runs; ``options``
        replaces this JIT's for this kernel.
        :mod:`tdsl.dask` ships the kernels of its tasks this way: the text of a
        step of a fusion group, compiled for the shape of each chunk.
        """
        if not isinstance(cast(object, text), str):
            raise TdslOptionError(
                f"text must be a str (tensordsl IR), got a value of type `{type(text).__name__}`"
            )
        from tdsl.jit.ir_input import build_ir

        return self._cached_ir(text, shapes, options, lambda s, o: build_ir(text, s, o))

    def compile_module(
        self,
        module: ModuleOp,
        shapes: Sequence[Sequence[int]] | Mapping[str, Sequence[int]] | None = None,
        *,
        options: JitOptions | None = None,
    ) -> CompiledKernel:
        """Compile the one function of ``module``, IR objects built or parsed in a context
        of the caller's (with dialects of its own, whose ops implement the structured-op
        interface), cached by the module's text; as :meth:`compile_ir` otherwise.  The
        module is not changed.  (A kernel on Dask arrays ships its steps as IR text to
        the workers, which parse it with the dialects ``xdsl.universe`` entry points
        register: give a downstream dialect an entry point to run it on Dask.)"""
        from xdsl.dialects.builtin import ModuleOp

        from tdsl.jit.ir_input import build_module

        if not isinstance(cast(object, module), ModuleOp):
            raise TdslOptionError(
                f"module must be an xDSL ModuleOp, got a value of type `{type(module).__name__}`"
            )
        return self._cached_ir(
            str(module), shapes, options, lambda s, o: build_module(module, s, o)
        )

    def _cached_ir(
        self,
        text: str,
        shapes: Sequence[Sequence[int]] | Mapping[str, Sequence[int]] | None,
        options: JitOptions | None,
        build: Callable[[Any, JitOptions], CompiledKernel],
    ) -> CompiledKernel:
        """The kernel of IR ``text`` for ``shapes`` (checked; in order or by name) and
        ``options`` (else this JIT's), cached; ``build`` makes it on a miss."""
        checked: dict[str, tuple[int, ...]] | tuple[tuple[int, ...], ...] | None = None
        shape_key: tuple[Any, ...] | None = None
        if isinstance(shapes, Mapping):
            checked = {k: shape_of(f"shapes[{k!r}]", s) for k, s in shapes.items()}
            shape_key = ("by name", *sorted(checked.items()))
        elif shapes is not None:
            check_argument(shapes, (tuple, list), "`shapes` (by input name or in order)")
            checked = tuple(shape_of(f"shapes[{i}]", s) for i, s in enumerate(shapes))
            shape_key = checked
        chosen = self._chosen(options)
        key = ("ir", text, shape_key, chosen)
        return self._cached(key, lambda: build(checked, chosen))

    def _chosen(self, options: object) -> JitOptions:
        """``options`` (a :class:`JitOptions`) for one kernel, else this JIT's."""
        if options is None:
            return self.options
        if not isinstance(options, JitOptions):
            raise TdslOptionError(
                f"options must be a tdsl.jit.JitOptions (or None: this JIT's), got a "
                f"value of type `{type(options).__name__}`"
            )
        return options

    def _cached(self, key: object, make: Callable[[], CompiledKernel]) -> CompiledKernel:
        """The kernel cached under ``key``, made (once, under the compile lock) on a miss."""
        cache = self._kernels
        compiled = cache.get(key)
        if compiled is not None:
            return compiled
        with COMPILE_LOCK:
            with cache.lock:  # another thread may have compiled it while we waited
                compiled = cache.data.get(key)
                if compiled is None:
                    cache.misses += 1
                else:
                    cache.hits += 1
            if compiled is None:
                compiled = make()
                cache.put(key, compiled)
        return compiled

    def _load_or_build(self, request: Request) -> CompiledKernel:
        """The kernel from the cache on disk, else compiled (and written there)."""
        disk = self._disk
        if disk is None:
            return build(request)
        from tdsl.jit.disk_cache import request_key

        key = request_key(request)
        compiled = disk.load(key, request.options)
        if compiled is None:
            compiled = build(request, keep_object=True)
            disk.store(key, compiled)
        return compiled

    def __call__(self, source: str, /, *, out: Any = None, **values: Any) -> Any:
        """Compile ``source`` for ``values`` (cached) and run it on them.

        Each value is an input of ``source`` by name: a NumPy array (its shape
        and dtype are compiled for), a NumPy scalar (a 0-d input of its
        dtype), or a Python ``int`` or ``float`` (a weak scalar, typed like a
        numeric literal: ``A * s`` is float32 for a float32 ``A``).  ``out``
        is as for :class:`CompiledKernel`: the array (a tuple, for several
        results) to write the results into and return.

        The last kernel each source ran with is tried first, with the kernel's own
        argument check; a different signature looks the kernel cache up.
        """
        try:
            last = self._last.get(source)
        except TypeError:  # unhashable: not a str, which compile_normalized reports
            last = None
        if last is not None:
            result = last.try_call(values, out)
            if result is not NotImplemented:
                cache = self._kernels
                with cache.lock:
                    cache.hits += 1
                return result
        shapes: dict[str, tuple[int, ...]] = {}
        dtypes: dict[str, object] = {}
        for name, value in values.items():
            shapes[name], dtypes[name] = infer(name, value)
        norm_shapes, norm_dtypes = normalize(shapes, cast(DTypesLike, dtypes))
        compiled = self.compile_normalized(
            source, norm_shapes, norm_dtypes, None, "<expr>", self.options
        )
        with self._kernels.lock:
            if len(self._last) >= self._kernels.maxsize:
                self._last.clear()
            self._last[source] = compiled
        return compiled(out=out, **values)

    def cache_info(self) -> CacheInfo:
        """Hits, misses, the maximum size and the current size of the kernel cache.

        A one-shot call that finds its kernel counts as a hit, like a
        :meth:`compile` that finds it.
        """
        cache = self._kernels
        with cache.lock:
            return CacheInfo(cache.hits, cache.misses, cache.maxsize, len(cache.data))

    def cached_kernels(self) -> list[CompiledKernel]:
        """The compiled kernels in the cache, least recently used first."""
        cache = self._kernels
        with cache.lock:
            return list(cache.data.values())

    def disk_cache_info(self) -> DiskCacheInfo | None:
        """The folder of the cache on disk and this JIT's hits, misses, rejected files,
        writes and files evicted (to keep the folder under its size) there; None when
        there is no cache on disk."""
        return None if self._disk is None else self._disk.info()

    def cache_clear(self, *, disk: bool = False) -> None:
        """Forget every compiled kernel and reset :meth:`cache_info`; with ``disk=True``,
        also delete the files of the cache on disk (every kernel there, whichever JIT
        wrote it)."""
        with self._kernels.lock:
            self._last.clear()
        self._kernels.clear()
        if disk and self._disk is not None:
            self._disk.clear()

    def __repr__(self) -> str:
        o = self.options
        extra = ""
        if o.tile_size is not None:
            extra += f", tile_size={o.tile_size}"
        if o.tile_sizes:
            extra += f", tile_sizes={o.tile_sizes}"
        if o.target != "auto":
            extra += f", target={o.target!r}"
        if self._disk is not None:
            extra += f", cache_dir={self._disk.directory!r}"
        budget = "" if o.memory_budget is None else f"memory_budget={o.memory_budget}, "
        return f"JITTensorKernel({budget}threads={o.threads}{extra})"


@dataclass
class LazyJit:
    """A :class:`JITTensorKernel` made by ``make`` on first use, once, thread-safely
    (``jit`` is None until then; setting it back to None makes a fresh one)."""

    make: Callable[[], JITTensorKernel]
    jit: JITTensorKernel | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self) -> JITTensorKernel:
        jit = self.jit
        if jit is None:
            with self.lock:
                if self.jit is None:
                    self.jit = self.make()
                jit = self.jit
        return jit


_DEFAULT = LazyJit(JITTensorKernel)


def default_jit() -> JITTensorKernel:
    """The shared :class:`JITTensorKernel` behind :func:`compile` and :func:`jit_tensor`."""
    return _DEFAULT.get()


def compile(
    source: str,
    shapes: ShapesLike | None = None,
    dtypes: DTypesLike | None = None,
    *,
    kernel: str | None = None,
    filename: str = "<expr>",
    memory_budget: int | None = None,
    tile_size: int | None = None,
    tile_sizes: Sequence[int] = (),
    threads: int | None = None,
    target: str | None = None,
) -> CompiledKernel:
    """Compile ``source`` with the given options, cached in :func:`default_jit`'s cache.

    The same as ``JITTensorKernel(memory_budget, ...).compile(source, shapes, dtypes)``
    except that every option combination shares one cache.
    """
    options = JitOptions(
        memory_budget,
        tile_size,
        cast(Any, tile_sizes),  # (checked and made a tuple by JitOptions)
        default_threads() if threads is None else threads,
        default_target() if target is None else target,
    )
    return default_jit().compile(
        source, shapes, dtypes, kernel=kernel, filename=filename, options=options
    )


def jit_tensor(
    source: str, shapes: ShapesLike | None = None, /, *, out: Any = None, **values: Any
) -> Any:
    """Compile ``source`` for ``values`` and run it on them, with :func:`default_jit`.

    ``jit_tensor(source, **values)`` is ``default_jit()(source, **values)``:
    shapes and dtypes come from the values (see :meth:`JITTensorKernel.__call__`).
    ``jit_tensor(source, shapes, **values)`` takes the shapes from ``shapes``,
    checked as :meth:`JITTensorKernel.compile` checks them, and the rest from
    the values.  ``out`` is as for :class:`CompiledKernel`.
    """
    jit = default_jit()
    if shapes is None:
        return jit(source, out=out, **values)
    inferred: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, object] = {}
    for name, value in values.items():
        inferred[name], dtypes[name] = infer(name, value)
    given, _ = normalize(shapes, None)
    norm_shapes, norm_dtypes = normalize({**inferred, **(given or {})}, cast(DTypesLike, dtypes))
    compiled = jit.compile_normalized(source, norm_shapes, norm_dtypes, None, "<expr>", jit.options)
    check_request(compiled, given, None)
    return compiled(out=out, **values)
