"""Benchmarks: tdsl-compiled kernels against eager NumPy, numexpr and bare BLAS.

    python benchmarks/run.py [--quick] [--json out.json] [--only NAME ...]

Every workload is timed in one process, with the variants interleaved (rep 1 of
each, then rep 2 of each, ...) so that drift of the machine hits all of them
alike; each table row gives min / median / max and the speedup over eager NumPy
as a ratio of medians (the targets use these) and of minimums (steadier on a
busy machine).  Small inputs are timed in batches of calls (a sample is
the mean of a batch of at least ~2 ms).  Compiled kernels are called through
the public call path (``kernel(A=..., B=...)``: argument checks included).

Also measured: peak extra memory per call (tracemalloc: the peak during the
call minus the memory before it and the outputs), the latency of a first
compilation of a 10-op expression (in fresh processes, after import), and the
overhead of a cache hit (``jit(expr, **arrays)`` against calling the generated
function directly).

numexpr is optional (``pip install tdsl[bench]``); without it its rows are
skipped.  The JSON records the environment: Python, NumPy, the BLAS that
threadpoolctl sees (if installed), CPU, and the OPENBLAS_*/OMP_* variables.
On machines where OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set for old
OpenBLAS builds, unset both for a benchmark of a current NumPy:
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/run.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tdsl.jit import CompiledKernel, JITTensorKernel

try:
    import numexpr  # pyright: ignore[reportMissingTypeStubs]
except ImportError:  # pragma: no cover - optional dependency
    numexpr = None

try:
    import dask
    import dask.array as da
except ImportError:  # pragma: no cover - optional dependency (tdsl[dask])
    dask = da = None

Array = np.ndarray[Any, Any]


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Config:
    """Sizes and repetition counts of one benchmark run."""

    n: int = 4096
    """Square size of the element-wise, softmax and row-sum workloads."""
    mm: tuple[int, int, int] = (4096, 1024, 1024)
    """``relu(x @ w + b)``: rows of x, inner dim, columns of w."""
    small: int = 64
    """Square size (and all three matmul dims) of the small workloads."""
    reps: int = 15
    """Timed samples per variant for large inputs."""
    small_reps: int = 25
    """Timed samples (each a batch of calls) per variant for small inputs."""
    small_batch_seconds: float = 0.002
    """Minimum duration of one batch of calls to a small kernel."""
    compile_runs: int = 5
    """Fresh processes measuring a first compilation (0: skip)."""
    memory_budget: int = 1_000_000
    """The compiled kernels' memory budget (elements), the JIT's default."""
    threads: tuple[int, ...] = (1, 2)
    """Thread counts the compiled kernels are built for."""
    dask_n: int = 8192
    """Square size of the tdsl-on-Dask workloads (``x`` of ``relu(x @ w + b)`` too)."""
    dask_cols: int = 1024
    """Columns of ``w`` in the tdsl-on-Dask ``relu(x @ w + b)``."""
    dask_chunks: tuple[tuple[str, tuple[int, int]], ...] = (
        ("blocks", (2048, 2048)),
        ("rows", (1024, 8192)),
    )
    """Named chunkings of the Dask inputs: square blocks (rows cut into chunks), row blocks."""
    dask_workers: int = 2
    """Threads of Dask's threaded scheduler, for both variants."""
    dask_reps: int = 5
    """Timed samples per variant of the Dask workloads."""

    @classmethod
    def quick(cls) -> Config:
        """Smaller sizes and few repetitions: a smoke test in well under a minute."""
        return cls(
            n=1024,
            mm=(1024, 256, 256),
            reps=5,
            small_reps=7,
            small_batch_seconds=0.001,
            compile_runs=2,
            dask_n=1024,
            dask_cols=256,
            dask_chunks=(("blocks", (256, 256)), ("rows", (128, 1024))),
            dask_reps=3,
        )

    @classmethod
    def tiny(cls) -> Config:
        """Tiny sizes, for a test that the benchmark runs at all (no timing meaning)."""
        return cls(
            n=48,
            mm=(40, 24, 16),
            small=8,
            reps=2,
            small_reps=2,
            small_batch_seconds=0.0001,
            compile_runs=0,
            memory_budget=256,
            dask_n=48,
            dask_cols=16,
            dask_chunks=(("blocks", (16, 16)), ("rows", (8, 48))),
            dask_reps=1,
        )


# --------------------------------------------------------------------------- timing


@dataclass
class Variant:
    """One way to compute a workload: a call to time, and an untimed setup before each sample."""

    name: str
    run: Callable[[], Any]
    setup: Callable[[], None] | None = None
    threads: int | None = None
    kind: str = "other"
    """``compiled``, ``eager``, ``numexpr``, ``bare`` (bare matmul), ``oneshot`` or ``raw``."""


@dataclass
class Timing:
    """Samples of one variant, in seconds per call."""

    variant: str
    kind: str
    threads: int | None
    samples: list[float]

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)


