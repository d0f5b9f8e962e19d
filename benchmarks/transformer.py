"""Transformer blocks, measured fairly: the GPT-2 MLP sub-block, attention heads at
S=1024 and S=4096, 12-head attention and a whole GPT-2-small block at T=512, each
written in NumPy as picoGPT writes it (with ``np.float32`` constants, so that NumPy
2's promotion keeps f32), against eager NumPy, tdsl (``tdsl.trace``) on each
target, jax.jit where installed, and the bare GEMMs of the same shapes::

    python benchmarks/transformer.py                    # every workload, 5 runs each
    python benchmarks/transformer.py --only attention   # workloads whose name has a word
    python benchmarks/transformer.py --json out.json
    python benchmarks/transformer.py --budget 1000000   # a memory budget (default: tdsl's)

Each (workload, approach) runs in a process of its own, with
``OPENBLAS_THREAD_TIMEOUT=1``: OpenBLAS's idle worker spins after a call and takes the
second core from whatever runs next (jax.jit's block went from 45 ms to 74 ms right
after a NumPy matmul), and a fresh process measures its own peak memory.  Times are
medians (and minima) of ``--repeat`` calls after one warm-up call; ``peak`` is the
growth of the process's peak RSS over the calls, the first included (inputs and
compiled code excluded; memory the process freed before is reused first, so this
undercounts by up to what compiling left free);
``err`` is the largest difference from eager NumPy relative to its largest value;
for tdsl, ``memory_budget`` is the budget the kernel was planned at (its inputs' size
where no plan fits the default: see ``JITTensorKernel``) and ``groups`` its groups.
The JSON's ``environment`` entry records the CPU, the load average, the ``OPENBLAS_*``
variables and the BLAS kernels threadpoolctl reports.

Every approach but jax.jit calls NumPy's OpenBLAS, whose kernels for this CPU are
picked when it loads, unless ``OPENBLAS_CORETYPE`` names others: some machines set it
for old OpenBLAS builds (``Haswell``), and on an AVX-512 EPYC that halved the bare
GEMMs' speed (the MLP's 20 ms against 11.5 ms) while jax.jit kept its own.  The command
says so when the variable is set; unset it for the command alone::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/transformer.py
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

F32 = np.float32
Array = np.ndarray[Any, Any]


def gelu(x: Array) -> Array:
    return F32(0.5) * x * (1 + np.tanh(F32(np.sqrt(2 / np.pi)) * (x + F32(0.044715) * x**3)))


def softmax(x: Array) -> Array:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def layer_norm(x: Array, g: Array, b: Array) -> Array:
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    return g * ((x - mean) / np.sqrt(variance + F32(1e-5))) + b


def mlp(x: Array, g: Array, b: Array, wfc: Array, bfc: Array, wpr: Array, bpr: Array) -> Array:
    return x + gelu(layer_norm(x, g, b) @ wfc + bfc) @ wpr + bpr


def head(q: Array, k: Array, v: Array, mask: Array) -> Array:
    return softmax(q @ k.T * F32(0.125) + mask) @ v


def heads(q: Array, k: Array, v: Array, mask: Array) -> Array:
    return softmax(q @ np.swapaxes(k, -1, -2) * F32(0.125) + mask) @ v


def block(
    x: Array,
    g1: Array,
    b1: Array,
    wqkv: Array,
    bqkv: Array,
    wo: Array,
    bo: Array,
    g2: Array,
    b2: Array,
    wfc: Array,
    bfc: Array,
    wpr: Array,
    bpr: Array,
) -> Array:
    h = layer_norm(x, g1, b1) @ wqkv + bqkv
    q, k, v = np.split(h, 3, axis=-1)
    mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * F32(-1e10)
    outs = [
        softmax(qh @ kh.T * F32(0.125) + mask) @ vh
        for qh, kh, vh in zip(
            np.split(q, 12, axis=-1),
            np.split(k, 12, axis=-1),
            np.split(v, 12, axis=-1),
            strict=True,
        )
    ]
    x = x + np.hstack(outs) @ wo + bo
    return mlp(x, g2, b2, wfc, bfc, wpr, bpr)


def _rand(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> Array:
    return (rng.standard_normal(shape) * scale).astype(F32)


def _causal(t: int) -> Array:
    return ((1 - np.tri(t, dtype=F32)) * F32(-1e10)).astype(F32)


def _sub_block(rng: np.random.Generator, e: int, n: int) -> list[Array]:
    """A layernorm's gain and bias, then a linear layer E->n and one n->E (weights, biases)."""
    return [
        _rand(rng, e),
        _rand(rng, e),
        _rand(rng, e, n, scale=0.02),
        _rand(rng, n),
        _rand(rng, n, e, scale=0.02),
        _rand(rng, e),
    ]


