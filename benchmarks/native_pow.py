"""Vectorized ``pow`` on the native target: accuracy and speed of the expansion of
:mod:`tdsl.backend.llvm.math_pow` (issue 20, item 4).

    python benchmarks/native_pow.py accuracy [--n 1000000]
    python benchmarks/native_pow.py speed [--size 4194304] [--reps 9]

``accuracy``: the maximum error in ulp of ``x ** y`` against NumPy in float64 (f32)
and long double (f64), over the input sets of ``tests/unit/native/kernels.py``'s
``pow_inputs`` (``n`` pairs each), beside NumPy's own error (the C library's), and
whether every special value (a nan, ±inf or ±0 result, ``x = ±1``, ``y = 0``) is
NumPy's bit for bit, nan's sign included.

``speed``: ``x ** y`` of ``size`` random pairs (``x`` in ``[0.01, 100]``, ``y`` in
``[-8, 8]``), one thread, best of ``reps`` (ms): the expansion, the C library called
per element (``approximate-math=false``), and ``np.power(x, y, out=)``.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))

from native.kernels import (
    MLIR_TYPES,
    best_ms,
    compile_function,
    elementwise_1d,
    pow_inputs,
    ulp_error,
)


def kernel(dtype: Any, n: int, approximate: bool = True) -> Callable[..., None]:
    t = MLIR_TYPES[dtype]
    text = elementwise_1d(f"%r = math.powf %v0, %v1 : {t}", n, [t, t], t)
    return compile_function(text, approximate_math=approximate)


def special_values_match(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> bool:
    with np.errstate(all="ignore"):
        expected = np.power(x, y)
    special = (
        np.isnan(expected) | np.isinf(expected) | (expected == 0) | (np.abs(x) == 1) | (y == 0)
    )
    same = (out == expected) | (np.isnan(out) & np.isnan(expected))
    return bool(
        np.all(same[special]) and np.all((np.signbit(out) == np.signbit(expected))[special])
    )


def accuracy(n: int) -> None:
    print("max ulp error of x ** y: tdsl native / NumPy (C library), against NumPy in")
    print("float64 (f32) and long double (f64); specials: NumPy's bit for bit")
    for dtype in (np.float32, np.float64):
        wide = np.longdouble if dtype == np.float64 else np.float64
        for name, (x, y) in pow_inputs(dtype, n, np.random.default_rng(1)).items():
            out = np.empty_like(x)
            kernel(dtype, len(x))(x, y, out)
            with np.errstate(all="ignore"):
                ref = np.power(x.astype(wide), y.astype(wide))
                numpy = np.power(x, y)
            ours, theirs = ulp_error(out, ref, dtype), ulp_error(numpy, ref, dtype)
            at = int(np.argmax(ours))
            print(
                f"{MLIR_TYPES[dtype]} {name:18s} {ours[at]:.3f} (at {x[at]!r} ** {y[at]!r}) / "
                f"{theirs.max():.3f}  specials: {special_values_match(x, y, out)}"
            )


def speed(size: int, reps: int) -> None:
    print(f"x ** y, {size} elements, one thread, best of {reps} (ms)")
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        x = np.exp(rng.uniform(np.log(0.01), np.log(100), size)).astype(dtype)
        y = rng.uniform(-8, 8, size).astype(dtype)
        out = np.empty_like(x)
        expansion, libm = kernel(dtype, size), kernel(dtype, size, approximate=False)
        runs: dict[str, Callable[[], object]] = {
            "expansion": functools.partial(expansion, x, y, out),
            "C library": functools.partial(libm, x, y, out),
            "numpy": functools.partial(np.power, x, y, out=out),
        }
        cells = {k: best_ms(run, reps) for k, run in runs.items()}
        vector = "vector.body" in expansion.compiled.optimized_ir  # type: ignore[attr-defined]
        print(
            f"{MLIR_TYPES[dtype]}: "
            + ", ".join(f"{k} {v:7.2f}" for k, v in cells.items())
            + f"  (vector loop: {vector})"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("accuracy")
    a.add_argument("--n", type=int, default=1_000_000)
    s = sub.add_parser("speed")
    s.add_argument("--size", type=int, default=1 << 22)
    s.add_argument("--reps", type=int, default=9)
    args = parser.parse_args(argv)
    if args.command == "speed":
        speed(args.size, args.reps)
    else:
        accuracy(args.n)


if __name__ == "__main__":
    main()
