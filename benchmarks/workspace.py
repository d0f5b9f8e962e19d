"""What keeping a native function's workspace between calls saves
(:mod:`tdsl.runtime.workspace`)::

    python benchmarks/workspace.py                 # every workload, 7 calls each
    python benchmarks/workspace.py --only block --repeat 11
    PYTHONPATH=/path/to/older/checkout python benchmarks/workspace.py   # before it

Each workload of ``benchmarks/transformer.py`` (and ``heads-split``, a block's 12
attention heads split from its qkv product) runs natively (``tdsl.trace``) and in
eager NumPy, each in a process of its own, on inputs created in f32
(``standard_normal(dtype=np.float32)``), so that the process has freed no large
array before it: glibc then maps a block above its ``mmap`` threshold for the call and
unmaps it after, and a call that allocates its buffers faults their pages in again
(``transformer.py`` creates its inputs in f64 and converts them, and the f64 arrays it
frees raise that threshold).  Medians of ``--repeat`` calls after a warm-up; page
faults per call are the process's minor faults (``getrusage``) over the timed calls.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

import numpy as np

WORKLOADS = ("mlp", "attention1024", "attention12x512", "block", "heads-split")


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def child(workload: str, approach: str, repeat: int) -> dict[str, Any]:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import transformer

    def rand(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> Any:
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)

    transformer._rand = rand  # pyright: ignore[reportPrivateUsage]
    if workload == "heads-split":  # a block's 12 heads, split from its qkv product
        fn, args = _heads_split(transformer)
    else:
        fn, args, _ = transformer.inputs(workload)

    if approach == "eager":
        run = lambda: fn(*args)  # noqa: E731
    else:
        import tdsl

        traced = tdsl.trace(fn, target="native")
        traced.compile(*args)
        run = lambda: traced(*args)  # noqa: E731
    run()
    times: list[float] = []
    f0 = _faults()
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return {"median_s": float(np.median(times)), "faults": (_faults() - f0) / repeat}


def _heads_split(transformer: Any) -> tuple[Any, list[Any]]:
    np32 = np.float32
    rng = np.random.default_rng(0)
    h = rng.standard_normal((512, 2304), dtype=np32)

    def heads(h: Any) -> Any:
        q, k, v = np.split(h, 3, axis=-1)
        mask = (1 - np.tri(h.shape[0], dtype=h.dtype)) * np32(-1e10)
        outs = [
            transformer.softmax(qh @ kh.T * np32(0.125) + mask) @ vh
            for qh, kh, vh in zip(
                np.split(q, 12, axis=-1),
                np.split(k, 12, axis=-1),
                np.split(v, 12, axis=-1),
                strict=True,
            )
        ]
        return np.hstack(outs)

    return heads, [h]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", nargs=2, default=None, metavar=("WORKLOAD", "APPROACH"))
    options = parser.parse_args()
    if options.child:
        print(json.dumps(child(*options.child, options.repeat)))
        return
    names = [w for w in WORKLOADS if not options.only or any(o in w for o in options.only)]
    env = {**os.environ, "OPENBLAS_THREAD_TIMEOUT": "1"}
    rows: dict[str, Any] = {}
    print(f"{'workload':16} {'native':>10} {'faults':>8} {'eager':>10} {'faults':>8}")
    for name in names:
        row = {}
        for approach in ("native", "eager"):
            command = [sys.executable, __file__, "--child", name, approach]
            command += ["--repeat", str(options.repeat)]
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
            row[approach] = json.loads(done.stdout.strip().splitlines()[-1])
        rows[name] = row
        native, eager = row["native"], row["eager"]
        print(
            f"{name:16} {native['median_s'] * 1e3:8.2f}ms {native['faults']:8.0f} "
            f"{eager['median_s'] * 1e3:8.2f}ms {eager['faults']:8.0f}"
        )
    if options.json:
        with open(options.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