def _batch_size(fn: Callable[[], Any], seconds: float) -> int:
    """How many calls of ``fn`` take at least ``seconds``."""
    count = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(count):
            fn()
        if time.perf_counter() - t0 >= seconds or count >= 1 << 20:
            return count
        count *= 2


def time_variants(
    variants: Sequence[Variant], reps: int, batch_seconds: float | None
) -> list[Timing]:
    """Time ``variants`` interleaved: ``reps`` rounds, one sample of each variant per round.

    With ``batch_seconds``, a sample is the mean over a batch of calls lasting at
    least that long (for small inputs); otherwise one call.
    """
    batches: list[int] = []
    for v in variants:  # warm up: caches, page faults, thread pools
        if v.setup is not None:
            v.setup()
        v.run()
        v.run()
        batches.append(1 if batch_seconds is None else _batch_size(v.run, batch_seconds))
    samples: list[list[float]] = [[] for _ in variants]
    for _ in range(reps):
        for v, batch, out in zip(variants, batches, samples, strict=True):
            if v.setup is not None:
                v.setup()
            run = v.run
            t0 = time.perf_counter()
            for _ in range(batch):
                run()
            out.append((time.perf_counter() - t0) / batch)
    return [Timing(v.name, v.kind, v.threads, s) for v, s in zip(variants, samples, strict=True)]


def extra_memory(fn: Callable[[], Any]) -> int:
    """Peak bytes ``fn()`` allocates beyond its results (tracemalloc sees NumPy's buffers)."""
    fn()  # warm: lazily created thread pools and scratch caches are not per-call costs
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    outputs = result if isinstance(result, tuple) else (result,)
    out_bytes = sum(int(o.nbytes) for o in outputs if isinstance(o, np.ndarray))
    return max(0, peak - before - out_bytes)


# --------------------------------------------------------------------------- workloads


@dataclass
class Workload:
    """One expression at one size: its inputs, eager and numexpr forms, compiled kernels."""

    key: str
    expr: str
    label: str
    inputs: dict[str, Array]
    eager: Callable[..., Any]
    numexpr: str | None = None
    bare: Callable[..., Any] | None = None
    small: bool = False
    kernels: dict[int, CompiledKernel] = field(default_factory=dict)


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: type[Any]) -> Array:
    return rng.standard_normal(shape, dtype=np.float64).astype(dtype)


