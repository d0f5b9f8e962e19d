"""The native lowering on hand-written loops-stage kernels: compile time, speed
against eager NumPy, and the accuracy of the polynomial math functions.

    python benchmarks/native_loops.py speed [--size 2048] [--reps 15]
    python benchmarks/native_loops.py accuracy [--stride 61] [--random 1000000] [--only erf ...]
    python benchmarks/native_loops.py threads [--reps 7]
    python benchmarks/native_loops.py strided [--size 2048] [--reps 5]

``speed``: the compile time of a 10-op element-wise kernel (lowering, then
llvmlite: parse, O3, MCJIT), and one thread's time on ``size x size`` f32 for
``relu(a) + b*c - d`` and ``sum(exp(a), axis=1)`` (median of ``reps`` runs,
interleaved with NumPy's); then ``erf`` of ``size * size`` f32 and f64 elements in
``[-4, 4]``, the polynomial against the C library's (NumPy has none).

``threads``: where splitting a group's tiles over two threads starts to pay:
JIT-compiled native kernels of ``relu(A)+B*C-D`` and ``sum(exp(A)*B, axis=1)``
at growing square f32 sizes, with 1 thread and with 2 threads forced to split
(``tdsl.runtime.native.MIN_BYTES_PER_THREAD`` lowered to 1 byte), calling the
compiled function directly.  The runtime's threshold is chosen from it.

``strided``: a JIT-compiled native ``relu(A) + B`` (f32, one thread) called
with ``A`` a transpose and a ``[:, ::2]`` slice: the variant compiled for the
view's strides against copying the view to a contiguous array first (the
runtime's behaviour without variants), and against a contiguous ``A``.

``accuracy``: the maximum error in ulp of each approximation (``exp``, ``expm1``,
``log``, ``log1p``, ``tanh``, ``sinh``, ``cosh``, ``erf``; ``--only`` picks some):

- f32 over a dense sweep of the whole float32 range (every ``stride``-th bit
  pattern, both signs) against NumPy in float64, and over ``random`` inputs
  drawn from the function's interesting range;
- f64 over the sweep's values with random low mantissa bits and over random
  inputs, against NumPy in long double (80-bit on x86-64).

NumPy has no ``erf``: its reference is a long double series and continued fraction
(``tests/unit/native/kernels.py``'s ``erf_reference``, within 2^-60).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))

from native.kernels import (
    chain_2d,
    compile_function,
    elementwise_1d,
    erf_reference,
    lower,
    row_sum_exp,
    ulp_error,
    unary_math,
)

from tdsl.runtime.compile import compile_llvm

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log1p": np.log1p,
    "tanh": np.tanh,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "erf": erf_reference,
}

TEN_OPS = """%a = arith.mulf %v0, %v1 : f32
    %b = arith.addf %a, %v0 : f32
    %c = arith.subf %b, %v1 : f32
    %d = arith.maximumf %c, %v0 : f32
    %e = arith.divf %d, %v1 : f32
    %f = arith.mulf %e, %e : f32
    %g = arith.addf %f, %a : f32
    %h = arith.minimumf %g, %b : f32
    %k = arith.negf %h : f32
    %r = math.absf %k : f32"""


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def speed(size: int, reps: int) -> None:
    text = elementwise_1d(TEN_OPS, 4096, ["f32", "f32"], "f32")
    lower(text)  # warm up xDSL
    compile_llvm(lower(text))  # and LLVM
    lowering = [timed(lambda: lower(text, noalias=True)) for _ in range(5)]
    module = lower(text, noalias=True)
    llvm = [timed(lambda: compile_llvm(module)) for _ in range(5)]
    print(
        f"10-op kernel: lowering {statistics.median(lowering) * 1e3:.1f} ms, "
        f"llvmlite (parse, O3, MCJIT) {statistics.median(llvm) * 1e3:.1f} ms (medians of 5)"
    )
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.standard_normal((size, size), dtype=np.float32) for _ in range(4))
    out = np.empty_like(a)
    chain = compile_function(chain_2d(size, size), "chain", noalias=True)
    rowsum = compile_function(row_sum_exp(size, size), "rowsum", noalias=True)
    sums = np.empty(size, np.float32)
    cases: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
        "relu(a)+b*c-d": (lambda: np.maximum(a, 0) + b * c - d, lambda: chain(a, b, c, d, out)),
        "sum(exp(a), axis=1)": (lambda: np.exp(a).sum(axis=1), lambda: rowsum(a, sums)),
    }
    for name, (numpy_fn, native_fn) in cases.items():
        times: dict[str, list[float]] = {"numpy": [], "native": []}
        for _ in range(reps):
            times["numpy"].append(timed(numpy_fn))
            times["native"].append(timed(native_fn))
        t_np, t_nat = (statistics.median(times[k]) for k in ("numpy", "native"))
        print(
            f"{name:22s} {size}x{size} f32: numpy {t_np * 1e3:7.2f} ms, native {t_nat * 1e3:7.2f} ms"
            f"  ({t_np / t_nat:.2f}x; min {min(times['numpy']) / min(times['native']):.2f}x)"
        )
    np.testing.assert_allclose(out, np.maximum(a, 0) + b * c - d, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sums, np.exp(a.astype(np.float64)).sum(axis=1), rtol=1e-4)
    erf_speed(size * size, reps, rng)


def erf_speed(n: int, reps: int, rng: np.random.Generator) -> None:
    for dtype, t in ((np.float32, "f32"), (np.float64, "f64")):
        x = rng.uniform(-4, 4, n).astype(dtype)
        out = np.empty_like(x)
        text = elementwise_1d(f"%r = math.erf %v0 : {t}", n, [t], t)
        times: dict[bool, list[float]] = {True: [], False: []}
        kernels = {approx: compile_function(text, approximate_math=approx) for approx in times}
        for _ in range(reps):
            for approx, kernel in kernels.items():
                times[approx].append(timed(lambda k=kernel, x=x, out=out: k(x, out)))
        poly, libm = (statistics.median(times[k]) * 1e3 for k in (True, False))
        print(
            f"erf {n} {t}: polynomial {poly:7.2f} ms, C library {libm:7.2f} ms ({libm / poly:.2f}x)"
        )


def random_inputs(name: str, dtype: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """Inputs spread over the range where ``name`` is neither constant nor overflowing."""
    big = 720.0 if dtype == np.float64 else 95.0
    spread = np.exp(rng.uniform(-40, 0, n))
    wide = rng.uniform(-big, big, n)
    with np.errstate(over="ignore"):
        return _random_inputs(name, dtype, n, rng, big, spread, wide)


def _random_inputs(
    name: str,
    dtype: Any,
    n: int,
    rng: np.random.Generator,
    big: float,
    spread: np.ndarray,
    wide: np.ndarray,
) -> np.ndarray:
    x = {
        "log": np.exp(rng.uniform(-big, big, n)),
        "log1p": np.where(
            rng.random(n) < 0.5, rng.uniform(-1, 1, n) * spread, np.exp(rng.uniform(-30, big, n))
        ),
        "tanh": rng.uniform(-25, 25, n) * spread,
        "erf": rng.uniform(-7, 7, n) * np.where(rng.random(n) < 0.5, 1.0, spread),
    }.get(name, np.where(rng.random(n) < 0.5, wide, wide * spread))
    return x.astype(dtype)


def sweep(stride: int, chunk: int) -> Any:
    """Every ``stride``-th float32 bit pattern of each sign, in chunks."""
    patterns = np.arange(0, 0x7F800000, stride, dtype=np.uint32)
    for start in range(0, len(patterns), chunk):
        positive = patterns[start : start + chunk]
        yield np.concatenate([positive, positive | np.uint32(0x80000000)]).view(np.float32)


def worst(
    name: str, dtype: Any, batches: Any, n: int, widen: Callable[[np.ndarray], np.ndarray]
) -> tuple[float, float]:
    fn = unary_math(f"math.{name}", dtype, n)
    reference_type = np.float64 if dtype == np.float32 else np.longdouble
    top, at = 0.0, 0.0
    for x in batches:
        if len(x) < n:
            x = np.concatenate([x, np.ones(n - len(x), dtype)])
        x = widen(x)
        with np.errstate(all="ignore"):
            ref = FUNCTIONS[name](x.astype(reference_type))
        errors = ulp_error(fn(x), ref, dtype)
        i = int(np.argmax(errors))
        if errors[i] > top:
            top, at = float(errors[i]), float(x[i])
    return top, at


def accuracy(stride: int, random_n: int, only: list[str] | None = None) -> None:
    chunk = 1 << 21
    rng = np.random.default_rng(1)
    count = 2 * len(range(0, 0x7F800000, stride))
    print(f"dense sweep: {count} float32 values (every {stride}th bit pattern of each sign)")
    print(
        f"{'function':8s} {'f32 sweep':>18s} {'f32 random':>18s} {'f64 sweep':>18s} {'f64 random':>18s}"
    )
    for name in only or FUNCTIONS:
        cells: list[str] = []
        for dtype in (np.float32, np.float64):

            def add_bits(x: np.ndarray, dtype: Any = dtype) -> np.ndarray:
                if dtype == np.float32:
                    return x
                bits = x.astype(np.float64).view(np.uint64)
                noise = rng.integers(0, 1 << 29, len(x), dtype=np.uint64)
                wide = (bits | noise).view(np.float64)
                return np.where(np.isfinite(x), wide, x.astype(np.float64))

            n = 2 * chunk
            dense = worst(name, dtype, sweep(stride, chunk), n, add_bits)
            random = worst(
                name, dtype, [random_inputs(name, dtype, random_n, rng)], random_n, lambda x: x
            )
            cells += [f"{dense[0]:.3f} @ {dense[1]:<9.4g}", f"{random[0]:.3f} @ {random[1]:<9.4g}"]
        print(f"{name:8s} " + " ".join(f"{c:>18s}" for c in cells))


def threads(reps: int) -> None:
    import timeit

    import tdsl.runtime.native as rt
    from tdsl.jit import JITTensorKernel

    rng = np.random.default_rng(0)
    rt.MIN_BYTES_PER_THREAD = 1  # split wherever there are tiles to split
    print(f"{'kernel':24s} {'size':>6s} {'per array':>10s} {'1 thread':>10s} {'2 threads':>10s}")
    for expr, names in (("relu(A)+B*C-D", "ABCD"), ("sum(exp(A)*B, axis=1)", "AB")):
        for n in (64, 128, 256, 384, 512, 724, 1024, 2048):
            arrays = [rng.standard_normal((n, n)).astype(np.float32) for _ in names]
            times = []
            for t in (1, 2):
                kernel = JITTensorKernel(target="native", threads=t).compile(
                    expr, dict.fromkeys(names, (n, n)), "f32"
                )
                fn = kernel.function
                number = max(1, int(2e6 // (n * n)))
                best = min(
                    timeit.repeat(lambda fn=fn, a=arrays: fn(*a), number=number, repeat=reps)
                )
                times.append(best / number)
            print(
                f"{expr:24s} {n:>6d} {n * n * 4 / 1024:>7.0f} KiB "
                f"{times[0] * 1e6:>8.1f}us {times[1] * 1e6:>8.1f}us  x{times[0] / times[1]:.2f}"
            )


def strided(size: int, reps: int) -> None:
    import timeit

    from tdsl.jit import JITTensorKernel

    rng = np.random.default_rng(0)
    b = rng.standard_normal((size, size)).astype(np.float32)
    views = {
        "transpose": rng.standard_normal((size, size)).astype(np.float32).T,
        "[:, ::2]": rng.standard_normal((size, 2 * size)).astype(np.float32)[:, ::2],
    }
    shapes = dict.fromkeys("AB", (size, size))
    print(f"relu(A) + B, {size}x{size} f32, one thread: best of {reps}")
    for what, a in views.items():
        times = {}
        for how in ("variant", "copy", "contiguous A"):
            kernel = JITTensorKernel(threads=1, target="native").compile(
                "relu(A) + B", shapes, "f32"
            )
            if how == "copy":
                kernel.function.variants = None
            arg = np.ascontiguousarray(a) if how == "contiguous A" else a
            best = min(timeit.repeat(lambda k=kernel, x=arg: k(A=x, B=b), number=3, repeat=reps))
            times[how] = best / 3
        eager = min(timeit.repeat(lambda x=a: np.maximum(x, 0) + b, number=3, repeat=reps))
        times["eager NumPy"] = eager / 3
        print(
            f"  A {what:10s} "
            + "  ".join(f"{how} {t * 1e3:7.2f} ms" for how, t in times.items())
            + f"  copy / variant {times['copy'] / times['variant']:.2f}x"
            + f"  eager / variant {times['eager NumPy'] / times['variant']:.2f}x"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--size", type=int, default=2048)
    s.add_argument("--reps", type=int, default=15)
    a = sub.add_parser("accuracy")
    a.add_argument("--stride", type=int, default=61)
    a.add_argument("--random", type=int, default=1_000_000)
    a.add_argument("--only", nargs="+", choices=sorted(FUNCTIONS))
    t = sub.add_parser("threads")
    t.add_argument("--reps", type=int, default=7)
    st = sub.add_parser("strided")
    st.add_argument("--size", type=int, default=2048)
    st.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    if args.command == "speed":
        speed(args.size, args.reps)
    elif args.command == "threads":
        threads(args.reps)
    elif args.command == "strided":
        strided(args.size, args.reps)
    else:
        accuracy(args.stride, args.random, args.only)


if __name__ == "__main__":
    main()
