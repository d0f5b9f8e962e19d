"""Out of core with tdsl on Dask: a fused expression over an array on disk larger than memory.

    python examples/dask_out_of_core.py [--rows 262144] [--memory-limit 256MiB] [--dir DIR]

``x`` (rows x 1024 float32: 1 GiB by default) is written to a ``.npy`` file,
and a ``distributed`` cluster of two worker processes, each limited to
``--memory-limit``, computes ::

    def head(x: f32[rows, 1024], w: f32[1024, 256], b: f32[256]):
        return softmax(x @ w + b), mean(relu(x), axis=0)

with ``x`` read from the file chunk by chunk (row chunks), the softmax written
back to another ``.npy`` file chunk by chunk, and the column means (a
reduction across all row chunks) returned.  The same is done with plain
``dask.array`` on a fresh cluster of the same size, and, at a size where it
fits in memory (``--small-rows``), with eager NumPy in a process of its own
and both Dask variants again.  Printed first: the target the JIT picks for
tdsl's kernel, which every task runs.  Each Dask variant runs on a fresh
cluster, a first time to compile tdsl's kernels in the workers, then until a
run compiles nothing (tasks may move between workers); printed for that run:
the time, and the peak resident memory (RSS) of each worker during it, with
its RSS before it (the kernel's ``VmHWM``, reset first; Linux).  For
eager NumPy: the time and the peak RSS of its process.  Results are checked
against each other.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

from tdsl import JITTensorKernel
from tdsl.dask import tasks

TARGET = "numpy"
"""The numpy target: ``auto`` would pick native code, and a worker that compiles and
loads it (xDSL's passes, LLVM) takes about 200 MiB of its 256 MiB before any chunk,
so Dask pauses it again and again (measured: the run did not finish in 10 minutes)."""

K, N = 1024, 256
"""Columns of ``x``; columns of ``w``."""

HEAD = """\
def head(x: f32[{rows}, {k}], w: f32[{k}, {n}], b: f32[{n}]):
    return softmax(x @ w + b), mean(relu(x), axis=0)
"""


@dataclass(frozen=True)
class NpyFile:
    """A ``.npy`` file as an array Dask can read chunk by chunk, in any process: each read
    maps the file and copies the slice out (it pickles as its path, not its data)."""

    path: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, index: Any) -> np.ndarray[Any, Any]:
        return np.array(np.load(self.path, mmap_mode="r")[index])


@dataclass(frozen=True)
class NpyTarget:
    """A ``.npy`` file ``da.store`` writes into chunk by chunk, from any process."""

    path: str

    def __setitem__(self, index: Any, value: np.ndarray[Any, Any]) -> None:
        target = np.load(self.path, mmap_mode="r+")
        target[index] = value
        target.flush()


def make_data(directory: str, rows: int, seed: int = 0) -> dict[str, str]:
    """``x`` on disk (written in blocks, never whole in memory), ``w`` and ``b`` too."""
    rng = np.random.default_rng(seed)
    paths = {name: os.path.join(directory, f"{name}_{rows}.npy") for name in ("x", "w", "b")}
    x = np.lib.format.open_memmap(paths["x"], mode="w+", dtype=np.float32, shape=(rows, K))
    for start in range(0, rows, 8192):
        stop = min(rows, start + 8192)
        x[start:stop] = rng.standard_normal((stop - start, K), dtype=np.float32)
    x.flush()
    del x
    np.save(paths["w"], rng.standard_normal((K, N), dtype=np.float32) / np.float32(np.sqrt(K)))
    np.save(paths["b"], rng.standard_normal(N, dtype=np.float32))
    return paths


def output_file(path: str, rows: int) -> NpyTarget:
    np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, N)).flush()
    return NpyTarget(path)


def status_mib(field: str) -> float:
    """``VmRSS`` (resident memory) or ``VmHWM`` (its peak) of this process, in MiB (Linux)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(field)


def reset_peak() -> float:
    """Reset this process's peak RSS to its current RSS (Linux 4.0+), which it returns."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")
    return status_mib("VmRSS")


def run_dask(
    variant: str, paths: dict[str, str], rows: int, chunk_rows: int, limit: str, out: str
) -> tuple[float, list[tuple[float, float]], np.ndarray[Any, Any]]:
    """Runs on a fresh two-worker cluster, the first compiling tdsl's kernels in the
    workers; of the first later run that compiles nothing: (seconds, (RSS before, peak
    RSS) of each worker, means)."""
    x = da.from_array(NpyFile(paths["x"], (rows, K), np.dtype(np.float32)), chunks=(chunk_rows, K))
    w, b = np.load(paths["w"]), np.load(paths["b"])
    if variant == "tdsl":
        head = JITTensorKernel(target=TARGET).compile(HEAD.format(rows=rows, k=K, n=N))
        y, means = head(x, w, b)
    else:
        h = x @ w + b
        e = da.exp(h - h.max(axis=1, keepdims=True))
        y = e / e.sum(axis=1, keepdims=True)
        means = da.maximum(x, 0).mean(axis=0)
    target = output_file(out, rows)
    stored = da.store(y, target, lock=False, compute=False)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, memory_limit=limit, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        dask.compute(stored, means, scheduler=client)
        for _ in range(5):  # until a run compiles nothing: tasks may move between workers
            compiled = client.run(compilations)
            before = client.run(reset_peak)
            start = time.perf_counter()
            (_, result) = dask.compute(stored, means, scheduler=client)
            seconds = time.perf_counter() - start
            peaks = client.run(status_mib, "VmHWM")
            if client.run(compilations) == compiled:
                break
    return seconds, [(before[k], peaks[k]) for k in sorted(peaks)], np.asarray(result)


def compilations() -> int:
    """How many kernels tdsl's tasks compiled in this process."""
    return tasks.cache_info().misses


EAGER = """
import json, sys, time
import numpy as np
x_path, w_path, b_path, out = sys.argv[1:5]
start = time.perf_counter()
x, w, b = np.load(x_path), np.load(w_path), np.load(b_path)
h = x @ w + b
e = np.exp(h - h.max(axis=1, keepdims=True))
np.save(out, e / e.sum(axis=1, keepdims=True))
means = np.maximum(x, 0).mean(axis=0)
seconds = time.perf_counter() - start
peak = next(int(l.split()[1]) / 1024 for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"seconds": seconds, "peak": peak, "means": means.tolist()}))
"""


def run_eager(paths: dict[str, str], out: str) -> tuple[float, float, np.ndarray[Any, Any]]:
    """Eager NumPy in a process of its own: (seconds, its peak RSS, means)."""
    done = subprocess.run(
        [sys.executable, "-c", EAGER, paths["x"], paths["w"], paths["b"], out],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    return found["seconds"], found["peak"], np.asarray(found["means"], np.float32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=262144, help="rows of x (1024 columns)")
    parser.add_argument("--small-rows", type=int, default=32768, help="rows where NumPy fits")
    parser.add_argument("--chunk-rows", type=int, default=4096, help="rows per chunk")
    parser.add_argument("--memory-limit", default="256MiB", help="memory limit of each worker")
    parser.add_argument(
        "--dir", help="where the .npy files go, made if missing (default: a temporary directory)"
    )
    args = parser.parse_args(argv)
    if args.dir is not None:
        os.makedirs(args.dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tdsl-ooc-", dir=args.dir) as directory:
        print(
            f"x: f32[{args.rows}, {K}] on disk, {args.rows * K * 4 / 2**20:.0f} MiB; "
            f"2 workers with memory_limit={args.memory_limit}; chunks of {args.chunk_rows} rows"
        )
        head = JITTensorKernel(target=TARGET).compile(HEAD.format(rows=args.rows, k=K, n=N))
        reason = f" ({head.target_reason})" if head.target_reason else ""
        print(f"tdsl's kernel (and every task) runs the {head.target} target{reason}")
        print(f"{'x':>9}  {'variant':<13} {'time':>8}  peak RSS per process")
        for rows, eager in ((args.rows, False), (args.small_rows, True)):
            paths = make_data(directory, rows)
            outs = {v: os.path.join(directory, f"y_{v}_{rows}.npy") for v in ("tdsl", "dask")}
            results: dict[str, np.ndarray[Any, Any]] = {}
            for variant in ("tdsl", "dask"):
                seconds, peaks, results[variant] = run_dask(
                    variant, paths, rows, args.chunk_rows, args.memory_limit, outs[variant]
                )
                shown = ", ".join(f"{peak:.0f} MiB (from {base:.0f})" for base, peak in peaks)
                label = "tdsl on dask" if variant == "tdsl" else "dask.array"
                print(
                    f"{rows * K * 4 / 2**20:>5.0f} MiB  {label:<13} {seconds:>6.2f} s  "
                    f"workers: {shown}"
                )
            if eager:
                out = os.path.join(directory, f"y_numpy_{rows}.npy")
                seconds, peak, results["numpy"] = run_eager(paths, out)
                print(
                    f"{rows * K * 4 / 2**20:>5.0f} MiB  {'eager NumPy':<13} {seconds:>6.2f} s  "
                    f"one process: {peak:.0f} MiB"
                )
                outs["numpy"] = out
            for variant in ("dask", "numpy"):
                if variant in results:
                    np.testing.assert_allclose(results["tdsl"], results[variant], rtol=1e-4)
                    ours = np.load(outs["tdsl"], mmap_mode="r")
                    theirs = np.load(outs[variant], mmap_mode="r")
                    for start in range(0, rows, 65536):
                        np.testing.assert_allclose(
                            ours[start : start + 65536],
                            theirs[start : start + 65536],
                            rtol=1e-4,
                            atol=1e-6,
                        )
            for path in (*paths.values(), *outs.values()):
                os.remove(path)
        print("results checked: the softmax files and the column means agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