def _softmax_eager(X: Array) -> Array:
    e = np.exp(X - X.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def make_workloads(cfg: Config, only: Sequence[str] = ()) -> list[Workload]:
    """The benchmark's workloads at large and small sizes."""
    rng = np.random.default_rng(0)
    out: list[Workload] = []
    f32, f64 = np.float32, np.float64
    for size, small in ((cfg.n, False), (cfg.small, True)):
        sq = (size, size)
        suffix = f"{size}x{size}"
        for dtype, tag in ((f32, "f32"), (f64, "f64")):
            out.append(
                Workload(
                    f"ew_{tag}_{suffix}",
                    "relu(A)+B*C-D",
                    f"relu(A)+B*C-D {suffix} {tag}",
                    {k: _rand(rng, sq, dtype) for k in "ABCD"},
                    lambda A, B, C, D: np.maximum(A, 0) + B * C - D,
                    numexpr="where(A > 0, A, 0) + B*C - D",
                    small=small,
                )
            )
        out.append(
            Workload(
                f"softmax_f32_{suffix}",
                "softmax(X)",
                f"softmax(X) {suffix} f32",
                {"X": _rand(rng, sq, f32)},
                _softmax_eager,
                small=small,
            )
        )
        out.append(
            Workload(
                f"sumexp_f32_{suffix}",
                "sum(exp(A)*B, axis=1)",
                f"sum(exp(A)*B, axis=1) {suffix} f32",
                {"A": _rand(rng, sq, f32), "B": _rand(rng, sq, f32)},
                lambda A, B: np.sum(np.exp(A) * B, axis=1),
                numexpr="sum(exp(A)*B, axis=1)",
                small=small,
            )
        )
        m, k, n = cfg.mm if not small else (size, size, size)
        out.append(
            Workload(
                f"mlp_f32_{m}x{k}x{n}",
                "relu(x @ w + b)",
                f"relu(x@w+b) {m}x{k}@{k}x{n} f32",
                {
                    "x": _rand(rng, (m, k), f32),
                    "w": (_rand(rng, (k, n), f32) / np.sqrt(k)).astype(f32),
                    "b": _rand(rng, (n,), f32),
                },
                lambda x, w, b: np.maximum(x @ w + b, 0),
                bare=lambda x, w, b: np.matmul(x, w),
                small=small,
            )
        )
    if only:
        out = [w for w in out if any(o in w.key for o in only)]
    return out


def _rtol(dtype: np.dtype[Any]) -> float:
    return 1e-4 if dtype == np.float32 else 1e-9


def check_results(w: Workload) -> None:
    """Every variant computes what eager NumPy computes (a benchmark of wrong code is void)."""
    want = w.eager(**w.inputs)
    got: dict[str, Any] = {f"tdsl threads={t}": k(**w.inputs) for t, k in w.kernels.items()}
    if w.numexpr is not None and numexpr is not None:
        got["numexpr"] = numexpr.evaluate(w.numexpr, local_dict=w.inputs)
    for name, value in got.items():
        if value.shape != want.shape or value.dtype != want.dtype:
            raise AssertionError(
                f"{w.label}: {name} gave {value.dtype}{value.shape}, NumPy {want.dtype}{want.shape}"
            )
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        np.testing.assert_allclose(
            value, want, rtol=_rtol(want.dtype), atol=_rtol(want.dtype) * scale, err_msg=w.label
        )


def variants_of(w: Workload, cfg: Config) -> list[Variant]:
    """Eager, bare matmul, numexpr at 1 and 2 threads, the compiled kernels."""
    ins = w.inputs
    out = [Variant("numpy eager", lambda: w.eager(**ins), kind="eager")]
    if w.bare is not None:
        bare = w.bare
        out.append(Variant("np.matmul alone", lambda: bare(**ins), kind="bare"))
    if w.numexpr is not None and numexpr is not None:
        ne = numexpr
        expr = w.numexpr
        for t in (1,) if w.small else cfg.threads:

            def setup(t: int = t) -> None:
                ne.set_num_threads(t)

            out.append(
                Variant(
                    f"numexpr threads={t}",
                    lambda: ne.evaluate(expr, local_dict=ins),
                    setup=setup,
                    threads=t,
                    kind="numexpr",
                )
            )
    for t, kernel in w.kernels.items():
        out.append(
            Variant(f"tdsl threads={t}", lambda k=kernel: k(**ins), threads=t, kind="compiled")
        )
    if w.small:
        # the one-shot path: source text and arrays, a cache hit on every call
        jit = JITTensorKernel(cfg.memory_budget)
        source = w.expr
        out.append(Variant("tdsl jit(expr, **arrays)", lambda: jit(source, **ins), kind="oneshot"))
    return out


# --------------------------------------------------------------------------- compile and call overhead

TEN_OPS = "(A*B + C) - exp(D)*sigmoid(A) + tanh(B)/abs(C)"
"""A 10-op expression: mul, add, exp, sigmoid, mul, sub, tanh, abs, div, add."""

_COMPILE_SCRIPT = """
import sys, time
t0 = time.perf_counter()
import tdsl.jit
if {warm}:
    import tdsl.frontend, tdsl.lowering.fuse, tdsl.lowering.tile, tdsl.lowering.numpy_target
t1 = time.perf_counter()
jit = tdsl.jit.JITTensorKernel()
shapes = dict.fromkeys("ABCD", (64, 64))
t2 = time.perf_counter()
jit.compile({expr!r}, shapes=shapes, dtypes="f32")
t3 = time.perf_counter()
print(t1 - t0, t3 - t2)
"""


def first_compile(runs: int, warm: bool) -> tuple[list[float], list[float]]:
    """Import time and first-compile time of :data:`TEN_OPS`, each in a fresh process.

    ``warm``: the pipeline modules are imported before the clock starts (the
    "after import" latency); otherwise the compile pays for their lazy import.
    """
    imports: list[float] = []
    compiles: list[float] = []
    script = _COMPILE_SCRIPT.format(warm=warm, expr=TEN_OPS)
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        )
        a, b = done.stdout.split()
        imports.append(float(a))
        compiles.append(float(b))
    return imports, compiles


def steady_compiles(runs: int) -> list[float]:
    """In-process compilations of :data:`TEN_OPS` by fresh JITs, new shapes each time."""
    out: list[float] = []
    for i in range(runs):
        jit = JITTensorKernel()
        shapes = dict.fromkeys("ABCD", (64 + i, 64))
        t0 = time.perf_counter()
        jit.compile(TEN_OPS, shapes=shapes, dtypes="f32")
        out.append(time.perf_counter() - t0)
    return out


def call_overhead(cfg: Config) -> list[Timing]:
    """Cache-hit overhead at small size: one-shot ``jit(...)`` vs ``kernel(...)`` vs raw."""
    rng = np.random.default_rng(1)
    ins = {k: _rand(rng, (cfg.small, cfg.small), np.float32) for k in "ABCD"}
    jit = JITTensorKernel(cfg.memory_budget)
    expr = "relu(A)+B*C-D"
    kernel = jit.compile(expr, shapes={k: v.shape for k, v in ins.items()}, dtypes="f32")
    raw = kernel.function
    A, B, C, D = ins["A"], ins["B"], ins["C"], ins["D"]
    variants = [
        Variant("generated function, no checks", lambda: raw(A, B, C, D), kind="raw"),
        Variant("kernel(A=..., ...)", lambda: kernel(A=A, B=B, C=C, D=D), kind="compiled"),
        Variant("kernel(A, B, C, D)", lambda: kernel(A, B, C, D), kind="compiled"),
        Variant("jit(expr, A=..., ...) (cache hit)", lambda: jit(expr, **ins), kind="oneshot"),
    ]
    return time_variants(variants, cfg.small_reps, cfg.small_batch_seconds)


