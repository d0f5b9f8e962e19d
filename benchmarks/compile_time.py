"""Where the native target's compile time goes, and what LLVM's loop unroller buys.

    python benchmarks/compile_time.py stages [--reps 3] [--cold-math]
    python benchmarks/compile_time.py unroll [--size 2048] [--reps 15]
    python benchmarks/compile_time.py transformer [--target numpy] [--reps 1]
    python benchmarks/compile_time.py math [--ops 2000] [--inlined]

``stages``: each stage's time (``CompiledKernel.compile_time``) summed over a set of
small programs like the tests' (64x64 f32), each compiled natively by a fresh JIT
with no disk cache and the process's caches of lowerings and machine code emptied
first; the mean of ``reps`` rounds, then per program.  A process converts each math
function once (:mod:`tdsl.backend.llvm.math_outline`), in a first round not timed;
``--cold-math`` converts them again at each compile, as a process's first compile does.

``unroll``: for each workload, the native kernel compiled with and without LLVM's
loop unroller (``tdsl.runtime.compile.compile_llvm(unroll=...)``; tdsl's default is
without): the compile time, and the call time of both, interleaved in one process
(medians of ``reps``).  Large workloads at ``size``, plus small ones whose constant
trip counts the unroller unrolls whole.

``transformer``: each workload of ``benchmarks/transformer.py`` (the GPT-2 MLP,
attention heads, the block) traced with ``tdsl.trace`` and compiled on ``target`` by a
fresh trace: the whole compile and its ``tdsl-fuse`` stage, the medians of ``reps``.
Run it with ``PYTHONPATH`` at another checkout to compare two versions.

``math``: a chain of ``ops`` f32 ops, ``f(y) * 0.5`` with ``f`` cycling through eight
functions LLVM gets as tdsl's polynomial expansions (``tanh``, ``sin``, ``exp``,
``log1p``, ``cos``, ``sinh``, ``expm1``, ``cosh``), traced and compiled natively: the
compile's wall and CPU time, and a call's on 2^20 elements.  Each function is called
``ops / 16`` times, so beyond ``tdsl.runtime.vector_math.MANY_CALLS`` calls it is kept
whole and called through vector variants of itself; with ``--inlined`` the same chain
is also compiled with every call inlined (the expansion at each use, as below that
count), and the two results are compared bit for bit.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

os.environ["TDSL_CACHE_DIR"] = ""  # every compile compiles

import numpy as np

import tdsl.jit.stages as lowered_cache
import tdsl.runtime.compile as machine_cache
import tdsl.runtime.native as native_runtime
from tdsl.backend.llvm import math_outline
from tdsl.jit.api import JITTensorKernel
from tdsl.runtime.compile import compile_llvm

Shapes = dict[str, tuple[int, ...]]

SMALL: list[tuple[str, Shapes]] = [
    ("relu(A) + B * C - D", {k: (64, 64) for k in "ABCD"}),
    ("softmax(A, axis=0)", {"A": (64, 48)}),
    ("sum(A * B) + max(C)", {k: (64, 64) for k in "ABC"}),
    ("softmax(relu(A @ W + 1))", {"A": (64, 32), "W": (32, 48)}),
    ("exp(A) * tanh(B) + log1p(abs(A)) - erf(B) + sin(A)", {"A": (64, 64), "B": (64, 64)}),
    ("layernorm(A, axis=-1) * 2 + 1", {"A": (64, 64)}),
]


def large(n: int) -> dict[str, tuple[str, Shapes]]:
    return {
        "ew": ("relu(A) + B * C - D", {k: (n, n) for k in "ABCD"}),
        "softmax": ("softmax(A)", {"A": (n, n)}),
        "sumexp": ("sum(exp(A) * B, axis=1)", {"A": (n, n), "B": (n, n)}),
        "max+sum": ("max(A, axis=1) + sum(A, axis=1)", {"A": (n, n)}),
        "max cols": ("max(A, axis=0)", {"A": (n, n)}),
        "layernorm": ("layernorm(A, axis=-1) * 2 + 1", {"A": (n, 768)}),
        "gelu": ("0.5 * A * (1 + tanh(0.7978845 * (A + 0.044715 * A * A * A)))", {"A": (n, n)}),
        "cumsum": ("cumsum(A, axis=1) * 2", {"A": (n, n)}),
        "mlp": ("relu(A @ W + 1)", {"A": (512, 768), "W": (768, 768)}),
        "looped matmul": ("A @ exp(B)", {"A": (256, 256), "B": (256, 256)}),
        "attention": ("softmax(Q @ K.T * 0.125) @ V", {k: (1024, 64) for k in "QKV"}),
        "small sum+max": ("sum(A * B) + max(C)", {k: (64, 64) for k in "ABC"}),
        "tiny": ("relu(A) * B + 1", {"A": (8, 8), "B": (8, 8)}),
    }


def compile_native(expr: str, shapes: Shapes) -> Any:
    return JITTensorKernel(target="native").compile(expr, shapes=shapes, dtypes=np.float32)


def _forget_compiles(math_too: bool) -> None:
    """Empty the process's caches of lowerings and machine code (and, with ``math_too``,
    of converted math functions), so that the next compile does all its work."""
    lowered_cache._LOWERED.clear()
    machine_cache._COMPILED.clear()
    if math_too:
        math_outline._CONVERTED.clear()


def stages(reps: int, cold_math: bool) -> None:
    for expr, shapes in SMALL:  # imports, LLVM's start, the process's math conversions
        compile_native(expr, shapes)
    totals: collections.Counter[str] = collections.Counter()
    each: dict[str, collections.Counter[str]] = {e: collections.Counter() for e, _ in SMALL}
    start = time.perf_counter()
    for _ in range(reps):
        for expr, shapes in SMALL:
            _forget_compiles(cold_math)
            times = compile_native(expr, shapes).compile_time
            totals.update(times)
            each[expr].update(times)
    wall = (time.perf_counter() - start) / reps
    math = "each math function converted again" if cold_math else "math functions converted"
    print(
        f"native compile of {len(SMALL)} small programs (64x64 f32), each compiled afresh "
        f"({math} once per process), mean of {reps} rounds:"
    )
    for name, seconds in totals.most_common():
        print(f"  {name:<32} {1e3 * seconds / reps:8.1f} ms")
    print(f"  {'wall':<32} {1e3 * wall:8.1f} ms")
    print("per program: tdsl-convert-to-llvm, machine code (llvmlite), all stages")
    for expr, times in each.items():
        convert, code = times["tdsl-convert-to-llvm"], times["machine code (llvmlite)"]
        total = sum(times.values())
        print(
            f"  {expr[:44]:<44} {1e3 * convert / reps:7.1f} {1e3 * code / reps:7.1f} "
            f"{1e3 * total / reps:7.1f} ms"
        )


def _with_unroll(unroll: bool, expr: str, shapes: Shapes) -> tuple[Any, float]:
    original = native_runtime.compile_llvm
    native_runtime.compile_llvm = functools.partial(compile_llvm, unroll=unroll)  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        kernel = compile_native(expr, shapes)
        return kernel, time.perf_counter() - start
    finally:
        native_runtime.compile_llvm = original


def unroll(size: int, reps: int) -> None:
    rng = np.random.default_rng(0)
    compile_native(*SMALL[0])
    print(f"{'workload':<16} {'compile: unroll / not':>24} {'call: unroll / not (medians)':>34}")
    for name, (expr, shapes) in large(size).items():
        kernels: dict[bool, Any] = {}
        compile_s: dict[bool, float] = {}
        for flag in (True, False):
            kernels[flag], compile_s[flag] = _with_unroll(flag, expr, shapes)
        args = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
        times: dict[bool, list[float]] = {True: [], False: []}
        for k in kernels.values():
            k(**args)
        for _ in range(reps):
            for flag, k in kernels.items():
                times[flag].append(_timed(lambda k=k, a=args: k(**a)))
        a, b = (statistics.median(times[f]) * 1e3 for f in (True, False))
        print(
            f"{name:<16} {1e3 * compile_s[True]:9.1f} / {1e3 * compile_s[False]:7.1f} ms "
            f"{a:14.3f} / {b:8.3f} ms ({a / b:.2f}x)"
        )


def transformer(target: str, reps: int) -> None:
    import sys
    from pathlib import Path

    import tdsl

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import transformer as workloads  # benchmarks/transformer.py

    print(f"tdsl from {Path(tdsl.__file__).parent}, target {target}, medians of {reps}")
    for name in workloads.WORKLOADS:
        fn, args, _ = workloads.inputs(name)
        whole: list[float] = []
        fuse: list[float] = []
        for _ in range(reps):
            traced = tdsl.trace(fn, target=target)
            start = time.perf_counter()
            traced.compile(*args)
            whole.append(time.perf_counter() - start)
            fuse.append(sum(k.compile_time.get("tdsl-fuse", 0.0) for k in traced.kernels))
        print(
            f"  {name:<16} compile {statistics.median(whole):6.2f} s, "
            f"tdsl-fuse {statistics.median(fuse):6.2f} s"
        )


def math_chain(ops: int, inlined: bool) -> None:
    import tdsl
    import tdsl.runtime.vector_math as vector_math

    functions = (np.tanh, np.sin, np.exp, np.log1p, np.cos, np.sinh, np.expm1, np.cosh)

    def chain(x: Any) -> Any:
        y = x
        for i in range(ops // 2):
            y = functions[i % len(functions)](y) * np.float32(0.5)
        return y

    x = np.linspace(-3, 3, 1 << 20, dtype=np.float32)
    default = vector_math.MANY_CALLS
    print(f"{ops} ops, {ops // 16} calls of each function; variants from {default} calls")
    results = []
    for label, many in (("vector variants", default), ("inlined", 1 << 62))[: 1 + inlined]:
        vector_math.MANY_CALLS = many
        try:
            traced = tdsl.trace(chain, jit=JITTensorKernel(target="native"))  # (own cache)
            cpu, wall = time.process_time(), time.perf_counter()
            traced.compile(x)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        finally:
            vector_math.MANY_CALLS = default
        call = min(_timed(lambda: traced(x)) for _ in range(3))  # noqa: B023
        results.append(traced(x))
        print(f"  {label:<16} compile {wall:7.2f} s ({cpu:7.2f} s CPU), call {call * 1e3:8.2f} ms")
    if inlined:
        print(
            "  same bits:", np.array_equal(results[0].view(np.uint32), results[1].view(np.uint32))
        )


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("stages")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--cold-math", action="store_true")
    p = sub.add_parser("unroll")
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--reps", type=int, default=15)
    p = sub.add_parser("transformer")
    p.add_argument("--target", choices=("numpy", "native", "auto"), default="numpy")
    p.add_argument("--reps", type=int, default=1)
    p = sub.add_parser("math")
    p.add_argument("--ops", type=int, default=2000)
    p.add_argument("--inlined", action="store_true")
    args = parser.parse_args()
    if args.command == "stages":
        stages(args.reps, args.cold_math)
    elif args.command == "transformer":
        transformer(args.target, args.reps)
    elif args.command == "math":
        math_chain(args.ops, args.inlined)
    else:
        unroll(args.size, args.reps)


if __name__ == "__main__":
    main()