def inputs(name: str) -> tuple[Callable[..., Array], list[Array], list[tuple[int, int, int]]]:
    """The function, its arguments, and the (m, k, n) of its GEMMs."""
    rng = np.random.default_rng(0)
    e, t = 768, 512
    if name == "mlp":
        args = [_rand(rng, t, e), *_sub_block(rng, e, 4 * e)]
        return mlp, args, [(t, e, 4 * e), (t, 4 * e, e)]
    if name in ("attention1024", "attention4096"):
        s = 1024 if name == "attention1024" else 4096
        args = [_rand(rng, s, 64), _rand(rng, s, 64), _rand(rng, s, 64), _causal(s)]
        return head, args, [(s, 64, s), (s, s, 64)]
    if name == "attention12x512":
        args = [_rand(rng, 12, t, 64), _rand(rng, 12, t, 64), _rand(rng, 12, t, 64), _causal(t)]
        return heads, args, [(t, 64, t)] * 12 + [(t, t, 64)] * 12
    if name == "block":
        # (attention's output projection is E->E: its "n -> E" layer, n = E)
        attn = _sub_block(rng, e, 3 * e)
        attn[4] = _rand(rng, e, e, scale=0.02)
        args = [_rand(rng, t, e), *attn, *_sub_block(rng, e, 4 * e)]
        gemms = [(t, e, 3 * e), (t, e, e), (t, e, 4 * e), (t, 4 * e, e)]
        gemms += [(t, 64, t)] * 12 + [(t, t, 64)] * 12
        return block, args, gemms
    raise SystemExit(f"unknown workload {name!r}")


WORKLOADS = ("mlp", "attention1024", "attention4096", "attention12x512", "block")
APPROACHES = ("numpy", "tdsl-numpy", "tdsl-native", "jax", "gemms")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # (KiB on Linux)


def child(workload: str, approach: str, repeat: int, budget: int | None) -> dict[str, Any]:
    """Measure one approach on one workload, in this process."""
    fn, args, gemms = inputs(workload)
    compile_s = 0.0
    planned: dict[str, Any] = {}
    if approach == "numpy":
        run: Callable[[], Any] = lambda: fn(*args)  # noqa: E731
    elif approach.startswith("tdsl-"):
        import tdsl

        traced = tdsl.trace(fn, target=approach.removeprefix("tdsl-"), memory_budget=budget)
        start = time.perf_counter()
        kernel = traced.compile(*args)
        compile_s = time.perf_counter() - start
        # the budget the kernel was planned at (the default's fallback shows here)
        planned = {"memory_budget": kernel.memory_budget, "groups": len(kernel.groups)}
        run = lambda: traced(*args)  # noqa: E731
    elif approach == "jax":
        try:
            import jax
            import jax.numpy as jnp
        except ImportError:
            return {"skipped": "jax is not installed"}
        jfn = jax.jit(_jax_version(fn, jnp))
        jargs = [jnp.asarray(a) for a in args]
        start = time.perf_counter()
        jfn.lower(*jargs).compile()
        compile_s = time.perf_counter() - start
        run = lambda: jfn(*jargs).block_until_ready()  # noqa: E731
    elif approach == "gemms":
        rng = np.random.default_rng(1)
        pairs = [(_rand(rng, m, k), _rand(rng, k, n)) for m, k, n in gemms]
        run = lambda: [a @ b for a, b in pairs]  # noqa: E731
    else:
        raise SystemExit(f"unknown approach {approach!r}")
    base = _peak_mb()  # inputs and compiled code: before the first call
    got = run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    out: dict[str, Any] = {
        "median_s": float(np.median(times)),
        "min_s": float(np.min(times)),
        "peak_mb": max(_peak_mb() - base, 0.0),
        "compile_s": compile_s,
        **planned,
    }
    if approach != "gemms":
        want = fn(*args)  # (after the measurement: its temporaries would set the peak)
        got = np.asarray(got)
        scale = float(np.max(np.abs(want))) or 1.0
        out["err"] = float(np.max(np.abs(got.astype(np.float64) - want))) / scale
        out["dtype_ok"] = got.dtype == want.dtype
    return out