# --------------------------------------------------------------------------- tdsl on Dask


def _status_bytes(field: str) -> int:
    """A memory figure of this process from ``/proc/self/status`` (Linux), in bytes."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def peak_rss(fn: Callable[[], Any]) -> int:
    """Peak resident memory while ``fn()`` runs above the resident memory before it: the
    kernel's high-water mark (``VmHWM``), first reset to the current RSS (Linux 4.0+:
    ``/proc/self/clear_refs``)."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")
    base = _status_bytes("VmRSS")
    fn()
    return max(0, _status_bytes("VmHWM") - base)


def _filled(name: str, shape: tuple[int, ...], scale: float = 1.0) -> Array:
    """Normal float32 samples made in place (no float64 temporary at 8192x8192), the same
    in every process for one name and shape."""
    rng = np.random.default_rng([ord(c) for c in name] + list(shape))
    out = np.empty(shape, np.float32)
    rng.standard_normal(dtype=np.float32, out=out)
    if scale != 1.0:
        out *= np.float32(scale)
    return out


@dataclass
class DaskWorkload:
    """One expression on Dask arrays, and the same written with ``dask.array`` functions."""

    key: str
    expr: str
    label: str
    names: tuple[str, ...]
    plain: Callable[..., Any]


def _plain_softmax(A: Any) -> Any:
    e = da.exp(A - A.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


DASK_WORKLOADS = (
    DaskWorkload(
        "ew",
        "relu(A)+B*C-D",
        "relu(A)+B*C-D",
        ("A", "B", "C", "D"),
        lambda A, B, C, D: da.maximum(A, 0) + B * C - D,
    ),
    DaskWorkload("softmax", "softmax(A)", "softmax(X)", ("A",), _plain_softmax),
    DaskWorkload(
        "sumexp",
        "sum(exp(A)*B, axis=1)",
        "sum(exp(A)*B, axis=1)",
        ("A", "B"),
        lambda A, B: (da.exp(A) * B).sum(axis=1),
    ),
    DaskWorkload(
        "mlp",
        "relu(A @ w + b)",
        "relu(x@w+b)",
        ("A", "w", "b"),
        lambda A, w, b: da.maximum(A @ w + b, 0),
    ),
)


@dataclass(frozen=True)
class DaskCase:
    """A workload at one size and chunking: what a child process needs to rebuild it."""

    workload: str
    n: int
    cols: int
    chunks: tuple[int, int]
    workers: int
    memory_budget: int

    def arrays(self) -> dict[str, Array]:
        n, cols = self.n, self.cols
        shapes = {"w": (n, cols), "b": (cols,)}
        w = next(w for w in DASK_WORKLOADS if w.key == self.workload)
        return {
            k: _filled(k, shapes.get(k, (n, n)), 1 / np.sqrt(n) if k == "w" else 1.0)
            for k in w.names
        }

    def chunked(self, arrays: dict[str, Array]) -> dict[str, Any]:
        rows, cols = self.chunks
        out: dict[str, Any] = {}
        for k, v in arrays.items():
            chunks = (rows, min(cols, v.shape[1])) if v.ndim == 2 else (min(cols, v.shape[0]),)
            out[k] = da.from_array(v, chunks=chunks)
        return out

    def results(self, arrays: dict[str, Array]) -> tuple[Any, Any, Array]:
        """The tdsl result, the plain Dask result (lazy), and an array to store them in."""
        w = next(w for w in DASK_WORKLOADS if w.key == self.workload)
        jit = JITTensorKernel(self.memory_budget)
        shapes = {k: v.shape for k, v in arrays.items()}
        kernel = jit.compile(w.expr, shapes=shapes, dtypes="f32")
        chunked = self.chunked(arrays)
        ((shape, dtype),) = kernel.results
        out = np.ones(shape, dtype)  # touched: its pages count before each run
        return kernel(**chunked), w.plain(**chunked), out

    def options(self) -> dict[str, Any]:
        return {"scheduler": "threads", "num_workers": self.workers}


def _store(result: Any, out: Array) -> None:
    da.store(result, out, lock=False)


def dask_memory(cases: Sequence[DaskCase]) -> list[dict[str, int]]:
    """Peak resident memory of one run of each variant (``tdsl``, ``dask``) of ``cases``,
    measured in a child process where large buffers are mmapped, so that resident memory
    follows the live ones, and freed memory goes back to the system between runs
    (:func:`dask_memory_child`)."""
    if not cases:
        return []
    here = os.path.dirname(os.path.abspath(__file__))
    payload = json.dumps([asdict(c) for c in cases])
    script = (
        f"import json, sys; sys.path.insert(0, {here!r}); import run; "
        f"print(json.dumps(run.dask_memory_child(json.loads({payload!r}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def dask_memory_child(cases: list[dict[str, Any]]) -> list[dict[str, int]]:
    """The measurements :func:`dask_memory` runs in a fresh process: per case and variant,
    a first run (which compiles), then a sampled run after freed memory went back to the
    system."""
    import ctypes

    libc = ctypes.CDLL("libc.so.6")
    libc.mallopt(-3, 1 << 16)  # M_MMAP_THRESHOLD 64 KiB, fixed: big buffers unmapped when freed
    out: list[dict[str, int]] = []
    for fields in cases:
        case = DaskCase(**{**fields, "chunks": tuple(fields["chunks"])})
        arrays = case.arrays()
        mine, plain, target = case.results(arrays)
        peaks: dict[str, int] = {}
        with dask.config.set(**case.options()):
            for variant, result in (("tdsl", mine), ("dask", plain)):
                _store(result, target)
                gc.collect()
                libc.malloc_trim(0)
                peaks[variant] = peak_rss(lambda r=result, o=target: _store(r, o))
        out.append(peaks)
        del arrays, mine, plain, target
        gc.collect()
        libc.malloc_trim(0)
    return out


def run_dask(cfg: Config, only: Sequence[str], say: Callable[[str], None]) -> list[dict[str, Any]]:
    """tdsl on Dask against plain ``dask.array``: same inputs, chunks and scheduler.

    Both results are written with ``da.store`` into one preallocated array (no
    concatenation at the end); the graphs are built once, outside the clock.
    Times are interleaved samples in this process; peak memory is measured in a
    child process (:func:`dask_memory`), after the timings.
    """
    rows: list[dict[str, Any]] = []
    chosen = [w for w in DASK_WORKLOADS if not only or any(o in f"dask_{w.key}" for o in only)]
    if da is None:
        if chosen:
            say("\n== tdsl on Dask: skipped (pip install tdsl[dask])")
        return rows
    measured: list[tuple[DaskCase, str, str, Timing, Timing]] = []
    for w in chosen:
        for chunking, chunks in cfg.dask_chunks:
            case = DaskCase(
                w.key, cfg.dask_n, cfg.dask_cols, chunks, cfg.dask_workers, cfg.memory_budget
            )
            arrays = case.arrays()
            mine, plain, out = case.results(arrays)
            with dask.config.set(**case.options()):
                _store(plain, out)
                want = out.copy()
                _store(mine, out)
                scale = float(np.max(np.abs(want))) if want.size else 0.0
                np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4 * scale, err_msg=w.label)
                variants = [
                    Variant("tdsl on dask", lambda r=mine, o=out: _store(r, o), kind="tdsl-dask"),
                    Variant("dask.array", lambda r=plain, o=out: _store(r, o), kind="dask"),
                ]
                tdsl_time, dask_time = time_variants(variants, cfg.dask_reps, None)
            measured.append((case, w.label, chunking, tdsl_time, dask_time))
            del arrays, mine, plain, out, want
    memory = dask_memory([case for case, *_ in measured])
    for (case, label, chunking, tdsl_time, dask_time), peaks in zip(measured, memory, strict=True):
        rows.append(
            {
                "workload": case.workload,
                "label": label,
                "chunking": chunking,
                "chunks": list(case.chunks),
                "tdsl": tdsl_time,
                "dask": dask_time,
                "tdsl_peak_rss_bytes": peaks["tdsl"],
                "dask_peak_rss_bytes": peaks["dask"],
            }
        )
        n, (chunk_rows, cols) = case.n, case.chunks
        say(
            f"\n== tdsl on Dask: {label} {n}x{n} f32, chunks {chunk_rows}x{cols} ({chunking}), "
            f"threaded scheduler, {case.workers} workers; {cfg.dask_reps} interleaved samples"
        )
        say(f"{'variant':<16} {'min':>10} {'median':>10} {'max':>10} {'peak RSS':>12}")
        for t, kind in ((tdsl_time, "tdsl"), (dask_time, "dask")):
            say(
                f"{t.variant:<16} {_fmt_time(t.min):>10} {_fmt_time(t.median):>10} "
                f"{_fmt_time(t.max):>10} {peaks[kind] / 2**20:>8.1f} MiB"
            )
        say(
            f"tdsl on dask: {dask_time.median / tdsl_time.median:.2f}x the speed (medians), "
            f"{peaks['dask'] / max(peaks['tdsl'], 1):.2f}x less peak memory"
        )
    return rows


# --------------------------------------------------------------------------- environment


def environment() -> dict[str, Any]:
    """What the numbers depend on."""
    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "numexpr": None if numexpr is None else numexpr.__version__,
        "dask": None if dask is None else dask.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "env": {
            k: v
            for k, v in sorted(os.environ.items())
            if k.startswith(("OPENBLAS", "OMP_", "MKL_", "NUMEXPR", "GOTO"))
        },
    }
    try:
        import threadpoolctl  # pyright: ignore[reportMissingTypeStubs]

        env["threadpools"] = threadpoolctl.threadpool_info()
    except ImportError:  # pragma: no cover - optional
        env["threadpools"] = None
    return env


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


