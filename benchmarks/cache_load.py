"""The cost of a kernel found in the JIT's cache on disk, in a new process.

    python benchmarks/cache_load.py [--runs 15] [--json out.json] [--environment-as-is]

For each case (a kernel and a target), one process compiles the kernel into a
fresh cache folder (the miss, after another miss has written the bytecode
cache); then ``runs`` new processes each import NumPy
and make the inputs (outside the clock), and time, with ``time.perf_counter``:
``import tdsl``, the ``jit.compile(...)`` that loads the kernel from the cache,
and the kernel's first call.  The cases run interleaved (one process of each,
then the next round).  Each process also reports whether xDSL (any ``xdsl``
module) or llvmlite was imported, and whether the compile was a hit.

Python's bytecode cache is on for the child processes, in a temporary folder
(``PYTHONPYCACHEPREFIX``; ``PYTHONDONTWRITEBYTECODE`` unset), as in an
installed package whose ``.pyc`` files exist: the first process writes them.
``--environment-as-is`` leaves the environment alone (with
``PYTHONDONTWRITEBYTECODE=1`` and no ``__pycache__`` every process compiles
tdsl's modules from source: about 10 ms more on a hit, measured here).

The table gives min / median / max over the runs, in milliseconds.  The goal
(issue 12) is an import, load and first call of under 150 ms together, without
xDSL.  The machine's load average is printed: on a busy machine the numbers
say little.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    """A kernel to load: its source, shapes, dtypes and target."""

    name: str
    source: str
    shapes: dict[str, tuple[int, ...]] | None
    dtypes: str | None
    target: str
    filename: str = "<expr>"


def cases() -> list[Case]:
    mlp = (ROOT / "examples" / "mlp.tdsl").read_text()
    out: list[Case] = []
    for target in ("native", "numpy"):
        out.append(
            Case(
                "sum(exp(A)*B, axis=1) 512x512 f32",
                "sum(exp(A) * B, axis=1)",
                {"A": (512, 512), "B": (512, 512)},
                "f32",
                target,
            )
        )
        out.append(Case("examples/mlp.tdsl", mlp, None, None, target, "examples/mlp.tdsl"))
    return out


_CHILD = """
import json, sys, time
import numpy as np
case = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
shapes = case["signature"]
arrays = {
    name: rng.standard_normal(shape).astype(case["arg_dtypes"][name])
    for name, shape in shapes.items()
}
t0 = time.perf_counter()
import tdsl
t1 = time.perf_counter()
jit = tdsl.JITTensorKernel(cache_dir=case["folder"], target=case["target"])
kernel = jit.compile(case["source"], case["shapes"], case["dtypes"], filename=case["filename"])
t2 = time.perf_counter()
kernel(**arrays)
t3 = time.perf_counter()
info = jit.disk_cache_info()
print(json.dumps({
    "import": t1 - t0, "load": t2 - t1, "call": t3 - t2, "total": t3 - t0,
    "hit": info.hits == 1 and info.misses == 0,
    "target": kernel.target,
    "xdsl": any(m == "xdsl" or m.startswith("xdsl.") for m in sys.modules),
    "llvmlite": "llvmlite" in sys.modules,
}))
"""


def _child(payload: dict[str, Any], env: dict[str, str] | None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(payload)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return json.loads(done.stdout)


def _populate(case: Case, folder: str, env: dict[str, str] | None) -> tuple[dict[str, Any], float]:
    """Compile ``case`` into ``folder`` in this process's child; its payload and the
    miss's compile time (seconds, in a new process with NumPy imported)."""
    import tdsl

    kernel = tdsl.JITTensorKernel(cache_dir=False, target=case.target).compile(
        case.source, case.shapes, case.dtypes, filename=case.filename
    )
    payload = {
        "source": case.source,
        "shapes": case.shapes,
        "dtypes": case.dtypes,
        "target": case.target,
        "filename": case.filename,
        "folder": folder,
        "signature": {a.name: a.shape for a in kernel.args},
        "arg_dtypes": {a.name: a.dtype.str for a in kernel.args},
    }
    if env is not None and "PYTHONPYCACHEPREFIX" in env:
        # a first miss elsewhere writes the bytecode of everything a compile imports,
        # so that the miss timed below is a compile, not a byte-compile of xDSL
        _child({**payload, "folder": folder + "-warm-up"}, env)
    first = _child(payload, env)
    if first["hit"] or first["target"] != case.target:
        raise RuntimeError(f"{case.name}: expected a {case.target} miss, got {first}")
    return payload, first["load"]


def measure(
    runs: int, chosen: Sequence[Case] | None = None, bytecode_cache: bool = True
) -> list[dict[str, Any]]:
    """Per case: the miss's compile time and ``runs`` samples of a hit in a new process."""
    chosen = list(chosen or cases())
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tdsl-cache-bench-") as root:
        env = None
        if bytecode_cache:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["PYTHONPYCACHEPREFIX"] = os.path.join(root, "pycache")
        payloads: list[dict[str, Any]] = []
        for i, case in enumerate(chosen):
            payload, miss = _populate(case, os.path.join(root, str(i)), env)
            payloads.append(payload)
            results.append({"case": case.name, "target": case.target, "miss": miss, "hits": []})
        for _ in range(runs):
            for payload, result in zip(payloads, results, strict=True):
                sample = _child(payload, env)
                if not sample["hit"]:
                    raise RuntimeError(f"{result['case']}: not a hit: {sample}")
                result["hits"].append(sample)
    return results


def _stats(values: list[float]) -> str:
    ms = [v * 1e3 for v in values]
    return f"{min(ms):6.1f} {statistics.median(ms):6.1f} {max(ms):6.1f}"


def report(results: list[dict[str, Any]], bytecode_cache: bool, out: Any = sys.stdout) -> None:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(
        f"Cached load in a new process (NumPy imported first), ms as min / median / max "
        f"over {len(results[0]['hits'])} runs; load average {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f} on {os.cpu_count()} cores; bytecode cache "
        + ("on" if bytecode_cache else "as the environment says"),
        file=out,
    )
    head = f"{'case':36} {'target':7} {'miss':>7} | {'import tdsl':>20} | {'load':>20} | "
    head += f"{'first call':>20} | {'total':>20} | xdsl  llvmlite"
    print(head, file=out)
    for r in results:
        hits = r["hits"]
        cols = [_stats([h[k] for h in hits]) for k in ("import", "load", "call", "total")]
        xdsl = any(h["xdsl"] for h in hits)
        llvmlite = any(h["llvmlite"] for h in hits)
        print(
            f"{r['case']:36} {r['target']:7} {r['miss'] * 1e3:7.1f} | "
            + " | ".join(cols)
            + f" | {'yes' if xdsl else 'no':5} {'yes' if llvmlite else 'no'}",
            file=out,
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="new processes per case")
    parser.add_argument("--json", metavar="PATH", help="also write every sample as JSON")
    parser.add_argument(
        "--environment-as-is",
        action="store_true",
        help="do not turn Python's bytecode cache on for the child processes",
    )
    args = parser.parse_args(argv)
    started = time.time()
    bytecode_cache = not args.environment_as_is
    results = measure(args.runs, bytecode_cache=bytecode_cache)
    report(results, bytecode_cache)
    if args.json:
        Path(args.json).write_text(json.dumps({"started": started, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
