"""Vectorized ``sin``/``cos`` on the native target: speed and accuracy of the
expansion of :mod:`tdsl.backend.llvm.math_trig` (issue 20, item 4).

    python benchmarks/native_trig.py speed [--size 4194304] [--reps 9]
    python benchmarks/native_trig.py accuracy [--stride 61]

``accuracy`` compares the pipeline's ``sin``/``cos`` with NumPy in float64 (f32) and
long double (f64) over a dense sweep of every 61st float32 bit pattern in the
domain (f64 with random low bits), the floats nearest multiples of ``pi/2`` and the
domain's edges: at most 0.501 ulp (f32) and 0.79 ulp (f64).

The slow path is what decides the speed.  Lanes beyond the domain must get the C
library's value (NumPy's), and LLVM's loop vectorizer (llvmlite 0.50) accepts a call
in a loop only if it is an intrinsic (``llvm.sin``: speculatable, so it is executed,
scalarized, for every lane, even from inside a branch) or has a vector variant (a
``vector-function-abi-variant`` attribute naming a masked vector function, which it
then calls with the branch's mask).  A plain call of ``sinf`` may write ``errno``:
the loop stays scalar.  The ``speed`` variants:

- ``libm``: ``approximate-math=false`` (``llvm.sin``, one C call per element);
- ``branch``: the expansion, ``scf.if`` around a C library call for lanes beyond
  the domain, without the vector variants: correct, the loop is scalar;
- ``intrinsic``: the same with ``llvm.sin`` in the branch: vectorized, the call made
  for every lane;
- ``none``: the expansion without a slow path (wrong beyond the domain): the speed
  of the arithmetic alone;
- ``vfabi``: the pipeline: ``branch`` with the call given masked vector variants
  (for 4, 8 and 16 lanes, defined in the module: they call the library for the
  lanes whose mask bit is set) by :mod:`tdsl.runtime.vector_math`: correct,
  vectorized.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))

from native.kernels import MLIR_TYPES, best_ms, context, elementwise_1d, parse, ulp_error

from tdsl.backend.llvm.convert_to_llvm import ConvertToLLVMPass
from tdsl.backend.llvm.math_trig import DOMAIN, ExpandTrig
from tdsl.runtime.compile import compile_llvm, llvm_ir

VARIANTS = ("libm", "branch", "intrinsic", "none", "vfabi")


def compiled(name: str, dtype: Any, n: int, variant: str) -> tuple[Callable[..., None], Any]:
    """``out = name(x)`` over ``n`` elements natively, the slow path ``variant``."""
    t = MLIR_TYPES[dtype]
    module = parse(elementwise_1d(f"%r = math.{name} %v0 : {t}", n, [t], t))
    if variant in ("branch", "intrinsic", "none"):
        slow_path = "libm" if variant == "branch" else variant
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ExpandTrig(slow_path)], dce_enabled=False),
            apply_recursively=True,
        ).rewrite_module(module)
    ConvertToLLVMPass(noalias=True, approximate_math=variant != "libm").apply(context(), module)
    module_code = compile_llvm(llvm_ir(module, vector_math=variant == "vfabi"))
    fn = module_code.function("f")

    def call(x: np.ndarray, out: np.ndarray) -> None:
        fn(x.ctypes.data, out.ctypes.data)

    return call, module_code


def speed(size: int, reps: int) -> None:
    print(f"{size} elements, one thread, best of {reps} (ms); numpy is np.sin/np.cos(x, out=)")
    print(f"{'':12s} {'|x| <=':>7s} " + " ".join(f"{v:>10s}" for v in (*VARIANTS, "numpy")))
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        for name, ref in (("sin", np.sin), ("cos", np.cos)):
            fns = {v: compiled(name, dtype, size, v) for v in VARIANTS}
            for span in (0.7, 100.0, 1e4, 1e9):
                x = rng.uniform(-span, span, size).astype(dtype)
                out = np.empty_like(x)
                cells = [
                    best_ms(lambda f=f, x=x, out=out: f(x, out), reps) for f, _ in fns.values()
                ]
                cells.append(best_ms(lambda r=ref, x=x, out=out: r(x, out=out), reps))
                label = f"{MLIR_TYPES[dtype]} {name}"
                print(f"{label:12s} {span:7.3g} " + " ".join(f"{c:10.2f}" for c in cells))
            vectorized = {v: "vector.body" in code.optimized_ir for v, (_, code) in fns.items()}
            print(f"{'':12s} vector loop: {vectorized}")


def _hard_cases(dtype: Any, limit: float, count: int, rng: np.random.Generator) -> np.ndarray:
    """Floats nearest multiples of pi/2 up to ``limit`` (small reduced arguments)."""
    k = np.concatenate([np.arange(1, 4096), rng.integers(1, int(limit / 1.5707963), count)])
    x = (k.astype(np.longdouble) * (np.longdouble(np.pi) / 2)).astype(dtype)
    near = np.concatenate([x, np.nextafter(x, dtype(np.inf)), np.nextafter(x, dtype(0))])
    return near[np.abs(near) <= limit]


def _edges(dtype: Any, limit: float) -> np.ndarray:
    x = np.full(64, limit, dtype)
    for k in range(1, 32):
        x[k] = np.nextafter(x[k - 1], dtype(0))
        x[32 + k] = np.nextafter(x[32 + k - 1], dtype(np.inf))
    return x


def accuracy(stride: int) -> None:
    chunk = 1 << 21
    rng = np.random.default_rng(1)
    print("max ulp error (at x) against NumPy in float64 (f32) / long double (f64)")
    for dtype in (np.float32, np.float64):
        t = MLIR_TYPES[dtype]
        limit = DOMAIN[t]
        wide = np.longdouble if dtype == np.float64 else np.float64
        top = int(np.array(limit, np.float32).view(np.uint32))
        patterns = np.arange(0, top + 1, stride, dtype=np.uint32)
        for name, ref in (("sin", np.sin), ("cos", np.cos)):
            fn, _ = compiled(name, dtype, chunk, "vfabi")
            sets: dict[str, list[np.ndarray]] = {"sweep": [], "pi/2 multiples": [], "edges": []}
            for start in range(0, len(patterns), chunk // 2):
                x = patterns[start : start + chunk // 2].view(np.float32).astype(dtype)
                if dtype == np.float64:
                    noise = rng.integers(0, 1 << 29, len(x), dtype=np.uint64)
                    x = (x.view(np.uint64) | noise).view(np.float64)
                sets["sweep"].append(np.concatenate([x, -x]))
            sets["pi/2 multiples"].append(_hard_cases(dtype, limit, 1 << 20, rng))
            sets["edges"].append(np.concatenate([_edges(dtype, limit), -_edges(dtype, limit)]))
            cells = []
            for label, parts in sets.items():
                worst, at = 0.0, 0.0
                for x in parts:
                    for s in range(0, len(x), chunk):
                        piece = np.zeros(chunk, dtype)
                        part = x[s : s + chunk]
                        piece[: len(part)] = part
                        out = np.empty(chunk, dtype)
                        fn(piece, out)
                        with np.errstate(all="ignore"):
                            expected = ref(piece.astype(wide))
                        errors = ulp_error(out, expected, dtype)[: len(part)]
                        i = int(np.argmax(errors))
                        if errors[i] > worst:
                            worst, at = float(errors[i]), float(part[i])
                cells.append(f"{label} {worst:.3f} @ {at:.6g}")
            print(f"{t} {name}: " + "; ".join(cells))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--size", type=int, default=1 << 22)
    s.add_argument("--reps", type=int, default=9)
    a = sub.add_parser("accuracy")
    a.add_argument("--stride", type=int, default=61)
    args = parser.parse_args(argv)
    if args.command == "speed":
        speed(args.size, args.reps)
    else:
        accuracy(args.stride)


if __name__ == "__main__":
    main()
