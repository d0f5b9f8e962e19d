"""Where a GPT-2 MLP's time over its bare GEMMs goes natively: the epilogue, or the shape
of the BLAS calls its tiles make (issue 20: the MLP within 0.9x of jax.jit's speed).

    OPENBLAS_THREAD_TIMEOUT=1 python benchmarks/mlp_gemm_tiles.py [--rounds 5] [--reps 11]

Two tables, each from ``rounds`` interleaved rounds (median of ``reps`` calls each,
after a warm-up call), f32, T=512, E=768, hidden 4E=3072:

1. tdsl's native target (``tdsl.trace``, default budget) on the whole MLP
   ``x + gelu(layer_norm(x) @ wfc + bfc) @ wpr + bpr``, on its bare chain
   ``(x @ wfc) @ wpr`` and on a GPT-2 block's tail (attention's output projection
   and residual, then the MLP: ``mlp(x + a @ wo + bo)``), with the native loops tiles
   of each, beside the two GEMMs of the MLP in NumPy (whole, BLAS on every thread). If the chain costs what
   the MLP costs, the epilogue (layernorm, gelu, biases, residual) is not where the
   time goes.
2. The same two GEMMs as NumPy calls in tiles, in the ways the native loops could
   cut them while keeping the hidden layer (T x 4E) from being held whole:
   - ``rows R x hidden H``: each of two threads takes T/2 rows in tiles of R rows (BLAS
     on that thread alone); per tile, the hidden layer in column blocks of H: for each,
     ``h = x[rows] @ wfc[:, block]``, then ``out[rows] += h @ wpr[block, :]``;
   - ``serial, BLAS on 2 threads``: the same tiles one after another, BLAS on both.
   - ``all rows x hidden H, threads split the hidden dim``: each of two threads takes
     half of the hidden layer's column blocks for all T rows (so each block of
     ``wfc`` and ``wpr`` is packed once per call, not once per thread), the second
     thread adding into a partial output of its own, summed at the end;
   ``256 x 1024`` on two threads is what the native loops run at the default budget
   (a tile of 256 rows per thread, the hidden dim in 3 tiles). Each row names the
   scratch (elements) the loops would need for it, the layer norm's rows included:
   splitting the hidden dim needs the layer norm of all T rows, a hidden tile per
   thread and a partial output, more than the default budget of 10**6 elements.

No tdsl code changes with this script: it measures the shapes a planner could choose.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "1")

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from transformer import inputs, mlp

T, E, H = 512, 768, 3072


def _median_ms(fn: Callable[[], Any], reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _tiled(
    x: Any, wfc: Any, wpr: Any, out: Any, rows: int, hidden: int, pool: ThreadPoolExecutor | None
) -> Callable[[], None]:
    """The two GEMMs in tiles of ``rows`` rows by ``hidden`` hidden columns, the row
    tiles split between two threads (``pool``) or run one after another (None)."""
    blocks = [np.ascontiguousarray(wfc[:, c : c + hidden]) for c in range(0, H, hidden)]
    scratch = [(np.empty((rows, hidden), x.dtype), np.empty((rows, E), x.dtype)) for _ in "ab"]

    def run(starts: list[int], which: int) -> None:
        h, part = scratch[which]
        for i in starts:
            o = out[i : i + rows]
            for j, c in enumerate(range(0, H, hidden)):
                np.matmul(x[i : i + rows], blocks[j], out=h)
                if c == 0:
                    np.matmul(h, wpr[c : c + hidden], out=o)
                else:
                    np.matmul(h, wpr[c : c + hidden], out=part)
                    np.add(o, part, out=o)

    starts = list(range(0, T, rows))
    if pool is None:
        return lambda: run(starts, 0)
    half = len(starts) // 2

    def split() -> None:
        other = pool.submit(run, starts[:half], 1)
        run(starts[half:], 0)
        other.result()

    return split


def _hidden_split(
    x: Any, wfc: Any, wpr: Any, out: Any, hidden: int, pool: ThreadPoolExecutor
) -> Callable[[], None]:
    """The two GEMMs for all T rows, the hidden dim's blocks of ``hidden`` columns split
    between two threads (``pool`` runs the second): the first writes ``out``, the second
    a partial output of its own, added into ``out`` at the end."""
    blocks = [np.ascontiguousarray(wfc[:, c : c + hidden]) for c in range(0, H, hidden)]
    partial = np.empty((T, E), x.dtype)
    scratch = [(np.empty((T, hidden), x.dtype), np.empty((T, E), x.dtype)) for _ in "ab"]
    starts = list(range(0, H, hidden))
    half = len(starts) // 2

    def run(mine: list[int], which: int, target: Any) -> None:
        h, part = scratch[which]
        for k, c in enumerate(mine):
            np.matmul(x, blocks[c // hidden], out=h)
            if k == 0:
                np.matmul(h, wpr[c : c + hidden], out=target)
            else:
                np.matmul(h, wpr[c : c + hidden], out=part)
                np.add(target, part, out=target)

    def split() -> None:
        other = pool.submit(run, starts[half:], 1, partial)
        run(starts[:half], 0, out)
        other.result()
        np.add(out, partial, out=out)

    return split


def _tail(
    x: Any, a: Any, wo: Any, bo: Any, g: Any, b: Any, wfc: Any, bfc: Any, wpr: Any, bpr: Any
) -> Any:
    return mlp(x + a @ wo + bo, g, b, wfc, bfc, wpr, bpr)


def _loops_tiles(traced: Any) -> str:
    return ", ".join(re.findall(r"loops tiles \[[^\]]*\]", traced.ir["planned"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=11)
    args = parser.parse_args()

    from threadpoolctl import threadpool_limits

    import tdsl

    _, mlp_args, _ = inputs("mlp")
    x, _, _, wfc, _, wpr, _ = mlp_args
    native_mlp = tdsl.trace(mlp, target="native")
    native_chain = tdsl.trace(lambda x, wfc, wpr: (x @ wfc) @ wpr, target="native")
    # a GPT-2 block's tail: attention's output projection and residual, then the MLP
    # (more kept per row than the MLP alone: its loops take shorter row tiles)
    _, block_args, _ = inputs("block")
    wo, bo, g2, b2, wfc2, bfc2, wpr2, bpr2 = block_args[5:]
    attended = np.random.default_rng(1).standard_normal((T, E)).astype(np.float32)
    tail_args = [x, attended, wo, bo, g2, b2, wfc2, bfc2, wpr2, bpr2]
    native_tail = tdsl.trace(_tail, target="native")
    native_mlp(*mlp_args)
    native_chain(x, wfc, wpr)
    native_tail(*tail_args)
    hidden = np.empty((T, H), np.float32)
    out = np.empty((T, E), np.float32)
    first: dict[str, Callable[[], Any]] = {
        "tdsl native: MLP": lambda: native_mlp(*mlp_args),
        "tdsl native: (x @ wfc) @ wpr": lambda: native_chain(x, wfc, wpr),
        "tdsl native: a block's tail, mlp(x + a @ wo + bo)": lambda: native_tail(*tail_args),
        "NumPy: the two GEMMs whole": lambda: (
            np.matmul(x, wfc, out=hidden),
            np.matmul(hidden, wpr, out=out),
        ),
    }
    pool = ThreadPoolExecutor(1)
    # (each with the scratch the loops would take for it, the layer norm's rows included)
    second: dict[str, tuple[Callable[[], None], int, int]] = {
        f"rows {r} x hidden {h}, two threads, BLAS on each alone": (
            _tiled(x, wfc, wpr, out, r, h, pool),
            1,
            2 * r * (E + h + 2),
        )
        for r, h in ((128, 3072), (256, 1536), (256, 1024), (256, 768), (256, 384), (128, 1536))
    }
    second.update(
        {
            f"all rows x hidden {h}, threads split the hidden dim": (
                _hidden_split(x, wfc, wpr, out, h, pool),
                1,
                T * (E + 2) + 2 * T * h + T * E,
            )
            for h in (768, 512, 384)
        }
    )
    second.update(
        {
            f"rows {r} x hidden {h}, serial, BLAS on 2 threads": (
                _tiled(x, wfc, wpr, out, r, h, None),
                2,
                r * (E + h + 2),
            )
            for r, h in ((128, 3072), (256, 1536))
        }
    )
    second["whole, BLAS on 2 threads"] = (
        lambda: first["NumPy: the two GEMMs whole"](),
        2,
        T * (E + 2) + T * H,
    )
    times: dict[str, list[float]] = {k: [] for k in [*first, *second]}
    for _ in range(args.rounds):
        for name, fn in first.items():
            times[name].append(_median_ms(fn, args.reps))
        for name, (fn, threads, _) in second.items():
            with threadpool_limits(threads):
                times[name].append(_median_ms(fn, args.reps))

    def show(names: list[str]) -> None:
        scratch = {name: f" {entry[2]:,} |" for name, entry in second.items()}
        extra = " scratch (elements) |" if any(n in scratch for n in names) else ""
        print(f"| what | ms per round (median of each round's calls) | median |{extra}")
        print("|---|---|---|" + ("---|" if extra else ""))
        for name in names:
            ts = times[name]
            row = ", ".join(f"{t:.1f}" for t in ts)
            print(f"| {name} | {row} | {statistics.median(ts):.1f} |{scratch.get(name, '')}")

    print(
        f"native loops tiles: MLP {_loops_tiles(native_mlp)}; chain "
        f"{_loops_tiles(native_chain)}; tail {_loops_tiles(native_tail)}"
    )
    print()
    show(list(first))
    print()
    show(list(second))


if __name__ == "__main__":
    main()