# --------------------------------------------------------------------------- targets


@dataclass
class Target:
    """One performance goal and whether this run met it."""

    name: str
    value: float
    goal: str
    met: bool


def _ratio(timings: list[Timing], num_kind: str, den: Timing) -> float | None:
    for t in timings:
        if t.kind == num_kind:
            return t.median / den.median
    return None


def evaluate_targets(results: dict[str, Any], cfg: Config) -> list[Target]:
    """Compare the measured numbers with the project's performance goals."""
    targets: list[Target] = []
    by_key: dict[str, list[Timing]] = results["timings"]

    def compiled(key: str, threads: int) -> Timing | None:
        for t in by_key.get(key, []):
            if t.kind == "compiled" and t.threads == threads:
                return t
        return None

    def speedup(key: str, threads: int) -> float | None:
        t = compiled(key, threads)
        return None if t is None else _ratio(by_key[key], "eager", t)

    def add(name: str, value: float | None, goal: str, ok: Callable[[float], bool]) -> None:
        if value is not None:
            targets.append(Target(name, value, goal, ok(value)))

    big = f"{cfg.n}x{cfg.n}"
    for tag in ("f32", "f64"):
        key = f"ew_{tag}_{big}"
        add(f"relu(A)+B*C-D {tag}: speedup, 1 thread", speedup(key, 1), ">= 2x", lambda v: v >= 2)
        add(
            f"relu(A)+B*C-D {tag}: speedup, 2 threads",
            speedup(key, 2),
            ">= 3.5x",
            lambda v: v >= 3.5,
        )
        for t in cfg.threads:
            mine = compiled(key, t)
            theirs = [x for x in by_key.get(key, []) if x.kind == "numexpr" and x.threads == t]
            if mine is not None and theirs:
                add(
                    f"relu(A)+B*C-D {tag}: vs numexpr, {t} thread{'s' if t > 1 else ''}",
                    theirs[0].median / mine.median,
                    "> 1x (faster)",
                    lambda v: v > 1,
                )
    key = f"softmax_f32_{big}"
    add("softmax f32: speedup, 1 thread", speedup(key, 1), ">= 1.8x", lambda v: v >= 1.8)
    add("softmax f32: speedup, 2 threads", speedup(key, 2), ">= 3x", lambda v: v >= 3)
    key = f"sumexp_f32_{big}"
    add(
        "sum(exp(A)*B, axis=1) f32: speedup, 1 thread",
        speedup(key, 1),
        ">= 1.7x",
        lambda v: v >= 1.7,
    )
    m, k, n = cfg.mm
    key = f"mlp_f32_{m}x{k}x{n}"
    for t in cfg.threads:
        mine = compiled(key, t)
        if mine is not None:
            bare = next(x for x in by_key[key] if x.kind == "bare")
            add(
                f"relu(x@w+b): time / bare matmul, {t} thread{'s' if t > 1 else ''}",
                mine.median / bare.median,
                "<= 1.25x",
                lambda v: v <= 1.25,
            )
            add(
                f"relu(x@w+b): speedup, {t} thread{'s' if t > 1 else ''}",
                speedup(key, t),
                ">= 1.5x",
                lambda v: v >= 1.5,
            )
    for key in results["small_keys"]:
        for t in cfg.threads:
            add(
                f"{key}: speedup at small size, {t} thread{'s' if t > 1 else ''}",
                speedup(key, t),
                ">= 1x (never slower)",
                lambda v: v >= 1,
            )
        oneshot = [x for x in by_key[key] if x.kind == "oneshot"]
        if oneshot:
            add(
                f"{key}: speedup at small size, jit(expr, **arrays)",
                _ratio(by_key[key], "eager", oneshot[0]),
                ">= 1x (never slower)",
                lambda v: v >= 1,
            )
    for row in results["memory"]:
        if row["variant"].startswith("tdsl"):
            add(
                f"{row['workload']} {row['variant']}: extra memory / budget",
                row["extra_bytes"] / row["allowance_bytes"],
                "<= 1",
                lambda v: v <= 1,
            )
    for row in results.get("dask", []):
        mine, theirs = row["tdsl"], row["dask"]
        where = f"tdsl on Dask, {row['label']} ({row['chunking']})"
        if row["workload"] == "mlp":
            add(
                f"{where}: time / plain dask",
                mine.median / theirs.median,
                "<= 1.05x",
                lambda v: v <= 1.05,
            )
        else:
            add(
                f"{where}: speedup over plain dask",
                theirs.median / mine.median,
                ">= 1.5x",
                lambda v: v >= 1.5,
            )
        add(
            f"{where}: peak memory, plain dask / tdsl",
            row["dask_peak_rss_bytes"] / max(row["tdsl_peak_rss_bytes"], 1),
            ">= 2x less",
            lambda v: v >= 2,
        )
    comp = results.get("compile", {})
    if comp.get("first_after_import"):
        add(
            "first compile of a 10-op expression (after import), ms",
            1e3 * statistics.median(comp["first_after_import"]),
            "< 50 ms",
            lambda v: v < 50,
        )
    over = results.get("overhead")
    if over:
        add(
            "cache-hit overhead jit(expr, **arrays) - generated function, us",
            1e6 * (over["oneshot"] - over["raw"]),
            "< 5 us",
            lambda v: v < 5,
        )
    return targets


