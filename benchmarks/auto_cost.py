"""Fit and check the cost model ``target="auto"`` chooses by (issue 20, item 5).

    python benchmarks/auto_cost.py fit [--passes 1] [--write] [--json FILE]
    python benchmarks/auto_cost.py evaluate [--runs 3] [--json FILE]
    python benchmarks/auto_cost.py calls

``fit`` first times each function of HEAVY (``f(A)``, or ``f(A, B)``) on 65,536 f32
elements (256 KiB an array: in cache, so that the functions' arithmetic, not memory,
is what is weighed) on both targets, against ``A * 0.5`` (``A * B``): a function's cost per
element over that of ``exp`` is its weight in the model's ``heavy`` count
(:data:`tdsl.jit.cost_model.HEAVY_COST`).  It then times the FIT programs (element-wise chains, transcendental chains, softmax,
row and column reductions, layernorm, a matmul with an epilogue) at sizes from 64 to 4M f32
elements on the numpy target and natively (default threads, one process, the
targets interleaved, the median of 5 batches of calls, each batch at least 2 ms),
``passes`` times over (each row's median over them), reads each kernel's counts
(:func:`tdsl.jit.cost_model.features`), and fits each
target's coefficients by non-negative least squares on relative error.  ``--write`` writes both into ``tdsl/jit/cost_model.py``.

``evaluate`` times the HELD_OUT programs (gelu, logsumexp, clip, column means,
row normalization, erf, attention heads; none of them in the fit) ``runs`` times and
reports, for each, what ``auto`` picks and its time over the better target's: the
goal is at most 1.2 in every run.  It also reports the old rule (native from 16384
elements on) over the same measurements.

``calls`` times programs whose native loops make many small BLAS calls at a small
budget (CALLS) and prints each one's time over its calls: the figure of
:data:`tdsl.jit.cost_model.LOOPS_BLAS_CALL` (the median).

All set ``OPENBLAS_THREAD_TIMEOUT=1`` before NumPy loads (an idle OpenBLAS worker
spins and takes the second core from what runs next).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "1")

import argparse
import json
import re
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tdsl.jit import JITTensorKernel, cost_model
from tdsl.jit.cost_model import NUMPY_CALLS, TERMS, Features, features, predict

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "tdsl" / "jit" / "cost_model.py"
SIZES = [64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20, 1 << 22]

# name -> (expression, inputs: name -> shape from (rows, cols))
Shapes = Callable[[int, int], dict[str, tuple[int, ...]]]


def _same(*names: str) -> Shapes:
    return lambda r, c: dict.fromkeys(names, (r, c))


FIT: dict[str, tuple[str, Shapes, int]] = {
    "add": ("A + B", _same("A", "B"), 256),
    "chain": ("relu(A) + B * C - D", _same("A", "B", "C", "D"), 512),
    "exp": ("exp(A) * 2", _same("A"), 64),
    "trig": ("tanh(A) * B + sin(A)", _same("A", "B"), 256),
    "softmax": ("softmax(A)", _same("A"), 256),
    "rowsum": ("sum(exp(A) * B, axis=1)", _same("A", "B"), 1024),
    "layernorm": (
        "(A - mean(A, axis=1, keepdims=True)) / sqrt(var(A, axis=1, keepdims=True) + 1e-5)",
        _same("A"),
        768,
    ),
    "mlp": ("relu(A @ W + b)", lambda r, c: {"A": (r, c), "W": (c, c), "b": (c,)}, 128),
    "colsum": ("sum(A * 2, axis=0)", _same("A"), 320),
    "colmax": ("max(exp(A), axis=0) + 1", _same("A"), 64),
    "minmax": ("maximum(A, B) - minimum(A, C) * 2", _same("A", "B", "C"), 700),
    "select": ("where(A > B, A, B * C)", _same("A", "B", "C"), 300),
}
HELD_OUT: dict[str, tuple[str, Shapes, int]] = {
    "gelu": ("0.5 * A * (1 + tanh(0.7978846 * (A + 0.044715 * A * A * A)))", _same("A"), 384),
    "logsumexp": ("log(sum(exp(A - max(A, axis=1, keepdims=True)), axis=1))", _same("A"), 128),
    "clip": ("maximum(minimum(A, 1.0), -1.0) * B + C", _same("A", "B", "C"), 1000),
    "colmean": ("mean(A * B, axis=0)", _same("A", "B"), 96),
    "normalize": ("A / sum(A, axis=1, keepdims=True)", _same("A"), 2048),
    "erf": ("erf(A) + A * B", _same("A", "B"), 200),
    "attention": (
        "softmax(Q @ K.T * 0.125) @ V",
        lambda r, c: dict.fromkeys("QKV", (r, 64)),
        64,
    ),
}


# op -> (program, the range its inputs are drawn from)
HEAVY: dict[str, tuple[str, tuple[float, float]]] = {
    **{
        f: (f"{f}(A)", (0.1, 0.9))
        for f in (
            "exp", "expm1", "log", "log2", "log10", "log1p", "tanh", "sinh", "cosh",
            "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arcsinh", "arctanh", "erf",
            "sigmoid",
        )
    },
    "arccosh": ("arccosh(A)", (1.1, 1.9)),
    "power": ("A ** B", (0.1, 0.9)),
    "arctan2": ("arctan2(A, B)", (0.1, 0.9)),
    "hypot": ("hypot(A, B)", (0.1, 0.9)),
    "logaddexp": ("logaddexp(A, B)", (0.1, 0.9)),
}  # fmt: skip
"""The functions whose cost per element ``fit`` measures (the ``heavy`` weights)."""


def measure_heavy(size: int = 1 << 16) -> dict[str, dict[str, float]]:
    """Per target, each HEAVY function's seconds per element over ``exp``'s, both over
    a plain multiplication's (the numpy target's ops in NUMPY_CALLS: 0), on ``size``
    elements.  The default keeps the arrays in cache: on a million elements native
    ``exp`` streams at memory speed (with 512-bit vectors on an Intel machine it
    measured 338 us against the multiplication's 432 us), which weighs memory, not the
    function.  Where ``exp`` still measures no slower than the multiplication, it stops
    rather than write such weights (every weight would come out at its floor)."""
    rng = np.random.default_rng(1)
    shape = (max(1, size // 1024), min(size, 1024))
    seconds: dict[str, dict[str, float]] = {"numpy": {}, "native": {}}
    programs = {**HEAVY, "unary": ("A * 0.5", (0.1, 0.9)), "binary": ("A * B", (0.1, 0.9))}
    for name, (expr, (lo, hi)) in programs.items():
        names = [n for n in "AB" if n in expr]
        args = {n: rng.uniform(lo, hi, shape).astype(np.float32) for n in names}
        kernels = {
            t: JITTensorKernel(target=t).compile(expr, dict.fromkeys(names, shape), "f32")
            for t in seconds
        }
        times: dict[str, list[float]] = {t: [] for t in seconds}
        for _ in range(3):  # interleaved
            for t, k in kernels.items():
                times[t] += per_call(lambda k=k, a=args: k(**a), rounds=2)
        for t in seconds:
            seconds[t][name] = statistics.median(times[t])
    weights: dict[str, dict[str, float]] = {}
    for t, s in seconds.items():
        exp = s["exp"] - s["unary"]
        if exp <= 0.05 * s["unary"]:
            raise SystemExit(
                f"{t}: exp measured no slower than a multiplication ({s['exp'] * 1e6:.1f} "
                f"against {s['unary'] * 1e6:.1f} us): the machine is too noisy, run again"
            )
        weights[t] = {}
        for name, (expr, _) in HEAVY.items():
            op = f"tensordsl.{name}"
            base = s["binary" if "B" in expr else "unary"]
            w = 0.0 if t == "numpy" and op in NUMPY_CALLS else max(0.05, (s[name] - base) / exp)
            weights[t][op] = float(f"{w:.3g}")
        print(
            f"{t:6s} " + " ".join(f"{n.split('.')[1]} {w:.2f}" for n, w in weights[t].items()),
            flush=True,
        )
    return weights


def shapes_for(shapes: Shapes, cols: int, size: int, attention: bool) -> dict[str, tuple[int, ...]]:
    if attention:  # S x S scores of about `size` elements
        s = max(8, round(size**0.5))
        return shapes(s, 64)
    c = min(cols, size)
    return shapes(max(1, size // c), c)


def per_call(fn: Callable[[], object], rounds: int = 5) -> list[float]:
    """Seconds per call of ``fn``, one figure per round (batches of at least 2 ms)."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    reps = max(1, int(2e-3 / once))
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        out.append((time.perf_counter() - start) / reps)
    return out


def measure(programs: dict[str, tuple[str, Shapes, int]], sizes: list[int]) -> list[dict[str, Any]]:
    rows = []
    rng = np.random.default_rng(0)
    for name, (expr, shapes, cols) in programs.items():
        for size in sizes:
            shp = shapes_for(shapes, cols, size, name == "attention")
            names = sorted(shp)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kernels = {
                    t: JITTensorKernel(target=t).compile(expr, shp, "f32")
                    for t in ("numpy", "native", "auto")
                }
            args = {n: rng.uniform(0.5, 1.5, shp[n]).astype(np.float32) for n in names}
            times: dict[str, list[float]] = {"numpy": [], "native": []}
            for _ in range(3):  # interleaved
                for t in times:
                    k = kernels[t]
                    times[t] += per_call(lambda k=k, a=args: k(**a), rounds=2)
            tiled = kernels["numpy"].ir.module("tiled")
            row = {
                "program": name,
                "size": size,
                "shapes": {n: list(s) for n, s in shp.items()},
                "largest": max(int(np.prod(s)) for s in shp.values()),
                "features": {t: features(tiled, t).vector()[1:] for t in ("numpy", "native")},
                "numpy_s": statistics.median(times["numpy"]),
                "native_s": statistics.median(times["native"]),
                "auto": kernels["auto"].target,
            }
            rows.append(row)
            print(
                f"{name:10s} {size:8d}  numpy {row['numpy_s'] * 1e6:10.1f} us  "
                f"native {row['native_s'] * 1e6:10.1f} us  auto: {row['auto']}",
                flush=True,
            )
    return rows


CALLS: list[tuple[str, dict[str, tuple[int, ...]], int]] = [
    ("(relu(A) @ B) * (relu(A) @ C)", {"A": (128, 160), "B": (160, 128), "C": (160, 128)}, 256),
    (
        "sum(relu(A) @ B, axis=0, keepdims=True) * (softmax(A) @ C)",
        {"A": (128, 300), "B": (300, 128), "C": (300, 128)},
        256,
    ),
    (
        "cumsum(softmax(A) @ B, axis=0) + ((A - mean(A, axis=1, keepdims=True)) @ C)",
        {"A": (16, 300), "B": (300, 128), "C": (300, 128)},
        1024,
    ),
    ("mean(relu(A) @ B, axis=0)", {"A": (100, 300), "B": (300, 160)}, 256),
]
"""Programs whose native loops, at these budgets, make many small BLAS calls (``calls``)."""


def measure_calls() -> float:
    """Seconds per BLAS call of the native loops (one thread) on the CALLS programs, each
    its time over its calls (an upper bound: the rest of its work counts too); the
    median, :data:`tdsl.jit.cost_model.LOOPS_BLAS_CALL`'s figure."""
    from tdsl.backend.llvm.lower_to_loops import loops_matmuls

    rng = np.random.default_rng(0)
    each = []
    for expr, shapes, budget in CALLS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jit = JITTensorKernel(target="native", memory_budget=budget, threads=1)
            kernel = jit.compile(expr, shapes, "f32")
        _, calls = loops_matmuls(kernel.ir.module("planned"))
        args = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
        seconds = statistics.median(per_call(lambda k=kernel, a=args: k(**a), rounds=5))
        each.append(seconds / calls)
        print(
            f"{expr} at {budget}: {calls} calls, {seconds * 1e3:.3f} ms, {each[-1] * 1e6:.3f} us a call"
        )
    print(f"median: {statistics.median(each) * 1e6:.3f} us a call")
    return statistics.median(each)


def nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The x >= 0 that minimizes |a x - b| (Lawson and Hanson's active set method, on
    columns scaled to unit norm)."""
    norms = np.linalg.norm(a, axis=0)
    norms[norms == 0] = 1.0
    a = a / norms
    n = a.shape[1]
    free = np.zeros(n, dtype=bool)
    x = np.zeros(n)
    for _ in range(3 * n):
        w = a.T @ (b - a @ x)
        if free.all() or w[~free].max() <= 1e-10:
            break
        free[int(np.argmax(np.where(free, -np.inf, w)))] = True
        while True:
            z = np.zeros(n)
            z[free] = np.linalg.lstsq(a[:, free], b, rcond=None)[0]
            if (z[free] > 0).all():
                x = z
                break
            shrink = free & (z <= 0)
            step = np.min(x[shrink] / (x[shrink] - z[shrink]))
            x = x + step * (z - x)
            free &= x > 1e-12
            x[~free] = 0.0
    return x / norms


def merged(passes: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per program and size: each target's median time over the passes."""
    out = []
    for same in zip(*passes, strict=True):
        row = dict(same[0])
        for target in ("numpy", "native"):
            row[f"{target}_s"] = statistics.median(r[f"{target}_s"] for r in same)
        out.append(row)
    return out


def fit(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per target, non-negative least squares on relative error."""
    out: dict[str, dict[str, float]] = {}
    for target in ("numpy", "native"):
        x = np.array([Features(*r["features"][target]).vector() for r in rows])
        t = np.array([r[f"{target}_s"] for r in rows])
        c = nnls(x / t[:, None], np.ones(len(t)))
        out[target] = {name: float(f"{v:.4g}") for name, v in zip(TERMS, c, strict=True)}
    return out


def write(heavy: dict[str, dict[str, float]], coefficients: dict[str, dict[str, float]]) -> None:
    text = MODEL.read_text()
    body = ""
    for name, table in (("HEAVY_COST", heavy), ("COEFFICIENTS", coefficients)):
        body += f"{name}: Mapping[str, Mapping[str, float]] = {{\n"
        for target, values in table.items():
            body += f'    "{target}": {json.dumps(values)},\n'
        body += "}  # fmt: skip\n"
    new = re.sub(
        r"(# fitted by benchmarks/auto_cost.py \(begin\)\n).*?(# fitted by benchmarks/auto_cost.py \(end\))",
        lambda m: m.group(1) + body + m.group(2),
        text,
        flags=re.S,
    )
    MODEL.write_text(new)
    print(f"wrote {MODEL.relative_to(ROOT)}")


def choice(row: dict[str, Any], coefficients: Any) -> str:
    native = predict(Features(*row["features"]["native"]), "native", coefficients)
    numpy = predict(Features(*row["features"]["numpy"]), "numpy", coefficients)
    return "native" if native < numpy else "numpy"


def slowdown(row: dict[str, Any], target: str) -> float:
    return row[f"{target}_s"] / min(row["numpy_s"], row["native_s"])


def report(rows: list[dict[str, Any]], coefficients: Any) -> None:
    worst_model = worst_old = 0.0
    for r in rows:
        model = choice(r, coefficients)
        old = "native" if r["largest"] >= 1 << 14 else "numpy"
        sm, so = slowdown(r, model), slowdown(r, old)
        worst_model, worst_old = max(worst_model, sm), max(worst_old, so)
        flag = "  <-- over 1.2" if sm > 1.2 else ""
        print(
            f"{r['program']:10s} {r['size']:8d}  numpy/native {r['numpy_s'] / r['native_s']:6.2f}  "
            f"model: {model:6s} {sm:5.2f}  (auto picked {r['auto']}; old rule {old:6s} {so:5.2f}){flag}"
        )
    print(f"worst: model {worst_model:.2f}x the better target, old rule {worst_old:.2f}x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit")
    f.add_argument("--passes", type=int, default=1)
    f.add_argument("--write", action="store_true")
    f.add_argument("--json")
    e = sub.add_parser("evaluate")
    e.add_argument("--runs", type=int, default=3)
    e.add_argument("--json")
    sub.add_parser("calls")
    args = parser.parse_args(argv)
    if args.command == "calls":
        measure_calls()
        return
    if args.command == "fit":
        heavy = measure_heavy()
        cost_model.HEAVY_COST = heavy  # the FIT rows' counts weigh by the new figures
        rows = merged([measure(FIT, SIZES) for _ in range(args.passes)])
        coefficients = fit(rows)
        print(json.dumps(coefficients, indent=1))
        report(rows, coefficients)
        if args.write:
            write(heavy, coefficients)
        data: Any = {"rows": rows, "heavy": heavy, "coefficients": coefficients}
    else:
        data = []
        for run in range(args.runs):
            print(f"run {run + 1} of {args.runs}")
            rows = measure(HELD_OUT, SIZES)
            report(rows, cost_model.COEFFICIENTS)
            data.append(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