def _jax_version(fn: Callable[..., Array], jnp: Any) -> Callable[..., Any]:
    """``fn`` on jax.numpy: the workload functions call ``np`` by name, so they run on
    a module that is jax.numpy (with NumPy's ``split``/``hstack``/``tri`` spellings)."""
    import types

    module = sys.modules[fn.__module__]
    scope: dict[str, Any] = {**vars(module), "np": jnp, "F32": jnp.float32}
    for name, obj in vars(module).items():
        if isinstance(obj, types.FunctionType) and obj.__module__ == fn.__module__:
            scope[name] = types.FunctionType(obj.__code__, scope, name, obj.__defaults__)
    return scope[fn.__name__]


def environment() -> dict[str, Any]:
    """What the figures depend on besides the code: the CPU, the load, BLAS's kernels."""
    cpu = None
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else None
    env: dict[str, Any] = {
        "numpy": np.__version__,
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("OPENBLAS")},
    }
    try:
        import threadpoolctl  # pyright: ignore[reportMissingTypeStubs]

        env["blas"] = [
            {k: pool.get(k) for k in ("filepath", "version", "architecture", "num_threads")}
            for pool in threadpoolctl.threadpool_info()
            if pool.get("user_api") == "blas"
        ]
    except ImportError:  # (the bench extra installs it)
        env["blas"] = None
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json")
    parser.add_argument(
        "--budget",
        type=int,
        default=None,
        help="tdsl's memory budget, elements (default: tdsl's own, 10**6 elements, or a "
        "kernel's inputs' elements where no plan fits that)",
    )
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "APPROACH"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args.repeat, args.budget)))
        return
    env = {**os.environ, "OPENBLAS_THREAD_TIMEOUT": "1"}
    if "OPENBLAS_CORETYPE" in os.environ:
        print(
            f"note: OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} is set: NumPy's "
            "OpenBLAS runs those kernels, not the ones it picks for this CPU (see the "
            "module docstring)",
            flush=True,
        )
    chosen = [w for w in WORKLOADS if not args.only or any(o in w for o in args.only)]
    results: dict[str, dict[str, Any]] = {"environment": environment()}
    print(f"{'workload':<16} " + " ".join(f"{a:>22}" for a in APPROACHES))
    for workload in chosen:
        row: dict[str, Any] = {}
        for approach in APPROACHES:
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    workload,
                    approach,
                    "--repeat",
                    str(args.repeat),
                    *(["--budget", str(args.budget)] if args.budget is not None else []),
                ],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if done.returncode != 0:
                row[approach] = {"failed": done.stderr.strip().splitlines()[-1:]}
            else:
                row[approach] = json.loads(done.stdout.strip().splitlines()[-1])
        results[workload] = row
        eager = row["numpy"].get("median_s")
        cells = []
        for approach in APPROACHES:
            r = row[approach]
            if "median_s" not in r:
                cells.append(f"{'-':>22}")
                continue
            speed = f"{eager / r['median_s']:.2f}x" if eager else ""
            cells.append(f"{r['median_s'] * 1e3:8.1f} ms {speed:>6} {r['peak_mb']:4.0f}M")
        print(f"{workload:<16} " + " ".join(cells), flush=True)
    print(
        "\n(ms: median; Nx: eager NumPy's median / this one; M: peak RSS growth, MiB. "
        "tdsl's compile times and errors are in --json)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