# --------------------------------------------------------------------------- the run


def _fmt_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def run(cfg: Config, only: Sequence[str] = (), out: Any = sys.stdout) -> dict[str, Any]:
    """Run every benchmark of ``cfg``, print the tables to ``out``, return the results."""

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    results: dict[str, Any] = {"timings": {}, "small_keys": [], "memory": [], "config": asdict(cfg)}
    say(
        f"tdsl benchmarks: numpy {np.__version__}, numexpr "
        f"{'absent' if numexpr is None else numexpr.__version__}, dask "
        f"{'absent' if dask is None else dask.__version__}, {os.cpu_count()} cores"
    )
    if hasattr(os, "getloadavg"):
        load = os.getloadavg()[0]
        say(
            f"load average {load:.2f}"
            + ("  (a busy machine: ratios are noisy)" if load > 1 else "")
        )
    blas = {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS")}
    if blas:
        say(f"note: {blas} set (see the module docstring)")
    jits = {t: JITTensorKernel(cfg.memory_budget, threads=t) for t in cfg.threads}
    header = (
        f"{'variant':<34} {'min':>10} {'median':>10} {'max':>10} "
        f"{'speedup (medians)':>18} {'(mins)':>7}"
    )
    for w in make_workloads(cfg, only):
        shapes = {k: v.shape for k, v in w.inputs.items()}
        dtype = next(iter(w.inputs.values())).dtype
        for t, jit in jits.items():
            w.kernels[t] = jit.compile(w.expr, shapes=shapes, dtypes=dtype)
        check_results(w)
        reps = cfg.small_reps if w.small else cfg.reps
        timings = time_variants(
            variants_of(w, cfg), reps, cfg.small_batch_seconds if w.small else None
        )
        results["timings"][w.key] = timings
        if w.small:
            results["small_keys"].append(w.key)
        eager = next(t for t in timings if t.kind == "eager")
        say()
        say(f"== {w.label}   ({len(w.kernels[1].groups)} group(s); {reps} interleaved samples)")
        say(header)
        for t in timings:
            say(
                f"{t.variant:<34} {_fmt_time(t.min):>10} {_fmt_time(t.median):>10} "
                f"{_fmt_time(t.max):>10} {eager.median / t.median:>17.2f}x "
                f"{eager.min / t.min:>6.2f}x"
            )
        if not w.small:
            for row in measure_memory(w, cfg):
                results["memory"].append(row)
                note = ""
                if row["variant"].startswith("tdsl"):
                    budget_mib = row["budget_bytes"] / 2**20
                    note = f"   (budget {cfg.memory_budget} elements = {budget_mib:.2f} MiB"
                    if row["materialized_bytes"]:
                        note += f" + {row['materialized_bytes'] / 2**20:.2f} MiB materialized"
                    note += ")"
                say(
                    f"   peak extra memory {row['variant']:<16} "
                    f"{row['extra_bytes'] / 2**20:9.3f} MiB{note}"
                )
        w.kernels.clear()

    results["dask"] = run_dask(cfg, only, say)

    comp: dict[str, list[float]] = {}
    if cfg.compile_runs:
        imports, firsts = first_compile(cfg.compile_runs, warm=True)
        cold_imports, colds = first_compile(cfg.compile_runs, warm=False)
        comp = {
            "import_tdsl_jit_and_pipeline": imports,
            "first_after_import": firsts,
            "import_tdsl_jit_only": cold_imports,
            "first_cold": colds,
        }
    comp["steady_fresh_jit"] = steady_compiles(max(3, cfg.compile_runs))
    results["compile"] = comp
    say()
    say(f"== compilation of a 10-op expression: {TEN_OPS}  (64x64 f32)")
    labels = {
        "import_tdsl_jit_and_pipeline": "import tdsl.jit + pipeline (fresh process)",
        "first_after_import": "first compile, after import",
        "import_tdsl_jit_only": "import tdsl.jit only (fresh process)",
        "first_cold": "first compile, pipeline not yet imported",
        "steady_fresh_jit": "compile by a fresh JIT, in a warm process",
    }
    for key, values in comp.items():
        say(
            f"{labels[key]:<46} min {_fmt_time(min(values)):>9}  median "
            f"{_fmt_time(statistics.median(values)):>9}  max {_fmt_time(max(values)):>9}"
        )

    timings = call_overhead(cfg)
    by_kind = {t.kind: t.median for t in timings}
    results["overhead"] = {"raw": by_kind["raw"], "oneshot": by_kind["oneshot"]}
    results["overhead_timings"] = timings
    say()
    say(f"== call overhead, relu(A)+B*C-D at {cfg.small}x{cfg.small} f32 (cache hit)")
    raw = by_kind["raw"]
    for t in timings:
        say(
            f"{t.variant:<36} min {_fmt_time(t.min):>9}  median {_fmt_time(t.median):>9}  "
            f"max {_fmt_time(t.max):>9}  overhead {1e6 * (t.median - raw):6.2f} us"
        )

    targets = evaluate_targets(results, cfg)
    results["targets"] = targets
    say()
    say("== targets")
    for tg in targets:
        say(f"[{'met' if tg.met else 'MISSED':>6}] {tg.name:<72} {tg.value:8.2f}  (goal {tg.goal})")
    met = sum(tg.met for tg in targets)
    say(f"{met} of {len(targets)} targets met")
    return results


def measure_memory(w: Workload, cfg: Config) -> list[dict[str, Any]]:
    """Peak extra memory of one call: eager NumPy and each compiled kernel.

    A kernel may allocate its budget (all threads together) plus the values it
    materializes between fusion groups (group outputs that are not results).
    """
    kernel = w.kernels[1]
    dtype = next(iter(w.inputs.values())).dtype
    result_bytes = sum(int(np.prod(shape)) * dt.itemsize for shape, dt in kernel.results)
    group_bytes = sum(_bytes_of(o) for g in kernel.groups for o in g.outputs)
    materialized = max(0, group_bytes - result_bytes)
    budget = cfg.memory_budget * dtype.itemsize
    ins, eager = w.inputs, w.eager
    calls: list[tuple[str, Callable[[], Any]]] = [("numpy eager", lambda: eager(**ins))]
    calls += [(f"tdsl threads={t}", lambda k=k: k(**ins)) for t, k in w.kernels.items()]
    return [
        {
            "workload": w.key,
            "variant": name,
            "extra_bytes": extra_memory(fn),
            "budget_bytes": budget,
            "materialized_bytes": materialized,
            "allowance_bytes": budget + materialized,
        }
        for name, fn in calls
    ]


def _bytes_of(type_text: str) -> int:
    """Bytes of a tensor written ``f32[8, 16]``."""
    dtype, dims = type_text.split("[", 1)
    size = 1
    for d in dims.rstrip("]").split(","):
        if d.strip():
            size *= int(d)
    return size * {"f16": 2, "f32": 4, "f64": 8}[dtype]


def to_json(results: dict[str, Any], cfg: Config, mode: str) -> dict[str, Any]:
    """The results as plain JSON data, with the environment."""

    def timing(t: Timing) -> dict[str, Any]:
        return {
            "variant": t.variant,
            "kind": t.kind,
            "threads": t.threads,
            "min_s": t.min,
            "median_s": t.median,
            "max_s": t.max,
            "samples_s": t.samples,
        }

    workloads = {}
    for key, timings in results["timings"].items():
        eager = next(t for t in timings if t.kind == "eager")
        workloads[key] = [
            {
                **timing(t),
                "speedup_vs_eager": eager.median / t.median,
                "speedup_vs_eager_mins": eager.min / t.min,
            }
            for t in timings
        ]
    return {
        "mode": mode,
        "config": asdict(cfg),
        "environment": environment(),
        "workloads": workloads,
        "memory": results["memory"],
        "dask": [
            {
                **{k: v for k, v in row.items() if k not in ("tdsl", "dask")},
                "tdsl": timing(row["tdsl"]),
                "dask": timing(row["dask"]),
            }
            for row in results.get("dask", [])
        ],
        "compile_s": results["compile"],
        "call_overhead": [timing(t) for t in results["overhead_timings"]],
        "targets": [asdict(t) for t in results["targets"]],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    parser.add_argument(
        "--only",
        nargs="*",
        default=(),
        metavar="NAME",
        help="only workloads whose key contains NAME (ew, softmax, sumexp, mlp, 64x64, dask, ...)",
    )
    args = parser.parse_args(argv)
    cfg = Config.quick() if args.quick else Config()
    results = run(cfg, args.only)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(to_json(results, cfg, "quick" if args.quick else "full"), f, indent=1)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
